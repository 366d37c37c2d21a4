//! `FSCTL_GET_RETRIEVAL_POINTERS`: where a file's clusters lie on its volume.
//!
//! <https://learn.microsoft.com/windows/win32/api/winioctl/ni-winioctl-fsctl_get_retrieval_pointers>
//!
//! The input is the first virtual cluster (VCN, a cluster of the file) to map; the output
//! is a `RETRIEVAL_POINTERS_BUFFER`:
//!
//! ```text
//! offset  0  u32  ExtentCount
//! offset  8  i64  StartingVcn            (after 4 bytes of padding)
//! offset 16  { i64 NextVcn; i64 Lcn; }   × ExtentCount
//! ```
//!
//! Run *i* covers VCNs from the previous run's `NextVcn` (the first from `StartingVcn`) up
//! to its own `NextVcn`, at logical cluster `Lcn` of the volume. `Lcn = -1` is a run
//! without clusters: a hole of a sparse file, or the saved tail of a compression unit.
//! When the buffer is too small the call fails with `ERROR_MORE_DATA` after filling it;
//! the next call starts at the last run's `NextVcn`.
//!
//! The parser is a pure function over the bytes so it can be tested with hand-built
//! buffers; [`placement`] makes the calls.

use std::fmt;
use std::fs::File;
use std::io;

use windows_sys::Win32::Foundation::{ERROR_HANDLE_EOF, ERROR_MORE_DATA};
use windows_sys::Win32::System::Ioctl::FSCTL_GET_RETRIEVAL_POINTERS;

use crate::placement::{Extent, ExtentFlags, LocateError, Placement, Strategy};
use seekless_sys::ioctl::{Aligned, device_io_control};

const HEADER: usize = 16;
const RUN: usize = 16;
/// Runs fetched per call: most files have one; a badly fragmented one takes a few calls.
const BATCH: usize = 64;
/// Calls per file before giving up on mapping the rest (64 × 1024 runs is plenty for a
/// sort key and per-extent scheduling; the reader still reads the whole file).
const MAX_CALLS: usize = 1024;

/// How clusters translate into volume bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per cluster.
    pub cluster: u64,
    /// Byte offset of cluster 0 from the start of the volume (0 on NTFS; the start of the
    /// data area on FAT and exFAT).
    pub lcn_base: u64,
}

/// Why a retrieval-pointers buffer cannot be trusted.
#[derive(Debug, PartialEq, Eq)]
pub enum BadRuns {
    /// Fewer bytes than the header, or than the runs the header announces.
    Short { len: usize, needed: usize },
    /// A run that ends where it starts or before it. Wine's stub answers every file with
    /// one such run (StartingVcn 1, NextVcn 0, Lcn 0).
    Backwards { from: i64, to: i64 },
    /// A negative VCN, an LCN below -1, or a position that overflows a byte offset.
    OutOfRange,
}

impl fmt::Display for BadRuns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadRuns::Short { len, needed } => write!(
                f,
                "retrieval pointers answer too short ({len} bytes, {needed} needed)"
            ),
            BadRuns::Backwards { from, to } => write!(
                f,
                "retrieval pointers run from VCN {from} to {to} goes nowhere \
                 (a stub answer, as Wine gives)"
            ),
            BadRuns::OutOfRange => f.write_str("retrieval pointers out of range"),
        }
    }
}

fn i64_at(buf: &[u8], at: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    i64::from_le_bytes(b)
}

/// Parses one `RETRIEVAL_POINTERS_BUFFER` (the `len` bytes the call returned), appending
/// a byte extent for every run that has clusters to `out`, and returns the VCN after the
/// last run (where a continuation call starts).
///
/// Runs without clusters (`Lcn = -1`) add nothing: they are holes, or the unused tail of
/// a compressed unit.
pub fn parse(buf: &[u8], geometry: Geometry, out: &mut Vec<Extent>) -> Result<i64, BadRuns> {
    if buf.len() < HEADER {
        return Err(BadRuns::Short {
            len: buf.len(),
            needed: HEADER,
        });
    }
    let count = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    let needed = count
        .checked_mul(RUN)
        .and_then(|n| n.checked_add(HEADER))
        .ok_or(BadRuns::OutOfRange)?;
    if buf.len() < needed {
        return Err(BadRuns::Short {
            len: buf.len(),
            needed,
        });
    }
    let mut vcn = i64_at(buf, 8);
    if vcn < 0 {
        return Err(BadRuns::OutOfRange);
    }
    for i in 0..count {
        let at = HEADER + i * RUN;
        let next = i64_at(buf, at);
        let lcn = i64_at(buf, at + 8);
        if next <= vcn {
            return Err(BadRuns::Backwards {
                from: vcn,
                to: next,
            });
        }
        if lcn < -1 {
            return Err(BadRuns::OutOfRange);
        }
        if lcn >= 0 {
            let bytes = |clusters: i64| (clusters as u64).checked_mul(geometry.cluster);
            let logical = bytes(vcn).ok_or(BadRuns::OutOfRange)?;
            let length = bytes(next - vcn).ok_or(BadRuns::OutOfRange)?;
            let physical = bytes(lcn)
                .and_then(|p| p.checked_add(geometry.lcn_base))
                .ok_or(BadRuns::OutOfRange)?;
            out.push(Extent {
                logical,
                physical,
                length,
                flags: ExtentFlags::empty(),
            });
        }
        vcn = next;
    }
    Ok(vcn)
}

