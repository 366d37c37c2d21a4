//! Consume: "read these files in plan order and do this with each", the one shape every
//! job takes (`hash`, `hash --check`, `index`, `tar`, `copy`, `bench`) and that a program
//! of its own can take too.
//!
//! The layer owns what jobs would otherwise each repeat: the per-file decision step
//! ([`decide`]), the sweeps and the workers, one reused read buffer per worker, the check
//! that a file did not change while it was read (one rule:
//! [`FileReader::check_unchanged`]), the data regions of sparse files
//! ([`FileReader::regions`]), progress [`Events`], stopping when the work became
//! pointless, re-raising a worker's or a sweep's panic, and the time each phase took
//! ([`Consumed`]). A job says only what to do with one file ([`Job::work`], on worker
//! threads) and with each result (the sink, one call at a time).
//!
//! ```
//! use std::ops::ControlFlow;
//! use std::sync::Arc;
//! use seekless_core::{Plan, PlanOptions, Quiet};
//! use seekless_core::read::{ConsumeOptions, Job, NoEvents, Work, run};
//!
//! /// Counts the zero bytes of each file.
//! struct Zeros;
//! impl Job for Zeros {
//!     type Output = Result<u64, seekless_core::Error>;
//!     fn work(&self, file: Work<'_>) -> Self::Output {
//!         let mut zeros = 0;
//!         file.read_all(|chunk| zeros += chunk.iter().filter(|&&b| b == 0).count() as u64)?;
//!         Ok(zeros)
//!     }
//!     fn succeeded(output: &Self::Output) -> bool {
//!         output.is_ok()
//!     }
//! }
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a"), [0u8, 1, 0])?;
//! std::fs::write(dir.path().join("b"), [0u8; 5])?;
//! let plan = Arc::new(Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet));
//! let mut total = 0;
//! let done = run(&plan, &ConsumeOptions::default(), &Zeros, &mut NoEvents, |_, _, zeros| {
//!     total += zeros.unwrap();
//!     ControlFlow::Continue(())
//! });
//! assert_eq!((total, done.files, done.failed), (7, 2, 0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{FileReader, ReadOptions, ReadStats, Reader};
use crate::error::Error;
use crate::plan::{Plan, PlannedFile};
use crate::sync::lock;

/// Bytes of each worker's read buffer, reused from file to file.
const BUFFER: usize = 1 << 20;

/// What a read tells its caller as it goes; all optional, called one at a time. Jobs
/// with more to say extend it (`TarEvents`, `CopyEvents`, `CheckEvents`).
pub trait Events: Send {
    /// The files of `plan` are about to be read.
    fn reading(&mut self, plan: &Arc<Plan>) {
        let _ = plan;
    }
    /// One file is done: handled (`ok`), or failed.
    fn file_done(&mut self, file: &PlannedFile, ok: bool) {
        let _ = (file, ok);
    }
    /// The read is over.
    fn read_done(&mut self, consumed: &Consumed) {
        let _ = consumed;
    }
}

/// Events nobody listens to.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoEvents;
impl Events for NoEvents {}

/// How to consume a plan.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ConsumeOptions {
    /// How to read.
    pub read: ReadOptions,
    /// Worker threads running [`Job::work`] (at least one).
    pub workers: usize,
}

impl ConsumeOptions {
    /// Reading with `read`, with `workers` threads.
    pub fn new(read: ReadOptions, workers: usize) -> Self {
        Self { read, workers }
    }
}

