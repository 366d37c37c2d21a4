//! `seekless tar`, continued (see `tar`): files that change, vanish or cannot be read
//! while archived, and the archive file itself: it appears under its name only when
//! complete, is refused where its user may not write, is written into a device or FIFO,
//! and an interrupted run (a signal, `kill -9`, frozen with SIGSTOP between short slices
//! so the moment is chosen by what the archive holds) leaves no temporary behind.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::archive::*;
use crate::common::copying::put;
use crate::common::fixtures::{Holder, temp_name, to_dev_stdout};
use crate::common::trees::*;
use crate::common::*;

// ---------------------------------------------------------------------------------------
// 7. Faults.

#[test]
fn files_that_shrink_or_grow_while_read_are_padded_or_cut_and_the_run_exits_1() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let mut rng = Rng::new(10);
    let others = random_files(&tree, 30, 50_000, &mut rng);
    let originals: Vec<(&str, Vec<u8>)> = vec![
        ("seekless-fault-shrink.bin", rng.bytes(10_000)),
        ("seekless-fault-shrink-big.bin", rng.bytes(3_000_000)),
        ("seekless-fault-grow.bin", rng.bytes(10_000)),
        ("seekless-fault-grow-big.bin", rng.bytes(3_000_000)),
    ];
    for (name, data) in &originals {
        std::fs::write(tree.join(name), data).unwrap();
    }
    let saved: BTreeMap<PathBuf, Vec<u8>> = others
        .iter()
        .map(|r| (r.clone(), std::fs::read(tree.join(r)).unwrap()))
        .collect();

    // Without the switch, the names mean nothing.
    let calm = t.path().join("calm.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&calm).arg("tree"));
    assert_exit_quiet(&o, 0);
    for (name, data) in &originals {
        assert_eq!(
            std::fs::metadata(tree.join(name)).unwrap().len(),
            data.len() as u64,
            "{name} changed without SEEKLESS_INJECT_FAULTS"
        );
    }

    let archive = t.path().join("faults.tar");
    let o = bounded(
        seekless_tar(t.path())
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .arg("-f")
            .arg(&archive)
            .arg("tree"),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    for want in [
        "seekless: tree/seekless-fault-shrink.bin: File shrank by 5000 bytes; padding with zeros",
        "seekless: tree/seekless-fault-shrink-big.bin: File shrank by 1500000 bytes; padding with zeros",
        "seekless: tree/seekless-fault-grow.bin: file changed as we read it",
        "seekless: tree/seekless-fault-grow-big.bin: file changed as we read it",
    ] {
        assert!(said.iter().any(|l| l == want), "no {want:?} in:\n{said:#?}");
    }
    // The faults happened (the switch reached seekless).
    assert_eq!(
        std::fs::metadata(tree.join("seekless-fault-shrink.bin"))
            .unwrap()
            .len(),
        5000
    );
    assert_eq!(
        std::fs::metadata(tree.join("seekless-fault-grow.bin"))
            .unwrap()
            .len(),
        11_000
    );

    // The archive is sound: GNU tar lists the sizes of the headers and extracts it.
    let listing = gnu_listing(&archive, &[]);
    for (name, data) in &originals {
        let m = listing
            .iter()
            .find(|m| m.name == format!("tree/{name}"))
            .unwrap_or_else(|| panic!("tree/{name} not archived"));
        assert_eq!(m.size, data.len().to_string(), "{name}: the header's size");
    }
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    for (name, data) in &originals {
        let got = std::fs::read(out.join("tree").join(name)).unwrap();
        let want = if name.contains("shrink") {
            let half = data.len() / 2;
            [&data[..half], &vec![0u8; data.len() - half][..]].concat()
        } else {
            data.clone()
        };
        assert!(
            got == want,
            "{name}: extracted {} bytes, not {} (shrunk: its half and zeros; grown: cut at \
             the header's size)",
            got.len(),
            want.len()
        );
    }
    for (rel, data) in &saved {
        assert_eq!(
            &std::fs::read(out.join("tree").join(rel)).unwrap(),
            data,
            "{}: another member, intact",
            rel.display()
        );
    }
}

#[test]
fn hard_links_of_a_file_whose_first_name_vanished_are_stored_under_its_next_name() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    std::fs::create_dir_all(tree.join("e")).unwrap();
    let data = Rng::new(24).bytes(30_000);
    // The first name is removed after planning, before it is read (the fault hook).
    let first = tree.join("seekless-fault-vanish-first");
    std::fs::write(&first, &data).unwrap();
    std::fs::hard_link(&first, tree.join("d/second")).unwrap();
    std::fs::hard_link(&first, tree.join("e/third")).unwrap();
    std::fs::write(tree.join("other"), b"another file\n").unwrap();
    let archive = t.path().join("links.tar");
    let o = bounded(
        seekless_tar(t.path())
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .args(["-f", "links.tar"])
            .args([
                "tree/seekless-fault-vanish-first",
                "tree/d/second",
                "tree/e/third",
                "tree/other",
            ]),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    assert!(
        said.iter().any(
            |l| l.starts_with("seekless: tree/seekless-fault-vanish-first: ")
                && l.contains("No such file or directory")
        ),
        "the vanished name is named: {said:#?}"
    );
    assert!(!first.exists(), "the fault happened");
    let listing = gnu_listing(&archive, &[]);
    let kinds: Vec<(char, &str, Option<&str>)> = listing
        .iter()
        .map(|m| (m.kind, m.name.as_str(), m.target.as_deref()))
        .collect();
    assert!(kinds.contains(&('-', "tree/d/second", None)), "{kinds:?}");
    assert!(
        kinds.contains(&('h', "tree/e/third", Some("tree/d/second"))),
        "{kinds:?}"
    );
    assert!(kinds.contains(&('-', "tree/other", None)), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k.1.contains("vanish")), "{kinds:?}");
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_eq!(std::fs::read(out.join("tree/d/second")).unwrap(), data);
    let (a, b) = (
        std::fs::metadata(out.join("tree/d/second")).unwrap(),
        std::fs::metadata(out.join("tree/e/third")).unwrap(),
    );
    assert_eq!(a.ino(), b.ino(), "extracted as one file with two names");
}

