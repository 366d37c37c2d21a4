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
// Public only for the decoder benchmark (examples/thumb_decoders.rs), the fuzz targets
// and the tests: not part of the API.
#[doc(hidden)]
pub mod dc_jpeg;
pub(crate) mod formats;
pub(crate) mod inspect;
mod libheif;
mod phases;
pub(crate) mod phash;
pub(crate) mod taken;
mod thumb;
mod video;

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

pub use catalog::{APPLICATION_ID, CatalogError, SCHEMA_VERSION};
use catalog::{KnownSidecar, Record, Row, SidecarRow, WriterLock};
use crossbeam_channel::RecvTimeoutError;
pub use phases::Phases;
pub use thumb::ThumbOptions;

use seekless_core::Error;
use seekless_core::Reporter;
use seekless_core::read::{self, ConsumeOptions, Job, ReadOptions, Work};
use seekless_core::{Plan, PlanOptions, PlannedFile};
use seekless_jobs::destructive::{Clearance, Forget, Witness};
use seekless_sys::Scope;
use seekless_sys::path_to_bytes;

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

/// Bytes of a file kept from its start for parsing its header and EXIF (the whole file
/// when smaller): EXIF in TIFF-based raw files may lie anywhere in it.
const KEEP: usize = 32 << 20;

/// Bytes kept from the end of a file larger than [`KEEP`]: where MP4 and MOV writers put
/// the `moov` box (after the media data) and some raw writers their previews.
const KEEP_TAIL: usize = 16 << 20;

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
}

impl IndexOptions {
    /// Options for the catalog at `db`, with default reading.
    pub fn new(db: impl Into<PathBuf>) -> Self {
        Self {
            db: db.into(),
            rehash: false,
            read: ReadOptions::default(),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            prune: false,
            thumbs: None,
            batch_rows: catalog::BATCH_ROWS,
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

/// What a root was before the walk, as far as forgetting its rows goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RootState {
    /// There, with something in it (or a file).
    Present,
    /// Does not exist (a drive not mounted, a directory renamed away): not walked.
    Missing,
    /// An empty directory (the mount point of a drive not mounted, most often).
    Empty,
}

/// Of the rows about to be removed as gone (`gone`: path, recorded device, id), those of a
/// drive that is not mounted where it was: the deepest directory on each row's path that
/// still exists is empty and on another device than the row's file was. That directory
/// was, most likely, the mount point of the row's filesystem; now it is an empty
/// directory of its parent's (a drive unplugged, `umount`, `umount -l` during the run).
/// Such rows are kept (their ids returned), with one error per directory, as a missing
/// root's are; with `prune` they go, with a warning. A directory emptied on the same
/// filesystem is not this: its rows go. (A file system that got another device number
/// since the last run, and whose directory was emptied meanwhile, is taken for a vanished
/// mount: the error then asks for `--prune`, never the other way round.)
fn vanished_mounts(
    gone: &[(&[u8], u64, i64)],
    prune: bool,
    reporter: &dyn Reporter,
) -> HashSet<i64> {
    use seekless_sys::path_from_bytes;
    /// What a directory on a row's path is: missing, or there (its device, whether it is
    /// an empty directory).
    fn look(dir: &Path) -> Option<(u64, bool)> {
        match seekless_sys::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // There, but unknown: not taken for a vanished mount.
            Err(_) => Some((u64::MAX, false)),
            Ok(m) => {
                let dev = seekless_sys::file_id(dir, None, &m).map_or(u64::MAX, |id| id.dev);
                let empty = m.is_dir()
                    && matches!(seekless_sys::read_dir(dir).map(|mut d| d.next()), Ok(None));
                Some((dev, empty))
            }
        }
    }
    let mut seen: HashMap<PathBuf, Option<(u64, bool)>> = HashMap::new();
    // The vanished mount points, with the ids of their rows.
    let mut vanished: HashMap<PathBuf, Vec<i64>> = HashMap::new();
    for &(bytes, dev, id) in gone {
        let path = path_from_bytes(bytes);
        let deepest = path.ancestors().skip(1).find_map(|dir| {
            let found = *seen.entry(dir.to_path_buf()).or_insert_with(|| look(dir));
            found.map(|f| (dir, f))
        });
        if let Some((dir, (dir_dev, true))) = deepest
            && dir_dev != dev
        {
            vanished.entry(dir.to_path_buf()).or_default().push(id);
        }
    }
    let mut dirs: Vec<_> = vanished.into_iter().collect();
    dirs.sort();
    let mut kept = HashSet::new();
    for (dir, ids) in dirs {
        let rows = ids.len();
        let rows_word = if rows == 1 { "row" } else { "rows" };
        let what = format!(
            "an empty directory now, was the mount point of another filesystem with {rows} \
             {rows_word} in the catalog"
        );
        if prune {
            reporter.warning(Some(&dir), &format!("{what}: removed (--prune)"));
        } else {
            let why = format!("{what}: kept (is the drive mounted? --prune removes them)");
            reporter.error(&Error::io(&dir, std::io::Error::other(why)));
            kept.extend(ids);
        }
    }
    kept
}

/// A root as the catalog names it: absolute, symbolic links and `..` resolved once for
/// the root (never per file below it). A directory is made canonical whole; a file (or a
/// path that does not exist) keeps its own name, joined to its directory made canonical
/// (looked up once per directory in `dirs`, for long `--files-from` lists).
fn catalog_root(p: &Path, dirs: &mut HashMap<PathBuf, PathBuf>) -> PathBuf {
    if seekless_sys::metadata(p).is_ok_and(|m| m.is_dir())
        && let Ok(c) = std::fs::canonicalize(p)
    {
        return c;
    }
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
        return abs;
    };
    if let Some(dir) = dirs.get(parent) {
        return dir.join(name);
    }
    let dir = catalog_root(parent, dirs);
    dirs.insert(parent.to_path_buf(), dir.clone());
    dir.join(name)
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
    let own = own_files(&opts.db);
    let roots = roots_before_walk(inputs);
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
    let mut summary = IndexSummary::default();

