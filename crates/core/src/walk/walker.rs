//! One walk in progress, shared by its threads: its options, visitor, counts and findings,
//! and what it does with each path met — an input, a subdirectory, a regular file to open
//! and visit — beside reading directories (`dir.rs`).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{File, FileType, Metadata};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::dir::{PendingDir, Work, describe_type};
use super::order::{DirNode, INPUTS, Position};
use super::pool::{Collector, Pool};
use super::{Entry, Other, Visitor, WalkOptions, WalkStats};
use crate::device::Devices;
use crate::error::{Error, ErrorKind};
use crate::file_id::FileId;
use crate::os;
use crate::report::Reporter;
use crate::sync::{into_inner, lock};

/// The chain of directories above a directory, for loop detection when following links.
pub(super) struct Ancestor {
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

/// Inputs taken on the caller's thread, in order, before any other thread helps: a
/// command line's few inputs keep their messages in the order given.
const INPUTS_ALONE: usize = 256;

/// Inputs a thread takes from a long list at a time (one lock per take).
const INPUTS_PER_TAKE: usize = 64;

/// Where input `i` sits in given order.
fn input_at(i: usize) -> Position {
    Position {
        dir: INPUTS,
        pos: u32::try_from(i).expect("fewer than 2^32 inputs"),
    }
}

/// A directory named as an input, met by one of the threads taking a long list.
struct InputDir {
    path: PathBuf,
    at: Position,
    meta: Metadata,
}

/// A walk in progress.
pub(super) struct Walker<'a, V: Visitor> {
    pub(super) opts: &'a WalkOptions,
    pub(super) devices: &'a Devices,
    pub(super) reporter: &'a dyn Reporter,
    visit: &'a V,
    pub(super) pool: Pool<Work>,
    found: Mutex<Vec<(Position, V::Item)>>,
    others: Mutex<Vec<(Position, Other)>>,
    nodes: Mutex<Vec<DirNode>>,
    seen_dirs: Mutex<HashSet<FileId>>,
    pub(super) dirs: AtomicU64,
    files: AtomicU64,
    special: AtomicU64,
    pub(super) symlinks: AtomicU64,
    other_fs: AtomicU64,
    pub(super) filtered: AtomicU64,
    errors: AtomicU64,
    pub(super) dirs_read_ahead: AtomicU64,
    revisited_dirs: AtomicU64,
}

/// What a walk leaves when its threads are done: items and other entries where they were
/// found, the directories they were found in, and the counts.
pub(super) struct Findings<T> {
    pub(super) found: Vec<(Position, T)>,
    pub(super) others: Vec<(Position, Other)>,
    pub(super) nodes: Vec<DirNode>,
    pub(super) stats: WalkStats,
}

/// What one walk thread keeps to itself: its share of the findings, its count of files
/// (added to the walk's when it ends), its buffer for listing directories and the
/// visitor's state.
pub(super) struct Local<'w, V: Visitor> {
    pub(super) out: Collector<'w, (Position, V::Item)>,
    files: u64,
    pub(super) listing: Vec<u8>,
    visit: V::Local,
}

impl<'a, V: Visitor> Walker<'a, V> {
    pub(super) fn new(
        opts: &'a WalkOptions,
        reporter: &'a dyn Reporter,
        visit: &'a V,
        devices: &'a Devices,
    ) -> Self {
        Self {
            opts,
            reporter,
            visit,
            devices,
            pool: Pool::new(),
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
        }
    }

    /// Takes the inputs: files are visited, directories queued for the walk. Returns how
    /// many there were.
    ///
    /// The first [`INPUTS_ALONE`] on this thread, in order; a longer list (a manifest to
    /// check, `--files-from`) by up to `threads` threads taking [`INPUTS_PER_TAKE`] at a
    /// time, since each file is opened, stat-ed and located as in a walk (and on a cold
    /// disk its inode read). Directories met there are queued afterwards in given order,
    /// so which of two names of one directory is walked does not depend on thread timing;
    /// only the order of the messages about such a list's inputs does.
    pub(super) fn inputs<'p, I>(&self, inputs: I, threads: usize) -> usize
    where
        I: IntoIterator<Item = &'p Path>,
        I::IntoIter: Send,
    {
        let mut inputs = inputs.into_iter().enumerate();
        let mut local = self.local();
        let mut count = 0;
        for (i, input) in inputs.by_ref().take(INPUTS_ALONE) {
            self.input(input, input_at(i), &mut local, None);
            count = i + 1;
        }
        self.done(local);
        if count < INPUTS_ALONE {
            return count;
        }
        let rest = Mutex::new((inputs, count));
        let dirs = Mutex::new(Vec::new());
        super::pool::run(threads, || {
            let mut local = self.local();
            let mut batch: Vec<(usize, &Path)> = Vec::with_capacity(INPUTS_PER_TAKE);
            loop {
                batch.clear();
                {
                    let mut rest = lock(&rest);
                    let (inputs, count) = &mut *rest;
                    batch.extend(inputs.by_ref().take(INPUTS_PER_TAKE));
                    if let Some(&(last, _)) = batch.last() {
                        *count = last + 1;
                    }
                }
                if batch.is_empty() {
                    break;
                }
                for &(i, input) in &batch {
                    self.input(input, input_at(i), &mut local, Some(&dirs));
                }
            }
            self.done(local);
        });
        let mut dirs = into_inner(dirs);
        dirs.sort_unstable_by_key(|d: &InputDir| d.at.pos);
        for d in dirs {
            self.input_dir(&d.path, d.at, d.meta);
        }
        into_inner(rest).1
    }

