//! File content: the workers that write what the sweeps read (or clone, or copy in the
//! kernel), check the source did not change, and hand the temporary to the group commit.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::commit::{self, GroupCommit, Ready};
use super::decide::Action;
use super::nodes::refresh;
use super::{CopyOptions, Mapping, Method, target};
use crate::atomic::AtomicFile;
use crate::destructive::{Durable, OwnTemp};
use crate::digest::{Algorithm, Hasher};
use crate::stat::Stat;
use seekless_core::Error;
use seekless_core::PlannedFile;
use seekless_core::Reporter;
use seekless_core::read::{self, FileReader, Job, Work};
use seekless_sys as os;
use seekless_sys::sync::lock;

/// The read phase's state, shared by the workers.
pub(super) struct Shared<'a> {
    pub(super) map: &'a Mapping<'a>,
    pub(super) opts: &'a CopyOptions,
    pub(super) reporter: &'a dyn Reporter,
    pub(super) as_root: bool,
    pub(super) actions: &'a [Action],
    /// Complete copies waiting for their data to be flushed before they are renamed.
    pub(super) commits: GroupCommit<Placed>,
    /// The destination is full: the rest is not written.
    pub(super) stop: AtomicBool,
    pub(super) copied: AtomicU64,
    pub(super) updated: AtomicU64,
    pub(super) skipped: AtomicU64,
    pub(super) refreshed: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) cloned: AtomicU64,
    pub(super) methods: Mutex<HashSet<(u64, Method)>>,
    /// (destination, BLAKE3 of the source) of each file copied, for `verify`.
    pub(super) hashes: Mutex<Vec<(PathBuf, String)>>,
    /// Complete copies of files where the destination has a directory (`delete`).
    pub(super) over_dirs: Mutex<Vec<OverDir>>,
}

/// A complete copy, on the disk, of a file whose destination holds a directory: put in
/// place once the run is over, if it saw everything needed to remove that directory.
pub(super) struct OverDir {
    pub(super) temp: OwnTemp,
    pub(super) durable: Durable,
    pub(super) placed: Placed,
}

/// What is counted of a copy once it is in place under its final name.
pub(super) struct Placed {
    /// Not at the destination before (else: replaced).
    pub(super) new: bool,
    pub(super) written: u64,
    pub(super) cloned: u64,
    /// A directory is in its place, to be replaced at the end ([`Action::OverDirectory`]).
    pub(super) over_dir: bool,
    /// (destination, BLAKE3 of the source), for `verify`.
    pub(super) check: Option<(PathBuf, String)>,
}

/// The content hashes kept while reading: the manifest's algorithm, and BLAKE3 for
/// `verify` and `checksum` (one hasher when the manifest's is BLAKE3 too).
pub(super) struct Hashes {
    manifest: Option<Hasher>,
    check: Option<Hasher>,
    /// The manifest's hash is the check hash.
    shared: bool,
}

impl Hashes {
    fn new(manifest: Option<Algorithm>, check: bool) -> Hashes {
        let shared = check && manifest == Some(Algorithm::Blake3);
        Hashes {
            manifest: manifest.map(Algorithm::hasher),
            check: (check && !shared).then(|| Algorithm::Blake3.hasher()),
            shared,
        }
    }

    fn any(&self) -> bool {
        self.manifest.is_some() || self.check.is_some()
    }

    fn update(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.manifest {
            h.update(data);
        }
        if let Some(h) = &mut self.check {
            h.update(data);
        }
    }

    /// (the manifest's hex, the BLAKE3 hex to check with).
    fn finish(self) -> (Option<String>, Option<String>) {
        let manifest = self.manifest.map(Hasher::finish_hex);
        let check = if self.shared {
            manifest.clone()
        } else {
            self.check.map(Hasher::finish_hex)
        };
        (manifest, check)
    }
}

/// What a worker made of one file.
pub(super) struct Outcome {
    /// Copied (or found equal), or not: failed, or left because the destination is full.
    pub(super) done: bool,
    /// The source's hash for the manifest ([`CopyOptions::hash`]).
    pub(super) hash: Option<String>,
}

impl Job for Shared<'_> {
    type Output = Outcome;

    fn work(&self, work: Work<'_>) -> Outcome {
        let (planned, index) = (work.planned(), work.index());
        let (file, buf) = work.into_parts();
        let file = match file {
            Ok(f) if !self.stop.load(Ordering::Relaxed) => f,
            Ok(_) => {
                return Outcome {
                    done: false,
                    hash: None,
                };
            }
            Err(e) => {
                self.fail(e);
                return Outcome {
                    done: false,
                    hash: None,
                };
            }
        };
        let action = self.actions[index as usize];
        let mut hash = None;
        let done = match self.handle(planned, file, action, buf, &mut hash) {
            Ok(()) => true,
            Err(e) => {
                if is_full(&e) {
                    self.stop.store(true, Ordering::Relaxed);
                }
                self.fail(e);
                false
            }
        };
        Outcome { done, hash }
    }

    fn succeeded(outcome: &Outcome) -> bool {
        outcome.done
    }
}

