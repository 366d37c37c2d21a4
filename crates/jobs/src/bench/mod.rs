//! The benchmark on the user's own data: read every file in given (filesystem) order, inode
//! order and physical order, each from a cold cache, and compare — the origin's table, row
//! for row.
//!
//! Contenders, each reading every file fully and discarding the bytes (one buffer per
//! worker):
//!
//! - `given`: the order the inputs were given in, directories in readdir order (the
//!   origin's "filesystem order"), one file at a time;
//! - `inode`: by inode number (what `tar --sort=inode` does), one file at a time;
//! - `physical-single`: physical order, one file at a time (the origin's approach);
//! - `physical`: physical order with the readahead window (what seekless does).
//!
//! Before each run the cache is made cold ([`make_cold`]); the plan is then built afresh,
//! so the lookup (walk and locate) is measured cold too.
//!
//! ```
//! use seekless_core::{PlanOptions, Quiet};
//! use seekless_jobs::bench::{BenchOptions, Cold, bench};
//!
//! let dir = tempfile::tempdir()?;
//! for i in 0..5 {
//!     std::fs::write(dir.path().join(format!("f{i}")), vec![7u8; 10_000])?;
//! }
//! let mut opts = BenchOptions::default();
//! opts.cold = Cold::Warm;
//! let result = bench(&[dir.path().to_path_buf()], &PlanOptions::default(), &opts, &Quiet);
//! assert_eq!(result.contenders.len(), 4);
//! assert!(result.contenders.iter().all(|c| c.files == 5 && c.bytes == 50_000));
//! # Ok::<(), std::io::Error>(())
//! ```

mod seek_map;

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use seekless_core::Error;
use seekless_core::FileId;
use seekless_core::Reporter;
use seekless_core::read::{self, ConsumeOptions, Job, NoEvents, ReadOptions, Work};
use seekless_core::{Disk, Strategy};
use seekless_core::{FilesystemReport, Plan, PlanOptions};
use seekless_sys as os;
use seekless_sys::sync::{into_inner, lock};

pub use seek_map::seek_map_svg;

/// How to make the cache cold before each run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Cold {
    /// Drop the whole page cache (`sync`, then `3` to `/proc/sys/vm/drop_caches`) when
    /// that is possible (Linux, root); otherwise evict each file. This touches the whole
    /// machine (every process's cached files), so it is never the default: the caller
    /// asks for it (the CLI does, by default, as a user running a benchmark expects).
    Auto,
    /// Evict each planned file's data (`POSIX_FADV_DONTNEED`); metadata stays cached.
    /// The default: it touches only the benchmarked files.
    #[default]
    Evict,
    /// Do nothing (warm cache; for tests and for measuring the CPU side).
    Warm,
}

/// What [`make_cold`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ColdMethod {
    /// The whole page cache, dentries and inodes were dropped: everything is cold.
    DropCaches,
    /// Each file's data was evicted; directory and inode metadata stayed cached, so
    /// lookup times are warm.
    Evict,
    /// Nothing was done.
    Warm,
}

/// Drops the page cache as `policy` says, for the files in `paths` (used when evicting
/// file by file). Files that cannot be opened are skipped (the run reports them).
pub fn make_cold(policy: Cold, paths: &[&Path]) -> ColdMethod {
    match policy {
        Cold::Warm => ColdMethod::Warm,
        Cold::Auto if os::is_root() && os::drop_all_caches().is_ok() => ColdMethod::DropCaches,
        Cold::Auto | Cold::Evict => {
            for path in paths {
                if let Ok(file) = os::open_to_read(path) {
                    let _ = os::drop_cache(&file, 0, 0);
                }
            }
            ColdMethod::Evict
        }
    }
}

/// How to run the benchmark.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BenchOptions {
    /// The read options of the `physical` contender; the one-file-at-a-time contenders use
    /// the same with `prefetch: false`.
    pub read: ReadOptions,
    /// How to make the cache cold before each run.
    pub cold: Cold,
    /// Runs per contender; the run with the median total time is reported.
    pub reps: usize,
    /// Threads reading (each with its own buffer).
    pub workers: usize,
    /// Record the seek trace (time, disk offset) of each run.
    pub trace: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            read: ReadOptions::default(),
            cold: Cold::default(),
            reps: 1,
            workers: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            trace: false,
        }
    }
}

