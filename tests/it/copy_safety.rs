//! What `seekless copy` deletes, replaces or trusts, tried as a careful user would:
//! `--delete` after paths that could not be read (as `nobody` through `setpriv`, since
//! root reads everything), a subtree renamed away while the copy runs (frozen with SIGSTOP
//! at the moment chosen), a destination that is a symlink, a directory replaced by a file,
//! extended attributes and ACLs removed in the source, and the order of flushes and
//! renames that makes a copy durable before it gets its name (`strace`).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::symlink;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::copying::*;
use crate::common::fixtures::{Holder, temp_name, to_dev_stdout};
use crate::common::*;
// copy's own (nothing on stdout either), not common's.
use crate::common::copying::assert_exit;

/// `seekless copy ARGS…` as `nobody`.
fn copy_as_nobody(args: &[&OsStr]) -> Output {
    output_within(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_seekless"))
            .arg("copy")
            .args(args)
            .env_remove("SEEKLESS_INJECT_FAULTS"),
        RUN_LIMIT,
    )
}

fn chown_nobody(path: &Path) {
    run(Command::new("chown").arg("-R").arg("65534:65534").arg(path));
}

/// Every entry under `root`: relative name → (kind, size of a file).
fn names(root: &Path) -> BTreeMap<Vec<u8>, (&'static str, Option<u64>)> {
    entries(root)
        .into_iter()
        .map(|(rel, _, m)| {
            let kind = kind_of(m.file_type());
            (rel, (kind, (kind == "file").then(|| m.size())))
        })
        .collect()
}

/// The paths the run's error lines name (`seekless: /PATH: why`).
fn error_paths(err: &str) -> Vec<String> {
    err.lines()
        .filter_map(|l| l.strip_prefix("seekless: /"))
        .filter_map(|l| l.split(": ").next())
        .map(|p| format!("/{p}"))
        .collect()
}

fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// A source of 16 files in directories of every kind the walk can fail on, copied as
/// `nobody` to `dest`; returns (source, destination root).
fn backed_up_tree(t: &Path) -> (PathBuf, PathBuf) {
    fs::set_permissions(t, fs::Permissions::from_mode(0o755)).unwrap();
    let src = t.join("src");
    for name in [
        "top",
        "secret",
        "open/1",
        "open/2",
        "open/3",
        "closed/1",
        "closed/2",
        "closed/deep/3",
        "d300/1",
        "d300/2",
        "d444/1",
        "d444/2",
        "plain/1",
        "plain/2",
        "plain/3",
        "plain/4",
    ] {
        put(&src, name.as_bytes(), name.as_bytes());
    }
    let dest = t.join("dest");
    fs::create_dir(&dest).unwrap();
    chown_nobody(&src);
    chown_nobody(&dest);
    let o = copy_as_nobody(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(names(&dest), names(&src), "the first copy is whole");
    (src, dest)
}

#[test]
fn delete_after_unreadable_paths_deletes_nothing_and_the_errors_name_the_source() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "setpriv") {
        return;
    }
    let t = scratch!();
    let (src, dest) = backed_up_tree(t.path());
    let before = names(&dest);
    assert_eq!(before.values().filter(|(k, _)| *k == "file").count(), 16);
    set_mode(&src.join("closed"), 0o000);
    set_mode(&src.join("secret"), 0o000);
    set_mode(&src.join("d300"), 0o300);
    set_mode(&src.join("d444"), 0o444);
    // Something really gone from the source, and something extra in the copy.
    fs::remove_file(src.join("plain/4")).unwrap();
    put(&dest, b"extra", b"x");
    chown_nobody(&dest.join("extra"));

    let o = copy_as_nobody(&[
        os("--delete"),
        os("--summary"),
        slash(&src).as_os_str(),
        arg(&dest),
    ]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(err.contains("nothing deleted"), "{err}");
    assert_eq!(counts(&o).deleted, 0, "{err}");
    let mut want = before.clone();
    want.insert(b"extra".to_vec(), ("file", Some(1)));
    assert_eq!(names(&dest), want, "every backup is still there:\n{err}");
    let named = error_paths(&err);
    assert!(named.len() >= 4, "{err}");
    for p in &named {
        assert!(
            Path::new(p).starts_with(&src),
            "an error names {p}, not a source path:\n{err}"
        );
    }
    for unreadable in ["closed", "secret", "d300"] {
        assert!(
            named.iter().any(|p| Path::new(p) == src.join(unreadable)),
            "no error names {unreadable}:\n{err}"
        );
    }
    assert_eq!(
        mode_of(&dest.join("closed")),
        0o755,
        "the copy of an unreadable directory keeps its mode"
    );

    // --ignore-errors: what is really gone goes; nothing at or under what failed.
    let o = copy_as_nobody(&[
        os("--delete"),
        os("--ignore-errors"),
        os("--summary"),
        slash(&src).as_os_str(),
        arg(&dest),
    ]);
    assert_exit(&o, 1);
    assert_eq!(counts(&o).deleted, 2, "extra and plain/4:\n{}", stderr(&o));
    want.remove(&b"extra"[..]);
    want.remove(&b"plain/4"[..]);
    assert_eq!(names(&dest), want, "{}", stderr(&o));
}

