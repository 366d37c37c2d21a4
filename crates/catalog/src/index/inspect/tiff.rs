//! The TIFF structure: a TIFF file's first image directory (IFD0) and the EXIF block of
//! every other format (a TIFF structure without the image), classic and BigTIFF.
//!
//! Our own reader rather than `kamadak-exif`'s because that one drops a whole block for one
//! bad entry: a sub-IFD pointer typed IFD (13) instead of LONG, an Orientation typed SLONG,
//! a pointer past the end. Here every entry stands alone: one that cannot be read is
//! skipped and named as damage, and every other field is kept (as exiftool does).
//! References: TIFF 6.0 §2, EXIF 2.32 §4.6, BigTIFF (<https://www.awaresystems.be/imaging/tiff/bigtiff.html>).

use std::collections::HashSet;

/// One directory entry: its tag, type, count and where its value lies.
#[derive(Clone, Copy, Debug)]
struct Entry {
    tag: u16,
    kind: u16,
    count: u64,
    /// Offset of the value's bytes in the block (inline values point into the entry).
    at: u64,
    /// Whether the value lies past the block's end (a raw file's image data, which only
    /// its offset is wanted for).
    far: bool,
}

/// The fields of one TIFF structure that the catalog keeps, raw.
#[derive(Debug, Default)]
pub(super) struct Fields {
    pub width: Option<u64>,
    pub height: Option<u64>,
    pub make: Option<String>,
    pub model: Option<String>,
    pub lens: Option<String>,
    pub orientation: Option<u32>,
    pub exposure_time: Option<f64>,
    pub f_number: Option<f64>,
    pub iso: Option<u32>,
    pub focal_length: Option<f64>,
    pub date: Option<String>,
    pub subsec: Option<String>,
    pub offset: Option<String>,
    pub gps_lat: Option<f64>,
    pub gps_lon: Option<f64>,
    pub gps_alt: Option<f64>,
    /// What could not be read (the first few), each a short phrase.
    pub damage: Vec<String>,
}

struct Reader<'a> {
    data: &'a [u8],
    little: bool,
    big: bool,
    damage: Vec<String>,
    /// Links to further IFDs that are not followed (next-IFD links, SubIFDs, Interop):
    /// one that points back to an IFD already read is a loop, damage to report.
    links: Vec<u64>,
    /// The first directory met whose entries run past the block's end.
    cut_ifd: Option<u64>,
    /// The first entry met whose value runs past the block's end: (tag, offset, length).
    far_value: Option<(u16, u64, u64)>,
}

const EXIF_IFD: u16 = 0x8769;
const GPS_IFD: u16 = 0x8825;

/// The tags of IFD0 and the Exif IFD the catalog reads: damage elsewhere (an
/// ImageDescription pointing past the end) does not make the file an error.
const MAIN_TAGS: &[u16] = &[
    0x0100, 0x0101, 0x010F, 0x0110, 0x0112, EXIF_IFD, GPS_IFD, 0x829A, 0x829D, 0x8827, 0x920A,
    0x9003, 0x9291, 0x9011, 0xA434,
];
/// The GPS IFD's: latitude, longitude, altitude and their references.
const GPS_TAGS: &[u16] = &[1, 2, 3, 4, 5, 6];