impl Shared<'_> {
    fn fail(&self, err: Error) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.reporter.error(&err);
    }

    /// Counts the copies a flush put in place (or failed to).
    pub(super) fn placed(&self, outcome: commit::Outcome<Placed>) {
        for (placed, done) in outcome {
            match done {
                Ok(()) => {
                    let count = if placed.new {
                        &self.copied
                    } else {
                        &self.updated
                    };
                    count.fetch_add(1, Ordering::Relaxed);
                    self.bytes.fetch_add(placed.written, Ordering::Relaxed);
                    self.cloned.fetch_add(placed.cloned, Ordering::Relaxed);
                    if let Some(check) = placed.check {
                        lock(&self.hashes).push(check);
                    }
                }
                Err(e) => {
                    if is_full(&e) {
                        self.stop.store(true, Ordering::Relaxed);
                    }
                    self.fail(e);
                }
            }
        }
    }

    /// Copies one file (or finds it equal), through the worker's `buf`; `hash` gets the
    /// source's hash for the manifest.
    fn handle(
        &self,
        planned: &PlannedFile,
        mut file: FileReader,
        action: Action,
        buf: &mut [u8],
        hash: &mut Option<String>,
    ) -> Result<(), Error> {
        let src = &*planned.entry.path;
        let dest = self
            .map
            .dest_of(src)
            .expect("planned files have a destination");
        let needs_check = self.opts.verify || action == Action::Compare;
        let mut hashes = Hashes::new(self.opts.hash, needs_check);
        let st = Stat::of(file.opened());

        match action {
            Action::HashOnly | Action::Compare => {
                let (_, complete) =
                    read_all(&mut file, &mut hashes, None, st.size, buf).map_err(|e| e.at(src))?;
                if !complete || file.check_unchanged(st.size).is_err() {
                    return Err(changed_error(src));
                }
                let (manifest, check) = hashes.finish();
                *hash = manifest;
                if action == Action::HashOnly {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                let ours = check.unwrap_or_default();
                let theirs =
                    hash_path(&dest, Algorithm::Blake3).map_err(|e| Error::io(&dest, e))?;
                if ours == theirs {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    let d = os::symlink_metadata(&dest).map_err(|e| Error::io(&dest, e))?;
                    let changed = refresh(
                        src,
                        true,
                        &dest,
                        &Stat::of(&d),
                        self.as_root,
                        self.opts.xattrs,
                    )?;
                    if changed {
                        self.refreshed.fetch_add(1, Ordering::Relaxed);
                    }
                    return Ok(());
                }
                // Different: copy it, reading the source again (rare).
                let mut again = seekless_sys::open_to_read(src).map_err(|e| Error::io(src, e))?;
                let temp = AtomicFile::create_private(&dest).map_err(|e| Error::io(&dest, e))?;
                let mut written = 0u64;
                loop {
                    let n = again.read(buf).map_err(|e| Error::io(src, e))?;
                    if n == 0 {
                        break;
                    }
                    temp.file()
                        .write_all(&buf[..n])
                        .map_err(|e| Error::io(&dest, e))?;
                    written += n as u64;
                }
                let complete = written == st.size;
                let unchanged = again
                    .metadata()
                    .is_ok_and(|now| read::changed_between(file.opened(), &now).is_none());
                let placed = Placed {
                    new: false,
                    written,
                    cloned: 0,
                    over_dir: false,
                    check: self.opts.verify.then(|| (dest.clone(), ours)),
                };
                return self.finish(src, &dest, temp, &st, complete && unchanged, placed);
            }
            Action::Copy | Action::Update | Action::OverDirectory | Action::Skip => {}
        }

        let temp = AtomicFile::create_private(&dest).map_err(|e| Error::io(&dest, e))?;
        #[cfg(any(test, feature = "test-hooks"))]
        seekless_core::test_hooks::at_start(src);
        let hashing = hashes.any();
        let mut method = Method::ReadWrite;
        let mut done = None;
        if self.opts.fast_path && !hashing && self.map.dest_on(src, planned.entry.id.dev) {
            if os::clone_file(file.file(), temp.file()).is_ok() {
                method = Method::Clone;
                done = Some((st.size, true));
            } else if st.has_holes() {
                // copy_file_range may fill holes in: read what is data, write only that.
            } else if let Ok(n) = os::copy_range(file.file(), temp.file(), st.size) {
                method = Method::CopyRange;
                done = Some((n, n == st.size));
            }
        }
        let (bytes, complete) = match done {
            Some(d) => d,
            None => {
                let sparse = st.has_holes();
                read_all(
                    &mut file,
                    &mut hashes,
                    Some((temp.file(), sparse)),
                    st.size,
                    buf,
                )
                .map_err(|e| e.at_either(src, &dest))?
            }
        };
        lock(&self.methods).insert((planned.entry.id.dev, method));
        let (manifest, check) = hashes.finish();
        let (written, cloned) = if method == Method::Clone {
            (0, bytes)
        } else {
            (bytes, 0)
        };
        let placed = Placed {
            new: action == Action::Copy,
            written,
            cloned,
            over_dir: action == Action::OverDirectory,
            check: check
                .filter(|_| self.opts.verify)
                .map(|c| (dest.clone(), c)),
        };
        let unchanged = file.check_unchanged(st.size).is_ok();
        self.finish(src, &dest, temp, &st, complete && unchanged, placed)?;
        *hash = manifest;
        Ok(())
    }

    /// Given that the source was read whole and did not change (`intact`), gives the
    /// temporary its metadata and hands it to the group commit, which puts it in place
    /// once its data is on the disk.
    fn finish(
        &self,
        src: &Path,
        dest: &Path,
        temp: AtomicFile,
        st: &Stat,
        intact: bool,
        placed: Placed,
    ) -> Result<(), Error> {
        if !intact {
            return Err(changed_error(src));
        }
        let io = |e| Error::io(dest, e);
        if st.has_holes() {
            temp.file().set_len(st.size).map_err(io)?;
        }
        if self.opts.xattrs {
            target::sync_xattrs(src, temp.temp())?;
        }
        target::apply(temp.temp(), Some(temp.file()), st, self.as_root).map_err(io)?;
        if self.opts.fsync {
            temp.file().sync_all().map_err(io)?;
        }
        // A directory in the way (`delete`, decided when planned): replaced at the end of the
        // run, and only if the run saw everything there; meanwhile the copy waits, on the
        // disk. (One that appeared since makes the rename fail (EISDIR), and the file is
        // reported.)
        if placed.over_dir {
            let durable = Durable::synced(temp.file()).map_err(io)?;
            if let Some(temp) = temp.into_temp() {
                lock(&self.over_dirs).push(OverDir {
                    temp,
                    durable,
                    placed,
                });
            }
            return Ok(());
        }
        let bytes = placed.written;
        self.placed(self.commits.add(Ready { temp, done: placed }, bytes));
        Ok(())
    }
}

