//! The SQLite catalog: schema, the one-writer lock, what is known from earlier runs, and
//! batched writes. The schema is documented in `docs/index.md`.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::RecvTimeoutError;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::formats;
use super::inspect::ImageInfo;
use super::thumb::Visual;
use seekless_jobs::destructive::Forget;
use seekless_sys as os;

/// The schema's version (`PRAGMA user_version`). Version 2 stores paths absolute; a
/// version-1 catalog is upgraded in place, in one transaction, when opened (see
/// `upgrade_v1`). Version 3 adds `images.phash` and the `thumbs` table (see
/// `UPGRADE_V2`), also in place. Version 4 adds what a phone's or camera's library needs
/// (`kind`, `duration`, `codec`, `rotation`, `content_id`; see `upgrade_v3`) and the
/// XMP sidecars (the `sidecars` table and `images.sidecar`; see `V4_SIDECARS`). Version 5 adds
/// the `decisions` table (see `V5_DECISIONS`). Version 6 writes `taken` in one form (see
/// `upgrade_v5`: stored dates rewritten in place).
pub const SCHEMA_VERSION: i64 = 6;

/// `PRAGMA application_id` of a seekless catalog ("SKLS"): what tells a catalog from any
/// other SQLite database. Catalogs made before it was set (schema versions 1 and 2) are
/// recognised by their exact schema and marked when first opened.
pub const APPLICATION_ID: i32 = i32::from_be_bytes(*b"SKLS");

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS scans (
    id        INTEGER PRIMARY KEY,
    started   TEXT NOT NULL,
    ended     TEXT,
    seen      INTEGER NOT NULL DEFAULT 0,
    added     INTEGER NOT NULL DEFAULT 0,
    changed   INTEGER NOT NULL DEFAULT 0,
    moved     INTEGER NOT NULL DEFAULT 0,
    unchanged INTEGER NOT NULL DEFAULT 0,
    removed   INTEGER NOT NULL DEFAULT 0,
    failed    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS images (
    id            INTEGER PRIMARY KEY,
    path          TEXT NOT NULL,
    path_bytes    BLOB NOT NULL UNIQUE,
    dev           INTEGER NOT NULL,
    ino           INTEGER NOT NULL,
    size          INTEGER NOT NULL,
    mtime_ns      INTEGER NOT NULL,
    format        TEXT,
    ext_mismatch  INTEGER NOT NULL DEFAULT 0,
    width         INTEGER,
    height        INTEGER,
    taken         TEXT,
    make          TEXT,
    model         TEXT,
    lens          TEXT,
    orientation   INTEGER,
    exposure_time REAL,
    f_number      REAL,
    iso           INTEGER,
    focal_length  REAL,
    gps_lat       REAL,
    gps_lon       REAL,
    gps_alt       REAL,
    blake3        TEXT,
    error         TEXT,
    scan          INTEGER NOT NULL REFERENCES scans(id)
);
CREATE INDEX IF NOT EXISTS images_file   ON images(dev, ino);
CREATE INDEX IF NOT EXISTS images_blake3 ON images(blake3);
CREATE INDEX IF NOT EXISTS images_taken  ON images(taken);
";

/// What version 3 adds to [`SCHEMA`] (the perceptual hash and the thumbnails). Every
/// catalog gets it the same way, new ones too, so that all have the same schema text:
/// `ALTER TABLE` rewrites the table's recorded SQL. The column is added only where missing
/// (see `upgrade_v2`).
const UPGRADE_V2: &str = "
CREATE TABLE IF NOT EXISTS thumbs (
    image        INTEGER PRIMARY KEY REFERENCES images(id) ON DELETE CASCADE,
    size         INTEGER NOT NULL,
    width        INTEGER,
    height       INTEGER,
    thumb_source TEXT,
    jpeg         BLOB,
    error        TEXT
);
";

/// The columns version 4 adds to `images`, with their types (see [`upgrade_v3`]).
const V4_COLUMNS: &[(&str, &str)] = &[
    ("kind", "TEXT"),
    ("duration", "REAL"),
    ("codec", "TEXT"),
    ("rotation", "INTEGER"),
    ("content_id", "TEXT"),
    // The row's XMP sidecar (its fields are the sidecar's row): set after the sidecar is
    // written, cleared when it goes.
    ("sidecar", "INTEGER REFERENCES sidecars(id)"),
];

/// The XMP sidecars version 4 adds (see [`upgrade_v3`]): one row per sidecar file found,
/// whether or not its image is catalogued, with what it says of its image. `keywords`
/// and `hierarchical_keywords` are JSON arrays of strings (`json_each` reads them); NULL
/// when the sidecar has none. An image's row points at its sidecar (`images.sidecar`).
const V4_SIDECARS: &str = "
CREATE TABLE IF NOT EXISTS sidecars (
    id                    INTEGER PRIMARY KEY,
    path                  TEXT NOT NULL,
    path_bytes            BLOB NOT NULL UNIQUE,
    dev                   INTEGER NOT NULL,
    size                  INTEGER NOT NULL,
    mtime_ns              INTEGER NOT NULL,
    rating                INTEGER,
    label                 TEXT,
    keywords              TEXT,
    hierarchical_keywords TEXT,
    title                 TEXT,
    error                 TEXT,
    scan                  INTEGER NOT NULL REFERENCES scans(id)
);
";

/// What version 4 adds besides its columns: the links between files that belong together
/// (`pairs`, a view: always what the rows say, never stale, nothing to remove), and the
/// indexes that make it fast.
///
/// - `raw+jpeg`: a camera raw file and the JPEG (or HEIF) the camera wrote beside it: one
///   directory, one name but for the extension (any case), one capture time (to the second).
/// - `live-photo`: a Live Photo's still and its video: one Apple content identifier.
/// - `export`: a HEIF and a JPEG made from it: one capture time (to the second), one
///   camera (make and model, both known), anywhere; the HEIF is the original.
///
/// A name's stem is its path with the trailing letters and digits trimmed (`/p/IMG_1.CR2`
/// and `/p/IMG_1.jpg` both `/p/IMG_1.`), as an indexed expression.
const UPGRADE_V3: &str = "
CREATE INDEX IF NOT EXISTS images_stem ON images(lower(rtrim(path,
    'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')))
    WHERE kind IN ('raw', 'image');
CREATE INDEX IF NOT EXISTS images_content_id ON images(content_id)
    WHERE content_id IS NOT NULL;
CREATE VIEW IF NOT EXISTS pairs (a, b, link) AS
    SELECT r.id, j.id, 'raw+jpeg' FROM images r JOIN images j
        ON lower(rtrim(j.path, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'))
         = lower(rtrim(r.path, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'))
        AND j.kind IN ('raw', 'image')
    WHERE r.kind = 'raw' AND j.format IN ('jpeg', 'heif') AND j.id != r.id
        AND substr(r.taken, 1, 19) = substr(j.taken, 1, 19)
    UNION ALL
    SELECT i.id, v.id, 'live-photo' FROM images i JOIN images v ON v.content_id = i.content_id
    WHERE i.kind = 'image' AND v.kind = 'video'
    UNION ALL
    SELECT h.id, j.id, 'export' FROM images h JOIN images j
        ON substr(j.taken, 1, 19) = substr(h.taken, 1, 19)
    WHERE h.format = 'heif' AND h.kind = 'image' AND j.format = 'jpeg' AND j.kind = 'image'
        AND h.make = j.make AND h.model = j.model AND length(h.taken) >= 19;
";

/// What version 5 adds: the user's decisions about duplicate groups (`seekless dupes
/// --apply`, `--undecide`), keyed by content so that they survive moves and re-runs.
/// `contents` is the sorted BLAKE3s (hex) of the files the decision covers, separated by
/// one space; `decision` is `keep-all`, `not-duplicates` or `keeper`; a `keeper` decision
/// names the kept content (`keeper`) and, for when several files have it, the kept file's
/// path (`keeper_path`, its bytes). One decision of each kind per set of contents: a newer
/// one replaces it.
const V5_DECISIONS: &str = "
CREATE TABLE IF NOT EXISTS decisions (
    id          INTEGER PRIMARY KEY,
    decision    TEXT NOT NULL CHECK (decision IN ('keep-all', 'not-duplicates', 'keeper')),
    contents    TEXT NOT NULL,
    keeper      TEXT,
    keeper_path BLOB,
    made        TEXT NOT NULL,
    UNIQUE (decision, contents)
);
";

/// Rows per transaction, at most. [`BATCH_TIME`] is the loss bound; this only caps the
/// work one commit writes. Each commit writes every page its rows dirtied, and a row of a
/// file never seen lands on a random page of the content-hash index: 4,096 rows share
/// those pages' writes eight times as often as 512 did (tiny files: 1.4× the rows per
/// second, bench/RESULTS.md).
pub(crate) const BATCH_ROWS: usize = 4096;

/// SQLite's page cache, in KiB (its default is 2,000): enough that a batch's pages and
/// the indexes' inner pages stay cached between batches rather than being read again and
/// spilled to the log mid-transaction. It grows only as the catalog does.
const CACHE_KIB: i64 = 32 << 10;
/// Time one transaction may stay open, at most: a crash loses no more than this.
const BATCH_TIME: Duration = Duration::from_secs(1);

/// How long one write waits, in all, for the catalog's write lock while another program
/// holds it (a database browser, a script in `BEGIN IMMEDIATE`), before the run stops with
/// an error, keeping every row committed before. Each wait starts again from zero: a lock
/// held 50 s, released, then taken again for 50 s is waited out twice.
pub const LOCK_WAIT: Duration = Duration::from_secs(60);

/// SQLite's own wait for the lock in one attempt ([`LOCK_WAIT`] is made of these): between
/// two, the holder is looked up again.
const LOCK_TRY: Duration = Duration::from_secs(2);

/// Why the catalog cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// Another `seekless index`, or a `seekless dupes` recording decisions or acting, is
    /// writing it.
    #[error("{}: the catalog is being written by another seekless run (an index, or a dupes recording decisions or acting)", .0.display())]
    Busy(
        /// The catalog.
        PathBuf,
    ),
    /// It was made by a newer seekless.
    #[error("{}: catalog schema version {version} is newer than this seekless knows ({SCHEMA_VERSION})", .path.display())]
    NewerSchema {
        /// The catalog.
        path: PathBuf,
        /// Its schema version.
        version: i64,
    },
    /// It is not a seekless catalog (another application's database, or not SQLite at
    /// all): refused, and left exactly as it was.
    #[error("{}: {why}: not a seekless catalog, left untouched", .path.display())]
    NotCatalog {
        /// The file given as the catalog.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// It cannot be opened, created or written.
    #[error("{}: {}", .path.display(), describe(&**.source))]
    Io {
        /// The catalog.
        path: PathBuf,
        /// What went wrong: a [`rusqlite::Error`] or a [`std::io::Error`] (downcast to
        /// tell which).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// It is an SQLite database without an application id that SQLite cannot read
    /// (damaged, or locked in a way a reader cannot wait out): neither known to be a
    /// seekless catalog nor known not to be one, so it is left exactly as it was.
    #[error("{}: cannot tell whether it is a seekless catalog: {}", .path.display(), describe(&**.source))]
    Unreadable {
        /// The file given as the catalog.
        path: PathBuf,
        /// What SQLite said: a [`rusqlite::Error`].
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Another program held the catalog's write lock for a minute in all: the run stopped.
    /// Every row committed before is kept.
    #[error("{}: the catalog stayed locked by {holder} for {} s: stopped (rows committed before are kept; the next run goes on from them)", .path.display(), .waited.as_secs())]
    Locked {
        /// The catalog.
        path: PathBuf,
        /// Who held the lock: "PID N (command line)", or "another program".
        holder: String,
        /// How long this run waited.
        waited: Duration,
    },
    /// The thread that writes the catalog's rows could not be started (threads are
    /// scarce: a pids or address-space limit); nothing was read.
    #[error("{}: cannot start the catalog's writer thread: {}", .path.display(), seekless_sys::describe_io(.source))]
    WriterThread {
        /// The catalog.
        path: PathBuf,
        /// Why the thread could not be started.
        #[source]
        source: std::io::Error,
    },
}

impl CatalogError {
    /// An [`Io`](Self::Io) error of the catalog at `path`.
    fn io(path: &Path, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        CatalogError::Io {
            path: path.to_path_buf(),
            source: source.into(),
        }
    }
}

/// An error under a [`CatalogError`] as one line: SQLite's own message without the SQL it
/// was about, the operating system's description of an I/O error without "(os error N)".
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(e) = e.downcast_ref::<rusqlite::Error>() {
        one_line(e)
    } else if let Some(e) = e.downcast_ref::<std::io::Error>() {
        seekless_sys::describe_io(e)
    } else {
        e.to_string()
    }
}

/// Begins a write transaction on `conn`, the catalog at `path`: `BEGIN IMMEDIATE`, so the
/// write lock is taken before anything is written (in WAL mode a commit then never waits).
/// While another program holds the lock, `waiting` hears who (again when that changes),
/// and the attempt is repeated for up to [`LOCK_WAIT`] in all; then the run stops
/// ([`CatalogError::Locked`]).
fn begin<'c>(
    conn: &'c Connection,
    path: &Path,
    waiting: &dyn Fn(&str),
) -> Result<rusqlite::Transaction<'c>, CatalogError> {
    let started = Instant::now();
    let mut told: Option<String> = None;
    loop {
        let e = match rusqlite::Transaction::new_unchecked(
            conn,
            rusqlite::TransactionBehavior::Immediate,
        ) {
            Ok(tx) => {
                if told.is_some() {
                    waiting(&format!(
                        "the catalog's lock was released after {} s: writing on",
                        started.elapsed().as_secs()
                    ));
                }
                return Ok(tx);
            }
            Err(e) => e,
        };
        if !is_busy(&e) {
            return Err(CatalogError::io(path, e));
        }
        let holder = lock_holder(path);
        let waited = started.elapsed();
        if waited >= LOCK_WAIT {
            return Err(CatalogError::Locked {
                path: path.to_path_buf(),
                holder,
                waited,
            });
        }
        if told.as_ref() != Some(&holder) {
            waiting(&format!(
                "the catalog is locked by {holder}: waiting for it (up to {} s in all, then \
                 the run stops)",
                LOCK_WAIT.as_secs()
            ));
            told = Some(holder);
        }
    }
}

/// Whether SQLite gave up waiting for a lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Who holds the write lock of the catalog at `path`, as "PID N (its command line)", or
/// "another program" where that cannot be known. SQLite locks with POSIX (`fcntl`) locks:
/// in WAL mode the writer's is byte 120 of the `-shm` file, in rollback mode a write lock
/// on the database file.
fn lock_holder(path: &Path) -> String {
    lock_holder_pid(path)
        .map(|pid| match os::command_of(pid) {
            Some(command) => format!("PID {pid} ({command})"),
            None => format!("PID {pid}"),
        })
        .unwrap_or_else(|| "another program".to_string())
}

/// The process holding a POSIX write lock on the catalog's database or `-shm` file (the
/// WAL writer's byte first), other than this one.
fn lock_holder_pid(path: &Path) -> Option<u32> {
    let mut shm = path.as_os_str().to_owned();
    shm.push("-shm");
    let own = std::process::id();
    let writes = |p: &Path| {
        os::locks_on(p)
            .into_iter()
            .filter(|l| l.kind == os::LockKind::Posix && l.write && l.pid != own)
            .collect::<Vec<_>>()
    };
    let on_shm = writes(Path::new(&shm));
    on_shm
        .iter()
        .find(|l| l.start == "120")
        .or(on_shm.first())
        .or(writes(path).first())
        .map(|l| l.pid)
}

/// What an earlier run recorded about a path.
#[derive(Clone, Debug)]
pub(crate) struct Known {
    pub id: i64,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    /// The file was read (its content hash is known) by the last run that looked at it;
    /// rows of files that could not be read are retried (those that keep the fields of an
    /// earlier read too: their error starts with [`READ_FAILED`]).
    pub read: bool,
    /// The longest side of its thumbnail (or of the thumbnail's recorded failure), if any.
    pub thumb_size: Option<u32>,
    /// The id of its XMP sidecar's row, if it has one.
    pub sidecar: Option<i64>,
    /// This run's walk found the path.
    pub seen: bool,
}

impl Known {
    /// Device, inode, size and mtime (as SQLite stores them).
    pub fn identity(&self) -> [i64; 4] {
        [
            self.dev as i64,
            self.ino as i64,
            self.size as i64,
            self.mtime_ns,
        ]
    }
}

/// One row to write.
pub(crate) struct Row {
    pub path_bytes: Vec<u8>,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub info: ImageInfo,
    pub blake3: Option<String>,
    /// The thumbnail asked for (its longest side) and what came of it; `None` when no
    /// thumbnail was asked for (one kept from an earlier run stays if the content is the
    /// same, by BLAKE3; otherwise it goes).
    pub visual: Option<(u32, Visual)>,
}

/// What an earlier run recorded about an XMP sidecar.
#[derive(Clone, Debug)]
pub(crate) struct KnownSidecar {
    pub id: i64,
    pub dev: u64,
    /// `None` in a row written before version 5 recorded it: read again once.
    pub ino: Option<u64>,
    pub size: u64,
    pub mtime_ns: i64,
    /// Its fields are from a read of the file as it was (size and mtime); one whose read
    /// failed (its error starts with [`READ_FAILED`]) is read again.
    pub read: bool,
    /// This run's walk found the path.
    pub seen: bool,
}

/// One XMP sidecar's row to write.
pub(crate) struct SidecarRow {
    pub path_bytes: Vec<u8>,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    /// What it says; `None` when it could not be read (the row keeps what an earlier read
    /// found, and `error` says what failed, after [`READ_FAILED`]).
    pub fields: Option<super::inspect::SidecarFields>,
    pub error: Option<String>,
}

/// One row to write: an image's or a sidecar's.
// Images are nearly every record: boxing their rows would cost an allocation per image to
// spare the few sidecars a few hundred bytes each in the writer's queue.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Record {
    Image(Row),
    Sidecar(SidecarRow),
}

/// The open catalog, locked for writing by this process.
pub(crate) struct IndexWriter {
    conn: Connection,
    path: PathBuf,
    /// Holds the writer lock (an OS lock on the database file, released on close or
    /// death).
    _lock: File,
    pub scan: i64,
    /// Rows per transaction, at most ([`BATCH_ROWS`] unless the caller said).
    pub batch_rows: usize,
}

/// The writer lock on a catalog, taken before anything else and held until the run ends;
/// the database itself is opened later ([`WriterLock::open`]), after the walk: a walk that
/// opens and closes the database's files (with `--all-files`, the catalog inside the
/// tree) would otherwise drop the POSIX locks SQLite holds on them (closing any
/// descriptor of a file drops all of a process's `fcntl` locks on it). The writer lock is
/// an `flock`-style lock, tied to its own open file, so such a close leaves it alone.
pub(crate) struct WriterLock {
    path: PathBuf,
    file: File,
    /// What the file was when the lock was taken.
    found: Found,
}

/// What the file given as the catalog is, as far as taking it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// Missing or empty (0 bytes): a new catalog.
    New,
    /// A seekless catalog (marked, or recognised by its exact schema).
    Catalog,
}

/// What an SQLite database holds, as far as telling a catalog goes.
struct Contents {
    application_id: i32,
    user_version: i64,
    schema: Schema,
}

/// How a database's schema compares with the catalog's.
enum Schema {
    /// No tables, indexes or views at all.
    Empty,
    /// Every table and index of [`SCHEMA`], exactly (anything the user added beside them
    /// is left alone).
    Catalog,
    /// Something else: the names of its tables.
    Other(Vec<String>),
}

impl WriterLock {
    /// Takes the writer lock of the catalog at `path` (creating the file if needed), or
    /// fails at once if another `seekless index` holds it, or if the file is not a seekless
    /// catalog (then it is left exactly as it was).
    pub fn take(path: &Path) -> Result<WriterLock, CatalogError> {
        let io = |e: std::io::Error| CatalogError::io(path, e);
        // Looked at before anything is created or locked: a file that is not ours is not
        // even given a lock file beside it (Windows).
        let found = inspect(path)?;
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock_path(path))
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(WriterLock {
                path: path.to_path_buf(),
                file,
                found,
            }),
            Err(std::fs::TryLockError::WouldBlock) => Err(CatalogError::Busy(path.to_path_buf())),
            Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
        }
    }

    /// Opens the database (creating, upgrading or marking its schema) and starts a scan.
    /// While another program holds its write lock, `waiting` hears of it (see [`begin`]).
    pub fn open(self, waiting: &dyn Fn(&str)) -> Result<IndexWriter, CatalogError> {
        let conn = self.connect(waiting)?;
        let path = self.path.as_path();
        let io = |e: rusqlite::Error| CatalogError::io(path, e);
        let tx = begin(&conn, path, waiting)?;
        tx.execute("INSERT INTO scans (started) VALUES (?1)", [now()])
            .map_err(io)?;
        let scan = tx.last_insert_rowid();
        tx.commit().map_err(io)?;
        Ok(IndexWriter {
            conn,
            path: self.path,
            _lock: self.file,
            scan,
            batch_rows: BATCH_ROWS,
        })
    }

    /// Opens an existing catalog for what `seekless dupes` writes (decisions, and the rows
    /// of files it moved away), upgrading its schema as [`open`](Self::open) does; no
    /// scan is started. A missing or empty file is refused: `dupes` makes no catalog.
    pub fn open_for_dupes(self, waiting: &dyn Fn(&str)) -> Result<DupesWriter, CatalogError> {
        if self.found == Found::New {
            return Err(CatalogError::NotCatalog {
                path: self.path.clone(),
                why: "no catalog there (seekless index makes one)".into(),
            });
        }
        let conn = self.connect(waiting)?;
        Ok(DupesWriter {
            conn,
            path: self.path,
            _lock: self.file,
        })
    }

    /// Opens the database and creates, upgrades or marks its schema.
    fn connect(&self, waiting: &dyn Fn(&str)) -> Result<Connection, CatalogError> {
        let path = self.path.as_path();
        let io = |e: rusqlite::Error| CatalogError::io(path, e);
        let conn = Connection::open(path).map_err(io)?;
        conn.busy_timeout(LOCK_TRY).map_err(io)?;
        // The schema is created, upgraded or marked in one transaction: a crash leaves the
        // old one. What the file holds is looked at again inside it (it may have been
        // replaced during the walk), before anything is written; a new catalog gets its
        // mark in the same transaction, before WAL mode is set.
        let tx = begin(&conn, path, waiting)?;
        let contents = contents(&tx).map_err(io)?;
        let version = contents.user_version;
        judge(path, &contents, self.found == Found::New)?;
        if version > SCHEMA_VERSION {
            return Err(CatalogError::NewerSchema {
                path: path.to_path_buf(),
                version,
            });
        }
        if version == 1 {
            upgrade_v1(&tx).map_err(io)?;
        }
        tx.execute_batch(SCHEMA).map_err(io)?;
        upgrade_v2(&tx).map_err(io)?;
        upgrade_v3(&tx).map_err(io)?;
        upgrade_v4(&tx).map_err(io)?;
        if version < 6 {
            upgrade_v5(&tx).map_err(io)?;
        }
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(io)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(io)?;
        tx.commit().map_err(io)?;
        // WAL: readers never block the writer, and a crash leaves the last commit intact.
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
            .map_err(io)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(io)?;
        conn.pragma_update(None, "cache_size", -CACHE_KIB)
            .map_err(io)?;
        Ok(conn)
    }
}

