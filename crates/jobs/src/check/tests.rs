use std::sync::Mutex;

use super::*;

const SHA256_ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
const SHA256_EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Every event, as a test can compare it.
#[derive(Default)]
struct Recorded {
    verdicts: Vec<(PathBuf, Verdict)>,
    malformed: Vec<(String, usize)>,
    rounds: usize,
    /// Fail the verdict after this many.
    fail_after: Option<usize>,
}

impl seekless_core::read::Events for Recorded {
    fn read_done(&mut self, _consumed: &seekless_core::read::Consumed) {
        self.rounds += 1;
    }
}

impl CheckEvents for Recorded {
    fn malformed(&mut self, line: &MalformedLine<'_>) {
        self.malformed.push((line.manifest.to_string(), line.line));
    }

    fn verdict(&mut self, path: &Path, verdict: Verdict) -> io::Result<()> {
        if self.fail_after == Some(self.verdicts.len()) {
            return Err(io::Error::from(io::ErrorKind::StorageFull));
        }
        self.verdicts.push((path.to_path_buf(), verdict));
        Ok(())
    }
}

/// The errors reported, as `PATH: message`.
#[derive(Default)]
struct Errors(Mutex<Vec<String>>);

impl Reporter for Errors {
    fn error(&self, err: &Error) {
        let line = format!("{}: {}", err.path().display(), err.message());
        self.0.lock().unwrap().push(line);
    }
}

impl Errors {
    fn list(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A directory with `a` (holding "abc") and a manifest `m` of `lines`, each `{a}` in them
/// replaced with `a`'s path and `{dir}` with the directory's.
fn setup(lines: &[&str]) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    std::fs::write(&a, b"abc").unwrap();
    let m = dir.path().join("m");
    let text: String = lines
        .iter()
        .map(|l| {
            let l = l.replace("{a}", &a.display().to_string());
            l.replace("{dir}", &dir.path().display().to_string()) + "\n"
        })
        .collect();
    std::fs::write(&m, text).unwrap();
    (dir, a, m)
}

fn run(
    manifests: &[PathBuf],
    stdin: &[u8],
    opts: &CheckOptions,
) -> (CheckOutcome, Recorded, Vec<String>) {
    let mut events = Recorded::default();
    let errors = Errors::default();
    let outcome = check_manifests(manifests, &mut &stdin[..], opts, &errors, &mut events).unwrap();
    (outcome, events, errors.list())
}

#[test]
fn an_improperly_formatted_line_fails_the_check_only_with_strict() {
    let (_dir, a, m) = setup(&[&format!("{SHA256_ABC}  {{a}}"), "not a checksum line"]);
    let (outcome, events, errors) = run(std::slice::from_ref(&m), b"", &CheckOptions::default());
    assert_eq!(events.verdicts, [(a, Verdict::Ok)]);
    assert_eq!(events.malformed, [(m.display().to_string(), 2)]);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(outcome.passed);
    assert_eq!(
        outcome.manifests[0].standing,
        Standing::Checked { passed: true }
    );
    assert_eq!(
        outcome.warnings(false),
        ["WARNING: 1 line is improperly formatted"]
    );
    assert!(
        outcome.warnings(true).is_empty(),
        "--status silences counts"
    );

    let strict = CheckOptions {
        strict: true,
        ..CheckOptions::default()
    };
    let (outcome, _, _) = run(&[m], b"", &strict);
    assert!(!outcome.passed);
    assert_eq!(
        outcome.manifests[0].standing,
        Standing::Checked { passed: false }
    );
}

#[test]
fn a_missing_file_is_failed_open_or_read_and_reported_by_name() {
    let (dir, a, m) = setup(&[
        &format!("{SHA256_ABC}  {{a}}"),
        &format!("{SHA256_ABC}  {{dir}}/missing"),
    ]);
    let missing = dir.path().join("missing");
    let (outcome, events, errors) = run(&[m], b"", &CheckOptions::default());
    // Files that cannot be opened get their verdicts first.
    assert_eq!(
        events.verdicts,
        [
            (missing.clone(), Verdict::FailedOpenOrRead),
            (a, Verdict::Ok)
        ]
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
    // Named as the manifest names it (with `/` on Windows too).
    let named = errors[0].split(": ").next().unwrap();
    assert!(Path::new(named) == missing, "{errors:?}");
    assert!(!outcome.passed);
    assert_eq!(outcome.manifests[0].tally.unreadable, 1);
    assert_eq!(
        outcome.warnings(false),
        ["WARNING: 1 listed file could not be read"]
    );
}

#[test]
fn a_manifest_read_from_standard_input_is_checked_like_a_file() {
    let (_dir, a, _m) = setup(&[]);
    let stdin = format!("{SHA256_ABC}  {}\n{SHA256_ABC}  -\n", a.display());
    let (outcome, events, errors) =
        run(&[PathBuf::from("-")], stdin.as_bytes(), &Default::default());
    // `-` in a manifest read from standard input is improperly formatted, as in coreutils.
    assert_eq!(events.malformed, [("standard input".to_string(), 2)]);
    assert_eq!(events.verdicts, [(a, Verdict::Ok)]);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(outcome.manifests[0].name, "standard input");
    assert_eq!(outcome.manifests[0].path, Path::new("-"));
    assert!(outcome.passed);
}

#[test]
fn lines_naming_dash_hash_standard_input_first_and_again_for_each() {
    let (_dir, a, m) = setup(&[
        &format!("{SHA256_ABC}  {{a}}"),
        &format!("{SHA256_ABC}  -"),
        &format!("{SHA256_EMPTY}  -"),
    ]);
    let (outcome, events, _) = run(&[m], b"abc", &CheckOptions::default());
    // The second read of standard input finds it at its end, as `sha256sum -c`'s does.
    assert_eq!(
        events.verdicts,
        [
            (PathBuf::from("-"), Verdict::Ok),
            (PathBuf::from("-"), Verdict::Ok),
            (a, Verdict::Ok)
        ]
    );
    assert!(outcome.passed);
}

#[test]
fn a_manifest_that_cannot_be_read_fails_without_closing_warnings() {
    let (dir, a, m) = setup(&[&format!("{SHA256_ABC}  {{a}}")]);
    let gone = dir.path().join("no-such-manifest");
    let (outcome, events, errors) = run(&[gone.clone(), m], b"", &Default::default());
    assert_eq!(events.verdicts, [(a, Verdict::Ok)]);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].starts_with(&gone.display().to_string()),
        "{errors:?}"
    );
    assert_eq!(outcome.manifests[0].standing, Standing::Unreadable);
    assert!(outcome.manifests[1].passed());
    assert!(!outcome.passed);
    assert!(outcome.warnings(false).is_empty());
}

