//! Matroska and WebM (EBML, RFC 8794; Matroska, RFC 9559): the Segment's Info (duration,
//! date) and the first video track's codec and size, read up to the first Cluster (the
//! media data); the Tags (a place in ISO 6709), which ffmpeg writes after the media,
//! through the SeekHead.
//!
//! An element is an ID and a size, both variable-length integers; a size of all ones is
//! unknown (a live stream's Segment or Cluster), its end found only by walking it.

use super::Layout;
use super::quicktime::iso6709;
use super::view::View;
use crate::index::taken::Taken;

const EBML: u32 = 0x1A45_DFA3;
const DOC_TYPE: u32 = 0x4282;
const SEGMENT: u32 = 0x1853_8067;
const SEEK_HEAD: u32 = 0x114D_9B74;
const SEEK: u32 = 0x4DBB;
const SEEK_ID: u32 = 0x53AB;
const SEEK_POSITION: u32 = 0x53AC;
const INFO: u32 = 0x1549_A966;
const TIMECODE_SCALE: u32 = 0x2A_D7B1;
const DURATION: u32 = 0x4489;
const DATE_UTC: u32 = 0x4461;
const TRACKS: u32 = 0x1654_AE6B;
const TRACK_ENTRY: u32 = 0xAE;
const TRACK_TYPE: u32 = 0x83;
const CODEC_ID: u32 = 0x86;
const VIDEO: u32 = 0xE0;
const PIXEL_WIDTH: u32 = 0xB0;
const PIXEL_HEIGHT: u32 = 0xBA;
const CLUSTER: u32 = 0x1F43_B675;
const TAGS: u32 = 0x1254_C367;
const TAG: u32 = 0x7373;
const SIMPLE_TAG: u32 = 0x67C8;
const TAG_NAME: u32 = 0x45A3;
const TAG_STRING: u32 = 0x4487;

/// The most elements walked at one level: a file of a million Void elements is cut here.
const MAX_ELEMENTS: usize = 10_000;

/// Seconds from 1970-01-01 to 2001-01-01, Matroska's epoch.
const EPOCH_2001: i64 = 978_307_200;

/// One element's header: its ID, where its data starts and its data's size (`None`:
/// unknown).
#[derive(Clone, Copy, Debug)]
pub(super) struct Element {
    pub(super) id: u32,
    pub(super) body: u64,
    pub(super) size: Option<u64>,
}

/// A variable-length integer at the start of `data`: its value (with the length marker
/// kept for IDs, dropped for sizes) and its length; a size of all ones is `u64::MAX`.
fn vint(data: &[u8], keep_marker: bool, max_len: usize) -> Option<(u64, usize)> {
    let first = *data.first()?;
    let len = first.leading_zeros() as usize + 1;
    if len > max_len {
        return None;
    }
    let bytes = data.get(..len)?;
    let mask = if keep_marker {
        0xFF
    } else {
        0xFFu8.checked_shr(len as u32).unwrap_or(0)
    };
    let value = bytes[1..]
        .iter()
        .fold(u64::from(first & mask), |v, &b| (v << 8) | u64::from(b));
    let all_ones = (1u64 << (7 * len)) - 1;
    Some(if !keep_marker && value == all_ones {
        (u64::MAX, len)
    } else {
        (value, len)
    })
}

/// The element whose header starts at `at` in `data` (offsets `base` + index).
pub(super) fn header(data: &[u8], base: u64) -> Option<Element> {
    let (id, n) = vint(data, true, 4)?;
    let (size, m) = vint(data.get(n..)?, false, 8)?;
    Some(Element {
        id: id as u32,
        body: base + (n + m) as u64,
        size: (size != u64::MAX).then_some(size),
    })
}

/// The elements one after another in `data`, each with its data; stops at an unknown
/// size or one that runs past `data`.
fn children(data: &[u8]) -> impl Iterator<Item = (u32, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let rest = data.get(at..)?;
        let e = header(rest, 0)?;
        let start = usize::try_from(e.body).ok()?;
        let body = rest.get(start..start.checked_add(usize::try_from(e.size?).ok()?)?)?;
        at += start + body.len();
        Some((e.id, body))
    })
    .take(MAX_ELEMENTS)
}

fn uint(data: &[u8]) -> Option<u64> {
    (data.len() <= 8).then(|| data.iter().fold(0, |v, &b| (v << 8) | u64::from(b)))
}

fn float(data: &[u8]) -> Option<f64> {
    match data.len() {
        4 => Some(f64::from(f32::from_be_bytes(data.try_into().ok()?))),
        8 => Some(f64::from_be_bytes(data.try_into().ok()?)),
        _ => None,
    }
    .filter(|f| f.is_finite())
}