/// Reads the TIFF structure in `data` (starting with `II` or `MM`). `Err` when it is not
/// one at all (no byte order, no IFD0); otherwise whatever could be read, with the damage.
pub(super) fn read(data: &[u8]) -> Result<Fields, String> {
    let (mut r, first) = Reader::open(data)?;
    let mut seen = HashSet::new();
    let mut ifd0 = r
        .ifd(first, MAIN_TAGS, &mut seen)
        .ok_or_else(|| format!("IFD0 at {first} is outside the block"))?;
    ifd0.retain(|e| !e.far);
    let mut f = Fields::default();
    let mut exif = r.sub_ifd(&ifd0, EXIF_IFD, "Exif", MAIN_TAGS, &mut seen);
    let mut gps = r.sub_ifd(&ifd0, GPS_IFD, "GPS", GPS_TAGS, &mut seen);
    exif.retain(|e| !e.far);
    gps.retain(|e| !e.far);
    // EXIF tags are looked up in the Exif IFD first, then in IFD0 (some writers put
    // LensModel or DateTimeOriginal there; exiftool reads them).
    let find = |tag: u16| {
        exif.iter()
            .chain(ifd0.iter())
            .find(|e| e.tag == tag)
            .copied()
    };
    for e in ifd0.iter().chain(&exif) {
        if matches!(e.tag, 0x014A | 0xA005)
            && let Some(at) = r.uint(e)
        {
            r.links.push(at);
        }
    }
    for at in std::mem::take(&mut r.links) {
        if seen.contains(&at) {
            r.note(format!("IFD at {at} is linked to again (a loop)"));
        }
    }
    let in_ifd0 = |tag: u16| ifd0.iter().find(|e| e.tag == tag).copied();

    f.width = in_ifd0(0x0100).and_then(|e| r.uint(&e));
    f.height = in_ifd0(0x0101).and_then(|e| r.uint(&e));
    f.make = in_ifd0(0x010F).and_then(|e| r.text(&e));
    f.model = in_ifd0(0x0110).and_then(|e| r.text(&e));
    // Orientation is a SHORT; some writers use LONG or SLONG (exiftool reads those).
    f.orientation = in_ifd0(0x0112)
        .and_then(|e| r.uint(&e))
        .and_then(|o| u32::try_from(o).ok())
        .filter(|o| (1..=8).contains(o));
    f.exposure_time = find(0x829A).and_then(|e| r.real(&e, 0));
    f.f_number = find(0x829D).and_then(|e| r.real(&e, 0));
    f.iso = find(0x8827)
        .and_then(|e| r.uint(&e))
        .and_then(|v| u32::try_from(v).ok());
    f.focal_length = find(0x920A).and_then(|e| r.real(&e, 0));
    f.date = find(0x9003).and_then(|e| r.text(&e));
    f.subsec = find(0x9291).and_then(|e| r.text(&e));
    f.offset = find(0x9011).and_then(|e| r.text(&e));
    f.lens = find(0xA434).and_then(|e| r.text(&e));

    r.gps(&gps, &mut f);
    f.damage = r.damage;
    Ok(f)
}

/// The GPS fields of a block whose IFD0 is a GPS IFD (a CR3's CMT4 box).
pub(super) fn read_gps(data: &[u8]) -> Result<Fields, String> {
    let (mut r, first) = Reader::open(data)?;
    let mut gps = r
        .ifd(first, GPS_TAGS, &mut HashSet::new())
        .ok_or_else(|| format!("the GPS IFD at {first} is outside the block"))?;
    gps.retain(|e| !e.far);
    let mut f = Fields::default();
    r.gps(&gps, &mut f);
    f.damage = r.damage;
    Ok(f)
}

/// What a raw file's TIFF structure says about the images it holds, beyond the EXIF
/// fields: the main image's size and orientation as exiftool picks them, the embedded
/// JPEGs, and the tags that tell one raw format from another.
#[derive(Debug, Default)]
pub(super) struct Images {
    /// ImageWidth and ImageHeight of the main image: those of the first directory marked
    /// as the full-resolution image (NewSubfileType 0, or the old SubfileType 1), else the
    /// first found in exiftool's walk order (IFD0, its SubIFDs, the Exif IFD, IFD1, …).
    pub width: Option<u64>,
    pub height: Option<u64>,
    /// Orientation chosen by the same rule.
    pub orientation: Option<u32>,
    /// No directory marked full-resolution was read, and the size is that of one marked
    /// reduced-resolution (NewSubfileType bit 0): a thumbnail's.
    pub thumbnail_sized: bool,
    /// Where the directories that may hold an image (a SubIFD, the next IFD) and that
    /// lie past the end of the block are.
    pub past_the_end: Vec<u64>,
    /// ExifImageWidth and ExifImageHeight (the Exif IFD's): CR2 and IIQ report these.
    pub exif_width: Option<u64>,
    pub exif_height: Option<u64>,
    /// Embedded JPEGs as (offset, length) in the block: JPEGInterchangeFormat and its
    /// length, single-strip JPEG-compressed previews, Panasonic's JpgFromRaw (0x2E).
    /// Not checked against the block: they may lie past it.
    pub jpegs: Vec<(u64, u64)>,
    /// IFD0's Make.
    pub make: Option<String>,
    /// Whether IFD0 has DNGVersion (0xC612).
    pub dng: bool,
    /// Panasonic's sensor borders in IFD0 (tags 4 to 7): top, left, bottom, right.
    pub borders: [Option<u64>; 4],
    /// Where Panasonic's JpgFromRaw (tag 0x2E) lies: its EXIF has the date.
    pub jpg_from_raw: Option<(u64, u64)>,
    /// Where the first MakerNote (tag 0x927C) that lies inside the block is, as (offset,
    /// length): Phase One's directory in an IIQ.
    pub maker_note: Option<(u64, u64)>,
    /// The image data (strip, tile or JPEGInterchangeFormat) of IFD0, its SubIFDs and the
    /// IFD chain that ends furthest into the file, as (offset, length): the integrity
    /// verdict checks it against the file's size. Arrays not in the block are not read.
    pub data_end: Option<(u64, u64)>,
    /// The first directory of that walk whose entries run past the block's end.
    pub cut_directory: Option<u64>,
    /// The first entry of the directories of that walk whose value runs past the block's
    /// end, as (tag, offset, length).
    pub value_past_the_end: Option<(u16, u64, u64)>,
}

