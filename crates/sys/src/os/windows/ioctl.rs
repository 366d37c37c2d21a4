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
    GetVolumeInformationByHandleW,
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
