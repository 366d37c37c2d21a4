//! What one image's bytes say: its format (by content), its dimensions (from the header,
//! no decode) and its EXIF fields. Pure: bytes in, facts out; a parser that panics on
//! hostile input is caught here and becomes the file's error.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use exif::{Exif, In, Tag, Value};

/// What was found in one image. Fields it does not have stay `None`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImageInfo {
    /// The format its content says (`jpeg`, `png`, …), if known.
    pub format: Option<&'static str>,
    /// Whether that disagrees with the file's extension.
    pub ext_mismatch: bool,
    /// Width in pixels, from the header.
    pub width: Option<u64>,
    /// Height in pixels, from the header.
    pub height: Option<u64>,
    /// EXIF DateTimeOriginal as `YYYY-MM-DDTHH:MM:SS[.fff][+HH:MM]`.
    pub taken: Option<String>,
    /// Camera make.
    pub make: Option<String>,
    /// Camera model.
    pub model: Option<String>,
    /// Lens model.
    pub lens: Option<String>,
    /// Orientation, 1 to 8.
    pub orientation: Option<u32>,
    /// Exposure time in seconds.
    pub exposure_time: Option<f64>,
    /// F-number.
    pub f_number: Option<f64>,
    /// ISO (PhotographicSensitivity).
    pub iso: Option<u32>,
    /// Focal length in mm.
    pub focal_length: Option<f64>,
    /// GPS latitude, signed decimal degrees.
    pub gps_lat: Option<f64>,
    /// GPS longitude, signed decimal degrees.
    pub gps_lon: Option<f64>,
    /// GPS altitude in metres, negative below sea level.
    pub gps_alt: Option<f64>,
    /// Why the content could not be (fully) understood.
    pub error: Option<String>,
}

/// The format a file's first bytes say it is.
pub fn format_of(head: &[u8]) -> Option<&'static str> {
    let at = |i: usize, s: &[u8]| head.get(i..i + s.len()) == Some(s);
    if at(0, &[0xFF, 0xD8, 0xFF]) {
        Some("jpeg")
    } else if at(0, b"\x89PNG\r\n\x1a\n") {
        Some("png")
    } else if at(0, b"GIF87a") || at(0, b"GIF89a") {
        Some("gif")
    } else if at(0, b"RIFF") && at(8, b"WEBP") {
        Some("webp")
    } else if at(0, b"BM") && head.len() >= 26 {
        Some("bmp")
    } else if at(0, b"II*\0") && at(8, b"CR\x02") {
        Some("cr2")
    } else if at(0, b"IIRO") || at(0, b"IIRS") || at(0, b"MMOR") {
        Some("orf")
    } else if at(0, b"IIU\0") {
        Some("rw2")
    } else if at(0, b"II*\0") || at(0, b"MM\0*") {
        Some("tiff")
    } else if at(4, b"ftyp") {
        let brand = head.get(8..12)?;
        match brand {
            b"avif" | b"avis" => Some("avif"),
            b"heic" | b"heix" | b"heim" | b"heis" | b"hevc" | b"hevx" | b"mif1" | b"msf1" => {
                Some("heif")
            }
            _ => None,
        }
    } else {
        None
    }
}

/// The formats a file with extension `ext` may hold (TIFF-based raw formats are TIFF
/// inside, so `.dng`, `.nef`, `.arw`, `.pef` accept it).
fn formats_for_extension(ext: &str) -> &'static [&'static str] {
    match ext.to_ascii_lowercase().as_str() {
        "jpg" | "jpeg" | "jpe" => &["jpeg"],
        "png" => &["png"],
        "gif" => &["gif"],
        "webp" => &["webp"],
        "tif" | "tiff" => &["tiff"],
        "bmp" => &["bmp"],
        "heic" | "heif" => &["heif"],
        "avif" => &["avif", "heif"],
        "dng" | "nef" | "arw" | "pef" => &["tiff"],
        "cr2" => &["cr2", "tiff"],
        "orf" => &["orf"],
        "rw2" => &["rw2"],
        _ => &[],
    }
}