    let mut known = catalog.known()?;
    let mut known_sidecars = catalog.known_sidecars()?;
    let clearance = absent_roots(&roots, &known, opts, reporter, clearance);
    let Decided {
        mut read,
        at_new_path,
        new_dev,
    } = decide_known(&plan, &own, &mut known, opts, reporter, &mut summary);
    decide_sidecars(&plan, &mut known_sidecars, &mut read, opts, &mut summary);
    let unopened_sidecars: Vec<Vec<u8>> = unopened
        .iter()
        .filter(|(path, ..)| is_sidecar(path))
        .map(|(path, ..)| path_to_bytes(path).into_owned())
        .collect();
    let failed_rows = rows_of_unopened(unopened, &mut known, &mut known_sidecars, &mut summary);
    let forget_sidecars = gone_sidecars(&known_sidecars, &roots, &clearance, opts);
    summary.sidecars_removed = forget_sidecars.len() as u64;
    let (moved, forget) = moved_and_gone(
        &plan,
        &known,
        &roots,
        &clearance,
        at_new_path,
        &mut read,
        opts,
        reporter,
        &mut summary,
    );
    catalog.relocate(&moved, &new_dev, &forget, &forget_sidecars, &waiting)?;
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
    catalog.finish(&summary, &waiting)?;
    Ok(summary)
}

/// Phase 1: the roots as the catalog names them, and what each was before the walk.
fn roots_before_walk(inputs: &[PathBuf]) -> Vec<(PathBuf, RootState)> {
    let mut dirs = HashMap::new();
    inputs
        .iter()
        .map(|p| {
            let root = catalog_root(p, &mut dirs);
            let state = match seekless_sys::metadata(&root) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => RootState::Missing,
                Ok(m) if m.is_dir() => match seekless_sys::read_dir(&root).map(|mut d| d.next()) {
                    Ok(None) => RootState::Empty,
                    _ => RootState::Present,
                },
                _ => RootState::Present,
            };
            (root, state)
        })
        .collect()
}

/// What the walk gave an index run.
struct Walked {
    plan: Plan,
    /// What may be forgotten: everything outside what the walk could not see whole.
    clearance: Clearance,
    /// Regular files the walk found but could not open, their metadata and why.
    unopened: Vec<(PathBuf, std::fs::Metadata, String)>,
}

/// Phase 2: walks and plans the roots that exist, noting what could not be seen whole.
fn walk(
    roots: &[(PathBuf, RootState)],
    plan_opts: &PlanOptions,
    reporter: &dyn Reporter,
) -> Walked {
    let walked: Vec<PathBuf> = roots
        .iter()
        .filter(|(_, s)| *s != RootState::Missing)
        .map(|(r, _)| r.clone())
        .collect();
    // Files the walk found but could not open still get a row, with their error: keep
    // the regular files among the failed paths that the filter would have taken.
    let unopened = std::sync::Mutex::new(Vec::new());
    let filter = &plan_opts.walk.filter;
    // The paths the walk could not see whole: errors (an unreadable directory, one that
    // vanished, a file that could not be opened) and skips (another filesystem under `-x`,
    // a symbolic link, a directory already walked under another name). Rows at or under
    // them are never removed.
    let recorder = Witness::with_on_error(reporter, |err: &Error| {
        let path = err.path();
        let Ok(meta) = seekless_sys::symlink_metadata(path) else {
            return;
        };
        let name = path.file_name().unwrap_or_default();
        if meta.is_file() && (filter.is_empty() || filter.keeps(path, name)) {
            let why = match err.io_error() {
                Some(e) => seekless_sys::describe_io(e),
                None => err.kind().to_string(),
            };
            seekless_sys::sync::lock(&unopened).push((path.to_path_buf(), meta, why));
        }
    });
    let plan = recorder.walk(&walked, plan_opts);
    let clearance = recorder
        .clearance_outside_unseen()
        .expect("a witness that walked gives a clearance outside what it could not see");
    Walked {
        plan,
        clearance,
        unopened: seekless_sys::sync::into_inner(unopened),
    }
}

/// Phase 3: a root that is not there, or empty, where the catalog has rows: most likely a
/// drive not mounted. Its rows stay (an error; the clearance shields them) unless `prune`
/// says they may go.
fn absent_roots(
    roots: &[(PathBuf, RootState)],
    known: &HashMap<Vec<u8>, catalog::Known>,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    mut clearance: Clearance,
) -> Clearance {
    for (root, state) in roots {
        if *state == RootState::Present {
            continue;
        }
        let scope = Scope::of_resolved(root.clone());
        let rows = known.keys().filter(|k| scope.contains_bytes(k)).count();
        let rows_word = if rows == 1 { "row" } else { "rows" };
        let what = match state {
            RootState::Missing => "does not exist",
            _ => "is an empty directory",
        };
        if rows == 0 {
            if *state == RootState::Missing {
                let e = std::io::Error::from(std::io::ErrorKind::NotFound);
                reporter.error(&Error::io(root, e));
            }
        } else if opts.prune {
            reporter.warning(
                Some(root),
                &format!("{what}; its {rows} {rows_word} in the catalog are removed (--prune)"),
            );
        } else {
            let why = format!(
                "{what}, but the catalog has {rows} {rows_word} under it: kept (is the drive \
                 mounted? --prune removes them)"
            );
            reporter.error(&Error::io(root, std::io::Error::other(why)));
            clearance = clearance.shielding(root.clone());
        }
    }
    clearance
}

