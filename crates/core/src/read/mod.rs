//! Read: every planned file, one sweep per disk, with the disk's queue kept full.
//!
//! For each disk a sweep thread walks the plan's extents in disk order and asks the kernel
//! to start reading them (`readahead(2)`) while the consumer reads earlier files from the
//! page cache. A window bounds how far ahead it runs (bytes and open files), so memory
//! stays bounded whatever the number or size of files. A file is handed over when all its
//! extents are on the way; files larger than half the window stream instead: handed over
//! at their first piece, prefetched ahead of the consumer piece by piece. Consumed pages
//! are dropped from the cache unless asked to keep them (drop-behind), so a scan of many
//! terabytes does not evict everything else. Disks are swept in parallel.
//!
//! Jobs consume a read through [`run`] (workers and one sink) or [`run_in_order`] (one
//! ordered sink), after [`decide`]: the layer owns the workers' buffers, the change
//! check, events, stopping and panics (the consume layer).
//! [`Reader`] below is the engine they drive, usable on its own.
//!
//! ```
//! use std::io::Read;
//! use std::sync::Arc;
//! use seekless_core::{Plan, PlanOptions, Quiet, read::{ReadOptions, Reader}};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a"), b"hello")?;
//! std::fs::write(dir.path().join("b"), b"world")?;
//! let plan = Arc::new(Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet));
//! let mut total = 0;
//! for file in Reader::new(plan, ReadOptions::default()) {
//!     let mut file = file?;
//!     let mut text = String::new();
//!     file.read_to_string(&mut text)?;
//!     file.finish()?; // fails if the file changed while it was read
//!     total += text.len();
//! }
//! assert_eq!(total, 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod consume;
mod guests;
mod schedule;
mod sweep;
mod window;

pub use consume::{
    Bound, ConsumeOptions, Consumed, Decided, Events, Job, NoEvents, Work, decide, run,
    run_in_order,
};

use std::fs::File;
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use crate::disk::{DiskKind, DiskVerdict};
use crate::error::{Change, Error, ErrorKind};
use crate::os;
use crate::plan::{Plan, PlannedFile, Sweep};
use guests::Ledger;
use sweep::{Message, Slot, SweepRun};
use window::Window;

/// How to read.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Bytes prefetched ahead of the consumer, per disk. Enough to cover many files so the
    /// disk always has queued requests to reorder, small enough to stay in the page cache.
    pub window_bytes: u64,
    /// Files open ahead of the consumer, per disk.
    pub window_files: usize,
    /// Largest single prefetch request; large files are prefetched in pieces this size.
    pub(crate) piece_bytes: u64,
    /// Bytes that fragmented files may hold, per disk, while the sweep travels from their
    /// first extents to their last (kept outside `window_bytes`). When exceeded, the
    /// oldest waiting file is finished out of order.
    pub(crate) held_bytes: u64,
    /// Fragmented files that may wait for their later extents at once, per disk (each
    /// holds a descriptor; capped by the process's open-file limit).
    pub(crate) held_files: usize,
    /// Drop consumed pages from the page cache (`POSIX_FADV_DONTNEED`), so that a long
    /// scan does not evict everything else. Not on a solid-state disk whose planned bytes
    /// fit twice in free memory: there reading evicts nothing, and the calls cost CPU
    /// time that a fast disk does not hide ([`ReadStats::kept_in_cache`]).
    pub drop_behind: bool,
    /// Prefetch at all (off = read one file at a time in plan order, for comparison).
    pub prefetch: bool,
    /// On seeking disks (see [`PlanOptions::disk`](crate::PlanOptions::disk)): before
    /// prefetching past a gap of at least this many bytes between one step's end and the
    /// next's start on the disk, and before the first step, wait until that step's first page has been read. After
    /// a seek, a drive that reorders its queue (NCQ) serves whichever queued request it
    /// reaches first, often one in the middle of the new region; the region's start is
    /// then read when the queue drains or the request ages, with a seek back each time.
    /// The wait costs one round trip per gap. 0 turns it off.
    pub gap_barrier: u64,
    /// Threads prefetching at once on a solid-state disk, each with its share of the
    /// files (in turn, in plan order) and of the window: filling the page cache costs CPU
    /// time (allocating and charging pages, queueing requests), which one thread cannot
    /// spend fast enough for a fast disk (16: as many readers as `xargs -P16`, and a
    /// virtio disk here read fastest with 16 of 4–16). Seeking disks always get one.
    /// With several lanes files come in no strict sweep order: consumers that keep it
    /// ([`run_in_order`], [`run`] with one worker) read with one.
    pub lanes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            window_bytes: 64 << 20,
            window_files: 512,
            piece_bytes: 4 << 20,
            held_bytes: 1 << 30,
            held_files: 4096,
            drop_behind: true,
            prefetch: true,
            gap_barrier: 128 << 10,
            lanes: 16,
        }
    }
}