#[test]
fn a_wholly_unreadable_source_leaves_the_destination_whole_and_its_mode_alone() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "setpriv") {
        return;
    }
    let t = scratch!();
    let (src, dest) = backed_up_tree(t.path());
    let before = names(&dest);
    let mode = mode_of(&dest);
    set_mode(&src, 0o000);
    let o = copy_as_nobody(&[os("--delete"), slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(err.contains(&format!("{}", src.display())), "{err}");
    assert!(err.contains("nothing deleted"), "{err}");
    assert_eq!(names(&dest), before, "{err}");
    assert_eq!(mode_of(&dest), mode, "{err}");
}

#[test]
fn a_subtree_renamed_away_while_copying_deletes_nothing_and_the_errors_name_the_source() {
    let test = test_name!();
    if !require_root(test) {
        return;
    }
    let t = scratch!();
    let src = t.path().join("src");
    let mut all = Vec::new();
    for sub in ["a", "moving", "z"] {
        for n in flat_corpus(&src.join(sub), 300, 16 << 10, 64 << 10, 7) {
            all.push([sub.as_bytes(), b"/", &n[..]].concat());
        }
    }
    let dest = t.path().join("dest");
    assert_exit(&copy(&[slash(&src).as_os_str(), arg(&dest)]), 0);
    let before = names(&dest);
    // New mtimes: the next run reads and rewrites every file.
    for rel in &all {
        let f = fs::File::options()
            .append(true)
            .open(at(&src, rel))
            .unwrap();
        f.set_modified(std::time::SystemTime::now()).unwrap();
    }

    let mut running = start_copy(&[
        os("--delete"),
        os("-j"),
        os("1"),
        slash(&src).as_os_str(),
        arg(&dest),
    ]);
    // Caught writing a file (a temporary in a folder), not probing the destination (its
    // probe is made before the source is walked, when a rename would only shrink the
    // source).
    let caught = freeze_when(&mut running.0, || {
        temporaries(&dest).iter().any(|t| t.contains(&b'/'))
    });
    assert!(caught, "the run ended before it could be caught reading");
    let moved = t.path().join("moved");
    fs::rename(src.join("moving"), &moved).unwrap();
    let (code, err) = finish(running);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("nothing deleted"), "{err}");
    assert_eq!(
        names(&dest),
        before,
        "no copy under dest/moving is lost:\n{err}"
    );
    let named = error_paths(&err);
    assert!(!named.is_empty(), "{err}");
    for p in &named {
        assert!(
            Path::new(p).starts_with(src.join("moving")),
            "an error names {p}, not a path of the moved source:\n{err}"
        );
    }
    assert!(temporaries(&dest).is_empty(), "{err}");
}

