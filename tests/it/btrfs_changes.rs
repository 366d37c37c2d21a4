//! What changed in a btrfs subvolume since a generation, from its tree
//! (`seekless_sys::btrfs_changes_since`, the catch-up without a walk of issue 46): after
//! each kind of change, exactly the directories to list again, on a real btrfs on a loop
//! device; a subvolume inside is a tree of its own; a bind mount shows its part; without
//! CAP_SYS_ADMIN, or off btrfs, a clean error.

use std::path::{Path, PathBuf};
use std::process::Command;

use seekless_sys::btrfs_changes_since;

use crate::common::*;

/// Commits the filesystem's transaction: btrfs writes the inode updates it holds in memory
/// (its delayed inodes) into the tree at a commit, and the search sees the tree.
fn commit(at: &Path) {
    run(Command::new("sync").arg("-f").arg(at));
}

/// The directories `rels` (relative to `base`; "" is `base`), sorted as returned.
fn dirs(base: &Path, rels: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = rels
        .iter()
        .map(|r| {
            if r.is_empty() {
                base.to_path_buf()
            } else {
                base.join(r)
            }
        })
        .collect();
    v.sort();
    v
}

fn write(p: &Path, data: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

fn append(p: &Path, data: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(data).unwrap();
}

#[test]
fn each_change_since_a_generation_names_exactly_the_directories_to_list_again() {
    let test = test_name!();
    if !require_root(test) || !require_tools(test, &["mkfs.btrfs", "sync"]) {
        return;
    }
    let fs = LoopFs::new(test, "btrfs", 200);
    // Nothing below reads a directory: with relatime, a first listing after a change
    // writes the directory's atime, a change of its inode like any other.
    let root = std::fs::canonicalize(&fs.mnt).unwrap();
    for dir in [
        "a/b/c/d",
        "x/y/z",
        "quiet/deep",
        "from",
        "to",
        "moving/inner",
        "dst",
        "l1",
        "l2",
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for f in [
        "a/b/c/d/old.jpg",
        "x/y/z/old.jpg",
        "x/y/z/gone.jpg",
        "x/y/z/perm.jpg",
        "quiet/deep/q.jpg",
        "from/f.jpg",
        "moving/inner/m.jpg",
        "l1/linked.jpg",
    ] {
        write(&root.join(f), b"data");
    }
    std::fs::hard_link(root.join("l1/linked.jpg"), root.join("l2/linked.jpg")).unwrap();
    commit(&root);
    let first = btrfs_changes_since(&root, 0).unwrap();
    assert!(first.generation > 0);
    assert!(first.dirs.contains(&root.join("quiet/deep")), "{first:?}");
    let start = first.generation;

    let mut since = start;
    let mut step = |what: &str, change: &dyn Fn(), want: &[&str]| {
        change();
        commit(&root);
        let got = btrfs_changes_since(&root, since).unwrap();
        assert_eq!(got.dirs, dirs(&root, want), "{what}");
        if want.is_empty() {
            assert_eq!(got.generation, since, "{what}: nothing changed");
        } else {
            assert!(
                got.generation > since,
                "{what}: {} after {since}",
                got.generation
            );
        }
        // Asked again from the same generation: the same answer.
        assert_eq!(btrfs_changes_since(&root, since).unwrap(), got, "{what}");
        since = got.generation;
    };
    step(
        "a file made and a file written in deep directories",
        &|| {
            write(&root.join("a/b/c/d/new.jpg"), b"new");
            append(&root.join("x/y/z/old.jpg"), b"more");
        },
        &["a/b/c/d", "x/y/z"],
    );
    step(
        "a file deleted",
        &|| std::fs::remove_file(root.join("x/y/z/gone.jpg")).unwrap(),
        &["x/y/z"],
    );
    step(
        "a file renamed across directories",
        &|| std::fs::rename(root.join("from/f.jpg"), root.join("to/f.jpg")).unwrap(),
        &["from", "to"],
    );
    // The directory moved is listed too (its inode changed: its name and parent); what is
    // in it is not, nor below (their inodes did not change).
    step(
        "a directory renamed",
        &|| std::fs::rename(root.join("moving"), root.join("dst/moved")).unwrap(),
        &["", "dst", "dst/moved"],
    );
    step(
        "a file's metadata only",
        &|| {
            use std::os::unix::fs::PermissionsExt;
            let perm = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(root.join("x/y/z/perm.jpg"), perm).unwrap();
        },
        &["x/y/z"],
    );
    step(
        "a hard-linked file written: each directory it is in",
        &|| append(&root.join("l1/linked.jpg"), b"more"),
        &["l1", "l2"],
    );
    step("nothing", &|| {}, &[]);
    // A generation the subvolume never had (another subvolume's): an error, never "nothing".
    let e = btrfs_changes_since(&root, since + 1000).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");

    // From any directory of the subvolume, the same answer.
    let from_deep = btrfs_changes_since(&root.join("a/b/c"), start).unwrap();
    assert_eq!(from_deep, btrfs_changes_since(&root, start).unwrap());
    assert!(!from_deep.dirs.contains(&root.join("quiet/deep")));

    // Through a bind mount of x: only what it shows, under its own path.
    let t = scratch!();
    let bind = t.path().join("bind");
    std::fs::create_dir(&bind).unwrap();
    run(Command::new("mount")
        .arg("--bind")
        .arg(root.join("x"))
        .arg(&bind));
    let _held = Held(bind.clone());
    let seen = btrfs_changes_since(&bind, start).unwrap();
    assert_eq!(seen.dirs, dirs(&bind, &["y/z"]));

    // Without CAP_SYS_ADMIN (dropped from this thread only), the search is refused.
    let refused = std::thread::spawn({
        let root = root.clone();
        move || {
            drop_sys_admin();
            btrfs_changes_since(&root, start)
        }
    })
    .join()
    .unwrap()
    .unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(refused.to_string().contains("CAP_SYS_ADMIN"), "{refused}");
}

/// Drops CAP_SYS_ADMIN from the calling thread's effective capabilities (the raw
/// `capset`, which is per thread; the C library's would be too, but is not bound here).
fn drop_sys_admin() {
    const CAP_SYS_ADMIN: u32 = 21;
    // _LINUX_CAPABILITY_VERSION_3: two 32-bit words of each set.
    let mut header: [u32; 2] = [0x2008_0522, 0];
    let mut data = [[0u32; 3]; 2];
    // SAFETY: `header` (version, pid 0: this thread) and `data` (two of effective,
    // permitted, inheritable) are the structures capget reads and writes, live for the call.
    let r = unsafe { libc::syscall(libc::SYS_capget, header.as_mut_ptr(), data.as_mut_ptr()) };
    assert_eq!(r, 0, "capget: {}", std::io::Error::last_os_error());
    data[0][0] &= !(1 << CAP_SYS_ADMIN);
    // SAFETY: as above; capset only reads them, and changes this thread alone.
    let r = unsafe { libc::syscall(libc::SYS_capset, header.as_mut_ptr(), data.as_ptr()) };
    assert_eq!(r, 0, "capset: {}", std::io::Error::last_os_error());
}

#[test]
fn changes_in_a_subvolume_are_in_its_own_tree_not_its_parents() {
    let test = test_name!();
    if !require_root(test) || !require_tools(test, &["mkfs.btrfs", "btrfs", "sync"]) {
        return;
    }
    let fs = LoopFs::new(test, "btrfs", 200);
    let root = std::fs::canonicalize(&fs.mnt).unwrap();
    let sub = root.join("sub");
    run(Command::new("btrfs")
        .args(["-q", "subvolume", "create"])
        .arg(&sub));
    std::fs::create_dir_all(sub.join("d")).unwrap();
    std::fs::create_dir_all(root.join("p")).unwrap();
    commit(&root);
    let parent = btrfs_changes_since(&root, 0).unwrap();
    // The subvolume's entry is in the parent's root directory; nothing inside it is.
    assert_eq!(parent.dirs, dirs(&root, &["", "p"]));
    let inner = btrfs_changes_since(&sub, 0).unwrap();
    assert_eq!(inner.dirs, dirs(&sub, &["", "d"]));

    write(&sub.join("d/new.jpg"), b"new");
    write(&sub.join("top.jpg"), b"top");
    commit(&root);
    let p = btrfs_changes_since(&root, parent.generation).unwrap();
    assert_eq!(p.dirs, Vec::<PathBuf>::new());
    assert_eq!(p.generation, parent.generation);
    let s = btrfs_changes_since(&sub.join("d"), inner.generation).unwrap();
    assert_eq!(s.dirs, dirs(&sub, &["", "d"]));
    assert!(s.generation > inner.generation);

    // And the other way round: the parent's change is not the subvolume's.
    write(&root.join("p/q.jpg"), b"q");
    commit(&root);
    assert_eq!(
        btrfs_changes_since(&sub, s.generation).unwrap().dirs,
        Vec::<PathBuf>::new()
    );
    assert_eq!(
        btrfs_changes_since(&root, p.generation).unwrap().dirs,
        dirs(&root, &["p"])
    );
}

#[test]
fn a_directory_not_on_btrfs_is_unsupported() {
    let t = scratch!();
    let kind = run(Command::new("stat").args(["-f", "-c", "%T"]).arg(t.path()));
    let mut places = vec![PathBuf::from("/proc")];
    if String::from_utf8_lossy(&kind.stdout).trim() != "btrfs" {
        places.push(t.path().to_path_buf());
    }
    for place in places {
        let e = btrfs_changes_since(&place, 0).unwrap_err();
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::Unsupported,
            "{}: {e}",
            place.display()
        );
        assert!(e.to_string().contains("not on btrfs"), "{e}");
    }
}
