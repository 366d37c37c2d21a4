//! A thumbnail and a perceptual hash from one decode of an image's bytes (those the sweep
//! read; nothing is read again). Pure: bytes in, a JPEG and a hash out; a decoder that
//! panics on hostile input is caught here and becomes the thumbnail's error.
//!
//! JPEG is decoded at reduced scale in the DCT domain (`jpeg-decoder`'s `scale`: 1/2, 1/4
//! or 1/8, the smallest whose longest side is still at least the thumbnail's; at 1/8 first
//! by [`dc_jpeg`](super::dc_jpeg), which reads only the DC coefficients), PNG, GIF
//! (first frame), WebP, TIFF and BMP whole by the `image` crate; then a Lanczos3 resize
//! (`fast_image_resize`), the EXIF orientation applied to the small result, and a JPEG
//! encode (`jpeg-encoder`, quality [`QUALITY`]). A camera raw file's thumbnail is made
//! from the largest JPEG preview it carries, oriented as the raw says; HEIC and AVIF are
//! decoded by the system's libheif (`index::libheif`), loaded at run time (an HDR one,
//! PQ or HLG, tone-mapped to SDR by `index::tone`); a
//! video's from a frame a tenth into it, by `ffmpeg` when installed
//! (`index::video`), else from its embedded cover art. What has no decoder here
//! (JPEG XL; HEIF without libheif; video without ffmpeg or cover) gets a recorded "no
//! decoder" saying what to install.

use std::panic::{AssertUnwindSafe, catch_unwind};

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};

use std::path::Path;

use super::formats::{self, Decoder};
use super::inspect::{ImageInfo, View};
use super::phases::{Phases, Stopwatch};
use super::phash;

/// The largest embedded preview read back from the file when it lies outside the bytes
/// the sweep kept.
const MAX_PREVIEW: u64 = 64 << 20;
/// The JPEG quality thumbnails are stored at.
pub const QUALITY: u8 = 85;

/// How to make thumbnails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ThumbOptions {
    /// The longest side, in pixels (smaller images keep their size: never enlarged).
    pub size: u32,
    /// Images larger than this many megapixels are refused before decoding.
    pub max_megapixels: u32,
}

impl Default for ThumbOptions {
    fn default() -> Self {
        Self {
            size: Self::DEFAULT_SIZE,
            max_megapixels: Self::DEFAULT_MAX_MEGAPIXELS,
        }
    }
}

impl ThumbOptions {
    /// The longest side of a thumbnail by default, in pixels.
    pub const DEFAULT_SIZE: u32 = 256;
    /// The largest image decoded by default, in megapixels (width × height / 10^6).
    pub const DEFAULT_MAX_MEGAPIXELS: u32 = 200;

    /// Thumbnails whose longest side is `size` pixels.
    pub fn new(size: u32) -> Self {
        Self {
            size,
            ..Self::default()
        }
    }
}

/// A thumbnail just made, as it is stored (read back, it is `dupes::Thumbnail`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MadeThumbnail {
    /// Its width in pixels (EXIF orientation applied).
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// What it was made from: `dct-scaled` (a JPEG decoded at 1/2, 1/4 or 1/8 scale),
    /// `exif` (the JPEG's EXIF thumbnail, when large enough and of the image's aspect
    /// ratio), `full` (the whole image decoded), `preview` (a raw file's embedded JPEG),
    /// `heif-thumbnail` (a HEIF's own thumbnail item), `frame` (a video's frame, by
    /// ffmpeg) or `cover` (a video's cover art). A HEIF or AVIF in HDR tone-mapped to SDR
    /// says from which transfer after a `+`: `full+pq`, `full+hlg`, `heif-thumbnail+pq`,
    /// `heif-thumbnail+hlg`.
    pub source: &'static str,
    /// The thumbnail as a baseline JPEG.
    pub jpeg: Vec<u8>,
}

/// What one image gave: its thumbnail and perceptual hash, or why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Visual {
    /// The thumbnail, or why there is none.
    pub thumb: Result<MadeThumbnail, String>,
    /// The perceptual hash (`index::phash`), when the image could be decoded.
    pub phash: Option<u64>,
}