/// A decision as the catalog stores it (see `V5_DECISIONS`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredDecision {
    pub id: i64,
    pub decision: String,
    /// Sorted BLAKE3s, hex, one space between.
    pub contents: String,
    pub keeper: Option<String>,
    pub keeper_path: Option<Vec<u8>>,
    pub made: String,
}

/// The catalog opened for what `seekless dupes` writes, locked for writing by this process
/// ([`WriterLock::open_for_dupes`]).
pub(crate) struct DupesWriter {
    conn: Connection,
    path: PathBuf,
    _lock: File,
}

impl DupesWriter {
    fn err(&self, e: rusqlite::Error) -> CatalogError {
        CatalogError::io(&self.path, e)
    }

    /// Records `decisions` (its `id` and `made` are ignored) in one transaction, each
    /// replacing the one of its kind on the same contents if there is one (the user's newer decision).
    /// Returns their ids.
    pub fn record(
        &mut self,
        decisions: &[StoredDecision],
        waiting: &dyn Fn(&str),
    ) -> Result<Vec<i64>, CatalogError> {
        let tx = begin(&self.conn, &self.path, waiting)?;
        let made = now();
        let mut ids = Vec::with_capacity(decisions.len());
        {
            let mut put = tx
                .prepare_cached(
                    "INSERT INTO decisions (decision, contents, keeper, keeper_path, made)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (decision, contents) DO UPDATE SET
                         keeper = excluded.keeper, keeper_path = excluded.keeper_path,
                         made = excluded.made
                     RETURNING id",
                )
                .map_err(|e| self.err(e))?;
            for d in decisions {
                let id: i64 = put
                    .query_row(
                        params![d.decision, d.contents, d.keeper, d.keeper_path, made],
                        |r| r.get(0),
                    )
                    .map_err(|e| self.err(e))?;
                ids.push(id);
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(ids)
    }

    /// Removes the decisions `ids` (the user's `--undecide`), in one transaction; returns
    /// the ids that were there.
    pub fn undecide(
        &mut self,
        ids: &[i64],
        waiting: &dyn Fn(&str),
    ) -> Result<Vec<i64>, CatalogError> {
        let tx = begin(&self.conn, &self.path, waiting)?;
        let mut gone = Vec::new();
        {
            let mut delete = tx
                .prepare_cached("DELETE FROM decisions WHERE id = ?1")
                .map_err(|e| self.err(e))?;
            for &id in ids {
                if delete.execute([id]).map_err(|e| self.err(e))? > 0 {
                    gone.push(id);
                }
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(gone)
    }

    /// Forgets the rows of files `dupes` moved away or put in the trash (proven gone: a
    /// [`Forget`]), with their thumbnails, in one transaction.
    pub fn forget(&mut self, gone: &Forget, waiting: &dyn Fn(&str)) -> Result<(), CatalogError> {
        if gone.len() == 0 {
            return Ok(());
        }
        let tx = begin(&self.conn, &self.path, waiting)?;
        forget_rows(&tx, gone).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }
}

/// Deletes the rows of `gone` and their thumbnails, inside the caller's transaction: the
/// one place image rows of files seen gone are deleted.
fn forget_rows(tx: &rusqlite::Transaction<'_>, gone: &Forget) -> rusqlite::Result<()> {
    let mut delete = tx.prepare_cached("DELETE FROM images WHERE id = ?1")?;
    let mut unthumb = tx.prepare_cached("DELETE FROM thumbs WHERE image = ?1")?;
    for id in gone.ids() {
        unthumb.execute([id])?;
        delete.execute([id])?;
    }
    Ok(())
}

/// The first 16 bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Tells whether the file at `path` may be used as the catalog, changing nothing: its
/// header is read as a plain file; only a database that carries no application id is
/// opened with SQLite, read-only, to compare its schema with the catalog's.
fn inspect(path: &Path) -> Result<Found, CatalogError> {
    use std::io::Read;
    let refuse = |why: String| CatalogError::NotCatalog {
        path: path.to_path_buf(),
        why,
    };
    let mut header = Vec::with_capacity(100);
    match File::open(path) {
        Ok(f) => f.take(100).read_to_end(&mut header),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::New),
        Err(e) => Err(e),
    }
    .map_err(|e| CatalogError::io(path, e))?;
    if header.is_empty() {
        return Ok(Found::New);
    }
    if header.len() < 100 || !header.starts_with(SQLITE_MAGIC) {
        return Err(refuse("not an SQLite database".into()));
    }
    // The header's application id (big-endian, at byte 68), as the database file holds
    // it; a newer one can only be in a write-ahead log, which never changes it from one
    // application's id to another's.
    let id = i32::from_be_bytes([header[68], header[69], header[70], header[71]]);
    if id == APPLICATION_ID {
        // A newer seekless's catalog is refused before the walk (and again when opened,
        // should the newer version be in the write-ahead log only).
        let version = i64::from(i32::from_be_bytes([
            header[60], header[61], header[62], header[63],
        ]));
        if version > SCHEMA_VERSION {
            return Err(CatalogError::NewerSchema {
                path: path.to_path_buf(),
                version,
            });
        }
        return Ok(Found::Catalog);
    }
    if id != 0 {
        return Err(refuse(format!(
            "an SQLite database of another application (application_id {id:#010x})"
        )));
    }
    // A database SQLite cannot read (damaged, or locked in a way a reader cannot wait out)
    // is neither known to be ours nor known not to be: an error, and it is left alone.
    let unknown = |e: rusqlite::Error| CatalogError::Unreadable {
        path: path.to_path_buf(),
        source: e.into(),
    };
    let conn = open_to_inspect(path).map_err(unknown)?;
    let contents = contents(&conn).map_err(unknown)?;
    drop(conn);
    judge(path, &contents, false)?;
    Ok(Found::Catalog)
}

/// Opens the catalog at `path` for reading only, for jobs that read it and never write it
/// (`seekless dupes`): looked at as [`WriterLock::take`] looks at it (a file that is not a
/// seekless catalog is refused, [`CatalogError::NotCatalog`], and left exactly as it was),
/// then opened read-only, creating nothing beside it (see `open_to_inspect`), and judged
/// again on that connection (the file could have changed in between). A missing file is
/// an [`CatalogError::Io`] error, an empty one is refused (neither holds a catalog to
/// read); a version-1 or -2 catalog is opened as it is, not upgraded. Returns the
/// connection and the catalog's schema version.
pub(crate) fn open_read_only(path: &Path) -> Result<(Connection, i64), CatalogError> {
    let io = |e: rusqlite::Error| CatalogError::io(path, e);
    if inspect(path)? == Found::New {
        return Err(match std::fs::metadata(path) {
            Ok(_) => CatalogError::NotCatalog {
                path: path.to_path_buf(),
                why: "an empty file".into(),
            },
            Err(e) => CatalogError::io(path, e),
        });
    }
    let conn = open_to_inspect(path).map_err(io)?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(io)?;
    let contents = contents(&conn).map_err(io)?;
    judge(path, &contents, false)?;
    if contents.user_version > SCHEMA_VERSION {
        return Err(CatalogError::NewerSchema {
            path: path.to_path_buf(),
            version: contents.user_version,
        });
    }
    Ok((conn, contents.user_version))
}

/// The catalog opened for reading only: every query of the schema outside the writer is
/// here, beside the schema it reads (`dupes` reads through it).
pub(crate) struct ReadOnly {
    conn: Connection,
    /// Version 3 and later: `images.phash` and the `thumbs` table exist.
    visual: bool,
    /// Version 4 and later: the `pairs` view exists.
    pairs: bool,
    /// Version 5 and later: the `decisions` table exists.
    decisions: bool,
}

/// A row's fields as finding duplicates needs them (every row with a content hash).
pub(crate) struct HashedRow {
    pub id: i64,
    pub size: u64,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub orientation: Option<u32>,
    pub taken: Option<String>,
    pub make: Option<String>,
    pub model: Option<String>,
    /// As stored: hex.
    pub blake3: String,
    pub phash: Option<i64>,
}

/// The rest of a row, for a file shown in a group.
pub(crate) struct RowDetail {
    pub path: String,
    pub path_bytes: Vec<u8>,
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i64,
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub orientation: Option<u32>,
    pub taken: Option<String>,
    pub make: Option<String>,
    pub model: Option<String>,
    pub format: Option<String>,
    pub blake3: String,
    pub phash: Option<i64>,
}

/// A stored thumbnail: the JPEG and its sides.
pub(crate) type StoredThumb = (Vec<u8>, u32, u32);

impl ReadOnly {
    /// Opens the catalog at `path` read-only ([`open_read_only`]).
    pub(crate) fn open(path: &Path) -> Result<ReadOnly, CatalogError> {
        let (conn, version) = open_read_only(path)?;
        Ok(ReadOnly {
            conn,
            visual: version >= 3,
            pairs: version >= 4,
            decisions: version >= 5,
        })
    }

    /// Every link of the `pairs` view between rows with a content hash: the two rows' ids
    /// and the link (`raw+jpeg`, `live-photo`, `export`). None before version 4.
    pub(crate) fn each_pair(&self, mut each: impl FnMut(i64, i64, String)) -> rusqlite::Result<()> {
        if !self.pairs {
            return Ok(());
        }
        let mut stmt = self.conn.prepare(
            "SELECT p.a, p.b, p.link FROM pairs p
                 JOIN images x ON x.id = p.a JOIN images y ON y.id = p.b
             WHERE x.blake3 IS NOT NULL AND y.blake3 IS NOT NULL",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            each(r.get(0)?, r.get(1)?, r.get(2)?);
        }
        Ok(())
    }

    /// Rows whose content hash is not known (files that could not be read).
    pub(crate) fn unhashed(&self) -> rusqlite::Result<u64> {
        self.conn
            .query_row(
                "SELECT count(*) FROM images WHERE blake3 IS NULL",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
    }

    /// Rows whose content hash is known.
    pub(crate) fn hashed(&self) -> rusqlite::Result<u64> {
        self.conn
            .query_row(
                "SELECT count(*) FROM images WHERE blake3 IS NOT NULL",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
    }

    /// Hands each row with a content hash to `each`, in no particular order.
    pub(crate) fn each_hashed(&self, mut each: impl FnMut(HashedRow)) -> rusqlite::Result<()> {
        let phash = if self.visual { "phash" } else { "NULL" };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT id, size, width, height, orientation, taken, make, model, blake3, {phash}
             FROM images WHERE blake3 IS NOT NULL"
        ))?;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
            each(HashedRow {
                id: r.get(0)?,
                size: r.get::<_, i64>(1)?.max(0) as u64,
                width: r.get(2).ok().flatten(),
                height: r.get(3).ok().flatten(),
                orientation: r.get(4).ok().flatten(),
                taken: r.get(5).ok().flatten(),
                make: r.get(6).ok().flatten(),
                model: r.get(7).ok().flatten(),
                blake3: r.get(8)?,
                phash: r.get(9)?,
            });
        }
        Ok(())
    }

    /// Row `id`'s path and fields.
    pub(crate) fn detail(&self, id: i64) -> rusqlite::Result<RowDetail> {
        let phash = if self.visual { "phash" } else { "NULL" };
        let mut s = self.conn.prepare_cached(&format!(
            "SELECT path, path_bytes, width, height, orientation, taken, make, model, format,
                    blake3, {phash}, dev, ino, mtime_ns
             FROM images WHERE id = ?1"
        ))?;
        s.query_row([id], |r| {
            Ok(RowDetail {
                path: r.get(0)?,
                path_bytes: r.get(1)?,
                width: r.get(2).ok().flatten(),
                height: r.get(3).ok().flatten(),
                orientation: r.get(4).ok().flatten(),
                taken: r.get(5).ok().flatten(),
                make: r.get(6).ok().flatten(),
                model: r.get(7).ok().flatten(),
                format: r.get(8).ok().flatten(),
                blake3: r.get(9)?,
                phash: r.get(10)?,
                dev: r.get::<_, i64>(11)? as u64,
                ino: r.get::<_, i64>(12)? as u64,
                mtime_ns: r.get(13)?,
            })
        })
    }

    /// The user's decisions, oldest first. None before version 5.
    pub(crate) fn decisions(&self) -> rusqlite::Result<Vec<StoredDecision>> {
        if !self.decisions {
            return Ok(Vec::new());
        }
        let mut s = self.conn.prepare(
            "SELECT id, decision, contents, keeper, keeper_path, made FROM decisions ORDER BY id",
        )?;
        let rows = s.query_map([], |r| {
            Ok(StoredDecision {
                id: r.get(0)?,
                decision: r.get(1)?,
                contents: r.get(2)?,
                keeper: r.get(3)?,
                keeper_path: r.get(4)?,
                made: r.get(5)?,
            })
        })?;
        rows.collect()
    }

    /// Image `id`'s stored thumbnail, if it has one.
    pub(crate) fn thumbnail(&self, id: i64) -> rusqlite::Result<Option<StoredThumb>> {
        if !self.visual {
            return Ok(None);
        }
        let mut s = self.conn.prepare_cached(
            "SELECT jpeg, width, height FROM thumbs WHERE image = ?1 AND jpeg IS NOT NULL",
        )?;
        s.query_row([id], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, Option<u32>>(1)?.unwrap_or(0),
                r.get::<_, Option<u32>>(2)?.unwrap_or(0),
            ))
        })
        .optional()
    }
}

