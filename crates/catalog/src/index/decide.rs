//! Phase 4 of an index run: what the catalog's rows and the walk decide, before anything
//! is read: which files to read, which rows moved, which are gone, which sidecars link to
//! which images.

use super::roots::{RootState, is_own, vanished_mounts};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use seekless_core::{Plan, PlannedFile, Reporter};
use seekless_jobs::destructive::{Clearance, Forget};
use seekless_sys::{Scope, path_to_bytes};

use super::catalog::{self, KnownSidecar, Record, Row, SidecarRow, Volumes};
use super::{IndexOptions, IndexSummary, inspect, is_sidecar};

/// What phase 4 decided of the planned files.
pub(super) struct Decided {
    /// Per planned file: read it.
    pub(super) read: Vec<bool>,
    /// Planned files at a path the catalog has no row for.
    pub(super) at_new_path: Vec<u32>,
    /// Rows of unchanged files now on another device number, or whose volume was not
    /// known: (row id, device number, volume id).
    pub(super) new_place: Vec<(i64, u64, Option<i64>)>,
}

/// Phase 4: the files at known paths, unchanged or changed (marking their rows seen).
/// Rows left unseen after this are of paths the walk did not find.
pub(super) fn decide_known(
    plan: &Plan,
    own: &[PathBuf],
    known: &mut HashMap<Vec<u8>, catalog::Known>,
    volumes: &Volumes,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    summary: &mut IndexSummary,
) -> Decided {
    let mut read = vec![false; plan.files().len()];
    let mut at_new_path: Vec<u32> = Vec::new();
    let mut new_place: Vec<(i64, u64, Option<i64>)> = Vec::new();
    for (i, f) in plan.files().iter().enumerate() {
        if is_sidecar(&f.entry.path) {
            continue;
        }
        if is_own(own, f) {
            reporter.skipped(&f.entry.path, "the catalog itself");
            continue;
        }
        summary.seen += 1;
        let bytes = path_to_bytes(&f.entry.path);
        if opts.hold.contains(bytes.as_ref()) {
            // Still being written: left for the batch after it is closed.
            if let Some(k) = known.get_mut(bytes.as_ref()) {
                k.seen = true;
            }
            continue;
        }
        match known.get_mut(bytes.as_ref()) {
            Some(k) => {
                k.seen = true;
                // The device number is not compared: it changes when a disk is plugged
                // in again or a filesystem mounted again, the file staying the same.
                if k.read
                    && k.identity()[1..] == identity(f)[1..]
                    && !opts.rehash
                    && !opts.reread.contains(bytes.as_ref())
                {
                    summary.unchanged += 1;
                    let volume = volumes.of_dev(f.entry.id.dev);
                    if k.dev != f.entry.id.dev || (volume.is_some() && k.volume != volume) {
                        new_place.push((k.id, f.entry.id.dev, volume));
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
        new_place,
    }
}

/// Phase 4b: the sidecars the walk found (marking their rows seen): new or changed ones
/// (size or mtime), and those whose last read failed, are read in the sweep with the
/// images; the others are not read. A sidecar is never "moved": it is small, read again
/// at its new path.
pub(super) fn decide_sidecars(
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
pub(super) fn rows_of_unopened(
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
pub(super) fn gone_sidecars(
    known: &HashMap<Vec<u8>, KnownSidecar>,
    roots: &[(PathBuf, RootState)],
    clearance: &Clearance,
    volumes: &Volumes,
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
    let candidates: Vec<(&[u8], u64, Option<i64>, i64)> = not_found
        .iter()
        .filter(|(bytes, k)| {
            forgettable.contains(&k.id)
                && !scopes
                    .iter()
                    .any(|(r, state)| *state != RootState::Present && r.contains_bytes(bytes))
        })
        .map(|(bytes, k)| (*bytes, k.dev, k.volume, k.id))
        .collect();
    let (kept, _) = vanished_mounts(&candidates, volumes, opts.prune, &seekless_core::Quiet);
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
pub(super) fn links(
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
/// path with the same identity (volume included: an inode number means nothing on another
/// filesystem; the device number for a row whose volume is not known) moved there (its
/// row follows it, nothing is read); the rest are forgotten, but for rows at or under a
/// path the walk could not see whole, and rows under a mount point whose filesystem is
/// not there any more (an error; those under a missing or empty root were told of in
/// phase 3). Returns the moves, what may be forgotten, and the volumes found absent
/// (offline); files at new paths that did not move are marked to be read.
#[allow(clippy::too_many_arguments)]
pub(super) fn moved_and_gone(
    plan: &Plan,
    known: &HashMap<Vec<u8>, catalog::Known>,
    roots: &[(PathBuf, RootState)],
    clearance: &Clearance,
    at_new_path: Vec<u32>,
    read: &mut [bool],
    new_place: &mut Vec<(i64, u64, Option<i64>)>,
    volumes: &Volumes,
    opts: &IndexOptions,
    reporter: &dyn Reporter,
    summary: &mut IndexSummary,
) -> MovedAndGone {
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
    let mut gone: HashMap<(Fs, [i64; 3]), i64> = known
        .values()
        .filter(|k| forgettable.contains(&k.id))
        .map(|k| {
            let fs = k.volume.map_or(Fs::Dev(k.dev), Fs::Volume);
            let [_, rest @ ..] = k.identity();
            ((fs, rest), k.id)
        })
        .collect();
    let mut moved: Vec<(i64, Vec<u8>)> = Vec::new();
    for i in at_new_path {
        let f = &plan.files()[i as usize];
        let [_, rest @ ..] = identity(f);
        // Its volume's rows first, then the rows of its device number whose volume is
        // not known.
        let by_volume = volumes
            .of_dev(f.entry.id.dev)
            .map(|v| (Fs::Volume(v), rest))
            .filter(|key| gone.contains_key(key));
        let key = by_volume.unwrap_or((Fs::Dev(f.entry.id.dev), rest));
        match gone.remove(&key) {
            Some(id) if !opts.rehash => {
                summary.moved += 1;
                moved.push((id, path_to_bytes(&f.entry.path).into_owned()));
                // Its device number now (and its volume, if its row had none).
                new_place.push((id, f.entry.id.dev, volumes.of_dev(f.entry.id.dev)));
            }
            Some(id) => {
                // Read again under its new path; the old row goes.
                gone.insert(key, id);
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
    let candidates: Vec<(&[u8], u64, Option<i64>, i64)> = known
        .iter()
        .filter(|(bytes, k)| {
            gone_ids.contains(&k.id) && !absent.iter().any(|r| r.contains_bytes(bytes))
        })
        .map(|(bytes, k)| (bytes.as_slice(), k.dev, k.volume, k.id))
        .collect();
    let (kept, offline) = vanished_mounts(&candidates, volumes, opts.prune, reporter);
    // What moved is not forgotten, nor what a vanished mount point keeps.
    let left: HashSet<i64> = gone.into_values().collect();
    forget.retain(|id| left.contains(&id) && !kept.contains(&id));
    summary.removed = forget.len() as u64;
    MovedAndGone {
        moved,
        forget,
        offline,
    }
}

/// What phase 6 decided: the rows that moved (id, new path bytes), what may be
/// forgotten, and the volumes found absent (offline).
pub(super) struct MovedAndGone {
    pub(super) moved: Vec<(i64, Vec<u8>)>,
    pub(super) forget: Forget,
    pub(super) offline: BTreeSet<i64>,
}

/// The filesystem of a row, as far as a move goes: its volume, or only its device number
/// when its volume is not known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Fs {
    Volume(i64),
    Dev(u64),
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
pub(super) fn mtime_ns(t: Option<SystemTime>) -> i64 {
    let Some(t) = t else { return 0 };
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}
