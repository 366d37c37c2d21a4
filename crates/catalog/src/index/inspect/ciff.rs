//! Canon's CRW: a CIFF heap (Canon's "Camera Image File Format") of records and nested
//! heaps. Each heap ends with the offset of its directory: a count, then records of a
//! tag, a size and an offset (from the heap's start), or eight bytes held in the record.
//! Reference: exiftool's `CanonRaw.pm` and Canon's CIFF 1.0r4 specification.

use std::collections::HashSet;

use super::raw::{Raw, unix_date};
use super::tiff::Fields;
use super::view::View;

/// The deepest heap read (real files nest three deep).
const MAX_DEPTH: u32 = 8;
/// The most records read in all (a real file has about a hundred).
const MAX_RECORDS: u32 = 4096;

/// What a CRW's records say: the size from ImageInfo (0x1810), make and model (0x080A),
/// the date (0x180E), and the JpgFromRaw (0x2007) and thumbnail (0x2008) JPEGs.
pub(super) fn read(view: View<'_>) -> Raw<'_> {
    let mut raw = Raw::default();
    let le32 = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let Some(header) = view.get(0, 14).filter(|h| h.starts_with(b"II")) else {
        raw.layout.error = Some("not a little-endian CIFF header".into());
        return raw;
    };
    let start = u64::from(le32(&header[2..6]));
    let mut heap = Heap {
        view,
        seen: HashSet::new(),
        left: MAX_RECORDS,
        fields: Fields::default(),
        raw,
    };
    heap.walk(start, view.size(), 0);
    let mut raw = heap.raw;
    raw.fields = Some(heap.fields);
    if raw.layout.width.is_none() {
        raw.layout.error = Some("no ImageInfo record in the CRW".into());
    }
    raw
}

struct Heap<'a> {
    view: View<'a>,
    seen: HashSet<u64>,
    left: u32,
    fields: Fields,
    raw: Raw<'a>,
}

impl Heap<'_> {
    fn u32(&self, at: u64) -> Option<u32> {
        let b = self.view.get(at, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads the heap from `start` to `end`, `depth` heaps deep.
    fn walk(&mut self, start: u64, end: u64, depth: u32) {
        if depth > MAX_DEPTH || end < start + 4 {
            return;
        }
        let Some(dir) = self
            .u32(end - 4)
            .and_then(|d| start.checked_add(u64::from(d)))
        else {
            return;
        };
        if dir >= end || !self.seen.insert(dir) {
            return;
        }
        let Some(count) = self
            .view
            .get(dir, 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
        else {
            return;
        };
        for i in 0..u64::from(count) {
            if self.left == 0 {
                return;
            }
            self.left -= 1;
            let entry = dir + 2 + 10 * i;
            let Some(e) = self.view.get(entry, 10) else {
                return;
            };
            let tag = u16::from_le_bytes([e[0], e[1]]);
            let size = u64::from(u32::from_le_bytes([e[2], e[3], e[4], e[5]]));
            let offset = u64::from(u32::from_le_bytes([e[6], e[7], e[8], e[9]]));
            if tag & 0x8000 != 0 {
                return; // a bad record: exiftool stops here too
            }
            let inline = tag & 0x4000 != 0;
            let (at, size) = if inline {
                (entry + 2, 8)
            } else {
                match start.checked_add(offset) {
                    Some(at) if at.checked_add(size).is_some_and(|e| e <= end) => (at, size),
                    _ => continue,
                }
            };
            let kind = (tag >> 8) & 0x38;
            if (kind == 0x28 || kind == 0x30) && !inline {
                self.walk(at, at + size, depth + 1);
                continue;
            }
            self.record(tag & 0x3FFF, at, size);
        }
    }

    fn record(&mut self, id: u16, at: u64, size: u64) {
        match id {
            0x080A => {
                // "Canon\0" then the model, NUL-terminated.
                let Some(b) = self.view.get(at, size.min(256)) else {
                    return;
                };
                let mut parts = b
                    .split(|&c| c == 0)
                    .map(|s| String::from_utf8_lossy(s).trim().to_string());
                self.fields.make = parts.next().filter(|s| !s.is_empty());
                self.fields.model = parts.next().filter(|s| !s.is_empty());
            }
            // Width, height (then aspect ratio, rotation, bit depths).
            0x1810 if size >= 8 => {
                let (w, h) = (self.u32(at), self.u32(at + 4));
                self.raw.size(w.map(u64::from), h.map(u64::from));
            }
            0x180E if size >= 4 => {
                self.fields.date = self.u32(at).and_then(|t| unix_date(u64::from(t)));
            }
            0x2007 | 0x2008 => self.raw.jpegs.push((at, size)),
            _ => {}
        }
    }
}
