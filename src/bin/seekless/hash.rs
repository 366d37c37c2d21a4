//! `seekless hash`: checksum manifests in the coreutils format, and `--check`.

use std::io::{self, BufWriter, Write};
use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use seekless::jobs::check::{CheckEvents, CheckOptions, MalformedLine, check_manifests};
use seekless::jobs::digest::Algorithm;
use seekless::jobs::hash::hash_plan_until;
use seekless::jobs::manifest::{Verdict, format_line, format_verdict, name_in_manifest};
use seekless::read::ReadOptions;
use seekless::{Plan, Reporter};

use crate::exit::Code;
use crate::inputs::{InputArgs, threads_parser};
use crate::output::path_bytes;
use crate::progress::read_events_through;
use crate::progress::{Console, ReadProgress};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,

    /// Checksum algorithm.
    #[arg(long, value_enum, default_value_t = AlgoArg::Sha256)]
    pub algo: AlgoArg,

    /// Read checksums from the MANIFEST files (PATHs) and verify them, reading the listed
    /// files in physical order.
    #[arg(short, long)]
    pub check: bool,

    /// With --check: don't print OK for each verified file.
    #[arg(long)]
    pub quiet: bool,

    /// With --check: print no verdicts and no closing warnings; the exit status tells.
    #[arg(long, requires = "check")]
    pub status: bool,

    /// With --check: exit 1 if a line is improperly formatted.
    #[arg(long, requires = "check")]
    pub strict: bool,

    /// With --check: warn about each improperly formatted line.
    #[arg(short, long, requires = "check")]
    pub warn: bool,

    /// Print lines sorted by path instead of in read order (buffers the lines).
    #[arg(long)]
    pub sort_output: bool,

    /// Print the plan's summary and the read phase's time and rate on stderr.
    #[arg(long)]
    pub summary: bool,

    /// Say on stderr what was skipped and why (special files, symlinks, other
    /// filesystems, files and directories reached twice).
    #[arg(short, long)]
    pub verbose: bool,

    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(clap::Args, Debug)]
pub struct ReadArgs {
    /// Worker threads processing files, 1 to 1024 (hash, index, copy; tar writes from
    /// one; default: one per CPU).
    #[arg(short = 'j', long, value_name = "N", value_parser = threads_parser())]
    pub jobs: Option<usize>,

    /// Readahead window per disk, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub window_mb: u64,

    /// Files open ahead of the consumer, per disk, 1 to 1048576 (and at most half the
    /// open-file limit).
    #[arg(long, value_name = "N", default_value_t = 512,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 20))]
    pub window_files: usize,

    /// On rotational disks, let the first request past a gap of at least KIB KiB on the
    /// disk be served before prefetching further (0: never).
    #[arg(long, value_name = "KIB", default_value_t = 128)]
    pub gap_barrier_kb: u64,

    /// Keep read data in the page cache (default: drop it after use).
    #[arg(long)]
    pub keep_cache: bool,

    /// Read one file at a time in plan order, without prefetching (for comparison).
    #[arg(long)]
    pub no_prefetch: bool,
}

impl ReadArgs {
    pub fn options(&self) -> ReadOptions {
        let mut opts = ReadOptions::default();
        opts.window_bytes = self.window_mb << 20;
        opts.window_files = self.window_files;
        opts.drop_behind = !self.keep_cache;
        opts.prefetch = !self.no_prefetch;
        opts.gap_barrier = self.gap_barrier_kb << 10;
        opts
    }

    pub fn workers(&self) -> usize {
        self.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, NonZeroUsize::get))
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum AlgoArg {
    Blake3,
    Sha256,
    Sha1,
    Md5,
}

impl From<AlgoArg> for Algorithm {
    fn from(a: AlgoArg) -> Algorithm {
        match a {
            AlgoArg::Blake3 => Algorithm::Blake3,
            AlgoArg::Sha256 => Algorithm::Sha256,
            AlgoArg::Sha1 => Algorithm::Sha1,
            AlgoArg::Md5 => Algorithm::Md5,
        }
    }
}

