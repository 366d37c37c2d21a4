//! The catalog's schema: its version and application id, the SQL that makes it, and the
//! upgrades of older catalogs in place (each inside the caller's transaction).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::display;
use crate::index::formats;

/// The schema's version (`PRAGMA user_version`). Version 2 stores paths absolute; a
/// version-1 catalog is upgraded in place, in one transaction, when opened (see
/// `upgrade_v1`). Version 3 adds `images.phash` and the `thumbs` table (see
/// `UPGRADE_V2`), also in place. Version 4 adds what a phone's or camera's library needs
/// (`kind`, `duration`, `codec`, `rotation`, `content_id`; see `upgrade_v3`) and the
/// XMP sidecars (the `sidecars` table and `images.sidecar`; see `V4_SIDECARS`). Version 5 adds
/// the `decisions` table (see `V5_DECISIONS`). Version 6 writes `taken` in one form (see
/// `upgrade_v5`: stored dates rewritten in place). Version 7 adds `images.damaged`, the
/// integrity verdict (see `upgrade_v6`). Version 8 knows filesystems by identity (the
/// `volumes` table, `images.volume` and `sidecars.volume`, the `offline` view; see
/// `upgrade_v7`: existing rows converted in place). Version 9 adds what a run needs to
/// catch up without a walk next time (the `catchup` table; see `upgrade_v8`).
pub const SCHEMA_VERSION: i64 = 9;

/// `PRAGMA application_id` of a seekless catalog ("SKLS"): what tells a catalog from any
/// other SQLite database. Catalogs made before it was set (schema versions 1 and 2) are
/// recognised by their exact schema and marked when first opened.
pub const APPLICATION_ID: i32 = i32::from_be_bytes(*b"SKLS");

pub(super) const SCHEMA: &str = "
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
pub(super) const UPGRADE_V2: &str = "
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
pub(super) const V4_COLUMNS: &[(&str, &str)] = &[
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
pub(super) const V4_SIDECARS: &str = "
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
pub(super) const UPGRADE_V3: &str = "
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
pub(super) const V5_DECISIONS: &str = "
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

/// A schema object: its type, its name, and its SQL with runs of white space made one
/// space (SQLite keeps the text as written).
pub(super) type SchemaObject = (String, String, Option<String>);

/// Every table, index, view and trigger of the database behind `conn`, by name.
pub(super) fn schema_objects(conn: &Connection) -> rusqlite::Result<Vec<SchemaObject>> {
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
/// [`UPGRADE_V2`]; 4: with [`V4_COLUMNS`]; 5 and 6: with the decisions; 7: with
/// `images.damaged`; 8: with the volumes; 9: with `catchup`), as SQLite records them.
pub(super) fn expected_schema(version: i64) -> rusqlite::Result<Vec<SchemaObject>> {
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
        if version >= 7 {
            upgrade_v6(&tx)?;
        }
        if version >= 8 {
            upgrade_v7(&tx)?;
        }
        if version >= 9 {
            upgrade_v8(&tx)?;
        }
        tx.commit()?;
    }
    schema_objects(&conn)
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

/// Upgrades a version-4 catalog (or one just made by [`upgrade_v3`]) to version 5, inside
/// the caller's transaction: adds the `decisions` table ([`V5_DECISIONS`]) and the
/// sidecars' inode (`sidecars.ino`, where missing: a sidecar edited in place by a tool
/// that keeps its size and time, `exiftool -P`, writes a new file). A row written before
/// has none, and its sidecar is read again once. Running it again changes nothing.
pub(crate) fn upgrade_v4(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(V5_DECISIONS)?;
    if !has_column(tx, "sidecars", "ino")? {
        tx.execute_batch("ALTER TABLE sidecars ADD COLUMN ino INTEGER;")?;
    }
    Ok(())
}

/// Upgrades a catalog of version 5 or before to version 6, inside the caller's
/// transaction: every stored `taken` is rewritten in the one form
/// ([`Taken`](crate::index::taken::Taken): `Z` becomes `+00:00`, fractions three digits), and one
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
        let canonical = crate::index::taken::Taken::iso(&taken).map(|t| t.to_string());
        if canonical.as_deref() != Some(taken.as_str()) {
            update.execute(rusqlite::params![id, canonical])?;
        }
    }
    Ok(())
}

/// Whether `table` has the column `name` (the upgrades add a column only where missing).
fn has_column(tx: &rusqlite::Transaction<'_>, table: &str, name: &str) -> rusqlite::Result<bool> {
    tx.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
        [table, name],
        |r| r.get(0),
    )
}

/// Upgrades a catalog of version 6 or before (or one just made) to version 7, inside the
/// caller's transaction: adds `images.damaged` (why the file is damaged, NULL when
/// nothing read shows it) where missing. Rows read before have no verdict until their
/// file is read again (a change, or `index --rehash`). Running it again changes nothing.
pub(crate) fn upgrade_v6(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    if !has_column(tx, "images", "damaged")? {
        tx.execute_batch("ALTER TABLE images ADD COLUMN damaged TEXT;")?;
    }
    Ok(())
}

