//! `seekless hash`: checksum manifests in the coreutils format, and `--check`.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use seekless::jobs::hash::{Algorithm, hash_plan, hash_stream};
use seekless::jobs::manifest::{Checklist, Verdict, format_line, format_verdict, name_in_manifest};
use seekless::read::ReadOptions;
use seekless::{Plan, PlannedFile, Reporter};

use crate::exit::Code;
use crate::inputs::InputArgs;
use crate::output::{path_bytes, print_read_summary, print_summary};
use crate::progress::Console;

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
    /// Worker threads hashing (default: one per CPU).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<NonZeroUsize>,

    /// Readahead window per disk, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub window_mb: u64,

    /// Files open ahead of the consumer, per disk.
    #[arg(long, value_name = "N", default_value_t = NonZeroUsize::new(512).expect("not 0"))]
    pub window_files: NonZeroUsize,

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
        ReadOptions {
            window_bytes: self.window_mb << 20,
            window_files: self.window_files.get(),
            drop_behind: !self.keep_cache,
            prefetch: !self.no_prefetch,
            gap_barrier: self.gap_barrier_kb << 10,
            ..ReadOptions::default()
        }
    }

    pub fn workers(&self) -> usize {
        self.jobs
            .or_else(|| std::thread::available_parallelism().ok())
            .map_or(2, NonZeroUsize::get)
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
    let bar = read_bar(&console, &plan);
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let mut sorted: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut write_error: Option<io::Error> = None;
    hash_with_progress(&args, &plan, &bar, |file, result| match result {
        Ok(hex) => {
            let mut line = format_line(&hex, name_in_manifest(&path_bytes(&file.entry.path)));
            line.push(b'\n');
            if args.sort_output {
                sorted.push((file.entry.path.to_path_buf(), line));
            } else if write_error.is_none() {
                if let Err(e) = out.write_all(&line) {
                    write_error = Some(e);
                }
            }
        }
        Err(e) => console.error(&e),
    });
    bar.finish_and_clear();
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

/// Hashes the plan with the command line's algorithm and read options, advancing `bar`.
///
/// With `--summary`, the plan's summary goes to stderr before reading and the read phase's
/// line after it.
fn hash_with_progress<F>(args: &Args, plan: &Arc<Plan>, bar: &ProgressBar, mut done: F)
where
    F: FnMut(&PlannedFile, Result<String, seekless::Error>) + Send,
{
    if args.summary {
        print_summary(plan);
    }
    let started = Instant::now();
    let (mut read, mut read_bytes) = (0u64, 0u64);
    let stats = hash_plan(
        plan.clone(),
        args.algo.into(),
        &args.read.options(),
        args.read.workers(),
        |file, result| {
            bar.inc(file.entry.size);
            if result.is_ok() {
                read += 1;
                read_bytes += file.entry.size;
            }
            done(file, result);
        },
    );
    if args.summary {
        print_read_summary(read, read_bytes, started.elapsed(), &stats);
    }
}

fn read_bar(console: &Console, plan: &Plan) -> ProgressBar {
    if !console.is_terminal() {
        return ProgressBar::hidden();
    }
    console.finish();
    let bar = ProgressBar::new(plan.summary().bytes);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(format!("{} files", plan.summary().files));
    bar
}

/// `--check`: verify manifests, reading the listed files in physical order, with
/// `sha256sum -c`'s verdicts, warnings and exit status.
///
/// Verdicts are printed as they become known, not in manifest order: lines naming
/// standard input (`-`) first, then the listed files that cannot be opened (missing,
/// directories, permission denied: in manifest order), then the rest in read order. A file
/// listed under a second name (a hard link) is read again in a later sweep.
fn check(args: Args) -> Result<Code> {
    let manifests = args.input.paths()?;
    let algo: Algorithm = args.algo.into();
    let console = Console::new(args.verbose);
    let mut list = Checklist::new(algo);
    // Per manifest: its name in messages, and whether it could be read to its end.
    let mut read: Vec<(String, bool)> = Vec::new();
    for m in &manifests {
        let from_stdin = m.as_os_str() == "-";
        let name = if from_stdin {
            "standard input".to_string()
        } else {
            m.display().to_string()
        };
        list.start_manifest(from_stdin);
        let warn = (args.warn && !args.status).then_some(name.as_str());
        let ok = match read_manifest(&mut list, m, from_stdin, warn, algo) {
            Ok(()) => true,
            Err(e) => {
                console.error(&seekless::Error::io(&name, e));
                false
            }
        };
        read.push((name, ok));
    }

    let mut verdicts = VerdictPrinter {
        out: BufWriter::with_capacity(1 << 16, io::stdout()),
        quiet: args.quiet,
        status: args.status,
    };
    for i in 0..list.stdin_lines() {
        let digest = hash_stream(io::stdin().lock(), algo)
            .map_err(|e| console.error(&seekless::Error::io("-", e)))
            .ok();
        let verdict = list.judge_stdin(i, digest.as_deref());
        verdicts.print(Path::new("-"), verdict)?;
    }

    let mut opts = args.input.plan_options()?;
    // Listed files are named explicitly: --ext/--glob have nothing to select.
    opts.walk.filter = seekless::Filter::new();
    let mut pending = list.pending();
    while !pending.is_empty() {
        check_round(&args, &opts, &pending, &mut list, &console, &mut verdicts)?;
        let left = list.pending();
        if left.len() == pending.len() {
            // Neither planned nor reported as failing: never seen in practice, but each
            // round must give some file its verdict, or this would never end.
            for path in &left {
                let why = io::Error::other("not planned for reading");
                console.error(&seekless::Error::io(path, why));
                for verdict in list.judge(path, None) {
                    verdicts.print(path, verdict)?;
                }
            }
            break;
        }
        pending = left;
    }
    verdicts.out.flush()?;

    let mut passed = true;
    for (tally, (name, whole)) in list.tallies().iter().zip(&read) {
        if !whole {
            passed = false;
            continue;
        }
        if tally.listed == 0 {
            eprintln!(
                "seekless: {name}: no properly formatted {} checksum lines found",
                algo.name()
            );
            passed = false;
            continue;
        }
        if !args.status {
            for warning in tally.warnings() {
                eprintln!("seekless: {warning}");
            }
        }
        passed &= tally.passed(args.strict);
    }
    Ok(if passed { Code::Ok } else { Code::Failed })
}

/// Adds a manifest's lines to `list`. With `warn` (the manifest's name), each improperly
/// formatted line is reported on stderr with its number, as `sha256sum -c -w` does.
fn read_manifest(
    list: &mut Checklist,
    path: &Path,
    from_stdin: bool,
    warn: Option<&str>,
    algo: Algorithm,
) -> io::Result<()> {
    let reader: Box<dyn BufRead> = if from_stdin {
        Box::new(io::stdin().lock())
    } else {
        Box::new(BufReader::new(File::open(path)?))
    };
    for (n, line) in reader.split(b'\n').enumerate() {
        if !list.add_line(&line?) {
            if let Some(name) = warn {
                eprintln!(
                    "seekless: {name}: {}: improperly formatted {} checksum line",
                    n + 1,
                    algo.name()
                );
            }
        }
    }
    Ok(())
}

/// Plans and hashes `pending` (listed files without a verdict), printing verdicts.
///
/// Directories and paths that cannot be stat-ed fail before planning: the walk would
/// descend into a directory, and `sha256sum -c` reports one as unreadable ("Is a
/// directory"). Files the planner cannot open fail too; their verdicts come before the
/// read, in manifest order. A file whose identity is already planned under another name
/// (hard links) is left pending for the next round.
fn check_round(
    args: &Args,
    opts: &seekless::PlanOptions,
    pending: &[PathBuf],
    list: &mut Checklist,
    console: &Console,
    verdicts: &mut VerdictPrinter,
) -> Result<()> {
    let mut unreadable: HashSet<&OsStr> = HashSet::new();
    let mut files = Vec::with_capacity(pending.len());
    for path in pending {
        let why = match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                io::Error::new(io::ErrorKind::IsADirectory, "Is a directory")
            }
            Ok(_) => {
                files.push(path.clone());
                continue;
            }
            Err(e) => e,
        };
        console.error(&seekless::Error::io(path, why));
        unreadable.insert(path.as_os_str());
    }
    let recorder = FailedPaths {
        console,
        failed: Mutex::new(HashSet::new()),
    };
    let plan = Arc::new(Plan::build(&files, opts, &recorder));
    let failed = recorder
        .failed
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    for path in pending {
        if unreadable.contains(path.as_os_str()) || failed.contains(path.as_os_str()) {
            for verdict in list.judge(path, None) {
                verdicts.print(path, verdict)?;
            }
        }
    }

    let bar = read_bar(console, &plan);
    let mut write_error: Option<io::Error> = None;
    hash_with_progress(args, &plan, &bar, |file, result| {
        let digest = result.map_err(|e| console.error(&e)).ok();
        for verdict in list.judge(&file.entry.path, digest.as_deref()) {
            if write_error.is_none() {
                write_error = verdicts.print(&file.entry.path, verdict).err();
            }
        }
    });
    bar.finish_and_clear();
    match write_error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Writes verdict lines, minding `--quiet` (no OK lines) and `--status` (none at all).
struct VerdictPrinter {
    out: BufWriter<io::Stdout>,
    quiet: bool,
    status: bool,
}

impl VerdictPrinter {
    fn print(&mut self, path: &Path, verdict: Verdict) -> io::Result<()> {
        if self.status || (self.quiet && verdict == Verdict::Ok) {
            return Ok(());
        }
        let mut line = format_verdict(&path_bytes(path), verdict);
        line.push(b'\n');
        self.out.write_all(&line)
    }
}

/// Passes planning errors on to the console and remembers the paths that failed, so the
/// listed files the planner could not open get their verdict.
struct FailedPaths<'a> {
    console: &'a Console,
    failed: Mutex<HashSet<OsString>>,
}

impl Reporter for FailedPaths<'_> {
    fn error(&self, err: &seekless::Error) {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(err.path().as_os_str().to_owned());
        self.console.error(err);
    }

    fn skipped(&self, path: &Path, why: &str) {
        self.console.skipped(path, why);
    }

    fn planned(&self, files: u64, bytes: u64) {
        self.console.planned(files, bytes);
    }
}
