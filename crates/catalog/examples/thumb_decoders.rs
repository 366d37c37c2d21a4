//! The JPEG decoders considered for `index --thumbs`, side by side on one thread: each
//! JPEG under DIR decoded and resized to 256 px (Lanczos3, `fast_image_resize`) by
//!
//! - `jpeg-decoder` with `scale()` (1/2, 1/4 or 1/8 in the DCT domain): what seekless uses;
//! - `jpeg-decoder` at full size;
//! - `zune-jpeg` (the `image` crate's JPEG decoder) at full size: it has no scaled decode;
//! - `seekless_catalog::index::dc_jpeg` at 1/8 (DC coefficients only), when 1/8 is the
//!   scale chosen (as `index --thumbs` uses it), else `jpeg-decoder` with `scale()`;
//! - with `--features bench-turbojpeg` (libjpeg-turbo 3 built from source: cmake and nasm),
//!   `turbojpeg` at 1/2, 1/4 or 1/8 scale, chosen the same way.
//!
//! The median of 5 interleaved rounds.
//!
//! `cargo run --release --example thumb_decoders [--features bench-turbojpeg] -- DIR`
//! (bench/thumbs.sh runs it).

use std::time::Instant;

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};

fn resize(rgb: &[u8], w: u32, h: u32) -> usize {
    let (tw, th) = if w >= h {
        (256, (h * 256 / w).max(1))
    } else {
        ((w * 256 / h).max(1), 256)
    };
    let src = ImageRef::new(w, h, rgb, PixelType::U8x3).expect("buffer");
    let mut dst = Image::new(tw, th, PixelType::U8x3);
    let opts = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3));
    Resizer::new()
        .resize(&src, &mut dst, &opts)
        .expect("resize");
    dst.buffer().len()
}

fn jpeg_decoder(data: &[u8], scaled: bool) -> usize {
    let mut d = jpeg_decoder::Decoder::new(data);
    d.read_info().expect("header");
    let info = d.info().expect("info");
    let (w, h) = if scaled {
        d.scale(256, 256).expect("scale")
    } else {
        (info.width, info.height)
    };
    let px = d.decode().expect("decode");
    resize(&px, w.into(), h.into())
}

/// The DC-only decoder, beside jpeg-decoder's 1/8: the mean and largest absolute
/// difference per channel, over all files.
fn dc_difference(files: &[Vec<u8>]) -> (f64, u8) {
    let (mut sum, mut count, mut max) = (0u64, 0u64, 0u8);
    for data in files {
        let Some(dc) = seekless_catalog::index::dc_jpeg::decode(data) else {
            continue;
        };
        let mut d = jpeg_decoder::Decoder::new(data.as_slice());
        d.read_info().expect("header");
        let (w, h) = d.scale(dc.width as u16, dc.height as u16).expect("scale");
        assert_eq!((u32::from(w), u32::from(h)), (dc.width, dc.height));
        let px = d.decode().expect("decode");
        for (a, b) in dc.rgb.iter().zip(&px) {
            let diff = a.abs_diff(*b);
            sum += u64::from(diff);
            max = max.max(diff);
            count += 1;
        }
    }
    (sum as f64 / count.max(1) as f64, max)
}

fn dc_only(data: &[u8]) -> usize {
    let mut d = jpeg_decoder::Decoder::new(data);
    d.read_info().expect("header");
    let info = d.info().expect("info");
    let eighth = |v: u16| u32::from(v).div_ceil(8);
    if eighth(info.width).max(eighth(info.height)) >= 256
        && let Some(img) = seekless_catalog::index::dc_jpeg::decode(data)
    {
        return resize(&img.rgb, img.width, img.height);
    }
    jpeg_decoder(data, true)
}

fn zune(data: &[u8]) -> usize {
    let mut d = zune_jpeg::JpegDecoder::new(zune_jpeg::zune_core::bytestream::ZCursor::new(data));
    let px = d.decode().expect("decode");
    let info = d.info().expect("info");
    resize(&px, info.width as u32, info.height as u32)
}

#[cfg(feature = "bench-turbojpeg")]
fn turbo(data: &[u8]) -> usize {
    use turbojpeg::{Decompressor, Image as TjImage, PixelFormat, ScalingFactor};
    let mut d = Decompressor::new().expect("turbojpeg");
    let header = d.read_header(data).expect("header");
    // The smallest scale whose width or height is still ≥ 256, as jpeg-decoder chooses.
    let factor = [
        ScalingFactor::ONE_EIGHTH,
        ScalingFactor::ONE_QUARTER,
        ScalingFactor::ONE_HALF,
        ScalingFactor::ONE,
    ]
    .into_iter()
    .find(|f| f.scale(header.width) >= 256 || f.scale(header.height) >= 256)
    .unwrap_or(ScalingFactor::ONE);
    d.set_scaling_factor(factor).expect("scale");
    let (w, h) = (factor.scale(header.width), factor.scale(header.height));
    let mut px = vec![0u8; w * h * 3];
    let image = TjImage {
        pixels: px.as_mut_slice(),
        width: w,
        pitch: w * 3,
        height: h,
        format: PixelFormat::RGB,
    };
    d.decompress(data, image).expect("decode");
    resize(&px, w as u32, h as u32)
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: thumb_decoders DIR");
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .expect("DIR")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jpg"))
        .map(|p| std::fs::read(p).expect("read"))
        .collect();
    files.truncate(100);
    let n = files.len();
    type Decode = fn(&[u8]) -> usize;
    #[allow(unused_mut)]
    let mut contenders: Vec<(&str, Decode)> = vec![
        ("jpeg-decoder scale()", |d| jpeg_decoder(d, true)),
        ("jpeg-decoder full", |d| jpeg_decoder(d, false)),
        ("zune-jpeg full", zune),
        ("dc_jpeg 1/8", dc_only),
    ];
    #[cfg(feature = "bench-turbojpeg")]
    contenders.push(("turbojpeg scaled", turbo));
    println!("{n} JPEGs from {dir}, one thread, decode + Lanczos3 to 256 px:");
    let (mean, max) = dc_difference(&files);
    let read = files
        .iter()
        .filter(|d| seekless_catalog::index::dc_jpeg::decode(d).is_some())
        .count();
    println!(
        "dc_jpeg read {read} of {n}; against jpeg-decoder at 1/8: mean |difference| {mean:.3}, largest {max} (per channel)"
    );
    // Interleaved rounds (each contender once per round), the median of each: other work
    // on the machine then weighs on all alike.
    const ROUNDS: usize = 5;
    let mut times = vec![Vec::with_capacity(ROUNDS); contenders.len()];
    for _ in 0..ROUNDS {
        for ((_, f), t) in contenders.iter().zip(&mut times) {
            let start = Instant::now();
            let sum: usize = files.iter().map(|d| f(d)).sum();
            std::hint::black_box(sum);
            t.push(start.elapsed().as_secs_f64());
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|t| {
            t.sort_by(f64::total_cmp);
            t[ROUNDS / 2]
        })
        .collect();
    let dc = medians[contenders
        .iter()
        .position(|(name, _)| *name == "dc_jpeg 1/8")
        .unwrap_or(0)];
    for ((name, _), median) in contenders.iter().zip(&medians) {
        println!(
            "{name:<22} {:6.2} ms/image  {:6.1} images/s  dc_jpeg {:5.2}x faster",
            median * 1000.0 / n as f64,
            n as f64 / median,
            median / dc
        );
    }
}
