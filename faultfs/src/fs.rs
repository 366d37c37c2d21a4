//! The passthrough: every request is done on the backing directory, unless the [`Spec`]
//! says a fault strikes it. Attributes and entries are never cached by the kernel (TTL 0)
//! and files are opened for direct I/O, so every stat, lookup, read and write reaches us:
//! a file that grows here is seen to grow, and a failing write fails the caller's write.

use std::collections::HashSet;
use std::ffi::{CString, OsStr};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, Errno, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, TimeOrNow, WriteFlags,
};

use crate::log::{FaultLog, lock};
use crate::nodes::{DirEntry, Handle, Nodes, attr, fuse_ino, kind_of};
use crate::spec::{Kind, Spec, write_key};

const TTL: Duration = Duration::ZERO;

pub struct FaultFs {
    pub nodes: Nodes,
    pub spec: Spec,
    pub log: FaultLog,
    /// Files already grown or shrunk (each changes once).
    changed: Mutex<HashSet<Vec<u8>>>,
    /// Files rewritten in place, and how many times.
    rewritten: Mutex<std::collections::HashMap<Vec<u8>, u32>>,
    written: AtomicU64,
}

fn errno(e: io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn cstr(p: &Path) -> Result<CString, Errno> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)
}

/// The result of a libc call that returns -1 and sets errno on failure.
fn check(rc: libc::c_int) -> Result<(), Errno> {
    if rc == -1 {
        Err(errno(io::Error::last_os_error()))
    } else {
        Ok(())
    }
}

impl FaultFs {
    pub fn new(nodes: Nodes, spec: Spec, log: FaultLog) -> FaultFs {
        FaultFs {
            nodes,
            spec,
            log,
            changed: Mutex::new(HashSet::new()),
            rewritten: Mutex::new(std::collections::HashMap::new()),
            written: AtomicU64::new(0),
        }
    }

    fn rel(&self, ino: INodeNo) -> Result<Vec<u8>, Errno> {
        self.nodes.rel_of(ino).ok_or(Errno::ENOENT)
    }

    /// Whether `kind` strikes `rel`, logging it if so.
    fn strike(&self, kind: Kind, rel: &[u8]) -> bool {
        let hit = self.spec.strikes(kind, rel);
        if hit {
            self.log.fault(kind, rel, None);
        }
        hit
    }

    /// lstat of `rel` and its entry for the kernel.
    fn entry_of(&self, rel: &[u8]) -> Result<fuser::FileAttr, Errno> {
        let meta = fs::symlink_metadata(self.nodes.backing(rel)).map_err(errno)?;
        let ino = self.nodes.remember(rel, &meta);
        Ok(attr(ino, &meta))
    }

