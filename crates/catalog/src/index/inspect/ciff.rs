//! Canon's CRW: a CIFF heap (Canon's "Camera Image File Format") of records and nested
//! heaps. Each heap ends with the offset of its directory: a count, then records of a
//! tag, a size and an offset (from the heap's start), or eight bytes held in the record.
//! Reference: exiftool's `CanonRaw.pm` and Canon's CIFF 1.0r4 specification.

use std::collections::HashSet;
use std::f64::consts::LN_2;

use super::raw::{Raw, unix_date};
use super::tiff::Fields;
use super::view::View;

/// The deepest heap read (real files nest three deep).
const MAX_DEPTH: u32 = 8;
/// The most records read in all (a real file has about a hundred).
const MAX_RECORDS: u32 = 4096;

/// The most 16-bit values read from one of Canon's binary records (ShotInfo has 34,
/// CameraSettings 46; what lies further is not read).
const MAX_VALUES: u64 = 64;

/// What a CRW's records say: the size from ImageInfo (0x1810), make and model (0x080A),
/// the date (0x180E), the exposure from Canon's ShotInfo (0x102A), CameraSettings
/// (0x102D) and FocalLength (0x1029) records, and the JpgFromRaw (0x2007) and thumbnail
/// (0x2008) JPEGs.
pub(super) fn read(view: View<'_>) -> Raw<'_> {
    let mut raw = Raw::default();
    let le32 = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let Some(header) = view.get(0, 14).filter(|h| h.starts_with(b"II")) else {
        raw.layout.error = Some("not a little-endian CIFF header".into());
        return raw;
    };
    let start = u64::from(le32(&header[2..6]));
    let mut heap = Heap {
        view,
        seen: HashSet::new(),
        left: MAX_RECORDS,
        fields: Fields::default(),
        canon: Canon::default(),
        raw,
    };
    heap.walk(start, view.size(), 0);
    let mut raw = heap.raw;
    let mut fields = heap.fields;
    heap.canon.exposure(&mut fields);
    raw.fields = Some(fields);
    if raw.layout.width.is_none() {
        raw.layout.error = Some("no ImageInfo record in the CRW".into());
    }
    raw
}

struct Heap<'a> {
    view: View<'a>,
    seen: HashSet<u64>,
    left: u32,
    fields: Fields,
    canon: Canon,
    raw: Raw<'a>,
}

