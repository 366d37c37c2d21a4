//! HDR pictures (PQ and HLG, ITU-R BT.2100) shown as SDR: what a HEIC or AVIF thumbnail
//! of an HDR photo is made with, so that it looks like the SDR rendition of the same frame
//! instead of washed out. Pure functions of code values; the decoder (`index::libheif`)
//! hands rows over and gets 8-bit sRGB back.
//!
//! The path, per pixel (docs/index.md, "HDR pictures"):
//!
//! 1. the code value to display light in cd/m²: PQ by its EOTF (SMPTE ST 2084); HLG by its
//!    inverse OETF and the OOTF of BT.2100 for a 1000 cd/m² display (system gamma 1.2);
//! 2. the highlights rolled off by the **BT.2390 EETF** (ITU-R BT.2390, the Hermite knee
//!    in the PQ domain), from the frame's peak (PQ: its measured MaxCLL, the brightest
//!    channel of any pixel; HLG: the 1000 cd/m² its OOTF assumes) down to **203 cd/m²,
//!    the HDR reference white of ITU-R BT.2408, taken as SDR's white**: what lies below
//!    the knee keeps its light. It is applied to each pixel's brightest component and the
//!    others are scaled with it, which keeps hue and saturation;
//! 3. the primaries converted to BT.709's (from BT.2020 or Display P3), colours outside
//!    BT.709 brought in by desaturating towards their luminance, then clipped at white;
//! 4. the sRGB transfer function (IEC 61966-2-1), 8 bits.
//!
//! PQ goes through lookup tables (one entry per code value, one for the sRGB encoding):
//! no power function per pixel.

/// ITU-R BT.2408's HDR reference white (diffuse white, graphics white), in cd/m²: SDR's
/// 100 % here.
pub const REFERENCE_WHITE: f64 = 203.0;

/// The display peak BT.2100's HLG OOTF is defined for here (its nominal peak), cd/m².
pub const HLG_PEAK: f64 = 1000.0;

/// The transfer characteristics (ITU-T H.273) that are tone-mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transfer {
    /// SMPTE ST 2084, BT.2100 PQ (H.273 `transfer_characteristics` 16).
    Pq,
    /// ARIB STD-B67, BT.2100 HLG (18).
    Hlg,
}

impl Transfer {
    /// The transfer of H.273 code `tc`, when it is one of the HDR ones.
    pub fn from_h273(tc: i32) -> Option<Self> {
        match tc {
            16 => Some(Self::Pq),
            18 => Some(Self::Hlg),
            _ => None,
        }
    }
}

/// The colour primaries a picture's RGB is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primaries {
    /// BT.709 / sRGB (H.273 `colour_primaries` 1; also what is assumed for unspecified,
    /// 2, and the SD systems, whose primaries are close to them).
    Bt709,
    /// BT.2020 / BT.2100 (9).
    Bt2020,
    /// Display P3: SMPTE EG 432-1, P3 primaries with D65 white (12); DCI-P3 (11, its white
    /// differs) is taken as this too.
    DisplayP3,
}

impl Primaries {
    /// The primaries of H.273 code `cp`.
    pub fn from_h273(cp: i32) -> Self {
        match cp {
            9 => Self::Bt2020,
            11 | 12 => Self::DisplayP3,
            _ => Self::Bt709,
        }
    }

    /// Red, green, blue chromaticities (x, y), white D65.
    fn xy(self) -> [[f64; 2]; 3] {
        match self {
            Self::Bt709 => [[0.640, 0.330], [0.300, 0.600], [0.150, 0.060]],
            Self::Bt2020 => [[0.708, 0.292], [0.170, 0.797], [0.131, 0.046]],
            Self::DisplayP3 => [[0.680, 0.320], [0.265, 0.690], [0.150, 0.060]],
        }
    }

