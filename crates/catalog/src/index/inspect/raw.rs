//! Camera raw files: which raw format a file is, the size of its main image (the one
//! exiftool reports as Composite:ImageSize), its EXIF fields from wherever the format
//! keeps them, and where its largest embedded JPEG preview lies.
//!
//! The TIFF-based formats (DNG, CR2, NEF, NRW, ARW, SR2, ORF, RW2, PEF, SRW, 3FR, IIQ) are
//! read by `tiff`; CR3 through its ISO BMFF boxes; RAF through its header and the JPEG
//! it embeds; MRW through its blocks; CRW in `ciff` and X3F in `x3f`. exiftool's source
//! (`Exif.pm`'s ImageSize composite, `FujiFilm.pm`, `Canon.pm`, `MinoltaRaw.pm`,
//! `PanasonicRaw.pm`) is the reference for which size each format reports.

use super::view::View;
use super::{Layout, boxes, ciff, jpeg, tiff, x3f};

/// The raw format a TIFF structure is, from IFD0's tags (DNGVersion, Make) and, where
/// the content cannot tell, the extension; `tiff` for a plain TIFF. A `.tif` file stays
/// a TIFF whatever its Make (a scanner's or a raw converter's TIFF names the camera).
pub(super) fn tiff_format(head: &[u8], ext: Option<&str>) -> &'static str {
    let ext = ext.map(str::to_ascii_lowercase);
    let ext = ext.as_deref();
    // Phase One's IIQ has its own block, `IIII` or `MMMM`, right after the TIFF header.
    if matches!(head.get(8..12), Some(b"IIII" | b"MMMM")) {
        return "iiq";
    }
    let Ok(images) = tiff::images(head) else {
        return "tiff";
    };
    if images.dng {
        return "dng";
    }
    if matches!(ext, Some("tif" | "tiff")) {
        return "tiff";
    }
    let make = images.make.unwrap_or_default().to_ascii_uppercase();
    match make.split_whitespace().next().unwrap_or_default() {
        "NIKON" if ext == Some("nrw") => "nrw",
        "NIKON" => "nef",
        "SONY" if ext == Some("sr2") => "sr2",
        "SONY" => "arw",
        "PENTAX" | "RICOH" | "ASAHI" => "pef",
        "SAMSUNG" => "srw",
        "HASSELBLAD" => "3fr",
        "LEAF" | "PHASE" if ext == Some("iiq") => "iiq",
        _ => "tiff",
    }
}

/// What a raw file of `format` says: the layout (size, preview, fields outside EXIF,
/// damage) and its EXIF fields.
pub(super) fn read<'a>(view: View<'a>, format: &str) -> (Layout<'a>, Option<tiff::Fields>) {
    let mut raw = match format {
        "cr3" => cr3(view),
        "raf" => raf(view),
        "mrw" => mrw(view),
        "crw" => ciff::read(view),
        "x3f" => x3f::read(view),
        _ => tiff_based(view, format),
    };
    raw.layout.meta.preview = largest_jpeg(view, &raw.jpegs);
    (raw.layout, raw.fields)
}

/// What one format's reader found.
#[derive(Default)]
pub(super) struct Raw<'a> {
    pub layout: Layout<'a>,
    pub fields: Option<tiff::Fields>,
    /// The embedded JPEGs it names, as (file offset, length), unchecked.
    pub jpegs: Vec<(u64, u64)>,
}

impl Raw<'_> {
    pub fn size(&mut self, width: Option<u64>, height: Option<u64>) {
        if let (Some(w), Some(h)) = (width, height) {
            (self.layout.width, self.layout.height) = (Some(w), Some(h));
        }
    }
}

/// The largest of `jpegs` that lies inside the file and, where its first bytes were
/// kept, starts as a JPEG does (FF D8 FF); the first of equals.
fn largest_jpeg(view: View<'_>, jpegs: &[(u64, u64)]) -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64)> = None;
    for &(at, len) in jpegs {
        let inside = len >= 4 && at.checked_add(len).is_some_and(|end| end <= view.size());
        let magic = view.get(at, 3).is_none_or(|b| b == [0xFF, 0xD8, 0xFF]);
        if inside && magic && best.is_none_or(|(_, l)| len > l) {
            best = Some((at, len));
        }
    }
    best
}

/// The EXIF fields of the JPEG at `at` (RAF's preview, RW2's JpgFromRaw, X3F's), if its
/// bytes were kept, and its frame size.
pub(super) fn jpeg_exif(
    view: View<'_>,
    at: u64,
    len: u64,
) -> (Option<tiff::Fields>, Option<(u64, u64)>) {
    let Some(bytes) = view.get(at, len) else {
        return (None, None);
    };
    let layout = jpeg::read(bytes);
    let size = layout.width.zip(layout.height);
    (layout.exif.and_then(|b| tiff::read(b).ok()), size)
}

