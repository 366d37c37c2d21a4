//! Invariants over randomized faults, not cases (`docs/faults.md`). Each seed is a
//! scenario: a random source tree and its next version, one job (`copy --delete`,
//! `copy --delete --ignore-errors`, `copy`, `tar -f`, `index`, `index --rehash`) run over
//! faultfs, a FUSE passthrough injecting the faults the seed picks (EIO on read or
//! listing, EACCES, entries vanishing, appearing or changing type, files growing or
//! shrinking while read, files rewritten in place as their last bytes are read with their
//! size and modification time put back, ENOSPC and EIO on the destination), sometimes
//! killed with SIGKILL once it has opened its k-th file. Copies sometimes run with a folder
//! of other files bind-mounted inside the destination, or from a source that is an empty
//! directory (a drive not mounted); the index sometimes has a filesystem mounted in its
//! tree that the faulty run finds unmounted. After the run, and after a clean re-run
//! without faults, the checks below must hold; a violation names the seed, which replays
//! it:
//!
//! - (a) no destination entry is deleted unless the run had no error (or, with
//!   `--ignore-errors`, it lies outside every failed path) and the source has no such
//!   entry; none is replaced except by a complete copy of a version of its source;
//! - (b) no source entry is modified (except by the faults that change the source);
//! - (c) no catalog row is removed unless its file is gone from a directory listed
//!   without fault, and no known field is nulled or overwritten except by the values of a
//!   complete read;
//! - (d) every file under a final name (copy, archive member) equals a version of its
//!   source byte for byte;
//! - (e) after the clean re-run the destination equals `cp -a` of the source, the archive
//!   `tar -x` does, and the catalog equals a fresh one;
//! - (f) nothing on a mount inside the destination changes, and a `--delete` that deleted
//!   says it kept the mount point; an empty source directory deletes nothing (exit 1
//!   with `--delete`).
//!
//! `SEEKLESS_FAULT_SEEDS=A..B` (or `A,B,C`) replaces the CI set ([`CI_SEEDS`]);
//! `bench/faults-soak.sh FROM TO` runs a long range.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::copying::slash;
use crate::common::faults::*;
use crate::common::*;

/// The seeds CI runs (about 20 s on 2 CPUs, shared).
const CI_SEEDS: std::ops::RangeInclusive<u64> = 1..=300;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Job {
    CopyDelete,
    CopyDeleteIgnoreErrors,
    Copy,
    Tar,
    Index,
    IndexRehash,
}

const JOBS: [Job; 6] = [
    Job::CopyDelete,
    Job::CopyDeleteIgnoreErrors,
    Job::Copy,
    Job::Tar,
    Job::Index,
    Job::IndexRehash,
];

/// Faults of the source side.
const SOURCE_FAULTS: [&str; 8] = [
    "read-eio",
    "readdir-eio",
    "eacces",
    "vanish",
    "appear",
    "change-type",
    "grow",
    "shrink",
];

/// Faults a run must have seen as errors when faultfs logged them (they were returned).
const ERRORS: [&str; 7] = [
    "rewrite",
    "read-eio",
    "readdir-eio",
    "eacces",
    "vanish",
    "enospc",
    "write-eio",
];

/// Faults after which the run must not have trusted the path (errors, and a listing or
/// content that was not what the disk holds).
const FAILING: [&str; 10] = [
    "rewrite",
    "read-eio",
    "readdir-eio",
    "eacces",
    "vanish",
    "change-type",
    "grow",
    "shrink",
    "enospc",
    "write-eio",
];

#[derive(Debug)]
struct Scenario {
    seed: u64,
    job: Job,
    source: FaultArgs,
    dest: Option<FaultArgs>,
    kill_at: Option<usize>,
    /// Index only: a filesystem mounted at `sub` in the tree for the first run and the
    /// clean ones, not for the faulty run (a drive not mounted).
    sub_mount: bool,
    /// Copy only: another seekless run (a `tar -f` into the destination) is alive, frozen,
    /// with its temporary there, while the copy runs.
    live_temp: bool,
    /// Copy only, the destination without faults: a folder of other files bind-mounted
    /// inside the destination (at a name the source never has) during the faulty run.
    dest_mount: bool,
    /// Copy only: the faulty run's source is an empty directory (a drive not mounted).
    empty_source: bool,
}

fn scenario(seed: u64) -> Scenario {
    let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed);
    rng.next();
    let job = JOBS[rng.below(JOBS.len() as u64) as usize];
    let mut kinds: Vec<&'static str> = SOURCE_FAULTS
        .into_iter()
        .filter(|_| rng.below(3) == 0)
        .collect();
    if kinds.is_empty() {
        kinds.push(SOURCE_FAULTS[rng.below(SOURCE_FAULTS.len() as u64) as usize]);
    }
    // From a generator of its own, so that adding it changed no other seed's scenario.
    if Rng::new(seed ^ 0x2e_a417e).below(4) == 0 {
        kinds.push("rewrite");
    }
    let rate = [30, 60, 120, 250][rng.below(4) as usize];
    let source = FaultArgs {
        seed,
        rate_permille: rate,
        kinds,
        enospc_after: None,
    };
    let writes = matches!(
        job,
        Job::CopyDelete | Job::CopyDeleteIgnoreErrors | Job::Copy | Job::Tar
    );
    let dest = (writes && rng.below(4) == 0).then(|| match rng.below(3) {
        0 => FaultArgs {
            seed,
            rate_permille: 150,
            kinds: vec!["write-eio"],
            enospc_after: None,
        },
        1 => FaultArgs {
            seed,
            rate_permille: 150,
            kinds: vec!["enospc"],
            enospc_after: None,
        },
        _ => FaultArgs {
            seed,
            rate_permille: 0,
            kinds: vec![],
            enospc_after: Some(rng.below(600 << 10)),
        },
    });
    let kill_at = (rng.below(4) == 0).then(|| 1 + rng.below(25) as usize);
    // From a generator of its own, so that adding it changed no other seed's scenario.
    let sub_mount =
        matches!(job, Job::Index | Job::IndexRehash) && Rng::new(seed ^ 0x50b_4d0c).below(3) == 0;
    let live_temp = matches!(
        job,
        Job::CopyDelete | Job::CopyDeleteIgnoreErrors | Job::Copy
    ) && Rng::new(seed ^ 0x11fe_7e40).below(4) == 0;
    let copies = matches!(
        job,
        Job::CopyDelete | Job::CopyDeleteIgnoreErrors | Job::Copy
    );
    // (Through a FUSE destination a mount below it is a plain folder: nothing can tell.)
    let dest_mount = copies && dest.is_none() && Rng::new(seed ^ 0xb1d_3a7).below(4) == 0;
    let empty_source = copies && Rng::new(seed ^ 0xe3_7750).below(10) == 0;
    Scenario {
        seed,
        job,
        source,
        dest,
        kill_at,
        sub_mount,
        live_temp,
        dest_mount,
        empty_source,
    }
}

