//! `seekless bench`: the origin's benchmark on the user's own data — given order, inode
//! order and physical order, each from a cold cache — as a Markdown table, JSON, and an
//! SVG seek map.

use std::fmt::Write as _;
use std::io::Write;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::HumanBytes;
use seekless::jobs::bench::{
    BenchOptions, BenchResult, Cold, ColdMethod, ContenderResult, OriginRows, bench, seek_map_svg,
};

use crate::exit::Code;
use crate::inputs::InputArgs;
use crate::options::ReadArgs;
use crate::output::commit_durably;
use crate::progress::Console;
use seekless::AtomicFile;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,

    /// Print the results as one JSON document instead of Markdown tables.
    #[arg(long)]
    pub json: bool,

    /// Write an SVG seek map (time vs disk offset) of given order vs seekless to FILE.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    /// Runs per contender; the median run is reported.
    #[arg(long, value_name = "N", default_value_t = NonZeroUsize::MIN)]
    pub reps: NonZeroUsize,

    /// How to make the cache cold before each run: auto drops the whole page cache when
    /// root (else evicts each file), evict evicts each file's data, warm does nothing.
    #[arg(long, value_enum, default_value_t = ColdArg::Auto, value_name = "HOW")]
    pub cold: ColdArg,

    #[command(flatten)]
    pub read: ReadArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum ColdArg {
    Auto,
    Evict,
    Warm,
}

impl From<ColdArg> for Cold {
    fn from(c: ColdArg) -> Cold {
        match c {
            ColdArg::Auto => Cold::Auto,
            ColdArg::Evict => Cold::Evict,
            ColdArg::Warm => Cold::Warm,
        }
    }
}

pub fn run(args: Args) -> Result<Code> {
    let paths = args.input.paths()?;
    let mut plan_opts = args.input.plan_options()?;
    plan_opts.disk = args.read.disk_kind();
    // A benchmark takes minutes: find out before it runs that the map cannot be written.
    let plot = match &args.plot {
        Some(file) => Some(
            AtomicFile::create(file)
                .with_context(|| format!("cannot write --plot {}", file.display()))?,
        ),
        None => None,
    };
    let mut opts = BenchOptions::default();
    opts.read = args.read.options();
    opts.cold = args.cold.into();
    opts.reps = args.reps.get();
    opts.workers = args.read.workers();
    opts.trace = args.plot.is_some();
    let console = Console::new(false);
    let result = bench(&paths, &plan_opts, &opts, &console);
    console.finish();
    if result.cold == ColdMethod::Evict {
        eprintln!(
            "seekless: note: each file's data was evicted from the cache before each run \
             (POSIX_FADV_DONTNEED); directory and inode metadata stay cached, so lookup \
             times are warm (run as root to drop all caches)"
        );
    }

    let mut out = crate::output::stdout();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(markdown(&result).as_bytes())?;
    }
    out.flush()?;

    if let Some(plot) = plot {
        let path = plot.path().to_path_buf();
        commit_durably(plot, seek_map_svg(&result).as_bytes())
            .with_context(|| format!("cannot write --plot {}", path.display()))?;
    }
    Ok(Code::from_errors(console.errors()))
}

fn mbps(bytes_per_sec: f64) -> String {
    format!("{:.1} MB/s", bytes_per_sec / 1e6)
}

fn strategies(c: &ContenderResult) -> String {
    let mut names: Vec<String> = c
        .filesystems
        .iter()
        .map(|f| format!("{} {}", f.kind, f.strategy))
        .collect();
    names.dedup();
    names.join(", ")
}

/// Both tables: one row per contender, then the origin's rows.
fn markdown(r: &BenchResult) -> String {
    let cold = match r.cold {
        ColdMethod::DropCaches => "cold (page cache, dentries and inodes dropped)",
        ColdMethod::Evict => "cold data, warm metadata (files evicted one by one)",
        ColdMethod::Warm => "warm (nothing dropped)",
    };
    let disks: Vec<String> = r
        .disks
        .iter()
        .map(|d| {
            let kind = match d.rotational {
                Some(true) => "rotational",
                Some(false) => "non-rotational",
                None => "unknown kind",
            };
            format!("{} ({kind})", d.name)
        })
        .collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} files, {} on {}; cache: {cold}; {} run(s) per contender (median), {} reading threads\n",
        r.files,
        HumanBytes(r.bytes),
        disks.join(", "),
        r.reps,
        r.workers
    );
    s += "| contender | located by | files | size | avg size | lookup | sort | read | read rate \
          | total | total rate | gain | gain % | × given |\n";
    s += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
    for c in &r.contenders {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.3} s | {:.3} s | {:.3} s | {} | {:.3} s | {} | {:.3} s | {:.1} % | {:.2}× |",
            c.name,
            strategies(c),
            c.files,
            HumanBytes(c.bytes),
            HumanBytes(c.average_file_size as u64),
            c.lookup_secs,
            c.sort_secs,
            c.read_secs,
            mbps(c.read_bytes_per_sec),
            c.total_secs,
            mbps(c.total_bytes_per_sec),
            c.gain_secs,
            c.gain_percent,
            c.ratio
        );
    }
    if let Some(o) = &r.origin {
        s += &origin_table(o);
    }
    if r.errors > 0 {
        let _ = writeln!(s, "\n{} files failed (named on stderr).", r.errors);
    }
    s
}

/// The origin's table, row for row, for the best seekless contender.
fn origin_table(o: &OriginRows) -> String {
    let rows: [(&str, String); 10] = [
        ("Files scanned", o.files.to_string()),
        ("Total size", HumanBytes(o.bytes).to_string()),
        (
            "Average file size",
            HumanBytes(o.average_file_size as u64).to_string(),
        ),
        (
            "Time reading in filesystem (given) order",
            format!("{:.3} s ({})", o.given_secs, mbps(o.given_bytes_per_sec)),
        ),
        (
            "Time reading position data",
            format!("{:.3} s", o.lookup_secs),
        ),
        ("Time sorting", format!("{:.3} s", o.sort_secs)),
        (
            "Time reading in sorted order",
            format!("{:.3} s", o.read_secs),
        ),
        (
            "Total time, new approach",
            format!("{:.3} s ({})", o.total_secs, mbps(o.total_bytes_per_sec)),
        ),
        (
            "Performance increase",
            format!("{:.3} s ({:.1} %)", o.gain_secs, o.gain_percent),
        ),
        (
            "Ratio (filesystem order / sorted)",
            format!("{:.2}×", o.ratio),
        ),
    ];
    let mut s = format!(
        "\nThe origin's table (seekless `{}` vs given order):\n\n",
        o.contender
    );
    s += "| | |\n|---|--:|\n";
    for (k, v) in rows {
        let _ = writeln!(s, "| {k} | {v} |");
    }
    s
}
