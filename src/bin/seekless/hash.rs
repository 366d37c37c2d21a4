//! `seekless hash`: checksum manifests in the coreutils format, and `--check`.

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use seekless::jobs::check::{CheckEvents, CheckOptions, MalformedLine, check_manifests};
use seekless::jobs::digest::Algorithm;
use seekless::jobs::hash::hash_plan_with;
use seekless::jobs::manifest::{Verdict, format_line, format_verdict, name_in_manifest};
use seekless::read::ConsumeOptions;
use seekless::{Plan, Reporter};

use crate::exit::Code;
use crate::inputs::InputArgs;
use crate::options::{ReadArgs, ReportArgs};
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

    #[command(flatten)]
    pub report: ReportArgs,

    #[command(flatten)]
    pub read: ReadArgs,
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
    let opts = args.input.plan_options_for_reading(&args.read)?;
    let console = Console::new(args.report.verbose);
    let plan = Arc::new(Plan::build(&paths, &opts, &console));
    let stdout = io::stdout();
    // Into a pipe or a terminal each line goes out as it is made: the reader sees results
    // as they come, and one that goes away (`| head -1`) is noticed at the next line, not
    // a buffer's worth of files later.
    let streamed = crate::output::stdout_is_stream();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    let mut sorted: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut write_error: Option<io::Error> = None;
    let mut progress = ReadProgress::new(&console, args.report.summary);
    let consume = ConsumeOptions::new(args.read.options(), args.read.workers());
    hash_plan_with(
        &plan,
        args.algo.into(),
        &consume,
        &mut progress,
        |file, result| {
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
    let console = Console::new(args.report.verbose);
    let mut opts = CheckOptions::default();
    opts.algo = args.algo.into();
    opts.strict = args.strict;
    opts.plan = args.input.plan_options_for_reading(&args.read)?;
    opts.read = args.read.options();
    opts.workers = args.read.workers();
    let mut events = CheckPrinter {
        out: BufWriter::with_capacity(1 << 16, io::stdout()),
        quiet: args.quiet,
        status: args.status,
        warn: args.warn && !args.status,
        progress: ReadProgress::new(&console, args.report.summary),
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
