//! `seekless copy` against independent tools on real filesystems (ext4, xfs and btrfs made
//! on loop devices): every copy is compared entry by entry with its source and with what
//! `cp -a` makes of the same tree (names, types, modes, owners, access and modification
//! times to the nanosecond, symlink targets, device numbers, hard-link identity by inode
//! number, extended attributes read by `getfattr`, sparse files' allocation by `du`), its
//! content with `diff -r`; `rsync` says what is left to do and where things go,
//! `b3sum -c` / `sha256sum -c` check manifests and `filefrag` shows shared blocks.
//!
//! Runs that must be caught in the middle (a `kill -9`, a copy corrupted on its disk
//! before `--verify` reads it back) are frozen with SIGSTOP between short slices of
//! running, as in `index`, so the moment is chosen by what the destination already holds,
//! not by a race against the clock. Files that change while they are copied are made
//! deterministically by the debug build's fault injection (`SEEKLESS_INJECT_FAULTS=1`).
//!
//! Sources are remounted `noatime`, so that reading them (seekless, `cp`, `diff`) leaves
//! their access times as the test set them, and those can be compared too.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::symlink;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::copying::assert_exit;
use crate::common::copying::*;
use crate::common::*;

// ---------------------------------------------------------------------------------------
// 1. The copy is the source, as cp -a would make it.

/// Copies the tree of [`build_tree`] from a `from` filesystem to a `to` one and compares
/// the copy with the source and with `cp -a`'s copy of it, entry by entry; content with
/// `diff -r`; and asks `rsync -aHX --checksum` what is left to do (nothing).
fn copy_matches_source_and_cp_a(test: &str, from: &str, to: &str) {
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, from, size_for(from));
    let d = LoopFs::new(test, to, size_for(to));
    let src = s.path("tree");
    build_tree(&src, 1);
    noatime(&s);
    noatime(&d);
    let want = snapshot(&src, true);

    let o = copy(&[os("--summary"), arg(&src), arg(&d.path("by-seekless"))]);
    assert_exit(&o, 0);
    assert_eq!(
        counts(&o),
        counts_of(distinct_files(&src), 0, 0, 0, 0),
        "{}",
        stderr(&o)
    );
    let ours = d.path("by-seekless/tree");
    let got = snapshot(&ours, true);
    assert_same_tree(
        &got,
        &want,
        &format!("{from} → {to}: the copy vs its source"),
    );

    fs::create_dir(d.path("by-cp")).unwrap();
    run(Command::new("cp").arg("-a").arg(&src).arg(d.path("by-cp")));
    let theirs = d.path("by-cp/tree");
    assert_same_tree(
        &got,
        &snapshot(&theirs, true),
        &format!("{from} → {to}: seekless copy vs cp -a"),
    );

    assert_diff_clean(&src, &ours);
    let left = rsync_would(&src, &ours, &["-aHX", "--checksum"]);
    assert!(
        left.is_empty(),
        "rsync -aHX --checksum would still change: {left:#?}"
    );

    // Holes stay holes: no more allocated than cp -a's copy (which keeps them too), and
    // far less than the file's size.
    let (ours_du, theirs_du) = (du(&ours.join("sparse.img")), du(&theirs.join("sparse.img")));
    assert!(
        ours_du <= theirs_du + (64 << 10) && ours_du < 2 << 20,
        "sparse.img: {ours_du} bytes allocated in the copy, {theirs_du} in cp -a's \
         (128 KiB of data in 16 MiB)"
    );
    // The odd names, byte for byte.
    for name in [
        &b"new\nline"[..],
        b"back\\slash",
        b"caf\xe9",
        b"dir-\xff\xfe/inner\nname",
    ] {
        assert_eq!(
            fs::read(at(&ours, name)).ok(),
            fs::read(at(&src, name)).ok(),
            "{}",
            show(name)
        );
    }
}

#[test]
fn a_tree_copied_from_ext4_to_xfs_is_its_source_as_cp_a_copies_it() {
    copy_matches_source_and_cp_a(test_name!(), "ext4", "xfs");
}

#[test]
fn a_tree_copied_from_xfs_to_btrfs_is_its_source_as_cp_a_copies_it() {
    copy_matches_source_and_cp_a(test_name!(), "xfs", "btrfs");
}