    fn reply_entry(&self, rel: Result<Vec<u8>, Errno>, reply: ReplyEntry) {
        match rel.and_then(|r| self.entry_of(&r)) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<Vec<u8>, Errno> {
        self.nodes.child_rel(parent, name).ok_or(Errno::ENOENT)
    }

    /// Faults that strike opening `rel` (a file or a directory); never the root.
    fn open_faults(&self, rel: &[u8]) -> Result<(), Errno> {
        if rel.is_empty() {
            return Ok(());
        }
        if self.strike(Kind::Vanish, rel) {
            return Err(Errno::ENOENT);
        }
        if self.strike(Kind::Eacces, rel) {
            return Err(Errno::EACCES);
        }
        Ok(())
    }

    /// Grows or shrinks the backing file at its first read, if the spec says so (through a
    /// handle of its own: the reader's may be read-only).
    fn change_while_read(&self, rel: &[u8]) {
        let grow = self.spec.strikes(Kind::Grow, rel);
        let shrink = !grow && self.spec.strikes(Kind::Shrink, rel);
        if !(grow || shrink) || !lock(&self.changed).insert(rel.to_vec()) {
            return;
        }
        let file = match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.nodes.backing(rel))
        {
            Ok(f) => f,
            Err(e) => {
                eprintln!("faultfs: changing {}: {e}", String::from_utf8_lossy(rel));
                return;
            }
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let done = if grow {
            let tail: Vec<u8> = (0..4096 + len % 5000).map(|i| (i * 7 + 1) as u8).collect();
            file.write_all_at(&tail, len)
        } else {
            file.set_len(len / 2)
        };
        match done {
            Ok(()) => self
                .log
                .fault(if grow { Kind::Grow } else { Kind::Shrink }, rel, Some(len)),
            Err(e) => eprintln!("faultfs: changing {}: {e}", String::from_utf8_lossy(rel)),
        }
    }

    /// Rewrites the backing file in place once a read has reached its end, if the spec says
    /// so: every byte changed, the size and modification time put back. The reader has the
    /// old bytes; the file holds others, its status-change time alone moved. At the first
    /// two reads that get there: a reader whose prefetch (`readahead`, through the page
    /// cache) read the file first meets it again at its own last read.
    fn rewrite_after_read(&self, rel: &[u8], reached: u64, len: u64) {
        if len == 0 || reached < len || !self.spec.strikes(Kind::Rewrite, rel) {
            return;
        }
        {
            let mut done = lock(&self.rewritten);
            let times = done.entry(rel.to_vec()).or_default();
            if *times >= 2 {
                return;
            }
            *times += 1;
        }
        let path = self.nodes.backing(rel);
        let done = (|| -> io::Result<()> {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)?;
            let meta = file.metadata()?;
            let mut bytes = vec![0; meta.len() as usize];
            file.read_exact_at(&mut bytes, 0)?;
            for b in &mut bytes {
                *b = b.wrapping_add(0x5b);
            }
            file.write_all_at(&bytes, 0)?;
            file.set_modified(meta.modified()?)
        })();
        match done {
            Ok(()) => self.log.fault(Kind::Rewrite, rel, Some(len)),
            Err(e) => eprintln!("faultfs: rewriting {}: {e}", String::from_utf8_lossy(rel)),
        }
    }

    /// Faults that strike a write of `len` bytes to `rel`.
    fn write_faults(&self, rel: &[u8], len: u64) -> Result<(), Errno> {
        let key = write_key(rel);
        if let Some(limit) = self.spec.enospc_after {
            let before = self.written.fetch_add(len, Ordering::SeqCst);
            if before + len > limit {
                self.log.fault(Kind::Enospc, rel, Some(before));
                return Err(Errno::ENOSPC);
            }
        }
        if self.spec.strikes(Kind::Enospc, &key) {
            self.log.fault(Kind::Enospc, rel, None);
            return Err(Errno::ENOSPC);
        }
        if self.spec.strikes(Kind::WriteEio, &key) {
            self.log.fault(Kind::WriteEio, rel, None);
            return Err(Errno::EIO);
        }
        Ok(())
    }

    /// The backing directory's entries, as the listing will show them.
    fn list(&self, rel: &[u8]) -> Result<Vec<DirEntry>, Errno> {
        let dir = self.nodes.backing(rel);
        let me = fs::symlink_metadata(&dir).map_err(errno)?;
        let mut out = vec![
            DirEntry {
                ino: if rel.is_empty() {
                    1
                } else {
                    fuse_ino(me_ino(&me))
                },
                kind: FileType::Directory,
                name: b".".to_vec(),
            },
            DirEntry {
                ino: 1,
                kind: FileType::Directory,
                name: b"..".to_vec(),
            },
        ];
        for e in fs::read_dir(&dir).map_err(errno)? {
            let e = e.map_err(errno)?;
            let name = e.file_name().as_bytes().to_vec();
            let mut kind = kind_of(e.file_type().map_err(errno)?);
            let mut child = rel.to_vec();
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(&name);
            if self.strike(Kind::ChangeType, &child) {
                kind = match kind {
                    FileType::Directory => FileType::RegularFile,
                    _ => FileType::Directory,
                };
            }
            out.push(DirEntry {
                ino: fuse_ino(std::os::unix::fs::DirEntryExt::ino(&e)),
                kind,
                name,
            });
        }
        Ok(out)
    }

