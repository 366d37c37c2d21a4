//! ISO base media file format (ISO/IEC 14496-12) boxes, the structure of HEIF, AVIF,
//! CR3, MP4, MOV, M4V and 3GP: a walk over the boxes in a region of the file, reading
//! only their headers, never following a size past the region or into bytes not kept.

use super::view::View;

/// One box's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxHeader {
    /// Its four-character type (`uuid` boxes: see [`BoxHeader::uuid`]).
    pub kind: [u8; 4],
    /// The user type of a `uuid` box.
    pub uuid: Option<[u8; 16]>,
    /// The offset of its header.
    pub start: u64,
    /// The offset of its payload.
    pub body: u64,
    /// The offset just past it.
    pub end: u64,
}

impl BoxHeader {
    /// The payload's length.
    pub fn len(&self) -> u64 {
        self.end - self.body
    }

    /// The whole payload, if it was kept.
    pub fn payload<'a>(&self, view: &View<'a>) -> Option<&'a [u8]> {
        view.get(self.body, self.len())
    }
}

/// The boxes one after another from `start` to `end` (a file, or a box's payload). A
/// header that was not kept, or a size that reaches past `end`, ends the walk with an
/// error; at most `limit` boxes are walked (a hostile file of a million empty boxes).
pub struct Boxes<'a> {
    view: View<'a>,
    at: u64,
    end: u64,
    left: u32,
    done: bool,
}

/// The most boxes [`boxes`] walks in one region.
pub const LIMIT: u32 = 100_000;

/// The boxes in `start..end` of `view`.
pub fn boxes<'a>(view: View<'a>, start: u64, end: u64) -> Boxes<'a> {
    Boxes {
        view,
        at: start,
        end: end.min(view.size()),
        left: LIMIT,
        done: false,
    }
}

impl Iterator for Boxes<'_> {
    type Item = Result<BoxHeader, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.at >= self.end {
            return None;
        }
        // Up to 7 bytes of padding at the end of a region are not a box.
        if self.end - self.at < 8 {
            self.done = true;
            return None;
        }
        let result = self.header();
        match &result {
            Ok(h) => self.at = h.end,
            Err(_) => self.done = true,
        }
        self.left = self.left.saturating_sub(1);
        if self.left == 0 {
            self.done = true;
        }
        Some(result)
    }
}

impl Boxes<'_> {
    fn header(&self) -> Result<BoxHeader, String> {
        let start = self.at;
        let head = self
            .view
            .get(start, 8)
            .ok_or_else(|| format!("the box header at byte {start} was not read"))?;
        let size32 = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let kind = [head[4], head[5], head[6], head[7]];
        let mut body = start + 8;
        let size = match size32 {
            0 => self.end - start,
            1 => {
                let large = self
                    .view
                    .get(body, 8)
                    .ok_or_else(|| format!("the box header at byte {start} was not read"))?;
                body += 8;
                u64::from_be_bytes(large.try_into().expect("8 bytes"))
            }
            n => u64::from(n),
        };
        let uuid = if &kind == b"uuid" {
            let u = self
                .view
                .get(body, 16)
                .ok_or_else(|| format!("the uuid box at byte {start} was cut short"))?;
            body += 16;
            Some(u.try_into().expect("16 bytes"))
        } else {
            None
        };
        let end = start
            .checked_add(size)
            .filter(|&e| e >= body && e <= self.end)
            .ok_or_else(|| {
                format!(
                    "the {} box at byte {start} claims {size} bytes, past its container",
                    String::from_utf8_lossy(&kind)
                )
            })?;
        Ok(BoxHeader {
            kind,
            uuid,
            start,
            body,
            end,
        })
    }
}

/// The first box of type `kind` in `start..end`, if the walk reaches one.
pub fn find(view: View<'_>, start: u64, end: u64, kind: &[u8; 4]) -> Option<BoxHeader> {
    boxes(view, start, end)
        .map_while(Result::ok)
        .find(|b| &b.kind == kind)
}