/// Opens the database at `path` read-only, creating nothing beside it and changing nothing
/// in it. A read-only connection to a database in WAL mode still creates its `-wal` and
/// `-shm` files when they are missing, and leaves them: where there is neither a
/// write-ahead log nor a rollback journal (nothing half-written to take into account),
/// SQLite is told the file is immutable, and then opens nothing but the file.
fn open_to_inspect(path: &Path) -> rusqlite::Result<Connection> {
    let beside = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p).exists()
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if beside("-wal") || beside("-journal") {
        return Connection::open_with_flags(path, flags);
    }
    let absolute = std::path::absolute(path).map_err(|e| {
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(seekless_sys::describe_io(&e)),
        )
    })?;
    Connection::open_with_flags(immutable_uri(&absolute), flags | OpenFlags::SQLITE_OPEN_URI)
}

/// `file://PATH?immutable=1`, every byte of the path but unreserved ones and `/`
/// percent-encoded (RFC 3986; SQLite decodes them back).
fn immutable_uri(absolute: &Path) -> PathBuf {
    // Windows: `C:\x` becomes `file:///C:/x`.
    let bytes = seekless_sys::uri_path_bytes(absolute);
    let mut uri = String::from("file://");
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    PathBuf::from(uri)
}

/// What the database behind `conn` holds: its ids and how its schema compares with the
/// catalog's.
fn contents(conn: &Connection) -> rusqlite::Result<Contents> {
    let application_id = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let user_version = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let objects = schema_objects(conn)?;
    let has_all = |expected: Vec<SchemaObject>| expected.iter().all(|o| objects.contains(o));
    let mut catalog = false;
    for version in 2..=SCHEMA_VERSION {
        catalog = catalog || has_all(expected_schema(version)?);
    }
    let schema = if objects.is_empty() {
        Schema::Empty
    } else if catalog {
        Schema::Catalog
    } else {
        Schema::Other(
            objects
                .iter()
                .filter(|(kind, ..)| kind == "table")
                .map(|(_, name, _)| name.clone())
                .collect(),
        )
    };
    Ok(Contents {
        application_id,
        user_version,
        schema,
    })
}