/// The most directories [`images`] reads: real raw files have fewer than 10.
const MAX_IFDS: u32 = 64;

/// Reads what the TIFF structure in `data` says about its images (see [`Images`]).
/// `Err` when it is not a TIFF structure at all.
pub(super) fn images(data: &[u8]) -> Result<Images, String> {
    let (mut r, first) = Reader::open(data)?;
    let mut walk = Walk {
        seen: HashSet::new(),
        left: MAX_IFDS,
        priority_set: false,
        first_reduced: None,
        width: Pick::default(),
        height: Pick::default(),
        orientation: Pick::default(),
        out: Images::default(),
    };
    // IFD0 and the IFDs it links to (IFD1, IFD2, … as in CR2), each with its SubIFDs.
    let mut at = Some(first);
    let mut index = 0;
    while let Some(ifd) = at.filter(|&a| a != 0) {
        walk.note_past_the_end(ifd, data);
        at = r.walk(ifd, index == 0, 0, &mut walk);
        index += 1;
    }
    let mut out = walk.out;
    out.cut_directory = r.cut_ifd;
    out.value_past_the_end = r.far_value;
    out.thumbnail_sized = !walk.priority_set && walk.first_reduced == Some(true);
    out.width = walk.width.get();
    out.height = walk.height.get();
    out.orientation = walk
        .orientation
        .get()
        .and_then(|o| u32::try_from(o).ok())
        .filter(|o| (1..=8).contains(o));
    Ok(out)
}

/// A tag exiftool gives priority 0: the first value found stands unless the
/// full-resolution image's directory has one.
#[derive(Default)]
struct Pick {
    first: Option<u64>,
    priority: Option<u64>,
}

impl Pick {
    fn see(&mut self, value: Option<u64>, priority: bool) {
        if priority && self.priority.is_none() {
            self.priority = value;
        }
        if self.first.is_none() {
            self.first = value;
        }
    }
    fn get(&self) -> Option<u64> {
        self.priority.or(self.first)
    }
}

struct Walk {
    seen: HashSet<u64>,
    left: u32,
    /// Whether the full-resolution image's directory was met (exiftool's priority
    /// directory is the first one marked so).
    priority_set: bool,
    /// Whether the directory the first width came from is marked reduced-resolution.
    first_reduced: Option<bool>,
    width: Pick,
    height: Pick,
    orientation: Pick,
    out: Images,
}

/// The most strips or tiles of one directory whose extents are checked.
const MAX_PIECES: u64 = 1 << 20;

impl Walk {
    /// Remembers image data at `start` of `len` bytes if it ends further than any seen.
    fn see_data(&mut self, start: u64, len: u64) {
        let end = start.saturating_add(len);
        if self
            .out
            .data_end
            .is_none_or(|(s, l)| s.saturating_add(l) < end)
        {
            self.out.data_end = Some((start, len));
        }
    }

    /// Remembers `at`, where a directory that may hold an image is, if it lies past the
    /// end of `data`.
    fn note_past_the_end(&mut self, at: u64, data: &[u8]) {
        if at >= data.len() as u64 {
            self.out.past_the_end.push(at);
        }
    }
}