/// What the sweeps did, beyond reading the files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadStats {
    /// Times a sweep waited for the first request past a gap to be served before going on
    /// (see [`ReadOptions::gap_barrier`]), the first request of each sweep included.
    pub gap_waits: u64,
    /// Disks whose read data was left in the page cache although
    /// [`ReadOptions::drop_behind`] was on (see there).
    pub kept_in_cache: u32,
    /// The work asked to stop (a sink of [`run`] returned
    /// [`ControlFlow::Break`]) before every file was handed
    /// out; the sweeps stopped reading ahead at once.
    pub stopped: bool,
}

/// Reads a plan's files, yielding each as soon as it is ready, disks in parallel.
///
/// Iterating yields files in read order; per-file errors (vanished, permission denied,
/// replaced) come as `Err` items and the run goes on. Dropping the reader stops the sweeps.
pub struct Reader {
    plan: Arc<Plan>,
    gap_waits: Arc<AtomicU64>,
    rx: Receiver<Message>,
    windows: Vec<Arc<Window>>,
    /// The window bytes of guests (files with pieces on other disks than their own).
    ledger: Option<Arc<Ledger>>,
    threads: Vec<JoinHandle<()>>,
    disks: Vec<DiskVerdict>,
    /// Whether to drop read pages behind, per lane (window).
    drop_behind: Vec<bool>,
    /// Disks whose read pages stay cached although drop-behind is on.
    kept_in_cache: u32,
}

/// What a reader's windows may hold, per sweep, before it is split among lanes.
struct Budget {
    bytes: u64,
    files: usize,
    held_bytes: u64,
    held_files: usize,
}

impl Budget {
    /// The options' windows for `sweeps` sweeps: with prefetching, every file in a window
    /// and every fragmented file waiting for its later extents holds a descriptor, so the
    /// files stay well inside the open-file limit as it is; without, one file at a time.
    fn of(opts: &ReadOptions, sweeps: usize) -> Budget {
        if !opts.prefetch {
            return Budget {
                bytes: 1,
                files: 1,
                held_bytes: 0,
                held_files: 0,
            };
        }
        let spare = os::open_file_limit().saturating_sub(256) / sweeps;
        let files = opts.window_files.min(spare / 2).max(1);
        Budget {
            bytes: opts.window_bytes,
            files,
            held_bytes: opts.held_bytes,
            held_files: opts.held_files.min(spare.saturating_sub(files)),
        }
    }
}

/// What kind of disk each sweep's disk is taken for ([`DiskJudge`](crate::measure::DiskJudge)),
/// in sweep order: disks measured in parallel, or one after the other where threads are
/// scarce.
fn verdicts(plan: &Plan) -> Vec<DiskVerdict> {
    let verdict = |sweep: &Sweep| {
        let disk = &plan.disks()[sweep.disk as usize];
        plan.judge().verdict(disk, || {
            let files = sweep.files.iter().map(|&i| &plan.files()[i as usize]);
            files
                .map(|f| crate::measure::Sample {
                    path: &f.entry.path,
                    size: f.entry.size,
                    extents: f.placement.extents(),
                })
                .collect()
        })
    };
    std::thread::scope(|scope| {
        let measuring: Vec<_> = plan
            .sweeps()
            .iter()
            .map(|sweep| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || verdict(sweep))
                    .map_err(|_| sweep)
            })
            .collect();
        measuring
            .into_iter()
            .map(|m| m.map_or_else(verdict, crate::sync::join))
            .collect()
    })
}

/// The reader's lanes: per sweep, several on a solid-state disk (each file to one, in
/// turn, so the lanes move through the plan together), one on a seeking disk.
struct Lanes {
    /// Each lane's sweep (an index into the plan's), and its share of the sweep's files
    /// where the sweep has several lanes.
    lanes: Vec<(usize, Option<Sweep>)>,
    /// Whether to drop read pages behind, per lane.
    drop_behind: Vec<bool>,
    /// Disks whose read pages stay cached although drop-behind is on: solid-state ones
    /// whose planned bytes fit twice in free memory.
    kept_in_cache: u32,
}

impl Lanes {
    fn of(plan: &Plan, opts: &ReadOptions, disks: &[DiskVerdict]) -> Lanes {
        let free = os::free_memory().unwrap_or(0);
        let mut out = Lanes {
            lanes: Vec::new(),
            drop_behind: Vec::new(),
            kept_in_cache: 0,
        };
        for (s, sweep) in plan.sweeps().iter().enumerate() {
            let solid = disks.get(s).is_some_and(|d| d.kind == DiskKind::SolidState);
            let bytes: u64 = sweep
                .files
                .iter()
                .map(|&i| plan.files()[i as usize].entry.size)
                .sum();
            let keep = opts.drop_behind && solid && bytes.saturating_mul(2) <= free;
            out.kept_in_cache += u32::from(keep);
            let n = if solid { opts.lanes.max(1) } else { 1 };
            if n == 1 {
                out.lanes.push((s, None));
            } else {
                for lane in 0..n {
                    let share = |all: &[u32]| all.iter().skip(lane).step_by(n).copied().collect();
                    out.lanes.push((
                        s,
                        Some(Sweep {
                            disk: sweep.disk,
                            files: share(&sweep.files),
                            guests: share(&sweep.guests),
                        }),
                    ));
                }
            }
            out.drop_behind
                .resize(out.lanes.len(), opts.drop_behind && !keep);
        }
        out
    }

