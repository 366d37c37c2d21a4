//! The duplicate acts under seeded interference: an invariant over random scenarios, as
//! `faults.rs` has for copy, tar and index (docs/faults.md). Each seed makes a library of
//! duplicate groups (a keeper under `keep/`, copies under `copy/`), indexes it, and runs
//! `dupes --act` (move, trash or hard link) with the fault hooks armed: some files are
//! rewritten in place with their mtime put back once checked (`seekless-fault-retouch…`),
//! some have another file swapped in just before their act (`seekless-fault-swap…`), and
//! one run in three is held at one file's act (`seekless-fault-pause…`) and killed with
//! SIGKILL there. Then, and again after a clean re-run of the same act:
//!
//! - every byte sequence that existed (each group's content, each edit made, each file
//!   swapped in) is still in a file the user can reach: at its place, under the move
//!   folder, or in the trash;
//! - after the clean re-run, no temporary of ours is left beside the photos and every
//!   `.trashinfo` has its file in the trash.
//!
//! `SEEKLESS_ACT_SEEDS=A..B` (or `A,B,C`) replaces the CI set.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;

/// The seeds CI runs.
const CI_SEEDS: std::ops::RangeInclusive<u64> = 1..=24;

const ACTS: [&str; 3] = ["move", "trash", "hardlink"];

/// A GIF of `w` × `h` with `tail` after its trailer: its content told apart by both.
fn gif(w: u16, h: u16, tail: &[u8]) -> Vec<u8> {
    let mut g = b"GIF89a".to_vec();
    g.extend_from_slice(&w.to_le_bytes());
    g.extend_from_slice(&h.to_le_bytes());
    g.extend_from_slice(b"\0\0\0;");
    g.extend_from_slice(tail);
    g
}

fn hash(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// The regular files under `dir` (none if it is missing).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            match fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => stack.push(p),
                Ok(m) if m.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

struct Scenario {
    act: &'static str,
    /// Each group's content, its keeper's name under `keep/`, and the names of its copies
    /// under `copy/`.
    groups: Vec<(Vec<u8>, String, Vec<String>)>,
    /// A copy whose act the run is held at, then killed.
    held: Option<String>,
}

fn scenario(seed: u64) -> Scenario {
    let mut rng = Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0xac75);
    let act = ACTS[rng.below(3) as usize];
    let mut groups = Vec::new();
    let n = 3 + rng.below(5);
    for g in 0..n {
        let len = rng.below(4000) as usize;
        let tail = rng.bytes(len);
        let content = gif(1 + g as u16, 1 + rng.below(50) as u16, &tail);
        let keeper = match rng.below(6) {
            0 => format!("seekless-fault-retouch-k{g}.gif"),
            _ => format!("k{g}.gif"),
        };
        let mut copies = Vec::new();
        for c in 0..1 + rng.below(3) {
            let prefix = match rng.below(6) {
                0 => "seekless-fault-retouch-",
                1 => "seekless-fault-swap-",
                _ => "",
            };
            copies.push(format!("{prefix}g{g}-{c}.gif"));
        }
        groups.push((content, keeper, copies));
    }
    let held = (rng.below(3) == 0).then(|| {
        // The held copy is one more of some group, named to be held.
        let g = rng.below(n) as usize;
        let name = format!("seekless-fault-pause-g{g}.gif");
        groups[g].2.push(name.clone());
        name
    });
    Scenario { act, groups, held }
}

struct Run<'a> {
    s: &'a Scenario,
    photos: PathBuf,
    db: PathBuf,
    moved: PathBuf,
    data: PathBuf,
    dir: &'a Path,
}

impl Run<'_> {
    fn index(&self) -> std::process::Output {
        output_within(
            seekless()
                .args(["index", "--db"])
                .arg(&self.db)
                .arg(&self.photos),
            RUN_LIMIT,
        )
    }

    fn act_cmd(&self, journal: &Path) -> std::process::Command {
        let mut cmd = seekless();
        cmd.args(["dupes", "--db"])
            .arg(&self.db)
            .arg("--prefer")
            .arg(self.photos.join("keep"))
            .args(["--act", self.s.act, "--journal"])
            .arg(journal)
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .env("XDG_DATA_HOME", &self.data);
        if self.s.act == "move" {
            cmd.arg("--to").arg(&self.moved);
        }
        cmd
    }

    /// Every byte sequence that existed, as far as the markers the hooks leave tell.
    fn required(&self) -> BTreeSet<[u8; 32]> {
        let mut want: BTreeSet<[u8; 32]> = self.s.groups.iter().map(|(c, _, _)| hash(c)).collect();
        for (content, keeper, copies) in &self.s.groups {
            let places = copies
                .iter()
                .map(|n| self.photos.join("copy").join(n))
                .chain([self.photos.join("keep").join(keeper)]);
            for at in places {
                let marker = |suffix: &str| {
                    let mut m = at.as_os_str().to_owned();
                    m.push(suffix);
                    Path::new(&m).exists()
                };
                if marker(".retouched") {
                    let mut edited = content.clone();
                    *edited.last_mut().unwrap() ^= 0xff;
                    want.insert(hash(&edited));
                }
                if marker(".swapped") {
                    want.insert(hash(b"another file, put here by the test"));
                }
            }
        }
        want
    }

    /// What the user can reach: the photos, the move folder, the trash's files.
    fn reachable(&self) -> BTreeSet<[u8; 32]> {
        [
            self.photos.clone(),
            self.moved.clone(),
            self.data.join("Trash/files"),
        ]
        .iter()
        .flat_map(|d| files(d))
        .filter_map(|p| fs::read(&p).ok())
        .map(|b| hash(&b))
        .collect()
    }

    fn check_bytes(&self, when: &str, found: &mut Vec<String>) {
        let have = self.reachable();
        let lost = self.required().difference(&have).count();
        if lost > 0 {
            found.push(format!("{when}: {lost} byte sequences reachable nowhere"));
        }
    }

    fn check_clean(&self, found: &mut Vec<String>) {
        for p in files(&self.photos) {
            if p.to_string_lossy().contains(".seekless-tmp-") {
                found.push(format!("a temporary left: {}", p.display()));
            }
        }
        for info in files(&self.data.join("Trash/info")) {
            let name = info.file_stem().unwrap();
            if !self.data.join("Trash/files").join(name).exists() {
                found.push(format!("an orphan .trashinfo: {}", info.display()));
            }
        }
    }
}