impl Heap<'_> {
    /// The little-endian 16-bit values of the record at `at` (`size` bytes), at most
    /// [`MAX_VALUES`] of them; of a record not wholly kept, those before the cut.
    fn values(&self, at: u64, size: u64) -> Vec<u16> {
        let len = (size / 2).min(MAX_VALUES) * 2;
        self.view
            .get_upto(at, at.saturating_add(len))
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect()
    }

    fn u32(&self, at: u64) -> Option<u32> {
        let b = self.view.get(at, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads the heap from `start` to `end`, `depth` heaps deep.
    fn walk(&mut self, start: u64, end: u64, depth: u32) {
        if depth > MAX_DEPTH || end < start + 4 {
            return;
        }
        let Some(dir) = self
            .u32(end - 4)
            .and_then(|d| start.checked_add(u64::from(d)))
        else {
            return;
        };
        if dir >= end || !self.seen.insert(dir) {
            return;
        }
        let Some(count) = self
            .view
            .get(dir, 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
        else {
            return;
        };
        for i in 0..u64::from(count) {
            if self.left == 0 {
                return;
            }
            self.left -= 1;
            let entry = dir + 2 + 10 * i;
            let Some(e) = self.view.get(entry, 10) else {
                return;
            };
            let tag = u16::from_le_bytes([e[0], e[1]]);
            let size = u64::from(u32::from_le_bytes([e[2], e[3], e[4], e[5]]));
            let offset = u64::from(u32::from_le_bytes([e[6], e[7], e[8], e[9]]));
            if tag & 0x8000 != 0 {
                return; // a bad record: exiftool stops here too
            }
            let inline = tag & 0x4000 != 0;
            let (at, size) = if inline {
                (entry + 2, 8)
            } else {
                match start.checked_add(offset) {
                    Some(at) if at.checked_add(size).is_some_and(|e| e <= end) => (at, size),
                    _ => continue,
                }
            };
            let kind = (tag >> 8) & 0x38;
            if (kind == 0x28 || kind == 0x30) && !inline {
                self.walk(at, at + size, depth + 1);
                continue;
            }
            self.record(tag & 0x3FFF, at, size);
        }
    }

    fn record(&mut self, id: u16, at: u64, size: u64) {
        match id {
            0x080A => {
                // "Canon\0" then the model, NUL-terminated.
                let Some(b) = self.view.get(at, size.min(256)) else {
                    return;
                };
                let mut parts = b
                    .split(|&c| c == 0)
                    .map(|s| String::from_utf8_lossy(s).trim().to_string());
                self.fields.make = parts.next().filter(|s| !s.is_empty());
                self.fields.model = parts.next().filter(|s| !s.is_empty());
            }
            // Width, height (then aspect ratio, rotation, bit depths).
            0x1810 if size >= 8 => {
                let (w, h) = (self.u32(at), self.u32(at + 4));
                self.raw.size(w.map(u64::from), h.map(u64::from));
            }
            0x180E if size >= 4 => {
                self.fields.date = self.u32(at).and_then(|t| unix_date(u64::from(t)));
            }
            0x2007 | 0x2008 => self.raw.jpegs.push((at, size)),
            // The first of each is kept (exiftool gives these tags priority 0).
            0x1029 if self.canon.focal.is_empty() => self.canon.focal = self.values(at, size),
            0x102A if self.canon.shot.is_empty() => self.canon.shot = self.values(at, size),
            0x102D if self.canon.settings.is_empty() => {
                self.canon.settings = self.values(at, size);
            }
            _ => {}
        }
    }
}

/// Canon's binary records about the shot, as 16-bit values (exiftool's `Canon.pm`
/// tables `ShotInfo`, `CameraSettings` and `FocalLength`; value `i` is at byte `2 i`).
#[derive(Debug, Default)]
struct Canon {
    shot: Vec<u16>,
    settings: Vec<u16>,
    focal: Vec<u16>,
}

impl Canon {
    /// The exposure time, f-number, ISO and focal length, as exiftool derives them.
    fn exposure(&self, f: &mut Fields) {
        let signed = |values: &[u16], i: usize| values.get(i).map(|&v| v as i16);
        let model = f.model.as_deref().unwrap_or_default();
        // ShotInfo 21: FNumber, a Canon EV code of the aperture value (AV = 2 log2 N);
        // zero is none.
        f.f_number = signed(&self.shot, 21)
            .filter(|&v| v != 0)
            .map(|v| (canon_ev(v) * LN_2 / 2.0).exp());
        // ShotInfo 22: ExposureTime, a code of the time value (TV = -log2 t). Zero is one
        // second in a CRW. The 20D and 350D count in other units.
        f.exposure_time = signed(&self.shot, 22).map(|v| {
            let t = (-canon_ev(v) * LN_2).exp();
            let other_units = ["20D", "350D", "REBEL XT", "Kiss Digital N"]
                .iter()
                .any(|w| has_word(model, w));
            if other_units { t * 1000.0 / 32.0 } else { t }
        });
        f.iso = self
            .iso()
            .map(f64::round)
            .filter(|iso| (0.0..=f64::from(u32::MAX)).contains(iso))
            .map(|iso| iso as u32);
        // FocalLength 1, in FocalUnits (CameraSettings 25) per millimetre; zero is none,
        // and units of zero (or, unlike exiftool, fewer) are taken as 1.
        let units = signed(&self.settings, 25).filter(|&u| u > 0).unwrap_or(1);
        f.focal_length = self
            .focal
            .get(1)
            .filter(|&&v| v != 0)
            .map(|&v| f64::from(v) / f64::from(units));
    }

    /// exiftool's Composite ISO for Canon: CameraSettings 16 (CameraISO) when it is a
    /// number, else BaseISO × AutoISO / 100 from ShotInfo 2 and 1.
    fn iso(&self) -> Option<f64> {
        let camera = self.settings.get(16).copied().filter(|&v| v != 0x7FFF);
        let camera = camera.and_then(|v| {
            if v & 0x4000 != 0 {
                Some(v & 0x3FFF)
            } else {
                // Other codes (0, 14, 15) are words: n/a, Auto High, Auto.
                match v {
                    16 => Some(50),
                    17 => Some(100),
                    18 => Some(200),
                    19 => Some(400),
                    20 => Some(800),
                    _ => None,
                }
            }
        });
        if let Some(iso) = camera.filter(|&iso| iso != 0) {
            return Some(f64::from(iso));
        }
        let code = |i: usize| self.shot.get(i).map(|&v| f64::from(v as i16));
        let base = code(2).filter(|&v| v != 0.0)? / 32.0;
        let auto = code(1)? / 32.0;
        let base = (base * LN_2).exp() * 100.0 / 32.0;
        let auto = (auto * LN_2).exp() * 100.0;
        Some(base * auto / 100.0)
    }
}

/// A Canon EV code as a number of stops: steps of 32, with a fraction of 12 or 20
/// meaning a third or two (exiftool's `CanonEv`).
fn canon_ev(code: i16) -> f64 {
    let value = i32::from(code).abs();
    let fraction = match value & 0x1F {
        0x0C => 32.0 / 3.0,
        0x14 => 64.0 / 3.0,
        f => f64::from(f),
    };
    let stops = (f64::from(value & !0x1F) + fraction) / 32.0;
    if code < 0 { -stops } else { stops }
}

/// Whether `phrase` is in `text` with no letter, digit or underscore right before or
/// after it (a regular expression's `\bphrase\b`).
fn has_word(text: &str, phrase: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(phrase).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + phrase.len()..].chars().next())
    })
}

#[cfg(test)]
mod tests {
    use super::{canon_ev, has_word};

    #[test]
    fn canon_ev_codes_count_thirds_and_halves() {
        assert_eq!(canon_ev(0), 0.0);
        assert_eq!(canon_ev(0x20), 1.0);
        assert_eq!(canon_ev(0x10), 0.5);
        assert_eq!(canon_ev(0x2C), 1.0 + 1.0 / 3.0);
        assert_eq!(canon_ev(0x34), 1.0 + 2.0 / 3.0);
        assert_eq!(canon_ev(-0x34), -(1.0 + 2.0 / 3.0));
        assert_eq!(canon_ev(i16::MIN), -1024.0);
    }

    #[test]
    fn model_names_are_matched_as_whole_words() {
        assert!(has_word("Canon EOS 20D", "20D"));
        assert!(has_word("Canon EOS DIGITAL REBEL XT", "REBEL XT"));
        assert!(!has_word("Canon EOS 20Da", "20D"));
        assert!(!has_word("Canon EOS DIGITAL REBEL XTi", "REBEL XT"));
        assert!(!has_word("Canon EOS 120D", "20D"));
        assert!(!has_word("", "20D"));
    }
}