/// What one scenario found wrong (empty: every invariant held).
fn run_scenario(seed: u64) -> Vec<String> {
    let s = scenario(seed);
    let t = scratch_dir_in(&format!("faults-{seed}"), shm_or_tmp());
    let h = Harness::new(t.path(), &s);
    let (mut found, f) = match s.job {
        Job::CopyDelete | Job::CopyDeleteIgnoreErrors | Job::Copy => h.copy(),
        Job::Tar => h.tar(),
        Job::Index | Job::IndexRehash => h.index(),
    };
    eprintln!(
        "faults: seed {seed} {:?}{}{}: exit {:?}{}, faults {:?}: {}",
        s.job,
        if s.dest_mount { " +mount-in-dest" } else { "" },
        if s.empty_source { " +empty-source" } else { "" },
        f.ended.code,
        if f.ended.killed { " (killed)" } else { "" },
        fault_list(&f),
        if found.is_empty() { "ok" } else { "VIOLATED" }
    );
    for f in &mut found {
        *f = format!(
            "seed {seed} ({:?}): {}",
            s.job,
            f.trim().replace('\n', " | ")
        );
    }
    if !found.is_empty() && std::env::var_os("SEEKLESS_FAULT_KEEP").is_some() {
        eprintln!("faults: seed {seed} kept in {}", t.keep().display());
    }
    found
}

fn shm_or_tmp() -> PathBuf {
    if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    }
}

/// The seeds to run: `SEEKLESS_FAULT_SEEDS` (`A..B` or `A,B,C`), else [`CI_SEEDS`].
fn seeds() -> Vec<u64> {
    match std::env::var("SEEKLESS_FAULT_SEEDS") {
        Ok(v) if v.contains("..") => {
            let (a, b) = v.split_once("..").unwrap();
            (a.trim().parse().unwrap()..b.trim().parse().unwrap()).collect()
        }
        Ok(v) => v.split(',').map(|s| s.trim().parse().unwrap()).collect(),
        Err(_) => CI_SEEDS.collect(),
    }
}

fn ready(test: &str) -> bool {
    in_group(test, "fuse")
        && require_root(test)
        && (Path::new("/dev/fuse").exists() || skip(test, "fuse", "/dev/fuse is missing"))
        && ["cp", "tar", "umount"]
            .iter()
            .all(|tool| require_tool(test, tool))
}

/// Runs the seeds on two threads; reports every violation of every seed.
fn assert_seeds_hold(seeds: &[u64]) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(&seed) = seeds.get(i) else { break };
                    let v = std::panic::catch_unwind(|| run_scenario(seed)).unwrap_or_else(|p| {
                        let why = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        vec![format!("seed {seed}: the harness panicked: {why}")]
                    });
                    found.lock().unwrap().extend(v);
                }
            });
        }
    });
    let found = found.into_inner().unwrap();
    assert!(
        found.is_empty(),
        "{} violations:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn seeded_faults_keep_every_invariant() {
    let test = test_name!();
    if !ready(test) {
        return;
    }
    assert_seeds_hold(&seeds());
}