impl Default for ConsumeOptions {
    /// Default reading, one worker per CPU.
    fn default() -> Self {
        Self {
            read: ReadOptions::default(),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// What to do with each file, on worker threads.
pub trait Job: Sync {
    /// What a worker makes of one file, handed to the sink.
    type Output: Send;
    /// Makes the output for one file: reads it from `file` (or takes the error that kept
    /// it from being opened).
    fn work(&self, file: Work<'_>) -> Self::Output;
    /// Whether `output` means the file was handled (for [`Events::file_done`] and
    /// [`Consumed::failed`]); by default always.
    fn succeeded(output: &Self::Output) -> bool {
        let _ = output;
        true
    }
}

/// One file handed to a worker: the planned file, the open reader (or why it could not
/// be opened), and the worker's buffer.
pub struct Work<'a> {
    planned: &'a PlannedFile,
    index: u32,
    file: Result<FileReader, Error>,
    buf: &'a mut [u8],
}

impl<'a> Work<'a> {
    /// The planned file (path, size, placement).
    pub fn planned(&self) -> &'a PlannedFile {
        self.planned
    }

    /// Its index in the plan's [`files`](Plan::files) (to find its decision from
    /// [`decide`]).
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The reader and the worker's buffer, for jobs that read in their own way (in
    /// regions, at offsets).
    pub fn into_parts(self) -> (Result<FileReader, Error>, &'a mut [u8]) {
        (self.file, self.buf)
    }

    /// Reads the whole file through the worker's buffer, handing each chunk to `sink`,
    /// then checks it did not change ([`FileReader::finish`]). Returns the bytes read.
    pub fn read_all(self, sink: impl FnMut(&[u8])) -> Result<u64, Error> {
        self.file?.read_to_end_into(self.buf, sink)
    }
}

/// What a consumed read did, and where its time went.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Consumed {
    /// The sweeps' statistics ([`ReadStats::stopped`]: the sink asked to stop).
    pub stats: ReadStats,
    /// From the start of the read to the last file's result.
    pub took: Duration,
    /// Files handed out (opened or not).
    pub files: u64,
    /// Of those, the files whose output did not succeed ([`Job::succeeded`]).
    pub failed: u64,
    /// Workers' time waiting for the sweeps to hand them a file, summed over workers: a
    /// run whose workers mostly wait is disk-bound.
    pub waiting: Duration,
    /// Workers' time in [`Job::work`], summed over workers.
    pub working: Duration,
    /// Workers' time handing results to the sink (waiting for it, and in it), summed.
    pub sinking: Duration,
    /// Worker threads that ran.
    pub workers: usize,
    /// What kind of disk each disk was taken for, and why ([`Reader::disks`]).
    pub disks: Vec<crate::disk::DiskVerdict>,
}

/// What set a run's pace: the one verdict a summary gives of it ([`Consumed::bound`]; an
/// index run's is its phases' own, finer, `Phases::bound` in seekless-catalog).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// The disks: the workers mostly waited for bytes.
    Disk,
    /// The CPUs: the workers mostly worked on what they had read.
    Cpu,
    /// What takes the results (a catalog's writer, an archive's output): the workers
    /// mostly waited to hand results on.
    Sink,
}

impl Consumed {
    /// What set the pace of this read: the disks ([`disk_bound`](Self::disk_bound)), else
    /// what takes the results ([`sink_bound`](Self::sink_bound)), else the CPUs.
    ///
    /// ```
    /// use std::time::Duration;
    /// use seekless_core::read::{Bound, Consumed};
    ///
    /// let mut c = Consumed::default();
    /// c.working = Duration::from_millis(300);
    /// assert_eq!(c.bound(), Bound::Cpu);
    /// c.waiting = Duration::from_millis(400);
    /// assert_eq!(c.bound(), Bound::Disk);
    /// ```
    pub fn bound(&self) -> Bound {
        if self.disk_bound() {
            Bound::Disk
        } else if self.sink_bound() {
            Bound::Sink
        } else {
            Bound::Cpu
        }
    }

    /// Whether the disks, not the workers, set the pace: workers spent more time waiting
    /// for files than working on them.
    pub fn disk_bound(&self) -> bool {
        self.waiting > self.working + self.sinking
    }

    /// Whether what takes the results (the sink: a catalog's writer, an archive's
    /// output) set the pace: workers spent more time handing results on than working
    /// or waiting for files.
    pub fn sink_bound(&self) -> bool {
        self.sinking > self.working && self.sinking > self.waiting
    }
}

/// The outcome of [`decide`]: the plan of the files to read, and each one's decision.
#[derive(Debug)]
#[non_exhaustive]
pub struct Decided<D> {
    /// The files kept, in plan order.
    pub plan: Arc<Plan>,
    /// The decision for each kept file, by its index in `plan`.
    pub decisions: Vec<D>,
    /// Time the decisions took.
    pub took: Duration,
}

