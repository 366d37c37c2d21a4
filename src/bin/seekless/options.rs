//! The option blocks the jobs share, flattened into each: what to say on stderr
//! ([`ReportArgs`]) and how to read ([`ReadArgs`]).

use std::num::NonZeroUsize;

use seekless::read::ReadOptions;

use crate::inputs::threads_parser;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Print on stderr the plan's summary, and for jobs that read, the read phase (time,
    /// rate, where the workers' time went) and the job's counts.
    #[arg(long)]
    pub summary: bool,

    /// Say on stderr what was skipped and why (special files, symlinks, other
    /// filesystems, files and directories reached twice); tar also names each member as
    /// it is written.
    #[arg(short, long)]
    pub verbose: bool,
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

    /// On seeking disks, let the first request past a gap of at least KIB KiB on the
    /// disk be served before prefetching further (0: never).
    #[arg(long, value_name = "KIB", default_value_t = 128)]
    pub gap_barrier_kb: u64,

    /// Keep read data in the page cache (default: drop it after use).
    #[arg(long)]
    pub keep_cache: bool,

    /// Read one file at a time in plan order, without prefetching (for comparison).
    #[arg(long)]
    pub no_prefetch: bool,

    /// Take every disk for a seeking disk (hdd: read in disk order, waiting at gaps) or a
    /// solid-state one (ssd: no waits); auto measures each with a few small direct reads
    /// (its rotational flag is often wrong on virtual disks).
    #[arg(long, value_enum, default_value_t = DiskArg::Auto)]
    pub disk: DiskArg,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskArg {
    Auto,
    Hdd,
    Ssd,
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

    /// What `--disk` takes every disk for, if it was given.
    pub fn disk_kind(&self) -> Option<seekless::DiskKind> {
        match self.disk {
            DiskArg::Auto => None,
            DiskArg::Hdd => Some(seekless::DiskKind::Seeking),
            DiskArg::Ssd => Some(seekless::DiskKind::SolidState),
        }
    }

    pub fn workers(&self) -> usize {
        self.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, NonZeroUsize::get))
    }
}