    /// One window per lane: its sweep's budget shared among the sweep's lanes.
    fn windows(&self, budget: &Budget) -> Vec<Arc<Window>> {
        let sweeps = self.lanes.iter().map(|(s, _)| s + 1).max().unwrap_or(0);
        let mut lanes_of = vec![0u64; sweeps];
        for (s, _) in &self.lanes {
            lanes_of[*s] += 1;
        }
        self.lanes
            .iter()
            .map(|(s, _)| {
                let n = lanes_of[*s];
                Arc::new(Window::new(
                    budget.bytes.div_ceil(n),
                    budget.files.div_ceil(n as usize),
                    budget.held_bytes.div_ceil(n),
                    budget.held_files.div_ceil(n as usize),
                ))
            })
            .collect()
    }
}

/// Raises the process's soft open-file limit (`RLIMIT_NOFILE`) to its hard limit (at most
/// 2^20) and returns the new soft limit: a [`Reader`] sizes its window of open files by
/// this limit, and the default 1,024 holds few files ahead. Call it once, early (the
/// `seekless` command does); where there is no such limit (Windows) it only reports a
/// figure.
///
/// ```
/// let limit = seekless_core::read::raise_open_file_limit();
/// assert!(limit >= 64);
/// ```
pub fn raise_open_file_limit() -> usize {
    os::raise_open_file_limit()
}

