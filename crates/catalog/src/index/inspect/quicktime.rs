//! MP4, MOV, M4V and 3GP: the `moov` box (QuickTime File Format; ISO/IEC 14496-12 §8),
//! which writers that stream put after the media data, at the end of the file (the
//! view's tail).
//!
//! The main video track is the first `trak` whose media handler (`mdia/hdlr`) is
//! `vide`. Its size as displayed is the track header's (`tkhd`) with the header's matrix
//! applied (a phone held upright records landscape pixels and a 90° matrix); the sample
//! description (`stsd`) names the codec and has the coded size for a track header that
//! says 0. The date, make, model, place and Live Photo identifier come from QuickTime
//! metadata (`meta` with `keys` and `ilst`, as Apple writes), else from the user data
//! (`udta`) that cameras and ffmpeg write, else (the date) from the movie header.

use super::Layout;
use super::boxes::{self, BoxHeader};
use super::cursor::{Cursor, fourcc_text};
use super::view::View;
use crate::index::taken::Taken;

/// Whether `head` starts like a QuickTime movie of before `ftyp` (1990s Apple, old
/// cameras): a first box that only a movie starts with, of a plausible size.
pub(super) fn is_classic(head: &[u8]) -> bool {
    let (Some(size), Some(kind)) = (head.get(..4), head.get(4..8)) else {
        return false;
    };
    let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]);
    matches!(
        kind,
        b"moov" | b"mdat" | b"wide" | b"free" | b"skip" | b"pnot"
    ) && (size == 1 || size >= 8)
}

