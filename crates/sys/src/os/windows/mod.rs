//! Windows: identity (volume serial number and file index), opening for a sequential
//! read, elevation; the reading hints and limits that have no equivalent here are no-ops.

/// The few Win32 calls made on open handles, as safe functions (core locates files with them).
pub mod ioctl;
/// The live change journal reader (`crate::usn::VolumeJournal`).
pub(crate) mod journal;

use std::fs::{DirEntry, File, Metadata, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{FromRawHandle, OwnedHandle};
use std::path::Path;

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::Security::{
    GetTokenInformation, TOKEN_ELEVATION, TOKEN_QUERY, TokenElevation,
};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_FLAG_SEQUENTIAL_SCAN,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use crate::file_id::FileId;

/// The identity of a file: volume serial number and file index, from
/// `GetFileInformationByHandle` on the open file, or on a handle opened just for this
/// (std's `MetadataExt::volume_serial_number`/`file_index` are not stable).
///
/// File indexes are 64 bits; ReFS's 128-bit ids are truncated by this call, which can in
/// principle make two ReFS files look like one.
pub fn file_id(path: &Path, open: Option<&File>, _meta: &Metadata) -> io::Result<FileId> {
    let info = match open {
        Some(file) => ioctl::handle_info(file)?,
        None => {
            // No access rights are needed to read attributes; backup semantics lets
            // directories be opened at all.
            let file = OpenOptions::new()
                .access_mode(0)
                .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
                .open(path)?;
            ioctl::handle_info(&file)?
        }
    };
    Ok(FileId {
        dev: u64::from(info.volume_serial),
        ino: info.file_index,
    })
}

/// Directory listings (`FindNextFileW`) carry no file index, so entries cannot be sorted by
/// it before opening. No loss on NTFS: a directory is a B-tree by name, and listing order
/// is that order.
pub fn dir_entry_ino(_entry: &DirEntry) -> u64 {
    0
}

/// Opens a file to ask where it lies; without `follow`, a symbolic link or junction is
/// opened itself (and then skipped as not a regular file) instead of its target.
pub fn open_to_locate(path: &Path, follow: bool) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    if !follow {
        opts.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
    }
    opts.open(path)
}

/// Opens a file for reading its contents, telling the cache manager we read it front to
/// back: it then reads ahead more aggressively and recycles the pages behind us sooner.
///
/// <https://learn.microsoft.com/windows/win32/fileio/file-caching>
pub fn open_to_read(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_SEQUENTIAL_SCAN)
        .open(path)
}

/// Whether the process runs elevated (as administrator).
pub fn is_root() -> bool {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: GetCurrentProcess returns a pseudo-handle that needs no closing;
    // OpenProcessToken writes a new handle into `token` on success.
    let ok = unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) };
    if ok == 0 {
        return false;
    }
    // SAFETY: `token` is a handle we own from here on; OwnedHandle closes it.
    let token = unsafe { OwnedHandle::from_raw_handle(token) };
    let mut elevation = TOKEN_ELEVATION { TokenIsElevated: 0 };
    let mut len = 0u32;
    // SAFETY: the token is open with TOKEN_QUERY; the buffer is a TOKEN_ELEVATION of the
    // size passed; `len` is a valid u32.
    let ok = unsafe {
        GetTokenInformation(
            std::os::windows::io::AsRawHandle::as_raw_handle(&token) as HANDLE,
            TokenElevation,
            (&mut elevation as *mut TOKEN_ELEVATION).cast(),
            std::mem::size_of::<TOKEN_ELEVATION>() as u32,
            &mut len,
        )
    };
    ok != 0 && elevation.TokenIsElevated != 0
}

/// Does nothing, on purpose. Windows has no call that starts reading a range of a file
/// into the cache and returns at once: `PrefetchVirtualMemory` works on mapped views, and
/// mapping every file to prefetch it would cost more than it saves. The cache manager's
/// own read-ahead, made aggressive by [`open_to_read`]'s `FILE_FLAG_SEQUENTIAL_SCAN`, is
/// what keeps the disk busy; the sweep order is what keeps it from seeking.
pub fn prefetch(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// Does nothing: [`prefetch`] starts no reads here, so there is nothing to wait for.
pub fn await_prefetch(_file: &File, _offset: u64) -> io::Result<()> {
    Ok(())
}

/// Does nothing, on purpose: Windows cannot drop a range of a file from the cache. The
/// closest effect comes from `FILE_FLAG_SEQUENTIAL_SCAN` (set by [`open_to_read`]), with
/// which the cache manager reuses the pages of a sequentially read file early.
pub fn drop_cache(_file: &File, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

/// Windows has no small per-process handle limit to raise (a process may hold millions of
/// handles); report a generous figure.
pub fn raise_open_file_limit() -> usize {
    1 << 16
}

/// As [`raise_open_file_limit`]: nothing to raise.
pub fn open_file_limit() -> usize {
    1 << 16
}

/// No system-wide flush is needed before dropping caches: seekless does not drop the
/// Windows cache, so there is nothing to do.
pub fn sync_filesystems() {}

/// No status-change time here (Windows' change time is not in the standard library's
/// metadata): changes are noticed by size and modification time.
pub fn change_time(_meta: &Metadata) -> Option<(i64, i64)> {
    None
}

/// Allocated bytes are not in the standard library's metadata here: unknown.
pub fn allocated_bytes(_meta: &Metadata) -> Option<u64> {
    None
}
