//! Checksums of every file, read in physical order with hashing on worker threads.
//!
//! ```
//! use std::sync::Arc;
//! use seekless::{Plan, PlanOptions, Quiet};
//! use seekless::jobs::hash::{Algorithm, hash_plan};
//! use seekless::read::ReadOptions;
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

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::{Arc, Mutex};

use sha2::Digest;

use crate::error::Error;
use crate::jobs::manifest::{Checklist, Verdict};
use crate::plan::{Plan, PlanOptions, PlannedFile};
use crate::read::{self, ConsumeOptions, Job, NoEvents, ReadOptions, ReadStats, Work};
use crate::report::{Reporter, Tee};
use crate::sync::lock;

/// A checksum algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// BLAKE3 (256-bit), as `b3sum`.
    Blake3,
    /// SHA-256, as `sha256sum`.
    Sha256,
    /// SHA-1, as `sha1sum`.
    Sha1,
    /// MD5, as `md5sum`.
    Md5,
}

impl Algorithm {
    /// Digest length in hex characters.
    pub fn hex_len(self) -> usize {
        match self {
            Algorithm::Blake3 | Algorithm::Sha256 => 64,
            Algorithm::Sha1 => 40,
            Algorithm::Md5 => 32,
        }
    }

    /// The algorithm's name as its standard writes it, for messages: "SHA-256", "SHA-1",
    /// "MD5", "BLAKE3".
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Blake3 => "BLAKE3",
            Algorithm::Sha256 => "SHA-256",
            Algorithm::Sha1 => "SHA-1",
            Algorithm::Md5 => "MD5",
        }
    }

    /// A fresh hasher.
    pub fn hasher(self) -> Hasher {
        match self {
            Algorithm::Blake3 => Hasher::Blake3(Box::new(blake3::Hasher::new())),
            Algorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algorithm::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            Algorithm::Md5 => Hasher::Md5(md5::Md5::new()),
        }
    }
}

/// A running checksum.
pub enum Hasher {
    /// BLAKE3.
    Blake3(Box<blake3::Hasher>),
    /// SHA-256.
    Sha256(sha2::Sha256),
    /// SHA-1.
    Sha1(sha1::Sha1),
    /// MD5.
    Md5(md5::Md5),
}

