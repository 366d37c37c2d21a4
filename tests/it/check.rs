//! `seekless hash --check` against `sha256sum -c` (and `md5sum -c`): the same manifest,
//! checked from the same directory, gives the same verdicts, exit code and closing
//! warnings. seekless prints verdicts in read order, not manifest order, so they are
//! compared as sorted lists.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// What one checking run printed, and how it ended.
#[derive(Debug)]
struct Outcome {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

impl Outcome {
    fn stdout_lines(&self) -> Vec<&[u8]> {
        self.stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// The closing `WARNING: …` lines, without the program's name, in order.
    fn warnings(&self, program: &str) -> Vec<String> {
        let prefix = format!("{program}: WARNING: ");
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
            .collect()
    }
}

fn run_in(dir: &Path, mut cmd: Command, stdin: &[u8]) -> Outcome {
    let out = output_with_input(cmd.current_dir(dir), Some(stdin.to_vec()), RUN_LIMIT);
    Outcome {
        code: out.status.code(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `seekless hash --check --algo ALGO ARGS…` in `dir`.
fn seekless_check(dir: &Path, algo: &str, args: &[&str], stdin: &[u8]) -> Outcome {
    let mut cmd = seekless();
    cmd.args(["hash", "--check", "--algo", algo]).args(args);
    run_in(dir, cmd, stdin)
}

/// `ALGOsum -c ARGS…` in `dir`.
fn coreutils_check(dir: &Path, algo: &str, args: &[&str], stdin: &[u8]) -> Outcome {
    let mut cmd = Command::new(format!("{algo}sum"));
    cmd.arg("-c").args(args);
    run_in(dir, cmd, stdin)
}

/// Verdict lines, sorted, each brought to the raw name: a line starting with a backslash
/// is unescaped. Current coreutils (and seekless) escape a name holding a backslash,
/// newline or CR; Debian 12's coreutils 9.1 escapes it only when it holds a newline. The
/// exact form seekless prints is asserted where it matters.
fn verdicts(out: &Outcome) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = out
        .stdout_lines()
        .into_iter()
        .map(|l| unescaped_verdict(l).unwrap_or_else(|| panic!("bad escape in {:?}", show(l))))
        .collect();
    lines.sort();
    lines
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).escape_debug().to_string()
}

/// Checks with both tools and asserts the same exit code, verdicts and closing warnings.
fn assert_agree(dir: &Path, algo: &str, args: &[&str], stdin: &[u8]) -> (Outcome, Outcome) {
    let ours = seekless_check(dir, algo, args, stdin);
    let theirs = coreutils_check(dir, algo, args, stdin);
    let context = format!(
        "{args:?}\nseekless ({:?}):\n{}{}\n{algo}sum ({:?}):\n{}{}",
        ours.code,
        show(&ours.stdout),
        ours.stderr,
        theirs.code,
        show(&theirs.stdout),
        theirs.stderr
    );
    assert_eq!(ours.code, theirs.code, "exit codes differ: {context}");
    assert_eq!(
        verdicts(&ours),
        verdicts(&theirs),
        "verdicts differ: {context}"
    );
    assert_eq!(
        ours.warnings("seekless"),
        theirs.warnings(&format!("{algo}sum")),
        "warnings differ: {context}"
    );
    (ours, theirs)
}

/// What `TOOL ARGS…` prints in `dir` (a manifest, as coreutils writes it).
fn written_by(dir: &Path, tool: &str, args: &[&OsStr]) -> Vec<u8> {
    run(Command::new(tool).current_dir(dir).args(args)).stdout
}

fn has_line(out: &Outcome, line: &[u8]) -> bool {
    out.stdout_lines().contains(&line)
}

#[test]
fn every_listed_file_gets_the_verdict_sha256sum_gives() {
    let t = scratch!();
    let mut rng = Rng::new(1);
    for name in ["a", "b", "c"] {
        std::fs::write(t.path().join(name), rng.bytes(5000)).unwrap();
    }
    let listed = written_by(t.path(), "sha256sum", &[os("a"), os("b"), os("c")]);
    let lines: Vec<&[u8]> = listed.split(|b| *b == b'\n').collect();
    // A comment, blanks before a line and a CRLF ending: sha256sum skips or accepts them
    // without a word.
    let mut manifest = b"# made by sha256sum\n".to_vec();
    manifest.extend_from_slice(b"  ");
    manifest.extend_from_slice(lines[0]);
    manifest.extend_from_slice(b"\r\n");
    manifest.extend_from_slice(lines[1]);
    manifest.extend_from_slice(b"\n\n");
    manifest.extend_from_slice(lines[2]);
    manifest.push(b'\n');
    std::fs::write(t.path().join("M"), &manifest).unwrap();

    let (ours, theirs) = assert_agree(t.path(), "sha256", &["M"], b"");
    assert_eq!(ours.code, Some(0));
    assert_eq!(verdicts(&ours), [&b"a: OK"[..], b"b: OK", b"c: OK"]);
    assert_eq!(theirs.stderr, "");
    assert_eq!(ours.stderr, "", "nothing to warn about");
}

#[test]
fn a_file_listed_on_several_lines_or_under_several_names_gets_a_verdict_for_each() {
    let t = scratch!();
    std::fs::write(t.path().join("a"), b"contents").unwrap();
    std::fs::hard_link(t.path().join("a"), t.path().join("link")).unwrap();
    let good = written_by(t.path(), "sha256sum", &[os("a")]);
    let good = String::from_utf8(good).unwrap();
    let hex = &good[..64];
    let zeros = "0".repeat(64);
    // The same path twice (once with a wrong digest), a hard link, and `./a`: the same
    // file under three names.
    let manifest = format!("{hex}  a\n{zeros}  a\n{hex}  link\n{hex}  ./a\n");
    std::fs::write(t.path().join("M"), manifest).unwrap();

    let (ours, _) = assert_agree(t.path(), "sha256", &["M"], b"");
    assert_eq!(ours.code, Some(1));
    assert_eq!(
        verdicts(&ours),
        [&b"./a: OK"[..], b"a: FAILED", b"a: OK", b"link: OK"]
    );
}

#[test]
fn a_mismatch_is_failed_and_counted_in_coreutils_words() {
    let t = scratch!();
    for name in ["a", "b", "c"] {
        std::fs::write(t.path().join(name), name).unwrap();
    }
    let manifest = written_by(t.path(), "sha256sum", &[os("a"), os("b"), os("c")]);
    std::fs::write(t.path().join("M"), manifest).unwrap();
    std::fs::write(t.path().join("b"), b"changed").unwrap();

    let (ours, _) = assert_agree(t.path(), "sha256", &["M"], b"");
    assert_eq!(ours.code, Some(1));
    assert!(has_line(&ours, b"b: FAILED"), "{ours:?}");
    assert_eq!(
        ours.warnings("seekless"),
        ["1 computed checksum did NOT match"]
    );
}

#[test]
fn a_missing_file_is_failed_open_or_read_on_stdout() {
    let t = scratch!();
    std::fs::write(t.path().join("here"), b"here").unwrap();
    std::fs::write(t.path().join("gone"), b"gone").unwrap();
    let manifest = written_by(t.path(), "sha256sum", &[os("here"), os("gone")]);
    std::fs::write(t.path().join("M"), manifest).unwrap();
    std::fs::remove_file(t.path().join("gone")).unwrap();

    let (ours, theirs) = assert_agree(t.path(), "sha256", &["M"], b"");
    assert_eq!(ours.code, Some(1));
    assert!(has_line(&ours, b"gone: FAILED open or read"), "{ours:?}");
    assert!(has_line(&ours, b"here: OK"), "{ours:?}");
    assert!(
        theirs
            .stderr
            .contains("sha256sum: gone: No such file or directory")
    );
    assert!(
        ours.stderr
            .contains("seekless: gone: No such file or directory"),
        "{}",
        ours.stderr
    );
    assert_eq!(
        ours.warnings("seekless"),
        ["1 listed file could not be read"]
    );
}

#[test]
fn a_directory_in_place_of_a_file_is_failed_open_or_read() {
    let t = scratch!();
    std::fs::write(t.path().join("f"), b"file").unwrap();
    let manifest = written_by(t.path(), "sha256sum", &[os("f")]);
    let line = String::from_utf8(manifest).unwrap();
    let hex = &line[..64];
    // Two directories where files were: each is a verdict, not a walk into it.
    std::fs::create_dir_all(t.path().join("d/sub")).unwrap();
    std::fs::write(t.path().join("d/sub/inner"), b"file").unwrap();
    let manifest = format!("{line}{hex}  d\n{hex}  d/sub\n");
    std::fs::write(t.path().join("M"), manifest).unwrap();

    let (ours, theirs) = assert_agree(t.path(), "sha256", &["M"], b"");
    assert_eq!(ours.code, Some(1));
    assert_eq!(
        verdicts(&ours),
        [
            &b"d/sub: FAILED open or read"[..],
            b"d: FAILED open or read",
            b"f: OK"
        ]
    );
    assert!(theirs.stderr.contains("sha256sum: d: Is a directory"));
    assert!(
        ours.stderr.contains("seekless: d: Is a directory"),
        "{}",
        ours.stderr
    );
    assert_eq!(
        ours.warnings("seekless"),
        ["2 listed files could not be read"]
    );
}

#[test]
fn an_unreadable_file_is_failed_open_or_read() {
    use std::os::unix::fs::PermissionsExt;
    let test = "an_unreadable_file_is_failed_open_or_read";
    // Root reads a mode-000 file anyway: as root, both tools run as nobody.
    if is_root() && !require_tool(test, "setpriv") {
        return;
    }
    let t = scratch!();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(t.path().join("open"), b"fine").unwrap();
    std::fs::write(t.path().join("secret"), b"no").unwrap();
    let manifest = written_by(t.path(), "sha256sum", &[os("open"), os("secret")]);
    std::fs::write(t.path().join("M"), manifest).unwrap();
    let secret = t.path().join("secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();

    let as_user = |program: &OsStr, args: &[&str]| {
        let mut cmd = if is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(program);
            c
        } else {
            Command::new(program)
        };
        cmd.args(args);
        run_in(t.path(), cmd, b"")
    };
    let ours = as_user(
        OsStr::new(env!("CARGO_BIN_EXE_seekless")),
        &["hash", "--check", "M"],
    );
    let theirs = as_user(OsStr::new("sha256sum"), &["-c", "M"]);
    assert_eq!(ours.code, theirs.code);
    assert_eq!(ours.code, Some(1));
    assert_eq!(verdicts(&ours), verdicts(&theirs), "{ours:?}\n{theirs:?}");
    assert_eq!(
        verdicts(&ours),
        [&b"open: OK"[..], b"secret: FAILED open or read"]
    );
    assert!(
        theirs
            .stderr
            .contains("sha256sum: secret: Permission denied")
    );
    assert!(
        ours.stderr.contains("seekless: secret: Permission denied"),
        "{}",
        ours.stderr
    );
    assert_eq!(
        ours.warnings("seekless"),
        theirs.warnings("sha256sum"),
        "{}",
        ours.stderr
    );
}

#[test]
fn names_with_newline_backslash_and_cr_are_escaped_like_coreutils() {
    let t = scratch!();
    let names: [&[u8]; 5] = [b"n\nl", b"b\\s", b"c\rr", b"caf\xe9", b"plain"];
    for name in names {
        std::fs::write(t.path().join(OsStr::from_bytes(name)), name).unwrap();
    }
    let args: Vec<&OsStr> = names.iter().map(|n| OsStr::from_bytes(n)).collect();

    // Writing: seekless's lines are sha256sum's (which escapes `\r` since coreutils 9.0).
    let mut ours = seekless();
    ours.arg("hash").args(&args);
    let manifest = run(ours.current_dir(t.path())).stdout;
    let mut our_lines: Vec<&[u8]> = manifest.split(|b| *b == b'\n').collect();
    let theirs = written_by(t.path(), "sha256sum", &args);
    let mut their_lines: Vec<&[u8]> = theirs.split(|b| *b == b'\n').collect();
    our_lines.sort();
    their_lines.sort();
    assert_eq!(our_lines, their_lines);
    assert!(
        our_lines
            .iter()
            .any(|l| l.starts_with(b"\\") && l.ends_with(b"  c\\rr")),
        "{}",
        show(&manifest)
    );

    // Checking: a listed file that is gone keeps its escaped name in its verdict.
    let mut manifest = manifest.clone();
    manifest.push(b'\\');
    manifest.extend_from_slice(&"0".repeat(64).into_bytes());
    manifest.extend_from_slice(b"  gone\\nfile\n");
    std::fs::write(t.path().join("M"), &manifest).unwrap();
    let (ours, theirs) = assert_agree(t.path(), "sha256", &["M"], b"");
    assert_eq!(ours.code, Some(1));
    // Debian 12's sha256sum 9.1 reads the `\r` escape back: its own verdict is OK.
    assert!(
        verdicts(&theirs).contains(&b"c\rr: OK".to_vec()),
        "{}",
        show(&theirs.stdout)
    );
    // seekless escapes as current coreutils does (9.1 escapes only names with a newline);
    // names that are not UTF-8 stay byte-exact.
    let mut printed = ours.stdout_lines();
    printed.sort();
    assert_eq!(
        printed,
        [
            &b"\\b\\\\s: OK"[..],
            b"\\c\\rr: OK",
            b"\\gone\\nfile: FAILED open or read",
            b"\\n\\nl: OK",
            b"caf\xe9: OK",
            b"plain: OK",
        ]
    );
}

#[test]
fn bsd_tagged_lines_are_checked_when_they_name_the_algorithm() {
    let t = scratch!();
    for name in ["a", "b", "n\nl"] {
        std::fs::write(t.path().join(name), name).unwrap();
    }
    // `--tag` lines (one escaped), OpenSSL spacing, and a line for another algorithm.
    let mut manifest = written_by(t.path(), "sha256sum", &[os("--tag"), os("a"), os("n\nl")]);
    let b = String::from_utf8(written_by(t.path(), "sha256sum", &[os("b")])).unwrap();
    manifest.extend_from_slice(format!("SHA256(b)= {}\n", &b[..64]).as_bytes());
    manifest.extend_from_slice(&written_by(t.path(), "md5sum", &[os("--tag"), os("a")]));
    std::fs::write(t.path().join("M"), &manifest).unwrap();

    let (ours, _) = assert_agree(t.path(), "sha256", &["M"], b"");
    assert_eq!(ours.code, Some(0));
    assert_eq!(verdicts(&ours), [&b"a: OK"[..], b"b: OK", b"n\nl: OK"]);
    assert_eq!(
        ours.warnings("seekless"),
        ["1 line is improperly formatted"]
    );

    // The MD5 line is md5sum's; the SHA256 ones are improperly formatted for it.
    let (ours, _) = assert_agree(t.path(), "md5", &["M"], b"");
    assert_eq!(ours.code, Some(0));
    assert_eq!(verdicts(&ours), [&b"a: OK"[..]]);
    assert_eq!(
        ours.warnings("seekless"),
        ["3 lines are improperly formatted"]
    );
}

#[test]
fn dash_is_standard_input_and_a_file_named_dash_is_listed_as_dot_slash() {
    let t = scratch!();
    std::fs::write(t.path().join("-"), b"a file named dash\n").unwrap();
    let stdin = b"standard input\n";

    // Writing: the operand `-` is standard input, as in `sha256sum`; the file `-` is
    // reached as `./-` and written so.
    let mut cmd = seekless();
    cmd.args(["hash", "./-"]);
    let ours = run(cmd.current_dir(t.path())).stdout;
    assert_eq!(ours, written_by(t.path(), "sha256sum", &[os("./-")]));
    assert!(ours.ends_with(b"  ./-\n"), "{}", show(&ours));

    // Checking: `-` is standard input, `./-` the file.
    std::fs::write(t.path().join("copy"), stdin).unwrap();
    let copy = written_by(t.path(), "sha256sum", &[os("copy")]);
    let stdin_hex = String::from_utf8(copy).unwrap()[..64].to_string();
    let mut manifest = format!("{stdin_hex}  -\n").into_bytes();
    manifest.extend_from_slice(&ours);
    std::fs::write(t.path().join("M"), &manifest).unwrap();
    let (ours, _) = assert_agree(t.path(), "sha256", &["M"], stdin);
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    assert_eq!(verdicts(&ours), [&b"-: OK"[..], b"./-: OK"]);

    // Listed twice, standard input is read twice: the second time it is at its end.
    let twice = format!("{stdin_hex}  -\n{stdin_hex}  -\n");
    std::fs::write(t.path().join("M2"), twice).unwrap();
    let (ours, _) = assert_agree(t.path(), "sha256", &["M2"], stdin);
    assert_eq!(verdicts(&ours), [&b"-: FAILED"[..], b"-: OK"]);

    // In a manifest read from standard input, `-` cannot mean it.
    let (ours, theirs) = assert_agree(
        t.path(),
        "sha256",
        &["-"],
        format!("{stdin_hex}  -\n").as_bytes(),
    );
    assert_eq!(ours.code, Some(1));
    assert!(theirs.stderr.contains("no properly formatted"));
    assert!(
        ours.stderr
            .contains("seekless: 'standard input': no properly formatted checksum lines found"),
        "{}",
        ours.stderr
    );
}

#[test]
fn a_manifest_without_checksum_lines_is_named_and_exits_1() {
    let t = scratch!();
    std::fs::write(t.path().join("garbage"), b"not a checksum\nnor this\n").unwrap();
    std::fs::write(t.path().join("empty"), b"").unwrap();
    std::fs::write(t.path().join("a"), b"a").unwrap();
    let sha = written_by(t.path(), "sha256sum", &[os("a")]);
    std::fs::write(t.path().join("sha"), sha).unwrap();

    for (manifest, algo) in [("garbage", "sha256"), ("empty", "sha256"), ("sha", "md5")] {
        let (ours, theirs) = assert_agree(t.path(), algo, &[manifest], b"");
        assert_eq!(ours.code, Some(1), "{manifest}: {}", ours.stderr);
        assert!(ours.stdout.is_empty());
        assert!(
            theirs
                .stderr
                .contains(&format!("{manifest}: no properly formatted")),
            "{}",
            theirs.stderr
        );
        assert_eq!(
            ours.stderr,
            format!("seekless: {manifest}: no properly formatted checksum lines found\n")
        );
    }
}

#[test]
fn quiet_status_strict_and_warn_behave_like_coreutils() {
    let t = scratch!();
    for name in ["a", "b"] {
        std::fs::write(t.path().join(name), name).unwrap();
    }
    let a = String::from_utf8(written_by(t.path(), "sha256sum", &[os("a")])).unwrap();
    let hex = &a[..64];
    // An OK, an improperly formatted line, a mismatch.
    std::fs::write(t.path().join("M"), format!("{hex}  a\ngarbage\n{hex}  b\n")).unwrap();
    // An OK and an improperly formatted line: passes unless --strict.
    std::fs::write(t.path().join("M2"), format!("{hex}  a\ngarbage\n")).unwrap();

    let (ours, _) = assert_agree(t.path(), "sha256", &["--quiet", "M"], b"");
    assert_eq!(ours.stdout_lines(), [&b"b: FAILED"[..]]);

    let (ours, theirs) = assert_agree(t.path(), "sha256", &["--status", "M"], b"");
    assert_eq!(ours.code, Some(1));
    assert!(ours.stdout.is_empty() && theirs.stdout.is_empty());
    assert_eq!((ours.stderr.as_str(), theirs.stderr.as_str()), ("", ""));

    let (ours, theirs) = assert_agree(t.path(), "sha256", &["-w", "M"], b"");
    assert!(
        theirs
            .stderr
            .contains("M: 2: improperly formatted SHA256 checksum line")
    );
    assert!(
        ours.stderr
            .contains("seekless: M: 2: improperly formatted SHA256 checksum line"),
        "{}",
        ours.stderr
    );

    let (ours, _) = assert_agree(t.path(), "sha256", &["M2"], b"");
    assert_eq!(ours.code, Some(0));
    let (ours, _) = assert_agree(t.path(), "sha256", &["--strict", "M2"], b"");
    assert_eq!(ours.code, Some(1));
}

#[test]
fn warnings_are_given_per_manifest_like_coreutils() {
    let t = scratch!();
    for name in ["a", "b", "c"] {
        std::fs::write(t.path().join(name), name).unwrap();
    }
    let one = written_by(t.path(), "sha256sum", &[os("a"), os("b")]);
    let two = written_by(t.path(), "sha256sum", &[os("c"), os("a")]);
    std::fs::write(t.path().join("M1"), one).unwrap();
    std::fs::write(t.path().join("M2"), two).unwrap();
    std::fs::write(t.path().join("a"), b"changed").unwrap();
    std::fs::remove_file(t.path().join("c")).unwrap();

    // `a` is listed in both, and fails in both; a manifest that cannot be opened is an
    // error and the others are still checked.
    let (ours, theirs) = assert_agree(t.path(), "sha256", &["M1", "nosuch", "M2"], b"");
    assert_eq!(ours.code, Some(1));
    assert_eq!(
        ours.warnings("seekless"),
        [
            "1 computed checksum did NOT match",
            "1 listed file could not be read",
            "1 computed checksum did NOT match",
        ]
    );
    assert!(
        theirs
            .stderr
            .contains("sha256sum: nosuch: No such file or directory")
    );
    assert!(
        ours.stderr
            .contains("seekless: nosuch: No such file or directory"),
        "{}",
        ours.stderr
    );
}
