//! Locate: where each file's data lies on its device.
//!
//! The operating system is asked for the file's extents (Linux `FS_IOC_FIEMAP`, Windows
//! `FSCTL_GET_RETRIEVAL_POINTERS`, macOS `F_LOG2PHYS_EXT`; the calls live in
//! `src/os/`). Not every filesystem answers, so each filesystem gets a *ladder* of
//! strategies — extents → block map (`FIBMAP`, root only) → inode number → given order —
//! chosen by `ladder` from facts (its kind, what the platform offers, a forced strategy,
//! privileges) and demoted on the first "unsupported" answer. The strategy each
//! filesystem ended up with is reported in the plan's summary.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::device::{Device, Devices};
use crate::error::Error;
use crate::fs_kind::FsKind;
use crate::measure::DiskJudge;
use crate::os;
use crate::placement::{LocateError, Placement, Strategy};
use crate::plan::{FilesystemReport, PlanOptions, PlannedFile, Split};
use crate::report::Reporter;
use crate::sync::{into_inner, into_inner_rw, lock, read, write};
use crate::walk::{self, Entry};

/// The strategies to try on a filesystem, best first: the one place that decides.
///
/// - `forced` (`--locate`): that strategy, falling back to inode order where it yields
///   no positions;
/// - memory and network filesystems (tmpfs, NFS, SMB): inode order, since there is no
///   disk of ours to sweep, and the server's inode numbers roughly follow its allocation;
/// - FUSE and kernel pseudo-filesystems: as given (their inode numbers are made up);
/// - everything else: the platform's physical strategies (`offered`, best first; those
///   that need privileges only with them), then inode order.
pub(crate) fn ladder(
    kind: FsKind,
    offered: &[Strategy],
    forced: Option<Strategy>,
    privileged: bool,
) -> Vec<Strategy> {
    if let Some(s) = forced {
        return if s.is_physical() {
            vec![s, Strategy::Inode]
        } else {
            vec![s]
        };
    }
    match kind {
        FsKind::Tmpfs | FsKind::Nfs | FsKind::Cifs => vec![Strategy::Inode],
        FsKind::Fuse | FsKind::Virtual => vec![Strategy::Given],
        _ => offered
            .iter()
            .copied()
            .filter(|s| privileged || !s.needs_privilege())
            .chain([Strategy::Inode])
            .collect(),
    }
}

/// Why a filesystem's strategy was given up for the next one on its ladder
/// ([`FilesystemReport::demotions`](crate::FilesystemReport::demotions)). Printed (and
/// serialized) as one line: `fiemap unsupported (Operation not supported), using inode`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Demotion {
    /// The filesystem (or this process) cannot use `from` at all: the operating system
    /// answered `error` for the first file tried with it; `to` is used from then on.
    #[non_exhaustive]
    Unsupported {
        /// The strategy given up.
        from: Strategy,
        /// The strategy used instead.
        to: Strategy,
        /// What the operating system said (shared: a report is cloned whole).
        error: Arc<io::Error>,
    },
    /// A filesystem over several devices (btrfs) could not be split into its member
    /// disks (`why`): swept whole, in its own address order, as one disk standing for all
    /// its members' ([`Disk::pool`](crate::Disk::pool)), or where its devices could not be
    /// listed, as the disk it was mounted from.
    #[non_exhaustive]
    NotSplit {
        /// What stood in the way (no `CAP_SYS_ADMIN` to read the chunk tree, RAID5/6).
        why: String,
    },
}

impl fmt::Display for Demotion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Demotion::Unsupported { from, to, error } => write!(
                f,
                "{from} unsupported ({}), using {to}",
                crate::error::describe_io(error)
            ),
            Demotion::NotSplit { why } => write!(
                f,
                "not split into its devices ({why}), swept whole in its address order"
            ),
        }
    }
}

impl Serialize for Demotion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A per-filesystem strategy that is demoted when the filesystem says "unsupported".
#[derive(Debug)]
pub(crate) struct Ladder {
    rungs: Vec<Strategy>,
    current: AtomicUsize,
    /// Why the ladder was demoted, for the report.
    demotions: Mutex<Vec<Demotion>>,
}