    /// The linear RGB → CIE XYZ matrix (white D65 at Y = 1).
    fn to_xyz(self) -> [[f64; 3]; 3] {
        const D65: [f64; 2] = [0.3127, 0.3290];
        let xyz = |[x, y]: [f64; 2]| [x / y, 1.0, (1.0 - x - y) / y];
        let p = self.xy().map(xyz);
        // Columns are the primaries' XYZ, each scaled so that R = G = B = 1 is the white.
        let m = [
            [p[0][0], p[1][0], p[2][0]],
            [p[0][1], p[1][1], p[2][1]],
            [p[0][2], p[1][2], p[2][2]],
        ];
        let s = mul_vec(&invert(&m), xyz(D65));
        m.map(|row| [row[0] * s[0], row[1] * s[1], row[2] * s[2]])
    }

    /// The luminance weights (the Y row of [`to_xyz`](Self::to_xyz)).
    fn luminance(self) -> [f64; 3] {
        self.to_xyz()[1]
    }

    /// The matrix from these primaries' linear RGB to BT.709's.
    pub fn to_bt709(self) -> [[f64; 3]; 3] {
        mul(&invert(&Primaries::Bt709.to_xyz()), &self.to_xyz())
    }
}

fn mul(a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

fn mul_vec(a: &[[f64; 3]; 3], v: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|i| a[i][0] * v[0] + a[i][1] * v[1] + a[i][2] * v[2])
}

fn invert(m: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let c = |i: usize, j: usize| {
        let (i1, i2, j1, j2) = ((i + 1) % 3, (i + 2) % 3, (j + 1) % 3, (j + 2) % 3);
        m[i1][j1] * m[i2][j2] - m[i1][j2] * m[i2][j1]
    };
    let det = m[0][0] * c(0, 0) + m[0][1] * c(0, 1) + m[0][2] * c(0, 2);
    // The adjugate is the transposed cofactor matrix.
    std::array::from_fn(|i| std::array::from_fn(|j| c(j, i) / det))
}

// SMPTE ST 2084's constants.
const M1: f64 = 2610.0 / 16384.0;
const M2: f64 = 2523.0 / 4096.0 * 128.0;
const C1: f64 = 3424.0 / 4096.0;
const C2: f64 = 2413.0 / 4096.0 * 32.0;
const C3: f64 = 2392.0 / 4096.0 * 32.0;

/// PQ's EOTF (SMPTE ST 2084): the signal `e` (0 to 1) as display light, cd/m².
pub fn pq_eotf(e: f64) -> f64 {
    let p = e.clamp(0.0, 1.0).powf(1.0 / M2);
    10_000.0 * ((p - C1).max(0.0) / (C2 - C3 * p)).powf(1.0 / M1)
}

/// PQ's inverse EOTF: display light `nits` (cd/m², 0 to 10,000) as the signal.
pub fn pq_inverse_eotf(nits: f64) -> f64 {
    let y = (nits / 10_000.0).clamp(0.0, 1.0).powf(M1);
    ((C1 + C2 * y) / (1.0 + C3 * y)).powf(M2)
}

// BT.2100 HLG's constants.
const HLG_A: f64 = 0.178_832_77;
const HLG_B: f64 = 1.0 - 4.0 * HLG_A;
const HLG_C: f64 = 0.559_910_73;

/// HLG's inverse OETF (BT.2100): the signal `e` (0 to 1) as scene light (0 to 1).
pub fn hlg_inverse_oetf(e: f64) -> f64 {
    let e = e.clamp(0.0, 1.0);
    if e <= 0.5 {
        e * e / 3.0
    } else {
        (((e - HLG_C) / HLG_A).exp() + HLG_B) / 12.0
    }
}

/// HLG's OOTF (BT.2100) for a display of [`HLG_PEAK`] with black at 0: scene light `rgb`
/// (0 to 1, luminance weights `weights`) as display light, cd/m². The system gamma is
/// 1.2 at 1000 cd/m² (BT.2100's formula gives exactly that there).
pub fn hlg_ootf(rgb: [f64; 3], weights: [f64; 3]) -> [f64; 3] {
    let gamma = 1.2 + 0.42 * (HLG_PEAK / 1000.0).log10();
    let ys = (weights[0] * rgb[0] + weights[1] * rgb[1] + weights[2] * rgb[2]).max(0.0);
    let scale = HLG_PEAK * ys.powf(gamma - 1.0);
    rgb.map(|c| scale * c)
}

