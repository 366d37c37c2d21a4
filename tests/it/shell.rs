//! What a shell and `man` get: completions and the manual page, generated from the same
//! definitions as the parser, checked by bash and by man itself.

use std::process::Command;

use crate::common::*;

const JOBS: [&str; 6] = ["order", "hash", "index", "tar", "copy", "bench"];

#[test]
fn bash_completion_offers_every_job_and_a_jobs_options() {
    let test = test_name!();
    if !require_tool(test, "bash") {
        return;
    }
    let t = scratch!();
    let script = t.path().join("seekless.bash");
    let o = run(seekless().args(["completions", "bash"]));
    std::fs::write(&script, &o.stdout).unwrap();
    // As bash calls it: the words so far, the word being completed, and the function's
    // arguments (command, current word, previous word).
    let complete = |words: &str, cword: usize| {
        let o = run(Command::new("bash").arg("-c").arg(format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD={cword}; \
             _seekless seekless \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        )));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let offered = complete("seekless ''", 1);
    for job in JOBS {
        assert!(
            offered.lines().any(|l| l == job),
            "{job} not in:\n{offered}"
        );
    }
    let options = complete("seekless copy --del", 2);
    assert!(options.lines().any(|l| l == "--delete"), "{options}");
}

#[test]
fn the_man_page_renders_without_warnings_and_has_every_job_and_its_options() {
    let test = test_name!();
    if !require_tool(test, "man") {
        return;
    }
    let t = scratch!();
    let page = t.path().join("seekless.1");
    let o = run(seekless().arg("man"));
    std::fs::write(&page, &o.stdout).unwrap();
    let o = run(Command::new("man")
        .args(["--warnings", "-l"])
        .arg(&page)
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "0"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.trim().is_empty(), "man warned:\n{err}");
    // Bold and underline as overstrikes (`X\x08X`) taken out, as `col -b` does.
    let mut plain = Vec::new();
    for &b in &o.stdout {
        if b == 8 {
            plain.pop();
        } else {
            plain.push(b);
        }
    }
    let text = String::from_utf8_lossy(&plain);
    for job in JOBS {
        let heading = format!("SEEKLESS {}", job.to_uppercase());
        assert!(text.contains(&heading), "no {heading} section");
    }
    assert!(
        text.contains("--ignore-errors"),
        "copy's options are in the page"
    );
}
