//! What one image's bytes say: its format (by content), its dimensions (from the header,
//! no decode) and its EXIF fields. Pure: bytes in, facts out; a parser that panics on
//! hostile input is caught here and becomes the file's error.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::index::formats::{self, Reader, Size};

mod apple;
mod avi;
mod bmp;
pub(crate) mod boxes;
mod ciff;
mod cursor;
mod fields;
mod heif;
mod identify;
mod integrity;
mod iptc;
mod jpeg;
mod jxl;
mod matroska;
mod png;
mod quicktime;
mod raw;
mod tiff;
mod view;
mod webp;
mod x3f;
mod xmp;

use fields::{fill_exif, fill_meta, fill_xmp};
pub use identify::format_of;
pub(crate) use view::View;
pub(crate) use xmp::SidecarFields;
pub(crate) use xmp::{SIDECAR_MAX, sidecar, too_large};

/// What was found in one image. Fields it does not have stay `None`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
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
    /// What the file holds: `image`, `raw` (a camera raw file) or `video`, from its
    /// format ([`formats::kind_of`]); `other` when its format is not one the catalog knows.
    pub kind: Option<&'static str>,
    /// A video's duration in seconds.
    pub duration: Option<f64>,
    /// The codec of a video's main track (`avc1`, `hvc1`, `V_VP9`, …) or of a HEIF's
    /// primary item (`hvc1`, `av01`).
    pub codec: Option<String>,
    /// The turn a video's matrix or a HEIF's `irot` applies, in degrees clockwise (0, 90,
    /// 180, 270); `width` and `height` are the displayed size, after it.
    pub rotation: Option<u32>,
    /// Apple's content identifier, shared by a Live Photo's HEIC (or JPEG) and its MOV.
    pub content_id: Option<String>,
    /// Where the embedded JPEG a thumbnail is made from lies: byte offset and length (a
    /// raw file's largest preview, a video's cover art).
    pub preview: Option<(u64, u64)>,
    /// Why the content could not be (fully) understood.
    pub error: Option<String>,
    /// Why the file is damaged (cut short, a size past its end, a checksum that does not
    /// match), when the bytes read show it; `None` when nothing shows it is.
    pub damaged: Option<String>,
    /// Damage every reader works around (junk between JPEG segments): the fields were
    /// read, the file is not an error.
    pub warning: Option<String>,
}

/// Everything the bytes kept of a file (`view`: the whole file, or its head and tail)
/// say, for a file with extension `ext`. Never panics: a parser panic becomes the error.
pub fn inspect(view: View<'_>, ext: Option<&str>) -> ImageInfo {
    // The TIFF structure's images, parsed once for the readers and the verdict.
    let mut tiff_images = None;
    let mut info = match catch_unwind(AssertUnwindSafe(|| {
        inspect_inner(view, ext, &mut tiff_images)
    })) {
        Ok(info) => info,
        Err(panic) => {
            let what = seekless_sys::sync::panic_text(&*panic);
            ImageInfo {
                format: format_of(view.head()),
                error: Some(format!("the image parser failed: {what}")),
                ..ImageInfo::default()
            }
        }
    };
    if info.kind.is_none() {
        info.kind = Some(info.format.map_or(formats::OTHER_KIND, formats::kind_of));
    }
    if let Some(format) = info.format {
        match catch_unwind(AssertUnwindSafe(|| {
            integrity::damaged(view, format, tiff_images.as_ref())
        })) {
            Ok(damaged) => info.damaged = damaged,
            Err(panic) => {
                let what = seekless_sys::sync::panic_text(&*panic);
                info.error
                    .get_or_insert_with(|| format!("the integrity check failed: {what}"));
            }
        }
    }
    info
}

