//! AVI (RIFF `AVI `): the main header `hdrl/avih` (frame time, frame count, size), the
//! first video stream's `strh` and `strf` (codec, and the size when `avih` says 0), and
//! the date: `IDIT` (in `hdrl` or at the top, as cameras write it), else `INFO/ICRD`.
//! References: the OpenDML AVI File Format Extensions; Microsoft's AVIMAINHEADER,
//! AVISTREAMHEADER and BITMAPINFOHEADER.

use super::Layout;
use super::cursor::{Cursor, fourcc_text};
use super::view::View;

/// The most chunks walked in one list.
const MAX_CHUNKS: usize = 10_000;

/// What was found, before it is turned into a layout.
#[derive(Default)]
struct Found {
    /// Microseconds per frame, total frames, width, height (`avih`).
    main: Option<(u32, u32, u32, u32)>,
    /// The first video stream: handler, scale, rate, length (`strh`).
    stream: Option<([u8; 4], u32, u32, u32)>,
    /// Its format: compression, width, height (`strf`).
    format: Option<([u8; 4], u32, u32)>,
    idit: Option<String>,
    icrd: Option<String>,
}

/// What the RIFF chunks say.
pub(super) fn read(view: View<'_>) -> Layout<'_> {
    let mut out = Layout::default();
    let mut found = Found::default();
    let end = view
        .get(4, 4)
        .map(|s| 8 + u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]])))
        .unwrap_or(0);
    // A RIFF size past the file's end (a recording cut short) is walked to the end.
    if let Err(e) = walk(view, 12, end.min(view.size()), 0, &mut found) {
        out.error = Some(e);
    }
    let Some((us_per_frame, frames, w, h)) = found.main else {
        out.error
            .get_or_insert_with(|| "no hdrl/avih header".into());
        return out;
    };
    let (w, h) = match (w, h, found.format) {
        (0, _, Some((_, fw, fh))) | (_, 0, Some((_, fw, fh))) => (fw, fh),
        _ => (w, h),
    };
    (out.width, out.height) = (Some(u64::from(w)), Some(u64::from(h)));
    out.meta.codec = found
        .format
        .and_then(|(c, _, _)| fourcc_text(&c))
        .or_else(|| found.stream.and_then(|(c, ..)| fourcc_text(&c)));
    // exiftool's rule: the main header's frames × frame time, unless the video stream's
    // length says 2 to 3 times less (main headers that count every stream's frames).
    let main = (us_per_frame > 0).then(|| f64::from(frames) * f64::from(us_per_frame) / 1e6);
    let stream = found
        .stream
        .filter(|&(_, scale, rate, length)| scale > 0 && rate > 0 && length > 0)
        .map(|(_, scale, rate, length)| f64::from(length) * f64::from(scale) / f64::from(rate));
    out.meta.duration = match (main, stream) {
        (Some(m), Some(s)) if (1.9..3.1).contains(&(m / s)) => Some(s),
        (Some(m), _) => Some(m),
        (None, s) => s,
    };
    out.meta.taken = found.idit.or(found.icrd);
    if let Some(e) = out.error.take() {
        // The headers were read; damage further on (a recording cut short) is a warning.
        out.warn(e);
    }
    out
}

