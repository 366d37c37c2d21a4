//! Plan: one ordered sweep per physical disk.
//!
//! [`Plan::build`] runs walk → locate → device → plan: every file is opened once, located
//! with its filesystem's strategy, assigned to its disk, and each disk's files are sorted
//! by device offset. Fragmented files keep their extent lists, so the reader can fetch
//! each extent at its own place in the sweep. Files without a physical position go after
//! the located ones on their disk, by inode number (or as given).

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::device::{Disk, DiskIndex, DiskMap};
use crate::error::Error;
use crate::locate::{Filesystem, Ladder, Placement, Strategy};
use crate::os;
use crate::report::Reporter;
use crate::walk::{self, Entry, WalkOptions, WalkStats};

/// How to build a plan.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// How to walk the inputs.
    pub walk: WalkOptions,
    /// Use this strategy instead of choosing per filesystem (it still falls back to inode
    /// order where it is unsupported).
    pub strategy: Option<Strategy>,
    /// Ask the filesystem to flush delayed allocations before mapping (`FIEMAP_FLAG_SYNC`).
    /// This writes to the disk; off by default.
    pub sync: bool,
}

/// The orders a plan can list its files in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Per disk, by device offset: the order seekless reads in.
    Physical,
    /// By device and inode number (what `tar --sort=inode` does).
    Inode,
    /// By path, bytewise.
    Path,
    /// As given: inputs in order, directories in readdir order (what `find` prints).
    Given,
}

/// One file in a plan.
#[derive(Clone, Debug)]
pub struct PlannedFile {
    /// What the walk found.
    pub entry: Entry,
    /// Where its data lies.
    pub placement: Placement,
    /// The disk it is on (index into [`Plan::disks`]).
    pub disk: DiskIndex,
    /// The filesystem it is on (index into [`Plan::filesystems`]).
    pub filesystem: u16,
    /// Offset of its filesystem on the disk (a partition's start), added to device offsets
    /// so files of several partitions of one disk sort together.
    pub base: u64,
}

impl PlannedFile {
    /// The position on the whole disk to sort by, if known.
    pub fn disk_offset(&self) -> Option<u64> {
        self.placement
            .physical()
            .map(|p| p.saturating_add(self.base))
    }
}

/// The files of one disk, in the order to read them.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The disk.
    pub disk: DiskIndex,
    /// Indices into [`Plan::files`], in physical order.
    pub files: Vec<u32>,
}

/// What one filesystem got.
#[derive(Clone, Debug, Serialize)]
pub struct FilesystemReport {
    /// Device number, kind and the ladder chosen for it.
    #[serde(flatten)]
    pub filesystem: Filesystem,
    /// The strategy it ended up with.
    pub strategy: Strategy,
    /// Why it was demoted down the ladder, if it was.
    pub demotions: Vec<String>,
    /// The disk it is on.
    pub disk: DiskIndex,
    /// Files planned on it.
    pub files: u64,
}

/// Counts and times of a plan.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Distinct regular files planned.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files with more than one extent.
    pub fragmented: u64,
    /// Files without a physical position (inode or given order).
    pub unlocated: u64,
    /// Files and directories reached more than once, each taken once: files by hard
    /// links or overlapping inputs, directories by bind mounts, links followed or
    /// overlapping inputs (also in [`WalkStats::revisited_dirs`]).
    pub duplicates: u64,
    /// What the walk skipped.
    pub walk: WalkStats,
    /// Wall time of walking and locating together (they share one open per file).
    #[serde(serialize_with = "secs")]
    pub walk_time: Duration,
    /// Time spent in locate calls, summed over threads.
    #[serde(serialize_with = "secs")]
    pub locate_time: Duration,
    /// Time spent sorting.
    #[serde(serialize_with = "secs")]
    pub sort_time: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Where every file lies and the order to read them in.
#[derive(Debug)]
pub struct Plan {
    files: Vec<PlannedFile>,
    disks: Vec<Disk>,
    filesystems: Vec<FilesystemReport>,
    sweeps: Vec<Sweep>,
    summary: Summary,
}