#[test]
fn missing_inputs_are_named_and_exit_1_and_the_rest_is_archived() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let src = t.path().join("src");
    let mut rng = Rng::new(11);
    random_files(&src, 6, 10_000, &mut rng);
    std::fs::write(src.join("present"), b"here\n").unwrap();
    let archive = t.path().join("a.tar");
    let o = bounded(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&archive)
            .arg("-C")
            .arg(&src)
            .args(["present", "nosuch", "d1", "gone/deeper"]),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    for missing in ["nosuch", "gone/deeper"] {
        assert!(
            said.iter()
                .any(|l| l.starts_with(&format!("seekless: {missing}: "))
                    && l.contains("No such file or directory")),
            "{missing} is named: {said:#?}"
        );
    }
    let mut names = gnu_names(&archive, &[]);
    names.sort();
    let mut want: Vec<String> = vec!["present".into(), "d1/".into()];
    want.extend(
        entries(&src.join("d1"))
            .into_iter()
            .map(|n| format!("d1/{n}")),
    );
    want.sort();
    assert_eq!(names, want, "the inputs that exist are archived");
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_eq!(std::fs::read(out.join("present")).unwrap(), b"here\n");

    // The same through --files-from.
    let list = t.path().join("list");
    std::fs::write(&list, "present\nnot-there\n").unwrap();
    let archive = t.path().join("b.tar");
    let o = bounded(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&archive)
            .arg("-C")
            .arg(&src)
            .arg("--files-from")
            .arg(&list),
    );
    assert_exit_quiet(&o, 1);
    assert!(
        messages(&o)
            .iter()
            .any(|l| l.starts_with("seekless: not-there: ")),
        "{}",
        stderr(&o)
    );
    assert_eq!(gnu_names(&archive, &[]), vec!["present".to_string()]);
}

