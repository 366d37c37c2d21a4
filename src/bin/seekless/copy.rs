//! `seekless copy`: `cp -a` read in physical order, atomic per file, incremental.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use seekless::PlannedFile;
use seekless::jobs::copy::{CopyEvents, CopyOptions, CopyRoot, CopySummary, copy_with};
use seekless::jobs::hash::Algorithm;
use seekless::jobs::manifest::format_line;

use crate::exit::Code;
use crate::hash::{AlgoArg, ReadArgs};
use crate::inputs::{InputArgs, UsageError};
use crate::output::{commit_durably, path_bytes};
use crate::progress::read_events_through;
use crate::progress::{Console, ReadProgress};
use seekless::AtomicFile;

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

    /// Print the plan's summary, the read phase and the copy's counts on stderr.
    #[arg(long)]
    pub summary: bool,

    /// Say on stderr what was skipped and why.
    #[arg(short, long)]
    pub verbose: bool,

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
    let roots = resolve(&sources, &dest)?;
    let plan_opts = args.input.plan_options()?;

    let mut opts = CopyOptions::default();
    opts.read = args.read.options();
    opts.workers = args.read.workers();
    opts.checksum = args.checksum;
    opts.delete = args.delete;
    opts.ignore_errors = args.ignore_errors;
    opts.verify = args.verify;
    opts.fsync = args.fsync;
    opts.sync = !args.no_sync;
    opts.xattrs = !args.no_xattrs;
    opts.fast_path = !args.no_clone;
    let manifest = match &args.manifest {
        Some(path) => {
            opts.hash = Some(Algorithm::from(args.algo));
            Some(
                AtomicFile::create(path)
                    .with_context(|| format!("cannot write {}", path.display()))?,
            )
        }
        None => None,
    };

    let console = Console::new(args.verbose);
    let mut events = Progress {
        read: ReadProgress::new(&console, args.summary),
        manifest: Vec::new(),
    };
    let summary = match copy_with(&roots, &plan_opts, &opts, &console, &mut events) {
        Ok(s) => s,
        Err(e) => {
            console.finish();
            eprintln!("seekless: {e}");
            return Ok(Code::Failed);
        }
    };
    console.finish();
    if let Some(file) = manifest {
        let path = file.path().to_path_buf();
        commit_durably(file, &events.manifest)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.summary || summary.stopped || summary.deletion_skipped {
        print_counts(&summary);
    }
    Ok(Code::from_errors(console.errors()))
}

/// Where each SOURCE goes: a directory to DEST/NAME (its contents to DEST with a trailing
/// slash), the same on every run, so a second run resumes the first; a file to DEST/NAME
/// when DEST is a directory, else to DEST.
fn resolve(sources: &[PathBuf], dest: &Path) -> Result<Vec<CopyRoot>> {
    let dest_meta = std::fs::metadata(dest).ok();
    if sources.len() > 1 && dest_meta.as_ref().is_some_and(|m| !m.is_dir()) {
        return Err(UsageError(format!("target '{}' is not a directory", dest.display())).into());
    }
    let dest_is_dir = dest_meta.as_ref().is_some_and(|m| m.is_dir())
        || sources.len() > 1
        || path_bytes(dest).ends_with(b"/");
    let mut roots = Vec::new();
    for source in sources {
        let meta = std::fs::metadata(source)
            .with_context(|| format!("cannot stat {}", source.display()))?;
        let contents = path_bytes(source).ends_with(b"/");
        let target = if meta.is_dir() && contents || !meta.is_dir() && !dest_is_dir {
            dest.to_path_buf()
        } else {
            let name = std::path::absolute(source)?
                .file_name()
                .map(|n| n.to_os_string())
                .unwrap_or_else(|| ".".into());
            dest.join(name)
        };
        if meta.is_dir() && target.exists() && !target.is_dir() {
            return Err(UsageError(format!(
                "cannot overwrite non-directory '{}' with directory '{}'",
                target.display(),
                source.display()
            ))
            .into());
        }
        if meta.is_dir() && is_inside(&target, source) {
            return Err(UsageError(format!(
                "cannot copy a directory, '{}', into itself, '{}'",
                source.display(),
                target.display()
            ))
            .into());
        }
        roots.push(CopyRoot::new(source.clone(), target));
    }
    Ok(roots)
}

/// Whether `path` (which may not exist yet) is `dir` or inside it.
fn is_inside(path: &Path, dir: &Path) -> bool {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return false;
    };
    // The deepest part of `path` that exists, made canonical, then the rest.
    let mut existing = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let Ok(mut full) = std::fs::canonicalize(&existing) else {
        return false;
    };
    for name in rest.into_iter().rev() {
        full.push(name);
    }
    full.starts_with(&dir)
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

/// The read phase on stderr, as for `hash`, and the manifest's lines.
struct Progress<'a> {
    read: ReadProgress<'a>,
    manifest: Vec<u8>,
}

read_events_through!(Progress, read);

impl CopyEvents for Progress<'_> {
    fn hashed(&mut self, file: &PlannedFile, hex: &str) {
        let line = format_line(hex, &path_bytes(&file.entry.path));
        let _ = self.manifest.write_all(&line);
        self.manifest.push(b'\n');
    }
}
