//! `verify`: the copies read back from the destination and compared with the source.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{CopyOptions, CopySummary};
use crate::error::Error;
use crate::jobs::hash::Algorithm;
use crate::os;
use crate::plan::{Plan, PlanOptions};
use crate::read::Reader;
use crate::report::Reporter;

/// Reads every file copied back from the destination, in physical order, its cache
/// dropped first, and compares its BLAKE3 hash with the source's.
pub(super) fn verify(
    hashes: &[(PathBuf, String)],
    plan_opts: &PlanOptions,
    opts: &CopyOptions,
    reporter: &dyn Reporter,
    summary: &mut CopySummary,
) {
    let expected: HashMap<&Path, &str> = hashes
        .iter()
        .map(|(p, h)| (p.as_path(), h.as_str()))
        .collect();
    let paths: Vec<PathBuf> = hashes.iter().map(|(p, _)| p.clone()).collect();
    for p in &paths {
        if let Ok(f) = os::with_path(p, |p| File::open(p)) {
            let _ = os::drop_cache(&f, 0, 0);
        }
    }
    let mut verify_opts = PlanOptions::default();
    verify_opts.walk.descend_into_inputs = false;
    verify_opts.walk.threads = plan_opts.walk.threads;
    let plan = Arc::new(Plan::build(&paths, &verify_opts, reporter));
    let verified = AtomicU64::new(0);
    let mismatched = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    Reader::new(plan, opts.read.clone()).par_for_each(opts.workers, |planned, file| {
        let path = &*planned.entry.path;
        let got = file.and_then(|f| crate::jobs::hash::hash_reader(f, Algorithm::Blake3));
        match got {
            Ok(hex) => {
                verified.fetch_add(1, Ordering::Relaxed);
                if expected.get(path).is_some_and(|want| *want != hex) {
                    mismatched.fetch_add(1, Ordering::Relaxed);
                    failed.fetch_add(1, Ordering::Relaxed);
                    reporter.error(&Error::io(
                        path,
                        io::Error::other("verify: the copy differs from the source"),
                    ));
                }
            }
            Err(e) => {
                failed.fetch_add(1, Ordering::Relaxed);
                reporter.error(&e);
            }
        }
    });
    summary.verified += verified.into_inner();
    summary.mismatched += mismatched.into_inner();
    summary.failed += failed.into_inner();
}
