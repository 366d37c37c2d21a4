//! Walk: expand inputs (files and directories) into entries, one per regular file.
//!
//! - Directories are read by a small pool of threads; within a directory, entries are
//!   sorted by inode number before anything is stat-ed or opened, because inode tables are
//!   laid out by number (on a cold disk this turns metadata reads into a sweep too).
//! - Before a directory is listed, its blocks may be read ahead in one request through the
//!   block device ([`WalkOptions::dir_readahead`]; ext2/3/4 on rotational disks, as root).
//! - FIFOs, sockets and device nodes are skipped and counted, never opened; with
//!   [`WalkOptions::others`] they are kept as [`Other`] entries, with directories and
//!   symlinks (an archiver stores them all).
//! - Symlinks inside directories are skipped unless `follow` is set; with it, a link back
//!   to a directory being walked is reported as a loop. Symlinks named as inputs are
//!   always followed (like `sha256sum FILE` or `tar` with `-h` on the command line).
//! - The walk hands each regular file, opened once, to a visitor (the planner locates it
//!   through the same descriptor), and returns what the visitor made in *given order*:
//!   inputs in the order given, directory contents in `readdir` order, depth first — the
//!   order `find` would print.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{File, FileType, Metadata};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::SystemTime;

use serde::Serialize;

use crate::device::Devices;
use crate::error::{Error, ErrorKind};
use crate::file_id::FileId;
use crate::filter::Filter;
use crate::os;
use crate::path_bytes::path_from_bytes;
use crate::report::Reporter;
use crate::sync::{into_inner, join_all, lock, wait};

/// One regular file found by the walk: only what later stages need.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Entry {
    /// The path, as given or joined from the given directory.
    pub path: Box<Path>,
    /// Device and inode.
    pub id: FileId,
    /// Size in bytes when it was found.
    pub size: u64,
    /// Modification time when it was found (to notice changes while reading).
    pub modified: Option<SystemTime>,
}

impl Entry {
    pub(crate) fn from_metadata(path: Box<Path>, id: FileId, meta: &Metadata) -> Self {
        Self {
            path,
            id,
            size: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

/// An entry of the tree that is not a regular file: a directory, symlink, FIFO, socket or
/// device node. Kept when [`WalkOptions::others`] is set (an archiver needs them).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Other {
    /// The path, as given or joined from the given directory.
    pub path: Box<Path>,
    /// Its metadata when found: of the link itself for a symlink, of what a followed
    /// link points to otherwise.
    pub metadata: Metadata,
}

/// What a walk found, in given order.
#[derive(Debug)]
#[non_exhaustive]
pub struct Walked<T> {
    /// What the visitor made of each regular file.
    pub files: Vec<T>,
    /// Directories, symlinks and special files, when [`WalkOptions::others`] is set.
    pub others: Vec<Other>,
    /// Counts.
    pub stats: WalkStats,
}

/// How to walk.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WalkOptions {
    /// Follow symlinks found inside directories.
    pub follow: bool,
    /// Do not descend into directories on other filesystems than their input.
    pub one_file_system: bool,
    /// Which files found in directories to keep.
    pub filter: Filter,
    /// Threads reading directories and opening files.
    pub threads: usize,
    /// Before reading a directory, read its blocks ahead in one request through the
    /// block device, where that works (Linux, ext2/3/4, rotational disk, the device
    /// readable: root or the `disk` group). ext4 otherwise reads an indexed directory
    /// one block at a time, each waiting for the last.
    pub dir_readahead: bool,
    /// Walk directories named as inputs. Off, such an input is an error ("Is a
    /// directory"), as for a list of files (a manifest), where it stands for one file.
    pub descend_into_inputs: bool,
    /// Also keep every directory, symlink and special file met ([`Walked::others`]), as an
    /// archiver must. Symlinks are then entries of their own: not skipped, and, unless
    /// [`follow`](Self::follow) is set, not followed even when named as inputs (as `tar`
    /// stores a link named on its command line as the link).
    pub others: bool,
}

impl Default for WalkOptions {
    fn default() -> Self {
        Self {
            follow: false,
            one_file_system: false,
            filter: Filter::default(),
            // Threads mostly wait for metadata on a cold disk; more of them means more
            // reads in flight for the disk to reorder (a drive queues 32). Measured in
            // bench/hdd/README.md (lookup vs `--walk-threads`).
            threads: 64,
            dir_readahead: true,
            descend_into_inputs: true,
            others: false,
        }
    }
}

/// What the walk skipped and how long it took.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct WalkStats {
    /// Directories read.
    pub dirs: u64,
    /// Regular files handed to the visitor.
    pub files: u64,
    /// FIFOs, sockets and device nodes skipped.
    pub special: u64,
    /// Symlinks skipped (not following).
    pub symlinks: u64,
    /// Directories not entered because they are on another filesystem.
    pub other_fs: u64,
    /// Files the filter left out.
    pub filtered: u64,
    /// Paths that failed.
    pub errors: u64,
    /// Directories whose blocks were read ahead through the block device.
    pub dirs_read_ahead: u64,
    /// Directories reached a second time (bind mounts, links followed, overlapping
    /// inputs), not walked again.
    pub revisited_dirs: u64,
}

