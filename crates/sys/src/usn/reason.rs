//! `USN_REASON_*` flags (winioctl.h): what changed. A file's records carry the flags
//! accumulated since it was opened, until the record with [`CLOSE`]; the next change
//! after that starts a new set.
//!
//! <https://learn.microsoft.com/windows/win32/api/winioctl/ns-winioctl-usn_record_v2>

/// The unnamed data stream was overwritten.
pub const DATA_OVERWRITE: u32 = 0x0000_0001;
/// The unnamed data stream grew.
pub const DATA_EXTEND: u32 = 0x0000_0002;
/// The unnamed data stream was truncated.
pub const DATA_TRUNCATION: u32 = 0x0000_0004;
/// A named data stream (alternate data stream) was overwritten.
pub const NAMED_DATA_OVERWRITE: u32 = 0x0000_0010;
/// A named data stream grew.
pub const NAMED_DATA_EXTEND: u32 = 0x0000_0020;
/// A named data stream was truncated.
pub const NAMED_DATA_TRUNCATION: u32 = 0x0000_0040;
/// The file or directory was created.
pub const FILE_CREATE: u32 = 0x0000_0100;
/// The file or directory was deleted.
pub const FILE_DELETE: u32 = 0x0000_0200;
/// Extended attributes changed.
pub const EA_CHANGE: u32 = 0x0000_0400;
/// The security descriptor changed.
pub const SECURITY_CHANGE: u32 = 0x0000_0800;
/// Renamed: this record carries the old name and old parent.
pub const RENAME_OLD_NAME: u32 = 0x0000_1000;
/// Renamed: this record carries the new name and new parent.
pub const RENAME_NEW_NAME: u32 = 0x0000_2000;
/// The content-indexed attribute changed.
pub const INDEXABLE_CHANGE: u32 = 0x0000_4000;
/// Attributes or times changed (`SetFileInformationByHandle` basic info).
pub const BASIC_INFO_CHANGE: u32 = 0x0000_8000;
/// A hard link was added or removed.
pub const HARD_LINK_CHANGE: u32 = 0x0001_0000;
/// Compression was turned on or off.
pub const COMPRESSION_CHANGE: u32 = 0x0002_0000;
/// Encryption was turned on or off.
pub const ENCRYPTION_CHANGE: u32 = 0x0004_0000;
/// The object id changed.
pub const OBJECT_ID_CHANGE: u32 = 0x0008_0000;
/// A reparse point was added, changed or removed (a file became a link, or stopped being one).
pub const REPARSE_POINT_CHANGE: u32 = 0x0010_0000;
/// A named stream was added, removed or renamed.
pub const STREAM_CHANGE: u32 = 0x0020_0000;
/// A transacted change (TxF).
pub const TRANSACTED_CHANGE: u32 = 0x0040_0000;
/// The integrity attribute changed (ReFS).
pub const INTEGRITY_CHANGE: u32 = 0x0080_0000;
/// The desired storage class changed.
pub const DESIRED_STORAGE_CLASS_CHANGE: u32 = 0x0100_0000;
/// The file was closed: the last record of this set of changes.
pub const CLOSE: u32 = 0x8000_0000;

/// Changes to the unnamed stream: what a catalog of file contents must re-read.
pub const DATA: u32 = DATA_OVERWRITE | DATA_EXTEND | DATA_TRUNCATION;

/// Changes that leave the unnamed stream, the name and the place alone: attributes,
/// times, security, extended attributes, alternate data streams, compression, encryption
/// and the like. Any flag not listed here (including flags documented after this list
/// was written) is taken to touch the content.
pub const METADATA_ONLY: u32 = NAMED_DATA_OVERWRITE
    | NAMED_DATA_EXTEND
    | NAMED_DATA_TRUNCATION
    | EA_CHANGE
    | SECURITY_CHANGE
    | INDEXABLE_CHANGE
    | BASIC_INFO_CHANGE
    | COMPRESSION_CHANGE
    | ENCRYPTION_CHANGE
    | OBJECT_ID_CHANGE
    | STREAM_CHANGE
    | INTEGRITY_CHANGE
    | DESIRED_STORAGE_CLASS_CHANGE;