impl Ladder {
    pub(crate) fn new(rungs: Vec<Strategy>) -> Self {
        debug_assert!(!rungs.is_empty());
        Self {
            rungs,
            current: AtomicUsize::new(0),
            demotions: Mutex::new(Vec::new()),
        }
    }

    /// The strategies, best first, as chosen.
    pub(crate) fn rungs(&self) -> &[Strategy] {
        &self.rungs
    }

    pub(crate) fn current(&self) -> Strategy {
        self.rungs[self.current.load(Ordering::Acquire)]
    }

    /// Records something the filesystem's report should say (a pool left whole).
    pub(crate) fn note(&self, d: Demotion) {
        lock(&self.demotions).push(d);
    }

    /// Why the ladder was demoted, once done with it.
    pub(crate) fn into_demotions(self) -> Vec<Demotion> {
        into_inner(self.demotions)
    }

    /// Locates `file` with the current strategy, stepping down the ladder on "unsupported".
    /// The rung is read without a lock: it is consulted for every file and changes at most
    /// a few times per filesystem.
    pub(crate) fn locate(
        &self,
        file: &File,
        size: u64,
        sync: bool,
        volume: &os::Volume,
    ) -> io::Result<Placement> {
        loop {
            let at = self.current.load(Ordering::Acquire);
            let strategy = self.rungs[at];
            if !strategy.is_physical() {
                return Ok(Placement::unmapped(strategy));
            }
            match os::map_extents(file, strategy, size, sync, volume) {
                Ok(placement) => return Ok(placement),
                Err(LocateError::Io(e)) => return Err(e),
                Err(LocateError::Unsupported(e)) => {
                    if at + 1 == self.rungs.len() {
                        return Err(e);
                    }
                    // Whichever thread demotes first records why; the others just retry.
                    let demoted = self
                        .current
                        .compare_exchange(at, at + 1, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok();
                    if demoted {
                        lock(&self.demotions).push(Demotion::Unsupported {
                            from: strategy,
                            to: self.rungs[at + 1],
                            error: Arc::new(e),
                        });
                    }
                }
            }
        }
    }
}

/// A filesystem while its files are being located.
struct FsState {
    index: u32,
    ladder: Ladder,
    device: Arc<Device>,
    /// Not located: on a disk known not to seek, for a caller that reads in any order.
    unordered: bool,
    /// A FUSE filesystem that did not name a file's branch: not a pool (mergerfs names
    /// every file's), so its other files are not asked (a round trip to its server each).
    not_a_pool: AtomicBool,
}

/// Files a walk thread locates between two additions to the plan's shared counts (and
/// progress reports): few enough that progress shows early on a cold disk, many enough
/// that 64 threads do not contend for the counters file by file.
const COUNT_EVERY: u64 = 64;

/// Of a walk thread's locate calls, one in this many is timed (and counted this many times).
const TIME_EVERY: u64 = 16;

/// The locate stage: the walk's visitor, which locates each file the walk finds on the
/// walk's threads, choosing each filesystem's ladder when its first file is met. What it
/// learnt of the filesystems is [`finish`](Self::finish)ed into the plan's reports.
pub(crate) struct Locator<'a> {
    opts: &'a PlanOptions,
    judge: &'a DiskJudge,
    reporter: &'a dyn Reporter,
    devices: &'a Devices,
    privileged: bool,
    /// The state of each filesystem met, by device number: read for every file, written
    /// once per filesystem.
    filesystems: RwLock<HashMap<u64, Arc<FsState>>>,
    locate_nanos: AtomicU64,
    planned: AtomicU64,
    planned_bytes: AtomicU64,
}

/// One walk thread's part of [`Locator`]: the filesystem it met last (asked of the shared
/// map only when the device changes) and what it has not yet added to the shared counts.
#[derive(Default)]
pub(crate) struct LocatingThread {
    fs: Option<Arc<FsState>>,
    /// Locate calls made, to time every [`TIME_EVERY`]th.
    calls: u64,
    files: u64,
    bytes: u64,
    nanos: u64,
}

