//! Plan: one ordered sweep per physical disk.
//!
//! [`Plan::build`] runs walk → locate → device → plan: every file is opened once, located
//! with its filesystem's strategy, assigned to its disk, and each disk's files are sorted
//! by device offset. Fragmented files keep their extent lists, so the reader can fetch
//! each extent at its own place in the sweep. Files without a physical position go after
//! the located ones on their disk, by inode number (or as given).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::device::Devices;
use crate::disk::{Disk, DiskIndex};
use crate::fs_kind::FsKind;
use crate::locate::{Demotion, Locator};
use crate::measure::{DiskJudge, Measurements};
use crate::os;
use crate::placement::{Placement, Strategy};
use crate::report::Reporter;
use crate::walk::{self, Entry, Other, WalkOptions, WalkStats, Walked};

/// How to build a plan.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct PlanOptions {
    /// How to walk the inputs.
    pub walk: WalkOptions,
    /// Use this strategy instead of choosing per filesystem (it still falls back to inode
    /// order where it is unsupported).
    pub strategy: Option<Strategy>,
    /// Ask the filesystem to flush delayed allocations before mapping (`FIEMAP_FLAG_SYNC`).
    /// This writes to the disk; off by default.
    pub sync: bool,
    /// For callers that only read the files, in whatever order is fastest: on a disk known
    /// before planning not to seek, files that would be located (no extent map per file)
    /// are taken in inode order instead, which costs a disk that does not seek nothing. Known means
    /// [`disk`](Self::disk) says solid-state, or (without it) the disk reports itself
    /// non-rotational and answers direct reads of its device node in microseconds (root).
    /// Ignored when [`strategy`](Self::strategy) is set. Off by default: a plan is in
    /// disk order (what `seekless order` prints).
    pub unordered_on_solid_state: bool,
    /// What kind of disk to take every disk for, the one place a run chooses it (plans
    /// and reads follow it); `None` (the default): measure each (a few small direct reads
    /// at scattered places, once per disk for these options and their clones: a median of
    /// 1 ms or more is a seeking disk), and where that
    /// cannot be done, take it for what it reports (rotational or unknown: seeking).
    /// Seeking disks are swept in order with waits at gaps; solid-state disks get no
    /// waits. The verdicts are in [`Reader::disks`](crate::read::Reader::disks) and
    /// [`Consumed::disks`](crate::read::Consumed::disks).
    pub disk: Option<crate::DiskKind>,
    /// The disks measured so far, shared by every plan built with these options or their
    /// clones (one run); new options measure afresh.
    pub(crate) measurements: Measurements,
}

impl PlanOptions {
    /// What these options take each disk for: the one decision of a disk's kind, made by
    /// [`DiskJudge`] from [`disk`](Self::disk) and [`measurements`](Self::measurements).
    pub(crate) fn judge(&self) -> DiskJudge {
        DiskJudge::new(self.disk, self.measurements.clone())
    }
}

/// The orders a plan can list its files in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct PlannedFile {
    /// What the walk found.
    pub entry: Entry,
    /// Where its data lies.
    pub placement: Placement,
    /// The disk it is on (index into [`Plan::disks`]).
    pub disk: DiskIndex,
    /// The filesystem it is on (index into [`Plan::filesystems`]).
    pub filesystem: u32,
    /// Offset of its filesystem on the disk (a partition's start), added to device offsets
    /// so files of several partitions of one disk sort together.
    pub base: u64,
}

impl PlannedFile {
    /// A file located by the caller, for [`Plan::from_located`]: on disk `disk` (an index
    /// into the plan's disks) and filesystem `filesystem` (an index into its filesystems).
    /// [`base`](Self::base) starts at 0; set it when the filesystem is a partition that
    /// starts further into the disk.
    pub fn new(entry: Entry, placement: Placement, disk: DiskIndex, filesystem: u32) -> Self {
        Self {
            entry,
            placement,
            disk,
            filesystem,
            base: 0,
        }
    }

    /// The position on the whole disk to sort by, if known.
    pub fn disk_offset(&self) -> Option<u64> {
        self.placement
            .physical()
            .map(|p| p.saturating_add(self.base))
    }
}

/// The files of one disk, in the order to read them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Sweep {
    /// The disk.
    pub disk: DiskIndex,
    /// Indices into [`Plan::files`], in physical order.
    pub files: Vec<u32>,
    /// Files of other sweeps with pieces on this disk too (a filesystem split into its
    /// members: btrfs RAID0 stripes, extents in chunks on another member), in plan order.
    /// This sweep prefetches those pieces as it passes them; the file is handed out by
    /// its own sweep, that of the member holding its first byte.
    pub(crate) guests: Vec<u32>,
}

/// What one filesystem is and got.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct FilesystemReport {
    /// The `st_dev` (or volume serial number) files on it report.
    pub dev: u64,
    /// Its kind.
    pub kind: FsKind,
    /// The strategies to try, best first, as chosen for it.
    pub(crate) ladder: Vec<Strategy>,
    /// The most one prefetch request brings in on it, in bytes, when the operating system
    /// caps it (Linux: `readahead(2)` reads at most the larger of the device's
    /// `max_sectors_kb` and `read_ahead_kb` per call and silently drops the rest). The
    /// reader cuts prefetches to this size. `None`: no known cap.
    pub max_prefetch: Option<u64>,
    /// The strategy it ended up with.
    pub strategy: Strategy,
    /// Why it was demoted down the ladder, if it was.
    pub demotions: Vec<Demotion>,
    /// The disk it is on: for one over several disks read whole (not split), one disk
    /// standing for them all ([`Disk::pool`](crate::Disk::pool)); for one split into them,
    /// the one it was mounted from.
    pub disk: DiskIndex,
    /// For a filesystem over several disks split into them (btrfs): its member disks, one
    /// sweep each, in the order of its device ids; empty otherwise.
    pub members: Vec<DiskIndex>,
    /// Files planned on it.
    pub files: u64,
    /// Whether its files were left unlocated because its disk does not seek and the
    /// caller reads in any order ([`PlanOptions::unordered_on_solid_state`]): its ladder
    /// is then inode order alone.
    pub unordered: bool,
    /// For a filesystem split into its members: how its addresses lie on them, and each
    /// member's disk and first byte there (the reader's, to prefetch each piece of a file
    /// in its member's sweep).
    #[serde(skip)]
    pub(crate) split: Option<Split>,
}