impl Visual {
    /// No thumbnail, for `why`.
    pub fn none(why: impl Into<String>) -> Self {
        Self {
            thumb: Err(why.into()),
            phash: None,
        }
    }
}

/// Decoded pixels: 8-bit RGB, row-major.
struct Pixels {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
    source: &'static str,
}

/// What a thumbnail is made from: the bytes the sweep kept of one file, what
/// [`inspect`](super::inspect::inspect) found in them, and the file's path (a video's
/// frame is read by ffmpeg from it; a raw preview outside the kept bytes is read back).
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The bytes kept: the whole file for an image.
    pub view: View<'a>,
    /// What inspecting them found (format, kind, orientation, preview, duration).
    pub info: &'a ImageInfo,
    /// The file.
    pub path: &'a Path,
}

/// The thumbnail and perceptual hash of an image kept whole in `data` (its `format` as
/// [`format_of`](super::inspect::format_of) says, its EXIF `orientation`). Never panics.
#[cfg(test)]
pub fn visual(
    data: &[u8],
    format: Option<&'static str>,
    orientation: Option<u32>,
    opts: &ThumbOptions,
) -> Visual {
    let info = ImageInfo {
        format,
        kind: format.map(formats::kind_of),
        orientation,
        ..ImageInfo::default()
    };
    let source = Source {
        view: View::whole(data),
        info: &info,
        path: Path::new(""),
    };
    visual_timed(&source, opts, &mut Phases::default())
}

/// The thumbnail and perceptual hash of `source`, adding the time of each phase (decode,
/// resize, encode, pHash) to `phases`. Never panics: a decoder's panic becomes the error.
pub(crate) fn visual_timed(
    source: &Source<'_>,
    opts: &ThumbOptions,
    phases: &mut Phases,
) -> Visual {
    quiet_panics_while_decoding();
    DECODING.with(|d| d.set(true));
    let result = catch_unwind(AssertUnwindSafe(|| visual_inner(source, opts, phases)));
    DECODING.with(|d| d.set(false));
    match result {
        Ok(Ok(v)) => v,
        Ok(Err(why)) => Visual::none(why),
        Err(panic) => Visual::none(format!(
            "the image decoder failed: {}",
            seekless_sys::sync::panic_text(&*panic)
        )),
    }
}

thread_local! {
    /// This thread is inside a decoder: a panic there is the image's fault, recorded as the
    /// thumbnail's error, not a bug to print a backtrace for.
    static DECODING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Wraps the panic hook (once per process) so that a panic on a thread inside a decoder
/// prints nothing; every other panic goes to the hook that was there before.
fn quiet_panics_while_decoding() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !DECODING.with(|d| d.get()) {
                previous(info);
            }
        }));
    });
}