struct FsState {
    index: u16,
    filesystem: Filesystem,
    ladder: Ladder,
    disk: DiskIndex,
    base: u64,
}

impl Plan {
    /// Walks `inputs`, locates every regular file and orders each disk's files.
    ///
    /// Per-path errors go to `reporter` and are counted in
    /// [`Summary::walk`](Summary::walk); the plan holds every file that could be planned.
    ///
    /// ```
    /// use seekless::{Plan, PlanOptions, Quiet};
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("a"), b"hello")?;
    /// let plan = Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet);
    /// assert_eq!(plan.summary().files, 1);
    /// for sweep in plan.sweeps() {
    ///     for &i in &sweep.files {
    ///         println!("{}", plan.files()[i as usize].entry.path.display());
    ///     }
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build(inputs: &[PathBuf], opts: &PlanOptions, reporter: &dyn Reporter) -> Plan {
        let started = Instant::now();
        let disks = DiskMap::default();
        // Read for every file, written once per filesystem.
        let filesystems: RwLock<HashMap<u64, Arc<FsState>>> = RwLock::new(HashMap::new());
        let locate_nanos = AtomicU64::new(0);
        let planned = AtomicU64::new(0);
        let planned_bytes = AtomicU64::new(0);

        let fs_state = |file: &File, dev: u64| -> Arc<FsState> {
            if let Some(fs) = filesystems
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(&dev)
            {
                return fs.clone();
            }
            let mut map = filesystems.write().unwrap_or_else(|e| e.into_inner());
            let next = map.len() as u16;
            map.entry(dev)
                .or_insert_with(|| {
                    let mut filesystem = os::filesystem(file, dev);
                    if let Some(forced) = opts.strategy {
                        filesystem.ladder = if forced.is_physical() {
                            vec![forced, Strategy::Inode]
                        } else {
                            vec![forced]
                        };
                    }
                    let (disk, base) = disks.index_of(dev);
                    Arc::new(FsState {
                        index: next,
                        ladder: Ladder::new(filesystem.ladder.clone()),
                        filesystem,
                        disk,
                        base,
                    })
                })
                .clone()
        };

        let visit = |entry: Entry, file: &File| -> Result<PlannedFile, Error> {
            let fs = fs_state(file, entry.id.dev);
            let t = Instant::now();
            let placement = fs
                .ladder
                .locate(file, entry.size, opts.sync)
                .map_err(|e| Error::io(&*entry.path, e))?;
            locate_nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            let n = planned.fetch_add(1, Ordering::Relaxed) + 1;
            let b = planned_bytes.fetch_add(entry.size, Ordering::Relaxed) + entry.size;
            if n % 1024 == 0 {
                reporter.planned(n, b);
            }
            Ok(PlannedFile {
                entry,
                placement,
                disk: fs.disk,
                filesystem: fs.index,
                base: fs.base,
            })
        };
        let (mut files, walk_stats) = walk::walk(inputs, &opts.walk, reporter, &visit);
        let walk_time = started.elapsed();

        let sorting = Instant::now();
        let duplicates = dedup(&mut files, reporter) + walk_stats.revisited_dirs;
        let mut fs_list: Vec<Arc<FsState>> = filesystems
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_values()
            .collect();
        fs_list.sort_by_key(|f| f.index);
        let mut files_per_fs = vec![0u64; fs_list.len()];
        for f in &files {
            files_per_fs[f.filesystem as usize] += 1;
        }
        let disks = disks.into_disks();
        let sweeps = sweeps(&files, disks.len());
        let sort_time = sorting.elapsed();

        let summary = Summary {
            files: files.len() as u64,
            bytes: files.iter().map(|f| f.entry.size).sum(),
            fragmented: files.iter().filter(|f| f.placement.is_fragmented()).count() as u64,
            unlocated: files
                .iter()
                .filter(|f| f.placement.physical().is_none() && f.entry.size > 0)
                .count() as u64,
            duplicates,
            walk: walk_stats,
            walk_time,
            locate_time: Duration::from_nanos(locate_nanos.into_inner()),
            sort_time,
        };
        let filesystems = fs_list
            .into_iter()
            .zip(files_per_fs)
            .map(|(f, files)| FilesystemReport {
                strategy: f.ladder.current(),
                demotions: f.ladder.demotions(),
                disk: f.disk,
                files,
                filesystem: f.filesystem.clone(),
            })
            .collect();
        Plan {
            files,
            disks,
            filesystems,
            sweeps,
            summary,
        }
    }

    /// Every planned file, in given order.
    pub fn files(&self) -> &[PlannedFile] {
        &self.files
    }

    /// The disks files were found on.
    pub fn disks(&self) -> &[Disk] {
        &self.disks
    }

    /// The filesystems files were found on, with the strategy each got.
    pub fn filesystems(&self) -> &[FilesystemReport] {
        &self.filesystems
    }

    /// One sweep per disk, each in physical order.
    pub fn sweeps(&self) -> &[Sweep] {
        &self.sweeps
    }

    /// Counts and times.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// All files in the given order, as indices into [`files`](Self::files). Physical
    /// order lists the disks one after another.
    pub fn order(&self, by: Order) -> Vec<u32> {
        let mut idx: Vec<u32> = (0..self.files.len() as u32).collect();
        match by {
            Order::Given => {}
            Order::Physical => {
                idx = self
                    .sweeps
                    .iter()
                    .flat_map(|s| s.files.iter().copied())
                    .collect();
            }
            Order::Inode => idx.sort_by_key(|&i| self.files[i as usize].entry.id),
            Order::Path => idx.sort_by(|&a, &b| {
                self.files[a as usize]
                    .entry
                    .path
                    .as_os_str()
                    .cmp(self.files[b as usize].entry.path.as_os_str())
            }),
        }
        idx
    }
}