/// The filesystems version 8 knows (see [`upgrade_v7`]): one row per volume identity
/// (`seekless_sys::volume_identity`: the filesystem's UUID, with the subvolume on btrfs; the
/// volume serial on Windows; else the mount table's type, source and mount point). A row
/// of `images` or `sidecars` points at its file's volume (`volume`); the device number
/// (`dev`) is only where the volume was last seen. `offline_since` is set when a run
/// found the place of a volume's rows without the volume (a drive not mounted), and
/// cleared when a run finds the volume again; its rows are kept meanwhile (`offline`
/// lists them), until `index --prune`.
pub(super) const V8_VOLUMES: &str = "
CREATE TABLE IF NOT EXISTS volumes (
    id            INTEGER PRIMARY KEY,
    key           TEXT NOT NULL UNIQUE,
    source        TEXT NOT NULL,
    dev           INTEGER,
    seen          TEXT,
    offline_since TEXT
);
CREATE INDEX IF NOT EXISTS images_volume ON images(volume);
CREATE VIEW IF NOT EXISTS offline (image, path, volume, offline_since) AS
    SELECT i.id, i.path, v.key, v.offline_since
    FROM images i JOIN volumes v ON v.id = i.volume
    WHERE v.offline_since IS NOT NULL;
";

/// Upgrades a catalog of version 7 or before (or one just made) to version 8, inside the
/// caller's transaction: adds the `volumes` table, `images.volume` and `sidecars.volume`
/// where missing, and the `offline` view. Existing rows are converted in place: for each
/// device number the rows have, the first of (at most 64 of) its rows whose file is still
/// there with that device and inode names the volume, and every row of that device number
/// gets it. Rows of a device number no file confirms keep no volume (the device number is
/// then what tells their filesystem, as before) until a run finds their file. Running it
/// again changes nothing.
pub(crate) fn upgrade_v7(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    for table in ["images", "sidecars"] {
        if !has_column(tx, table, "volume")? {
            tx.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN volume INTEGER REFERENCES volumes(id);"
            ))?;
        }
    }
    tx.execute_batch(V8_VOLUMES)?;
    let devs: Vec<i64> = tx
        .prepare(
            "SELECT dev FROM images WHERE volume IS NULL
             UNION SELECT dev FROM sidecars WHERE volume IS NULL",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for dev in devs {
        let samples: Vec<(Vec<u8>, Option<i64>)> = tx
            .prepare(
                "SELECT path_bytes, ino FROM images WHERE dev = ?1 AND volume IS NULL
                 UNION ALL SELECT path_bytes, ino FROM sidecars WHERE dev = ?1 AND volume IS NULL
                 LIMIT 64",
            )?
            .query_map([dev], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let confirmed = samples.iter().find_map(|(bytes, ino)| {
            let path = seekless_sys::path_from_bytes(bytes);
            let meta = seekless_sys::symlink_metadata(&path).ok()?;
            let id = seekless_sys::file_id(&path, None, &meta).ok()?;
            let same = id.dev == dev as u64 && ino.is_none_or(|i| id.ino == i as u64);
            let volume = seekless_sys::volume_identity(&path).ok()?;
            (same && volume.dev() == dev as u64).then_some(volume)
        });
        if let Some(volume) = confirmed {
            let id = volume_row(tx, &volume)?;
            for table in ["images", "sidecars"] {
                tx.execute(
                    &format!("UPDATE {table} SET volume = ?1 WHERE dev = ?2 AND volume IS NULL"),
                    params![id, dev],
                )?;
            }
        }
    }
    Ok(())
}

/// What version 9 adds (see [`upgrade_v8`]): per root of a run that saw it whole, where
/// the next run may start from instead of walking it (docs/index.md, "Catching up without
/// a walk"). `root` is the root's path bytes; `volume` the identity key of its filesystem
/// (`volumes.key`); `generation` the btrfs subvolume's generation read before that run's
/// walk; `settings` what decided which files have rows (the walk's filter, the
/// thumbnails asked for, seekless's version). A run of other settings, on another
/// volume, or that cannot ask btrfs walks the root, as before.
pub(super) const V9_CATCHUP: &str = "
CREATE TABLE IF NOT EXISTS catchup (
    root       BLOB PRIMARY KEY,
    volume     TEXT NOT NULL,
    generation INTEGER NOT NULL,
    settings   TEXT NOT NULL,
    scan       INTEGER NOT NULL REFERENCES scans(id)
);
";

/// Upgrades a catalog of version 8 or before (or one just made) to version 9, inside the
/// caller's transaction: adds the `catchup` table. Running it again changes nothing.
pub(crate) fn upgrade_v8(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(V9_CATCHUP)
}

