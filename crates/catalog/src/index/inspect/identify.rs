//! A file's format told by its first bytes (its signature), never by its name.

use super::{matroska, quicktime};

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
    } else if at(0, b"II\x1a\0\0\0") && at(6, b"HEAPCCDR") {
        Some("crw")
    } else if at(0, b"FUJIFILMCCD-RAW") {
        Some("raf")
    } else if at(0, b"FOVb") {
        Some("x3f")
    } else if at(0, b"\0MRM") {
        Some("mrw")
    } else if at(0, b"II*\0") && at(8, b"CR\x02") {
        Some("cr2")
    } else if at(0, b"IIRO") || at(0, b"IIRS") || at(0, b"MMOR") {
        Some("orf")
    } else if at(0, b"IIU\0") {
        Some("rw2")
    } else if at(0, b"II*\0") || at(0, b"MM\0*") || at(0, b"II+\0") || at(0, b"MM\0+") {
        // Classic TIFF (42) and BigTIFF (43); which raw format it may be is told from
        // IFD0 by `raw::tiff_format`.
        Some("tiff")
    } else if at(4, b"ftyp") {
        ftyp_format(head.get(8..12)?, head)
    } else if at(0, b"RIFF") && at(8, b"AVI ") {
        Some("avi")
    } else if at(0, &[0x1A, 0x45, 0xDF, 0xA3]) {
        matroska::doc_type(head)
    } else if at(0, &[0xFF, 0x0A]) || at(0, b"\0\0\0\x0cJXL \r\n\x87\n") {
        Some("jxl")
    } else if quicktime::is_classic(head) {
        Some("mov")
    } else {
        None
    }
}

/// The format an ISO BMFF file's major brand names; a brand this catalog does not know
/// is looked for among the compatible brands (after the minor version) too.
fn ftyp_format(major: &[u8], head: &[u8]) -> Option<&'static str> {
    let of = |brand: &[u8]| -> Option<&'static str> {
        Some(match brand {
            b"avif" | b"avis" => "avif",
            b"heic" | b"heix" | b"heim" | b"heis" | b"hevc" | b"hevx" | b"mif1" | b"msf1" => "heif",
            b"crx " => "cr3",
            b"qt  " => "mov",
            b"M4V " | b"M4VH" | b"M4VP" => "m4v",
            [b'3', b'g', b'p' | b'2' | b'e' | b's', _] => "3gp",
            b"isom" | b"iso2" | b"iso3" | b"iso4" | b"iso5" | b"iso6" | b"iso7" | b"iso8"
            | b"iso9" | b"mp41" | b"mp42" | b"avc1" | b"dash" | b"MSNV" | b"XAVC" | b"f4v "
            | b"mmp4" | b"NDAS" | b"mp71" => "mp4",
            _ => return None,
        })
    };
    // Audio (iTunes' M4A, M4B, M4P) lists `isom` among its brands, yet is no video.
    if matches!(major, b"M4A " | b"M4B " | b"M4P " | b"F4A " | b"F4B ") {
        return None;
    }
    of(major).or_else(|| {
        // The ftyp box's own size bounds its compatible brands.
        let size = u32::from_be_bytes(head.get(..4)?.try_into().ok()?) as usize;
        let brands = head.get(16..size.min(head.len()))?;
        brands.chunks_exact(4).find_map(of)
    })
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
}
