//! The integrity verdict: whether a file is damaged (cut short, a container's sizes past
//! its end, a checksum that does not match), judged from the bytes the sweep kept (the
//! whole file up to 32 MiB, else its head and tail: [`View`]) and the file's size, with
//! no second read. A verdict is said only where the bytes prove it: a structure that lies
//! in the part not kept is not judged.

use super::{View, boxes, matroska, tiff};

mod containers;
#[cfg(test)]
mod tests;

/// Why the file whose content is of `format` (as [`super::format_of`] names it: `jpeg`,
/// `png`, `heic`, `nef`, …) and whose kept bytes are `view` is damaged, in a few words
/// (`truncated at 1.2 MiB of 4.0 MiB`, `CRC mismatch in IDAT`); `None` when nothing
/// shows it is. `tiff_images` are the [`tiff::images`] of `view`'s head where the reader
/// parsed them already (else they are parsed here, for a TIFF structure).
pub(super) fn damaged(
    view: View<'_>,
    format: &str,
    tiff_images: Option<&tiff::Images>,
) -> Option<String> {
    if view.size() == 0 {
        return None;
    }
    match format {
        "jpeg" => jpeg(view),
        "png" => png(view),
        "gif" => gif(view),
        "webp" | "avi" => containers::riff(view),
        "heif" | "avif" | "cr3" | "mp4" | "mov" | "m4v" | "3gp" => containers::bmff(view),
        "mkv" | "webm" => containers::matroska(view),
        "raf" => containers::raf(view),
        "mrw" => containers::mrw(view),
        "x3f" => containers::x3f(view),
        "crw" => containers::crw(view),
        _ if matches!(view.head().get(..2), Some(b"II" | b"MM")) => tiff_data(view, tiff_images),
        _ => None,
    }
}

/// A four-character code as text, each byte that is not a printable ASCII character
/// shown as `?`.
pub(super) fn fourcc(kind: &[u8]) -> String {
    kind.iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect()
}

/// A size in a few characters: `312 bytes`, `12.5 KiB`, `4.0 MiB`.
pub(super) fn size(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if n < 1024 {
        format!("{n} bytes")
    } else if f < KIB * KIB {
        format!("{:.1} KiB", f / KIB)
    } else if f < KIB * KIB * KIB {
        format!("{:.1} MiB", f / (KIB * KIB))
    } else {
        format!("{:.1} GiB", f / (KIB * KIB * KIB))
    }
}

/// `what runs past the end (claims N, M left)` for a structure at `at` of `len` bytes.
pub(super) fn past_end(what: &str, view: View<'_>, at: u64, len: u64) -> String {
    format!(
        "{what} runs past the end (claims {}, {} left)",
        size(len),
        size(view.size().saturating_sub(at))
    )
}

/// The main image's entropy-coded data reaches its EOI: the marker segments are walked by
/// their lengths from SOI (an EXIF thumbnail inside APP1 is skipped with it), each scan
/// (several in a progressive file) is searched for the marker that ends it.
fn jpeg(view: View<'_>) -> Option<String> {
    let end = view.size();
    let mut at = 2u64;
    let mut scans = 0u32;
    // Where the MPF block (a multi-picture file's index) starts, and its further images.
    let mut mp: Option<(u64, Vec<(u64, u64)>)> = None;
    loop {
        // The next marker: fill bytes and junk between segments are skipped.
        let rest = view.get_upto(at, end);
        if rest.is_empty() {
            if at < end {
                return None; // not kept
            }
            return Some(if scans == 0 {
                format!("truncated at {} before the image data", size(end))
            } else {
                format!("no end marker after the image data (ends at {})", size(end))
            });
        }
        let Some(ff) = rest.iter().position(|&b| b == 0xFF) else {
            at += rest.len() as u64;
            continue;
        };
        let Some(&marker) = rest.get(ff + 1) else {
            at += ff as u64 + 1;
            continue;
        };
        if marker == 0xFF || marker == 0x00 {
            at += ff as u64 + 1;
            continue;
        }
        let seg = at + ff as u64;
        at = seg + 2;
        match marker {
            0xD9 => return mp.and_then(|(base, images)| mpo(view, base, &images)),
            0xD0..=0xD8 | 0x01 => continue,
            _ => {}
        }
        let Some(len) = view.get(at, 2) else {
            if at + 2 > end {
                return Some(format!(
                    "truncated at {} inside a marker segment",
                    size(end)
                ));
            }
            return None;
        };
        let len = u64::from(u16::from_be_bytes([len[0], len[1]]));
        if at + len > end {
            return Some(past_end(
                &format!("segment {}", jpeg_marker_name(marker)),
                view,
                at,
                len,
            ));
        }
        if marker == 0xE2
            && mp.is_none()
            && let Some(body) = view.get(at + 2, len.saturating_sub(2))
            && let Some(block) = body.strip_prefix(b"MPF\0")
        {
            mp = Some((at + 6, tiff::mp_images(block)));
        }
        at += len;
        if marker == 0xDA {
            scans += 1;
            at = match scan_end(view, at) {
                Ok(marker) => marker,
                Err(verdict) => return verdict,
            };
        }
    }
}