/// A filesystem over several disks, split into them (btrfs SINGLE, DUP, RAID0 data).
#[derive(Clone, Debug)]
pub(crate) struct Split {
    /// Where each piece of its address space lies.
    pub layout: Arc<os::Striping>,
    /// Each member's disk and its first byte on that disk, numbered as the layout's.
    pub members: Vec<(DiskIndex, u64)>,
}

impl FilesystemReport {
    /// A filesystem as the caller knows it, for [`Plan::from_located`]: device `dev`, of
    /// `kind`, on disk `disk`, its files located with `strategy` (and nothing else to
    /// try), no demotions, no prefetch cap; [`files`](Self::files) is
    /// counted by the plan.
    pub fn new(dev: u64, kind: FsKind, strategy: Strategy, disk: DiskIndex) -> Self {
        Self {
            dev,
            kind,
            ladder: vec![strategy],
            max_prefetch: None,
            strategy,
            demotions: Vec::new(),
            disk,
            members: Vec::new(),
            files: 0,
            unordered: false,
            split: None,
        }
    }
}

/// Counts and times of a plan.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
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
    /// Time spent in locate calls, summed over threads (estimated from every 16th call of
    /// each thread: reading the clock twice per file was a noticeable part of planning's
    /// CPU on a warm cache).
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
    /// Second and later sightings of planned files, in given order.
    aliases: Vec<Entry>,
    /// Directories, symlinks and special files, when the walk kept them.
    others: Vec<Other>,
    disks: Vec<Disk>,
    filesystems: Vec<FilesystemReport>,
    sweeps: Vec<Sweep>,
    summary: Summary,
    /// The caller's tags, when it gave its inputs some ([`Plan::build_tagged`]).
    tags: Option<Box<Tags>>,
    /// What its disks are taken for when read ([`PlanOptions::disk`],
    /// [`PlanOptions::measurements`]).
    judge: DiskJudge,
}

/// Which input each planned file and each alias came from, as the caller's tag. In given
/// order the inputs come one after another (files found under a directory right after
/// it), so a tag is kept once per run of files, not per file: 12 bytes per input that
/// yielded a file, nothing per file.
#[derive(Debug)]
struct Tags {
    files: Runs,
    aliases: Runs,
}

/// Runs of consecutive items of one tag.
#[derive(Debug, Default)]
struct Runs {
    /// Where each run starts, ascending; the first at 0.
    start: Vec<u32>,
    /// Each run's tag.
    tag: Vec<u64>,
}

impl Runs {
    /// The runs of inputs that yielded `counts[i]` items each, tagged `tag(i)`.
    fn from_counts(counts: &[u32], tag: impl Fn(usize) -> u64) -> Runs {
        let mut runs = Runs::default();
        let mut at = 0u32;
        for (i, &n) in counts.iter().enumerate() {
            if n > 0 {
                runs.start.push(at);
                runs.tag.push(tag(i));
                at += n;
            }
        }
        runs
    }

    /// The tag of item `i` (which must exist).
    fn get(&self, i: u32) -> Option<u64> {
        let run = self.start.partition_point(|&s| s <= i);
        run.checked_sub(1).map(|r| self.tag[r])
    }

    /// The runs of the items `kept` says were kept (one flag per item, in order),
    /// numbered afresh.
    fn keep(&self, kept: impl IntoIterator<Item = bool>) -> Runs {
        let mut out = Runs::default();
        let mut run = 0;
        let mut last = None;
        let mut n = 0u32;
        for (i, keep) in kept.into_iter().enumerate() {
            while run + 1 < self.start.len() && self.start[run + 1] as usize <= i {
                run += 1;
            }
            if keep {
                if last != Some(run) {
                    out.start.push(n);
                    out.tag.push(self.tag[run]);
                    last = Some(run);
                }
                n += 1;
            }
        }
        out
    }
}

impl Plan {
    /// Walks `inputs`, locates every regular file and orders each disk's files.
    ///
    /// Per-path errors go to `reporter` and are counted in
    /// [`Summary::walk`](Summary::walk); the plan holds every file that could be planned.
    ///
    /// ```
    /// use seekless_core::{Plan, PlanOptions, Quiet};
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
    pub fn build<P: AsRef<Path> + Sync>(
        inputs: &[P],
        opts: &PlanOptions,
        reporter: &dyn Reporter,
    ) -> Plan {
        Plan::build_from(inputs.iter().map(AsRef::as_ref), None, opts, reporter)
    }