/// What [`inspect`] says but the integrity verdict; `tiff_images` gets the
/// [`tiff::images`] of a TIFF structure, where they were parsed.
fn inspect_inner(
    view: View<'_>,
    ext: Option<&str>,
    tiff_images: &mut Option<tiff::Images>,
) -> ImageInfo {
    let (data, complete) = (view.head(), view.complete());
    let mut info = ImageInfo {
        format: format_of(data),
        ..ImageInfo::default()
    };
    if data.is_empty() {
        info.error = Some("empty file".into());
        return info;
    }
    if info.format == Some("tiff") {
        let format;
        (format, *tiff_images) = raw::tiff_format(data, ext);
        info.format = Some(format);
    }
    let expected = ext.and_then(formats::of_extension);
    let Some(format) = info.format else {
        info.ext_mismatch = expected.is_some();
        info.error = Some("not an image this catalog knows (no known signature)".into());
        return info;
    };
    info.ext_mismatch = expected.is_some_and(|e| !e.accepts(format));
    let Some(record) = formats::named(format) else {
        // `format_of` names only formats of the table (its tests and the fuzzers hold it).
        debug_assert!(false, "{format} is not in formats::FORMATS");
        info.kind = Some(formats::OTHER_KIND);
        info.error = Some(format!("{format}: a format the catalog does not know"));
        return info;
    };
    info.kind = Some(record.kind.name());
    let mut raw_fields = None;
    let mut layout = match record.reader {
        Reader::Jpeg => jpeg::read(data),
        Reader::Png => png::read(data, complete),
        Reader::Bmp => bmp::read(data, complete),
        Reader::Webp => webp::read(data),
        Reader::Heif => heif::read(view),
        Reader::QuickTime => quicktime::read(view),
        Reader::Matroska => matroska::read(view),
        Reader::Avi => avi::read(view),
        Reader::Jxl => jxl::read(view),
        // The TIFF structure is the file; its IFD0 has the dimensions.
        Reader::Tiff => Layout {
            exif: Some(data),
            ..Layout::default()
        },
        Reader::Raw(reader) => {
            let (mut layout, fields) = raw::read(view, reader, format, tiff_images.take());
            raw_fields = fields;
            *tiff_images = layout.tiff_images.take();
            layout
        }
        Reader::None => Layout::default(),
    };
    let mut errors: Vec<String> = layout.error.take().into_iter().collect();
    let mut tiff_fields = None;
    let whole_tiff = record.reader == Reader::Tiff;
    if raw_fields.is_some() {
        tiff_fields = raw_fields;
    }
    if let Some(block) = layout.exif.or(layout.owned_exif.as_deref()) {
        match tiff::read(block) {
            Ok(fields) => tiff_fields = Some(fields),
            Err(e) if whole_tiff => errors.push(format!("unreadable TIFF structure: {e}")),
            Err(e) => errors.push(format!("unreadable EXIF: {e}")),
        }
    }
    if tiff_fields.is_none()
        && let Some(heap) = layout.ciff
    {
        tiff_fields = ciff::read(View::new(heap, &[], heap.len() as u64)).fields;
    }
    if whole_tiff && let Some(f) = &tiff_fields {
        (layout.width, layout.height) = (f.width, f.height);
    }
    // Our readers' own verdict stands for the formats they size; `imagesize` has the rest
    // (GIF, WebP).
    if layout.width.is_none() && record.size == Size::Imagesize {
        match imagesize::blob_size(data) {
            Ok(size) => {
                layout.width = Some(size.width as u64);
                layout.height = Some(size.height as u64);
            }
            Err(e) => errors.insert(0, format!("no dimensions in the header: {e}")),
        }
    }
    if layout.audio {
        info.kind = Some(formats::AUDIO_KIND);
    }
    match (layout.width, layout.height) {
        // Sound has no size.
        (None, None) if layout.audio => {}
        // Dimensions no image can have are an error, never numbers in the catalog.
        (Some(w), Some(h)) if !(1..=MAX_SIDE).contains(&w) || !(1..=MAX_SIDE).contains(&h) => {
            errors.insert(0, format!("impossible dimensions {w}×{h} in the header"));
        }
        (Some(w), Some(h)) => (info.width, info.height) = (Some(w), Some(h)),
        _ if errors.is_empty() => errors.push("no dimensions in the header".into()),
        _ => {}
    }
    // Data after the end-of-image marker is common (camera trailers, motion photos); a
    // JPEG without one anywhere was cut short.
    // From the end, where it nearly always is (a byte-by-byte scan of a 4 MiB photo from
    // the front cost as much as hashing it).
    // Only a JPEG's bytes are searched (another file's, a video's, would be scanned whole
    // for nothing).
    if record.reader == Reader::Jpeg
        && complete
        && memchr::memmem::rfind(data.get(2..).unwrap_or_default(), &[0xFF, 0xD9]).is_none()
    {
        errors.push("truncated JPEG (no end-of-image marker)".into());
    }
    if let Some(f) = tiff_fields {
        if let Some(first) = f.damage.first() {
            errors.push(format!("EXIF partly unreadable: {first}"));
        }
        fill_exif(&mut info, f);
    }
    if let Some(block) = layout.exif.or(layout.owned_exif.as_deref())
        && layout.meta.content_id.is_none()
    {
        layout.meta.content_id = apple::content_id(block);
    }
    fill_meta(&mut info, std::mem::take(&mut layout.meta));
    let lacking = [&info.taken, &info.lens, &info.make, &info.model]
        .iter()
        .any(|f| f.is_none())
        || info.orientation.is_none();
    if lacking && let Some(packet) = xmp::packet(data) {
        fill_xmp(&mut info, packet);
    }
    if info.taken.is_none() {
        info.taken = layout.iptc_taken.take();
    }
    // A HEIF turned by `irot` has that turn in its width and height, and every decoder
    // applies it; its EXIF (or XMP) Orientation is then informative only (ISO/IEC
    // 23008-12) and must not be applied again: nothing is left to apply. One without
    // `irot` keeps what its metadata states, as every other format.
    if record.reader == Reader::Heif
        && info.rotation.is_some_and(|r| r != 0)
        && info.orientation.is_some()
    {
        info.orientation = Some(1);
    }
    info.error = errors.into_iter().next();
    info.warning = (!layout.warnings.is_empty()).then(|| layout.warnings.join("; "));
    info
}

