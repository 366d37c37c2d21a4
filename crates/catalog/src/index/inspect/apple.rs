//! Apple's maker note: the content identifier that ties a Live Photo's still (HEIC or
//! JPEG) to its MOV. The maker note (EXIF tag 0x927C) starts `Apple iOS\0`, a version,
//! its byte order at 12 and an IFD at 14, its offsets counted from the maker note's
//! start (as exiftool reads it); tag 0x0011 is the identifier, an ASCII UUID (exiftool's
//! `Apple:MediaGroupUUID`, called ContentIdentifier before 12.19).
//!
//! A small IFD reader of its own: `tiff.rs` keeps its reader private and reads no maker
//! notes.

/// The content identifier in the Apple maker note of the EXIF block `exif` (a TIFF
/// structure), if it has one.
pub(super) fn content_id(exif: &[u8]) -> Option<String> {
    let little = match exif.get(..2)? {
        b"II" => true,
        b"MM" => false,
        _ => return None,
    };
    let tiff = Ifds { data: exif, little };
    let ifd0 = tiff.u32(4)? as usize;
    let exif_ifd = tiff.entry(ifd0, 0x8769)?;
    let exif_ifd = tiff.u32(exif_ifd.value_at)? as usize;
    let note = tiff.entry(exif_ifd, 0x927C)?;
    let note = tiff.value(&note)?;
    let rest = note.strip_prefix(b"Apple iOS\0")?;
    let little = match rest.get(2..4)? {
        b"II" => true,
        b"MM" => false,
        _ => return None,
    };
    let maker = Ifds { data: note, little };
    let id = maker.entry(14, 0x0011)?;
    if id.kind != 2 {
        return None;
    }
    let text = maker.value(&id)?;
    let text = text.split(|&b| b == 0).next()?;
    let text = std::str::from_utf8(text).ok()?.trim();
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic())).then(|| text.to_string())
}

/// A classic TIFF structure's IFDs in `data`.
struct Ifds<'a> {
    data: &'a [u8],
    little: bool,
}

/// One entry: type, count and where its value lies.
struct Entry {
    kind: u16,
    count: u32,
    /// Where the 4 bytes of the value (or of its offset) are.
    value_at: usize,
}

impl Ifds<'_> {
    fn u16(&self, at: usize) -> Option<u16> {
        let b: [u8; 2] = self.data.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    }

    fn u32(&self, at: usize) -> Option<u32> {
        let b: [u8; 4] = self.data.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    /// Entry `tag` of the IFD at `at` (at most its first 1000 entries are looked at).
    fn entry(&self, at: usize, tag: u16) -> Option<Entry> {
        let count = self.u16(at)?.min(1000);
        (0..usize::from(count)).find_map(|i| {
            let e = at.checked_add(2 + 12 * i)?;
            (self.u16(e)? == tag).then_some(())?;
            Some(Entry {
                kind: self.u16(e + 2)?,
                count: self.u32(e + 4)?,
                value_at: e + 8,
            })
        })
    }

    /// The bytes of a byte-sized (ASCII, UNDEFINED) entry's value.
    fn value(&self, e: &Entry) -> Option<&[u8]> {
        if !matches!(e.kind, 1 | 2 | 7) {
            return None;
        }
        let len = e.count as usize;
        let at = if len <= 4 {
            e.value_at
        } else {
            self.u32(e.value_at)? as usize
        };
        self.data.get(at..at.checked_add(len)?)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A big-endian EXIF block whose Exif IFD holds an Apple maker note with `id` as
    /// tag 0x0011.
    pub(crate) fn apple_exif(id: &str) -> Vec<u8> {
        let mut note = b"Apple iOS\0\0\x01MM".to_vec();
        let value = [id.as_bytes(), b"\0"].concat();
        note.extend_from_slice(&1u16.to_be_bytes());
        note.extend_from_slice(&[0x00, 0x11, 0, 2]);
        note.extend_from_slice(&(value.len() as u32).to_be_bytes());
        note.extend_from_slice(&(14 + 2 + 12 + 4u32).to_be_bytes());
        note.extend_from_slice(&[0; 4]);
        note.extend_from_slice(&value);
        // Header, IFD0 at 8 with one entry (the Exif IFD at 26), the Exif IFD with one
        // entry (the maker note at 44).
        let mut t = b"MM\0*\0\0\0\x08\0\x01\x87\x69\0\x04\0\0\0\x01\0\0\0\x1a\0\0\0\0".to_vec();
        t.extend_from_slice(&[0, 1, 0x92, 0x7C, 0, 7]);
        t.extend_from_slice(&(note.len() as u32).to_be_bytes());
        t.extend_from_slice(&44u32.to_be_bytes());
        t.extend_from_slice(&[0; 4]);
        t.extend_from_slice(&note);
        t
    }

    #[test]
    fn the_content_identifier_is_read_from_the_apple_maker_note() {
        let id = "5A8D8B5C-2B7E-4B2B-9D4D-2D2D5E7B1C11";
        assert_eq!(content_id(&apple_exif(id)).as_deref(), Some(id));
        // Another maker's note, a cut block and garbage have none.
        let other = apple_exif(id)
            .iter()
            .map(|&b| if b == b'A' { b'B' } else { b })
            .collect::<Vec<_>>();
        assert_eq!(content_id(&other), None);
        assert_eq!(content_id(&apple_exif(id)[..60]), None);
        assert_eq!(content_id(b"MM\0*\xff\xff\xff\xff"), None);
    }
}
