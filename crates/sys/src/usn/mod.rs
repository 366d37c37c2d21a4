//! The NTFS/ReFS change journal (USN journal): what changed on a volume since a stored
//! position, so that a catch-up can ask Windows instead of walking
//! ([docs/platforms.md](https://github.com/seekless/seekless/blob/main/docs/platforms.md),
//! "Change journal (Windows)").
//!
//! Everything here but the live reader is portable and tested on every system:
//!
//! - [`parse_output`] and [`Records`]: the output buffer of `FSCTL_READ_USN_JOURNAL` or
//!   `FSCTL_ENUM_USN_DATA`, as V2, V3 and V4 [`Entry`]s, from untrusted bytes (typed
//!   [`UsnError`]s naming the offset, never a panic or an endless loop);
//! - [`JournalData::parse`] and [`read_request`]: the query's answer and the read's input;
//! - [`Changes`]: records coalesced into one [`FileChange`] per file;
//! - [`resume`]: read from the stored [`JournalPosition`], or walk, with the
//!   [`WalkReason`]; [`read_changes`]: the reading loop over any [`JournalReader`],
//!   which ends whatever the buffers say.
//!
//! On Windows, `VolumeJournal` opens the volume holding a path, queries its journal and
//! reads records into a reused buffer; `VolumeJournal::open` maps every failure to an
//! [`Unavailable`] reason, so the caller walks.
//!
//! ```
//! use seekless_sys::usn::{Changes, parse_output};
//!
//! // A buffer with no records: the journal had nothing after the USN asked for.
//! let buf = 8192i64.to_le_bytes();
//! let (next, records) = parse_output(&buf).unwrap();
//! let mut changes = Changes::new();
//! for entry in records {
//!     changes.add(&entry.unwrap());
//! }
//! assert_eq!(next, 8192);
//! assert!(changes.files().is_empty());
//! ```

mod catch_up;
mod changes;
mod journal;
pub mod reason;
mod record;
mod resume;

pub use catch_up::{JournalReader, read_changes};
pub use changes::{Changes, FileChange, Place};
pub use journal::{
    JOURNAL_DATA_V0, JOURNAL_DATA_V1, JOURNAL_DATA_V2, JournalData, READ_REQUEST_V1, read_request,
};
pub use record::{
    Entry, FILE_ATTRIBUTE_DIRECTORY, FileRef, OUTPUT_HEADER, RangeRecord, Record, Records, Usn,
    UsnError, UsnErrorKind, parse_output,
};
pub use resume::{
    JournalPosition, JournalState, Resume, Unavailable, WalkReason, is_journaled, read_failed,
    resume, win32,
};

#[cfg(windows)]
pub use crate::os::journal::VolumeJournal;

#[cfg(test)]
pub(crate) mod build;
#[cfg(test)]
mod tests;
