//! What `copy --delete` may remove when the destination has mounts inside it or the
//! source is a drive that is not mounted: another filesystem, or a bind mount of a folder
//! of the same one, mounted anywhere under the destination is never removed or emptied,
//! whichever path would have reached it (an extra entry, a directory in the way of a
//! file, `--ignore-errors`, `-x`, a directory the source has too); a source root that is
//! an empty directory deletes nothing from a backup that has files, unless
//! `--allow-empty-source`. A directory in the way of a file is replaced only by a whole
//! file and never leaves its name empty; a source inside its destination (or reached
//! through a bind mount of it) is never deleted as an extra.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::copying::*;
use crate::common::*;
// copy's own (nothing on stdout either), not common's.
use crate::common::copying::assert_exit;

/// Every name under `root`, with its bytes for files.
fn tree(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.push((rel, None));
                stack.push(p);
            } else {
                out.push((rel, Some(fs::read(&p).unwrap())));
            }
        }
    }
    out.sort();
    out
}

/// The run failed (exit 1) and said, naming `mount`, that a filesystem is mounted there.
fn refused_at(o: &std::process::Output, mount: &Path) {
    assert_exit(o, 1);
    let err = stderr(o);
    assert!(
        err.contains(&format!("{}: ", mount.display()))
            && err.contains("a filesystem is mounted here"),
        "no message naming {}:\n{err}",
        mount.display()
    );
}

#[test]
fn delete_never_empties_a_filesystem_or_a_bind_mount_inside_the_destination() {
    let test = test_name!();
    if !require_root(test) {
        return;
    }
    let t = scratch!();
    let other = LoopFs::new(test, "ext4", 16);
    put(&other.mnt, b"photos/only-copy.jpg", b"the other disk's");
    let unrelated = t.path().join("unrelated");
    put(
        &unrelated,
        b"notes/keep.txt",
        b"a folder bind-mounted into the backup",
    );
    let other_before = tree(&other.mnt);
    let unrelated_before = tree(&unrelated);

    // (what is mounted, where under DEST, extra arguments, what SOURCE has at that name)
    let cases: [(&Path, &str, &[&str], Option<&str>); 7] = [
        (&other.mnt, "sub", &[], None),
        (&unrelated, "sub", &[], None),
        (&unrelated, "deep/sub", &[], None),
        (&other.mnt, "sub", &[], Some("file")),
        (&unrelated, "sub", &["-x", "--ignore-errors"], None),
        (&unrelated, "sub", &["--ignore-errors"], Some("file")),
        (&other.mnt, "sub", &[], Some("dir")),
    ];
    for (i, (from, at, extra, in_source)) in cases.into_iter().enumerate() {
        let case = t.path().join(format!("case{i}"));
        let (src, dest) = (case.join("src"), case.join("dest"));
        put(&src, b"a.jpg", b"a");
        put(&dest, b"a.jpg", b"a");
        put(&dest, b"extra.jpg", b"extra");
        match in_source {
            Some("file") => put(&src, at.as_bytes(), b"a file where DEST has a mount"),
            // The source has that folder too, with what the other disk has: copied into
            // the mount, but nothing else there (its lost+found) is deleted.
            Some(_) => put(
                &src,
                format!("{at}/photos/only-copy.jpg").as_bytes(),
                b"the other disk's",
            ),
            None => {}
        }
        let mount = dest.join(at);
        let mounted = Mounted::bind(from, &mount);
        let mut args = vec![os("--delete")];
        args.extend(extra.iter().map(|a| os(a)));
        let src_arg = slash(&src);
        args.extend([src_arg.as_os_str(), arg(&dest)]);
        let o = copy(&args);
        refused_at(&o, &mount);
        drop(mounted);
        assert_eq!(tree(&other.mnt), other_before, "case {i}: {}", stderr(&o));
        assert_eq!(
            tree(&unrelated),
            unrelated_before,
            "case {i}: {}",
            stderr(&o)
        );
        // The rest of the destination was still brought in line.
        assert!(!dest.join("extra.jpg").exists(), "case {i}: {}", stderr(&o));
        assert_eq!(fs::read(dest.join("a.jpg")).unwrap(), b"a");
    }
}