/// Trims the extents to the file's size (clusters round the last one up), marks the last
/// one, and applies `flags` (e.g. `ENCODED` for a compressed file) to all of them.
pub fn finish(extents: &mut Vec<Extent>, size: u64, flags: ExtentFlags) {
    extents.retain(|e| e.logical < size);
    for e in extents.iter_mut() {
        e.length = e.length.min(size - e.logical);
        e.flags |= flags;
    }
    if let Some(last) = extents.last_mut() {
        last.flags |= ExtentFlags::LAST;
    }
}

/// Whether a failed call means "this volume does not answer retrieval pointers" rather
/// than "this file failed".
fn is_unsupported(e: &io::Error) -> bool {
    // ERROR_INVALID_FUNCTION (1), ERROR_NOT_SUPPORTED (50), ERROR_INVALID_PARAMETER (87):
    // what network redirectors and filesystems without the FSCTL answer.
    matches!(e.raw_os_error(), Some(1 | 50 | 87))
}

/// The file's placement from its retrieval pointers. `flags` is added to every extent.
pub fn placement(
    file: &File,
    size: u64,
    geometry: Geometry,
    flags: ExtentFlags,
) -> Result<Placement, LocateError> {
    let mut extents: Vec<Extent> = Vec::new();
    let mut vcn: i64 = 0;
    let mut out = Aligned::<{ HEADER + BATCH * RUN }>::zeroed();
    for _ in 0..MAX_CALLS {
        let input = Aligned::<8>(vcn.to_le_bytes());
        let (len, result) =
            device_io_control(file, FSCTL_GET_RETRIEVAL_POINTERS, &input.0, &mut out.0);
        let more = match result {
            Ok(()) => false,
            Err(e) if e.raw_os_error() == Some(ERROR_MORE_DATA as i32) => true,
            Err(e) if e.raw_os_error() == Some(ERROR_HANDLE_EOF as i32) => {
                if vcn == 0 && size > 0 {
                    // No clusters at all for a non-empty file: NTFS keeps small files
                    // inside their MFT record ("resident"), which lies in file-index
                    // order; the inode fallback orders such files right.
                    extents.push(Extent {
                        logical: 0,
                        physical: 0,
                        length: size,
                        flags: ExtentFlags::DATA_INLINE | ExtentFlags::UNKNOWN,
                    });
                }
                break;
            }
            Err(e) if is_unsupported(&e) => return Err(LocateError::Unsupported(e)),
            Err(e) => return Err(LocateError::Io(e)),
        };
        let next = parse(&out.0[..len], geometry, &mut extents).map_err(|bad| {
            LocateError::Unsupported(io::Error::new(io::ErrorKind::Unsupported, bad.to_string()))
        })?;
        if !more {
            break;
        }
        if next <= vcn {
            return Err(LocateError::Unsupported(io::Error::new(
                io::ErrorKind::Unsupported,
                "retrieval pointers do not advance",
            )));
        }
        vcn = next;
    }
    finish(&mut extents, size, flags);
    Ok(Placement::from_extents(
        Strategy::RetrievalPointers,
        &extents,
        size,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NTFS: Geometry = Geometry {
        cluster: 4096,
        lcn_base: 0,
    };

    /// Builds the bytes of a RETRIEVAL_POINTERS_BUFFER: `(NextVcn, Lcn)` runs from `start`.
    fn buffer(start: i64, runs: &[(i64, i64)]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(runs.len() as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&start.to_le_bytes());
        for &(next, lcn) in runs {
            b.extend_from_slice(&next.to_le_bytes());
            b.extend_from_slice(&lcn.to_le_bytes());
        }
        b
    }

    #[test]
    fn runs_become_byte_extents_at_their_clusters() {
        let mut out = Vec::new();
        // Clusters 0..3 at LCN 100, 3..4 at LCN 7, 4..10 at LCN 104.
        let next = parse(&buffer(0, &[(3, 100), (4, 7), (10, 104)]), NTFS, &mut out).unwrap();
        assert_eq!(next, 10);
        let got: Vec<_> = out
            .iter()
            .map(|e| (e.logical, e.physical, e.length))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 100 * 4096, 3 * 4096),
                (3 * 4096, 7 * 4096, 4096),
                (4 * 4096, 104 * 4096, 6 * 4096),
            ]
        );
        let p = Placement::from_extents(Strategy::RetrievalPointers, &out, 10 * 4096);
        assert_eq!(p.physical(), Some(100 * 4096));
        assert_eq!(p.extent_count, 3);
        assert!(p.is_fragmented());
    }

    #[test]
    fn sparse_runs_are_holes_without_positions() {
        let mut out = Vec::new();
        // 0..2 data, 2..8 hole (LCN -1), 8..9 data.
        parse(&buffer(0, &[(2, 50), (8, -1), (9, 60)]), NTFS, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].logical, 8 * 4096);
        assert_eq!(out[1].physical, 60 * 4096);
        let p = Placement::from_extents(Strategy::RetrievalPointers, &out, 9 * 4096);
        assert!(p.flags.contains(ExtentFlags::SPARSE));
        assert_eq!(p.physical(), Some(50 * 4096));
    }

    #[test]
    fn an_all_hole_file_has_no_position() {
        let mut out = Vec::new();
        parse(&buffer(0, &[(16, -1)]), NTFS, &mut out).unwrap();
        assert!(out.is_empty());
        let p = Placement::from_extents(Strategy::RetrievalPointers, &out, 16 * 4096);
        assert_eq!(p.physical(), None);
    }

    #[test]
    fn a_continuation_starts_at_its_starting_vcn() {
        let mut out = Vec::new();
        let next = parse(&buffer(64, &[(70, 1000)]), NTFS, &mut out).unwrap();
        assert_eq!(next, 70);
        assert_eq!(out[0].logical, 64 * 4096);
        assert_eq!(out[0].length, 6 * 4096);
    }

    #[test]
    fn the_cluster_base_is_added_to_positions() {
        let fat = Geometry {
            cluster: 32768,
            lcn_base: 1 << 20,
        };
        let mut out = Vec::new();
        parse(&buffer(0, &[(1, 2)]), fat, &mut out).unwrap();
        assert_eq!(out[0].physical, (1 << 20) + 2 * 32768);
    }

    #[test]
    fn wines_fake_extent_is_rejected() {
        let mut out = Vec::new();
        let err = parse(&buffer(1, &[(0, 0)]), NTFS, &mut out).unwrap_err();
        assert_eq!(err, BadRuns::Backwards { from: 1, to: 0 });
        assert!(err.to_string().contains("Wine"));
        assert!(out.is_empty());
    }

    #[test]
    fn an_empty_run_is_rejected() {
        let mut out = Vec::new();
        let err = parse(&buffer(0, &[(4, 10), (4, 20)]), NTFS, &mut out).unwrap_err();
        assert_eq!(err, BadRuns::Backwards { from: 4, to: 4 });
    }

    #[test]
    fn short_buffers_are_rejected() {
        let mut out = Vec::new();
        assert_eq!(
            parse(&[0u8; 10], NTFS, &mut out),
            Err(BadRuns::Short {
                len: 10,
                needed: 16
            })
        );
        // The header announces two runs, the bytes hold one and a half.
        let mut b = buffer(0, &[(1, 5), (2, 6)]);
        b.truncate(16 + 24);
        assert_eq!(
            parse(&b, NTFS, &mut out),
            Err(BadRuns::Short {
                len: 40,
                needed: 48
            })
        );
        // A huge count cannot overflow the size computation.
        let mut b = buffer(0, &[]);
        b[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            parse(&b, NTFS, &mut out),
            Err(BadRuns::Short { .. })
        ));
    }

    #[test]
    fn nonsense_positions_are_rejected() {
        let mut out = Vec::new();
        assert_eq!(
            parse(&buffer(-5, &[(1, 5)]), NTFS, &mut out),
            Err(BadRuns::OutOfRange)
        );
        assert_eq!(
            parse(&buffer(0, &[(1, -2)]), NTFS, &mut out),
            Err(BadRuns::OutOfRange)
        );
        assert_eq!(
            parse(&buffer(0, &[(1, i64::MAX)]), NTFS, &mut out),
            Err(BadRuns::OutOfRange)
        );
    }

    #[test]
    fn zero_runs_is_an_empty_map() {
        let mut out = Vec::new();
        assert_eq!(parse(&buffer(0, &[]), NTFS, &mut out), Ok(0));
        assert!(out.is_empty());
    }

    #[test]
    fn the_last_extent_is_trimmed_to_the_file_size() {
        let mut out = Vec::new();
        parse(&buffer(0, &[(1, 9), (3, 20)]), NTFS, &mut out).unwrap();
        finish(&mut out, 4096 + 100, ExtentFlags::ENCODED);
        assert_eq!(out[1].length, 100);
        assert!(
            out[1]
                .flags
                .contains(ExtentFlags::LAST | ExtentFlags::ENCODED)
        );
        assert!(!out[0].flags.contains(ExtentFlags::LAST));
        // Clusters wholly past the end (preallocation) are dropped.
        let mut out = Vec::new();
        parse(&buffer(0, &[(1, 9), (3, 20)]), NTFS, &mut out).unwrap();
        finish(&mut out, 4096, ExtentFlags::empty());
        assert_eq!(out.len(), 1);
    }
}