#[test]
fn a_tree_copied_from_btrfs_to_ext4_is_its_source_as_cp_a_copies_it() {
    copy_matches_source_and_cp_a(test_name!(), "btrfs", "ext4");
}

// ---------------------------------------------------------------------------------------
// 2. Incremental runs.

/// (inode, ctime) of every entry but directories (whose times each run sets again).
fn stamps(root: &Path) -> BTreeMap<Vec<u8>, (u64, i64, i64)> {
    entries(root)
        .into_iter()
        .filter(|(_, _, m)| !m.is_dir())
        .map(|(rel, _, m)| (rel, (m.ino(), m.ctime(), m.ctime_nsec())))
        .collect()
}

#[test]
fn a_second_run_copies_nothing_and_a_third_only_what_rsync_would() {
    let test = test_name!();
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "ext4", 256);
    let src = s.path("tree");
    build_tree(&src, 2);
    noatime(&s);
    noatime(&d);
    let dest = d.path("backup");
    assert_exit(&copy(&[arg(&src), arg(&dest)]), 0);
    let ours = dest.join("tree");
    let files = distinct_files(&src);
    assert_eq!(
        rsync_would(&src, &ours, &["-aHX"]),
        Vec::<String>::new(),
        "rsync -aHX sees nothing to do after the first run"
    );
    let before = stamps(&ours);

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(0, 0, files, 0, 0), "{}", stderr(&o));
    let line = count_line(&stderr(&o));
    assert!(
        line.contains("0 B written") && line.contains("0 links and special files, 0 hard links"),
        "nothing written, no link or node made again: {line}"
    );
    assert_eq!(
        stamps(&ours),
        before,
        "no file, link or node of the copy was touched (inode and ctime)"
    );

    // One file rewritten (same size), one only touched, one added.
    let rewritten = src.join("shared/inside.dat");
    let len = fs::metadata(&rewritten).unwrap().len() as usize;
    fs::write(&rewritten, Rng::new(99).bytes(len)).unwrap();
    let touched = src.join("deep/a/b/c/leaf.txt");
    let m = fs::metadata(&touched).unwrap();
    set_times(
        &touched,
        (m.atime(), m.atime_nsec()),
        (m.mtime() + 1, m.mtime_nsec()),
    );
    put(&src, b"deep/added.txt", b"new\n");
    let mut rsync_files: Vec<String> = rsync_would(&src, &ours, &["-aHX"])
        .into_iter()
        .filter(|l| l.starts_with(">f"))
        .collect();
    rsync_files.sort();
    assert_eq!(
        rsync_files.len(),
        3,
        "rsync's view of what changed: {rsync_files:?}"
    );
    assert_eq!(
        rsync_files
            .iter()
            .filter(|l| l.starts_with(">f+++"))
            .count(),
        1,
        "{rsync_files:?}"
    );

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(
        counts(&o),
        counts_of(1, 2, files - 2, 0, 0),
        "one new and two changed files, as rsync says: {rsync_files:?}\n{}",
        stderr(&o)
    );
    assert_same_tree(
        &snapshot(&ours, true),
        &snapshot(&src, true),
        "after the third run",
    );
    assert_eq!(
        rsync_would(&src, &ours, &["-aHX", "--checksum"]),
        Vec::<String>::new()
    );
}

#[test]
fn a_rerun_brings_over_mode_owner_and_xattr_changes_of_unchanged_files_as_rsync_does() {
    let test = test_name!();
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "xfs", 300);
    let src = s.path("src");
    put(&src, b"f1", b"one");
    put(&src, b"f2", b"two");
    put(&src, b"sub/f3", b"three");
    std::os::unix::fs::symlink("f1", src.join("link")).unwrap();
    run(Command::new("mknod").arg(src.join("special-fifo")).arg("p"));
    noatime(&s);
    noatime(&d);
    let dest = d.path("copy");
    assert_exit(&copy(&[arg(&src), arg(&dest)]), 0);
    let root = dest.join("src");

    // Metadata alone changes: content, size and mtime stay.
    set_mode(&src.join("f1"), 0o600);
    std::os::unix::fs::lchown(src.join("f2"), Some(1234), Some(5678)).unwrap();
    setfattr(&src.join("sub/f3"), "user.added", "later");
    set_mode(&src.join("special-fifo"), 0o600);
    std::os::unix::fs::lchown(src.join("link"), Some(42), Some(42)).unwrap();
    let todo = rsync_would(&src, &root, &["-aHX"]);
    assert!(
        todo.len() >= 5,
        "rsync -aHX sees the five changes: {todo:?}"
    );

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    let c = counts(&o);
    assert_eq!((c.copied, c.failed), (0, 0), "{}", stderr(&o));
    assert_same_tree(
        &snapshot(&root, true),
        &snapshot(&src, true),
        "after a rerun that follows chmod, chown and setfattr on the source",
    );
    assert_eq!(
        rsync_would(&src, &root, &["-aHX"]),
        Vec::<String>::new(),
        "rsync -aHX finds nothing left to do"
    );
}