/// What the `moov` box says.
pub(super) fn read(view: View<'_>) -> Layout<'_> {
    let mut out = Layout::default();
    if let Err(e) = read_into(view, &mut out) {
        out.error = Some(e);
    }
    out
}

fn read_into(view: View<'_>, out: &mut Layout<'_>) -> Result<(), String> {
    let mut moov = None;
    for b in boxes::boxes(view, 0, view.size()) {
        match b {
            Ok(b) if &b.kind == b"moov" => {
                moov = Some(b);
                break;
            }
            Ok(_) => {}
            Err(e) => return Err(format!("no moov box before the damage: {e}")),
        }
    }
    let moov = moov.ok_or("no moov box")?;
    let (start, end) = (moov.body, moov.end);
    if let Some(mvhd) = boxes::find(view, start, end, b"mvhd") {
        let body = mvhd.payload(&view).ok_or("the mvhd box was not read")?;
        let (created, duration) = movie_header(body).ok_or("the mvhd box is cut short")?;
        out.meta.duration = duration;
        out.meta.taken = created;
    }
    let mut tags = Tags::default();
    // Apple writes its keys in `moov/meta`; ffmpeg (and some cameras) in `moov/udta/meta`.
    for path in [&[b"meta"][..], &[b"udta", b"meta"]] {
        if let Some(meta) = boxes::find_path(view, start, end, path) {
            read_meta(view, &meta, &mut tags);
        }
    }
    if let Some(udta) = boxes::find(view, start, end, b"udta") {
        read_udta(view, &udta, &mut tags);
    }
    let m = &mut out.meta;
    m.taken = tags.date.or(m.taken.take());
    (m.make, m.model, m.content_id, m.preview) = (tags.make, tags.model, tags.id, tags.cover);
    if let Some(e) = tags.exposure {
        m.make = m.make.take().or(e.make);
        m.model = m.model.take().or(e.model);
        (m.exposure_time, m.f_number) = (e.time, e.f_number);
        (m.iso, m.focal_length) = (e.iso, e.focal_length);
    }
    if let Some((lat, lon, alt)) = tags.place {
        (m.gps_lat, m.gps_lon, m.gps_alt) = (Some(lat), Some(lon), alt);
    }
    let of_kind = |handler: &[u8; 4]| {
        boxes::boxes(view, start, end)
            .map_while(Result::ok)
            .filter(|b| &b.kind == b"trak")
            .find(|trak| {
                let hdlr = boxes::find_path(view, trak.body, trak.end, &[b"mdia", b"hdlr"]);
                hdlr.and_then(|h| view.get(h.body + 8, 4)) == Some(handler.as_slice())
            })
    };
    if let Some(track) = of_kind(b"vide") {
        return read_track(view, &track, out);
    }
    // Sound alone (a voice memo, a song): audio, its codec the sound track's.
    let track = of_kind(b"soun")
        .ok_or("no video or audio track (a trak whose mdia/hdlr is vide or soun)")?;
    out.audio = true;
    out.meta.codec = sample_entry(view, &track).and_then(|e| fourcc_text(&e.kind));
    Ok(())
}

/// The first sample entry of a track's `stsd`: a box after the full box's version, flags
/// and count.
fn sample_entry(view: View<'_>, trak: &BoxHeader) -> Option<BoxHeader> {
    let stsd = boxes::find_path(
        view,
        trak.body,
        trak.end,
        &[b"mdia", b"minf", b"stbl", b"stsd"],
    )?;
    boxes::boxes(view, stsd.body + 8, stsd.end).next()?.ok()
}

/// The creation date (when not zero) and the duration in seconds.
fn movie_header(body: &[u8]) -> Option<(Option<String>, Option<f64>)> {
    let mut c = Cursor::new(body);
    let version = c.u8()?;
    c.skip(3)?;
    let (created, scale, duration) = if version == 1 {
        let created = c.u64()?;
        c.skip(8)?;
        (created, c.u32()?, c.u64()?)
    } else {
        let created = u64::from(c.u32()?);
        c.skip(4)?;
        let (scale, duration) = (c.u32()?, c.u32()?);
        // All ones: the duration is not known (ISO/IEC 14496-12 §8.2.2.3).
        let duration = if duration == u32::MAX {
            u64::MAX
        } else {
            u64::from(duration)
        };
        (created, scale, duration)
    };
    let duration = (scale > 0 && duration != u64::MAX).then(|| duration as f64 / f64::from(scale));
    // Seconds since 1904-01-01 UTC, as the specifications say (some old cameras wrote
    // their local time, which exiftool's QuickTimeUTC option exists for): written `Z`.
    let created = (created != 0)
        .then(|| created.checked_sub(EPOCH_1904))
        .flatten()
        .and_then(|s| i64::try_from(s).ok())
        .and_then(|s| Taken::from_unix(s, true))
        .map(|t| t.to_string());
    Some((created, duration))
}

/// Seconds from 1904-01-01 to 1970-01-01.
const EPOCH_1904: u64 = 2_082_844_800;

/// The metadata found in `meta` and `udta`, the first of each kind kept.
#[derive(Default)]
struct Tags {
    date: Option<String>,
    make: Option<String>,
    model: Option<String>,
    place: Option<(f64, f64, Option<f64>)>,
    id: Option<String>,
    cover: Option<(u64, u64)>,
    /// The exposure, from a camera maker's own atom.
    exposure: Option<Exposure>,
}

/// What Pentax's movie atom says about the exposure.
#[derive(Debug, Default, PartialEq)]
struct Exposure {
    make: Option<String>,
    model: Option<String>,
    time: Option<f64>,
    f_number: Option<f64>,
    iso: Option<u32>,
    focal_length: Option<f64>,
}

impl Tags {
    /// Keeps `value` for the item named `name` (a QuickTime key or an iTunes-style item
    /// type).
    fn set(&mut self, name: &[u8], value: &str) {
        let fill = |field: &mut Option<String>| {
            if field.is_none() && !value.trim().is_empty() {
                *field = Some(value.trim().to_string());
            }
        };
        match name {
            b"com.apple.quicktime.creationdate" | b"\xA9day" if self.date.is_none() => {
                self.date = Taken::iso(value).map(|t| t.to_string());
            }
            b"com.apple.quicktime.make" | b"\xA9mak" => fill(&mut self.make),
            b"com.apple.quicktime.model" | b"\xA9mod" => fill(&mut self.model),
            b"com.apple.quicktime.content.identifier" => fill(&mut self.id),
            b"com.apple.quicktime.location.ISO6709" | b"\xA9xyz" if self.place.is_none() => {
                self.place = iso6709(value);
            }
            _ => {}
        }
    }
}

/// The items of a `meta` box's `ilst`: named by `keys` (QuickTime metadata) or by their
/// own type (iTunes-style).
fn read_meta(view: View<'_>, meta: &BoxHeader, tags: &mut Tags) {
    let start = boxes::full_box_children(view, meta);
    let mut keys: Vec<&[u8]> = Vec::new();
    if let Some(body) = boxes::find(view, start, meta.end, b"keys").and_then(|k| k.payload(&view)) {
        let mut c = Cursor::new(body);
        let count = c.skip(4).and_then(|()| c.u32()).unwrap_or(0);
        for _ in 0..count.min(4096) {
            let Some(size) = c.u32().map(|s| s as usize) else {
                break;
            };
            // A key's size counts its 4-byte size and 4-byte namespace.
            match size.checked_sub(8).and_then(|n| c.skip(4).and(c.take(n))) {
                Some(name) => keys.push(name),
                None => break,
            }
        }
    }
    let Some(ilst) = boxes::find(view, start, meta.end, b"ilst") else {
        return;
    };
    for item in boxes::boxes(view, ilst.body, ilst.end).map_while(Result::ok) {
        if item.body == item.end {
            continue;
        }
        let Some(data) = boxes::find(view, item.body, item.end, b"data") else {
            continue;
        };
        // The `data` payload: a type indicator, a locale, then the value.
        let Some(value) = view.get(data.body + 8, data.len().saturating_sub(8)) else {
            continue;
        };
        if data.len() < 8 {
            continue;
        }
        let kind = view
            .get(data.body, 4)
            .map(|k| u32::from_be_bytes([k[0], k[1], k[2], k[3]]));
        if &item.kind == b"covr" && tags.cover.is_none() {
            // Well-known type 13 is JPEG; a JPEG typed otherwise is still one.
            if kind == Some(13) || value.starts_with(&[0xFF, 0xD8, 0xFF]) {
                tags.cover = Some((data.body + 8, value.len() as u64));
            }
            continue;
        }
        // Well-known type 1 is UTF-8 text; others (numbers, images) are not read.
        if kind != Some(1) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(value) else {
            continue;
        };
        let index = u32::from_be_bytes(item.kind) as usize;
        let name = if keys.is_empty() {
            &item.kind[..]
        } else {
            match index.checked_sub(1).and_then(|i| keys.get(i)) {
                Some(name) => name,
                None => continue,
            }
        };
        tags.set(name, text);
    }
}

/// QuickTime user data text items: `©day`, `©mak`, `©mod`, `©xyz`, each a list of a
/// 16-bit length, a 16-bit language and the text (the first is read); the 3GPP
/// location `loci` (which ffmpeg writes in MP4 files); and Pentax's `TAGS` and `PENT`.
fn read_udta(view: View<'_>, udta: &BoxHeader, tags: &mut Tags) {
    for item in boxes::boxes(view, udta.body, udta.end).map_while(Result::ok) {
        if &item.kind == b"loci" && tags.place.is_none() {
            tags.place = item.payload(&view).and_then(location);
            continue;
        }
        if matches!(&item.kind, b"TAGS" | b"PENT") && tags.exposure.is_none() {
            tags.exposure = item
                .payload(&view)
                .and_then(|body| pentax(&item.kind, body));
            continue;
        }
        if !matches!(
            &item.kind,
            b"\xA9day" | b"\xA9mak" | b"\xA9mod" | b"\xA9xyz"
        ) {
            continue;
        }
        let Some(body) = item.payload(&view) else {
            continue;
        };
        let mut c = Cursor::new(body);
        let text = c
            .u16()
            .and_then(|len| c.skip(2).and(c.take(usize::from(len))))
            .and_then(|t| std::str::from_utf8(t).ok());
        if let Some(text) = text {
            tags.set(&item.kind, text.trim_end_matches('\0'));
        }
    }
}

/// Where Pentax puts each field in its movies' binary atoms, little-endian (exiftool's
/// `Pentax::MOV` for `TAGS`, which the Optio WP writes, and `Pentax::PENT` for `PENT`,
/// the Optio WG-2 GPS's): the make (24 bytes of text) at 0, the model (the same) in
/// `PENT` at 0x1A, then the exposure time t stored as 10 / t (384 for 1/38.4 s),
/// the f-number (a rational), the focal length (a rational in `TAGS`, whole millimetres
/// in `PENT`) and the ISO (16 bits in `TAGS`, 32 in `PENT`).
fn pentax(kind: &[u8; 4], body: &[u8]) -> Option<Exposure> {
    let tags = kind == b"TAGS";
    // `TAGS` is shared with other makers, each starting with its own name.
    if tags && !body.starts_with(b"PENTAX DIGITAL CAMERA\0") {
        return None;
    }
    let (model, time, f_number, focal, iso) = if tags {
        (None, 0x26, 0x2A, 0x48, 0xAF)
    } else {
        (Some(0x1A), 0x38, 0x3C, 0x54, 0xA7)
    };
    let bytes = |at: usize, n: usize| body.get(at..at + n);
    let u16_at = |at| bytes(at, 2).map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])));
    let u32_at = |at| bytes(at, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let text = |at: usize| {
        let b = body.get(at..(at + 24).min(body.len()))?;
        let b = b.split(|&c| c == 0).next().unwrap_or_default();
        let s = String::from_utf8_lossy(b).trim().to_string();
        (!s.is_empty()).then_some(s)
    };
    // A zero is a field the camera did not fill (exiftool shows it as 0).
    let nonzero = |x: f64| (x.is_finite() && x > 0.0).then_some(x);
    let rational = |at: usize| {
        let (n, d) = (u32_at(at)?, u32_at(at + 4)?);
        nonzero(f64::from(n) / f64::from(d))
    };
    Some(Exposure {
        make: text(0),
        model: model.and_then(text),
        time: u32_at(time).and_then(|v| nonzero(10.0 / f64::from(v))),
        f_number: rational(f_number),
        focal_length: if tags {
            rational(focal)
        } else {
            u32_at(focal).and_then(|v| nonzero(f64::from(v)))
        },
        iso: if tags { u16_at(iso) } else { u32_at(iso) }.filter(|&v| v > 0),
    })
}