/// Everything `data` says, for a file with extension `ext`: the whole file when
/// `complete`, else its first part (huge files). Never panics: a parser panic becomes the
/// error.
pub fn inspect(data: &[u8], ext: Option<&str>, complete: bool) -> ImageInfo {
    match catch_unwind(AssertUnwindSafe(|| inspect_inner(data, ext, complete))) {
        Ok(info) => info,
        Err(panic) => {
            let what = crate::sync::panic_text(&*panic);
            ImageInfo {
                format: format_of(data),
                error: Some(format!("the image parser failed: {what}")),
                ..ImageInfo::default()
            }
        }
    }
}

fn inspect_inner(data: &[u8], ext: Option<&str>, complete: bool) -> ImageInfo {
    let mut info = ImageInfo {
        format: format_of(data),
        ..ImageInfo::default()
    };
    if data.is_empty() {
        info.error = Some("empty file".into());
        return info;
    }
    let Some(format) = info.format else {
        info.ext_mismatch = ext.is_some_and(|e| !formats_for_extension(e).is_empty());
        info.error = Some("not an image this catalog knows (no known signature)".into());
        return info;
    };
    info.ext_mismatch = ext.is_some_and(|e| {
        let expected = formats_for_extension(e);
        !expected.is_empty() && !expected.contains(&format)
    });
    match imagesize::blob_size(data) {
        Ok(size) => {
            info.width = Some(size.width as u64);
            info.height = Some(size.height as u64);
        }
        Err(e) => info.error = Some(format!("no dimensions in the header: {e}")),
    }
    // Data after the end-of-image marker is common (camera trailers, motion photos); a
    // JPEG without one anywhere was cut short.
    let has_eoi = data.windows(2).skip(2).any(|w| w == [0xFF, 0xD9]);
    if format == "jpeg" && complete && !has_eoi && info.error.is_none() {
        info.error = Some("truncated JPEG (no end-of-image marker)".into());
    }
    // EXIF lives in JPEG APP1, TIFF IFDs (raw formats too), HEIF/AVIF items, PNG eXIf and
    // WebP EXIF chunks; GIF and BMP have none.
    if matches!(format, "gif" | "bmp") {
        return info;
    }
    // Read what can be read: a damaged EXIF block (an offset pointing past its end, a
    // loop) still yields the fields before the damage; the damage is the file's error.
    let mut damage: Option<String> = None;
    let exif = exif::Reader::new()
        .continue_on_error(true)
        .read_from_container(&mut Cursor::new(data))
        .or_else(|e| {
            e.distill_partial_result(|errors| {
                damage = errors
                    .first()
                    .map(|e| format!("EXIF partly unreadable: {e}"));
            })
        });
    match exif {
        Ok(exif) => fill_exif(&mut info, &exif),
        // No EXIF at all is normal.
        Err(exif::Error::NotFound(_)) => {}
        Err(e) => damage = Some(format!("unreadable EXIF: {e}")),
    }
    if info.error.is_none() {
        info.error = damage;
    }
    info
}

fn fill_exif(info: &mut ImageInfo, exif: &Exif) {
    let field = |tag| exif.get_field(tag, In::PRIMARY).map(|f| &f.value);
    info.make = field(Tag::Make).and_then(text);
    info.model = field(Tag::Model).and_then(text);
    info.lens = field(Tag::LensModel).and_then(text);
    info.orientation = field(Tag::Orientation).and_then(|v| v.get_uint(0));
    info.exposure_time = field(Tag::ExposureTime).and_then(real);
    info.f_number = field(Tag::FNumber).and_then(real);
    info.iso = field(Tag::PhotographicSensitivity).and_then(|v| v.get_uint(0));
    info.focal_length = field(Tag::FocalLength).and_then(real);
    info.taken = field(Tag::DateTimeOriginal)
        .and_then(text)
        .and_then(|date| {
            let subsec = field(Tag::SubSecTimeOriginal).and_then(text);
            let offset = field(Tag::OffsetTimeOriginal).and_then(text);
            exif_date(&date, subsec.as_deref(), offset.as_deref())
        });
    let degrees = |tag, reference, negative: u8| -> Option<f64> {
        let dms = match field(tag)? {
            Value::Rational(v) if v.len() == 3 => {
                v[0].to_f64() + v[1].to_f64() / 60.0 + v[2].to_f64() / 3600.0
            }
            _ => return None,
        };
        let sign = match field(reference) {
            Some(Value::Ascii(v)) if v.first().and_then(|s| s.first()) == Some(&negative) => -1.0,
            _ => 1.0,
        };
        dms.is_finite().then_some(sign * dms)
    };
    info.gps_lat = degrees(Tag::GPSLatitude, Tag::GPSLatitudeRef, b'S');
    info.gps_lon = degrees(Tag::GPSLongitude, Tag::GPSLongitudeRef, b'W');
    info.gps_alt = field(Tag::GPSAltitude).and_then(real).map(|alt| {
        let below =
            matches!(field(Tag::GPSAltitudeRef), Some(Value::Byte(b)) if b.first() == Some(&1));
        if below { -alt } else { alt }
    });
}

