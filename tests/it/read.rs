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
fn read_all(
    paths: &[PathBuf],
    want: &[Vec<u8>],
    opts: ReadOptions,
    disk: Option<seekless::DiskKind>,
) -> seekless::read::ReadStats {
    use std::io::Read;
    let mut plan_opts = PlanOptions::default();
    plan_opts.disk = disk;
    let plan = Arc::new(Plan::build(paths, &plan_opts, &Quiet));
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
    // A loop device in memory answers in microseconds: measured, it is no seeking disk
    // whatever it reports (see the next test). Taken for one here.
    let seeking = Some(seekless::DiskKind::Seeking);
    let stats = read_all(&paths, &want, ReadOptions::default(), seeking);
    assert_eq!(stats.gap_waits, 1 + wide_gaps, "{placed:?}");

    fs.remount();
    let mut off = ReadOptions::default();
    off.gap_barrier = 0;
    assert_eq!(
        read_all(&paths, &want, off, seeking).gap_waits,
        0,
        "barrier off"
    );

    fs.remount();
    fs.set_queue("rotational", "0");
    let stats = read_all(&paths, &want, ReadOptions::default(), None);
    assert_eq!(stats.gap_waits, 0, "no waits on a non-rotational disk");
}

/// A disk is known by measuring it, not by its `rotational` flag: a loop device in memory
/// that reports rotational answers direct reads in microseconds, so it is read as a
/// solid-state disk (no waits at gaps), and `--summary` says so; `--disk hdd` overrides
/// the measurement, and `--disk ssd` the flag.
#[test]
fn a_disk_reporting_rotational_that_answers_in_microseconds_is_read_as_solid_state() {
    let test = "a_disk_reporting_rotational_that_answers_in_microseconds_is_read_as_solid_state";
    if !require_root(test) || !require_tool(test, "mkfs.ext4") {
        return;
    }
    let fs = LoopFs::new(test, "ext4", 64);
    let mut rng = Rng::new(9);
    for i in 0..30 {
        std::fs::write(fs.path(format!("f{i:02}")), rng.bytes(16 << 10)).unwrap();
    }
    fs.remount();
    fs.set_queue("rotational", "1");
    let name = Path::new(&fs.device)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let summary = |disk: &str| {
        let out = run(seekless()
            .args(["hash", "--summary", "--disk", disk])
            .arg(&fs.mnt));
        assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 30);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let auto = summary("auto");
    assert!(
        auto.contains(&format!("seekless: {name}: reports rotational, measured "))
            && auto.contains("random reads (median of ")
            && auto.contains(": treated as solid-state\n"),
        "{auto}"
    );
    assert!(auto.contains("waited at 0 gaps"), "{auto}");
    let hdd = summary("hdd");
    assert!(
        hdd.contains(&format!(
            "seekless: {name}: reports rotational, kind chosen by the caller: treated as seeking\n"
        )),
        "{hdd}"
    );
    // The first request of a sweep follows a seek: a seeking disk always waits there.
    assert!(!hdd.contains("waited at 0 gaps"), "{hdd}");

    // The library says the same, and measures each disk once per run (the plans built
    // with one set of options).
    let plan = Arc::new(Plan::build(
        std::slice::from_ref(&fs.mnt),
        &PlanOptions::default(),
        &Quiet,
    ));
    let mut verdicts = Vec::new();
    for _ in 0..2 {
        let reader = Reader::new(plan.clone(), ReadOptions::default());
        let [verdict] = reader.disks() else {
            panic!("one disk: {:?}", reader.disks())
        };
        verdicts.push(verdict.clone());
        assert_eq!(verdict.disk, name);
        assert_eq!(verdict.reported, Some(true));
        assert_eq!(verdict.kind, seekless::DiskKind::SolidState, "{verdict}");
        assert!(
            matches!(verdict.basis, seekless::DiskBasis::Measured { reads, .. } if reads >= 3),
            "{verdict}"
        );
    }
    assert_eq!(verdicts[0], verdicts[1], "measured once: the same figures");
    fs.set_queue("rotational", "0");
    let mut ssd = PlanOptions::default();
    ssd.disk = Some(seekless::DiskKind::SolidState);
    let plan = Arc::new(Plan::build(std::slice::from_ref(&fs.mnt), &ssd, &Quiet));
    let reader = Reader::new(plan, ReadOptions::default());
    assert_eq!(reader.disks()[0].basis, seekless::DiskBasis::Chosen);
}

/// On a disk known before planning not to seek — it reports non-rotational and its device
/// answers direct reads in microseconds — the reading jobs do not locate files (no extent
/// map per file: any order reads as fast), and say so; `--locate` and `--disk hdd` still
/// locate, `order` always does (disk order is what it prints), and a disk that reports
/// rotational is located whatever it measures.
#[test]
fn a_disk_known_not_to_seek_is_read_without_locating_files() {
    let test = "a_disk_known_not_to_seek_is_read_without_locating_files";
    if !require_root(test) || !require_tool(test, "mkfs.ext4") || !require_tool(test, "b3sum") {
        return;
    }
    let fs = LoopFs::new(test, "ext4", 64);
    let mut rng = Rng::new(11);
    for i in 0..40 {
        std::fs::write(fs.path(format!("f{i:02}")), rng.bytes(16 << 10)).unwrap();
    }
    fs.remount();
    fs.set_queue("rotational", "0");
    let sorted = |out: &[u8]| {
        let mut lines: Vec<String> = String::from_utf8_lossy(out)
            .lines()
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    };
    let mut names: Vec<PathBuf> = (0..40).map(|i| fs.path(format!("f{i:02}"))).collect();
    names.sort();
    let want = sorted(&run(Command::new("b3sum").args(&names)).stdout);
    let hash = |args: &[&str]| {
        let out = run(seekless()
            .args(["hash", "--algo", "blake3", "--summary"])
            .args(args)
            .arg(&fs.mnt));
        assert_eq!(sorted(&out.stdout), want, "the same sums as b3sum");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let located = "40 files located by fiemap\n";
    let not_located = "seekless:   not located: a disk that does not seek";

    let auto = hash(&[]);
    assert!(
        auto.contains("(non-rotational): 40 files located by inode\n")
            && auto.contains(not_located),
        "{auto}"
    );
    for args in [&["--locate", "fiemap"][..], &["--disk", "hdd"]] {
        let err = hash(args);
        assert!(
            err.contains(located) && !err.contains(not_located),
            "{args:?}: {err}"
        );
    }
    let order = run(seekless().args(["order", "--summary"]).arg(&fs.mnt));
    let err = String::from_utf8_lossy(&order.stderr);
    assert!(err.contains(located) && !err.contains(not_located), "{err}");

    // The flag and the measurement must agree: reporting rotational, it is located.
    fs.set_queue("rotational", "1");
    let err = hash(&[]);
    assert!(err.contains(located) && !err.contains(not_located), "{err}");
}