#[test]
fn unreadable_files_and_directories_are_named_and_skipped_as_gnu_tar_skips_them() {
    let test = test_name!();
    // Runs as nobody through setpriv: root reads everything.
    if !require_root(test) || !require_tools(test, &["setpriv", "tar"]) {
        return;
    }
    let t = scratch!();
    chmod(t.path(), 0o755);
    let src = t.path().join("src");
    let mut rng = Rng::new(12);
    random_files(&src, 6, 10_000, &mut rng);
    std::fs::write(src.join("open.txt"), b"anyone may read this\n").unwrap();
    std::fs::write(src.join("secret"), b"root only\n").unwrap();
    chmod(&src.join("secret"), 0o600);
    std::fs::create_dir(src.join("locked")).unwrap();
    std::fs::write(src.join("locked/inner"), b"behind a locked door\n").unwrap();
    chmod(&src.join("locked"), 0o700);
    let outdir = t.path().join("out");
    std::fs::create_dir(&outdir).unwrap();
    chmod(&outdir, 0o777);
    let as_nobody = |program: &str| {
        let mut cmd = Command::new("setpriv");
        cmd.current_dir(t.path())
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program);
        cmd
    };

    let archive = outdir.join("seekless.tar");
    let o = bounded(
        as_nobody(env!("CARGO_BIN_EXE_seekless"))
            .args(["tar", "-f"])
            .arg(&archive)
            .arg("src"),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    for path in ["src/secret", "src/locked"] {
        assert!(
            said.iter()
                .any(|l| l.starts_with(&format!("seekless: {path}: "))
                    && l.contains("Permission denied")),
            "{path} is named: {said:#?}"
        );
    }
    // GNU tar, run the same way, archives the same files (its archive goes to stdout).
    let o = bounded(as_nobody("tar").args(["--format=posix", "-cf", "-", "src"]));
    assert!(!o.status.success(), "GNU tar as nobody: {}", stderr(&o));
    let gnu_archive = t.path().join("gnu.tar");
    std::fs::write(&gnu_archive, &o.stdout).unwrap();
    let files = |archive: &Path| -> Vec<String> {
        gnu_listing(archive, &[])
            .into_iter()
            .filter(|m| m.kind != 'd')
            .map(|m| m.name)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let got = files(&archive);
    assert_eq!(got, files(&gnu_archive), "what GNU tar archives as nobody");
    assert!(got.contains(&"src/open.txt".to_string()), "{got:?}");
    assert!(
        !got.iter()
            .any(|n| n.contains("secret") || n.contains("inner"))
    );
    let out = t.path().join("extracted");
    gnu_extract(&archive, &out, &[]);
    assert_eq!(
        std::fs::read(out.join("src/open.txt")).unwrap(),
        b"anyone may read this\n"
    );
}

// ---------------------------------------------------------------------------------------
// 8. The archive file.

#[test]
fn the_archive_inside_the_archived_tree_is_not_dumped() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let files = random_files(&tree, 10, 20_000, &mut Rng::new(13));
    let check = |round: &str| {
        let o = bounded(seekless_tar(t.path()).args(["-f", "tree/out.tar", "tree"]));
        assert_exit_quiet(&o, 0);
        let said = messages(&o);
        assert!(
            said.iter()
                .any(|l| l == "seekless: tree/out.tar: file is the archive; not dumped"),
            "{round}: the archive is named: {said:#?}"
        );
        assert!(
            !said.iter().any(|l| l.contains("seekless-tmp")),
            "{round}: the temporary is not named: {said:#?}"
        );
        let names = gnu_names(&tree.join("out.tar"), &[]);
        let archives: Vec<&String> = names
            .iter()
            .filter(|n| n.contains("out.tar") || n.contains("seekless-tmp"))
            .collect();
        assert!(
            archives.is_empty(),
            "{round}: the archive archived: {archives:?}"
        );
        for rel in &files {
            let name = format!("tree/{}", rel.display());
            assert!(names.contains(&name), "{round}: {name} missing");
        }
        assert_eq!(
            entries(&tree),
            vec!["d0", "d1", "d2", "out.tar"],
            "{round}: nothing else left beside it"
        );
    };
    check("first run");
    // Again, with the previous archive in place (GNU tar truncates it and skips it).
    check("second run, over the first one's archive");
}