/// What phase 4 decided of the planned files.
struct Decided {
    /// Per planned file: read it.
    read: Vec<bool>,
    /// Planned files at a path the catalog has no row for.
    at_new_path: Vec<u32>,
    /// Rows of unchanged files now on another device number.
    new_dev: Vec<(i64, u64)>,
}

/// Phase 4: the files at known paths, unchanged or changed (marking their rows seen).
/// Rows left unseen after this are of paths the walk did not find.
fn decide_known(
    plan: &Plan,
    own: &[PathBuf],
    known: &mut HashMap<Vec<u8>, catalog::Known>,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    summary: &mut IndexSummary,
) -> Decided {
    let mut read = vec![false; plan.files().len()];
    let mut at_new_path: Vec<u32> = Vec::new();
    let mut new_dev: Vec<(i64, u64)> = Vec::new();
    for (i, f) in plan.files().iter().enumerate() {
        if is_sidecar(&f.entry.path) {
            continue;
        }
        if is_own(own, f) {
            reporter.skipped(&f.entry.path, "the catalog itself");
            continue;
        }
        summary.seen += 1;
        match known.get_mut(path_to_bytes(&f.entry.path).as_ref()) {
            Some(k) => {
                k.seen = true;
                // The device number is not compared: it changes when a disk is plugged
                // in again or a filesystem mounted again, the file staying the same.
                if k.read && k.identity()[1..] == identity(f)[1..] && !opts.rehash {
                    summary.unchanged += 1;
                    if k.dev != f.entry.id.dev {
                        new_dev.push((k.id, f.entry.id.dev));
                    }
                    // Unchanged, but without the thumbnail asked for: read once for it.
                    if let Some(t) = &opts.thumbs
                        && k.thumb_size != Some(t.size)
                    {
                        read[i] = true;
                    }
                } else {
                    summary.changed += 1;
                    read[i] = true;
                }
            }
            None => at_new_path.push(i as u32),
        }
    }
    Decided {
        read,
        at_new_path,
        new_dev,
    }
}

/// Phase 4b: the sidecars the walk found (marking their rows seen): new or changed ones
/// (size or mtime), and those whose last read failed, are read in the sweep with the
/// images; the others are not read. A sidecar is never "moved": it is small, read again
/// at its new path.
fn decide_sidecars(
    plan: &Plan,
    known: &mut HashMap<Vec<u8>, KnownSidecar>,
    read: &mut [bool],
    opts: &IndexOptions,
    summary: &mut IndexSummary,
) {
    for (i, f) in plan.files().iter().enumerate() {
        if !is_sidecar(&f.entry.path) {
            continue;
        }
        summary.sidecars += 1;
        let [_, ino, size, mtime] = identity(f);
        read[i] = match known.get_mut(path_to_bytes(&f.entry.path).as_ref()) {
            Some(k) => {
                k.seen = true;
                // Unchanged as images are: the same inode, size and mtime (a tool that
                // rewrites a sidecar keeping its size and time makes a new file).
                !k.read
                    || k.ino.map(|i| i as i64) != Some(ino)
                    || k.size as i64 != size
                    || k.mtime_ns != mtime
                    || opts.rehash
            }
            None => true,
        };
    }
}

/// Phase 5: files that could not be opened get a row each, with the error (retried next
/// run: a row without a content hash is never "unchanged"); a sidecar gets a sidecar's
/// row, keeping the fields of its last read.
fn rows_of_unopened(
    unopened: Vec<(PathBuf, std::fs::Metadata, String)>,
    known: &mut HashMap<Vec<u8>, catalog::Known>,
    known_sidecars: &mut HashMap<Vec<u8>, KnownSidecar>,
    summary: &mut IndexSummary,
) -> Vec<Record> {
    let mut failed_rows = Vec::with_capacity(unopened.len());
    for (path, meta, why) in unopened {
        let dev = || seekless_sys::file_id(&path, None, &meta).map_or(0, |id| id.dev);
        if is_sidecar(&path) {
            summary.sidecars += 1;
            let bytes = path_to_bytes(&path).into_owned();
            if let Some(k) = known_sidecars.get_mut(&bytes) {
                k.seen = true;
            }
            failed_rows.push(Record::Sidecar(SidecarRow {
                dev: dev(),
                ino: seekless_sys::file_id(&path, None, &meta).map_or(0, |id| id.ino),
                path_bytes: bytes,
                size: meta.len(),
                mtime_ns: mtime_ns(meta.modified().ok()),
                fields: None,
                error: Some(format!("{}{why}", catalog::READ_FAILED)),
            }));
            continue;
        }
        summary.seen += 1;
        summary.failed += 1;
        let bytes = path_to_bytes(&path).into_owned();
        match known.get_mut(&bytes) {
            Some(k) => {
                k.seen = true;
                summary.changed += 1;
            }
            None => summary.added += 1,
        }
        let (dev, ino) =
            seekless_sys::file_id(&path, None, &meta).map_or((0, 0), |id| (id.dev, id.ino));
        failed_rows.push(Record::Image(Row {
            path_bytes: bytes,
            dev,
            ino,
            size: meta.len(),
            mtime_ns: mtime_ns(meta.modified().ok()),
            info: inspect::ImageInfo {
                error: Some(why),
                ..inspect::ImageInfo::default()
            },
            blake3: None,
            visual: None,
        }));
    }
    failed_rows
}