pub fn run(args: Args) -> Result<Code> {
    if args.check {
        return check(args);
    }
    let paths = args.input.paths()?;
    let opts = args.input.plan_options()?;
    let console = Console::new(args.verbose);
    let plan = Arc::new(Plan::build(&paths, &opts, &console));
    let stdout = io::stdout();
    // Into a pipe or a terminal each line goes out as it is made: the reader sees results
    // as they come, and one that goes away (`| head -1`) is noticed at the next line, not
    // a buffer's worth of files later.
    let streamed = crate::output::stdout_is_stream();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let mut sorted: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut write_error: Option<io::Error> = None;
    let mut progress = ReadProgress::new(&console, args.summary);
    progress.start(&plan);
    let stats = hash_plan_until(
        plan.clone(),
        args.algo.into(),
        &args.read.options(),
        args.read.workers(),
        |file, result| {
            progress.file(file.entry.size, result.is_ok());
            match result {
                Ok(hex) => {
                    let name = path_bytes(&file.entry.path);
                    let mut line = format_line(&hex, name_in_manifest(&name));
                    line.push(b'\n');
                    if args.sort_output {
                        sorted.push((file.entry.path.to_path_buf(), line));
                    } else {
                        let written = out
                            .write_all(&line)
                            .and_then(|()| if streamed { out.flush() } else { Ok(()) });
                        if let Err(e) = written {
                            // Nobody to write for: stop reading.
                            write_error = Some(e);
                            return ControlFlow::Break(());
                        }
                    }
                }
                Err(e) => console.error(&e),
            }
            ControlFlow::Continue(())
        },
    );
    progress.finish(&stats);
    if let Some(e) = write_error {
        return Err(e.into());
    }
    sorted.sort_by(|a, b| a.0.as_os_str().cmp(b.0.as_os_str()));
    for (_, line) in sorted {
        out.write_all(&line)?;
    }
    out.flush()?;
    Ok(Code::from_errors(console.errors()))
}

/// `--check`: `jobs::check::check_manifests` does the checking; this prints its verdicts
/// and warnings, minding `--quiet`, `--status` and `-w`, and maps its outcome to the exit
/// status.
fn check(args: Args) -> Result<Code> {
    let manifests = args.input.paths()?;
    let console = Console::new(args.verbose);
    let mut opts = CheckOptions::default();
    opts.algo = args.algo.into();
    opts.strict = args.strict;
    opts.plan = args.input.plan_options()?;
    opts.read = args.read.options();
    opts.workers = args.read.workers();
    let mut events = CheckPrinter {
        out: BufWriter::with_capacity(1 << 16, io::stdout()),
        quiet: args.quiet,
        status: args.status,
        warn: args.warn && !args.status,
        progress: ReadProgress::new(&console, args.summary),
    };
    let outcome = check_manifests(
        &manifests,
        &mut io::stdin().lock(),
        &opts,
        &console,
        &mut events,
    )?;
    events.out.flush()?;
    for warning in outcome.warnings(args.status) {
        eprintln!("seekless: {warning}");
    }
    Ok(if outcome.passed {
        Code::Ok
    } else {
        Code::Failed
    })
}

/// Prints verdict lines, minding `--quiet` (no OK lines) and `--status` (none at all),
/// warns about improperly formatted lines with `-w`, and shows each round's read.
struct CheckPrinter<'a> {
    out: BufWriter<io::Stdout>,
    quiet: bool,
    status: bool,
    warn: bool,
    progress: ReadProgress<'a>,
}

read_events_through!(CheckPrinter, progress);

impl CheckEvents for CheckPrinter<'_> {
    fn malformed(&mut self, line: &MalformedLine<'_>) {
        if self.warn {
            eprintln!("seekless: {line}");
        }
    }

    fn verdict(&mut self, path: &Path, verdict: Verdict) -> io::Result<()> {
        if self.status || (self.quiet && verdict == Verdict::Ok) {
            return Ok(());
        }
        let mut line = format_verdict(&path_bytes(path), verdict);
        line.push(b'\n');
        self.out.write_all(&line)
    }
}
