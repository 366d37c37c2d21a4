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

/// The make, model, date and exposure among the properties of the PROP section at `at`
/// (exiftool's names: CAMMANUF, CAMMODEL, TIME, SHUTTER in seconds, APERTURE, ISO and
/// FLENGTH in millimetres; EXPTIME is the sensor's integration time, not the shutter's).
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
            "SHUTTER" => f.exposure_time = number(&value),
            "APERTURE" => f.f_number = number(&value),
            "FLENGTH" => f.focal_length = number(&value),
            "ISO" => {
                f.iso = number(&value)
                    .map(f64::round)
                    .filter(|&iso| iso <= f64::from(u32::MAX))
                    .map(|iso| iso as u32);
            }
            _ => {}
        }
    }
}

/// A property's text as a number, when it is one (finite and not negative).
fn number(text: &str) -> Option<f64> {
    text.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::super::{View, inspect};

    /// A PROP section of `pairs` (name, value), UTF-16 text; `chars` overrides the
    /// character count the header states.
    fn prop(pairs: &[(&str, &str)], chars: Option<u32>) -> Vec<u8> {
        let mut text: Vec<u16> = Vec::new();
        let mut entries = Vec::new();
        for (name, value) in pairs {
            entries.extend_from_slice(&(text.len() as u32).to_le_bytes());
            text.extend(name.encode_utf16().chain([0]));
            entries.extend_from_slice(&(text.len() as u32).to_le_bytes());
            text.extend(value.encode_utf16().chain([0]));
        }
        let mut s = b"SECp\0\0\x02\0".to_vec();
        s.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
        s.extend_from_slice(&[0; 8]); // UTF-16, reserved
        s.extend_from_slice(&chars.unwrap_or(text.len() as u32).to_le_bytes());
        s.extend_from_slice(&entries);
        s.extend(text.iter().flat_map(|c| c.to_le_bytes()));
        s
    }

    /// An X3F (version 2.0, 16×32) whose only section is `section`, tagged PROP.
    fn x3f(section: &[u8]) -> Vec<u8> {
        let mut file = b"FOVb\0\0\x02\0".to_vec();
        file.resize(28, 0);
        file.extend_from_slice(&[0x10, 0, 0, 0, 0x20, 0, 0, 0]);
        let at = file.len() as u32;
        file.extend_from_slice(section);
        let dir = file.len() as u32;
        file.extend_from_slice(b"SECd\0\0\x02\0");
        file.extend_from_slice(&1u32.to_le_bytes());
        file.extend_from_slice(&at.to_le_bytes());
        file.extend_from_slice(&(section.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PROP");
        file.extend_from_slice(&dir.to_le_bytes());
        file
    }

    #[test]
    fn an_x3f_has_the_exposure_of_its_properties() {
        // As the SD10 of exiftool's sample writes them; EXPTIME is the sensor's
        // integration time in microseconds, not the exposure time.
        let file = x3f(&prop(
            &[
                ("ISO", "100"),
                ("CAMMANUF", "SIGMA"),
                ("CAMMODEL", "SIGMA SD10"),
                ("EXPTIME", "24140"),
                ("SHUTTER", "0.00929"),
                ("APERTURE", "8.35419"),
                ("FLENGTH", "30"),
            ],
            None,
        ));
        let info = inspect(View::whole(&file), Some("x3f"));
        assert_eq!(info.error, None);
        assert_eq!(info.model.as_deref(), Some("SIGMA SD10"));
        assert_eq!(info.exposure_time, Some(0.00929));
        assert_eq!(info.f_number, Some(8.35419));
        assert_eq!(info.iso, Some(100));
        assert_eq!(info.focal_length, Some(30.0));
    }

    #[test]
    fn x3f_properties_that_lie_or_are_no_numbers_are_skipped() {
        // Not numbers: nothing.
        let file = x3f(&prop(
            &[("SHUTTER", "1/100"), ("APERTURE", "inf"), ("ISO", "-5")],
            None,
        ));
        let info = inspect(View::whole(&file), Some("x3f"));
        assert_eq!(
            (info.exposure_time, info.f_number, info.iso),
            (None, None, None)
        );
        // A character count larger than the section: the text there is still read.
        let file = x3f(&prop(&[("FLENGTH", "30")], Some(u32::MAX)));
        let info = inspect(View::whole(&file), Some("x3f"));
        assert_eq!(info.focal_length, Some(30.0));
        // A count smaller than the text: the value is cut off, a name lost.
        let file = x3f(&prop(&[("FLENGTH", "30"), ("ISO", "200")], Some(9)));
        let info = inspect(View::whole(&file), Some("x3f"));
        assert_eq!((info.focal_length, info.iso), (Some(3.0), None));
        // An entry count far larger than the entries there are.
        let mut section = prop(&[("ISO", "200")], None);
        section[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        let info = inspect(View::whole(&x3f(&section)), Some("x3f"));
        assert_eq!(info.iso, None);
        assert_eq!((info.width, info.height), (Some(16), Some(32)));
    }
}