/// Phase 5b: rows of sidecars gone from under the scanned paths, by the images' rules:
/// never at or under a path the walk could not see whole (nor under a missing or empty
/// root without `prune`), nor under a mount point whose filesystem is not there (the
/// images' rows there are kept, and said so, in phase 6).
fn gone_sidecars(
    known: &HashMap<Vec<u8>, KnownSidecar>,
    roots: &[(PathBuf, RootState)],
    clearance: &Clearance,
    opts: &IndexOptions,
) -> Forget {
    let scopes: Vec<(Scope, RootState)> = roots
        .iter()
        .map(|(r, state)| (Scope::of_resolved(r.clone()), *state))
        .collect();
    let not_found: Vec<(&[u8], &KnownSidecar)> = known
        .iter()
        .filter(|(bytes, k)| !k.seen && scopes.iter().any(|(r, _)| r.contains_bytes(bytes)))
        .map(|(bytes, k)| (bytes.as_slice(), k))
        .collect();
    let paths: Vec<PathBuf> = not_found
        .iter()
        .map(|(bytes, _)| seekless_sys::path_from_bytes(bytes))
        .collect();
    let mut forget = Forget::gone(
        not_found
            .iter()
            .zip(&paths)
            .map(|((_, k), p)| (k.id, p.as_path())),
        clearance,
    );
    let forgettable: HashSet<i64> = forget.ids().iter().copied().collect();
    // Those under a root that is there, checked for a vanished mount point: the images'
    // check (phase 6) tells the user; this one only keeps.
    let candidates: Vec<(&[u8], u64, i64)> = not_found
        .iter()
        .filter(|(bytes, k)| {
            forgettable.contains(&k.id)
                && !scopes
                    .iter()
                    .any(|(r, state)| *state != RootState::Present && r.contains_bytes(bytes))
        })
        .map(|(bytes, k)| (*bytes, k.dev, k.id))
        .collect();
    let kept = vanished_mounts(&candidates, opts.prune, &seekless_core::Quiet);
    forget.retain(|id| !kept.contains(&id));
    forget
}

/// Phase 6b: which image rows must point at another sidecar (or at none), as (image path
/// bytes, sidecar path bytes). An image `NAME.EXT` has the sidecar `NAME.EXT.xmp` if the
/// walk found one (darktable, digiKam), else `NAME.xmp` (Lightroom, Capture One: shared by
/// a RAW and a JPEG of one base name); `.xmp` in any case, the rest of the name exact.
/// Decided from what the walk listed: nothing is looked up per image. A row whose sidecar
/// was not found keeps it when the sidecar's row is kept (the walk could not see it);
/// when that row goes, the row's link goes with it (`IndexWriter::relocate`). Rows already
/// right are left out.
fn links(
    plan: &Plan,
    own: &[PathBuf],
    unopened_sidecars: &[Vec<u8>],
    known: &HashMap<Vec<u8>, catalog::Known>,
    moved: &[(i64, Vec<u8>)],
    known_sidecars: &HashMap<Vec<u8>, KnownSidecar>,
) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    use seekless_sys::path_from_bytes;
    // Each sidecar by the path it is beside (its own without `.xmp`); of `a.xmp` and
    // `a.XMP`, the first by bytes.
    let mut beside: HashMap<PathBuf, Vec<u8>> = HashMap::new();
    let found = plan
        .files()
        .iter()
        .filter(|f| is_sidecar(&f.entry.path))
        .map(|f| path_to_bytes(&f.entry.path).into_owned())
        .chain(unopened_sidecars.iter().cloned());
    for sidecar in found {
        let target = path_from_bytes(&sidecar).with_extension("");
        match beside.entry(target) {
            std::collections::hash_map::Entry::Occupied(mut o) => {
                if sidecar < *o.get() {
                    o.insert(sidecar);
                }
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(sidecar);
            }
        }
    }
    let sidecar_ids: HashMap<&[u8], i64> = known_sidecars
        .iter()
        .map(|(bytes, k)| (bytes.as_slice(), k.id))
        .collect();
    let seen_ids: HashMap<i64, bool> = known_sidecars.values().map(|k| (k.id, k.seen)).collect();
    // The links of rows that moved, by their new path.
    let moved_ids: HashMap<i64, &[u8]> = moved.iter().map(|(id, p)| (*id, p.as_slice())).collect();
    let moved_links: HashMap<&[u8], Option<i64>> = known
        .values()
        .filter_map(|k| Some((*moved_ids.get(&k.id)?, k.sidecar)))
        .collect();
    let mut links = Vec::new();
    for f in plan.files() {
        let path: &Path = &f.entry.path;
        if is_sidecar(path) {
            continue;
        }
        let bytes = path_to_bytes(path);
        let current = match known.get(bytes.as_ref()) {
            Some(k) => k.sidecar,
            None => moved_links.get(bytes.as_ref()).copied().flatten(),
        };
        if beside.is_empty() && current.is_none() {
            continue;
        }
        let wanted = beside.get(path).or_else(|| {
            path.extension()
                .and_then(|_| beside.get(path.with_extension("").as_path()))
        });
        let change = match (wanted, current) {
            (Some(s), Some(c)) => sidecar_ids.get(s.as_slice()) != Some(&c),
            (Some(_), None) => true,
            // Its sidecar is there but beside another image now (this row moved), or
            // has no row: unlinked. One not found is kept while its row is (a directory
            // not listed whole), and its row going unlinks it.
            (None, Some(c)) => seen_ids.get(&c).copied().unwrap_or(true),
            (None, None) => false,
        };
        if change && !is_own(own, f) {
            links.push((bytes.into_owned(), wanted.cloned()));
        }
    }
    links
}

