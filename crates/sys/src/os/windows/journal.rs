//! The live change journal: the volume holding a path opened, its journal queried
//! (`FSCTL_QUERY_USN_JOURNAL`) and read (`FSCTL_READ_USN_JOURNAL`) into a reused buffer.
//! Parsing and deciding are portable (`crate::usn`); this is only the asking.
//!
//! <https://learn.microsoft.com/windows/win32/fileio/change-journals>

use std::fs::{File, OpenOptions};
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::OpenOptionsExt;
use std::path::Path;

use windows_sys::Win32::Storage::FileSystem::{
    FILE_SHARE_READ, FILE_SHARE_WRITE, GetVolumeInformationW,
};
use windows_sys::Win32::System::Ioctl::{FSCTL_QUERY_USN_JOURNAL, FSCTL_READ_USN_JOURNAL};

use super::ioctl::{self, Aligned, device_io_control};
use crate::usn::{
    JournalData, JournalReader, JournalState, Records, Unavailable, Usn, WalkReason, is_journaled,
    parse_output, read_failed, read_request,
};

/// The read buffer: 64 KiB holds some 700 records of 88 bytes.
const BUFFER: usize = 64 << 10;

/// A volume's change journal, open for reading.
///
/// Opening needs the right to open the volume for reading (administrator, normally);
/// without it, or on a filesystem without a journal, [`VolumeJournal::open`] says why, and
/// the caller walks ([`crate::usn::resume`] with that error).
pub struct VolumeJournal {
    volume: File,
    state: JournalState,
    buf: Box<Aligned<BUFFER>>,
}

impl VolumeJournal {
    /// Opens the journal of the volume `path` is on and queries it.
    pub fn open(path: &Path) -> Result<Self, Unavailable> {
        let wide: Vec<u16> = path.as_os_str().encode_wide().collect();
        let root = ioctl::volume_root(&wide).ok_or(Unavailable::NoVolumeDevice)?;
        if ioctl::is_unc(&root) {
            return Err(Unavailable::NoVolumeDevice);
        }
        let (volume_serial, filesystem) = volume_information(&root)?;
        if !is_journaled(&filesystem) {
            return Err(Unavailable::NotJournaled(filesystem));
        }
        let device = ioctl::volume_device(&root).ok_or(Unavailable::NoVolumeDevice)?;
        // FILE_SHARE_READ | FILE_SHARE_WRITE: the volume is in use by everyone else.
        let volume = OpenOptions::new()
            .read(true)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
            .open(&device)
            .map_err(|e| Unavailable::from_os_error(e.raw_os_error().unwrap_or(0)))?;
        let data = query(&volume)?;
        Ok(VolumeJournal {
            volume,
            state: JournalState {
                volume_serial,
                data,
            },
            buf: Box::new(Aligned::zeroed()),
        })
    }

    /// The journal as it was when opened (or last [`VolumeJournal::refresh`]ed).
    pub fn state(&self) -> &JournalState {
        &self.state
    }

    /// Queries the journal again (before storing a position, or to see its end move).
    pub fn refresh(&mut self) -> Result<&JournalState, Unavailable> {
        self.state.data = query(&self.volume)?;
        Ok(&self.state)
    }

    /// One read from `from`, parsed: the USN to continue from and the records, borrowed
    /// from the reused buffer ([`crate::usn::read_changes`] loops over these).
    pub fn read(&mut self, from: Usn) -> Result<(Usn, Records<'_>), WalkReason> {
        let buf = self.read_from(from)?;
        parse_output(buf).map_err(|_| WalkReason::Unavailable(Unavailable::Malformed))
    }
}

impl JournalReader for VolumeJournal {
    /// One `FSCTL_READ_USN_JOURNAL` from `from`, of the journal id seen when opened (the
    /// call fails if the journal was recreated since).
    fn read_from(&mut self, from: Usn) -> Result<&[u8], WalkReason> {
        let request = read_request(from, self.state.data.journal_id);
        let (n, result) = device_io_control(
            &self.volume,
            FSCTL_READ_USN_JOURNAL,
            &request,
            &mut self.buf.0,
        );
        if let Err(e) = result {
            return Err(read_failed(from, e.raw_os_error().unwrap_or(0)));
        }
        Ok(&self.buf.0[..n])
    }
}