/// Removes second and later sightings of the same file, keeping the earliest in given
/// order, and tells `reporter` of each. Returns how many were removed.
fn dedup(files: &mut Vec<PlannedFile>, reporter: &dyn Reporter) -> u64 {
    let mut by_id: Vec<u32> = (0..files.len() as u32).collect();
    by_id.sort_unstable_by_key(|&i| (files[i as usize].entry.id, i));
    let mut drop = vec![false; files.len()];
    let mut removed = 0;
    // The earliest sighting of the file at hand.
    let mut first = by_id.first().copied().unwrap_or(0);
    for pair in by_id.windows(2) {
        let (kept, again) = (&files[first as usize], &files[pair[1] as usize]);
        if kept.entry.id != again.entry.id {
            first = pair[1];
        } else {
            drop[pair[1] as usize] = true;
            removed += 1;
            reporter.skipped(
                &again.entry.path,
                &format!("same file as {}", kept.entry.path.display()),
            );
        }
    }
    if removed > 0 {
        let mut i = 0;
        files.retain(|_| {
            let keep = !drop[i];
            i += 1;
            keep
        });
    }
    removed
}

/// Groups files by disk and sorts each group: located files by disk offset, then the rest
/// by inode (or given order where even inode numbers mean nothing).
fn sweeps(files: &[PlannedFile], disks: usize) -> Vec<Sweep> {
    let mut per_disk: Vec<Vec<u32>> = vec![Vec::new(); disks];
    for (i, f) in files.iter().enumerate() {
        per_disk[f.disk as usize].push(i as u32);
    }
    per_disk
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(disk, mut v)| {
            v.sort_by_key(|&i| {
                let f = &files[i as usize];
                match (f.disk_offset(), f.placement.strategy) {
                    (Some(off), _) => (0u8, off, 0u64, i),
                    (None, Strategy::Given) => (2, 0, 0, i),
                    (None, _) => (1, u64::from(f.filesystem), f.entry.id.ino, i),
                }
            });
            Sweep {
                disk: disk as DiskIndex,
                files: v,
            }
        })
        .collect()
}