/// Starts `seekless tar -z -f ARCHIVE tree` in `dir` and kills it (SIGKILL) once its
/// temporary archive holds data ([`caught_mid_write`]: a test fails if that never
/// happens).
fn kill_mid_write(dir: &Path, archive: &Path) {
    let mut run = caught_mid_write(dir, archive);
    signal(&run.0, libc::SIGKILL);
    let status = run.0.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
}

#[test]
fn an_archive_appears_under_its_name_only_when_complete() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let mut rng = Rng::new(14);
    random_files(&tree, 48, 2 << 20, &mut rng);
    let dir = t.path().join("archives");
    std::fs::create_dir(&dir).unwrap();

    // A complete run: the archive and nothing beside it.
    let o = bounded(seekless_tar(t.path()).args(["-f", "archives/whole.tar", "tree"]));
    assert_exit_quiet(&o, 0);
    assert_eq!(entries(&dir), vec!["whole.tar"], "no temporary file left");
    gnu_names(&dir.join("whole.tar"), &[]);

    // Killed while writing over an older archive: the older one is still there, whole.
    let previous = dir.join("over.tar.gz");
    std::fs::write(&previous, b"the previous archive").unwrap();
    kill_mid_write(t.path(), &previous);
    assert_eq!(
        std::fs::read(&previous).unwrap(),
        b"the previous archive",
        "a killed run replaced the archive"
    );
    // Killed while writing a new one: nothing under its name.
    let fresh = dir.join("fresh.tar.gz");
    kill_mid_write(t.path(), &fresh);
    assert!(!fresh.exists(), "a killed run left {}", fresh.display());

    // A run that fails for want of space: nothing under the name, no temporary file.
    if is_root() {
        let small = t.path().join("small");
        let _mounted = Mounted::tmpfs(&small, "size=1m");
        let o = bounded(seekless_tar(t.path()).args(["-f", "small/full.tar", "tree"]));
        assert!(
            !o.status.success() && o.status.code().is_some(),
            "a full disk is an error: {}",
            o.status
        );
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        assert!(
            messages(&o).iter().any(|l| l
                == "seekless: small/full.tar: cannot write the archive: No space left on device"),
            "the message names the archive: {}",
            stderr(&o)
        );
        assert!(
            entries(&small).is_empty(),
            "a failed run left {:?}",
            entries(&small)
        );
    } else {
        skip(test, "root", "a full filesystem (a small tmpfs) needs root");
    }
}

/// `setpriv` running `program` as nobody (uid and gid 65534, no other groups) in `cwd`.
fn as_nobody(cwd: &Path, program: &str) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.current_dir(cwd)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(program);
    cmd
}

fn chown_nobody(path: &Path) {
    std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
}

