//! The few Win32 calls the backend makes on open handles, as safe functions.
//!
//! Every `unsafe` block of the Windows backend that is not a plain query lives here: the
//! rest of the backend passes byte buffers and gets typed answers.

use std::fs::File;
use std::io;
use std::os::windows::io::AsRawHandle;

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, GetFileInformationByHandle, GetFinalPathNameByHandleW,
    GetVolumeInformationByHandleW, GetVolumeNameForVolumeMountPointW, GetVolumePathNameW,
};
use windows_sys::Win32::System::IO::DeviceIoControl;

/// A buffer aligned for the `LARGE_INTEGER`s in ioctl structures: drivers may reject
/// misaligned buffers, and byte arrays on the stack have no alignment.
#[repr(C, align(8))]
pub struct Aligned<const N: usize>(pub [u8; N]);

impl<const N: usize> Aligned<N> {
    /// A buffer of zeroes.
    pub fn zeroed() -> Self {
        Self([0; N])
    }
}

fn handle(file: &File) -> HANDLE {
    file.as_raw_handle() as HANDLE
}

/// `DeviceIoControl` on a synchronous handle: sends `input`, lets the driver fill
/// `output`, and returns how many bytes it wrote together with the call's result (with
/// `ERROR_MORE_DATA` the bytes written are still valid).
///
/// <https://learn.microsoft.com/windows/win32/api/ioapiset/nf-ioapiset-deviceiocontrol>
pub fn device_io_control(
    file: &File,
    code: u32,
    input: &[u8],
    output: &mut [u8],
) -> (usize, io::Result<()>) {
    let in_len = u32::try_from(input.len()).unwrap_or(u32::MAX);
    let out_len = u32::try_from(output.len()).unwrap_or(u32::MAX);
    let mut returned: u32 = 0;
    // SAFETY: the handle is open for the duration of the call (borrowed from `file`) and
    // was opened without FILE_FLAG_OVERLAPPED, so a null OVERLAPPED makes the call
    // synchronous. The input and output pointers are valid for the lengths passed (at most
    // the slices' lengths), and `returned` is a valid u32 to write.
    let ok = unsafe {
        DeviceIoControl(
            handle(file),
            code,
            input.as_ptr().cast(),
            in_len,
            output.as_mut_ptr().cast(),
            out_len,
            &mut returned,
            std::ptr::null_mut(),
        )
    };
    let result = if ok != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    };
    ((returned as usize).min(output.len()), result)
}

/// What `GetFileInformationByHandle` says about an open file.
pub struct HandleInfo {
    /// The serial number of the volume the file is on.
    pub volume_serial: u32,
    /// The file's index on the volume (on NTFS, its MFT record number).
    pub file_index: u64,
    /// Its `FILE_ATTRIBUTE_*` flags.
    pub attributes: u32,
}

