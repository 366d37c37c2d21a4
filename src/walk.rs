//! Walk: expand inputs (files and directories) into entries, one per regular file.
//!
//! - Directories are read by a small pool of threads; within a directory, entries are
//!   sorted by inode number before anything is stat-ed or opened, because inode tables are
//!   laid out by number (on a cold disk this turns metadata reads into a sweep too).
//! - Before a directory is listed, its blocks may be read ahead in one request through the
//!   block device ([`WalkOptions::dir_readahead`]; ext2/3/4 on rotational disks, as root).
//! - FIFOs, sockets and device nodes are skipped and counted, never opened.
//! - Symlinks inside directories are skipped unless `follow` is set; with it, a link back
//!   to a directory being walked is reported as a loop. Symlinks named as inputs are
//!   always followed (like `sha256sum FILE` or `tar` with `-h` on the command line).
//! - The walk hands each regular file, opened once, to a visitor (the planner locates it
//!   through the same descriptor), and returns what the visitor made in *given order*:
//!   inputs in the order given, directory contents in `readdir` order, depth first — the
//!   order `find` would print.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{self, File, FileType, Metadata};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::SystemTime;

use serde::Serialize;

use crate::error::{Error, ErrorKind};
use crate::filter::Filter;
use crate::os;
use crate::report::Reporter;

/// The identity of a file: the device it is on and its inode number (on Windows: volume
/// serial number and file index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FileId {
    /// Device (`st_dev`).
    pub dev: u64,
    /// Inode number (`st_ino`).
    pub ino: u64,
}

/// One regular file found by the walk: only what later stages need.
#[derive(Clone, Debug)]
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

/// How to walk.
#[derive(Clone, Debug)]
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
}

impl Default for WalkOptions {
    fn default() -> Self {
        Self {
            follow: false,
            one_file_system: false,
            filter: Filter::default(),
            // Threads mostly wait for metadata on a cold disk; more of them means more
            // reads in flight for the disk to reorder (a drive queues 32). On the emulated
            // disk's aged layout, where FIEMAP must read an extent block per fragmented
            // file, 64 threads took the cold lookup from 0.67-0.76 s to 0.53-0.55 s (128:
            // no better); on a warm cache, 16 and 64 plan /usr equally fast.
            threads: 64,
            dir_readahead: true,
        }
    }
}

/// What the walk skipped and how long it took.
#[derive(Clone, Debug, Default, Serialize)]
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
struct DirJob {
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
enum Job {
    Dir(DirJob),
    Files(Vec<(PathBuf, Position, bool)>),
}

/// Files per batch.
const BATCH: usize = 32;

struct Queue {
    jobs: Vec<Job>,
    busy: usize,
}

struct Shared<'a, V> {
    opts: &'a WalkOptions,
    reporter: &'a dyn Reporter,
    visit: &'a V,
    queue: Mutex<Queue>,
    wake: Condvar,
    nodes: Mutex<Vec<DirNode>>,
    seen_dirs: Mutex<HashSet<FileId>>,
    dirs: AtomicU64,
    files: AtomicU64,
    special: AtomicU64,
    symlinks: AtomicU64,
    other_fs: AtomicU64,
    filtered: AtomicU64,
    errors: AtomicU64,
    readahead: os::DirReadahead,
    dirs_read_ahead: AtomicU64,
}

/// Walks `inputs`, calling `visit` (from worker threads) with each regular file and its
/// open descriptor. Returns what `visit` returned, in given order, and the walk's counts.
///
/// A visitor error is reported and counted like any other per-path error.
pub fn walk<T, V>(
    inputs: &[PathBuf],
    opts: &WalkOptions,
    reporter: &dyn Reporter,
    visit: &V,
) -> (Vec<T>, WalkStats)
where
    T: Send,
    V: Fn(Entry, &File) -> Result<T, Error> + Sync,
{
    let shared = Shared {
        opts,
        reporter,
        visit,
        queue: Mutex::new(Queue {
            jobs: Vec::new(),
            busy: 0,
        }),
        wake: Condvar::new(),
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
        readahead: os::DirReadahead::default(),
        dirs_read_ahead: AtomicU64::new(0),
    };

    // Inputs are handled on this thread: files are visited directly, directories queued.
    let mut found: Vec<(Position, T)> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let at = Position {
            dir: INPUTS,
            pos: i as u32,
        };
        shared.input(input, at, &mut found);
    }

    let threads = opts.threads.max(1);
    let results: Vec<Vec<(Position, T)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(|| shared.work())).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for mut r in results {
        found.append(&mut r);
    }

    let nodes = shared.nodes.into_inner().unwrap_or_else(|e| e.into_inner());
    let items = given_order(&nodes, found);
    let stats = WalkStats {
        dirs: shared.dirs.into_inner(),
        files: shared.files.into_inner(),
        special: shared.special.into_inner(),
        symlinks: shared.symlinks.into_inner(),
        other_fs: shared.other_fs.into_inner(),
        filtered: shared.filtered.into_inner(),
        errors: shared.errors.into_inner(),
        dirs_read_ahead: shared.dirs_read_ahead.into_inner(),
    };
    (items, stats)
}

