//! The library's two example programs, run as a user would run them, their output checked
//! against `b3sum` (`cargo test --workspace` builds the examples before it runs the tests).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{b3sum, scratch};

/// The built example `name`, beside the `seekless` binary.
fn example(name: &str) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_seekless"));
    let path = bin.parent().unwrap().join("examples").join(name);
    assert!(
        path.exists(),
        "{} is not built: run the tests with `cargo test --workspace` (it builds the examples of every crate)",
        path.display()
    );
    Command::new(path)
}

/// Runs `cmd` with `input` on stdin; returns stdout, asserting success.
fn run_with(mut cmd: Command, input: &[u8]) -> String {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Files with known first bytes, and one too small for `custom_job` to read.
fn corpus(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut made = Vec::new();
    for (i, (magic, kind)) in [
        (&b"\xFF\xD8\xFF\xE0"[..], "jpeg"),
        (&b"\x89PNG\r\n\x1a\n"[..], "png"),
        (&b"GIF89a"[..], "gif"),
        (&b"plain text"[..], "other"),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.join(format!("f{i}"));
        let mut data = magic.to_vec();
        data.extend((0..20_000u32).map(|n| (n.wrapping_mul(31) ^ i as u32) as u8));
        std::fs::write(&path, data).unwrap();
        made.push((path, kind));
    }
    std::fs::write(dir.join("tiny"), b"\xFF\xD8\xFF").unwrap();
    made
}

#[test]
fn hash_in_physical_order_prints_each_files_size_and_blake3() {
    let d = scratch!();
    let files = corpus(d.path());
    let list: String = files
        .iter()
        .map(|(p, _)| format!("{}\n", p.display()))
        .collect();
    let out = run_with(example("hash_in_physical_order"), list.as_bytes());
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    let mut want: Vec<String> = files
        .iter()
        .map(|(p, _)| {
            format!(
                "{:>12}  {}  {}",
                20_000 + magic_len(p),
                b3sum(p),
                p.display()
            )
        })
        .collect();
    want.sort_unstable();
    assert_eq!(lines, want);
}

fn magic_len(p: &Path) -> usize {
    std::fs::metadata(p).unwrap().len() as usize - 20_000
}

#[test]
fn custom_job_gives_each_row_id_its_kind_and_blake3_and_skips_small_files() {
    let d = scratch!();
    let files = corpus(d.path());
    let mut rows: String = files
        .iter()
        .enumerate()
        .map(|(i, (p, _))| format!("{}\t{}\n", 100 + i, p.display()))
        .collect();
    rows.push_str(&format!("999\t{}\n", d.path().join("tiny").display()));
    let out = run_with(example("custom_job"), rows.as_bytes());
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    let mut want: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, (p, kind))| format!("{}\t{kind}\t{}", 100 + i, b3sum(p)))
        .collect();
    want.sort_unstable();
    assert_eq!(lines, want, "row 999 (below the size limit) is not read");
}
