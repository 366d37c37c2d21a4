//! `seekless index`'s writer: what is known from earlier runs, and the rows written in
//! batched transactions.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use rusqlite::{Connection, params};
use seekless_jobs::destructive::Forget;

use super::forget_rows;
#[cfg(test)]
use super::lock::WriterLock;
use super::lock::begin;
use super::{CatalogError, display, now};
use crate::index::inspect::ImageInfo;
use crate::index::thumb::Visual;
#[cfg(test)]
use std::path::Path;

/// Rows per transaction, at most. [`BATCH_TIME`] is the loss bound; this only caps the
/// work one commit writes. Each commit writes every page its rows dirtied, and a row of a
/// file never seen lands on a random page of the content-hash index: 4,096 rows share
/// those pages' writes eight times as often as 512 did (tiny files: 1.4× the rows per
/// second, bench/RESULTS.md).
pub(crate) const BATCH_ROWS: usize = 4096;

/// Time one transaction may stay open, at most: a crash loses no more than this.
const BATCH_TIME: Duration = Duration::from_secs(1);

/// What an earlier run recorded about a path.
#[derive(Clone, Debug)]
pub(crate) struct Known {
    pub id: i64,
    pub dev: u64,
    /// The id of its volume's row (`volumes`), when known.
    pub volume: Option<i64>,
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
    /// The id of its volume's row (`volumes`), when known.
    pub volume: Option<i64>,
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
    pub fields: Option<crate::index::inspect::SidecarFields>,
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
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    /// Holds the writer lock (an OS lock on the database file, released on close or
    /// death).
    pub(super) _lock: File,
    pub scan: i64,
    /// Rows per transaction, at most ([`BATCH_ROWS`] unless the caller said).
    pub batch_rows: usize,
    /// The volume (its row's id) of each device number this run met
    /// ([`record_volumes`](Self::record_volumes)): what new rows get.
    pub(super) dev_volume: HashMap<u64, i64>,
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
                     t.size, i.sidecar, i.volume
                 FROM images i LEFT JOIN thumbs t ON t.image = i.id",
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
                        volume: r.get(9)?,
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
                     substr(coalesce(error, ''), 1, ?1) IS NOT ?2, ino, volume
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
                        volume: r.get(7)?,
                        seen: false,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Records the volumes this run met (`found`: each device number, with its volume
    /// when it could be identified) as seen now and not offline, and returns every volume
    /// of the catalog (id → key) with each device number's volume id; new rows of those
    /// device numbers get their volume.
    pub fn record_volumes(
        &mut self,
        found: &[(u64, Option<seekless_sys::VolumeIdentity>)],
        waiting: &dyn Fn(&str),
    ) -> Result<super::Volumes, CatalogError> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| CatalogError::io(&path, e);
        let tx = begin(&self.conn, &path, waiting)?;
        let mut by_dev = HashMap::new();
        {
            let mut seen = tx
                .prepare_cached("UPDATE volumes SET seen = ?2, offline_since = NULL WHERE id = ?1")
                .map_err(err)?;
            let when = now();
            for (dev, volume) in found {
                if let Some(v) = volume {
                    let id = super::schema::volume_row(&tx, v).map_err(err)?;
                    seen.execute(params![id, when]).map_err(err)?;
                    by_dev.insert(*dev, id);
                }
            }
        }
        let keys: HashMap<i64, String> = tx
            .prepare("SELECT id, key FROM volumes")
            .map_err(err)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(err)?
            .collect::<Result<_, _>>()
            .map_err(err)?;
        tx.commit().map_err(err)?;
        self.dev_volume = by_dev.clone();
        Ok(super::Volumes { by_dev, keys })
    }

