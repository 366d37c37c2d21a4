//! `seekless index`: an image catalog in SQLite, read in physical order (see
//! `docs/index.md`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use seekless::Filter;
use seekless::jobs::index::{
    IMAGE_EXTENSIONS, IndexOptions, Phases, ThumbOptions, WatchOptions, index_with, watch,
};
use seekless::read::Bound;

use crate::exit::Code;
use crate::inputs::{InputArgs, Refused};
use crate::options::{ReadArgs, ReportArgs};
use crate::progress::{Console, ReadProgress};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub input: InputArgs,

    /// The catalog: an SQLite database, created if missing (schema: docs/index.md).
    #[arg(long, value_name = "FILE", required = true)]
    pub db: PathBuf,

    /// Read every image again, even those the catalog says are unchanged.
    #[arg(long)]
    pub rehash: bool,

    /// Walk every PATH whole. Without it, a PATH that an earlier run saw whole, on btrfs
    /// (as root), is caught up instead: only the directories btrfs says changed since are
    /// walked (docs/index.md, "Catching up without a walk").
    #[arg(long)]
    pub walk: bool,

    /// Remove the rows under a PATH that does not exist or is an empty directory. Without
    /// it such a PATH is an error (exit 1) and its rows stay: most likely a drive that is
    /// not mounted.
    #[arg(long)]
    pub prune: bool,

    /// Rows per transaction, at most (a commit happens at least once a second anyway).
    /// For tests of what a run has committed while it goes on.
    #[arg(long, value_name = "N", default_value_t = 4096, hide = true,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub batch_rows: u32,

    /// Make a thumbnail (JPEG, in the catalog's `thumbs` table) and a perceptual hash
    /// (`images.phash`) of each image read, from the bytes read for the rest. Unchanged
    /// images without a thumbnail of this size are read once more for one.
    #[arg(long)]
    pub thumbs: bool,

    /// The longest side of a thumbnail, in pixels (smaller images are not enlarged).
    #[arg(long, value_name = "N", default_value_t = ThumbOptions::DEFAULT_SIZE,
          value_parser = clap::value_parser!(u32).range(16..=4096), requires = "thumbs")]
    pub thumb_size: u32,

    /// Images larger than this are not decoded (the thumbnail's error says so).
    #[arg(long, value_name = "N", default_value_t = ThumbOptions::DEFAULT_MAX_MEGAPIXELS,
          value_parser = clap::value_parser!(u32).range(1..=100_000), requires = "thumbs")]
    pub max_megapixels: u32,

    /// After the run, keep running: changes under the PATHs are catalogued as they happen
    /// (each batch an incremental run over the directories that changed), until SIGINT
    /// or SIGTERM, which end it with every change so far committed (docs/index.md,
    /// "Watching").
    #[arg(long)]
    pub watch: bool,

    /// With --watch: seconds without a change before a batch is catalogued.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0, requires = "watch",
          value_parser = settle_seconds)]
    pub settle: f64,

    /// With --watch: seconds between walks of the directories that cannot be watched
    /// (the inotify limit reached; every PATH where nothing can be watched).
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0, requires = "watch",
          value_parser = settle_seconds)]
    pub rescan: f64,

    /// Catalog every regular file, not only those with an image extension.
    #[arg(long, conflicts_with = "ext")]
    pub all_files: bool,

    #[command(flatten)]
    pub report: ReportArgs,

    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(args: Args) -> Result<Code> {
    let paths = args.input.paths()?;
    let mut plan_opts = args.input.plan_options_for_reading(&args.read)?;
    if !args.all_files && args.input.ext.is_empty() && args.input.glob.is_empty() {
        let images: Vec<String> = IMAGE_EXTENSIONS.iter().map(|e| e.to_string()).collect();
        plan_opts.walk.filter = Filter::new().extensions(&images);
    }
    let mut opts = IndexOptions::new(&args.db);
    opts.rehash = args.rehash;
    opts.full_walk = args.walk;
    opts.prune = args.prune;
    opts.batch_rows = args.batch_rows as usize;
    if args.thumbs {
        let mut t = ThumbOptions::new(args.thumb_size);
        t.max_megapixels = args.max_megapixels;
        opts.thumbs = Some(t);
    }
    opts.read = args.read.options();
    opts.workers = args.read.workers();
    let console = Console::new(args.report.verbose);
    // The phases say what bound the run (print_phases): the read's line does not.
    let mut events = ReadProgress::new(&console, args.report.summary).without_verdict();
    if args.watch {
        let mut wopts = WatchOptions::default();
        wopts.settle = Duration::from_secs_f64(args.settle);
        wopts.rescan = Duration::from_secs_f64(args.rescan);
        let stop = crate::interrupt::stop_flag();
        let summary = args.report.summary;
        let mut told = String::new();
        let watched = watch(
            &paths,
            &plan_opts,
            &opts,
            &wopts,
            &console,
            &mut events,
            stop,
            &mut |s, _dirs, how| {
                if summary {
                    if told != how {
                        eprintln!("seekless: index: watching with {how}");
                        told = how.to_string();
                    }
                    print_counts(s, args.thumbs);
                }
            },
        );
        match watched {
            Ok(()) => {}
            Err(e) if e.is_refusal() => return Err(Refused(e.to_string()).into()),
            Err(e) => return Err(e.into()),
        }
        console.finish();
        return Ok(Code::from_errors(console.errors()));
    }
    let summary = match index_with(&paths, &plan_opts, &opts, &console, &mut events) {
        Ok(s) => s,
        Err(e) if e.is_refusal() => return Err(Refused(e.to_string()).into()),
        Err(e) => return Err(e.into()),
    };
    console.finish();
    if args.report.summary {
        print_phases(&summary.phases);
        print_counts(&summary, args.thumbs);
    }
    Ok(Code::from_errors(console.errors()))
}