/// One contender's run (the median of its repetitions).
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct ContenderResult {
    /// Short name: `given`, `inode`, `physical-single`, `physical`.
    pub name: &'static str,
    /// What it does, in words.
    pub description: &'static str,
    /// Files read completely.
    pub files: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Average size of the files read.
    pub average_file_size: f64,
    /// Files that failed (open, read, or changed while read).
    pub errors: u64,
    /// Wall time of walking and locating (reading position data), cold.
    pub lookup_secs: f64,
    /// Time spent in locate calls, summed over threads.
    pub locate_calls_secs: f64,
    /// Time sorting the plan.
    pub sort_secs: f64,
    /// Time reading every file.
    pub read_secs: f64,
    /// Lookup + sort + read.
    pub total_secs: f64,
    /// Bytes per second of the read alone.
    pub read_bytes_per_sec: f64,
    /// Bytes per second over the total time.
    pub total_bytes_per_sec: f64,
    /// Given order's total time minus this one's (positive = faster than given order).
    pub gain_secs: f64,
    /// How much more throughput than given order, in percent (given / this − 1).
    pub gain_percent: f64,
    /// Given order's total time divided by this one's.
    pub ratio: f64,
    /// The strategy each filesystem got.
    pub filesystems: Vec<FilesystemReport>,
    /// Total time of every repetition, in the order they ran.
    pub runs_total_secs: Vec<f64>,
    /// Seek trace of the reported run: (seconds since the read began, disk offset) of each
    /// located file when it was handed to a worker. Empty unless asked for.
    #[serde(skip)]
    pub trace: Vec<(f64, u64)>,
}

/// The origin's table: the best seekless contender against given (filesystem) order.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct OriginRows {
    /// The contender compared.
    pub contender: &'static str,
    /// Files scanned.
    pub files: u64,
    /// Total size.
    pub bytes: u64,
    /// Average file size.
    pub average_file_size: f64,
    /// Time reading in filesystem (given) order, walk included.
    pub given_secs: f64,
    /// Its throughput.
    pub given_bytes_per_sec: f64,
    /// Time reading position data.
    pub lookup_secs: f64,
    /// Time sorting.
    pub sort_secs: f64,
    /// Time reading in sorted order.
    pub read_secs: f64,
    /// Total time of the new approach.
    pub total_secs: f64,
    /// Its throughput.
    pub total_bytes_per_sec: f64,
    /// Seconds saved.
    pub gain_secs: f64,
    /// Throughput increase in percent.
    pub gain_percent: f64,
    /// Filesystem-order time / sorted time.
    pub ratio: f64,
}

/// Everything the benchmark measured.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct BenchResult {
    /// How the cache was made cold.
    pub cold: ColdMethod,
    /// Runs per contender.
    pub reps: usize,
    /// Reading threads.
    pub workers: usize,
    /// Files planned (before reading).
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The disks the files are on.
    pub disks: Vec<Disk>,
    /// Distinct files that failed to be planned or read.
    pub errors: u64,
    /// One entry per contender, in the order above.
    pub contenders: Vec<ContenderResult>,
    /// The origin's table for the best physical contender.
    pub origin: Option<OriginRows>,
}

impl BenchResult {
    /// A contender by name.
    pub fn contender(&self, name: &str) -> Option<&ContenderResult> {
        self.contenders.iter().find(|c| c.name == name)
    }
}

struct Contender {
    name: &'static str,
    description: &'static str,
    strategy: Option<Strategy>,
    prefetch: bool,
}

const CONTENDERS: [Contender; 4] = [
    Contender {
        name: "given",
        description: "given (filesystem) order, one file at a time",
        strategy: Some(Strategy::Given),
        prefetch: false,
    },
    Contender {
        name: "inode",
        description: "inode order, one file at a time",
        strategy: Some(Strategy::Inode),
        prefetch: false,
    },
    Contender {
        name: "physical-single",
        description: "physical order, one file at a time",
        strategy: None,
        prefetch: false,
    },
    Contender {
        name: "physical",
        description: "physical order with the readahead window",
        strategy: None,
        prefetch: true,
    },
];