fn run_seed(seed: u64) -> Vec<String> {
    let s = scenario(seed);
    let t = scratch_dir(&format!("acts-{seed}"));
    let r = Run {
        s: &s,
        photos: t.path().join("photos"),
        db: t.path().join("photos.db"),
        moved: t.path().join("moved"),
        data: t.path().join("data"),
        dir: t.path(),
    };
    for (content, keeper, copies) in &s.groups {
        let keeper = r.photos.join("keep").join(keeper);
        fs::create_dir_all(keeper.parent().unwrap()).unwrap();
        fs::write(&keeper, content).unwrap();
        for name in copies {
            let at = r.photos.join("copy").join(name);
            fs::create_dir_all(at.parent().unwrap()).unwrap();
            fs::write(at, content).unwrap();
        }
    }
    fs::create_dir_all(&r.data).unwrap();
    let mut found = Vec::new();
    let o = r.index();
    if o.status.code() != Some(0) {
        return vec![format!("seed {seed}: index failed: {}", stderr(&o))];
    }
    let journal = r.dir.join("first.journal");
    match &s.held {
        None => {
            let o = output_within(&mut r.act_cmd(&journal), RUN_LIMIT);
            if o.status.code().is_none_or(|c| c > 1) || stderr(&o).contains("panicked") {
                found.push(format!(
                    "the run exited {:?}: {}",
                    o.status.code(),
                    stderr(&o)
                ));
            }
        }
        Some(held) => {
            // Held at its act (the journal has its intent), then killed there.
            let held_path = r.photos.join("copy").join(held);
            let held_ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&held_path).unwrap());
            let mut run = Running(
                r.act_cmd(&journal)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            let deadline = Instant::now() + Duration::from_secs(60);
            let name = held.as_str();
            while !fs::read_to_string(&journal).is_ok_and(|j| j.contains(name)) {
                if run.0.try_wait().unwrap().is_some() || Instant::now() > deadline {
                    found.push("the run ended before it was held".into());
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            signal(&run.0, libc::SIGKILL);
            let _ = run.0.wait();
            let ino_now = fs::metadata(&held_path).map(|m| std::os::unix::fs::MetadataExt::ino(&m));
            if found.is_empty() && ino_now.ok() != Some(held_ino) {
                found.push("the kill landed after the held file's act".into());
            }
            let mut go = held_path.as_os_str().to_owned();
            go.push(".go");
            fs::write(PathBuf::from(go), b"").unwrap();
        }
    }
    r.check_bytes("after the run", &mut found);
    // A clean re-run of the same act: it cleans up after a killed run, and acts again.
    let o = r.index();
    if o.status.code().is_none_or(|c| c > 1) {
        found.push(format!(
            "the re-index exited {:?}: {}",
            o.status.code(),
            stderr(&o)
        ));
    }
    let o = output_within(&mut r.act_cmd(&r.dir.join("second.journal")), RUN_LIMIT);
    if o.status.code().is_none_or(|c| c > 1) || stderr(&o).contains("panicked") {
        found.push(format!(
            "the clean re-run exited {:?}: {}",
            o.status.code(),
            stderr(&o)
        ));
    }
    r.check_bytes("after the clean re-run", &mut found);
    r.check_clean(&mut found);
    eprintln!(
        "acts: seed {seed} {}{}: {}",
        s.act,
        if s.held.is_some() { " (killed)" } else { "" },
        if found.is_empty() { "ok" } else { "VIOLATED" }
    );
    found
        .into_iter()
        .map(|f| format!("seed {seed} ({}): {f}", s.act))
        .collect()
}

fn seeds() -> Vec<u64> {
    match std::env::var("SEEKLESS_ACT_SEEDS") {
        Ok(v) if v.contains("..") => {
            let (a, b) = v.split_once("..").unwrap();
            (a.trim().parse().unwrap()..b.trim().parse().unwrap()).collect()
        }
        Ok(v) => v.split(',').map(|s| s.trim().parse().unwrap()).collect(),
        Err(_) => CI_SEEDS.collect(),
    }
}

#[test]
fn seeded_acts_keep_every_byte_sequence_reachable_and_leave_nothing_of_ours() {
    let mut found = Vec::new();
    for seed in seeds() {
        found.extend(run_seed(seed));
    }
    assert!(
        found.is_empty(),
        "{} violations:\n{}",
        found.len(),
        found.join("\n")
    );
}