    /// Moves rows to new paths, records the device number and volume of unchanged files
    /// whose filesystem now has another device number (a disk plugged in again, a
    /// remount) or whose volume was not known, marks the volumes found absent offline
    /// (since now, unless they were already), and deletes rows of files that are gone,
    /// and of sidecars that are gone (unlinking their images first), in one transaction
    /// (waiting for a lock another program holds as [`begin`] says).
    #[allow(clippy::too_many_arguments)]
    pub fn relocate(
        &mut self,
        moved: &[(i64, Vec<u8>)],
        new_place: &[(i64, u64, Option<i64>)],
        offline: &std::collections::BTreeSet<i64>,
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
            let mut place = tx
                .prepare_cached(
                    "UPDATE images SET dev = ?2, volume = coalesce(?3, volume) WHERE id = ?1",
                )
                .map_err(err)?;
            for (id, d, volume) in new_place {
                place.execute(params![id, *d as i64, volume]).map_err(err)?;
            }
            let mut away = tx
                .prepare_cached(
                    "UPDATE volumes SET offline_since = coalesce(offline_since, ?2) WHERE id = ?1",
                )
                .map_err(err)?;
            let when = now();
            for id in offline {
                away.execute(params![id, when]).map_err(err)?;
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
                            let volume = self.dev_volume.get(&row.dev).copied();
                            write_image(row, scan, volume, &mut upsert, &mut stale, &mut thumb)
                                .map_err(err)?
                        }
                        Record::Sidecar(s) => {
                            let volume = self.dev_volume.get(&s.dev).copied();
                            write_sidecar(s, scan, volume, &mut sidecar).map_err(err)?
                        }
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

    /// Drops the catch-up records of `roots` (path bytes), in a transaction of its own:
    /// before the run changes any row (see `CatchUp::stale`).
    pub fn drop_catchup(
        &self,
        roots: &[Vec<u8>],
        waiting: &dyn Fn(&str),
    ) -> Result<(), CatalogError> {
        if roots.is_empty() {
            return Ok(());
        }
        let tx = begin(&self.conn, &self.path, waiting)?;
        for root in roots {
            tx.execute("DELETE FROM catchup WHERE root = ?1", params![root])
                .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// Closes the database, keeping the writer lock for the next run.
    pub fn into_lock(self) -> super::WriterLock {
        super::WriterLock::from_parts(self.path, self._lock)
    }

    /// Records the scan's counts and end.
    pub fn finish(
        &self,
        counts: &crate::index::IndexSummary,
        catchup: &[super::CatchUpRecord],
        waiting: &dyn Fn(&str),
    ) -> Result<(), CatalogError> {
        let tx = begin(&self.conn, &self.path, waiting)?;
        // In the transaction that ends the run: a record never speaks for rows that were
        // not committed.
        for r in catchup {
            tx.execute(
                "INSERT OR REPLACE INTO catchup (root, volume, generation, settings, scan)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![r.root, r.volume, r.generation as i64, r.settings, self.scan],
            )
            .map_err(|e| self.err(e))?;
        }
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
    volume: Option<i64>,
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
            i.error.as_deref().map(message),
            scan,
            phash,
            i.kind,
            i.duration,
            i.codec,
            i.rotation,
            i.content_id,
            i.damaged.as_deref().map(message),
            volume,
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
            why.map(|w| message(w)),
        ])?;
    }
    Ok(())
}

/// An error as the catalog stores it: one line, no trailing space or newline, and every
/// control character escaped as the terminal output escapes names (`\n`, `\t`, `\r`, …,
/// else octal: `\000`, `\033`; C1 controls as their bytes in octal), so that a damaged
/// box name's NUL byte does not cut the text short in SQL, nor a decoder's escape
/// sequence reach the terminal of whoever reads the catalog.
pub(crate) fn message(text: &str) -> String {
    let text = text.trim_end();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            // C0 and DEL as themselves, C1 as their UTF-8 bytes.
            let mut buf = [0; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                seekless_sys::push_c_escape(&mut out, b);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes a sidecar's row.
fn write_sidecar(
    s: &SidecarRow,
    scan: i64,
    volume: Option<i64>,
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
        s.error.as_deref().map(message),
        scan,
        f.is_some(),
        s.ino as i64,
        volume,
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
    hierarchical_keywords, title, error, scan, ino, volume)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?14, ?15)
ON CONFLICT(path_bytes) DO UPDATE SET path = excluded.path, dev = excluded.dev,
    ino = excluded.ino, volume = coalesce(excluded.volume, sidecars.volume),
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
    rotation, content_id, damaged, volume)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
    ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33)
ON CONFLICT(path_bytes) DO UPDATE SET path = excluded.path, dev = excluded.dev,
    ino = excluded.ino, volume = coalesce(excluded.volume, images.volume),
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
    damaged = iif(images.blake3 IS NOT NULL AND excluded.blake3 IS NULL, images.damaged, excluded.damaged),
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_stored_error_is_one_line_without_control_bytes() {
        assert_eq!(
            message("libheif: Invalid input\n"),
            "libheif: Invalid input"
        );
        assert_eq!(
            message("box 'ab\0\u{1b}' runs past the end"),
            "box 'ab\\000\\033' runs past the end"
        );
        assert_eq!(message("a\nb\tc \u{85}d"), "a\\nb\\tc \\302\\205d");
        // Everything else is kept, backslashes and non-ASCII included.
        assert_eq!(message("C:\\x é"), "C:\\x é");
    }

    use super::*;

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

    #[test]
    fn a_damaged_verdict_is_stored_and_kept_by_a_read_that_failed() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("c.db");
        let mut catalog = IndexWriter::open(&db).unwrap();
        let damaged = |db: &Path| -> Option<String> {
            Connection::open(db)
                .unwrap()
                .query_row("SELECT damaged FROM images", [], |r| r.get(0))
                .unwrap()
        };
        let mut cut = row(3, 4, true);
        cut.info.damaged = Some("truncated at 3 B of 9 B\n".into());
        write(&mut catalog, vec![cut]);
        assert_eq!(damaged(&db).as_deref(), Some("truncated at 3 B of 9 B"));
        // Unreadable now: the verdict on the content last read stays with its fields.
        write(&mut catalog, vec![row(3, 4, false)]);
        assert_eq!(damaged(&db).as_deref(), Some("truncated at 3 B of 9 B"));
        // Read whole again: the new verdict (none) replaces it.
        write(&mut catalog, vec![row(3, 5, true)]);
        assert_eq!(damaged(&db), None);
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
}
