//! `seekless hash` against the tools it stands in for: the same cases run through GNU
//! coreutils' `sha256sum`, `md5sum` and `sha1sum`, Debian's `b3sum`, and seekless with
//! the matching `--algo`, in the same directory (a tree of hostile names), with the same
//! standard input; standard output, standard error and the exit status must agree.
//!
//! What is documented to differ (docs/usage.md, "Differences from sha256sum") is brought
//! to one form in one place, [`normalised`], and nowhere else: the program's name in
//! messages, the order of lines (seekless writes in read order), verdicts' escaping and
//! b3sum's messages. The other differences listed there (directories walked, devices
//! refused, `--check -z`, …) are asserted as they are, one by one, in
//! [`the_documented_differences_from_sha256sum_hold`]; b3sum is compared on what it has
//! (hashing, `-c`, `--quiet`).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// What one run printed, and how it ended.
#[derive(Debug, PartialEq, Eq)]
struct Ran {
    code: Option<i32>,
    stdout: Vec<Vec<u8>>,
    stderr: Vec<Vec<u8>>,
}

/// The names of the tree every case runs in: what a shell quotes, escapes or cannot show.
const NAMES: &[&[u8]] = &[
    b"plain",
    b"with space",
    b"new\nline",
    b"b\\s",
    b"c\rr",
    b"end\r",
    b"caf\xe9",
    b"it's",
    b"tab\tx",
    "\u{e9}t\u{e9}".as_bytes(),
    b"-",
    b"a=b",
];

/// Names that do not exist, for the messages about them.
const MISSING: &[&[u8]] = &[
    b"gone",
    b"gone with space",
    b"gone\nline",
    b"gone\xff",
    b"gone's",
    b"gone\x1b[2J",
    b"gone:colon",
];

fn build_tree(dir: &Path) {
    for (i, name) in NAMES.iter().enumerate() {
        let content = format!("content {i}\n");
        std::fs::write(dir.join(OsStr::from_bytes(name)), content).unwrap();
    }
    std::fs::write(dir.join("a"), b"abc").unwrap();
}

/// The tree's names as operands (`-` as `./-`: an operand `-` is standard input).
fn operands(names: &[&[u8]]) -> Vec<OsString> {
    names
        .iter()
        .map(|n| match *n {
            b"-" => OsString::from("./-"),
            n => OsStr::from_bytes(n).to_owned(),
        })
        .collect()
}

/// Runs `cmd` in `dir` with `stdin`, in a UTF-8 locale unless it sets one (coreutils
/// quotes names by it).
fn run_in(dir: &Path, mut cmd: Command, stdin: &[u8]) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    if !cmd.get_envs().any(|(k, _)| k == "LC_ALL") {
        cmd.env("LC_ALL", "C.UTF-8");
    }
    let out = output_with_input(cmd.current_dir(dir), Some(stdin.to_vec()), RUN_LIMIT);
    (out.status.code(), out.stdout, out.stderr)
}

/// The documented differences, brought to one form, and only these (docs/usage.md,
/// "Differences from sha256sum"):
///
/// - the program's name: `TOOL: ` starting a message is `seekless: `, and coreutils'
///   `Try 'TOOL --help'` is `Try 'seekless hash --help'`;
/// - the order of lines: seekless writes them in read order, so lines (NUL-ended records
///   with `-z`) are compared as sorted lists, on both streams;
/// - verdicts escape a name with a backslash or CR as current coreutils does, which 9.1
///   does only for a newline: a verdict line starting with a backslash is unescaped;
/// - b3sum's messages are its own (`(os error 2)`, no closing warnings): its standard
///   error is not compared.
fn normalised(
    tool: &str,
    (code, stdout, stderr): (Option<i32>, Vec<u8>, Vec<u8>),
    zero: bool,
    check: bool,
) -> Ran {
    let end = if zero { 0 } else { b'\n' };
    let mut out: Vec<Vec<u8>> = records(&stdout, end)
        .map(|r| {
            if check {
                // A line no tool should write is compared as it is.
                unescaped_verdict(r).unwrap_or_else(|| r.to_vec())
            } else {
                r.to_vec()
            }
        })
        .collect();
    out.sort();
    let prefix = format!("{tool}: ");
    let try_help = format!("Try '{tool} --help'");
    let mut err: Vec<Vec<u8>> = records(&stderr, b'\n')
        .map(|line| {
            let line = match line.strip_prefix(prefix.as_bytes()) {
                Some(rest) => [&b"seekless: "[..], rest].concat(),
                None => line.to_vec(),
            };
            match line.strip_prefix(try_help.as_bytes()) {
                Some(rest) => [&b"Try 'seekless hash --help'"[..], rest].concat(),
                None => line,
            }
        })
        .collect();
    err.sort();
    if tool == "b3sum" {
        err.clear();
    }
    Ran {
        code,
        stdout: out,
        stderr: err,
    }
}