/// `FSCTL_QUERY_USN_JOURNAL` on an open volume. An answer that is short, or whose numbers
/// cannot be a journal's (a zero id or maximum: what a stub that "succeeds" would give),
/// is [`Unavailable::Malformed`].
fn query(volume: &File) -> Result<JournalData, Unavailable> {
    let mut out = Aligned::<{ crate::usn::JOURNAL_DATA_V2 }>::zeroed();
    let (n, result) = device_io_control(volume, FSCTL_QUERY_USN_JOURNAL, &[], &mut out.0);
    if let Err(e) = result {
        return Err(Unavailable::from_os_error(e.raw_os_error().unwrap_or(0)));
    }
    let data = JournalData::parse(&out.0[..n]).map_err(|_| Unavailable::Malformed)?;
    if data.journal_id == 0 || data.max_usn <= 0 {
        return Err(Unavailable::Malformed);
    }
    Ok(data)
}

/// The serial number and filesystem name of the volume at `root` (`C:\`, with its
/// trailing backslash).
///
/// <https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-getvolumeinformationw>
fn volume_information(root: &str) -> Result<(u32, String), Unavailable> {
    let root: Vec<u16> = root.encode_utf16().chain(std::iter::once(0)).collect();
    let mut serial = 0u32;
    // MAX_PATH + 1, as the documentation asks for.
    let mut name = [0u16; 261];
    // SAFETY: `root` is NUL-terminated; `serial` is a valid u32 to write; `name` is
    // writable for the length passed in characters; the other out-pointers are null,
    // which the function allows.
    let ok = unsafe {
        GetVolumeInformationW(
            root.as_ptr(),
            std::ptr::null_mut(),
            0,
            &mut serial,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            name.as_mut_ptr(),
            name.len() as u32,
        )
    };
    if ok == 0 {
        let code = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(Unavailable::from_os_error(code));
    }
    Ok((serial, ioctl::from_wide(&name)))
}

#[cfg(test)]
mod tests {
    use std::mem::offset_of;

    use windows_sys::Win32::Foundation::{
        ERROR_ACCESS_DENIED, ERROR_JOURNAL_DELETE_IN_PROGRESS, ERROR_JOURNAL_ENTRY_DELETED,
        ERROR_JOURNAL_NOT_ACTIVE,
    };
    use windows_sys::Win32::Storage::FileSystem::FILE_ATTRIBUTE_DIRECTORY;
    use windows_sys::Win32::System::Ioctl::{
        READ_USN_JOURNAL_DATA_V1, USN_JOURNAL_DATA_V0, USN_JOURNAL_DATA_V1, USN_JOURNAL_DATA_V2,
        USN_REASON_CLOSE, USN_REASON_DATA_EXTEND, USN_REASON_FILE_CREATE,
        USN_REASON_RENAME_NEW_NAME, USN_REASON_RENAME_OLD_NAME, USN_RECORD_V2, USN_RECORD_V3,
        USN_RECORD_V4,
    };

    use super::*;
    use crate::usn::{self, Resume, read_changes, reason, resume, win32};

