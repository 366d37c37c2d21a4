//! `seekless hash`: checksum manifests in the coreutils format, and `--check`, with the
//! options, standard input and diagnostics of GNU `sha256sum`.

use std::io::{self, BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use clap::ArgMatches;
use clap::parser::ValueSource;
use seekless::jobs::check::{CheckEvents, CheckOptions, MalformedLine, check_manifests};
use seekless::jobs::digest::{Algorithm, hash_stream};
use seekless::jobs::hash::hash_plan_with;
use seekless::jobs::manifest::{
    LineStyle, Verdict, format_line_as, format_verdict, name_in_manifest,
};
use seekless::read::ConsumeOptions;
use seekless::{Error, Plan, Reporter};

use crate::exit::Code;
use crate::inputs::InputArgs;
use crate::options::{ReadArgs, ReportArgs};
use crate::output::{path_bytes, shell_quoted};
use crate::progress::read_events_through;
use crate::progress::{Console, ReadProgress};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,

    /// Checksum algorithm.
    #[arg(long, value_enum, default_value_t = AlgoArg::Sha256)]
    pub algo: AlgoArg,

    /// Read checksums from the MANIFEST files (PATHs; none or "-": standard input) and
    /// verify them, reading the listed files in physical order.
    #[arg(short, long)]
    pub check: bool,

    /// Write BSD-style lines: SHA256 (PATH) = HEX.
    #[arg(long)]
    pub tag: bool,

    /// End each line with NUL, not newline, and write names unescaped; with --check,
    /// read manifests so written.
    #[arg(short = 'z', long)]
    pub zero: bool,

    /// Binary mode: lines are marked HEX *PATH (the bytes read are the same).
    #[arg(short = 'b', long)]
    pub binary: bool,

    /// Text mode, the default: HEX  PATH.
    #[arg(short = 't', long)]
    pub text: bool,

    /// With --check: say nothing of a listed file that does not exist (a manifest of
    /// which no file was verified fails).
    #[arg(long)]
    pub ignore_missing: bool,

    /// With --check: don't print OK for each verified file.
    #[arg(long)]
    pub quiet: bool,

    /// With --check: print no verdicts and no closing warnings; the exit status tells.
    #[arg(long)]
    pub status: bool,

    /// With --check: exit 1 if a line is improperly formatted.
    #[arg(long)]
    pub strict: bool,

    /// With --check: warn about each improperly formatted line.
    #[arg(short, long)]
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

/// Which of `--status`, `--quiet` and `-w` holds: the last given, as in coreutils.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verbosity {
    Status,
    Quiet,
    Warn,
}

/// The index on the command line of the last `id` given there.
fn last_given(matches: &ArgMatches, id: &str) -> Option<usize> {
    if matches.value_source(id) != Some(ValueSource::CommandLine) {
        return None;
    }
    matches.indices_of(id)?.max()
}

/// Of `choices`, the one whose option was given last.
fn last_of<T: Copy>(matches: &ArgMatches, choices: &[(&str, T)]) -> Option<T> {
    choices
        .iter()
        .filter_map(|&(id, v)| last_given(matches, id).map(|i| (i, v)))
        .max_by_key(|&(i, _)| i)
        .map(|(_, v)| v)
}

/// A usage error in `sha256sum`'s words and with its exit status, 1.
fn usage(message: &str) -> Result<Code> {
    eprintln!("seekless: {message}\nTry 'seekless hash --help' for more information.");
    Ok(Code::Failed)
}

/// `matches` are the `hash` subcommand's, for which of the options that override each
/// other came last.
pub fn run(args: Args, matches: &ArgMatches) -> Result<Code> {
    let verbosity = last_of(
        matches,
        &[
            ("status", Verbosity::Status),
            ("quiet", Verbosity::Quiet),
            ("warn", Verbosity::Warn),
        ],
    );
    // `--tag` implies binary mode, as in coreutils: `-t --tag` is fine, `--tag -t` not.
    let binary = last_of(matches, &[("text", false), ("binary", true), ("tag", true)]);
    // Checked in coreutils' order, with its words.
    if args.tag && binary == Some(false) {
        return usage("--tag does not support --text mode");
    }
    if args.check && args.tag {
        return usage("the --tag option is meaningless when verifying checksums");
    }
    if args.check && (args.binary || args.text) {
        return usage("the --binary and --text options are meaningless when verifying checksums");
    }
    if !args.check {
        let only_checking = [
            (args.ignore_missing, "--ignore-missing"),
            (verbosity == Some(Verbosity::Status), "--status"),
            (verbosity == Some(Verbosity::Warn), "--warn"),
            (verbosity == Some(Verbosity::Quiet), "--quiet"),
            (args.strict, "--strict"),
        ];
        if let Some((_, option)) = only_checking.iter().find(|(given, _)| *given) {
            return usage(&format!(
                "the {option} option is meaningful only when verifying checksums"
            ));
        }
        return hash(args, binary == Some(true));
    }
    check(args, verbosity)
}