    /// A file that appears in `rel` just after it was listed.
    fn appear(&self, rel: &[u8]) {
        if !self.spec.strikes(Kind::Appear, rel) {
            return;
        }
        let mut new = rel.to_vec();
        if !new.is_empty() {
            new.push(b'/');
        }
        new.extend_from_slice(
            format!("appeared-{:x}", self.spec.hash(Kind::Appear, rel) % 0xffff).as_bytes(),
        );
        let made = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.nodes.backing(&new))
            .and_then(|mut f| io::Write::write_all(&mut f, &new));
        if made.is_ok() {
            self.log.fault(Kind::Appear, &new, None);
        }
    }
}

fn me_ino(m: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(m)
}

fn timespec(t: Option<TimeOrNow>) -> libc::timespec {
    match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(TimeOrNow::Now) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(TimeOrNow::SpecificTime(t)) => {
            let (s, ns) = match t.duration_since(UNIX_EPOCH) {
                Ok(d) => (d.as_secs() as i64, i64::from(d.subsec_nanos())),
                Err(e) => {
                    let d = e.duration();
                    let mut s = -(d.as_secs() as i64);
                    let mut ns = -i64::from(d.subsec_nanos());
                    if ns < 0 {
                        s -= 1;
                        ns += 1_000_000_000;
                    }
                    (s, ns)
                }
            };
            libc::timespec {
                tv_sec: s,
                tv_nsec: ns,
            }
        }
    }
}

