//! The walk on real filesystems: what it lists, and directory read-ahead through the block
//! device.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;

/// Fills `dir` with `n` one-byte files with the longest names (about 4 entries per 1 KiB
/// block), so it spans many blocks for few inodes: the inode-table reads, which vary
/// from run to run with the walk threads' timing, stay few.
fn fill_dir(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::write(dir.join(format!("{i:04}-{}", "n".repeat(250))), b"x").unwrap();
    }
}

/// A cold `seekless order --summary` of `dir` (remounted first), with the device's read
/// requests it caused.
fn cold_order(fs: &LoopFs, dir: &Path, extra: &[&str]) -> (Output, u64) {
    fs.remount();
    let before = fs.read_requests();
    let out = run(seekless().args(["order", "--summary"]).args(extra).arg(dir));
    (out, fs.read_requests() - before)
}

fn summary_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find(|l| l.starts_with("seekless: walk+locate "))
        .unwrap_or_else(|| panic!("no walk+locate line in {err}"))
        .to_string()
}

/// ext4 reads an indexed directory one block at a time, each read waiting for the one
/// before. On a rotational disk, with the device readable, seekless asks for a large
/// directory's blocks in one request first: the same files are listed in the same order
/// with far fewer read requests, also when the directory is longer than one
/// `readahead(2)` call reads. Not for one-block directories, not with
/// `--no-dir-readahead`, and not on a non-rotational disk.
#[test]
fn large_directories_on_ext4_are_read_ahead_in_one_request_on_rotational_disks() {
    let test = "large_directories_on_ext4_are_read_ahead_in_one_request_on_rotational_disks";
    if !require_root(test) || !require_tool(test, "mkfs.ext4") {
        return;
    }
    // Counts device reads: no other test may drop the page cache meanwhile.
    let _cache = page_cache_watched();
    let fs = LoopFs::new(test, "ext4", 64);
    let data = fs.path("data");
    let big = data.join("big");
    fill_dir(&big, 600); // mkfs picks 1 KiB blocks this small
    std::fs::create_dir_all(data.join("small")).unwrap();
    for i in 0..3 {
        std::fs::write(data.join("small").join(format!("s{i}")), b"y").unwrap();
    }
    let dir_kib = std::fs::metadata(&big).unwrap().len() / 1024;
    assert!(
        dir_kib > 128,
        "the big directory should span several 64 KiB read-ahead pieces: {dir_kib} KiB"
    );
    sh("sync");

    fs.set_queue("rotational", "1");
    // One readahead(2) call then reads at most 64 KiB, less than the directory: the
    // read-ahead must ask in pieces.
    fs.set_queue("max_sectors_kb", "64");
    fs.set_queue("read_ahead_kb", "64");
    let (ahead, ahead_reads) = cold_order(&fs, &data, &[]);
    let line = summary_line(&ahead);
    assert!(
        line.ends_with("; 1 of 3 directories read ahead"),
        "only the big directory is read ahead: {line}"
    );
    let (plain, plain_reads) = cold_order(&fs, &data, &["--no-dir-readahead"]);
    assert!(
        !summary_line(&plain).contains("read ahead"),
        "{}",
        summary_line(&plain)
    );
    assert_eq!(ahead.stdout, plain.stdout, "same files in the same order");
    assert_eq!(String::from_utf8_lossy(&ahead.stdout).lines().count(), 603);
    eprintln!(
        "{dir_kib} KiB directory: {ahead_reads} read requests with read-ahead, {plain_reads} without"
    );
    assert!(
        ahead_reads * 4 <= plain_reads,
        "{dir_kib} KiB directory: {ahead_reads} read requests with read-ahead, \
         {plain_reads} without"
    );

    fs.set_queue("rotational", "0");
    let (ssd, _) = cold_order(&fs, &data, &[]);
    assert!(
        !summary_line(&ssd).contains("read ahead"),
        "not on a non-rotational disk: {}",
        summary_line(&ssd)
    );
    assert_eq!(ssd.stdout, plain.stdout);
}

/// XFS keeps directory blocks in its own buffer cache, not the block device's: reading
/// them through the device would be a second, wasted read, so it is not done.
#[test]
fn directories_on_xfs_are_not_read_ahead_through_the_device() {
    let test = "directories_on_xfs_are_not_read_ahead_through_the_device";
    if !require_root(test) || !require_tool(test, "mkfs.xfs") {
        return;
    }
    // Counts device reads: no other test may drop the page cache meanwhile.
    let _cache = page_cache_watched();
    let fs = LoopFs::new(test, "xfs", 300);
    let big = fs.path("big");
    fill_dir(&big, 600);
    assert!(std::fs::metadata(&big).unwrap().len() > 4096);
    sh("sync");
    fs.set_queue("rotational", "1");
    let (out, _) = cold_order(&fs, &big, &[]);
    let line = summary_line(&out);
    assert!(!line.contains("read ahead"), "{line}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 600);
}

/// The walk lists directories itself (`getdents64`), taking each entry's type from the
/// directory where it is given and asking the entry (`lstat`) where it is not. On ext4
/// with and without file types in its directories, `order --by given` prints exactly what
/// `find -type f` prints, in the same order: regular files only (no FIFO, symlink or
/// directory), empty and non-UTF-8 names too, across directories too large for one
/// listing call.
#[test]
fn the_walk_lists_what_find_lists_with_and_without_types_in_directories() {
    let test = "the_walk_lists_what_find_lists_with_and_without_types_in_directories";
    if !require_root(test) || !require_tool(test, "mkfs.ext4") || !require_tool(test, "find") {
        return;
    }
    for kind in ["ext4", "ext4-nofiletype"] {
        let fs = LoopFs::new(test, kind, 64);
        let root = fs.path("tree");
        // 2,000 names of ~60 bytes: more than one 32 KiB listing call.
        fill_names(&root.join("many"), 2000);
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/deep"), b"deep").unwrap();
        std::fs::write(root.join("a/empty"), b"").unwrap();
        use std::os::unix::ffi::OsStrExt;
        let odd = std::ffi::OsStr::from_bytes(b"latin-1 \xe9t\xe9");
        std::fs::write(root.join("a").join(odd), b"x").unwrap();
        std::os::unix::fs::symlink("b/deep", root.join("a/link")).unwrap();
        run(Command::new("mkfifo").arg(root.join("a/fifo")));
        fs.remount();

        let find = run(Command::new("find")
            .arg(&root)
            .args(["-type", "f", "-print0"]));
        let out = run(seekless().args(["order", "--by", "given", "-0"]).arg(&root));
        let names = |b: &[u8]| b.split(|&c| c == 0).filter(|n| !n.is_empty()).count();
        assert_eq!(names(&find.stdout), 2000 + 3, "{kind}: find's count");
        assert!(
            out.stdout == find.stdout,
            "{kind}: seekless order --by given differs from find -type f:\n{}\n---\n{}",
            String::from_utf8_lossy(&out.stdout[..out.stdout.len().min(400)]),
            String::from_utf8_lossy(&find.stdout[..find.stdout.len().min(400)]),
        );
    }
}

/// Fills `dir` with `n` empty files named `NNNN-` and 55 more characters.
fn fill_names(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        std::fs::write(dir.join(format!("{i:04}-{}", "m".repeat(55))), b"").unwrap();
    }
}
