//! `seekless hash`: checksum manifests in the coreutils format, and `--check`.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use seekless::jobs::hash::{Algorithm, hash_plan};
use seekless::jobs::manifest::{format_line, parse_line};
use seekless::read::ReadOptions;
use seekless::{Plan, PlannedFile, Reporter};

use crate::exit::Code;
use crate::inputs::{InputArgs, UsageError};
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

    /// Print lines sorted by path instead of in read order (buffers the lines).
    #[arg(long)]
    pub sort_output: bool,

    /// Print the plan's summary and the read phase's time and rate on stderr.
    #[arg(long)]
    pub summary: bool,

    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(clap::Args, Debug)]
pub struct ReadArgs {
    /// Worker threads hashing (default: one per CPU).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Readahead window per disk, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub window_mb: u64,

    /// Files open ahead of the consumer, per disk.
    #[arg(long, value_name = "N", default_value_t = 512)]
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
        ReadOptions {
            window_bytes: self.window_mb.max(1) << 20,
            window_files: self.window_files.max(1),
            drop_behind: !self.keep_cache,
            prefetch: !self.no_prefetch,
            gap_barrier: self.gap_barrier_kb << 10,
            ..ReadOptions::default()
        }
    }

    pub fn workers(&self) -> usize {
        self.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        })
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
    let console = Console::new(false);
    let plan = Arc::new(Plan::build(&paths, &opts, &console));
    let bar = read_bar(&console, &plan);
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let mut sorted: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut write_error: Option<io::Error> = None;
    hash_with_progress(&args, &plan, &bar, |file, result| match result {
        Ok(hex) => {
            let mut line = format_line(&hex, &path_bytes(&file.entry.path));
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

/// `--check`: verify manifests, reading the listed files in physical order.
fn check(args: Args) -> Result<Code> {
    let manifests = args.input.paths()?;
    let algo: Algorithm = args.algo.into();
    let mut expected: std::collections::HashMap<PathBuf, String> = Default::default();
    let mut listed: Vec<PathBuf> = Vec::new();
    let mut malformed = 0u64;
    for m in &manifests {
        let reader: Box<dyn BufRead> = if m.as_os_str() == "-" {
            Box::new(BufReader::new(io::stdin()))
        } else {
            Box::new(BufReader::new(
                File::open(m).with_context(|| format!("{}", m.display()))?,
            ))
        };
        for line in reader.split(b'\n') {
            let line = line.with_context(|| format!("reading {}", m.display()))?;
            if line.is_empty() {
                continue;
            }
            match parse_line(&line) {
                Some(e) if e.hex.len() == algo.hex_len() => {
                    if expected.insert(e.path.clone(), e.hex).is_none() {
                        listed.push(e.path);
                    }
                }
                _ => malformed += 1,
            }
        }
    }
    if listed.is_empty() {
        return Err(UsageError(format!(
            "no properly formatted {:?} checksum lines found",
            algo
        ))
        .into());
    }
    let mut opts = args.input.plan_options()?;
    opts.walk.filter = seekless::Filter::new();
    let console = Console::new(false);
    let plan = Arc::new(Plan::build(&listed, &opts, &console));
    // Files that could not even be planned were reported by the planner.
    let unreadable = console.errors();
    let bar = read_bar(&console, &plan);
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let mut failed = 0u64;
    let mut read_failed = 0u64;
    hash_with_progress(&args, &plan, &bar, |file, result| {
        let path = &file.entry.path;
        let verdict: &[u8] = match result {
            Ok(hex) if expected.get(&path.to_path_buf()) == Some(&hex) => b"OK",
            Ok(_) => {
                failed += 1;
                b"FAILED"
            }
            Err(e) => {
                console.error(&e);
                read_failed += 1;
                b"FAILED open or read"
            }
        };
        if args.quiet && verdict == b"OK" {
            return;
        }
        let _ = out
            .write_all(&path_bytes(path))
            .and_then(|_| out.write_all(b": "))
            .and_then(|_| out.write_all(verdict))
            .and_then(|_| out.write_all(b"\n"));
    });
    bar.finish_and_clear();
    out.flush()?;
    let read_failed = read_failed + unreadable;
    if malformed > 0 {
        eprintln!("seekless: WARNING: {malformed} lines are improperly formatted");
    }
    if read_failed > 0 {
        eprintln!("seekless: WARNING: {read_failed} listed files could not be read");
    }
    if failed > 0 {
        eprintln!("seekless: WARNING: {failed} computed checksums did NOT match");
    }
    Ok(Code::from_errors(failed + read_failed))
}
