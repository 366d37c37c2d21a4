//! Disk pools (issue 34, item 3): filesystems over several disks are swept per disk.
//!
//! - mergerfs (FUSE) over two ext4 filesystems on loop devices: each file is located by
//!   FIEMAP on its branch (where `user.mergerfs.fullpath` says it is), swept with that
//!   branch's disk, and read through the pool's path.
//!
//! - btrfs over two loop devices, one reporting rotational and one not: with `-d single`
//!   each file is swept with the member holding its first byte, at its offset there, as
//!   `btrfs-map-logical` maps `filefrag`'s address and as the bytes on the device show;
//!   each member is a disk of its own, measured on its own. With `-d raid0` the same, each
//!   file's stripes on the other member prefetched by that member's sweep. With
//!   `-d raid1` the filesystem stays one sweep in btrfs's address order, and says why;
//!   that sweep's disk stands for both members (`loop3+loop4`), whichever it was mounted
//!   from, and is judged member by member: mounted from the non-rotational one, it is
//!   still located, and without root (no measurement) it seeks for its rotational member.
//!
//! - what it costs: `strace` counts the btrfs ioctls of a run.
//!
//! Needs root (loop devices, mount), `mergerfs`, `mkfs.btrfs`, `btrfs-map-logical`,
//! `filefrag`, `sha256sum`, `dd`, `setpriv`, `strace`.

use std::path::{Path, PathBuf};

use crate::common::*;

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

/// Runs `seekless hash --algo sha256 --summary DIR`: every digest must be `sha256sum`'s,
/// `files` of them. Returns what it printed on stderr (the summary).
fn hashed_as_sha256sum_does(dir: &Path, files: usize) -> String {
    let out = run(seekless()
        .args(["hash", "--algo", "sha256", "--summary"])
        .arg(dir));
    sha256sums_of(&out, files)
}

/// What a run of `seekless hash --algo sha256` printed: every digest `sha256sum`'s,
/// `files` of them. Returns its stderr.
fn sha256sums_of(out: &std::process::Output, files: usize) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut hashed = 0;
    for line in stdout.lines() {
        let (digest, path) = line.split_once("  ").unwrap();
        assert_eq!(digest, sha256sum(Path::new(path)), "{path}");
        hashed += 1;
    }
    assert_eq!(hashed, files);
    String::from_utf8_lossy(&out.stderr).into_owned()
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

    let (listed, summary) = order_json([&pool]);
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