/// An ASCII field as text, trailing NULs and spaces trimmed; `None` when empty.
fn text(v: &Value) -> Option<String> {
    let Value::Ascii(parts) = v else {
        return None;
    };
    let bytes = parts.first()?;
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim_end_matches(['\0', ' ']).trim_start();
    (!s.is_empty()).then(|| s.to_string())
}

/// A rational (or integer) field as a number; `None` for 0/0 and the like.
fn real(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Rational(r) => r.first()?.to_f64(),
        Value::SRational(r) => r.first()?.to_f64(),
        Value::Short(s) => f64::from(*s.first()?),
        Value::Long(l) => f64::from(*l.first()?),
        _ => return None,
    };
    x.is_finite().then_some(x)
}

/// `YYYY:MM:DD HH:MM:SS` (+ sub-seconds, + offset) as ISO 8601.
fn exif_date(date: &str, subsec: Option<&str>, offset: Option<&str>) -> Option<String> {
    let b = date.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if b.len() < 19 || !(digits(0..4) && digits(5..7) && digits(8..10) && digits(11..13)) {
        return None;
    }
    let mut out = format!(
        "{}-{}-{}T{}",
        &date[0..4],
        &date[5..7],
        &date[8..10],
        &date[11..19]
    );
    if let Some(sub) = subsec
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
    {
        out.push('.');
        out.push_str(sub);
    }
    if let Some(off) = offset
        .map(str::trim)
        .filter(|o| o.len() == 6 && (o.starts_with('+') || o.starts_with('-')))
    {
        out.push_str(off);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_signatures() {
        assert_eq!(format_of(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("jpeg"));
        assert_eq!(format_of(b"\x89PNG\r\n\x1a\n...."), Some("png"));
        assert_eq!(format_of(b"RIFF\0\0\0\0WEBPVP8 "), Some("webp"));
        assert_eq!(format_of(b"II*\0\x08\0\0\0CR\x02\0"), Some("cr2"));
        assert_eq!(format_of(b"MM\0*\0\0\0\x08"), Some("tiff"));
        assert_eq!(format_of(b"\0\0\0\x1cftypheic"), Some("heif"));
        assert_eq!(format_of(b"\0\0\0\x1cftypavif"), Some("avif"));
        assert_eq!(format_of(b"hello"), None);
    }

    #[test]
    fn dates_become_iso_8601_with_subseconds_and_offset() {
        assert_eq!(
            exif_date("2024:05:06 07:08:09", Some("123"), Some("+02:00")).as_deref(),
            Some("2024-05-06T07:08:09.123+02:00")
        );
        assert_eq!(
            exif_date("2024:05:06 07:08:09", None, None).as_deref(),
            Some("2024-05-06T07:08:09")
        );
        assert_eq!(exif_date("    :  :     :  :  ", None, None), None);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let info = inspect(b"this is text", Some("png"), true);
        assert!(info.error.is_some());
        assert!(info.ext_mismatch);
        let info = inspect(
            &[0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF, b'E', b'x'],
            Some("jpg"),
            true,
        );
        assert_eq!(info.format, Some("jpeg"));
        assert!(info.error.is_some());
        assert!(inspect(b"", Some("jpg"), true).error.is_some());
    }
}
