//! Checking manifests against the files they list, as `sha256sum -c` does, the files read
//! in physical order.
//!
//! [`check_manifests`] is the whole of `seekless hash --check` but the printing: it loads
//! the manifests (`-` is standard input), hashes standard input for lines naming `-`,
//! reads the listed files in rounds ([`check_listed`]), and tells each line's [`Verdict`]
//! through [`CheckEvents`] as it becomes known. What it returns says, per manifest, what
//! it came to and which closing warnings `sha256sum -c` would print, and whether the
//! check passed as a whole (`sha256sum -c`'s exit status).
//!
//! ```
//! use std::path::Path;
//! use seekless_core::Quiet;
//! use seekless_jobs::check::{CheckEvents, CheckOptions, check_manifests};
//! use seekless_jobs::manifest::Verdict;
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a"), b"abc")?;
//! let manifest = dir.path().join("SHA256SUMS");
//! let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
//! let a = dir.path().join("a");
//! std::fs::write(&manifest, format!("{abc}  {}\nnot a line\n", a.display()))?;
//!
//! struct Collect(Vec<(std::path::PathBuf, Verdict)>);
//! // The read's progress events are optional: none here.
//! impl seekless_core::read::Events for Collect {}
//! impl CheckEvents for Collect {
//!     fn verdict(&mut self, path: &Path, verdict: Verdict) -> std::io::Result<()> {
//!         self.0.push((path.to_path_buf(), verdict));
//!         Ok(())
//!     }
//! }
//! let mut seen = Collect(Vec::new());
//! let opts = CheckOptions::default();
//! let outcome = check_manifests(&[manifest], &mut std::io::empty(), &opts, &Quiet, &mut seen)?;
//! assert_eq!(seen.0, [(a, Verdict::Ok)]);
//! assert!(outcome.passed, "an improperly formatted line fails only with `strict`");
//! assert_eq!(outcome.warnings(false), ["WARNING: 1 line is improperly formatted"]);
//! # Ok::<(), std::io::Error>(())
//! ```

mod listed;

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::digest::{Algorithm, hash_stream};
use crate::manifest::{Checklist, Tally, Verdict};
use seekless_core::Error;
use seekless_core::PlanOptions;
use seekless_core::Reporter;
use seekless_core::read::{Events, ReadOptions};

pub use listed::check_listed;

/// How to check.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CheckOptions {
    /// The algorithm the manifests' digests are for (default SHA-256, as `sha256sum`).
    /// Lines that do not fit it are improperly formatted.
    pub algo: Algorithm,
    /// Fail a manifest that has an improperly formatted line (`--strict`).
    pub strict: bool,
    /// How to walk and locate the listed files (a filter is ignored: listed files are
    /// named explicitly).
    pub plan: PlanOptions,
    /// How to read them.
    pub read: ReadOptions,
    /// Threads hashing.
    pub workers: usize,
    /// Give no verdict for a listed file that does not exist, and say nothing of it
    /// (`--ignore-missing`); a manifest of which no file was verified fails.
    pub ignore_missing: bool,
    /// The manifests' lines end with NUL, not a newline (as `sha256sum -z` writes
    /// them).
    pub nul_terminated: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            algo: Algorithm::Sha256,
            strict: false,
            plan: PlanOptions::default(),
            read: ReadOptions::default(),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            ignore_missing: false,
            nul_terminated: false,
        }
    }
}

/// What a check tells its caller as it goes. Only [`verdict`](Self::verdict) is required;
/// the rest are for progress, summaries and `-w`.
pub trait CheckEvents: Events {
    /// A manifest's line is improperly formatted (for the algorithm checked), as it is
    /// loaded: `sha256sum -c -w` warns about each.
    fn malformed(&mut self, line: &MalformedLine<'_>) {
        let _ = line;
    }

    /// The verdict on one listed line naming `path` (`-` for standard input). An error
    /// (the verdict could not be written) stops the check.
    fn verdict(&mut self, path: &Path, verdict: Verdict) -> io::Result<()>;
}

/// An improperly formatted line of a manifest. Shown, it is coreutils' warning:
/// `SHA256SUMS: 3: improperly formatted SHA256 checksum line`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MalformedLine<'a> {
    /// The manifest's name in messages ([`ManifestOutcome::name`]).
    pub manifest: &'a str,
    /// The manifest as given (`-`: standard input).
    pub path: &'a Path,
    /// The line's number, from 1.
    pub line: usize,
    /// The algorithm checked.
    pub algo: Algorithm,
}

impl MalformedLine<'_> {
    /// The warning, the manifest named `manifest` instead of
    /// [`manifest`](Self::manifest) (coreutils quotes the name for the shell).
    pub fn naming(&self, manifest: &str) -> String {
        format!(
            "{manifest}: {}: improperly formatted {} checksum line",
            self.line,
            crate::manifest::bsd_tag(self.algo)
        )
    }
}

impl fmt::Display for MalformedLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.naming(self.manifest))
    }
}

/// What one manifest came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Standing {
    /// It could not be opened or read to its end (the error went to the reporter): failed,
    /// with no closing warnings.
    Unreadable,
    /// No line was properly formatted for the algorithm: failed, and said so even with
    /// `--status`, as coreutils does.
    NoProperlyFormattedLines,
    /// Its lines were checked; whether it passed is [`Tally::passed`] (with `strict`).
    Checked {
        /// Whether it passed.
        passed: bool,
    },
}