#[test]
fn an_archive_its_user_may_not_write_is_refused_as_gnu_tar_refuses_it_and_others_keep_their_mode() {
    let test = test_name!();
    // As nobody through setpriv: root may write any file.
    if !require_root(test) || !require_tools(test, &["setpriv", "tar"]) {
        return;
    }
    let t = scratch!();
    chmod(t.path(), 0o755);
    let src = t.path().join("src");
    random_files(&src, 5, 10_000, &mut Rng::new(20));
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    chown_nobody(&out);
    let seekless_bin = env!("CARGO_BIN_EXE_seekless");

    // A read-only archive of nobody's own, in nobody's own directory.
    let read_only = out.join("ro.tar");
    std::fs::write(&read_only, b"the previous archive").unwrap();
    chown_nobody(&read_only);
    chmod(&read_only, 0o444);
    let o = bounded(as_nobody(t.path(), seekless_bin).args(["tar", "-f", "out/ro.tar", "src"]));
    assert_exit_quiet(&o, 2);
    assert_eq!(
        messages(&o),
        vec!["seekless: out/ro.tar: cannot open: Permission denied"]
    );
    assert_eq!(std::fs::read(&read_only).unwrap(), b"the previous archive");
    assert_eq!(
        std::fs::metadata(&read_only).unwrap().mode() & 0o7777,
        0o444
    );
    assert_eq!(entries(&out), vec!["ro.tar"], "nothing written beside it");
    // GNU tar, the same way: the same refusal.
    let o = bounded(as_nobody(t.path(), "tar").args(["-cf", "out/ro.tar", "src"]));
    assert_eq!(o.status.code(), Some(2), "GNU tar: {}", stderr(&o));
    assert!(
        stderr(&o).contains("Cannot open: Permission denied"),
        "{}",
        stderr(&o)
    );

    // A private archive nobody may write is replaced, and stays private.
    let private = out.join("private.tar");
    std::fs::write(&private, b"the previous archive").unwrap();
    chown_nobody(&private);
    chmod(&private, 0o600);
    let o =
        bounded(as_nobody(t.path(), seekless_bin).args(["tar", "-f", "out/private.tar", "src"]));
    assert_exit_quiet(&o, 0);
    let meta = std::fs::metadata(&private).unwrap();
    assert_eq!(
        meta.mode() & 0o7777,
        0o600,
        "the mode of the archive replaced"
    );
    assert_eq!(meta.uid(), 65534);
    let files = |a: &Path| {
        gnu_names(a, &[])
            .iter()
            .filter(|n| !n.ends_with('/'))
            .count()
    };
    assert_eq!(files(&private), 5);

    // Root replacing nobody's archive keeps its owner and mode.
    chmod(&private, 0o640);
    let o = bounded(seekless_tar(t.path()).args(["-f", "out/private.tar", "src"]));
    assert_exit_quiet(&o, 0);
    let meta = std::fs::metadata(&private).unwrap();
    assert_eq!(
        (meta.mode() & 0o7777, meta.uid(), meta.gid()),
        (0o640, 65534, 65534),
        "mode and owner of the archive replaced"
    );
    assert_eq!(entries(&out), vec!["private.tar", "ro.tar"]);
}

#[test]
fn an_archive_onto_a_device_node_or_fifo_is_written_into_it_not_renamed_over_it() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 5, 20_000, &mut Rng::new(21));
    // A null device of the test's own (mknod c 1 3), not /dev/null.
    let null = t.path().join("null");
    mknod(&null, 'c', 1, 3);
    let o = bounded(seekless_tar(t.path()).args(["-f", "null", "tree"]));
    assert_exit_quiet(&o, 0);
    let meta = std::fs::symlink_metadata(&null).unwrap();
    assert!(
        std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type()),
        "the device node was replaced"
    );
    // A FIFO: the archive goes to whoever reads it.
    let fifo = t.path().join("fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).unwrap())
    };
    let o = bounded(seekless_tar(t.path()).args(["-f", "fifo", "tree"]));
    assert_exit_quiet(&o, 0);
    // Checked before waiting for the reader: a FIFO renamed over would leave it waiting.
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()),
        "the FIFO was replaced"
    );
    let got = t.path().join("got.tar");
    std::fs::write(&got, reader.join().unwrap()).unwrap();
    let names = gnu_names(&got, &[]);
    assert_eq!(
        names.iter().filter(|n| !n.ends_with('/')).count(),
        5,
        "{names:?}"
    );
    assert_eq!(entries(t.path()), vec!["fifo", "got.tar", "null", "tree"]);
}

/// Starts `seekless tar -z -f ARCHIVE tree` in `dir` and, once its temporary holds data,
/// freezes it and returns the run. A run that ended first (it then must have ended well)
/// is undone (the archive put back as it was) and started again, watched in shorter
/// slices ([`CATCH_SLICES`]); the test fails if none was caught.
fn caught_mid_write(dir: &Path, archive: &Path) -> Running {
    caught_mid_write_with(dir, archive, libc::SIG_DFL)
}