/// The largest width or height the catalog believes: PNG's limit (2³¹ − 1), far above
/// any real image; a header claiming more is damaged.
const MAX_SIDE: u64 = i32::MAX as u64;

/// What a container's header says: the dimensions, where its EXIF block (a TIFF
/// structure) is, and what was wrong with it.
#[derive(Debug, Default)]
struct Layout<'a> {
    width: Option<u64>,
    height: Option<u64>,
    exif: Option<&'a [u8]>,
    /// An EXIF block decoded from text (PNG's ImageMagick raw profile).
    owned_exif: Option<Vec<u8>>,
    /// Damage that every reader works around (junk between JPEG segments).
    warnings: Vec<String>,
    /// The date IPTC gives (a JPEG's APP13): `taken` when neither EXIF nor XMP has one.
    iptc_taken: Option<String>,
    /// A container of sound alone (no video track): its kind is `audio`, it has no size.
    audio: bool,
    /// A JPEG's CIFF heap (APP0 `II…HEAPJPGM`, early Canon PowerShots): the EXIF fields
    /// where the JPEG has no EXIF.
    ciff: Option<&'a [u8]>,
    /// What a container says outside EXIF (a video's or raw file's own tags): each field
    /// fills the one EXIF did not have.
    meta: Meta,
    /// Damage that makes the file not what it claims (truncated, no header).
    error: Option<String>,
    /// A TIFF-based raw file's [`tiff::images`], handed back for the integrity verdict.
    tiff_images: Option<tiff::Images>,
}

/// Fields a container keeps in its own structure rather than in EXIF (videos, some raw
/// formats). Each fills the [`ImageInfo`] field of its name when EXIF had none.
#[derive(Debug, Default, PartialEq)]
struct Meta {
    taken: Option<String>,
    make: Option<String>,
    model: Option<String>,
    orientation: Option<u32>,
    exposure_time: Option<f64>,
    f_number: Option<f64>,
    iso: Option<u32>,
    focal_length: Option<f64>,
    gps_lat: Option<f64>,
    gps_lon: Option<f64>,
    gps_alt: Option<f64>,
    duration: Option<f64>,
    codec: Option<String>,
    rotation: Option<u32>,
    content_id: Option<String>,
    preview: Option<(u64, u64)>,
}

impl Layout<'_> {
    fn warn(&mut self, what: String) {
        if self.warnings.len() < 4 {
            self.warnings.push(what);
        }
    }
}

