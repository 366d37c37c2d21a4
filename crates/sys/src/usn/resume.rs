//! Whether a catch-up may read the journal from where the previous run stopped, or must
//! walk: a pure decision over what the catalog stored and what the journal says now.
//! Conservative: every case it cannot prove safe walks, and says why.

use std::fmt;

use super::journal::JournalData;
use super::record::Usn;

/// What a catalog stores per volume at the end of a run, to resume from next time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalPosition {
    /// The volume's serial number (`GetVolumeInformationW`), written in its boot sector
    /// when it was formatted: it travels with the disk to another machine. (The volume
    /// GUID does not: it is the mount manager's, per machine.)
    pub volume_serial: u32,
    /// The journal's `UsnJournalID` when the position was taken.
    pub journal_id: u64,
    /// The journal's `NextUsn` taken *before* the run began listing: every change after
    /// that point is read again next time, including those the run may have missed
    /// while it walked.
    pub next_usn: Usn,
}

/// A volume's journal as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalState {
    /// The volume's serial number.
    pub volume_serial: u32,
    /// The journal's answer to `FSCTL_QUERY_USN_JOURNAL`.
    pub data: JournalData,
}

impl JournalState {
    /// The position to store at the end of a run that took this state before it began.
    pub fn position(&self) -> JournalPosition {
        JournalPosition {
            volume_serial: self.volume_serial,
            journal_id: self.data.journal_id,
            next_usn: self.data.next_usn,
        }
    }
}

/// Why a volume's journal cannot be asked at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// The filesystem keeps no change journal (only NTFS and ReFS do): its name.
    NotJournaled(String),
    /// The volume is not a local one that can be opened (a network share, or its device
    /// path could not be found).
    NoVolumeDevice,
    /// `ERROR_JOURNAL_NOT_ACTIVE`: journaling is off on the volume.
    NotActive,
    /// `ERROR_JOURNAL_DELETE_IN_PROGRESS`: the journal is being deleted.
    BeingDeleted,
    /// `ERROR_ACCESS_DENIED`: opening the volume needs administrator rights.
    AccessDenied,
    /// Any other error, with its Windows error code (`ERROR_INVALID_FUNCTION` and
    /// `ERROR_NOT_SUPPORTED` where the filesystem driver has no journal, as under Wine).
    Os(i32),
    /// The journal answered something that cannot be read (a short or malformed buffer,
    /// numbers no journal has, a read that does not move forward).
    Malformed,
}

/// Windows error codes the decision tells apart (winerror.h); checked against
/// `windows-sys` in the Windows build's tests.
pub mod win32 {
    /// `ERROR_ACCESS_DENIED`.
    pub const ACCESS_DENIED: i32 = 5;
    /// `ERROR_JOURNAL_DELETE_IN_PROGRESS`.
    pub const JOURNAL_DELETE_IN_PROGRESS: i32 = 1178;
    /// `ERROR_JOURNAL_NOT_ACTIVE`.
    pub const JOURNAL_NOT_ACTIVE: i32 = 1179;
    /// `ERROR_JOURNAL_ENTRY_DELETED`: the records asked for were purged.
    pub const JOURNAL_ENTRY_DELETED: i32 = 1181;
}

impl Unavailable {
    /// The reason for a Windows error code from opening the volume or querying its journal.
    pub fn from_os_error(code: i32) -> Self {
        match code {
            win32::JOURNAL_NOT_ACTIVE => Unavailable::NotActive,
            win32::JOURNAL_DELETE_IN_PROGRESS => Unavailable::BeingDeleted,
            win32::ACCESS_DENIED => Unavailable::AccessDenied,
            code => Unavailable::Os(code),
        }
    }
}

/// Whether a filesystem (by its `GetVolumeInformation` name) keeps a USN change journal.
pub fn is_journaled(filesystem: &str) -> bool {
    filesystem.eq_ignore_ascii_case("NTFS") || filesystem.eq_ignore_ascii_case("ReFS")
}

/// Why a catch-up walks instead of reading the journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkReason {
    /// No position stored: the volume was never catalogued with its journal.
    NoPosition,
    /// The journal cannot be asked.
    Unavailable(Unavailable),
    /// The stored position belongs to another volume.
    OtherVolume {
        /// The serial number stored.
        stored: u32,
        /// The volume's serial number now.
        current: u32,
    },
    /// The journal was deleted and created again (or re-stamped): the stored USN means
    /// nothing in the new one.
    JournalRecreated {
        /// The journal id stored.
        stored: u64,
        /// The journal id now.
        current: u64,
    },
    /// The journal wrapped or was trimmed past the stored position, or the stored
    /// position is before this journal instance's first valid record: changes were lost.
    RecordsLost {
        /// The USN stored.
        stored: Usn,
        /// The first USN that can be trusted now (the larger of `FirstUsn` and
        /// `LowestValidUsn`), or `None` when a read found its records purged.
        first_kept: Option<Usn>,
    },
    /// The stored USN is beyond the journal's end: the volume was restored from a backup,
    /// or the journal rolled back. What the catalog knows may be newer than the disk.
    BeyondEnd {
        /// The USN stored.
        stored: Usn,
        /// The journal's `NextUsn` now.
        next_usn: Usn,
    },
    /// The journal's own numbers contradict each other (a zero id, negative USNs, first
    /// after next, next past the maximum): not trusted.
    Inconsistent(JournalData),
}