/// Where an item sits in given order: its directory node and position in it.
#[derive(Clone, Copy)]
struct Position {
    dir: u32,
    pos: u32,
}

/// The pseudo-directory whose children are the inputs.
const INPUTS: u32 = 0;

struct DirNode {
    parent: u32,
    pos: u32,
}

/// A directory waiting to be read.
struct PendingDir {
    path: PathBuf,
    node: u32,
    /// The directory's own device and its size when found (for directory read-ahead).
    dev: u64,
    size: u64,
    root_dev: u64,
    ancestors: Option<Arc<Ancestor>>,
}

/// The chain of directories above a directory, for loop detection when following links.
struct Ancestor {
    id: FileId,
    path: PathBuf,
    parent: Option<Arc<Ancestor>>,
}

impl Ancestor {
    fn find(chain: &Option<Arc<Ancestor>>, id: FileId) -> Option<&Path> {
        let mut at = chain.as_deref();
        while let Some(a) = at {
            if a.id == id {
                return Some(&a.path);
            }
            at = a.parent.as_deref();
        }
        None
    }
}

/// Work for a walk thread: a directory to read, or a batch of its files to open and
/// visit. Files are batched so that one large directory is located by many threads at
/// once: on a cold rotational disk that keeps many metadata reads in flight for the disk
/// to reorder, instead of one at a time.
enum Work {
    Dir(PendingDir),
    Files(Arc<Listing>, std::ops::Range<usize>),
}

/// The files of one directory, to be opened in batches: names in one buffer and paths made
/// only when a file is opened, so a listed directory costs 24 bytes per file plus its
/// names, in two allocations returned whole when its last batch is done (a path and a
/// batch allocated per file left their freed batches scattered between the kept paths).
struct Listing {
    dir: PathBuf,
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
    fn path(&self, file: &ListedFile) -> PathBuf {
        let bytes = &self.names[file.start..file.start + file.len as usize];
        join_exact(&self.dir, encoded_name(bytes))
    }
}

/// Files per batch.
const BATCH: usize = 32;

struct Queue {
    work: Vec<Work>,
    busy: usize,
    /// A worker panicked: the others stop taking work, and the walk re-raises the panic.
    aborted: bool,
}

/// Bytes per chunk of collected results: what each walk thread may hold before handing
/// its items over (64 threads: 1 MiB in all, whatever the item size and thread timing).
const CHUNK_BYTES: usize = 16 << 10;

/// Collects visited items into one shared list, a chunk at a time (one lock per chunk, not
/// per item). Gathering n items holds n plus a chunk per thread: the list grows in place
/// (large reallocations remap pages rather than copy them), and each thread's chunk
/// buffer, allocated once at its full size, is reused. A list per thread joined at the end
/// held twice the items at its peak, since memory freed by the allocator is not returned
/// to the system.
struct Collector<'a, T> {
    chunk: Vec<(Position, T)>,
    all: &'a Mutex<Vec<(Position, T)>>,
}

impl<'a, T> Collector<'a, T> {
    /// Items per chunk: [`CHUNK_BYTES`] of them, at least one.
    const ITEMS: usize = {
        let size = std::mem::size_of::<(Position, T)>();
        if size >= CHUNK_BYTES {
            1
        } else {
            CHUNK_BYTES / size
        }
    };

