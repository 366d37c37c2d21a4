//! An image catalog in SQLite, read in physical order: what seekless was born for.
//!
//! [`index`] walks and plans like every job, decides from the catalog what must be read
//! (new or changed files; moved files only change path; files gone are removed), reads
//! those in physical order with the queue full, hashes each whole (BLAKE3) while keeping
//! its first bytes for the header and EXIF ([`inspect`](inspect::inspect)), and writes
//! rows from one writer thread in batched transactions. The schema and example queries
//! are in `docs/index.md`.
//!
//! ```
//! use seekless::{PlanOptions, Quiet};
//! use seekless::jobs::index::{IndexOptions, index};
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

mod catalog;
pub mod inspect;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use catalog::{Catalog, Known, Row};
pub use catalog::{CatalogError, SCHEMA_VERSION};

use crate::error::Error;
use crate::path_bytes::path_to_bytes;
use crate::plan::{Plan, PlanOptions, PlannedFile};
use crate::read::{ReadOptions, ReadStats, Reader};
use crate::report::Reporter;

/// The extensions of the files catalogued by default (case-insensitive).
pub const IMAGE_EXTENSIONS: &[&str] = &[
    "jpg", "jpeg", "png", "gif", "webp", "tif", "tiff", "bmp", "heic", "heif", "avif", "dng",
    "cr2", "nef", "arw", "orf", "rw2", "pef",
];

/// Bytes of a file kept for parsing its header and EXIF (the whole file when smaller):
/// EXIF in TIFF-based raw files may lie anywhere in it.
const KEEP: usize = 32 << 20;

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
}

impl IndexOptions {
    /// Options for the catalog at `db`, with default reading.
    pub fn new(db: impl Into<PathBuf>) -> Self {
        Self {
            db: db.into(),
            rehash: false,
            read: ReadOptions::default(),
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
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
}

/// Why a run could not happen at all (per-file problems are rows with an error instead).
#[derive(Debug, thiserror::Error)]
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
}

/// What [`index_with`] tells its caller as it goes; all optional.
pub trait IndexEvents: Send {
    /// The plan of the files to read is about to be read.
    fn reading(&mut self, plan: &Arc<Plan>) {
        let _ = plan;
    }
    /// One file was read (or failed).
    fn file_done(&mut self, file: &PlannedFile) {
        let _ = file;
    }
    /// The read is over.
    fn read_done(&mut self, stats: &ReadStats, took: Duration) {
        let _ = (stats, took);
    }
}

struct NoEvents;
impl IndexEvents for NoEvents {}

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
    let mut catalog = Catalog::open(&opts.db)?;
    let own = own_files(&opts.db);
    let plan = Plan::build(inputs, plan_opts, reporter);
    let mut summary = IndexSummary::default();

    // Decide per file: unchanged, moved, or to be read.
    let mut known = catalog.known()?;
    let walked: HashSet<Vec<u8>> = plan
        .files()
        .iter()
        .map(|f| path_to_bytes(&f.entry.path).into_owned())
        .collect();
    // Rows of paths the walk did not find, by identity: candidates for moves.
    let mut gone: HashMap<(u64, u64, u64, i64), i64> = HashMap::new();
    for (bytes, k) in &known {
        if !walked.contains(bytes) && k.read {
            gone.insert((k.dev, k.ino, k.size, k.mtime_ns), k.id);
        }
    }
    let mut to_read: HashSet<u32> = HashSet::new();
    let mut is_new: HashSet<u32> = HashSet::new();
    let mut moved: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut moved_ids: HashSet<i64> = HashSet::new();
    for (i, f) in plan.files().iter().enumerate() {
        if is_own(&own, f) {
            reporter.skipped(&f.entry.path, "the catalog itself");
            continue;
        }
        summary.seen += 1;
        let bytes = path_to_bytes(&f.entry.path);
        let mtime = mtime_ns(f.entry.modified);
        let same = |k: &Known| {
            k.read
                && (k.dev, k.ino, k.size, k.mtime_ns)
                    == (f.entry.id.dev, f.entry.id.ino, f.entry.size, mtime)
        };
        match known.get(bytes.as_ref()) {
            Some(k) if same(k) && !opts.rehash => summary.unchanged += 1,
            Some(_) => {
                summary.changed += 1;
                to_read.insert(i as u32);
            }
            None => {
                let key = (f.entry.id.dev, f.entry.id.ino, f.entry.size, mtime);
                match gone.remove(&key) {
                    Some(id) if !opts.rehash => {
                        summary.moved += 1;
                        moved_ids.insert(id);
                        moved.push((id, bytes.into_owned()));
                    }
                    _ => {
                        summary.added += 1;
                        to_read.insert(i as u32);
                        is_new.insert(i as u32);
                    }
                }
            }
        }
    }
    // Rows of files gone from under the scanned paths (and not moved) are removed.
    let roots: Vec<Vec<u8>> = inputs
        .iter()
        .map(|p| path_to_bytes(p).into_owned())
        .collect();
    let removed: Vec<i64> = known
        .iter()
        .filter(|(bytes, k)| {
            !walked.contains(*bytes)
                && !moved_ids.contains(&k.id)
                && roots.iter().any(|r| under(bytes, r))
        })
        .map(|(_, k)| k.id)
        .collect();
    summary.removed = removed.len() as u64;
    catalog.relocate(&moved, &removed)?;
    known.clear();
    known.shrink_to_fit();