/// A read or write failure while copying a file's content.
pub(super) enum CopyFault {
    Read(io::Error),
    Write(io::Error),
}

impl CopyFault {
    fn at(self, src: &Path) -> Error {
        match self {
            CopyFault::Read(e) | CopyFault::Write(e) => Error::io(src, e),
        }
    }

    fn at_either(self, src: &Path, dest: &Path) -> Error {
        match self {
            CopyFault::Read(e) => Error::io(src, e),
            CopyFault::Write(e) => Error::io(dest, e),
        }
    }
}

impl From<Error> for CopyFault {
    fn from(e: Error) -> CopyFault {
        CopyFault::Read(e.into())
    }
}

/// Reads the file's `size` bytes through `buf`, hashing, and writes them to `out` if
/// given (with `sparse`, only its data regions, at their offsets). Returns the bytes read,
/// and whether the file held them all (it did not end early; one that grew is caught by
/// [`FileReader::check_unchanged`]).
pub(super) fn read_all(
    file: &mut FileReader,
    hashes: &mut Hashes,
    out: Option<(&File, bool)>,
    size: u64,
    buf: &mut [u8],
) -> Result<(u64, bool), CopyFault> {
    let regions = match out {
        Some((_, true)) => file.regions(size)?,
        _ => std::iter::once(0..size).collect(),
    };
    let mut total = 0u64;
    let whole = file.read_regions(&regions, buf, |at, chunk| {
        hashes.update(chunk);
        if let Some((out, _)) = out {
            os::write_all_at(out, chunk, at).map_err(CopyFault::Write)?;
        }
        total += chunk.len() as u64;
        Ok::<_, CopyFault>(())
    })?;
    Ok((total, whole))
}

pub(super) fn changed_error(src: &Path) -> Error {
    Error::io(
        src,
        io::Error::other("file changed while being copied; not copied"),
    )
}

/// Whether an error means the destination is full.
pub(super) fn is_full(err: &Error) -> bool {
    err.io_error().is_some_and(|e| {
        e.kind() == io::ErrorKind::StorageFull || e.kind() == io::ErrorKind::QuotaExceeded
    })
}

/// The hash of a file read plainly.
pub(super) fn hash_path(path: &Path, algo: Algorithm) -> io::Result<String> {
    let f = os::with_path(path, |p| File::open(p))?;
    crate::digest::hash_stream(f, algo)
}