/// [`caught_mid_write`], started with SIGHUP, SIGINT and SIGTERM set to `disposition`:
/// the default (as from a terminal, whatever this test process was started with: under
/// `nohup`, or in the background of a shell, it ignores some of them, and a child would
/// inherit that), or ignored.
fn caught_mid_write_with(dir: &Path, archive: &Path, disposition: libc::sighandler_t) -> Running {
    let before = std::fs::read(archive).ok();
    for slice in CATCH_SLICES {
        let mut cmd = seekless_tar(dir);
        cmd.args(["-z", "-f"])
            .arg(archive)
            .arg("tree")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: only async-signal-safe calls (signal) between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
                    libc::signal(sig, disposition);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let mut run = Running(child);
        // The temporary: `.NAME.seekless-tmp-RUN-N` beside the archive, RUN the process id
        // in 8 hex digits and 8 more of its own (src/atomic.rs).
        let prefix = format!(
            ".{}.seekless-tmp-{:08x}",
            archive.file_name().unwrap().to_str().unwrap(),
            run.0.id()
        );
        let parent = archive.parent().unwrap().to_path_buf();
        let caught = freeze_when_every(&mut run.0, slice, || {
            std::fs::read_dir(&parent).unwrap().flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with(&prefix)
                    && e.metadata().is_ok_and(|m| m.len() > 0)
            })
        });
        if caught {
            return run;
        }
        let status = run.0.wait().unwrap();
        assert!(status.success(), "{status}");
        match &before {
            Some(bytes) => std::fs::write(archive, bytes).unwrap(),
            None => std::fs::remove_file(archive).unwrap(),
        }
    }
    panic!(
        "every run ended before its archive held data ({} attempts, slices {CATCH_SLICES:?}): \
         none could be caught in the middle",
        CATCH_SLICES.len()
    );
}

#[test]
fn an_interrupted_run_removes_its_temporary_and_ends_by_the_signal() {
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 48, 2 << 20, &mut Rng::new(22));
    let dir = t.path().join("archives");
    std::fs::create_dir(&dir).unwrap();
    for (sig, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let archive = dir.join("a.tar.gz");
        let run = caught_mid_write(t.path(), &archive);
        signal(&run.0, sig);
        let (code, err) = finish(run);
        assert_eq!(
            code, None,
            "{name}: ended by the signal, not an exit; {err}"
        );
        assert!(entries(&dir).is_empty(), "{name} left {:?}", entries(&dir));
    }
    // The status says which signal: checked once more on a run waited for directly.
    let mut run = caught_mid_write(t.path(), &dir.join("b.tar.gz"));
    signal(&run.0, libc::SIGTERM);
    thaw(&run.0);
    let status = run.0.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    assert!(entries(&dir).is_empty(), "left {:?}", entries(&dir));
}

#[test]
fn signals_ignored_when_started_stay_ignored_as_under_nohup() {
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 48, 2 << 20, &mut Rng::new(24));
    let archive = t.path().join("kept.tar.gz");
    let run = caught_mid_write_with(t.path(), &archive, libc::SIG_IGN);
    signal(&run.0, libc::SIGHUP);
    let (code, err) = finish(run);
    // `nohup seekless tar ...` outlives its terminal: the archive is finished, not dropped.
    assert_eq!(code, Some(0), "{err}");
    let listed = Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(listed.status.success());
    let members = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|l| !l.ends_with('/'))
        .count();
    assert_eq!(members, 48);
}

#[test]
fn a_later_run_removes_the_temporaries_a_killed_run_of_the_same_archive_left() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 48, 2 << 20, &mut Rng::new(23));
    let dir = t.path().join("archives");
    std::fs::create_dir(&dir).unwrap();
    let archive = dir.join("k.tar.gz");
    kill_mid_write(t.path(), &archive);
    let left = entries(&dir);
    assert_eq!(left.len(), 1, "the killed run's temporary: {left:?}");
    // A temporary of this archive named by a process that runs (this test) but whose lock
    // is free and which was made an hour ago: dead too (process ids are reused; a live
    // run holds its lock, and a live writer of the archive is refused, `safety`). And a
    // dead one of another archive's name: left alone.
    let stale = format!(
        ".k.tar.gz.seekless-tmp-{:08x}0badcafe-0",
        std::process::id()
    );
    let f = std::fs::File::create(dir.join(&stale)).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    drop(f);
    let other = ".other.tar.seekless-tmp-3b9ac9ff0badcafe-0";
    std::fs::write(dir.join(other), b"another archive's").unwrap();

    let o = bounded(seekless_tar(t.path()).args(["-z", "-f", "archives/k.tar.gz", "tree"]));
    assert_exit_quiet(&o, 0);
    let removed = |name: &str| {
        format!("seekless: archives/{name}: removed, the temporary of an interrupted run")
    };
    let mut said = messages(&o);
    said.sort();
    let mut want = vec![removed(&left[0]), removed(&stale)];
    want.sort();
    assert_eq!(said, want);
    let mut want = vec![other.to_string(), "k.tar.gz".to_string()];
    want.sort();
    assert_eq!(entries(&dir), want);
    let names = gnu_names(&archive, &["-z"]);
    assert_eq!(
        names.iter().filter(|n| !n.ends_with('/')).count(),
        48,
        "{names:?}"
    );
}

