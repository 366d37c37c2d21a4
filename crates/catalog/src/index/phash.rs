//! A 64-bit perceptual hash (pHash, DCT), computed as Python's `imagehash.phash` does,
//! so that hashes compare with it:
//!
//! 1. luminance with PIL's `convert("L")` weights (`(19595 R + 38470 G + 7471 B + 2^15) >> 16`);
//! 2. resized to 32×32 with a Lanczos3 filter (PIL's `LANCZOS`);
//! 3. a type-II DCT on both axes (scipy's unnormalised `dct`; the scale does not matter);
//! 4. the top-left 8×8 coefficients, DC included, each compared with their median
//!    (the mean of the 32nd and 33rd of the 64 sorted): greater is a 1 bit.
//!
//! Bit order: coefficient (row `r`, column `c`) (rows are vertical frequencies) is bit
//! `63 - (8 r + c)`: the DC term is the most significant bit, as in `imagehash`'s
//! hexadecimal string (`format!("{:016x}", hash)` is `str(imagehash.phash(img))`).
//!
//! Differences from `imagehash` (see `docs/index.md`): the 32×32 comes from the reduced
//! (DCT-scaled) decode, not the full image; it is taken after the EXIF orientation is
//! applied (imagehash hashes the stored pixels); and the resize is `fast_image_resize`'s
//! Lanczos3, which rounds slightly differently from PIL's.

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};

/// The side of the square the hash is computed from.
const SIDE: usize = 32;
/// The side of the block of low frequencies kept.
const KEEP: usize = 8;

/// Luminance as PIL's `convert("L")` computes it from 8-bit RGB.
pub(crate) fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((19595 * u32::from(r) + 38470 * u32::from(g) + 7471 * u32::from(b) + 0x8000) >> 16) as u8
}

/// The 32×32 luminance of a grey image of `width` × `height` (row-major, one byte a pixel),
/// resized with Lanczos3.
pub(crate) fn square(grey: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    let src = ImageRef::new(width, height, grey, PixelType::U8).map_err(|e| e.to_string())?;
    let mut dst = Image::new(SIDE as u32, SIDE as u32, PixelType::U8);
    let opts = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3));
    Resizer::new()
        .resize(&src, &mut dst, &opts)
        .map_err(|e| e.to_string())?;
    Ok(dst.into_vec())
}

/// The hash of a 32×32 luminance square (row-major).
pub(crate) fn hash(square: &[u8]) -> u64 {
    assert_eq!(square.len(), SIDE * SIDE, "a 32×32 square");
    // cos(π k (2n + 1) / 2N) for the KEEP lowest frequencies k.
    let mut cos = [[0f64; SIDE]; KEEP];
    for (k, row) in cos.iter_mut().enumerate() {
        for (n, c) in row.iter_mut().enumerate() {
            *c = (std::f64::consts::PI * k as f64 * (2 * n + 1) as f64 / (2 * SIDE) as f64).cos();
        }
    }
    // Along the columns (axis 0) first: cols[k][x] for the low vertical frequencies k.
    let mut cols = [[0f64; SIDE]; KEEP];
    for (k, out) in cols.iter_mut().enumerate() {
        for (y, line) in square.chunks_exact(SIDE).enumerate() {
            let c = cos[k][y];
            for (o, &p) in out.iter_mut().zip(line) {
                *o += c * f64::from(p);
            }
        }
    }
    // Then along the rows (axis 1).
    let mut low = [0f64; KEEP * KEEP];
    for r in 0..KEEP {
        for c in 0..KEEP {
            low[r * KEEP + c] = (0..SIDE).map(|x| cos[c][x] * cols[r][x]).sum();
        }
    }
    let mut sorted = low;
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[31] + sorted[32]) / 2.0;
    low.iter()
        .enumerate()
        .filter(|&(_, &v)| v > median)
        .fold(0u64, |h, (i, _)| h | 1 << (63 - i))
}

/// The number of bits in which two hashes differ.
pub(crate) fn distance(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dc_and_a_vertical_gradient_set_their_bits() {
        // Only DC stands out of a flat square (the rest is rounding noise around 0).
        assert_eq!(hash(&[128; SIDE * SIDE]) >> 63, 1);
        // Bright at the top: the first vertical frequency is positive (bit 63 - 8), as is DC.
        let sq: Vec<u8> = (0..SIDE * SIDE)
            .map(|i| 255 - (i / SIDE * 8) as u8)
            .collect();
        let h = hash(&sq);
        assert_eq!(h >> 63, 1, "DC {h:016x}");
        assert_eq!(h >> (63 - 8) & 1, 1, "first vertical frequency {h:016x}");
    }

    #[test]
    fn luminance_follows_pil() {
        assert_eq!(luma(255, 255, 255), 255);
        assert_eq!(luma(255, 0, 0), 76);
        assert_eq!(luma(0, 255, 0), 150);
        assert_eq!(luma(0, 0, 255), 29);
    }

    #[test]
    fn distance_counts_differing_bits() {
        assert_eq!(distance(0, u64::MAX), 64);
        assert_eq!(distance(0b1010, 0b0110), 2);
    }
}
