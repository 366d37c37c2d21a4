//! Locking and opening the catalog: the one writer's lock, the write transaction that
//! waits out another program's lock (and says whose), and the read-only opening.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use seekless_sys as os;

use super::dupes_writer::DupesWriter;
use super::recognise::{Found, contents, inspect, judge, open_to_inspect};
use super::schema::{
    APPLICATION_ID, SCHEMA, SCHEMA_VERSION, upgrade_v1, upgrade_v2, upgrade_v3, upgrade_v4,
    upgrade_v5, upgrade_v6, upgrade_v7, upgrade_v8,
};
use super::writer::{BATCH_ROWS, IndexWriter};
use super::{CatalogError, now};

/// SQLite's page cache, in KiB (its default is 2,000): enough that a batch's pages and
/// the indexes' inner pages stay cached between batches rather than being read again and
/// spilled to the log mid-transaction. It grows only as the catalog does.
const CACHE_KIB: i64 = 32 << 10;

/// How long one write waits, in all, for the catalog's write lock while another program
/// holds it (a database browser, a script in `BEGIN IMMEDIATE`), before the run stops with
/// an error, keeping every row committed before. Each wait starts again from zero: a lock
/// held 50 s, released, then taken again for 50 s is waited out twice.
pub const LOCK_WAIT: Duration = Duration::from_secs(60);

/// SQLite's own wait for the lock in one attempt ([`LOCK_WAIT`] is made of these): between
/// two, the holder is looked up again.
const LOCK_TRY: Duration = Duration::from_secs(2);

/// Begins a write transaction on `conn`, the catalog at `path`: `BEGIN IMMEDIATE`, so the
/// write lock is taken before anything is written (in WAL mode a commit then never waits).
/// While another program holds the lock, `waiting` hears who (again when that changes),
/// and the attempt is repeated for up to [`LOCK_WAIT`] in all; then the run stops
/// ([`CatalogError::Locked`]).
pub(super) fn begin<'c>(
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
pub(super) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Who holds the write lock of the catalog at `path`, as "PID N (its command line)", or
/// "another program" where that cannot be known. SQLite locks with POSIX (`fcntl`) locks:
/// in WAL mode the writer's is byte 120 of the `-shm` file, in rollback mode a write lock
/// on the database file.
pub(super) fn lock_holder(path: &Path) -> String {
    lock_holder_pid(path)
        .map(|pid| match os::command_of(pid) {
            Some(command) => format!("PID {pid} ({command})"),
            None => format!("PID {pid}"),
        })
        .unwrap_or_else(|| "another program".to_string())
}

/// The process holding a POSIX write lock on the catalog's database or `-shm` file (the
/// WAL writer's byte first), other than this one.
pub(super) fn lock_holder_pid(path: &Path) -> Option<u32> {
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

    /// The lock of a catalog this process opened and closed again (see
    /// [`IndexWriter::into_lock`]).
    pub(super) fn from_parts(path: PathBuf, file: File) -> WriterLock {
        WriterLock {
            path,
            file,
            found: Found::Catalog,
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
            dev_volume: HashMap::new(),
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
        upgrade_v6(&tx).map_err(io)?;
        upgrade_v7(&tx).map_err(io)?;
        upgrade_v8(&tx).map_err(io)?;
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

/// The file whose OS lock marks the catalog's one writer. Where locks are advisory (Unix),
/// the database itself: `flock` there is independent of SQLite's own `fcntl` locks. Where
/// they are mandatory (Windows) they would stop SQLite's own reads, so a file beside it.
pub(super) fn lock_path(db: &Path) -> PathBuf {
    if !seekless_sys::MANDATORY_LOCKS {
        return db.to_path_buf();
    }
    let mut p = db.as_os_str().to_owned();
    p.push("-seekless-lock");
    PathBuf::from(p)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
