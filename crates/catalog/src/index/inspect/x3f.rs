//! Sigma's X3F: a header with the image's size, and a directory (its offset in the file's
//! last four bytes) of sections: PROP (properties as UTF-16 text), IMAG and IMA2 (preview
//! images, the one starting with an APP1 segment a JPEG with the camera's EXIF).
//! Reference: exiftool's `SigmaRaw.pm`.

use super::raw::{Raw, fill_missing, jpeg_exif, unix_date};
use super::tiff::Fields;
use super::view::View;

/// The most sections read (real files have fewer than ten).
const MAX_SECTIONS: u32 = 64;
/// The most properties read (real files have about sixty).
const MAX_PROPERTIES: u32 = 1024;

/// What an X3F says. exiftool reports the embedded JpgFromRaw's frame size when there is
/// one (it is found after the header and takes the ImageWidth and ImageHeight tags), else
/// the header's; this does the same.
pub(super) fn read(view: View<'_>) -> Raw<'_> {
    let mut raw = Raw::default();
    let le32 = |at: u64| {
        view.get(at, 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let Some(version) = le32(4) else {
        raw.layout.error = Some("X3F header cut short".into());
        return raw;
    };
    // Version 4 and later moved the size further in.
    let at = if version >> 16 >= 4 { 40 } else { 28 };
    raw.size(le32(at).map(u64::from), le32(at + 4).map(u64::from));
    let mut props = Fields::default();
    let dir = view.size().checked_sub(4).and_then(&le32).map(u64::from);
    let header = dir
        .and_then(|d| view.get(d, 12))
        .filter(|h| h.starts_with(b"SECd"));
    let Some(dir) = dir.filter(|_| header.is_some()) else {
        raw.layout.error = Some("no X3F section directory".into());
        return raw;
    };
    let count = le32(dir + 8).unwrap_or(0).min(MAX_SECTIONS);
    for i in 0..u64::from(count) {
        let entry = dir + 12 + 12 * i;
        let (Some(offset), Some(len), Some(tag)) =
            (le32(entry), le32(entry + 4), view.get(entry + 8, 4))
        else {
            break;
        };
        let (offset, len) = (u64::from(offset), u64::from(len));
        match tag {
            b"IMAG" | b"IMA2" => {
                // A 28-byte image header: type 2, format 18 (JPEG).
                let jpeg = view
                    .get(offset, 16)
                    .is_some_and(|h| h == b"SECi\0\0\x02\0\x02\0\0\0\x12\0\0\0");
                if !jpeg || len < 28 {
                    continue;
                }
                let (at, len) = (offset + 28, len - 28);
                raw.jpegs.push((at, len));
                let app1 = view
                    .get(at, 4)
                    .is_some_and(|b| b == [0xFF, 0xD8, 0xFF, 0xE1]);
                if tag == b"IMA2" && app1 {
                    let (fields, size) = jpeg_exif(view, at, len);
                    fill_missing(&mut raw.fields, fields);
                    if let Some((w, h)) = size {
                        raw.size(Some(w), Some(h));
                    }
                }
            }
            b"PROP" => properties(view, offset, len, &mut props),
            _ => {}
        }
    }
    fill_missing(&mut raw.fields, Some(props));
    raw
}

/// The make, model and date among the properties of the PROP section at `at`.
fn properties(view: View<'_>, at: u64, len: u64, f: &mut Fields) {
    let Some(section) = view
        .get(at, len)
        .filter(|s| s.len() >= 24 && s.starts_with(b"SECp"))
    else {
        return;
    };
    let le32 = |i: usize| {
        section
            .get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let (Some(entries), Some(0), Some(chars)) = (le32(8), le32(12), le32(20)) else {
        return; // a character format other than UTF-16
    };
    let Some(text_at) = entries.checked_mul(8).and_then(|n| n.checked_add(24)) else {
        return;
    };
    let text = section.get(text_at..).unwrap_or_default();
    let text: Vec<u16> = text
        .chunks_exact(2)
        .take(chars)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let string = |at: usize| -> Option<String> {
        let s = text.get(at..)?;
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        Some(String::from_utf16_lossy(&s[..end]))
    };
    for i in 0..entries.min(MAX_PROPERTIES as usize) {
        let (Some(name), Some(value)) = (le32(24 + 8 * i), le32(28 + 8 * i)) else {
            break;
        };
        let (Some(name), Some(value)) = (string(name), string(value)) else {
            continue;
        };
        let value = value.trim().to_string();
        match name.as_str() {
            "CAMMANUF" => f.make = Some(value),
            "CAMMODEL" => f.model = Some(value),
            "TIME" => f.date = value.parse().ok().and_then(unix_date),
            _ => {}
        }
    }
}
