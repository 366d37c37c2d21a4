//! HEIF (HEIC) and AVIF: the size of the primary item, its codec and the EXIF item, from
//! the `meta` box (ISO/IEC 23008-12 §9; the boxes of ISO/IEC 14496-12 §8.11).
//!
//! The primary item (`pitm`) has its properties in `iprp/ipco`, tied to it by `ipma`: the
//! image spatial extent `ispe` is the coded size, and the transformative properties —
//! clean aperture `clap`, rotation `irot`, mirror `imir` — apply in the order `ipma`
//! lists them, so the size reported is the displayed one (as libheif decodes it). A
//! primary item of type `grid` (an iPhone's photo is a grid of 512×512 tiles) has the
//! grid's output size: its own `ispe`, or else the grid descriptor in its data.

use super::Layout;
use super::boxes::{self, BoxHeader};
use super::cursor::{Cursor, fourcc_text};
use super::view::View;

/// The most items, properties or associations read from one file: an iPhone photo has
/// about fifty items; a hostile count is cut here rather than looped over.
const MAX_ENTRIES: usize = 1 << 16;

/// Where one item's data lies (`iloc`).
#[derive(Debug, Default)]
struct Location {
    id: u32,
    /// 0: offsets in the file; 1: offsets in `idat`.
    method: u8,
    /// (offset, length) of each extent, base offset added; length 0 runs to the end.
    extents: Vec<(u64, u64)>,
}

/// What the `meta` box says, each part parsed from its box.
#[derive(Debug, Default)]
struct Meta {
    primary: Option<u32>,
    /// (item ID, item type) from `iinf`.
    items: Vec<(u32, [u8; 4])>,
    locations: Vec<Location>,
    /// The properties in `ipco`, in order (`ipma` indexes them from 1).
    properties: Vec<BoxHeader>,
    /// (item ID, property indexes) from `ipma`.
    associations: Vec<(u32, Vec<u16>)>,
    /// (from item ID, to item IDs) of the `dimg` references in `iref`.
    derived: Vec<(u32, Vec<u32>)>,
    idat: Option<BoxHeader>,
}

/// What the boxes of a HEIF or AVIF file say.
pub(super) fn read(view: View<'_>) -> Layout<'_> {
    let mut out = Layout::default();
    if let Err(e) = read_into(view, &mut out) {
        // An image sequence without a primary item (an AVIF `avis` of frames only, a HEIF
        // sequence with no `meta`): its track is the picture, sized as a video's.
        let no_primary = e.starts_with(NO_META) || e.starts_with(NO_PRIMARY);
        match no_primary
            .then(|| super::quicktime::read(view))
            .filter(|track| track.error.is_none() && track.width.is_some())
        {
            Some(track) => out = track,
            None => out.error = Some(e),
        }
    }
    out
}

/// Why a file has no primary item: no `meta` box, or no `pitm` in it.
const NO_META: &str = "no meta box";
const NO_PRIMARY: &str = "no pitm box";

fn read_into<'a>(view: View<'a>, out: &mut Layout<'a>) -> Result<(), String> {
    let meta = boxes::boxes(view, 0, view.size())
        .map_while(Result::ok)
        .find(|b| &b.kind == b"meta")
        .ok_or_else(|| format!("{NO_META} (or it was not read)"))?;
    let m = parse_meta(view, &meta)?;
    let primary = m.primary.ok_or_else(|| format!("{NO_PRIMARY} in meta"))?;
    let kind = m.item_type(primary);
    // A derived image (a grid of tiles, an overlay of images) is coded as its first
    // input is, followed through a derived input or two (an overlay of grids).
    let mut coded = kind;
    let mut item = primary;
    for _ in 0..4 {
        if !matches!(coded, Some(b"grid" | b"iovl")) {
            break;
        }
        let first = m
            .derived_from(item)
            .and_then(|inputs| inputs.first().copied());
        coded = first.and_then(|i| m.item_type(i));
        item = first.unwrap_or(item);
    }
    out.meta.codec = coded.and_then(|t| fourcc_text(t));
    let props = m.properties_of(primary);
    let ispe = props.iter().find(|p| &p.kind == b"ispe");
    let mut size = match ispe {
        Some(p) => Some(ispe_size(view, p)?),
        None if kind == Some(b"grid") => Some(grid_size(view, &m, primary)?),
        None if kind == Some(b"iovl") => Some(overlay_size(view, &m, primary)?),
        None => None,
    }
    .ok_or_else(|| format!("the primary item {primary} has no ispe property"))?;
    let mut turns = 0u32;
    for p in &props {
        let body = p.payload(&view);
        match &p.kind {
            b"clap" => size = clap_size(body, size)?,
            b"irot" => {
                let angle = body
                    .and_then(|b| b.first())
                    .ok_or("the irot box is empty")?
                    & 3;
                if angle % 2 == 1 {
                    size = (size.1, size.0);
                }
                // `irot` turns anti-clockwise; the catalog's rotation is clockwise.
                turns = (turns + 4 - u32::from(angle)) % 4;
            }
            // `imir` mirrors, which keeps the size.
            _ => {}
        }
    }
    (out.width, out.height) = (Some(size.0), Some(size.1));
    out.meta.rotation = Some(turns * 90);
    match exif(view, &m) {
        Ok(Some(Exif::Slice(block))) => out.exif = Some(block),
        Ok(Some(Exif::Owned(block))) => out.owned_exif = Some(block),
        Ok(None) => {}
        Err(e) => out.warn(e),
    }
    Ok(())
}

