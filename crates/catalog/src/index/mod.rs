//! An image catalog in SQLite, read in physical order: what seekless was born for.
//!
//! [`index`] walks and plans like every job, decides from the catalog what must be read
//! (new or changed files; moved files only change path; files gone are removed, but only
//! under directories this run listed completely: see [`IndexOptions::prune`]), reads
//! those in physical order with the queue full, hashes each whole (BLAKE3) while keeping
//! its first bytes for the header and EXIF (`inspect`; the formats it knows are one table,
//! [`IMAGE_EXTENSIONS`] their extensions), and writes rows from one writer thread in
//! batched transactions. XMP sidecars beside the images
//! (`IMG_1234.CR2.xmp`, `IMG_1234.xmp`) are read in the same sweep when new or changed,
//! into rows of their own that the images' rows point at. The schema and example queries
//! are in `docs/index.md`.
//!
//! ```
//! use seekless_core::{PlanOptions, Quiet};
//! use seekless_catalog::index::{IndexOptions, index};
//!
//! let dir = tempfile::tempdir()?;
//! // A 1×1 GIF.
//! std::fs::write(dir.path().join("a.gif"), b"GIF89a\x01\0\x01\0\0\0\0;")?;
//! let db = tempfile::tempdir()?;
//! let opts = IndexOptions::new(db.path().join("photos.db"));
//! let first = index(&[dir.path().to_path_buf()], &PlanOptions::default(), &opts, &Quiet)?;
//! assert_eq!((first.seen, first.added), (1, 1));
//! let again = index(&[dir.path().to_path_buf()], &PlanOptions::default(), &opts, &Quiet)?;
//! assert_eq!((again.unchanged, again.added), (1, 0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod catalog;
mod catchup;
// Public only for the decoder benchmark (examples/thumb_decoders.rs), the fuzz targets
// and the tests: not part of the API.
#[doc(hidden)]
pub mod dc_jpeg;
mod decide;
pub(crate) mod formats;
pub(crate) mod inspect;
mod libheif;
mod phases;
pub(crate) mod phash;
mod reading;
mod roots;
pub(crate) mod taken;
mod thumb;
mod tone;
mod video;
mod volumes;
mod watch;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use catalog::WriterLock;
pub use catalog::{APPLICATION_ID, CatalogError, SCHEMA_VERSION};
use catchup::CatchUp;
use crossbeam_channel::RecvTimeoutError;
pub use phases::Phases;
pub use thumb::ThumbOptions;
pub use watch::{WatchOptions, watch};

use seekless_core::PlanOptions;
use seekless_core::Reporter;
use seekless_core::read::{self, ReadOptions};
use seekless_sys::path_to_bytes;

use decide::{
    Decided, MovedAndGone, decide_known, decide_sidecars, gone_sidecars, links, moved_and_gone,
    rows_of_unopened,
};
use reading::read_and_write;
use roots::{Walked, absent_roots, offline_under_absent_roots, own_files, roots_before_walk, walk};

/// The extensions of the files catalogued by default, lower-case (matched in any case):
/// every extension of every format the catalog knows, images, then camera raw files, then
/// videos (the list in `docs/index.md`, "Which files"). The command line's default
/// `--ext`.
pub const IMAGE_EXTENSIONS: &[&str] = &formats::EXTENSIONS;

/// The extension of XMP sidecars (case-insensitive).
const SIDECAR_EXTENSION: &str = "xmp";

/// Whether the file at `path` is an XMP sidecar (`NAME.EXT.xmp` as darktable and digiKam
/// name them, `NAME.xmp` as Lightroom and Capture One do, `.xmp` in any case): never an
/// image row, always a sidecar row. The walk keeps them beside the images whatever the
/// extensions asked for (their globs still apply).
fn is_sidecar(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(SIDECAR_EXTENSION))
}

/// Bytes of a file kept with `--thumbs`: the whole file, up to this size (a larger one gets
/// a recorded "too large" instead of a thumbnail: it is never read a second time). Raw
/// files and videos are not kept whole.
pub const MAX_THUMB_FILE: u64 = 256 << 20;