/// One manifest's result.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestOutcome {
    /// The manifest as given; `-` is standard input.
    pub path: PathBuf,
    /// Its name in messages: the path, or `standard input`.
    pub name: String,
    /// Its counts.
    pub tally: Tally,
    /// What it came to.
    pub standing: Standing,
}

impl ManifestOutcome {
    /// Whether the manifest passed.
    pub fn passed(&self) -> bool {
        matches!(self.standing, Standing::Checked { passed: true })
    }
}

/// What a check came to.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckOutcome {
    /// The algorithm checked.
    pub algo: Algorithm,
    /// Each manifest's result, in the order given.
    pub manifests: Vec<ManifestOutcome>,
    /// Whether every manifest passed: `sha256sum -c`'s exit status 0.
    pub passed: bool,
    /// Whether missing files were ignored ([`CheckOptions::ignore_missing`]).
    pub ignore_missing: bool,
}

impl CheckOutcome {
    /// The warnings `sha256sum -c` closes with, manifest by manifest, in its words
    /// (without the program's name): `M: no properly formatted checksum lines found` for
    /// a manifest without one, and the counts of improperly formatted lines, unreadable
    /// files and mismatches ([`Tally::warnings`]) for the others, then, ignoring missing
    /// files, `M: no file was verified` where none was. With `status_only` (`--status`)
    /// only the first kind, as coreutils.
    pub fn warnings(&self, status_only: bool) -> Vec<String> {
        self.warnings_naming(status_only, |m| m.name.clone())
    }

    /// [`warnings`](Self::warnings), each manifest named by `name` (coreutils quotes
    /// the names for the shell).
    pub fn warnings_naming(
        &self,
        status_only: bool,
        mut name: impl FnMut(&ManifestOutcome) -> String,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for m in &self.manifests {
            match m.standing {
                Standing::Unreadable => {}
                Standing::NoProperlyFormattedLines => out.push(format!(
                    "{}: no properly formatted checksum lines found",
                    name(m)
                )),
                Standing::Checked { .. } if !status_only => {
                    out.extend(m.tally.warnings());
                    if self.ignore_missing && m.tally.ok == 0 {
                        out.push(format!("{}: no file was verified", name(m)));
                    }
                }
                Standing::Checked { .. } => {}
            }
        }
        out
    }
}

/// The name of manifest `path` in messages: `standard input` for `-`.
fn manifest_name(path: &Path) -> String {
    if is_stdin(path) {
        "standard input".to_string()
    } else {
        path.display().to_string()
    }
}

fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Checks `manifests` (`-`: read from `stdin`) as `sha256sum -c` does, reading the listed
/// files in physical order.
///
/// Verdicts come through `events` in this order: lines naming `-` (each hashes what is
/// left of `stdin`), then the listed files that cannot be opened, in manifest order, then
/// the rest in read order ([`check_listed`]). Errors (a manifest or file that cannot be
/// read) go to `reporter`, naming it. Returns an error only when `events` does (a verdict
/// that cannot be written); the check stops there.
pub fn check_manifests(
    manifests: &[PathBuf],
    stdin: &mut dyn BufRead,
    opts: &CheckOptions,
    reporter: &dyn Reporter,
    events: &mut dyn CheckEvents,
) -> io::Result<CheckOutcome> {
    let algo = opts.algo;
    let mut list = Checklist::new(algo);
    list.set_nul_terminated(opts.nul_terminated);
    // Per manifest: whether it could be read to its end.
    let mut whole = Vec::with_capacity(manifests.len());
    for path in manifests {
        let name = manifest_name(path);
        let mut malformed = |line: usize| {
            events.malformed(&MalformedLine {
                manifest: &name,
                path,
                line,
                algo,
            })
        };
        let added = if is_stdin(path) {
            list.add_manifest(&mut *stdin, true, &mut malformed)
        } else {
            match File::open(path) {
                Ok(f) => list.add_manifest(BufReader::new(f), false, &mut malformed),
                Err(e) => {
                    // Still a manifest, with nothing in it: its tally lines up with `whole`.
                    list.start_manifest(false);
                    Err(e)
                }
            }
        };
        whole.push(match added {
            Ok(()) => true,
            Err(e) => {
                reporter.error(&Error::io(&name, e));
                false
            }
        });
    }

    for i in 0..list.stdin_lines() {
        let digest = hash_stream(&mut *stdin, algo)
            .map_err(|e| reporter.error(&Error::io("-", e)))
            .ok();
        let verdict = list.judge_stdin(i, digest.as_deref());
        events.verdict(Path::new("-"), verdict)?;
    }
    check_listed(
        &mut list,
        &opts.plan,
        &opts.read,
        opts.workers,
        opts.ignore_missing,
        reporter,
        events,
    )?;

    let outcomes: Vec<ManifestOutcome> = manifests
        .iter()
        .zip(list.tallies())
        .zip(whole)
        .map(|((path, tally), whole)| {
            let standing = if !whole {
                Standing::Unreadable
            } else if tally.listed == 0 {
                Standing::NoProperlyFormattedLines
            } else {
                Standing::Checked {
                    passed: tally.passed(opts.strict),
                }
            };
            ManifestOutcome {
                path: path.clone(),
                name: manifest_name(path),
                tally: tally.clone(),
                standing,
            }
        })
        .collect();
    Ok(CheckOutcome {
        algo,
        ignore_missing: opts.ignore_missing,
        passed: outcomes.iter().all(ManifestOutcome::passed),
        manifests: outcomes,
    })
}

#[cfg(test)]
mod tests;
