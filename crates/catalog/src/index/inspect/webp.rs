//! WebP: the RIFF chunks' `EXIF` chunk. Its payload is the TIFF structure; some writers
//! (older Pillow, ImageMagick) put JPEG's `Exif\0\0` before it, which exiftool and
//! libwebp's tools accept, so it is skipped here too. Dimensions come from `imagesize`.

use super::Layout;

pub(super) fn read(data: &[u8]) -> Layout<'_> {
    let mut out = Layout::default();
    let mut at = 12;
    while let Some(head) = data.get(at..at + 8) {
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let Some(body) = data.get(at + 8..(at + 8).saturating_add(len)) else {
            out.warn(format!(
                "WebP chunk {} at {at} runs past the end",
                String::from_utf8_lossy(&head[..4])
            ));
            break;
        };
        if &head[..4] == b"EXIF" {
            out.exif = Some(body.strip_prefix(b"Exif\0\0").unwrap_or(body));
            break;
        }
        at += 8 + len + (len & 1); // chunks are padded to an even size
    }
    out
}
