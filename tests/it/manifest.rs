//! `seekless hash` manifests and `seekless hash --check`, by seekless alone: expected
//! digests come from the library, not from coreutils, so these run everywhere, Windows
//! included. `check.rs` holds the Linux comparisons with `sha256sum -c`.

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use seekless::jobs::digest::Algorithm;

use crate::common::*;

fn sha256(bytes: &[u8]) -> String {
    let mut h = Algorithm::Sha256.hasher();
    h.update(bytes);
    h.finish_hex()
}

/// `seekless hash ARGS…` in `dir`, with `stdin` on its standard input.
fn hash_in(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = seekless()
        .arg("hash")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Small inputs fit the pipe; a run that does not read them may close it first.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn stdout_lines(o: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

/// The closing `seekless: WARNING: …` lines, without the prefix, in order.
fn warnings(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter_map(|l| l.strip_prefix("seekless: WARNING: ").map(String::from))
        .collect()
}

#[test]
fn hash_writes_one_coreutils_line_per_file() {
    let t = scratch!();
    for name in ["a", "b", "c"] {
        std::fs::write(t.path().join(name), name).unwrap();
    }
    let o = hash_in(t.path(), &["c", "a", "b"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut want: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| format!("{}  {n}", sha256(n.as_bytes())))
        .collect();
    want.sort();
    assert_eq!(stdout_lines(&o), want);
}

#[test]
fn a_manifest_of_a_directory_checks_back_ok() {
    let t = scratch!();
    let mut rng = Rng::new(3);
    std::fs::create_dir_all(t.path().join("tree/sub")).unwrap();
    for name in ["tree/x", "tree/sub/y", "tree/sub/z"] {
        std::fs::write(t.path().join(name), rng.bytes(10_000)).unwrap();
    }
    // Whatever the platform's separator, the names written read back (a backslash is
    // escaped as coreutils escapes it).
    let o = hash_in(t.path(), &["tree"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::write(t.path().join("M"), &o.stdout).unwrap();
    let o = hash_in(t.path(), &["--check", "M"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = stdout_lines(&o);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines.iter().all(|l| l.ends_with(": OK")), "{lines:?}");
    assert_eq!(stderr(&o), "");
}

#[test]
fn check_names_mismatched_and_missing_files_and_exits_1() {
    let t = scratch!();
    for name in ["a", "b", "c"] {
        std::fs::write(t.path().join(name), name).unwrap();
    }
    let manifest: String = ["a", "b", "c"]
        .iter()
        .map(|n| format!("{}  {n}\n", sha256(n.as_bytes())))
        .collect();
    std::fs::write(t.path().join("M"), manifest).unwrap();
    std::fs::write(t.path().join("b"), b"changed").unwrap();
    std::fs::remove_file(t.path().join("c")).unwrap();

    let o = hash_in(t.path(), &["--check", "M"], b"");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stdout_lines(&o),
        ["a: OK", "b: FAILED", "c: FAILED open or read"]
    );
    let why = os_message(&std::fs::metadata(t.path().join("c")).unwrap_err());
    assert!(
        stderr(&o).contains(&format!("seekless: c: {why}")),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        warnings(&o),
        [
            "1 listed file could not be read",
            "1 computed checksum did NOT match"
        ]
    );
}

#[test]
fn check_reads_comments_crlf_tags_and_standard_input_and_counts_bad_lines() {
    let t = scratch!();
    std::fs::write(t.path().join("a"), b"a").unwrap();
    std::fs::write(t.path().join("b"), b"b").unwrap();
    let stdin = b"standard input\n";
    let manifest = format!(
        "# a comment\n  {}  a\r\n\nSHA256 (b) = {}\nnot a checksum line\n{}  -\n",
        sha256(b"a"),
        sha256(b"b"),
        sha256(stdin)
    );
    std::fs::write(t.path().join("M"), manifest).unwrap();

    let o = hash_in(t.path(), &["--check", "M"], stdin);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout_lines(&o), ["-: OK", "a: OK", "b: OK"]);
    assert_eq!(warnings(&o), ["1 line is improperly formatted"]);

    let o = hash_in(t.path(), &["--check", "--strict", "M"], stdin);
    assert_eq!(o.status.code(), Some(1), "--strict: {}", stderr(&o));

    let o = hash_in(t.path(), &["--check", "-w", "M"], stdin);
    assert!(
        stderr(&o).contains("seekless: M: 5: improperly formatted SHA256 checksum line"),
        "{}",
        stderr(&o)
    );

    let o = hash_in(t.path(), &["--check", "--status", "M"], stdin);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{o:?}");
}

#[test]
fn checking_a_file_without_checksum_lines_says_so_and_exits_1() {
    let t = scratch!();
    std::fs::write(t.path().join("M"), b"not a checksum\n").unwrap();
    let o = hash_in(t.path(), &["--check", "--algo", "md5", "M"], b"");
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert_eq!(
        stderr(&o),
        "seekless: M: no properly formatted checksum lines found\n"
    );
}
