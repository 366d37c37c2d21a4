//! The verdicts of container formats: RIFF (WebP, AVI), ISO-BMFF (HEIF, AVIF, CR3, MP4,
//! MOV, 3GP), Matroska, and the raw formats with containers of their own (RAF, MRW, X3F,
//! CRW).

use super::{View, boxes, fourcc, matroska, past_end, size};

/// The most chunks, elements or entries walked in one file.
const LIMIT: u32 = 1_000_000;

/// The RIFF chunks one after another to the file's end (an AVI over 1 GiB has several),
/// each inside the file; in a WebP, the chunks inside its RIFF too.
pub(super) fn riff(view: View<'_>) -> Option<String> {
    let end = view.size();
    let mut at = 0u64;
    let mut first = true;
    for _ in 0..LIMIT {
        if end - at < 8 {
            return None;
        }
        let head = view.get(at, 12)?;
        let kind = &head[0..4];
        if !first && kind != b"RIFF" {
            return None; // trailing bytes that are not a RIFF: not judged
        }
        let len = u64::from(u32::from_le_bytes([head[4], head[5], head[6], head[7]]));
        let total = len + 8;
        if at + total > end {
            return Some(past_end("RIFF", view, at, total));
        }
        if first && &head[8..12] == b"WEBP" {
            let mut c = at + 12;
            while c + 8 <= at + total {
                let h = view.get(c, 8)?;
                let n = u64::from(u32::from_le_bytes([h[4], h[5], h[6], h[7]]));
                let chunk_end = c + 8 + n;
                if chunk_end > at + total {
                    return Some(format!(
                        "chunk {} runs past the RIFF (claims {}, {} left)",
                        fourcc(&h[..4]),
                        size(n + 8),
                        size(at + total - c)
                    ));
                }
                c = chunk_end + (n & 1);
            }
            return None;
        }
        first = false;
        at += total + (len & 1);
        if at >= end {
            return None;
        }
    }
    None
}

/// The top-level boxes walked by their sizes end at the file's end, and every `iloc`
/// extent of a HEIF lies inside it.
pub(super) fn bmff(view: View<'_>) -> Option<String> {
    let end = view.size();
    let mut next = 0u64;
    let mut meta = None;
    for b in boxes::boxes(view, 0, end) {
        match b {
            Ok(h) => {
                if &h.kind == b"meta" {
                    meta = Some(h);
                }
                next = h.end;
            }
            Err(_) => {
                // Past the end, or a header not kept (not judged).
                let head = view.get(next, 8)?;
                let n = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
                let claimed = match n {
                    1 => u64::from_be_bytes(view.get(next + 8, 8)?.try_into().ok()?),
                    n => n,
                };
                // Bytes after the last box that are not a box (a trailer some phones
                // append) are not judged: a top-level box's type is letters and digits.
                if !head[4..8]
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || b == b' ')
                {
                    return None;
                }
                if claimed < 8 {
                    return Some(format!(
                        "box {} has an impossible size ({claimed})",
                        fourcc(&head[4..8])
                    ));
                }
                return Some(past_end(
                    &format!("box {}", fourcc(&head[4..8])),
                    view,
                    next,
                    claimed,
                ));
            }
        }
    }
    // The walk stops at `boxes::LIMIT` boxes too: what lies after is not judged.
    if next < end && end - next < 8 {
        // Fewer than 8 bytes left: a box header cut short, unless they are zero padding.
        let rest = view.get(next, end - next)?;
        if rest.iter().any(|&b| b != 0) {
            return Some(format!("truncated at {} inside a box header", size(end)));
        }
    }
    let meta = meta?;
    iloc(view, &meta)
}

/// Every extent of the `iloc` box in `meta` inside the file.
fn iloc(view: View<'_>, meta: &boxes::BoxHeader) -> Option<String> {
    let children = meta.body + 4;
    let iloc = boxes::find(view, children, meta.end, b"iloc")?;
    let body = iloc.payload(&view)?;
    let (at, len) = super::super::heif::iloc_extents(body)
        .into_iter()
        .max_by_key(|&(at, len)| at.saturating_add(len))?;
    (at.saturating_add(len) > view.size()).then(|| past_end("an iloc extent", view, at, len))
}

/// The Segment (unless of unknown size) inside the file, and each of its children whose
/// header was kept (clusters among them) inside the Segment.
pub(super) fn matroska(view: View<'_>) -> Option<String> {
    let end = view.size();
    let ebml = matroska::header_at(view, 0)?;
    let seg_at = ebml.body.checked_add(ebml.size?)?;
    let segment = matroska::header_at(view, seg_at)?;
    if segment.id != 0x1853_8067 {
        return None;
    }
    let seg_end = match segment.size {
        Some(n) => {
            let seg_end = segment.body.saturating_add(n);
            if seg_end > end {
                return Some(past_end("the Segment", view, seg_at, seg_end - seg_at));
            }
            seg_end
        }
        None => end,
    };
    let mut at = segment.body;
    for _ in 0..LIMIT {
        if at >= seg_end {
            return None;
        }
        let Some(e) = matroska::header_at(view, at) else {
            // A header cut by the file's end; or one not kept, or not a header.
            let kept = view.get_upto(at, seg_end);
            return (at + kept.len() as u64 == end && kept.len() < 12 && segment.size.is_none())
                .then(|| format!("truncated at {} inside an element header", size(end)));
        };
        let Some(n) = e.size else {
            return None; // an unknown-size cluster: its end is not said
        };
        let e_end = e.body.saturating_add(n);
        if e_end > seg_end {
            let what = if e.id == 0x1F43_B675 {
                "a Cluster".to_string()
            } else {
                format!("element 0x{:X}", e.id)
            };
            return Some(past_end(&what, view, at, e_end - at));
        }
        at = e_end;
    }
    None
}

