//! Inputs and bad input: every problem names its path, the run goes on, the exit code says
//! what happened (0 ok, 1 some paths failed, 2 usage).
//!
//! Runs everywhere; the cases that need Unix (permissions, FIFOs, symbolic links, names
//! that are not UTF-8 or hold a newline, mounts) are marked.

use std::path::Path;
#[cfg(target_os = "linux")]
use std::process::Command;
use std::process::{Output, Stdio};

use crate::common::*;

fn order(args: &[&std::ffi::OsStr]) -> Output {
    seekless().arg("order").args(args).output().unwrap()
}

fn lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn a_missing_path_is_named_and_the_rest_is_still_listed() {
    let t = scratch!();
    std::fs::write(t.path().join("here"), b"x").unwrap();
    let missing = t.path().join("missing");
    let o = order(&[missing.as_os_str(), t.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    // "No such file or directory" on Unix: the system's own words.
    let why = os_message(&std::fs::metadata(&missing).unwrap_err());
    assert!(
        stderr(&o).contains(&format!("{}: {why}", missing.display())),
        "{}",
        stderr(&o)
    );
    assert_eq!(lines(&o), vec![t.path().join("here").display().to_string()]);
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(order(&[os("--no-such-flag")]).status.code(), Some(2));
    assert_eq!(order(&[]).status.code(), Some(2));
    assert_eq!(order(&[os("--glob"), os("a[")]).status.code(), Some(2));
}

/// Runs the binary as `nobody`, for permission checks (root bypasses them).
#[cfg(target_os = "linux")]
fn order_as_nobody(dir: &Path) -> Output {
    if is_root() {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_seekless"))
            .arg("order")
            .arg(dir)
            .output()
            .unwrap()
    } else {
        order(&[dir.as_os_str()])
    }
}

#[test]
#[cfg(target_os = "linux")]
fn unreadable_directories_and_files_are_reported_and_skipped() {
    use std::os::unix::fs::PermissionsExt;
    let t = scratch!();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let closed = t.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::write(closed.join("inside"), b"x").unwrap();
    let secret = t.path().join("secret");
    std::fs::write(&secret, b"s").unwrap();
    std::fs::write(t.path().join("open"), b"o").unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let o = order_as_nobody(t.path());
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{}: Permission denied", closed.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: Permission denied", secret.display())),
        "{err}"
    );
    assert_eq!(lines(&o), vec![t.path().join("open").display().to_string()]);
}

