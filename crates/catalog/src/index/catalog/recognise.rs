//! Telling a seekless catalog from any other file, changing nothing: its header read as
//! a plain file, its schema compared with the catalog's on a read-only connection.

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::CatalogError;
use super::schema::{
    APPLICATION_ID, SCHEMA_VERSION, SchemaObject, expected_schema, schema_objects,
};

/// What the file given as the catalog is, as far as taking it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// Missing or empty (0 bytes): a new catalog.
    New,
    /// A seekless catalog (marked, or recognised by its exact schema).
    Catalog,
}

/// What an SQLite database holds, as far as telling a catalog goes.
pub(super) struct Contents {
    application_id: i32,
    pub(super) user_version: i64,
    schema: Schema,
}

/// How a database's schema compares with the catalog's.
pub(super) enum Schema {
    /// No tables, indexes or views at all.
    Empty,
    /// Every table and index of [`SCHEMA`], exactly (anything the user added beside them
    /// is left alone).
    Catalog,
    /// Something else: the names of its tables.
    Other(Vec<String>),
}

/// The first 16 bytes of every SQLite database file.
pub(super) const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Tells whether the file at `path` may be used as the catalog, changing nothing: its
/// header is read as a plain file; only a database that carries no application id is
/// opened with SQLite, read-only, to compare its schema with the catalog's.
pub(super) fn inspect(path: &Path) -> Result<Found, CatalogError> {
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

/// Opens the database at `path` read-only, creating nothing beside it and changing nothing
/// in it. A read-only connection to a database in WAL mode still creates its `-wal` and
/// `-shm` files when they are missing, and leaves them: where there is neither a
/// write-ahead log nor a rollback journal (nothing half-written to take into account),
/// SQLite is told the file is immutable, and then opens nothing but the file.
pub(super) fn open_to_inspect(path: &Path) -> rusqlite::Result<Connection> {
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
pub(super) fn immutable_uri(absolute: &Path) -> PathBuf {
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
pub(super) fn contents(conn: &Connection) -> rusqlite::Result<Contents> {
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

/// Whether a database holding `contents` may be used as the catalog: one with the catalog's
/// application id; one without it (made before it was set) whose schema is exactly the
/// catalog's at version 1, 2 or 3; or, when the file was empty when the run began (`new`), one
/// still empty.
pub(super) fn judge(path: &Path, contents: &Contents, new: bool) -> Result<(), CatalogError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::{IndexWriter, WriterLock};

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