/// A settle or rescan time: seconds, from 0 to a day.
fn settle_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if (0.0..=86_400.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} is not between 0 and 86400 seconds"))
    }
}

/// `--summary`'s closing counts of a run.
fn print_counts(summary: &seekless::jobs::index::IndexSummary, thumbs: bool) {
    let mut tail = if thumbs {
        format!(", {} thumbnails made", summary.thumbs)
    } else {
        String::new()
    };
    // Only where there are sidecars: the line of a run without any stays as it was.
    if summary.sidecars + summary.sidecars_removed > 0 {
        tail.push_str(&format!(
            ", {} sidecars seen, {} sidecars read, {} sidecars removed",
            summary.sidecars, summary.sidecars_read, summary.sidecars_removed
        ));
    }
    eprintln!(
        "seekless: index: {} seen, {} added, {} changed, {} moved, {} unchanged, {} removed, {} failed{tail}",
        summary.seen,
        summary.added,
        summary.changed,
        summary.moved,
        summary.unchanged,
        summary.removed,
        summary.failed
    );
    if summary.caught_up > 0 {
        let (roots, dirs) = (summary.caught_up, summary.caught_up_dirs);
        eprintln!(
            "seekless: index: caught up without a walk: {roots} {} from btrfs, {dirs} changed \
             {} walked (--walk walks everything)",
            if roots == 1 { "root" } else { "roots" },
            if dirs == 1 {
                "directory"
            } else {
                "directories"
            },
        );
    }
    // Only where there are some: the lines of an intact library stay as they were.
    if summary.damaged > 0 {
        eprintln!(
            "seekless: index: {} damaged (cut short, or a size or checksum that does not \
             match): SELECT path, damaged FROM images WHERE damaged IS NOT NULL",
            summary.damaged
        );
    }
}

/// `--summary`'s account of where the read's time went, phase by phase, what bound the
/// run, and whether the writer ever held up a worker (docs/index.md, "What it prints").
fn print_phases(p: &Phases) {
    let secs = |d: std::time::Duration| d.as_secs_f64();
    let workers = if p.workers == 1 { "worker" } else { "workers" };
    eprintln!(
        "seekless: time by phase, summed over {} {workers} (the read took {:.3} s):",
        p.workers,
        secs(p.took)
    );
    let lines = [
        (
            "read wait",
            p.read_wait,
            "waiting for the sweep to hand over the next file",
        ),
        (
            "read",
            p.read,
            "read calls: copies from the page cache, or the disk",
        ),
        ("hash", p.hash, "BLAKE3"),
        ("inspect", p.inspect, "format, header, EXIF"),
        ("decode", p.decode, "the image, at reduced scale for JPEG"),
        (
            "resize",
            p.resize,
            "to the thumbnail's size, EXIF orientation applied",
        ),
        ("encode", p.encode, "the thumbnail as JPEG"),
        ("phash", p.phash, "the perceptual hash"),
        ("insert", p.insert, "the writer thread, in SQLite"),
    ];
    for (name, took, what) in lines {
        eprintln!("seekless:   {name:<9} {:>9.3} s  {what}", secs(took));
    }
    let Some(bound) = p.bound() else {
        eprintln!("seekless: nothing was read");
        return;
    };
    if bound == Bound::Sink {
        eprintln!(
            "seekless: writer-bound: the workers computed {:.3} s, waited {:.3} s for the disk \
             and {:.3} s for the writer",
            secs(p.computing()),
            secs(p.disk_wait()),
            secs(p.blocked)
        );
    } else {
        let (bound, computing) = if bound == Bound::Disk {
            ("disk-bound", "only computed")
        } else {
            ("CPU-bound", "computed")
        };
        eprintln!(
            "seekless: {bound}: the workers {computing} {:.3} s and waited {:.3} s for the disk",
            secs(p.computing()),
            secs(p.disk_wait())
        );
    }
    if p.blocked_rows == 0 {
        eprintln!(
            "seekless: the writer never blocked a worker (0 of {} rows waited for room in its queue)",
            p.rows
        );
    } else {
        eprintln!(
            "seekless: the writer blocked the workers: {} of {} rows waited for room in its queue, {:.3} s in all",
            p.blocked_rows,
            p.rows,
            secs(p.blocked)
        );
    }
}