#[test]
fn a_destination_root_that_is_a_symlink_is_followed_and_links_below_it_are_copied_as_links() {
    let test = test_name!();
    if !require_root(test) {
        return;
    }
    let t = scratch!();
    let src = t.path().join("photos");
    put(&src, b"a.jpg", b"a");
    put(&src, b"sub/b.jpg", b"b");
    std::os::unix::fs::symlink("a.jpg", src.join("link")).unwrap();
    let disk = t.path().join("other-disk");
    fs::create_dir(&disk).unwrap();
    let backup = t.path().join("backup");
    std::os::unix::fs::symlink(&disk, &backup).unwrap();

    // Contents into the link (trailing slash), twice, with --delete.
    for _ in 0..2 {
        let o = copy(&[os("--delete"), slash(&src).as_os_str(), arg(&backup)]);
        assert_exit(&o, 0);
        assert!(
            fs::symlink_metadata(&backup)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(disk.join("sub/b.jpg")).unwrap(), b"b");
        assert_eq!(
            fs::read_link(disk.join("link")).unwrap(),
            Path::new("a.jpg")
        );
    }
    // The directory itself under the link.
    let o = copy(&[arg(&src), arg(&backup)]);
    assert_exit(&o, 0);
    assert!(
        fs::symlink_metadata(&backup)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read(disk.join("photos/a.jpg")).unwrap(), b"a");
    assert!(
        fs::symlink_metadata(disk.join("photos/link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_file_copied_to_a_bare_new_name_in_the_current_directory_reports_nothing() {
    let t = scratch!();
    fs::write(t.path().join("one"), b"one").unwrap();
    let o = output_within(
        copy_cmd().args(["one", "newdest"]).current_dir(t.path()),
        RUN_LIMIT,
    );
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");
    assert_eq!(fs::read(t.path().join("newdest")).unwrap(), b"one");
}

#[test]
fn a_source_directory_replaced_by_a_file_is_replaced_in_the_copy_by_delete_as_rsync_does() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "rsync") {
        return;
    }
    let t = scratch!();
    let src = t.path().join("src");
    put(&src, b"d/x/1", b"1");
    put(&src, b"d/x/2", b"2");
    put(&src, b"d/y", b"y");
    let ours = t.path().join("ours");
    let theirs = t.path().join("theirs");
    assert_exit(&copy(&[slash(&src).as_os_str(), arg(&ours)]), 0);
    run(Command::new("rsync")
        .arg("-a")
        .arg(slash(&src))
        .arg(&theirs));
    fs::remove_dir_all(src.join("d/x")).unwrap();
    put(&src, b"d/x", b"now a file");

    // Without --delete the directory stays, and the run says why.
    let o = copy(&[slash(&src).as_os_str(), arg(&ours)]);
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains("--delete replaces it"),
        "{}",
        stderr(&o)
    );
    assert!(ours.join("d/x/1").exists());

    let o = copy(&[
        os("--delete"),
        os("--summary"),
        slash(&src).as_os_str(),
        arg(&ours),
    ]);
    assert_exit(&o, 0);
    run(Command::new("rsync")
        .args(["-a", "--delete"])
        .arg(slash(&src))
        .arg(&theirs));
    assert_eq!(fs::read(ours.join("d/x")).unwrap(), b"now a file");
    assert_eq!(names(&ours), names(&theirs), "as rsync -a --delete");
    // And every later run is quiet.
    let o = copy(&[
        os("--delete"),
        os("--summary"),
        slash(&src).as_os_str(),
        arg(&ours),
    ]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(0, 0, 2, 0, 0), "{}", stderr(&o));
}