/// How to index.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct IndexOptions {
    /// The catalog (an SQLite database, created if missing).
    pub db: PathBuf,
    /// Read every file again, even those the catalog says are unchanged.
    pub rehash: bool,
    /// Walk every root whole, even one that could be caught up from what its filesystem
    /// says changed since the last run (docs/index.md, "Catching up without a walk").
    pub full_walk: bool,
    /// How to read.
    pub read: ReadOptions,
    /// Threads hashing and parsing.
    pub workers: usize,
    /// Remove the rows under a root that does not exist or is an empty directory, and under
    /// a mount point below a root whose filesystem is not there any more (without it, such
    /// a root or mount point is an error and its rows stay: most likely a drive not
    /// mounted).
    pub prune: bool,
    /// Make a thumbnail and a perceptual hash of each image read (docs/index.md,
    /// "Thumbnails and perceptual hashes"); unchanged images without a thumbnail of this
    /// size are read once more to get one.
    pub thumbs: Option<ThumbOptions>,
    /// Rows per transaction, at most (4,096 by default). A commit happens at least once a
    /// second whatever this is (what a crash can lose); this only caps one commit's work.
    /// Tests of what a run has committed while it goes on make it small.
    pub batch_rows: usize,
    /// Files (path bytes) known to have been written since their row, read again even
    /// when their path, inode, size and mtime are the row's (`index --watch` saw them
    /// written and closed: an edit in place that kept the size and put the mtime back).
    pub(crate) reread: HashSet<Vec<u8>>,
    /// Files (path bytes) still being written (`index --watch` saw them written to and
    /// not closed): neither read nor given a row now; a row they have is kept as it is.
    pub(crate) hold: HashSet<Vec<u8>>,
}

impl IndexOptions {
    /// Options for the catalog at `db`, with default reading.
    pub fn new(db: impl Into<PathBuf>) -> Self {
        Self {
            db: db.into(),
            rehash: false,
            full_walk: false,
            read: ReadOptions::default(),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            prune: false,
            thumbs: None,
            batch_rows: catalog::BATCH_ROWS,
            reread: HashSet::new(),
            hold: HashSet::new(),
        }
    }
}

/// What a run did (also recorded in the catalog's `scans` table).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct IndexSummary {
    /// Candidate files the walk found.
    pub seen: u64,
    /// New paths, read.
    pub added: u64,
    /// Known paths whose file changed, read again.
    pub changed: u64,
    /// Known files at a new path: the row follows, nothing read.
    pub moved: u64,
    /// Unchanged, not read.
    pub unchanged: u64,
    /// Rows of files gone from under the scanned paths, deleted.
    pub removed: u64,
    /// Rows written with an error.
    pub failed: u64,
    /// Files read in this run that the bytes read show damaged (`images.damaged`).
    pub damaged: u64,
    /// Files read and bytes read.
    pub read_files: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Thumbnails made (with [`IndexOptions::thumbs`]).
    pub thumbs: u64,
    /// XMP sidecars the walk found (not counted in `seen`).
    pub sidecars: u64,
    /// Sidecars read (new or changed; counted in `read_files` too).
    pub sidecars_read: u64,
    /// Rows of sidecars gone from under the scanned paths, deleted (their images' fields
    /// from them go with them).
    pub sidecars_removed: u64,
    /// Roots caught up without a walk: only the directories their filesystem said
    /// changed since the last run were walked (and `seen`, `unchanged` count only what
    /// those held).
    pub caught_up: u64,
    /// The directories walked for the roots caught up.
    pub caught_up_dirs: u64,
    /// Where the read's time went, phase by phase.
    pub phases: Phases,
}

/// Why a run could not happen at all (per-file problems are rows with an error instead).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The catalog cannot be used.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

impl IndexError {
    /// Whether another `seekless index` holds the catalog.
    pub fn is_busy(&self) -> bool {
        matches!(self, IndexError::Catalog(CatalogError::Busy(_)))
    }

    /// Whether the run was refused before it changed anything: another `seekless index`
    /// holds the catalog, or the file is not a seekless catalog (left untouched).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            IndexError::Catalog(CatalogError::Busy(_) | CatalogError::NotCatalog { .. })
        )
    }
}

/// What [`index_with`] tells its caller as it goes: the read's events (the plan of the
/// files to read, each file read or failed, the end); all optional.
pub use seekless_core::read::Events as IndexEvents;

use seekless_core::read::NoEvents;

/// Indexes the images under `inputs` into the catalog `opts.db`. Per-file problems go to
/// `reporter` and into the rows' `error`; the run goes on.
pub fn index(
    inputs: &[PathBuf],
    plan_opts: &PlanOptions,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
) -> Result<IndexSummary, IndexError> {
    index_with(inputs, plan_opts, opts, reporter, &mut NoEvents)
}

