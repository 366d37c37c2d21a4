//! The FUSE filesystem: a root directory with `disk.img` (the emulated disk) and `control`
//! (stats as JSON on read; commands on write).

use std::ffi::OsStr;
use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::drive_thread::Msg;
use crate::model::Command;
use crate::stats::Shared;

const DISK_INO: INodeNo = INodeNo(2);
const CONTROL_INO: INodeNo = INodeNo(3);
const TTL: Duration = Duration::from_secs(1);

pub const DISK_NAME: &str = "disk.img";
pub const CONTROL_NAME: &str = "control";

/// Kernel-side settings asked for at FUSE init.
#[derive(Clone, Copy, Debug)]
pub struct FuseTuning {
    /// Outstanding async (background) requests the kernel allows; its default is 12.
    pub max_background: u16,
    /// Largest single read/write request, bytes.
    pub max_request: u32,
    /// Ask for FUSE_ASYNC_DIO (off only to show what it is for).
    pub async_dio: bool,
}

pub struct DiskFs {
    pub shared: Arc<Shared>,
    pub tx: Sender<Msg>,
    pub size: u64,
    pub tuning: FuseTuning,
    pub started: SystemTime,
}

impl DiskFs {
    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, size, nlink) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0o755, 0, 2),
            DISK_INO => (FileType::RegularFile, 0o644, self.size, 1),
            CONTROL_INO => (FileType::RegularFile, 0o644, 0, 1),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: self.started,
            mtime: self.started,
            ctime: self.started,
            crtime: self.started,
            kind,
            perm,
            nlink,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn control_command(&self, text: &str) -> Result<(), Errno> {
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
            match word {
                "on" => self.shared.model_on.store(true, Ordering::SeqCst),
                "off" => self.shared.model_on.store(false, Ordering::SeqCst),
                "reset" => self.shared.reset(),
                "fcfs" => self.shared.fcfs.store(true, Ordering::SeqCst),
                "sptf" => self.shared.fcfs.store(false, Ordering::SeqCst),
                "trace-mark" | "mark" => self
                    .tx
                    .send(Msg::Mark(rest.trim().to_string()))
                    .map_err(|_| Errno::EIO)?,
                _ => return Err(Errno::EINVAL),
            }
        }
        Ok(())
    }
}

impl Filesystem for DiskFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // Without ASYNC_DIO the kernel turns an async direct read (what the loop driver
        // issues) into a synchronous one: one request in flight, no queue to reorder.
        let mut wanted = InitFlags::FUSE_ASYNC_READ;
        if self.tuning.async_dio {
            wanted |= InitFlags::FUSE_ASYNC_DIO;
        }
        let _ = config.add_capabilities(wanted & config.capabilities());
        let bg = self.tuning.max_background;
        let _ = config.set_max_background(bg);
        let _ = config.set_congestion_threshold(bg);
        if let Err(nearest) = config.set_max_write(self.tuning.max_request) {
            let _ = config.set_max_write(nearest);
        }
        if let Err(nearest) = config.set_max_readahead(self.tuning.max_request) {
            let _ = config.set_max_readahead(nearest);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let ino = match (parent, name.to_str()) {
            (INodeNo::ROOT, Some(DISK_NAME)) => DISK_INO,
            (INodeNo::ROOT, Some(CONTROL_NAME)) => CONTROL_INO,
            _ => return reply.error(Errno::ENOENT),
        };
        match self.attr(ino) {
            Some(a) => reply.entry(&TTL, &a, fuser::Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    /// Only truncation of `control` (from `echo cmd > control`) is accepted, as a no-op;
    /// the disk's size is fixed.
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if ino == DISK_INO && size.is_some_and(|s| s != self.size) {
            return reply.error(Errno::EPERM);
        }
        match self.attr(ino) {
            Some(a) => reply.attr(&TTL, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match ino {
            // Direct I/O: every read reaches us (no FUSE page cache), and concurrent direct
            // writes are not serialised on the inode lock.
            DISK_INO => reply.opened(
                FileHandle(0),
                FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES,
            ),
            CONTROL_INO => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match ino {
            DISK_INO => {
                let len = u64::from(size).min(self.size.saturating_sub(offset));
                if len == 0 {
                    return reply.data(&[]);
                }
                self.shared.request_arrived();
                let msg = Msg::Read {
                    cmd: Command {
                        offset,
                        len,
                        write: false,
                    },
                    arrival: self.shared.now_ns(),
                    reply,
                };
                if let Err(e) = self.tx.send(msg) {
                    self.shared.request_answered();
                    if let Msg::Read { reply, .. } = e.0 {
                        reply.error(Errno::EIO);
                    }
                }
            }
            CONTROL_INO => {
                let json = self.shared.report_json();
                let bytes = json.as_bytes();
                let start = (offset as usize).min(bytes.len());
                let end = start.saturating_add(size as usize).min(bytes.len());
                reply.data(&bytes[start..end]);
            }
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match ino {
            DISK_INO => {
                if offset.saturating_add(data.len() as u64) > self.size {
                    return reply.error(Errno::ENOSPC);
                }
                self.shared.request_arrived();
                let msg = Msg::Write {
                    cmd: Command {
                        offset,
                        len: data.len() as u64,
                        write: true,
                    },
                    arrival: self.shared.now_ns(),
                    data: data.to_vec(),
                    reply,
                };
                if let Err(e) = self.tx.send(msg) {
                    self.shared.request_answered();
                    if let Msg::Write { reply, .. } = e.0 {
                        reply.error(Errno::EIO);
                    }
                }
            }
            CONTROL_INO => match std::str::from_utf8(data) {
                Ok(text) => match self.control_command(text) {
                    Ok(()) => reply.written(data.len() as u32),
                    Err(e) => reply.error(e),
                },
                Err(_) => reply.error(Errno::EINVAL),
            },
            _ => reply.error(Errno::EISDIR),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    /// Writes reach the image before they are acknowledged; nothing to sync.
    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (DISK_INO, FileType::RegularFile, DISK_NAME),
            (CONTROL_INO, FileType::RegularFile, CONTROL_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}