/// The BT.2390 EETF in the PQ domain, black at 0 on both sides: the PQ signal `e` of a
/// picture peaking at the PQ signal `source_peak` mapped onto a display peaking at the PQ
/// signal `target_peak`. Below the knee (`1.5 × target/source − 0.5` of the source's
/// range) the light is kept; above it a Hermite spline takes the source's peak to the
/// target's, with slope 1 at the knee and 0 at the peak. A source no brighter than the
/// target is kept whole.
pub fn bt2390_eetf(e: f64, source_peak: f64, target_peak: f64) -> f64 {
    if source_peak <= target_peak || source_peak <= 0.0 {
        return e.min(source_peak.max(target_peak));
    }
    let e1 = (e / source_peak).clamp(0.0, 1.0);
    let max_lum = target_peak / source_peak;
    // The knee: never below 0 (a target under a third of the source, in PQ).
    let ks = (1.5 * max_lum - 0.5).max(0.0);
    let e2 = if e1 < ks {
        e1
    } else {
        let t = (e1 - ks) / (1.0 - ks);
        let (t2, t3) = (t * t, t * t * t);
        (2.0 * t3 - 3.0 * t2 + 1.0) * ks
            + (t3 - 2.0 * t2 + t) * (1.0 - ks)
            + (-2.0 * t3 + 3.0 * t2) * max_lum
    };
    e2 * source_peak
}

/// The sRGB transfer function (IEC 61966-2-1): linear light (0 to 1) as the signal.
pub fn srgb_oetf(l: f64) -> f64 {
    let l = l.clamp(0.0, 1.0);
    if l <= 0.003_130_8 {
        12.92 * l
    } else {
        1.055 * l.powf(1.0 / 2.4) - 0.055
    }
}

/// Linear BT.709 light (1 = SDR white) inside the gamut: a colour with a negative
/// component (outside BT.709: a saturated BT.2020 or P3 colour) desaturated towards its
/// luminance until it has none, which keeps its luminance and hue; then each component
/// clipped at white.
pub fn gamut_clip(rgb: [f64; 3]) -> [f64; 3] {
    let w = Primaries::Bt709.luminance();
    let y = w[0] * rgb[0] + w[1] * rgb[1] + w[2] * rgb[2];
    if y <= 0.0 {
        return [0.0; 3];
    }
    let low = rgb[0].min(rgb[1]).min(rgb[2]);
    let rgb = if low < 0.0 {
        let t = y / (y - low);
        rgb.map(|c| y + t * (c - y))
    } else {
        rgb
    };
    rgb.map(|c| c.clamp(0.0, 1.0))
}

/// Entries of the sRGB encoding table, over linear light 0 to 1.
const SRGB_STEPS: usize = 1 << 14;

/// Entries of the table of the EETF over the PQ signal (HLG).
const PQ_STEPS: usize = 1 << 12;

/// One picture's conversion to 8-bit sRGB: its transfer, primaries and code range, and the
/// tables built for them once.
pub struct ToneMap {
    transfer: Transfer,
    /// Code value to linear light: PQ: display light relative to SDR white; HLG: scene
    /// light (its OOTF needs the whole pixel).
    linear: Vec<f32>,
    /// PQ: code value to display light after the EETF, relative to SDR white.
    mapped: Vec<f32>,
    /// HLG: the PQ signal (`PQ_STEPS` + 1 entries) to display light after the EETF,
    /// relative to SDR white.
    pq_mapped: Vec<f32>,
    /// The source primaries' luminance weights (HLG's OOTF).
    weights: [f64; 3],
    to_bt709: [[f32; 3]; 3],
    srgb: Vec<u8>,
    max_code: u32,
}

