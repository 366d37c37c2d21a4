//! `seekless order` against real filesystems and independent tools.
//!
//! Runs everywhere; the cases on real Linux filesystems (loop devices, `filefrag`,
//! FIBMAP, tmpfs) are marked.

#[cfg(target_os = "linux")]
use std::path::{Path, PathBuf};

use crate::common::*;

#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Listed {
    path: PathBuf,
    offset: Option<u64>,
    extents: u64,
    strategy: String,
    disk: String,
}

#[cfg(target_os = "linux")]
fn order_json(args: &[&std::ffi::OsStr]) -> (Vec<Listed>, std::process::Output) {
    let out = seekless()
        .arg("order")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Listed {
                path: PathBuf::from(v["path"].as_str().unwrap()),
                offset: v["offset"].as_u64(),
                extents: v["extents"].as_u64().unwrap(),
                strategy: v["strategy"].as_str().unwrap().to_string(),
                disk: v["disk"].as_str().unwrap().to_string(),
            }
        })
        .collect();
    (listed, out)
}

#[cfg(target_os = "linux")]
fn check_against_filefrag(fs: &str) {
    let test = format!("physical_order_matches_filefrag_on_{fs}");
    if !require_root(&test)
        || !require_tool(&test, &format!("mkfs.{fs}"))
        || !require_tool(&test, "filefrag")
    {
        return;
    }
    let lfs = LoopFs::new(&test, fs, 512);
    let names = write_corpus(&lfs.mnt, 80, 7);
    lfs.remount();
    let (listed, out) = order_json(&[lfs.mnt.as_os_str()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Every file exactly once.
    let mut seen: Vec<PathBuf> = listed
        .iter()
        .map(|l| l.path.strip_prefix(&lfs.mnt).unwrap().to_path_buf())
        .collect();
    seen.sort();
    let mut want = names.clone();
    want.sort();
    assert_eq!(seen, want);

    // One disk: the loop device; offsets never go backwards.
    let loopname = Path::new(&lfs.device)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let mut last = 0;
    let mut fragmented = 0;
    let mut located = 0;
    for l in &listed {
        assert_eq!(l.disk, loopname, "{l:?}");
        if let Some(off) = l.offset {
            assert!(off >= last, "offset went backwards at {l:?}");
            last = off;
            located += 1;
        }
        let (first, count) = filefrag(&l.path);
        if l.strategy == "fiemap" && count > 0 {
            assert_eq!(l.offset, first, "first extent of {}", l.path.display());
        }
        assert_eq!(l.extents, count, "extent count of {}", l.path.display());
        if count > 1 {
            fragmented += 1;
        }
        if l.path.ends_with("empty") {
            assert_eq!(l.offset, None);
            assert_eq!(l.extents, 0);
        }
    }
    assert!(located >= 80, "only {located} files located");
    assert!(
        fragmented >= 3,
        "the corpus should hold fragmented files, found {fragmented}"
    );
    // Unlocated files (empty ones) come after the located ones.
    let first_unlocated = listed.iter().position(|l| l.offset.is_none()).unwrap();
    assert!(listed[first_unlocated..].iter().all(|l| l.offset.is_none()));
}

#[test]
#[cfg(target_os = "linux")]
fn physical_order_matches_filefrag_on_ext4() {
    check_against_filefrag("ext4");
}

#[test]
#[cfg(target_os = "linux")]
fn physical_order_matches_filefrag_on_xfs() {
    check_against_filefrag("xfs");
}

#[test]
#[cfg(target_os = "linux")]
fn physical_order_matches_filefrag_on_btrfs() {
    check_against_filefrag("btrfs");
}

#[test]
#[cfg(target_os = "linux")]
fn fibmap_agrees_with_fiemap_when_forced() {
    use std::collections::HashMap;
    let test = "fibmap_agrees_with_fiemap_when_forced";
    if !require_root(test) || !require_tool(test, "mkfs.ext4") {
        return;
    }
    let lfs = LoopFs::new(test, "ext4", 256);
    write_corpus(&lfs.mnt, 20, 3);
    let (fiemap, _) = order_json(&[lfs.mnt.as_os_str()]);
    let (fibmap, out) = order_json(&[os("--locate"), os("fibmap"), lfs.mnt.as_os_str()]);
    assert!(out.status.success());
    let by_path: HashMap<_, _> = fibmap.iter().map(|l| (l.path.clone(), l)).collect();
    for l in &fiemap {
        let b = by_path[&l.path];
        assert_eq!(b.strategy, "fibmap");
        assert_eq!(b.offset, l.offset, "{}", l.path.display());
        assert_eq!(b.extents, l.extents, "{}", l.path.display());
    }
}

#[test]
#[cfg(target_os = "linux")]
fn tmpfs_falls_back_to_inode_order_and_lists_every_file() {
    let dir = scratch!("/dev/shm");
    let mut rng = Rng::new(11);
    let mut want = Vec::new();
    for i in 0..50 {
        let p = dir.path().join(format!("f{i}"));
        std::fs::write(&p, rng.bytes(1000)).unwrap();
        want.push(p);
    }
    let out = seekless()
        .args(["order", "--long", "--summary"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut inodes = Vec::new();
    let mut got = Vec::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols[4], "inode", "{line}");
        assert_eq!(cols[1], "-", "{line}");
        let p = PathBuf::from(cols[5]);
        inodes.push(std::os::unix::fs::MetadataExt::ino(
            &std::fs::metadata(&p).unwrap(),
        ));
        got.push(p);
    }
    assert!(
        inodes.windows(2).all(|w| w[0] <= w[1]),
        "not in inode order"
    );
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("tmpfs"), "{stderr}");
    assert!(stderr.contains("located by inode"), "{stderr}");
}

#[test]
fn other_orders_list_the_same_files() {
    let dir = scratch!();
    for name in ["c", "a", "b"] {
        std::fs::write(dir.path().join(name), name).unwrap();
    }
    let list = |by: &str| {
        let out = seekless()
            .args(["order", "--by", by])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let path = list("path");
    let d = |name: &str| dir.path().join(name).display().to_string();
    assert_eq!(path, format!("{}\n{}\n{}\n", d("a"), d("b"), d("c")));
    for by in ["physical", "inode", "given"] {
        let mut lines: Vec<String> = list(by).lines().map(String::from).collect();
        lines.sort();
        assert_eq!(lines.join("\n") + "\n", path, "--by {by}");
    }
}

/// A reader that stops early (`seekless order … | head`) ends the listing quietly, as
/// coreutils tools do, in every output format.
#[test]
fn a_closed_pipe_ends_the_listing_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let t = scratch!();
    for i in 0..2000 {
        std::fs::write(t.path().join(format!("file-{i:05}")), b"x").unwrap();
    }
    for format in [&[][..], &["--long"][..], &["--json"][..]] {
        let mut child = seekless()
            .arg("order")
            .args(format)
            .arg(t.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(first.contains("file-"), "{format:?}: {first}");
        // The reading end is closed here, with most of the listing still to come.
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.is_empty(), "{format:?}: {stderr}");
        assert!(out.status.success(), "{format:?}: {:?}", out.status);
    }
}

/// On a terminal (`script` gives the run one) a name is escaped as `ls -b` shows it; into a
/// pipe, and with `-0`, it is written as it is.
#[test]
#[cfg(target_os = "linux")]
fn names_are_escaped_on_a_terminal_and_exact_into_a_pipe() {
    use std::os::unix::ffi::OsStrExt;
    let test = "names_are_escaped_on_a_terminal_and_exact_into_a_pipe";
    if !require_tool(test, "script") {
        return;
    }
    let t = scratch!();
    let name = std::ffi::OsStr::from_bytes(b"a\x1b[2J\x1b]0;x\x07b");
    std::fs::write(t.path().join(name), b"x").unwrap();
    let bin = env!("CARGO_BIN_EXE_seekless");
    let o = run(std::process::Command::new("script")
        .args(["-qec"])
        .arg(format!("{bin} order {}", t.path().display()))
        .arg("/dev/null"));
    let seen = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        seen.contains(&format!("{}/a\\033[2J\\033]0;x\\ab", t.path().display())),
        "{seen:?}"
    );
    let o = run(seekless().arg("order").arg(t.path()));
    let mut want = t.path().join(name).as_os_str().as_bytes().to_vec();
    want.push(b'\n');
    assert_eq!(o.stdout, want);
}