/// `getfacl`'s view of a path, header lines left out.
fn acl(path: &Path) -> String {
    let o = run(Command::new("getfacl")
        .args(["--omit-header", "--absolute-names"])
        .arg(path));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn xattrs_and_acls_removed_in_the_source_are_removed_from_the_copy() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "setfacl") || !require_tool(test, "setfattr") {
        return;
    }
    let (_s, d, src) = two_disks(test, ("ext4", 64), ("xfs", 300), "src");
    put(&src, b"granted", b"secret");
    put(&src, b"tagged", b"t");
    put(&src, b"plain", b"p");
    run(Command::new("setfacl")
        .args(["-m", "u:nobody:r"])
        .arg(src.join("granted")));
    run(Command::new("setfacl")
        .args(["-d", "-m", "u:nobody:rx"])
        .arg(&src));
    setfattr(&src.join("tagged"), "user.label", "old");
    let dest = d.path("dest");
    assert_exit(&copy(&[slash(&src).as_os_str(), arg(&dest)]), 0);
    assert!(acl(&dest.join("granted")).contains("user:nobody:r--"));
    assert_eq!(
        xattrs_of(&dest.join("tagged")),
        xattrs_of(&src.join("tagged"))
    );

    // A no-op run (ext4 → xfs, ACLs on both) changes nothing and says so.
    let o = copy(&[os("--summary"), slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert!(
        count_line(&stderr(&o)).ends_with("metadata brought up to date on 0"),
        "{}",
        stderr(&o)
    );

    // The grant is revoked and the label removed in the source: so in the copy.
    run(Command::new("setfacl").arg("-b").arg(src.join("granted")));
    run(Command::new("setfacl").arg("-k").arg(&src));
    run(Command::new("setfattr")
        .args(["-x", "user.label"])
        .arg(src.join("tagged")));
    let o = copy(&[os("--summary"), slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert!(
        !acl(&dest.join("granted")).contains("nobody"),
        "{}",
        acl(&dest.join("granted"))
    );
    assert!(!acl(&dest).contains("default:"), "{}", acl(&dest));
    assert_eq!(
        xattrs_of(&dest.join("tagged")),
        Vec::<(String, String)>::new()
    );
    assert_eq!(
        xattrs_of(&dest.join("granted")),
        xattrs_of(&src.join("granted"))
    );
}

/// The system calls of a run: (call, first argument's path or descriptor, rest).
fn traced(cmd: &mut Command, calls: &str) -> Vec<String> {
    let t = scratch!();
    let log = t.path().join("trace");
    let mut strace = Command::new("strace");
    strace
        .args(["-f", "-qq", "-e", &format!("trace={calls}"), "-o"])
        .arg(&log)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        strace.current_dir(dir);
    }
    let o = output_within(&mut strace, RUN_LIMIT);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            l.split_once(' ')
                .map_or(l, |(_, rest)| rest)
                .trim()
                .to_string()
        })
        .collect()
}

#[test]
fn copies_are_flushed_in_batches_before_they_get_their_names() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "strace") {
        return;
    }
    let (_s, d, src) = two_disks(test, ("ext4", 64), ("xfs", 300), "src");
    let names = flat_corpus(&src, 200, 1 << 10, 8 << 10, 3);
    let dest = d.path("dest");
    let mut cmd = copy_cmd();
    cmd.arg(slash(&src)).arg(&dest);
    let calls = traced(&mut cmd, "syncfs,fsync,fdatasync,rename,renameat,renameat2");
    let renames: Vec<usize> = (0..calls.len())
        .filter(|&i| calls[i].starts_with("rename") && calls[i].contains(".seekless-tmp-"))
        .collect();
    assert_eq!(renames.len(), names.len(), "{calls:#?}");
    let first_flush = calls
        .iter()
        .position(|c| c.starts_with("syncfs("))
        .expect("a syncfs");
    assert!(
        first_flush < renames[0],
        "a file got its name before any flush: {calls:#?}"
    );
    let flushes = calls
        .iter()
        .filter(|c| {
            c.starts_with("syncfs(") || c.starts_with("fsync(") || c.starts_with("fdatasync(")
        })
        .count();
    assert!(
        flushes <= 4,
        "one flush per batch, not per file: {flushes} in {calls:#?}"
    );
    // After the last rename, the closing flush.
    assert!(
        calls[renames[renames.len() - 1]..]
            .iter()
            .any(|c| c.starts_with("syncfs(")),
        "{calls:#?}"
    );
    // --no-sync: names at once, nothing flushed.
    let dest2 = d.path("dest2");
    let mut cmd = copy_cmd();
    cmd.arg("--no-sync").arg(slash(&src)).arg(&dest2);
    let calls = traced(&mut cmd, "syncfs,fsync,fdatasync");
    assert!(calls.iter().all(|c| !c.contains("sync")), "{calls:#?}");
}