    /// [`build`](Self::build) from inputs as they come: a caller holding many paths
    /// elsewhere (a manifest's names, rows of a catalog) plans from them without making
    /// a list of them first. The first inputs are taken in order on this thread, the rest
    /// shared out to the walk's threads (hence `Send`), before any directory is walked.
    ///
    /// ```
    /// use std::path::Path;
    /// use seekless_core::{Plan, PlanOptions, Quiet};
    /// let dir = tempfile::tempdir()?;
    /// let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    /// std::fs::write(&a, b"one")?;
    /// std::fs::write(&b, b"two")?;
    /// // One path per line, as a list of files holds them: planned without a copy.
    /// let list = format!("{}\n{}\n", a.display(), b.display());
    /// let plan = Plan::build_iter(list.lines().map(Path::new), &PlanOptions::default(), &Quiet);
    /// assert_eq!(plan.summary().files, 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build_iter<'p, I>(inputs: I, opts: &PlanOptions, reporter: &dyn Reporter) -> Plan
    where
        I: IntoIterator<Item = &'p Path>,
        I::IntoIter: Send,
    {
        Plan::build_from(inputs, None, opts, reporter)
    }

    /// [`build`](Self::build) with a tag of the caller's on each input (a row id, an
    /// index into its own list), which [`tag`](Self::tag) gives back for each planned
    /// file: a file found under a directory gets that directory's tag, a file reached
    /// through several inputs the tag of the first (the others' are on its
    /// [`aliases`](Self::aliases), [`alias_tag`](Self::alias_tag)).
    ///
    /// Costs 12 bytes per input that yielded a file, and nothing per file: a tag is kept
    /// per run of files of one input (given order takes the inputs one after another).
    ///
    /// ```
    /// use seekless_core::{Order, Plan, PlanOptions, Quiet};
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("album"))?;
    /// std::fs::write(dir.path().join("album/1.jpg"), b"one")?;
    /// std::fs::write(dir.path().join("album/2.jpg"), b"two")?;
    /// std::fs::write(dir.path().join("cover.jpg"), b"cover")?;
    /// // The caller's rows: the album is row 7, the cover row 8.
    /// let inputs = [(dir.path().join("album"), 7), (dir.path().join("cover.jpg"), 8)];
    /// let plan = Plan::build_tagged(&inputs, &PlanOptions::default(), &Quiet);
    /// for i in plan.order(Order::Physical) {
    ///     let file = &plan.files()[i as usize];
    ///     println!("row {:?}: {}", plan.tag(i), file.entry.path.display());
    /// }
    /// let rows: Vec<_> = (0..plan.files().len() as u32).map(|i| plan.tag(i)).collect();
    /// assert_eq!(rows, [Some(7), Some(7), Some(8)]); // files() is in given order
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build_tagged<P: AsRef<Path> + Sync>(
        inputs: &[(P, u64)],
        opts: &PlanOptions,
        reporter: &dyn Reporter,
    ) -> Plan {
        let paths = inputs.iter().map(|(p, _)| p.as_ref());
        Plan::build_from(paths, Some(&|i| inputs[i].1), opts, reporter)
    }

    /// [`build`](Self::build), tagging each input `tag(i)` when asked.
    fn build_from<'p, I>(
        inputs: I,
        tag: Option<&dyn Fn(usize) -> u64>,
        opts: &PlanOptions,
        reporter: &dyn Reporter,
    ) -> Plan
    where
        I: IntoIterator<Item = &'p Path>,
        I::IntoIter: Send,
    {
        let started = Instant::now();
        // Shared by the walk (directory read-ahead) and the locate stage.
        let devices = &Devices::default();
        let judge = opts.judge();
        let locator = Locator::new(opts, &judge, reporter, devices);
        let Walked {
            files,
            others,
            stats: walk_stats,
            per_input,
        } = walk::walk_on(
            inputs,
            &opts.walk,
            reporter,
            &locator,
            devices,
            tag.is_some(),
        );
        let walk_time = started.elapsed();
        let (filesystems, locate_time) = locator.finish();
        let runs = tag
            .zip(per_input)
            .map(|(tag, counts)| Runs::from_counts(&counts, tag));
        let mut plan = Plan::located(files, runs, filesystems, devices.disks(), reporter);
        plan.others = others;
        plan.summary.walk_time = walk_time;
        plan.summary.locate_time = locate_time;
        plan.summary.duplicates += walk_stats.revisited_dirs;
        plan.summary.walk = walk_stats;
        plan.judge = judge;
        plan
    }

    /// The pure step of planning: takes located files in given order (what the walk and
    /// the locate stage found, or what a caller found by its own means), the filesystems
    /// and disks they are on, and orders them. Drops second sightings of a file (same
    /// [`FileId`](crate::FileId); telling `reporter`, and keeping them as
    /// [`aliases`](Self::aliases)), sorts each disk's files by disk offset with the
    /// unlocated ones after them by inode (or as given), and counts. Walk statistics and
    /// times are left empty.
    ///
    /// ```
    /// use std::path::Path;
    /// use seekless_core::{
    ///     Disk, Entry, Extent, ExtentFlags, FileId, FilesystemReport, FsKind, Order, Placement,
    ///     Plan, PlannedFile, Quiet, Strategy,
    /// };
    /// // Placements a caller got elsewhere (its own extent maps, a previous run's catalog):
    /// // 4 KiB files on one ext4 filesystem (device 2049) of disk 0.
    /// let file = |path: &str, ino: u64, at: Option<u64>| {
    ///     let entry = Entry::new(Path::new(path), FileId::new(2049, ino), 4096, None);
    ///     let placement = match at {
    ///         Some(at) => {
    ///             let extent = Extent::new(0, at, 4096, ExtentFlags::LAST);
    ///             Placement::from_extents(Strategy::Fiemap, &[extent], 4096)
    ///         }
    ///         None => Placement::unmapped(Strategy::Inode),
    ///     };
    ///     PlannedFile::new(entry, placement, 0, 0)
    /// };
    /// let files = vec![
    ///     file("c.jpg", 30, Some(9 << 30)),
    ///     file("unmapped.jpg", 12, None),
    ///     file("a.jpg", 10, Some(1 << 20)),
    ///     file("b.jpg", 20, Some(5 << 30)),
    ///     file("link-to-a.jpg", 10, Some(1 << 20)), // a hard link: same FileId as a.jpg
    /// ];
    /// let filesystems = vec![FilesystemReport::new(2049, FsKind::Ext4, Strategy::Fiemap, 0)];
    /// let plan = Plan::from_located(files, filesystems, vec![Disk::unknown("sda")], &Quiet);
    ///
    /// let order: Vec<_> = plan.iter(Order::Physical).map(|f| &*f.entry.path).collect();
    /// // By offset on the disk, then the files without one by inode number.
    /// assert_eq!(order, ["a.jpg", "b.jpg", "c.jpg", "unmapped.jpg"].map(Path::new));
    /// assert_eq!(&*plan.aliases()[0].path, Path::new("link-to-a.jpg"));
    /// assert_eq!(plan.summary().unlocated, 1);
    /// ```
    ///
    /// # Panics
    ///
    /// If a file's [`disk`](PlannedFile::disk) or [`filesystem`](PlannedFile::filesystem)
    /// is not an index into `disks` or `filesystems`, or there are more than `u32::MAX`
    /// files.
    pub fn from_located(
        files: Vec<PlannedFile>,
        filesystems: Vec<FilesystemReport>,
        disks: Vec<Disk>,
        reporter: &dyn Reporter,
    ) -> Plan {
        assert!(
            u32::try_from(files.len()).is_ok(),
            "a plan holds at most u32::MAX files"
        );
        for f in &files {
            assert!(
                usize::from(f.disk) < disks.len() && (f.filesystem as usize) < filesystems.len(),
                "{}: disk {} or filesystem {} not given ({} disks, {} filesystems)",
                f.entry.path.display(),
                f.disk,
                f.filesystem,
                disks.len(),
                filesystems.len()
            );
        }
        Plan::located(files, None, filesystems, disks, reporter)
    }

    /// [`from_located`](Self::from_located), the files' tags as `runs` when there are some.
    fn located(
        mut files: Vec<PlannedFile>,
        runs: Option<Runs>,
        filesystems: Vec<FilesystemReport>,
        disks: Vec<Disk>,
        reporter: &dyn Reporter,
    ) -> Plan {
        let sorting = Instant::now();
        let (aliases, tags) = dedup(&mut files, runs, reporter);
        let mut plan = Plan::ordered(files, filesystems, disks);
        plan.summary.duplicates = aliases.len() as u64;
        plan.aliases = aliases;
        plan.tags = tags.map(Box::new);
        plan.summary.sort_time = sorting.elapsed();
        plan
    }

    /// Sweeps and counts for distinct files: the part of
    /// [`from_located`](Self::from_located) that
    /// [`retain`](Self::retain) needs too.
    fn ordered(
        files: Vec<PlannedFile>,
        mut filesystems: Vec<FilesystemReport>,
        disks: Vec<Disk>,
    ) -> Plan {
        for fs in &mut filesystems {
            fs.files = 0;
        }
        for f in &files {
            filesystems[f.filesystem as usize].files += 1;
        }
        let sweeps = sweeps(&files, &filesystems, disks.len());
        let summary = Summary {
            files: files.len() as u64,
            bytes: files.iter().map(|f| f.entry.size).sum(),
            fragmented: files.iter().filter(|f| f.placement.is_fragmented()).count() as u64,
            unlocated: files
                .iter()
                .filter(|f| f.placement.physical().is_none() && f.entry.size > 0)
                .count() as u64,
            ..Summary::default()
        };
        Plan {
            files,
            aliases: Vec::new(),
            others: Vec::new(),
            disks,
            filesystems,
            sweeps,
            summary,
            tags: None,
            judge: DiskJudge::default(),
        }
    }

    /// The plan of the files `keep` accepts (given their index and the file), in the same
    /// order, on the same disks; sweeps and counts are made afresh, the walk's statistics,
    /// times and duplicates are kept.
    pub fn retain(self, mut keep: impl FnMut(u32, &PlannedFile) -> bool) -> Plan {
        let Plan {
            files,
            aliases,
            others,
            disks,
            filesystems,
            summary,
            tags,
            judge,
            ..
        } = self;
        // Which files were kept, for renumbering the tags' runs (only when there are some).
        let mut kept = tags.as_ref().map(|_| Vec::with_capacity(files.len()));
        let files: Vec<PlannedFile> = files
            .into_iter()
            .enumerate()
            .filter(|(i, f)| {
                let k = keep(*i as u32, f);
                if let Some(kept) = &mut kept {
                    kept.push(k);
                }
                k
            })
            .map(|(_, f)| f)
            .collect();
        let mut plan = Plan::ordered(files, filesystems, disks);
        plan.aliases = aliases;
        plan.others = others;
        plan.judge = judge;
        plan.tags = tags.zip(kept).map(|(mut tags, kept)| {
            tags.files = tags.files.keep(kept);
            tags
        });
        let counts = std::mem::take(&mut plan.summary);
        plan.summary = Summary {
            files: counts.files,
            bytes: counts.bytes,
            fragmented: counts.fragmented,
            unlocated: counts.unlocated,
            ..summary
        };
        plan
    }

    /// This plan with every disk taken for `kind` when read, instead of measured (what
    /// [`PlanOptions::disk`] does for a plan that is built).
    pub fn with_disk_kind(mut self, kind: crate::DiskKind) -> Plan {
        self.judge.choose(kind);
        self
    }

    /// The kind every disk is taken for, if the caller chose ([`PlanOptions::disk`]).
    pub fn disk_choice(&self) -> Option<crate::DiskKind> {
        self.judge.chosen()
    }

    /// What its disks are taken for when read.
    pub(crate) fn judge(&self) -> &DiskJudge {
        &self.judge
    }

    /// Every planned file, in given order.
    pub fn files(&self) -> &[PlannedFile] {
        &self.files
    }

    /// Files reached more than once (by hard links or overlapping inputs): every sighting
    /// after the first, in given order. Each has the [`FileId`](crate::FileId) of a
    /// planned file.
    pub fn aliases(&self) -> &[Entry] {
        &self.aliases
    }

    /// The tag the caller gave the input that planned file `file` (an index into
    /// [`files`](Self::files)) came from, when the plan was built with
    /// [`build_tagged`](Self::build_tagged); `None` otherwise, or past the last file.
    pub fn tag(&self, file: u32) -> Option<u64> {
        let tags = self.tags.as_deref()?;
        ((file as usize) < self.files.len())
            .then(|| tags.files.get(file))
            .flatten()
    }

    /// The tag of the input that alias `alias` (an index into [`aliases`](Self::aliases))
    /// came from, when the plan was built with [`build_tagged`](Self::build_tagged);
    /// `None` otherwise, or past the last alias.
    pub fn alias_tag(&self, alias: u32) -> Option<u64> {
        let tags = self.tags.as_deref()?;
        ((alias as usize) < self.aliases.len())
            .then(|| tags.aliases.get(alias))
            .flatten()
    }

    /// Directories, symlinks and special files, in given order, when the walk kept them
    /// ([`WalkOptions::others`]).
    pub fn others(&self) -> &[Other] {
        &self.others
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

    /// All files in the given order. Physical order lists the disks one after another.
    ///
    /// ```
    /// use seekless_core::{Order, Plan, PlanOptions, Quiet};
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("b"), b"2")?;
    /// std::fs::write(dir.path().join("a"), b"1")?;
    /// let plan = Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet);
    /// let names: Vec<_> = plan.iter(Order::Path).map(|f| f.entry.path.file_name()).collect();
    /// assert_eq!(names, [Some("a".as_ref()), Some("b".as_ref())]);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn iter(&self, by: Order) -> impl ExactSizeIterator<Item = &PlannedFile> + '_ {
        self.order(by).into_iter().map(|i| &self.files[i as usize])
    }

    /// All files in the given order, as indices into [`files`](Self::files) (what
    /// [`iter`](Self::iter) walks).
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
/// order, and tells `reporter` of each. Returns the sightings removed, in given order, and
/// the tags of the files kept and of the sightings removed, given those of all (`runs`).
fn dedup(
    files: &mut Vec<PlannedFile>,
    runs: Option<Runs>,
    reporter: &dyn Reporter,
) -> (Vec<Entry>, Option<Tags>) {
    // Sightings by inode number, then in given order: (inode number, index) pairs, 16
    // bytes a file for the sort alone. Comparing through the files reached into a 136-byte
    // file twice per comparison (a cache miss each); sorting indices by keys in an array
    // beside them reached into that array at random (3x slower at a million files); the
    // device in the key as well made it 24 bytes. One file's sightings share an inode
    // number; so may other files', on other filesystems.
    let mut by_ino: Vec<(u64, u32)> = (files.iter().enumerate())
        .map(|(i, f)| (f.entry.id.ino, i as u32))
        .collect();
    by_ino.sort_unstable();
    let mut drop = vec![false; files.len()];
    let mut removed = 0usize;
    let mut same_ino: Vec<u32> = Vec::new();
    for run in by_ino.chunk_by(|x, y| x.0 == y.0) {
        if run.len() == 1 {
            continue;
        }
        // Rare: by device, then given order; the first of each device is the earliest
        // sighting of its file.
        same_ino.clear();
        same_ino.extend(run.iter().map(|&(_, i)| i));
        same_ino.sort_unstable_by_key(|&i| (files[i as usize].entry.id.dev, i));
        let mut kept = same_ino[0] as usize;
        for pair in same_ino.windows(2) {
            let again = pair[1] as usize;
            if files[again].entry.id.dev != files[kept].entry.id.dev {
                kept = again;
                continue;
            }
            drop[again] = true;
            removed += 1;
            reporter.skipped(
                &files[again].entry.path,
                &format!("same file as {}", files[kept].entry.path.display()),
            );
        }
    }
    std::mem::drop(by_ino);
    let tags = runs.map(|runs| Tags {
        files: runs.keep(drop.iter().map(|d| !d)),
        aliases: runs.keep(drop.iter().copied()),
    });
    let mut aliases = Vec::with_capacity(removed);
    if removed > 0 {
        let mut i = 0;
        files.retain_mut(|f| {
            let keep = !drop[i];
            i += 1;
            if !keep {
                aliases.push(f.entry.clone());
            }
            keep
        });
    }
    (aliases, tags)
}