/// Parses the children of `meta` this reader uses.
fn parse_meta(view: View<'_>, meta: &BoxHeader) -> Result<Meta, String> {
    let mut m = Meta::default();
    let start = boxes::full_box_children(view, meta);
    for child in boxes::boxes(view, start, meta.end) {
        let child = child.map_err(|e| format!("in meta: {e}"))?;
        let named = |what: &str| format!("the {} box {what}", String::from_utf8_lossy(&child.kind));
        let body = || child.payload(&view).ok_or_else(|| named("was not read"));
        match &child.kind {
            b"pitm" => {
                let mut c = Cursor::new(body()?);
                let version = c.u8().ok_or_else(|| named("is cut short"))?;
                c.skip(3);
                m.primary = if version == 0 {
                    c.u16().map(u32::from)
                } else {
                    c.u32()
                };
                m.primary.ok_or_else(|| named("is cut short"))?;
            }
            b"iinf" => m.items = parse_iinf(view, &child)?,
            b"iloc" => m.locations = parse_iloc(body()?).ok_or_else(|| named("is cut short"))?,
            b"iprp" => {
                let ipco = boxes::find(view, child.body, child.end, b"ipco")
                    .ok_or("no ipco box in iprp")?;
                m.properties = boxes::boxes(view, ipco.body, ipco.end)
                    .take(MAX_ENTRIES)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("in ipco: {e}"))?;
                // Several `ipma` boxes are allowed (with distinct version or flags).
                for ipma in boxes::boxes(view, child.body, child.end).map_while(Result::ok) {
                    if &ipma.kind == b"ipma" {
                        let body = ipma.payload(&view).ok_or("the ipma box was not read")?;
                        parse_ipma(body, &mut m.associations).ok_or("the ipma box is cut short")?;
                    }
                }
            }
            b"iref" => m.derived = parse_iref(body()?),
            b"idat" => m.idat = Some(child),
            _ => {}
        }
    }
    Ok(m)
}