impl<T, V> Shared<'_, V>
where
    T: Send,
    V: Fn(Entry, &File) -> Result<T, Error> + Sync,
{
    fn fail(&self, err: Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.reporter.error(&err);
    }

    fn input(&self, path: &Path, at: Position, out: &mut Vec<(Position, T)>) {
        // Inputs that are symlinks are followed.
        let meta = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) => return self.fail(Error::io(path, e)),
        };
        let ft = meta.file_type();
        if ft.is_dir() {
            let id = match os::file_id(path, None, &meta) {
                Ok(id) => id,
                Err(e) => return self.fail(Error::io(path, e)),
            };
            if !self.first_visit(id) {
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
            self.push(DirJob {
                path: path.to_path_buf(),
                node,
                dev: id.dev,
                size: meta.len(),
                root_dev: id.dev,
                ancestors,
            });
        } else if ft.is_file() {
            if let Some(item) = self.file(path.to_path_buf(), true) {
                out.push((at, item));
            }
        } else {
            // Named explicitly but not readable as a file: say so, it is an error.
            self.special.fetch_add(1, Ordering::Relaxed);
            self.fail(Error::io(
                path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("not a regular file ({}), skipped", describe_type(&ft)),
                ),
            ));
        }
    }

    fn first_visit(&self, id: FileId) -> bool {
        self.seen_dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id)
    }

    fn new_node(&self, at: Position) -> u32 {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        nodes.push(DirNode {
            parent: at.dir,
            pos: at.pos,
        });
        (nodes.len() - 1) as u32
    }

    fn push(&self, job: DirJob) {
        self.push_job(Job::Dir(job));
    }

    fn push_job(&self, job: Job) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.jobs.push(job);
        drop(q);
        self.wake.notify_one();
    }

    /// A worker: read directories until none are left and nobody can add more.
    fn work(&self) -> Vec<(Position, T)> {
        let mut out = Vec::new();
        loop {
            let job = {
                let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if let Some(job) = q.jobs.pop() {
                        q.busy += 1;
                        break Some(job);
                    }
                    if q.busy == 0 {
                        break None;
                    }
                    q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            let Some(job) = job else {
                self.wake.notify_all();
                return out;
            };
            match job {
                Job::Dir(job) => self.dir(job, &mut out),
                Job::Files(batch) => self.files(batch, &mut out),
            }
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.busy -= 1;
            let idle = q.busy == 0 && q.jobs.is_empty();
            drop(q);
            if idle {
                self.wake.notify_all();
            }
        }
    }

    fn dir(&self, job: DirJob, out: &mut Vec<(Position, T)>) {
        self.dirs.fetch_add(1, Ordering::Relaxed);
        if self.opts.dir_readahead && self.readahead.start(&job.path, job.dev, job.size) {
            self.dirs_read_ahead.fetch_add(1, Ordering::Relaxed);
        }
        let reader = match fs::read_dir(&job.path) {
            Ok(r) => r,
            Err(e) => return self.fail(Error::io(&job.path, e)),
        };
        // (inode, name, type, readdir position)
        let mut entries: Vec<(u64, OsString, Option<FileType>, u32)> = Vec::new();
        for (pos, entry) in reader.enumerate() {
            match entry {
                Ok(entry) => {
                    let ino = os::dir_entry_ino(&entry);
                    let ft = entry.file_type().ok();
                    entries.push((ino, entry.file_name(), ft, pos as u32));
                }
                Err(e) => {
                    self.fail(Error::io(&job.path, e));
                    break;
                }
            }
        }
        entries.sort_unstable_by_key(|e| e.0);
        let mut files: Vec<(PathBuf, Position, bool)> = Vec::new();
        for (_, name, ft, pos) in entries {
            let path = job.path.join(&name);
            let at = Position { dir: job.node, pos };
            let ft = match ft {
                Some(ft) => ft,
                None => match fs::symlink_metadata(&path) {
                    Ok(m) => m.file_type(),
                    Err(e) => {
                        self.fail(Error::io(&path, e));
                        continue;
                    }
                },
            };
            if ft.is_file() {
                if !self.opts.filter.is_empty() && !self.opts.filter.keeps(&path, &name) {
                    self.filtered.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                files.push((path, at, false));
            } else if ft.is_dir() {
                self.subdir(&job, path, at, false);
            } else if ft.is_symlink() {
                if !self.opts.follow {
                    self.symlinks.fetch_add(1, Ordering::Relaxed);
                    self.reporter.skipped(&path, "symbolic link");
                    continue;
                }
                match fs::metadata(&path) {
                    Ok(m) if m.is_dir() => self.subdir(&job, path, at, true),
                    Ok(m) if m.is_file() => {
                        if !self.opts.filter.is_empty() && !self.opts.filter.keeps(&path, &name) {
                            self.filtered.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                        files.push((path, at, true));
                    }
                    Ok(m) => self.skip_special(&path, &m.file_type()),
                    Err(e) => self.fail(Error::io(&path, e)),
                }
            } else {
                self.skip_special(&path, &ft);
            }
        }
        // Hand all but the first batch to other threads (pushed last first, so they are
        // taken in inode order), and do the first here.
        let mut batches: Vec<Vec<(PathBuf, Position, bool)>> = Vec::new();
        while files.len() > BATCH {
            let rest = files.split_off(BATCH);
            batches.push(std::mem::replace(&mut files, rest));
        }
        batches.push(files);
        let mut batches = batches.into_iter();
        let first = batches.next();
        for batch in batches.rev() {
            self.push_job(Job::Files(batch));
        }
        if let Some(first) = first {
            self.files(first, out);
        }
    }

    fn files(&self, batch: Vec<(PathBuf, Position, bool)>, out: &mut Vec<(Position, T)>) {
        for (path, at, follow) in batch {
            if let Some(item) = self.file(path, follow) {
                out.push((at, item));
            }
        }
    }

    fn skip_special(&self, path: &Path, ft: &FileType) {
        self.special.fetch_add(1, Ordering::Relaxed);
        self.reporter.skipped(path, describe_type(ft));
    }

    fn subdir(&self, parent: &DirJob, path: PathBuf, at: Position, via_link: bool) {
        let meta = match if via_link {
            fs::metadata(&path)
        } else {
            fs::symlink_metadata(&path)
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
        if self.opts.follow {
            if let Some(ancestor) = Ancestor::find(&parent.ancestors, id) {
                let ancestor = ancestor.to_path_buf();
                return self.fail(Error::new(&path, ErrorKind::SymlinkLoop { ancestor }));
            }
        }
        if !self.first_visit(id) {
            return; // reached before through another input or link
        }
        let node = self.new_node(at);
        let ancestors = self.opts.follow.then(|| {
            Arc::new(Ancestor {
                id,
                path: path.clone(),
                parent: parent.ancestors.clone(),
            })
        });
        self.push(DirJob {
            path,
            node,
            dev: id.dev,
            size: meta.len(),
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
fn given_order<T>(nodes: &[DirNode], found: Vec<(Position, T)>) -> Vec<T> {
    enum Child {
        Dir(u32),
        Item(usize),
    }
    let mut children: Vec<(u32, u32, Child)> = Vec::with_capacity(found.len() + nodes.len());
    for (id, n) in nodes.iter().enumerate().skip(1) {
        children.push((n.parent, n.pos, Child::Dir(id as u32)));
    }
    let mut slots: Vec<Option<T>> = Vec::with_capacity(found.len());
    for (i, (at, item)) in found.into_iter().enumerate() {
        children.push((at.dir, at.pos, Child::Item(i)));
        slots.push(Some(item));
    }
    children.sort_unstable_by_key(|c| (c.0, c.1));
    // Where each directory's children start in `children`.
    let mut start = vec![usize::MAX; nodes.len()];
    for (i, c) in children.iter().enumerate().rev() {
        start[c.0 as usize] = i;
    }
    let mut out = Vec::with_capacity(slots.len());
    // Stack of (directory, next child index).
    let mut stack: Vec<(u32, usize)> = vec![(INPUTS, start[INPUTS as usize])];
    while let Some((dir, at)) = stack.last_mut() {
        let dir = *dir;
        if *at >= children.len() || children[*at].0 != dir {
            stack.pop();
            continue;
        }
        let i = *at;
        *at += 1;
        match children[i].2 {
            Child::Item(k) => {
                if let Some(item) = slots[k].take() {
                    out.push(item);
                }
            }
            Child::Dir(d) => stack.push((d, start[d as usize])),
        }
    }
    out
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

#[cfg(unix)]
fn path_from_bytes(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

#[cfg(not(unix))]
fn path_from_bytes(b: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(b).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Quiet;

    fn names(dir: &Path, opts: &WalkOptions) -> Vec<String> {
        let (items, _) = walk(&[dir.to_path_buf()], opts, &Quiet, &|e: Entry, _: &File| {
            // `/`-joined components, so the expectations hold with `\` separators too.
            let rel = e.path.strip_prefix(dir).unwrap();
            let parts: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            Ok(parts.join("/"))
        });
        items
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
        let (items, stats) = walk(
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