/// `btrfs-map-logical`'s first mirror of btrfs address `logical`: (device name, offset).
fn map_logical(logical: u64, device: &str) -> (String, u64) {
    let out = run(std::process::Command::new("btrfs-map-logical")
        .arg("-l")
        .arg(logical.to_string())
        .arg(device));
    // "mirror 1 logical 92303360 physical 67203072 device /dev/loop1"
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("mirror 1 "))
        .unwrap_or_else(|| panic!("btrfs-map-logical: {text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let physical = words[5].parse().unwrap();
    let name = Path::new(words[7]).file_name().unwrap().to_string_lossy();
    (name.into_owned(), physical)
}

/// 4 KiB of device `device` at `offset`, read past its page cache.
fn device_block(device: &str, offset: u64) -> Vec<u8> {
    let out = run(std::process::Command::new("dd")
        .arg(format!("if={device}"))
        .args(["bs=4096", "count=1", "iflag=direct,skip_bytes"])
        .arg(format!("skip={offset}")));
    assert_eq!(out.stdout.len(), 4096, "dd {device} at {offset}");
    out.stdout
}

/// Files of 4 KiB to 1 MiB written to `pool` in shuffled order, and about `spread` MiB
/// more in larger files so data lands in more than one chunk.
fn write_btrfs_files(pool: &BtrfsPool, count: usize, spread: u64) -> Vec<PathBuf> {
    let mut rng = Rng::new(3403);
    let mut paths = Vec::new();
    for i in 0..count {
        let len = 4096 * (1 + rng.below(256)) as usize;
        let path = pool.path(format!("f{i:03}"));
        std::fs::write(&path, rng.bytes(len)).unwrap();
        paths.push(path);
    }
    for i in 0..spread / 8 {
        let path = pool.path(format!("big{i:02}"));
        std::fs::write(&path, rng.bytes(8 << 20)).unwrap();
        paths.push(path);
    }
    run(&mut std::process::Command::new("sync"));
    paths
}

/// Checks a btrfs pool's listing, hashes and disk verdicts (see the module's doc).
fn btrfs_members_are_swept_apart(test: &str, profile: &str, spread: u64) {
    if !require_root(test)
        || !require_tools(
            test,
            &[
                "mkfs.btrfs",
                "btrfs-map-logical",
                "filefrag",
                "sha256sum",
                "dd",
            ],
        )
    {
        return;
    }
    let pool = BtrfsPool::new(test, profile, 320);
    let paths = write_btrfs_files(&pool, 40, spread);
    let names = pool.names();
    let (listed, summary) = order_json([&pool.mnt]);
    assert_eq!(listed.len(), paths.len(), "{summary}");
    for l in &listed {
        assert_eq!(l.strategy, "fiemap", "{l:?}");
        // filefrag's "physical" on btrfs is its logical address; btrfs-map-logical maps it.
        let (logical, _) = filefrag(&l.path);
        let (device, physical) = map_logical(logical.unwrap(), &pool.devices[0]);
        assert_eq!((&l.disk, l.offset), (&device, Some(physical)), "{l:?}");
        // And the file's first bytes are there on that device.
        let mut head = vec![0u8; 4096];
        use std::io::Read;
        std::fs::File::open(&l.path)
            .unwrap()
            .read_exact(&mut head)
            .unwrap();
        assert!(
            device_block(&format!("/dev/{device}"), physical) == head,
            "{l:?}: not the file's bytes at /dev/{device} offset {physical}"
        );
    }
    // Two sweeps, one per member: each disk's files together, in offset order.
    let mut runs: Vec<&str> = listed.iter().map(|l| l.disk.as_str()).collect();
    runs.dedup();
    let mut disks = runs.clone();
    disks.sort();
    let mut want = names.to_vec();
    want.sort();
    assert_eq!(disks, want, "each member once: {runs:?}");
    for disk in &names {
        let offsets: Vec<u64> = listed
            .iter()
            .filter(|l| &l.disk == disk)
            .map(|l| l.offset.unwrap())
            .collect();
        assert!(offsets.is_sorted(), "{disk}: {offsets:?}");
    }

    // Read: what sha256sum reads; each member taken for what it is, on its own.
    let stderr = hashed_as_sha256sum_does(&pool.mnt, paths.len());
    let verdict = |name: &str| {
        stderr
            .lines()
            .find(|l| l.starts_with(&format!("seekless: {name}: reports")))
            .unwrap_or_else(|| panic!("no verdict for {name}:\n{stderr}"))
            .to_string()
    };
    assert!(
        stderr.contains(&format!(
            "over 2 devices, swept per device: {}, {}",
            names[0], names[1]
        )),
        "{stderr}"
    );
    assert!(
        verdict(&names[0]).contains("reports rotational"),
        "{stderr}"
    );
    assert!(
        verdict(&names[1]).contains("reports non-rotational"),
        "{stderr}"
    );
}

/// A btrfs pool whose data chunks are mirrored on both devices (`profile`: raid1) stays
/// one sweep in btrfs's address order, and its summary says why.
fn btrfs_spread_data_stays_one_sweep(test: &str, profile: &str) {
    if !require_root(test) || !require_tools(test, &["mkfs.btrfs", "filefrag", "sha256sum"]) {
        return;
    }
    let pool = BtrfsPool::new(test, profile, 320);
    let paths = write_btrfs_files(&pool, 40, 0);
    let whole = pool.whole_disk_name();
    let (listed, summary) = order_json([&pool.mnt]);
    assert_eq!(listed.len(), paths.len(), "{summary}");
    for l in &listed {
        // One disk for both members, not the one it was mounted from.
        assert_eq!(l.disk, whole, "{l:?}");
        // At btrfs's own address, as filefrag reports it.
        assert_eq!(l.offset, filefrag(&l.path).0, "{l:?}");
    }
    let offsets: Vec<u64> = listed.iter().map(|l| l.offset.unwrap()).collect();
    assert!(offsets.is_sorted(), "{offsets:?}");
    let why = "not split into its devices (RAID1/RAID10 data";
    assert_eq!(summary.matches(why).count(), 1, "{summary}");
    assert!(
        summary.contains(&format!("btrfs on {whole} (rotational): ")),
        "{summary}"
    );
    let hashed = hashes(&[&pool.mnt]);
    assert_eq!(hashed.len(), paths.len());
    for (path, digest) in hashed {
        assert_eq!(digest, sha256sum(&path), "{}", path.display());
    }
}

#[test]
fn btrfs_raid0_over_two_disks_is_swept_per_member_each_stripe_by_its_own_member() {
    // RAID0: every other 64 KiB stripe of a file on the other member. Each file goes with
    // the member of its first byte; its stripes on the other member are prefetched by
    // that member's sweep: 0.67 s for 1,000 files on two emulated disks, against 0.76 s
    // for one sweep of both and 1.19 s for sweeps per member by first byte alone, whole
    // files (bench/hdd/btrfs-pool.sh).
    btrfs_members_are_swept_apart(
        "btrfs_raid0_over_two_disks_is_swept_per_member_each_stripe_by_its_own_member",
        "raid0",
        16,
    );
}

#[test]
fn btrfs_raid1_over_two_disks_stays_one_sweep_in_address_order_and_says_why() {
    // RAID1 data: the kernel sends each read to the copy its read policy picks (by the
    // reading thread's pid), not to the one a sweep was planned on (per-member sweeps by
    // first copy were 1.09 times slower: bench/hdd/btrfs-pool.sh).
    btrfs_spread_data_stays_one_sweep(
        "btrfs_raid1_over_two_disks_stays_one_sweep_in_address_order_and_says_why",
        "raid1",
    );
}

#[test]
fn btrfs_raid1_mounted_from_its_solid_state_member_is_located_and_read_as_one_disk_over_both() {
    // Mounted from the non-rotational member, the pool was taken for that member alone:
    // a disk that does not seek, so left unlocated (inode order, many reads at once) while
    // the rotational member took random reads. It is one disk over both, rotational since
    // one member is, each member measured on its own.
    let test =
        "btrfs_raid1_mounted_from_its_solid_state_member_is_located_and_read_as_one_disk_over_both";
    if !require_root(test) || !require_tools(test, &["mkfs.btrfs", "filefrag", "sha256sum"]) {
        return;
    }
    let pool = BtrfsPool::mounted_from(test, "raid1", 320, 1);
    let paths = write_btrfs_files(&pool, 40, 0);
    let names = pool.names();
    let whole = pool.whole_disk_name();
    // Device 1, named first, is the non-rotational member the kernel says it was mounted
    // from.
    assert_eq!(whole, format!("{}+{}", names[1], names[0]));
    let (listed, summary) = order_json([&pool.mnt]);
    assert_eq!(listed.len(), paths.len(), "{summary}");
    for l in &listed {
        assert_eq!(l.disk, whole, "{l:?}");
        // Located, at btrfs's address.
        assert_eq!(l.strategy, "fiemap", "{l:?}\n{summary}");
        assert_eq!(l.offset, filefrag(&l.path).0, "{l:?}");
    }
    let offsets: Vec<u64> = listed.iter().map(|l| l.offset.unwrap()).collect();
    assert!(offsets.is_sorted(), "{offsets:?}");
    // Every file located, in a summary (`order`'s, `hash`'s).
    let all_located = |summary: &str| {
        let located = format!(
            "btrfs on {whole} (rotational): {} files located by fiemap",
            paths.len()
        );
        assert!(summary.contains(&located), "{summary}");
        assert!(!summary.contains("not located"), "{summary}");
    };
    all_located(&summary);

    // Read: what sha256sum reads; one verdict, for the pool, naming each member's.
    let stderr = hashed_as_sha256sum_does(&pool.mnt, paths.len());
    // A job that only reads leaves a disk known not to seek unlocated (inode order): not
    // this pool, one of whose members reports rotational.
    all_located(&stderr);
    let verdicts: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("seekless: ") && l.contains(": reports "))
        .collect();
    assert_eq!(verdicts.len(), 1, "one disk, one verdict:\n{stderr}");
    let verdict = verdicts[0];
    assert!(
        verdict.starts_with(&format!(
            "seekless: {whole}: reports rotational, a pool of 2 disks, seeking if any member \
             is [{}: reports non-rotational, measured ",
            names[1]
        )),
        "{stderr}"
    );
    assert!(
        verdict.contains(&format!("; {}: reports rotational, measured ", names[0])),
        "{stderr}"
    );
    // The pool seeks exactly when a member measured seeking (loop devices in memory
    // measure solid-state here; a real disk seeks).
    let member_seeks = verdict.contains(": seeking; ") || verdict.contains(": seeking]");
    let kind = if member_seeks {
        "seeking"
    } else {
        "solid-state"
    };
    assert!(
        verdict.ends_with(&format!("]: treated as {kind}")),
        "{stderr}"
    );
}