fn visual_inner(
    source: &Source<'_>,
    opts: &ThumbOptions,
    phases: &mut Phases,
) -> Result<Visual, String> {
    let size = opts.size.max(1);
    let info = source.info;
    let data = source.view.head();
    let mut orientation = info.orientation;
    let mut clock = Stopwatch::start();
    // What decodes it: `formats::Format::decoder`.
    let format = info
        .format
        .map(|f| (f, formats::named(f).map(|r| r.decoder)));
    let decoded = match format {
        Some((_, Some(Decoder::Preview))) => {
            let preview = preview(source)?;
            decode_jpeg(&preview, size, opts.max_megapixels).map(|p| Pixels {
                source: "preview",
                ..p
            })
        }
        Some((_, Some(Decoder::Frame))) => {
            // ffmpeg turns the frame as the video's matrix says.
            orientation = None;
            video_frame(source, size, opts.max_megapixels)
        }
        Some((_, Some(Decoder::Libheif))) => {
            let max = u64::from(opts.max_megapixels) * 1_000_000;
            super::libheif::decode(data, size, max).map(|d| {
                use super::tone::Transfer::{Hlg, Pq};
                let source = match (d.source == "thumbnail", d.tone_mapped) {
                    (true, None) => "heif-thumbnail",
                    (true, Some(Pq)) => "heif-thumbnail+pq",
                    (true, Some(Hlg)) => "heif-thumbnail+hlg",
                    (false, None) => "full",
                    (false, Some(Pq)) => "full+pq",
                    (false, Some(Hlg)) => "full+hlg",
                };
                Pixels {
                    width: d.width,
                    height: d.height,
                    rgb: d.rgb,
                    source,
                }
            })
        }
        Some((_, Some(Decoder::Jpeg))) => decode_jpeg(data, size, opts.max_megapixels),
        Some((f, Some(Decoder::Image(fmt)))) => decode_other(data, f, fmt, opts.max_megapixels),
        Some((f, Some(Decoder::None) | None)) => return Err(format!("no decoder for {f}")),
        None => return Err("no decoder: not an image this catalog knows".into()),
    };
    // A failed decode took its time too.
    phases.decode += clock.lap();
    let pixels = decoded?;
    let orientation = orientation.filter(|o| (1..=8).contains(o)).unwrap_or(1);
    // The pHash from the same decode, as displayed.
    let grey: Vec<u8> = pixels
        .rgb
        .chunks_exact(3)
        .map(|p| phash::luma(p[0], p[1], p[2]))
        .collect();
    let square = phash::square(&grey, pixels.width, pixels.height)?;
    drop(grey);
    let square = orient(&square, 32, 32, 1, orientation).0;
    let hash = phash::hash(&square);
    phases.phash += clock.lap();
    // The thumbnail: resized in the stored orientation, then turned (cheaper small).
    let (w, h) = fit(pixels.width, pixels.height, size);
    let small = resize(&pixels, w, h)?;
    let source = pixels.source;
    drop(pixels);
    let (rgb, tw, th) = orient(&small, w, h, 3, orientation);
    phases.resize += clock.lap();
    let mut jpeg = Vec::with_capacity(16 << 10);
    let (ew, eh) = (
        u16::try_from(tw).map_err(|_| "thumbnail too wide")?,
        u16::try_from(th).map_err(|_| "thumbnail too high")?,
    );
    jpeg_encoder::Encoder::new(&mut jpeg, QUALITY)
        .encode(&rgb, ew, eh, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| format!("cannot encode the thumbnail: {e}"))?;
    phases.encode += clock.lap();
    Ok(Visual {
        thumb: Ok(MadeThumbnail {
            width: tw,
            height: th,
            source,
            jpeg,
        }),
        phash: Some(hash),
    })
}

/// A raw file's embedded preview JPEG: from the bytes kept, or read back from the file
/// when it lies outside them (up to [`MAX_PREVIEW`] bytes).
fn preview(source: &Source<'_>) -> Result<std::borrow::Cow<'static, [u8]>, String> {
    let (at, len) = source
        .info
        .preview
        .ok_or("no decoder for camera raw: the file carries no JPEG preview")?;
    if let Some(bytes) = source.view.get(at, len) {
        return Ok(std::borrow::Cow::Owned(bytes.to_vec()));
    }
    if len > MAX_PREVIEW {
        return Err(format!("the embedded preview is {len} bytes: not read"));
    }
    read_at(source.path, at, len)
        .map(std::borrow::Cow::Owned)
        .map_err(|e| format!("cannot read the embedded preview at byte {at}: {e}"))
}

/// `len` bytes at `at` of the file at `path`.
fn read_at(path: &Path, at: u64, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(at))?;
    let mut buf = Vec::with_capacity(len as usize);
    f.take(len).read_to_end(&mut buf)?;
    if buf.len() as u64 != len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the file is shorter than when it was read",
        ));
    }
    Ok(buf)
}

/// A video's frame by ffmpeg; without ffmpeg (or when it fails), its cover art.
fn video_frame(source: &Source<'_>, size: u32, max_megapixels: u32) -> Result<Pixels, String> {
    // Twice the thumbnail's size: the pHash and the resize get more than they keep.
    let frame = super::video::frame(source.path, source.info.duration, size.saturating_mul(2));
    let why = match frame {
        Ok(f) => {
            return Ok(Pixels {
                width: f.width,
                height: f.height,
                rgb: f.rgb,
                source: "frame",
            });
        }
        Err(why) => why,
    };
    match source.info.preview {
        Some((at, len)) => {
            let cover = source
                .view
                .get(at, len)
                .ok_or_else(|| format!("{why}; the cover art was not among the bytes read"))?;
            decode_jpeg(cover, size, max_megapixels).map(|p| Pixels {
                source: "cover",
                ..p
            })
        }
        None if super::video::available() => Err(why),
        None => Err(format!("no decoder for video: {why}")),
    }
}