/// The per-file decision step before a read: `decide` says, for each planned file, what
/// to do with it (`None`: nothing, it is not read: unchanged, already copied, …). Files
/// with a decision are kept in a new plan, in the same order, with their decisions by
/// their new index ([`Work::index`]).
///
/// ```
/// use seekless_core::{Plan, PlanOptions, Quiet};
/// use seekless_core::read::decide;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("small"), b"x")?;
/// std::fs::write(dir.path().join("large"), vec![1u8; 5000])?;
/// let plan = Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet);
/// let decided = decide(plan, |f| (f.entry.size > 100).then_some("read"));
/// assert_eq!(decided.plan.files().len(), 1);
/// assert_eq!(decided.decisions, ["read"]);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn decide<D>(plan: Plan, mut decide: impl FnMut(&PlannedFile) -> Option<D>) -> Decided<D> {
    let started = Instant::now();
    let decisions: Vec<Option<D>> = plan.files().iter().map(&mut decide).collect();
    let plan = plan.retain(|i, _| decisions[i as usize].is_some());
    // `retain` keeps the order: the decisions of the files kept, by their new index.
    let decisions: Vec<D> = decisions.into_iter().flatten().collect();
    Decided {
        plan: Arc::new(plan),
        decisions,
        took: started.elapsed(),
    }
}

/// Time sums shared by the workers, in nanoseconds.
#[derive(Default)]
struct Clocks {
    waiting: AtomicU64,
    working: AtomicU64,
    sinking: AtomicU64,
    workers: AtomicU64,
}

impl Clocks {
    fn add(counter: &AtomicU64, d: Duration) {
        counter.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    fn get(counter: &AtomicU64) -> Duration {
        Duration::from_nanos(counter.load(Ordering::Relaxed))
    }
}

/// One worker's own state: its buffer and its clocks, added to the shared sums when the
/// worker ends.
struct Worker<'c> {
    buf: Vec<u8>,
    clocks: &'c Clocks,
    last: Instant,
    waiting: Duration,
    working: Duration,
    sinking: Duration,
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        Clocks::add(&self.clocks.waiting, self.waiting);
        Clocks::add(&self.clocks.working, self.working);
        Clocks::add(&self.clocks.sinking, self.sinking);
        self.clocks.workers.fetch_add(1, Ordering::Relaxed);
    }
}

/// Reads every file of `plan` with [`ConsumeOptions::workers`] threads running `job`, and
/// hands each output to `sink` (one call at a time, in the order files finish; with one
/// worker, in sweep order). Once `sink` returns [`ControlFlow::Break`], no further file is
/// handed out and the sweeps stop reading ahead. `events` hears of the start, of each file
/// (before its output reaches `sink`) and of the end; `sink` gets it too, for what a job
/// has more to say. A panic in `job`, `sink` or a sweep is re-raised here.
pub fn run<J, E, S>(
    plan: &Arc<Plan>,
    opts: &ConsumeOptions,
    job: &J,
    events: &mut E,
    sink: S,
) -> Consumed
where
    J: Job,
    E: Events + ?Sized,
    S: FnMut(&mut E, &PlannedFile, J::Output) -> ControlFlow<()> + Send,
{
    events.reading(plan);
    let started = Instant::now();
    let clocks = Clocks::default();
    let counts = (AtomicU64::new(0), AtomicU64::new(0));
    let shared = Mutex::new((sink, &mut *events));
    let mut read = opts.read.clone();
    if opts.workers <= 1 {
        // One worker hands results on in sweep order: one lane per disk.
        read.lanes = 1;
    }
    let reader = Reader::new(plan.clone(), read);
    let disks = reader.disks().to_vec();
    let stats = reader.par_for_each_with(
        opts.workers,
        || Worker {
            buf: vec![0u8; BUFFER],
            clocks: &clocks,
            last: Instant::now(),
            waiting: Duration::ZERO,
            working: Duration::ZERO,
            sinking: Duration::ZERO,
        },
        |worker, index, item| {
            let handed = Instant::now();
            worker.waiting += handed - worker.last;
            let planned = &plan.files()[index as usize];
            let output = job.work(Work {
                planned,
                index,
                file: item,
                buf: &mut worker.buf,
            });
            let worked = Instant::now();
            worker.working += worked - handed;
            let ok = J::succeeded(&output);
            counts.0.fetch_add(1, Ordering::Relaxed);
            counts.1.fetch_add(u64::from(!ok), Ordering::Relaxed);
            let flow = {
                let (sink, events) = &mut *lock(&shared);
                events.file_done(planned, ok);
                sink(events, planned, output)
            };
            worker.last = Instant::now();
            worker.sinking += worker.last - worked;
            flow
        },
    );
    drop(shared);
    let consumed = Consumed {
        stats,
        took: started.elapsed(),
        files: counts.0.into_inner(),
        failed: counts.1.into_inner(),
        waiting: Clocks::get(&clocks.waiting),
        working: Clocks::get(&clocks.working),
        sinking: Clocks::get(&clocks.sinking),
        workers: clocks.workers.load(Ordering::Relaxed) as usize,
        disks,
    };
    events.read_done(&consumed);
    consumed
}

