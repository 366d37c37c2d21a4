//! Journal records built byte by byte from Microsoft's documented layouts (`USN_RECORD_V2`,
//! `V3`, `V4`, `USN_JOURNAL_DATA_V0`–`V2`), for the tests: no Windows machine is at hand,
//! so nothing here was captured from a live volume. A [`Journal`] hands out USNs the way
//! NTFS does (each record's USN is its byte offset in the journal stream, records
//! 8-byte aligned), so that sequences read like a real volume's.

use super::record::{v2, v3, v4};

/// One record to build.
#[derive(Clone, Debug)]
pub struct Rec<'a> {
    pub major: u16,
    pub minor: u16,
    pub file: u128,
    pub parent: u128,
    pub usn: i64,
    pub timestamp: i64,
    pub reason: u32,
    pub source_info: u32,
    pub security_id: u32,
    pub attributes: u32,
    pub name: &'a str,
}

impl<'a> Rec<'a> {
    /// A V2 record of `file` in `parent` named `name`.
    pub fn v2(file: u64, parent: u64, reason: u32, name: &'a str) -> Self {
        Rec {
            major: 2,
            minor: 0,
            file: u128::from(file),
            parent: u128::from(parent),
            usn: 0,
            // 2026-12-07 00:00 UTC as a FILETIME.
            timestamp: 134_410_752_000_000_000,
            reason,
            source_info: 0,
            security_id: 0x102,
            attributes: 0x20, // FILE_ATTRIBUTE_ARCHIVE
            name,
        }
    }

    /// A V3 record (128-bit references).
    pub fn v3(file: u128, parent: u128, reason: u32, name: &'a str) -> Self {
        Rec {
            major: 3,
            file,
            parent,
            ..Rec::v2(0, 0, reason, name)
        }
    }

    /// The record as bytes: fixed part, name at its documented offset, padded to 8.
    pub fn bytes(&self) -> Vec<u8> {
        let name: Vec<u8> = self
            .name
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        let fixed = if self.major == 2 {
            v2::FIXED
        } else {
            v3::FIXED
        };
        let len = (fixed + name.len()).next_multiple_of(8);
        let mut b = vec![0u8; len];
        b[0..4].copy_from_slice(&(len as u32).to_le_bytes());
        b[4..6].copy_from_slice(&self.major.to_le_bytes());
        b[6..8].copy_from_slice(&self.minor.to_le_bytes());
        let put = |b: &mut Vec<u8>, at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        if self.major == 2 {
            put(&mut b, v2::FILE, &(self.file as u64).to_le_bytes());
            put(&mut b, v2::PARENT, &(self.parent as u64).to_le_bytes());
            put(&mut b, v2::USN, &self.usn.to_le_bytes());
            put(&mut b, v2::TIMESTAMP, &self.timestamp.to_le_bytes());
            put(&mut b, v2::REASON, &self.reason.to_le_bytes());
            put(&mut b, v2::SOURCE_INFO, &self.source_info.to_le_bytes());
            put(&mut b, v2::SECURITY_ID, &self.security_id.to_le_bytes());
            put(&mut b, v2::ATTRIBUTES, &self.attributes.to_le_bytes());
            put(&mut b, v2::NAME_LENGTH, &(name.len() as u16).to_le_bytes());
            put(&mut b, v2::NAME_OFFSET, &(v2::FIXED as u16).to_le_bytes());
        } else {
            put(&mut b, v3::FILE, &self.file.to_le_bytes());
            put(&mut b, v3::PARENT, &self.parent.to_le_bytes());
            put(&mut b, v3::USN, &self.usn.to_le_bytes());
            put(&mut b, v3::TIMESTAMP, &self.timestamp.to_le_bytes());
            put(&mut b, v3::REASON, &self.reason.to_le_bytes());
            put(&mut b, v3::SOURCE_INFO, &self.source_info.to_le_bytes());
            put(&mut b, v3::SECURITY_ID, &self.security_id.to_le_bytes());
            put(&mut b, v3::ATTRIBUTES, &self.attributes.to_le_bytes());
            put(&mut b, v3::NAME_LENGTH, &(name.len() as u16).to_le_bytes());
            put(&mut b, v3::NAME_OFFSET, &(v3::FIXED as u16).to_le_bytes());
        }
        b[fixed..fixed + name.len()].copy_from_slice(&name);
        b
    }
}