/// The place in a 3GPP `loci` box (3GPP TS 26.244 §8.10): after the full box's version
/// and flags, a language and a NUL-terminated name, a role byte, then longitude,
/// latitude and altitude in signed 16.16 fixed point.
fn location(body: &[u8]) -> Option<(f64, f64, Option<f64>)> {
    let name = body.get(6..)?;
    let end = name.iter().position(|&b| b == 0)?;
    let mut c = Cursor::new(name.get(end + 2..)?);
    let mut fixed = || c.u32().map(|v| f64::from(v as i32) / 65_536.0);
    let (lon, lat, alt) = (fixed()?, fixed()?, fixed()?);
    (lat.abs() <= 90.0 && lon.abs() <= 180.0).then_some((lat, lon, Some(alt)))
}

/// A place in ISO 6709 (`+37.3318-122.0312+010.000/`): latitude, longitude and
/// altitude, in degrees (`±DD.D`, `±DDMM.M`, `±DDMMSS.S`) and metres.
pub(super) fn iso6709(value: &str) -> Option<(f64, f64, Option<f64>)> {
    let mut parts = Vec::new();
    let bytes = value.trim().as_bytes();
    let mut at = 0;
    while parts.len() < 3 {
        let Some(&sign) = bytes.get(at) else { break };
        if sign != b'+' && sign != b'-' {
            break;
        }
        let n = bytes[at + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || **c == b'.')
            .count();
        parts.push(&value.trim()[at..at + 1 + n]);
        at += 1 + n;
    }
    let angle = |text: &str, degree_digits: usize, limit: f64| -> Option<f64> {
        let negative = text.starts_with('-');
        let unsigned = &text[1..];
        let whole = unsigned.find('.').unwrap_or(unsigned.len());
        let x: f64 = unsigned.parse().ok()?;
        // The digits before the point say the form: degrees, then minutes, then seconds.
        let d = match whole.checked_sub(degree_digits)? {
            0 => x,
            2 => (x / 100.0).trunc() + (x % 100.0) / 60.0,
            4 => (x / 10_000.0).trunc() + (x / 100.0 % 100.0).trunc() / 60.0 + (x % 100.0) / 3600.0,
            _ => return None,
        };
        (d.is_finite() && d <= limit).then_some(if negative { -d } else { d })
    };
    let lat = angle(parts.first()?, 2, 90.0)?;
    let lon = angle(parts.get(1)?, 3, 180.0)?;
    let alt = parts
        .get(2)
        .and_then(|a| a.parse::<f64>().ok())
        .filter(|a| a.is_finite());
    Some((lat, lon, alt))
}