#[test]
fn a_file_that_changed_while_read_is_counted_once_in_the_summary() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("seekless-fault-grow.bin"), vec![1u8; 10_000]).unwrap();
    std::fs::write(tree.join("calm.bin"), vec![2u8; 10_000]).unwrap();
    let o = bounded(
        seekless_tar(t.path())
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .args(["--summary", "-f", "s.tar", "tree"]),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    let counts = said
        .iter()
        .find(|l| l.starts_with("seekless: tar: "))
        .unwrap_or_else(|| panic!("no counts: {said:#?}"));
    assert!(
        counts.ends_with("1 changed while read, 0 failed"),
        "{counts}"
    );
}

#[test]
fn the_help_says_directories_come_last_deepest_first() {
    let o = bounded(seekless().args(["tar", "--help"]));
    assert_exit(&o, 0);
    let help = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("then directories, deepest first"), "{help}");
    assert!(!help.contains("before their contents"), "{help}");
}

#[test]
fn a_terminal_on_standard_output_is_refused() {
    let test = test_name!();
    if !require_tool(test, "script") {
        return;
    }
    let t = scratch!();
    std::fs::write(t.path().join("file"), b"data\n").unwrap();
    let command = format!(
        "'{}' tar '{}'",
        env!("CARGO_BIN_EXE_seekless"),
        t.path().join("file").display()
    );
    let o = bounded(
        Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .current_dir(t.path()),
    );
    let shown = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("seekless: "),
        "a message says why: {shown:?}"
    );
    assert!(!shown.contains("ustar"), "an archive went to the terminal");
}

#[test]
fn a_second_tar_of_one_archive_is_refused_while_the_first_writes_it() {
    let test = test_name!();
    if !require_tool(test, "python3") {
        return;
    }
    let t = scratch!();
    put(t.path(), b"d/a", b"a");
    let archive = t.path().join("a.tar");
    let holder = Holder::lock(&t.path().join(temp_name("a.tar")));
    let o = output_within(
        seekless()
            .arg("tar")
            .arg("-f")
            .arg(&archive)
            .arg(t.path().join("d")),
        RUN_LIMIT,
    );
    crate::common::assert_exit(&o, 2);
    assert!(
        stderr(&o).contains(&format!("process {}", holder.pid())),
        "{}",
        stderr(&o)
    );
    assert!(!archive.exists());
    drop(holder);
    let o = output_within(
        seekless()
            .arg("tar")
            .arg("-f")
            .arg(&archive)
            .arg(t.path().join("d")),
        RUN_LIMIT,
    );
    crate::common::assert_exit(&o, 0);
    assert!(archive.exists());
    assert!(
        !t.path().join(temp_name("a.tar")).exists(),
        "the dead one went"
    );
}

#[test]
fn tar_f_through_a_link_replaces_the_target_and_keeps_the_link_as_gnu_tar_does() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let p = t.path();
    put(p, b"d/a", b"alpha");
    for tool in ["tar", "seekless"] {
        let real = p.join(format!("{tool}-real.tar"));
        fs::write(&real, b"old").unwrap();
        let link = p.join(format!("{tool}-link.tar"));
        std::os::unix::fs::symlink(real.file_name().unwrap(), &link).unwrap();
        let o = if tool == "tar" {
            run(Command::new("tar")
                .arg("-cf")
                .arg(&link)
                .arg("-C")
                .arg(p)
                .arg("d"))
        } else {
            output_within(
                seekless()
                    .arg("tar")
                    .arg("-f")
                    .arg(&link)
                    .arg("-C")
                    .arg(p)
                    .arg("d"),
                RUN_LIMIT,
            )
        };
        assert!(o.status.success(), "{tool}: {}", stderr(&o));
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink(), "{tool}");
        let listed = run(Command::new("tar").arg("-tf").arg(&real));
        assert!(
            String::from_utf8_lossy(&listed.stdout).contains("d/a"),
            "{tool}: the target is the archive"
        );
    }
}