fn be32(b: &[u8]) -> u64 {
    u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}
fn le32(b: &[u8]) -> u64 {
    u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// RAF: the JPEG, CFA header and CFA offsets and lengths of the header (at 84) inside
/// the file.
pub(super) fn raf(view: View<'_>) -> Option<String> {
    let h = view.get(84, 24)?;
    for (i, what) in ["the JPEG", "the CFA header", "the CFA"]
        .into_iter()
        .enumerate()
    {
        let (at, len) = (be32(&h[i * 8..]), be32(&h[i * 8 + 4..]));
        if at.saturating_add(len) > view.size() {
            return Some(past_end(what, view, at, len));
        }
    }
    None
}

/// MRW: the header block (`\0MRM` and its length) inside the file, and its blocks.
pub(super) fn mrw(view: View<'_>) -> Option<String> {
    let h = view.get(0, 8)?;
    let len = be32(&h[4..]);
    if 8 + len > view.size() {
        return Some(past_end("the MRM block", view, 0, 8 + len));
    }
    // The blocks inside it: PRD, TTW, WBG, RIF, each a name and a length.
    let mut at = 8u64;
    let mut raw_size = None;
    for _ in 0..64 {
        if at + 8 > 8 + len {
            break;
        }
        let b = view.get(at, 8)?;
        let n = be32(&b[4..]);
        if &b[..4] == b"\0PRD" {
            // Sensor height and width (at 8 and 10 of the body) and bits per pixel (16).
            let p = view.get(at + 8, 24)?;
            let (hh, ww) = (
                u64::from(u16::from_be_bytes([p[8], p[9]])),
                u64::from(u16::from_be_bytes([p[10], p[11]])),
            );
            let bits = u64::from(p[16]);
            if matches!(bits, 12 | 16) {
                raw_size = Some(hh * ww * bits / 8);
            }
        }
        at = at.saturating_add(8 + n);
    }
    let data = 8 + len;
    if let Some(raw) = raw_size
        && data + raw > view.size()
    {
        return Some(past_end("the raw data", view, data, raw));
    }
    None
}

/// X3F: the directory the file's last 4 bytes point to is a `SECd`, and each of its
/// entries lies inside the file.
pub(super) fn x3f(view: View<'_>) -> Option<String> {
    let end = view.size();
    let last = view.get(end.checked_sub(4)?, 4)?;
    let dir = le32(last);
    let Some(d) = view.get(dir, 12) else {
        return (dir + 12 > end).then(|| {
            format!(
                "no directory where the last bytes point (cut short at {}?)",
                size(end)
            )
        });
    };
    if &d[..4] != b"SECd" {
        return Some(format!(
            "no directory where the last bytes point (cut short at {}?)",
            size(end)
        ));
    }
    let n = le32(&d[8..]).min(u64::from(LIMIT));
    for i in 0..n {
        let e = view.get(dir + 12 + i * 12, 12)?;
        let (at, len) = (le32(e), le32(&e[4..]));
        if at.saturating_add(len) > end {
            return Some(past_end("a directory entry", view, at, len));
        }
    }
    None
}

/// CRW (CIFF): the root heap's directory, which its last 4 bytes point to, lies inside
/// the heap, and each of its entries' data too.
pub(super) fn crw(view: View<'_>) -> Option<String> {
    let end = view.size();
    let h = view.get(0, 14)?;
    if &h[..2] != b"II" && &h[..2] != b"MM" {
        return None;
    }
    let little = &h[..2] == b"II";
    let u32_at = |b: &[u8]| if little { le32(b) } else { be32(b) };
    let u16_at = |b: &[u8]| {
        u64::from(if little {
            u16::from_le_bytes([b[0], b[1]])
        } else {
            u16::from_be_bytes([b[0], b[1]])
        })
    };
    let heap = u32_at(&h[2..]);
    if heap >= end || end - heap < 4 {
        return Some(format!("truncated at {} before the heap", size(end)));
    }
    let heap_len = end - heap;
    let dir = u32_at(view.get(end - 4, 4)?);
    let Some(count) = view.get(heap.saturating_add(dir), 2) else {
        return (heap.saturating_add(dir) + 2 > end).then(|| {
            format!(
                "no directory where the heap's end points (cut short at {}?)",
                size(end)
            )
        });
    };
    let count = u16_at(count);
    if dir.saturating_add(2 + count * 10) > heap_len {
        return Some(format!(
            "no directory where the heap's end points (cut short at {}?)",
            size(end)
        ));
    }
    for i in 0..count {
        let e = view.get(heap + dir + 2 + i * 10, 10)?;
        let tag = u16_at(e);
        // Entries whose data lies in the heap (storage bits 00).
        if tag & 0xC000 != 0 {
            continue;
        }
        let (len, at) = (u32_at(&e[2..]), u32_at(&e[6..]));
        if at.saturating_add(len) > dir {
            return Some(format!(
                "an entry's data runs past the heap's directory (claims {} at {})",
                size(len),
                size(at)
            ));
        }
    }
    None
}
