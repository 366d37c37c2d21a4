//! Reading a directory: its blocks read ahead, its entries listed with their names in one
//! buffer, sorted by inode number before anything is looked at (inode tables are laid out
//! by number, so on a cold disk the metadata reads become a sweep too), each sorted out by
//! type, and its regular files opened in batches that several threads share.

use std::ffi::OsStr;
use std::fs::{File, FileType};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Visitor;
use super::order::Position;
use super::walker::{Ancestor, Local, Walker};
use crate::error::Error;
use crate::os::{self, EntryType};

/// A directory waiting to be read.
pub(super) struct PendingDir {
    pub(super) path: PathBuf,
    pub(super) node: u32,
    /// The directory's own device and its size when found (for directory read-ahead).
    pub(super) dev: u64,
    pub(super) size: u64,
    pub(super) root_dev: u64,
    pub(super) ancestors: Option<Arc<Ancestor>>,
}

/// Work for a walk thread: a directory to read, or a batch of its files to open and
/// visit. Files are batched so that one large directory is located by many threads at
/// once: on a cold rotational disk that keeps many metadata reads in flight for the disk
/// to reorder, instead of one at a time.
pub(super) enum Work {
    Dir(PendingDir),
    Files(Arc<Listing>, std::ops::Range<usize>),
}

/// The files of one directory, to be opened in batches: names in one buffer and paths made
/// only when a file is opened, so a listed directory costs 24 bytes per file plus its
/// names, in two allocations returned whole when its last batch is done (a path and a
/// batch allocated per file left their freed batches scattered between the kept paths).
pub(super) struct Listing {
    dir: PathBuf,
    /// The directory, open, so its files are opened by name (see
    /// [`os::open_to_locate_in`]); `None` where that cannot be done.
    handle: Option<File>,
    names: Vec<u8>,
    files: Vec<ListedFile>,
}

/// A file of a [`Listing`]: its name is `names[start..start + len]`.
struct ListedFile {
    start: usize,
    len: u32,
    at: Position,
    /// Reached through a symlink that is followed.
    follow: bool,
}

impl Listing {
    fn name(&self, file: &ListedFile) -> &OsStr {
        encoded_name(&self.names[file.start..file.start + file.len as usize])
    }
}

/// Files per batch.
pub(super) const BATCH: usize = 32;

