//! The records of the change journal, read from the output buffer of
//! `FSCTL_READ_USN_JOURNAL` or `FSCTL_ENUM_USN_DATA`: an 8-byte USN (or file reference)
//! to continue from, then variable-length `USN_RECORD_V2`, `V3` or `V4` records.
//!
//! The bytes come from a driver (or a fuzzer) and are not trusted: every length is checked
//! against the buffer and the record before it is used, a record of length 0 or one that
//! would run past the buffer ends the walk with an [`UsnError`] naming its offset, and the
//! walk advances by at least 8 bytes per record, so it ends. Records are borrowed from the
//! buffer; nothing is allocated per record (a name is decoded only when asked).
//!
//! Layouts (little-endian, as Windows runs):
//! <https://learn.microsoft.com/windows/win32/api/winioctl/ns-winioctl-usn_record_v2>,
//! <https://learn.microsoft.com/windows/win32/api/winioctl/ns-winioctl-usn_record_v3>,
//! <https://learn.microsoft.com/windows/win32/api/winioctl/ns-winioctl-usn_record_v4>.

use std::fmt;

/// An update sequence number: the byte offset of a record in the volume's journal.
pub type Usn = i64;

/// `FILE_ATTRIBUTE_DIRECTORY`.
pub const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;

/// Bytes before the first record of an output buffer (the next USN to read from).
pub const OUTPUT_HEADER: usize = 8;

/// Where a `USN_RECORD_V2`'s fields lie (winioctl.h); the name follows at 60.
pub(crate) mod v2 {
    pub const FILE: usize = 8;
    pub const PARENT: usize = 16;
    pub const USN: usize = 24;
    pub const TIMESTAMP: usize = 32;
    pub const REASON: usize = 40;
    pub const SOURCE_INFO: usize = 44;
    pub const SECURITY_ID: usize = 48;
    pub const ATTRIBUTES: usize = 52;
    pub const NAME_LENGTH: usize = 56;
    pub const NAME_OFFSET: usize = 58;
    pub const FIXED: usize = 60;
}

/// Where a `USN_RECORD_V3`'s fields lie: as V2 with 128-bit file references; the name
/// follows at 76.
pub(crate) mod v3 {
    pub const FILE: usize = 8;
    pub const PARENT: usize = 24;
    pub const USN: usize = 40;
    pub const TIMESTAMP: usize = 48;
    pub const REASON: usize = 56;
    pub const SOURCE_INFO: usize = 60;
    pub const SECURITY_ID: usize = 64;
    pub const ATTRIBUTES: usize = 68;
    pub const NAME_LENGTH: usize = 72;
    pub const NAME_OFFSET: usize = 74;
    pub const FIXED: usize = 76;
}

/// Where a `USN_RECORD_V4`'s (a range record's) fields lie; its `USN_RECORD_EXTENT`s (two
/// i64: offset, length) follow at 64.
pub(crate) mod v4 {
    pub const FILE: usize = 8;
    pub const PARENT: usize = 24;
    pub const USN: usize = 40;
    pub const REASON: usize = 48;
    pub const SOURCE_INFO: usize = 52;
    pub const REMAINING_EXTENTS: usize = 56;
    pub const NUMBER_OF_EXTENTS: usize = 60;
    pub const EXTENT_SIZE: usize = 62;
    pub const FIXED: usize = 64;
    pub const EXTENT: usize = 16;
}

/// A file's or directory's reference number on its volume. V2 records carry NTFS's 64-bit
/// reference (48-bit MFT record number, 16-bit sequence number), held here zero-extended;
/// V3 and V4 records carry 128 bits (`FILE_ID_128`, ReFS's ids), read little-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileRef(pub u128);

impl FileRef {
    /// The low 64 bits: on NTFS the whole reference, and the file index
    /// `GetFileInformationByHandle` reports (ReFS's 128-bit ids are truncated there too).
    pub fn low64(self) -> u64 {
        self.0 as u64
    }
}

