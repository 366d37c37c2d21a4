//! The catalog read only: every query of the schema outside the writers.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::CatalogError;
use super::dupes_writer::StoredDecision;
use super::lock::open_read_only;

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
    /// Version 7 and later: `images.damaged` exists.
    integrity: bool,
}

/// Where a root's next run may start from (the `catchup` table, version 9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CatchUpRecord {
    /// The root's path bytes.
    pub root: Vec<u8>,
    /// Its volume's identity key.
    pub volume: String,
    /// Its btrfs subvolume's generation before the run that saw it whole.
    pub generation: u64,
    /// The settings of that run.
    pub settings: String,
}

/// The catalog's catch-up records, and the paths of the rows (images and sidecars) whose
/// read failed: those are retried by every run, so their directories are walked even
/// where the rest is caught up. Read-only; an error for a catalog that does not exist or
/// cannot be read (the caller then walks everything); nothing before version 9.
pub(crate) fn catchup_records(
    path: &Path,
) -> Result<(Vec<CatchUpRecord>, Vec<Vec<u8>>), CatalogError> {
    let (conn, version) = open_read_only(path)?;
    let io = |e: rusqlite::Error| CatalogError::io(path, e);
    if version < 9 {
        return Ok((Vec::new(), Vec::new()));
    }
    let records = conn
        .prepare("SELECT root, volume, generation, settings FROM catchup")
        .map_err(io)?
        .query_map([], |r| {
            Ok(CatchUpRecord {
                root: r.get(0)?,
                volume: r.get(1)?,
                generation: r.get::<_, i64>(2)? as u64,
                settings: r.get(3)?,
            })
        })
        .map_err(io)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(io)?;
    // As `IndexWriter::known` and `known_sidecars` tell a row not read.
    let failed = super::READ_FAILED;
    let unread = conn
        .prepare(
            "SELECT i.path_bytes FROM images i
             WHERE NOT (i.blake3 IS NOT NULL AND substr(coalesce(i.error, ''), 1, ?1) IS NOT ?2
                 AND i.kind IS NOT NULL)
             UNION ALL SELECT path_bytes FROM sidecars
             WHERE substr(coalesce(error, ''), 1, ?1) IS ?2",
        )
        .map_err(io)?
        .query_map(rusqlite::params![failed.len() as i64, failed], |r| r.get(0))
        .map_err(io)?
        .collect::<rusqlite::Result<Vec<Vec<u8>>>>()
        .map_err(io)?;
    Ok((records, unread))
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
    pub damaged: Option<String>,
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
            integrity: version >= 7,
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
        let damaged = if self.integrity { "damaged" } else { "NULL" };
        let mut s = self.conn.prepare_cached(&format!(
            "SELECT path, path_bytes, width, height, orientation, taken, make, model, format,
                    blake3, {phash}, dev, ino, mtime_ns, {damaged}
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
                damaged: r.get(14)?,
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