/// Groups files by disk and sorts each group: located files by disk offset, then the rest
/// by inode (or given order where even inode numbers mean nothing). A file of a split
/// filesystem with pieces on other members is a guest of their disks' sweeps.
fn sweeps(files: &[PlannedFile], filesystems: &[FilesystemReport], disks: usize) -> Vec<Sweep> {
    /// One disk's files by how they are ordered: (sort key, index) pairs, 16 bytes a file
    /// for the sort alone (the order the sweep keeps is the 4-byte index). Keys cached
    /// beside the order took 40 bytes a file, at the peak of `hash --check` of a million
    /// lines; sorting indices by keys in an array beside them reached into that array at
    /// random (3x slower at a million files). Each pair ends with the index, so the order
    /// is the one a stable sort gives.
    #[derive(Clone, Default)]
    struct Classes {
        /// By disk offset.
        located: Vec<(u64, u32)>,
        /// By filesystem and inode number.
        unlocated: Vec<(u64, u32)>,
        /// As given, after the rest.
        given: Vec<u32>,
    }
    let mut per_disk = vec![Classes::default(); disks];
    let mut guests = vec![Vec::new(); disks];
    for (i, f) in files.iter().enumerate() {
        let classes = &mut per_disk[f.disk as usize];
        let i = i as u32;
        if let Some(split) = &filesystems[f.filesystem as usize].split {
            add_guest(i, f, split, &mut guests);
        }
        match (f.disk_offset(), f.placement.strategy) {
            (Some(offset), _) => classes.located.push((offset, i)),
            (None, Strategy::Given) => classes.given.push(i),
            (None, _) => classes.unlocated.push((f.entry.id.ino, i)),
        }
    }
    per_disk
        .into_iter()
        .zip(guests)
        .enumerate()
        .filter_map(|(disk, (c, guests))| {
            let Classes {
                mut located,
                mut unlocated,
                given,
            } = c;
            located.sort_unstable();
            let filesystem = |i: u32| files[i as usize].filesystem;
            if unlocated
                .windows(2)
                .all(|w| filesystem(w[0].1) == filesystem(w[1].1))
            {
                unlocated.sort_unstable();
            } else {
                // Several filesystems of one disk (partitions) unlocated: rare.
                unlocated.sort_unstable_by_key(|&(ino, i)| (filesystem(i), ino, i));
            }
            let mut order = Vec::with_capacity(located.len() + unlocated.len() + given.len());
            order.extend(located.into_iter().map(|(_, i)| i));
            order.extend(unlocated.into_iter().map(|(_, i)| i));
            order.extend(given);
            (!order.is_empty() || !guests.is_empty()).then_some(Sweep {
                disk: disk as DiskIndex,
                files: order,
                guests,
            })
        })
        .collect()
}

