//! Disk pools (issue 34, item 3): filesystems over several disks are swept per disk.
//!
//! - mergerfs (FUSE) over two ext4 filesystems on loop devices: each file is located by
//!   FIEMAP on its branch (where `user.mergerfs.fullpath` says it is), swept with that
//!   branch's disk, and read through the pool's path.
//!
//! Needs root (loop devices, mount), `mergerfs`, `filefrag`, `sha256sum`.

use std::path::{Path, PathBuf};

use crate::common::*;

/// One line of `seekless order --json`.
#[derive(Debug)]
struct Listed {
    path: PathBuf,
    disk: String,
    offset: Option<u64>,
    strategy: String,
}

/// `seekless order --json --summary` of `inputs`: the files listed, and the summary.
fn order(inputs: &[&Path]) -> (Vec<Listed>, String) {
    let out = run(seekless()
        .args(["order", "--json", "--summary"])
        .args(inputs));
    let listed = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Listed {
                path: PathBuf::from(v["path"].as_str().unwrap()),
                disk: v["disk"].as_str().unwrap().to_string(),
                offset: v["offset"].as_u64(),
                strategy: v["strategy"].as_str().unwrap().to_string(),
            }
        })
        .collect();
    (listed, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `seekless hash --algo sha256` of `inputs`: (path, digest) per file.
fn hashes(inputs: &[&Path]) -> Vec<(PathBuf, String)> {
    let out = run(seekless().args(["hash", "--algo", "sha256"]).args(inputs));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (digest, path) = l.split_once("  ").unwrap();
            (PathBuf::from(path), digest.to_string())
        })
        .collect()
}

/// The loop device's name (`loop3` of `/dev/loop3`).
fn disk_name(fs: &LoopFs) -> String {
    Path::new(&fs.device)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn mergerfs_files_are_located_on_their_branch_and_swept_with_its_disk() {
    let test = "mergerfs_files_are_located_on_their_branch_and_swept_with_its_disk";
    if !require_root(test) || !require_tools(test, &["mergerfs", "filefrag", "sha256sum"]) {
        return;
    }
    let branches = [
        LoopFs::new(&format!("{test}-a"), "ext4", 64),
        LoopFs::new(&format!("{test}-b"), "ext4", 64),
    ];
    // Files written straight to the branches, odd ones to the first and even ones to the
    // second, in shuffled order: where each lies is known, and differs from name order.
    let mut rng = Rng::new(34);
    let mut names: Vec<usize> = (0..16).collect();
    rng.shuffle(&mut names);
    for &i in &names {
        let branch = &branches[i % 2];
        let len = 4096 + rng.below(200_000) as usize;
        let data = rng.bytes(len);
        std::fs::write(branch.path(format!("f{i:02}")), data).unwrap();
    }
    run(&mut std::process::Command::new("sync"));
    let dir = scratch_dir(test);
    let pool = dir.path().join("pool");
    let _mounted = Mounted::mergerfs(&pool, &[&branches[0].mnt, &branches[1].mnt]);

    let (listed, summary) = order(&[&pool]);
    assert_eq!(listed.len(), 16, "{listed:#?}\n{summary}");
    for l in &listed {
        let name = l.path.file_name().unwrap().to_str().unwrap();
        // The user's path is what is listed (and read).
        assert_eq!(l.path, pool.join(name));
        let i: usize = name[1..].parse().unwrap();
        let branch = &branches[i % 2];
        assert_eq!(l.disk, disk_name(branch), "{l:?}");
        assert_eq!(l.strategy, "fiemap", "{l:?}\n{summary}");
        // Where filefrag puts the branch's file (a loop device over a file: offsets on
        // the device are offsets on the disk).
        let (first, _) = filefrag(&branch.path(name));
        assert_eq!(l.offset, first, "{l:?}");
    }
    // Each disk's files in offset order, the disks one after another: two sweeps.
    for disk in [disk_name(&branches[0]), disk_name(&branches[1])] {
        let offsets: Vec<u64> = listed
            .iter()
            .filter(|l| l.disk == disk)
            .map(|l| l.offset.unwrap())
            .collect();
        assert_eq!(offsets.len(), 8, "{disk}: {listed:#?}");
        assert!(offsets.is_sorted(), "{disk}: {offsets:?}");
    }
    assert!(
        summary.contains(&format!("ext4 on {}", disk_name(&branches[0])))
            && summary.contains(&format!("ext4 on {}", disk_name(&branches[1]))),
        "{summary}"
    );

    // Read through the pool: what sha256sum reads there.
    let hashed = hashes(&[&pool]);
    assert_eq!(hashed.len(), 16);
    for (path, digest) in hashed {
        assert_eq!(digest, sha256sum(&path), "{}", path.display());
    }
}