/// A `USN_RECORD_V2` or `V3`: one change (or the accumulated changes since the file was
/// opened) to one file, with the file's name and parent at that moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// 2 or 3.
    pub major_version: u16,
    /// The minor version (0 for every version documented so far; others are accepted, as
    /// the name is found by its offset field, not by position).
    pub minor_version: u16,
    /// The file or directory changed.
    pub file: FileRef,
    /// The directory it is in (after a rename: its new directory; in a
    /// `USN_REASON_RENAME_OLD_NAME` record: its old one).
    pub parent: FileRef,
    /// This record's USN.
    pub usn: Usn,
    /// When the record was written, in 100 ns units since 1601 (UTC, `FILETIME`).
    pub timestamp: i64,
    /// `USN_REASON_*` flags: what changed since the file was opened (see [`super::reason`]).
    pub reason: u32,
    /// `USN_SOURCE_*` flags (a change made by a replication or storage service rather
    /// than by a user's program).
    pub source_info: u32,
    /// The file's security descriptor id.
    pub security_id: u32,
    /// `FILE_ATTRIBUTE_*` flags.
    pub attributes: u32,
    /// The name, UTF-16LE bytes (even length, checked).
    name: &'a [u8],
}

impl<'a> Record<'a> {
    /// Whether the record is about a directory.
    pub fn is_dir(&self) -> bool {
        self.attributes & FILE_ATTRIBUTE_DIRECTORY != 0
    }

    /// The name's UTF-16 code units (one path component, not NUL-terminated).
    pub fn name_units(&self) -> impl ExactSizeIterator<Item = u16> + 'a {
        self.name
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
    }

    /// The name as text, unpaired surrogates replaced by U+FFFD.
    pub fn name_lossy(&self) -> String {
        char::decode_utf16(self.name_units())
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
    }
}

/// A `USN_RECORD_V4`: which byte ranges of a file changed (written only when range
/// tracking is on and a reader asks for major version 4; seekless asks for 2–3). Kept
/// only as "this file's data changed".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeRecord<'a> {
    /// The file whose data changed.
    pub file: FileRef,
    /// Its directory.
    pub parent: FileRef,
    /// This record's USN.
    pub usn: Usn,
    /// `USN_REASON_*` flags.
    pub reason: u32,
    /// `USN_SOURCE_*` flags.
    pub source_info: u32,
    /// How many more extents follow in later records for the same change.
    pub remaining_extents: u32,
    extent_size: usize,
    extents: &'a [u8],
}

impl<'a> RangeRecord<'a> {
    /// The changed ranges, as (byte offset, length).
    pub fn extents(&self) -> impl Iterator<Item = (i64, i64)> + 'a {
        self.extents
            .chunks_exact(self.extent_size)
            .map(|e| (i64_at(e, 0), i64_at(e, 8)))
    }
}

/// One record of a journal buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry<'a> {
    /// A V2 or V3 record.
    Change(Record<'a>),
    /// A V4 range record.
    Ranges(RangeRecord<'a>),
}

impl Entry<'_> {
    /// The record's USN.
    pub fn usn(&self) -> Usn {
        match self {
            Entry::Change(r) => r.usn,
            Entry::Ranges(r) => r.usn,
        }
    }
}

/// Why a journal buffer could not be read past some offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsnError {
    /// The offset in the buffer of the record (or header) at fault.
    pub offset: usize,
    /// What is wrong there.
    pub kind: UsnErrorKind,
}

/// What is wrong with a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsnErrorKind {
    /// Fewer bytes left than a header (8 bytes) or a fixed structure needs.
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes there.
        available: usize,
    },
    /// `RecordLength` is 0: the walk would not advance.
    ZeroLength,
    /// `RecordLength` is not a multiple of 8 (records are 64-bit aligned).
    Misaligned {
        /// The record length read.
        length: u32,
    },
    /// `RecordLength` runs past the end of the buffer.
    PastEnd {
        /// The record length read.
        length: u32,
        /// Bytes left in the buffer from the record's start.
        available: usize,
    },
    /// A major version other than 2, 3 or 4.
    UnknownVersion {
        /// `MajorVersion`.
        major: u16,
        /// `MinorVersion`.
        minor: u16,
    },
    /// `RecordLength` is smaller than the fixed part of its version.
    TooShort {
        /// The record length read.
        length: u32,
        /// The fixed part's size.
        fixed: usize,
    },
    /// `FileNameLength` is odd: not UTF-16.
    OddNameLength {
        /// `FileNameLength`.
        length: u16,
    },
    /// The name (`FileNameOffset`, `FileNameLength`) is not inside the record after its
    /// fixed fields.
    NameOutsideRecord {
        /// `FileNameOffset`.
        name_offset: u16,
        /// `FileNameLength`.
        name_length: u16,
        /// `RecordLength`.
        length: u32,
    },
    /// A V4 record whose extents do not fit in it, or whose `ExtentSize` is smaller than
    /// a `USN_RECORD_EXTENT`.
    BadExtents {
        /// `NumberOfExtents`.
        count: u16,
        /// `ExtentSize`.
        size: u16,
        /// `RecordLength`.
        length: u32,
    },
}