fn text(data: &[u8]) -> Option<String> {
    let data = data.split(|&b| b == 0).next()?;
    let s = std::str::from_utf8(data).ok()?.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The format the EBML header's DocType names: `mkv` or `webm` (Matroska when it has
/// none, the default); `None` for another EBML document.
pub(super) fn doc_type(head: &[u8]) -> Option<&'static str> {
    let e = header(head, 0).filter(|e| e.id == EBML)?;
    let end = e.body.saturating_add(e.size.unwrap_or(u64::MAX));
    let body = head.get(e.body as usize..(end as usize).min(head.len()))?;
    match children(body).find(|(id, _)| *id == DOC_TYPE) {
        None => Some("mkv"),
        Some((_, t)) => match text(t).as_deref() {
            Some("matroska") => Some("mkv"),
            Some("webm") => Some("webm"),
            _ => None,
        },
    }
}

/// What the Segment's Info, Tracks and Tags say.
pub(super) fn read(view: View<'_>) -> Layout<'_> {
    let mut out = Layout::default();
    if let Err(e) = read_into(view, &mut out) {
        out.error = Some(e);
    }
    out
}

/// The header of the element at `at`, from the bytes kept there.
pub(super) fn header_at(view: View<'_>, at: u64) -> Option<Element> {
    header(view.get_upto(at, at.saturating_add(12)), at)
}

fn read_into(view: View<'_>, out: &mut Layout<'_>) -> Result<(), String> {
    let ebml = header_at(view, 0)
        .filter(|e| e.id == EBML)
        .ok_or("no EBML header")?;
    let segment_at = ebml.body + ebml.size.ok_or("the EBML header has an unknown size")?;
    let segment = header_at(view, segment_at)
        .filter(|e| e.id == SEGMENT)
        .ok_or_else(|| format!("no Segment element at byte {segment_at}"))?;
    let end = segment
        .size
        .map_or(view.size(), |s| segment.body.saturating_add(s))
        .min(view.size());
    let (mut info, mut tracks, mut tags, mut tags_at) = (false, false, false, None);
    let mut at = segment.body;
    for _ in 0..MAX_ELEMENTS {
        if at >= end {
            break;
        }
        let Some(e) = header_at(view, at) else {
            if info && tracks {
                break;
            }
            return Err(format!(
                "the element at byte {at} was not read or is damaged"
            ));
        };
        if e.id == CLUSTER && info && tracks {
            break;
        }
        let Some(size) = e.size else {
            // Only a Cluster may have an unknown size here; its end is not known.
            if e.id == CLUSTER {
                break;
            }
            return Err(format!(
                "the element 0x{:X} at byte {at} has an unknown size",
                e.id
            ));
        };
        let next = e.body.checked_add(size).filter(|&n| n <= end);
        let next = next.ok_or_else(|| {
            format!(
                "the element 0x{:X} at byte {at} claims {size} bytes, past the Segment",
                e.id
            )
        })?;
        let body = || {
            view.get(e.body, size)
                .ok_or_else(|| format!("the element 0x{:X} at byte {at} was not read", e.id))
        };
        match e.id {
            INFO => {
                read_info(body()?, out);
                info = true;
            }
            TRACKS => {
                read_tracks(body()?, out)?;
                tracks = true;
            }
            TAGS => {
                read_tags(body()?, out);
                tags = true;
            }
            SEEK_HEAD => tags_at = tags_at.or(seek(body()?, TAGS)),
            _ => {}
        }
        at = next;
    }
    if !tags && let Some(pos) = tags_at {
        let at = segment.body.saturating_add(pos);
        if let Some(e) = header_at(view, at).filter(|e| e.id == TAGS)
            && let Some(body) = e.size.and_then(|s| view.get(e.body, s))
        {
            read_tags(body, out);
        }
    }
    if !tracks {
        return Err("no Tracks element before the first Cluster".into());
    }
    Ok(())
}

/// The position (from the Segment's data) that the SeekHead gives for element `id`.
fn seek(seek_head: &[u8], id: u32) -> Option<u64> {
    children(seek_head)
        .filter(|(i, _)| *i == SEEK)
        .find_map(|(_, s)| {
            let target = children(s).find(|(i, _)| *i == SEEK_ID)?.1;
            let position = children(s).find(|(i, _)| *i == SEEK_POSITION)?.1;
            (uint(target)? == u64::from(id)).then(|| uint(position))?
        })
}

fn read_info(info: &[u8], out: &mut Layout<'_>) {
    let mut scale = 1_000_000u64;
    let mut duration = None;
    for (id, data) in children(info) {
        match id {
            TIMECODE_SCALE => scale = uint(data).filter(|&s| s > 0).unwrap_or(scale),
            DURATION => duration = float(data),
            DATE_UTC if data.len() == 8 => {
                let ns = i64::from_be_bytes(data.try_into().unwrap_or_default());
                let secs = ns.div_euclid(1_000_000_000).checked_add(EPOCH_2001);
                out.meta.taken = secs
                    .and_then(|s| Taken::from_unix(s, true))
                    .map(|t| t.to_string());
            }
            _ => {}
        }
    }
    out.meta.duration = duration
        .map(|d| d * scale as f64 / 1e9)
        .filter(|d| d.is_finite() && *d >= 0.0);
}

fn read_tracks(tracks: &[u8], out: &mut Layout<'_>) -> Result<(), String> {
    let of_type = |kind: u64| {
        children(tracks)
            .filter(|(id, _)| *id == TRACK_ENTRY)
            .find(|(_, entry)| {
                children(entry).any(|(id, t)| id == TRACK_TYPE && uint(t) == Some(kind))
            })
            .map(|(_, entry)| entry)
    };
    let Some(video) = of_type(1) else {
        // Sound alone (TrackType 2): audio, its codec the sound track's.
        let audio =
            of_type(2).ok_or("no video or audio track (a TrackEntry of TrackType 1 or 2)")?;
        out.audio = true;
        out.meta.codec = children(audio)
            .find(|(id, _)| *id == CODEC_ID)
            .and_then(|(_, data)| text(data));
        return Ok(());
    };
    for (id, data) in children(video) {
        match id {
            CODEC_ID => out.meta.codec = text(data),
            VIDEO => {
                for (id, data) in children(data) {
                    match id {
                        PIXEL_WIDTH => out.width = uint(data),
                        PIXEL_HEIGHT => out.height = uint(data),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    if out.width.is_none() || out.height.is_none() {
        return Err("the video track has no PixelWidth or PixelHeight".into());
    }
    Ok(())
}

/// A `LOCATION` or `RECORDING_LOCATION` simple tag (ISO 6709) of any Tag.
fn read_tags(tags: &[u8], out: &mut Layout<'_>) {
    for (_, tag) in children(tags).filter(|(id, _)| *id == TAG) {
        for (_, simple) in children(tag).filter(|(id, _)| *id == SIMPLE_TAG) {
            let name = children(simple).find(|(id, _)| *id == TAG_NAME);
            let value = children(simple).find(|(id, _)| *id == TAG_STRING);
            let (Some((_, name)), Some((_, value))) = (name, value) else {
                continue;
            };
            if matches!(
                text(name).as_deref(),
                Some("LOCATION" | "RECORDING_LOCATION")
            ) && let Some((lat, lon, alt)) = text(value).as_deref().and_then(iso6709)
                && out.meta.gps_lat.is_none()
            {
                (out.meta.gps_lat, out.meta.gps_lon, out.meta.gps_alt) =
                    (Some(lat), Some(lon), alt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An element with a 1- to 4-byte ID and an 8-byte size.
    fn el(id: u32, body: &[u8]) -> Vec<u8> {
        let id = id.to_be_bytes();
        let skip = id.iter().take_while(|&&b| b == 0).count();
        let mut e = id[skip..].to_vec();
        e.push(0x01);
        e.extend_from_slice(&(body.len() as u64).to_be_bytes()[1..]);
        e.extend_from_slice(body);
        e
    }

    fn file(doc: &str, segment: &[Vec<u8>], unknown_size: bool) -> Vec<u8> {
        let mut f = el(EBML, &el(DOC_TYPE, doc.as_bytes()));
        if unknown_size {
            f.extend_from_slice(&[0x18, 0x53, 0x80, 0x67, 0xFF]);
            f.extend_from_slice(&segment.concat());
        } else {
            f.extend(el(SEGMENT, &segment.concat()));
        }
        f
    }

    fn info() -> Vec<u8> {
        el(
            INFO,
            &[
                el(TIMECODE_SCALE, &[0x0F, 0x42, 0x40]),
                el(DURATION, &2500.0f64.to_be_bytes()),
                // 2010-02-03 21:17:48 UTC, in ns since 2001.
                el(DATE_UTC, &(286_924_668i64 * 1_000_000_000).to_be_bytes()),
            ]
            .concat(),
        )
    }

    fn tracks(kind: u8, w: u16, h: u16) -> Vec<u8> {
        let audio = el(
            TRACK_ENTRY,
            &[el(TRACK_TYPE, &[2]), el(CODEC_ID, b"A_OPUS")].concat(),
        );
        let video = el(
            TRACK_ENTRY,
            &[
                el(TRACK_TYPE, &[kind]),
                el(CODEC_ID, b"V_VP9"),
                el(
                    VIDEO,
                    &[
                        el(PIXEL_WIDTH, &w.to_be_bytes()),
                        el(PIXEL_HEIGHT, &h.to_be_bytes()),
                    ]
                    .concat(),
                ),
            ]
            .concat(),
        );
        el(TRACKS, &[audio, video].concat())
    }

    fn tags(location: &str) -> Vec<u8> {
        let simple = el(
            SIMPLE_TAG,
            &[
                el(TAG_NAME, b"LOCATION"),
                el(TAG_STRING, location.as_bytes()),
            ]
            .concat(),
        );
        el(TAGS, &el(TAG, &simple))
    }

    #[test]
    fn info_and_the_video_track_are_read() {
        let f = file(
            "webm",
            &[info(), tracks(1, 320, 240), tags("+48.8584+002.2945/")],
            false,
        );
        assert_eq!(doc_type(&f), Some("webm"));
        let out = read(View::whole(&f));
        assert_eq!(out.error, None);
        assert_eq!((out.width, out.height), (Some(320), Some(240)));
        assert_eq!(out.meta.codec.as_deref(), Some("V_VP9"));
        assert_eq!(out.meta.duration, Some(2.5));
        assert_eq!(out.meta.taken.as_deref(), Some("2010-02-03T21:17:48+00:00"));
        assert_eq!(
            (out.meta.gps_lat, out.meta.gps_lon),
            (Some(48.8584), Some(2.2945))
        );
        assert_eq!(doc_type(&file("matroska", &[], false)), Some("mkv"));
        assert_eq!(doc_type(&file("other", &[], false)), None);
    }

    #[test]
    fn an_unknown_size_segment_stops_at_the_first_cluster_and_tags_are_found_by_seeking() {
        let cluster_unknown = vec![0x1F, 0x43, 0xB6, 0x75, 0xFF, 1, 2, 3];
        let tags = tags("+48.8584+002.2945/");
        // SeekHead first (its length fixed), then Info, Tracks, a Cluster, the Tags.
        let seek_head = |pos: u64| {
            let entry = [
                el(SEEK_ID, &TAGS.to_be_bytes()),
                el(SEEK_POSITION, &pos.to_be_bytes()),
            ]
            .concat();
            el(SEEK_HEAD, &el(SEEK, &entry))
        };
        let cluster = el(CLUSTER, &[0; 1000]);
        let before = [seek_head(0), info(), tracks(1, 64, 48), cluster]
            .concat()
            .len() as u64;
        let f = file(
            "matroska",
            &[
                seek_head(before),
                info(),
                tracks(1, 64, 48),
                el(CLUSTER, &[0; 1000]),
                tags,
            ],
            false,
        );
        let out = read(View::whole(&f));
        assert_eq!(out.error, None);
        assert_eq!(out.meta.gps_lat, Some(48.8584));
        // The tail kept holds the Tags; the cluster between was not kept.
        let out = read(View::new(&f[..300], &f[f.len() - 100..], f.len() as u64));
        assert_eq!((out.width, out.meta.gps_lat), (Some(64), Some(48.8584)));
        let f = file(
            "matroska",
            &[info(), tracks(1, 64, 48), cluster_unknown],
            true,
        );
        let out = read(View::whole(&f));
        assert_eq!((out.error, out.width), (None, Some(64)));
    }

    #[test]
    fn lying_sizes_truncation_and_garbage_are_named_errors() {
        let mut f = file("matroska", &[info(), tracks(1, 64, 48)], false);
        let good = f.clone();
        // The Info element (after the EBML header and the Segment's) claims 1 MB.
        let info_at = el(EBML, &el(DOC_TYPE, b"matroska")).len() + 12;
        f[info_at + 5..info_at + 12].copy_from_slice(&1_000_000u64.to_be_bytes()[1..]);
        let error = read(View::whole(&f)).error.unwrap();
        assert!(error.contains("past the Segment"), "{error}");
        let cut = View::new(&good[..60], &[], good.len() as u64);
        assert!(read(cut).error.unwrap().contains("was not read"));
        // Sound alone is audio, its codec the first sound track's.
        let f = file("matroska", &[info(), tracks(2, 64, 48)], false);
        let out = read(View::whole(&f));
        assert_eq!((out.error, out.audio), (None, true));
        assert_eq!(out.meta.codec.as_deref(), Some("A_OPUS"));
        // Subtitles alone are neither.
        let subtitles = el(TRACKS, &el(TRACK_ENTRY, &el(TRACK_TYPE, &[17])));
        let f = file("matroska", &[info(), subtitles], false);
        assert!(
            read(View::whole(&f))
                .error
                .unwrap()
                .contains("no video or audio track")
        );
        assert!(
            read(View::whole(b"\x1A\x45\xDF\xA3\xFF\xFF"))
                .error
                .is_some()
        );
        assert_eq!(vint(&[0x00, 1, 2], false, 8), None);
        assert_eq!(vint(&[0x81], false, 8), Some((1, 1)));
        assert_eq!(vint(&[0xFF], false, 8), Some((u64::MAX, 1)));
    }
}