/// [`run`] for a job with one ordered sink (an archive): `each` runs on the calling
/// thread for every file in sweep order, with one buffer, and returns whether the file
/// was handled. Its first error stops the read (the sweeps stop reading ahead) and is
/// returned.
pub fn run_in_order<E, X>(
    plan: &Arc<Plan>,
    read: &ReadOptions,
    events: &mut E,
    mut each: impl FnMut(&mut E, Work<'_>) -> Result<bool, X>,
) -> Result<Consumed, X>
where
    E: Events + ?Sized,
{
    events.reading(plan);
    let started = Instant::now();
    let mut buf = vec![0u8; BUFFER];
    let mut consumed = Consumed {
        workers: 1,
        ..Consumed::default()
    };
    // In sweep order: one lane per disk.
    let mut read = read.clone();
    read.lanes = 1;
    let reader = Reader::new(plan.clone(), read);
    consumed.disks = reader.disks().to_vec();
    let mut last = Instant::now();
    while let Some((index, item)) = reader.next_file() {
        let handed = Instant::now();
        consumed.waiting += handed - last;
        let planned = &plan.files()[index as usize];
        let work = Work {
            planned,
            index,
            file: item,
            buf: &mut buf,
        };
        let ok = each(events, work)?;
        consumed.files += 1;
        consumed.failed += u64::from(!ok);
        events.file_done(planned, ok);
        last = Instant::now();
        consumed.working += last - handed;
    }
    consumed.stats = reader.stats();
    consumed.took = started.elapsed();
    drop(reader);
    events.read_done(&consumed);
    Ok(consumed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::tests::panic_message;
    use crate::{PlanOptions, Quiet};

    fn plan_of(n: usize) -> (tempfile::TempDir, Arc<Plan>) {
        let t = tempfile::tempdir().unwrap();
        for i in 0..n {
            std::fs::write(t.path().join(format!("f{i}")), vec![7u8; 100 * (i + 1)]).unwrap();
        }
        let plan = Plan::build(&[t.path().to_path_buf()], &PlanOptions::default(), &Quiet);
        (t, Arc::new(plan))
    }

    #[test]
    fn a_read_has_one_verdict_the_disks_the_sink_or_the_cpus() {
        let ms = Duration::from_millis;
        let consumed = |waiting, working, sinking| Consumed {
            waiting: ms(waiting),
            working: ms(working),
            sinking: ms(sinking),
            ..Consumed::default()
        };
        // Waiting for files longer than working and handing on together: the disks.
        assert_eq!(consumed(500, 300, 100).bound(), Bound::Disk);
        // Handing on longer than either of the others: the sink.
        assert_eq!(consumed(200, 100, 300).bound(), Bound::Sink);
        // Otherwise the CPUs, ties and nothing at all included.
        assert_eq!(consumed(400, 300, 100).bound(), Bound::Cpu);
        assert_eq!(consumed(100, 300, 200).bound(), Bound::Cpu);
        assert_eq!(consumed(0, 0, 0).bound(), Bound::Cpu);
        // The verdict is the predicates', never two at once.
        for (w, k, s) in [
            (500, 300, 100),
            (200, 100, 300),
            (400, 300, 100),
            (600, 0, 600),
        ] {
            let c = consumed(w, k, s);
            assert!(!(c.disk_bound() && c.sink_bound()), "{c:?}");
            assert_eq!(c.bound() == Bound::Disk, c.disk_bound(), "{c:?}");
        }
    }

    struct Length;
    impl Job for Length {
        type Output = Result<u64, Error>;
        fn work(&self, file: Work<'_>) -> Self::Output {
            file.read_all(|_| {})
        }
        fn succeeded(output: &Self::Output) -> bool {
            output.is_ok()
        }
    }

    #[derive(Default)]
    struct Counted {
        started: usize,
        done: Vec<(u64, bool)>,
        ended: Option<Consumed>,
    }
    impl Events for Counted {
        fn reading(&mut self, _plan: &Arc<Plan>) {
            self.started += 1;
        }
        fn file_done(&mut self, file: &PlannedFile, ok: bool) {
            self.done.push((file.entry.size, ok));
        }
        fn read_done(&mut self, consumed: &Consumed) {
            self.ended = Some(consumed.clone());
        }
    }

    #[test]
    fn every_file_reaches_events_and_sink_once_with_its_output() {
        let (_t, plan) = plan_of(20);
        for workers in [1, 3] {
            let mut events = Counted::default();
            let mut sizes = Vec::new();
            let opts = ConsumeOptions::new(ReadOptions::default(), workers);
            let done = run(&plan, &opts, &Length, &mut events, |events, f, n| {
                // The file was announced before its output arrives.
                assert_eq!(events.done.last(), Some(&(f.entry.size, true)));
                sizes.push(n.unwrap());
                ControlFlow::Continue(())
            });
            sizes.sort_unstable();
            let want: Vec<u64> = (1..=20).map(|i| 100 * i).collect();
            assert_eq!(sizes, want);
            assert_eq!((done.files, done.failed, done.workers), (20, 0, workers));
            assert_eq!(events.started, 1);
            assert_eq!(events.done.len(), 20);
            assert_eq!(events.ended.unwrap().files, 20);
        }
    }

    #[test]
    fn a_sink_that_breaks_stops_the_read() {
        let (_t, plan) = plan_of(50);
        let mut seen = 0;
        let opts = ConsumeOptions::new(ReadOptions::default(), 1);
        let done = run(&plan, &opts, &Length, &mut NoEvents, |_, _, _| {
            seen += 1;
            if seen == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert!(done.stats.stopped);
        assert_eq!(seen, 3);
        assert_eq!(done.files, 3);
    }

    /// Windows has no status-change time in the standard library's metadata.
    #[cfg(unix)]
    #[test]
    fn a_file_that_changed_after_it_was_opened_fails_by_its_status_change_time() {
        let (t, plan) = plan_of(1);
        let path = t.path().join("f0");
        let mut reader = Reader::new(plan.clone(), ReadOptions::default());
        let file = reader.next().unwrap().unwrap();
        // Same size, same modification time, but written to meanwhile.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, vec![8u8; 100]).unwrap();
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(mtime).unwrap();
        let err = file.read_to_end_with(|_| {}).unwrap_err();
        assert!(
            matches!(err.kind(), crate::ErrorKind::Changed(crate::Change::Status)),
            "{err}"
        );
    }

    #[test]
    fn in_order_runs_on_the_callers_thread_and_stops_at_the_first_error() {
        let (_t, plan) = plan_of(10);
        let mut events = Counted::default();
        let mut seen = Vec::new();
        let result = run_in_order(&plan, &ReadOptions::default(), &mut events, |_, work| {
            seen.push(work.index());
            if seen.len() == 4 {
                return Err("stop");
            }
            Ok(work.read_all(|_| {}).is_ok())
        });
        assert_eq!(result.unwrap_err(), "stop");
        assert_eq!(seen.len(), 4);
        assert_eq!(events.done.len(), 3);
        assert!(
            events.ended.is_none(),
            "an aborted read does not report an end"
        );
        let done = run_in_order(&plan, &ReadOptions::default(), &mut NoEvents, |_, work| {
            Ok::<_, ()>(work.read_all(|_| {}).is_ok())
        })
        .unwrap();
        assert_eq!((done.files, done.failed), (10, 0));
    }

    #[test]
    fn a_job_that_panics_fails_the_run_with_its_message() {
        struct Faulty;
        impl Job for Faulty {
            type Output = ();
            fn work(&self, file: Work<'_>) {
                assert!(
                    !file.planned().entry.path.ends_with("f3"),
                    "job fault at {}",
                    file.planned().entry.path.display()
                );
            }
        }
        let (_t, plan) = plan_of(8);
        for workers in [1, 4] {
            let p = plan.clone();
            let message = panic_message(move || {
                let opts = ConsumeOptions::new(ReadOptions::default(), workers);
                run(&p, &opts, &Faulty, &mut NoEvents, |_, _, ()| {
                    ControlFlow::Continue(())
                });
            });
            assert!(message.contains("job fault at"), "{workers}: {message}");
        }
    }

    #[test]
    fn decide_keeps_decided_files_in_order_with_their_decisions() {
        let (_t, plan) = plan_of(6);
        let plan = Arc::into_inner(plan).unwrap();
        let decided = decide(plan, |f| (f.entry.size % 200 == 0).then_some(f.entry.size));
        let sizes: Vec<u64> = decided.plan.files().iter().map(|f| f.entry.size).collect();
        assert_eq!(sizes, decided.decisions);
        assert_eq!(decided.decisions.len(), 3);
    }
}