impl Hasher {
    /// Adds bytes.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Blake3(h) => {
                h.update(data);
            }
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Md5(h) => h.update(data),
        }
    }

    /// The digest in lower-case hex.
    pub fn finish_hex(self) -> String {
        match self {
            Hasher::Blake3(h) => h.finalize().to_hex().to_string(),
            Hasher::Sha256(h) => hex(&h.finalize()),
            Hasher::Sha1(h) => hex(&h.finalize()),
            Hasher::Md5(h) => hex(&h.finalize()),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Hashes one file from a reader to its end and checks it did not change.
pub fn hash_reader(file: crate::read::FileReader, algo: Algorithm) -> Result<String, Error> {
    let mut h = algo.hasher();
    file.read_to_end_with(|chunk| h.update(chunk))?;
    Ok(h.finish_hex())
}

/// Hashes everything `input` yields, to its end: a stream that has no place on a disk to
/// plan for, such as standard input (`-` in a manifest).
///
/// ```
/// use seekless::jobs::hash::{Algorithm, hash_stream};
/// let hex = hash_stream(&b"abc"[..], Algorithm::Md5)?;
/// assert_eq!(hex, "900150983cd24fb0d6963f7d28e17f72");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn hash_stream(mut input: impl Read, algo: Algorithm) -> std::io::Result<String> {
    let mut h = algo.hasher();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
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
    let mut done = done;
    let consume = ConsumeOptions::new(opts.clone(), workers);
    read::run(
        &plan,
        &consume,
        &Hashing(algo),
        &mut NoEvents,
        |_, file, result| done(file, result),
    )
    .stats
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

/// What [`check_listed`] tells its caller as it goes. Only [`verdict`](Self::verdict) is
/// required; the rest are for progress and summaries.
pub trait CheckEvents: Send {
    /// A round's plan is built and about to be read (files listed under several names
    /// take one round per name, so the same file is not read twice in one sweep).
    fn reading(&mut self, plan: &Arc<Plan>) {
        let _ = plan;
    }

    /// A file of the round was read and hashed (`hashed`) or failed.
    fn file_done(&mut self, file: &PlannedFile, hashed: bool) {
        let _ = (file, hashed);
    }

    /// The round's read is over.
    fn round_done(&mut self, plan: &Plan, stats: &ReadStats, took: std::time::Duration) {
        let _ = (plan, stats, took);
    }

    /// The verdict on one listed line naming `path`.
    fn verdict(&mut self, path: &Path, verdict: Verdict) -> std::io::Result<()>;
}

/// Checks the files `list` names (all but standard input's lines, which the caller hashes
/// with [`hash_stream`]), as `sha256sum -c` does, reading them in physical order.
///
/// Verdicts come as they become known: first the listed paths that cannot be opened
/// (missing, a directory — `sha256sum -c` says "Is a directory" where a walk would
/// descend — permission denied), in manifest order; then the rest in read order. Errors
/// go to `reporter`, naming the path. Stops at the first error `events` returns (a
/// verdict that cannot be written).
pub fn check_listed(
    list: &mut Checklist,
    plan_opts: &PlanOptions,
    read_opts: &ReadOptions,
    workers: usize,
    reporter: &dyn Reporter,
    events: &mut dyn CheckEvents,
) -> std::io::Result<()> {
    let mut opts = plan_opts.clone();
    // Listed files are named explicitly: a filter has nothing to select.
    opts.walk.filter = crate::Filter::new();
    let mut left = list.awaiting();
    while left > 0 {
        check_round(list, &opts, read_opts, workers, reporter, events)?;
        if list.awaiting() == left {
            // Neither planned nor reported as failing: never seen in practice, but each
            // round must give some file its verdict, or this would never end.
            for path in list.pending() {
                let why = std::io::Error::other("not planned for reading");
                reporter.error(&Error::io(&path, why));
                for verdict in list.judge(&path, None) {
                    events.verdict(&path, verdict)?;
                }
            }
            break;
        }
        left = list.awaiting();
    }
    Ok(())
}

/// One round of [`check_listed`]: plans and hashes the files without verdicts. A file
/// whose identity is already planned under another name (hard links) is left pending
/// for the next round.
fn check_round(
    list: &mut Checklist,
    opts: &PlanOptions,
    read_opts: &ReadOptions,
    workers: usize,
    reporter: &dyn Reporter,
    events: &mut dyn CheckEvents,
) -> std::io::Result<()> {
    // Listed paths are files: a directory is "Is a directory" (`sha256sum -c` says so
    // too), not a tree to walk. Paths the walk reports failing get their verdict first.
    let mut opts = opts.clone();
    opts.walk.descend_into_inputs = false;
    let failed: Mutex<HashSet<OsString>> = Mutex::new(HashSet::new());
    let recorder = Tee {
        inner: reporter,
        on_error: |err: &Error| {
            lock(&failed).insert(err.path().as_os_str().to_owned());
        },
    };
    // Planned from paths borrowed from the checklist: the plan's own are the only copy.
    let plan = Arc::new(Plan::build(&list.pending_paths(), &opts, &recorder));
    let failed = crate::sync::into_inner(failed);
    if !failed.is_empty() {
        let failing = list.pending_where(|p| failed.contains(p.as_os_str()));
        drop(failed);
        for path in &failing {
            for verdict in list.judge(path, None) {
                events.verdict(path, verdict)?;
            }
        }
    }

    events.reading(&plan);
    let started = std::time::Instant::now();
    let mut write_error: Option<std::io::Error> = None;
    let algo = list.algorithm();
    let stats = hash_plan(plan.clone(), algo, read_opts, workers, |file, result| {
        events.file_done(file, result.is_ok());
        let digest = result.map_err(|e| reporter.error(&e)).ok();
        for verdict in list.judge(&file.entry.path, digest.as_deref()) {
            if write_error.is_none() {
                write_error = events.verdict(&file.entry.path, verdict).err();
            }
        }
    });
    events.round_done(&plan, &stats, started.elapsed());
    match write_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
