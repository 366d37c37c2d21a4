//! `seekless copy`: `cp -a` read in physical order, atomic per file, incremental.

use std::path::PathBuf;

use anyhow::{Context, Result};
use seekless::PlannedFile;
use seekless::jobs::copy::{
    CopyError, CopyEvents, CopyOptions, CopySummary, ResolveError, copy_with, resolve_roots,
};
use seekless::jobs::digest::Algorithm;
use seekless::jobs::manifest::ManifestFile;

use crate::exit::Code;
use crate::hash::AlgoArg;
use crate::inputs::{InputArgs, UsageError};
use crate::options::{ReadArgs, ReportArgs};
use crate::progress::read_events_through;
use crate::progress::{Console, ReadProgress};

/// A directory SOURCE is copied to DEST/NAME (DEST is made if missing), on every run the
/// same; `SOURCE/` (a trailing slash) copies its contents into DEST, as rsync does. A file
/// SOURCE goes to DEST/NAME when DEST is a directory (or ends in '/', or several SOURCEs
/// are given), else to DEST. Files DEST has with the same size and
/// mtime are skipped without being read (rsync's quick check); each file is written to a
/// temporary name beside its destination and renamed when complete.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,

    /// Compare content (BLAKE3) instead of size and mtime to find unchanged files.
    #[arg(long)]
    pub checksum: bool,

    /// Remove entries under DEST that SOURCE does not have (not with --ext or --glob).
    /// Nothing is deleted after any error in the run (a directory that could not be
    /// listed, a file that could not be read), as rsync does.
    #[arg(long)]
    pub delete: bool,

    /// With --delete: delete even after errors, except at and under the paths that failed
    /// or were left out.
    #[arg(long, requires = "delete")]
    pub ignore_errors: bool,

    /// With --delete: a SOURCE that is an empty directory empties its copy too. Without
    /// it, an empty SOURCE directory (a drive that is not mounted looks like one) deletes
    /// nothing from a DEST that has entries, and the run exits 1 saying so.
    #[arg(long, requires = "delete")]
    pub allow_empty_source: bool,

    /// After copying, read every file copied back from DEST (its cache dropped first) and
    /// compare it with the source's BLAKE3 hash.
    #[arg(long)]
    pub verify: bool,

    /// Write the source files' hashes to FILE (b3sum / sha256sum format, paths as read),
    /// unchanged files included (they are read, not written).
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,

    /// The manifest's algorithm.
    #[arg(long, value_enum, default_value_t = AlgoArg::Blake3, requires = "manifest")]
    pub algo: AlgoArg,

    /// fsync each file before renaming it into place (the default already puts a file in
    /// place only once its data is on the disk, flushing a batch of files at a time).
    #[arg(long)]
    pub fsync: bool,

    /// Rename each file into place as soon as it is written and flush nothing. Faster on
    /// some disks, but after a power cut a copied file can hold zeros under its final
    /// name, with the right size and mtime, and later runs take it for unchanged.
    #[arg(long)]
    pub no_sync: bool,

    /// Do not copy extended attributes (copied by default where DEST supports them).
    #[arg(long)]
    pub no_xattrs: bool,

    /// Always read and write, even within one filesystem (no FICLONE or
    /// copy_file_range).
    #[arg(long)]
    pub no_clone: bool,

    #[command(flatten)]
    pub report: ReportArgs,

    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(mut args: Args) -> Result<Code> {
    if args.input.paths.len() < 2
        && !(args.input.files_from.is_some() && args.input.paths.len() == 1)
    {
        return Err(UsageError("give SOURCE... DEST".into()).into());
    }
    if args.delete && (!args.input.ext.is_empty() || !args.input.glob.is_empty()) {
        // What the filter leaves out is not "absent from the source": rsync protects it
        // from --delete; seekless does not try to tell the two apart.
        return Err(UsageError("--delete cannot be combined with --ext or --glob".into()).into());
    }
    let dest = args.input.paths.pop().expect("checked");
    let sources = args.input.paths()?;
    let roots = resolve_roots(&sources, &dest).map_err(|e| match e {
        // Could not look at a source: exit 1, as for any failure.
        ResolveError::Source { .. } => anyhow::Error::from(e),
        // The rest is what was asked: exit 2.
        _ => UsageError(e.to_string()).into(),
    })?;
    let plan_opts = args.input.plan_options_for_reading(&args.read)?;

    let mut opts = CopyOptions::default();
    opts.read = args.read.options();
    opts.workers = args.read.workers();
    opts.checksum = args.checksum;
    opts.delete = args.delete;
    opts.ignore_errors = args.ignore_errors;
    opts.allow_empty_source = args.allow_empty_source;
    opts.verify = args.verify;
    opts.fsync = args.fsync;
    opts.sync = !args.no_sync;
    opts.xattrs = !args.no_xattrs;
    opts.fast_path = !args.no_clone;
    let manifest = match &args.manifest {
        Some(path) => {
            opts.hash = Some(Algorithm::from(args.algo));
            let manifest = ManifestFile::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?
                .for_algorithm(Algorithm::from(args.algo));
            opts.outputs.push(manifest.identity());
            Some(manifest)
        }
        None => None,
    };

    let console = Console::new(args.report.verbose);
    let mut events = Progress {
        read: ReadProgress::new(&console, args.report.summary),
        manifest,
    };
    let summary = match copy_with(&roots, &plan_opts, &opts, &console, &mut events) {
        Ok(s) => s,
        Err(e) => {
            console.finish();
            eprintln!("seekless: {e}");
            // Another run writes there: as a usage error, nothing was done.
            if matches!(e, CopyError::Busy { .. }) {
                return Ok(Code::Usage);
            }
            return Ok(Code::Failed);
        }
    };
    console.finish();
    if let Some(manifest) = events.manifest {
        let path = manifest.path().to_path_buf();
        manifest
            .commit()
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.report.summary || summary.stopped || summary.deletion_skipped {
        print_counts(&summary);
    }
    Ok(Code::from_errors(console.errors()))
}

fn print_counts(s: &CopySummary) {
    let mut text = format!(
        "seekless: copy: {} copied, {} updated, {} skipped, {} deleted, {} failed; {} written{}; \
         {} directories, {} links and special files, {} hard links; metadata brought up to date on {}",
        s.copied,
        s.updated,
        s.skipped,
        s.deleted,
        s.failed,
        indicatif::HumanBytes(s.bytes),
        if s.cloned > 0 {
            format!(
                ", {} shared with the source (cloned)",
                indicatif::HumanBytes(s.cloned)
            )
        } else {
            String::new()
        },
        s.dirs,
        s.others,
        s.hardlinks,
        s.refreshed
    );
    if s.verified > 0 {
        text += &format!("; verified {}, {} differ", s.verified, s.mismatched);
    }
    if s.leftovers_removed > 0 {
        text += &format!(
            "; removed {} temporaries of an interrupted run",
            s.leftovers_removed
        );
    }
    for (dev, method) in &s.methods {
        text += &format!(
            "\nseekless: copy: files of device {} {}",
            seekless::device_name(*dev),
            match method {
                seekless::jobs::copy::Method::ReadWrite => "read and written",
                seekless::jobs::copy::Method::Clone => "cloned (FICLONE: blocks shared)",
                seekless::jobs::copy::Method::CopyRange => "copied in the kernel (copy_file_range)",
                _ => "copied",
            }
        );
    }
    if s.stopped {
        text += "\nseekless: copy: stopped early: the destination is full; run again when there is room";
    }
    eprintln!("{text}");
}

/// The read phase on stderr, as for `hash`, and the manifest's lines, written as they
/// come.
struct Progress<'a> {
    read: ReadProgress<'a>,
    manifest: Option<ManifestFile>,
}

read_events_through!(Progress, read);

impl CopyEvents for Progress<'_> {
    fn hashed(&mut self, file: &PlannedFile, hex: &str) {
        if let Some(manifest) = &mut self.manifest {
            manifest.push(hex, &file.entry.path);
        }
    }
}