/// Each parser alone, and [`inspect`] without its panic guard, for the fuzz targets
/// (`seekless::fuzzing`): what they find is thrown away, only panics, hangs and memory
/// count.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
#[allow(missing_docs)]
pub mod fuzzing;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn video_and_new_image_formats_are_told_by_their_signatures() {
        let ftyp = |brand: &[u8; 4], compatible: &[u8]| {
            let mut f = ((16 + compatible.len()) as u32).to_be_bytes().to_vec();
            f.extend_from_slice(b"ftyp");
            f.extend_from_slice(brand);
            f.extend_from_slice(&[0; 4]);
            f.extend_from_slice(compatible);
            f
        };
        for (brand, format) in [
            (b"qt  ", "mov"),
            (b"M4V ", "m4v"),
            (b"3gp4", "3gp"),
            (b"3g2a", "3gp"),
            (b"isom", "mp4"),
            (b"mp42", "mp4"),
            (b"crx ", "cr3"),
            (b"avis", "avif"),
            (b"heic", "heif"),
        ] {
            assert_eq!(format_of(&ftyp(brand, b"")), Some(format), "{brand:?}");
        }
        // An unknown major brand is looked for among the compatible ones.
        assert_eq!(format_of(&ftyp(b"abcd", b"xyz1isom")), Some("mp4"));
        assert_eq!(format_of(&ftyp(b"abcd", b"xyz1")), None);
        assert_eq!(format_of(&ftyp(b"M4A ", b"M4A isom")), None);
        assert_eq!(format_of(b"\0\0\0\x08wide\0\0\0\x10mdat"), Some("mov"));
        assert_eq!(format_of(b"\0\0\0\x02moov"), None);
        assert_eq!(format_of(b"RIFF\0\0\0\0AVI LIST"), Some("avi"));
        assert_eq!(format_of(b"\xFF\x0A\x08\x04"), Some("jxl"));
        assert_eq!(format_of(b"\0\0\0\x0cJXL \r\n\x87\n"), Some("jxl"));
        assert_eq!(format_of(&ebml(b"webm")), Some("webm"));
        assert_eq!(format_of(&ebml(b"matroska")), Some("mkv"));
        assert_eq!(formats::kind_of("webm"), "video");
        assert_eq!(formats::kind_of("jxl"), "image");
    }

    /// An EBML header (Matroska, WebM) whose DocType is `doc`.
    fn ebml(doc: &[u8]) -> Vec<u8> {
        let mut e = vec![
            0x1A,
            0x45,
            0xDF,
            0xA3,
            0x80 | (doc.len() as u8 + 3),
            0x42,
            0x82,
        ];
        e.push(0x80 | doc.len() as u8);
        e.extend_from_slice(doc);
        e
    }

    /// Every format `format_of` and `raw::tiff_format` name is one of `formats::FORMATS`,
    /// and every one of the table is told by some bytes: one sample of each.
    #[test]
    fn the_formats_told_by_content_are_the_tables() {
        let ftyp = |brand: &[u8; 4]| [&[0, 0, 0, 16][..], b"ftyp", brand, &[0; 4]].concat();
        let camera = |make: &str| {
            tiff(
                &[short(0x100, 8), short(0x101, 6), ascii(0x10F, make)],
                &[],
                4,
            )
        };
        let mut bmp = b"BM".to_vec();
        bmp.resize(30, 0);
        let samples: Vec<(Vec<u8>, Option<&str>)> = vec![
            (vec![0xFF, 0xD8, 0xFF, 0xE0], None),
            (b"\x89PNG\r\n\x1a\n".to_vec(), None),
            (b"GIF89a".to_vec(), None),
            (b"RIFF\0\0\0\0WEBPVP8 ".to_vec(), None),
            (camera("Scanner"), Some("tif")),
            (bmp, None),
            (ftyp(b"heic"), None),
            (ftyp(b"avif"), None),
            (b"\xFF\x0A\x08\x04".to_vec(), None),
            (
                tiff(&[(0xC612, 1, 4, vec![1, 4, 0, 0])], &[], 4),
                Some("dng"),
            ),
            (b"II*\0\x08\0\0\0CR\x02\0".to_vec(), None),
            (ftyp(b"crx "), None),
            (b"II\x1a\0\0\0HEAPCCDR".to_vec(), None),
            (camera("NIKON CORPORATION"), Some("NEF")),
            (camera("NIKON CORPORATION"), Some("nrw")),
            (camera("SONY"), Some("arw")),
            (camera("SONY"), Some("sr2")),
            (b"IIRO\x08\0\0\0".to_vec(), None),
            (b"IIU\0\x08\0\0\0".to_vec(), None),
            (camera("RICOH IMAGING"), Some("pef")),
            (b"FUJIFILMCCD-RAW 0201".to_vec(), None),
            (camera("SAMSUNG"), Some("srw")),
            (camera("Hasselblad"), Some("3fr")),
            (b"II*\0\x08\0\0\0IIII".to_vec(), None),
            (b"FOVb\0\0\0\0".to_vec(), None),
            (b"\0MRM\0\0\0\0".to_vec(), None),
            (ftyp(b"isom"), None),
            (ftyp(b"qt  "), None),
            (ftyp(b"M4V "), None),
            (ftyp(b"3gp4"), None),
            (ebml(b"matroska"), None),
            (ebml(b"webm"), None),
            (b"RIFF\0\0\0\0AVI LIST".to_vec(), None),
        ];
        let told: Vec<&str> = samples
            .iter()
            .map(|(bytes, ext)| {
                let format = format_of(bytes).unwrap_or_else(|| panic!("{bytes:?}"));
                if format == "tiff" {
                    raw::tiff_format(bytes, *ext).0
                } else {
                    format
                }
            })
            .collect();
        let table: Vec<&str> = formats::FORMATS.iter().map(|f| f.name).collect();
        assert_eq!(told, table);
    }

    #[test]
    fn a_video_fills_its_fields_from_the_container() {
        use boxes::tests::bx;
        let mut tkhd = vec![0; 40];
        for v in [0, 1 << 16, 0, -(1i32 << 16), 0, 0, 0, 0, 1 << 30] {
            tkhd.extend_from_slice(&v.to_be_bytes());
        }
        tkhd.extend_from_slice(&(640u32 << 16).to_be_bytes());
        tkhd.extend_from_slice(&(480u32 << 16).to_be_bytes());
        let hdlr = bx(b"hdlr", &[&[0; 8][..], b"vide", &[0; 12]].concat());
        let stsd = bx(
            b"stsd",
            &[&[0, 0, 0, 0, 0, 0, 0, 1][..], &bx(b"avc1", &[0; 78])].concat(),
        );
        let mdia = bx(b"mdia", &[hdlr, bx(b"minf", &bx(b"stbl", &stsd))].concat());
        let trak = bx(b"trak", &[bx(b"tkhd", &tkhd), mdia].concat());
        let file = [bx(b"ftyp", b"isom\0\0\0\0isom"), bx(b"moov", &trak)].concat();
        let info = inspect(View::whole(&file), Some("MP4"));
        assert_eq!(
            (info.format, info.kind, info.error),
            (Some("mp4"), Some("video"), None)
        );
        assert!(!info.ext_mismatch);
        assert_eq!(
            (info.width, info.height, info.rotation),
            (Some(480), Some(640), Some(90))
        );
        assert_eq!(info.codec.as_deref(), Some("avc1"));
        // The same bytes named .mov are no mismatch (phones' MP4 and MOV are alike).
        assert!(!inspect(View::whole(&file), Some("mov")).ext_mismatch);
        assert!(inspect(View::whole(&file), Some("avi")).ext_mismatch);
    }

    #[test]
    fn a_live_photos_content_identifier_is_read_from_the_apple_maker_note() {
        let id = "5A8D8B5C-2B7E-4B2B-9D4D-2D2D5E7B1C11";
        let exif = apple::tests::apple_exif(id);
        let jpeg = [
            &[0xFF, 0xD8, 0xFF, 0xE1][..],
            &((exif.len() + 8) as u16).to_be_bytes(),
            b"Exif\0\0",
            &exif,
            &[0xFF, 0xC0, 0, 11, 8, 0, 6, 0, 8, 1, 1, 0x11, 0, 0xFF, 0xD9],
        ]
        .concat();
        let info = inspect(View::whole(&jpeg), Some("jpg"));
        assert_eq!(info.content_id.as_deref(), Some(id));
        assert_eq!(info.kind, Some("image"));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let info = inspect(View::whole(b"this is text"), Some("png"));
        assert!(info.error.is_some());
        assert!(info.ext_mismatch);
        let info = inspect(
            View::whole(&[0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF, b'E', b'x']),
            Some("jpg"),
        );
        assert_eq!(info.format, Some("jpeg"));
        // A segment longer than the file is damage the readers handle, not a panic.
        let error = info.error.unwrap();
        assert!(!error.contains("parser failed"), "{error}");
        assert!(inspect(View::whole(b""), Some("jpg")).error.is_some());
    }

    /// One TIFF entry: tag, type, count, value bytes (little-endian).
    type Ent = (u16, u16, u32, Vec<u8>);

    /// A little-endian TIFF structure: IFD0 with `ifd0`, and when `exif` is not empty an
    /// Exif IFD pointed to by tag 0x8769 of type `pointer_type`.
    fn tiff(ifd0: &[Ent], exif: &[Ent], pointer_type: u16) -> Vec<u8> {
        let mut first: Vec<Ent> = ifd0.to_vec();
        let mut ifds = Vec::new();
        if !exif.is_empty() {
            let exif_at = (8 + 2 + 12 * (ifd0.len() + 1) + 4) as u32;
            first.push((0x8769, pointer_type, 1, exif_at.to_le_bytes().to_vec()));
            ifds.push(first);
            ifds.push(exif.to_vec());
        } else {
            ifds.push(first);
        }
        super::raw::tests::tiff(b"II*\0\x08\0\0\0", &ifds, &[], &[])
    }

    fn short(tag: u16, v: u16) -> Ent {
        (tag, 3, 1, v.to_le_bytes().to_vec())
    }

    fn rational(tag: u16, n: u32, d: u32) -> Ent {
        (tag, 5, 1, [n.to_le_bytes(), d.to_le_bytes()].concat())
    }

    fn ascii(tag: u16, s: &str) -> Ent {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        (tag, 2, v.len() as u32, v)
    }

    fn chunk(kind: &[u8], body: &[u8]) -> Vec<u8> {
        let mut c = (body.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(body);
        c.extend_from_slice(&[0; 4]); // CRC, not checked
        c
    }

    fn png(chunks: &[Vec<u8>]) -> Vec<u8> {
        let mut ihdr = 3u32.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&2u32.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        out.extend(chunk(b"IHDR", &ihdr));
        for c in chunks {
            out.extend_from_slice(c);
        }
        out.extend(chunk(b"IEND", b""));
        out
    }

    #[test]
    fn a_webp_exif_chunk_with_a_jpeg_style_prefix_is_read() {
        let exif = [b"Exif\0\0".as_slice(), &tiff(&[short(0x112, 6)], &[], 4)].concat();
        let mut chunks = b"VP8X".to_vec();
        chunks.extend_from_slice(&10u32.to_le_bytes());
        chunks.extend_from_slice(&[0x08, 0, 0, 0, 3, 0, 0, 1, 0, 0]); // EXIF flag; 4×2
        chunks.extend_from_slice(b"EXIF");
        chunks.extend_from_slice(&(exif.len() as u32).to_le_bytes());
        chunks.extend_from_slice(&exif);
        if exif.len() % 2 == 1 {
            chunks.push(0);
        }
        let mut file = b"RIFF".to_vec();
        file.extend_from_slice(&(chunks.len() as u32 + 4).to_le_bytes());
        file.extend_from_slice(b"WEBP");
        file.extend_from_slice(&chunks);
        let info = inspect(View::whole(&file), Some("webp"));
        assert_eq!(info.error, None);
        assert_eq!(info.orientation, Some(6));
        assert_eq!((info.width, info.height), (Some(4), Some(2)));
    }

    /// A BMP with a 40-byte header, 1 bit per pixel, and `pixels` bytes of pixel data.
    fn bmp(width: i32, height: i32, pixels: usize) -> Vec<u8> {
        let mut b = b"BM".to_vec();
        b.extend_from_slice(&(62 + pixels as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&62u32.to_le_bytes());
        b.extend_from_slice(&40u32.to_le_bytes());
        b.extend_from_slice(&width.to_le_bytes());
        b.extend_from_slice(&height.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.resize(62 + pixels, 0);
        b
    }

    #[test]
    fn a_top_down_bmp_has_as_many_rows_as_its_negative_height_says() {
        let info = inspect(View::whole(&bmp(5, -3, 12)), Some("bmp"));
        assert_eq!(
            (info.width, info.height, info.error),
            (Some(5), Some(3), None)
        );
    }

    #[test]
    fn an_os2_bmp_header_has_16_bit_dimensions() {
        let mut b = b"BM\0\0\0\0\0\0\0\0\x1a\0\0\0".to_vec();
        b.extend_from_slice(&12u32.to_le_bytes());
        b.extend_from_slice(&[127, 0, 64, 0, 1, 0, 8, 0]);
        b.resize(26 + 128 * 64, 0);
        let info = inspect(View::whole(&b), Some("bmp"));
        assert_eq!(
            (info.width, info.height, info.error),
            (Some(127), Some(64), None)
        );
    }

    #[test]
    fn impossible_or_cut_short_bmps_are_errors() {
        let info = inspect(View::whole(&bmp(-127, 64, 1024)), Some("bmp"));
        assert_eq!((info.width, info.height), (None, None));
        assert!(info.error.unwrap().contains("impossible"));
        let info = inspect(View::whole(&bmp(127, 64, 200)), Some("bmp"));
        assert!(info.error.unwrap().contains("truncated"));
        // Only the head of a huge file: nothing is known about its end.
        let head = bmp(127, 64, 200);
        let huge = View::new(&head, &[], 1 << 30);
        assert_eq!(inspect(huge, Some("bmp")).error, None);
    }

    #[test]
    fn junk_between_jpeg_segments_is_skipped_with_a_warning() {
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xFE, 0, 4, b'h', b'i'];
        j.extend_from_slice(b"hello"); // not a marker
        j.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8, 3, 0, 4, 0, 1, 1, 0x11, 0]); // 1024×768
        j.extend_from_slice(&[0xFF, 0xDA, 0, 2, 0xFF, 0xD9]);
        let info = inspect(View::whole(&j), Some("jpg"));
        assert_eq!((info.width, info.height), (Some(1024), Some(768)));
        assert_eq!(info.error, None);
        assert!(info.warning.unwrap().contains("5 bytes of junk"));
    }

    #[test]
    fn bigtiff_is_a_tiff_with_dimensions() {
        // Header, then IFD0 at 16 with two LONG8-free SHORT entries.
        let mut t = b"II+\0\x08\0\0\0\x10\0\0\0\0\0\0\0".to_vec();
        t.extend_from_slice(&2u64.to_le_bytes());
        for (tag, v) in [(0x100u16, 640u16), (0x101, 480)] {
            t.extend_from_slice(&tag.to_le_bytes());
            t.extend_from_slice(&3u16.to_le_bytes());
            t.extend_from_slice(&1u64.to_le_bytes());
            t.extend_from_slice(&u64::from(v).to_le_bytes());
        }
        t.extend_from_slice(&0u64.to_le_bytes());
        let info = inspect(View::whole(&t), Some("tif"));
        assert_eq!(info.format, Some("tiff"));
        assert_eq!(
            (info.width, info.height, info.error),
            (Some(640), Some(480), None)
        );
    }

    #[test]
    fn an_exif_ifd_pointer_typed_ifd_and_a_signed_orientation_are_read() {
        let t = tiff(
            &[
                short(0x100, 8),
                short(0x101, 6),
                ascii(0x10F, "FLIR"),
                (0x112, 9, 1, 1i32.to_le_bytes().to_vec()), // SLONG
            ],
            &[ascii(0x9003, "2019:10:02 15:12:43"), rational(0x829D, 5, 4)],
            13, // IFD, not LONG
        );
        let info = inspect(View::whole(&t), Some("tiff"));
        assert_eq!(info.error, None);
        assert_eq!((info.width, info.height), (Some(8), Some(6)));
        assert_eq!(info.make.as_deref(), Some("FLIR"));
        assert_eq!(info.orientation, Some(1));
        assert_eq!(info.taken.as_deref(), Some("2019-10-02T15:12:43"));
        assert_eq!(info.f_number, Some(1.25));
    }

    #[test]
    fn a_bad_entry_loses_only_itself() {
        // The Exif IFD pointer points past the end; IFD0's fields are still read.
        let past_the_end = 10_000u32.to_le_bytes().to_vec();
        let t = tiff(
            &[
                short(0x100, 8),
                short(0x101, 6),
                ascii(0x10F, "Canon"),
                short(0x112, 3),
                (0x8769, 4, 1, past_the_end),
            ],
            &[],
            4,
        );
        let info = inspect(View::whole(&t), Some("tiff"));
        assert_eq!(info.make.as_deref(), Some("Canon"));
        assert_eq!(info.orientation, Some(3));
        assert_eq!((info.width, info.height), (Some(8), Some(6)));
        assert!(info.error.unwrap().contains("EXIF partly unreadable"));
    }

    #[test]
    fn bytes_after_a_png_iend_are_no_error() {
        let mut p = png(&[]);
        p.extend_from_slice(b"trailing garbage");
        let info = inspect(View::whole(&p), Some("png"));
        assert_eq!(
            (info.width, info.height, info.error),
            (Some(3), Some(2), None)
        );
    }

    #[test]
    fn a_png_without_ihdr_has_an_error_and_no_dimensions() {
        let mut p = b"\x89PNG\r\n\x1a\n".to_vec();
        p.extend_from_slice(&[0x2f, 0xc5, 0x7d, 0x50, 0xf4, 0xa8, 0x81, 0xe1, 5, 6, 7, 8]);
        let info = inspect(View::whole(&p), Some("png"));
        assert_eq!((info.width, info.height), (None, None));
        assert!(info.error.unwrap().contains("IHDR"));
    }

    #[test]
    fn png_exif_comes_from_exif_chunks_or_imagemagicks_raw_profile() {
        let block = tiff(&[short(0x112, 6)], &[], 4);
        let info = inspect(View::whole(&png(&[chunk(b"eXIf", &block)])), Some("png"));
        assert_eq!(info.orientation, Some(6));
        let payload = [b"Exif\0\0".as_slice(), &block].concat();
        let hex: String = payload.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!(
            "Raw profile type exif\0\nexif\n{:8}\n{hex}\n",
            payload.len()
        );
        let info = inspect(
            View::whole(&png(&[chunk(b"tEXt", text.as_bytes())])),
            Some("png"),
        );
        assert_eq!(info.orientation, Some(6));
        // The same under the name older writers gave it: the APP1 segment's payload.
        let text = text.replacen(
            "Raw profile type exif\0\nexif",
            "Raw profile type APP1\0\nAPP1",
            1,
        );
        let info = inspect(
            View::whole(&png(&[chunk(b"tEXt", text.as_bytes())])),
            Some("png"),
        );
        assert_eq!(info.orientation, Some(6));
    }

    #[test]
    fn a_jpeg_without_exif_has_the_make_and_model_of_its_ciff_heap() {
        // An early PowerShot's JPEG: a CIFF heap in APP0 (as a CRW's, typed HEAPJPGM).
        let mut heap = super::raw::tests::crw("Canon PowerShot 600", &[]);
        heap[6..14].copy_from_slice(b"HEAPJPGM");
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xE0];
        j.extend_from_slice(&((heap.len() + 2) as u16).to_be_bytes());
        j.extend_from_slice(&heap);
        j.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8, 0, 2, 0, 3, 1, 1, 0x11, 0]);
        j.extend_from_slice(&[0xFF, 0xDA, 0, 2, 0x55, 0xFF, 0xD9]);
        let info = inspect(View::whole(&j), Some("jpg"));
        assert_eq!(info.error, None);
        assert_eq!((info.width, info.height), (Some(3), Some(2)));
        assert_eq!(info.make.as_deref(), Some("Canon"));
        assert_eq!(info.model.as_deref(), Some("Canon PowerShot 600"));
    }

    #[test]
    fn taken_falls_back_to_xmps_date_created_then_to_iptc() {
        // XMP with only photoshop:DateCreated.
        let xmp = "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:Description \
                   photoshop:DateCreated=\"2012-03-04T05:06:07+01:00\"/></x:xmpmeta>";
        let p = png(&[chunk(
            b"iTXt",
            format!("XML:com.adobe.xmp\0\0\0\0\0{xmp}").as_bytes(),
        )]);
        let info = inspect(View::whole(&p), Some("png"));
        assert_eq!(info.taken.as_deref(), Some("2012-03-04T05:06:07+01:00"));
        // A JPEG whose only date is IPTC's (APP13).
        let mut iptc = vec![0x1C, 2, 55, 0, 8];
        iptc.extend_from_slice(b"20191014");
        iptc.extend_from_slice(&[0x1C, 2, 60, 0, 11]);
        iptc.extend_from_slice(b"150020+0000");
        let mut app13 = b"Photoshop 3.0\08BIM\x04\x04\0\0".to_vec();
        app13.extend_from_slice(&(iptc.len() as u32).to_be_bytes());
        app13.extend_from_slice(&iptc);
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xED];
        j.extend_from_slice(&((app13.len() + 2) as u16).to_be_bytes());
        j.extend_from_slice(&app13);
        j.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8, 0, 2, 0, 3, 1, 1, 0x11, 0]);
        j.extend_from_slice(&[0xFF, 0xDA, 0, 2, 0x55, 0xFF, 0xD9]);
        let info = inspect(View::whole(&j), Some("jpg"));
        assert_eq!((info.width, info.height), (Some(3), Some(2)));
        assert_eq!(info.taken.as_deref(), Some("2019-10-14T15:00:20+00:00"));
    }

    #[test]
    fn xmp_fills_what_exif_lacks_and_nothing_else() {
        let xmp = "<x:xmpmeta xmlns:x='adobe:ns:meta/'><rdf:Description tiff:Orientation=\"3\" \
                   exif:DateTimeOriginal=\"2010-07-11T13:53:00+02:00\">\
                   <tiff:Make>Sony</tiff:Make></rdf:Description></x:xmpmeta>";
        let p = png(&[chunk(
            b"iTXt",
            format!("XML:com.adobe.xmp\0\0\0\0\0{xmp}").as_bytes(),
        )]);
        let info = inspect(View::whole(&p), Some("png"));
        assert_eq!(info.orientation, Some(3));
        assert_eq!(info.taken.as_deref(), Some("2010-07-11T13:53:00+02:00"));
        assert_eq!(info.make.as_deref(), Some("Sony"));
        let block = tiff(&[short(0x112, 8), ascii(0x10F, "Canon")], &[], 4);
        let p = png(&[
            chunk(b"eXIf", &block),
            chunk(
                b"iTXt",
                format!("XML:com.adobe.xmp\0\0\0\0\0{xmp}").as_bytes(),
            ),
        ]);
        let info = inspect(View::whole(&p), Some("png"));
        assert_eq!(info.orientation, Some(8));
        assert_eq!(info.make.as_deref(), Some("Canon"));
    }
}