impl Reader<'_> {
    /// Reads the IFD at `at` and the SubIFDs and Exif IFD it points to, in exiftool's
    /// order; returns the link to the next IFD in its chain.
    fn walk(&mut self, at: u64, ifd0: bool, depth: u32, w: &mut Walk) -> Option<u64> {
        if w.left == 0 || depth > 3 {
            return None;
        }
        w.left -= 1;
        self.links.clear();
        let entries = self.ifd(at, &[], &mut w.seen)?;
        let next = self.links.pop();
        self.links.clear();
        let get = |tag: u16| entries.iter().find(|e| e.tag == tag);
        let value = |tag: u16| get(tag).and_then(|e| self.uint(e));
        let new_kind = value(0x00FE);
        let old_kind = value(0x00FF);
        let priority = !w.priority_set && (new_kind == Some(0) || old_kind == Some(1));
        w.priority_set |= priority;
        if w.first_reduced.is_none() && value(0x0100).is_some() {
            w.first_reduced = Some(new_kind.is_some_and(|k| k & 1 == 1));
        }
        w.width.see(value(0x0100), priority);
        w.height.see(value(0x0101), priority);
        w.orientation.see(value(0x0112), priority);
        if ifd0 {
            w.out.make = get(0x010F).and_then(|e| self.text(e));
            w.out.dng = get(0xC612).is_some();
            for (i, tag) in [4u16, 5, 6, 7].into_iter().enumerate() {
                w.out.borders[i] = value(tag);
            }
            if let Some(e) = get(0x002E).filter(|e| e.kind == 7) {
                w.out.jpg_from_raw = Some((e.at, e.count));
                w.out.jpegs.push((e.at, e.count));
            }
        }
        if w.out.exif_width.is_none() {
            w.out.exif_width = value(0xA002);
            w.out.exif_height = value(0xA003);
        }
        if let (Some(start), Some(len)) = (value(0x0201), value(0x0202)) {
            w.out.jpegs.push((start, len));
            w.see_data(start, len);
        }
        for (offsets, counts) in [(0x0111, 0x0117), (0x0144, 0x0145)] {
            // Arrays not in the block have no value to read: not looped over.
            if let (Some(o), Some(c)) = (get(offsets), get(counts))
                && !o.far
                && !c.far
            {
                for i in 0..o.count.min(c.count).min(MAX_PIECES) {
                    if let (Some(start), Some(len)) = (self.nth(o, i), self.nth(c, i)) {
                        w.see_data(start, len);
                    }
                }
            }
        }
        if w.out.maker_note.is_none()
            && let Some(e) = get(0x927C).filter(|e| !e.far && matches!(e.kind, 1 | 7))
        {
            w.out.maker_note = Some((e.at, e.count));
        }
        // A JPEG-compressed image in one strip is a preview unless it is the raw image
        // (CR2's IFD3, a DNG's lossless JPEG): marked full-resolution, colour filter
        // array or linear raw data, or carrying CR2's slice tags.
        let strips = get(0x0111).filter(|e| e.count == 1);
        let raw = new_kind == Some(0)
            || matches!(value(0x0106), Some(32803 | 34892))
            || get(0xC640).is_some()
            || get(0xC5D8).is_some();
        if matches!(value(0x0103), Some(6 | 7))
            && !raw
            && let (Some(start), Some(len)) = (
                strips.and_then(|e| self.uint(e)),
                get(0x0117)
                    .filter(|e| e.count == 1)
                    .and_then(|e| self.uint(e)),
            )
        {
            w.out.jpegs.push((start, len));
        }
        for e in &entries {
            match e.tag {
                0x014A => {
                    for i in 0..e.count.min(16) {
                        let (size, kind) = if matches!(e.kind, 16 | 18) {
                            (8, 16)
                        } else {
                            (4, 4)
                        };
                        let one = Entry {
                            at: e.at.saturating_add(i * size),
                            count: 1,
                            kind,
                            ..*e
                        };
                        if let Some(sub) = self.uint(&one) {
                            w.note_past_the_end(sub, self.data);
                            self.walk(sub, false, depth + 1, w);
                        }
                    }
                }
                EXIF_IFD if matches!(e.kind, 4 | 13 | 16 | 18) => {
                    if let Some(sub) = self.uint(e) {
                        self.walk(sub, false, depth + 1, w);
                    }
                }
                _ => {}
            }
        }
        next
    }
}