impl<'a> Locator<'a> {
    /// The locate stage of a plan built with `opts`, its disks judged by `judge`, on the
    /// devices `devices` (shared with the walk).
    pub(crate) fn new(
        opts: &'a PlanOptions,
        judge: &'a DiskJudge,
        reporter: &'a dyn Reporter,
        devices: &'a Devices,
    ) -> Self {
        Locator {
            opts,
            judge,
            reporter,
            devices,
            privileged: os::is_root(),
            filesystems: RwLock::new(HashMap::new()),
            locate_nanos: AtomicU64::new(0),
            planned: AtomicU64::new(0),
            planned_bytes: AtomicU64::new(0),
        }
    }

    /// The reports of the filesystems met, in the order first met, and the time spent in
    /// locate calls (summed over threads, estimated from every [`TIME_EVERY`]th call).
    pub(crate) fn finish(self) -> (Vec<FilesystemReport>, Duration) {
        let mut fs_list: Vec<FsState> = into_inner_rw(self.filesystems)
            .into_values()
            .map(|fs| Arc::try_unwrap(fs).unwrap_or_else(|_| unreachable!("the walk is over")))
            .collect();
        fs_list.sort_by_key(|f| f.index);
        let reports = fs_list
            .into_iter()
            .map(|f| FilesystemReport {
                dev: f.device.dev,
                kind: f.device.kind(),
                ladder: f.ladder.rungs().to_vec(),
                strategy: f.ladder.current(),
                demotions: f.ladder.into_demotions(),
                disk: f.device.disk,
                members: f.device.members.iter().map(|&(disk, _)| disk).collect(),
                max_prefetch: f.device.max_prefetch(),
                files: 0,
                unordered: f.unordered,
                split: os::striping(&f.device.volume)
                    .filter(|_| !f.device.members.is_empty())
                    .map(|layout| Split {
                        layout,
                        members: f.device.members.clone(),
                    }),
            })
            .collect();
        (
            reports,
            Duration::from_nanos(self.locate_nanos.into_inner()),
        )
    }

    /// The state of the filesystem of device `dev` (open as `file`), made when first met.
    fn fs_state(&self, file: &File, dev: u64) -> Arc<FsState> {
        if let Some(fs) = read(&self.filesystems).get(&dev) {
            return fs.clone();
        }
        let mut map = write(&self.filesystems);
        // One filesystem per device met, at most one per file: files are counted in
        // u32 (sweep indices), so this cannot fail. (A u16 here wrapped past 65,535
        // filesystems, e.g. btrfs snapshots, and mixed their files up.)
        let next = u32::try_from(map.len()).expect("fewer filesystems than files");
        map.entry(dev)
            .or_insert_with(|| Arc::new(self.first_met(file, dev, next)))
            .clone()
    }

    /// The state of a filesystem met for the first time, numbered `index`: its device,
    /// and the ladder of strategies its files are located with.
    fn first_met(&self, file: &File, dev: u64, index: u32) -> FsState {
        let opts = self.opts;
        let device = self.devices.device(dev, file);
        let rungs = ladder(
            device.kind(),
            os::EXTENT_STRATEGIES,
            opts.strategy,
            self.privileged,
        );
        // Where the ladder would locate, and the caller lets it, a disk known not to seek
        // is not located: inode order instead (measured here only then, once per disk;
        // the read reuses the verdict). (Not a pool's: its members may differ, and one
        // seeking is enough.)
        let unordered = opts.strategy.is_none()
            && opts.unordered_on_solid_state
            && device.members.is_empty()
            && rungs[0].is_physical()
            && self
                .judge
                .known_solid_state(&self.devices.disk(device.disk));
        let rungs = if unordered {
            vec![Strategy::Inode]
        } else {
            rungs
        };
        let ladder = Ladder::new(rungs);
        if let Some(why) = os::pool_note(&device.volume) {
            ladder.note(Demotion::NotSplit { why: why.into() });
        }
        FsState {
            index,
            ladder,
            device,
            unordered,
            not_a_pool: AtomicBool::new(false),
        }
    }

