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
//! - Inputs are taken on the calling thread, the first 256 in order; a longer list (a
//!   manifest, `--files-from`) is shared out to the walk's threads, its directories queued
//!   afterwards in given order.
//! - The walk hands each regular file, opened once, to a visitor (the planner locates it
//!   through the same descriptor), and returns what the visitor made in *given order*:
//!   inputs in the order given, directory contents in `readdir` order, depth first — the
//!   order `find` would print.
//!
//! The parts: `walker` decides what each path met is and visits regular files, `dir`
//! reads directories, `pool` runs the threads, `order` puts what they found back in given
//! order, and `list` reads lists of paths.

mod dir;
mod list;
mod order;
mod pool;
mod walker;

use std::fs::{File, Metadata};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::device::Devices;
use crate::error::Error;
use crate::file_id::FileId;
use crate::filter::Filter;
use crate::report::Reporter;

pub use list::read_path_list;
use order::{files_per_input, given_order};
use walker::{Findings, Walker};

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
    /// A file found by other means than [`walk`] (a caller's own index, a list with sizes),
    /// to plan with [`Plan::from_located`](crate::Plan::from_located): `size` and
    /// `modified` are what the reader compares with the file when it reads it, to tell
    /// whether it changed since.
    ///
    /// ```
    /// use std::path::Path;
    /// use seekless_core::{Entry, FileId};
    /// let entry = Entry::new(Path::new("photos/1.jpg"), FileId::new(2049, 131), 4096, None);
    /// assert_eq!(entry.size, 4096);
    /// ```
    pub fn new(
        path: impl Into<Box<Path>>,
        id: FileId,
        size: u64,
        modified: Option<SystemTime>,
    ) -> Self {
        Self {
            path: path.into(),
            id,
            size,
            modified,
        }
    }

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
    /// How many of `files` came from each input, in input order, when counted
    /// ([`walk_on`]'s `count_per_input`): given order takes the inputs one after another,
    /// so input i's files follow those of the inputs before it.
    pub(crate) per_input: Option<Vec<u32>>,
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
    let inputs = inputs.iter().map(PathBuf::as_path);
    walk_on(
        inputs,
        opts,
        reporter,
        &EachFile(visit),
        &Devices::default(),
        false,
    )
}

/// What a walk does with each regular file it finds, on its threads. Each thread keeps
/// state of its own ([`Local`](Self::Local): counts, the last filesystem met) that it
/// hands back when it ends, so that nothing is shared between threads per file.
pub(crate) trait Visitor: Sync {
    /// What a file becomes.
    type Item: Send;
    /// One thread's state.
    type Local;
    /// A thread's state, when it starts.
    fn local(&self) -> Self::Local;
    /// Makes an item of a regular file found (and open as `file`).
    fn visit(
        &self,
        local: &mut Self::Local,
        entry: Entry,
        file: &File,
    ) -> Result<Self::Item, Error>;
    /// A thread has visited its last file.
    fn done(&self, local: Self::Local);
}

/// A closure visiting each file, with no state per thread.
struct EachFile<'v, V>(&'v V);

impl<T, V> Visitor for EachFile<'_, V>
where
    T: Send,
    V: Fn(Entry, &File) -> Result<T, Error> + Sync,
{
    type Item = T;
    type Local = ();

    fn local(&self) {}

    fn visit(&self, _: &mut (), entry: Entry, file: &File) -> Result<T, Error> {
        (self.0)(entry, file)
    }

    fn done(&self, _: ()) {}
}

/// [`walk`] with the device registry the caller shares with later stages, counting the
/// files found under each input if asked ([`Walked::per_input`]; 4 bytes per input and
/// per directory while counting, nothing otherwise).
pub(crate) fn walk_on<'p, V: Visitor, I>(
    inputs: I,
    opts: &WalkOptions,
    reporter: &dyn Reporter,
    visit: &V,
    devices: &Devices,
    count_per_input: bool,
) -> Walked<V::Item>
where
    I: IntoIterator<Item = &'p Path>,
    I::IntoIter: Send,
{
    let walker = Walker::new(opts, reporter, visit, devices);
    let input_count = walker.inputs(inputs, opts.threads);
    pool::run(opts.threads, || walker.work());
    let Findings {
        found,
        others,
        nodes,
        stats,
    } = walker.into_findings();
    let per_input = count_per_input.then(|| files_per_input(&nodes, &found, input_count));
    Walked {
        files: given_order(&nodes, found),
        others: given_order(&nodes, others),
        stats,
        per_input,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::Quiet;
    use std::fs;
    #[cfg(unix)]
    use std::sync::Mutex;

    /// The files the walk of `dir` finds, relative to it, in given order.
    pub(super) fn names(dir: &Path, opts: &WalkOptions) -> Vec<String> {
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
    fn a_long_list_of_inputs_taken_by_many_threads_keeps_given_order_and_its_first_names() {
        // More inputs than the caller's thread takes alone: files, a directory named twice
        // (the second time through a link), a missing path and a directory's file named
        // directly again, among them.
        struct Said(Mutex<Vec<String>>);
        impl Reporter for Said {
            fn error(&self, err: &Error) {
                self.0.lock().unwrap().push(format!("error: {err}"));
            }
            fn skipped(&self, path: &Path, why: &str) {
                let name = path.file_name().unwrap().to_string_lossy();
                self.0.lock().unwrap().push(format!("{name}: {why}"));
            }
        }
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        fs::create_dir(root.join("dir")).unwrap();
        for name in ["x", "y"] {
            fs::write(root.join("dir").join(name), name).unwrap();
        }
        std::os::unix::fs::symlink("dir", root.join("dir-again")).unwrap();
        let mut inputs = Vec::new();
        let mut expected = Vec::new();
        for i in 0..1500 {
            let name = format!("f{i:04}");
            fs::write(root.join(&name), b"1").unwrap();
            inputs.push(root.join(&name));
            expected.push(name);
            match i {
                700 => {
                    inputs.push(root.join("dir"));
                    expected.extend(["dir/x".to_string(), "dir/y".to_string()]);
                }
                900 => inputs.push(root.join("dir-again")),
                1000 => inputs.push(root.join("missing")),
                1200 => {
                    inputs.push(root.join("dir/y"));
                    expected.push("dir/y".to_string());
                }
                _ => {}
            }
        }
        let opts = WalkOptions {
            threads: 8,
            ..WalkOptions::default()
        };
        for _ in 0..3 {
            let said = Said(Mutex::new(Vec::new()));
            let walked = walk(&inputs, &opts, &said, &|e: Entry, _: &File| {
                let rel = e.path.strip_prefix(root).unwrap();
                Ok(rel.to_string_lossy().into_owned())
            });
            assert_eq!(walked.files, expected);
            assert_eq!((walked.stats.files, walked.stats.errors), (1503, 1));
            assert_eq!(walked.stats.revisited_dirs, 1);
            let said = said.0.into_inner().unwrap();
            assert_eq!(said.len(), 2, "{said:?}");
            assert!(
                said.contains(&"dir-again: directory already walked under another path".into()),
                "the later name is the one left out: {said:?}"
            );
            assert!(
                said.iter()
                    .any(|m| m.starts_with("error: ") && m.contains("missing"))
            );
        }
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

    pub(crate) use crate::test_hooks::panic_message;
}