#[test]
#[cfg(unix)]
fn fifos_in_directories_are_skipped_without_being_opened() {
    use std::os::unix::ffi::OsStrExt;
    let t = scratch!();
    let fifo = t.path().join("pipe");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    std::fs::write(t.path().join("file"), b"f").unwrap();
    // Opening the FIFO for reading would block forever: finishing proves it was not opened.
    let o = order(&[os("--summary"), t.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(lines(&o), vec![t.path().join("file").display().to_string()]);
    assert!(
        stderr(&o).contains("skipped 1 special files"),
        "{}",
        stderr(&o)
    );
    // Named explicitly, it is an error that names it.
    let o = order(&[fifo.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&format!("{}: not a regular file (fifo)", fifo.display())));
    // Device nodes likewise.
    let o = order(&[os("/dev/null")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/dev/null: not a regular file (character device)"));
}

#[test]
#[cfg(unix)]
fn symlink_loops_are_reported_when_following() {
    let t = scratch!();
    std::fs::create_dir(t.path().join("a")).unwrap();
    std::fs::write(t.path().join("a/f"), b"x").unwrap();
    std::os::unix::fs::symlink("..", t.path().join("a/loop")).unwrap();
    std::os::unix::fs::symlink("a/f", t.path().join("link-to-f")).unwrap();
    // Not following: links are skipped, nothing is an error.
    let o = order(&[t.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(lines(&o).len(), 1);
    // Following: the loop is named, the file reached through two names listed once.
    let o = order(&[os("-L"), t.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}: symbolic link loop",
            t.path().join("a/loop").display()
        )),
        "{err}"
    );
    assert_eq!(lines(&o).len(), 1, "{:?}", lines(&o));
}

#[test]
fn hard_links_and_repeated_inputs_are_listed_once() {
    let t = scratch!();
    let a = t.path().join("a");
    std::fs::write(&a, b"x").unwrap();
    std::fs::hard_link(&a, t.path().join("b")).unwrap();
    let o = order(&[t.path().as_os_str(), a.as_os_str(), t.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(lines(&o).len(), 1, "{:?}", lines(&o));
}

#[test]
#[cfg(unix)]
fn non_utf8_names_come_out_byte_exact_with_null() {
    use std::os::unix::ffi::OsStrExt;
    let t = scratch!();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9\nline.jpg");
    let p = t.path().join(name);
    std::fs::write(&p, b"x").unwrap();
    let o = order(&[os("-0"), t.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(0));
    let mut want = p.as_os_str().as_bytes().to_vec();
    want.push(0);
    assert_eq!(o.stdout, want);
}

#[test]
#[cfg(unix)]
fn files_from_reads_nul_separated_lists_from_stdin() {
    use std::os::unix::ffi::OsStrExt;
    let t = scratch!();
    let a = t.path().join("with\nnewline");
    let b = t.path().join("plain");
    std::fs::write(&a, b"a").unwrap();
    std::fs::write(&b, b"b").unwrap();
    let mut child = seekless()
        .args(["order", "-0", "--by", "given", "--files-from", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut list = Vec::new();
    for p in [&b, &a] {
        list.extend_from_slice(p.as_os_str().as_bytes());
        list.push(0);
    }
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &list).unwrap();
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(o.stdout, list);
}

#[test]
fn extension_and_glob_filters_select_files_in_directories() {
    let t = scratch!();
    for n in ["a.JPG", "b.png", "c.txt", "IMG_1.raw"] {
        std::fs::write(t.path().join(n), b"x").unwrap();
    }
    let names = |o: Output| {
        let mut v: Vec<String> = lines(&o)
            .iter()
            .map(|l| {
                Path::new(l)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(order(&[os("--ext"), os("jpg,png"), t.path().as_os_str()])),
        ["a.JPG", "b.png"]
    );
    assert_eq!(
        names(order(&[os("--glob"), os("IMG_*"), t.path().as_os_str()])),
        ["IMG_1.raw"]
    );
}

#[test]
#[cfg(target_os = "linux")]
fn one_file_system_does_not_descend_into_other_mounts() {
    let test = "one_file_system_does_not_descend_into_other_mounts";
    if !require_root(test) {
        return;
    }
    let t = scratch!();
    std::fs::write(t.path().join("top"), b"x").unwrap();
    let inner = t.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    run(Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(&inner));
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _guard = Unmount(&inner);
    std::fs::write(inner.join("below"), b"y").unwrap();
    assert_eq!(lines(&order(&[t.path().as_os_str()])).len(), 2);
    let o = order(&[os("-x"), t.path().as_os_str()]);
    assert_eq!(lines(&o), vec![t.path().join("top").display().to_string()]);
}

#[test]
fn zero_counts_are_usage_errors() {
    let t = scratch!();
    std::fs::write(t.path().join("f"), b"x").unwrap();
    let dir = t.path().as_os_str();
    for (job, flag) in [
        ("order", "--walk-threads"),
        ("hash", "--walk-threads"),
        ("hash", "-j"),
        ("hash", "--window-mb"),
        ("hash", "--window-files"),
        ("bench", "--reps"),
    ] {
        let o = seekless().args([job, flag, "0"]).arg(dir).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{job} {flag} 0: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{job} {flag} 0: {}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
}

#[test]
fn a_nul_separated_list_read_without_null_suggests_it() {
    let t = scratch!();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    std::fs::write(&a, b"x").unwrap();
    std::fs::write(&b, b"y").unwrap();
    let mut list = a.as_os_str().as_encoded_bytes().to_vec();
    list.push(0);
    list.extend_from_slice(b.as_os_str().as_encoded_bytes());
    list.push(0);
    let mut child = seekless()
        .args(["order", "--files-from", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &list).unwrap();
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("add -0"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn bench_refuses_a_plot_it_cannot_write_before_running_and_writes_it_whole() {
    let t = scratch!();
    let data = t.path().join("data");
    std::fs::create_dir(&data).unwrap();
    for i in 0..5 {
        std::fs::write(data.join(format!("f{i}")), vec![1u8; 5000]).unwrap();
    }
    let bad = t.path().join("no-such-dir/map.svg");
    let o = seekless()
        .args(["bench", "--cold", "warm", "--plot"])
        .arg(&bad)
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("map.svg"), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "the benchmark did not run");

    let good = t.path().join("map.svg");
    let o = seekless()
        .args(["bench", "--cold", "warm", "--plot"])
        .arg(&good)
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&good).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg:.80}"
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    let left: Vec<_> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.as_encoded_bytes().starts_with(b"."))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn directories_and_files_reached_twice_are_counted_and_named_with_verbose() {
    let t = scratch!();
    let sub = t.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("f"), b"x").unwrap();
    std::fs::hard_link(sub.join("f"), t.path().join("link")).unwrap();
    let o = order(&[
        os("--summary"),
        os("-v"),
        t.path().as_os_str(),
        sub.as_os_str(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(lines(&o).len(), 1, "one file, listed once");
    let err = stderr(&o);
    assert!(err.contains("2 duplicates"), "{err}");
    assert!(
        err.contains(&format!(
            "{}: skipped: directory already walked",
            sub.display()
        )),
        "{err}"
    );
    assert!(err.contains("skipped: same file as"), "{err}");
}

/// Every name under `dir`, recursively, sorted (for "nothing was created").
fn names_under(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            names.push(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    names.sort();
    names
}

#[test]
fn thread_and_window_counts_past_their_bounds_are_usage_errors_that_create_nothing() {
    let t = scratch!();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for i in 0..3 {
        std::fs::write(src.join(format!("{i}.gif")), b"GIF89a").unwrap();
    }
    let before = names_under(t.path());
    let s = |p: &str| t.path().join(p).into_os_string();
    let cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (
            vec!["hash".into(), "-j".into(), "99999999999".into()],
            "1..=1024",
        ),
        (
            vec!["hash".into(), "-j".into(), "100000".into()],
            "1..=1024",
        ),
        (vec!["hash".into(), "-j".into(), "0".into()], "1..=1024"),
        (
            vec!["order".into(), "--walk-threads".into(), "4294967295".into()],
            "1..=1024",
        ),
        (
            vec![
                "index".into(),
                "-j".into(),
                "99999999999".into(),
                "--db".into(),
                s("j.db"),
            ],
            "1..=1024",
        ),
        (
            vec![
                "index".into(),
                "--walk-threads".into(),
                "1025".into(),
                "--db".into(),
                s("w.db"),
            ],
            "1..=1024",
        ),
        (
            vec!["copy".into(), "-j".into(), "99999999999".into()],
            "1..=1024",
        ),
        (
            vec![
                "tar".into(),
                "-j".into(),
                "5000".into(),
                "-f".into(),
                s("a.tar"),
            ],
            "1..=1024",
        ),
        (
            vec!["hash".into(), "--window-files".into(), "99999999999".into()],
            "1..=1048576",
        ),
        (
            vec!["copy".into(), "--window-files".into(), "1048577".into()],
            "1..=1048576",
        ),
    ];
    for (args, range) in cases {
        let mut cmd = seekless();
        cmd.args(&args).arg(&src);
        if args[0] == "copy" {
            cmd.arg(t.path().join("dst"));
        }
        let o = cmd.stdout(Stdio::null()).output().unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(range), "{args:?}: the range is given: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("memory allocation"),
            "{args:?}: {err}"
        );
        assert_eq!(
            names_under(t.path()),
            before,
            "{args:?}: a usage error leaves nothing behind (no catalog, -wal, -shm, archive, destination)"
        );
    }
}

#[test]
fn hash_with_1024_workers_hashes_every_file() {
    // sha256 of "seekless\n", as sha256sum prints it.
    const DIGEST: &str = "bc0b23eafa20f3460ecff925ce2b9f8ba813b1e04eae38ecdd717b429e96233c";
    let t = scratch!();
    let files: Vec<_> = (0..5)
        .map(|i| {
            let p = t.path().join(format!("f{i}"));
            std::fs::write(&p, b"seekless\n").unwrap();
            p
        })
        .collect();
    let o = seekless()
        .args(["hash", "-j", "1024", "--sort-output"])
        .args(&files)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Each file once, with its digest (Windows paths have backslashes, which the manifest
    // format escapes with a leading '\\': compare the digest and the name's end).
    let got = lines(&o);
    assert_eq!(got.len(), files.len(), "{got:?}");
    for (line, i) in got.iter().zip(0..) {
        let line = line.strip_prefix('\\').unwrap_or(line);
        assert!(line.starts_with(&format!("{DIGEST}  ")), "{line}");
        assert!(line.ends_with(&format!("f{i}")), "{line}");
    }
}

/// With a process limit far below the threads asked for, a job works with the threads it
/// could start (down to its own) instead of aborting. Run as a user id of its own (the
/// limit counts every process of the user), as root is not held to it.
#[test]
#[cfg(target_os = "linux")]
fn workers_that_cannot_be_started_are_done_without_and_every_file_is_hashed() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sha256sum") {
        return;
    }
    let t = scratch!();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let files: Vec<_> = (0..20)
        .map(|i| {
            let p = t.path().join(format!("f{i:02}"));
            std::fs::write(&p, format!("content {i}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
            p
        })
        .collect();
    let uid = 60_000 + std::process::id() % 5_000;
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(env!("CARGO_BIN_EXE_seekless"))
        .args([
            "hash",
            "-j",
            "1024",
            "--walk-threads",
            "1024",
            "--sort-output",
        ])
        .args(&files);
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 8,
                rlim_max: 8,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let want = Command::new("sha256sum").args(&files).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&want.stdout),
        "every file hashed as sha256sum does"
    );
}
