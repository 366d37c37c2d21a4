//! `seekless bench`: the origin's benchmark on the user's own data — given order, inode
//! order and physical order, each from a cold cache — as a Markdown table, JSON, and an
//! SVG seek map.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::HumanBytes;
use seekless::jobs::bench::{
    BenchOptions, BenchResult, Cold, ColdMethod, ContenderResult, OriginRows, bench,
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

    let stdout = io::stdout();
    let mut out = stdout.lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(markdown(&result).as_bytes())?;
    }
    out.flush()?;

    if let Some(plot) = plot {
        let path = plot.path().to_path_buf();
        commit_durably(plot, seek_map(&result).as_bytes())
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

/// An SVG seek map: time since the read began (x) against the disk offset of the file
/// being read (y), given order and seekless physical order.
fn seek_map(r: &BenchResult) -> String {
    const W: f64 = 720.0;
    const H: f64 = 420.0;
    const L: f64 = 70.0; // left margin (y labels)
    const R: f64 = 20.0;
    const T: f64 = 66.0; // top margin (title, legend)
    const B: f64 = 50.0;
    const MAX_POINTS: usize = 4000;
    let series: Vec<(&str, &str, &ContenderResult)> = [
        ("given", "#d62728", "given order"),
        ("physical", "#1f77b4", "seekless (physical, window)"),
    ]
    .into_iter()
    .filter_map(|(name, color, label)| Some((label, color, r.contender(name)?)))
    .collect();
    let t_max = series
        .iter()
        .map(|(_, _, c)| c.read_secs)
        .fold(0.0f64, f64::max)
        .max(1e-3);
    // The offset axis spans the offsets seen, so a small corpus on a big disk is not a
    // flat line.
    let offsets = || {
        series
            .iter()
            .flat_map(|(_, _, c)| c.trace.iter().map(|p| p.1))
    };
    let off_min = offsets().min().unwrap_or(0) as f64;
    let off_max = offsets().max().unwrap_or(0) as f64;
    let off_span = (off_max - off_min).max(1.0);
    let (unit, scale) = if off_max >= (4u64 << 30) as f64 {
        ("GiB", (1u64 << 30) as f64)
    } else {
        ("MiB", (1u64 << 20) as f64)
    };
    let x = |t: f64| L + t / t_max * (W - L - R);
    let y = |off: f64| H - B - (off - off_min) / off_span * (H - T - B);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    let _ = writeln!(
        s,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14">Seek map: {} files, {}</text>"#,
        W / 2.0,
        r.files,
        HumanBytes(r.bytes)
    );
    // Axes, ticks and labels.
    let _ = writeln!(
        s,
        r##"<path d="M{L} {T}V{}H{}" fill="none" stroke="#333"/>"##,
        H - B,
        W - R
    );
    for i in 0..=5 {
        let f = i as f64 / 5.0;
        let (tx, ty) = (x(f * t_max), y(off_min + f * off_span));
        let _ = writeln!(
            s,
            r##"<path d="M{tx:.1} {}v5M{L} {ty:.1}h-5" stroke="#333"/><text x="{tx:.1}" y="{}" text-anchor="middle">{}</text><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            H - B,
            H - B + 18.0,
            tick(f * t_max, t_max),
            L - 8.0,
            ty + 4.0,
            tick((off_min + f * off_span) / scale, off_span / scale)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">time since the read began (s)</text>"#,
        (L + W - R) / 2.0,
        H - 12.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">disk offset ({unit})</text>"#,
        (T + H - B) / 2.0
    );
    // The series: one dot per file handed over (thinned to MAX_POINTS).
    for (i, (label, color, c)) in series.iter().enumerate() {
        let step = c.trace.len().div_ceil(MAX_POINTS).max(1);
        let mut d = String::new();
        for &(t, off) in c.trace.iter().step_by(step) {
            let _ = write!(d, "M{:.1} {:.1}h0", x(t), y(off as f64));
        }
        let _ = writeln!(
            s,
            r#"<g class="series" data-series="{}"><path d="{d}" stroke="{color}" stroke-width="3" stroke-linecap="round" opacity="0.7" fill="none"/></g>"#,
            c.name
        );
        let ly = 36.0 + 15.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<circle cx="{}" cy="{ly}" r="4" fill="{color}"/><text x="{}" y="{}">{label}: {:.2} s read</text>"#,
            L + 20.0,
            L + 30.0,
            ly + 4.0,
            c.read_secs
        );
    }
    s += "</svg>\n";
    s
}

/// A tick label with as many decimals as the axis' span needs (five ticks).
fn tick(v: f64, span: f64) -> String {
    let decimals = (-(span / 5.0).log10()).ceil().clamp(0.0, 6.0) as usize;
    format!("{v:.decimals$}")
}