/// <https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-getfileinformationbyhandle>
pub fn handle_info(file: &File) -> io::Result<HandleInfo> {
    // SAFETY: BY_HANDLE_FILE_INFORMATION is plain old data; all zeroes is a valid value.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open (borrowed from `file`) and `info` is a valid, writable
    // BY_HANDLE_FILE_INFORMATION.
    let ok = unsafe { GetFileInformationByHandle(handle(file), &mut info) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(HandleInfo {
        volume_serial: info.dwVolumeSerialNumber,
        file_index: (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
        attributes: info.dwFileAttributes,
    })
}

/// The name of the filesystem (`NTFS`, `ReFS`, `FAT32`, `exFAT`, …) of the volume `file`
/// is on.
///
/// <https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-getvolumeinformationbyhandlew>
pub fn filesystem_name(file: &File) -> io::Result<String> {
    // MAX_PATH + 1, as the documentation asks for.
    let mut name = [0u16; 261];
    // SAFETY: the handle is open; the only buffer passed is `name` with its true length in
    // characters; every other out-pointer is null, which the function allows.
    let ok = unsafe {
        GetVolumeInformationByHandleW(
            handle(file),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            name.as_mut_ptr(),
            name.len() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(from_wide(&name))
}

/// The file's full path as Windows resolves it (`\\?\C:\dir\file`,
/// `\\?\UNC\server\share\file`), for finding its volume's root.
///
/// <https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-getfinalpathnamebyhandlew>
pub fn final_path(file: &File) -> io::Result<Vec<u16>> {
    // VOLUME_NAME_DOS | FILE_NAME_NORMALIZED.
    const FLAGS: u32 = 0;
    let mut buf = vec![0u16; 512];
    loop {
        // SAFETY: the handle is open and `buf` is writable for `buf.len()` characters.
        let n = unsafe {
            GetFinalPathNameByHandleW(handle(file), buf.as_mut_ptr(), buf.len() as u32, FLAGS)
        } as usize;
        if n == 0 {
            return Err(io::Error::last_os_error());
        }
        if n < buf.len() {
            buf.truncate(n);
            return Ok(buf);
        }
        // Too small: `n` is the size needed, including the terminating NUL.
        buf.resize(n + 1, 0);
    }
}

/// A NUL-terminated UTF-16 buffer as a string.
pub fn from_wide(w: &[u16]) -> String {
    let end = w.iter().position(|&c| c == 0).unwrap_or(w.len());
    String::from_utf16_lossy(&w[..end])
}

/// A string as a NUL-terminated UTF-16 buffer.
pub fn to_wide(s: &[u16]) -> Vec<u16> {
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    let mut w = s[..end].to_vec();
    w.push(0);
    w
}

/// Whether this process runs under Wine (its ntdll exports `wine_get_version`), where
/// some answers are stubs: for tests that check what Wine does and skip what it cannot.
pub fn is_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
    let ntdll: Vec<u16> = "ntdll.dll\0".encode_utf16().collect();
    // SAFETY: both strings are NUL-terminated; ntdll is loaded in every process, and the
    // module handle is not kept past this call.
    unsafe {
        let module = GetModuleHandleW(ntdll.as_ptr());
        !module.is_null() && GetProcAddress(module, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

/// A string as a NUL-terminated UTF-16 buffer.
fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// Whether a volume root is a network share (`\\server\share\`, `\\?\UNC\…`).
pub fn is_unc(root: &str) -> bool {
    (root.starts_with(r"\\") && !root.starts_with(r"\\?\") && !root.starts_with(r"\\.\"))
        || root.starts_with(r"\\?\UNC\")
}

/// The root of the volume holding `path` (`GetVolumePathNameW`), e.g. `C:\` or a folder
/// a volume is mounted on; the drive letter of `\\?\C:\…` if the call fails.
///
/// <https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-getvolumepathnamew>
pub fn volume_root(path: &[u16]) -> Option<String> {
    let path = to_wide(path);
    let mut root = [0u16; 1024];
    // SAFETY: `path` is NUL-terminated; `root` is writable for its length in characters.
    let ok = unsafe { GetVolumePathNameW(path.as_ptr(), root.as_mut_ptr(), root.len() as u32) };
    if ok != 0 {
        return Some(from_wide(&root));
    }
    let text = from_wide(&path);
    let rest = text.strip_prefix(r"\\?\").unwrap_or(&text);
    let b = rest.as_bytes();
    (b.len() >= 2 && b[1] == b':').then(|| format!(r"{}:\", &rest[..1]))
}

/// The device path to open a volume by (`\\.\C:` or `\\?\Volume{…}`, no trailing
/// backslash, which would open its root directory instead), for a root that names one.
pub fn device_path(root: &str) -> Option<String> {
    if is_unc(root) {
        return None;
    }
    let rest = root.strip_prefix(r"\\?\").unwrap_or(root);
    let b = rest.as_bytes();
    if b.len() >= 2 && b[1] == b':' && (b.len() == 2 || rest[2..] == *r"\") {
        return Some(format!(r"\\.\{}:", &rest[..1]));
    }
    if rest.starts_with("Volume{") {
        return Some(format!(r"\\?\{}", rest.trim_end_matches('\\')));
    }
    None
}

/// The device path of the volume mounted at `root`, asking Windows for its GUID name when
/// `root` is a folder mount point.
///
/// <https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-getvolumenameforvolumemountpointw>
pub fn volume_device(root: &str) -> Option<String> {
    if let Some(p) = device_path(root) {
        return Some(p);
    }
    let w = wide(root);
    let mut name = [0u16; 64];
    // SAFETY: `w` is NUL-terminated; `name` is writable for its length (a volume GUID path
    // is 49 characters plus NUL).
    let ok = unsafe {
        GetVolumeNameForVolumeMountPointW(w.as_ptr(), name.as_mut_ptr(), name.len() as u32)
    };
    (ok != 0)
        .then(|| from_wide(&name))
        .and_then(|n| device_path(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_roots_become_device_paths() {
        assert_eq!(device_path(r"C:\").as_deref(), Some(r"\\.\C:"));
        assert_eq!(device_path(r"\\?\D:\").as_deref(), Some(r"\\.\D:"));
        let guid = r"\\?\Volume{01234567-89ab-cdef-0123-456789abcdef}\";
        assert_eq!(
            device_path(guid).as_deref(),
            Some(r"\\?\Volume{01234567-89ab-cdef-0123-456789abcdef}")
        );
        assert_eq!(device_path(r"\\server\share\"), None);
        assert_eq!(device_path(r"\\?\UNC\server\share\"), None);
        assert_eq!(device_path(r"C:\mnt\disk2\"), None);
    }
}