// ---------------------------------------------------------------------------------------
// 3. Where things go, and what is refused.

#[test]
fn destinations_are_named_as_rsync_names_them_and_the_same_on_every_run() {
    let test = test_name!();
    if !require_tool(test, "rsync") {
        return;
    }
    let t = scratch!();
    let base = t.path();
    put(base, b"photos/a.jpg", b"a");
    put(base, b"photos/sub/b.jpg", b"bb");
    put(base, b"one.txt", b"1");
    put(base, b"two.txt", b"22");
    fs::create_dir_all(base.join("ours/existing")).unwrap();
    fs::create_dir_all(base.join("rsync/existing")).unwrap();
    let cases: [(&str, &[&str], &str); 7] = [
        ("a directory into a new DEST", &["photos"], "d1"),
        (
            "a directory's contents (trailing slash)",
            &["photos/"],
            "d2",
        ),
        ("a file to a new name", &["one.txt"], "d3"),
        ("a file into DEST/ (trailing slash)", &["one.txt"], "d4/"),
        ("files into a new DEST", &["one.txt", "two.txt"], "d5"),
        ("a directory and a file", &["photos", "one.txt"], "d6"),
        ("a directory into an existing DEST", &["photos"], "existing"),
    ];
    for round in ["first", "second"] {
        for (what, sources, dest) in cases {
            let o = output_within(
                copy_cmd()
                    .current_dir(base)
                    .args(sources)
                    .arg(format!("ours/{dest}")),
                RUN_LIMIT,
            );
            assert_exit(&o, 0);
            run(Command::new("rsync")
                .current_dir(base)
                .arg("-a")
                .args(sources)
                .arg(format!("rsync/{dest}")));
            let dest = dest.trim_end_matches('/');
            assert_eq!(
                layout(&base.join("ours").join(dest)),
                layout(&base.join("rsync").join(dest)),
                "{what}, {round} run: seekless copy {sources:?} DEST vs rsync -a"
            );
        }
    }
}

#[test]
fn a_destination_inside_its_source_is_refused_with_exit_2() {
    let t = scratch!();
    let src = t.path().join("src");
    put(&src, b"a", b"a");
    put(&src, b"sub/b", b"b");
    let link = t.path().join("link-into-src");
    std::os::unix::fs::symlink(src.join("sub"), &link).unwrap();
    let file = t.path().join("file");
    fs::write(&file, b"a file\n").unwrap();
    let before = layout(&src);

    let cases: Vec<(Vec<OsString>, &str)> = vec![
        (
            vec![src.clone().into(), src.join("sub/new").into()],
            "into itself",
        ),
        (vec![slash(&src), src.join("sub").into()], "into itself"),
        (vec![src.clone().into(), src.clone().into()], "into itself"),
        (
            vec![src.clone().into(), link.join("x").into()],
            "into itself",
        ),
        (
            vec![src.join("sub").into(), src.clone().into()],
            "into itself",
        ),
        (
            vec![
                src.join("a").into(),
                src.join("sub/b").into(),
                file.clone().into(),
            ],
            "is not a directory",
        ),
    ];
    for (args, says) in cases {
        let o = output_within(copy_cmd().args(&args), RUN_LIMIT);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert_eq!(layout(&src), before, "{args:?} changed the source");
        assert_eq!(fs::read(&file).unwrap(), b"a file\n", "{args:?}");
    }
}

