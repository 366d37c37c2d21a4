//! The listed files' rounds: each plans the files still without verdicts and hashes them
//! on the read layer ([`read::run`]).

use std::collections::HashSet;
use std::ffi::OsString;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use super::CheckEvents;
use crate::hash::Hashing;
use crate::manifest::Checklist;
use seekless_core::Error;
use seekless_core::Reporter;
use seekless_core::read::{self, ConsumeOptions, ReadOptions};
use seekless_core::{Plan, PlanOptions};
use seekless_sys::sync::lock;

/// Checks the files `list` names (all but standard input's lines, which the caller hashes
/// with [`hash_stream`](crate::digest::hash_stream);
/// [`check_manifests`](super::check_manifests) does both), as `sha256sum -c` does,
/// reading them in physical order.
///
/// Verdicts come as they become known: first the listed paths that cannot be opened
/// (missing, a directory — `sha256sum -c` says "Is a directory" where a walk would
/// descend — permission denied), in manifest order; then the rest in read order. Errors
/// go to `reporter`, naming the path. Stops at the first error `events` returns (a
/// verdict that cannot be written). With `ignore_missing`, a listed file that does not
/// exist gets no verdict and no error ([`Checklist::ignore`]).
pub fn check_listed(
    list: &mut Checklist,
    plan_opts: &PlanOptions,
    read_opts: &ReadOptions,
    workers: usize,
    ignore_missing: bool,
    reporter: &dyn Reporter,
    events: &mut dyn CheckEvents,
) -> std::io::Result<()> {
    let mut opts = plan_opts.clone();
    // Listed files are named explicitly: a filter has nothing to select.
    opts.walk.filter = seekless_core::Filter::new();
    let mut left = list.awaiting();
    while left > 0 {
        check_round(
            list,
            &opts,
            read_opts,
            workers,
            ignore_missing,
            reporter,
            events,
        )?;
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
    ignore_missing: bool,
    reporter: &dyn Reporter,
    events: &mut dyn CheckEvents,
) -> std::io::Result<()> {
    // Listed paths are files: a directory is "Is a directory" (`sha256sum -c` says so
    // too), not a tree to walk. Paths the walk reports failing get their verdict first.
    let mut opts = opts.clone();
    opts.walk.descend_into_inputs = false;
    let failed: Mutex<HashSet<OsString>> = Mutex::new(HashSet::new());
    let missing: Mutex<HashSet<OsString>> = Mutex::new(HashSet::new());
    let recorder = Tee {
        inner: reporter,
        on_error: |err: &Error| {
            let path = err.path().as_os_str().to_owned();
            let absent = err
                .io_error()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound);
            if ignore_missing && absent {
                lock(&missing).insert(path);
                return false;
            }
            lock(&failed).insert(path);
            true
        },
    };
    // Planned from paths borrowed from the checklist: the plan's own are the only copy.
    let plan = Arc::new(Plan::build_iter(list.pending_paths(), &opts, &recorder));
    let failed = seekless_sys::sync::into_inner(failed);
    let missing = seekless_sys::sync::into_inner(missing);
    if !missing.is_empty() {
        for path in list.pending_where(|p| missing.contains(p.as_os_str())) {
            list.ignore(&path);
        }
    }
    if !failed.is_empty() {
        let failing = list.pending_where(|p| failed.contains(p.as_os_str()));
        drop(failed);
        for path in &failing {
            for verdict in list.judge(path, None) {
                events.verdict(path, verdict)?;
            }
        }
    }

    let mut write_error: Option<std::io::Error> = None;
    let job = Hashing(list.algorithm());
    let consume = ConsumeOptions::new(read_opts.clone(), workers);
    read::run(&plan, &consume, &job, events, |events, file, result| {
        let digest = result.map_err(|e| reporter.error(&e)).ok();
        for verdict in list.judge(&file.entry.path, digest.as_deref()) {
            if write_error.is_none() {
                write_error = events.verdict(&file.entry.path, verdict).err();
            }
        }
        // A verdict that cannot be written: nobody to check for, stop reading.
        if write_error.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    match write_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Passes everything on to `inner`, and hands each error to `on_error` too: for a caller
/// that must know which paths failed.
struct Tee<'a, F> {
    /// Where everything goes.
    inner: &'a dyn Reporter,
    /// Called with each error first: whether it goes on to `inner` too.
    on_error: F,
}

impl<F: Fn(&Error) -> bool + Sync> Reporter for Tee<'_, F> {
    fn error(&self, err: &Error) {
        if (self.on_error)(err) {
            self.inner.error(err);
        }
    }

    fn skipped(&self, path: &std::path::Path, why: &str) {
        self.inner.skipped(path, why);
    }

    fn planned(&self, files: u64, bytes: u64) {
        self.inner.planned(files, bytes);
    }

    fn warning(&self, path: Option<&std::path::Path>, what: &str) {
        self.inner.warning(path, what);
    }
}