fn parse_iinf(view: View<'_>, iinf: &BoxHeader) -> Result<Vec<(u32, [u8; 4])>, String> {
    let version = view.get(iinf.body, 1).ok_or("the iinf box was not read")?[0];
    let children = iinf.body + if version == 0 { 6 } else { 8 };
    let mut items = Vec::new();
    for infe in boxes::boxes(view, children, iinf.end).take(MAX_ENTRIES) {
        let infe = infe.map_err(|e| format!("in iinf: {e}"))?;
        if &infe.kind != b"infe" {
            continue;
        }
        let mut c = Cursor::new(infe.payload(&view).ok_or("an infe box was not read")?);
        let version = c.u8().ok_or("an infe box is empty")?;
        c.skip(3);
        // Versions 0 and 1 have no item type (they name MIME content); skipped.
        let item = match version {
            2 => c.u16().map(u32::from),
            3 => c.u32(),
            _ => continue,
        };
        let kind = item.and_then(|item| c.skip(2).and_then(|()| c.fourcc()).map(|k| (item, k)));
        items.push(kind.ok_or("an infe box is cut short")?);
    }
    Ok(items)
}

/// The extents of the items whose data is in the file (construction method 0) of the
/// `iloc` box whose payload is `body`, as (offset, length); a length of 0 (to the end)
/// left out. Empty when the box cannot be read.
pub(super) fn iloc_extents(body: &[u8]) -> Vec<(u64, u64)> {
    parse_iloc(body)
        .unwrap_or_default()
        .into_iter()
        .filter(|l| l.method == 0)
        .flat_map(|l| l.extents)
        .filter(|&(_, len)| len > 0)
        .collect()
}

fn parse_iloc(body: &[u8]) -> Option<Vec<Location>> {
    let mut c = Cursor::new(body);
    let version = c.u8()?;
    c.skip(3)?;
    let sizes = c.u16()?;
    let (offset_size, length_size) = (usize::from(sizes >> 12), usize::from((sizes >> 8) & 15));
    let base_size = usize::from((sizes >> 4) & 15);
    let index_size = if version >= 1 {
        usize::from(sizes & 15)
    } else {
        0
    };
    let count = if version < 2 {
        c.u16().map(u32::from)?
    } else {
        c.u32()?
    };
    let mut out = Vec::new();
    // Extents of all items, counted against MAX_ENTRIES too: with offset and length sizes
    // of 0 an extent takes no bytes, and 65,535 of them per item of 6 bytes would be
    // billions from a small box.
    let mut extents_left = MAX_ENTRIES;
    for _ in 0..(count as usize).min(MAX_ENTRIES) {
        let id = if version < 2 {
            c.u16().map(u32::from)?
        } else {
            c.u32()?
        };
        let method = if version >= 1 { c.u16()? & 15 } else { 0 };
        c.skip(2)?; // data reference index: 0 is this file
        let base = c.uint(base_size)?;
        let extents = c.u16()?;
        let mut location = Location {
            id,
            method: method as u8,
            extents: Vec::new(),
        };
        let kept = usize::from(extents).min(extents_left);
        extents_left -= kept;
        for _ in 0..kept {
            c.uint(index_size)?;
            let offset = base.checked_add(c.uint(offset_size)?)?;
            location.extents.push((offset, c.uint(length_size)?));
        }
        out.push(location);
        if kept < usize::from(extents) {
            break; // the rest of the box is not read: its place is lost
        }
    }
    Some(out)
}

fn parse_ipma(body: &[u8], out: &mut Vec<(u32, Vec<u16>)>) -> Option<()> {
    let mut c = Cursor::new(body);
    let version = c.u8()?;
    let flags = c.uint(3)?;
    let count = c.u32()?;
    for _ in 0..(count as usize).min(MAX_ENTRIES) {
        let item = if version < 1 {
            c.u16().map(u32::from)?
        } else {
            c.u32()?
        };
        let n = c.u8()?;
        let mut indexes = Vec::with_capacity(usize::from(n));
        for _ in 0..n {
            // The top bit says whether the property is essential; the rest is the index.
            indexes.push(if flags & 1 == 1 {
                c.u16()? & 0x7FFF
            } else {
                u16::from(c.u8()? & 0x7F)
            });
        }
        out.push((item, indexes));
    }
    Some(())
}