impl Reader {
    /// Starts one sweep thread per disk of `plan`, once it knows what kind of disk each is
    /// ([`PlanOptions::disk`](crate::PlanOptions::disk); measured for all disks at once).
    ///
    /// With prefetching on, every file in the window, and every fragmented file waiting
    /// for its later extents, holds a descriptor, so the window is sized to stay well
    /// inside the process's open-file limit as it is. The limit is the caller's to raise
    /// ([`raise_open_file_limit`]; the `seekless` command does at its start): a library
    /// does not change process-wide settings behind its caller's back.
    pub fn new(plan: Arc<Plan>, opts: ReadOptions) -> Reader {
        let budget = Budget::of(&opts, plan.sweeps().len().max(1));
        // Without prefetching there is nothing the kind of disk would change.
        let disks = if opts.prefetch {
            verdicts(&plan)
        } else {
            Vec::new()
        };
        let lanes = Lanes::of(&plan, &opts, &disks);
        let windows = lanes.windows(&budget);
        let ledger = Ledger::new(
            lanes.lanes.iter().map(|(s, lane)| {
                lane.as_ref()
                    .unwrap_or(&plan.sweeps()[*s])
                    .guests
                    .as_slice()
            }),
            windows.clone(),
            plan.files().len(),
        )
        .map(Arc::new);
        let (tx, rx) = crossbeam_channel::unbounded();
        let seq = Arc::new(AtomicU64::new(0));
        let gap_waits = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for (index, (s, lane)) in lanes.lanes.into_iter().enumerate() {
            let window = windows[index].clone();
            let (plan, tx, seq) = (plan.clone(), tx.clone(), seq.clone());
            let waits = gap_waits.clone();
            let ledger = ledger.clone();
            let piece = opts.piece_bytes;
            let prefetch = opts.prefetch;
            let gap_barrier = match disks.get(s) {
                Some(d) if d.kind == DiskKind::Seeking => opts.gap_barrier,
                _ => 0,
            };
            threads.push(std::thread::spawn(move || {
                let run = SweepRun {
                    plan: &plan,
                    sweep: lane.as_ref().unwrap_or(&plan.sweeps()[s]),
                    sweep_index: index,
                    window: &window,
                    tx: tx.clone(),
                    seq: &seq,
                    piece: if prefetch { piece } else { u64::MAX },
                    prefetch,
                    gap_barrier,
                    gap_waits: &waits,
                    ledger: ledger.as_deref(),
                };
                // The sweep's state is dropped whole, so nothing half-updated is seen
                // after the unwind; the consumer re-raises the panic.
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.run()));
                if let Err(panic) = ran {
                    let _ = tx.send(Err(panic));
                }
            }));
        }
        Reader {
            plan,
            gap_waits,
            rx,
            windows,
            ledger,
            threads,
            disks,
            drop_behind: lanes.drop_behind,
            kept_in_cache: lanes.kept_in_cache,
        }
    }

    /// What kind of disk each sweep's disk was taken for, and why, in the order of the
    /// plan's [`sweeps`](Plan::sweeps) (none when not prefetching).
    pub fn disks(&self) -> &[DiskVerdict] {
        &self.disks
    }

    /// The plan being read.
    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }

    /// What the sweeps have done so far (final once every file has been handed out).
    pub fn stats(&self) -> ReadStats {
        ReadStats {
            gap_waits: self.gap_waits.load(Ordering::Relaxed),
            kept_in_cache: self.kept_in_cache,
            stopped: false,
        }
    }

    /// Runs `work` on every file with `workers` threads while the sweeps keep the disks
    /// busy, with state of each worker's own (a buffer, clocks) made by `init` in the
    /// worker's thread; `work` gets the file's index in the plan and either a reader for
    /// it or the error that kept it from being opened. Once `work` returns
    /// [`ControlFlow::Break`], no further file is handed out, the sweeps stop reading
    /// ahead, and the call returns when the files already handed out are done, with
    /// [`ReadStats::stopped`] set. The consume layer's engine ([`run`]).
    pub(crate) fn par_for_each_with<S, I, F>(self, workers: usize, init: I, work: F) -> ReadStats
    where
        I: Fn() -> S + Sync,
        F: Fn(&mut S, u32, Result<FileReader, Error>) -> ControlFlow<()> + Sync,
    {
        let me = &self;
        let (work, init) = (&work, &init);
        let stop = AtomicBool::new(false);
        let stop = &stop;
        // A panic in `work` or in a sweep ends that worker; the others finish, and the
        // first panic is re-raised here with its own payload.
        let run = move || {
            let mut state = init();
            while !stop.load(Ordering::Relaxed)
                && let Some((index, item)) = me.next_file()
            {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if work(&mut state, index, item).is_break() {
                    stop.store(true, Ordering::Relaxed);
                    for w in &me.windows {
                        w.cancel();
                    }
                }
            }
        };
        std::thread::scope(|s| {
            // Where threads are scarce (a pids or address-space limit), work with those
            // that could be had, down to this thread alone.
            let mut handles = Vec::new();
            for _ in 0..workers.max(1) {
                match std::thread::Builder::new().spawn_scoped(s, run) {
                    Ok(h) => handles.push(h),
                    Err(_) => break,
                }
            }
            if handles.is_empty() {
                run();
            }
            crate::sync::join_all(handles);
        });
        ReadStats {
            stopped: stop.load(Ordering::Relaxed),
            ..self.stats()
        }
    }

    /// The next file, `None` once every sweep has ended; re-raises a sweep's panic.
    fn next_file(&self) -> Option<(u32, Result<FileReader, Error>)> {
        let h = match self.rx.recv().ok()? {
            Ok(h) => h,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let index = h.index;
        Some((
            index,
            match h.result {
                Ok((file, opened, slot)) => Ok(FileReader {
                    plan: self.plan.clone(),
                    opened,
                    index,
                    seq: h.seq,
                    file,
                    slot,
                    window: self.windows[h.sweep].clone(),
                    pos: 0,
                    dropped: 0,
                    drop_behind: self.drop_behind[h.sweep],
                    ledger: self.ledger.clone(),
                }),
                Err(e) => {
                    if let Some(ledger) = &self.ledger {
                        ledger.closed(index);
                    }
                    Err(e)
                }
            },
        ))
    }
}

impl Iterator for Reader {
    type Item = Result<FileReader, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_file().map(|(_, item)| item)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        for w in &self.windows {
            w.cancel();
        }
        // Unblock sweeps waiting to send by draining.
        while self.rx.try_recv().is_ok() {}
        for t in self.threads.drain(..) {
            // A sweep's panic was caught in its thread and sent to the consumer; if the
            // reader is dropped before reading it, the run is being abandoned anyway.
            let _ = t.join();
        }
    }
}

/// One file being read: `impl Read` over its contents, in the order the reader chose.
pub struct FileReader {
    plan: Arc<Plan>,
    /// Its metadata when the sweep opened it.
    opened: std::fs::Metadata,
    index: u32,
    seq: u64,
    file: File,
    slot: Arc<Slot>,
    window: Arc<Window>,
    pos: u64,
    dropped: u64,
    drop_behind: bool,
    /// Where the window bytes of the file's pieces on other disks go back.
    ledger: Option<Arc<Ledger>>,
}

impl FileReader {
    /// The planned file (path, size, placement).
    pub fn planned(&self) -> &PlannedFile {
        &self.plan.files()[self.index as usize]
    }