/// Whether no file is named, by PATH or `--files-from`: standard input is read then, as
/// `sha256sum` reads it.
fn names_nothing(input: &InputArgs) -> bool {
    input.paths.is_empty() && input.files_from.is_none()
}

/// Hashing: standard input for each `-` operand (or when there is none), then the files,
/// in physical order.
fn hash(mut args: Args, binary: bool) -> Result<Code> {
    let algo: Algorithm = args.algo.into();
    let mut style = LineStyle::default();
    style.tag = args.tag.then_some(algo);
    style.binary = binary;
    style.raw = args.zero || args.input.null;
    style.b3sum = algo == Algorithm::Blake3;
    let end = if style.raw { 0 } else { b'\n' };
    let named = |p: &PathBuf| p.as_os_str() != "-";
    let dashes = args.input.paths.iter().filter(|p| !named(p)).count();
    args.input.paths.retain(named);
    let nothing_named = names_nothing(&args.input);
    let stdin_reads = if nothing_named { dashes.max(1) } else { dashes };
    let paths = if nothing_named {
        Vec::new()
    } else {
        args.input.paths()?
    };
    let console = Console::quoting_names(args.report.verbose);
    // Into a pipe or a terminal each line goes out as it is made: the reader sees results
    // as they come, and one that goes away (`| head -1`) is noticed at the next line, not
    // a buffer's worth of files later.
    let streamed = crate::output::stdout_is_stream();
    let mut out = BufWriter::with_capacity(1 << 16, crate::output::stdout());
    // Standard input first, once per `-` (the second finds it at its end, as coreutils).
    for _ in 0..stdin_reads {
        match hash_stream(io::stdin().lock(), algo) {
            Ok(hex) => {
                let mut line = format_line_as(&hex, b"-", style);
                line.push(end);
                out.write_all(&line)?;
                if streamed {
                    out.flush()?;
                }
            }
            Err(e) => console.error(&Error::io("-", e)),
        }
    }
    if paths.is_empty() {
        out.flush()?;
        return Ok(Code::from_errors(console.errors()));
    }
    let opts = args.input.plan_options_for_reading(&args.read)?;
    let plan = Arc::new(Plan::build(&paths, &opts, &console));
    let mut sorted: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    let mut write_error: Option<io::Error> = None;
    let mut progress = ReadProgress::new(&console, args.report.summary);
    let consume = ConsumeOptions::new(args.read.options(), args.read.workers());
    hash_plan_with(&plan, algo, &consume, &mut progress, |file, result| {
        match result {
            Ok(hex) => {
                let name = path_bytes(&file.entry.path);
                let mut line = format_line_as(&hex, name_in_manifest(&name), style);
                line.push(end);
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
    });
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

/// A manifest's name in messages, quoted as coreutils quotes it: `'standard input'` for
/// `-`.
fn manifest_quoted(path: &Path) -> String {
    if path.as_os_str() == "-" {
        shell_quoted(b"standard input")
    } else {
        shell_quoted(&path_bytes(path))
    }
}

/// `--check`: `jobs::check::check_manifests` does the checking; this prints its verdicts
/// and warnings, minding `--quiet`, `--status` and `-w`, and maps its outcome to the exit
/// status.
fn check(args: Args, verbosity: Option<Verbosity>) -> Result<Code> {
    let manifests = if names_nothing(&args.input) {
        vec![PathBuf::from("-")]
    } else {
        args.input.paths()?
    };
    let status = verbosity == Some(Verbosity::Status);
    let console = Console::quoting_names(args.report.verbose);
    let mut opts = CheckOptions::default();
    opts.algo = args.algo.into();
    opts.strict = args.strict;
    opts.ignore_missing = args.ignore_missing;
    opts.nul_terminated = args.zero;
    opts.plan = args.input.plan_options_for_reading(&args.read)?;
    opts.read = args.read.options();
    opts.workers = args.read.workers();
    let mut events = CheckPrinter {
        out: BufWriter::with_capacity(1 << 16, crate::output::stdout()),
        verbosity,
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
    for warning in outcome.warnings_naming(status, |m| manifest_quoted(&m.path)) {
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
    out: BufWriter<crate::output::Stdout>,
    verbosity: Option<Verbosity>,
    progress: ReadProgress<'a>,
}

read_events_through!(CheckPrinter, progress);

impl CheckEvents for CheckPrinter<'_> {
    fn malformed(&mut self, line: &MalformedLine<'_>) {
        if self.verbosity == Some(Verbosity::Warn) {
            eprintln!("seekless: {}", line.naming(&manifest_quoted(line.path)));
        }
    }

    fn verdict(&mut self, path: &Path, verdict: Verdict) -> io::Result<()> {
        match self.verbosity {
            Some(Verbosity::Status) => return Ok(()),
            Some(Verbosity::Quiet) if verdict == Verdict::Ok => return Ok(()),
            _ => {}
        }
        let mut line = format_verdict(&path_bytes(path), verdict);
        line.push(b'\n');
        self.out.write_all(&line)
    }
}
