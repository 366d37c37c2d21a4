//! The checks a pair of images within the pHash distance must pass to be called the same
//! picture, and the one that calls it a burst instead. All cheap: the pHash already did
//! the hard part; these cut its false positives (two different pictures whose 64 bits
//! happen to agree, mostly plain or low-detail ones).
//!
//! - **Aspect ratio** within [`ASPECT_TOLERANCE`] (EXIF orientation applied): a crop, or
//!   another picture squeezed into the same 32×32 square the pHash is computed from, is
//!   not a copy.
//! - **Thumbnail signature**: the stored thumbnail (table `thumbs`) decoded at 1/8 scale in
//!   the DCT domain (a 256-pixel thumbnail: 32 pixels; no IDCT worth the name), averaged
//!   into 16×16 cells of RGB, each channel's mean subtracted (a brightness change alone
//!   stays a copy). Two signatures match when their mean absolute difference is at most
//!   [`SIGNATURE_TOLERANCE`] (of 255). Unlike the pHash it sees colour, and the layout
//!   at twice the pHash's resolution. A pair of which either has no thumbnail skips this
//!   check (decided on the pHash and the aspect ratio alone).
//! - **Burst**: the same camera (make and model, both known) and `taken` within
//!   [`BURST_WINDOW_MS`], but not at the same instant: a re-encoded or resized copy keeps
//!   its original's EXIF, so equal timestamps are one shot, kept as duplicates; a camera
//!   that records no sub-seconds gives a burst's frames of one second the same timestamp,
//!   and they are then told as duplicates (said in the README).

/// Aspect ratios (long / short side, orientation applied) within 2 % of each other.
pub const ASPECT_TOLERANCE: f64 = 0.02;

/// Largest mean absolute difference (per channel value, of 255) between two thumbnail
/// signatures of the same picture. Re-encoding at JPEG quality 60 or halving gives 1–3 on
/// the test images; frames of a burst with a small change 3–6; other pictures that the
/// pHash alone would pair, 15 and more.
pub const SIGNATURE_TOLERANCE: f64 = 10.0;

/// Frames of a burst are taken at most this far apart (milliseconds).
pub const BURST_WINDOW_MS: i64 = 2000;

/// Cells on a side of a thumbnail signature.
const CELLS: usize = 16;

/// A thumbnail's coarse colour layout: 16×16 cells × RGB, each channel's mean subtracted.
pub type Signature = Box<[i16; CELLS * CELLS * 3]>;

/// Whether two images' sides (orientation applied) have aspect ratios within
/// [`ASPECT_TOLERANCE`]; images whose sides are unknown pass.
pub fn same_aspect(a: Option<(u32, u32)>, b: Option<(u32, u32)>) -> bool {
    let ratio = |(w, h): (u32, u32)| f64::from(w.max(1)) / f64::from(h.max(1));
    match (a, b) {
        (Some(a), Some(b)) => {
            let (ra, rb) = (ratio(a), ratio(b));
            (ra - rb).abs() <= ASPECT_TOLERANCE * ra.max(rb)
        }
        _ => true,
    }
}

/// The signature of a JPEG thumbnail, or `None` when it cannot be decoded.
pub fn signature(jpeg: &[u8]) -> Option<Signature> {
    let mut decoder = jpeg_decoder::Decoder::new(jpeg);
    decoder.read_info().ok()?;
    decoder.scale(CELLS as u16, CELLS as u16).ok()?;
    let pixels = decoder.decode().ok()?;
    let info = decoder.info()?;
    let (w, h) = (usize::from(info.width), usize::from(info.height));
    let bpp = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => 3,
        jpeg_decoder::PixelFormat::L8 => 1,
        _ => return None,
    };
    if w == 0 || h == 0 || pixels.len() < w * h * bpp {
        return None;
    }
    // Each cell averages the pixels whose centres fall in it (at least the nearest one).
    let mut sums = [0u32; CELLS * CELLS * 3];
    let mut counts = [0u32; CELLS * CELLS];
    for y in 0..h {
        let cy = y * CELLS / h;
        for x in 0..w {
            let cx = x * CELLS / w;
            let p = &pixels[(y * w + x) * bpp..][..bpp];
            let cell = cy * CELLS + cx;
            counts[cell] += 1;
            for c in 0..3 {
                sums[cell * 3 + c] += u32::from(p[c.min(bpp - 1)]);
            }
        }
    }
    let mut means = [0f64; CELLS * CELLS * 3];
    for cell in 0..CELLS * CELLS {
        // A thumbnail narrower than 16 pixels leaves cells empty: take the nearest pixel.
        let (cy, cx) = (cell / CELLS, cell % CELLS);
        let count = counts[cell];
        for c in 0..3 {
            means[cell * 3 + c] = if count > 0 {
                f64::from(sums[cell * 3 + c]) / f64::from(count)
            } else {
                let (y, x) = (cy * h / CELLS, cx * w / CELLS);
                f64::from(pixels[(y * w + x) * bpp + c.min(bpp - 1)])
            };
        }
    }
    let mut sig: Signature = Box::new([0; CELLS * CELLS * 3]);
    for c in 0..3 {
        let mean =
            (0..CELLS * CELLS).map(|i| means[i * 3 + c]).sum::<f64>() / (CELLS * CELLS) as f64;
        for i in 0..CELLS * CELLS {
            // In 1/8ths of a level, to keep the rounding out of the comparison.
            sig[i * 3 + c] = ((means[i * 3 + c] - mean) * 8.0).round() as i16;
        }
    }
    Some(sig)
}