/// The size of an image of `width` × `height` fitted into `size` × `size` (never enlarged),
/// rounded as ImageMagick's `-thumbnail` does.
pub fn fit(width: u32, height: u32, size: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= size {
        return (width.max(1), height.max(1));
    }
    let scale = |v: u32| ((f64::from(v) * f64::from(size) / f64::from(long)).round() as u32).max(1);
    if width >= height {
        (size, scale(height))
    } else {
        (scale(width), size)
    }
}

fn too_large(width: u64, height: u64, max_megapixels: u32) -> Result<(), String> {
    if width * height > u64::from(max_megapixels) * 1_000_000 {
        return Err(format!(
            "{width}×{height} is over --max-megapixels {max_megapixels}: not decoded"
        ));
    }
    Ok(())
}

/// A JPEG decoded at the smallest DCT scale whose longest side is still at least `size`.
fn decode_jpeg(data: &[u8], size: u32, max_megapixels: u32) -> Result<Pixels, String> {
    let err = |e: jpeg_decoder::Error| format!("cannot decode the JPEG: {e}");
    let mut decoder = jpeg_decoder::Decoder::new(data);
    decoder.read_info().map_err(err)?;
    let info = decoder
        .info()
        .ok_or("cannot decode the JPEG: no frame header")?;
    too_large(info.width.into(), info.height.into(), max_megapixels)?;
    if let Some(exif) = decoder.exif_data()
        && let Some(pixels) = exif_thumbnail(exif, size, info.width.into(), info.height.into())
    {
        return Ok(pixels);
    }
    // At 1/8 (when that is the scale chosen: its longest side still at least `size`) only
    // the DC coefficients count: the DC-only decoder, which merely skips the rest.
    let eighth = |v: u16| u32::from(v).div_ceil(8);
    if eighth(info.width).max(eighth(info.height)) >= size
        && let Some(image) = super::dc_jpeg::decode(data)
    {
        return Ok(Pixels {
            width: image.width,
            height: image.height,
            rgb: image.rgb,
            source: "dct-scaled",
        });
    }
    #[cfg(feature = "turbojpeg")]
    if matches!(
        info.pixel_format,
        jpeg_decoder::PixelFormat::RGB24 | jpeg_decoder::PixelFormat::L8
    ) && let Some(pixels) = turbo::decode(data, size)
    {
        return Ok(pixels);
    }
    let want = u16::try_from(size).unwrap_or(u16::MAX);
    let (w, h) = decoder.scale(want, want).map_err(err)?;
    let source = if (w, h) == (info.width, info.height) {
        "full"
    } else {
        "dct-scaled"
    };
    let raw = decoder.decode().map_err(err)?;
    let n = usize::from(w) * usize::from(h);
    let rgb = match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => raw,
        jpeg_decoder::PixelFormat::L8 => raw.iter().flat_map(|&l| [l, l, l]).collect(),
        jpeg_decoder::PixelFormat::L16 => raw
            .chunks_exact(2)
            .flat_map(|l| [l[0], l[0], l[0]])
            .collect(),
        jpeg_decoder::PixelFormat::CMYK32 => raw
            .chunks_exact(4)
            .flat_map(|p| {
                let k = 255 - u16::from(p[3]);
                let ink = |c: u8| ((255 - u16::from(c)) * k / 255) as u8;
                [ink(p[0]), ink(p[1]), ink(p[2])]
            })
            .collect(),
    };
    if rgb.len() < n * 3 {
        return Err("cannot decode the JPEG: fewer pixels than its header says".into());
    }
    Ok(Pixels {
        width: w.into(),
        height: h.into(),
        rgb,
        source,
    })
}