impl ToneMap {
    /// The conversion of a picture of `bits`-bit code values (1 to 16) in `transfer` and
    /// `primaries`; `peak_code` is the largest code value of any channel of any pixel (PQ:
    /// the frame's peak, which the EETF maps to SDR white; HLG ignores it: its peak is
    /// [`HLG_PEAK`]).
    pub fn new(transfer: Transfer, primaries: Primaries, bits: u32, peak_code: u32) -> Self {
        let bits = bits.clamp(1, 16);
        let max_code = (1u32 << bits) - 1;
        let signal = |c: u32| f64::from(c) / f64::from(max_code);
        let target = pq_inverse_eotf(REFERENCE_WHITE);
        let relative = |e: f64| (pq_eotf(e) / REFERENCE_WHITE) as f32;
        let (linear, mapped, pq_mapped) = match transfer {
            Transfer::Pq => {
                let peak = signal(peak_code.min(max_code));
                (
                    (0..=max_code).map(|c| relative(signal(c))).collect(),
                    (0..=max_code)
                        .map(|c| relative(bt2390_eetf(signal(c), peak, target)))
                        .collect(),
                    Vec::new(),
                )
            }
            Transfer::Hlg => {
                let source = pq_inverse_eotf(HLG_PEAK);
                (
                    (0..=max_code)
                        .map(|c| hlg_inverse_oetf(signal(c)) as f32)
                        .collect(),
                    Vec::new(),
                    (0..=PQ_STEPS)
                        .map(|i| relative(bt2390_eetf(i as f64 / PQ_STEPS as f64, source, target)))
                        .collect(),
                )
            }
        };
        let m = primaries.to_bt709();
        let srgb = (0..=SRGB_STEPS)
            .map(|i| (srgb_oetf(i as f64 / SRGB_STEPS as f64) * 255.0).round() as u8)
            .collect();
        Self {
            transfer,
            linear,
            mapped,
            pq_mapped,
            weights: primaries.luminance(),
            to_bt709: m.map(|row| row.map(|v| v as f32)),
            srgb,
            max_code,
        }
    }

    /// The 8-bit sRGB of one pixel of code values `rgb` (larger ones are taken as the
    /// largest). The EETF is applied to the pixel's brightest component and the others
    /// scaled with it (BT.2390's application to max(R, G, B)), which keeps hue and
    /// saturation: applied to each component alone, a bright saturated red would turn
    /// orange.
    #[inline]
    pub fn pixel(&self, rgb: [u16; 3]) -> [u8; 3] {
        let code = rgb.map(|c| u32::from(c).min(self.max_code) as usize);
        let linear = match self.transfer {
            Transfer::Pq => {
                let top = code[0].max(code[1]).max(code[2]);
                let (before, after) = (self.linear[top], self.mapped[top]);
                let scale = if before > 0.0 { after / before } else { 0.0 };
                code.map(|c| self.linear[c] * scale)
            }
            Transfer::Hlg => {
                let scene = code.map(|c| f64::from(self.linear[c]));
                let display = hlg_ootf(scene, self.weights);
                let top = display[0].max(display[1]).max(display[2]);
                let after = self.hlg_to_sdr(top);
                let scale = if top > 0.0 {
                    f64::from(after) * REFERENCE_WHITE / top
                } else {
                    0.0
                };
                display.map(|c| (c * scale / REFERENCE_WHITE) as f32)
            }
        };
        let m = &self.to_bt709;
        let out = std::array::from_fn(|i| {
            f64::from(m[i][0] * linear[0] + m[i][1] * linear[1] + m[i][2] * linear[2])
        });
        gamut_clip(out).map(|l| self.srgb[(l * SRGB_STEPS as f64).round() as usize])
    }

