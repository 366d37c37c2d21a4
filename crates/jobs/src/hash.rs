//! Checksums of every file, read in physical order with hashing on worker threads.
//!
//! The algorithms and hashers are [`jobs::digest`](crate::digest)'s; checking a manifest against the files is [`jobs::check`](crate::check).
//!
//! ```
//! use std::sync::Arc;
//! use seekless_core::{Plan, PlanOptions, Quiet};
//! use seekless_jobs::digest::Algorithm;
//! use seekless_jobs::hash::hash_plan;
//! use seekless_core::read::ReadOptions;
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a"), b"abc")?;
//! let plan = Arc::new(Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet));
//! let mut out = Vec::new();
//! hash_plan(plan, Algorithm::Sha256, &ReadOptions::default(), 2, |file, result| {
//!     out.push((file.entry.path.clone(), result.unwrap()));
//! });
//! assert_eq!(out[0].1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
//! # Ok::<(), std::io::Error>(())
//! ```

use std::ops::ControlFlow;
use std::sync::Arc;

use seekless_core::Error;
use seekless_core::read::{
    self, ConsumeOptions, Consumed, Events, Job, NoEvents, ReadOptions, ReadStats, Work,
};
use seekless_core::{Plan, PlannedFile};

// Their home is `jobs::digest`; here too for code written before it was split off.
#[doc(no_inline)]
use crate::digest::Algorithm;

/// Hashes one file from a reader to its end and checks it did not change.
pub fn hash_reader(
    file: seekless_core::read::FileReader,
    algo: Algorithm,
) -> Result<String, Error> {
    let mut h = algo.hasher();
    file.read_to_end_with(|chunk| h.update(chunk))?;
    Ok(h.finish_hex())
}

/// Hashes every file of `plan` with `workers` threads, in read order, calling `done` (on
/// one thread at a time) with each file and its hex digest or error. Files that failed to
/// open are reported with their error too. Returns the reader's statistics.
pub fn hash_plan<F>(
    plan: Arc<Plan>,
    algo: Algorithm,
    opts: &ReadOptions,
    workers: usize,
    mut done: F,
) -> ReadStats
where
    F: FnMut(&PlannedFile, Result<String, Error>) + Send,
{
    hash_plan_until(plan, algo, opts, workers, |planned, result| {
        done(planned, result);
        ControlFlow::Continue(())
    })
}

/// [`hash_plan`], for a caller whose output can go away: once `done` returns
/// [`ControlFlow::Break`] (`seekless hash | head -1` after `head` exits), no further file
/// is read ([`ReadStats::stopped`]).
pub fn hash_plan_until<F>(
    plan: Arc<Plan>,
    algo: Algorithm,
    opts: &ReadOptions,
    workers: usize,
    done: F,
) -> ReadStats
where
    F: FnMut(&PlannedFile, Result<String, Error>) -> ControlFlow<()> + Send,
{
    let consume = ConsumeOptions::new(opts.clone(), workers);
    hash_plan_with(&plan, algo, &consume, &mut NoEvents, done).stats
}

/// [`hash_plan_until`] telling `events` how the read goes (for progress bars and
/// summaries), and returning where its time went.
pub fn hash_plan_with<E, F>(
    plan: &Arc<Plan>,
    algo: Algorithm,
    opts: &ConsumeOptions,
    events: &mut E,
    mut done: F,
) -> Consumed
where
    E: Events + ?Sized,
    F: FnMut(&PlannedFile, Result<String, Error>) -> ControlFlow<()> + Send,
{
    read::run(plan, opts, &Hashing(algo), events, |_, file, result| {
        done(file, result)
    })
}

/// Hashing as a [`Job`]: each file's hex digest, through the worker's buffer.
pub(crate) struct Hashing(pub(crate) Algorithm);

impl Job for Hashing {
    type Output = Result<String, Error>;

    fn work(&self, file: Work<'_>) -> Self::Output {
        let mut h = self.0.hasher();
        file.read_all(|chunk| h.update(chunk))?;
        Ok(h.finish_hex())
    }

    fn succeeded(output: &Self::Output) -> bool {
        output.is_ok()
    }
}