/// libjpeg-turbo (TurboJPEG 3 API) at reduced scale: its SIMD Huffman decoding and
/// scaled IDCTs make it 1.6–2× `jpeg-decoder` on large JPEGs (bench/RESULTS.md).
#[cfg(feature = "turbojpeg")]
mod turbo {
    use turbojpeg::{Decompressor, Image, PixelFormat, ScalingFactor};

    use super::Pixels;

    thread_local! {
        /// One decompressor per worker thread, reused from file to file.
        static DECOMPRESSOR: std::cell::RefCell<Option<Decompressor>> =
            const { std::cell::RefCell::new(None) };
    }

    /// `data` decoded to RGB at the smallest of 1/8, 1/4, 1/2 whose longest side is still at
    /// least `size`, or `None` when libjpeg-turbo cannot (an error or a warning: a JPEG cut
    /// short, bad data): then `jpeg-decoder` has its try, and its error is the one recorded.
    pub(super) fn decode(data: &[u8], size: u32) -> Option<Pixels> {
        DECOMPRESSOR.with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.is_none() {
                *cell = Some(Decompressor::new().ok()?);
            }
            let d = cell.as_mut()?;
            let header = d.read_header(data).ok()?;
            let size = size as usize;
            let factor = [
                ScalingFactor::ONE_EIGHTH,
                ScalingFactor::ONE_QUARTER,
                ScalingFactor::ONE_HALF,
            ]
            .into_iter()
            .find(|f| f.scale(header.width).max(f.scale(header.height)) >= size)
            .unwrap_or(ScalingFactor::ONE);
            d.set_scaling_factor(factor).ok()?;
            let (w, h) = (factor.scale(header.width), factor.scale(header.height));
            let mut rgb = vec![0u8; w.checked_mul(h)?.checked_mul(3)?];
            let image = Image {
                pixels: rgb.as_mut_slice(),
                width: w,
                pitch: w * 3,
                height: h,
                format: PixelFormat::RGB,
            };
            d.decompress(data, image).ok()?;
            Some(Pixels {
                width: u32::try_from(w).ok()?,
                height: u32::try_from(h).ok()?,
                rgb,
                source: if factor == ScalingFactor::ONE {
                    "full"
                } else {
                    "dct-scaled"
                },
            })
        })
    }
}

/// The EXIF thumbnail (IFD1's JPEG) of the EXIF block `tiff`, decoded, when its longest
/// side is at least `size` and its aspect ratio is within 2 % of the image's
/// (`width` × `height`): a thumbnail that an editor left stale after turning the image, or
/// letterboxed into 4:3, is not used.
fn exif_thumbnail(tiff: &[u8], size: u32, width: u32, height: u32) -> Option<Pixels> {
    let jpeg = ifd1_jpeg(tiff)?;
    let mut decoder = jpeg_decoder::Decoder::new(jpeg);
    decoder.read_info().ok()?;
    let info = decoder.info()?;
    let (tw, th) = (u32::from(info.width), u32::from(info.height));
    if tw.max(th) < size || info.pixel_format != jpeg_decoder::PixelFormat::RGB24 {
        return None;
    }
    let (ours, theirs) = (
        f64::from(tw) / f64::from(th),
        f64::from(width) / f64::from(height.max(1)),
    );
    if (ours / theirs - 1.0).abs() > 0.02 {
        return None;
    }
    let rgb = decoder.decode().ok()?;
    (rgb.len() >= tw as usize * th as usize * 3).then_some(Pixels {
        width: tw,
        height: th,
        rgb,
        source: "exif",
    })
}