impl<V: Visitor> Walker<'_, V> {
    /// Reads one directory: lists it, sorts its entries by inode number, walks its
    /// subdirectories and keeps its other entries as it meets them, and opens its regular
    /// files in batches, the first here and the rest on any thread.
    pub(super) fn dir(&self, job: PendingDir, local: &mut Local<'_, V>) {
        self.dirs.fetch_add(1, Ordering::Relaxed);
        // Opened once: listed through it, its files opened by name in it, and its blocks
        // read ahead.
        let handle = os::open_dir_for_names(&job.path);
        if self.read_ahead(&job, handle.as_ref()) {
            self.dirs_read_ahead.fetch_add(1, Ordering::Relaxed);
        }
        // Names in one buffer per directory, not one allocation each: a directory of a
        // million entries listed in 32 bytes per entry plus its names, instead of 80.
        let mut names: Vec<u8> = Vec::new();
        let mut entries: Vec<Listed> = Vec::new();
        let listed = os::list_dir(
            &job.path,
            handle.as_ref(),
            &mut local.listing,
            &mut |name, ino, kind| {
                let bytes = name.as_encoded_bytes();
                entries.push(Listed {
                    ino,
                    start: names.len(),
                    len: bytes.len() as u32,
                    kind,
                    pos: entries.len() as u32,
                });
                names.extend_from_slice(bytes);
            },
        );
        if let Err(e) = listed {
            // What was listed before the error is still walked.
            self.fail(Error::io(&job.path, e));
        }
        entries.sort_unstable_by_key(|e| e.ino);
        let mut files: Vec<ListedFile> = Vec::with_capacity(entries.len());
        let filtering = !self.opts.filter.is_empty();
        for listed in entries {
            let name = encoded_name(&names[listed.start..listed.start + listed.len as usize]);
            let file = |follow| ListedFile {
                start: listed.start,
                len: listed.len,
                at: Position {
                    dir: job.node,
                    pos: listed.pos,
                },
                follow,
            };
            // Nearly every entry: a regular file, kept without a path made for it (its
            // path is made once, when it is opened).
            if !filtering && listed.kind == EntryType::File {
                files.push(file(false));
                continue;
            }
            let path = join_exact(&job.path, name);
            let at = Position {
                dir: job.node,
                pos: listed.pos,
            };
            // A type the directory did not give (special files, or a filesystem that does
            // not say) is asked of the entry itself.
            let (kind, special) = match listed.kind {
                EntryType::Unknown => match os::symlink_metadata(&path) {
                    Ok(m) => (EntryType::of(m.file_type()), Some(m)),
                    Err(e) => {
                        self.fail(Error::io(&path, e));
                        continue;
                    }
                },
                kind => (kind, None),
            };
            match kind {
                EntryType::File => {
                    if filtering && !self.opts.filter.keeps(&path, name) {
                        self.filtered.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    files.push(file(false));
                }
                EntryType::Dir => self.subdir(&job, path, at, false),
                EntryType::Symlink if !self.opts.follow && self.opts.others => {
                    match os::symlink_metadata(&path) {
                        Ok(m) => self.other(&path, at, m),
                        Err(e) => self.fail(Error::io(&path, e)),
                    }
                }
                EntryType::Symlink if !self.opts.follow => {
                    self.symlinks.fetch_add(1, Ordering::Relaxed);
                    self.reporter.skipped(&path, "symbolic link");
                }
                EntryType::Symlink => match os::metadata(&path) {
                    Ok(m) if m.is_dir() => self.subdir(&job, path, at, true),
                    Ok(m) if m.is_file() => {
                        if filtering && !self.opts.filter.keeps(&path, name) {
                            self.filtered.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        files.push(file(true));
                    }
                    Ok(m) if self.opts.others => self.other(&path, at, m),
                    Ok(m) => self.skip_special(&path, &m.file_type()),
                    Err(e) => self.fail(Error::io(&path, e)),
                },
                // A FIFO, socket or device node: its metadata was just asked.
                EntryType::Unknown => match special {
                    Some(m) if self.opts.others => self.other(&path, at, m),
                    Some(m) => self.skip_special(&path, &m.file_type()),
                    None => {}
                },
            }
        }
        // Hand all but the first batch to other threads, and do the first here. Batches are
        // pushed last first, so they are taken in inode order.
        let listing = Arc::new(Listing {
            dir: job.path,
            handle,
            names,
            files,
        });
        let mut end = listing.files.len();
        while end > BATCH {
            let start = (end - 1) / BATCH * BATCH;
            self.pool.push(Work::Files(listing.clone(), start..end));
            end = start;
        }
        self.files(&listing, 0..end, local);
    }

    /// Before a directory larger than one block is listed, starts reading its blocks
    /// through the block device in one request, where that applies (see
    /// [`WalkOptions::dir_readahead`]). Costs no system call for a directory of one block
    /// or less, nor on a device already ruled out. Returns whether it started a read.
    fn read_ahead(&self, job: &PendingDir, handle: Option<&File>) -> bool {
        if !self.opts.dir_readahead || job.size <= 4096 {
            return false;
        }
        if self
            .devices
            .known(job.dev)
            .is_some_and(|d| d.block_device().is_none())
        {
            return false;
        }
        let opened;
        let dir = match handle {
            Some(dir) => dir,
            None => match os::open_directory(&job.path) {
                Ok(dir) => {
                    opened = dir;
                    &opened
                }
                Err(_) => return false,
            },
        };
        let device = self.devices.device(job.dev, dir);
        device
            .block_device()
            .is_some_and(|block| os::read_dir_ahead(dir, job.size, block))
    }

    pub(super) fn files(
        &self,
        listing: &Listing,
        batch: std::ops::Range<usize>,
        local: &mut Local<'_, V>,
    ) {
        for f in &listing.files[batch] {
            let name = listing.name(f);
            let path = join_exact(&listing.dir, name);
            let at = listing.handle.as_ref().map(|dir| (dir, name));
            if let Some(item) = self.file(path, at, f.follow, local) {
                local.out.push((f.at, item));
            }
        }
    }
}

/// One entry of a directory being listed: its name is `names[start..start + len]` of the
/// directory's name buffer.
struct Listed {
    ino: u64,
    start: usize,
    len: u32,
    kind: EntryType,
    pos: u32,
}

/// A name whose bytes `as_encoded_bytes` gave.
fn encoded_name(bytes: &[u8]) -> &OsStr {
    // SAFETY: the walk only passes bytes that `as_encoded_bytes` gave for one whole name,
    // in this process and with this toolchain, as `from_encoded_bytes_unchecked` asks.
    unsafe { OsStr::from_encoded_bytes_unchecked(bytes) }
}

/// `dir` joined with `name`, allocated at its final size: it becomes an [`Entry`]'s path
/// without a reallocation (a growing `join` left slack the box then had to shed).
fn join_exact(dir: &Path, name: &OsStr) -> PathBuf {
    let mut path = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    path.push(dir);
    path.push(name);
    path
}

pub(super) fn describe_type(ft: &FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "fifo";
        }
        if ft.is_socket() {
            return "socket";
        }
        if ft.is_block_device() {
            return "block device";
        }
        if ft.is_char_device() {
            return "character device";
        }
    }
    if ft.is_symlink() {
        "symbolic link"
    } else if ft.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::WalkOptions;
    use crate::walk::tests::names;
    use std::fs;

    #[test]
    fn large_directories_split_into_batches_keep_readdir_order() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..(BATCH * 5 + 7) {
            fs::write(t.path().join(format!("f{i}")), b"x").unwrap();
        }
        let readdir: Vec<String> = fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let opts = WalkOptions {
            threads: 4,
            ..WalkOptions::default()
        };
        assert_eq!(names(t.path(), &opts), readdir);
    }
}