impl fmt::Display for WalkReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WalkReason::NoPosition => write!(f, "no journal position stored"),
            WalkReason::Unavailable(u) => match u {
                Unavailable::NotJournaled(fs) => write!(f, "{fs} keeps no change journal"),
                Unavailable::NoVolumeDevice => write!(f, "the volume cannot be opened"),
                Unavailable::NotActive => write!(f, "the change journal is not active"),
                Unavailable::BeingDeleted => write!(f, "the change journal is being deleted"),
                Unavailable::AccessDenied => {
                    write!(f, "reading the change journal needs administrator rights")
                }
                Unavailable::Os(code) => {
                    write!(
                        f,
                        "the change journal is unavailable (Windows error {code})"
                    )
                }
                Unavailable::Malformed => write!(f, "the change journal's answer is malformed"),
            },
            WalkReason::OtherVolume { stored, current } => write!(
                f,
                "another volume (serial {current:08X}, stored {stored:08X})"
            ),
            WalkReason::JournalRecreated { stored, current } => write!(
                f,
                "the change journal was recreated (id {current:#x}, stored {stored:#x})"
            ),
            WalkReason::RecordsLost { stored, first_kept } => match first_kept {
                Some(first) => write!(
                    f,
                    "the change journal no longer reaches back to USN {stored} (first kept {first})"
                ),
                None => write!(
                    f,
                    "the change journal's records since USN {stored} were purged"
                ),
            },
            WalkReason::BeyondEnd { stored, next_usn } => write!(
                f,
                "the stored USN {stored} is past the journal's end {next_usn} (volume restored or journal rolled back)"
            ),
            WalkReason::Inconsistent(d) => write!(
                f,
                "the change journal's numbers are inconsistent (first {}, next {}, lowest valid {}, max {})",
                d.first_usn, d.next_usn, d.lowest_valid_usn, d.max_usn
            ),
        }
    }
}

/// What a catch-up does on one volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Read the journal from `from` (the stored USN) up to `until` (its `NextUsn` when
    /// asked; `from == until` when nothing changed), then store `until` as the next
    /// position (after the changes are committed).
    Read {
        /// The first USN to read.
        from: Usn,
        /// Where to stop: the journal's end when the decision was made.
        until: Usn,
    },
    /// Walk the volume's roots as without a journal.
    Walk(WalkReason),
}

/// Decides whether to read the journal from `stored` or walk.
///
/// ```
/// use seekless_sys::usn::{JournalData, JournalPosition, JournalState, Resume, WalkReason, resume};
///
/// let data = JournalData {
///     journal_id: 7, first_usn: 0, next_usn: 5000, lowest_valid_usn: 0,
///     max_usn: i64::MAX, maximum_size: 32 << 20, allocation_delta: 8 << 20,
///     versions: Some((2, 3)), range_tracking: None,
/// };
/// let now = JournalState { volume_serial: 0xABCD_1234, data };
/// let stored = JournalPosition { volume_serial: 0xABCD_1234, journal_id: 7, next_usn: 4096 };
/// assert_eq!(resume(Some(&stored), Ok(&now)), Resume::Read { from: 4096, until: 5000 });
///
/// let recreated = JournalPosition { journal_id: 6, ..stored };
/// assert!(matches!(
///     resume(Some(&recreated), Ok(&now)),
///     Resume::Walk(WalkReason::JournalRecreated { .. })
/// ));
/// ```
pub fn resume(
    stored: Option<&JournalPosition>,
    current: Result<&JournalState, &Unavailable>,
) -> Resume {
    let now = match current {
        Ok(now) => now,
        Err(why) => return Resume::Walk(WalkReason::Unavailable(why.clone())),
    };
    let d = &now.data;
    let consistent = d.journal_id != 0
        && d.first_usn >= 0
        && d.lowest_valid_usn >= 0
        && d.first_usn <= d.next_usn
        && d.lowest_valid_usn <= d.next_usn
        && d.next_usn <= d.max_usn;
    if !consistent {
        return Resume::Walk(WalkReason::Inconsistent(*d));
    }
    let Some(stored) = stored else {
        return Resume::Walk(WalkReason::NoPosition);
    };
    if stored.volume_serial != now.volume_serial {
        return Resume::Walk(WalkReason::OtherVolume {
            stored: stored.volume_serial,
            current: now.volume_serial,
        });
    }
    if stored.journal_id != d.journal_id {
        return Resume::Walk(WalkReason::JournalRecreated {
            stored: stored.journal_id,
            current: d.journal_id,
        });
    }
    if stored.next_usn > d.next_usn {
        return Resume::Walk(WalkReason::BeyondEnd {
            stored: stored.next_usn,
            next_usn: d.next_usn,
        });
    }
    let first_kept = d.first_usn.max(d.lowest_valid_usn);
    if stored.next_usn < first_kept {
        return Resume::Walk(WalkReason::RecordsLost {
            stored: stored.next_usn,
            first_kept: Some(first_kept),
        });
    }
    Resume::Read {
        from: stored.next_usn,
        until: d.next_usn,
    }
}

/// Why a read of the journal that was decided on ([`Resume::Read`]) failed, for a Windows
/// error code: the catch-up then walks.
pub fn read_failed(from: Usn, code: i32) -> WalkReason {
    match code {
        win32::JOURNAL_ENTRY_DELETED => WalkReason::RecordsLost {
            stored: from,
            first_kept: None,
        },
        code => WalkReason::Unavailable(Unavailable::from_os_error(code)),
    }
}