/// The bytes of the JPEG that IFD1 of the TIFF structure `tiff` points at
/// (JPEGInterchangeFormat, JPEGInterchangeFormatLength), if all of it lies inside.
fn ifd1_jpeg(tiff: &[u8]) -> Option<&[u8]> {
    let little = match tiff.get(..4)? {
        b"II*\0" => true,
        b"MM\0*" => false,
        _ => return None,
    };
    let u16_at = |at: usize| {
        let b: [u8; 2] = tiff.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    };
    let u32_at = |at: usize| {
        let b: [u8; 4] = tiff.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let ifd0 = u32_at(4)? as usize;
    let ifd1 = u32_at(ifd0 + 2 + 12 * usize::from(u16_at(ifd0)?))? as usize;
    if ifd1 == 0 || ifd1 == ifd0 {
        return None;
    }
    let (mut offset, mut length) = (None, None);
    for i in 0..usize::from(u16_at(ifd1)?) {
        let at = ifd1 + 2 + 12 * i;
        let value = match u16_at(at + 2)? {
            3 => u32::from(u16_at(at + 8)?),
            4 => u32_at(at + 8)?,
            _ => continue,
        };
        match u16_at(at)? {
            0x0201 => offset = Some(value as usize),
            0x0202 => length = Some(value as usize),
            _ => {}
        }
    }
    let (offset, length) = (offset?, length?);
    tiff.get(offset..offset.checked_add(length)?)
}

/// PNG, GIF (first frame), WebP, TIFF or BMP (`format`, as `fmt`), decoded whole by the
/// `image` crate. Alpha is put over white.
fn decode_other(
    data: &[u8],
    format: &str,
    fmt: image::ImageFormat,
    max_megapixels: u32,
) -> Result<Pixels, String> {
    let err = |e: image::ImageError| format!("cannot decode the {format}: {e}");
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(data), fmt);
    reader.limits(limits_for(max_megapixels));
    let (w, h) = reader.into_dimensions().map_err(err)?;
    too_large(w.into(), h.into(), max_megapixels)?;
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(data), fmt);
    reader.limits(limits_for(max_megapixels));
    let img = reader.decode().map_err(err)?;
    let (width, height) = (img.width(), img.height());
    // One 8-bit copy at most beside the decoded image (which goes as soon as it is made):
    // memory is the decoded image plus 4 bytes a pixel, never more.
    let rgb = if img.color().has_alpha() {
        let mut px = img.into_rgba8().into_raw();
        // In place, front to back: pixel i's 3 bytes land at or before its 4 bytes.
        for i in 0..px.len() / 4 {
            let p = [px[4 * i], px[4 * i + 1], px[4 * i + 2], px[4 * i + 3]];
            let a = u16::from(p[3]);
            let over = |c: u8| ((u16::from(c) * a + 255 * (255 - a) + 127) / 255) as u8;
            px[3 * i..3 * i + 3].copy_from_slice(&[over(p[0]), over(p[1]), over(p[2])]);
        }
        px.truncate(px.len() / 4 * 3);
        px
    } else {
        img.into_rgb8().into_raw()
    };
    Ok(Pixels {
        width,
        height,
        rgb,
        source: "full",
    })
}

/// What the `image` crate may allocate: pixels of up to 16 bytes (RGBA, 32-bit float)
/// for `max_megapixels`, and room for the decoders' own buffers.
fn limits_for(max_megapixels: u32) -> image::Limits {
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(u64::from(max_megapixels) * 1_000_000 * 16 + (64 << 20));
    limits
}

/// `pixels` resized to `width` × `height` with Lanczos3.
fn resize(pixels: &Pixels, width: u32, height: u32) -> Result<Vec<u8>, String> {
    if (width, height) == (pixels.width, pixels.height) {
        return Ok(pixels.rgb.clone());
    }
    let src = ImageRef::new(pixels.width, pixels.height, &pixels.rgb, PixelType::U8x3)
        .map_err(|e| e.to_string())?;
    let mut dst = Image::new(width, height, PixelType::U8x3);
    let opts = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Lanczos3));
    Resizer::new()
        .resize(&src, &mut dst, &opts)
        .map_err(|e| e.to_string())?;
    Ok(dst.into_vec())
}

