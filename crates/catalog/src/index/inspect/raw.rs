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
use crate::index::formats::{self, RawReader};

/// The raw format a TIFF structure is, from IFD0's tags (DNGVersion, Make) and, where
/// the content cannot tell, the extension; `tiff` for a plain TIFF. A `.tif` file stays
/// a TIFF whatever its Make (a scanner's or a raw converter's TIFF names the camera).
/// With it, the [`tiff::images`] of `head` when they were parsed to tell (not for an
/// IIQ), for the readers after it not to parse them again.
pub(super) fn tiff_format(head: &[u8], ext: Option<&str>) -> (&'static str, Option<tiff::Images>) {
    let ext = ext.map(str::to_ascii_lowercase);
    let ext = ext.as_deref();
    // Phase One's IIQ has its own block, `IIII` or `MMMM`, right after the TIFF header.
    if matches!(head.get(8..12), Some(b"IIII" | b"MMMM")) {
        return ("iiq", None);
    }
    let Ok(images) = tiff::images(head) else {
        return ("tiff", None);
    };
    let format = if images.dng {
        "dng"
    } else if !formats::raw_extension(ext) {
        // A `.tif` stays a TIFF whatever camera its Make names (scanners and converters
        // write it), and so does a file whose extension names no raw format (a `.heic`).
        "tiff"
    } else {
        // Which Make names which format: `formats::FORMATS` (`Format::make`).
        formats::by_make(images.make.as_deref().unwrap_or_default(), ext).map_or("tiff", |f| f.name)
    };
    (format, Some(images))
}

/// What a raw file of `format` says: the layout (size, preview, fields outside EXIF,
/// damage) and its EXIF fields. `tiff_images` are the [`tiff::images`] of its head where
/// [`tiff_format`] parsed them; a TIFF-based file's are handed back in the layout.
pub(super) fn read<'a>(
    view: View<'a>,
    reader: RawReader,
    format: &str,
    tiff_images: Option<tiff::Images>,
) -> (Layout<'a>, Option<tiff::Fields>) {
    let mut raw = match reader {
        RawReader::Cr3 => cr3(view),
        RawReader::Raf => raf(view),
        RawReader::Mrw => mrw(view),
        RawReader::Crw => ciff::read(view),
        RawReader::X3f => x3f::read(view),
        RawReader::Tiff => tiff_based(view, format, tiff_images),
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

/// The TIFF-based formats: the file is the TIFF structure. `images` is its [`tiff::images`]
/// when already parsed; the layout keeps them for the integrity verdict.
fn tiff_based<'a>(view: View<'a>, format: &str, images: Option<tiff::Images>) -> Raw<'a> {
    let head = view.head();
    let mut raw = Raw::default();
    match tiff::read(head) {
        Ok(f) => raw.fields = Some(f),
        Err(e) => {
            raw.layout.error = Some(format!("unreadable TIFF structure: {e}"));
            return raw;
        }
    }
    let images = match images.map_or_else(|| tiff::images(head), Ok) {
        Ok(images) => images,
        Err(e) => {
            raw.layout.error = Some(format!("unreadable TIFF structure: {e}"));
            return raw;
        }
    };
    from_images(view, format, &images, &mut raw);
    raw.layout.tiff_images = Some(images);
    raw
}

/// The size, orientation and embedded JPEGs a TIFF-based raw file's `images` say.
fn from_images(view: View<'_>, format: &str, images: &tiff::Images, raw: &mut Raw<'_>) {
    let head = view.head();
    // A fragment too short to hold its main image (a cut file, a NEF's first sectors):
    // the only size read is a thumbnail's, and a directory lies past the end. No size is
    // made up from the thumbnail; the file is said to be cut short.
    if images.thumbnail_sized
        && let Some(&at) = images.past_the_end.iter().find(|&&at| at >= view.size())
    {
        raw.layout.error = Some(format!(
            "cut short: a directory at byte {at} lies past the end ({} bytes), only a \
             thumbnail's size was read",
            view.size()
        ));
        return;
    }
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
    // Phase One keeps the lens in its own directory, the IIQ's maker note; the Exif
    // IFD's LensModel, where there is one, wins (exiftool reads it later).
    if format == "iiq"
        && let Some(f) = raw.fields.as_mut()
        && f.lens.is_none()
    {
        f.lens = images
            .maker_note
            .and_then(|(at, len)| {
                let at = usize::try_from(at).ok()?;
                head.get(at..at.checked_add(usize::try_from(len).ok()?)?)
            })
            .and_then(phase_one_lens);
    }
    raw.jpegs.clone_from(&images.jpegs);
}