/// `seekless ARGS` run as nobody (no `CAP_SYS_ADMIN`, no device nodes), succeeding.
fn seekless_as_nobody(args: &[&str], dir: &Path) -> std::process::Output {
    run(std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_seekless"))
        .args(args)
        .arg(dir))
}

/// Lets nobody into the pool's scratch directory (the mount point's parent).
fn open_to_nobody(pool: &BtrfsPool) {
    use std::os::unix::fs::PermissionsExt;
    let scratch = pool.mnt.parent().unwrap();
    std::fs::set_permissions(scratch, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn btrfs_raid1_mounted_from_its_solid_state_member_seeks_without_root_for_its_rotational_member() {
    // Without root no member can be measured: each is taken for what it reports, and one
    // reporting rotational makes the pool seek, though it was mounted from the other (which
    // alone was measured through the pool's files, and taken for solid-state, before).
    let test = "btrfs_raid1_mounted_from_its_solid_state_member_seeks_without_root_for_its_rotational_member";
    if !require_root(test) || !require_tools(test, &["mkfs.btrfs", "setpriv", "sha256sum"]) {
        return;
    }
    let pool = BtrfsPool::mounted_from(test, "raid1", 320, 1);
    let paths = write_btrfs_files(&pool, 20, 0);
    open_to_nobody(&pool);
    let names = pool.names();
    let whole = pool.whole_disk_name();
    let out = seekless_as_nobody(&["order", "--json", "--summary"], &pool.mnt);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), paths.len(), "{stderr}");
    for l in &lines {
        assert_eq!(l["disk"], whole.as_str(), "{l}");
        assert_eq!(l["strategy"], "fiemap", "{l}\n{stderr}");
    }
    // Whatever its profile: without CAP_SYS_ADMIN its chunks are not known.
    let why = "not split into its devices (chunk tree not readable";
    assert_eq!(stderr.matches(why).count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("btrfs on {whole} (rotational): ")),
        "{stderr}"
    );

    let out = seekless_as_nobody(&["hash", "--algo", "sha256", "--summary"], &pool.mnt);
    let stderr = sha256sums_of(&out, paths.len());
    let verdict = stderr
        .lines()
        .find(|l| l.starts_with(&format!("seekless: {whole}: reports")))
        .unwrap_or_else(|| panic!("no verdict for {whole}:\n{stderr}"));
    assert!(
        verdict.starts_with(&format!(
            "seekless: {whole}: reports rotational, a pool of 2 disks, seeking if any member \
             is [{}: reports non-rotational, not measured (",
            names[1]
        )),
        "{stderr}"
    );
    assert!(
        verdict.contains(&format!(
            "): solid-state; {}: reports rotational, not measured (",
            names[0]
        )),
        "{stderr}"
    );
    assert!(
        verdict.ends_with("): seeking]: treated as seeking"),
        "{stderr}"
    );
}

