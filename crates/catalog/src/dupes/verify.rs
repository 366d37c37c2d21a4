//! The checks a pair of images within the pHash distance must pass to be called the same
//! picture, and the one that calls it a burst instead. All cheap: the pHash already did
//! the hard part; these cut its false positives (two different pictures whose 64 bits
//! happen to agree, mostly plain or low-detail ones).
//!
//! - **Aspect ratio** within [`ASPECT_TOLERANCE`] (EXIF orientation applied): a crop, or
//!   another picture squeezed into the same 32×32 square the pHash is computed from, is
//!   not a copy.
//! - **Thumbnail signature**: the stored thumbnail (table `thumbs`) decoded at 1/8 scale in
//!   the DCT domain (a 256-pixel thumbnail gives 32 pixels: no real IDCT), averaged into
//!   8×8 cells of RGB. Two signatures match when their mean absolute difference, after
//!   each channel's mean is subtracted (a brightness change alone stays a copy), is at
//!   most [`SIGNATURE_TOLERANCE`] (of 255). Unlike the pHash it sees colour and how strong
//!   each contrast is (the pHash keeps only the signs of 63 frequencies against their
//!   median). A pair of which either has no thumbnail skips this check (decided on the
//!   pHash and the aspect ratio alone).
//! - **Burst**: the same camera (make and model, both known) and `taken` within
//!   [`BURST_WINDOW_MS`], but not at the same instant: a re-encoded or resized copy keeps
//!   its original's EXIF, so equal timestamps are one shot, kept as duplicates; a camera
//!   that records no sub-seconds gives a burst's frames of one second the same timestamp,
//!   and they are then told as duplicates (said in docs/usage.md).

/// Aspect ratios (width / height, EXIF orientation applied) within 2 % of each other.
pub const ASPECT_TOLERANCE: f64 = 0.02;

/// Largest mean absolute difference (per channel value, of 255) between two thumbnail
/// signatures of the same picture. On the test scenes (tests/it/dupes.rs) re-encoding at
/// JPEG quality 60 or halving gives under 1, a burst's next frame (shifted by 1 %, a small
/// subject moved in) 1–4, unrelated pictures 37 and more.
pub const SIGNATURE_TOLERANCE: f64 = 10.0;

/// Frames of a burst are taken at most this far apart (milliseconds).
pub const BURST_WINDOW_MS: i64 = 2000;

/// Cells on a side of a thumbnail signature.
const CELLS: usize = 8;

/// A thumbnail's coarse colour layout: the mean RGB of 8×8 cells (192 bytes: what is kept
/// of each image in a candidate pair, so small).
pub type Signature = [u8; CELLS * CELLS * 3];

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
    let value =
        |x: usize, y: usize, c: usize| u32::from(pixels[(y * w + x) * bpp + c.min(bpp - 1)]);
    // Each cell averages the pixels whose centres fall in it; a thumbnail narrower than 8
    // pixels leaves cells empty, which take the nearest pixel.
    let mut sums = [0u32; CELLS * CELLS * 3];
    let mut counts = [0u32; CELLS * CELLS];
    for y in 0..h {
        for x in 0..w {
            let cell = (y * CELLS / h) * CELLS + x * CELLS / w;
            counts[cell] += 1;
            for c in 0..3 {
                sums[cell * 3 + c] += value(x, y, c);
            }
        }
    }
    let mut sig = [0u8; CELLS * CELLS * 3];
    for cell in 0..CELLS * CELLS {
        let (cy, cx) = (cell / CELLS, cell % CELLS);
        for c in 0..3 {
            let n = counts[cell];
            let mean = (sums[cell * 3 + c] + n / 2).checked_div(n);
            sig[cell * 3 + c] =
                mean.unwrap_or_else(|| value(cx * w / CELLS, cy * h / CELLS, c)) as u8;
        }
    }
    Some(sig)
}

/// Mean absolute difference between two signatures, in levels of 255, after each
/// signature's mean per channel is subtracted (a brightness change alone is no
/// difference).
pub fn signature_distance(a: &Signature, b: &Signature) -> f64 {
    let cells = (CELLS * CELLS) as f64;
    let mean = |s: &Signature, c: usize| {
        s.iter()
            .skip(c)
            .step_by(3)
            .map(|&v| f64::from(v))
            .sum::<f64>()
            / cells
    };
    let mut sum = 0.0;
    for c in 0..3 {
        let shift = mean(a, c) - mean(b, c);
        for i in 0..CELLS * CELLS {
            sum += (f64::from(a[i * 3 + c]) - f64::from(b[i * 3 + c]) - shift).abs();
        }
    }
    sum / (cells * 3.0)
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

/// `taken` as the catalog stores it (`YYYY-MM-DDTHH:MM:SS[.mmm][±HH:MM]`) in milliseconds
/// of the camera's wall clock since 1970-01-01 (the offset, when given, is ignored: shots
/// compared are from one camera, whose clock it is). `None` when it does not parse.
pub fn taken_ms(taken: &str) -> Option<i64> {
    crate::index::taken::Taken::iso(taken).map(|t| t.wall_ms())
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
        // Tiny thumbnails (under 8 pixels a side) still give a signature.
        assert!(signature(&jpeg(7, 5, scene)).is_some());
        assert!(signature(b"not a jpeg").is_none());
    }
}