    /// Index of the file in the plan's [`files`](Plan::files).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Position in read order, counting from 0 (errors count too).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Bytes read so far (or the offset [`seek_to`](Self::seek_to) moved to, plus what
    /// was read since).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The open file, for calls that take their own offsets or none (`copy_file_range`,
    /// `FICLONE`, `fstat`). Reading through it bypasses the reader's accounting: use
    /// `read` for that.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The open file's current metadata (`fstat`).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.file.metadata()
    }

    /// The byte ranges that hold data, in order, for a file with holes (from `SEEK_DATA`
    /// and `SEEK_HOLE`; elsewhere, or on filesystems without them, the whole file). Holes
    /// read as zeros. Read them with [`seek_to`](Self::seek_to) and `read`.
    /// `size` is the file's size now (its metadata's).
    pub fn data_regions(&mut self, size: u64) -> Result<Vec<std::ops::Range<u64>>, Error> {
        let regions = os::data_regions(&self.file, size);
        // The probes moved the offset: put it back where reading left it.
        let back = self.seek_file(self.pos);
        let regions = regions.map_err(|e| Error::io(&*self.planned().entry.path, e))?;
        back?;
        Ok(regions)
    }

    /// Continues reading at `offset` (to skip a hole).
    pub fn seek_to(&mut self, offset: u64) -> Result<(), Error> {
        self.seek_file(offset)?;
        self.pos = offset;
        Ok(())
    }

    fn seek_file(&mut self, offset: u64) -> Result<(), Error> {
        use std::io::Seek;
        self.file
            .seek(io::SeekFrom::Start(offset))
            .map(drop)
            .map_err(|e| Error::io(&*self.planned().entry.path, e))
    }

    /// Its metadata when it was opened (by the sweep, before any of it was read): what the
    /// read is checked against, and what an archiver or copier records, without another
    /// `fstat`.
    pub fn opened(&self) -> &std::fs::Metadata {
        &self.opened
    }

    /// Checks, after reading to the end, that the file did not change while it was read
    /// ([`check_unchanged`](Self::check_unchanged) with the bytes read). Returns the bytes
    /// read.
    ///
    /// On filesystems whose sizes do not describe content (proc, sysfs, …:
    /// [`FsKind::Virtual`](crate::FsKind::Virtual)) there is nothing to
    /// compare: whatever was read is the content.
    pub fn finish(self) -> Result<u64, Error> {
        self.check_unchanged(self.pos)?;
        Ok(self.pos)
    }

    /// Checks that the file is still what was planned and opened, having taken `content`
    /// bytes as its content (the bytes read, or the size a job recorded before reading:
    /// a tar header, a copy's length). The one rule every job uses, the stricter of those
    /// in use: its size now is its planned size, `content` is that size, and neither its
    /// modification time nor its status-change time (`ctime`, which a writer that puts the
    /// modification time back still moves) has moved since it was planned and opened.
    pub fn check_unchanged(&self, content: u64) -> Result<(), Error> {
        let planned = self.planned();
        let entry = &planned.entry;
        let kind = self.plan.filesystems()[planned.filesystem as usize].kind;
        if !kind.sizes_are_lengths() {
            return Ok(());
        }
        let now = self
            .file
            .metadata()
            .map_err(|e| Error::io(&*entry.path, e))?;
        let change = if now.len() != entry.size {
            Some(Change::Size {
                planned: entry.size,
                now: now.len(),
            })
        } else if content != entry.size {
            Some(Change::Length {
                read: content,
                size: entry.size,
            })
        } else if now.modified().ok() != entry.modified {
            Some(Change::Modified)
        } else {
            changed_between(&self.opened, &now)
        };
        match change {
            Some(how) => Err(Error::new(&*entry.path, ErrorKind::Changed(how))),
            None => Ok(()),
        }
    }

    /// The byte ranges to read for the file's `size` bytes: its data regions when it has
    /// holes (fewer bytes allocated than its size; see [`data_regions`](Self::data_regions)),
    /// otherwise the whole file as one range.
    pub fn regions(&mut self, size: u64) -> Result<Vec<std::ops::Range<u64>>, Error> {
        let opened = self.opened.clone();
        sparse_regions(&opened, size, |size| self.data_regions(size))
    }

    /// Reads `regions` (from [`regions`](Self::regions)) in turn through `buf`, handing
    /// each chunk to `sink` with its offset in the file. Stops early, returning `false`,
    /// when the file ends before a region does (it shrank); `sink`'s error ends the read.
    pub fn read_regions<E: From<Error>>(
        &mut self,
        regions: &[std::ops::Range<u64>],
        buf: &mut [u8],
        mut sink: impl FnMut(u64, &[u8]) -> Result<(), E>,
    ) -> Result<bool, E> {
        for region in regions {
            if self.pos != region.start {
                self.seek_to(region.start)?;
            }
            while self.pos < region.end {
                let want = ((region.end - self.pos) as usize).min(buf.len());
                let at = self.pos;
                let n = match self.read_chunk(&mut buf[..want]) {
                    Ok(0) => return Ok(false),
                    Ok(n) => n,
                    Err(e) if is_interrupted(&e) => continue,
                    Err(e) => return Err(e.into()),
                };
                sink(at, &buf[..n])?;
            }
        }
        Ok(true)
    }
}