impl fmt::Display for UsnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "change journal record at offset {}: ", self.offset)?;
        match self.kind {
            UsnErrorKind::Truncated { needed, available } => {
                write!(f, "truncated ({needed} bytes needed, {available} left)")
            }
            UsnErrorKind::ZeroLength => write!(f, "record length 0"),
            UsnErrorKind::Misaligned { length } => {
                write!(f, "record length {length} is not a multiple of 8")
            }
            UsnErrorKind::PastEnd { length, available } => write!(
                f,
                "record length {length} runs past the buffer ({available} bytes left)"
            ),
            UsnErrorKind::UnknownVersion { major, minor } => {
                write!(f, "unknown record version {major}.{minor}")
            }
            UsnErrorKind::TooShort { length, fixed } => write!(
                f,
                "record length {length} is shorter than its fixed part ({fixed} bytes)"
            ),
            UsnErrorKind::OddNameLength { length } => {
                write!(f, "name length {length} is odd")
            }
            UsnErrorKind::NameOutsideRecord {
                name_offset,
                name_length,
                length,
            } => write!(
                f,
                "name at {name_offset}+{name_length} is outside the record ({length} bytes)"
            ),
            UsnErrorKind::BadExtents {
                count,
                size,
                length,
            } => write!(
                f,
                "{count} extents of {size} bytes do not fit a record of {length} bytes"
            ),
        }
    }
}

impl std::error::Error for UsnError {}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

pub(crate) fn i64_at(b: &[u8], at: usize) -> i64 {
    u64_at(b, at) as i64
}

fn u128_at(b: &[u8], at: usize) -> u128 {
    let mut a = [0; 16];
    a.copy_from_slice(&b[at..at + 16]);
    u128::from_le_bytes(a)
}

/// Splits the output buffer of `FSCTL_READ_USN_JOURNAL` (or `FSCTL_ENUM_USN_DATA`) into
/// the USN to continue from (for an enumeration: the file reference) and its records.
///
/// ```
/// use seekless_sys::usn::{parse_output, UsnErrorKind};
///
/// // Nothing but the next USN: no records.
/// let buf = 4096i64.to_le_bytes();
/// let (next, mut records) = parse_output(&buf).unwrap();
/// assert_eq!(next, 4096);
/// assert!(records.next().is_none());
///
/// // Fewer than 8 bytes is an error, not an empty answer.
/// let err = parse_output(&[0; 4]).unwrap_err();
/// assert!(matches!(err.kind, UsnErrorKind::Truncated { .. }));
/// ```
pub fn parse_output(buf: &[u8]) -> Result<(Usn, Records<'_>), UsnError> {
    if buf.len() < OUTPUT_HEADER {
        return Err(UsnError {
            offset: 0,
            kind: UsnErrorKind::Truncated {
                needed: OUTPUT_HEADER,
                available: buf.len(),
            },
        });
    }
    Ok((
        i64_at(buf, 0),
        Records {
            buf,
            pos: OUTPUT_HEADER,
        },
    ))
}

/// The records of a journal buffer, in order. After an error it yields nothing more: a
/// record's length is the only way to the next one, and a bad one leaves no way on.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Records<'a> {
    /// The records in `buf`, which holds records only (no 8-byte header); offsets in
    /// errors count from `buf`'s start.
    pub fn new(buf: &'a [u8]) -> Self {
        Records { buf, pos: 0 }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Entry<'a>, UsnError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let at = self.pos;
        match parse_record(&self.buf[at..]) {
            Ok((entry, length)) => {
                self.pos = at + length;
                Some(Ok(entry))
            }
            Err(kind) => {
                self.pos = self.buf.len();
                Some(Err(UsnError { offset: at, kind }))
            }
        }
    }
}