fn records(bytes: &[u8], end: u8) -> impl Iterator<Item = &[u8]> {
    bytes
        .strip_suffix(&[end])
        .unwrap_or(bytes)
        .split(move |b| *b == end)
        .filter(|r| !r.is_empty())
}

fn show(r: &Ran) -> String {
    let lines = |v: &Vec<Vec<u8>>| {
        v.iter()
            .map(|l| format!("    {}\n", String::from_utf8_lossy(l).escape_debug()))
            .collect::<String>()
    };
    format!(
        "  exit {:?}\n  stdout:\n{}  stderr:\n{}",
        r.code,
        lines(&r.stdout),
        lines(&r.stderr)
    )
}

/// One case: the arguments both take, and standard input.
struct Case {
    args: Vec<OsString>,
    stdin: Vec<u8>,
}

fn case(args: &[&str], more: &[OsString], stdin: &[u8]) -> Case {
    let mut all: Vec<OsString> = args.iter().map(OsString::from).collect();
    all.extend(more.iter().cloned());
    Case {
        args: all,
        stdin: stdin.to_vec(),
    }
}

/// Runs every case through `tool` and `seekless hash --algo ALGO` in `dir`; returns a
/// report of each case where they differ (empty: all agree).
fn disagreements(dir: &Path, tool: &str, algo: &str, cases: &[Case]) -> String {
    let mut report = String::new();
    for c in cases {
        let zero = c.args.iter().any(|a| a == "-z" || a == "--zero");
        let check = c.args.iter().any(|a| a == "-c" || a == "--check");
        let mut theirs = Command::new(tool);
        theirs.args(&c.args);
        let mut ours = seekless();
        ours.args(["hash", "--algo", algo]).args(&c.args);
        let theirs = normalised(tool, run_in(dir, theirs, &c.stdin), zero, check);
        let ours = normalised(tool, run_in(dir, ours, &c.stdin), zero, check);
        assert!(
            !ours
                .stderr
                .iter()
                .any(|l| l.windows(8).any(|w| w == b"panicked")),
            "{}",
            show(&ours)
        );
        if theirs != ours {
            report += &format!(
                "{tool} {:?} (stdin {:?}):\n {tool}:\n{} seekless:\n{}",
                c.args,
                String::from_utf8_lossy(&c.stdin),
                show(&theirs),
                show(&ours)
            );
        }
    }
    report
}

/// What `tool ARGS…` prints in `dir`.
fn output_of(dir: &Path, tool: &str, args: &[OsString]) -> Vec<u8> {
    let (_, out, _) = run_in(
        dir,
        {
            let mut c = Command::new(tool);
            c.args(args);
            c
        },
        b"",
    );
    out
}