/// The images after the first that the MP Index IFD in `block` (an MPF APP2's payload
/// after `MPF\0`) lists, as (offset from the block's start, length); at most 64.
pub(super) fn mp_images(block: &[u8]) -> Vec<(u64, u64)> {
    let Ok((mut r, first)) = Reader::open(block) else {
        return Vec::new();
    };
    let Some(entries) = r.ifd(first, &[], &mut HashSet::new()) else {
        return Vec::new();
    };
    let Some(e) = entries.iter().find(|e| e.tag == 0xB002 && !e.far) else {
        return Vec::new();
    };
    (0..(e.count / 16).min(64))
        .filter_map(|i| {
            let at = e.at.checked_add(i * 16)?;
            let (len, offset) = (r.u32(at + 4)?, r.u32(at + 8)?);
            (offset != 0).then_some((u64::from(offset), u64::from(len)))
        })
        .collect()
}

/// Bytes per value of each TIFF type; `None` for types this reader does not know.
fn type_size(kind: u16) -> Option<u64> {
    Some(match kind {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => return None,
    })
}

impl<'a> Reader<'a> {
    /// A reader of the TIFF structure in `data` and the offset of its IFD0.
    fn open(data: &'a [u8]) -> Result<(Self, u64), String> {
        let little = match data.get(0..2) {
            Some(b"II") => true,
            Some(b"MM") => false,
            _ => return Err("no TIFF byte order mark".into()),
        };
        let mut r = Reader {
            data,
            little,
            big: false,
            damage: Vec::new(),
            links: Vec::new(),
            cut_ifd: None,
            far_value: None,
        };
        // The magic number is 42 for TIFF and EXIF, 43 for BigTIFF; raw formats use their
        // own (ORF: 0x4F52/0x5352, RW2: 0x55) with a classic layout.
        let first = if r.u16(2) == Some(43) {
            r.big = true;
            if r.u16(4) != Some(8) {
                return Err("BigTIFF with an offset size other than 8".into());
            }
            r.u64(8)
        } else {
            r.u32(4).map(u64::from)
        }
        .ok_or("TIFF header cut short")?;
        Ok((r, first))
    }

    /// Latitude, longitude and altitude from the entries of a GPS IFD.
    fn gps(&self, gps: &[Entry], f: &mut Fields) {
        let in_gps = |tag: u16| gps.iter().find(|e| e.tag == tag).copied();
        // A coordinate without its reference (N or S, E or W) has no sign: it is none, not
        // north or east.
        let degrees = |tag: u16, reference: u16, [positive, negative]: [u8; 2], limit: f64| {
            let e = in_gps(tag)?;
            if e.count != 3 {
                return None;
            }
            let d = self.real(&e, 0)? + self.real(&e, 1)? / 60.0 + self.real(&e, 2)? / 3600.0;
            let side = in_gps(reference)
                .and_then(|e| self.text(&e))
                .and_then(|s| s.as_bytes().first().map(u8::to_ascii_uppercase));
            let sign = match side {
                Some(b) if b == negative => -1.0,
                Some(b) if b == positive => 1.0,
                _ => return None,
            };
            // A latitude beyond 90° or a longitude beyond 180° is no place.
            (d.is_finite() && d <= limit).then_some(sign * d)
        };
        f.gps_lat = degrees(2, 1, *b"NS", 90.0);
        f.gps_lon = degrees(4, 3, *b"EW", 180.0);
        f.gps_alt = in_gps(6).and_then(|e| self.real(&e, 0)).map(|alt| {
            let below = in_gps(5).and_then(|e| self.uint(&e)) == Some(1);
            if below { -alt } else { alt }
        });
    }

