//! What `FSCTL_QUERY_USN_JOURNAL` says about a volume's journal (`USN_JOURNAL_DATA_V0`,
//! `V1` or `V2`, told apart by length), and the request `FSCTL_READ_USN_JOURNAL` takes
//! (`READ_USN_JOURNAL_DATA_V1`), as bytes, so that both are tested on every system.
//!
//! <https://learn.microsoft.com/windows/win32/api/winioctl/ns-winioctl-usn_journal_data_v2>,
//! <https://learn.microsoft.com/windows/win32/api/winioctl/ns-winioctl-read_usn_journal_data_v1>.

use super::record::{Usn, UsnError, UsnErrorKind, i64_at, u64_at};

/// The size of `USN_JOURNAL_DATA_V0` (seven 64-bit fields).
pub const JOURNAL_DATA_V0: usize = 56;
/// The size of `USN_JOURNAL_DATA_V1` without its trailing padding (V0 and two u16).
pub const JOURNAL_DATA_V1: usize = 60;
/// The size of `USN_JOURNAL_DATA_V2`.
pub const JOURNAL_DATA_V2: usize = 80;
/// The size of `READ_USN_JOURNAL_DATA_V1` (44 bytes of fields, padded to 8).
pub const READ_REQUEST_V1: usize = 48;

/// A volume's change journal as `FSCTL_QUERY_USN_JOURNAL` describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalData {
    /// `UsnJournalID`: a new one each time the journal is created (or re-stamped). A
    /// position stored under another id means nothing in this journal.
    pub journal_id: u64,
    /// `FirstUsn`: the first record that can still be read; older ones were purged.
    pub first_usn: Usn,
    /// `NextUsn`: where the next record will be written.
    pub next_usn: Usn,
    /// `LowestValidUsn`: the first record of this journal instance; positions below it
    /// may have lost changes.
    pub lowest_valid_usn: Usn,
    /// `MaxUsn`: the largest USN the journal supports.
    pub max_usn: Usn,
    /// `MaximumSize`: the size the journal is trimmed to, in bytes.
    pub maximum_size: u64,
    /// `AllocationDelta`: how much is added and purged at a time, in bytes.
    pub allocation_delta: u64,
    /// `MinSupportedMajorVersion`, `MaxSupportedMajorVersion` (V1 and V2).
    pub versions: Option<(u16, u16)>,
    /// `Flags` (1: range tracking on), `RangeTrackChunkSize`,
    /// `RangeTrackFileSizeThreshold` (V2).
    pub range_tracking: Option<(u32, u64, i64)>,
}

impl JournalData {
    /// Reads the answer of `FSCTL_QUERY_USN_JOURNAL`: `bytes` is what the call wrote, 56
    /// (V0), 60 to 79 (V1, with or without its padding) or at least 80 bytes (V2).
    pub fn parse(bytes: &[u8]) -> Result<Self, UsnError> {
        if bytes.len() < JOURNAL_DATA_V0 {
            return Err(UsnError {
                offset: 0,
                kind: UsnErrorKind::Truncated {
                    needed: JOURNAL_DATA_V0,
                    available: bytes.len(),
                },
            });
        }
        let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let versions = (bytes.len() >= JOURNAL_DATA_V1).then(|| (u16_at(56), u16_at(58)));
        let range_tracking = (bytes.len() >= JOURNAL_DATA_V2).then(|| {
            let flags = u32::from_le_bytes([bytes[60], bytes[61], bytes[62], bytes[63]]);
            (flags, u64_at(bytes, 64), i64_at(bytes, 72))
        });
        Ok(JournalData {
            journal_id: u64_at(bytes, 0),
            first_usn: i64_at(bytes, 8),
            next_usn: i64_at(bytes, 16),
            lowest_valid_usn: i64_at(bytes, 24),
            max_usn: i64_at(bytes, 32),
            maximum_size: u64_at(bytes, 40),
            allocation_delta: u64_at(bytes, 48),
            versions,
            range_tracking,
        })
    }
}

/// The input of `FSCTL_READ_USN_JOURNAL` (`READ_USN_JOURNAL_DATA_V1`): every record from
/// `start` on, whatever its reason (`ReasonMask` all ones), closed or not, without
/// waiting (`Timeout` and `BytesToWaitFor` 0), of journal `journal_id` (the call fails if
/// the journal now has another), as V2 or V3 records (V4 range records are not asked for).
pub fn read_request(start: Usn, journal_id: u64) -> [u8; READ_REQUEST_V1] {
    let mut b = [0u8; READ_REQUEST_V1];
    b[0..8].copy_from_slice(&start.to_le_bytes());
    b[8..12].copy_from_slice(&u32::MAX.to_le_bytes()); // ReasonMask
    b[12..16].copy_from_slice(&0u32.to_le_bytes()); // ReturnOnlyOnClose
    b[16..24].copy_from_slice(&0u64.to_le_bytes()); // Timeout
    b[24..32].copy_from_slice(&0u64.to_le_bytes()); // BytesToWaitFor
    b[32..40].copy_from_slice(&journal_id.to_le_bytes());
    b[40..42].copy_from_slice(&2u16.to_le_bytes()); // MinMajorVersion
    b[42..44].copy_from_slice(&3u16.to_le_bytes()); // MaxMajorVersion
    b
}