/// The LensModel (tag 0x412) of Phase One's directory `note` (exiftool's `PhaseOne.pm`):
/// `IIII` and `?waR` (or `MMMM` and `Raw?`), the directory's offset at byte 8; there, a
/// count and four unused bytes, then 16-byte entries of tag, value size in bytes (1:
/// text, 2, 4), byte count, and the value itself (up to four bytes) or its offset. As
/// in exiftool, a count outside 2 to 300 or a directory past the end is no directory,
/// and an entry whose value lies past the end ends the reading.
fn phase_one_lens(note: &[u8]) -> Option<String> {
    let little = match note.get(..8)? {
        [b'I', b'I', b'I', b'I', _, b'w', b'a', b'R'] => true,
        [b'M', b'M', b'M', b'M', b'R', b'a', b'w', _] => false,
        _ => return None,
    };
    let u32_at = |at: usize| -> Option<usize> {
        let b: [u8; 4] = note.get(at..at.checked_add(4)?)?.try_into().ok()?;
        let v = if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        };
        usize::try_from(v).ok()
    };
    let dir = u32_at(8)?;
    if dir.checked_add(8)? > note.len() {
        return None;
    }
    let count = u32_at(dir)?;
    let end = count.checked_mul(16)?.checked_add(dir + 8)?;
    if !(2..=300).contains(&count) || end > note.len() {
        return None;
    }
    for i in 0..count {
        let entry = dir + 8 + 16 * i;
        let (tag, size) = (u32_at(entry)?, u32_at(entry + 8)?);
        let at = if size > 4 {
            let at = u32_at(entry + 12)?;
            if size > 0x7FFF_FFFF || at.checked_add(size)? > note.len() {
                return None;
            }
            at
        } else {
            entry + 12
        };
        if tag == 0x412 {
            let text = note.get(at..at + size)?;
            let text = text.split(|&b| b == 0).next().unwrap_or_default();
            let text = String::from_utf8_lossy(text).trim().to_string();
            return (!text.is_empty()).then_some(text);
        }
    }
    None
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
    let t = crate::index::taken::Taken::from_unix(i64::try_from(seconds).ok()?, false)?;
    // `YYYY-MM-DDTHH:MM:SS` as EXIF writes it; a year past 9999 is no date.
    Some(t.to_string().replacen('-', ":", 2).replacen('T', " ", 1))
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{View, inspect};

    /// One TIFF entry (little-endian): tag, type, count, value bytes.
    type Ent = (u16, u16, u32, Vec<u8>);

    fn short(tag: u16, v: u16) -> Ent {
        (tag, 3, 1, v.to_le_bytes().to_vec())
    }

    fn long(tag: u16, v: u32) -> Ent {
        (tag, 4, 1, v.to_le_bytes().to_vec())
    }

    fn ascii(tag: u16, s: &str) -> Ent {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        (tag, 2, v.len() as u32, v)
    }

    /// Where IFDs of `counts` entries lie when laid out one after another from `start`.
    fn offsets(start: usize, counts: &[usize]) -> Vec<u32> {
        let mut at = start;
        counts
            .iter()
            .map(|n| {
                let here = at as u32;
                at += 2 + 12 * n + 4;
                here
            })
            .collect()
    }

    /// A little-endian TIFF structure: `header` (byte order, magic, IFD0's offset, maybe
    /// more), then `ifds` one after another (IFD i linked to `next[i]`, 0 for none), then
    /// the values longer than four bytes, then `tail`.
    pub(in crate::index::inspect) fn tiff(
        header: &[u8],
        ifds: &[Vec<Ent>],
        next: &[u32],
        tail: &[u8],
    ) -> Vec<u8> {
        let ifds_end = header.len() + ifds.iter().map(|e| 2 + 12 * e.len() + 4).sum::<usize>();
        let mut out = header.to_vec();
        let mut extra = Vec::new();
        for (i, entries) in ifds.iter().enumerate() {
            out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
            for (tag, kind, count, value) in entries {
                out.extend_from_slice(&tag.to_le_bytes());
                out.extend_from_slice(&kind.to_le_bytes());
                out.extend_from_slice(&count.to_le_bytes());
                if value.len() <= 4 {
                    let mut v = value.clone();
                    v.resize(4, 0);
                    out.extend_from_slice(&v);
                } else {
                    out.extend_from_slice(&((ifds_end + extra.len()) as u32).to_le_bytes());
                    extra.extend_from_slice(value);
                }
            }
            out.extend_from_slice(&next.get(i).copied().unwrap_or(0).to_le_bytes());
        }
        out.extend_from_slice(&extra);
        out.extend_from_slice(tail);
        out
    }

    /// A JPEG of `width`×`height` with an APP1 EXIF segment holding `exif` (if any),
    /// padded with scan data to `len` bytes at least.
    fn jpeg(width: u16, height: u16, exif: &[u8], len: usize) -> Vec<u8> {
        let mut j = vec![0xFF, 0xD8];
        if !exif.is_empty() {
            j.extend_from_slice(&[0xFF, 0xE1]);
            j.extend_from_slice(&((exif.len() + 8) as u16).to_be_bytes());
            j.extend_from_slice(b"Exif\0\0");
            j.extend_from_slice(exif);
        }
        j.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8]);
        j.extend_from_slice(&height.to_be_bytes());
        j.extend_from_slice(&width.to_be_bytes());
        j.extend_from_slice(&[1, 1, 0x11, 0, 0xFF, 0xDA, 0, 2]);
        j.resize(len.max(j.len() + 2) - 2, 0x55);
        j.extend_from_slice(&[0xFF, 0xD9]);
        j
    }

    const II: &[u8] = b"II*\0\x08\0\0\0";

    #[test]
    fn a_dng_is_as_large_as_its_full_resolution_subifd_and_its_largest_jpeg_is_the_preview() {
        let at = offsets(8, &[9, 6, 6]);
        // Build once to learn where the tail (the two JPEGs) starts, then for real.
        let build = |tail_start: u32| {
            let ifd0 = vec![
                long(0xFE, 1),
                short(0x100, 256),
                short(0x101, 171),
                ascii(0x10F, "Canon"),
                short(0x112, 8),
                long(0x201, tail_start),
                long(0x202, 300),
                (0x14A, 4, 2, [at[1], at[2]].map(u32::to_le_bytes).concat()),
                (0xC612, 1, 4, vec![1, 4, 0, 0]),
            ];
            let raw = vec![
                long(0xFE, 0),
                short(0x100, 3516),
                short(0x101, 2328),
                short(0x103, 7),
                short(0x106, 32803),
                long(0x111, 0),
            ];
            let preview = vec![
                long(0xFE, 1),
                short(0x100, 1024),
                short(0x101, 683),
                short(0x103, 7),
                long(0x111, tail_start + 300),
                long(0x117, 2000),
            ];
            tiff(
                II,
                &[ifd0, raw, preview],
                &[],
                &[jpeg(160, 120, &[], 300), jpeg(1024, 683, &[], 2000)].concat(),
            )
        };
        let probe = build(0);
        let start = (probe.len() - 2300) as u32;
        let file = build(start);
        let info = inspect(View::whole(&file), Some("dng"));
        assert_eq!(info.format, Some("dng"));
        assert_eq!(info.kind, Some("raw"));
        assert_eq!((info.width, info.height), (Some(3516), Some(2328)));
        assert_eq!(info.make.as_deref(), Some("Canon"));
        assert_eq!(info.orientation, Some(8));
        assert_eq!(info.preview, Some((u64::from(start) + 300, 2000)));
        assert_eq!(info.error, None);
    }

    #[test]
    fn a_nef_is_as_large_as_its_raw_subifd_and_a_preview_past_the_end_is_ignored() {
        let at = offsets(8, &[7, 4, 4]);
        let build = |tail_start: u32| {
            let ifd0 = vec![
                long(0xFE, 1),
                short(0x100, 160),
                short(0x101, 120),
                ascii(0x10F, "NIKON CORPORATION"),
                (0x14A, 4, 2, [at[1], at[2]].map(u32::to_le_bytes).concat()),
                // A JPEG that claims more bytes than the file has.
                long(0x201, tail_start),
            ];
            let jpg_from_raw = vec![
                long(0xFE, 1),
                short(0x103, 6),
                long(0x201, tail_start),
                long(0x202, 500),
            ];
            let raw = vec![
                long(0xFE, 0),
                short(0x100, 3040),
                short(0x101, 2014),
                short(0x103, 34713),
            ];
            let mut ifd0 = ifd0;
            ifd0.push(long(0x202, 1_000_000));
            tiff(II, &[ifd0, jpg_from_raw, raw], &[], &jpeg(8, 8, &[], 500))
        };
        let probe = build(0);
        let start = (probe.len() - 500) as u32;
        let file = build(start);
        let info = inspect(View::whole(&file), Some("NEF"));
        assert_eq!(info.format, Some("nef"));
        assert_eq!((info.width, info.height), (Some(3040), Some(2014)));
        assert_eq!(info.preview, Some((u64::from(start), 500)));
        // The same TIFF named .tif stays a TIFF of IFD0's size.
        let info = inspect(View::whole(&file), Some("tif"));
        assert_eq!(info.format, Some("tiff"));
        assert_eq!((info.width, info.height), (Some(160), Some(120)));
    }

    #[test]
    fn a_fragment_too_short_for_its_main_image_is_not_sized_from_its_thumbnail() {
        // A NEF's first bytes: IFD0 (the 160×120 thumbnail) whose SubIFD, the raw image,
        // lies past the end.
        let ifd0 = |sub: u32| {
            vec![
                long(0xFE, 1),
                short(0x100, 160),
                short(0x101, 120),
                ascii(0x10F, "NIKON"),
                long(0x14A, sub),
            ]
        };
        let cut = tiff(II, &[ifd0(100_000)], &[], &[]);
        let info = inspect(View::whole(&cut), Some("NEF"));
        assert_eq!((info.width, info.height), (None, None));
        let error = info.error.unwrap_or_default();
        assert!(error.contains("cut short"), "{error}");
        // Whole, the same directory with its SubIFD in the file is sized from the SubIFD.
        let at = offsets(8, &[5, 3]);
        let raw = vec![long(0xFE, 0), short(0x100, 3040), short(0x101, 2014)];
        let whole = tiff(II, &[ifd0(at[1]), raw], &[], &[]);
        let info = inspect(View::whole(&whole), Some("NEF"));
        assert_eq!((info.width, info.height), (Some(3040), Some(2014)));
        assert_eq!(info.error, None);
    }

    #[test]
    fn an_rw2_is_the_sensor_inside_its_borders_with_the_date_from_its_jpg_from_raw() {
        let exif = tiff(
            II,
            &[
                vec![long(0x8769, 26)],
                vec![ascii(0x9003, "2008:08:06 15:21:56")],
            ],
            &[],
            &[],
        );
        let jpg = jpeg(1920, 1440, &exif, 400);
        let file = tiff(
            b"IIU\0\x08\0\0\0",
            &[vec![
                short(4, 6),
                short(5, 8),
                short(6, 2742),
                short(7, 3656),
                ascii(0x10F, "Panasonic"),
                (0x2E, 7, jpg.len() as u32, jpg.clone()),
            ]],
            &[],
            &[],
        );
        let info = inspect(View::whole(&file), Some("rw2"));
        assert_eq!(info.format, Some("rw2"));
        assert_eq!((info.width, info.height), (Some(3648), Some(2736)));
        assert_eq!(info.make.as_deref(), Some("Panasonic"));
        assert_eq!(info.taken.as_deref(), Some("2008-08-06T15:21:56"));
        let at = file.len() - jpg.len();
        assert_eq!(info.preview, Some((at as u64, jpg.len() as u64)));
    }

    #[test]
    fn a_cr2_is_as_large_as_its_exif_image_size() {
        let header = b"II*\0\x10\0\0\0CR\x02\0\0\0\0\0";
        let at = offsets(16, &[3, 2]);
        let file = tiff(
            header,
            &[
                vec![short(0x100, 1536), short(0x101, 1024), long(0x8769, at[1])],
                vec![short(0xA002, 3456), short(0xA003, 2304)],
            ],
            &[],
            &[],
        );
        let info = inspect(View::whole(&file), Some("cr2"));
        assert_eq!(info.format, Some("cr2"));
        assert_eq!((info.width, info.height), (Some(3456), Some(2304)));
    }

    #[test]
    fn a_raf_is_its_cropped_size_with_the_fields_of_its_jpeg() {
        let exif = tiff(
            II,
            &[vec![ascii(0x10F, "FUJIFILM"), short(0x112, 6)]],
            &[],
            &[],
        );
        let jpg = jpeg(1440, 960, &exif, 600);
        let mut file = b"FUJIFILMCCD-RAW 0201FF392201".to_vec();
        file.resize(0x100, 0);
        file[84..88].copy_from_slice(&0x200u32.to_be_bytes());
        file[88..92].copy_from_slice(&(jpg.len() as u32).to_be_bytes());
        file[0x5C..0x60].copy_from_slice(&0x100u32.to_be_bytes());
        // Two records: the full size (height, width), then the cropped size.
        file.extend_from_slice(&2u32.to_be_bytes());
        for (tag, h, w) in [(0x100u16, 1444u16, 4352u16), (0x111, 1424, 4256)] {
            file.extend_from_slice(&tag.to_be_bytes());
            file.extend_from_slice(&4u16.to_be_bytes());
            file.extend_from_slice(&h.to_be_bytes());
            file.extend_from_slice(&w.to_be_bytes());
        }
        file.resize(0x200, 0);
        file.extend_from_slice(&jpg);
        let info = inspect(View::whole(&file), Some("raf"));
        assert_eq!(info.format, Some("raf"));
        assert_eq!((info.width, info.height), (Some(4256), Some(1424)));
        assert_eq!(info.make.as_deref(), Some("FUJIFILM"));
        assert_eq!(info.orientation, Some(6));
        assert_eq!(info.preview, Some((0x200, jpg.len() as u64)));
        // Only the head kept: the preview's place is known, its bytes are not.
        let head = View::new(&file[..0x180], &[], file.len() as u64);
        let info = inspect(head, Some("raf"));
        assert_eq!((info.width, info.height), (Some(4256), Some(1424)));
        assert_eq!(info.preview, Some((0x200, jpg.len() as u64)));
    }

    /// A CIFF heap of `records` (tag, value), each value stored after the one before,
    /// inline when the tag has the 0x4000 flag; then the directory and its offset.
    fn heap(records: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut data = Vec::new();
        let mut dir = (records.len() as u16).to_le_bytes().to_vec();
        for (tag, value) in records {
            dir.extend_from_slice(&tag.to_le_bytes());
            if tag & 0x4000 != 0 {
                let mut v = value.clone();
                v.resize(8, 0);
                dir.extend_from_slice(&v);
            } else {
                dir.extend_from_slice(&(value.len() as u32).to_le_bytes());
                dir.extend_from_slice(&(data.len() as u32).to_le_bytes());
                data.extend_from_slice(value);
            }
        }
        let at = data.len() as u32;
        data.extend_from_slice(&dir);
        data.extend_from_slice(&at.to_le_bytes());
        data
    }

    #[test]
    fn a_crw_has_the_size_make_date_and_jpeg_of_its_ciff_records() {
        let info_record = [3072u32, 2048, 0, 0].map(u32::to_le_bytes).concat();
        // 2003-11-10 17:39:26 UTC.
        let stamp = 1_068_485_966u32.to_le_bytes().to_vec();
        let inner = heap(&[(0x1810 | 0x1000, info_record), (0x180E | 0x4000, stamp)]);
        let jpg = jpeg(2048, 1360, &[], 700);
        let root = heap(&[
            (0x080A, b"Canon\0Canon EOS DIGITAL REBEL\0".to_vec()),
            (0x300A, inner),
            (0x2007, jpg.clone()),
        ]);
        let mut file = b"II\x1a\0\0\0HEAPCCDR\x02\0\x01\0\0\0\0\0\0\0\0\0".to_vec();
        file.extend_from_slice(&root);
        let info = inspect(View::whole(&file), Some("crw"));
        assert_eq!(info.format, Some("crw"));
        assert_eq!((info.width, info.height), (Some(3072), Some(2048)));
        assert_eq!(info.make.as_deref(), Some("Canon"));
        assert_eq!(info.model.as_deref(), Some("Canon EOS DIGITAL REBEL"));
        assert_eq!(info.taken.as_deref(), Some("2003-11-10T17:39:26"));
        let found = memchr::memmem::find(&file, &jpg).unwrap() as u64;
        assert_eq!(info.preview, Some((found, jpg.len() as u64)));
    }

    /// A CRW whose root heap holds the make and model and a heap of `records`.
    pub(in crate::index::inspect) fn crw(model: &str, records: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let info_record = [3072u32, 2048, 0, 0].map(u32::to_le_bytes).concat();
        let mut inner = vec![(0x1810 | 0x1000, info_record)];
        inner.extend_from_slice(records);
        let root = heap(&[
            (0x080A, format!("Canon\0{model}\0").into_bytes()),
            (0x300A, heap(&inner)),
        ]);
        let mut file = b"II\x1a\0\0\0HEAPCCDR\x02\0\x01\0\0\0\0\0\0\0\0\0".to_vec();
        file.extend_from_slice(&root);
        file
    }

    /// Canon's binary record of 16-bit values: `set` (index, value), the rest zero, with
    /// its byte count first as Canon writes it.
    fn canon_record(len: usize, set: &[(usize, i16)]) -> Vec<u8> {
        let mut values = vec![0i16; len];
        values[0] = (2 * len) as i16;
        for &(i, v) in set {
            values[i] = v;
        }
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() <= 1e-12 * b)
    }

    #[test]
    fn a_crw_has_the_exposure_of_canons_shot_info_camera_settings_and_focal_length() {
        // As a PowerShot S40 writes them: FNumber code 99, ExposureTime code 126,
        // CameraISO 17 (ISO 100), 32 focal units a millimetre and a focal length of 227
        // (held in the directory entry, tag 0x5029).
        let focal = [0u16, 227, 0, 0].map(u16::to_le_bytes).concat();
        let file = crw(
            "Canon PowerShot S40",
            &[
                (
                    0x102A,
                    canon_record(34, &[(1, 0), (2, 160), (21, 99), (22, 126)]),
                ),
                (0x102D, canon_record(46, &[(16, 17), (25, 32)])),
                (0x5029, focal),
            ],
        );
        let info = inspect(View::whole(&file), Some("crw"));
        assert_eq!(info.error, None);
        assert!(close(info.f_number, 2.921_835_588_361_29), "{info:?}");
        assert!(
            close(info.exposure_time, 0.065_267_111_401_713_4),
            "{info:?}"
        );
        assert_eq!(info.iso, Some(100));
        assert_eq!(info.focal_length, Some(7.093_75));
    }

    #[test]
    fn a_crw_without_a_numeric_camera_iso_has_base_iso_times_auto_iso() {
        // The Rebel of exiftool's sample: CameraISO 0 (n/a), BaseISO code 160 (100),
        // AutoISO 0 (100 %); FNumber code 116 (3 and two thirds stops), ExposureTime
        // 192 (6 stops: 1/64 s); no FocalUnits, so millimetres.
        let focal = [0u16, 24, 0, 0].map(u16::to_le_bytes).concat();
        let file = crw(
            "Canon EOS DIGITAL REBEL",
            &[
                (0x102A, canon_record(34, &[(2, 160), (21, 116), (22, 192)])),
                (0x102D, canon_record(46, &[(16, 0)])),
                (0x1029, focal),
            ],
        );
        let info = inspect(View::whole(&file), Some("crw"));
        assert!(close(info.f_number, 3.563_594_872_561_36), "{info:?}");
        assert!(close(info.exposure_time, 0.015_625), "{info:?}");
        assert_eq!(info.iso, Some(100));
        assert_eq!(info.focal_length, Some(24.0));
        // AutoISO of one stop up doubles it; CameraISO with bit 0x4000 is the number.
        let file = crw(
            "Canon EOS D60",
            &[
                (0x102A, canon_record(34, &[(1, 32), (2, 160)])),
                (0x102D, canon_record(46, &[(16, 0x4000 | 400)])),
            ],
        );
        let info = inspect(View::whole(&file), Some("crw"));
        assert_eq!(info.iso, Some(400));
        let file = crw(
            "Canon EOS D60",
            &[(0x102A, canon_record(34, &[(1, 32), (2, 160)]))],
        );
        let info = inspect(View::whole(&file), Some("crw"));
        assert_eq!(info.iso, Some(200));
        // Zero in ExposureTime is one second in a CRW; the 20D counts in other units.
        assert!(close(info.exposure_time, 1.0), "{info:?}");
        assert_eq!((info.f_number, info.focal_length), (None, None));
        let file = crw("Canon EOS 20D", &[(0x102A, canon_record(34, &[(22, 192)]))]);
        let info = inspect(View::whole(&file), Some("crw"));
        assert!(
            close(info.exposure_time, 0.015_625 * 1000.0 / 32.0),
            "{info:?}"
        );
    }

    #[test]
    fn short_or_lying_canon_records_give_only_what_they_hold() {
        // A ShotInfo of ten values has no FNumber or ExposureTime, and a BaseISO of zero
        // is none: no ISO either.
        let file = crw(
            "Canon PowerShot S40",
            &[(0x102A, canon_record(10, &[(1, 32)]))],
        );
        let info = inspect(View::whole(&file), Some("crw"));
        assert_eq!(info.error, None);
        assert_eq!(
            (info.f_number, info.exposure_time, info.iso),
            (None, None, None)
        );
        // A ShotInfo that claims more bytes than its heap holds is skipped.
        let mut file = crw(
            "Canon PowerShot S40",
            &[(0x102A, canon_record(34, &[(2, 160), (21, 99), (22, 126)]))],
        );
        let shot = memchr::memmem::find(&file, &0x102Au16.to_le_bytes()).unwrap();
        file[shot + 2..shot + 6].copy_from_slice(&u32::MAX.to_le_bytes());
        let info = inspect(View::whole(&file), Some("crw"));
        assert_eq!(
            (info.width, info.f_number, info.iso),
            (Some(3072), None, None)
        );
    }

    /// A little-endian Phase One directory of `entries` (tag, value size, value): the
    /// header, the values longer than four bytes, then the directory.
    fn phase_one(entries: &[(u32, u32, Vec<u8>)]) -> Vec<u8> {
        let mut values = Vec::new();
        let mut dir = (entries.len() as u32).to_le_bytes().to_vec();
        dir.extend_from_slice(&[0; 4]);
        for (tag, size, value) in entries {
            dir.extend_from_slice(&tag.to_le_bytes());
            dir.extend_from_slice(&size.to_le_bytes());
            dir.extend_from_slice(&(value.len() as u32).to_le_bytes());
            if value.len() <= 4 {
                let mut v = value.clone();
                v.resize(4, 0);
                dir.extend_from_slice(&v);
            } else {
                dir.extend_from_slice(&(12 + values.len() as u32).to_le_bytes());
                values.extend_from_slice(value);
            }
        }
        let mut note = b"IIIICwaR".to_vec();
        note.extend_from_slice(&(12 + values.len() as u32).to_le_bytes());
        note.extend_from_slice(&values);
        note.extend_from_slice(&dir);
        note
    }

    const LENS: &str = "Mamiya LS 80mm f/2.8 D";

    #[test]
    fn an_iiq_has_the_lens_of_phase_ones_directory() {
        let note = phase_one(&[
            (0x100, 4, 0u32.to_le_bytes().to_vec()),
            (0x410, 1, b"Credo 40\0".to_vec()),
            (0x412, 1, format!("{LENS}\0").into_bytes()),
        ]);
        // As a Leaf back writes it: the maker note right after the TIFF header, IFD0
        // after it, and the Exif IFD's MakerNote pointing back to byte 8.
        let header = [II, &note].concat();
        let ifd0 = (header.len() + 2 + 12 * 2 + 4) as u32;
        let mut file = tiff(
            &header,
            &[
                vec![ascii(0x10F, "Leaf"), long(0x8769, ifd0)],
                vec![(0x927C, 7, note.len() as u32, 8u32.to_le_bytes().to_vec())],
            ],
            &[],
            &[],
        );
        file[4..8].copy_from_slice(&(header.len() as u32).to_le_bytes());
        let info = inspect(View::whole(&file), Some("iiq"));
        assert_eq!(info.format, Some("iiq"));
        assert_eq!(info.make.as_deref(), Some("Leaf"));
        assert_eq!(info.lens.as_deref(), Some(LENS));
    }

    #[test]
    fn a_phase_one_directory_that_lies_has_no_lens() {
        let lens = || (0x412, 1, format!("{LENS}\0").into_bytes());
        let good = phase_one(&[(0x100, 4, vec![0; 4]), lens()]);
        assert_eq!(super::phase_one_lens(&good).as_deref(), Some(LENS));
        // Not Phase One's header; cut short.
        assert_eq!(super::phase_one_lens(&good[4..]), None);
        assert_eq!(super::phase_one_lens(&good[..good.len() - 1]), None);
        // One entry only, or a count no directory has.
        assert_eq!(super::phase_one_lens(&phase_one(&[lens()])), None);
        let mut many = good.clone();
        let dir = 12 + LENS.len() + 1;
        many[dir..dir + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(super::phase_one_lens(&many), None);
        // The directory's offset past the end.
        let mut far = good.clone();
        far[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(super::phase_one_lens(&far), None);
        // An earlier entry whose value lies past the end ends the reading there.
        let mut bad = phase_one(&[(0x102, 1, b"serial number".to_vec()), lens()]);
        let first = 12 + 13 + LENS.len() + 1 + 8;
        bad[first + 12..first + 16].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        assert_eq!(super::phase_one_lens(&bad), None);
        // A lens value that claims more bytes than there are.
        let mut long_lens = good.clone();
        let second = dir + 8 + 16;
        long_lens[second + 8..second + 12].copy_from_slice(&0x7FFF_FFFFu32.to_le_bytes());
        assert_eq!(super::phase_one_lens(&long_lens), None);
    }

    fn bx(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut b = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        b.extend_from_slice(kind);
        b.extend_from_slice(body);
        b
    }

    fn uuid_box(uuid: &[u8; 16], body: &[u8]) -> Vec<u8> {
        bx(b"uuid", &[uuid.as_slice(), body].concat())
    }

    #[test]
    fn a_cr3_has_the_size_of_cmt1_the_date_of_cmt2_and_the_prvw_preview() {
        let cmt1 = tiff(
            II,
            &[vec![
                short(0x100, 6000),
                short(0x101, 4000),
                ascii(0x10F, "Canon"),
                short(0x112, 8),
            ]],
            &[],
            &[],
        );
        let cmt2 = tiff(II, &[vec![ascii(0x9003, "2018:02:21 12:08:56")]], &[], &[]);
        let canon = uuid_box(
            &super::CANON_UUID,
            &[bx(b"CMT1", &cmt1), bx(b"CMT2", &cmt2)].concat(),
        );
        let jpg = jpeg(1620, 1080, &[], 900);
        let mut prvw = vec![0, 0, 0, 0, 0, 1];
        prvw.extend_from_slice(&1620u16.to_be_bytes());
        prvw.extend_from_slice(&1080u16.to_be_bytes());
        prvw.extend_from_slice(&[0, 1]);
        prvw.extend_from_slice(&(jpg.len() as u32).to_be_bytes());
        prvw.extend_from_slice(&jpg);
        prvw.extend_from_slice(&[0; 6]); // padding exiftool keeps, the JPEG's length does not
        let preview = uuid_box(
            &super::PREVIEW_UUID,
            &[[0, 0, 0, 0, 0, 0, 0, 1].as_slice(), &bx(b"PRVW", &prvw)].concat(),
        );
        let file = [
            bx(b"ftyp", b"crx \0\0\0\x01crx isom"),
            bx(b"moov", &canon),
            preview,
        ]
        .concat();
        let info = inspect(View::whole(&file), Some("CR3"));
        assert_eq!(info.format, Some("cr3"));
        assert_eq!((info.width, info.height), (Some(6000), Some(4000)));
        assert_eq!(info.make.as_deref(), Some("Canon"));
        assert_eq!(info.orientation, Some(8));
        assert_eq!(info.taken.as_deref(), Some("2018-02-21T12:08:56"));
        let found = memchr::memmem::find(&file, &jpg).unwrap() as u64;
        assert_eq!(info.preview, Some((found, jpg.len() as u64)));
    }

    #[test]
    fn loops_and_offsets_past_the_end_neither_hang_nor_panic() {
        // IFD0 and IFD1 link to each other; IFD1's SubIFD is itself; an Exif IFD and a
        // JPEG point far past the end.
        let at = offsets(8, &[6, 3]);
        let file = tiff(
            II,
            &[
                vec![
                    long(0xFE, 1),
                    short(0x100, 160),
                    short(0x101, 120),
                    ascii(0x10F, "SONY"),
                    long(0x8769, 0xFFFF_FFF0),
                    long(0x201, 0xFFFF_FFF0),
                ],
                vec![long(0x14A, at[1]), long(0x201, 8), long(0x202, u32::MAX)],
            ],
            &[at[1], at[0]],
            &[],
        );
        let info = inspect(View::whole(&file), Some("arw"));
        assert_eq!(info.format, Some("arw"));
        assert_eq!((info.width, info.height), (Some(160), Some(120)));
        assert_eq!(info.preview, None);
        // A CIFF heap whose only record is a heap that is itself.
        let mut crw = b"II\x1a\0\0\0HEAPCCDR\x02\0\x01\0\0\0\0\0\0\0\0\0".to_vec();
        let mut root = 1u16.to_le_bytes().to_vec();
        root.extend_from_slice(&0x300Au16.to_le_bytes());
        root.extend_from_slice(&16u32.to_le_bytes());
        root.extend_from_slice(&0u32.to_le_bytes());
        root.extend_from_slice(&[0; 2]);
        root.extend_from_slice(&0u32.to_le_bytes());
        crw.extend_from_slice(&root);
        let info = inspect(View::whole(&crw), Some("crw"));
        assert_eq!(info.format, Some("crw"));
        assert!(info.error.unwrap().contains("ImageInfo"));
        // An X3F, a RAF and an MRW whose pointers lead nowhere.
        let mut x3f = b"FOVb\0\0\x02\0".to_vec();
        x3f.resize(28, 0);
        x3f.extend_from_slice(&[0x10, 0, 0, 0, 0x20, 0, 0, 0]);
        x3f.resize(64, 0xFF);
        let info = inspect(View::whole(&x3f), Some("x3f"));
        assert_eq!((info.width, info.height), (Some(16), Some(32)));
        assert!(info.error.unwrap().contains("directory"));
        let mut raf = b"FUJIFILMCCD-RAW ".to_vec();
        raf.resize(0x100, 0xFF);
        let info = inspect(View::whole(&raf), Some("raf"));
        assert_eq!((info.width, info.preview), (None, None));
        let info = inspect(
            View::whole(b"\0MRM\xFF\xFF\xFF\xFF\0PRD\xFF\xFF\xFF\xF0"),
            None,
        );
        assert!(info.error.is_some());
    }

    #[test]
    fn unix_times_become_exif_dates() {
        assert_eq!(super::unix_date(0).as_deref(), Some("1970:01:01 00:00:00"));
        assert_eq!(
            super::unix_date(978_309_395).as_deref(),
            Some("2001:01:01 00:36:35")
        );
        assert_eq!(
            super::unix_date(1_709_210_096).as_deref(),
            Some("2024:02:29 12:34:56")
        );
        assert_eq!(super::unix_date(u64::MAX), None);
    }
}
