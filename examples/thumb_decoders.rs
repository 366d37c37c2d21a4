//! The JPEG decoders considered for `index --thumbs`, side by side on one thread: each
//! JPEG under DIR decoded and resized to 256 px (Lanczos3, `fast_image_resize`) by
//!
//! - `jpeg-decoder` with `scale()` (1/2, 1/4 or 1/8 in the DCT domain): what seekless uses;
//! - `jpeg-decoder` at full size;
//! - `zune-jpeg` (the `image` crate's JPEG decoder) at full size: it has no scaled decode;
//! - with `--features bench-turbojpeg` (libjpeg-turbo 3 built from source: cmake and nasm),
//!   `turbojpeg` at 1/2, 1/4 or 1/8 scale, chosen the same way.
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
    ];
    #[cfg(feature = "bench-turbojpeg")]
    contenders.push(("turbojpeg scaled", turbo));
    println!("{n} JPEGs from {dir}, one thread, decode + Lanczos3 to 256 px:");
    for (name, f) in contenders {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            let sum: usize = files.iter().map(|d| f(d)).sum();
            std::hint::black_box(sum);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{name:<22} {:6.2} ms/image  {:6.1} images/s",
            best * 1000.0 / n as f64,
            n as f64 / best
        );
    }
}