/// The `dimg` references of `iref` (a grid's tiles); others are skipped.
fn parse_iref(body: &[u8]) -> Vec<(u32, Vec<u32>)> {
    let mut c = Cursor::new(body);
    let mut out = Vec::new();
    let Some(version) = c.u8() else {
        return out;
    };
    let id = |c: &mut Cursor<'_>| {
        if version == 0 {
            c.u16().map(u32::from)
        } else {
            c.u32()
        }
    };
    let _ = c.skip(3);
    while out.len() < MAX_ENTRIES {
        let Some(size) = c.u32().map(|s| s as usize) else {
            break;
        };
        let start = c.at() - 4;
        let (Some(kind), Some(from), Some(n)) = (c.fourcc(), id(&mut c), c.u16()) else {
            break;
        };
        let to: Vec<u32> = (0..n).map_while(|_| id(&mut c)).collect();
        if &kind == b"dimg" {
            out.push((from, to));
        }
        // Each reference box says its own size; follow it when it is sane.
        let next = start.saturating_add(size);
        if size < 8 || next < c.at() {
            break;
        }
        let _ = c.skip(next - c.at());
    }
    out
}

impl Meta {
    fn item_type(&self, id: u32) -> Option<&[u8; 4]> {
        self.items.iter().find(|(i, _)| *i == id).map(|(_, k)| k)
    }

    fn derived_from(&self, id: u32) -> Option<&[u32]> {
        self.derived
            .iter()
            .find(|(from, _)| *from == id)
            .map(|(_, to)| to.as_slice())
    }

    /// The properties associated with item `id`, in `ipma` order.
    fn properties_of(&self, id: u32) -> Vec<BoxHeader> {
        self.associations
            .iter()
            .filter(|(item, _)| *item == id)
            .flat_map(|(_, indexes)| indexes)
            .filter_map(|&i| self.properties.get(usize::from(i).checked_sub(1)?).copied())
            .collect()
    }

    /// The data of item `id`: one slice when it is one extent (or several that follow
    /// each other), else the extents joined.
    fn item_data<'a>(&self, view: View<'a>, id: u32) -> Result<Option<Exif<'a>>, String> {
        let Some(loc) = self.locations.iter().find(|l| l.id == id) else {
            return Ok(None);
        };
        let (base, end) = match (loc.method, self.idat) {
            (0, _) => (0, view.size()),
            (1, Some(idat)) => (idat.body, idat.end),
            (1, None) => return Err(format!("item {id} lies in idat, which is missing")),
            (m, _) => return Err(format!("item {id} has construction method {m}")),
        };
        let mut parts = Vec::new();
        for &(offset, len) in loc.extents.iter().take(64) {
            let at = base.checked_add(offset).filter(|&a| a <= end);
            let at = at.ok_or_else(|| format!("item {id} lies past the end (iloc)"))?;
            let len = if len == 0 { end - at } else { len };
            if at.checked_add(len).is_none_or(|e| e > end) {
                return Err(format!("item {id} lies past the end (iloc)"));
            }
            let bytes = view
                .get(at, len)
                .ok_or_else(|| format!("item {id}'s data at byte {at} was not read"))?;
            parts.push(bytes);
        }
        Ok(match parts.as_slice() {
            [] => None,
            [one] => Some(Exif::Slice(one)),
            _ => Some(Exif::Owned(parts.concat())),
        })
    }
}

/// An item's bytes: in the view, or joined from several extents.
enum Exif<'a> {
    Slice(&'a [u8]),
    Owned(Vec<u8>),
}

impl Exif<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Exif::Slice(b) => b,
            Exif::Owned(b) => b,
        }
    }
}

fn ispe_size(view: View<'_>, p: &BoxHeader) -> Result<(u64, u64), String> {
    let mut c = Cursor::new(p.payload(&view).ok_or("the ispe box was not read")?);
    c.skip(4).ok_or("the ispe box is cut short")?;
    match (c.u32(), c.u32()) {
        (Some(w), Some(h)) => Ok((u64::from(w), u64::from(h))),
        _ => Err("the ispe box is cut short".into()),
    }
}

