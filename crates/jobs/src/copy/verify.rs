//! `verify`: the copies read back from the destination and compared with the source.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{CopyOptions, CopySummary};
use crate::digest::Algorithm;
use crate::hash;
use seekless_core::Error;
use seekless_core::Reporter;
use seekless_core::read::{self, ConsumeOptions, NoEvents};
use seekless_core::{Plan, PlanOptions};
use seekless_sys as os;

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
    let (mut verified, mut mismatched, mut failed) = (0, 0, 0);
    let consume = ConsumeOptions::new(opts.read.clone(), opts.workers);
    let job = hash::Hashing(Algorithm::Blake3);
    read::run(&plan, &consume, &job, &mut NoEvents, |_, planned, got| {
        let path = &*planned.entry.path;
        match got {
            Ok(hex) => {
                verified += 1;
                if expected.get(path).is_some_and(|want| *want != hex) {
                    mismatched += 1;
                    failed += 1;
                    reporter.error(&Error::io(
                        path,
                        io::Error::other("verify: the copy differs from the source"),
                    ));
                }
            }
            Err(e) => {
                failed += 1;
                reporter.error(&e);
            }
        }
        ControlFlow::Continue(())
    });
    summary.verified += verified;
    summary.mismatched += mismatched;
    summary.failed += failed;
}