/// A schema object: its type, its name, and its SQL with runs of white space made one
/// space (SQLite keeps the text as written).
type SchemaObject = (String, String, Option<String>);

/// Every table, index, view and trigger of the database behind `conn`, by name.
fn schema_objects(conn: &Connection) -> rusqlite::Result<Vec<SchemaObject>> {
    let mut stmt = conn.prepare("SELECT type, name, sql FROM sqlite_master ORDER BY name")?;
    let rows = stmt.query_map([], |r| {
        let sql: Option<String> = r.get(2)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            sql.map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")),
        ))
    })?;
    rows.collect()
}

/// The schema objects of a catalog of schema `version` (2: [`SCHEMA`]; 3: with
/// [`UPGRADE_V2`]; 4: with [`V4_COLUMNS`]), as SQLite records them.
fn expected_schema(version: i64) -> rusqlite::Result<Vec<SchemaObject>> {
    let mut conn = Connection::open_in_memory()?;
    conn.execute_batch(SCHEMA)?;
    if version >= 3 {
        let tx = conn.transaction()?;
        upgrade_v2(&tx)?;
        if version >= 4 {
            upgrade_v3(&tx)?;
        }
        if version >= 5 {
            upgrade_v4(&tx)?;
        }
        tx.commit()?;
    }
    schema_objects(&conn)
}

/// Whether a database holding `contents` may be used as the catalog: one with the catalog's
/// application id; one without it (made before it was set) whose schema is exactly the
/// catalog's at version 1, 2 or 3; or, when the file was empty when the run began (`new`), one
/// still empty.
fn judge(path: &Path, contents: &Contents, new: bool) -> Result<(), CatalogError> {
    let refuse = |why: String| {
        Err(CatalogError::NotCatalog {
            path: path.to_path_buf(),
            why,
        })
    };
    let id = contents.application_id;
    if id == APPLICATION_ID {
        return Ok(());
    }
    if id != 0 {
        return refuse(format!(
            "an SQLite database of another application (application_id {id:#010x})"
        ));
    }
    match &contents.schema {
        Schema::Empty if new && contents.user_version == 0 => Ok(()),
        Schema::Catalog if (1..=SCHEMA_VERSION).contains(&contents.user_version) => Ok(()),
        Schema::Catalog => refuse(format!(
            "an SQLite database with the catalog's tables but user_version {}",
            contents.user_version
        )),
        Schema::Empty => refuse("an SQLite database without tables".into()),
        Schema::Other(tables) if tables.is_empty() => {
            refuse("an SQLite database without the catalog's tables".into())
        }
        Schema::Other(tables) => refuse(format!(
            "an SQLite database whose tables ({}) are not the catalog's",
            tables.join(", ")
        )),
    }
}