/// The manifests the `--check` cases read, made by `tool` itself in `dir`: `OK` (every
/// name, all match), `SUMS` (those, a mismatch and a missing file), `MISSING` (missing
/// files only), `GARBAGE` (a match and an improperly formatted line), `my sums` (nothing
/// but garbage), and single-space and mixed forms.
fn write_manifests(dir: &Path, tool: &str) {
    let ok = output_of(dir, tool, &operands(NAMES));
    std::fs::write(dir.join("OK"), &ok).unwrap();
    let a = output_of(dir, tool, &[OsString::from("a")]);
    let hex = String::from_utf8(a.clone()).unwrap();
    let hex = hex.split(' ').next().unwrap().to_string();
    let zeros = "0".repeat(hex.len());
    let mut sums = ok.clone();
    sums.extend_from_slice(format!("{zeros}  a\n{hex}  gone\n{hex}  gone with space\n").as_bytes());
    sums.extend_from_slice(format!("\\{hex}  gone\\nline\n").as_bytes());
    std::fs::write(dir.join("SUMS"), sums).unwrap();
    std::fs::write(dir.join("MISSING"), format!("{hex}  gone\n{hex}  gone's\n")).unwrap();
    std::fs::write(dir.join("GARBAGE"), format!("{hex}  a\nnot a line\n")).unwrap();
    std::fs::write(dir.join("my sums"), "garbage\n").unwrap();
    for (name, text) in [
        ("ONE", format!("{hex} a\n")),
        ("ONE_THEN_TWO", format!("{hex} a\n{hex}  a\n")),
        ("TWO_THEN_ONE", format!("{hex}  a\n{hex} a\n")),
        ("STAR_THEN_ONE", format!("{hex} *a\n{hex} a\n")),
        ("ONE_THEN_STAR", format!("{hex} a\n{hex} *a\n")),
        ("TAB", format!("{hex}\ta\n{hex}\t*a\n")),
        ("BLANK_TAB", format!("{hex} \ta\n")),
        ("ONE_CHAR", format!("{hex}  \n")),
        ("ONE_STAR_CHAR", format!("{hex} *\n")),
        ("ESCAPED_ONE", format!("\\{hex} a\\\\b\n")),
        (
            "TAGGED_AND_ONE",
            format!("{hex} a\n{}{hex}  a\n", tagged_line(tool, &hex)),
        ),
        ("LEADING", format!(" {hex} a\n")),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// `TAG (a) = HEX` for `tool` (b3sum has no tag; it gets a comment).
fn tagged_line(tool: &str, hex: &str) -> String {
    let tag = match tool {
        "sha256sum" => "SHA256",
        "sha1sum" => "SHA1",
        "md5sum" => "MD5",
        _ => return "# no tag\n".into(),
    };
    format!("{tag} (a) = {hex}\n")
}

/// The cases a coreutils tool and seekless both take.
fn coreutils_cases() -> Vec<Case> {
    let names = operands(NAMES);
    let missing = operands(MISSING);
    let a = [OsString::from("a")];
    let stdin = b"abc".as_slice();
    let mut cases = vec![
        // Hashing: files, standard input, and the options for how lines are written.
        case(&[], &names, b""),
        case(&[], &[], stdin),
        case(&["-"], &[], stdin),
        case(&["-", "-"], &[], stdin),
        case(&["a", "-", "./-"], &[], stdin),
        case(&["--tag"], &names, b""),
        case(&["--tag"], &[], stdin),
        case(&["-b"], &names, b""),
        case(&["--binary", "-"], &[], stdin),
        case(&["-t"], &names, b""),
        case(&["-z"], &names, b""),
        case(&["--zero", "--tag"], &names, b""),
        case(&["-b", "-t"], &a, b""),
        case(&["-t", "-b"], &a, b""),
        case(&["-t", "--tag"], &a, b""),
        case(&["--tag", "-b"], &a, b""),
        case(&["-z", "-b"], &names, b""),
        // Missing files: the messages quote their names.
        case(&[], &missing, b""),
        case(&["a"], &missing, b""),
        // Usage errors, in coreutils' words and with its status.
        case(&["--tag", "-t"], &a, b""),
        case(&["--text", "--tag", "--text"], &a, b""),
        case(&["--quiet"], &a, b""),
        case(&["--status"], &a, b""),
        case(&["-w"], &a, b""),
        case(&["--warn"], &a, b""),
        case(&["--strict"], &a, b""),
        case(&["--ignore-missing"], &a, b""),
        case(&["--status", "--quiet"], &a, b""),
        case(&["--quiet", "--status"], &a, b""),
        case(&["--strict", "--quiet"], &a, b""),
        case(&["-c", "--tag", "OK"], &[], b""),
        case(&["-c", "-b", "OK"], &[], b""),
        case(&["-c", "--text", "OK"], &[], b""),
    ];
    // Checking.
    for args in [
        &["-c", "OK"][..],
        &["-c", "SUMS"],
        &["--check", "--quiet", "SUMS"],
        &["-c", "--status", "SUMS"],
        &["-c", "--status", "OK"],
        &["-c", "-w", "GARBAGE"],
        &["-c", "--strict", "GARBAGE"],
        &["-c", "--strict", "--status", "GARBAGE"],
        &["-c", "--status", "--quiet", "SUMS"],
        &["-c", "--quiet", "--status", "SUMS"],
        &["-c", "--quiet", "--warn", "GARBAGE"],
        &["-c", "--warn", "--quiet", "GARBAGE"],
        &["-c", "--status", "--warn", "GARBAGE"],
        &["-c", "--warn", "--status", "GARBAGE"],
        &["-c", "--ignore-missing", "SUMS"],
        &["-c", "--ignore-missing", "OK"],
        &["-c", "--ignore-missing", "MISSING"],
        &["-c", "--ignore-missing", "--quiet", "MISSING"],
        &["-c", "--ignore-missing", "--status", "MISSING"],
        &["-c", "--ignore-missing", "-w", "MISSING"],
        &["-c", "MISSING"],
        &["-c", "my sums"],
        &["-c", "-w", "my sums"],
        &["-c", "no such manifest"],
        &["-c", "ONE"],
        &["-c", "ONE_THEN_TWO"],
        &["-c", "TWO_THEN_ONE"],
        &["-c", "-w", "TWO_THEN_ONE"],
        &["-c", "STAR_THEN_ONE"],
        &["-c", "ONE_THEN_STAR"],
        &["-c", "TAB"],
        &["-c", "BLANK_TAB"],
        &["-c", "ONE_CHAR"],
        &["-c", "ONE_STAR_CHAR"],
        &["-c", "ESCAPED_ONE"],
        &["-c", "TAGGED_AND_ONE"],
        &["-c", "LEADING"],
        &["-c", "ONE", "GARBAGE"],
    ] {
        cases.push(case(args, &[], b""));
    }
    cases
}

/// Cases reading a manifest from standard input: built once the manifests exist.
fn stdin_manifest_cases(dir: &Path) -> Vec<Case> {
    let ok = std::fs::read(dir.join("OK")).unwrap();
    let garbage = std::fs::read(dir.join("my sums")).unwrap();
    vec![
        case(&["-c"], &[], &ok),
        case(&["--check", "-"], &[], &ok),
        case(&["-c", "--quiet"], &[], &ok),
        case(&["-c", "-w"], &[], &garbage),
        case(&["-c", "-", "GARBAGE"], &[], &garbage),
    ]
}

fn conform(test: &str, tool: &str, algo: &str) {
    if !require_tool(test, tool) {
        return;
    }
    let t = scratch_dir(test);
    build_tree(t.path());
    write_manifests(t.path(), tool);
    let mut cases = coreutils_cases();
    cases.extend(stdin_manifest_cases(t.path()));
    let report = disagreements(t.path(), tool, algo, &cases);
    assert!(
        report.is_empty(),
        "seekless hash differs from {tool}:\n{report}"
    );
}

#[test]
fn hash_agrees_with_sha256sum_on_every_case() {
    conform(test_name!(), "sha256sum", "sha256");
}

#[test]
fn hash_agrees_with_md5sum_on_every_case() {
    conform(test_name!(), "md5sum", "md5");
}

#[test]
fn hash_agrees_with_sha1sum_on_every_case() {
    conform(test_name!(), "sha1sum", "sha1");
}

/// b3sum has no `--tag`, `-z`, `-b`, `-t`, `--status`, `-w` or `--ignore-missing`, and
/// words its messages its own way: the cases it shares, on every name it can represent
/// (all but the one that is not UTF-8).
#[test]
fn hash_agrees_with_b3sum_on_what_b3sum_has() {
    let test = test_name!();
    if !require_tool(test, "b3sum") {
        return;
    }
    let t = scratch!();
    build_tree(t.path());
    let utf8: Vec<&[u8]> = NAMES
        .iter()
        .copied()
        .filter(|n| std::str::from_utf8(n).is_ok())
        .collect();
    let names = operands(&utf8);
    let theirs = output_of(t.path(), "b3sum", &names);
    std::fs::write(t.path().join("B3"), &theirs).unwrap();
    let mut sums = theirs.clone();
    sums.extend_from_slice(format!("{}  a\n", "0".repeat(64)).as_bytes());
    std::fs::write(t.path().join("SUMS"), sums).unwrap();
    let cases = vec![
        case(&[], &names, b""),
        case(&[], &[], b"abc"),
        case(&["-"], &[], b"abc"),
        case(&["-c", "B3"], &[], b""),
        case(&["-c", "--quiet", "B3"], &[], b""),
        case(&["-c", "SUMS"], &[], b""),
        case(&["-c"], &[], &theirs),
    ];
    let report = disagreements(t.path(), "b3sum", "blake3", &cases);
    assert!(
        report.is_empty(),
        "seekless hash differs from b3sum:\n{report}"
    );

    // Byte for byte, b3sum's manifest is seekless's (a CR written as it is).
    let ours = run(seekless()
        .current_dir(t.path())
        .args(["hash", "--algo", "blake3", "--sort-output"])
        .args(&names))
    .stdout;
    let sorted = |m: &[u8]| {
        let mut lines: Vec<Vec<u8>> = records(m, b'\n').map(<[u8]>::to_vec).collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(&ours), sorted(&theirs));
    assert!(
        ours.windows(4).any(|w| w == b"  c\r"),
        "{}",
        String::from_utf8_lossy(&ours)
    );
}

/// A name that is not UTF-8, which b3sum cannot represent: `b3sum -c` stops at its line
/// (documented), seekless checks it, and the documented way around lets b3sum check the
/// others.
#[test]
fn a_name_b3sum_cannot_represent_is_checked_by_seekless_and_filtered_for_b3sum() {
    let test = test_name!();
    if !require_tools(test, &["b3sum", "grep"]) {
        return;
    }
    let t = scratch!();
    build_tree(t.path());
    // The name that is not UTF-8 first, so that b3sum meets it before the others.
    let mut names: Vec<&[u8]> = vec![b"caf\xe9"];
    names.extend(NAMES.iter().filter(|n| std::str::from_utf8(n).is_ok()));
    let manifest = run(seekless()
        .current_dir(t.path())
        .args(["hash", "--algo", "blake3", "--sort-output", "--"])
        .args(operands(&names)))
    .stdout;
    std::fs::write(t.path().join("B3"), &manifest).unwrap();
    // b3sum refuses it.
    let mut b3 = Command::new("b3sum");
    b3.args(["-c", "B3"]);
    let (code, _, err) = run_in(t.path(), b3, b"");
    assert_eq!(code, Some(1));
    assert!(
        String::from_utf8_lossy(&err).contains("did not contain valid UTF-8"),
        "{}",
        String::from_utf8_lossy(&err)
    );
    // seekless checks every line.
    let o = run(seekless()
        .current_dir(t.path())
        .args(["hash", "--check", "--algo", "blake3", "B3"]));
    assert_eq!(records(&o.stdout, b'\n').count(), names.len());
    // The way around: b3sum is given the lines that are UTF-8.
    let mut filtered = Command::new("sh");
    filtered.args(["-c", "LC_ALL=C.UTF-8 grep -ax '.*' B3 | b3sum -c"]);
    let (code, out, err) = run_in(t.path(), filtered, b"");
    assert_eq!(code, Some(0), "{}", String::from_utf8_lossy(&err));
    assert_eq!(records(&out, b'\n').count(), names.len() - 1);
}

/// A write error on standard output ends every command with exit 1 and coreutils'
/// message (its `close_stdout`), `--help` and `--version` included.
#[test]
fn a_write_error_on_stdout_is_exit_1_with_a_message_for_every_command() {
    let t = scratch!();
    std::fs::write(t.path().join("a"), b"abc").unwrap();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let a = t.path().join("a");
    let a = a.to_str().unwrap();
    for args in [
        &["order", a][..],
        &["order", "--json", a],
        &["hash", a],
        &["hash", "--tag", a],
        &["completions", "bash"],
        &["man"],
        &["--help"],
        &["--version"],
        &["hash", "--help"],
        &["hash", "--version"],
        &["dupes", "--help"],
    ] {
        let o = seekless().args(args).stdout(full()).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            "seekless: write error: No space left on device\n",
            "{args:?}"
        );
    }
    // As `sha256sum > /dev/full` (exit 1; its message is its own).
    let gnu = Command::new("sha256sum").arg(a).stdout(full()).output();
    if let Ok(gnu) = gnu {
        assert_eq!(gnu.status.code(), Some(1));
    }
}

/// `dupes` writes its listing through the same standard output: a catalog with one
/// group, listed into `/dev/full`.
#[test]
fn dupes_listing_into_a_full_disk_is_exit_1_with_a_message() {
    let t = scratch!();
    let db = t.path().join("c.db");
    let pics = t.path().join("p");
    std::fs::create_dir(&pics).unwrap();
    // A JPEG's signature is enough for a row (the frame it lacks is reported: exit 1).
    for n in ["x.jpg", "y.jpg"] {
        std::fs::write(pics.join(n), b"\xff\xd8\xff\xe0\x00\x10JFIF\x00same").unwrap();
    }
    let o = seekless()
        .args(["index", "--db"])
        .arg(&db)
        .arg(&pics)
        .output()
        .unwrap();
    assert_exit(&o, 1);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = seekless()
        .args(["dupes", "--db"])
        .arg(&db)
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).ends_with("seekless: write error: No space left on device\n"),
        "{}",
        stderr(&o)
    );
}