#[test]
fn tar_f_dev_stdout_writes_into_standard_output_and_never_replaces_it() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    put(t.path(), b"d/a", b"alpha");
    let out = to_dev_stdout(test, t.path(), "tar -f /dev/stdout d");
    if out.as_os_str().is_empty() {
        return;
    }
    let listed = run(Command::new("tar").arg("-tf").arg(&out));
    let mut names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    names.sort();
    assert_eq!(names, ["d/", "d/a"]);
}

/// The byte offset of `file`'s first data block on the block device under its btrfs, so
/// the test can corrupt it (btrfs then returns EIO: its checksum fails).
fn btrfs_data_offset(fs: &LoopFs, file: &Path) -> u64 {
    let o = run(Command::new("filefrag").arg("-v").arg("-b4096").arg(file));
    let text = String::from_utf8_lossy(&o.stdout);
    // "   0:        0..       0:      3328..      3328:      1:             last,eof"
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("0:"))
        .unwrap_or_else(|| panic!("no extent in {text}"));
    let physical: u64 = line
        .split(':')
        .nth(2)
        .unwrap()
        .split("..")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let logical = physical * 4096;
    let o = run(Command::new("btrfs-map-logical")
        .arg("-l")
        .arg(logical.to_string())
        .arg(&fs.device));
    let text = String::from_utf8_lossy(&o.stdout);
    // "mirror 1 logical 13631488 physical 22020096 device /dev/loop3"
    let physical = text
        .split_whitespace()
        .skip_while(|w| *w != "physical")
        .nth(1)
        .unwrap_or_else(|| panic!("no mapping in {text}"));
    physical.parse().unwrap()
}

#[test]
fn tar_says_a_member_read_with_an_error_is_padded_and_not_the_files_content() {
    let test = test_name!();
    if !require_root(test)
        || !require_tool(test, "btrfs-map-logical")
        || !require_tool(test, "filefrag")
        || !require_tool(test, "tar")
    {
        return;
    }
    let fs_ = LoopFs::new(test, "btrfs", 200);
    let dir = fs_.path("d");
    put(&dir, b"bad.bin", &[0x5a; 64 << 10]);
    put(&dir, b"good.bin", &[0x33; 10 << 10]);
    run(&mut Command::new("sync"));
    let offset = btrfs_data_offset(&fs_, &dir.join("bad.bin"));
    run(Command::new("umount").arg(&fs_.mnt));
    {
        let mut img = fs::OpenOptions::new().write(true).open(&fs_.image).unwrap();
        std::io::Seek::seek(&mut img, std::io::SeekFrom::Start(offset)).unwrap();
        img.write_all(&[0xff; 4096]).unwrap();
        img.sync_all().unwrap();
    }
    run(Command::new("mount").arg(&fs_.device).arg(&fs_.mnt));
    let out = scratch!();
    let archive = out.path().join("a.tar");
    let o = output_within(
        seekless()
            .arg("tar")
            .arg("-f")
            .arg(&archive)
            .arg("-C")
            .arg(&fs_.mnt)
            .arg("d"),
        RUN_LIMIT,
    );
    let err = stderr(&o);
    crate::common::assert_exit(&o, 1);
    assert!(
        err.contains("bad.bin")
            && err.contains("read error at byte 0")
            && err.contains("padded with 65536 zero bytes and is not this file's content"),
        "{err}"
    );
    let listed = run(Command::new("tar").arg("-tvf").arg(&archive));
    assert!(String::from_utf8_lossy(&listed.stdout).contains("d/good.bin"));
}