/// Fills each field of `into` that is empty from `from` (a main document's fields win
/// over an embedded JPEG's, as in exiftool).
pub(super) fn fill_missing(into: &mut Option<tiff::Fields>, from: Option<tiff::Fields>) {
    let Some(from) = from else { return };
    let Some(f) = into else {
        *into = Some(from);
        return;
    };
    macro_rules! fill {
        ($($name:ident),*) => { $( if f.$name.is_none() { f.$name = from.$name; } )* };
    }
    fill!(
        width,
        height,
        make,
        model,
        lens,
        orientation,
        exposure_time,
        f_number,
        iso,
        focal_length,
        gps_lat,
        gps_lon,
        gps_alt
    );
    // The date, its sub-seconds and its offset go together.
    if f.date.is_none() {
        (f.date, f.subsec, f.offset) = (from.date, from.subsec, from.offset);
    }
}

/// The TIFF-based formats: the file is the TIFF structure.
fn tiff_based<'a>(view: View<'a>, format: &str) -> Raw<'a> {
    let head = view.head();
    let mut raw = Raw::default();
    match tiff::read(head) {
        Ok(f) => raw.fields = Some(f),
        Err(e) => {
            raw.layout.error = Some(format!("unreadable TIFF structure: {e}"));
            return raw;
        }
    }
    let images = match tiff::images(head) {
        Ok(images) => images,
        Err(e) => {
            raw.layout.error = Some(format!("unreadable TIFF structure: {e}"));
            return raw;
        }
    };
    raw.size(images.width, images.height);
    // exiftool reports ExifImageWidth and ExifImageHeight for CR2 and IIQ (their IFD0 is
    // a preview or a stub), when both are set.
    if matches!(format, "cr2" | "iiq") {
        raw.size(
            images.exif_width.filter(|&w| w > 0),
            images.exif_height.filter(|&h| h > 0),
        );
    }
    // Panasonic's IFD0 has no ImageWidth: the image is the sensor inside its borders.
    if format == "rw2"
        && let [Some(top), Some(left), Some(bottom), Some(right)] = images.borders
    {
        raw.size(right.checked_sub(left), bottom.checked_sub(top));
    }
    if let Some(f) = raw.fields.as_mut()
        && images.orientation.is_some()
    {
        // Orientation, like the size, is the full-resolution image's when it has one.
        f.orientation = images.orientation;
    }
    // RW2 keeps the date and exposure in the EXIF of its JpgFromRaw.
    if let Some((at, len)) = images.jpg_from_raw {
        fill_missing(&mut raw.fields, jpeg_exif(view, at, len).0);
    }
    raw.jpegs = images.jpegs;
    raw
}

/// CR3's `moov` box: Canon's metadata box, whose CMT1, CMT2 and CMT4 boxes are TIFF
/// structures (IFD0, the Exif IFD, the GPS IFD) and whose THMB is a small JPEG.
const CANON_UUID: [u8; 16] = [
    0x85, 0xc0, 0xb6, 0x87, 0x82, 0x0f, 0x11, 0xe0, 0x81, 0x11, 0xf4, 0xce, 0x46, 0x2b, 0x6a, 0x48,
];
/// CR3's top-level box around the PRVW preview.
const PREVIEW_UUID: [u8; 16] = [
    0xea, 0xf4, 0x2b, 0x5e, 0x1c, 0x98, 0x4b, 0x88, 0xb9, 0xfb, 0xb7, 0xdc, 0x40, 0x6e, 0x4d, 0x16,
];