/// Phase 6: rows of files gone from under the scanned paths, by identity. A file at a new
/// path with the same identity (device included: an inode number means nothing on another
/// filesystem) moved there (its row follows it, nothing is read); the rest are forgotten,
/// but for rows at or under a path the walk could not see whole, and rows under a mount
/// point whose filesystem is not there any more (an error; those under a missing or empty
/// root were told of in phase 3). Returns the moves and what may be forgotten; files at
/// new paths that did not move are marked to be read.
#[allow(clippy::too_many_arguments)]
fn moved_and_gone(
    plan: &Plan,
    known: &HashMap<Vec<u8>, catalog::Known>,
    roots: &[(PathBuf, RootState)],
    clearance: &Clearance,
    at_new_path: Vec<u32>,
    read: &mut [bool],
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    summary: &mut IndexSummary,
) -> (Vec<(i64, Vec<u8>)>, Forget) {
    let scopes: Vec<Scope> = roots
        .iter()
        .map(|(r, _)| Scope::of_resolved(r.clone()))
        .collect();
    let not_found: Vec<(i64, PathBuf)> = known
        .iter()
        .filter(|(bytes, k)| !k.seen && scopes.iter().any(|r| r.contains_bytes(bytes)))
        .map(|(bytes, k)| (k.id, seekless_sys::path_from_bytes(bytes)))
        .collect();
    let mut forget = Forget::gone(
        not_found.iter().map(|(id, p)| (*id, p.as_path())),
        clearance,
    );
    drop(not_found);
    let forgettable: HashSet<i64> = forget.ids().iter().copied().collect();
    let mut gone: HashMap<[i64; 4], i64> = known
        .values()
        .filter(|k| forgettable.contains(&k.id))
        .map(|k| (k.identity(), k.id))
        .collect();
    let mut moved: Vec<(i64, Vec<u8>)> = Vec::new();
    for i in at_new_path {
        let f = &plan.files()[i as usize];
        match gone.remove(&identity(f)) {
            Some(id) if !opts.rehash => {
                summary.moved += 1;
                moved.push((id, path_to_bytes(&f.entry.path).into_owned()));
            }
            Some(id) => {
                // Read again under its new path; the old row goes.
                gone.insert(identity(f), id);
                summary.added += 1;
                read[i as usize] = true;
            }
            None => {
                summary.added += 1;
                read[i as usize] = true;
            }
        }
    }
    let gone_ids: HashSet<i64> = gone.values().copied().collect();
    let absent: Vec<&Scope> = roots
        .iter()
        .zip(&scopes)
        .filter(|((_, state), _)| *state != RootState::Present)
        .map(|(_, scope)| scope)
        .collect();
    let candidates: Vec<(&[u8], u64, i64)> = known
        .iter()
        .filter(|(bytes, k)| {
            gone_ids.contains(&k.id) && !absent.iter().any(|r| r.contains_bytes(bytes))
        })
        .map(|(bytes, k)| (bytes.as_slice(), k.dev, k.id))
        .collect();
    let kept = vanished_mounts(&candidates, opts.prune, reporter);
    // What moved is not forgotten, nor what a vanished mount point keeps.
    let left: HashSet<i64> = gone.into_values().collect();
    forget.retain(|id| left.contains(&id) && !kept.contains(&id));
    summary.removed = forget.len() as u64;
    (moved, forget)
}