/// The output size in a grid item's descriptor (ISO/IEC 23008-12 §6.6.2.3.2: after its
/// version and flags, the rows and columns, two bytes).
fn grid_size(view: View<'_>, m: &Meta, id: u32) -> Result<(u64, u64), String> {
    descriptor_size(view, m, id, "grid", 2)
}

/// The output size in an overlay item's descriptor (ISO/IEC 23008-12 §6.6.2.4.2: after
/// its version and flags, the canvas fill colour, four 16-bit values).
fn overlay_size(view: View<'_>, m: &Meta, id: u32) -> Result<(u64, u64), String> {
    descriptor_size(view, m, id, "overlay", 8)
}

/// The width and height in the descriptor of the derived item `id` (`what`: a grid, an
/// overlay): its version, its flags, `skip` bytes, then the two (16-bit, or 32-bit when
/// flags bit 0 is set).
fn descriptor_size(
    view: View<'_>,
    m: &Meta,
    id: u32,
    what: &str,
    skip: usize,
) -> Result<(u64, u64), String> {
    let data = m
        .item_data(view, id)?
        .ok_or_else(|| format!("the {what} item {id} has no ispe and no iloc entry"))?;
    let mut c = Cursor::new(data.bytes());
    let flags = c.skip(1).and_then(|()| c.u8());
    let size = flags.and_then(|flags| {
        c.skip(skip)?;
        if flags & 1 == 0 {
            Some((u64::from(c.u16()?), u64::from(c.u16()?)))
        } else {
            Some((u64::from(c.u32()?), u64::from(c.u32()?)))
        }
    });
    size.ok_or_else(|| format!("the {what} item {id}'s descriptor is cut short"))
}

/// The size after a clean aperture: its width and height, fractions rounded half up as
/// libheif does, and never more than the image it crops.
fn clap_size(body: Option<&[u8]>, size: (u64, u64)) -> Result<(u64, u64), String> {
    let mut c = Cursor::new(body.ok_or("the clap box was not read")?);
    let mut fraction = || -> Result<u64, String> {
        let (n, d) = c.u32().zip(c.u32()).ok_or("the clap box is cut short")?;
        if d == 0 {
            return Err("the clap box has a zero denominator".into());
        }
        Ok((u64::from(n) + u64::from(d / 2)) / u64::from(d))
    };
    let (w, h) = (fraction()?, fraction()?);
    if w == 0 || h == 0 {
        return Err("the clap box crops to nothing".into());
    }
    Ok((w.min(size.0), h.min(size.1)))
}