    /// The portable parser's offsets (taken from Microsoft's documentation) are the
    /// headers' (as windows-sys generates them from Windows' metadata).
    #[test]
    fn the_portable_layouts_match_the_windows_headers() {
        assert_eq!(offset_of!(USN_RECORD_V2, FileReferenceNumber), 8);
        assert_eq!(offset_of!(USN_RECORD_V2, ParentFileReferenceNumber), 16);
        assert_eq!(offset_of!(USN_RECORD_V2, Usn), 24);
        assert_eq!(offset_of!(USN_RECORD_V2, TimeStamp), 32);
        assert_eq!(offset_of!(USN_RECORD_V2, Reason), 40);
        assert_eq!(offset_of!(USN_RECORD_V2, SourceInfo), 44);
        assert_eq!(offset_of!(USN_RECORD_V2, SecurityId), 48);
        assert_eq!(offset_of!(USN_RECORD_V2, FileAttributes), 52);
        assert_eq!(offset_of!(USN_RECORD_V2, FileNameLength), 56);
        assert_eq!(offset_of!(USN_RECORD_V2, FileNameOffset), 58);
        assert_eq!(offset_of!(USN_RECORD_V2, FileName), 60);
        assert_eq!(offset_of!(USN_RECORD_V3, ParentFileReferenceNumber), 24);
        assert_eq!(offset_of!(USN_RECORD_V3, Usn), 40);
        assert_eq!(offset_of!(USN_RECORD_V3, Reason), 56);
        assert_eq!(offset_of!(USN_RECORD_V3, FileAttributes), 68);
        assert_eq!(offset_of!(USN_RECORD_V3, FileNameLength), 72);
        assert_eq!(offset_of!(USN_RECORD_V3, FileNameOffset), 74);
        assert_eq!(offset_of!(USN_RECORD_V3, FileName), 76);
        assert_eq!(offset_of!(USN_RECORD_V4, Usn), 40);
        assert_eq!(offset_of!(USN_RECORD_V4, Reason), 48);
        assert_eq!(offset_of!(USN_RECORD_V4, RemainingExtents), 56);
        assert_eq!(offset_of!(USN_RECORD_V4, NumberOfExtents), 60);
        assert_eq!(offset_of!(USN_RECORD_V4, ExtentSize), 62);
        assert_eq!(offset_of!(USN_RECORD_V4, Extents), 64);
        assert_eq!(size_of::<USN_JOURNAL_DATA_V0>(), usn::JOURNAL_DATA_V0);
        assert_eq!(
            offset_of!(USN_JOURNAL_DATA_V1, MaxSupportedMajorVersion) + 2,
            usn::JOURNAL_DATA_V1
        );
        assert_eq!(size_of::<USN_JOURNAL_DATA_V2>(), usn::JOURNAL_DATA_V2);
        assert_eq!(offset_of!(USN_JOURNAL_DATA_V2, Flags), 60);
        assert_eq!(size_of::<READ_USN_JOURNAL_DATA_V1>(), usn::READ_REQUEST_V1);
        assert_eq!(offset_of!(READ_USN_JOURNAL_DATA_V1, UsnJournalID), 32);
        assert_eq!(offset_of!(READ_USN_JOURNAL_DATA_V1, MinMajorVersion), 40);
        assert_eq!(offset_of!(READ_USN_JOURNAL_DATA_V1, MaxMajorVersion), 42);
        assert_eq!(reason::CLOSE, USN_REASON_CLOSE);
        assert_eq!(reason::FILE_CREATE, USN_REASON_FILE_CREATE);
        assert_eq!(reason::DATA_EXTEND, USN_REASON_DATA_EXTEND);
        assert_eq!(reason::RENAME_OLD_NAME, USN_REASON_RENAME_OLD_NAME);
        assert_eq!(reason::RENAME_NEW_NAME, USN_REASON_RENAME_NEW_NAME);
        assert_eq!(usn::FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_DIRECTORY);
        assert_eq!(win32::ACCESS_DENIED as u32, ERROR_ACCESS_DENIED);
        assert_eq!(win32::JOURNAL_NOT_ACTIVE as u32, ERROR_JOURNAL_NOT_ACTIVE);
        assert_eq!(
            win32::JOURNAL_DELETE_IN_PROGRESS as u32,
            ERROR_JOURNAL_DELETE_IN_PROGRESS
        );
        assert_eq!(
            win32::JOURNAL_ENTRY_DELETED as u32,
            ERROR_JOURNAL_ENTRY_DELETED
        );
    }

    /// Wine has no change journal: opening it fails, and the catch-up walks, saying the
    /// journal is unavailable. On Windows (as administrator, on NTFS) the journal opens,
    /// a fresh volume has no stored position (walk), and one stored now reads nothing.
    #[test]
    fn without_a_journal_the_catch_up_walks() {
        let dir = tempfile::tempdir().unwrap();
        let stored = usn::JournalPosition {
            volume_serial: 1,
            journal_id: 1,
            next_usn: 0,
        };
        match VolumeJournal::open(dir.path()) {
            Err(why) => {
                eprintln!("journal unavailable: {why:?}");
                assert_eq!(
                    resume(Some(&stored), Err(&why)),
                    Resume::Walk(WalkReason::Unavailable(why))
                );
            }
            Ok(mut journal) => {
                assert!(!ioctl::is_wine(), "Wine answered a journal query");
                let now = journal.state().clone();
                assert!(matches!(
                    resume(None, Ok(&now)),
                    Resume::Walk(WalkReason::NoPosition)
                ));
                let here = now.position();
                let Resume::Read { from, until } = resume(Some(&here), Ok(&now)) else {
                    panic!("a position taken now cannot be refused");
                };
                let mut changes = usn::Changes::new();
                let next = read_changes(&mut journal, from, until, &mut changes).unwrap();
                assert!(next >= until);
                let (after, _) = journal.read(next).unwrap();
                assert!(after >= next);
            }
        }
    }
}