/// Forwards each distinct error once: the same file fails in every run, and should be
/// named once.
struct Once<'a> {
    inner: &'a dyn Reporter,
    seen: Mutex<HashSet<String>>,
}

impl Reporter for Once<'_> {
    fn error(&self, err: &Error) {
        let mut seen = lock(&self.seen);
        if seen.insert(err.to_string()) {
            self.inner.error(err);
        }
    }

    fn skipped(&self, path: &Path, why: &str) {
        let _ = (path, why);
    }

    fn planned(&self, files: u64, bytes: u64) {
        self.inner.planned(files, bytes);
    }
}

struct Run {
    files: u64,
    bytes: u64,
    errors: u64,
    lookup: f64,
    locate_calls: f64,
    sort: f64,
    read: f64,
    filesystems: Vec<FilesystemReport>,
    trace: Vec<(f64, u64)>,
}

impl Run {
    fn total(&self) -> f64 {
        self.lookup + self.sort + self.read
    }
}

/// Runs every contender `opts.reps` times on `inputs` (planned with `plan_opts`; the
/// physical contenders keep its strategy, the others override it) and returns the
/// median run of each. Per-file errors go to `reporter`, each distinct error once.
pub fn bench(
    inputs: &[PathBuf],
    plan_opts: &PlanOptions,
    opts: &BenchOptions,
    reporter: &dyn Reporter,
) -> BenchResult {
    let once = Once {
        inner: reporter,
        seen: Mutex::new(HashSet::new()),
    };
    // A first plan names the files to evict and gives every file its disk offset, so the
    // seek trace of the non-physical orders can be drawn too. It is built after a first
    // drop, whose `sync` gives freshly written files (delayed allocation) a position.
    make_cold(opts.cold, &[]);
    let reference = Plan::build(inputs, plan_opts, &once);
    let paths: Vec<&Path> = reference.files().iter().map(|f| &*f.entry.path).collect();
    let offsets: HashMap<FileId, u64> = reference
        .files()
        .iter()
        .filter_map(|f| Some((f.entry.id, f.disk_offset()?)))
        .collect();

    let reps = opts.reps.max(1);
    let mut runs: Vec<Vec<Run>> = CONTENDERS.iter().map(|_| Vec::new()).collect();
    let mut cold = ColdMethod::Warm;
    for _ in 0..reps {
        for (c, contender) in CONTENDERS.iter().enumerate() {
            cold = make_cold(opts.cold, &paths);
            let run = run_one(contender, inputs, plan_opts, opts, &offsets, &once);
            runs[c].push(run);
        }
    }

    let mut contenders: Vec<ContenderResult> = CONTENDERS
        .iter()
        .zip(runs)
        .map(|(contender, mut runs)| {
            let totals: Vec<f64> = runs.iter().map(Run::total).collect();
            let mut order: Vec<usize> = (0..runs.len()).collect();
            order.sort_by(|&a, &b| totals[a].total_cmp(&totals[b]));
            let run = runs.swap_remove(order[order.len() / 2]);
            let total = run.total();
            ContenderResult {
                name: contender.name,
                description: contender.description,
                files: run.files,
                bytes: run.bytes,
                average_file_size: per(run.bytes as f64, run.files as f64),
                errors: run.errors,
                lookup_secs: run.lookup,
                locate_calls_secs: run.locate_calls,
                sort_secs: run.sort,
                read_secs: run.read,
                total_secs: total,
                read_bytes_per_sec: per(run.bytes as f64, run.read),
                total_bytes_per_sec: per(run.bytes as f64, total),
                gain_secs: 0.0,
                gain_percent: 0.0,
                ratio: 1.0,
                filesystems: run.filesystems,
                runs_total_secs: totals,
                trace: run.trace,
            }
        })
        .collect();
    let given = contenders[0].total_secs;
    for c in &mut contenders {
        c.gain_secs = given - c.total_secs;
        c.ratio = per(given, c.total_secs);
        c.gain_percent = (c.ratio - 1.0) * 100.0;
    }
    let origin = contenders
        .iter()
        .filter(|c| c.name.starts_with("physical"))
        .min_by(|a, b| a.total_secs.total_cmp(&b.total_secs))
        .map(|best| OriginRows {
            contender: best.name,
            files: best.files,
            bytes: best.bytes,
            average_file_size: best.average_file_size,
            given_secs: given,
            given_bytes_per_sec: contenders[0].total_bytes_per_sec,
            lookup_secs: best.lookup_secs,
            sort_secs: best.sort_secs,
            read_secs: best.read_secs,
            total_secs: best.total_secs,
            total_bytes_per_sec: best.total_bytes_per_sec,
            gain_secs: best.gain_secs,
            gain_percent: best.gain_percent,
            ratio: best.ratio,
        });
    let errors = lock(&once.seen).len() as u64;
    BenchResult {
        cold,
        reps,
        workers: opts.workers.max(1),
        files: reference.summary().files,
        bytes: reference.summary().bytes,
        disks: reference.disks().to_vec(),
        errors,
        contenders,
        origin,
    }
}