#[test]
fn names_of_255_bytes_are_copied_as_cp_a_copies_them() {
    let test = test_name!();
    if !ready(test, &[]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "xfs", 300);
    let src = s.path("src");
    // NAME_MAX: 255 bytes, each of a file, a hard link to it, a symlink, a FIFO and a
    // directory.
    let long = |c: u8| vec![c; 255];
    put(&src, &long(b'f'), b"a file with a long name\n");
    fs::hard_link(at(&src, &long(b'f')), at(&src, &long(b'h'))).unwrap();
    std::os::unix::fs::symlink("target", at(&src, &long(b'l'))).unwrap();
    run(Command::new("mknod").arg(at(&src, &long(b'p'))).arg("p"));
    put(
        &src,
        &[long(b'd'), b"/inner".to_vec()].concat(),
        b"inside\n",
    );
    noatime(&s);
    noatime(&d);
    let want = snapshot(&src, true);

    let o = copy(&[os("--summary"), arg(&src), arg(&d.path("ours"))]);
    let ours = d.path("ours/src");
    fs::create_dir(d.path("theirs")).unwrap();
    run(Command::new("cp").arg("-a").arg(&src).arg(d.path("theirs")));
    assert_same_tree(
        &snapshot(&d.path("theirs/src"), true),
        &want,
        "cp -a copies them",
    );
    assert_exit(&o, 0);
    assert_same_tree(&snapshot(&ours, true), &want, "seekless copy");
}

// ---------------------------------------------------------------------------------------
// 6. Within one filesystem.

/// (extents, extents flagged shared) of a file, as `filefrag -v` lists them.
fn shared_extents(path: &Path) -> (usize, usize) {
    let out = run(Command::new("filefrag").arg("-v").arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text
        .lines()
        .map(str::trim_start)
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let shared = rows.iter().filter(|l| l.contains("shared")).count();
    (rows.len(), shared)
}

/// Copies within one `kind` filesystem and checks the method the summary names, the
/// content, and (by `filefrag`) whether blocks are shared; then again with `--no-clone`.
fn same_filesystem_case(test: &str, kind: &str, method: &str, shares: bool) {
    if !ready(test, &[]) {
        return;
    }
    let lfs = LoopFs::new(test, kind, size_for(kind));
    noatime(&lfs);
    let src = lfs.path("src");
    let names = flat_corpus(&src, 4, 1 << 20, 4 << 20, 11);
    sync();
    let dev = device_of(&src);

    let o = copy(&[os("--summary"), arg(&src), arg(&lfs.path("fast"))]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(4, 0, 0, 0, 0), "{}", stderr(&o));
    assert_eq!(
        methods(&o),
        vec![format!("{dev} {method}")],
        "{}",
        stderr(&o)
    );
    // Shared blocks are not "written": the counts say which is which.
    let line = count_line(&stderr(&o));
    if method == CLONED {
        assert!(
            line.contains("; 0 B written, ") && line.contains(" shared with the source (cloned)"),
            "{line}"
        );
    } else {
        assert!(
            !line.contains("; 0 B written") && !line.contains("shared"),
            "{line}"
        );
    }
    let root = lfs.path("fast/src");
    assert_diff_clean(&src, &root);
    assert_same_tree(
        &snapshot(&root, true),
        &snapshot(&src, true),
        &format!("within {kind}"),
    );
    sync();
    for name in &names {
        let (extents, shared) = shared_extents(&at(&root, name));
        assert!(extents > 0, "{}", show(name));
        if shares {
            assert_eq!(shared, extents, "{}: every extent shared", show(name));
        } else {
            assert_eq!(shared, 0, "{}: nothing shared on {kind}", show(name));
        }
    }

    let o = copy(&[
        os("--no-clone"),
        os("--summary"),
        arg(&src),
        arg(&lfs.path("slow")),
    ]);
    assert_exit(&o, 0);
    assert_eq!(
        methods(&o),
        vec![format!("{dev} {READ_WRITTEN}")],
        "{}",
        stderr(&o)
    );
    let root = lfs.path("slow/src");
    assert_diff_clean(&src, &root);
    sync();
    for name in &names {
        assert_eq!(
            shared_extents(&at(&root, name)).1,
            0,
            "{}: --no-clone shares nothing",
            show(name)
        );
    }
}

#[test]
fn within_ext4_a_sparse_file_keeps_its_holes_and_the_others_are_still_reported_copied_in_the_kernel()
 {
    let test = test_name!();
    if !ready(test, &[]) {
        return;
    }
    let lfs = LoopFs::new(test, "ext4", 256);
    noatime(&lfs);
    let src = lfs.path("src");
    fs::create_dir(&src).unwrap();
    let sparse = fs::File::create(src.join("a-sparse")).unwrap();
    sparse.write_all_at(b"the end", 8 << 20).unwrap();
    sparse.sync_all().unwrap();
    drop(sparse);
    let names = flat_corpus(&src, 3, 1 << 20, 1 << 20, 12);
    sync();
    // The sparse file first (in the order given, one worker), then three plain ones.
    let mut args = vec![
        os("-j"),
        os("1"),
        os("--locate"),
        os("given"),
        os("--summary"),
    ];
    let paths: Vec<PathBuf> = std::iter::once(src.join("a-sparse"))
        .chain(names.iter().map(|n| at(&src, n)))
        .collect();
    args.extend(paths.iter().map(|p| p.as_os_str()));
    let root = lfs.path("copy");
    args.push(arg(&root));
    let o = copy(&args);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(4, 0, 0, 0, 0), "{}", stderr(&o));
    assert_diff_clean(&src, &root);
    let allocated = du(&root.join("a-sparse"));
    assert!(
        allocated <= 64 << 10,
        "a-sparse: {allocated} bytes allocated"
    );
    // Three of the four files were copied in the kernel: the summary says so, whatever
    // else it says of the sparse one.
    let want = format!("{} {IN_KERNEL}", device_of(&src));
    assert!(
        methods(&o).contains(&want),
        "{want:?} among {:?}\n{}",
        methods(&o),
        stderr(&o)
    );
}