/// The displayed size, rotation and codec of a video track.
fn read_track(view: View<'_>, trak: &BoxHeader, out: &mut Layout<'_>) -> Result<(), String> {
    let tkhd =
        boxes::find(view, trak.body, trak.end, b"tkhd").ok_or("the video track has no tkhd box")?;
    let body = tkhd.payload(&view).ok_or("the tkhd box was not read")?;
    let (matrix, width, height) = track_header(body).ok_or("the tkhd box is cut short")?;
    let entry = sample_entry(view, trak);
    out.meta.codec = entry.and_then(|e| fourcc_text(&e.kind));
    let (mut width, mut height) = (width, height);
    if width == 0 || height == 0 {
        // A visual sample entry: 24 bytes of fields, then its width and height.
        let coded = entry.and_then(|e| view.get(e.body + 24, 4)).map(|s| {
            (
                u64::from(u16::from_be_bytes([s[0], s[1]])),
                u64::from(u16::from_be_bytes([s[2], s[3]])),
            )
        });
        (width, height) =
            coded.ok_or("the video track has no size (tkhd says 0, no stsd entry)")?;
    }
    let rotation = rotation(matrix);
    if matches!(rotation, Some(90 | 270)) {
        (width, height) = (height, width);
    }
    out.meta.rotation = rotation;
    (out.width, out.height) = (Some(width), Some(height));
    Ok(())
}