fn per(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// Where a trace goes, the files' positions known from the reference plan, and the
/// read's start.
type Tracing<'a> = (
    &'a Mutex<Vec<(f64, u64)>>,
    &'a HashMap<FileId, u64>,
    Instant,
);

/// A contender's read as a [`Job`]: each file read to its end and dropped, its disk
/// position and the time it was handed out traced if asked.
struct Draining<'a> {
    /// With `trace`: where the trace goes, the files' positions known from the reference
    /// plan, and the read's start.
    trace: Option<Tracing<'a>>,
}

impl Job for Draining<'_> {
    type Output = Result<u64, Error>;

    fn work(&self, file: Work<'_>) -> Self::Output {
        if let Some((trace, offsets, started)) = self.trace {
            let planned = file.planned();
            let off = planned
                .disk_offset()
                .or_else(|| offsets.get(&planned.entry.id).copied());
            if let Some(off) = off {
                let t = started.elapsed().as_secs_f64();
                lock(trace).push((t, off));
            }
        }
        file.read_all(|_| {})
    }

    fn succeeded(output: &Self::Output) -> bool {
        output.is_ok()
    }
}

fn run_one(
    contender: &Contender,
    inputs: &[PathBuf],
    plan_opts: &PlanOptions,
    opts: &BenchOptions,
    offsets: &HashMap<FileId, u64>,
    reporter: &dyn Reporter,
) -> Run {
    let mut plan_opts = plan_opts.clone();
    if contender.strategy.is_some() {
        plan_opts.strategy = contender.strategy;
    }
    let plan = Arc::new(Plan::build(inputs, &plan_opts, reporter));
    let summary = plan.summary().clone();
    let mut read_opts = opts.read.clone();
    read_opts.prefetch = contender.prefetch;
    let trace = Mutex::new(Vec::new());
    let started = Instant::now();
    let job = Draining {
        trace: opts.trace.then_some((&trace, offsets, started)),
    };
    let (mut files, mut bytes, mut errors) = (0u64, 0u64, 0u64);
    let consume = ConsumeOptions::new(read_opts, opts.workers);
    read::run(&plan, &consume, &job, &mut NoEvents, |_, _, read| {
        match read {
            Ok(n) => {
                files += 1;
                bytes += n;
            }
            Err(e) => {
                errors += 1;
                reporter.error(&e);
            }
        }
        ControlFlow::Continue(())
    });
    let read = started.elapsed().as_secs_f64();
    let mut trace = into_inner(trace);
    trace.sort_by(|a, b| a.0.total_cmp(&b.0));
    Run {
        files,
        bytes,
        errors: errors + summary.walk.errors,
        lookup: summary.walk_time.as_secs_f64(),
        locate_calls: summary.locate_time.as_secs_f64(),
        sort: summary.sort_time.as_secs_f64(),
        read,
        filesystems: plan.filesystems().to_vec(),
        trace,
    }
}
