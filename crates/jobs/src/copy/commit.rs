//! Group commit: a copy gets its final name only once its data is on the disk.
//!
//! A file renamed into place whose data is still in the page cache can come back after a
//! power cut with the right size and mtime and zeros inside (XFS; ext4 without
//! `auto_da_alloc` on new files), and the next run's quick check would call it unchanged
//! forever. An `fsync` per file makes that impossible but costs a journal commit per file.
//! Instead, complete temporaries wait in a batch; when the batch is full (or the copy
//! ends) each destination filesystem in it is flushed once (`syncfs`), and only then are
//! the temporaries renamed. The closing flush of the copy makes the renames themselves
//! durable. Where there is no `syncfs` (not Linux), each file is flushed before its
//! rename.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::atomic::AtomicFile;
use crate::destructive::Durable;
use seekless_core::Error;
use seekless_sys as os;
use seekless_sys::sync::lock;

/// Files or bytes after which a batch is flushed and renamed.
const BATCH_FILES: usize = 4096;
const BATCH_BYTES: u64 = 512 << 20;

/// A complete temporary, waiting for its rename.
pub(super) struct Ready<T> {
    pub temp: AtomicFile,
    /// What the caller counts once the file is in place.
    pub done: T,
}

/// A temporary in a batch: closed (a batch of thousands must not hold a descriptor
/// each), with the filesystem it is on.
struct Waiting<T> {
    ready: Ready<T>,
    dev: u64,
}

struct Batch<T> {
    files: Vec<Waiting<T>>,
    bytes: u64,
    /// One open file per destination filesystem in the batch, to flush it by.
    filesystems: HashMap<u64, File>,
}

impl<T> Default for Batch<T> {
    fn default() -> Self {
        Batch {
            files: Vec::new(),
            bytes: 0,
            filesystems: HashMap::new(),
        }
    }
}

/// Temporaries waiting to be flushed and renamed.
pub(super) struct GroupCommit<T> {
    /// Flush before renaming (else rename at once: `--no-sync`).
    durable: bool,
    batch: Mutex<Batch<T>>,
}

/// What a flush did with each file: put in place, or failed (the error names its
/// destination).
pub(super) type Outcome<T> = Vec<(T, Result<(), Error>)>;

impl<T> GroupCommit<T> {
    pub(super) fn new(durable: bool) -> Self {
        GroupCommit {
            durable,
            batch: Mutex::new(Batch::default()),
        }
    }

    /// Adds a complete temporary of `bytes` bytes. Returns what was put in place (or
    /// failed) now: nothing while the batch fills, the whole batch when it is full.
    pub(super) fn add(&self, mut ready: Ready<T>, bytes: u64) -> Outcome<T> {
        if !self.durable {
            return vec![rename(ready, Durable::not_asked())];
        }
        if !os::HAS_SYNCFS {
            // No call flushes a filesystem at once here: this file alone, then its rename.
            return vec![match Durable::synced(ready.temp.file()) {
                Ok(durable) => rename(ready, durable),
                Err(e) => failed(ready, e),
            }];
        }
        let file = ready.temp.file();
        let dev = match file
            .metadata()
            .and_then(|m| os::file_id(ready.temp.temp(), Some(file), &m))
        {
            Ok(id) => id.dev,
            Err(e) => return vec![failed(ready, e)],
        };
        let mut batch = lock(&self.batch);
        if let std::collections::hash_map::Entry::Vacant(slot) = batch.filesystems.entry(dev) {
            // A descriptor to flush the filesystem by.
            match file.try_clone() {
                Ok(f) => {
                    slot.insert(f);
                }
                Err(e) => {
                    drop(batch);
                    return vec![failed(ready, e)];
                }
            }
        }
        ready.temp.close();
        batch.files.push(Waiting { ready, dev });
        batch.bytes += bytes;
        if batch.files.len() < BATCH_FILES && batch.bytes < BATCH_BYTES {
            return Vec::new();
        }
        let full = std::mem::take(&mut *batch);
        drop(batch);
        flush(full)
    }

    /// Flushes and renames what is waiting.
    pub(super) fn finish(&self) -> Outcome<T> {
        let batch = std::mem::take(&mut *lock(&self.batch));
        flush(batch)
    }
}

/// Flushes every filesystem of the batch once, then renames its files. A filesystem that
/// cannot be flushed keeps its files out of place (their temporaries are removed).
fn flush<T>(batch: Batch<T>) -> Outcome<T> {
    let synced: HashMap<u64, io::Result<Durable>> = batch
        .filesystems
        .iter()
        .map(|(dev, f)| (*dev, Durable::filesystem_synced(f)))
        .collect();
    batch
        .files
        .into_iter()
        .map(|Waiting { ready, dev }| match synced.get(&dev) {
            Some(Ok(durable)) => rename(ready, *durable),
            Some(Err(e)) => {
                let why = io::Error::new(
                    e.kind(),
                    format!(
                        "not put in place: flushing its filesystem failed: {}",
                        seekless_sys::describe_io(e)
                    ),
                );
                failed(ready, why)
            }
            None => failed(
                ready,
                io::Error::other("not put in place: its filesystem unknown"),
            ),
        })
        .collect()
}

fn failed<T>(ready: Ready<T>, e: io::Error) -> (T, Result<(), Error>) {
    let err = Error::io(ready.temp.path(), e);
    (ready.done, Err(err))
}

fn rename<T>(ready: Ready<T>, durable: Durable) -> (T, Result<(), Error>) {
    let path: PathBuf = ready.temp.path().to_path_buf();
    let done = ready
        .temp
        .commit_with(durable)
        .map_err(|e| Error::io(path, e));
    (ready.done, done)
}
