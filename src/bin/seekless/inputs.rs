//! Command-line options shared by every job that takes files: what to read and how to find
//! where it lies.

use std::fs::File;
use std::io;
use std::path::PathBuf;

use crate::options::ReadArgs;
use anyhow::{Context, Result, bail};
use seekless::{Filter, PlanOptions, Strategy, WalkOptions};

#[derive(clap::Args, Debug)]
pub struct InputArgs {
    /// Files and directories (directories are walked recursively).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Read more paths from FILE ("-" for standard input), one per line (NUL-separated with
    /// -0).
    #[arg(long, value_name = "FILE")]
    pub files_from: Option<PathBuf>,

    /// Paths are NUL-separated, in --files-from and in what is printed.
    #[arg(short = '0', long)]
    pub null: bool,

    /// Follow symbolic links found in directories (links named as inputs are always
    /// followed); loops are reported.
    #[arg(short = 'L', long)]
    pub follow: bool,

    /// Stay on the filesystem of each input directory.
    #[arg(short = 'x', long)]
    pub one_file_system: bool,

    /// Only files with these extensions (comma-separated, case-insensitive).
    #[arg(long, value_delimiter = ',', value_name = "EXT")]
    pub ext: Vec<String>,

    /// Only files matching this glob (against the name; against the path if it contains
    /// '/'). Repeatable.
    #[arg(long, value_name = "GLOB")]
    pub glob: Vec<String>,

    /// How to locate files: auto chooses per filesystem (fiemap → fibmap → inode).
    #[arg(long, value_enum, default_value_t = LocateArg::Auto, value_name = "HOW")]
    pub locate: LocateArg,

    /// Let the filesystem flush delayed allocations before mapping (FIEMAP_FLAG_SYNC).
    /// This writes to the disk.
    #[arg(long)]
    pub sync: bool,

    /// Threads walking directories and locating files, 1 to 1024 (default: 64; they
    /// mostly wait for the disk, and more of them keep more metadata reads in its queue).
    #[arg(long, value_name = "N", value_parser = threads_parser())]
    pub walk_threads: Option<usize>,

    /// Do not read directories' blocks ahead through the block device. By default, on
    /// ext2/3/4 on a rotational disk and when the device is readable (root), each
    /// directory's blocks are asked for in one request before it is listed.
    #[arg(long)]
    pub no_dir_readahead: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocateArg {
    Auto,
    Fiemap,
    Fibmap,
    Inode,
    Given,
}

impl InputArgs {
    /// The inputs, with --files-from appended.
    pub fn paths(&self) -> Result<Vec<PathBuf>> {
        let mut paths = self.paths.clone();
        if let Some(list) = &self.files_from {
            let read = if list.as_os_str() == "-" {
                seekless::read_path_list(io::stdin().lock(), self.null)
            } else {
                let f = File::open(list)
                    .with_context(|| format!("cannot open --files-from {}", list.display()))?;
                seekless::read_path_list(f, self.null)
            };
            let read = read.with_context(|| format!("reading {}", list.display()))?;
            if !self.null && read.iter().any(|p| has_nul(p)) {
                bail!(UsageError(format!(
                    "--files-from {}: the list contains NUL bytes; for a NUL-separated \
                     list (find -print0) add -0",
                    list.display()
                )));
            }
            paths.extend(read);
        }
        if paths.is_empty() && self.files_from.is_none() {
            bail!(UsageError("no PATH given (and no --files-from)".into()));
        }
        Ok(paths)
    }

    /// [`plan_options`](Self::plan_options) for a job that only reads the files (hash,
    /// index, tar, copy): on a disk known not to seek (`--disk ssd`, or one that reports
    /// non-rotational and answers direct reads like one), files are not located, since
    /// any order reads as fast there; `--locate` still decides when given.
    pub fn plan_options_for_reading(&self, read: &ReadArgs) -> Result<PlanOptions> {
        let mut opts = self.plan_options()?;
        opts.unordered_on_solid_state = true;
        opts.disk = read.disk_kind();
        Ok(opts)
    }

    pub fn plan_options(&self) -> Result<PlanOptions> {
        let mut filter = Filter::new().extensions(&self.ext);
        if !self.glob.is_empty() {
            filter = filter
                .globs(&self.glob)
                .map_err(|e| UsageError(format!("bad --glob: {e}")))?;
        }
        let mut walk = WalkOptions::default();
        walk.follow = self.follow;
        walk.one_file_system = self.one_file_system;
        walk.filter = filter;
        walk.dir_readahead = !self.no_dir_readahead;
        if let Some(n) = self.walk_threads {
            walk.threads = n;
        }
        let strategy = match self.locate {
            LocateArg::Auto => None,
            LocateArg::Fiemap => Some(Strategy::Fiemap),
            LocateArg::Fibmap => Some(Strategy::Fibmap),
            LocateArg::Inode => Some(Strategy::Inode),
            LocateArg::Given => Some(Strategy::Given),
        };
        let mut opts = PlanOptions::default();
        opts.walk = walk;
        opts.strategy = strategy;
        opts.sync = self.sync;
        Ok(opts)
    }
}

fn has_nul(path: &std::path::Path) -> bool {
    path.as_os_str().as_encoded_bytes().contains(&0)
}

/// A mistake on the command line found after parsing: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A run refused before it changed anything, for a reason that is not a mistake in the
/// command line (the catalog is being written by another run, or is not a catalog): exit
/// code 2, without pointing at `--help`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Threads a user may ask for (`-j`, `--walk-threads`), at most. Far more than a disk
/// queue or a CPU count calls for; every thread costs a stack and a descriptor-table
/// share, and the count sizes buffers up front.
pub const MAX_THREADS: u64 = 1024;

/// Parses a thread count: 1 to [`MAX_THREADS`].
pub fn threads_parser() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_THREADS)
}