/// Phase 7: reads what must be read, in physical order, on the workers; one writer thread
/// writes the rows as they come.
fn read_and_write(
    plan: &Arc<Plan>,
    catalog: &mut catalog::IndexWriter,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    events: &mut dyn IndexEvents,
    summary: &mut IndexSummary,
) -> Result<(), CatalogError> {
    let waiting = |what: &str| reporter.warning(Some(&opts.db), what);
    let (tx, rx) = crossbeam_channel::bounded::<Record>(WRITER_QUEUE);
    std::thread::scope(|s| {
        // The writer's time in SQLite: its whole time but its waits for rows.
        // It owns the receiving end: when it stops (a database error, a lock held too
        // long), the workers' sends fail at once and the read stops, rather than a worker
        // blocking forever on a full queue nobody empties.
        let writer = std::thread::Builder::new().spawn_scoped(s, || {
            // Moved in (not borrowed): dropped when the writer ends.
            let rx = rx;
            let started = Instant::now();
            let mut idle = Duration::ZERO;
            let result = catalog.write_all(
                |timeout| {
                    let asked = Instant::now();
                    let row = if timeout == Duration::MAX {
                        rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
                    } else {
                        rx.recv_timeout(timeout)
                    };
                    idle += asked.elapsed();
                    row
                },
                &waiting,
            );
            drop(rx);
            (result, started.elapsed().saturating_sub(idle))
        });
        // Threads can be scarce (a pids or address-space limit): then nothing is read.
        let writer = match writer {
            Ok(w) => w,
            Err(e) => {
                return Err(CatalogError::WriterThread {
                    path: opts.db.clone(),
                    source: e,
                });
            }
        };
        // One file at a time: its counts, then its row to the writer.
        let job = Reading {
            thumbs: opts.thumbs.as_ref(),
            reporter,
        };
        let consume = ConsumeOptions::new(opts.read.clone(), opts.workers);
        let tally = &mut *summary;
        let consumed = read::run(plan, &consume, &job, events, |_, planned, done| {
            let (record, read, phases) = done;
            if read {
                tally.read_files += 1;
                tally.read_bytes += planned.entry.size;
            }
            match &record {
                Record::Image(row) => {
                    tally.failed += u64::from(row.info.error.is_some());
                    tally.thumbs +=
                        u64::from(row.visual.as_ref().is_some_and(|v| v.1.thumb.is_ok()));
                }
                Record::Sidecar(_) => tally.sidecars_read += 1,
            }
            tally.phases.add_file(&phases);
            tally.phases.rows += 1;
            // The queue is bounded (rows hold thumbnails): a full one blocks this worker,
            // which the summary reports. Fails only when the writer stopped on a database
            // error (returned below): then nothing more can be stored, nothing more read.
            let sent = match tx.try_send(record) {
                Err(crossbeam_channel::TrySendError::Full(record)) => {
                    let blocked = Instant::now();
                    let sent = tx.send(record).is_ok();
                    tally.phases.blocked += blocked.elapsed();
                    tally.phases.blocked_rows += 1;
                    sent
                }
                sent => sent.is_ok(),
            };
            if sent {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        });
        drop(tx);
        let p = &mut summary.phases;
        p.read_wait = consumed.waiting;
        p.working = consumed.working;
        p.took = consumed.took;
        p.workers = consumed.workers;
        match writer.join() {
            Ok((result, insert)) => {
                summary.phases.insert = insert;
                result
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The read of an index run: each file hashed whole and inspected, each sidecar read
/// for its fields, on the workers.
struct Reading<'a> {
    thumbs: Option<&'a ThumbOptions>,
    reporter: &'a dyn Reporter,
}

impl Job for Reading<'_> {
    /// The file's row, whether it could be read, and the time its phases took.
    type Output = (Record, bool, Phases);

    fn work(&self, work: Work<'_>) -> Self::Output {
        if is_sidecar(&work.planned().entry.path) {
            let (row, read, phases) = read_sidecar(work, self.reporter);
            return (Record::Sidecar(row), read, phases);
        }
        let (row, read, phases) = read_one(work, self.thumbs, self.reporter);
        (Record::Image(row), read, phases)
    }

    fn succeeded(output: &Self::Output) -> bool {
        output.1
    }
}

/// Rows the workers may hand the writer ahead of it: a worker blocks only when the writer
/// is this far behind (at 256 px, ~10 MiB of thumbnails).
const WRITER_QUEUE: usize = 1024;

/// Reads one file whole: its BLAKE3 hash, and what its bytes say (with `thumbs`, its
/// thumbnail and perceptual hash, from the same bytes). Returns its row, whether it
/// could be read, and the time each phase took.
fn read_one(
    work: Work<'_>,
    thumbs: Option<&ThumbOptions>,
    reporter: &dyn Reporter,
) -> (Row, bool, Phases) {
    let mut phases = Phases::default();
    let planned = work.planned();
    thread_local! {
        static HEAD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        static TAIL: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let entry = &planned.entry;
    #[cfg(any(test, feature = "test-hooks"))]
    seekless_core::test_hooks::at_start(&entry.path);
    // A name whose extension is not UTF-8 has no known extension.
    let ext = entry.path.extension().and_then(|e| e.to_str());
    let mut row = Row {
        path_bytes: path_to_bytes(&entry.path).into_owned(),
        dev: entry.id.dev,
        ino: entry.id.ino,
        size: entry.size,
        mtime_ns: mtime_ns(entry.modified),
        info: inspect::ImageInfo::default(),
        blake3: None,
        visual: None,
    };
    // With thumbnails an image is kept whole (one read, never a second), up to a bound;
    // a raw file or a video never is: its head and tail have what it needs.
    // Which are: `formats::Format::kept_whole`, by the extension.
    let whole = thumbs.is_some() && formats::kept_whole(ext);
    let keep = if whole {
        (MAX_THUMB_FILE as usize).max(KEEP)
    } else {
        KEEP
    };
    // The tail starts this far into the file (as planned; a file that changed while read
    // is an error, and its tail is never more than KEEP_TAIL bytes).
    let tail_at = entry.size.saturating_sub(KEEP_TAIL as u64).max(keep as u64);
    let read = HEAD.with(|head| {
        TAIL.with(|tail| {
            let (mut head, mut tail) = (head.borrow_mut(), tail.borrow_mut());
            head.clear();
            tail.clear();
            let mut hasher = blake3::Hasher::new();
            // Read calls are the whole time in `read_all` but the chunks' handling (hashing).
            let reading = Instant::now();
            let mut hashing = Duration::ZERO;
            let mut at = 0u64;
            let result = work.read_all(|chunk| {
                let t = Instant::now();
                hasher.update(chunk);
                let room = keep.saturating_sub(head.len());
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
                let end = at + chunk.len() as u64;
                if end > tail_at {
                    let from = tail_at.saturating_sub(at) as usize;
                    let room = KEEP_TAIL.saturating_sub(tail.len());
                    let part = &chunk[from..];
                    tail.extend_from_slice(&part[..part.len().min(room)]);
                }
                at = end;
                hashing += t.elapsed();
            });
            phases.read = reading.elapsed().saturating_sub(hashing);
            match result {
                Ok(_) => {
                    let t = Instant::now();
                    row.blake3 = Some(hasher.finalize().to_hex().to_string());
                    phases.hash = hashing + t.elapsed();
                    let view = inspect::View::new(&head, &tail, entry.size);
                    let t = Instant::now();
                    row.info = inspect::inspect(view, ext);
                    phases.inspect = t.elapsed();
                    if let Some(why) = &row.info.error {
                        let why = std::io::Error::other(why.clone());
                        reporter.error(&Error::io(&*entry.path, why));
                    }
                    if let Some(what) = &row.info.warning {
                        reporter.warning(Some(&*entry.path), what);
                    }
                    if let Some(t) = thumbs {
                        let visual = if whole && !view.complete() {
                            thumb::Visual::none(format!(
                                "larger than {} MiB: no thumbnail",
                                MAX_THUMB_FILE >> 20
                            ))
                        } else {
                            let source = thumb::Source {
                                view,
                                info: &row.info,
                                path: &entry.path,
                            };
                            thumb::visual_timed(&source, t, &mut phases)
                        };
                        if let Err(why) = &visual.thumb
                            && row.info.error.is_none()
                            && !why.starts_with("no decoder")
                        {
                            reporter.warning(Some(&*entry.path), &format!("no thumbnail: {why}"));
                        }
                        row.visual = Some((t.size, visual));
                    }
                    true
                }
                Err(e) => {
                    reporter.error(&e);
                    row.info.error = Some(e.kind().to_string());
                    false
                }
            }
        })
    });
    // Keep big buffers from one huge file from staying with the thread (with thumbnails,
    // those of a typical photo stay: one allocation per thread, not one per file).
    let stays = if thumbs.is_some() { 32 << 20 } else { 4 << 20 };
    for buffer in [&HEAD, &TAIL] {
        buffer.with(|b| {
            let mut b = b.borrow_mut();
            if b.capacity() > stays {
                *b = Vec::new();
            }
        });
    }
    (row, read, phases)
}

/// Reads one XMP sidecar whole (up to [`inspect::SIDECAR_MAX`]; a larger one is its row's
/// error) and what it says. Returns its row, whether it could be read, and the time its
/// read and parse took.
fn read_sidecar(work: Work<'_>, reporter: &dyn Reporter) -> (SidecarRow, bool, Phases) {
    let mut phases = Phases::default();
    let entry = &work.planned().entry;
    #[cfg(any(test, feature = "test-hooks"))]
    seekless_core::test_hooks::at_start(&entry.path);
    let mut row = SidecarRow {
        path_bytes: path_to_bytes(&entry.path).into_owned(),
        dev: entry.id.dev,
        ino: entry.id.ino,
        size: entry.size,
        mtime_ns: mtime_ns(entry.modified),
        fields: None,
        error: None,
    };
    if entry.size > inspect::SIDECAR_MAX as u64 {
        // Too large to be a sidecar by its size alone: not read at all.
        let why = inspect::too_large();
        reporter.error(&Error::io(&*entry.path, std::io::Error::other(why.clone())));
        row.fields = Some(inspect::SidecarFields::default());
        row.error = Some(why);
        return (row, true, phases);
    }
    // One byte over the bound is enough to tell the parser the file is too large (it grew
    // since it was planned).
    let keep = inspect::SIDECAR_MAX + 1;
    let mut data = Vec::with_capacity(entry.size.min(keep as u64) as usize);
    let reading = Instant::now();
    let result = work.read_all(|chunk| {
        let room = keep.saturating_sub(data.len());
        data.extend_from_slice(&chunk[..chunk.len().min(room)]);
    });
    phases.read = reading.elapsed();
    let read = match result {
        Ok(_) => {
            let t = Instant::now();
            match inspect::sidecar(&data) {
                Ok(fields) => row.fields = Some(fields),
                Err(why) => {
                    reporter.error(&Error::io(&*entry.path, std::io::Error::other(why.clone())));
                    row.fields = Some(inspect::SidecarFields::default());
                    row.error = Some(why);
                }
            }
            phases.inspect = t.elapsed();
            true
        }
        Err(e) => {
            reporter.error(&e);
            row.error = Some(format!("{}{}", catalog::READ_FAILED, e.kind()));
            false
        }
    };
    (row, read, phases)
}

/// The catalog's own files (the database and SQLite's companions), never catalogued.
fn own_files(db: &Path) -> Vec<PathBuf> {
    let mut own = vec![db.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal", "-seekless-lock"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        own.push(PathBuf::from(p));
    }
    own.iter()
        .filter_map(|p| {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?))
        })
        .collect()
}

fn is_own(own: &[PathBuf], f: &PlannedFile) -> bool {
    let Some(name) = f.entry.path.file_name() else {
        return false;
    };
    if !own.iter().any(|o| o.file_name() == Some(name)) {
        return false;
    }
    let dir = f
        .entry
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::canonicalize(dir).is_ok_and(|d| own.contains(&d.join(name)))
}

/// What identifies a file's content without reading it: device, inode, size, mtime (as
/// SQLite stores them).
fn identity(f: &PlannedFile) -> [i64; 4] {
    [
        f.entry.id.dev as i64,
        f.entry.id.ino as i64,
        f.entry.size as i64,
        mtime_ns(f.entry.modified),
    ]
}

/// A modification time as nanoseconds since the epoch (0 when unknown).
fn mtime_ns(t: Option<SystemTime>) -> i64 {
    let Some(t) = t else { return 0 };
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_reading_fails_the_run_instead_of_hanging_on_the_writer() {
        let t = tempfile::tempdir().unwrap();
        let photos = t.path().join("photos");
        std::fs::create_dir(&photos).unwrap();
        for name in ["a.gif", seekless_core::test_hooks::PANIC_ON_OPEN, "b.gif"] {
            std::fs::write(photos.join(name), b"GIF89a\x01\0\x01\0\0\0\0;").unwrap();
        }
        let opts = IndexOptions::new(t.path().join("c.db"));
        seekless_core::test_hooks::arm();
        let message = seekless_core::test_hooks::panic_message(move || {
            let _ = index(
                &[photos],
                &PlanOptions::default(),
                &opts,
                &seekless_core::Quiet,
            );
        });
        assert!(message.contains("injected sweep fault"), "{message}");
    }

    #[test]
    fn phase_clocks_run_where_work_was_done_and_thumbnail_phases_only_with_thumbs() {
        let t = tempfile::tempdir().unwrap();
        let photos = t.path().join("photos");
        std::fs::create_dir(&photos).unwrap();
        let (w, h) = (640u16, 480u16);
        let rgb: Vec<u8> = (0..usize::from(w) * usize::from(h) * 3)
            .map(|i| (i % 251) as u8)
            .collect();
        for name in ["a.jpg", "b.jpg", "c.jpg"] {
            jpeg_encoder::Encoder::new_file(photos.join(name), 90)
                .unwrap()
                .encode(&rgb, w, h, jpeg_encoder::ColorType::Rgb)
                .unwrap();
        }
        let mut opts = IndexOptions::new(t.path().join("c.db"));
        let roots = [photos];
        let plain = index(
            &roots,
            &PlanOptions::default(),
            &opts,
            &seekless_core::Quiet,
        )
        .unwrap();
        let p = plain.phases;
        assert_eq!((p.rows, p.blocked_rows, p.blocked), (3, 0, Duration::ZERO));
        assert!(
            p.workers >= 1 && !p.took.is_zero() && !p.working.is_zero(),
            "{p:?}"
        );
        for (name, d) in [
            ("hash", p.hash),
            ("inspect", p.inspect),
            ("insert", p.insert),
        ] {
            assert!(!d.is_zero(), "{name} ran: {p:?}");
        }
        for (name, d) in [
            ("decode", p.decode),
            ("resize", p.resize),
            ("encode", p.encode),
            ("phash", p.phash),
        ] {
            assert!(d.is_zero(), "{name} did not run without thumbs: {p:?}");
        }

        // The same images for thumbnails (read again: none has one yet).
        opts.thumbs = Some(ThumbOptions::default());
        let thumbs = index(
            &roots,
            &PlanOptions::default(),
            &opts,
            &seekless_core::Quiet,
        )
        .unwrap();
        let p = thumbs.phases;
        assert_eq!((thumbs.thumbs, p.rows), (3, 3));
        for (name, d) in [
            ("hash", p.hash),
            ("decode", p.decode),
            ("resize", p.resize),
            ("encode", p.encode),
            ("phash", p.phash),
            ("insert", p.insert),
        ] {
            assert!(!d.is_zero(), "{name} ran: {p:?}");
        }

        // Nothing to read: every clock of the read stays at zero.
        let again = index(
            &roots,
            &PlanOptions::default(),
            &opts,
            &seekless_core::Quiet,
        )
        .unwrap();
        let p = again.phases;
        assert_eq!(again.unchanged, 3);
        assert_eq!(
            (p.rows, p.decode, p.hash),
            (0, Duration::ZERO, Duration::ZERO)
        );
    }

    /// Collects what a run reports.
    #[derive(Default)]
    struct Said(std::sync::Mutex<Vec<String>>);

    impl Reporter for Said {
        fn error(&self, err: &Error) {
            seekless_sys::sync::lock(&self.0).push(format!("error {err}"));
        }
        fn warning(&self, path: Option<&Path>, what: &str) {
            seekless_sys::sync::lock(&self.0).push(format!("warning {path:?}: {what}"));
        }
    }

    #[test]
    fn rows_under_an_empty_directory_of_another_device_are_kept_as_a_vanished_mount() {
        let t = tempfile::tempdir().unwrap();
        let (mnt, emptied, full) = (
            t.path().join("mnt"),
            t.path().join("emptied"),
            t.path().join("full"),
        );
        for d in [&mnt, &emptied, &full] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(full.join("other.gif"), b"x").unwrap();
        let meta = std::fs::metadata(t.path()).unwrap();
        let here = seekless_sys::file_id(t.path(), None, &meta).unwrap().dev;
        let elsewhere = here.wrapping_add(1);
        let bytes = |p: PathBuf| path_to_bytes(&p).into_owned();
        let paths = [
            bytes(mnt.join("a.gif")),
            bytes(mnt.join("deep/er/b.gif")),
            bytes(emptied.join("c.gif")),
            bytes(full.join("d.gif")),
        ];
        let gone: Vec<(&[u8], u64, i64)> = vec![
            // Another device under an empty directory: a drive not mounted.
            (&paths[0], elsewhere, 1),
            (&paths[1], elsewhere, 2),
            // The same device: files deleted, the directory emptied.
            (&paths[2], here, 3),
            // Another device, but the directory is not empty: deleted.
            (&paths[3], elsewhere, 4),
        ];
        let said = Said::default();
        let kept = vanished_mounts(&gone, false, &said);
        assert_eq!(kept, HashSet::from([1, 2]));
        let said = seekless_sys::sync::into_inner(said.0);
        assert_eq!(said.len(), 1, "one error per directory: {said:?}");
        assert!(
            said[0].contains("mnt") && said[0].contains("with 2 rows"),
            "{said:?}"
        );

        let said = Said::default();
        assert!(vanished_mounts(&gone, true, &said).is_empty(), "--prune");
        let said = seekless_sys::sync::into_inner(said.0);
        assert!(
            said[0].starts_with("warning") && said[0].contains("--prune"),
            "{said:?}"
        );
    }
}