#[test]
fn an_empty_source_deletes_nothing_from_its_backup_unless_allowed() {
    let t = scratch!();
    // A drive that is not mounted: its mount point is an empty directory.
    let (src, dest) = (t.path().join("media/photos"), t.path().join("backup"));
    fs::create_dir_all(&src).unwrap();
    put(&dest, b"2024/a.jpg", b"the only copy now");
    put(&dest, b"b.jpg", b"b");
    let before = tree(&dest);
    let src_arg = slash(&src);
    let o = copy(&[os("--delete"), src_arg.as_os_str(), arg(&dest)]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}: nothing deleted: the source {} is an empty directory",
            dest.display(),
            Path::new(&src_arg).display()
        )) && err.contains("--allow-empty-source"),
        "{err}"
    );
    assert_eq!(tree(&dest), before);
    // Without --delete nothing is deleted anyway, and nothing is said.
    let o = copy(&[src_arg.as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    // Asked for: the backup follows its empty source.
    let o = copy(&[
        os("--delete"),
        os("--allow-empty-source"),
        src_arg.as_os_str(),
        arg(&dest),
    ]);
    assert_exit(&o, 0);
    assert_eq!(tree(&dest), vec![]);
    // Usage: it goes with --delete.
    let o = copy(&[os("--allow-empty-source"), src_arg.as_os_str(), arg(&dest)]);
    crate::common::assert_exit(&o, 2);
}

#[test]
fn a_file_bind_mounted_in_the_way_of_a_directory_is_not_replaced() {
    let test = test_name!();
    if !require_root(test) {
        return;
    }
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    put(&src, b"sub/a.jpg", b"a");
    // DEST has a file where SOURCE has a directory, and that file is a mount point.
    let outside = t.path().join("outside.txt");
    fs::write(&outside, b"someone else's file").unwrap();
    put(&dest, b"sub", b"");
    crate::common::run(
        std::process::Command::new("mount")
            .arg("--bind")
            .arg(&outside)
            .arg(dest.join("sub")),
    );
    let o = copy(&[os("--delete"), slash(&src).as_os_str(), arg(&dest)]);
    let _ = std::process::Command::new("umount")
        .arg(dest.join("sub"))
        .status();
    refused_at(&o, &dest.join("sub"));
    assert_eq!(fs::read(&outside).unwrap(), b"someone else's file");
}

#[test]
fn delete_keeps_bind_mounts_on_xfs_and_btrfs_and_a_btrfs_subvolume() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "btrfs") {
        return;
    }
    for kind in ["xfs", "btrfs"] {
        let fs_ = LoopFs::new(test, kind, 320);
        let (src, dest) = (fs_.path("src"), fs_.path("dest"));
        put(&src, b"a.jpg", b"a");
        put(&dest, b"a.jpg", b"a");
        put(&dest, b"extra.jpg", b"extra");
        // A folder of the same filesystem bind-mounted inside the destination.
        let folder = fs_.path("elsewhere");
        put(
            &folder,
            b"keep.txt",
            b"a folder bind-mounted into the backup",
        );
        let mount = dest.join("bound");
        let mounted = Mounted::bind(&folder, &mount);
        // On btrfs, a subvolume inside the destination: another filesystem as far as its
        // device number goes (rsync -x stops there too), on the same mount.
        let vol = dest.join("vol");
        if kind == "btrfs" {
            crate::common::run(
                std::process::Command::new("btrfs")
                    .args(["subvolume", "create"])
                    .arg(&vol),
            );
            put(&vol, b"in-subvolume.jpg", b"kept");
        }
        let o = copy(&[os("--delete"), slash(&src).as_os_str(), arg(&dest)]);
        refused_at(&o, &mount);
        if kind == "btrfs" {
            refused_at(&o, &vol);
            assert_eq!(fs::read(vol.join("in-subvolume.jpg")).unwrap(), b"kept");
        }
        drop(mounted);
        assert_eq!(
            fs::read(folder.join("keep.txt")).unwrap(),
            b"a folder bind-mounted into the backup",
            "{kind}"
        );
        assert!(!dest.join("extra.jpg").exists(), "{kind}: {}", stderr(&o));
    }
}