    fn bytes<const N: usize>(&self, at: u64) -> Option<[u8; N]> {
        let at = usize::try_from(at).ok()?;
        self.data.get(at..at.checked_add(N)?)?.try_into().ok()
    }
    /// Value `i` of an array of SHORT, LONG or LONG8 (`None` where it is not in the block).
    fn nth(&self, e: &Entry, i: u64) -> Option<u64> {
        if e.far || i >= e.count {
            return None;
        }
        match e.kind {
            3 => self
                .u16(e.at.checked_add(i.checked_mul(2)?)?)
                .map(u64::from),
            4 | 13 => self
                .u32(e.at.checked_add(i.checked_mul(4)?)?)
                .map(u64::from),
            16 => self.u64(e.at.checked_add(i.checked_mul(8)?)?),
            _ => None,
        }
    }
    fn u16(&self, at: u64) -> Option<u16> {
        let b = self.bytes::<2>(at)?;
        Some(if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    }
    fn u32(&self, at: u64) -> Option<u32> {
        let b = self.bytes::<4>(at)?;
        Some(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }
    fn u64(&self, at: u64) -> Option<u64> {
        let b = self.bytes::<8>(at)?;
        Some(if self.little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        })
    }

    fn note(&mut self, what: String) {
        if self.damage.len() < 4 {
            self.damage.push(what);
        }
    }

    /// The entries of the IFD at `at` that lie inside the block (a directory cut short
    /// keeps the entries before the cut). `None` when it starts outside the block or was
    /// already read (a loop).
    fn ifd(&mut self, at: u64, wanted: &[u16], seen: &mut HashSet<u64>) -> Option<Vec<Entry>> {
        if !seen.insert(at) {
            self.note(format!("IFD at {at} is visited twice (a loop)"));
            return None;
        }
        let (count, first, size, inline) = if self.big {
            (self.u64(at)?, at + 8, 20, 8)
        } else {
            (u64::from(self.u16(at)?), at + 2, 12, 4)
        };
        let fits = (self.data.len() as u64).saturating_sub(first) / size;
        if count > fits {
            self.cut_ifd.get_or_insert(at);
            self.note(format!("IFD at {at} has {count} entries, only {fits} fit"));
        }
        if count <= fits {
            let next = first + count * size;
            let link = if self.big {
                self.u64(next)
            } else {
                self.u32(next).map(u64::from)
            };
            self.links.extend(link.filter(|&l| l != 0));
        }
        let mut entries = Vec::new();
        for i in 0..count.min(fits) {
            let e = first + i * size;
            let (tag, kind) = (self.u16(e)?, self.u16(e + 2)?);
            let (n, value) = if self.big {
                (self.u64(e + 4)?, e + 12)
            } else {
                (u64::from(self.u32(e + 4)?), e + 8)
            };
            let Some(len) = type_size(kind).and_then(|s| s.checked_mul(n)) else {
                continue; // an unknown type: skipped, as the TIFF spec says readers should
            };
            let at = if len <= inline {
                value
            } else if self.big {
                self.u64(value)?
            } else {
                u64::from(self.u32(value)?)
            };
            let far = at
                .checked_add(len)
                .is_none_or(|end| end > self.data.len() as u64);
            if far {
                self.far_value.get_or_insert((tag, at, len));
            }
            if far && wanted.contains(&tag) {
                self.note(format!("tag 0x{tag:04X} points outside the block"));
            }
            entries.push(Entry {
                tag,
                kind,
                count: n,
                at,
                far,
            });
        }
        Some(entries)
    }

    /// The IFD that `tag` of `parent` points to (typed LONG, IFD, LONG8 or IFD8).
    fn sub_ifd(
        &mut self,
        parent: &[Entry],
        tag: u16,
        name: &str,
        wanted: &[u16],
        seen: &mut HashSet<u64>,
    ) -> Vec<Entry> {
        let Some(e) = parent.iter().find(|e| e.tag == tag) else {
            return Vec::new();
        };
        if !matches!(e.kind, 3 | 4 | 13 | 16 | 18) {
            self.note(format!(
                "the {name} IFD pointer has type {}, not an offset",
                e.kind
            ));
            return Vec::new();
        }
        let Some(at) = self.uint(e) else {
            self.note(format!(
                "the {name} IFD pointer has {} values and no offset",
                e.count
            ));
            return Vec::new();
        };
        match self.ifd(at, wanted, seen) {
            Some(entries) => entries,
            None => {
                self.note(format!("the {name} IFD at {at} is outside the block"));
                Vec::new()
            }
        }
    }

    /// The first value of an integer entry (any width, signed ones only if ≥ 0).
    fn uint(&self, e: &Entry) -> Option<u64> {
        if e.count == 0 {
            return None;
        }
        let at = e.at;
        let byte = || self.bytes::<1>(at).map(|[b]| b);
        match e.kind {
            1 | 7 => byte().map(u64::from),
            3 => self.u16(at).map(u64::from),
            4 | 13 => self.u32(at).map(u64::from),
            16 | 18 => self.u64(at),
            6 => byte().and_then(|b| u64::try_from(b as i8).ok()),
            8 => self.u16(at).and_then(|v| u64::try_from(v as i16).ok()),
            9 => self.u32(at).and_then(|v| u64::try_from(v as i32).ok()),
            17 => self.u64(at).and_then(|v| u64::try_from(v as i64).ok()),
            _ => None,
        }
    }

    /// Value `i` of a numeric entry as a real number; `None` for x/0.
    fn real(&self, e: &Entry, i: u64) -> Option<f64> {
        if i >= e.count {
            return None;
        }
        let size = type_size(e.kind)?;
        let at = e.at.checked_add(i.checked_mul(size)?)?;
        let x = match e.kind {
            5 => f64::from(self.u32(at)?) / f64::from(self.u32(at + 4)?),
            10 => f64::from(self.u32(at)? as i32) / f64::from(self.u32(at + 4)? as i32),
            11 => f64::from(f32::from_bits(self.u32(at)?)),
            12 => f64::from_bits(self.u64(at)?),
            1 | 3 | 4 | 6 | 8 | 9 | 16 | 17 => {
                let one = Entry { at, count: 1, ..*e };
                self.uint(&one)? as f64
            }
            _ => return None,
        };
        x.is_finite().then_some(x)
    }

    /// An ASCII (or UNDEFINED) entry as text up to its first NUL, trailing spaces
    /// trimmed; `None` when empty.
    fn text(&self, e: &Entry) -> Option<String> {
        if !matches!(e.kind, 2 | 7) {
            return None;
        }
        let start = usize::try_from(e.at).ok()?;
        let end = start.checked_add(usize::try_from(e.count).ok()?)?;
        let bytes = self.data.get(start..end)?;
        let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
        let s = String::from_utf8_lossy(bytes);
        let s = s.trim_end_matches(' ').trim_start();
        (!s.is_empty()).then(|| s.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian block whose IFD0 is a GPS IFD: latitude 10° 30' 0" and longitude
    /// 20° 0' 0", each with its reference when one is given.
    fn gps_block(lat_ref: Option<u8>, lon_ref: Option<u8>) -> Vec<u8> {
        let refs = [(1u16, lat_ref), (3, lon_ref)];
        let n = 2 + refs.iter().filter(|(_, r)| r.is_some()).count() as u16;
        let rationals = 8 + 2 + 12 * u32::from(n) + 4;
        let mut b = b"II*\0\x08\0\0\0".to_vec();
        b.extend(n.to_le_bytes());
        let mut entries: Vec<(u16, u16, u32, u32)> =
            vec![(2, 5, 3, rationals), (4, 5, 3, rationals + 24)];
        for (tag, r) in refs {
            if let Some(r) = r {
                entries.push((tag, 2, 2, u32::from(r)));
            }
        }
        entries.sort();
        for (tag, kind, count, value) in entries {
            b.extend(tag.to_le_bytes());
            b.extend(kind.to_le_bytes());
            b.extend(count.to_le_bytes());
            b.extend(value.to_le_bytes());
        }
        b.extend(0u32.to_le_bytes());
        for (num, den) in [(10u32, 1u32), (30, 1), (0, 1), (20, 1), (0, 1), (0, 1)] {
            b.extend(num.to_le_bytes());
            b.extend(den.to_le_bytes());
        }
        b
    }

    #[test]
    fn a_coordinate_has_the_sign_of_its_reference_and_none_without_one() {
        let f = read_gps(&gps_block(Some(b'S'), Some(b'W'))).unwrap();
        assert_eq!((f.gps_lat, f.gps_lon), (Some(-10.5), Some(-20.0)));
        let f = read_gps(&gps_block(Some(b'N'), Some(b'E'))).unwrap();
        assert_eq!((f.gps_lat, f.gps_lon), (Some(10.5), Some(20.0)));
        // No reference, or one that is no side: no coordinate (not north, not east).
        let f = read_gps(&gps_block(None, Some(b'E'))).unwrap();
        assert_eq!((f.gps_lat, f.gps_lon), (None, Some(20.0)));
        let f = read_gps(&gps_block(Some(b'X'), None)).unwrap();
        assert_eq!((f.gps_lat, f.gps_lon), (None, None));
    }

    #[test]
    fn an_ifd_pointer_without_a_value_is_said_to_have_none() {
        // IFD0 with a GPS IFD pointer of type LONG and count 0.
        let mut b = b"II*\0\x08\0\0\0\x01\0".to_vec();
        b.extend(GPS_IFD.to_le_bytes());
        b.extend(4u16.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        let f = read(&b).unwrap();
        let said = f.damage.join("; ");
        assert!(said.contains("GPS IFD pointer has 0 values"), "{said}");
        assert!(!said.contains("type 4"), "{said}");
    }
}