    /// HLG's display light (cd/m²) through the EETF, relative to SDR white (interpolated
    /// in the PQ domain).
    fn hlg_to_sdr(&self, nits: f64) -> f32 {
        let at = pq_inverse_eotf(nits) * PQ_STEPS as f64;
        let i = (at as usize).min(PQ_STEPS - 1);
        let f = (at - i as f64) as f32;
        self.pq_mapped[i] + f * (self.pq_mapped[i + 1] - self.pq_mapped[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn pq_gives_st_2084s_light_and_round_trips() {
        // SMPTE ST 2084 / BT.2100's reference points: 0, 100, 203 (BT.2408's 58 %),
        // 1000 cd/m² (75 %) and 10,000 at full signal.
        assert_eq!(pq_eotf(0.0), 0.0);
        assert!(close(pq_eotf(1.0), 10_000.0, 1e-6));
        assert!(close(pq_inverse_eotf(100.0), 0.508_078, 1e-5));
        assert!(close(pq_inverse_eotf(203.0), 0.580_688, 1e-5));
        assert!(close(pq_inverse_eotf(1000.0), 0.751_827, 1e-5));
        // 10-bit full-range codes: 520 is 100 cd/m² to within a code, 769 1000.
        assert!(close(pq_eotf(520.0 / 1023.0), 100.0, 1.5));
        assert!(close(pq_eotf(769.0 / 1023.0), 1000.0, 10.0));
        for nits in [
            0.005, 0.1, 1.0, 48.0, 100.0, 203.0, 1000.0, 4000.0, 10_000.0,
        ] {
            let back = pq_eotf(pq_inverse_eotf(nits));
            assert!(close(back, nits, nits * 1e-9), "{nits}: {back}");
        }
    }

    #[test]
    fn hlg_reference_white_is_203_nits_on_a_1000_nit_display() {
        let w = Primaries::Bt2020.luminance();
        assert_eq!(hlg_inverse_oetf(0.0), 0.0);
        assert!(close(hlg_inverse_oetf(0.5), 1.0 / 12.0, 1e-12));
        assert!(close(hlg_inverse_oetf(1.0), 1.0, 1e-6));
        // The two pieces meet at 0.5.
        assert!(close(hlg_inverse_oetf(0.500_001), 1.0 / 12.0, 1e-6));
        // BT.2408: HDR reference white is 75 % HLG, 203 cd/m² on a 1000 cd/m² display.
        let white = hlg_ootf([hlg_inverse_oetf(0.75); 3], w);
        assert!(close(white[0], 203.0, 1.0), "{white:?}");
        let peak = hlg_ootf([1.0; 3], w);
        assert!(close(peak[1], 1000.0, 1.0), "{peak:?}");
    }

    #[test]
    fn the_eetf_keeps_light_below_its_knee_and_rolls_highlights_off_to_the_target_peak() {
        let (source, target) = (pq_inverse_eotf(1000.0), pq_inverse_eotf(REFERENCE_WHITE));
        // Anchors: black stays black, the source's peak becomes the target's.
        assert_eq!(bt2390_eetf(0.0, source, target), 0.0);
        assert!(close(bt2390_eetf(source, source, target), target, 1e-12));
        // Below the knee nothing changes (50 cd/m² is below it for a 1000 cd/m² peak).
        let dim = pq_inverse_eotf(50.0);
        assert!(close(bt2390_eetf(dim, source, target), dim, 1e-12));
        // Monotone, never above the target, continuous at the knee.
        let mut last = -1.0;
        for i in 0..=1000 {
            let e = source * i as f64 / 1000.0;
            let out = bt2390_eetf(e, source, target);
            assert!(
                out >= last && out <= target + 1e-12,
                "{e}: {out} after {last}"
            );
            last = out;
        }
        // A frame no brighter than reference white is kept whole: its white is SDR white.
        assert_eq!(bt2390_eetf(target, target, target), target);
        let tm = ToneMap::new(Transfer::Pq, Primaries::Bt709, 10, (target * 1023.0) as u32);
        let code = (target * 1023.0).floor() as u16;
        assert!(
            tm.pixel([code; 3]).iter().all(|&c| c >= 254),
            "{:?}",
            tm.pixel([code; 3])
        );
    }

    #[test]
    fn reference_white_and_the_peak_become_sdr_white_and_black_stays_black() {
        // A PQ frame peaking at 1000 cd/m²: its peak is white, black black, reference
        // white (203 cd/m²) a light grey (the knee took it down a little), 50 cd/m² kept
        // (its sRGB at 50/203 of SDR white).
        let code = |nits: f64| (pq_inverse_eotf(nits) * 1023.0).round() as u16;
        let tm = ToneMap::new(Transfer::Pq, Primaries::Bt2020, 10, u32::from(code(1000.0)));
        assert_eq!(tm.pixel([code(1000.0); 3]), [255; 3]);
        assert_eq!(tm.pixel([0; 3]), [0; 3]);
        let white = tm.pixel([code(203.0); 3]);
        assert!(white.iter().all(|&c| (220..=245).contains(&c)), "{white:?}");
        let fifty = tm.pixel([code(50.0); 3]);
        let expect = (srgb_oetf(pq_eotf(f64::from(code(50.0)) / 1023.0) / 203.0) * 255.0).round();
        assert!(
            fifty.iter().all(|&c| close(f64::from(c), expect, 1.0)),
            "{fifty:?} {expect}"
        );
        // HLG: 75 % (reference white) likewise, its peak white.
        let hlg = ToneMap::new(Transfer::Hlg, Primaries::Bt2020, 10, 1023);
        assert_eq!(hlg.pixel([1023; 3]), [255; 3]);
        assert_eq!(hlg.pixel([0; 3]), [0; 3]);
        let white = hlg.pixel([767; 3]);
        assert!(white.iter().all(|&c| (220..=245).contains(&c)), "{white:?}");
        // Greys stay grey, brighter codes are never darker.
        let mut last = 0;
        for c in (0..=1023).step_by(7) {
            let [r, g, b] = tm.pixel([c; 3]);
            assert!(
                r.abs_diff(g) <= 1 && g.abs_diff(b) <= 1 && r >= last,
                "{c}: {r} {g} {b}"
            );
            last = r;
        }
    }

    #[test]
    fn primaries_convert_as_bt_2087_says_and_out_of_gamut_colours_keep_their_luminance() {
        // ITU-R BT.2087's BT.2020 → BT.709 matrix, to its four decimals.
        let m = Primaries::Bt2020.to_bt709();
        let bt2087 = [
            [1.6605, -0.5876, -0.0728],
            [-0.1246, 1.1329, -0.0083],
            [-0.0182, -0.1006, 1.1187],
        ];
        for i in 0..3 {
            for j in 0..3 {
                assert!(close(m[i][j], bt2087[i][j], 6e-4), "{m:?}");
            }
        }
        // Display P3 → sRGB (its first row: 1.2249, −0.2247, 0).
        let p3 = Primaries::DisplayP3.to_bt709();
        assert!(
            close(p3[0][0], 1.2249, 6e-4) && close(p3[0][2], 0.0, 1e-9),
            "{p3:?}"
        );
        // White stays white through each.
        for p in [Primaries::Bt709, Primaries::Bt2020, Primaries::DisplayP3] {
            let w = mul_vec(&p.to_bt709(), [1.0; 3]);
            assert!(w.iter().all(|&c| close(c, 1.0, 1e-9)), "{p:?}: {w:?}");
        }
        // BT.2020's pure green is outside BT.709: brought in, its luminance kept.
        let green = mul_vec(&m, [0.0, 0.5, 0.0]);
        assert!(green[0] < 0.0);
        let inside = gamut_clip(green);
        let lum = |c: [f64; 3]| {
            let w = Primaries::Bt709.luminance();
            w[0] * c[0] + w[1] * c[1] + w[2] * c[2]
        };
        assert!(
            inside.iter().all(|&c| (0.0..=1.0).contains(&c)),
            "{inside:?}"
        );
        assert!(close(lum(inside), lum(green), 1e-9));
        assert!(inside[1] > inside[0] && inside[1] > inside[2]);
    }
}