/// [`index`], telling `events` how the read goes (for progress bars and summaries).
pub fn index_with(
    inputs: &[PathBuf],
    plan_opts: &PlanOptions,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    events: &mut dyn IndexEvents,
) -> Result<IndexSummary, IndexError> {
    // The writer lock first (a second writer fails at once), the database after the walk
    // (see `WriterLock`).
    let lock = WriterLock::take(&opts.db)?;
    let catchup = CatchUp::prepare(inputs, plan_opts, opts);
    run_locked(lock, &catchup, plan_opts, opts, reporter, events).map(|(summary, _)| summary)
}

/// One run of [`index_with`] with the writer lock already held, over what `catchup` says
/// to walk (its roots, or for a root caught up the directories that changed); the lock is
/// given back for the next (`index --watch` holds it from run to run).
fn run_locked(
    lock: WriterLock,
    catchup: &CatchUp,
    plan_opts: &PlanOptions,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    events: &mut dyn IndexEvents,
) -> Result<(IndexSummary, WriterLock), IndexError> {
    // Files btrfs says changed are read again, as those `--watch` saw written.
    let with_reread;
    let opts = if catchup.reread.is_empty() {
        opts
    } else {
        let mut o = opts.clone();
        o.reread.extend(catchup.reread.iter().cloned());
        with_reread = o;
        &with_reread
    };
    let own = own_files(&opts.db);
    let roots = roots_before_walk(&catchup.inputs);
    let mut plan_opts = plan_opts.clone();
    plan_opts.walk.filter = plan_opts.walk.filter.also_extension(SIDECAR_EXTENSION);
    let Walked {
        plan,
        clearance,
        unopened,
    } = walk(&roots, &plan_opts, reporter);
    // A lock another program holds on the catalog is waited for, with a message.
    let waiting = |what: &str| reporter.warning(Some(&opts.db), what);
    let mut catalog = lock.open(&waiting)?;
    catalog.batch_rows = opts.batch_rows;
    catalog.drop_catchup(&catchup.stale(), &waiting)?;
    let caught_up = catchup.judge(&plan, &clearance, &unopened);
    let mut summary = IndexSummary::default();
    (summary.caught_up, summary.caught_up_dirs) = catchup.caught_up();

    let mut known = catalog.known()?;
    let mut known_sidecars = catalog.known_sidecars()?;
    let volumes = catalog.record_volumes(&volumes::identify(&plan, &unopened), &waiting)?;
    let clearance = absent_roots(&roots, &known, opts, reporter, clearance);
    let mut offline = if opts.prune {
        BTreeSet::new()
    } else {
        offline_under_absent_roots(&roots, &known, &volumes)
    };
    let Decided {
        mut read,
        at_new_path,
        mut new_place,
    } = decide_known(
        &plan,
        &own,
        &mut known,
        &volumes,
        opts,
        reporter,
        &mut summary,
    );
    decide_sidecars(&plan, &mut known_sidecars, &mut read, opts, &mut summary);
    let unopened_sidecars: Vec<Vec<u8>> = unopened
        .iter()
        .filter(|(path, ..)| is_sidecar(path))
        .map(|(path, ..)| path_to_bytes(path).into_owned())
        .collect();
    let failed_rows = rows_of_unopened(unopened, &mut known, &mut known_sidecars, &mut summary);
    let forget_sidecars = gone_sidecars(&known_sidecars, &roots, &clearance, &volumes, opts);
    summary.sidecars_removed = forget_sidecars.len() as u64;
    let MovedAndGone {
        moved,
        forget,
        offline: vanished,
    } = moved_and_gone(
        &plan,
        &known,
        &roots,
        &clearance,
        at_new_path,
        &mut read,
        &mut new_place,
        &volumes,
        opts,
        reporter,
        &mut summary,
    );
    offline.extend(vanished);
    catalog.relocate(
        &moved,
        &new_place,
        &offline,
        &forget,
        &forget_sidecars,
        &waiting,
    )?;
    let mut failed_rows = failed_rows.into_iter();
    catalog.write_all(
        |_| failed_rows.next().ok_or(RecvTimeoutError::Disconnected),
        &waiting,
    )?;
    let links = links(
        &plan,
        &own,
        &unopened_sidecars,
        &known,
        &moved,
        &known_sidecars,
    );
    drop(known);
    drop(known_sidecars);

    let mut read = read.into_iter();
    let plan = read::decide(plan, |_| read.next().filter(|&r| r)).plan;
    read_and_write(&plan, &mut catalog, opts, reporter, events, &mut summary)?;
    catalog.link(&links, &waiting)?;
    catalog.finish(&summary, &caught_up, &waiting)?;
    Ok((summary, catalog.into_lock()))
}
