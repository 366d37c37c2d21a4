//! What the mount remembers: which backing path each inode number stands for, and the
//! files and directory listings it has open. Inode numbers are the backing files' own
//! (hard links stay one inode); the root is FUSE's 1.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{FileAttr, FileType, INodeNo};

use crate::log::lock;

/// One entry of a listing as handed to the kernel.
pub struct DirEntry {
    pub ino: u64,
    pub kind: FileType,
    pub name: Vec<u8>,
}

pub enum Handle {
    File {
        file: File,
        rel: Vec<u8>,
    },
    Dir {
        entries: Vec<DirEntry>,
        rel: Vec<u8>,
    },
}

pub struct Nodes {
    pub root: PathBuf,
    /// Inode number → path relative to the root (the last name it was found under).
    paths: Mutex<HashMap<u64, Vec<u8>>>,
    handles: Mutex<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
}

impl Nodes {
    pub fn new(root: PathBuf) -> Nodes {
        let mut paths = HashMap::new();
        paths.insert(INodeNo::ROOT.0, Vec::new());
        Nodes {
            root,
            paths: Mutex::new(paths),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        }
    }

    pub fn rel_of(&self, ino: INodeNo) -> Option<Vec<u8>> {
        lock(&self.paths).get(&ino.0).cloned()
    }

    pub fn child_rel(&self, parent: INodeNo, name: &OsStr) -> Option<Vec<u8>> {
        let mut rel = self.rel_of(parent)?;
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name.as_bytes());
        Some(rel)
    }

    pub fn backing(&self, rel: &[u8]) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(OsStr::from_bytes(rel))
        }
    }

    /// The FUSE inode number of a backing file, remembered as found at `rel`.
    pub fn remember(&self, rel: &[u8], meta: &Metadata) -> INodeNo {
        if rel.is_empty() {
            return INodeNo::ROOT;
        }
        let ino = fuse_ino(meta.ino());
        lock(&self.paths).insert(ino, rel.to_vec());
        INodeNo(ino)
    }

    /// After a rename: everything at or under `from` is now under `to`.
    pub fn renamed(&self, from: &[u8], to: &[u8]) {
        let mut paths = lock(&self.paths);
        for rel in paths.values_mut() {
            let under = rel.len() > from.len() && rel.starts_with(from) && rel[from.len()] == b'/';
            if rel.as_slice() == from || under {
                let mut new = to.to_vec();
                new.extend_from_slice(&rel[from.len()..]);
                *rel = new;
            }
        }
    }

    pub fn open(&self, handle: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, handle);
        fh
    }

    pub fn with<R>(&self, fh: u64, f: impl FnOnce(&mut Handle) -> R) -> Option<R> {
        lock(&self.handles).get_mut(&fh).map(f)
    }

    pub fn close(&self, fh: u64) {
        lock(&self.handles).remove(&fh);
    }
}

/// Backing inode 1 (only ever a filesystem's root) would clash with FUSE's root.
pub fn fuse_ino(backing: u64) -> u64 {
    if backing == 1 { u64::MAX - 1 } else { backing }
}

pub fn kind_of(ft: std::fs::FileType) -> FileType {
    if ft.is_dir() {
        FileType::Directory
    } else if ft.is_symlink() {
        FileType::Symlink
    } else if ft.is_fifo() {
        FileType::NamedPipe
    } else if ft.is_char_device() {
        FileType::CharDevice
    } else if ft.is_block_device() {
        FileType::BlockDevice
    } else if ft.is_socket() {
        FileType::Socket
    } else {
        FileType::RegularFile
    }
}

pub fn attr(ino: INodeNo, m: &Metadata) -> FileAttr {
    let time = |s: i64, ns: i64| {
        if s >= 0 {
            UNIX_EPOCH + Duration::new(s as u64, ns as u32)
        } else {
            UNIX_EPOCH - Duration::from_secs(s.unsigned_abs()) + Duration::from_nanos(ns as u64)
        }
    };
    FileAttr {
        ino,
        size: m.size(),
        blocks: m.blocks(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        crtime: SystemTime::UNIX_EPOCH,
        kind: kind_of(m.file_type()),
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}