#[test]
fn btrfs_single_over_two_disks_is_swept_per_member_at_member_offsets() {
    // Single: a chunk on one device at a time, the next on the one with more room; enough
    // data for chunks on both.
    btrfs_members_are_swept_apart(
        "btrfs_single_over_two_disks_is_swept_per_member_at_member_offsets",
        "single",
        160,
    );
}

#[test]
fn btrfs_over_two_disks_without_cap_sys_admin_is_swept_whole_and_says_why() {
    // The chunk tree needs CAP_SYS_ADMIN: as nobody, the filesystem is one sweep, as
    // before pools were split, on one disk standing for both members (their list needs no
    // privilege), and the summary says why once.
    let test = "btrfs_over_two_disks_without_cap_sys_admin_is_swept_whole_and_says_why";
    if !require_root(test) || !require_tools(test, &["mkfs.btrfs", "setpriv"]) {
        return;
    }
    let pool = BtrfsPool::new(test, "single", 320);
    let paths = write_btrfs_files(&pool, 20, 0);
    open_to_nobody(&pool);
    let out = seekless_as_nobody(&["order", "--json", "--summary"], &pool.mnt);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let why = "not split into its devices (chunk tree not readable";
    assert_eq!(stderr.matches(why).count(), 1, "{stderr}");
    let disks: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["disk"].clone())
        .collect();
    assert_eq!(disks.len(), paths.len());
    assert!(
        disks.iter().all(|d| d == pool.whole_disk_name().as_str()),
        "{disks:?}"
    );
}