    /// Adds a thread's counts to the shared ones, reporting progress every 1,024 files.
    fn count(&self, local: &mut LocatingThread) {
        self.locate_nanos.fetch_add(local.nanos, Ordering::Relaxed);
        let n = self.planned.fetch_add(local.files, Ordering::Relaxed) + local.files;
        let b = self.planned_bytes.fetch_add(local.bytes, Ordering::Relaxed) + local.bytes;
        if n / 1024 != (n - local.files) / 1024 {
            self.reporter.planned(n, b);
        }
        local.files = 0;
        local.bytes = 0;
        local.nanos = 0;
    }

    /// The branch filesystem and the branch file of `entry`, a file of a pool (mergerfs)
    /// open as `file`, when the pool names its branch path and the file there is the one
    /// planned (a regular file of the same size and modification time): it is located
    /// there. The bytes are still read through the pool's path, so the file the reader
    /// opens and checks is the one the walk found; only the order comes from the branch.
    fn on_branch(&self, fs: &FsState, entry: &Entry, file: &File) -> Option<(Arc<FsState>, File)> {
        if fs.not_a_pool.load(Ordering::Relaxed) {
            return None;
        }
        let Some(path) = os::branch_path(file) else {
            fs.not_a_pool.store(true, Ordering::Relaxed);
            return None;
        };
        let branch = os::open_to_locate(&path, false).ok()?;
        let meta = branch.metadata().ok()?;
        let same =
            meta.is_file() && meta.len() == entry.size && meta.modified().ok() == entry.modified;
        if !same {
            return None;
        }
        let dev = os::file_id(&path, Some(&branch), &meta).ok()?.dev;
        Some((self.fs_state(&branch, dev), branch))
    }
}