    fn new(all: &'a Mutex<Vec<(Position, T)>>) -> Self {
        Self {
            chunk: Vec::new(),
            all,
        }
    }

    fn push(&mut self, at: Position, item: T) {
        if self.chunk.len() == Self::ITEMS {
            lock(self.all).append(&mut self.chunk);
        }
        if self.chunk.capacity() == 0 {
            // Once, at its full size: growing it by doubling would leave the smaller
            // buffers behind in this thread's allocator arena.
            self.chunk.reserve_exact(Self::ITEMS);
        }
        self.chunk.push((at, item));
    }
}

impl<T> Drop for Collector<'_, T> {
    fn drop(&mut self) {
        if !self.chunk.is_empty() {
            lock(self.all).append(&mut self.chunk);
        }
    }
}

/// Marks a worker busy with one job; when dropped (also when the job panics) it marks it
/// idle again and wakes the others, so a panic can never leave them waiting forever.
struct Busy<'a> {
    queue: &'a Mutex<Queue>,
    wake: &'a Condvar,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut q = lock(self.queue);
        q.busy -= 1;
        if std::thread::panicking() {
            q.aborted = true;
        }
        let idle = q.aborted || (q.busy == 0 && q.work.is_empty());
        drop(q);
        if idle {
            self.wake.notify_all();
        }
    }
}

struct Shared<'a, V, T> {
    opts: &'a WalkOptions,
    devices: &'a Devices,
    reporter: &'a dyn Reporter,
    visit: &'a V,
    queue: Mutex<Queue>,
    wake: Condvar,
    found: Mutex<Vec<(Position, T)>>,
    others: Mutex<Vec<(Position, Other)>>,
    nodes: Mutex<Vec<DirNode>>,
    seen_dirs: Mutex<HashSet<FileId>>,
    dirs: AtomicU64,
    files: AtomicU64,
    special: AtomicU64,
    symlinks: AtomicU64,
    other_fs: AtomicU64,
    filtered: AtomicU64,
    errors: AtomicU64,
    dirs_read_ahead: AtomicU64,
    revisited_dirs: AtomicU64,
}

/// Walks `inputs`, calling `visit` (from worker threads) with each regular file and its
/// open descriptor. Returns what `visit` returned, in given order, the other entries when
/// asked for, and the walk's counts.
///
/// A visitor error is reported and counted like any other per-path error.
pub fn walk<T, V>(
    inputs: &[PathBuf],
    opts: &WalkOptions,
    reporter: &dyn Reporter,
    visit: &V,
) -> Walked<T>
where
    T: Send,
    V: Fn(Entry, &File) -> Result<T, Error> + Sync,
{
    walk_on(inputs, opts, reporter, visit, &Devices::default())
}

/// [`walk`] with the device registry the caller shares with later stages.
pub(crate) fn walk_on<T, V, P>(
    inputs: &[P],
    opts: &WalkOptions,
    reporter: &dyn Reporter,
    visit: &V,
    devices: &Devices,
) -> Walked<T>
where
    T: Send,
    V: Fn(Entry, &File) -> Result<T, Error> + Sync,
    P: AsRef<Path>,
{
    let shared = Shared {
        opts,
        reporter,
        visit,
        devices,
        queue: Mutex::new(Queue {
            work: Vec::new(),
            busy: 0,
            aborted: false,
        }),
        wake: Condvar::new(),
        found: Mutex::new(Vec::new()),
        others: Mutex::new(Vec::new()),
        nodes: Mutex::new(vec![DirNode {
            parent: INPUTS,
            pos: 0,
        }]),
        seen_dirs: Mutex::new(HashSet::new()),
        dirs: AtomicU64::new(0),
        files: AtomicU64::new(0),
        special: AtomicU64::new(0),
        symlinks: AtomicU64::new(0),
        other_fs: AtomicU64::new(0),
        filtered: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        dirs_read_ahead: AtomicU64::new(0),
        revisited_dirs: AtomicU64::new(0),
    };

    // Inputs are handled on this thread: files are visited directly, directories queued.
    {
        let mut out = Collector::new(&shared.found);
        for (i, input) in inputs.iter().enumerate() {
            let at = Position {
                dir: INPUTS,
                pos: i as u32,
            };
            shared.input(input.as_ref(), at, &mut out);
        }
    }

    let threads = opts.threads.max(1);
    // A worker that panicked has marked the queue aborted, so the others stop; its panic
    // is re-raised here, on the caller's thread, once all of them have ended.
    std::thread::scope(|s| {
        // Where threads are scarce (a pids or address-space limit), walk with those that
        // could be had, down to this thread alone.
        let mut handles = Vec::with_capacity(threads);
        for _ in 0..threads {
            match std::thread::Builder::new().spawn_scoped(s, || shared.work()) {
                Ok(h) => handles.push(h),
                Err(_) => break,
            }
        }
        if handles.is_empty() {
            shared.work();
        }
        join_all(handles);
    });

    let found = into_inner(shared.found);
    let nodes = into_inner(shared.nodes);
    let files = given_order(&nodes, found);
    let others = given_order(&nodes, into_inner(shared.others));
    let stats = WalkStats {
        dirs: shared.dirs.into_inner(),
        files: shared.files.into_inner(),
        special: shared.special.into_inner(),
        symlinks: shared.symlinks.into_inner(),
        other_fs: shared.other_fs.into_inner(),
        filtered: shared.filtered.into_inner(),
        errors: shared.errors.into_inner(),
        dirs_read_ahead: shared.dirs_read_ahead.into_inner(),
        revisited_dirs: shared.revisited_dirs.into_inner(),
    };
    Walked {
        files,
        others,
        stats,
    }
}