#[test]
fn a_manifest_without_a_proper_line_fails_and_says_so_even_with_status() {
    let (dir, _a, m) = setup(&[
        "# only a comment",
        "",
        "MD5 ({dir}/x) = 900150983cd24fb0d6963f7d28e17f72",
    ]);
    let (outcome, events, _) = run(std::slice::from_ref(&m), b"", &Default::default());
    assert!(events.verdicts.is_empty());
    assert_eq!(events.malformed, [(m.display().to_string(), 3)]);
    assert_eq!(
        outcome.manifests[0].standing,
        Standing::NoProperlyFormattedLines
    );
    assert!(!outcome.passed);
    let said = [format!(
        "{}: no properly formatted checksum lines found",
        m.display()
    )];
    assert_eq!(outcome.warnings(false), said);
    assert_eq!(outcome.warnings(true), said);

    // The same line fits MD5.
    let md5 = CheckOptions {
        algo: Algorithm::Md5,
        ..CheckOptions::default()
    };
    let (outcome, events, _) = run(&[m], b"", &md5);
    assert_eq!(
        events.verdicts,
        [(dir.path().join("x"), Verdict::FailedOpenOrRead)]
    );
    assert_eq!(
        outcome.warnings(false),
        ["WARNING: 1 listed file could not be read"]
    );
}

#[test]
fn a_verdict_that_cannot_be_told_stops_the_check() {
    let (_dir, _a, m) = setup(&[&format!("{SHA256_ABC}  -"), &format!("{SHA256_ABC}  {{a}}")]);
    let mut events = Recorded {
        fail_after: Some(0),
        ..Recorded::default()
    };
    let got = check_manifests(
        &[m],
        &mut &b"abc"[..],
        &CheckOptions::default(),
        &Errors::default(),
        &mut events,
    );
    assert_eq!(got.unwrap_err().kind(), io::ErrorKind::StorageFull);
    assert_eq!(events.rounds, 0, "no file was read after the failure");
}

#[test]
fn ignoring_missing_files_gives_them_no_verdict_and_fails_a_manifest_with_none_verified() {
    let (dir, a, m) = setup(&[
        &format!("{SHA256_ABC}  {{a}}"),
        &format!("{SHA256_ABC}  {{dir}}/gone"),
        &format!("{SHA256_ABC}  {{dir}}/gone"),
    ]);
    let ignoring = CheckOptions {
        ignore_missing: true,
        ..CheckOptions::default()
    };
    let (outcome, events, errors) = run(std::slice::from_ref(&m), b"", &ignoring);
    assert_eq!(events.verdicts, [(a, Verdict::Ok)]);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(outcome.passed);
    assert!(outcome.warnings(false).is_empty());

    // Nothing but missing files: no verdict, and the manifest fails, said unless --status.
    let only = dir.path().join("only-missing");
    std::fs::write(
        &only,
        format!("{SHA256_ABC}  {}/gone\n", dir.path().display()),
    )
    .unwrap();
    let (outcome, events, errors) = run(std::slice::from_ref(&only), b"", &ignoring);
    assert!(events.verdicts.is_empty() && errors.is_empty());
    assert!(!outcome.passed);
    assert_eq!(
        outcome.warnings(false),
        [format!("{}: no file was verified", only.display())]
    );
    assert!(outcome.warnings(true).is_empty());
    // Without it, the missing file is FAILED open or read, named in an error.
    let (outcome, events, errors) = run(&[only], b"", &CheckOptions::default());
    assert_eq!(events.verdicts.len(), 1);
    assert_eq!(errors.len(), 1);
    assert!(!outcome.passed);
}

// Unix: a Windows name holds no newline and no carriage return.
#[cfg(unix)]
#[test]
fn nul_terminated_manifests_keep_newlines_and_carriage_returns_in_names() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["n\nl", "c\r"];
    let mut text = Vec::new();
    for name in names {
        std::fs::write(dir.path().join(name), b"abc").unwrap();
        text.extend_from_slice(
            format!("{SHA256_ABC}  {}/{name}\0", dir.path().display()).as_bytes(),
        );
    }
    let m = dir.path().join("m");
    std::fs::write(&m, text).unwrap();
    let zero = CheckOptions {
        nul_terminated: true,
        ..CheckOptions::default()
    };
    let (outcome, events, errors) = run(&[m], b"", &zero);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(events.verdicts.len(), 2);
    assert!(events.verdicts.iter().all(|(_, v)| *v == Verdict::Ok));
    assert!(outcome.passed);
}