/// An SQLite error as one line: SQLite's own message, without the SQL it was about (which
/// spans many lines).
fn one_line(e: &rusqlite::Error) -> String {
    let text = match e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Upgrades a version-1 catalog (paths as given: relative, or absolute through symbolic
/// links) to version 2 (paths absolute, each directory canonical), inside the caller's
/// transaction. A relative path is taken as relative to the current directory, as the run
/// that wrote it most likely was. A row's path is rewritten only when the file found at its
/// new path has the row's device and inode; the rest are left as they were (a relative one
/// is then never matched nor removed; `docs/index.md` says how to drop them). A row whose
/// new path already has a row of its own is a duplicate of it, and goes.
pub(crate) fn upgrade_v1(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    use seekless_sys::{path_from_bytes, path_to_bytes};
    let rows: Vec<(i64, Vec<u8>, i64, i64)> = {
        let mut stmt = tx.prepare("SELECT id, path_bytes, dev, ino FROM images")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    // Each directory made canonical once.
    let mut dirs: HashMap<PathBuf, Option<PathBuf>> = HashMap::new();
    let mut update =
        tx.prepare("UPDATE OR IGNORE images SET path = ?2, path_bytes = ?3 WHERE id = ?1")?;
    let mut delete = tx.prepare("DELETE FROM images WHERE id = ?1")?;
    for (id, bytes, dev, ino) in rows {
        let old = path_from_bytes(&bytes);
        let (Some(parent), Some(name)) = (old.parent(), old.file_name()) else {
            continue;
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        let dir = dirs
            .entry(parent.to_path_buf())
            .or_insert_with(|| std::fs::canonicalize(parent).ok());
        let Some(dir) = dir else { continue };
        let new = dir.join(name);
        let new_bytes = path_to_bytes(&new).into_owned();
        if new_bytes == bytes {
            continue;
        }
        let same_file = seekless_sys::symlink_metadata(&new).is_ok_and(|m| {
            seekless_sys::file_id(&new, None, &m)
                .is_ok_and(|id| id.dev == dev as u64 && id.ino == ino as u64)
        });
        if !same_file {
            continue;
        }
        if update.execute(params![id, display(&new_bytes), new_bytes])? == 0 {
            delete.execute([id])?;
        }
    }
    Ok(())
}

/// Upgrades a version-2 catalog (or one just made from [`SCHEMA`]) to version 3, inside
/// the caller's transaction: adds `images.phash` where missing and the `thumbs` table.
/// Running it again changes nothing.
/// Upgrades a version-4 catalog (or one just made by [`upgrade_v3`]) to version 5, inside
/// the caller's transaction: adds the `decisions` table ([`V5_DECISIONS`]) and the
/// sidecars' inode (`sidecars.ino`, where missing: a sidecar edited in place by a tool
/// that keeps its size and time, `exiftool -P`, writes a new file). A row written before
/// has none, and its sidecar is read again once. Running it again changes nothing.
pub(crate) fn upgrade_v4(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(V5_DECISIONS)?;
    let has_ino: bool = tx.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('sidecars') WHERE name = 'ino'",
        [],
        |r| r.get(0),
    )?;
    if !has_ino {
        tx.execute_batch("ALTER TABLE sidecars ADD COLUMN ino INTEGER;")?;
    }
    Ok(())
}

/// Upgrades a catalog of version 5 or before to version 6, inside the caller's
/// transaction: every stored `taken` is rewritten in the one form
/// ([`Taken`](super::taken::Taken): `Z` becomes `+00:00`, fractions three digits), and one
/// that is no date (a zero date, month 13) becomes NULL. Nothing else in the row changes.
/// Running it again changes nothing.
pub(crate) fn upgrade_v5(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let rows: Vec<(i64, String)> = {
        let mut stmt = tx.prepare("SELECT id, taken FROM images WHERE taken IS NOT NULL")?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?
    };
    let mut update = tx.prepare("UPDATE images SET taken = ?2 WHERE id = ?1")?;
    for (id, taken) in rows {
        let canonical = super::taken::Taken::iso(&taken).map(|t| t.to_string());
        if canonical.as_deref() != Some(taken.as_str()) {
            update.execute(rusqlite::params![id, canonical])?;
        }
    }
    Ok(())
}

pub(crate) fn upgrade_v2(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let has_phash: bool = tx.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('images') WHERE name = 'phash'",
        [],
        |r| r.get(0),
    )?;
    if !has_phash {
        tx.execute_batch("ALTER TABLE images ADD COLUMN phash INTEGER;")?;
    }
    tx.execute_batch(UPGRADE_V2)
}

/// Upgrades a version-3 catalog (or one just made by [`upgrade_v2`]) to version 4, inside
/// the caller's transaction: adds the `sidecars` table ([`V4_SIDECARS`]), the columns of
/// [`V4_COLUMNS`] where missing, and [`UPGRADE_V3`]'s view and indexes. Rows of a catalog
/// that had no `kind` get `kind = 'image'` where their fields were right
/// ([`formats::v3_right_sql`], from `formats::Format::v3`: HEIF sizes were an item's, raw
/// sizes a preview's);
/// the rest keep every field and are read again by the next run, which gives them their
/// kind (nothing is removed). A catalog made by a build of version 4 before sidecars gets
/// only what it lacks. Running it again changes nothing.
pub(crate) fn upgrade_v3(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(V4_SIDECARS)?;
    let mut added = false;
    for (name, kind) in V4_COLUMNS {
        let has: bool = tx.query_row(
            "SELECT count(*) > 0 FROM pragma_table_info('images') WHERE name = ?1",
            [name],
            |r| r.get(0),
        )?;
        if !has {
            tx.execute_batch(&format!("ALTER TABLE images ADD COLUMN {name} {kind};"))?;
            added |= *name == "kind";
        }
    }
    if added {
        tx.execute_batch(&format!(
            "UPDATE images SET kind = '{}' WHERE blake3 IS NOT NULL AND ({});",
            formats::Kind::Image.name(),
            formats::v3_right_sql()
        ))?;
    }
    tx.execute_batch("CREATE INDEX IF NOT EXISTS images_sidecar ON images(sidecar);")?;
    tx.execute_batch(UPGRADE_V3)
}

impl IndexWriter {
    /// Takes the writer lock of the catalog at `path` and opens it at once (for callers
    /// that do not walk in between).
    #[cfg(test)]
    pub fn open(path: &Path) -> Result<IndexWriter, CatalogError> {
        WriterLock::take(path)?.open(&|_| {})
    }

    fn err(&self, e: rusqlite::Error) -> CatalogError {
        CatalogError::io(&self.path, e)
    }

    /// Every row, by path bytes.
    pub fn known(&self) -> Result<HashMap<Vec<u8>, Known>, CatalogError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT i.path_bytes, i.id, i.dev, i.ino, i.size, i.mtime_ns,
                     i.blake3 IS NOT NULL AND substr(coalesce(i.error, ''), 1, ?1) IS NOT ?2
                         AND i.kind IS NOT NULL,
                     t.size, i.sidecar FROM images i LEFT JOIN thumbs t ON t.image = i.id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![READ_FAILED.len() as i64, READ_FAILED], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    Known {
                        id: r.get(1)?,
                        dev: r.get::<_, i64>(2)? as u64,
                        ino: r.get::<_, i64>(3)? as u64,
                        size: r.get::<_, i64>(4)? as u64,
                        mtime_ns: r.get(5)?,
                        read: r.get(6)?,
                        thumb_size: r.get::<_, Option<i64>>(7)?.map(|s| s as u32),
                        sidecar: r.get(8)?,
                        seen: false,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Every sidecar's row, by path bytes.
    pub fn known_sidecars(&self) -> Result<HashMap<Vec<u8>, KnownSidecar>, CatalogError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT path_bytes, id, dev, size, mtime_ns,
                     substr(coalesce(error, ''), 1, ?1) IS NOT ?2, ino
                 FROM sidecars",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![READ_FAILED.len() as i64, READ_FAILED], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    KnownSidecar {
                        id: r.get(1)?,
                        dev: r.get::<_, i64>(2)? as u64,
                        size: r.get::<_, i64>(3)? as u64,
                        mtime_ns: r.get(4)?,
                        read: r.get(5)?,
                        ino: r.get::<_, Option<i64>>(6)?.map(|i| i as u64),
                        seen: false,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Moves rows to new paths, records the device number of unchanged files whose
    /// filesystem now has another one (a disk plugged in again, a remount), and deletes
    /// rows of files that are gone, and of sidecars that are gone (unlinking their images
    /// first), in one transaction (waiting for a lock another program holds as [`begin`]
    /// says).
    pub fn relocate(
        &mut self,
        moved: &[(i64, Vec<u8>)],
        new_dev: &[(i64, u64)],
        removed: &Forget,
        removed_sidecars: &Forget,
        waiting: &dyn Fn(&str),
    ) -> Result<(), CatalogError> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| CatalogError::io(&path, e);
        let scan = self.scan;
        let tx = begin(&self.conn, &path, waiting)?;
        {
            forget_rows(&tx, removed).map_err(err)?;
            let mut unlink = tx
                .prepare_cached("UPDATE images SET sidecar = NULL WHERE sidecar = ?1")
                .map_err(err)?;
            let mut delete_sidecar = tx
                .prepare_cached("DELETE FROM sidecars WHERE id = ?1")
                .map_err(err)?;
            for id in removed_sidecars.ids() {
                unlink.execute([id]).map_err(err)?;
                delete_sidecar.execute([id]).map_err(err)?;
            }
            let mut update = tx
                .prepare_cached(
                    "UPDATE images SET path = ?2, path_bytes = ?3, scan = ?4 WHERE id = ?1",
                )
                .map_err(err)?;
            for (id, bytes) in moved {
                update
                    .execute(params![id, display(bytes), bytes, scan])
                    .map_err(err)?;
            }
            let mut dev = tx
                .prepare_cached("UPDATE images SET dev = ?2 WHERE id = ?1")
                .map_err(err)?;
            for (id, d) in new_dev {
                dev.execute(params![id, *d as i64]).map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    /// Points each image row at `links`' path (image path bytes, sidecar path bytes, or
    /// `None`: no sidecar) at its sidecar's row (none when that path has no row), in one
    /// transaction. Run after the rows are written: a sidecar or an image new in this run
    /// has its row by then.
    pub fn link(
        &mut self,
        links: &[(Vec<u8>, Option<Vec<u8>>)],
        waiting: &dyn Fn(&str),
    ) -> Result<(), CatalogError> {
        if links.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let err = |e: rusqlite::Error| CatalogError::io(&path, e);
        let tx = begin(&self.conn, &path, waiting)?;
        {
            let mut link = tx
                .prepare_cached(
                    "UPDATE images SET sidecar = (SELECT id FROM sidecars WHERE path_bytes = ?2)
                     WHERE path_bytes = ?1",
                )
                .map_err(err)?;
            for (image, sidecar) in links {
                link.execute(params![image, sidecar]).map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    /// Writes rows as `next` hands them over, committing every [`BATCH_ROWS`] rows, and
    /// at the latest [`BATCH_TIME`] after the first uncommitted row came, whether or not
    /// another row comes: `next(timeout)` returns a row, `Timeout` when none came within
    /// `timeout`, or `Disconnected` when there are no more. A lock another program holds is
    /// waited for as [`begin`] says (rows wait meanwhile); if it is held too long, the rows
    /// of the batch not yet committed are lost, those committed before are kept.
    pub fn write_all(
        &mut self,
        mut next: impl FnMut(Duration) -> Result<Record, RecvTimeoutError>,
        waiting: &dyn Fn(&str),
    ) -> Result<(), CatalogError> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| CatalogError::io(&path, e);
        let scan = self.scan;
        let batch_rows = self.batch_rows.max(1);
        loop {
            // Nothing is uncommitted: wait as long as it takes.
            let first = match next(Duration::MAX) {
                Ok(row) => row,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            };
            let tx = begin(&self.conn, &path, waiting)?;
            let started = Instant::now();
            let mut more = true;
            {
                let mut upsert = tx.prepare_cached(UPSERT).map_err(err)?;
                let mut stale = tx.prepare_cached(STALE_THUMB).map_err(err)?;
                let mut thumb = tx.prepare_cached(THUMB).map_err(err)?;
                let mut sidecar = tx.prepare_cached(SIDECAR_UPSERT).map_err(err)?;
                let mut record = first;
                let mut n = 0;
                loop {
                    match &record {
                        Record::Image(row) => {
                            write_image(row, scan, &mut upsert, &mut stale, &mut thumb)
                                .map_err(err)?
                        }
                        Record::Sidecar(s) => write_sidecar(s, scan, &mut sidecar).map_err(err)?,
                    }
                    n += 1;
                    let left = BATCH_TIME.saturating_sub(started.elapsed());
                    if n >= batch_rows || left.is_zero() {
                        break;
                    }
                    match next(left) {
                        Ok(r) => record = r,
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => {
                            more = false;
                            break;
                        }
                    }
                }
            }
            tx.commit().map_err(err)?;
            if !more {
                return Ok(());
            }
        }
    }

    /// Records the scan's counts and end.
    pub fn finish(
        &self,
        counts: &super::IndexSummary,
        waiting: &dyn Fn(&str),
    ) -> Result<(), CatalogError> {
        let tx = begin(&self.conn, &self.path, waiting)?;
        tx.execute(
            "UPDATE scans SET ended = ?2, seen = ?3, added = ?4, changed = ?5, moved = ?6,
                 unchanged = ?7, removed = ?8, failed = ?9 WHERE id = ?1",
            params![
                self.scan,
                now(),
                counts.seen as i64,
                counts.added as i64,
                counts.changed as i64,
                counts.moved as i64,
                counts.unchanged as i64,
                counts.removed as i64,
                counts.failed as i64,
            ],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }
}

/// Writes an image's row (and its thumbnail, when one was asked for).
fn write_image(
    row: &Row,
    scan: i64,
    upsert: &mut rusqlite::CachedStatement<'_>,
    stale: &mut rusqlite::CachedStatement<'_>,
    thumb: &mut rusqlite::CachedStatement<'_>,
) -> rusqlite::Result<()> {
    let i = &row.info;
    // A thumbnail of other content goes (kept when the content is the same,
    // and when the file could not be read: the row keeps what was known).
    if row.blake3.is_some() {
        stale.execute(params![row.path_bytes, row.blake3])?;
    }
    let phash = row
        .visual
        .as_ref()
        .and_then(|(_, v)| v.phash)
        .map(|h| h as i64);
    let id: i64 = upsert.query_row(
        params![
            display(&row.path_bytes),
            row.path_bytes,
            row.dev as i64,
            row.ino as i64,
            row.size as i64,
            row.mtime_ns,
            i.format,
            i.ext_mismatch,
            i.width.map(|w| w as i64),
            i.height.map(|h| h as i64),
            i.taken,
            i.make,
            i.model,
            i.lens,
            i.orientation,
            i.exposure_time,
            i.f_number,
            i.iso,
            i.focal_length,
            i.gps_lat,
            i.gps_lon,
            i.gps_alt,
            row.blake3,
            i.error,
            scan,
            phash,
            i.kind,
            i.duration,
            i.codec,
            i.rotation,
            i.content_id,
        ],
        |r| r.get(0),
    )?;
    if let Some((size, v)) = &row.visual {
        let (t, why) = match &v.thumb {
            Ok(t) => (Some(t), None),
            Err(why) => (None, Some(why)),
        };
        thumb.execute(params![
            id,
            i64::from(*size),
            t.map(|t| i64::from(t.width)),
            t.map(|t| i64::from(t.height)),
            t.map(|t| t.source),
            t.map(|t| &t.jpeg),
            why,
        ])?;
    }
    Ok(())
}

/// Writes a sidecar's row.
fn write_sidecar(
    s: &SidecarRow,
    scan: i64,
    upsert: &mut rusqlite::CachedStatement<'_>,
) -> rusqlite::Result<()> {
    let f = s.fields.as_ref();
    upsert.execute(params![
        display(&s.path_bytes),
        s.path_bytes,
        s.dev as i64,
        s.size as i64,
        s.mtime_ns,
        f.and_then(|f| f.rating),
        f.and_then(|f| f.label.as_deref()),
        f.and_then(|f| json_strings(&f.keywords)),
        f.and_then(|f| json_strings(&f.hierarchical)),
        f.and_then(|f| f.title.as_deref()),
        s.error,
        scan,
        f.is_some(),
        s.ino as i64,
    ])?;
    Ok(())
}

/// `strings` as a JSON array (`["beach","Fish & Chips"]`), for SQLite's `json_each`;
/// `None` when empty.
fn json_strings(strings: &[String]) -> Option<String> {
    // Serializing strings cannot fail.
    (!strings.is_empty()).then(|| serde_json::to_string(strings).unwrap_or_default())
}

/// Writes a sidecar's row. One that could not be read (`?13` false: no fields) keeps the
/// fields of its last read, with the error beside them; its size and mtime are the
/// file's now (it is read again next run: its error starts with [`READ_FAILED`]).
const SIDECAR_UPSERT: &str = "
INSERT INTO sidecars (path, path_bytes, dev, size, mtime_ns, rating, label, keywords,
    hierarchical_keywords, title, error, scan, ino)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?14)
ON CONFLICT(path_bytes) DO UPDATE SET path = excluded.path, dev = excluded.dev,
    ino = excluded.ino,
    size = excluded.size, mtime_ns = excluded.mtime_ns,
    rating = iif(?13, excluded.rating, sidecars.rating),
    label = iif(?13, excluded.label, sidecars.label),
    keywords = iif(?13, excluded.keywords, sidecars.keywords),
    hierarchical_keywords = iif(?13, excluded.hierarchical_keywords, sidecars.hierarchical_keywords),
    title = iif(?13, excluded.title, sidecars.title),
    error = excluded.error,
    scan = excluded.scan
";

/// The marker at the start of the `error` of a row whose file could not be read (or opened)
/// while the catalog knew its content from an earlier read: the row keeps what was known,
/// and is read again next run (`known` does not take it as read).
pub(crate) const READ_FAILED: &str = "read failed: ";

/// Writes a row. A file that could not be read (no content hash: `excluded.blake3 IS NULL`)
/// whose row knew its content keeps every field of that content (size and mtime_ns
/// included, so that the row stays one coherent description of what was read; the
/// thumbnail and perceptual hash too), its path, device and inode are updated, and its
/// error says what failed, after [`READ_FAILED`], and whether the file changed (size or
/// mtime) since those fields were read. Otherwise every field is the new row's.
const UPSERT: &str = "
INSERT INTO images (path, path_bytes, dev, ino, size, mtime_ns, format, ext_mismatch, width,
    height, taken, make, model, lens, orientation, exposure_time, f_number, iso,
    focal_length, gps_lat, gps_lon, gps_alt, blake3, error, scan, phash, kind, duration, codec,
    rotation, content_id)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
    ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)
ON CONFLICT(path_bytes) DO UPDATE SET path = excluded.path, dev = excluded.dev,
    ino = excluded.ino,
    size = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.size, excluded.size),
    mtime_ns = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.mtime_ns, excluded.mtime_ns),
    format = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.format, excluded.format),
    ext_mismatch = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.ext_mismatch, excluded.ext_mismatch),
    width = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.width, excluded.width),
    height = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.height, excluded.height),
    taken = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.taken, excluded.taken),
    make = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.make, excluded.make),
    model = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.model, excluded.model),
    lens = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.lens, excluded.lens),
    orientation = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.orientation, excluded.orientation),
    exposure_time = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.exposure_time, excluded.exposure_time),
    f_number = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.f_number, excluded.f_number),
    iso = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.iso, excluded.iso),
    focal_length = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.focal_length, excluded.focal_length),
    gps_lat = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.gps_lat, excluded.gps_lat),
    gps_lon = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.gps_lon, excluded.gps_lon),
    gps_alt = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.gps_alt, excluded.gps_alt),
    kind = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.kind, excluded.kind),
    duration = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.duration, excluded.duration),
    codec = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.codec, excluded.codec),
    rotation = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.rotation, excluded.rotation),
    content_id = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.content_id, excluded.content_id),
    blake3 = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.blake3, excluded.blake3),
    error = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL,
        'read failed: ' || coalesce(excluded.error, 'unknown error') ||
        iif(images.size = excluded.size AND images.mtime_ns = excluded.mtime_ns,
            '; the other fields are from its last read',
            '; it changed since its last read (now ' || excluded.size || ' bytes, mtime_ns ' ||
            excluded.mtime_ns || '): the other fields, size and mtime_ns included, are of ' ||
            'its content then'),
        excluded.error),
    scan = excluded.scan,
    phash = CASE WHEN excluded.phash IS NOT NULL THEN excluded.phash
                 WHEN images.blake3 IS excluded.blake3 OR excluded.blake3 IS NULL
                     THEN images.phash END
