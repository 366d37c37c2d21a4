//! JPEG XL (ISO/IEC 18181): the size from the codestream's SizeHeader and the
//! orientation from its ImageMetadata (18181-1 §A.2, §A.3), in a bare codestream (`FF
//! 0A`) or in the ISO BMFF container (18181-2), whose codestream is in a `jxlc` box or
//! split over `jxlp` boxes and whose EXIF is an `Exif` box (a 4-byte offset to the TIFF
//! header, then the block).

use super::Layout;
use super::boxes;
use super::view::View;

/// What the codestream and the container say.
pub(super) fn read(view: View<'_>) -> Layout<'_> {
    let mut out = Layout::default();
    let head = view.head();
    let codestream = if head.starts_with(&[0xFF, 0x0A]) {
        Some(head)
    } else {
        let mut first = None;
        for b in boxes::boxes(view, 0, view.size()) {
            let b = match b {
                Ok(b) => b,
                Err(e) => {
                    out.warn(e);
                    break;
                }
            };
            // Only the start of the codestream is needed: what was kept of the box.
            let kept = view.get_upto(b.body, b.end);
            match &b.kind {
                b"jxlc" if first.is_none() => first = Some(kept),
                // A partial codestream box: a 4-byte index, then the codestream part;
                // the first holds the headers.
                b"jxlp" if first.is_none() => first = kept.get(4..),
                b"Exif" if out.exif.is_none() => {
                    out.exif = b.payload(&view).and_then(|p| {
                        let off = u32::from_be_bytes(p.get(..4)?.try_into().ok()?) as usize;
                        p.get(off.checked_add(4)?..)
                    });
                }
                _ => {}
            }
        }
        first
    };
    let Some(codestream) = codestream else {
        out.error = Some("no jxlc or jxlp box (no codestream)".into());
        return out;
    };
    match headers(codestream) {
        Some((w, h, orientation)) => {
            (out.width, out.height) = (Some(w), Some(h));
            out.meta.orientation = orientation;
        }
        None => out.error = Some("the codestream's SizeHeader is cut short or damaged".into()),
    }
    out
}

/// Reads bits least significant first, as JPEG XL headers are written.
struct Bits<'a> {
    data: &'a [u8],
    at: usize,
}

impl Bits<'_> {
    fn bits(&mut self, n: usize) -> Option<u64> {
        let mut v = 0;
        for i in 0..n {
            let byte = self.data.get(self.at / 8)?;
            v |= u64::from((byte >> (self.at % 8)) & 1) << i;
            self.at += 1;
        }
        Some(v)
    }

    fn bool(&mut self) -> Option<bool> {
        self.bits(1).map(|b| b == 1)
    }

    /// A SizeHeader dimension: a 2-bit selector of 9, 13, 18 or 30 bits, plus one.
    fn dimension(&mut self) -> Option<u64> {
        let n = [9, 13, 18, 30][self.bits(2)? as usize];
        Some(self.bits(n)? + 1)
    }
}

/// Width, height and (if the metadata says) orientation of the codestream `data`
/// (starting with `FF 0A`).
fn headers(data: &[u8]) -> Option<(u64, u64, Option<u32>)> {
    let mut r = Bits {
        data: data.strip_prefix(&[0xFF, 0x0A])?,
        at: 0,
    };
    let small = r.bool()?;
    let height = if small {
        (r.bits(5)? + 1) * 8
    } else {
        r.dimension()?
    };
    // The width as a ratio of the height (§A.2, Table A.2), or its own number.
    let width = match r.bits(3)? {
        0 if small => (r.bits(5)? + 1) * 8,
        0 => r.dimension()?,
        ratio => {
            let (num, den) =
                [(1, 1), (12, 10), (4, 3), (3, 2), (16, 9), (5, 4), (2, 1)][ratio as usize - 1];
            height * num / den
        }
    };
    // ImageMetadata: all_default, then extra_fields, then the orientation − 1. Only an
    // orientation the file states is one (a default is no more a statement than a PNG's
    // silence, and exiftool reports none either).
    let orientation = match r.bool() {
        Some(false) if r.bool() == Some(true) => r.bits(3).map(|o| o as u32 + 1),
        _ => None,
    };
    Some((width, height, orientation))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::inspect::boxes::tests::bx;

    /// Writes bits least significant first.
    fn bits(fields: &[(u64, usize)]) -> Vec<u8> {
        let mut out = vec![0xFF, 0x0A];
        let mut at = 0;
        for &(v, n) in fields {
            for i in 0..n {
                if at / 8 + 2 >= out.len() {
                    out.push(0);
                }
                out[at / 8 + 2] |= (((v >> i) & 1) as u8) << (at % 8);
                at += 1;
            }
        }
        out
    }

    #[test]
    fn the_size_header_in_its_encodings() {
        // exiftool's sample: not small, 130 high (9 bits), its own width 200; its
        // metadata all default (no orientation stated).
        assert_eq!(
            headers(&[0xFF, 0x0A, 0x08, 0x04, 0x8e, 0x81]),
            Some((200, 130, None))
        );
        // Small (multiples of 8), ratio 16:9, orientation 6 in the metadata.
        let s = bits(&[(1, 1), (8, 5), (5, 3), (0, 1), (1, 1), (5, 3)]);
        assert_eq!(headers(&s), Some((128, 72, Some(6))));
        // 13-bit height 4000, ratio 4:3; all-default metadata.
        let s = bits(&[(0, 1), (1, 2), (3999, 13), (3, 3), (1, 1)]);
        assert_eq!(headers(&s), Some((5333, 4000, None)));
        // Cut short, and not a codestream.
        assert_eq!(headers(&s[..3]), None);
        assert_eq!(headers(b"\xFF\xD8"), None);
    }

    #[test]
    fn the_container_has_the_codestream_and_exif() {
        let code = bits(&[(0, 1), (0, 2), (99, 9), (7, 3), (1, 1)]);
        let tiff = b"MM\0*\0\0\0\x08";
        let exif = bx(b"Exif", &[&0u32.to_be_bytes()[..], tiff].concat());
        let sig = bx(b"JXL ", b"\r\n\x87\n");
        let f = [
            sig.clone(),
            bx(b"ftyp", b"jxl \0\0\0\0jxl "),
            exif,
            bx(b"jxlp", &[&[0, 0, 0, 0][..], &code].concat()),
        ]
        .concat();
        let out = read(View::whole(&f));
        assert_eq!(out.error, None);
        assert_eq!((out.width, out.height), (Some(200), Some(100)));
        assert_eq!(out.exif, Some(&tiff[..]));
        // A box that lies about its size: no codestream found, named.
        let mut lying = [sig.clone(), bx(b"jxlc", &code)].concat();
        lying[15] = 0xFF;
        let out = read(View::whole(&lying));
        assert!(out.error.unwrap().contains("no jxlc"));
        let cut = [sig, bx(b"jxlc", &code[..2])].concat();
        let out = read(View::whole(&cut));
        assert!(out.error.unwrap().contains("SizeHeader"));
    }
}