/// A V4 range record with `extents` (offset, length).
pub fn v4_bytes(
    file: u128,
    parent: u128,
    usn: i64,
    reason: u32,
    extents: &[(i64, i64)],
) -> Vec<u8> {
    let len = v4::FIXED + extents.len() * v4::EXTENT;
    let mut b = vec![0u8; len];
    b[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    b[4..6].copy_from_slice(&4u16.to_le_bytes());
    b[v4::FILE..v4::FILE + 16].copy_from_slice(&file.to_le_bytes());
    b[v4::PARENT..v4::PARENT + 16].copy_from_slice(&parent.to_le_bytes());
    b[v4::USN..v4::USN + 8].copy_from_slice(&usn.to_le_bytes());
    b[v4::REASON..v4::REASON + 4].copy_from_slice(&reason.to_le_bytes());
    b[v4::NUMBER_OF_EXTENTS..v4::NUMBER_OF_EXTENTS + 2]
        .copy_from_slice(&(extents.len() as u16).to_le_bytes());
    b[v4::EXTENT_SIZE..v4::EXTENT_SIZE + 2].copy_from_slice(&(v4::EXTENT as u16).to_le_bytes());
    for (i, (offset, length)) in extents.iter().enumerate() {
        let at = v4::FIXED + i * v4::EXTENT;
        b[at..at + 8].copy_from_slice(&offset.to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&length.to_le_bytes());
    }
    b
}

/// An output buffer: the next USN, then the records.
pub fn output(next: i64, records: &[Vec<u8>]) -> Vec<u8> {
    let mut b = next.to_le_bytes().to_vec();
    for r in records {
        b.extend_from_slice(r);
    }
    b
}

/// An NTFS file reference: MFT record number (48 bits) and sequence number (16 bits).
pub fn ntfs_ref(record: u64, sequence: u16) -> u64 {
    (u64::from(sequence) << 48) | record
}

/// A volume's journal stream: records get USNs as NTFS gives them (their byte offset in
/// the stream, which starts at `start`).
pub struct Journal {
    pub start: i64,
    pub records: Vec<Vec<u8>>,
    pub next_usn: i64,
}

impl Journal {
    pub fn new(start: i64) -> Self {
        Journal {
            start,
            records: Vec::new(),
            next_usn: start,
        }
    }

    /// Appends `rec` with the next USN; returns that USN.
    pub fn push(&mut self, mut rec: Rec<'_>) -> i64 {
        rec.usn = self.next_usn;
        let b = rec.bytes();
        self.next_usn += b.len() as i64;
        self.records.push(b);
        rec.usn
    }

    /// What `FSCTL_READ_USN_JOURNAL` from `from` returns (all of it in one buffer).
    pub fn read_from(&self, from: i64) -> Vec<u8> {
        let mut usn = self.start;
        let mut picked = Vec::new();
        for r in &self.records {
            if usn >= from {
                picked.push(r.clone());
            }
            usn += r.len() as i64;
        }
        output(self.next_usn, &picked)
    }
}

/// A `USN_JOURNAL_DATA_V0`, `V1` or `V2` as the query writes it.
pub fn journal_data_bytes(version: u8, id: u64, first: i64, next: i64, lowest: i64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&id.to_le_bytes());
    b.extend_from_slice(&first.to_le_bytes());
    b.extend_from_slice(&next.to_le_bytes());
    b.extend_from_slice(&lowest.to_le_bytes());
    b.extend_from_slice(&i64::MAX.to_le_bytes()); // MaxUsn
    b.extend_from_slice(&(32u64 << 20).to_le_bytes()); // MaximumSize
    b.extend_from_slice(&(8u64 << 20).to_le_bytes()); // AllocationDelta
    if version >= 1 {
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&4u16.to_le_bytes());
    }
    if version >= 2 {
        b.extend_from_slice(&1u32.to_le_bytes()); // range tracking on
        b.extend_from_slice(&(16u64 << 10).to_le_bytes());
        b.extend_from_slice(&(1i64 << 20).to_le_bytes());
    }
    b
}