    /// A worker: read directories and open files until none are left and nobody can add
    /// more.
    pub(super) fn work(&self) {
        let mut local = self.local();
        self.pool.work(|job| match job {
            Work::Dir(job) => self.dir(job, &mut local),
            Work::Files(listing, batch) => self.files(&listing, batch, &mut local),
        });
        self.done(local);
    }

    fn local(&self) -> Local<'_, V> {
        Local {
            out: Collector::new(&self.found),
            files: 0,
            listing: Vec::new(),
            visit: self.visit.local(),
        }
    }

    /// A thread's counts and state handed back (its findings are handed over as the
    /// collector drops).
    fn done(&self, local: Local<'_, V>) {
        self.files.fetch_add(local.files, Ordering::Relaxed);
        self.visit.done(local.visit);
    }

    /// What the walk found, once its threads are done.
    pub(super) fn into_findings(self) -> Findings<V::Item> {
        Findings {
            found: into_inner(self.found),
            others: into_inner(self.others),
            nodes: into_inner(self.nodes),
            stats: WalkStats {
                dirs: self.dirs.into_inner(),
                files: self.files.into_inner(),
                special: self.special.into_inner(),
                symlinks: self.symlinks.into_inner(),
                other_fs: self.other_fs.into_inner(),
                filtered: self.filtered.into_inner(),
                errors: self.errors.into_inner(),
                dirs_read_ahead: self.dirs_read_ahead.into_inner(),
                revisited_dirs: self.revisited_dirs.into_inner(),
            },
        }
    }

    pub(super) fn fail(&self, err: Error) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.reporter.error(&err);
    }

    /// Keeps a directory, symlink or special file, if others are kept.
    pub(super) fn other(&self, path: &Path, at: Position, metadata: Metadata) {
        if self.opts.others {
            let other = Other {
                path: path.into(),
                metadata,
            };
            lock(&self.others).push((at, other));
        }
    }

    /// Takes one input. A directory is queued for the walk, or, given `later`, put there
    /// to be queued once every input has been looked at.
    fn input(
        &self,
        path: &Path,
        at: Position,
        local: &mut Local<'_, V>,
        later: Option<&Mutex<Vec<InputDir>>>,
    ) {
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
            match later {
                Some(later) => lock(later).push(InputDir {
                    path: path.to_path_buf(),
                    at,
                    meta,
                }),
                None => self.input_dir(path, at, meta),
            }
        } else if ft.is_file() {
            if let Some(item) = self.file(path.to_path_buf(), None, true, local) {
                local.out.push((at, item));
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

    /// Queues a directory named as an input for the walk, unless it is walked already.
    fn input_dir(&self, path: &Path, at: Position, meta: Metadata) {
        match os::file_id(path, None, &meta) {
            Ok(id) => self.enter(path.to_path_buf(), at, meta, id, id.dev, None),
            Err(e) => self.fail(Error::io(path, e)),
        }
    }

    /// Queues directory `id` for the walk, unless it is walked already: under the walk of
    /// the filesystem `root_dev`, below `ancestors` (kept when following links).
    fn enter(
        &self,
        path: PathBuf,
        at: Position,
        meta: Metadata,
        id: FileId,
        root_dev: u64,
        ancestors: Option<Arc<Ancestor>>,
    ) {
        if !self.first_visit(id, &path) {
            return;
        }
        let node = self.new_node(at);
        let ancestors = self.opts.follow.then(|| {
            Arc::new(Ancestor {
                id,
                path: path.clone(),
                parent: ancestors,
            })
        });
        let size = meta.len();
        self.other(&path, at, meta);
        self.push(PendingDir {
            path,
            node,
            dev: id.dev,
            size,
            root_dev,
            ancestors,
        });
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
        self.pool.push(Work::Dir(job));
    }

    pub(super) fn skip_special(&self, path: &Path, ft: &FileType) {
        self.special.fetch_add(1, Ordering::Relaxed);
        self.reporter.skipped(path, describe_type(ft));
    }

    pub(super) fn subdir(&self, parent: &PendingDir, path: PathBuf, at: Position, via_link: bool) {
        let meta = match if via_link {
            os::metadata(&path)
        } else {
            os::symlink_metadata(&path)
        } {
            Ok(m) => m,
            Err(e) => return self.fail(Error::io(&path, e)),
        };
        if !meta.is_dir() {
            // Listed as a directory, something else now: what it is was not seen when it
            // was listed, and is not taken for either.
            let now = if meta.is_file() {
                "regular file"
            } else {
                describe_type(&meta.file_type())
            };
            let why = format!("listed as a directory, now a {now}: not walked");
            return self.fail(Error::io(&path, std::io::Error::other(why)));
        }
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
        let ancestors = parent.ancestors.clone();
        self.enter(path, at, meta, id, parent.root_dev, ancestors);
    }

    /// Opens a regular file once (by its name in directory `at.0` when given, `at.1`),
    /// checks it is still one, and visits it.
    pub(super) fn file(
        &self,
        path: PathBuf,
        at: Option<(&File, &OsStr)>,
        follow: bool,
        local: &mut Local<'_, V>,
    ) -> Option<V::Item> {
        let opened = match at {
            Some((dir, name)) => os::open_to_locate_in(Some(dir), name, &path, follow),
            None => os::open_to_locate(&path, follow),
        };
        let file = match opened {
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
        if meta.is_dir() {
            // A directory now, listed as a file: its contents were not seen (an error, so
            // nothing is deleted or forgotten for want of them).
            self.fail(Error::io(
                &path,
                std::io::Error::other("listed as a file, now a directory: not walked"),
            ));
            return None;
        }
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
        local.files += 1;
        let entry = Entry::from_metadata(path.into_boxed_path(), id, &meta);
        match self.visit.visit(&mut local.visit, entry, &file) {
            Ok(item) => Some(item),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }
}