#[test]
fn faultfs_without_faults_reads_and_writes_as_the_disk_below() {
    let test = test_name!();
    if !ready(test) {
        return;
    }
    let t = scratch_dir_in(test, shm_or_tmp());
    let (src, back_out) = (t.path().join("src"), t.path().join("out"));
    build_tree(&src, &mut Rng::new(99));
    next_version(&src, &mut Rng::new(98), true);
    fs::create_dir(&back_out).unwrap();
    let log = t.path().join("log.jsonl");
    let (m_src, m_out) = (t.path().join("m-src"), t.path().join("m-out"));
    let read = FaultMount::new(&src, &m_src, &FaultArgs::default(), &log);
    let write = FaultMount::new(&back_out, &m_out, &FaultArgs::default(), &log);
    // cp -a through both mounts, then again from the disk below: the same tree.
    run(Command::new("cp")
        .arg("-a")
        .arg(&m_src)
        .arg(m_out.join("copy")));
    write.unmount();
    read.unmount();
    run(Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(t.path().join("direct")));
    let mut found = Vec::new();
    compare_trees(
        &snapshot(&back_out.join("copy")),
        &snapshot(&t.path().join("direct")),
        false,
        &Snapshot::default(),
        true,
        "cp -a through faultfs vs cp -a",
        &mut found,
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
    let logged = read_log(&log);
    assert!(
        logged.iter().all(|l| l.kind == "open"),
        "faults without a rate: {logged:?}"
    );
}

#[test]
fn faultfs_locks_are_the_locks_of_the_files_below() {
    // A `tar -f` writing on the disk below and a copy looking through the mount must see
    // one lock on a temporary, as on one filesystem. (The kernel keeps flock(2) on a FUSE
    // directory to itself: a destination directory's lock is the mount's own.)
    let test = test_name!();
    if !ready(test) {
        return;
    }
    let t = scratch_dir_in(test, shm_or_tmp());
    let back = t.path().join("back");
    fs::create_dir_all(&back).unwrap();
    fs::write(back.join("file"), b"x").unwrap();
    let log = t.path().join("log.jsonl");
    let mnt = t.path().join("mnt");
    let mount = FaultMount::new(&back, &mnt, &FaultArgs::default(), &log);
    let open = |p: &Path| fs::File::open(p).unwrap();
    let name = "file";
    {
        // Held below: refused through the mount, and free again once let go.
        let below = open(&back.join(name));
        below.try_lock().unwrap();
        let through = open(&mnt.join(name));
        assert!(
            matches!(through.try_lock(), Err(fs::TryLockError::WouldBlock)),
            "{name}: a lock held below is not seen through the mount"
        );
        drop(below);
        through.try_lock().unwrap();
        // Held through the mount: refused below, shared locks excepted.
        assert!(
            matches!(
                open(&back.join(name)).try_lock(),
                Err(fs::TryLockError::WouldBlock)
            ),
            "{name}: a lock held through the mount is not seen below"
        );
        through.unlock().unwrap();
        open(&back.join(name)).try_lock().unwrap();
        // A blocking lock through the mount waits for the one below to be let go.
        let below = open(&back.join(name));
        below.lock().unwrap();
        let path = mnt.join(name);
        let waiter = std::thread::spawn(move || {
            let f = fs::File::open(path).unwrap();
            f.lock().unwrap();
        });
        // It waits below, where the system lists it ("->") until the lock is let go.
        let ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(back.join(name)).unwrap());
        let waiting = || {
            fs::read_to_string("/proc/locks").unwrap().lines().any(|l| {
                l.contains("->")
                    && l.split_whitespace()
                        .any(|w| w.ends_with(&format!(":{ino}")))
            })
        };
        let start = std::time::Instant::now();
        while !waiting() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "{name}: a blocking lock through the mount never waited below"
            );
            std::thread::yield_now();
        }
        assert!(!waiter.is_finished(), "{name}: took a lock that was held");
        drop(below);
        waiter.join().unwrap();
    }
    mount.unmount();
}

// Regression tests: seeds that found a bug, named after what must hold. Each is ignored
// until the fix lands (`cargo test --test it faults -- --ignored` runs them).

#[test]
fn copy_delete_keeps_a_directory_in_the_way_until_the_file_replacing_it_is_read() {
    // 555, 638: the file's read fails (EIO); 581: the destination is full (ENOSPC).
    let test = test_name!();
    if ready(test) {
        assert_seeds_hold(&[555, 581, 638]);
    }
}

#[test]
fn copy_keeps_the_temporary_of_another_run_that_is_alive() {
    // A `tar -f` into the destination, frozen with its temporary there. 8: copy --delete
    // --ignore-errors; 32: copy.
    let test = test_name!();
    if ready(test) {
        assert_seeds_hold(&[8, 32]);
    }
}

#[test]
fn copy_keeps_a_users_file_named_like_a_temporary() {
    // 17: copy --delete --ignore-errors after errors; 28: copy (no --delete), ENOSPC;
    // 1291: copy (no --delete), no fault at all, exit 0 (the name is gone from the source).
    let test = test_name!();
    if ready(test) {
        assert_seeds_hold(&[17, 28, 1291]);
    }
}

#[test]
fn index_keeps_the_known_fields_of_a_file_it_could_not_read() {
    // 2: ENOTDIR (listed as a directory); 13: EACCES; 23: ENOENT (vanished); 69: EIO;
    // 44: EIO under --rehash.
    let test = test_name!();
    if ready(test) {
        assert_seeds_hold(&[2, 13, 23, 44, 69]);
    }
}

#[test]
fn index_keeps_the_rows_of_a_filesystem_in_the_tree_that_is_not_mounted() {
    // 34, 77: a plain index run; nothing else fails in these.
    let test = test_name!();
    if ready(test) {
        assert_seeds_hold(&[34, 77]);
    }
}

#[test]
fn tar_stores_no_member_it_could_not_read_completely() {
    let test = test_name!();
    if ready(test) {
        assert_seeds_hold(&[181, 222]);
    }
}

#[test]
fn tar_archive_stays_readable_when_a_listed_directory_turns_out_a_file() {
    // 18: one fault only (a file listed as a directory); 29, 250: with others.
    let test = test_name!();
    if ready(test) {
        assert_seeds_hold(&[18, 29, 250]);
    }
}

// ---------------------------------------------------------------------------------------
// One scenario.

struct Harness<'a> {
    t: &'a Path,
    s: &'a Scenario,
    /// Backing directories.
    src: PathBuf,
    out: PathBuf,
    /// Mount points.
    fsrc: PathBuf,
    fout: PathBuf,
    log: PathBuf,
    out_log: PathBuf,
}

/// A run's facts the checks need.
struct Faulty {
    ended: Ended,
    faults: Vec<Logged>,
}

impl Faulty {
    fn paths(&self, kinds: &[&str]) -> Vec<Vec<u8>> {
        self.faults
            .iter()
            .filter(|f| kinds.contains(&f.kind.as_str()))
            .map(|f| {
                if matches!(f.kind.as_str(), "enospc" | "write-eio") {
                    // Relative to the copy's root (`dst/` on the destination mount).
                    let name = final_name_of(&f.path);
                    name.strip_prefix(b"dst/")
                        .map_or(name.clone(), <[u8]>::to_vec)
                } else {
                    f.path.clone()
                }
            })
            .collect()
    }

    fn had_error(&self) -> bool {
        !self.paths(&ERRORS).is_empty()
    }

    /// The run may have deleted what its source lacks: it ended without error, or was
    /// killed before meeting any.
    fn clean(&self) -> bool {
        self.ended.code == Some(0) || (self.ended.killed && !self.had_error())
    }

