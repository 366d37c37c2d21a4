//! Reading a journal from a stored USN to the end the decision saw, buffer after buffer,
//! into [`Changes`]: the loop that must end, whatever the buffers say.

use super::changes::Changes;
use super::record::{Usn, parse_output};
use super::resume::{Unavailable, WalkReason};

/// Where journal output buffers come from: the live volume on Windows
/// (`VolumeJournal`), recorded buffers in tests.
pub trait JournalReader {
    /// The output buffer of one `FSCTL_READ_USN_JOURNAL` from `from`: the next USN, then
    /// as many records as fit.
    fn read_from(&mut self, from: Usn) -> Result<&[u8], WalkReason>;
}

/// Reads every record from `from` up to at least `until` (from a [`super::Resume::Read`])
/// into `changes`, and returns the USN to store as the next position once the changes
/// are committed: the journal's own "continue from here", at or past `until`, or where
/// its records ended.
///
/// Each buffer must move forward: a buffer whose next USN is not past the one asked for
/// while it holds records, a record before the USN asked for, or a buffer that does not
/// parse is [`Unavailable::Malformed`], and the catch-up walks. On an error `changes`
/// holds part of the run: discard it.
pub fn read_changes(
    reader: &mut impl JournalReader,
    from: Usn,
    until: Usn,
    changes: &mut Changes,
) -> Result<Usn, WalkReason> {
    let malformed = || WalkReason::Unavailable(Unavailable::Malformed);
    let mut at = from;
    while at < until {
        let buf = reader.read_from(at)?;
        let (next, records) = parse_output(buf).map_err(|_| malformed())?;
        let mut any = false;
        for entry in records {
            let entry = entry.map_err(|_| malformed())?;
            if entry.usn() < at {
                return Err(malformed());
            }
            changes.add(&entry);
            any = true;
        }
        if !any {
            // Nothing from `at` on: the journal's end (its next USN) is the position.
            return Ok(next.max(at));
        }
        if next <= at {
            return Err(malformed());
        }
        at = next;
    }
    Ok(at)
}