#[test]
fn an_archive_is_flushed_before_its_rename_and_its_directory_after() {
    let test = test_name!();
    if !require_tool(test, "strace") {
        return;
    }
    let t = scratch!();
    put(t.path(), b"in/a", b"a");
    let mut cmd = seekless();
    cmd.args(["tar", "-f", "out.tar", "in"])
        .current_dir(t.path());
    let calls = traced(&mut cmd, "fsync,fdatasync,rename,renameat,renameat2");
    let rename = calls
        .iter()
        .position(|c| c.starts_with("rename") && c.contains("out.tar"))
        .unwrap_or_else(|| panic!("{calls:#?}"));
    assert!(
        calls[..rename].iter().any(|c| c.starts_with("fsync(")),
        "{calls:#?}"
    );
    assert!(
        calls[rename..].iter().any(|c| c.starts_with("fsync(")),
        "{calls:#?}"
    );
    assert!(t.path().join("out.tar").exists());
}

#[test]
fn a_full_destination_stops_the_reading_too() {
    let test = test_name!();
    if !require_root(test) {
        return;
    }
    let (s, d, src) = two_disks(test, ("ext4", 300), ("ext4", 24), "src");
    fs::create_dir(&src).unwrap();
    let chunk: Vec<u8> = (0..1u32 << 20).map(|i| (i * 13 + i / 512) as u8).collect();
    for i in 0..256 {
        fs::write(src.join(format!("f{i:03}")), &chunk).unwrap();
    }
    s.remount();
    let before = s.read_bytes();
    let o = copy(&[
        os("--summary"),
        slash(&src).as_os_str(),
        d.path("dest").as_os_str(),
    ]);
    let read = s.read_bytes() - before;
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("stopped early"), "{}", stderr(&o));
    let total = 256u64 << 20;
    assert!(
        read < total / 2,
        "read {read} of {total} bytes for a destination of 24 MiB:\n{}",
        stderr(&o)
    );
}

#[test]
fn a_live_temporary_of_another_job_is_not_backed_up() {
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    put(&src, b"a.jpg", b"a");
    // Another seekless job's temporary, alive (its lock held), and a dead one.
    let live = src.join(".b.jpg.seekless-tmp-00000001deadbeef-1");
    let dead = src.join(".c.jpg.seekless-tmp-00000001deadbeef-2");
    fs::write(&live, b"half made").unwrap();
    fs::write(&dead, b"left by a killed run").unwrap();
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for p in [&live, &dead] {
        fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
    }
    let held = fs::File::open(&live).unwrap();
    held.try_lock().unwrap();
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{}: ", live.display())) && err.contains("may be alive"),
        "{err}"
    );
    assert!(!dest.join(live.file_name().unwrap()).exists(), "{err}");
    assert_eq!(fs::read(dest.join("a.jpg")).unwrap(), b"a");
    // A dead one is a file like any other here (a name alone proves nothing).
    assert!(dest.join(dead.file_name().unwrap()).exists(), "{err}");
    drop(held);
}

