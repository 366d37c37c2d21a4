//! The reader against the kernel: what its prefetches actually bring into the page cache.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use seekless::read::{ReadOptions, Reader};
use seekless::{Plan, PlanOptions, Quiet};

/// Bytes of `path` in the page cache, from util-linux `fincore`.
fn cached_bytes(path: &Path) -> u64 {
    let out = run(Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "RES"])
        .arg(path));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Linux caps one readahead(2) call at max(max_sectors_kb, read_ahead_kb) and drops the
/// rest without an error; a file larger than that must still be prefetched whole, or its
/// tail is read late, when the consumer reaches it, and the head seeks back for it.
#[test]
fn files_larger_than_one_readahead_call_are_prefetched_whole() {
    let test = "files_larger_than_one_readahead_call_are_prefetched_whole";
    if !require_root(test) || !require_tool(test, "mkfs.ext4") || !require_tool(test, "fincore") {
        return;
    }
    // Counts what is cached: no other test may drop the page cache meanwhile.
    let _cache = page_cache_watched();
    let fs = LoopFs::new(test, "ext4", 64);
    let mut rng = Rng::new(21);
    std::fs::write(fs.path("a"), rng.bytes(8192)).unwrap();
    let big = fs.path("b");
    let size = 2 << 20;
    std::fs::write(&big, rng.bytes(size)).unwrap();
    fs.remount();
    fs.set_queue("max_sectors_kb", "128");
    fs.set_queue("read_ahead_kb", "128");

    let plan = Arc::new(Plan::build(&[fs.path("")], &PlanOptions::default(), &Quiet));
    assert_eq!(plan.summary().files, 2);
    assert_eq!(
        plan.filesystems()[0].max_prefetch,
        Some(128 * 1024),
        "the cap read from sysfs"
    );
    assert_eq!(cached_bytes(&big), 0, "cold after the remount");

    let mut reader = Reader::new(plan, ReadOptions::default());
    // Take the first file and read nothing: the sweep runs ahead and prefetches `b`.
    let _first = reader.next().unwrap().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut cached = cached_bytes(&big);
    while cached < size as u64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        cached = cached_bytes(&big);
    }
    assert_eq!(
        cached, size as u64,
        "prefetch brought only {cached} of {size} bytes of a file larger than one call"
    );
}

/// Bytes of `path` on its device as (first byte, length) from `filefrag -v`, for a file of
/// one extent.
fn placement(path: &Path) -> (u64, u64) {
    let (first, extents) = filefrag(path);
    assert_eq!(extents, 1, "{} should be one extent", path.display());
    let len = std::fs::metadata(path).unwrap().len().div_ceil(4096) * 4096;
    (first.expect("located"), len)
}

/// Reads `paths` with `opts` and checks every byte; returns the reader's statistics.
fn read_all(paths: &[PathBuf], want: &[Vec<u8>], opts: ReadOptions) -> seekless::read::ReadStats {
    use std::io::Read;
    let plan = Arc::new(Plan::build(paths, &PlanOptions::default(), &Quiet));
    assert_eq!(plan.summary().files, paths.len() as u64);
    let mut reader = Reader::new(plan, opts);
    let mut seen = 0;
    for file in reader.by_ref() {
        let mut file = file.unwrap();
        let i = paths
            .iter()
            .position(|p| *p == *file.planned().entry.path)
            .unwrap();
        let mut got = Vec::new();
        file.read_to_end(&mut got).unwrap();
        file.finish().unwrap();
        assert!(got == want[i], "{} read back wrong", paths[i].display());
        seen += 1;
    }
    assert_eq!(seen, paths.len());
    reader.stats()
}

/// On a rotational disk the sweep lets the first request past a wide gap be served
/// before prefetching further (so a reordering drive cannot land mid-region and leave the
/// region's start for later); it waits at the first file and at every gap of at least
/// `gap_barrier`, as `filefrag` places the files, and never on a non-rotational disk or
/// with the barrier off.
#[test]
fn the_sweep_waits_at_the_first_file_and_at_each_wide_gap_on_rotational_disks() {
    let test = "the_sweep_waits_at_the_first_file_and_at_each_wide_gap_on_rotational_disks";
    if !require_root(test) || !require_tool(test, "mkfs.ext4") || !require_tool(test, "filefrag") {
        return;
    }
    // Counts what is cached: no other test may drop the page cache meanwhile.
    let _cache = page_cache_watched();
    let fs = LoopFs::new(test, "ext4", 64);
    let mut rng = Rng::new(5);
    // 40 files of 64 KiB written one after the other lie one after the other; reading
    // only some of them leaves gaps of the unread ones between (about 1 MiB, 512 KiB and
    // 448 KiB here, all wider than the 128 KiB barrier).
    let read = [0, 1, 2, 20, 21, 30, 38];
    let (mut paths, mut want) = (Vec::new(), Vec::new());
    for i in 0..40 {
        let bytes = rng.bytes(64 << 10);
        let path = fs.path(format!("f{i:02}"));
        std::fs::write(&path, &bytes).unwrap();
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        if read.contains(&i) {
            paths.push(path);
            want.push(bytes);
        }
    }
    let barrier = ReadOptions::default().gap_barrier;
    let mut placed: Vec<(u64, u64)> = paths.iter().map(|p| placement(p)).collect();
    placed.sort();
    let wide_gaps = placed
        .windows(2)
        .filter(|w| w[1].0.saturating_sub(w[0].0 + w[0].1) >= barrier)
        .count() as u64;
    assert!(
        wide_gaps >= 2,
        "unread files should leave wide gaps: {placed:?}"
    );

    fs.remount();
    fs.set_queue("rotational", "1");
    let stats = read_all(&paths, &want, ReadOptions::default());
    assert_eq!(stats.gap_waits, 1 + wide_gaps, "{placed:?}");

    fs.remount();
    let mut off = ReadOptions::default();
    off.gap_barrier = 0;
    assert_eq!(read_all(&paths, &want, off).gap_waits, 0, "barrier off");

    fs.remount();
    fs.set_queue("rotational", "0");
    let stats = read_all(&paths, &want, ReadOptions::default());
    assert_eq!(stats.gap_waits, 0, "no waits on a non-rotational disk");
}