/// `-z` writes names raw; `--check -z` reads such a manifest back (where `sha256sum`
/// refuses `-z` with `--check`: a documented difference).
#[test]
fn check_reads_back_what_hash_writes_with_zero() {
    let t = scratch!();
    build_tree(t.path());
    let names = operands(NAMES);
    let manifest = run(seekless()
        .current_dir(t.path())
        .args(["hash", "-z"])
        .args(&names))
    .stdout;
    assert!(manifest.windows(9).any(|w| w == b"new\nline\0"));
    std::fs::write(t.path().join("Z"), &manifest).unwrap();
    let o = run(seekless()
        .current_dir(t.path())
        .args(["hash", "-c", "-z", "Z"]));
    let verdicts: Vec<&[u8]> = records(&o.stdout, b'\n').collect();
    assert_eq!(verdicts.len(), NAMES.len());
    assert!(
        verdicts.iter().all(|v| v.ends_with(b": OK")),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// `-0`, the other commands' switch for NUL-ended output, ends `hash`'s lines as `-z`
/// does; `hash --version` answers as `sha256sum --version` is asked.
#[test]
fn null_ends_lines_as_zero_does_and_hash_tells_its_version() {
    let t = scratch!();
    build_tree(t.path());
    let names = operands(NAMES);
    let hashed = |flag: &str| {
        let out = run(seekless()
            .current_dir(t.path())
            .args(["hash", "--sort-output", flag])
            .args(&names))
        .stdout;
        assert_eq!(out.iter().filter(|&&b| b == 0).count(), NAMES.len());
        out
    };
    assert_eq!(hashed("-0"), hashed("-z"));
    let o = run(seekless().args(["hash", "--version"]));
    let version = String::from_utf8(o.stdout).unwrap();
    assert!(
        version.ends_with(&format!(" {}\n", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
}

/// The differences docs/usage.md lists ("Differences from sha256sum") beyond those
/// [`normalised`] takes out, each as it is: so that the list stays true.
#[test]
fn the_documented_differences_from_sha256sum_hold() {
    let test = test_name!();
    if !require_tool(test, "sha256sum") {
        return;
    }
    let t = scratch!();
    build_tree(t.path());
    std::fs::create_dir(t.path().join("dir")).unwrap();
    std::fs::write(t.path().join("dir/in"), b"in").unwrap();
    let both = |args: &[&str], stdin: &[u8]| {
        let mut gnu = Command::new("sha256sum");
        gnu.args(args);
        let mut ours = seekless();
        ours.arg("hash").args(args);
        (run_in(t.path(), gnu, stdin), run_in(t.path(), ours, stdin))
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();

    // A directory is walked (sha256sum: `Is a directory`).
    let (gnu, ours) = both(&["dir"], b"");
    assert_eq!((gnu.0, ours.0), (Some(1), Some(0)));
    assert!(text(&gnu.2).contains("dir: Is a directory"));
    assert!(text(&ours.1).ends_with("  dir/in\n"), "{}", text(&ours.1));
    // A device named as PATH is refused (sha256sum reads it).
    let (gnu, ours) = both(&["/dev/null"], b"");
    assert_eq!((gnu.0, ours.0), (Some(0), Some(1)));
    assert!(text(&ours.2).starts_with("seekless: /dev/null: not a regular file"));
    // `--check -z` reads NUL-ended manifests (sha256sum refuses it).
    let manifest = run(seekless().current_dir(t.path()).args(["hash", "-z", "a"])).stdout;
    std::fs::write(t.path().join("Z"), manifest).unwrap();
    let (gnu, ours) = both(&["-c", "-z", "Z"], b"");
    assert_eq!((gnu.0, ours.0), (Some(1), Some(0)));
    assert!(text(&gnu.2).contains("--zero option is not supported"));
    assert_eq!(text(&ours.1), "a: OK\n");
    // Verdicts escape a backslash as current coreutils (9.1: only for a newline).
    let sums = run(seekless().current_dir(t.path()).args(["hash", "b\\s"])).stdout;
    std::fs::write(t.path().join("BS"), sums).unwrap();
    let (gnu, ours) = both(&["-c", "BS"], b"");
    assert_eq!(text(&ours.1), "\\b\\\\s: OK\n");
    if text(&gnu.1) == "b\\s: OK\n" {
        // Debian 12's 9.1 (newer coreutils escape it as seekless does).
        assert_eq!(gnu.0, Some(0));
    }
    // An unknown option: exit 2 from seekless's parser (sha256sum: 1).
    let (gnu, ours) = both(&["--no-such-option"], b"");
    assert_eq!((gnu.0, ours.0), (Some(1), Some(2)));
    // A manifest that is a directory.
    let (gnu, ours) = both(&["-c", "dir"], b"");
    assert_eq!((gnu.0, ours.0), (Some(1), Some(1)));
    assert_eq!(text(&gnu.2), "sha256sum: dir: read error\n");
    assert_eq!(text(&ours.2), "seekless: dir: Is a directory\n");
    // `hash --version` is seekless's.
    let (_, ours) = both(&["--version"], b"");
    assert!(text(&ours.1).contains(env!("CARGO_PKG_VERSION")));
    // Names are quoted as in a UTF-8 locale, whatever the locale.
    let mut gnu = Command::new("sha256sum");
    gnu.env("LC_ALL", "C").arg("gone-\u{e9}");
    let mut ours = seekless();
    ours.env("LC_ALL", "C").args(["hash", "gone-\u{e9}"]);
    let (gnu, ours) = (run_in(t.path(), gnu, b""), run_in(t.path(), ours, b""));
    assert_eq!(
        text(&gnu.2),
        "sha256sum: 'gone-'$'\\303\\251': No such file or directory\n"
    );
    assert_eq!(
        text(&ours.2),
        "seekless: gone-\u{e9}: No such file or directory\n"
    );
}