impl<T, V> Shared<'_, V, T>
where
    T: Send,
    V: Fn(Entry, &File) -> Result<T, Error> + Sync,
{
    fn fail(&self, err: Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.reporter.error(&err);
    }

    /// Keeps a directory, symlink or special file, if others are kept.
    fn other(&self, path: &Path, at: Position, metadata: Metadata) {
        if self.opts.others {
            let other = Other {
                path: path.into(),
                metadata,
            };
            lock(&self.others).push((at, other));
        }
    }

    fn input(&self, path: &Path, at: Position, out: &mut Collector<'_, T>) {
        // Inputs that are symlinks are followed, except by an archiver not following links.
        let meta = match if self.opts.others && !self.opts.follow {
            os::symlink_metadata(path)
        } else {
            os::metadata(path)
        } {
            Ok(m) => m,
            Err(e) => return self.fail(Error::io(path, e)),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            return self.other(path, at, meta);
        }
        if ft.is_dir() && !self.opts.descend_into_inputs {
            let why = std::io::Error::new(std::io::ErrorKind::IsADirectory, "Is a directory");
            return self.fail(Error::io(path, why));
        }
        if ft.is_dir() {
            let id = match os::file_id(path, None, &meta) {
                Ok(id) => id,
                Err(e) => return self.fail(Error::io(path, e)),
            };
            if !self.first_visit(id, path) {
                return;
            }
            let node = self.new_node(at);
            let ancestors = self.opts.follow.then(|| {
                Arc::new(Ancestor {
                    id,
                    path: path.to_path_buf(),
                    parent: None,
                })
            });
            let size = meta.len();
            self.other(path, at, meta);
            self.push(PendingDir {
                path: path.to_path_buf(),
                node,
                dev: id.dev,
                size,
                root_dev: id.dev,
                ancestors,
            });
        } else if ft.is_file() {
            if let Some(item) = self.file(path.to_path_buf(), true) {
                out.push(at, item);
            }
        } else if self.opts.others {
            self.other(path, at, meta);
        } else {
            // Named explicitly but not readable as a file: say so, it is an error.
            self.special.fetch_add(1, Ordering::Relaxed);
            self.fail(Error::new(
                path,
                ErrorKind::NotRegular {
                    kind: describe_type(&ft),
                },
            ));
        }
    }

    /// Whether directory `id` is seen for the first time; if not (a bind mount, a link
    /// followed, overlapping inputs), it is counted and, for `-v`, named.
    fn first_visit(&self, id: FileId, path: &Path) -> bool {
        let first = lock(&self.seen_dirs).insert(id);
        if !first {
            self.revisited_dirs.fetch_add(1, Ordering::Relaxed);
            self.reporter
                .skipped(path, "directory already walked under another path");
        }
        first
    }

    fn new_node(&self, at: Position) -> u32 {
        let mut nodes = lock(&self.nodes);
        nodes.push(DirNode {
            parent: at.dir,
            pos: at.pos,
        });
        (nodes.len() - 1) as u32
    }

    fn push(&self, job: PendingDir) {
        self.push_work(Work::Dir(job));
    }

    fn push_work(&self, work: Work) {
        let mut q = lock(&self.queue);
        q.work.push(work);
        drop(q);
        self.wake.notify_one();
    }

    /// A worker: read directories until none are left and nobody can add more.
    fn work(&self) {
        let mut out = Collector::new(&self.found);
        loop {
            let job = {
                let mut q = lock(&self.queue);
                loop {
                    if q.aborted {
                        break None;
                    }
                    if let Some(job) = q.work.pop() {
                        q.busy += 1;
                        break Some(job);
                    }
                    if q.busy == 0 {
                        break None;
                    }
                    q = wait(&self.wake, q);
                }
            };
            let Some(job) = job else {
                self.wake.notify_all();
                return;
            };
            let _busy = Busy {
                queue: &self.queue,
                wake: &self.wake,
            };
            match job {
                Work::Dir(job) => self.dir(job, &mut out),
                Work::Files(listing, batch) => self.files(&listing, batch, &mut out),
            }
        }
    }

    fn dir(&self, job: PendingDir, out: &mut Collector<'_, T>) {
        self.dirs.fetch_add(1, Ordering::Relaxed);
        if self.read_ahead(&job) {
            self.dirs_read_ahead.fetch_add(1, Ordering::Relaxed);
        }
        let reader = match os::read_dir(&job.path) {
            Ok(r) => r,
            Err(e) => return self.fail(Error::io(&job.path, e)),
        };
        // Names in one buffer per directory, not one allocation each: a directory of a
        // million entries listed in 32 bytes per entry plus its names, instead of 80.
        let mut names: Vec<u8> = Vec::new();
        let mut entries: Vec<Listed> = Vec::new();
        for (pos, entry) in reader.enumerate() {
            match entry {
                Ok(entry) => {
                    let name = entry.file_name();
                    let bytes = name.as_encoded_bytes();
                    entries.push(Listed {
                        ino: os::dir_entry_ino(&entry),
                        start: names.len(),
                        len: bytes.len() as u32,
                        ft: entry.file_type().ok(),
                        pos: pos as u32,
                    });
                    names.extend_from_slice(bytes);
                }
                Err(e) => {
                    self.fail(Error::io(&job.path, e));
                    break;
                }
            }
        }
        entries.sort_unstable_by_key(|e| e.ino);
        let mut files: Vec<ListedFile> = Vec::new();
        for listed in entries {
            let name = encoded_name(&names[listed.start..listed.start + listed.len as usize]);
            let path = join_exact(&job.path, name);
            let file = |follow| ListedFile {
                start: listed.start,
                len: listed.len,
                at: Position {
                    dir: job.node,
                    pos: listed.pos,
                },
                follow,
            };
            let pos = listed.pos;
            let ft = listed.ft;
            let at = Position { dir: job.node, pos };
            let ft = match ft {
                Some(ft) => ft,
                None => match os::symlink_metadata(&path) {
                    Ok(m) => m.file_type(),
                    Err(e) => {
                        self.fail(Error::io(&path, e));
                        continue;
                    }
                },
            };
            if ft.is_file() {
                if !self.opts.filter.is_empty() && !self.opts.filter.keeps(&path, name) {
                    self.filtered.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                files.push(file(false));
            } else if ft.is_dir() {
                self.subdir(&job, path, at, false);
            } else if ft.is_symlink() {
                if !self.opts.follow && self.opts.others {
                    match os::symlink_metadata(&path) {
                        Ok(m) => self.other(&path, at, m),
                        Err(e) => self.fail(Error::io(&path, e)),
                    }
                    continue;
                }
                if !self.opts.follow {
                    self.symlinks.fetch_add(1, Ordering::Relaxed);
                    self.reporter.skipped(&path, "symbolic link");
                    continue;
                }
                match os::metadata(&path) {
                    Ok(m) if m.is_dir() => self.subdir(&job, path, at, true),
                    Ok(m) if m.is_file() => {
                        if !self.opts.filter.is_empty() && !self.opts.filter.keeps(&path, name) {
                            self.filtered.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        files.push(file(true));
                    }
                    Ok(m) if self.opts.others => self.other(&path, at, m),
                    Ok(m) => self.skip_special(&path, &m.file_type()),
                    Err(e) => self.fail(Error::io(&path, e)),
                }
            } else if self.opts.others {
                match os::symlink_metadata(&path) {
                    Ok(m) => self.other(&path, at, m),
                    Err(e) => self.fail(Error::io(&path, e)),
                }
            } else {
                self.skip_special(&path, &ft);
            }
        }
        // Hand all but the first batch to other threads, and do the first here. Batches are
        // pushed last first, so they are taken in inode order.
        let listing = Arc::new(Listing {
            dir: job.path,
            names,
            files,
        });
        let mut end = listing.files.len();
        while end > BATCH {
            let start = (end - 1) / BATCH * BATCH;
            self.push_work(Work::Files(listing.clone(), start..end));
            end = start;
        }
        self.files(&listing, 0..end, out);
    }

    /// Before a directory larger than one block is listed, starts reading its blocks
    /// through the block device in one request, where that applies (see
    /// [`WalkOptions::dir_readahead`]). Costs no system call for a directory of one block
    /// or less, nor on a device already ruled out. Returns whether it started a read.
    fn read_ahead(&self, job: &PendingDir) -> bool {
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
        let Ok(dir) = os::open_directory(&job.path) else {
            return false;
        };
        let device = self.devices.device(job.dev, &dir);
        device
            .block_device()
            .is_some_and(|block| os::read_dir_ahead(&dir, job.size, block))
    }

    fn files(&self, listing: &Listing, batch: std::ops::Range<usize>, out: &mut Collector<'_, T>) {
        for f in &listing.files[batch] {
            if let Some(item) = self.file(listing.path(f), f.follow) {
                out.push(f.at, item);
            }
        }
    }

    fn skip_special(&self, path: &Path, ft: &FileType) {
        self.special.fetch_add(1, Ordering::Relaxed);
        self.reporter.skipped(path, describe_type(ft));
    }

    fn subdir(&self, parent: &PendingDir, path: PathBuf, at: Position, via_link: bool) {
        let meta = match if via_link {
            os::metadata(&path)
        } else {
            os::symlink_metadata(&path)
        } {
            Ok(m) => m,
            Err(e) => return self.fail(Error::io(&path, e)),
        };
        let id = match os::file_id(&path, None, &meta) {
            Ok(id) => id,
            Err(e) => return self.fail(Error::io(&path, e)),
        };
        if self.opts.one_file_system && id.dev != parent.root_dev {
            self.other_fs.fetch_add(1, Ordering::Relaxed);
            self.reporter.skipped(&path, "on another filesystem");
            return;
        }
        if self.opts.follow
            && let Some(ancestor) = Ancestor::find(&parent.ancestors, id)
        {
            let ancestor = ancestor.to_path_buf();
            return self.fail(Error::new(&path, ErrorKind::SymlinkLoop { ancestor }));
        }
        if !self.first_visit(id, &path) {
            return;
        }
        let node = self.new_node(at);
        let ancestors = self.opts.follow.then(|| {
            Arc::new(Ancestor {
                id,
                path: path.clone(),
                parent: parent.ancestors.clone(),
            })
        });
        let size = meta.len();
        self.other(&path, at, meta);
        self.push(PendingDir {
            path,
            node,
            dev: id.dev,
            size,
            root_dev: parent.root_dev,
            ancestors,
        });
    }

    /// Opens a regular file once, checks it is still one, and visits it.
    fn file(&self, path: PathBuf, follow: bool) -> Option<T> {
        let file = match os::open_to_locate(&path, follow) {
            Ok(f) => f,
            Err(e) => {
                self.fail(Error::io(&path, e));
                return None;
            }
        };
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) => {
                self.fail(Error::io(&path, e));
                return None;
            }
        };
        if !meta.is_file() {
            // Replaced by something else since the directory was read.
            self.skip_special(&path, &meta.file_type());
            return None;
        }
        let id = match os::file_id(&path, Some(&file), &meta) {
            Ok(id) => id,
            Err(e) => {
                self.fail(Error::io(&path, e));
                return None;
            }
        };
        self.files.fetch_add(1, Ordering::Relaxed);
        let entry = Entry::from_metadata(path.into_boxed_path(), id, &meta);
        match (self.visit)(entry, &file) {
            Ok(item) => Some(item),
            Err(e) => {
                self.fail(e);
                None
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
    ft: Option<FileType>,
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

fn describe_type(ft: &FileType) -> &'static str {
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

/// Puts items in given order: a depth-first traversal where each directory's files and
/// subdirectories come in their readdir positions.
///
/// Works in place, with 4 bytes per item beside the items themselves: each item's sort key
/// comes from a traversal of the directories alone, and the items are permuted by it.
fn given_order<T>(nodes: &[DirNode], mut found: Vec<(Position, T)>) -> Vec<T> {
    // Each directory's subdirectories, by position: `subdirs[first[d]..first[d + 1]]`.
    let mut subdirs: Vec<(u32, u32, u32)> = nodes
        .iter()
        .enumerate()
        .skip(1)
        .map(|(id, n)| (n.parent, n.pos, id as u32))
        .collect();
    subdirs.sort_unstable();
    let mut first = vec![0usize; nodes.len() + 1];
    for &(parent, _, _) in &subdirs {
        first[parent as usize + 1] += 1;
    }
    for d in 0..nodes.len() {
        first[d + 1] += first[d];
    }
    // A directory with k subdirectories has k + 1 segments of items: before the first,
    // between two, after the last. Number them in traversal order: the segment after a
    // subdirectory comes after everything inside it. Segment j of directory d is
    // `segment[first[d] + d + j]`.
    let mut segment = vec![0u32; subdirs.len() + nodes.len()];
    let mut next = 0u32;
    // Stack of (directory, subdirectories done).
    let mut stack: Vec<(u32, usize)> = vec![(INPUTS, 0)];
    while let Some(&mut (d, ref mut done)) = stack.last_mut() {
        let d = d as usize;
        segment[first[d] + d + *done] = next;
        next += 1;
        let child = first[d] + *done;
        if child < first[d + 1] {
            *done += 1;
            stack.push((subdirs[child].2, 0));
        } else {
            stack.pop();
        }
    }
    // Each item's key: its segment, then its position. Computed again at each comparison
    // rather than stored: 4 bytes per item for the permutation instead of 20.
    let key = |at: &Position| {
        let d = at.dir as usize;
        let before = subdirs[first[d]..first[d + 1]].partition_point(|s| s.1 < at.pos);
        let seg = segment[first[d] + d + before];
        (u64::from(seg) << 32) | u64::from(at.pos)
    };
    let mut from: Vec<u32> = (0..found.len() as u32).collect();
    from.sort_unstable_by_key(|&i| key(&found[i as usize].0));
    // Permute in place: slot k receives the item at `from[k]`, one cycle at a time.
    for start in 0..from.len() {
        let mut at = start;
        while from[at] as usize != start {
            let next = from[at] as usize;
            found.swap(at, next);
            from[at] = at as u32;
            at = next;
        }
        from[at] = at as u32;
    }
    found.into_iter().map(|(_, item)| item).collect()
}

/// Reads a list of paths, one per line or NUL-terminated, as `--files-from` takes them.
///
/// With `nul`, names are taken byte-exact; otherwise a trailing `\r` is kept (it may be
/// part of a name) and empty lines are ignored.
pub fn read_path_list(mut input: impl std::io::Read, nul: bool) -> std::io::Result<Vec<PathBuf>> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    let sep = if nul { 0u8 } else { b'\n' };
    Ok(bytes
        .split(|b| *b == sep)
        .filter(|s| !s.is_empty())
        .map(path_from_bytes)
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::Quiet;
    use std::fs;

    fn names(dir: &Path, opts: &WalkOptions) -> Vec<String> {
        let items = walk(&[dir.to_path_buf()], opts, &Quiet, &|e: Entry, _: &File| {
            // `/`-joined components, so the expectations hold with `\` separators too.
            let rel = e.path.strip_prefix(dir).unwrap();
            let parts: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            Ok(parts.join("/"))
        });
        items.files
    }

    #[test]
    fn given_order_is_depth_first_in_readdir_positions() {
        let nodes = vec![
            DirNode { parent: 0, pos: 0 },
            DirNode { parent: 0, pos: 0 }, // input 0 is dir 1
            DirNode { parent: 1, pos: 1 }, // dir 2 is child 1 of dir 1
        ];
        let found = vec![
            (Position { dir: 1, pos: 2 }, "d1/after"),
            (Position { dir: 2, pos: 0 }, "d1/sub/x"),
            (Position { dir: 1, pos: 0 }, "d1/first"),
            (Position { dir: 0, pos: 1 }, "input1"),
        ];
        assert_eq!(
            given_order(&nodes, found),
            vec!["d1/first", "d1/sub/x", "d1/after", "input1"]
        );
    }

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

    #[test]
    fn every_regular_file_is_found_once_and_symlinks_are_skipped() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("a/b")).unwrap();
        fs::write(t.path().join("a/one"), b"1").unwrap();
        fs::write(t.path().join("a/b/two"), b"22").unwrap();
        fs::write(t.path().join("three"), b"333").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("three", t.path().join("link")).unwrap();
        let mut got = names(t.path(), &WalkOptions::default());
        got.sort();
        assert_eq!(got, vec!["a/b/two", "a/one", "three"]);
    }

    #[cfg(unix)]
    #[test]
    fn following_a_link_to_an_ancestor_reports_a_loop() {
        struct Errors(Mutex<Vec<String>>);
        impl Reporter for Errors {
            fn error(&self, err: &Error) {
                self.0.lock().unwrap().push(err.to_string());
            }
        }
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("a")).unwrap();
        fs::write(t.path().join("a/f"), b"x").unwrap();
        std::os::unix::fs::symlink("..", t.path().join("a/up")).unwrap();
        let opts = WalkOptions {
            follow: true,
            ..WalkOptions::default()
        };
        let errors = Errors(Mutex::new(Vec::new()));
        let Walked {
            files: items,
            stats,
            ..
        } = walk(
            &[t.path().to_path_buf()],
            &opts,
            &errors,
            &|e: Entry, _: &File| Ok(e.path),
        );
        assert_eq!(items.len(), 1);
        assert_eq!(stats.errors, 1);
        let errors = errors.0.into_inner().unwrap();
        assert!(errors[0].contains("symbolic link loop"), "{errors:?}");
        assert!(errors[0].contains("a/up"), "{errors:?}");
    }

    /// Runs `f` on another thread and returns its panic message; fails if `f` returns or
    /// takes more than a minute (a hang).
    pub(crate) fn panic_message(f: impl FnOnce() + Send + 'static) -> String {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = tx.send(r.err().map(|p| crate::sync::panic_text(&*p)));
        });
        match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(Some(message)) => message,
            Ok(None) => panic!("returned instead of panicking"),
            Err(_) => panic!("hung instead of panicking"),
        }
    }

    #[test]
    fn a_visitor_that_panics_fails_the_walk_with_its_message() {
        let t = tempfile::tempdir().unwrap();
        for d in 0..4 {
            let dir = t.path().join(format!("d{d}"));
            fs::create_dir(&dir).unwrap();
            for i in 0..(BATCH * 3) {
                fs::write(dir.join(format!("f{i}")), b"x").unwrap();
            }
        }
        fs::write(t.path().join("d2/bad"), b"x").unwrap();
        for threads in [1, 64] {
            let root = t.path().to_path_buf();
            let message = panic_message(move || {
                let opts = WalkOptions {
                    threads,
                    ..WalkOptions::default()
                };
                walk(&[root], &opts, &Quiet, &|e: Entry, _: &File| {
                    assert!(
                        !e.path.ends_with("bad"),
                        "visitor fault at {}",
                        e.path.display()
                    );
                    Ok(())
                });
            });
            assert!(message.contains("visitor fault at"), "{threads}: {message}");
        }
    }

    #[test]
    fn path_lists_split_on_newlines_or_nuls() {
        let l = read_path_list(&b"a\nb c\n\nd\n"[..], false).unwrap();
        assert_eq!(
            l,
            vec![PathBuf::from("a"), PathBuf::from("b c"), PathBuf::from("d")]
        );
        let l = read_path_list(&b"a\nb\0c\0"[..], true).unwrap();
        assert_eq!(l, vec![PathBuf::from("a\nb"), PathBuf::from("c")]);
    }
}