/// Mean absolute difference between two signatures, in levels of 255.
pub fn signature_distance(a: &Signature, b: &Signature) -> f64 {
    let sum: u64 = a
        .iter()
        .zip(b.iter())
        .map(|(&x, &y)| u64::from((i32::from(x) - i32::from(y)).unsigned_abs()))
        .sum();
    sum as f64 / 8.0 / a.len() as f64
}

/// Whether two shots are frames of one burst: the same camera (`camera` ids, 0 when make or
/// model is unknown) and times (`taken_ms`) apart by more than zero and at most
/// [`BURST_WINDOW_MS`].
pub fn is_burst(camera: (u32, u32), taken_ms: (Option<i64>, Option<i64>)) -> bool {
    if camera.0 == 0 || camera.0 != camera.1 {
        return false;
    }
    match taken_ms {
        (Some(a), Some(b)) => {
            let d = (a - b).abs();
            d > 0 && d <= BURST_WINDOW_MS
        }
        _ => false,
    }
}

/// `taken` as the catalog stores it (`YYYY-MM-DDTHH:MM:SS[.fff][+HH:MM]`) in milliseconds
/// of the camera's wall clock since 1970-01-01 (the offset, when given, is ignored: shots
/// compared are from one camera, whose clock it is). `None` when it does not parse.
pub fn taken_ms(taken: &str) -> Option<i64> {
    let b = taken.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = b.get(r)?;
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(s).ok()?.parse().ok()
    };
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    let mut ms = 0;
    if b.get(19) == Some(&b'.') {
        let digits = b[20..].iter().take_while(|c| c.is_ascii_digit()).count();
        let frac = &taken[20..20 + digits];
        // Milliseconds from the first three digits, padded.
        let three: String = frac.chars().chain("000".chars()).take(3).collect();
        ms = three.parse().ok()?;
    }
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taken_parses_to_milliseconds_with_sub_seconds_and_offsets() {
        assert_eq!(taken_ms("1970-01-01T00:00:00"), Some(0));
        assert_eq!(taken_ms("1970-01-02T00:00:01.5"), Some(86_401_500));
        assert_eq!(taken_ms("2000-03-01T00:00:00+02:00"), Some(951_868_800_000));
        assert_eq!(
            taken_ms("2026-05-01T10:00:01.250").unwrap() - taken_ms("2026-05-01T10:00:00").unwrap(),
            1250
        );
        assert_eq!(taken_ms("2026-13-01T10:00:00"), None);
        assert_eq!(taken_ms("yesterday"), None);
    }

    #[test]
    fn bursts_are_one_camera_within_two_seconds_but_not_the_same_instant() {
        assert!(is_burst((3, 3), (Some(1000), Some(2000))));
        assert!(is_burst((3, 3), (Some(0), Some(2000))));
        assert!(!is_burst((3, 3), (Some(0), Some(2001))), "too far apart");
        assert!(!is_burst((3, 3), (Some(5), Some(5))), "one shot, copied");
        assert!(!is_burst((3, 4), (Some(0), Some(1000))), "two cameras");
        assert!(!is_burst((0, 0), (Some(0), Some(1000))), "camera unknown");
        assert!(!is_burst((3, 3), (None, Some(1000))));
    }

    #[test]
    fn aspect_ratios_within_two_percent_match() {
        assert!(same_aspect(Some((640, 480)), Some((320, 240))));
        assert!(same_aspect(Some((640, 480)), Some((256, 191))));
        assert!(!same_aspect(Some((640, 480)), Some((640, 400))));
        assert!(same_aspect(None, Some((1, 1000))));
    }

    /// A JPEG of `w`×`h` whose pixels `f` gives.
    fn jpeg(w: u16, h: u16, f: impl Fn(u16, u16) -> [u8; 3]) -> Vec<u8> {
        let mut px = Vec::new();
        for y in 0..h {
            for x in 0..w {
                px.extend(f(x, y));
            }
        }
        let mut out = Vec::new();
        jpeg_encoder::Encoder::new(&mut out, 90)
            .encode(&px, w, h, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        out
    }

    #[test]
    fn signatures_match_a_brighter_copy_and_not_another_layout() {
        let scene = |x: u16, y: u16| {
            [
                (x % 256) as u8,
                (y * 2 % 256) as u8,
                if x < 100 { 200 } else { 30 },
            ]
        };
        let a = signature(&jpeg(256, 192, scene)).unwrap();
        let brighter = signature(&jpeg(256, 192, |x, y| {
            scene(x, y).map(|v| v.saturating_add(20).min(235))
        }))
        .unwrap();
        let small = signature(&jpeg(128, 96, |x, y| scene(x * 2, y * 2))).unwrap();
        let other = signature(&jpeg(256, 192, |x, y| scene(255 - x, y))).unwrap();
        assert!(signature_distance(&a, &a) == 0.0);
        assert!(signature_distance(&a, &brighter) <= SIGNATURE_TOLERANCE);
        assert!(signature_distance(&a, &small) <= SIGNATURE_TOLERANCE);
        assert!(signature_distance(&a, &other) > SIGNATURE_TOLERANCE);
        // Tiny thumbnails (under 16 pixels a side) still give a signature.
        assert!(signature(&jpeg(7, 5, scene)).is_some());
        assert!(signature(b"not a jpeg").is_none());
    }
}