/// Adds file `i` to the guests of every disk other than its own that holds a piece of it.
/// Walks its pieces until every member's disk is found (at once for most files of a
/// RAID0 pool: its second stripe is on the next member).
fn add_guest(i: u32, f: &PlannedFile, split: &Split, guests: &mut [Vec<u32>]) {
    let mut others = split.members.iter().filter(|m| m.0 != f.disk).count();
    for e in f.placement.extents() {
        let length = e.length.min(f.entry.size.saturating_sub(e.logical));
        for piece in split.layout.pieces(e.physical, length) {
            let Some(&(disk, _)) = split.members.get(piece.member) else {
                continue;
            };
            let list = &mut guests[disk as usize];
            if disk != f.disk && list.last() != Some(&i) {
                list.push(i);
                others -= 1;
                if others == 0 {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::file_id::FileId;
    use crate::placement::{Extent, ExtentFlags};
    use crate::sync::lock;
    use std::path::Path;
    use std::sync::Mutex;

    /// A file as the walk and the locate stage would hand it over, built by hand:
    /// `extents` are (logical, physical, length) on filesystem `fs`.
    pub(crate) fn located(
        path: &str,
        (dev, ino): (u64, u64),
        size: u64,
        extents: &[(u64, u64, u64)],
        fs: u32,
    ) -> PlannedFile {
        let raw: Vec<Extent> = extents
            .iter()
            .map(|&(logical, physical, length)| Extent {
                logical,
                physical,
                length,
                flags: ExtentFlags::empty(),
            })
            .collect();
        let placement = if raw.is_empty() {
            Placement::unmapped(Strategy::Inode)
        } else {
            Placement::from_extents(Strategy::Fiemap, &raw, size)
        };
        PlannedFile {
            entry: Entry {
                path: Path::new(path).into(),
                id: FileId::new(dev, ino),
                size,
                modified: None,
            },
            placement,
            disk: 0,
            filesystem: fs,
            base: 0,
        }
    }

    /// Filesystem `dev` on `disk`, whose prefetches are capped at `max_prefetch`.
    pub(crate) fn filesystem(
        dev: u64,
        disk: DiskIndex,
        max_prefetch: Option<u64>,
    ) -> FilesystemReport {
        FilesystemReport {
            dev,
            kind: FsKind::Ext4,
            ladder: vec![Strategy::Fiemap, Strategy::Inode],
            max_prefetch,
            strategy: Strategy::Fiemap,
            demotions: Vec::new(),
            disk,
            members: Vec::new(),
            files: 0,
            unordered: false,
            split: None,
        }
    }

    pub(crate) fn plan_of(files: Vec<PlannedFile>, filesystems: Vec<FilesystemReport>) -> Plan {
        let disks = (0..=filesystems.iter().map(|f| f.disk).max().unwrap_or(0))
            .map(|d| Disk::unknown(format!("disk{d}")))
            .collect();
        Plan::from_located(files, filesystems, disks, &crate::Quiet)
    }

    fn physical_paths(plan: &Plan) -> Vec<&Path> {
        plan.order(Order::Physical)
            .iter()
            .map(|&i| &*plan.files()[i as usize].entry.path)
            .collect()
    }

    #[test]
    fn located_files_go_by_disk_offset_then_the_rest_by_inode_then_as_given() {
        let mut given = located("given-b", (1, 1), 10, &[], 0);
        given.placement = Placement::unmapped(Strategy::Given);
        let mut given_a = located("given-a", (1, 2), 10, &[], 0);
        given_a.placement = Placement::unmapped(Strategy::Given);
        let files = vec![
            given,
            located("far", (1, 10), 4096, &[(0, 900 << 20, 4096)], 0),
            located("inode-9", (1, 9), 4096, &[], 0),
            given_a,
            located("near", (1, 11), 4096, &[(0, 1 << 20, 4096)], 0),
            located("inode-3", (1, 3), 4096, &[], 0),
        ];
        let plan = plan_of(files, vec![filesystem(1, 0, None)]);
        assert_eq!(
            physical_paths(&plan),
            ["near", "far", "inode-3", "inode-9", "given-b", "given-a"].map(Path::new)
        );
        assert_eq!(plan.summary().unlocated, 4);
        assert_eq!(plan.filesystems()[0].files, 6);
    }

    #[test]
    fn files_of_more_than_65536_filesystems_keep_their_own_filesystem() {
        // Unlocated files go by (filesystem, inode): a u16 index wrapped 65,536 to 0.
        let fs_count = 65_537u32;
        let filesystems = (0..fs_count)
            .map(|i| filesystem(u64::from(i) + 1, 0, None))
            .collect();
        let files = vec![
            located("last-fs", (u64::from(fs_count), 1), 4096, &[], fs_count - 1),
            located("first-fs", (1, 9), 4096, &[], 0),
        ];
        let plan = plan_of(files, filesystems);
        assert_eq!(
            physical_paths(&plan),
            ["first-fs", "last-fs"].map(Path::new)
        );
        assert_eq!(plan.filesystems()[0].files, 1);
        assert_eq!(plan.filesystems()[fs_count as usize - 1].files, 1);
    }

    #[test]
    fn partitions_of_one_disk_share_one_sweep_in_disk_order() {
        // Two filesystems on disk 0: the second starts 1 GiB into it.
        let mut second = located("p2-start", (2, 5), 4096, &[(0, 0, 4096)], 1);
        second.base = 1 << 30;
        let mut second_end = located("p2-end", (2, 6), 4096, &[(0, 2 << 30, 4096)], 1);
        second_end.base = 1 << 30;
        let files = vec![
            second_end,
            located("p1-late", (1, 5), 4096, &[(0, 1536 << 20, 4096)], 0),
            second,
            located("p1-early", (1, 6), 4096, &[(0, 4096, 4096)], 0),
        ];
        let plan = plan_of(files, vec![filesystem(1, 0, None), filesystem(2, 0, None)]);
        assert_eq!(plan.sweeps().len(), 1, "one disk, one sweep");
        assert_eq!(
            physical_paths(&plan),
            ["p1-early", "p2-start", "p1-late", "p2-end"].map(Path::new)
        );
    }

    #[test]
    fn each_disk_gets_its_own_sweep() {
        let mut other = located("other-disk", (2, 1), 4096, &[(0, 0, 4096)], 1);
        other.disk = 1;
        let files = vec![located("a", (1, 1), 4096, &[(0, 8192, 4096)], 0), other];
        let plan = plan_of(files, vec![filesystem(1, 0, None), filesystem(2, 1, None)]);
        assert_eq!(plan.sweeps().len(), 2);
        assert_eq!(plan.sweeps()[1].disk, 1);
        assert_eq!(plan.sweeps()[1].files, vec![1]);
    }

    #[test]
    fn a_file_reached_twice_is_kept_once_at_its_first_sighting_and_named() {
        struct Skips(Mutex<Vec<String>>);
        impl Reporter for Skips {
            fn skipped(&self, path: &Path, why: &str) {
                lock(&self.0).push(format!("{}: {why}", path.display()));
            }
        }
        let files = vec![
            located("dir/link", (1, 7), 4096, &[(0, 4096, 4096)], 0),
            located("dir/other", (1, 8), 4096, &[(0, 0, 4096)], 0),
            located("dir/original", (1, 7), 4096, &[(0, 4096, 4096)], 0),
            located("./dir/link", (1, 7), 4096, &[(0, 4096, 4096)], 0),
        ];
        let skips = Skips(Mutex::new(Vec::new()));
        let plan = Plan::from_located(
            files,
            vec![filesystem(1, 0, None)],
            vec![Disk::unknown("d")],
            &skips,
        );
        let kept: Vec<&Path> = plan.files().iter().map(|f| &*f.entry.path).collect();
        assert_eq!(
            kept,
            ["dir/link", "dir/other"].map(Path::new),
            "given order kept"
        );
        assert_eq!(plan.summary().duplicates, 2);
        assert_eq!(
            into_inner(skips.0),
            [
                "dir/original: same file as dir/link",
                "./dir/link: same file as dir/link"
            ]
        );
    }

    #[test]
    fn one_inode_number_on_two_filesystems_is_two_files_and_each_keeps_its_first_sighting() {
        // Inode 7 on filesystem 1 (seen twice) and on filesystem 2 (seen twice), given
        // interleaved: two files, each kept at its earliest sighting.
        let files = vec![
            located("fs2/a", (2, 7), 4096, &[(0, 1 << 20, 4096)], 1),
            located("fs1/a", (1, 7), 4096, &[(0, 8192, 4096)], 0),
            located("fs2/b", (2, 7), 4096, &[(0, 1 << 20, 4096)], 1),
            located("fs1/b", (1, 7), 4096, &[(0, 8192, 4096)], 0),
        ];
        let plan = plan_of(files, vec![filesystem(1, 0, None), filesystem(2, 0, None)]);
        let kept: Vec<&Path> = plan.files().iter().map(|f| &*f.entry.path).collect();
        assert_eq!(kept, ["fs2/a", "fs1/a"].map(Path::new));
        let aliases: Vec<&Path> = plan.aliases().iter().map(|e| &*e.path).collect();
        assert_eq!(aliases, ["fs2/b", "fs1/b"].map(Path::new));
        assert_eq!(physical_paths(&plan), ["fs1/a", "fs2/a"].map(Path::new));
    }

    use crate::sync::into_inner;

    /// A path relative to the test's root, `/`-joined, and its tag.
    type Tagged = (String, u64);

    /// Each planned file's path relative to `root` (`/`-joined) with its tag, in given
    /// order, and the same for the aliases.
    fn tagged(plan: &Plan, root: &Path) -> (Vec<Tagged>, Vec<Tagged>) {
        let rel = |p: &Path| {
            let parts: Vec<_> = p
                .strip_prefix(root)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            parts.join("/")
        };
        let files = (0..plan.files().len() as u32)
            .map(|i| {
                (
                    rel(&plan.files()[i as usize].entry.path),
                    plan.tag(i).unwrap(),
                )
            })
            .collect();
        let aliases = (0..plan.aliases().len() as u32)
            .map(|i| {
                (
                    rel(&plan.aliases()[i as usize].path),
                    plan.alias_tag(i).unwrap(),
                )
            })
            .collect();
        (files, aliases)
    }

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("album/day")).unwrap();
        for f in ["album/1.jpg", "album/day/2.jpg", "cover.jpg", "empty/.keep"] {
            let p = t.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, f).unwrap();
        }
        t
    }

    fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
        v.sort();
        v
    }

    #[test]
    fn files_found_under_a_directory_input_get_that_inputs_tag() {
        let t = tree();
        let inputs = [
            (t.path().join("missing"), 1),
            (t.path().join("album"), 2),
            (t.path().join("cover.jpg"), 3),
            (t.path().join("empty"), 4),
        ];
        let plan = Plan::build_tagged(&inputs, &PlanOptions::default(), &crate::Quiet);
        let (files, aliases) = tagged(&plan, t.path());
        // Given order within the album is readdir order: compare as sets there.
        assert_eq!(
            sorted(files[..2].to_vec()),
            [("album/1.jpg".into(), 2), ("album/day/2.jpg".into(), 2)]
        );
        assert_eq!(
            files[2..],
            [("cover.jpg".into(), 3), ("empty/.keep".into(), 4)]
        );
        assert!(aliases.is_empty());
        assert_eq!(plan.tag(plan.files().len() as u32), None);
    }

    #[test]
    fn a_file_named_twice_keeps_the_first_inputs_tag_and_the_second_is_on_its_alias() {
        let t = tree();
        // Named alone first, then again under its directory.
        let inputs = [
            (t.path().join("album/day/2.jpg"), 10),
            (t.path().join("album"), 20),
            (t.path().join("album/1.jpg"), 30),
        ];
        let plan = Plan::build_tagged(&inputs, &PlanOptions::default(), &crate::Quiet);
        let (files, aliases) = tagged(&plan, t.path());
        assert_eq!(
            files,
            [("album/day/2.jpg".into(), 10), ("album/1.jpg".into(), 20)]
        );
        assert_eq!(
            sorted(aliases),
            [("album/1.jpg".into(), 30), ("album/day/2.jpg".into(), 20)]
        );
    }

    #[test]
    fn tags_follow_the_files_a_plan_retains() {
        let t = tree();
        let inputs = [(t.path().join("album"), 1), (t.path().join("cover.jpg"), 2)];
        let plan = Plan::build_tagged(&inputs, &PlanOptions::default(), &crate::Quiet);
        let plan = plan.retain(|_, f| !f.entry.path.ends_with("1.jpg"));
        let (files, _) = tagged(&plan, t.path());
        assert_eq!(
            files,
            [("album/day/2.jpg".into(), 1), ("cover.jpg".into(), 2)]
        );
        let plan = plan.retain(|_, f| f.entry.path.ends_with("cover.jpg"));
        assert_eq!(tagged(&plan, t.path()).0, [("cover.jpg".into(), 2)]);
    }

    #[test]
    fn a_plan_built_without_tags_has_none() {
        let t = tree();
        let plan = Plan::build(&[t.path()], &PlanOptions::default(), &crate::Quiet);
        assert_eq!(plan.files().len(), 4);
        assert_eq!(plan.tag(0), None);
    }

    #[test]
    fn runs_keep_one_tag_per_input_that_yielded_files() {
        let runs = Runs::from_counts(&[2, 0, 1, 3], |i| 100 + i as u64);
        assert_eq!(runs.start, [0, 2, 3]);
        assert_eq!(
            (0..6).map(|i| runs.get(i).unwrap()).collect::<Vec<_>>(),
            [100, 100, 102, 103, 103, 103]
        );
        // Dropping the whole run of input 2 and one file of input 3.
        let kept = runs.keep([true, false, false, true, false, true]);
        assert_eq!(kept.start, [0, 1]);
        assert_eq!(kept.tag, [100, 103]);
    }

    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    #[test]
    fn planned_files_and_entries_keep_their_size() {
        // Plans hold a million files within a budget (tests/it/scale.rs, bench/memory.sh):
        // tags must not cost per file.
        assert_eq!(std::mem::size_of::<PlannedFile>(), 136);
        assert_eq!(std::mem::size_of::<Entry>(), 56);
    }
}