    // Read what must be read, in physical order; one writer thread writes the rows.
    let plan = Arc::new(plan.retain(|i, _| to_read.contains(&i)));
    events.reading(&plan);
    let started = Instant::now();
    let (tx, rx) = crossbeam_channel::bounded::<Row>(1024);
    let written = std::thread::scope(|s| {
        let writer = s.spawn(|| catalog.write_all(rx.into_iter()));
        let events = std::sync::Mutex::new(&mut *events);
        let counts = std::sync::Mutex::new((0u64, 0u64, 0u64));
        let stats = Reader::new(plan.clone(), opts.read.clone()).par_for_each(
            opts.workers,
            |planned, item| {
                let (row, read) = read_one(planned, item, reporter);
                {
                    let mut c = crate::sync::lock(&counts);
                    if read {
                        c.0 += 1;
                        c.1 += planned.entry.size;
                    }
                    if row.info.error.is_some() {
                        c.2 += 1;
                    }
                }
                crate::sync::lock(&events).file_done(planned);
                // Fails only when the writer stopped on a database error, returned below.
                let _ = tx.send(row);
            },
        );
        drop(tx);
        let (files, bytes, failed) = crate::sync::into_inner(counts);
        summary.read_files = files;
        summary.read_bytes = bytes;
        summary.failed = failed;
        crate::sync::into_inner(events).read_done(&stats, started.elapsed());
        match writer.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    written?;
    catalog.finish(&summary)?;
    Ok(summary)
}

/// Reads one file whole: its BLAKE3 hash, and what its bytes say. Returns its row and
/// whether it could be read.
fn read_one(
    planned: &PlannedFile,
    item: Result<crate::read::FileReader, Error>,
    reporter: &dyn Reporter,
) -> (Row, bool) {
    thread_local! {
        static HEAD: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let entry = &planned.entry;
    let ext = entry
        .path
        .extension()
        .map(|e| e.to_string_lossy().into_owned());
    let mut row = Row {
        path_bytes: path_to_bytes(&entry.path).into_owned(),
        dev: entry.id.dev,
        ino: entry.id.ino,
        size: entry.size,
        mtime_ns: mtime_ns(entry.modified),
        info: inspect::ImageInfo::default(),
        blake3: None,
    };
    let read = HEAD.with(|head| {
        let mut head = head.borrow_mut();
        head.clear();
        let mut hasher = blake3::Hasher::new();
        let result = item.and_then(|file| {
            file.read_to_end_with(|chunk| {
                hasher.update(chunk);
                let room = KEEP.saturating_sub(head.len());
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
            })
        });
        match result {
            Ok(_) => {
                row.info = inspect::inspect(&head, ext.as_deref());
                row.blake3 = Some(hasher.finalize().to_hex().to_string());
                if let Some(why) = &row.info.error {
                    let why = std::io::Error::other(why.clone());
                    reporter.error(&Error::io(&*entry.path, why));
                }
                true
            }
            Err(e) => {
                reporter.error(&e);
                row.info.error = Some(e.kind().to_string());
                false
            }
        }
    });
    // Keep big buffers from one huge file from staying with the thread.
    HEAD.with(|head| {
        let mut head = head.borrow_mut();
        if head.capacity() > 4 << 20 {
            *head = Vec::new();
        }
    });
    (row, read)
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

/// Whether `path` is `root` or lies under it.
fn under(path: &[u8], root: &[u8]) -> bool {
    let root = match root {
        [rest @ .., b'/'] if !rest.is_empty() => rest,
        r => r,
    };
    path == root || (path.starts_with(root) && path.get(root.len()) == Some(&b'/')) || root == b"/"
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
    fn paths_under_a_root_are_its_own_and_its_descendants() {
        assert!(under(b"/a/b/c.jpg", b"/a/b"));
        assert!(under(b"/a/b/c.jpg", b"/a/b/"));
        assert!(under(b"/a/b", b"/a/b"));
        assert!(!under(b"/a/bc/d.jpg", b"/a/b"));
        assert!(under(b"/x.jpg", b"/"));
        assert!(!under(b"other/x.jpg", b"dir"));
    }
}
