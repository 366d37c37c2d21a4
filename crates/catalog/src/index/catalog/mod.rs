//! The SQLite catalog: schema, the one-writer lock, what is known from earlier runs, and
//! batched writes. The schema is documented in `docs/index.md`.
//!
//! - `schema`: the schema's version, its SQL, and the upgrades of older catalogs;
//! - `recognise`: telling a seekless catalog from any other file, changing nothing;
//! - `lock`: the one writer's lock, waiting out another program's, opening;
//! - `writer`: `seekless index`'s rows, in batched transactions;
//! - `dupes_writer`: the decisions `seekless dupes` records, and the rows it forgets;
//! - `read_only`: every query outside the writers.

mod dupes_writer;
mod lock;
mod read_only;
mod recognise;
mod schema;
mod writer;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use seekless_jobs::destructive::Forget;

pub(crate) use dupes_writer::StoredDecision;
pub(crate) use lock::WriterLock;
pub(crate) use read_only::{CatchUpRecord, HashedRow, ReadOnly, catchup_records};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub(crate) use writer::{
    BATCH_ROWS, IndexWriter, Known, KnownSidecar, READ_FAILED, Record, Row, SidecarRow,
};

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

/// The volumes an index run knows ([`IndexWriter::record_volumes`]): every volume of the
/// catalog by id, and the volume of each device number this run met.
pub(crate) struct Volumes {
    pub(super) by_dev: std::collections::HashMap<u64, i64>,
    pub(super) keys: std::collections::HashMap<i64, String>,
}

impl Volumes {
    /// The id of the volume of the device number `dev`, if this run identified it.
    pub fn of_dev(&self, dev: u64) -> Option<i64> {
        self.by_dev.get(&dev).copied()
    }

    /// The identity (`volumes.key`) of the volume with the id `id`.
    pub fn key(&self, id: i64) -> Option<&str> {
        self.keys.get(&id).map(String::as_str)
    }
}

/// Deletes the rows of `gone` and their thumbnails, inside the caller's transaction: the
/// one place image rows of files seen gone are deleted.
pub(super) fn forget_rows(tx: &rusqlite::Transaction<'_>, gone: &Forget) -> rusqlite::Result<()> {
    let mut delete = tx.prepare_cached("DELETE FROM images WHERE id = ?1")?;
    let mut unthumb = tx.prepare_cached("DELETE FROM thumbs WHERE image = ?1")?;
    for id in gone.ids() {
        unthumb.execute([id])?;
        delete.execute([id])?;
    }
    Ok(())
}

/// An error under a [`CatalogError`] as one line: SQLite's own message without the SQL it
/// was about, the operating system's description of an I/O error without "(os error N)".
pub(super) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(e) = e.downcast_ref::<rusqlite::Error>() {
        one_line(e)
    } else if let Some(e) = e.downcast_ref::<std::io::Error>() {
        seekless_sys::describe_io(e)
    } else {
        e.to_string()
    }
}

/// An SQLite error as one line: SQLite's own message, without the SQL it was about (which
/// spans many lines).
pub(super) fn one_line(e: &rusqlite::Error) -> String {
    let text = match e {
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A path's bytes as display text (lossy where not UTF-8; `path_bytes` keeps them exact).
pub(super) fn display(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Now, as ISO 8601 UTC with milliseconds.
pub(super) fn now() -> String {
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
    use rusqlite::Connection;

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
}