RETURNING id
";

/// Deletes the thumbnail of the row at path `?1` unless its content hash is `?2` (run
/// before the row is written: a thumbnail of other content is stale).
const STALE_THUMB: &str = "
DELETE FROM thumbs WHERE image =
    (SELECT id FROM images WHERE path_bytes = ?1 AND blake3 IS NOT ?2)
";

const THUMB: &str = "
INSERT OR REPLACE INTO thumbs (image, size, width, height, thumb_source, jpeg, error)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
";

/// The file whose OS lock marks the catalog's one writer. Where locks are advisory (Unix),
/// the database itself: `flock` there is independent of SQLite's own `fcntl` locks. Where
/// they are mandatory (Windows) they would stop SQLite's own reads, so a file beside it.
fn lock_path(db: &Path) -> PathBuf {
    if !seekless_sys::MANDATORY_LOCKS {
        return db.to_path_buf();
    }
    let mut p = db.as_os_str().to_owned();
    p.push("-seekless-lock");
    PathBuf::from(p)
}

/// A path's bytes as display text (lossy where not UTF-8; `path_bytes` keeps them exact).
fn display(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Now, as ISO 8601 UTC with milliseconds.
fn now() -> String {
    let d = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, dd) = super::taken::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format and kind names the schema's SQL (views, indexes, upgrades) compares
    /// with are names of `formats::FORMATS` and its kinds.
    #[test]
    fn the_formats_and_kinds_the_sql_names_are_the_tables() {
        let upgrade = formats::v3_right_sql();
        let sqls = [
            SCHEMA,
            UPGRADE_V2,
            V4_SIDECARS,
            UPGRADE_V3,
            V5_DECISIONS,
            &upgrade,
        ];
        let kinds: Vec<&str> = [
            formats::Kind::Image,
            formats::Kind::Raw,
            formats::Kind::Video,
        ]
        .iter()
        .map(|k| k.name())
        .chain([formats::OTHER_KIND])
        .collect();
        let (mut formats_named, mut kinds_named) = (0, 0);
        for sql in sqls {
            for (column, list_end) in [
                ("format IN (", ')'),
                ("format = '", '\''),
                ("kind IN (", ')'),
                ("kind = '", '\''),
            ] {
                for (at, _) in sql.match_indices(column) {
                    let from = at + column.len();
                    let to = from + sql[from..].find(list_end).unwrap();
                    let names = sql[from..to]
                        .split(',')
                        .map(|n| n.trim().trim_matches('\''));
                    for name in names {
                        if column.starts_with("format") {
                            assert!(formats::named(name).is_some(), "{name} is no format");
                            formats_named += 1;
                        } else {
                            assert!(kinds.contains(&name), "{name} is no kind");
                            kinds_named += 1;
                        }
                    }
                }
            }
        }
        // The raw+jpeg, live-photo and export pairs and the version-3 upgrade name both.
        assert!(
            formats_named >= 9 && kinds_named >= 8,
            "{formats_named} {kinds_named}"
        );
    }

    /// Writes `rows` in one batch.
    fn write(catalog: &mut IndexWriter, rows: Vec<Row>) {
        let mut rows = rows.into_iter().map(Record::Image);
        catalog
            .write_all(
                |_| rows.next().ok_or(RecvTimeoutError::Disconnected),
                &|_| {},
            )
            .unwrap();
    }

    fn row(size: u64, mtime_ns: i64, read: bool) -> Row {
        let mut info = ImageInfo::default();
        if read {
            info.format = Some("jpeg");
            info.kind = Some("image");
            info.width = Some(640);
            info.height = Some(480);
            info.make = Some("Canon".into());
        } else {
            info.error = Some("Input/output error".into());
        }
        Row {
            path_bytes: b"/p/a.jpg".to_vec(),
            dev: 1,
            ino: 2,
            size,
            mtime_ns,
            info,
            blake3: read.then(|| "ab".repeat(32)),
            visual: read.then(|| (256, Visual::none("no decoder"))),
        }
    }

    fn fields(
        db: &Path,
    ) -> (
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<String>,
        i64,
        i64,
    ) {
        let conn = Connection::open(db).unwrap();
        conn.query_row(
            "SELECT format, width, blake3, error, size, mtime_ns FROM images",
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .unwrap()
    }

    #[test]
    fn a_row_that_failed_to_read_keeps_what_was_known_says_so_and_is_read_again() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        let mut catalog = IndexWriter::open(&db).unwrap();
        write(&mut catalog, vec![row(1000, 7, true)]);
        let hash = Some("ab".repeat(32));
        assert_eq!(
            fields(&db),
            (Some("jpeg".into()), Some(640), hash.clone(), None, 1000, 7)
        );
        assert!(catalog.known().unwrap()[b"/p/a.jpg".as_slice()].read);

        // The same file, unreadable now (EIO): every field stays, the error beside them.
        write(&mut catalog, vec![row(1000, 7, false)]);
        let (format, width, blake3, error, size, mtime) = fields(&db);
        assert_eq!(
            (format, width, blake3, size, mtime),
            (Some("jpeg".into()), Some(640), hash.clone(), 1000, 7)
        );
        let error = error.unwrap();
        assert!(error.starts_with(READ_FAILED), "{error}");
        assert!(error.contains("Input/output error"), "{error}");
        assert!(
            error.ends_with("the other fields are from its last read"),
            "{error}"
        );
        let known = &catalog.known().unwrap()[b"/p/a.jpg".as_slice()];
        assert!(!known.read, "retried next run, not taken as unchanged");
        assert_eq!(known.thumb_size, Some(256), "its thumbnail's record stays");

        // Changed since (another size and mtime), then unreadable: the fields stay with
        // the size and mtime they describe, and the error says the file changed.
        write(&mut catalog, vec![row(2000, 9, false)]);
        let (format, _, blake3, error, size, mtime) = fields(&db);
        assert_eq!(
            (format, blake3, size, mtime),
            (Some("jpeg".into()), hash, 1000, 7)
        );
        let error = error.unwrap();
        assert!(
            error.contains("changed since its last read (now 2000 bytes"),
            "{error}"
        );
        assert!(!catalog.known().unwrap()[b"/p/a.jpg".as_slice()].read);

        // Read again: the new content's fields, no error.
        write(&mut catalog, vec![row(2000, 9, true)]);
        assert_eq!(fields(&db).3, None);
        assert!(catalog.known().unwrap()[b"/p/a.jpg".as_slice()].read);

        // A file never read that fails: nothing to keep, the error as it was.
        let mut never = row(5, 5, false);
        never.path_bytes = b"/p/b.jpg".to_vec();
        write(&mut catalog, vec![never]);
        let conn = Connection::open(&db).unwrap();
        let (blake3, error): (Option<String>, String) = conn
            .query_row(
                "SELECT blake3, error FROM images WHERE path = '/p/b.jpg'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((blake3, error.as_str()), (None, "Input/output error"));
    }

    #[test]
    fn a_second_writer_is_refused_at_once() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        let first = IndexWriter::open(&db).unwrap();
        assert!(matches!(IndexWriter::open(&db), Err(CatalogError::Busy(_))));
        drop(first);
        IndexWriter::open(&db).unwrap();
    }

    #[test]
    fn sql_errors_are_told_in_one_line_without_their_sql() {
        let conn = Connection::open_in_memory().unwrap();
        let e = conn
            .execute_batch("CREATE TABLE t (x);\nCREATE INDEX i\n  ON t (nope);")
            .unwrap_err();
        let line = one_line(&e);
        assert!(!line.contains('\n') && !line.contains("CREATE"), "{line}");
        assert!(line.contains("nope"), "{line}");
    }

    #[test]
    fn a_foreign_database_in_wal_mode_is_inspected_without_a_trace() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("other.db");
        {
            let conn = Connection::open(&db).unwrap();
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))
                .unwrap();
            conn.execute_batch("CREATE TABLE images (path TEXT); INSERT INTO images VALUES ('x');")
                .unwrap();
        }
        let before = std::fs::read(&db).unwrap();
        let names = || {
            let mut n: Vec<_> = std::fs::read_dir(t.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            n.sort();
            n
        };
        assert_eq!(names(), ["other.db"]);
        let e = WriterLock::take(&db).err().expect("refused");
        assert!(matches!(e, CatalogError::NotCatalog { .. }), "{e}");
        assert_eq!(names(), ["other.db"], "no -wal, no -shm");
        assert!(std::fs::read(&db).unwrap() == before);
    }

    #[test]
    fn a_newer_catalog_is_refused_before_the_walk() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        drop(IndexWriter::open(&db).unwrap());
        Connection::open(&db)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        assert!(matches!(
            WriterLock::take(&db),
            Err(CatalogError::NewerSchema { version, .. }) if version == SCHEMA_VERSION + 1
        ));
    }

    #[test]
    fn a_catalog_that_cannot_be_created_keeps_the_underlying_error() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("missing-dir/catalog.db");
        let e = WriterLock::take(&db).err().expect("cannot be created");
        let source = std::error::Error::source(&e).expect("a source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        // Printed as before: the path, then the OS's words without "(os error N)".
        assert_eq!(
            e.to_string(),
            format!("{}: {}", db.display(), seekless_sys::describe_io(io))
        );
        assert!(!e.to_string().contains("os error"), "{e}");
    }

    #[test]
    fn a_damaged_database_is_an_error_and_left_as_it_was() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("bad.db");
        {
            let conn = Connection::open(&db).unwrap();
            conn.execute_batch("CREATE TABLE notes (body TEXT);")
                .unwrap();
        }
        let mut bytes = std::fs::read(&db).unwrap();
        bytes[100..4096].fill(0xff);
        std::fs::write(&db, &bytes).unwrap();
        let e = WriterLock::take(&db).err().expect("refused");
        assert!(
            matches!(&e, CatalogError::Unreadable { source, .. } if source.is::<rusqlite::Error>()),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("cannot tell whether it is a seekless catalog: "),
            "{e}"
        );
        assert!(std::fs::read(&db).unwrap() == bytes);
    }

    #[test]
    fn a_version_2_catalog_is_upgraded_in_place_keeping_its_rows() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        {
            let conn = Connection::open(&db).unwrap();
            conn.execute_batch(SCHEMA).unwrap();
            conn.execute_batch(
                "INSERT INTO scans (id, started) VALUES (1, 'x');
                 INSERT INTO images (path, path_bytes, dev, ino, size, mtime_ns, blake3, scan,
                         format)
                     VALUES ('/p/a.jpg', CAST('/p/a.jpg' AS BLOB), 1, 2, 3, 4, 'h', 1, 'jpeg'),
                         ('/p/b.CR2', CAST('/p/b.CR2' AS BLOB), 1, 3, 5, 6, 'i', 1, 'cr2'),
                         ('/p/c.heic', CAST('/p/c.heic' AS BLOB), 1, 4, 5, 6, 'j', 1, 'heif');
                 PRAGMA user_version = 2;",
            )
            .unwrap();
        }
        let catalog = IndexWriter::open(&db).unwrap();
        let known = catalog.known().unwrap();
        let row = &known[b"/p/a.jpg".as_slice()];
        assert_eq!((row.size, row.mtime_ns, row.read), (3, 4, true));
        assert_eq!(row.thumb_size, None);
        // Rows whose fields version 3 got wrong (a raw file's preview size, a HEIF item's)
        // are read again, keeping every field until then.
        for path in [b"/p/b.CR2".as_slice(), b"/p/c.heic"] {
            assert!(!known[path].read, "{}", String::from_utf8_lossy(path));
        }
        drop(catalog);
        let conn = Connection::open(&db).unwrap();
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let phash: Option<i64> = conn
            .query_row("SELECT phash FROM images", [], |r| r.get(0))
            .unwrap();
        assert_eq!(phash, None);
        let kinds: Vec<(String, Option<String>, Option<String>)> = conn
            .prepare("SELECT path, kind, blake3 FROM images ORDER BY path")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            kinds,
            [
                ("/p/a.jpg".into(), Some("image".into()), Some("h".into())),
                ("/p/b.CR2".into(), None, Some("i".into())),
                ("/p/c.heic".into(), None, Some("j".into())),
            ]
        );
        let thumbs: i64 = conn
            .query_row("SELECT count(*) FROM thumbs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(thumbs, 0);
        // Its schema is exactly a new catalog's.
        let new = t.path().join("new.db");
        drop(IndexWriter::open(&new).unwrap());
        assert_eq!(
            schema_objects(&conn).unwrap(),
            schema_objects(&Connection::open(&new).unwrap()).unwrap()
        );
        assert_eq!(
            schema_objects(&conn).unwrap(),
            expected_schema(SCHEMA_VERSION).unwrap()
        );
    }

    #[test]
    fn a_version_4_catalog_made_before_sidecars_gets_them_and_keeps_its_kinds() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        {
            let mut conn = Connection::open(&db).unwrap();
            conn.execute_batch(SCHEMA).unwrap();
            let tx = conn.transaction().unwrap();
            upgrade_v2(&tx).unwrap();
            tx.commit().unwrap();
            for (name, kind) in V4_COLUMNS.iter().filter(|(n, _)| *n != "sidecar") {
                conn.execute_batch(&format!("ALTER TABLE images ADD COLUMN {name} {kind};"))
                    .unwrap();
            }
            // A row a version-4 run left without a kind (to be read again): the upgrade
            // must not give it one.
            conn.execute_batch(&format!(
                "INSERT INTO scans (id, started) VALUES (1, 'x');
                 INSERT INTO images (path, path_bytes, dev, ino, size, mtime_ns, blake3, scan,
                         format, kind)
                     VALUES ('/p/a.jpg', CAST('/p/a.jpg' AS BLOB), 1, 2, 3, 4, 'h', 1, 'jpeg',
                         NULL);
                 PRAGMA user_version = 4; PRAGMA application_id = {APPLICATION_ID};"
            ))
            .unwrap();
        }
        let catalog = IndexWriter::open(&db).unwrap();
        assert!(catalog.known_sidecars().unwrap().is_empty());
        let known = catalog.known().unwrap();
        let row = &known[b"/p/a.jpg".as_slice()];
        assert!(!row.read, "still to be read again");
        assert_eq!(row.sidecar, None);
        drop(catalog);
        let conn = Connection::open(&db).unwrap();
        let kind: Option<String> = conn
            .query_row("SELECT kind FROM images", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kind, None);
        let new = t.path().join("new.db");
        drop(IndexWriter::open(&new).unwrap());
        assert_eq!(
            schema_objects(&conn).unwrap(),
            schema_objects(&Connection::open(&new).unwrap()).unwrap()
        );
        let names: Vec<String> = schema_objects(&conn)
            .unwrap()
            .into_iter()
            .map(|(_, name, _)| name)
            .collect();
        assert!(names.contains(&"sidecars".to_string()), "{names:?}");
        assert!(names.contains(&"images_sidecar".to_string()), "{names:?}");
    }

    #[test]
    fn a_version_5_catalog_gets_its_dates_in_the_one_form_and_keeps_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        drop(IndexWriter::open(&db).unwrap());
        {
            let conn = Connection::open(&db).unwrap();
            conn.execute_batch("INSERT OR IGNORE INTO scans (id, started) VALUES (1, 'x');")
                .unwrap();
            for (i, taken) in [
                "2010-02-03T21:17:48Z",
                "2024-05-06T07:08:09.12+02:00",
                "2024-05-06T07:08:09.123456",
                "0000-00-00T00:00:00",
                "2024-05-06T07:08:09.500-07:00",
            ]
            .iter()
            .enumerate()
            {
                conn.execute(
                    "INSERT INTO images (path, path_bytes, dev, ino, size, mtime_ns, blake3,
                         scan, format, taken, make)
                     VALUES (?1, CAST(?1 AS BLOB), 1, ?2, 3, 4, 'h', 1, 'jpeg', ?3, 'Canon')",
                    rusqlite::params![format!("/p/{i}.jpg"), i as i64, taken],
                )
                .unwrap();
            }
            conn.pragma_update(None, "user_version", 5).unwrap();
        }
        drop(IndexWriter::open(&db).unwrap());
        let conn = Connection::open(&db).unwrap();
        let rows: Vec<(Option<String>, String, i64)> = conn
            .prepare("SELECT taken, make, size FROM images ORDER BY ino")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let taken: Vec<Option<&str>> = rows.iter().map(|r| r.0.as_deref()).collect();
        assert_eq!(
            taken,
            [
                Some("2010-02-03T21:17:48+00:00"),
                Some("2024-05-06T07:08:09.120+02:00"),
                Some("2024-05-06T07:08:09.123"),
                None,
                Some("2024-05-06T07:08:09.500-07:00"),
            ]
        );
        assert!(rows.iter().all(|r| r.1 == "Canon" && r.2 == 3));
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
    }

    fn sidecar_row(size: u64, fields: Option<crate::index::inspect::SidecarFields>) -> Record {
        let error = fields
            .is_none()
            .then(|| format!("{READ_FAILED}Input/output error"));
        Record::Sidecar(SidecarRow {
            path_bytes: b"/p/a.CR2.xmp".to_vec(),
            dev: 1,
            ino: 2,
            size,
            mtime_ns: 7,
            fields,
            error,
        })
    }

    #[test]
    fn a_sidecar_that_cannot_be_read_keeps_its_fields_and_is_read_again() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        let mut catalog = IndexWriter::open(&db).unwrap();
        let write = |catalog: &mut IndexWriter, record: Record| {
            let mut records = std::iter::once(record);
            catalog
                .write_all(
                    |_| records.next().ok_or(RecvTimeoutError::Disconnected),
                    &|_| {},
                )
                .unwrap();
        };
        let mut fields = crate::index::inspect::SidecarFields {
            rating: Some(5),
            keywords: vec!["beach".into(), "say \"hi\"\\\n\u{1}".into()],
            ..Default::default()
        };
        write(&mut catalog, sidecar_row(100, Some(fields.clone())));
        let got = || {
            let conn = Connection::open(&db).unwrap();
            conn.query_row(
                "SELECT rating, (SELECT group_concat(value, '|') FROM json_each(keywords)),
                     size, error FROM sidecars",
                [],
                |r| {
                    Ok((
                        r.get::<_, Option<i64>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, Option<String>>(3)?,
                    ))
                },
            )
            .unwrap()
        };
        let keywords = Some("beach|say \"hi\"\\\n\u{1}".to_string());
        assert_eq!(got(), (Some(5), keywords.clone(), 100, None));
        assert!(catalog.known_sidecars().unwrap()[b"/p/a.CR2.xmp".as_slice()].read);

        write(&mut catalog, sidecar_row(200, None));
        let (rating, kept, size, error) = got();
        assert_eq!((rating, kept, size), (Some(5), keywords, 200));
        assert!(error.unwrap().starts_with(READ_FAILED));
        let known = &catalog.known_sidecars().unwrap()[b"/p/a.CR2.xmp".as_slice()];
        assert!(!known.read, "read again next run");

        // Read again, without keywords: the fields are the new read's.
        fields.keywords.clear();
        write(&mut catalog, sidecar_row(200, Some(fields)));
        assert_eq!(got(), (Some(5), None, 200, None));
    }

    #[test]
    fn a_new_catalog_is_marked_and_one_made_before_the_mark_is_recognised() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        drop(IndexWriter::open(&db).unwrap());
        let id = |db: &Path| -> i32 {
            Connection::open(db)
                .unwrap()
                .pragma_query_value(None, "application_id", |r| r.get(0))
                .unwrap()
        };
        assert_eq!(id(&db), APPLICATION_ID);
        Connection::open(&db)
            .unwrap()
            .pragma_update(None, "application_id", 0)
            .unwrap();
        assert_eq!(id(&db), 0);
        drop(IndexWriter::open(&db).unwrap());
        assert_eq!(id(&db), APPLICATION_ID);
    }
}