/// The btrfs ioctls `seekless order DIR` makes, as `strace` names them (one per line).
fn btrfs_ioctls(dir: &Path) -> Vec<String> {
    let scratch = scratch_dir("btrfs_ioctls");
    let trace = scratch.path().join("trace");
    run(std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=ioctl", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_seekless"))
        .arg("order")
        .arg(dir));
    std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter_map(|l| {
            l.split_once("ioctl(")
                .and_then(|(_, rest)| rest.split(", ").nth(1))
                .filter(|name| name.starts_with("BTRFS_IOC"))
                .map(str::to_string)
        })
        .collect()
}

#[test]
fn a_single_device_btrfs_costs_one_ioctl_and_a_pools_chunk_tree_is_read_once() {
    let test = "a_single_device_btrfs_costs_one_ioctl_and_a_pools_chunk_tree_is_read_once";
    if !require_root(test) || !require_tools(test, &["mkfs.btrfs", "strace"]) {
        return;
    }
    let single = LoopFs::new(test, "btrfs", 256);
    for i in 0..50 {
        std::fs::write(single.path(format!("f{i}")), vec![i as u8; 20_000]).unwrap();
    }
    let pool = BtrfsPool::new(test, "single", 320);
    write_btrfs_files(&pool, 50, 0);
    run(&mut std::process::Command::new("sync"));
    // One device: asked how many devices it has, and nothing more.
    assert_eq!(btrfs_ioctls(&single.mnt), ["BTRFS_IOC_FS_INFO"]);
    // Two: its devices listed and its chunk tree read once for the whole run, not per
    // file: two searches, one returning every chunk of a filesystem this small and one
    // finding none after them.
    let calls = btrfs_ioctls(&pool.mnt);
    let count = |name: &str| calls.iter().filter(|c| *c == name).count();
    assert_eq!(count("BTRFS_IOC_FS_INFO"), 1, "{calls:?}");
    assert_eq!(count("BTRFS_IOC_DEV_INFO"), 2, "{calls:?}");
    assert_eq!(count("BTRFS_IOC_TREE_SEARCH"), 2, "{calls:?}");
}

#[test]
fn a_mergerfs_file_whose_branch_differs_from_the_pools_view_is_not_located_there() {
    // The branch file is used only when it is the file the pool showed the walk (same
    // size and modification time). Here the pool keeps attributes for an hour
    // (cache.attr, cache.entry), so after the branch file's time is changed beneath it
    // the pool still shows the old one: the file is left in the given order, as FUSE
    // files always were, not located on a file that is not the one planned.
    let test = "a_mergerfs_file_whose_branch_differs_from_the_pools_view_is_not_located_there";
    if !require_root(test) || !require_tools(test, &["mergerfs"]) {
        return;
    }
    let branch = LoopFs::new(test, "ext4", 64);
    std::fs::write(branch.path("f"), vec![7u8; 50_000]).unwrap();
    let dir = scratch_dir(test);
    let pool = dir.path().join("pool");
    let _mounted =
        Mounted::mergerfs_with(&pool, &[&branch.mnt], "cache.attr=3600,cache.entry=3600");
    let (listed, _) = order_json([&pool]);
    assert_eq!(listed[0].strategy, "fiemap", "{listed:?}");
    let seen = std::fs::metadata(pool.join("f"))
        .unwrap()
        .modified()
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(branch.path("f"))
        .unwrap()
        .set_modified(std::time::SystemTime::UNIX_EPOCH)
        .unwrap();
    // The pool's view is the cached one, the branch's the new one.
    assert_eq!(
        std::fs::metadata(pool.join("f"))
            .unwrap()
            .modified()
            .unwrap(),
        seen
    );
    let (listed, _) = order_json([&pool]);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].strategy, "given", "{listed:?}");
    assert_eq!(listed[0].offset, None, "{listed:?}");
}