/// The box at the end of `path` (each a child of the one before) in `start..end`.
pub fn find_path(view: View<'_>, start: u64, end: u64, path: &[&[u8; 4]]) -> Option<BoxHeader> {
    let (first, rest) = path.split_first()?;
    let mut found = find(view, start, end, first)?;
    for kind in rest {
        // `meta` is a full box: four bytes of version and flags before its children
        // (in ISO files; QuickTime's `meta` has none, told by what follows).
        let body = if &found.kind == b"meta" {
            full_box_children(view, &found)
        } else {
            found.body
        };
        found = find(view, body, found.end, kind)?;
    }
    Some(found)
}

/// Where the children of a `meta` box start: after its version and flags (ISO) or at
/// its payload (QuickTime, whose `meta` is a plain container: its first child's type
/// follows a size at the payload's start).
pub fn full_box_children(view: View<'_>, meta: &BoxHeader) -> u64 {
    match view.get(meta.body + 4, 4) {
        Some(kind) if kind.iter().all(|b| b.is_ascii_alphanumeric()) => meta.body,
        _ => meta.body + 4,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A box of `kind` around `body`.
    pub(crate) fn bx(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut b = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        b.extend_from_slice(kind);
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn boxes_are_walked_and_nested_paths_found() {
        let moov = bx(
            b"moov",
            &[bx(b"mvhd", &[0; 4]), bx(b"trak", &bx(b"tkhd", &[1; 4]))].concat(),
        );
        let file = [bx(b"ftyp", b"isom"), moov].concat();
        let v = View::whole(&file);
        let kinds: Vec<_> = boxes(v, 0, v.size()).map(|b| b.unwrap().kind).collect();
        assert_eq!(kinds, [*b"ftyp", *b"moov"]);
        let tkhd = find_path(v, 0, v.size(), &[b"moov", b"trak", b"tkhd"]).unwrap();
        assert_eq!(tkhd.payload(&v), Some(&[1u8; 4][..]));
    }

    #[test]
    fn sizes_past_the_container_and_headers_not_kept_end_the_walk_with_an_error() {
        let mut file = bx(b"ftyp", b"isom");
        file.extend_from_slice(&1000u32.to_be_bytes());
        file.extend_from_slice(b"mdat");
        let v = View::whole(&file);
        let all: Vec<_> = boxes(v, 0, v.size()).collect();
        assert_eq!(all.len(), 2);
        assert!(all[1].as_ref().unwrap_err().contains("past its container"));
        // A 64-bit size; then a size-0 box running to the end.
        let mut large = 1u32.to_be_bytes().to_vec();
        large.extend_from_slice(b"mdat");
        large.extend_from_slice(&20u64.to_be_bytes());
        large.extend_from_slice(&[0; 4]);
        large.extend_from_slice(&[0, 0, 0, 0]);
        large.extend_from_slice(b"free");
        large.extend_from_slice(&[9; 8]);
        let v = View::whole(&large);
        let all: Vec<_> = boxes(v, 0, v.size()).map(|b| b.unwrap()).collect();
        assert_eq!((all[0].body, all[0].end), (16, 20));
        assert_eq!((&all[1].kind, all[1].end), (b"free", large.len() as u64));
        // The second header lies in the part that was not kept.
        let big = [
            bx(b"ftyp", b"isom"),
            bx(b"mdat", &[0; 100]),
            bx(b"moov", &[]),
        ]
        .concat();
        let v = View::new(&big[..20], &big[big.len() - 8..], big.len() as u64);
        let all: Vec<_> = boxes(v, 0, v.size()).collect();
        assert_eq!(
            all.len(),
            3,
            "mdat's header is in the head, moov's in the tail"
        );
        assert!(all.iter().all(Result::is_ok));
        let v = View::new(&big[..14], &[], big.len() as u64);
        let all: Vec<_> = boxes(v, 0, v.size()).collect();
        assert!(all[1].as_ref().unwrap_err().contains("not read"));
    }
}