/// `px` (`width` × `height`, `bpp` bytes a pixel) as displayed under EXIF `orientation`:
/// the pixels and the new width and height.
fn orient(px: &[u8], width: u32, height: u32, bpp: usize, orientation: u32) -> (Vec<u8>, u32, u32) {
    if orientation == 1 {
        return (px.to_vec(), width, height);
    }
    let (w, h) = (width as usize, height as usize);
    let swap = orientation >= 5;
    let (ow, oh) = if swap { (h, w) } else { (w, h) };
    let mut out = vec![0u8; px.len()];
    for y in 0..oh {
        for x in 0..ow {
            // The source pixel shown at (x, y).
            let (sx, sy) = match orientation {
                2 => (w - 1 - x, y),
                3 => (w - 1 - x, h - 1 - y),
                4 => (x, h - 1 - y),
                5 => (y, x),
                6 => (y, h - 1 - x),
                7 => (w - 1 - y, h - 1 - x),
                8 => (w - 1 - y, x),
                _ => (x, y),
            };
            let from = (sy * w + sx) * bpp;
            let to = (y * ow + x) * bpp;
            out[to..to + bpp].copy_from_slice(&px[from..from + bpp]);
        }
    }
    (out, ow as u32, oh as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumbnails_fit_the_longest_side_and_are_never_enlarged() {
        assert_eq!(fit(1280, 960, 256), (256, 192));
        assert_eq!(fit(960, 1280, 256), (192, 256));
        assert_eq!(fit(500, 333, 256), (256, 170));
        assert_eq!(fit(100, 80, 256), (100, 80));
        assert_eq!(fit(10_000, 1, 256), (256, 1));
    }

    #[test]
    fn orientations_move_the_top_left_pixel_where_exif_says() {
        // 2×1: A B.
        let px = [1u8, 2];
        assert_eq!(orient(&px, 2, 1, 1, 2).0, [2, 1]);
        assert_eq!(orient(&px, 2, 1, 1, 3).0, [2, 1]);
        assert_eq!(orient(&px, 2, 1, 1, 4).0, [1, 2]);
        // Rotated 90° clockwise (6): A above B.
        assert_eq!(orient(&px, 2, 1, 1, 6), (vec![1, 2], 1, 2));
        // 90° counter-clockwise (8): B above A.
        assert_eq!(orient(&px, 2, 1, 1, 8), (vec![2, 1], 1, 2));
        assert_eq!(orient(&px, 2, 1, 1, 5), (vec![1, 2], 1, 2));
        assert_eq!(orient(&px, 2, 1, 1, 7), (vec![2, 1], 1, 2));
    }

    #[test]
    fn an_exif_block_pointing_outside_itself_gives_no_thumbnail() {
        // II, 42, IFD0 at 8 with no entries, IFD1 at 14: offset 100, length 10 (past the end).
        let mut tiff = b"II*\0\x08\0\0\0\0\0\x0e\0\0\0\x02\0".to_vec();
        tiff.extend_from_slice(&[0x01, 0x02, 4, 0, 1, 0, 0, 0, 100, 0, 0, 0]);
        tiff.extend_from_slice(&[0x02, 0x02, 4, 0, 1, 0, 0, 0, 10, 0, 0, 0]);
        tiff.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(ifd1_jpeg(&tiff), None);
        // Pointing at the last 4 bytes: those.
        let len = tiff.len() as u8;
        tiff[14 + 2 + 8] = len - 4;
        tiff[14 + 2 + 12 + 8] = 4;
        assert_eq!(ifd1_jpeg(&tiff), Some(&[0u8, 0, 0, 0][..]));
        assert_eq!(ifd1_jpeg(b"II*\0\xff\xff\xff\xff"), None);
        assert_eq!(ifd1_jpeg(b"MM"), None);
    }

    #[test]
    fn formats_without_a_decoder_are_told_and_garbage_is_an_error() {
        let opts = ThumbOptions::default();
        let v = visual(b"\0\0\0\x0cJXL \r\n\x87\n", Some("jxl"), None, &opts);
        assert_eq!(v.thumb, Err("no decoder for jxl".into()));
        let v = visual(b"\xff\xd8\xff\xe0garbage", Some("jpeg"), None, &opts);
        assert!(v.thumb.is_err() && v.phash.is_none(), "{v:?}");
        // A raw file without a preview, a HEIF libheif cannot read: errors, not panics.
        let v = visual(b"II*\0\x08\0\0\0CR\x02\0", Some("cr2"), None, &opts);
        assert!(v.thumb.unwrap_err().contains("no JPEG preview"));
        let v = visual(b"\0\0\0\x18ftypheic", Some("heif"), None, &opts);
        assert!(v.thumb.is_err() && v.phash.is_none(), "{v:?}");
    }
}