/// The id of `volume`'s row in `volumes`, made if new; its device number brought up to
/// date.
pub(crate) fn volume_row(
    tx: &rusqlite::Connection,
    volume: &seekless_sys::VolumeIdentity,
) -> rusqlite::Result<i64> {
    use seekless_sys::IdentitySource;
    let source = match volume.source() {
        IdentitySource::Uuid => "uuid",
        IdentitySource::Serial => "serial",
        IdentitySource::Mount => "mount",
        _ => "dev",
    };
    tx.prepare_cached(
        "INSERT INTO volumes (key, source, dev) VALUES (?1, ?2, ?3)
         ON CONFLICT(key) DO UPDATE SET dev = excluded.dev RETURNING id",
    )?
    .query_row(params![volume.key(), source, volume.dev() as i64], |r| {
        r.get(0)
    })
}

/// Upgrades a version-2 catalog (or one just made from [`SCHEMA`]) to version 3, inside
/// the caller's transaction: adds `images.phash` where missing and the `thumbs` table.
/// Running it again changes nothing.
pub(crate) fn upgrade_v2(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    if !has_column(tx, "images", "phash")? {
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
        if !has_column(tx, "images", name)? {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::{APPLICATION_ID, IndexWriter};

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
    fn a_version_7_catalog_gets_its_volumes_from_the_files_still_there() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        let photo = t.path().join("a.jpg");
        std::fs::write(&photo, b"x").unwrap();
        let meta = std::fs::metadata(&photo).unwrap();
        let id = seekless_sys::file_id(&photo, None, &meta).unwrap();
        {
            // Version 7 as its runs left it: no volumes.
            let mut conn = Connection::open(&db).unwrap();
            conn.execute_batch(SCHEMA).unwrap();
            let tx = conn.transaction().unwrap();
            upgrade_v2(&tx).unwrap();
            upgrade_v3(&tx).unwrap();
            upgrade_v4(&tx).unwrap();
            upgrade_v6(&tx).unwrap();
            tx.commit().unwrap();
            conn.execute_batch(&format!(
                "INSERT INTO scans (id, started) VALUES (1, 'x');
                 PRAGMA user_version = 7; PRAGMA application_id = {APPLICATION_ID};"
            ))
            .unwrap();
            let bytes = seekless_sys::path_to_bytes(&photo).into_owned();
            let insert = "INSERT INTO images (path, path_bytes, dev, ino, size, mtime_ns,
                              blake3, scan) VALUES (?1, ?2, ?3, ?4, 1, 1, 'h', 1)";
            // The file, its neighbour gone on the same device, and two rows of devices no
            // file confirms (a path gone; the file's inode under another device number).
            for (path, dev, ino) in [
                (bytes.clone(), id.dev, id.ino),
                (b"/nowhere/b.jpg".to_vec(), id.dev, 5),
                (b"/nowhere/c.jpg".to_vec(), id.dev ^ 0x55, 6),
                (bytes[..bytes.len() - 1].to_vec(), id.dev ^ 0x66, id.ino),
            ] {
                conn.execute(
                    insert,
                    params![display(&path), path, dev as i64, ino as i64],
                )
                .unwrap();
            }
        }
        drop(IndexWriter::open(&db).unwrap());
        let conn = Connection::open(&db).unwrap();
        let key = seekless_sys::volume_identity(&photo)
            .unwrap()
            .key()
            .to_owned();
        let volumes: Vec<(i64, String)> = conn
            .prepare("SELECT id, key FROM volumes")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(volumes.len(), 1, "{volumes:?}");
        assert_eq!(volumes[0].1, key);
        let rows: Vec<Option<i64>> = conn
            .prepare("SELECT volume FROM images ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let v = Some(volumes[0].0);
        assert_eq!(rows, [v, v, None, None]);
        // A new catalog has the same schema.
        let new = t.path().join("new.db");
        drop(IndexWriter::open(&new).unwrap());
        assert_eq!(
            schema_objects(&conn).unwrap(),
            schema_objects(&Connection::open(&new).unwrap()).unwrap()
        );
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

    #[test]
    fn a_version_6_catalog_gets_the_damaged_column_and_keeps_its_rows() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        {
            // A version-6 catalog as a build of version 6 made it: without the column.
            let conn = Connection::open(&db).unwrap();
            conn.execute_batch(SCHEMA).unwrap();
            let tx = conn.unchecked_transaction().unwrap();
            upgrade_v2(&tx).unwrap();
            upgrade_v3(&tx).unwrap();
            upgrade_v4(&tx).unwrap();
            tx.commit().unwrap();
            conn.execute_batch(&format!(
                "INSERT INTO scans (id, started) VALUES (1, 'x');
                 INSERT INTO images (path, path_bytes, dev, ino, size, mtime_ns, blake3, scan)
                     VALUES ('/p/a.jpg', CAST('/p/a.jpg' AS BLOB), 1, 2, 3, 4, 'h', 1);
                 PRAGMA user_version = 6; PRAGMA application_id = {APPLICATION_ID};"
            ))
            .unwrap();
        }
        drop(IndexWriter::open(&db).unwrap());
        let conn = Connection::open(&db).unwrap();
        let (blake3, damaged): (String, Option<String>) = conn
            .query_row("SELECT blake3, damaged FROM images", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((blake3.as_str(), damaged), ("h", None));
        assert_eq!(
            schema_objects(&conn).unwrap(),
            expected_schema(SCHEMA_VERSION).unwrap()
        );
    }
}