impl walk::Visitor for Locator<'_> {
    type Item = PlannedFile;
    type Local = LocatingThread;

    fn local(&self) -> LocatingThread {
        LocatingThread::default()
    }

    fn visit(
        &self,
        local: &mut LocatingThread,
        entry: Entry,
        file: &File,
    ) -> Result<PlannedFile, Error> {
        let dev = entry.id.dev;
        let fs = match &local.fs {
            Some(fs) if fs.device.dev == dev => fs,
            _ => local.fs.insert(self.fs_state(file, dev)),
        };
        let timed = local.calls.is_multiple_of(TIME_EVERY);
        local.calls += 1;
        let t = timed.then(Instant::now);
        // A pool's file (mergerfs) is located on its branch, and swept with the branch's
        // disk; it is still read through the pool's path (see `on_branch`).
        let pooled = self.opts.strategy.is_none_or(Strategy::is_physical);
        let branch = if pooled && fs.device.kind() == FsKind::Fuse {
            self.on_branch(fs, &entry, file)
        } else {
            None
        };
        let (fs, file) = match &branch {
            Some((fs, branch_file)) => (fs, branch_file),
            None => (fs, file),
        };
        let placement = fs
            .ladder
            .locate(file, entry.size, self.opts.sync, &fs.device.volume)
            .map_err(|e| Error::io(&*entry.path, e))?;
        if let Some(t) = t {
            local.nanos += t.elapsed().as_nanos() as u64 * TIME_EVERY;
        }
        // A filesystem over several disks (btrfs): the file goes to the member holding it.
        let (disk, base, placement) = match fs.device.members.is_empty() {
            true => (fs.device.disk, fs.device.base, placement),
            false => match os::place_on_member(&fs.device.volume, &placement) {
                Some((member, key)) => {
                    let (disk, base) = fs.device.members[member];
                    (disk, base, placement.with_key(key))
                }
                None => (fs.device.disk, fs.device.base, placement),
            },
        };
        let planned = PlannedFile {
            disk,
            filesystem: fs.index,
            base,
            placement,
            entry,
        };
        local.files += 1;
        local.bytes += planned.entry.size;
        if local.files == COUNT_EVERY {
            self.count(local);
        }
        Ok(planned)
    }

    fn done(&self, mut local: LocatingThread) {
        self.count(&mut local);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Strategy::*;

    /// Every kind, so a new one cannot be added without deciding its ladder here.
    fn every_kind() -> Vec<FsKind> {
        let all = [
            FsKind::Ext4,
            FsKind::Xfs,
            FsKind::Btrfs,
            FsKind::F2fs,
            FsKind::Vfat,
            FsKind::Exfat,
            FsKind::Ntfs,
            FsKind::Refs,
            FsKind::Apfs,
            FsKind::Hfs,
            FsKind::Zfs,
            FsKind::Tmpfs,
            FsKind::Nfs,
            FsKind::Cifs,
            FsKind::Fuse,
            FsKind::Overlay,
            FsKind::Virtual,
            FsKind::Other,
        ];
        // Fails to compile when a kind is added and not listed above.
        for k in all {
            match k {
                FsKind::Ext4
                | FsKind::Xfs
                | FsKind::Btrfs
                | FsKind::F2fs
                | FsKind::Vfat
                | FsKind::Exfat
                | FsKind::Ntfs
                | FsKind::Refs
                | FsKind::Apfs
                | FsKind::Hfs
                | FsKind::Zfs
                | FsKind::Tmpfs
                | FsKind::Nfs
                | FsKind::Cifs
                | FsKind::Fuse
                | FsKind::Overlay
                | FsKind::Virtual
                | FsKind::Other => {}
            }
        }
        all.to_vec()
    }

    #[test]
    fn every_filesystem_kind_gets_its_ladder_on_every_platform() {
        // (platform, what it offers, privileged)
        let platforms: [(&str, &[Strategy], bool); 6] = [
            ("linux, root", &[Fiemap, Fibmap], true),
            ("linux, user", &[Fiemap, Fibmap], false),
            ("windows", &[RetrievalPointers], false),
            ("windows, elevated", &[RetrievalPointers], true),
            ("macos", &[Log2Phys], false),
            ("other", &[], false),
        ];
        for (platform, offered, privileged) in platforms {
            for kind in every_kind() {
                let want: Vec<Strategy> = match kind {
                    FsKind::Tmpfs | FsKind::Nfs | FsKind::Cifs => vec![Inode],
                    FsKind::Fuse | FsKind::Virtual => vec![Given],
                    _ => match platform {
                        "linux, root" => vec![Fiemap, Fibmap, Inode],
                        "linux, user" => vec![Fiemap, Inode],
                        "windows" | "windows, elevated" => vec![RetrievalPointers, Inode],
                        "macos" => vec![Log2Phys, Inode],
                        _ => vec![Inode],
                    },
                };
                assert_eq!(
                    ladder(kind, offered, None, privileged),
                    want,
                    "{kind} on {platform}"
                );
                // A forced strategy wins over the kind, falling back to inode order when
                // it gives positions.
                assert_eq!(
                    ladder(kind, offered, Some(Fiemap), privileged),
                    vec![Fiemap, Inode]
                );
                assert_eq!(ladder(kind, offered, Some(Given), privileged), vec![Given]);
                assert_eq!(ladder(kind, offered, Some(Inode), privileged), vec![Inode]);
            }
        }
    }

    #[test]
    fn a_demotion_reads_as_one_line_naming_both_strategies_and_the_os_answer() {
        let d = Demotion::Unsupported {
            from: Fiemap,
            to: Inode,
            error: Arc::new(io::Error::new(io::ErrorKind::Unsupported, "no extent map")),
        };
        let line = "fiemap unsupported (no extent map), using inode";
        assert_eq!(d.to_string(), line);
        // Serialized (`bench --json`) as the same line, as when it was a string.
        assert_eq!(serde_json::to_value(&d).unwrap(), line);
    }

    #[test]
    fn the_platform_backend_offers_what_the_ladder_expects() {
        let ladder = ladder(FsKind::Ext4, os::EXTENT_STRATEGIES, None, true);
        assert_eq!(ladder.last(), Some(&Inode));
        if cfg!(target_os = "linux") {
            assert_eq!(ladder, vec![Fiemap, Fibmap, Inode]);
        }
    }
}
