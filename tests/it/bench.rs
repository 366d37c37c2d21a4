//! `seekless bench`: every contender reads every byte; JSON, plot and exit codes. No timing
//! assertions.

use std::path::Path;

use crate::common::*;
use serde_json::Value;

const CONTENDERS: [&str; 4] = ["given", "inode", "physical-single", "physical"];

fn total_size(dir: &Path, names: &[std::path::PathBuf]) -> u64 {
    names
        .iter()
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .sum()
}

fn bench_json(args: &[&std::ffi::OsStr]) -> (Value, String) {
    let out = run(seekless().arg("bench").arg("--json").args(args));
    let json: Value = serde_json::from_slice(&out.stdout).expect("bench --json is JSON");
    (json, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn contender<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["contenders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no contender {name} in {json}"))
}

fn assert_read_everything(json: &Value, files: usize, bytes: u64) {
    for name in CONTENDERS {
        let c = contender(json, name);
        assert_eq!(c["files"], files as u64, "{name}: {c}");
        assert_eq!(c["bytes"], bytes, "{name}: {c}");
        assert_eq!(c["errors"], 0, "{name}: {c}");
    }
    assert_eq!(json["files"], files as u64);
    assert_eq!(json["bytes"], bytes);
    for row in [
        "given_secs",
        "lookup_secs",
        "sort_secs",
        "read_secs",
        "total_secs",
        "ratio",
    ] {
        assert!(json["origin"][row].is_number(), "origin row {row}: {json}");
    }
}

#[test]
fn every_contender_reads_every_file_with_eviction() {
    let dir = scratch!();
    let names = write_corpus(dir.path(), 30, 5);
    let total = total_size(dir.path(), &names);
    let (json, stderr) = bench_json(&[os("--cold"), os("evict"), dir.path().as_os_str()]);
    assert_eq!(json["cold"], "evict");
    assert!(stderr.contains("metadata"), "no note on stderr: {stderr}");
    assert_read_everything(&json, names.len(), total);
}

#[test]
fn reps_report_every_run() {
    let dir = scratch!();
    let names = write_corpus(dir.path(), 10, 6);
    let total = total_size(dir.path(), &names);
    let (json, _) = bench_json(&[
        os("--cold"),
        os("warm"),
        os("--reps"),
        os("3"),
        dir.path().as_os_str(),
    ]);
    assert_eq!(json["reps"], 3);
    for name in CONTENDERS {
        assert_eq!(
            contender(&json, name)["runs_total_secs"]
                .as_array()
                .unwrap()
                .len(),
            3
        );
    }
    assert_read_everything(&json, names.len(), total);
}

#[test]
fn markdown_has_the_origin_rows() {
    let dir = scratch!();
    write_corpus(dir.path(), 5, 7);
    let out = run(seekless().args(["bench", "--cold", "warm"]).arg(dir.path()));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "| contender |",
        "| physical-single |",
        "Files scanned",
        "Time reading in filesystem (given) order",
        "Time reading position data",
        "Time sorting",
        "Time reading in sorted order",
        "Performance increase",
        "Ratio",
    ] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
}

#[test]
fn plot_writes_an_svg_with_two_series() {
    let dir = scratch!();
    write_corpus(dir.path(), 20, 8);
    let svg = dir.path().join("map.svg");
    run(seekless()
        .args(["bench", "--cold", "evict", "--plot"])
        .arg(&svg)
        .arg(dir.path().join("d0"))
        .arg(dir.path().join("d1")));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg") || text.starts_with("<?xml"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("</svg>"));
    assert_eq!(text.matches("class=\"series\"").count(), 2, "{text}");
    assert!(text.contains("data-series=\"given\""));
    assert!(text.contains("data-series=\"physical\""));
}

#[test]
fn a_missing_input_is_named_once_and_exits_1() {
    let dir = scratch!();
    std::fs::write(dir.path().join("a"), b"some bytes").unwrap();
    let missing = dir.path().join("no-such-file");
    let out = seekless()
        .args(["bench", "--json", "--cold", "warm"])
        .arg(dir.path().join("a"))
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("no-such-file").count(), 1, "{stderr}");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["errors"], 1);
    assert_eq!(contender(&json, "physical")["files"], 1);
}

#[test]
fn physical_contender_uses_fiemap_on_ext4() {
    let test = "physical_contender_uses_fiemap_on_ext4";
    if !require_root(test) || !require_tool(test, "mkfs.ext4") {
        return;
    }
    // Drops the whole page cache: not while another test measures it.
    let _cache = page_cache_dropped();
    let lfs = LoopFs::new(test, "ext4", 512);
    let names = write_corpus(&lfs.mnt, 40, 9);
    let total = total_size(&lfs.mnt, &names);
    lfs.remount();
    let (json, _) = bench_json(&[lfs.mnt.as_os_str()]);
    assert_eq!(json["cold"], "drop-caches");
    assert_read_everything(&json, names.len(), total);
    for name in ["physical-single", "physical"] {
        let fs = &contender(&json, name)["filesystems"];
        assert_eq!(fs.as_array().unwrap().len(), 1, "{fs}");
        assert_eq!(fs[0]["kind"], "ext4", "{fs}");
        assert_eq!(fs[0]["strategy"], "fiemap", "{fs}");
    }
    assert_eq!(
        contender(&json, "given")["filesystems"][0]["strategy"],
        "given"
    );
    assert_eq!(
        contender(&json, "inode")["filesystems"][0]["strategy"],
        "inode"
    );
}