fn walk(view: View<'_>, start: u64, end: u64, depth: u8, found: &mut Found) -> Result<(), String> {
    let mut at = start;
    let mut in_video_stream = false;
    for _ in 0..MAX_CHUNKS {
        if end.saturating_sub(at) < 8 {
            break;
        }
        let Some(head) = view.get(at, 8) else {
            // The chunks after the media data were not kept: nothing more is read.
            return Ok(());
        };
        let id = [head[0], head[1], head[2], head[3]];
        let size = u64::from(u32::from_le_bytes([head[4], head[5], head[6], head[7]]));
        let body = at + 8;
        let chunk_end = body.saturating_add(size);
        if chunk_end > end {
            let name = match (&id, view.get(body, 4)) {
                (b"LIST", Some(kind)) => format!("{} list", String::from_utf8_lossy(kind)),
                _ => format!("{} chunk", String::from_utf8_lossy(&id)),
            };
            return Err(format!(
                "the {name} at byte {at} claims {size} bytes, past its container"
            ));
        }
        let data = || view.get(body, size);
        match &id {
            b"LIST" if depth < 2 => {
                let kind = view.get(body, 4).unwrap_or_default();
                if matches!(kind, b"hdrl" | b"strl" | b"INFO") {
                    walk(view, body + 4, chunk_end, depth + 1, found)?;
                }
            }
            b"avih" => {
                found.main = data().and_then(|d| {
                    let mut c = Cursor::new(d);
                    let us = c.u32_le()?;
                    c.skip(12)?;
                    let frames = c.u32_le()?;
                    c.skip(12)?;
                    Some((us, frames, c.u32_le()?, c.u32_le()?))
                });
            }
            b"strh" if found.stream.is_none() => {
                let d = data().unwrap_or_default();
                if d.get(..4) == Some(b"vids") {
                    in_video_stream = true;
                    let mut c = Cursor::new(&d[4..]);
                    found.stream = (|| {
                        let handler = c.fourcc()?;
                        c.skip(12)?;
                        let (scale, rate) = (c.u32_le()?, c.u32_le()?);
                        c.skip(4)?;
                        Some((handler, scale, rate, c.u32_le()?))
                    })();
                }
            }
            b"strf" if in_video_stream && found.format.is_none() => {
                found.format = data().and_then(|d| {
                    let mut c = Cursor::new(d);
                    c.skip(4)?;
                    let w = c.u32_le()?;
                    // A negative height is a top-down bitmap.
                    let h = (c.u32_le()? as i32).unsigned_abs();
                    c.skip(4)?;
                    Some((c.fourcc()?, w, h))
                });
            }
            b"IDIT" if found.idit.is_none() => found.idit = data().and_then(riff_date),
            b"ICRD" if found.icrd.is_none() => found.icrd = data().and_then(riff_date),
            _ => {}
        }
        at = chunk_end + (size & 1);
    }
    Ok(())
}