/// Where the entropy-coded data from `at` ends: the first marker that is not a restart or
/// a stuffed zero. `Err` with the verdict when there is none: damage when the file ends
/// first, `None` when the data runs into the part not kept.
fn scan_end(view: View<'_>, mut at: u64) -> Result<u64, Option<String>> {
    let end = view.size();
    let no_end = || {
        Some(format!(
            "no end marker after the image data (ends at {})",
            size(end)
        ))
    };
    loop {
        let rest = view.get_upto(at, end);
        if rest.is_empty() {
            return Err(if at < end { None } else { no_end() });
        }
        let mut from = 0;
        while let Some(p) = memchr::memchr(0xFF, &rest[from..]) {
            let i = from + p;
            match rest.get(i + 1) {
                None => break,
                Some(0x00 | 0xD0..=0xD7 | 0xFF) => from = i + 1,
                Some(_) => return Ok(at + i as u64),
            }
        }
        if rest.len() > 1 {
            // Keep a trailing 0xFF for the next round.
            at += rest.len() as u64 - 1;
        } else {
            return Err(if at + 1 >= end { no_end() } else { None });
        }
    }
}

/// The further images of a multi-picture file (MPO) inside the file.
fn mpo(view: View<'_>, base: u64, images: &[(u64, u64)]) -> Option<String> {
    let (i, &(at, len)) = images
        .iter()
        .enumerate()
        .find(|(_, (at, len))| base.saturating_add(*at).saturating_add(*len) > view.size())?;
    Some(past_end(
        &format!("picture {} of the MPO", i + 2),
        view,
        base + at,
        len,
    ))
}

fn jpeg_marker_name(marker: u8) -> String {
    match marker {
        0xE0..=0xEF => format!("APP{}", marker - 0xE0),
        0xDA => "SOS".into(),
        0xC4 => "DHT".into(),
        0xDB => "DQT".into(),
        0xC0..=0xCF => format!("SOF{}", marker - 0xC0),
        0xFE => "COM".into(),
        m => format!("0x{m:02X}"),
    }
}

/// Every chunk inside the file with its CRC right, up to IEND.
fn png(view: View<'_>) -> Option<String> {
    let end = view.size();
    let mut at = 8u64;
    loop {
        if at >= end {
            return Some(format!("no IEND chunk (ends at {})", size(end)));
        }
        let Some(head) = view.get(at, 8) else {
            if at + 8 > end {
                return Some(format!("truncated at {} inside a chunk header", size(end)));
            }
            return None;
        };
        let len = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
        let kind = &head[4..8];
        let total = len.saturating_add(12);
        if at.saturating_add(total) > end {
            return Some(past_end(
                &format!("chunk {}", fourcc(kind)),
                view,
                at,
                total,
            ));
        }
        if let Some(body) = view.get(at + 4, len + 4)
            && let Some(crc) = view.get(at + 8 + len, 4)
        {
            let want = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
            if crc32fast::hash(body) != want {
                return Some(format!("CRC mismatch in {}", fourcc(kind)));
            }
        }
        if kind == b"IEND" {
            return None;
        }
        at += total;
    }
}

/// The blocks walked to the trailer (0x3B).
fn gif(view: View<'_>) -> Option<String> {
    let end = view.size();
    let cut = || Some(format!("no trailer (ends at {})", size(end)));
    let byte = |at: u64| view.get(at, 1).map(|b| b[0]);
    let Some(flags) = byte(10) else {
        return if end < 13 { cut() } else { None };
    };
    let table = |flags: u8| {
        if flags & 0x80 != 0 {
            3u64 << ((flags & 7) + 1)
        } else {
            0
        }
    };
    let mut at = 13 + table(flags);
    // Sub-blocks: a length byte, that many bytes, until a zero length.
    let sub_blocks = |mut at: u64| -> Result<u64, Option<String>> {
        loop {
            if at >= end {
                return Err(cut());
            }
            let Some(n) = byte(at) else {
                return Err(None);
            };
            at += 1 + u64::from(n);
            if n == 0 {
                return Ok(at);
            }
        }
    };
    loop {
        if at >= end {
            return cut();
        }
        let kind = byte(at)?;
        at = match kind {
            0x3B => return None,
            0x21 => match sub_blocks(at + 2) {
                Ok(a) => a,
                Err(e) => return e,
            },
            0x2C => {
                let Some(flags) = byte(at + 9) else {
                    return if at + 10 > end { cut() } else { None };
                };
                // The descriptor, its colour table, the LZW code size, the data.
                match sub_blocks(at + 10 + table(flags) + 1) {
                    Ok(a) => a,
                    Err(e) => return e,
                }
            }
            // Not a block: not judged (readers differ on what follows).
            _ => return None,
        };
    }
}

/// Every strip, tile and main JPEG of IFD0, its SubIFDs and the IFD chain inside the file,
/// and no directory past its end.
fn tiff_data(view: View<'_>, images: Option<&tiff::Images>) -> Option<String> {
    let parsed;
    let images = match images {
        Some(images) => images,
        None => {
            parsed = tiff::images(view.head()).ok()?;
            &parsed
        }
    };
    let end = view.size();
    if let Some(&at) = images.past_the_end.iter().find(|&&at| at >= end) {
        return Some(format!(
            "image directory at {} lies past the end ({})",
            size(at),
            size(end)
        ));
    }
    if view.complete()
        && let Some(at) = images.cut_directory
    {
        return Some(format!(
            "image directory at {} cut short by the end ({})",
            size(at),
            size(end)
        ));
    }
    if let Some((at, len)) = images.data_end
        && at.saturating_add(len) > end
    {
        return Some(past_end("image data", view, at, len));
    }
    let (tag, at, len) = images.value_past_the_end.filter(|_| view.complete())?;
    Some(past_end(
        &format!("the value of tag 0x{tag:04X}"),
        view,
        at,
        len,
    ))
}