#[test]
fn a_users_file_named_like_a_temporary_is_never_removed() {
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    put(&src, b"a", b"a");
    put(&src, b".notes.seekless-tmp-2024-12", b"mine");
    put(&dest, b".notes.seekless-tmp-2024-12", b"mine");
    put(&dest, b"sub/.x.seekless-tmp-1-2", b"also mine");
    put(&src, b"sub/.x.seekless-tmp-1-2", b"also mine");
    for delete in [false, true] {
        let mut args = vec![slash(&src), dest.clone().into_os_string()];
        if delete {
            args.insert(0, "--delete".into());
        }
        let o = output_within(copy_cmd().args(&args), RUN_LIMIT);
        assert_exit(&o, 0);
        assert_eq!(
            fs::read(dest.join(".notes.seekless-tmp-2024-12")).unwrap(),
            b"mine"
        );
        assert_eq!(
            fs::read(dest.join("sub/.x.seekless-tmp-1-2")).unwrap(),
            b"also mine"
        );
    }
}

#[test]
fn a_live_temporary_of_another_run_is_left_alone_and_a_dead_one_removed() {
    let test = test_name!();
    if !require_tool(test, "python3") {
        return;
    }
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    put(&src, b"sub/a", b"a");
    fs::create_dir_all(dest.join("sub")).unwrap();
    let temp = dest.join("sub").join(temp_name("x.tar"));
    let holder = Holder::lock(&temp);
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert!(temp.exists(), "a running program's temporary is left alone");
    drop(holder);
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert!(!temp.exists(), "a dead run's temporary is removed");
}

#[test]
fn a_second_copy_into_one_destination_is_refused_naming_the_first() {
    let test = test_name!();
    if !require_tool(test, "python3") {
        return;
    }
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    put(&src, b"a", b"a");
    fs::create_dir(&dest).unwrap();
    let holder = Holder::lock(&dest);
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("process {}", holder.pid())),
        "names the holder: {err}"
    );
    assert!(!dest.join("a").exists(), "nothing written");
    drop(holder);
    assert_exit(&copy(&[slash(&src).as_os_str(), arg(&dest)]), 0);
    assert_eq!(fs::read(dest.join("a")).unwrap(), b"a");
}

#[test]
fn copy_of_a_file_onto_a_link_writes_the_links_target_as_cp_does() {
    let test = test_name!();
    if !require_tool(test, "cp") {
        return;
    }
    let t = scratch!();
    let p = t.path();
    let mut shapes = Vec::new();
    for tool in ["cp", "seekless"] {
        let d = p.join(tool);
        put(&d, b"f", b"new");
        put(&d, b"real", b"old");
        symlink("real", d.join("link")).unwrap();
        symlink("made", d.join("dangling")).unwrap();
        // Written through a link to a file; refused through a dangling one.
        for (to, ok) in [("link", true), ("dangling", false)] {
            let o = if tool == "cp" {
                Command::new("cp")
                    .arg("-a")
                    .arg(d.join("f"))
                    .arg(d.join(to))
                    .output()
                    .unwrap()
            } else {
                copy(&[arg(&d.join("f")), arg(&d.join(to))])
            };
            assert_eq!(o.status.success(), ok, "{tool} {to}: {}", stderr(&o));
        }
        let shape: Vec<(String, bool, Vec<u8>)> = ["link", "dangling", "real", "made"]
            .iter()
            .map(|n| {
                let path = d.join(n);
                let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
                (n.to_string(), is_link, fs::read(&path).unwrap_or_default())
            })
            .collect();
        shapes.push(shape);
    }
    assert_eq!(shapes[1], shapes[0], "seekless as cp -a");
    assert_eq!(shapes[1][2].2, b"new");
}

#[test]
fn copy_manifest_dev_stdout_writes_into_standard_output_and_never_replaces_it() {
    let test = test_name!();
    if !require_tool(test, "b3sum") {
        return;
    }
    let t = scratch!();
    put(t.path(), b"src/a", b"alpha");
    let out = to_dev_stdout(test, t.path(), "copy --manifest /dev/stdout src/ dest");
    if out.as_os_str().is_empty() {
        return;
    }
    let manifest = fs::read_to_string(&out).unwrap();
    assert!(manifest.contains("src/a"), "{manifest:?}");
    let check = run(Command::new("b3sum")
        .arg("-c")
        .arg(&out)
        .current_dir(t.path()));
    assert!(check.status.success(), "b3sum -c: {}", stderr(&check));
}
