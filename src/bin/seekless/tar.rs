//! `seekless tar`: a GNU-tar-compatible archive (POSIX pax), its files read in physical
//! order.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};
use seekless::jobs::tar::{
    ArchiveFile, Compression, TarEvents, TarOptions, TarSummary, archive_with,
};

use crate::exit::Code;
use crate::inputs::{InputArgs, UsageError};
use crate::interrupt::RemoveOnSignal;
use crate::options::{ReadArgs, ReportArgs};
use crate::progress::read_events_through;
use crate::progress::{Console, ReadProgress};

/// The archive's members: see `ORDER` (shown by `seekless tar --help`).
#[derive(clap::Args, Debug)]
#[command(after_long_help = ORDER)]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,

    /// Write the archive to ARCHIVE ("-": standard output, the default when it is not a
    /// terminal). ARCHIVE appears only when complete: it is written beside, then renamed.
    #[arg(short = 'f', long = "file", value_name = "ARCHIVE")]
    pub file: Option<PathBuf>,

    /// Change to DIR before reading the PATHs (ARCHIVE stays relative to where seekless
    /// was started).
    #[arg(short = 'C', long = "directory", value_name = "DIR")]
    pub directory: Option<PathBuf>,

    /// Compress with gzip (the default for ARCHIVE ending in .tar.gz or .tgz).
    #[arg(short = 'z', long)]
    pub gzip: bool,

    /// Compress with zstd, on all CPUs (the default for ARCHIVE ending in .tar.zst or
    /// .tzst).
    #[arg(long, conflicts_with = "gzip")]
    pub zstd: bool,

    /// Store extended attributes (as GNU tar's --xattrs: PAX SCHILY.xattr records).
    #[arg(long)]
    pub xattrs: bool,

    #[command(flatten)]
    pub report: ReportArgs,

    #[command(flatten)]
    pub read: ReadArgs,
}

/// What `--help` says of the archive's members.
const ORDER: &str = "Member names are the PATHs as given (leading '/' removed). Symlinks, \
FIFOs and devices come first, then regular files in the order they lie on the disk, each \
followed by its other hard-linked names, then directories, deepest first (so extracting \
gives each directory its mode and times after its contents). Symlinks are stored as links \
(with -L, what they point to); FIFOs and devices as headers, never opened.";

pub fn run(args: Args) -> Result<Code> {
    let paths = args.input.paths()?;
    let plan_opts = args.input.plan_options_for_reading(&args.read)?;
    let archive = args.file.as_ref().filter(|f| f.as_os_str() != "-");
    if archive.is_none() && io::stdout().is_terminal() {
        return Err(UsageError(
            "refusing to write archive contents to a terminal (missing -f option?)".into(),
        )
        .into());
    }
    let compression = if args.gzip {
        Compression::gzip()
    } else if args.zstd {
        Compression::zstd()
    } else {
        archive
            .and_then(|a| Compression::from_suffix(a))
            .unwrap_or_default()
    };

    // The archive's file is made before -C moves elsewhere, relative to where we started.
    // Named in messages as the user gave it.
    let shown = archive.map_or_else(
        || "standard output".to_string(),
        |a| a.display().to_string(),
    );
    let output = match archive {
        Some(path) => {
            let absolute =
                std::path::absolute(path).with_context(|| format!("{shown}: cannot open"))?;
            match ArchiveFile::create(&absolute) {
                Ok(file) => Some(file),
                // As GNU tar: a file the user could not write is refused, exit 2.
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    eprintln!("seekless: {shown}: cannot open: {}", os_message(&e));
                    return Ok(Code::Usage);
                }
                // Another run writes the same archive: never two at once.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    eprintln!("seekless: {shown}: not written: {}", os_message(&e));
                    return Ok(Code::Usage);
                }
                Err(e) => return Err(anyhow!("{shown}: cannot open: {}", os_message(&e))),
            }
        }
        None => None,
    };
    // Interrupted (Ctrl-C, SIGTERM, SIGHUP), the run removes its temporary.
    let _remove_on_signal = output
        .as_ref()
        .and_then(ArchiveFile::temp_path)
        .map(RemoveOnSignal::register);
    if let (Some(out), Some(given)) = (&output, archive) {
        for stale in out.removed() {
            let name = stale.file_name().unwrap_or_default();
            eprintln!(
                "seekless: {}: removed, the temporary of an interrupted run",
                if out.final_path() == out.path() {
                    given.with_file_name(name)
                } else {
                    stale.clone()
                }
                .display()
            );
        }
    }
    let mut opts = TarOptions::default();
    opts.read = args.read.options();
    opts.xattrs = args.xattrs;
    opts.compression = compression;
    if let Some(out) = &output {
        opts.archive = out.identity();
    }
    if let Some(dir) = &args.directory {
        std::env::set_current_dir(dir)
            .with_context(|| format!("cannot change to directory {}", dir.display()))?;
    }

    let console = Console::new(args.report.verbose);
    let mut events = Progress {
        read: ReadProgress::new(&console, args.report.summary),
        verbose: args.report.verbose,
    };
    let mut stdout = crate::output::stdout();
    let mut archive_file = output.as_ref().map(ArchiveFile::file);
    let out: &mut (dyn Write + Send) = match &mut archive_file {
        Some(file) => file,
        None => &mut stdout,
    };
    let summary = archive_with(&paths, &plan_opts, &opts, &console, &mut events, out)
        // Not an io::Error any more: a broken pipe here is an incomplete archive, not the
        // reader of a listing going away.
        .map_err(|e| anyhow!("{shown}: cannot write the archive: {}", os_message(&e)))?;
    if let Some(file) = output {
        file.commit()
            .map_err(|e| anyhow!("{shown}: cannot write the archive: {}", os_message(&e)))?;
    }
    console.finish();
    if args.report.summary {
        print_counts(&summary);
    }
    Ok(Code::from_errors(console.errors()))
}

/// An error as `strerror` words it (no "(os error N)").
fn os_message(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn print_counts(s: &TarSummary) {
    eprintln!(
        "seekless: tar: {} members: {} files ({}, {} sparse), {} directories, {} symlinks, \
         {} hard links, {} special; archive {} before compression; {} changed while read, {} failed",
        s.members,
        s.files,
        indicatif::HumanBytes(s.bytes),
        s.sparse,
        s.dirs,
        s.symlinks,
        s.hardlinks,
        s.specials,
        indicatif::HumanBytes(s.archive_bytes),
        s.changed,
        s.failed
    );
}

/// The read phase on stderr, as for `hash`, and with -v each member's name.
struct Progress<'a> {
    read: ReadProgress<'a>,
    verbose: bool,
}

read_events_through!(Progress, read);

impl TarEvents for Progress<'_> {
    fn member(&mut self, name: &[u8]) {
        if self.verbose {
            let mut err = io::stderr().lock();
            let _ = err.write_all(name);
            let _ = err.write_all(b"\n");
        }
    }
}