fn cr3(view: View<'_>) -> Raw<'_> {
    let mut raw = Raw::default();
    let be32 = |at: u64| {
        view.get(at, 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    for top in boxes::boxes(view, 0, view.size()).map_while(Result::ok) {
        if &top.kind == b"moov" {
            let canon = boxes::boxes(view, top.body, top.end)
                .map_while(Result::ok)
                .find(|b| b.uuid == Some(CANON_UUID));
            let Some(canon) = canon else { continue };
            let (mut ifd0, mut exif, mut gps) = (None, None, None);
            for b in boxes::boxes(view, canon.body, canon.end).map_while(Result::ok) {
                let payload = b.payload(&view);
                match &b.kind {
                    b"CMT1" => ifd0 = payload.and_then(|p| tiff::read(p).ok()),
                    b"CMT2" => exif = payload.and_then(|p| tiff::read(p).ok()),
                    b"CMT4" => gps = payload.and_then(|p| tiff::read_gps(p).ok()),
                    // Version and flags, width and height, the JPEG's length, two
                    // more shorts, then the JPEG.
                    b"THMB" => {
                        if let Some(len) = be32(b.body + 8) {
                            raw.jpegs.push((b.body + 16, u64::from(len)));
                        }
                    }
                    _ => {}
                }
            }
            // CMT2's IFD0 is the Exif IFD: its date and exposure, not its (absent) make.
            if let (Some(main), Some(exif)) = (ifd0.as_mut(), exif) {
                main.exposure_time = exif.exposure_time;
                main.f_number = exif.f_number;
                main.iso = exif.iso;
                main.focal_length = exif.focal_length;
                main.lens = exif.lens;
                (main.date, main.subsec, main.offset) = (exif.date, exif.subsec, exif.offset);
            }
            if let Some(f) = ifd0.as_ref() {
                raw.size(f.width, f.height);
            } else {
                raw.layout.error = Some("no CMT1 (IFD0) box in the CR3 metadata".into());
            }
            fill_missing(&mut ifd0, gps);
            raw.fields = ifd0;
        } else if top.uuid == Some(PREVIEW_UUID) {
            // Eight bytes, then the PRVW box: four bytes, a short, width and height,
            // a short, the JPEG's length, then the JPEG.
            let prvw = boxes::find(view, top.body + 8, top.end, b"PRVW");
            if let Some(p) = prvw
                && let Some(len) = be32(p.body + 12)
            {
                let len = u64::from(len).min(p.end.saturating_sub(p.body + 16));
                raw.jpegs.push((p.body + 16, len));
            }
        }
    }
    if raw.fields.is_none() && raw.layout.error.is_none() {
        raw.layout.error = Some("no Canon metadata box in the CR3's moov".into());
    }
    raw
}

/// RAF: a header with the embedded JPEG's place (whose EXIF has the camera's fields) and
/// directories of Fuji's own records; exiftool reports RawImageCroppedSize (0x111) of
/// the first that has it, else the JPEG's size.
fn raf(view: View<'_>) -> Raw<'_> {
    let mut raw = Raw::default();
    let be32 = |at: u64| {
        view.get(at, 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let be16 = |at: u64| view.get(at, 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let (Some(jpeg_at), Some(jpeg_len)) = (be32(84), be32(88)) else {
        raw.layout.error = Some("RAF header cut short".into());
        return raw;
    };
    let (jpeg_at, jpeg_len) = (u64::from(jpeg_at), u64::from(jpeg_len));
    raw.jpegs.push((jpeg_at, jpeg_len));
    let (fields, jpeg_size) = jpeg_exif(view, jpeg_at, jpeg_len);
    raw.fields = fields;
    let mut cropped = None;
    // The directories' pointers at 0x5C and 0x78, if the header reaches that far.
    for pointer in [0x5C, 0x78] {
        if pointer >= jpeg_at || cropped.is_some() {
            break;
        }
        let Some(mut at) = be32(pointer).filter(|&s| s != 0).map(u64::from) else {
            continue;
        };
        let count = be32(at).unwrap_or(0);
        if count >= 256 {
            continue;
        }
        at += 4;
        for _ in 0..count {
            let (Some(tag), Some(len)) = (be16(at), be16(at + 2)) else {
                break;
            };
            if tag == 0x111 && len == 4 {
                // Height first, then width.
                cropped = be16(at + 6).zip(be16(at + 4));
                break;
            }
            at += 4 + u64::from(len);
        }
    }
    match cropped.filter(|&(w, h)| w > 0 && h > 0) {
        Some((w, h)) => raw.size(Some(u64::from(w)), Some(u64::from(h))),
        None => {
            if let Some((w, h)) = jpeg_size {
                raw.size(Some(w), Some(h));
            }
        }
    }
    raw
}

/// MRW: blocks after an `\0MRM` header; PRD has the image's size, TTW is a TIFF
/// structure with the EXIF.
fn mrw(view: View<'_>) -> Raw<'_> {
    let mut raw = Raw::default();
    let be32 = |at: u64| {
        view.get(at, 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let be16 = |at: u64| {
        view.get(at, 2)
            .map(|b| u64::from(u16::from_be_bytes([b[0], b[1]])))
    };
    let end = be32(4).map_or(0, |l| 8 + u64::from(l)).min(view.size());
    let mut at = 8;
    for _ in 0..64 {
        if at + 8 > end {
            break;
        }
        let (Some(kind), Some(len)) = (view.get(at, 4), be32(at + 4)) else {
            break;
        };
        let body = at + 8;
        match kind {
            // Firmware (8 bytes), sensor height and width, image height and width.
            b"\0PRD" => raw.size(be16(body + 14), be16(body + 12)),
            b"\0TTW" => {
                raw.fields = view
                    .get(body, u64::from(len))
                    .and_then(|t| tiff::read(t).ok());
            }
            _ => {}
        }
        at = body + u64::from(len);
    }
    if raw.layout.width.is_none() {
        raw.layout.error = Some("no PRD block in the MRW header".into());
    }
    raw
}

/// `YYYY:MM:DD HH:MM:SS` (UTC) for seconds since 1970, as exiftool's ConvertUnixTime
/// writes the dates CRW and X3F keep as numbers.
pub(super) fn unix_date(seconds: u64) -> Option<String> {
    let days = i64::try_from(seconds / 86_400).ok()?;
    let rest = seconds % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year <= 9999).then(|| {
        format!(
            "{year:04}:{month:02}:{day:02} {:02}:{:02}:{:02}",
            rest / 3600,
            rest / 60 % 60,
            rest % 60
        )
    })
}
#[cfg(test)]
