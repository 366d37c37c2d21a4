//! PNG: IHDR (the dimensions) and the EXIF block: the `eXIf` chunk, or else the
//! `Raw profile type exif` (or `Raw profile type APP1`) text chunk ImageMagick wrote
//! before `eXIf` existed (hex, as exiftool reads it). Bytes after IEND are ignored, as
//! every decoder does.

use super::Layout;

pub(super) fn read(data: &[u8], complete: bool) -> Layout<'_> {
    let mut out = Layout::default();
    let mut profile: Option<&[u8]> = None;
    let mut at = 8;
    let mut first = true;
    loop {
        let Some(head) = data.get(at..at + 8) else {
            if complete {
                out.error = Some(format!(
                    "truncated PNG (no IEND chunk; {} bytes)",
                    data.len()
                ));
            }
            break;
        };
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = &head[4..8];
        let body = data.get(at + 8..(at + 8).saturating_add(len));
        if first {
            first = false;
            // IHDR must come first and be 13 bytes; anything else is not a PNG we can
            // trust a number of.
            match (kind, body) {
                (b"IHDR", Some(b)) if len == 13 => {
                    out.width = Some(u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])));
                    out.height = Some(u64::from(u32::from_be_bytes([b[4], b[5], b[6], b[7]])));
                }
                _ => {
                    out.error = Some("PNG without an IHDR chunk first".into());
                    break;
                }
            }
        }
        let Some(body) = body else {
            if complete {
                // A garbage length often comes with a garbage type: name only real ones.
                let name = if kind.iter().all(u8::is_ascii_alphabetic) {
                    format!("chunk {} ", String::from_utf8_lossy(kind))
                } else {
                    "a chunk ".to_string()
                };
                out.error = Some(format!("truncated PNG ({name}at {at} runs past the end)"));
            }
            break;
        };
        match kind {
            b"eXIf" if out.exif.is_none() => out.exif = Some(body),
            b"tEXt" if profile.is_none() => {
                profile = [
                    b"Raw profile type exif\0".as_slice(),
                    b"Raw profile type APP1\0",
                ]
                .iter()
                .find_map(|name| body.strip_prefix(*name));
            }
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len; // length, type, data, CRC
    }
    if out.exif.is_none() {
        out.owned_exif = profile.and_then(raw_profile);
    }
    out
}

/// ImageMagick's raw profile: `\nexif\n  LENGTH\n` then the bytes in hex over many lines;
/// the bytes are JPEG's APP1 payload (`Exif\0\0` and the TIFF structure).
fn raw_profile(text: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?;
    let mut words = text.split_ascii_whitespace();
    let _name = words.next()?;
    let length: usize = words.next()?.parse().ok()?;
    let hex: Vec<u8> = words.flat_map(str::bytes).collect();
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let bytes: Option<Vec<u8>> = hex
        .chunks_exact(2)
        .take(length)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect();
    let bytes = bytes?;
    Some(
        bytes
            .strip_prefix(b"Exif\0\0")
            .map(<[u8]>::to_vec)
            .unwrap_or(bytes),
    )
}