/// The matrix's a, b, c, d and the width and height (16.16 fixed point, rounded).
fn track_header(body: &[u8]) -> Option<([i32; 4], u64, u64)> {
    let mut c = Cursor::new(body);
    let version = c.u8()?;
    // Flags; times, track ID, reserved, duration; reserved, layer, group, volume, reserved.
    c.skip(3 + if version == 1 { 32 } else { 20 } + 16)?;
    let mut m = [0i32; 9];
    for v in &mut m {
        *v = c.u32()? as i32;
    }
    let fixed = |v: u32| (u64::from(v) + 0x8000) >> 16;
    let (w, h) = (c.u32()?, c.u32()?);
    Some(([m[0], m[1], m[3], m[4]], fixed(w), fixed(h)))
}

/// Degrees clockwise of the matrix `[a, b, c, d]`: the four rotations, told by the signs
/// (a scaled matrix turns the same way); `None` for a mirror or a shear.
fn rotation([a, b, c, d]: [i32; 4]) -> Option<u32> {
    match (a.signum(), b.signum(), c.signum(), d.signum()) {
        (1, 0, 0, 1) => Some(0),
        (0, 1, -1, 0) => Some(90),
        (-1, 0, 0, -1) => Some(180),
        (0, -1, 1, 0) => Some(270),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::index::inspect::boxes::tests::bx;

    fn full(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        bx(kind, &[&[0, 0, 0, 0], body].concat())
    }

    /// A version-0 `tkhd` with the matrix `[a, b, c, d]` (in units of 1.0) and a size.
    pub(crate) fn tkhd(abcd: [i32; 4], w: u32, h: u32) -> Vec<u8> {
        let mut b = vec![0; 40];
        let [a, bb, c, d] = abcd.map(|v| v << 16);
        for v in [a, bb, 0, c, d, 0, 0, 0, 0x4000_0000] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(&(w << 16).to_be_bytes());
        b.extend_from_slice(&(h << 16).to_be_bytes());
        bx(b"tkhd", &b)
    }

    pub(crate) fn trak(
        handler: &[u8; 4],
        tkhd: Vec<u8>,
        codec: &[u8; 4],
        w: u16,
        h: u16,
    ) -> Vec<u8> {
        let mut entry = vec![0; 24];
        entry.extend_from_slice(&w.to_be_bytes());
        entry.extend_from_slice(&h.to_be_bytes());
        entry.extend_from_slice(&[0; 50]);
        let stsd = full(
            b"stsd",
            &[&1u32.to_be_bytes()[..], &bx(codec, &entry)].concat(),
        );
        let hdlr = full(b"hdlr", &[&[0; 4][..], handler, &[0; 12]].concat());
        let minf = bx(b"minf", &bx(b"stbl", &stsd));
        bx(
            b"trak",
            &[tkhd, bx(b"mdia", &[hdlr, minf].concat())].concat(),
        )
    }

    /// A version-0 `mvhd`: created at `created` (seconds since 1904), 600 units a second.
    fn mvhd(created: u32, duration: u32) -> Vec<u8> {
        let mut b = created.to_be_bytes().to_vec();
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&600u32.to_be_bytes());
        b.extend_from_slice(&duration.to_be_bytes());
        b.extend_from_slice(&[0; 80]);
        full(b"mvhd", &b)
    }

    fn data(kind: u32, value: &[u8]) -> Vec<u8> {
        bx(b"data", &[&kind.to_be_bytes()[..], &[0; 4], value].concat())
    }

    /// QuickTime metadata: `keys` and their `ilst` values (UTF-8).
    fn keyed(pairs: &[(&str, &str)]) -> Vec<u8> {
        let mut keys = (pairs.len() as u32).to_be_bytes().to_vec();
        let mut ilst = Vec::new();
        for (i, (k, v)) in pairs.iter().enumerate() {
            keys.extend_from_slice(&(k.len() as u32 + 8).to_be_bytes());
            keys.extend_from_slice(b"mdta");
            keys.extend_from_slice(k.as_bytes());
            ilst.extend(bx(&(i as u32 + 1).to_be_bytes(), &data(1, v.as_bytes())));
        }
        let hdlr = full(b"hdlr", &[&[0; 4][..], b"mdta", &[0; 13]].concat());
        bx(
            b"meta",
            &[hdlr, full(b"keys", &keys), bx(b"ilst", &ilst)].concat(),
        )
    }

    fn text(kind: &[u8; 4], value: &str) -> Vec<u8> {
        let mut b = (value.len() as u16).to_be_bytes().to_vec();
        b.extend_from_slice(&[0x15, 0xC7]);
        b.extend_from_slice(value.as_bytes());
        bx(kind, &b)
    }

    pub(crate) fn movie(moov: &[Vec<u8>], mdat: usize, moov_last: bool) -> Vec<u8> {
        let ftyp = bx(b"ftyp", b"qt  \0\0\0\0qt  ");
        let (moov, mdat) = (bx(b"moov", &moov.concat()), bx(b"mdat", &vec![0; mdat]));
        if moov_last {
            [ftyp, mdat, moov].concat()
        } else {
            [ftyp, moov, mdat].concat()
        }
    }

    #[test]
    fn the_main_video_track_is_read_with_apples_metadata() {
        let id = "5A8D8B5C-2B7E-4B2B-9D4D-2D2D5E7B1C11";
        let moov = [
            mvhd(3_692_000_000, 1500),
            trak(b"soun", tkhd([1, 0, 0, 1], 0, 0), b"mp4a", 0, 0),
            trak(b"vide", tkhd([1, 0, 0, 1], 1920, 1080), b"hvc1", 1920, 1080),
            keyed(&[
                ("com.apple.quicktime.make", "Apple"),
                ("com.apple.quicktime.model", "iPhone 12"),
                (
                    "com.apple.quicktime.creationdate",
                    "2021-01-02T03:04:05+0100",
                ),
                (
                    "com.apple.quicktime.location.ISO6709",
                    "+37.3318-122.0312+010.000/",
                ),
                ("com.apple.quicktime.content.identifier", id),
            ]),
        ];
        let file = movie(&moov, 100, false);
        let out = read(View::whole(&file));
        assert_eq!(out.error, None);
        assert_eq!((out.width, out.height), (Some(1920), Some(1080)));
        let m = &out.meta;
        assert_eq!(m.codec.as_deref(), Some("hvc1"));
        assert_eq!(m.rotation, Some(0));
        assert_eq!(m.duration, Some(2.5));
        assert_eq!(m.taken.as_deref(), Some("2021-01-02T03:04:05+01:00"));
        assert_eq!(
            (m.make.as_deref(), m.model.as_deref()),
            (Some("Apple"), Some("iPhone 12"))
        );
        assert_eq!(
            (m.gps_lat, m.gps_lon, m.gps_alt),
            (Some(37.3318), Some(-122.0312), Some(10.0))
        );
        assert_eq!(m.content_id.as_deref(), Some(id));
    }

    #[test]
    fn the_matrix_turns_the_displayed_size() {
        for (abcd, rotation, size) in [
            ([0, 1, -1, 0], Some(90), (240, 320)),
            ([-1, 0, 0, -1], Some(180), (320, 240)),
            ([0, -1, 1, 0], Some(270), (240, 320)),
            ([-1, 0, 0, 1], None, (320, 240)),
        ] {
            let file = movie(
                &[trak(b"vide", tkhd(abcd, 320, 240), b"avc1", 320, 240)],
                0,
                false,
            );
            let out = read(View::whole(&file));
            assert_eq!(out.meta.rotation, rotation, "{abcd:?}");
            assert_eq!((out.width, out.height), (Some(size.0), Some(size.1)));
        }
        // A track header without a size: the sample entry's coded size, turned.
        let file = movie(
            &[trak(b"vide", tkhd([0, 1, -1, 0], 0, 0), b"jpeg", 640, 480)],
            0,
            false,
        );
        let out = read(View::whole(&file));
        assert_eq!((out.width, out.height), (Some(480), Some(640)));
    }

    #[test]
    fn user_data_and_the_movie_header_stand_in_for_missing_metadata() {
        let cover = [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3];
        let ilst = bx(b"ilst", &bx(b"covr", &data(13, &cover)));
        let udta = bx(
            b"udta",
            &[
                text(b"\xA9mak", "Pentax"),
                text(b"\xA9xyz", "+3518.50+13938.25/"),
                full(b"meta", &[full(b"hdlr", &[0; 21]), ilst].concat()),
            ]
            .concat(),
        );
        // 2005-08-11 14:03:54, as seconds since 1904.
        let moov = [
            mvhd(3_206_613_834, 600),
            udta,
            trak(b"vide", tkhd([1, 0, 0, 1], 8, 6), b"jpeg", 8, 6),
        ];
        let file = movie(&moov, 0, false);
        let out = read(View::whole(&file));
        let m = &out.meta;
        assert_eq!(m.taken.as_deref(), Some("2005-08-11T14:03:54+00:00"));
        assert_eq!(m.make.as_deref(), Some("Pentax"));
        assert_eq!(m.gps_lat, Some(35.0 + 18.5 / 60.0));
        assert_eq!(m.gps_lon, Some(139.0 + 38.25 / 60.0));
        let at = file
            .windows(4)
            .position(|w| w == [0xFF, 0xD8, 0xFF, 0xE0])
            .unwrap();
        assert_eq!(m.preview, Some((at as u64, 7)));
        // A zero creation time is no date.
        let file = movie(&[mvhd(0, 600)], 0, false);
        assert_eq!(read(View::whole(&file)).meta.taken, None);
    }

    /// Pentax's `TAGS` atom as the Optio WP writes it: 1/38.4 s, f/4, 18.9 mm, ISO 50.
    fn pentax_tags() -> Vec<u8> {
        let mut b = b"PENTAX DIGITAL CAMERA".to_vec();
        b.resize(0xB1, 0);
        b[0x20] = 1;
        b[0x26..0x2A].copy_from_slice(&384u32.to_le_bytes());
        for (at, n, d) in [(0x2A, 40u32, 10u32), (0x32, 0, 10), (0x48, 189, 10)] {
            b[at..at + 4].copy_from_slice(&n.to_le_bytes());
            b[at + 4..at + 8].copy_from_slice(&d.to_le_bytes());
        }
        b[0xAF..0xB1].copy_from_slice(&50u16.to_le_bytes());
        b
    }

    #[test]
    fn a_pentax_movie_has_the_make_and_exposure_of_its_tags_atom() {
        let udta = bx(
            b"udta",
            &[
                text(b"\xA9fmt", "Digital Camera"),
                bx(b"TAGS", &pentax_tags()),
            ]
            .concat(),
        );
        let moov = [
            udta,
            trak(b"vide", tkhd([1, 0, 0, 1], 320, 240), b"jpeg", 320, 240),
        ];
        let file = movie(&moov, 0, false);
        let out = read(View::whole(&file));
        assert_eq!(out.error, None);
        let m = &out.meta;
        assert_eq!(m.make.as_deref(), Some("PENTAX DIGITAL CAMERA"));
        assert_eq!(m.exposure_time, Some(10.0 / 384.0));
        assert_eq!(m.f_number, Some(4.0));
        assert_eq!(m.focal_length, Some(18.9));
        assert_eq!(m.iso, Some(50));
        // The `PENT` atom of the Optio WG-2 GPS: a model too, whole millimetres, 32-bit ISO.
        let mut pent = b"PENTAX".to_vec();
        pent.resize(0xAB, 0);
        pent[0x1A..0x1F].copy_from_slice(b"WG-2 ");
        pent[0x38..0x3C].copy_from_slice(&600u32.to_le_bytes());
        pent[0x3C..0x40].copy_from_slice(&28u32.to_le_bytes());
        pent[0x40..0x44].copy_from_slice(&10u32.to_le_bytes());
        pent[0x54..0x58].copy_from_slice(&5u32.to_le_bytes());
        pent[0xA7..0xAB].copy_from_slice(&125u32.to_le_bytes());
        let e = pentax(b"PENT", &pent).unwrap();
        assert_eq!(
            (e.make.as_deref(), e.model.as_deref()),
            (Some("PENTAX"), Some("WG-2"))
        );
        assert_eq!((e.time, e.f_number), (Some(10.0 / 600.0), Some(2.8)));
        assert_eq!((e.focal_length, e.iso), (Some(5.0), Some(125)));
    }

    #[test]
    fn another_makers_or_a_cut_short_tags_atom_gives_what_it_holds() {
        // Another maker's `TAGS` is not Pentax's layout.
        let mut other = pentax_tags();
        other[..6].copy_from_slice(b"NIKON ");
        assert_eq!(pentax(b"TAGS", &other), None);
        // Cut before the ISO, then before the exposure: those are none.
        let tags = pentax_tags();
        let e = pentax(b"TAGS", &tags[..0xB0]).unwrap();
        assert_eq!((e.f_number, e.iso), (Some(4.0), None));
        let e = pentax(b"TAGS", &tags[..0x28]).unwrap();
        assert_eq!(e.make.as_deref(), Some("PENTAX DIGITAL CAMERA"));
        assert_eq!((e.time, e.f_number, e.focal_length), (None, None, None));
        // Zeros (an exposure of 0, a rational of 0/0) are fields not filled.
        let mut zeros = pentax_tags();
        zeros[0x26..0x32].fill(0);
        let e = pentax(b"TAGS", &zeros).unwrap();
        assert_eq!((e.time, e.f_number), (None, None));
        // A TAGS box that claims more bytes than its udta has is not read.
        let mut atom = bx(b"TAGS", &tags);
        atom[..4].copy_from_slice(&100_000u32.to_be_bytes());
        let moov = [
            bx(b"udta", &atom),
            trak(b"vide", tkhd([1, 0, 0, 1], 8, 6), b"jpeg", 8, 6),
        ];
        let file = movie(&moov, 0, false);
        let out = read(View::whole(&file));
        assert_eq!((out.meta.make, out.meta.iso), (None, None));
    }

    #[test]
    fn a_moov_after_the_media_data_is_found_in_the_tail() {
        let moov = [
            mvhd(0, 6000),
            trak(b"vide", tkhd([1, 0, 0, 1], 64, 48), b"avc1", 64, 48),
        ];
        let file = movie(&moov, 100_000, true);
        let tail = &file[file.len() - 1000..];
        let out = read(View::new(&file[..4096], tail, file.len() as u64));
        assert_eq!(out.error, None);
        assert_eq!(
            (out.width, out.height, out.meta.duration),
            (Some(64), Some(48), Some(10.0))
        );
        // Without the tail, the moov box was not read: a named error.
        let out = read(View::new(&file[..4096], &[], file.len() as u64));
        assert!(out.error.unwrap().contains("no moov box"));
    }

    #[test]
    fn lying_sizes_and_garbage_are_named_errors() {
        let mut file = movie(
            &[trak(b"vide", tkhd([1, 0, 0, 1], 64, 48), b"avc1", 64, 48)],
            0,
            false,
        );
        let moov_at = 20;
        file[moov_at..moov_at + 4].copy_from_slice(&100_000u32.to_be_bytes());
        let error = read(View::whole(&file)).error.unwrap();
        assert!(
            error.contains("moov box at byte 20 claims 100000 bytes"),
            "{error}"
        );
        // Sound alone is audio, its codec the sound track's; nothing at all is an error.
        let file = movie(
            &[trak(b"soun", tkhd([1, 0, 0, 1], 0, 0), b"mp4a", 0, 0)],
            0,
            false,
        );
        let out = read(View::whole(&file));
        assert_eq!(out.error, None);
        assert!(out.audio);
        assert_eq!(out.meta.codec.as_deref(), Some("mp4a"));
        assert_eq!((out.width, out.height), (None, None));
        let file = movie(&[], 0, false);
        assert!(
            read(View::whole(&file))
                .error
                .unwrap()
                .contains("no video or audio track")
        );
        let out = read(View::whole(b"\0\0\0\x08wide garbage \xff\xff"));
        assert!(out.error.is_some());
        assert_eq!(out.width, None);
    }

    #[test]
    fn dates_and_places_are_parsed_strictly() {
        assert_eq!(
            iso6709("-33.8688+151.2093/"),
            Some((-33.8688, 151.2093, None))
        );
        assert_eq!(iso6709("+95.0+010.0/"), None);
        assert_eq!(iso6709("garbage"), None);
        let mut loci = vec![0, 0, 0, 0, 0x15, 0xC7, b'x', 0, 0];
        for v in [-122.5f64, 37.25, 10.0] {
            loci.extend_from_slice(&((v * 65_536.0) as i32).to_be_bytes());
        }
        assert_eq!(location(&loci), Some((37.25, -122.5, Some(10.0))));
        assert_eq!(location(&loci[..16]), None);
    }
}
