//! JPEG: walks the marker segments up to the first scan for the frame header (the
//! dimensions), the first APP1 `Exif\0\0` segment, the IPTC date in APP13 and a CIFF
//! heap in APP0.
//!
//! Bytes that are not a marker where one should be (junk after a segment, a segment
//! length one short) are skipped to the next marker, as libjpeg ("Corrupt JPEG data: N
//! extraneous bytes before marker"), ImageMagick and exiftool ("Skipped unknown N bytes")
//! do: a warning, not an error.

use super::Layout;

/// What the segments before the first scan say.
pub(super) fn read(data: &[u8]) -> Layout<'_> {
    let mut out = Layout::default();
    let mut at = 2; // after SOI
    loop {
        // Find the next marker: 0xFF followed by a code other than 0x00 (a stuffed byte)
        // or 0xFF (fill).
        if at >= data.len() {
            break;
        }
        let start = at;
        let is_marker = |i: usize| data[i] == 0xFF && !matches!(data[i + 1], 0x00 | 0xFF);
        while at + 1 < data.len() && !is_marker(at) {
            at += 1;
        }
        // Fill bytes (0xFF 0xFF …) before a marker are allowed; anything else is junk.
        let junk = data[start..at].iter().filter(|&&b| b != 0xFF).count();
        if junk > 0 {
            out.warn(format!(
                "skipped {} bytes of junk before the JPEG marker at {at}",
                at - start
            ));
        }
        let Some(&code) = data.get(at + 1) else {
            break;
        };
        at += 2;
        match code {
            // Markers without a length: TEM, RSTn, SOI.
            0x01 | 0xD0..=0xD8 => continue,
            0xD9 => break, // EOI before any scan
            _ => {}
        }
        let Some(len) = data
            .get(at..at + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        else {
            break;
        };
        if len < 2 {
            out.warn(format!("JPEG segment at {} has length {len}", at - 2));
            continue;
        }
        let body = data
            .get(at + 2..(at + len).min(data.len()))
            .unwrap_or_default();
        match code {
            // SOFn (not DHT 0xC4, JPG 0xC8, DAC 0xCC): precision, height, width.
            0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF
                if out.width.is_none() && body.len() >= 5 =>
            {
                out.height = Some(u64::from(u16::from_be_bytes([body[1], body[2]])));
                out.width = Some(u64::from(u16::from_be_bytes([body[3], body[4]])));
            }
            0xE1 if out.exif.is_none() && body.starts_with(b"Exif\0") && body.len() > 6 => {
                // `Exif\0\0`, sometimes `Exif\0\xFF`: the TIFF structure follows.
                out.exif = Some(&body[6..]);
            }
            0xED if out.iptc_taken.is_none() => out.iptc_taken = super::iptc::taken(body),
            // Canon's CIFF heap (early PowerShots): make, model and date where no EXIF is.
            0xE0 if out.ciff.is_none() && body.starts_with(b"II\x1a\0\0\0HEAPJPGM") => {
                out.ciff = Some(body);
            }
            0xDA => break, // start of scan: the header is over
            _ => {}
        }
        at += len;
    }
    if out.width.is_none() {
        out.error = Some("no JPEG frame header before the image data".into());
    }
    out
}