#[test]
fn within_btrfs_files_are_cloned_sharing_their_blocks() {
    same_filesystem_case(test_name!(), "btrfs", CLONED, true);
}

#[test]
fn within_xfs_files_are_cloned_sharing_their_blocks() {
    same_filesystem_case(test_name!(), "xfs", CLONED, true);
}

#[test]
fn within_ext4_files_are_copied_in_the_kernel() {
    same_filesystem_case(test_name!(), "ext4", IN_KERNEL, false);
}

/// Where `cp -a SOURCE DEST` (or `rsync -a`) puts things, for a fresh DEST: the sorted
/// relative names under DEST.
fn placed(tool: &str, cwd: &Path, source: &str, dest: &Path) -> Vec<String> {
    let _ = fs::remove_dir_all(dest);
    fs::create_dir(dest).unwrap();
    let o = match tool {
        "cp" => Command::new("cp")
            .arg("-a")
            .arg(source)
            .arg(dest)
            .current_dir(cwd)
            .output()
            .unwrap(),
        "rsync" => Command::new("rsync")
            .arg("-a")
            .arg(source)
            .arg(dest)
            .current_dir(cwd)
            .output()
            .unwrap(),
        _ => output_within(copy_cmd().arg(source).arg(dest).current_dir(cwd), RUN_LIMIT),
    };
    assert!(o.status.success(), "{tool} {source}: {}", stderr(&o));
    let mut names: Vec<String> = walk(dest)
        .into_iter()
        .map(|p| p.strip_prefix(dest).unwrap().display().to_string())
        .collect();
    names.sort();
    names
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        out.push(p.clone());
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}

#[test]
fn every_source_form_is_placed_as_cp_a_and_rsync_a_place_it() {
    let test = test_name!();
    if !require_tool(test, "cp") || !require_tool(test, "rsync") {
        return;
    }
    let t = scratch!();
    let p = t.path().join("p");
    put(&p, b"src/sub/f", b"f");
    put(&p, b"src/g", b"g");
    symlink("src", p.join("lnk")).unwrap();
    let dest = t.path().join("d");
    // (form, where it is run, which tool it is placed as). A trailing slash is rsync's
    // "contents of" (seekless follows rsync there; cp copies the directory itself).
    let cases = [
        ("src", "p", "cp"),
        ("src/", "p", "rsync"),
        ("src/.", "p", "cp"),
        ("src/./", "p", "cp"),
        ("src/sub/..", "p", "cp"),
        (".", "p/src", "cp"),
        ("./", "p/src", "cp"),
        ("..", "p/src/sub", "cp"),
        ("lnk", "p", "cp"),
        ("lnk/", "p", "rsync"),
        ("lnk/.", "p", "cp"),
    ];
    for (form, cwd, like) in cases {
        let cwd = t.path().join(cwd);
        let want = placed(like, &cwd, form, &dest);
        let got = placed("seekless", &cwd, form, &dest);
        assert_eq!(got, want, "{form} (from {}) as {like}", cwd.display());
    }
}