impl Filesystem for FaultFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.reply_entry(self.child(parent, name), reply);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let by_handle = fh.and_then(|fh| {
            self.nodes.with(fh.0, |h| match h {
                Handle::File { file, .. } => Some(file.metadata()),
                Handle::Dir { .. } => None,
            })?
        });
        let meta = match by_handle {
            Some(m) => m.map_err(errno),
            None => self
                .rel(ino)
                .and_then(|r| fs::symlink_metadata(self.nodes.backing(&r)).map_err(errno)),
        };
        match meta {
            Ok(m) => reply.attr(&TTL, &attr(ino, &m)),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let done = (|| -> Result<fs::Metadata, Errno> {
            let rel = self.rel(ino)?;
            let path = self.nodes.backing(&rel);
            let c = cstr(&path)?;
            if let Some(mode) = mode {
                // SAFETY: a NUL-terminated path and a plain mode.
                check(unsafe { libc::chmod(c.as_ptr(), mode & 0o7777) })?;
            }
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::lchown(&path, uid, gid).map_err(errno)?;
            }
            if let Some(size) = size {
                if size > 0 {
                    self.write_faults(&rel, 0)?;
                }
                let by_handle = fh.and_then(|fh| {
                    self.nodes.with(fh.0, |h| match h {
                        Handle::File { file, .. } => Some(file.set_len(size)),
                        Handle::Dir { .. } => None,
                    })?
                });
                match by_handle {
                    Some(r) => r.map_err(errno)?,
                    None => OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_len(size))
                        .map_err(errno)?,
                }
            }
            if atime.is_some() || mtime.is_some() {
                let times = [timespec(atime), timespec(mtime)];
                // SAFETY: a NUL-terminated path and an array of two timespecs.
                check(unsafe {
                    libc::utimensat(
                        libc::AT_FDCWD,
                        c.as_ptr(),
                        times.as_ptr(),
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                })?;
            }
            fs::symlink_metadata(&path).map_err(errno)
        })();
        match done {
            Ok(m) => reply.attr(&TTL, &attr(ino, &m)),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self
            .rel(ino)
            .and_then(|r| fs::read_link(self.nodes.backing(&r)).map_err(errno))
        {
            Ok(t) => reply.data(t.as_os_str().as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let rel = self.child(parent, name).and_then(|rel| {
            let c = cstr(&self.nodes.backing(&rel))?;
            // SAFETY: a NUL-terminated path, plain mode and device numbers.
            check(unsafe { libc::mknod(c.as_ptr(), mode & !umask, libc::dev_t::from(rdev)) })?;
            Ok(rel)
        });
        self.reply_entry(rel, reply);
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let rel = self.child(parent, name).and_then(|rel| {
            let c = cstr(&self.nodes.backing(&rel))?;
            // SAFETY: a NUL-terminated path and a plain mode.
            check(unsafe { libc::mkdir(c.as_ptr(), (mode & !umask) as libc::mode_t) })?;
            Ok(rel)
        });
        self.reply_entry(rel, reply);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self
            .child(parent, name)
            .and_then(|r| fs::remove_file(self.nodes.backing(&r)).map_err(errno))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self
            .child(parent, name)
            .and_then(|r| fs::remove_dir(self.nodes.backing(&r)).map_err(errno))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let rel = self.child(parent, link_name).and_then(|rel| {
            std::os::unix::fs::symlink(target, self.nodes.backing(&rel)).map_err(errno)?;
            Ok(rel)
        });
        self.reply_entry(rel, reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let done = (|| {
            let from = self.child(parent, name)?;
            let to = self.child(newparent, newname)?;
            let (a, b) = (
                cstr(&self.nodes.backing(&from))?,
                cstr(&self.nodes.backing(&to))?,
            );
            // SAFETY: two NUL-terminated paths and the caller's flags.
            check(unsafe {
                libc::renameat2(
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    flags.bits(),
                )
            })?;
            self.nodes.renamed(&from, &to);
            Ok(())
        })();
        match done {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let rel = (|| {
            let from = self.rel(ino)?;
            let to = self.child(newparent, newname)?;
            fs::hard_link(self.nodes.backing(&from), self.nodes.backing(&to)).map_err(errno)?;
            Ok(to)
        })();
        self.reply_entry(rel, reply);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let opened = (|| {
            let rel = self.rel(ino)?;
            self.open_faults(&rel)?;
            let write = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
            let file = OpenOptions::new()
                .read(true)
                .write(write)
                .custom_flags(libc::O_NOFOLLOW)
                .open(self.nodes.backing(&rel))
                .map_err(errno)?;
            self.log.opened(&rel);
            Ok(self.nodes.open(Handle::File { file, rel }))
        })();
        match opened {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(e),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let data = self.nodes.with(fh.0, |h| -> Result<Vec<u8>, Errno> {
            let Handle::File { file, rel } = h else {
                return Err(Errno::EISDIR);
            };
            self.change_while_read(rel);
            if self.spec.strikes(Kind::ReadEio, rel) {
                let len = file.metadata().map_err(errno)?.len();
                let at = if len == 0 {
                    0
                } else {
                    (self.spec.hash(Kind::ReadEio, rel) % len) & !4095
                };
                if len > 0 && offset + u64::from(size) > at {
                    self.log.fault(Kind::ReadEio, rel, Some(at));
                    return Err(Errno::EIO);
                }
            }
            let mut buf = vec![0; size as usize];
            let mut got = 0;
            while got < buf.len() {
                match file.read_at(&mut buf[got..], offset + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(errno(e)),
                }
            }
            buf.truncate(got);
            let len = file.metadata().map_err(errno)?.len();
            self.rewrite_after_read(rel, offset + got as u64, len);
            Ok(buf)
        });
        match data {
            Some(Ok(d)) => reply.data(&d),
            Some(Err(e)) => reply.error(e),
            None => reply.error(Errno::EBADF),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let done = self.nodes.with(fh.0, |h| -> Result<(), Errno> {
            let Handle::File { file, rel } = h else {
                return Err(Errno::EISDIR);
            };
            self.write_faults(rel, data.len() as u64)?;
            file.write_all_at(data, offset).map_err(errno)
        });
        match done {
            Some(Ok(())) => reply.written(data.len() as u32),
            Some(Err(e)) => reply.error(e),
            None => reply.error(Errno::EBADF),
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

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.nodes.close(fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let done = self.nodes.with(fh.0, |h| -> Result<(), Errno> {
            let Handle::File { file, rel } = h else {
                return Ok(());
            };
            if self.spec.strikes(Kind::WriteEio, &write_key(rel)) {
                self.log.fault(Kind::WriteEio, rel, None);
                return Err(Errno::EIO);
            }
            if datasync {
                file.sync_data().map_err(errno)
            } else {
                file.sync_all().map_err(errno)
            }
        });
        match done {
            Some(Ok(())) => reply.ok(),
            Some(Err(e)) => reply.error(e),
            None => reply.error(Errno::EBADF),
        }
    }

    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // flock(2) on a file through the mount is done on the file below, so that a lock
        // taken here and one taken on the backing filesystem are one lock, as with the
        // filesystem itself (and as mergerfs does). Without it the kernel keeps locks of its
        // own for the mount, which another view of the same files never sees. (Directories
        // it keeps to itself in any case.)
        let _ = config.add_capabilities(InitFlags::FUSE_FLOCK_LOCKS);
        Ok(())
    }

    fn setlk(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        _start: u64,
        _end: u64,
        typ: i32,
        _pid: u32,
        sleep: bool,
        reply: ReplyEmpty,
    ) {
        // Only flock(2) reaches here (FUSE_FLOCK_LOCKS without FUSE_POSIX_LOCKS).
        let op = match typ {
            libc::F_RDLCK => libc::LOCK_SH,
            libc::F_WRLCK => libc::LOCK_EX,
            _ => libc::LOCK_UN,
        };
        // A second descriptor of the same open file: the lock is that open file's.
        let fd = self
            .nodes
            .with(fh.0, |h| -> Result<std::os::fd::OwnedFd, Errno> {
                // (The kernel keeps flock(2) on a FUSE directory to itself.)
                let Handle::File { file, .. } = h else {
                    return Err(Errno::ENOLCK);
                };
                file.try_clone().map(Into::into).map_err(errno)
            });
        let fd = match fd {
            Some(Ok(fd)) => fd,
            Some(Err(e)) => return reply.error(e),
            None => return reply.error(Errno::EBADF),
        };
        let lock = move |op: libc::c_int| {
            // SAFETY: `fd` is an open descriptor owned by this closure.
            check(unsafe { libc::flock(fd.as_raw_fd(), op) })
        };
        if sleep && op != libc::LOCK_UN {
            // Waiting here would stop the session, and with it the release that frees the
            // lock: wait on a thread of its own.
            std::thread::spawn(move || match lock(op) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            });
        } else {
            match lock(op | libc::LOCK_NB) {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let opened = (|| {
            let rel = self.rel(ino)?;
            self.open_faults(&rel)?;
            let entries = self.list(&rel)?;
            self.appear(&rel);
            Ok(self.nodes.open(Handle::Dir { entries, rel }))
        })();
        match opened {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let failed = self.nodes.with(fh.0, |h| -> Result<(), Errno> {
            let Handle::Dir { entries, rel } = h else {
                return Err(Errno::ENOTDIR);
            };
            // A failing listing gives its first half (at least "." and ".."), then EIO.
            let fail_at = (!rel.is_empty() && self.spec.strikes(Kind::ReaddirEio, rel))
                .then(|| (entries.len() / 2).max(2));
            if let Some(at) = fail_at
                && offset as usize >= at
            {
                self.log.fault(Kind::ReaddirEio, rel, Some(at as u64));
                return Err(Errno::EIO);
            }
            for (i, e) in entries.iter().enumerate().skip(offset as usize) {
                if Some(i) == fail_at {
                    break;
                }
                if reply.add(
                    INodeNo(e.ino),
                    (i + 1) as u64,
                    e.kind,
                    OsStr::from_bytes(&e.name),
                ) {
                    break;
                }
            }
            Ok(())
        });
        match failed {
            Some(Ok(())) => reply.ok(),
            Some(Err(e)) => reply.error(e),
            None => reply.error(Errno::EBADF),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.nodes.close(fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self
            .rel(ino)
            .and_then(|r| File::open(self.nodes.backing(&r)).map_err(errno))
            .and_then(|d| d.sync_all().map_err(errno))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let done = (|| {
            let c = cstr(&self.nodes.root)?;
            // SAFETY: statvfs is plain old data; zeroed is a valid value for it.
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: a NUL-terminated path and a pointer to a statvfs we own.
            check(unsafe { libc::statvfs(c.as_ptr(), &mut st) })?;
            Ok(st)
        })();
        match done {
            Ok(st) => reply.statfs(
                st.f_blocks,
                st.f_bfree,
                st.f_bavail,
                st.f_files,
                st.f_ffree,
                st.f_bsize as u32,
                st.f_namemax as u32,
                st.f_frsize as u32,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        let done = (|| {
            let path = cstr(&self.nodes.backing(&self.rel(ino)?))?;
            let name = CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
            // SAFETY: NUL-terminated path and name; value's pointer and length agree.
            check(unsafe {
                libc::lsetxattr(
                    path.as_ptr(),
                    name.as_ptr(),
                    value.as_ptr().cast(),
                    value.len(),
                    flags,
                )
            })
        })();
        match done {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let got = (|| {
            let path = cstr(&self.nodes.backing(&self.rel(ino)?))?;
            let name = CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
            xattr_call(size, |buf, len| {
                // SAFETY: NUL-terminated path and name; buf is len bytes we own (or null
                // with len 0, which asks for the size).
                unsafe { libc::lgetxattr(path.as_ptr(), name.as_ptr(), buf, len) }
            })
        })();
        reply_xattr(got, size, reply);
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let got = (|| {
            let path = cstr(&self.nodes.backing(&self.rel(ino)?))?;
            xattr_call(size, |buf, len| {
                // SAFETY: a NUL-terminated path; buf is len bytes we own (or null, len 0).
                unsafe { libc::llistxattr(path.as_ptr(), buf.cast(), len) }
            })
        })();
        reply_xattr(got, size, reply);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let done = (|| {
            let path = cstr(&self.nodes.backing(&self.rel(ino)?))?;
            let name = CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
            // SAFETY: NUL-terminated path and name.
            check(unsafe { libc::lremovexattr(path.as_ptr(), name.as_ptr()) })
        })();
        match done {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let made = (|| {
            let rel = self.child(parent, name)?;
            if let Some(limit) = self.spec.enospc_after
                && self.written.load(Ordering::SeqCst) > limit
            {
                self.log.fault(Kind::Enospc, &rel, None);
                return Err(Errno::ENOSPC);
            }
            let path = self.nodes.backing(&rel);
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .create_new(flags & libc::O_EXCL != 0)
                .truncate(flags & libc::O_TRUNC != 0)
                .mode(mode & !umask & 0o7777)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)
                .map_err(errno)?;
            let meta = file.metadata().map_err(errno)?;
            let ino = self.nodes.remember(&rel, &meta);
            self.log.opened(&rel);
            let fh = self.nodes.open(Handle::File { file, rel });
            Ok((attr(ino, &meta), fh))
        })();
        match made {
            Ok((a, fh)) => reply.created(
                &TTL,
                &a,
                Generation(0),
                FileHandle(fh),
                FopenFlags::FOPEN_DIRECT_IO,
            ),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let done = self.nodes.with(fh.0, |h| -> Result<(), Errno> {
            let Handle::File { file, rel } = h else {
                return Err(Errno::EISDIR);
            };
            self.write_faults(rel, 0)?;
            // SAFETY: an open descriptor and plain integers.
            check(unsafe {
                libc::fallocate(
                    file.as_raw_fd(),
                    mode,
                    offset as libc::off_t,
                    length as libc::off_t,
                )
            })
        });
        match done {
            Some(Ok(())) => reply.ok(),
            Some(Err(e)) => reply.error(e),
            None => reply.error(Errno::EBADF),
        }
    }
}

/// Calls an xattr function the usual two ways: `size` 0 asks how long the answer is.
fn xattr_call(
    size: u32,
    f: impl Fn(*mut libc::c_void, usize) -> libc::ssize_t,
) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; size as usize];
    let ptr = if size == 0 {
        std::ptr::null_mut()
    } else {
        buf.as_mut_ptr().cast()
    };
    let n = f(ptr, buf.len());
    if n < 0 {
        return Err(errno(io::Error::last_os_error()));
    }
    if size == 0 {
        // Only the length matters: hand it back as that many zero bytes' count.
        return Ok(vec![0; n as usize]);
    }
    buf.truncate(n as usize);
    Ok(buf)
}

fn reply_xattr(got: Result<Vec<u8>, Errno>, size: u32, reply: ReplyXattr) {
    match got {
        Ok(v) if size == 0 => reply.size(v.len() as u32),
        Ok(v) => reply.data(&v),
        Err(e) => reply.error(e),
    }
}