/// The EXIF block of the first `Exif` item: its payload starts with the offset of the
/// TIFF header after those 4 bytes (usually 6, over `Exif\0\0`).
fn exif<'a>(view: View<'a>, m: &Meta) -> Result<Option<Exif<'a>>, String> {
    let Some(&(id, _)) = m.items.iter().find(|(_, kind)| kind == b"Exif") else {
        return Ok(None);
    };
    let Some(data) = m.item_data(view, id)? else {
        return Ok(None);
    };
    let bytes = data.bytes();
    let skip = bytes
        .get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .and_then(|off| off.checked_add(4))
        .filter(|&at| at <= bytes.len())
        .ok_or("the Exif item's TIFF header offset points past its end")?;
    Ok(Some(match data {
        Exif::Slice(b) => Exif::Slice(&b[skip..]),
        Exif::Owned(b) => Exif::Owned(b[skip..].to_vec()),
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::index::inspect::boxes::tests::bx;

    pub(crate) fn full(kind: &[u8; 4], version: u8, body: &[u8]) -> Vec<u8> {
        bx(kind, &[&[version, 0, 0, 0], body].concat())
    }

    pub(crate) fn infe(id: u16, kind: &[u8; 4]) -> Vec<u8> {
        full(
            b"infe",
            2,
            &[&id.to_be_bytes()[..], &[0, 0], kind, b"\0"].concat(),
        )
    }

    pub(crate) fn ispe(w: u32, h: u32) -> Vec<u8> {
        full(b"ispe", 0, &[w.to_be_bytes(), h.to_be_bytes()].concat())
    }

    #[test]
    fn an_ilocs_extents_of_no_bytes_are_counted_against_the_cap() {
        // Version 0, offsets, lengths and base of 0 bytes: each item (id, data reference,
        // extent count) is 6 bytes and claims 65,535 extents that take none.
        let items = 200u16;
        let mut b = vec![0, 0, 0, 0, 0x00, 0x00];
        b.extend_from_slice(&items.to_be_bytes());
        for id in 0..items {
            b.extend_from_slice(&id.to_be_bytes());
            b.extend_from_slice(&[0, 0, 0xFF, 0xFF]);
        }
        let locations = parse_iloc(&b).unwrap();
        let extents: usize = locations.iter().map(|l| l.extents.len()).sum();
        assert!(extents <= MAX_ENTRIES, "{extents} extents read");
        assert!(iloc_extents(&b).is_empty()); // all of length 0
    }

    /// `iloc` version 1 with 4-byte offsets and lengths: (item, method, offset, length).
    pub(crate) fn iloc(entries: &[(u16, u16, u32, u32)]) -> Vec<u8> {
        let mut b = vec![0x44, 0x00];
        b.extend_from_slice(&(entries.len() as u16).to_be_bytes());
        for &(id, method, offset, len) in entries {
            b.extend_from_slice(&id.to_be_bytes());
            b.extend_from_slice(&method.to_be_bytes());
            b.extend_from_slice(&[0, 0, 0, 1]); // data reference 0, one extent
            b.extend_from_slice(&offset.to_be_bytes());
            b.extend_from_slice(&len.to_be_bytes());
        }
        full(b"iloc", 1, &b)
    }

    /// A HEIF file: `ftyp`, then `meta` with primary item 1, `items`, the properties
    /// `props` all associated with item 1 in order, and `extra` boxes; then `tail`.
    pub(crate) fn heif(items: &[Vec<u8>], props: &[Vec<u8>], extra: &[Vec<u8>]) -> Vec<u8> {
        let mut ipma = vec![0, 0, 0, 1, 0, 1, props.len() as u8];
        ipma.extend((1..=props.len() as u8).map(|i| i | 0x80));
        let iinf = full(
            b"iinf",
            0,
            &[&(items.len() as u16).to_be_bytes()[..], &items.concat()].concat(),
        );
        let iprp = bx(
            b"iprp",
            &[bx(b"ipco", &props.concat()), full(b"ipma", 0, &ipma)].concat(),
        );
        let mut meta = vec![
            full(b"hdlr", 0, &[0, 0, 0, 0, b'p', b'i', b'c', b't']),
            full(b"pitm", 0, &[0, 1]),
            iinf,
            iprp,
        ];
        meta.extend_from_slice(extra);
        [
            bx(b"ftyp", b"heic\0\0\0\0mif1heic"),
            full(b"meta", 0, &meta.concat()),
        ]
        .concat()
    }

    #[test]
    fn the_primary_items_ispe_and_codec_are_read() {
        let file = heif(&[infe(1, b"hvc1")], &[ispe(4032, 3024)], &[]);
        let out = read(View::whole(&file));
        assert_eq!(out.error, None);
        assert_eq!((out.width, out.height), (Some(4032), Some(3024)));
        assert_eq!(out.meta.codec.as_deref(), Some("hvc1"));
        assert_eq!(out.meta.rotation, Some(0));
    }

    #[test]
    fn transforms_apply_in_ipma_order() {
        let irot = |a: u8| bx(b"irot", &[a]);
        let clap = |w: u32, wd: u32, h: u32| {
            let mut b = Vec::new();
            for v in [w, wd, h, 1, 0, 1, 0, 1] {
                b.extend_from_slice(&v.to_be_bytes());
            }
            bx(b"clap", &b)
        };
        // Anti-clockwise 90°: the size swaps, a clockwise rotation of 270°.
        let file = heif(&[infe(1, b"av01")], &[ispe(640, 480), irot(1)], &[]);
        let out = read(View::whole(&file));
        assert_eq!((out.width, out.height), (Some(480), Some(640)));
        assert_eq!(out.meta.rotation, Some(270));
        // Cropped to 601/2 (300.5, rounded up) × 400, then turned by 270°.
        let props = [
            ispe(640, 480),
            clap(601, 2, 400),
            irot(3),
            bx(b"imir", &[1]),
        ];
        let file = heif(&[infe(1, b"hvc1")], &props, &[]);
        let out = read(View::whole(&file));
        assert_eq!((out.width, out.height), (Some(400), Some(301)));
        assert_eq!(out.meta.rotation, Some(90));
        // Turned first, then cropped: the crop is in the turned image.
        let props = [ispe(640, 480), irot(1), clap(300, 1, 400)];
        let file = heif(&[infe(1, b"hvc1")], &props, &[]);
        let out = read(View::whole(&file));
        assert_eq!((out.width, out.height), (Some(300), Some(400)));
        let props = [ispe(640, 480), clap(300, 0, 400)];
        let file = heif(&[infe(1, b"hvc1")], &props, &[]);
        let out = read(View::whole(&file));
        assert!(out.error.unwrap().contains("clap"));
    }

    #[test]
    fn a_grid_has_its_output_size_and_its_tiles_codec() {
        let iref = full(b"iref", 0, &bx(b"dimg", &[0, 1, 0, 2, 0, 2, 0, 3]));
        // No ispe on the grid: its descriptor in idat says 4032×3024 (16-bit).
        let grid = [0u8, 0, 0, 1, 0x0F, 0xC0, 0x0B, 0xD0];
        let items = [infe(1, b"grid"), infe(2, b"hvc1"), infe(3, b"hvc1")];
        let extra = [iref.clone(), iloc(&[(1, 1, 0, 8)]), bx(b"idat", &grid)];
        let file = heif(&items, &[bx(b"irot", &[0])], &extra);
        let out = read(View::whole(&file));
        assert_eq!(out.error, None);
        assert_eq!((out.width, out.height), (Some(4032), Some(3024)));
        assert_eq!(out.meta.codec.as_deref(), Some("hvc1"));
        // The grid's own ispe, when present, is preferred.
        let file = heif(&items, &[ispe(100, 50)], &extra);
        let out = read(View::whole(&file));
        assert_eq!((out.width, out.height), (Some(100), Some(50)));
        // A descriptor cut short is named.
        let extra = [iref, iloc(&[(1, 1, 0, 5)]), bx(b"idat", &grid[..5])];
        let file = heif(&items, &[], &extra);
        let out = read(View::whole(&file));
        assert!(out.error.unwrap().contains("descriptor is cut short"));
    }

    #[test]
    fn an_overlay_has_its_canvas_size_and_its_inputs_codec() {
        // An overlay of a grid of AV1 tiles and an AV1 image.
        let iref = full(
            b"iref",
            0,
            &[
                bx(b"dimg", &[0, 1, 0, 2, 0, 2, 0, 4]),
                bx(b"dimg", &[0, 2, 0, 1, 0, 3]),
            ]
            .concat(),
        );
        // Version 0, flags 0; fill colour (4 × 16 bits); canvas 1920×1080; two offsets.
        let mut overlay = vec![0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        overlay.extend_from_slice(&[0x07, 0x80, 0x04, 0x38, 0, 0, 0, 0, 0, 0, 0, 0]);
        let items = [
            infe(1, b"iovl"),
            infe(2, b"grid"),
            infe(3, b"av01"),
            infe(4, b"av01"),
        ];
        let extra = [
            iref,
            iloc(&[(1, 1, 0, overlay.len() as u32)]),
            bx(b"idat", &overlay),
        ];
        let file = heif(&items, &[], &extra);
        let out = read(View::whole(&file));
        assert_eq!(out.error, None);
        assert_eq!((out.width, out.height), (Some(1920), Some(1080)));
        assert_eq!(out.meta.codec.as_deref(), Some("av01"));
    }

    #[test]
    fn a_sequence_without_a_primary_item_is_sized_from_its_track() {
        use crate::index::inspect::quicktime::tests::{movie, tkhd, trak};
        // An AVIF sequence (`avis`) of frames only: no `meta`, one video track.
        let mut file = movie(
            &[trak(
                b"vide",
                tkhd([1, 0, 0, 1], 640, 480),
                b"av01",
                640,
                480,
            )],
            16,
            false,
        );
        let ftyp = memchr::memmem::find(&file, b"qt  \0\0\0\0qt  ").unwrap();
        file[ftyp..ftyp + 12].copy_from_slice(b"avis\0\0\0\0avis");
        let out = read(View::whole(&file));
        assert_eq!(out.error, None);
        assert_eq!((out.width, out.height), (Some(640), Some(480)));
        assert_eq!(out.meta.codec.as_deref(), Some("av01"));
        // Neither a primary item nor a track: the error names the missing meta box.
        let bare = [bx(b"ftyp", b"avis\0\0\0\0avis"), bx(b"mdat", &[0; 8])].concat();
        assert!(
            read(View::whole(&bare))
                .error
                .unwrap()
                .contains("no meta box")
        );
    }

    #[test]
    fn the_exif_item_is_found_through_iloc() {
        let tiff = b"MM\0*\0\0\0\x08\0\0\0\0\0\0";
        let payload = [&6u32.to_be_bytes()[..], b"Exif\0\0", tiff].concat();
        let items = [infe(1, b"hvc1"), infe(2, b"Exif")];
        let head = heif(&items, &[ispe(8, 6)], &[iloc(&[(2, 0, 0, 0)])]);
        // The offset is known once the head's length is: the mdat follows it.
        let at = head.len() as u32 + 8;
        let head = heif(
            &items,
            &[ispe(8, 6)],
            &[iloc(&[(2, 0, at, payload.len() as u32)])],
        );
        let file = [head, bx(b"mdat", &payload)].concat();
        let out = read(View::whole(&file));
        assert_eq!(out.exif, Some(&tiff[..]));
        assert_eq!(out.warnings, Vec::<String>::new());
        // Not kept (the mdat lies between head and tail): a warning, the size stands.
        let cut = View::new(&file[..file.len() - 20], &[], file.len() as u64);
        let out = read(cut);
        assert_eq!((out.width, out.exif), (Some(8), None));
        assert!(
            out.warnings[0].contains("was not read"),
            "{:?}",
            out.warnings
        );
    }

    #[test]
    fn lying_sizes_truncation_and_garbage_are_named_errors() {
        let file = heif(&[infe(1, b"hvc1")], &[ispe(8, 6)], &[]);
        // The meta box claims more bytes than the file has.
        let mut lying = file.clone();
        let meta_at = 8 + 16;
        lying[meta_at..meta_at + 4].copy_from_slice(&10_000u32.to_be_bytes());
        assert!(
            read(View::whole(&lying))
                .error
                .unwrap()
                .contains("no meta box")
        );
        // An ipco child whose size runs past ipco.
        let props = [
            bx(b"ispe", &[0; 12]),
            vec![0, 0, 0, 99, b'i', b'r', b'o', b't'],
        ];
        let file = heif(&[infe(1, b"hvc1")], &props, &[]);
        let out = read(View::whole(&file));
        assert!(out.error.unwrap().contains("in ipco"));
        // Truncated in the middle of meta, with no tail.
        let cut = View::new(&file[..60], &[], file.len() as u64);
        assert!(read(cut).error.is_some());
        // No ispe at all.
        let file = heif(&[infe(1, b"hvc1")], &[], &[]);
        let out = read(View::whole(&file));
        assert_eq!(
            out.error.as_deref(),
            Some("the primary item 1 has no ispe property")
        );
        // Garbage.
        let out = read(View::whole(b"\0\0\0\x10ftypheic\xff\xff\xff\xff garbage"));
        assert!(out.error.is_some());
        assert_eq!(out.width, None);
    }
}
