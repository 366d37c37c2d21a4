//! IPTC-IIM in a JPEG's APP13 segment (Photoshop's image resources, `8BIM` resource
//! 0x0404): the date and time a picture was created (record 2, datasets 55 and 60), the
//! last place `taken` is looked for (after EXIF and XMP), as exiftool's composite
//! DateTimeOriginal takes it.

use super::cursor::Cursor;

/// `taken` from the IPTC records in an APP13 segment's `body` (after its length): the
/// first DateCreated (`YYYYMMDD`) with its TimeCreated (`HHMMSS±HHMM`, or `HHMMSS`), as
/// the catalog writes dates; `None` without both, or when they are no date.
pub(super) fn taken(body: &[u8]) -> Option<String> {
    let resources = body.strip_prefix(b"Photoshop 3.0\0")?;
    let iptc = resource(resources, 0x0404)?;
    let (mut date, mut time) = (None, None);
    let mut c = Cursor::new(iptc);
    // Each dataset: 0x1C, record, dataset, a 16-bit length (a set high bit: an extended
    // length, which no date has: the records end there).
    while let (Some(0x1C), Some(record), Some(set), Some(len)) = (c.u8(), c.u8(), c.u8(), c.u16()) {
        if len & 0x8000 != 0 {
            break;
        }
        let Some(value) = c.take(usize::from(len)) else {
            break;
        };
        match (record, set) {
            (2, 55) if date.is_none() => date = Some(value),
            (2, 60) if time.is_none() => time = Some(value),
            _ => {}
        }
    }
    let (d, t) = (date?, time?);
    let digits = |b: &[u8]| b.iter().all(u8::is_ascii_digit);
    if d.len() != 8 || !digits(d) || t.len() < 6 || !digits(&t[..6]) {
        return None;
    }
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut iso = format!(
        "{}-{}-{}T{}:{}:{}",
        text(&d[..4]),
        text(&d[4..6]),
        text(&d[6..]),
        text(&t[..2]),
        text(&t[2..4]),
        text(&t[4..6])
    );
    // The zone, `±HHMM`, where there is one.
    if let [sign @ (b'+' | b'-'), zone @ ..] = &t[6..]
        && zone.len() == 4
        && digits(zone)
    {
        iso.push_str(&format!(
            "{}{}:{}",
            *sign as char,
            text(&zone[..2]),
            text(&zone[2..])
        ));
    }
    crate::index::taken::Taken::iso(&iso).map(|t| t.to_string())
}

/// The data of the image resource `id` among Photoshop's `resources` (`8BIM`, a 16-bit
/// id, a Pascal name padded to even length, a 32-bit size, the data padded to even).
fn resource(resources: &[u8], id: u16) -> Option<&[u8]> {
    let mut c = Cursor::new(resources);
    while c.take(4)? == b"8BIM" {
        let this = c.u16()?;
        let name = usize::from(c.u8()?);
        // The name's length byte and the name, padded to an even count.
        c.take((name + 1) % 2 + name)?;
        let size = usize::try_from(c.u32()?).ok()?;
        let data = c.take(size)?;
        if this == id {
            return Some(data);
        }
        if size % 2 == 1 {
            c.take(1)?;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An APP13 body holding `datasets` (record 2) in an IPTC resource.
    fn app13(datasets: &[(u8, &[u8])]) -> Vec<u8> {
        let mut iptc = Vec::new();
        for &(set, value) in datasets {
            iptc.extend_from_slice(&[0x1C, 2, set]);
            iptc.extend_from_slice(&(value.len() as u16).to_be_bytes());
            iptc.extend_from_slice(value);
        }
        let mut b = b"Photoshop 3.0\0".to_vec();
        // Another resource first (a name of 3 bytes, padded; odd data, padded).
        b.extend_from_slice(b"8BIM\x03\xED\x03abc\0\0\0\x01x\0");
        b.extend_from_slice(b"8BIM\x04\x04\0\0");
        b.extend_from_slice(&(iptc.len() as u32).to_be_bytes());
        b.extend_from_slice(&iptc);
        b
    }

    #[test]
    fn the_iptc_date_and_time_created_are_taken_with_their_zone() {
        assert_eq!(
            taken(&app13(&[(55, b"20191014"), (60, b"150020+0000")])).as_deref(),
            Some("2019-10-14T15:00:20+00:00")
        );
        assert_eq!(
            taken(&app13(&[(60, b"150020"), (55, b"20191014")])).as_deref(),
            Some("2019-10-14T15:00:20")
        );
        // A date alone says no time; a date that is none is none.
        assert_eq!(taken(&app13(&[(55, b"20191014")])), None);
        assert_eq!(taken(&app13(&[(55, b"20191314"), (60, b"150020")])), None);
        // Not Photoshop's resources, or cut short: nothing, never a panic.
        assert_eq!(taken(b"Adobe_CM"), None);
        let whole = app13(&[(55, b"20191014"), (60, b"150020")]);
        for cut in 0..whole.len() {
            let _ = taken(&whole[..cut]);
        }
    }
}