/// Parses the record at the start of `rest`; returns it with its length (≥ 8).
fn parse_record(rest: &[u8]) -> Result<(Entry<'_>, usize), UsnErrorKind> {
    if rest.len() < 8 {
        return Err(UsnErrorKind::Truncated {
            needed: 8,
            available: rest.len(),
        });
    }
    let length = u32_at(rest, 0);
    let (major, minor) = (u16_at(rest, 4), u16_at(rest, 6));
    if length == 0 {
        return Err(UsnErrorKind::ZeroLength);
    }
    if !length.is_multiple_of(8) {
        return Err(UsnErrorKind::Misaligned { length });
    }
    let len = length as usize;
    if len > rest.len() {
        return Err(UsnErrorKind::PastEnd {
            length,
            available: rest.len(),
        });
    }
    let rec = &rest[..len];
    let fixed = match major {
        2 => v2::FIXED,
        3 => v3::FIXED,
        4 => v4::FIXED,
        _ => return Err(UsnErrorKind::UnknownVersion { major, minor }),
    };
    if len < fixed {
        return Err(UsnErrorKind::TooShort { length, fixed });
    }
    let entry = match major {
        2 => Entry::Change(Record {
            major_version: major,
            minor_version: minor,
            file: FileRef(u128::from(u64_at(rec, v2::FILE))),
            parent: FileRef(u128::from(u64_at(rec, v2::PARENT))),
            usn: i64_at(rec, v2::USN),
            timestamp: i64_at(rec, v2::TIMESTAMP),
            reason: u32_at(rec, v2::REASON),
            source_info: u32_at(rec, v2::SOURCE_INFO),
            security_id: u32_at(rec, v2::SECURITY_ID),
            attributes: u32_at(rec, v2::ATTRIBUTES),
            name: name(rec, v2::NAME_LENGTH, v2::NAME_OFFSET, fixed)?,
        }),
        3 => Entry::Change(Record {
            major_version: major,
            minor_version: minor,
            file: FileRef(u128_at(rec, v3::FILE)),
            parent: FileRef(u128_at(rec, v3::PARENT)),
            usn: i64_at(rec, v3::USN),
            timestamp: i64_at(rec, v3::TIMESTAMP),
            reason: u32_at(rec, v3::REASON),
            source_info: u32_at(rec, v3::SOURCE_INFO),
            security_id: u32_at(rec, v3::SECURITY_ID),
            attributes: u32_at(rec, v3::ATTRIBUTES),
            name: name(rec, v3::NAME_LENGTH, v3::NAME_OFFSET, fixed)?,
        }),
        _ => {
            let count = u16_at(rec, v4::NUMBER_OF_EXTENTS);
            let size = u16_at(rec, v4::EXTENT_SIZE);
            let bad = UsnErrorKind::BadExtents {
                count,
                size,
                length,
            };
            let end = usize::from(count) * usize::from(size) + v4::FIXED;
            if (count > 0 && usize::from(size) < v4::EXTENT) || end > len {
                return Err(bad);
            }
            Entry::Ranges(RangeRecord {
                file: FileRef(u128_at(rec, v4::FILE)),
                parent: FileRef(u128_at(rec, v4::PARENT)),
                usn: i64_at(rec, v4::USN),
                reason: u32_at(rec, v4::REASON),
                source_info: u32_at(rec, v4::SOURCE_INFO),
                remaining_extents: u32_at(rec, v4::REMAINING_EXTENTS),
                // chunks_exact needs a non-zero size; with no extents any size will do.
                extent_size: usize::from(size).max(v4::EXTENT),
                extents: &rec[v4::FIXED..end],
            })
        }
    };
    Ok((entry, len))
}

/// The name of a V2 or V3 record, checked to lie inside it after its fixed fields.
fn name(
    rec: &[u8],
    length_at: usize,
    offset_at: usize,
    fixed: usize,
) -> Result<&[u8], UsnErrorKind> {
    let name_length = u16_at(rec, length_at);
    let name_offset = u16_at(rec, offset_at);
    if !name_length.is_multiple_of(2) {
        return Err(UsnErrorKind::OddNameLength {
            length: name_length,
        });
    }
    let start = usize::from(name_offset);
    let end = start + usize::from(name_length);
    if start < fixed || end > rec.len() {
        return Err(UsnErrorKind::NameOutsideRecord {
            name_offset,
            name_length,
            length: rec.len() as u32,
        });
    }
    Ok(&rec[start..end])
}