/// How a file's metadata moved between two `fstat`s of it (size, modification time,
/// status-change time), if it did.
pub fn changed_between(before: &std::fs::Metadata, after: &std::fs::Metadata) -> Option<Change> {
    if after.len() != before.len() {
        Some(Change::Size {
            planned: before.len(),
            now: after.len(),
        })
    } else if after.modified().ok() != before.modified().ok() {
        Some(Change::Modified)
    } else if os::change_time(after) != os::change_time(before) {
        Some(Change::Status)
    } else {
        None
    }
}

/// The byte ranges to read for a file's `size` bytes, given its metadata when opened and
/// a probe of its data regions (`SEEK_DATA`/`SEEK_HOLE`): the data regions when it has
/// holes, otherwise the whole file as one range.
pub fn sparse_regions(
    opened: &std::fs::Metadata,
    size: u64,
    probe: impl FnOnce(u64) -> Result<Vec<std::ops::Range<u64>>, Error>,
) -> Result<Vec<std::ops::Range<u64>>, Error> {
    if os::allocated_bytes(opened).is_some_and(|a| a < size) {
        let regions = probe(size)?;
        if regions.iter().map(|r| r.end - r.start).sum::<u64>() < size {
            return Ok(regions);
        }
    }
    Ok(std::iter::once(0..size).collect())
}

fn is_interrupted(e: &Error) -> bool {
    e.io_error().map(io::Error::kind) == Some(io::ErrorKind::Interrupted)
}

impl FileReader {
    /// Reads the file to its end, handing each chunk to `sink`, then checks that it did
    /// not change while it was read ([`finish`](Self::finish)). Returns the bytes read.
    /// Reads through one 1 MiB buffer per thread, reused from file to file.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use seekless_core::{Plan, PlanOptions, Quiet, read::{ReadOptions, Reader}};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("a"), vec![1u8; 3000])?;
    /// let plan = Arc::new(Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet));
    /// for file in Reader::new(plan, ReadOptions::default()) {
    ///     let mut ones = 0;
    ///     let n = file?.read_to_end_with(|chunk| ones += chunk.iter().filter(|&&b| b == 1).count())?;
    ///     assert_eq!((n, ones), (3000, 3000));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_to_end_with(self, sink: impl FnMut(&[u8])) -> Result<u64, Error> {
        thread_local! {
            static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 1 << 20]);
        }
        BUF.with(|buf| self.read_to_end_into(&mut buf.borrow_mut(), sink))
    }

    /// [`read_to_end_with`](Self::read_to_end_with) through the caller's buffer (a worker
    /// of [`run`] passes its own, reused from file to file).
    pub(crate) fn read_to_end_into(
        mut self,
        buf: &mut [u8],
        mut sink: impl FnMut(&[u8]),
    ) -> Result<u64, Error> {
        loop {
            match self.read_chunk(buf) {
                Ok(0) => break,
                Ok(n) => sink(&buf[..n]),
                Err(e) if is_interrupted(&e) => {}
                Err(e) => return Err(e),
            }
        }
        self.finish()
    }

    /// One `read`, with the error naming the file.
    fn read_chunk(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        let n = self.file.read(buf).map_err(|e| {
            let path = &self.plan.files()[self.index as usize].entry.path;
            Error::io(&**path, e)
        })?;
        self.consumed(n);
        Ok(n)
    }

    /// As `read`, into memory that need not be initialised (`buf[..n]` is, afterwards):
    /// for a caller that allocates the file's whole destination and would otherwise zero
    /// it only to overwrite it (the Python module reads each file straight into a new
    /// `bytes` object). The same accounting as `read`: the window, drop-behind, and the
    /// position [`finish`](Self::finish) checks. On Unix one `read(2)` into `buf`;
    /// elsewhere `buf` is zeroed first.
    ///
    /// ```
    /// use std::mem::MaybeUninit;
    /// use std::sync::Arc;
    /// use seekless_core::{Plan, PlanOptions, Quiet, read::{ReadOptions, Reader}};
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("a"), b"hello")?;
    /// let plan = Arc::new(Plan::build(&[dir.path().join("a")], &PlanOptions::default(), &Quiet));
    /// let mut reader = Reader::new(plan, ReadOptions::default());
    /// let mut file = reader.next().unwrap()?;
    /// let mut buf = vec![MaybeUninit::<u8>::uninit(); 5];
    /// let mut at = 0;
    /// while at < buf.len() {
    ///     match file.read_uninit(&mut buf[at..])? {
    ///         0 => break,
    ///         n => at += n,
    ///     }
    /// }
    /// assert_eq!(file.finish()?, 5); // all 5 bytes read, the file unchanged
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_uninit(&mut self, buf: &mut [std::mem::MaybeUninit<u8>]) -> Result<usize, Error> {
        let n = os::read_uninit(&self.file, buf).map_err(|e| {
            let path = &self.plan.files()[self.index as usize].entry.path;
            Error::io(&**path, e)
        })?;
        self.consumed(n);
        Ok(n)
    }

    /// Counts `n` bytes read: the position, the window's bytes, drop-behind.
    fn consumed(&mut self, n: usize) {
        self.pos += n as u64;
        self.window.release(self.slot.consumed(n as u64));
        // Large files: drop what was read every few MiB rather than at the end.
        if self.drop_behind && self.pos - self.dropped >= 8 << 20 {
            let _ = os::drop_cache(&self.file, self.dropped, self.pos - self.dropped);
            self.dropped = self.pos;
        }
    }
}