#[test]
fn delete_keeps_a_directory_in_the_way_when_the_file_replacing_it_changes_while_read() {
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    // The source has a file where the backup has a directory with the old backup in it.
    put(&src, b"b/seekless-fault-grow-x", &[7u8; 100_000]);
    put(&src, b"b/other", b"o");
    put(
        &dest,
        b"b/seekless-fault-grow-x/old/backup.jpg",
        b"only copy",
    );
    let o = output_within(
        copy_cmd()
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .args(["--delete", "--summary"])
            .arg(slash(&src))
            .arg(&dest),
        RUN_LIMIT,
    );
    let err = stderr(&o);
    assert_exit(&o, 1);
    assert!(err.contains("nothing deleted"), "{err}");
    assert_eq!(counts(&o).deleted, 0, "{err}");
    assert_eq!(
        fs::read(dest.join("b/seekless-fault-grow-x/old/backup.jpg")).unwrap(),
        b"only copy"
    );
    assert_eq!(fs::read(dest.join("b/other")).unwrap(), b"o");
    // The same file read whole (no fault): the directory goes, the file takes its place.
    let o = copy(&["--delete".as_ref(), slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(
        fs::read(dest.join("b/seekless-fault-grow-x")).unwrap(),
        fs::read(src.join("b/seekless-fault-grow-x")).unwrap()
    );
}

#[test]
fn a_file_in_the_way_of_a_directory_is_exchanged_never_leaving_the_name_empty() {
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    // The source has a directory where the backup has a file.
    put(&src, b"seekless-fault-abort-d/new.jpg", b"new");
    put(&dest, b"seekless-fault-abort-d", b"the old file");
    let at = dest.join("seekless-fault-abort-d");
    // Killed (an abort: nothing cleaned up) once the directory took the name and before
    // the file is removed: the name is never empty.
    let o = output_within(
        copy_cmd()
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .arg(slash(&src))
            .arg(&dest),
        RUN_LIMIT,
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(libc::SIGABRT),
        "the run was stopped where the test meant: {}",
        stderr(&o)
    );
    assert!(
        fs::symlink_metadata(&at).unwrap().is_dir(),
        "{}",
        stderr(&o)
    );
    // The next run finishes the job and leaves nothing of its own.
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(fs::read(at.join("new.jpg")).unwrap(), b"new");
    let left: Vec<_> = fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("seekless-fault-abort-d")]
    );
}

#[test]
fn delete_never_removes_a_source_nested_in_its_destination() {
    let t = scratch!();
    let p = t.path();
    put(p, b"photos/old.jpg", b"old");
    put(p, b"photos/new/deep/a.jpg", b"a");
    put(p, b"photos/new/b.jpg", b"b");
    let new = p.join("photos/new");
    let o = copy(&[
        "--delete".as_ref(),
        slash(&new).as_os_str(),
        arg(&p.join("photos")),
    ]);
    assert_eq!(
        fs::read(new.join("deep/a.jpg")).unwrap(),
        b"a",
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read(new.join("b.jpg")).unwrap(), b"b");
    assert_eq!(fs::read(p.join("photos/deep/a.jpg")).unwrap(), b"a");
    assert!(
        !p.join("photos/old.jpg").exists(),
        "an extra file still goes"
    );

    let deep = p.join("photos/new/deep");
    let o = copy(&["--delete".as_ref(), slash(&deep).as_os_str(), arg(p)]);
    assert_eq!(
        fs::read(deep.join("a.jpg")).unwrap(),
        b"a",
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read(p.join("a.jpg")).unwrap(), b"a");
    assert!(stderr(&o).contains("holds a source"), "{}", stderr(&o));
}

#[test]
fn delete_never_removes_a_source_reached_through_a_bind_mount() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "mount") {
        return;
    }
    let t = scratch!();
    let p = t.path();
    put(p, b"photos/new/a.jpg", b"a");
    put(p, b"photos/old.jpg", b"old");
    let bind = p.join("bind");
    fs::create_dir(&bind).unwrap();
    run(Command::new("mount")
        .arg("--bind")
        .arg(p.join("photos/new"))
        .arg(&bind));
    let o = copy(&[
        "--delete".as_ref(),
        slash(&bind).as_os_str(),
        arg(&p.join("photos")),
    ]);
    run(Command::new("umount").arg(&bind));
    assert_eq!(
        fs::read(p.join("photos/new/a.jpg")).unwrap(),
        b"a",
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read(p.join("photos/a.jpg")).unwrap(), b"a");
}
