//! The reader against the kernel: what its prefetches actually bring into the page cache.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use seekless::read::{ReadOptions, Reader};
use seekless::{Plan, PlanOptions, Quiet};

/// Bytes of `path` in the page cache, from util-linux `fincore`.
fn cached_bytes(path: &Path) -> u64 {
    let out = run(Command::new("fincore")
        .args(["--bytes", "--noheadings", "--output", "RES"])
        .arg(path));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn set_queue(device: &str, name: &str, value: &str) {
    let dev = Path::new(device).file_name().unwrap().to_str().unwrap();
    let knob = PathBuf::from(format!("/sys/block/{dev}/queue/{name}"));
    std::fs::write(&knob, value).unwrap_or_else(|e| panic!("{}: {e}", knob.display()));
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
    let fs = LoopFs::new("ext4", 64);
    let mut rng = Rng::new(21);
    std::fs::write(fs.path("a"), rng.bytes(8192)).unwrap();
    let big = fs.path("b");
    let size = 2 << 20;
    std::fs::write(&big, rng.bytes(size)).unwrap();
    fs.remount();
    set_queue(&fs.device, "max_sectors_kb", "128");
    set_queue(&fs.device, "read_ahead_kb", "128");

    let plan = Arc::new(Plan::build(&[fs.path("")], &PlanOptions::default(), &Quiet));
    assert_eq!(plan.summary().files, 2);
    assert_eq!(
        plan.filesystems()[0].filesystem.max_prefetch,
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