/// A RIFF date as the catalog writes dates, in the forms exiftool reads: `Mon Mar 10
/// 15:04:43 2003` (the standard), `2002-12-16  15:35:01` and `2001/ 1/27  1:42PM`.
fn riff_date(data: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(data.split(|&b| b == 0).next()?).ok()?;
    let parts: Vec<&str> = text.split_whitespace().collect();
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let num = |s: &str| s.trim().parse::<u32>().ok();
    let (y, mo, d, time) = if parts.len() >= 5
        && let Some(m) = MONTHS.iter().position(|m| parts[1].eq_ignore_ascii_case(m))
    {
        (
            num(parts[4])?,
            m as u32 + 1,
            num(parts[2])?,
            parts[3].to_string(),
        )
    } else {
        // `YYYY-MM-DD HH:MM:SS` or `YYYY/ M/ D[/] H:MM[PM]`: numbers, in order.
        let pm = text.contains("PM") || text.contains("pm");
        let numbers: Vec<u32> = text
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(num)
            .collect();
        let [y, mo, d, h, mi, rest @ ..] = numbers.as_slice() else {
            return None;
        };
        let h = if pm && *h < 12 { h + 12 } else { *h };
        let s = rest.first().copied().unwrap_or(0);
        (*y, *mo, *d, format!("{h:02}:{mi:02}:{s:02}"))
    };
    let t: Vec<u32> = time.split(':').filter_map(num).collect();
    let [h, mi, s] = t.as_slice() else {
        return None;
    };
    crate::index::taken::Taken::new(y, mo, d, *h, *mi, *s).map(|t| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut c = id.to_vec();
        c.extend_from_slice(&(body.len() as u32).to_le_bytes());
        c.extend_from_slice(body);
        if body.len() % 2 == 1 {
            c.push(0);
        }
        c
    }

    fn list(kind: &[u8; 4], chunks: &[Vec<u8>]) -> Vec<u8> {
        chunk(b"LIST", &[&kind[..], &chunks.concat()].concat())
    }

    fn le(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// An AVI: `avih` (µs per frame, frames, width, height), a video stream (scale, rate,
    /// length; strf size), `extra` chunks at the top, then `movi`.
    fn avi(main: [u32; 4], stream: [u32; 3], strf: (u32, u32), extra: &[Vec<u8>]) -> Vec<u8> {
        let [us, frames, w, h] = main;
        let avih = chunk(
            b"avih",
            &le(&[us, 0, 0, 0, frames, 0, 1, 0, w, h, 0, 0, 0, 0]),
        );
        let [scale, rate, length] = stream;
        let strh = chunk(
            b"strh",
            &[
                &b"vidsmjpg"[..],
                &le(&[0, 0, 0, scale, rate, 0, length, 0, 0, 0, 0, 0]),
            ]
            .concat(),
        );
        let strf = chunk(
            b"strf",
            &[
                le(&[40, strf.0, strf.1]),
                vec![1, 0, 24, 0],
                b"MJPG".to_vec(),
                vec![0; 20],
            ]
            .concat(),
        );
        let hdrl = list(b"hdrl", &[avih, list(b"strl", &[strh, strf])]);
        let body = [
            &b"AVI "[..],
            &hdrl,
            &extra.concat(),
            &list(b"movi", &[chunk(b"00dc", &[0; 100])]),
        ]
        .concat();
        chunk(b"RIFF", &body)
    }

    #[test]
    fn the_main_header_and_the_video_stream_are_read() {
        let idit = chunk(b"IDIT", b"Mon Mar 10 15:04:43 2003\n\0");
        let f = avi([66_666, 30, 320, 240], [1, 15, 30], (320, 240), &[idit]);
        let out = read(View::whole(&f));
        assert_eq!(out.error, None);
        assert_eq!((out.width, out.height), (Some(320), Some(240)));
        assert_eq!(out.meta.codec.as_deref(), Some("MJPG"));
        assert_eq!(out.meta.duration, Some(30.0 * 66_666.0 / 1e6));
        assert_eq!(out.meta.taken.as_deref(), Some("2003-03-10T15:04:43"));
        // A main header that says 0×0: the stream format's size. A frame count three
        // times the stream's: the stream's length.
        let icrd = list(b"INFO", &[chunk(b"ICRD", b"2002-12-16  15:35:01\0")]);
        let f = avi([100_000, 90, 0, 0], [1, 10, 30], (640, 480), &[icrd]);
        let out = read(View::whole(&f));
        assert_eq!(
            (out.width, out.height, out.meta.duration),
            (Some(640), Some(480), Some(3.0))
        );
        assert_eq!(out.meta.taken.as_deref(), Some("2002-12-16T15:35:01"));
    }

    #[test]
    fn lying_sizes_truncation_and_garbage() {
        let mut f = avi([100_000, 10, 8, 6], [1, 10, 10], (8, 6), &[]);
        // The hdrl list claims more than the RIFF holds.
        f[16..20].copy_from_slice(&100_000u32.to_le_bytes());
        let out = read(View::whole(&f));
        assert!(
            out.error
                .unwrap()
                .contains("hdrl list at byte 12 claims 100000")
        );
        // Cut after the headers: the sizes stand.
        let f = avi([100_000, 10, 8, 6], [1, 10, 10], (8, 6), &[]);
        let out = read(View::new(&f[..f.len() - 50], &[], f.len() as u64));
        assert_eq!((out.error, out.width), (None, Some(8)));
        let mut cut = f.clone();
        cut.truncate(f.len() - 50);
        let out = read(View::whole(&cut));
        assert_eq!((out.error, out.width), (None, Some(8)));
        assert!(out.warnings[0].contains("movi"), "{:?}", out.warnings);
        let out = read(View::new(&f[..40], &[], f.len() as u64));
        assert_eq!(out.error.as_deref(), Some("no hdrl/avih header"));
        let out = read(View::whole(b"RIFF\xff\xff\xff\xffAVI garbage"));
        assert!(out.error.is_some());
        assert_eq!(
            riff_date(b"2001/ 1/27  1:42PM"),
            Some("2001-01-27T13:42:00".into())
        );
        assert_eq!(riff_date(b"yesterday"), None);
    }
}