impl Read for FileReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_chunk(buf).map_err(io::Error::from)
    }
}

impl Drop for FileReader {
    fn drop(&mut self) {
        if self.drop_behind {
            let _ = os::drop_cache(&self.file, self.dropped, 0);
        }
        self.window.closed(self.slot.close());
        if let Some(ledger) = &self.ledger {
            ledger.closed(self.index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::tests::panic_message;
    use crate::{PlanOptions, Quiet};

    fn plan_of(files: &[&str]) -> (tempfile::TempDir, Arc<Plan>) {
        let t = tempfile::tempdir().unwrap();
        for (i, name) in files.iter().enumerate() {
            std::fs::write(t.path().join(name), vec![7u8; 1000 * (i + 1)]).unwrap();
        }
        let plan = Plan::build(&[t.path().to_path_buf()], &PlanOptions::default(), &Quiet);
        (t, Arc::new(plan))
    }

    #[test]
    fn read_uninit_reads_what_read_does_and_counts_for_finish() {
        let (_t, plan) = plan_of(&["a", "b", "c"]);
        let mut seen = 0;
        for file in Reader::new(plan, ReadOptions::default()) {
            let mut file = file.unwrap();
            let size = file.planned().entry.size as usize;
            let expected = std::fs::read(&*file.planned().entry.path).unwrap();
            // Odd-sized pieces, one byte of room more than the file needs.
            let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); size + 1];
            let mut at = 0;
            loop {
                let end = (at + 777).min(buf.len());
                match file.read_uninit(&mut buf[at..end]).unwrap() {
                    0 => break,
                    n => at += n,
                }
            }
            assert_eq!(at, size);
            // SAFETY: read_uninit initialised buf[..at].
            let got: Vec<u8> = buf[..at]
                .iter()
                .map(|b| unsafe { b.assume_init() })
                .collect();
            assert_eq!(got, expected);
            assert_eq!(file.finish().unwrap(), size as u64);
            seen += 1;
        }
        assert_eq!(seen, 3);
    }

    #[test]
    fn a_sweep_that_panics_fails_the_reader_instead_of_ending_it_early() {
        let names = ["a", "b", crate::test_hooks::PANIC_ON_OPEN, "c", "d"];
        let (_t, plan) = plan_of(&names);
        let p = plan.clone();
        let message = panic_message(move || {
            for file in Reader::new(p, ReadOptions::default()) {
                let _ = file.map(|f| f.finish());
            }
        });
        assert!(message.contains("injected sweep fault"), "{message}");
        for workers in [1, 4] {
            let p = plan.clone();
            let message = panic_message(move || {
                Reader::new(p, ReadOptions::default()).par_for_each_with(
                    workers,
                    || (),
                    |(), _, _| ControlFlow::Continue(()),
                );
            });
            assert!(
                message.contains("injected sweep fault"),
                "{workers}: {message}"
            );
        }
    }

    #[test]
    fn a_worker_that_panics_fails_the_workers_run_with_its_message() {
        let (_t, plan) = plan_of(&["a", "b", "c", "d", "e", "f"]);
        for workers in [1, 4] {
            let p = plan.clone();
            let message = panic_message(move || {
                let files = p.clone();
                Reader::new(p, ReadOptions::default()).par_for_each_with(
                    workers,
                    || (),
                    |(), index, _| {
                        let planned = &files.files()[index as usize];
                        assert!(
                            !planned.entry.path.ends_with("c"),
                            "worker fault at {}",
                            planned.entry.path.display()
                        );
                        ControlFlow::Continue(())
                    },
                );
            });
            assert!(message.contains("worker fault at"), "{workers}: {message}");
        }
    }

    /// Makes file `i` of a plan built by hand a real file in `dir`, of its size and
    /// with content of its own, and the plan's entry that file's.
    #[cfg(target_os = "linux")]
    fn make_real(dir: &std::path::Path, i: usize, f: &mut PlannedFile) {
        use std::os::unix::fs::MetadataExt;
        let path = dir.join(format!("f{i}"));
        let bytes: Vec<u8> = (0..f.entry.size)
            .map(|b| (b * 7 + i as u64) as u8)
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        f.entry.path = path.into();
        f.entry.id = crate::file_id::FileId::new(meta.dev(), meta.ino());
        f.entry.modified = meta.modified().ok();
    }

    /// Reads `plan` whole many times over (windows from roomy to one byte, with and
    /// without prefetching, for different interleavings of the sweeps): every file comes
    /// once, as it is on disk, and afterwards the guest ledger and every window are empty.
    #[cfg(target_os = "linux")]
    fn read_whole_and_check_the_books(plan: Arc<Plan>) {
        let contents: Vec<Vec<u8>> = plan
            .files()
            .iter()
            .map(|f| std::fs::read(&*f.entry.path).unwrap())
            .collect();
        for round in 0..40 {
            let opts = ReadOptions {
                window_bytes: [64 << 20, 64 << 10, 1][round % 3],
                window_files: [512, 2, 1][round % 3],
                prefetch: round % 4 != 3,
                ..ReadOptions::default()
            };
            let reader = Reader::new(plan.clone(), opts);
            let mut seen = vec![0; plan.files().len()];
            while let Some((index, file)) = reader.next_file() {
                let mut file = file.unwrap();
                let mut got = Vec::new();
                file.read_to_end(&mut got).unwrap();
                file.finish().unwrap();
                assert!(
                    got == contents[index as usize],
                    "round {round}: file {index}"
                );
                seen[index as usize] += 1;
            }
            assert!(seen.iter().all(|&n| n == 1), "round {round}: {seen:?}");
            let ledger = reader.ledger.clone().expect("the pool's files are guests");
            let windows = reader.windows.clone();
            drop(reader);
            assert_eq!(ledger.len(), 0, "round {round}: files left in the ledger");
            for w in &windows {
                assert_eq!(
                    w.usage(),
                    (0, 0, 0),
                    "round {round}: a window did not empty"
                );
            }
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn files_of_a_pool_read_from_two_sweeps_come_once_whole_and_every_window_empties() {
        let t = tempfile::tempdir().unwrap();
        let plan = crate::read::schedule::tests::raid0_plan_with(|i, f| make_real(t.path(), i, f));
        assert!(plan.sweeps().iter().all(|s| !s.guests.is_empty()));
        read_whole_and_check_the_books(Arc::new(plan));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn more_guests_waiting_for_later_pieces_than_a_sweep_holds_open_are_still_read_whole() {
        use crate::plan::tests::located;
        use crate::read::schedule::tests::{RAID0_AT, raid0_plan_of};
        let l = 64 << 10;
        let t = tempfile::tempdir().unwrap();
        // Each file: a stripe on device 1 (so it is disk 0's), then one on device 2 near
        // the chunk's start and one 512 MiB further: on disk 1 every file waits open from
        // its first piece to its second, 100 of them at once.
        let files: Vec<PlannedFile> = (0..100u64)
            .map(|i| {
                let extents = [
                    (0, RAID0_AT + 4 * i * l, l),
                    (l, RAID0_AT + (4 * i + 1) * l, l),
                    (2 * l, RAID0_AT + (512 << 20) + (4 * i + 1) * l, l),
                ];
                let mut f = located("x", (1, i), 3 * l, &extents, 0);
                f.placement = f.placement.with_key((10 << 20) + 2 * i * l);
                make_real(t.path(), i as usize, &mut f);
                f
            })
            .collect();
        let plan = raid0_plan_of(files);
        assert_eq!(plan.sweeps()[1].guests.len(), 100);
        const { assert!(100 > sweep::MAX_OPEN_GUESTS) };
        read_whole_and_check_the_books(Arc::new(plan));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_pool_file_the_chunk_map_does_not_place_is_read_too() {
        use crate::plan::tests::located;
        use crate::read::schedule::tests::{RAID0_AT, raid0_plan_of};
        let t = tempfile::tempdir().unwrap();
        // File 0 in the chunk; file 1 past its end, planned with the device it was mounted
        // from (disk 0), as the planner does when its first byte has no known place.
        let files: Vec<PlannedFile> = [RAID0_AT, RAID0_AT + (4 << 30)]
            .iter()
            .enumerate()
            .map(|(i, &address)| {
                let mut f = located("x", (1, i as u64), 200 << 10, &[(0, address, 200 << 10)], 0);
                make_real(t.path(), i, &mut f);
                f
            })
            .collect();
        let plan = raid0_plan_of(files);
        assert_eq!(plan.sweeps()[0].files, vec![0, 1]);
        read_whole_and_check_the_books(Arc::new(plan));
    }
}