    fn common_checks(&self, found: &mut Vec<String>) {
        if self.ended.code == Some(0) && self.had_error() {
            found.push(format!(
                "exit 0 although it met injected errors: {:?}",
                self.faults
                    .iter()
                    .filter(|f| ERRORS.contains(&f.kind.as_str()))
                    .map(|f| format!("{} {}", f.kind, show(&f.path)))
                    .collect::<Vec<_>>()
            ));
        }
        if self.ended.stderr.contains("panicked") {
            found.push(format!("a panic: {}", self.ended.stderr));
        }
    }
}

impl<'a> Harness<'a> {
    fn new(t: &'a Path, s: &'a Scenario) -> Harness<'a> {
        let h = Harness {
            t,
            s,
            src: t.join("back/src"),
            out: t.join("back/out"),
            fsrc: t.join("fuse/src"),
            fout: t.join("fuse/out"),
            log: t.join("faults.jsonl"),
            out_log: t.join("out-faults.jsonl"),
        };
        fs::create_dir_all(&h.out).unwrap();
        fs::create_dir_all(&h.fsrc).unwrap();
        fs::create_dir_all(&h.fout).unwrap();
        h
    }

    /// Source version 1, its clean result made by `first`, then version 2.
    fn prepare(&self, first: impl FnOnce()) -> (Snapshot, Snapshot) {
        let mut rng = Rng::new(self.s.seed);
        build_tree(&self.src, &mut rng);
        if self.s.sub_mount {
            fs::create_dir(self.src.join("sub")).unwrap();
            build_images(&self.t.join("back/sub"), &mut Rng::new(self.s.seed ^ 0x50b));
        }
        let v1 = snapshot(&self.src);
        first();
        next_version(&self.src, &mut rng, self.s.job != Job::Copy);
        (v1, snapshot(&self.src))
    }

    /// Runs `args` with the source (and maybe the destination) mounted with faults.
    fn faulty_run(&self, args: &[&OsStr], cwd: &Path) -> Faulty {
        let m = FaultMount::new(&self.src, &self.fsrc, &self.s.source, &self.log);
        let d = self
            .s
            .dest
            .as_ref()
            .map(|a| FaultMount::new(&self.out, &self.fout, a, &self.out_log));
        let mut cmd = seekless();
        cmd.args(args)
            .current_dir(cwd)
            .env_remove("SEEKLESS_INJECT_FAULTS");
        let ended = run_maybe_killed(&mut cmd, &self.log, self.s.kill_at);
        if let Some(d) = d {
            d.unmount();
        }
        m.unmount();
        let mut faults = read_log(&self.log);
        faults.extend(read_log(&self.out_log));
        faults.retain(|f| f.kind != "open");
        Faulty { ended, faults }
    }

    /// The destination as the faulty run sees it.
    fn out_seen(&self) -> &Path {
        if self.s.dest.is_some() {
            &self.fout
        } else {
            &self.out
        }
    }

    /// (b): the source is as it was, but for what the faults themselves changed.
    fn check_source(
        &self,
        before: &Snapshot,
        after: &Snapshot,
        f: &Faulty,
        found: &mut Vec<String>,
    ) {
        // What the faults changed, and the other names of those files (hard links).
        let mut changed = f.paths(&["appear", "grow", "shrink", "rewrite"]);
        let inodes: BTreeSet<u64> = changed
            .iter()
            .filter_map(|p| before.get(p).map(|e| e.ino))
            .collect();
        changed.extend(
            before
                .entries
                .iter()
                .filter(|(_, e)| e.kind == 'f' && inodes.contains(&e.ino))
                .map(|(rel, _)| rel.clone()),
        );
        let names: BTreeSet<&Vec<u8>> = before.entries.keys().chain(after.entries.keys()).collect();
        for rel in names {
            let (b, a) = (before.get(rel), after.get(rel));
            let same = match (b, a) {
                (Some(b), Some(a)) if b.kind == 'd' && a.kind == 'd' => b.mode == a.mode,
                (b, a) => b == a,
            };
            if !same && !changed.iter().any(|c| c == rel) {
                found.push(format!(
                    "(b) source entry {} modified: {b:?} -> {a:?}",
                    show(rel)
                ));
            }
        }
    }

    /// Contents a destination file at `rel` may have: a version of its source that could be
    /// read completely and unchanged. A file that grew while read still holds its old
    /// content unchanged (an append); one that shrank does not.
    fn versions(rel: &[u8], before: &Snapshot, after: &Snapshot, f: &Faulty) -> Vec<[u8; 32]> {
        let shrunk = |p: &Vec<u8>| {
            p == rel
                || before
                    .get(p)
                    .zip(before.get(rel))
                    .is_some_and(|(a, b)| a.ino == b.ino)
        };
        // A file rewritten in place after it was read: only what it holds now.
        let changed = f.paths(&["shrink", "rewrite"]).iter().any(shrunk);
        let mut v: Vec<[u8; 32]> = after.get(rel).and_then(|e| e.hash).into_iter().collect();
        if !changed {
            v.extend(before.get(rel).and_then(|e| e.hash));
        }
        v
    }

    // -----------------------------------------------------------------------------------
    // copy

    fn copy(&self) -> (Vec<String>, Faulty) {
        let mut found = Vec::new();
        let mut flags: Vec<&OsStr> = vec![OsStr::new("copy")];
        match self.s.job {
            Job::CopyDelete => flags.push(OsStr::new("--delete")),
            Job::CopyDeleteIgnoreErrors => {
                flags.extend([OsStr::new("--delete"), OsStr::new("--ignore-errors")])
            }
            _ => {}
        }
        let deletes = self.s.job != Job::Copy;
        let dst = self.out.join("dst");
        let (_, src_before) = self.prepare(|| {
            let o = output_within(
                seekless().args(&flags).arg(slash(&self.src)).arg(&dst),
                RUN_LIMIT,
            );
            assert_exit(&o, 0);
        });
        let live = self.s.live_temp.then(|| self.start_live_tar(&dst));
        let dst_before = snapshot(&dst);
        // Another folder mounted inside the destination for the faulty run: never emptied,
        // whatever the run.
        let mounted = self.s.dest_mount.then(|| {
            let folder = self.t.join("back/mounted");
            build_tree(&folder, &mut Rng::new(self.s.seed ^ 0xb1d));
            let before = snapshot(&folder);
            (
                Mounted::bind(&folder, &dst.join("zz-mounted")),
                folder,
                before,
            )
        });
        // A drive not mounted: its mount point is an empty directory.
        let empty = self.t.join("empty-mount-point");
        if self.s.empty_source {
            fs::create_dir_all(&empty).unwrap();
        }

        let mut args = flags.clone();
        let from = if self.s.empty_source {
            slash(&empty)
        } else {
            slash(&self.fsrc)
        };
        let to = self.out_seen().join("dst");
        args.push(&from);
        args.push(to.as_os_str());
        let f = self.faulty_run(&args, self.t);
        if let Some((mount, folder, before)) = mounted {
            // (f) nothing on another mount inside the destination changes.
            compare_trees(
                &snapshot(&folder),
                &before,
                false,
                &Snapshot::default(),
                true,
                "(f) the folder mounted inside the destination",
                &mut found,
            );
            // A run that deleted at all met the mount, and says so.
            let refused = f.ended.stderr.contains("a filesystem is mounted here");
            if deletes && !self.s.empty_source && !f.ended.killed && !f.had_error() && !refused {
                found.push(format!(
                    "(f) --delete said nothing of the mount inside the destination: {}",
                    f.ended.stderr
                ));
            }
            drop(mount);
            let _ = fs::remove_dir(dst.join("zz-mounted"));
        }
        let src_after = snapshot(&self.src);
        let dst_after = snapshot(&dst);
        f.common_checks(&mut found);
        self.check_source(&src_before, &src_after, &f, &mut found);
        if self.s.empty_source {
            // (a) an empty source directory deletes nothing from a backup that has files.
            let names = |s: &Snapshot| s.entries.keys().cloned().collect::<BTreeSet<_>>();
            let gone: Vec<String> = names(&dst_before)
                .difference(&names(&dst_after))
                .map(|rel| show(rel))
                .collect();
            if !gone.is_empty() {
                found.push(format!(
                    "(a) deleted because the source was an empty directory: {gone:?}"
                ));
            }
            let want = if deletes { Some(1) } else { Some(0) };
            if !f.ended.killed && f.ended.code != want {
                found.push(format!(
                    "an empty source exited {:?}, not {want:?}: {}",
                    f.ended.code, f.ended.stderr
                ));
            }
            return (found, f);
        }

        // A run whose one error was the mount it kept (exit 1) saw everything else.
        let only_the_mount_refused = self.s.dest_mount
            && !f.had_error()
            && f.ended.code == Some(1)
            && f.ended
                .stderr
                .lines()
                .all(|l| l.trim().is_empty() || l.contains("a filesystem is mounted here"));

        // (a), (d)
        let failed = f.paths(&FAILING);
        let names: BTreeSet<&Vec<u8>> = dst_before
            .entries
            .keys()
            .chain(dst_after.entries.keys())
            .collect();
        let in_source = |rel: &[u8]| src_before.get(rel).is_some() || src_after.get(rel).is_some();
        for rel in names {
            let (b, a) = (dst_before.get(rel), dst_after.get(rel));
            if b == a {
                continue;
            }
            // An entry under a directory replaced by something else is judged there.
            let parent_replaced = ancestors(rel).any(|anc| {
                dst_before.get(anc).is_some_and(|e| e.kind == 'd')
                    && dst_after.get(anc).is_some_and(|e| e.kind != 'd')
            });
            match a {
                None if parent_replaced => {}
                None if in_source(rel) => found.push(format!(
                    "(a) {} deleted from the destination, though the source has it (exit {:?}, faults {:?})",
                    show(rel),
                    f.ended.code,
                    fault_list(&f)
                )),
                None if !deletes => found.push(format!(
                    "(a) {} deleted by a copy without --delete (exit {:?}, faults {:?})",
                    show(rel),
                    f.ended.code,
                    fault_list(&f)
                )),
                None => {
                    let allowed = deletes
                        && (f.clean()
                            || only_the_mount_refused
                            || (self.s.job == Job::CopyDeleteIgnoreErrors
                                && !failed
                                    .iter()
                                    .any(|p| at_or_under(rel, p) || at_or_under(p, rel))));
                    if !allowed {
                        found.push(format!(
                            "(a) {} deleted after errors (exit {:?}, faults {:?})",
                            show(rel),
                            f.ended.code,
                            fault_list(&f)
                        ));
                    }
                }
                Some(_) if temp_named(rel) && !in_source(rel) => {
                    if !f.ended.killed {
                        found.push(format!("temporary {} left by a run that was not killed", show(rel)));
                    }
                }
                Some(a) => {
                    let ok = match a.kind {
                        'f' => {
                            let same_content = b.is_some_and(|b| b.kind == 'f' && b.hash == a.hash);
                            same_content
                                || Self::versions(rel, &src_before, &src_after, &f).contains(&a.hash.unwrap())
                        }
                        // A directory kept (its entries are judged one by one).
                        'd' => b.is_some_and(|b| b.kind == 'd')
                            || src_after.get(rel).is_some_and(|e| e.kind == 'd')
                            || src_before.get(rel).is_some_and(|e| e.kind == 'd'),
                        'l' => [src_before.get(rel), src_after.get(rel)]
                            .into_iter()
                            .flatten()
                            .any(|e| e.target == a.target),
                        _ => false,
                    };
                    if !ok {
                        found.push(format!(
                            "(a)(d) {} replaced by what is no complete version of its source: {b:?} -> {a:?}",
                            show(rel)
                        ));
                    }
                }
            }
        }
        if let Some((other, temp)) = live {
            if !temp.exists() {
                found.push(format!(
                    "(a) {} removed: the temporary of another seekless run, alive (frozen)",
                    show(temp.file_name().unwrap().as_bytes())
                ));
            }
            let (code, err) = finish(other);
            if code != Some(0) && found.is_empty() {
                found.push(format!(
                    "the other run (tar -f) failed after the copy: {err}"
                ));
            }
            let _ = fs::remove_file(dst.join("live.tar"));
        }
        if !found.is_empty() {
            return (found, f);
        }

        // (e): a clean re-run makes what cp -a makes.
        let o = output_within(
            seekless().args(&flags).arg(slash(&self.src)).arg(&dst),
            RUN_LIMIT,
        );
        if o.status.code() != Some(0) {
            found.push(format!(
                "(e) the clean re-run exited {:?}: {}",
                o.status.code(),
                stderr(&o)
            ));
            return (found, f);
        }
        let reference = self.t.join("cp-a");
        run(Command::new("cp").arg("-a").arg(&self.src).arg(&reference));
        let want = snapshot(&reference);
        let got = snapshot(&dst);
        compare_trees(
            &got,
            &want,
            !deletes,
            &dst_before,
            true,
            "(e) copy vs cp -a",
            &mut found,
        );
        (found, f)
    }

    /// Starts `seekless tar -f DST/live.tar` of a large sparse file and freezes it once its
    /// temporary is in DST: a live temporary of another run. Returns the run and the
    /// temporary's path.
    fn start_live_tar(&self, dst: &Path) -> (Running, PathBuf) {
        // Real data (not a hole) for it to read and write, so that it stays a while.
        let big = self.t.join("back/live-src/big");
        fs::create_dir_all(big.parent().unwrap()).unwrap();
        fs::write(&big, vec![0x5au8; 32 << 20]).unwrap();
        let temp = || {
            fs::read_dir(dst).unwrap().flatten().find_map(|e| {
                let name = e.file_name();
                (name.as_bytes().starts_with(b".live.tar.") && temp_named(name.as_bytes()))
                    .then(|| e.path())
            })
        };
        // Run in slices until its temporary is there; one that finished within a slice
        // (a loaded machine) is started again.
        for _ in 0..5 {
            let child = seekless()
                .arg("tar")
                .arg("-f")
                .arg(dst.join("live.tar"))
                .arg(&big)
                .env_remove("SEEKLESS_INJECT_FAULTS")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut run = Running(child);
            if freeze_when(&mut run.0, || temp().is_some()) {
                let path = temp().unwrap();
                // Made long ago as far as its time says: only its lock tells it is alive
                // (an unlocked temporary a few seconds old is given the benefit of doubt).
                let an_hour_ago =
                    std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
                fs::File::options()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_modified(an_hour_ago)
                    .unwrap();
                return (run, path);
            }
            let _ = fs::remove_file(dst.join("live.tar"));
        }
        panic!("the other run ended before its temporary was seen, five times");
    }

    // -----------------------------------------------------------------------------------
    // tar

    fn tar(&self) -> (Vec<String>, Faulty) {
        let mut found = Vec::new();
        let archive = self.out.join("a.tar");
        let (_, src_before) = self.prepare(|| {
            let o = output_within(
                seekless()
                    .arg("tar")
                    .arg("-f")
                    .arg(&archive)
                    .arg("-C")
                    .arg(self.t.join("back"))
                    .arg("src"),
                RUN_LIMIT,
            );
            assert_exit(&o, 0);
        });
        let old = fs::read(&archive).unwrap();
        let seen = self.out_seen().join("a.tar");
        let fuse = self.t.join("fuse");
        let args: Vec<&OsStr> = vec![
            OsStr::new("tar"),
            OsStr::new("-f"),
            seen.as_os_str(),
            OsStr::new("-C"),
            fuse.as_os_str(),
            OsStr::new("src"),
        ];
        let f = self.faulty_run(&args, self.t);
        let src_after = snapshot(&self.src);
        f.common_checks(&mut found);
        self.check_source(&src_before, &src_after, &f, &mut found);
        let new = fs::read(&archive).unwrap_or_default();
        if new != old {
            // (a)/(d): a replacement is a whole archive whose every member is a complete
            // version of its source.
            let x = self.t.join("x-faulty");
            fs::create_dir_all(&x).unwrap();
            let o = Command::new("tar")
                .arg("-xf")
                .arg(&archive)
                .arg("-C")
                .arg(&x)
                .output()
                .unwrap();
            if !o.status.success() {
                found.push(format!(
                    "(a) the archive was replaced by one tar cannot read: {} (faults {:?})",
                    stderr(&o),
                    fault_list(&f)
                ));
            } else {
                let got = snapshot(&x.join("src"));
                // A member read with an error or found shrunk is stored padded with zeros
                // (the archive stays valid), and one that changed while read is stored as
                // read, as GNU tar stores it; the run must say so of it: such a member
                // (and a hard link to it) is no claim to be the file's content.
                let said_padded = |rel: &[u8]| {
                    let name = show(rel);
                    f.ended.stderr.lines().any(|l| {
                        l.contains(&format!("{name}:"))
                            && (l.contains("is not this file's content")
                                || l.contains("padding with zeros")
                                || l.contains("file changed as we read it"))
                    })
                };
                let padded: std::collections::HashSet<_> = got
                    .entries
                    .iter()
                    .filter(|(rel, e)| e.kind == 'f' && said_padded(rel))
                    .filter_map(|(_, e)| e.hash)
                    .collect();
                for (rel, e) in &got.entries {
                    if e.kind == 'f'
                        && !padded.contains(&e.hash.unwrap())
                        && !Self::versions(rel, &src_before, &src_after, &f)
                            .contains(&e.hash.unwrap())
                    {
                        found.push(format!(
                            "(d) member src/{} is no complete version of its source (size {}; faults {:?})",
                            show(rel),
                            e.size,
                            fault_list(&f)
                        ));
                    }
                }
            }
        }
        let temps: Vec<_> = snapshot(&self.out)
            .entries
            .into_keys()
            .filter(|r| temp_named(r))
            .collect();
        if !f.ended.killed && !temps.is_empty() {
            found.push(format!(
                "temporaries left by a run not killed: {:?}",
                temps.iter().map(|r| show(r)).collect::<Vec<_>>()
            ));
        }
        if !found.is_empty() {
            return (found, f);
        }

        // (e)
        let o = output_within(
            seekless()
                .arg("tar")
                .arg("-f")
                .arg(&archive)
                .arg("-C")
                .arg(self.t.join("back"))
                .arg("src"),
            RUN_LIMIT,
        );
        if o.status.code() != Some(0) {
            found.push(format!(
                "(e) the clean re-run exited {:?}: {}",
                o.status.code(),
                stderr(&o)
            ));
            return (found, f);
        }
        let x = self.t.join("x-clean");
        fs::create_dir_all(&x).unwrap();
        run(Command::new("tar")
            .arg("-xf")
            .arg(&archive)
            .arg("-C")
            .arg(&x));
        let reference = self.t.join("cp-a");
        run(Command::new("cp").arg("-a").arg(&self.src).arg(&reference));
        compare_trees(
            &snapshot(&x.join("src")),
            &snapshot(&reference),
            false,
            &Snapshot::default(),
            false,
            "(e) tar -x vs cp -a",
            &mut found,
        );
        let temps: Vec<_> = snapshot(&self.out)
            .entries
            .into_keys()
            .filter(|r| temp_named(r))
            .collect();
        if !temps.is_empty() {
            found.push(format!(
                "(e) temporaries left after the clean re-run: {:?}",
                temps.iter().map(|r| show(r)).collect::<Vec<_>>()
            ));
        }
        (found, f)
    }

    // -----------------------------------------------------------------------------------
    // index

    /// `seekless index --db DB [extra] fuse/src` on a mount without faults (with the
    /// sub-mount, if the scenario has one).
    fn clean_index(&self, db: &Path, extra: &[&str]) -> std::process::Output {
        let log = self.t.join("clean.jsonl");
        let m = FaultMount::new(&self.src, &self.fsrc, &FaultArgs::default(), &log);
        let sub = self.s.sub_mount.then(|| {
            let at = self.fsrc.join("sub");
            FaultMount::new(&self.t.join("back/sub"), &at, &FaultArgs::default(), &log)
        });
        let o = output_within(
            seekless()
                .arg("index")
                .arg("--db")
                .arg(db)
                .args(extra)
                .arg(&self.fsrc)
                .env_remove("SEEKLESS_INJECT_FAULTS"),
            RUN_LIMIT,
        );
        if let Some(sub) = sub {
            sub.unmount();
        }
        m.unmount();
        o
    }

    fn index(&self) -> (Vec<String>, Faulty) {
        let mut found = Vec::new();
        let db = self.t.join("cat.db");
        let (v1, src_before) = self.prepare(|| assert_exit(&self.clean_index(&db, &[]), 0));
        let rows_before = self.rows(&db);
        for (rel, r) in rows_before
            .iter()
            .filter(|(rel, _)| !rel.starts_with(b"sub/"))
        {
            assert_eq!(
                r.blake3.as_deref(),
                v1.get(rel).and_then(|e| e.hash).map(hex).as_deref(),
                "the first catalog's hash of {}",
                show(rel)
            );
        }
        let dbs = db.to_string_lossy().into_owned();
        let mut args = vec!["index", "--db", &dbs];
        if self.s.job == Job::IndexRehash {
            args.push("--rehash");
        }
        let src_arg = self.fsrc.to_string_lossy().into_owned();
        args.push(&src_arg);
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let f = self.faulty_run(&args, self.t);
        let src_after = snapshot(&self.src);
        f.common_checks(&mut found);
        self.check_source(&src_before, &src_after, &f, &mut found);

        // (c)
        let failed = f.paths(&FAILING);
        let rows_after = self.rows(&db);
        let is_file = |s: &Snapshot, rel: &[u8]| s.get(rel).is_some_and(|e| e.kind == 'f');
        // What seekless cannot tell (docs/faults.md): a file appeared in the empty mount
        // point.
        let appeared = f.paths(&["appear"]).iter().any(|p| p.starts_with(b"sub/"));
        // The listing called the mount point itself a file: the walk's filter (images only)
        // skips it unopened.
        let listed_as_file = f.paths(&["change-type"]).iter().any(|p| p == b"sub");
        let exempt = appeared || listed_as_file;
        for (rel, b) in &rows_before {
            match rows_after.get(rel) {
                None if self.s.sub_mount && rel.starts_with(b"sub/") && !exempt => {
                    found.push(format!(
                        "(c) row {} of a sub-mount not mounted in this run removed",
                        show(rel)
                    ))
                }
                None => {
                    let listed_under_a_file = f
                        .paths(&["change-type"])
                        .iter()
                        .any(|p| at_or_under(rel, p) && p != rel);
                    let gone = listed_under_a_file
                        || (!is_file(&src_before, rel) && !is_file(&src_after, rel));
                    // Under a directory listed as a file, a row is seen gone: the
                    // listing is what the run knows.
                    let unseen = !listed_under_a_file && failed.iter().any(|p| at_or_under(rel, p));
                    if !gone || unseen {
                        found.push(format!(
                            "(c) row {} removed though its file {} (faults {:?})",
                            show(rel),
                            if gone {
                                "lies at or under a failed path"
                            } else {
                                "is still there"
                            },
                            fault_list(&f)
                        ));
                    }
                }
                Some(a) => {
                    let complete: Vec<String> = Self::versions(rel, &src_before, &src_after, &f)
                        .into_iter()
                        .map(hex)
                        .collect();
                    for (name, old, new) in b.known_fields(a) {
                        let overwritten = new.is_none() || new != old;
                        let by_a_complete_read = new.is_some()
                            && a.blake3.as_ref().is_some_and(|h| complete.contains(h));
                        if overwritten && !by_a_complete_read {
                            found.push(format!(
                                "(c) row {}: known {name} {old:?} became {new:?} (error {:?}; faults {:?})",
                                show(rel),
                                a.error,
                                fault_list(&f)
                            ));
                        }
                    }
                }
            }
        }
        if !found.is_empty() {
            return (found, f);
        }

        // (e): a clean re-run, then the catalog equals a fresh one. Both exit alike: 0, or
        // 1 for images a shrink left truncated.
        let o = self.clean_index(&db, &[]);
        let fresh = self.t.join("fresh.db");
        let o_fresh = self.clean_index(&fresh, &[]);
        if o.status.code() != o_fresh.status.code() || !matches!(o.status.code(), Some(0 | 1)) {
            found.push(format!(
                "(e) the clean re-run exited {:?}, a fresh one {:?}: {} | {}",
                o.status.code(),
                o_fresh.status.code(),
                stderr(&o),
                stderr(&o_fresh)
            ));
            return (found, f);
        }
        let (got, want) = (self.rows(&db), self.rows(&fresh));
        let names: BTreeSet<&Vec<u8>> = got.keys().chain(want.keys()).collect();
        for rel in names {
            if got.get(rel) != want.get(rel) {
                found.push(format!(
                    "(e) catalog row {}: {:?}, a fresh catalog has {:?}",
                    show(rel),
                    got.get(rel),
                    want.get(rel)
                ));
            }
        }
        (found, f)
    }

    /// The catalog's rows by path relative to the source.
    fn rows(&self, db: &Path) -> BTreeMap<Vec<u8>, Row> {
        let conn =
            rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let mut st = conn
            .prepare("SELECT path_bytes, size, mtime_ns, format, width, height, blake3, error FROM images")
            .unwrap();
        let prefix = {
            let mut p = self.fsrc.as_os_str().as_bytes().to_vec();
            p.push(b'/');
            p
        };
        st.query_map([], |r| {
            let path: Vec<u8> = r.get(0)?;
            Ok((
                path.strip_prefix(&prefix[..]).unwrap_or(&path).to_vec(),
                Row {
                    size: r.get(1)?,
                    mtime_ns: r.get(2)?,
                    format: r.get(3)?,
                    width: r.get(4)?,
                    height: r.get(5)?,
                    blake3: r.get(6)?,
                    error: r.get(7)?,
                },
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    }
}

#[derive(Clone, Debug)]
struct Row {
    size: i64,
    mtime_ns: i64,
    format: Option<String>,
    width: Option<i64>,
    height: Option<i64>,
    blake3: Option<String>,
    error: Option<String>,
}

impl PartialEq for Row {
    fn eq(&self, o: &Row) -> bool {
        (
            self.size,
            self.mtime_ns,
            &self.format,
            self.width,
            self.height,
            &self.blake3,
            &self.error,
        ) == (
            o.size, o.mtime_ns, &o.format, o.width, o.height, &o.blake3, &o.error,
        )
    }
}

impl Eq for Row {}

impl Row {
    /// (name, before, after) of each field this row knew (not NULL).
    fn known_fields(&self, after: &Row) -> Vec<(&'static str, Option<String>, Option<String>)> {
        let s = |v: &Option<i64>| v.map(|x| x.to_string());
        [
            ("format", self.format.clone(), after.format.clone()),
            ("width", s(&self.width), s(&after.width)),
            ("height", s(&self.height), s(&after.height)),
            ("blake3", self.blake3.clone(), after.blake3.clone()),
        ]
        .into_iter()
        .filter(|(_, old, _)| old.is_some())
        .collect()
    }
}

fn hex(h: [u8; 32]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

fn ancestors(rel: &[u8]) -> impl Iterator<Item = &[u8]> {
    rel.iter()
        .enumerate()
        .filter(|(_, b)| **b == b'/')
        .map(move |(i, _)| &rel[..i])
}

fn fault_list(f: &Faulty) -> Vec<String> {
    f.faults
        .iter()
        .map(|l| format!("{} {}", l.kind, show(&l.path)))
        .collect()
}

/// `got` equals `want` entry by entry (kind, mode, content, symlink target, and mtime of
/// files and symlinks, to the nanosecond or the second), and in its hard links; with
/// `extras_from`, entries of `got` that `want` lacks are allowed if they were there before
/// (a copy without --delete keeps them).
fn compare_trees(
    got: &Snapshot,
    want: &Snapshot,
    allow_old_extras: bool,
    extras_from: &Snapshot,
    nanoseconds: bool,
    what: &str,
    found: &mut Vec<String>,
) {
    let names: BTreeSet<&Vec<u8>> = got.entries.keys().chain(want.entries.keys()).collect();
    let view = |e: &Entry| {
        let mtime = if nanoseconds { e.mtime } else { (e.mtime.0, 0) };
        (
            e.kind,
            e.mode,
            e.hash,
            e.target.clone(),
            (e.kind != 'd').then_some(mtime),
        )
    };
    for rel in names {
        match (got.get(rel), want.get(rel)) {
            (Some(g), Some(w)) if view(g) == view(w) => {}
            (Some(_), None) if allow_old_extras && extras_from.get(rel).is_some() => {}
            (g, w) => found.push(format!(
                "{what}: {}: got {:?}, want {:?}",
                show(rel),
                g.map(view),
                w.map(view)
            )),
        }
    }
    let links = |s: &Snapshot| -> BTreeSet<Vec<Vec<u8>>> {
        s.hard_links()
            .into_iter()
            .map(|g| {
                g.into_iter()
                    .filter(|r| want.get(r).is_some())
                    .collect::<Vec<_>>()
            })
            .filter(|g| g.len() > 1)
            .collect()
    };
    if links(got) != links(want) {
        found.push(format!(
            "{what}: hard links {:?}, want {:?}",
            links(got),
            links(want)
        ));
    }
}
