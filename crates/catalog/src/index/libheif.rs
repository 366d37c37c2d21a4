//! HEIC and AVIF decoded by the system's libheif, loaded when first needed
//! (`libheif.so.1`, `libheif.1.dylib`, `libheif.dll`; `SEEKLESS_LIBHEIF` names another
//! file, or none when empty): neither the build nor a run that meets no HEIF file needs
//! it. When it is missing, the thumbnail's recorded error says
//! what to install.
//!
//! The primary image is decoded with its transformations (`irot`, `imir`, `clap`)
//! applied, as libheif does by default; when the file carries a thumbnail item at least
//! as large as the thumbnail asked for (iPhones store a 320-pixel one), that is decoded
//! instead of the whole image.
//!
//! An HDR picture (its `colr` box's nclx profile says PQ or HLG) is decoded at its own bit
//! depth and tone-mapped to SDR by [`tone`](super::tone); every other picture is decoded
//! to 8-bit RGB as libheif gives it.
//!
//! AV1 pictures are decoded by libaom where libheif has it (`decoder_id` "aom", libheif
//! ≥ 1.15), not by its default, dav1d: libheif leaves dav1d's logger in place, which
//! writes lines such as "Error parsing OBU data" straight to stderr, unprefixed and
//! unasked, for every damaged AVIF; libaom says nothing and its error ("Corrupt frame
//! detected") is returned and stored instead. It costs ~10 % more CPU time per AVIF
//! (12 MP: 0.45 s against 0.40 s). A libheif without libaom falls back to its default.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use libloading::Library;

use super::tone::{Primaries, ToneMap, Transfer};

/// libheif's `struct heif_error`.
#[repr(C)]
#[derive(Clone, Copy)]
struct HeifError {
    code: c_int,
    subcode: c_int,
    message: *const c_char,
}

type Ctx = c_void;
type Handle = c_void;
type Image = c_void;
type ItemId = u32;

/// The start of libheif's `struct heif_color_profile_nclx`: its version-1 fields, the
/// same from 1.4 to today (`uint8_t version`, three enums (C `int`s), `uint8_t
/// full_range_flag`, then the decoded chromaticities, not read). libheif allocates it;
/// only these fields are read through the pointer it returns.
#[repr(C)]
struct Nclx {
    _version: u8,
    colour_primaries: c_int,
    transfer_characteristics: c_int,
    _matrix_coefficients: c_int,
    _full_range_flag: u8,
}

const COLORSPACE_RGB: c_int = 1;
const CHROMA_INTERLEAVED_RGB: c_int = 10;
/// 16 bits a sample, little-endian, the picture's own bit depth in the low bits.
const CHROMA_INTERLEAVED_RRGGBB_LE: c_int = 14;
const CHANNEL_INTERLEAVED: c_int = 10;

/// The start of libheif's `struct heif_decoding_options`, up to its version-4 field
/// `decoder_id` (libheif 1.15); later versions only append. libheif allocates it
/// (`heif_decoding_options_alloc`, which fills in the defaults and its own version);
/// only `decoder_id` is written through the pointer, and only when that version is ≥ 4.
#[repr(C)]
struct DecodingOptions {
    version: u8,
    _ignore_transformations: u8,
    _start_progress: *const c_void,
    _on_progress: *const c_void,
    _end_progress: *const c_void,
    _progress_user_data: *mut c_void,
    _convert_hdr_to_8bit: u8,
    _strict_decoding: u8,
    decoder_id: *const c_char,
}

/// The AV1 decoder asked for: libaom (see the module's documentation). libheif 1.15
/// falls back to its default when no decoder of that name handles the picture's format,
/// so HEVC pictures still go to libde265.
const AV1_DECODER: &CStr = c"aom";

/// The functions used, resolved once.
struct Api {
    _lib: Library,
    context_alloc: unsafe extern "C" fn() -> *mut Ctx,
    context_free: unsafe extern "C" fn(*mut Ctx),
    read_from_memory:
        unsafe extern "C" fn(*mut Ctx, *const c_void, usize, *const c_void) -> HeifError,
    primary_handle: unsafe extern "C" fn(*mut Ctx, *mut *mut Handle) -> HeifError,
    handle_release: unsafe extern "C" fn(*const Handle),
    handle_width: unsafe extern "C" fn(*const Handle) -> c_int,
    handle_height: unsafe extern "C" fn(*const Handle) -> c_int,
    thumbnail_ids: unsafe extern "C" fn(*const Handle, *mut ItemId, c_int) -> c_int,
    thumbnail: unsafe extern "C" fn(*const Handle, ItemId, *mut *mut Handle) -> HeifError,
    decode: unsafe extern "C" fn(
        *const Handle,
        *mut *mut Image,
        c_int,
        c_int,
        *const c_void,
    ) -> HeifError,
    image_width: unsafe extern "C" fn(*const Image, c_int) -> c_int,
    image_height: unsafe extern "C" fn(*const Image, c_int) -> c_int,
    plane: unsafe extern "C" fn(*const Image, c_int, *mut c_int) -> *const u8,
    image_release: unsafe extern "C" fn(*const Image),
    /// For HDR pictures (libheif ≥ 1.4 has them; without them every picture is SDR).
    hdr: Option<HdrApi>,
    /// For choosing the AV1 decoder (libheif ≥ 1.15; without them, its default).
    options: Option<OptionsApi>,
}

/// What allocating decoding options takes.
struct OptionsApi {
    alloc: unsafe extern "C" fn() -> *mut DecodingOptions,
    free: unsafe extern "C" fn(*mut DecodingOptions),
}

/// What reading an nclx profile and decoding at high bit depth take.
struct HdrApi {
    nclx: unsafe extern "C" fn(*const Handle, *mut *mut Nclx) -> HeifError,
    nclx_free: unsafe extern "C" fn(*mut Nclx),
    bits_range: unsafe extern "C" fn(*const Image, c_int) -> c_int,
}

/// The library's name and major version: its files' names, most specific first, are
/// [`seekless_sys::shared_library_names`]'s.
const NAME: (&str, u32) = ("heif", 1);

/// What to tell a user who has no libheif.
pub const MISSING: &str = "no decoder for heif: libheif is not installed (Debian and Ubuntu: \
    apt install libheif1; macOS: brew install libheif)";

/// What the statically linked release binary says instead: it never loads libheif.
pub const STATIC_BUILD: &str = "no decoder for heif: this statically linked seekless cannot \
    load libheif (use the .deb or a build from source)";

fn api() -> Result<&'static Api, &'static str> {
    // A statically linked glibc program cannot load a shared library reliably (libheif
    // would bring a second C library beside the one linked in; musl's dlopen always
    // fails): the static release binary (ci/release.sh) treats HEIF files as a machine
    // without libheif does, recording this error for the thumbnail.
    if !seekless_sys::can_load_shared_libraries() {
        return Err(STATIC_BUILD);
    }
    static API: OnceLock<Option<Api>> = OnceLock::new();
    API.get_or_init(load).as_ref().ok_or(MISSING)
}

/// The library's file: `SEEKLESS_LIBHEIF` when set (empty: none, as on a machine without
/// libheif), else the first of its names ([`NAME`]) the loader finds.
fn load() -> Option<Api> {
    let names: Vec<std::ffi::OsString> = match std::env::var_os("SEEKLESS_LIBHEIF") {
        Some(name) if name.is_empty() => return None,
        Some(name) => vec![name],
        None => seekless_sys::shared_library_names(NAME.0, NAME.1)
            .into_iter()
            .map(Into::into)
            .collect(),
    };
    // SAFETY: loading libheif runs its initialisers, which have no preconditions; the
    // library stays loaded for the life of the process (it is kept in a static).
    let lib = names
        .iter()
        .find_map(|name| unsafe { Library::new(name) }.ok())?;
    // SAFETY: each symbol is looked up by its C name and given the type libheif's
    // `heif.h` declares for it (version 1.x, stable since 1.0: the struct returned by
    // value is `struct heif_error { int; int; const char*; }`). The pointers stay valid
    // as long as `_lib`, which the `Api` owns.
    unsafe {
        // `heif_init` exists from 1.13 on (plugins); older versions need none.
        if let Ok(init) = lib.get::<unsafe extern "C" fn(*mut c_void) -> HeifError>(b"heif_init\0")
        {
            init(std::ptr::null_mut());
        }
        Some(Api {
            context_alloc: *lib.get(b"heif_context_alloc\0").ok()?,
            context_free: *lib.get(b"heif_context_free\0").ok()?,
            read_from_memory: *lib
                .get(b"heif_context_read_from_memory_without_copy\0")
                .ok()?,
            primary_handle: *lib.get(b"heif_context_get_primary_image_handle\0").ok()?,
            handle_release: *lib.get(b"heif_image_handle_release\0").ok()?,
            handle_width: *lib.get(b"heif_image_handle_get_width\0").ok()?,
            handle_height: *lib.get(b"heif_image_handle_get_height\0").ok()?,
            thumbnail_ids: *lib
                .get(b"heif_image_handle_get_list_of_thumbnail_IDs\0")
                .ok()?,
            thumbnail: *lib.get(b"heif_image_handle_get_thumbnail\0").ok()?,
            decode: *lib.get(b"heif_decode_image\0").ok()?,
            image_width: *lib.get(b"heif_image_get_width\0").ok()?,
            image_height: *lib.get(b"heif_image_get_height\0").ok()?,
            plane: *lib.get(b"heif_image_get_plane_readonly\0").ok()?,
            image_release: *lib.get(b"heif_image_release\0").ok()?,
            hdr: (|| {
                Some(HdrApi {
                    nclx: *lib
                        .get(b"heif_image_handle_get_nclx_color_profile\0")
                        .ok()?,
                    nclx_free: *lib.get(b"heif_nclx_color_profile_free\0").ok()?,
                    bits_range: *lib.get(b"heif_image_get_bits_per_pixel_range\0").ok()?,
                })
            })(),
            options: (|| {
                Some(OptionsApi {
                    alloc: *lib.get(b"heif_decoding_options_alloc\0").ok()?,
                    free: *lib.get(b"heif_decoding_options_free\0").ok()?,
                })
            })(),
            _lib: lib,
        })
    }
}

/// libheif's error as text (one line: some of its messages end with a newline).
fn text(e: HeifError) -> String {
    if e.message.is_null() {
        return format!("libheif error {}.{}", e.code, e.subcode);
    }
    // SAFETY: libheif documents `message` as always a valid NUL-terminated string (static
    // or owned by the context, which outlives this call).
    unsafe { CStr::from_ptr(e.message) }
        .to_string_lossy()
        .trim_end()
        .to_string()
}

fn check(e: HeifError) -> Result<(), String> {
    if e.code == 0 { Ok(()) } else { Err(text(e)) }
}

/// Decoded RGB: width, height, and 3 bytes a pixel, row after row.
pub struct Rgb {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
    /// `thumbnail` when the file's own thumbnail item was decoded, else `full`.
    pub source: &'static str,
    /// The HDR transfer the picture was tone-mapped from, if it was.
    pub tone_mapped: Option<Transfer>,
}

/// Releases what libheif allocated, in reverse order, however the decode ends.
struct Owned<'a> {
    api: &'a Api,
    ctx: *mut Ctx,
    handles: Vec<*mut Handle>,
    image: *mut Image,
    options: *mut DecodingOptions,
}

impl Drop for Owned<'_> {
    fn drop(&mut self) {
        // SAFETY: each pointer was returned by libheif for this context and is released
        // exactly once, here, images and handles before the context that owns them.
        unsafe {
            if !self.image.is_null() {
                (self.api.image_release)(self.image);
            }
            for &h in self.handles.iter().rev() {
                (self.api.handle_release)(h);
            }
            if !self.ctx.is_null() {
                (self.api.context_free)(self.ctx);
            }
            if let (false, Some(options)) = (self.options.is_null(), &self.api.options) {
                (options.free)(self.options);
            }
        }
    }
}

/// Decodes the HEIF or AVIF in `data`: the file's own thumbnail when its longest side is
/// at least `size`, else the primary image (refused above `max_pixels`).
pub fn decode(data: &[u8], size: u32, max_pixels: u64) -> Result<Rgb, String> {
    let api = api().map_err(str::to_string)?;
    // SAFETY: allocating a context has no preconditions; a null result is checked.
    let ctx = unsafe { (api.context_alloc)() };
    if ctx.is_null() {
        return Err("libheif could not allocate a context".into());
    }
    let mut owned = Owned {
        api,
        ctx,
        handles: Vec::new(),
        image: std::ptr::null_mut(),
        options: std::ptr::null_mut(),
    };
    if let Some(options) = &api.options {
        // SAFETY: allocating options has no preconditions; `owned` frees them.
        owned.options = unsafe { (options.alloc)() };
        // SAFETY: a non-null result points to libheif's options struct, whose start is
        // `DecodingOptions` from version 4 on; `decoder_id` points to a static string.
        if let Some(o) = unsafe { owned.options.as_mut() }
            && o.version >= 4
        {
            o.decoder_id = AV1_DECODER.as_ptr();
        }
    }
    // SAFETY: `data` outlives the context (`owned` is dropped before this function
    // returns), as reading "without copy" requires; null options mean the defaults.
    check(unsafe {
        (api.read_from_memory)(ctx, data.as_ptr().cast(), data.len(), std::ptr::null())
    })?;
    let mut primary = std::ptr::null_mut();
    // SAFETY: `ctx` is a live context and `primary` a valid out-pointer.
    check(unsafe { (api.primary_handle)(ctx, &mut primary) })?;
    owned.handles.push(primary);
    let mut handle = primary;
    let mut source = "full";
    let mut ids = [0 as ItemId; 4];
    // SAFETY: `primary` is a live handle; `ids` has room for the count passed.
    let n = unsafe { (api.thumbnail_ids)(primary, ids.as_mut_ptr(), ids.len() as c_int) };
    for &id in &ids[..n.clamp(0, ids.len() as c_int) as usize] {
        let mut thumb = std::ptr::null_mut();
        // SAFETY: `primary` is live, `id` one of its thumbnails, `thumb` an out-pointer.
        if check(unsafe { (api.thumbnail)(primary, id, &mut thumb) }).is_err() {
            continue;
        }
        owned.handles.push(thumb);
        // SAFETY: `thumb` is a live handle.
        let (w, h) = unsafe { ((api.handle_width)(thumb), (api.handle_height)(thumb)) };
        if w.max(h) >= size as c_int {
            handle = thumb;
            source = "thumbnail";
            break;
        }
    }
    // SAFETY: `handle` is a live handle.
    let (w, h) = unsafe { ((api.handle_width)(handle), (api.handle_height)(handle)) };
    if w <= 0 || h <= 0 {
        return Err(format!("libheif gives the image a size of {w}×{h}"));
    }
    if w as u64 * h as u64 > max_pixels {
        return Err(format!(
            "{w}×{h} is over --max-megapixels {}: not decoded",
            max_pixels / 1_000_000
        ));
    }
    let hdr = hdr_of(api, handle);
    let chroma = if hdr.is_some() {
        CHROMA_INTERLEAVED_RRGGBB_LE
    } else {
        CHROMA_INTERLEAVED_RGB
    };
    let mut image = std::ptr::null_mut();
    // SAFETY: `handle` is live; `image` an out-pointer; the options are libheif's own
    // (its defaults: transformations applied) or null, meaning the defaults.
    check(unsafe {
        (api.decode)(
            handle,
            &mut image,
            COLORSPACE_RGB,
            chroma,
            owned.options.cast_const().cast(),
        )
    })?;
    owned.image = image;
    // SAFETY: `image` is a live decoded image with an interleaved plane.
    let (width, height) = unsafe {
        (
            (api.image_width)(image, CHANNEL_INTERLEAVED),
            (api.image_height)(image, CHANNEL_INTERLEAVED),
        )
    };
    let bytes_per_pixel = if hdr.is_some() { 6 } else { 3 };
    let mut stride: c_int = 0;
    // SAFETY: as above; `stride` is an out-pointer.
    let plane = unsafe { (api.plane)(image, CHANNEL_INTERLEAVED, &mut stride) };
    if plane.is_null()
        || width <= 0
        || height <= 0
        || (stride as i64) < width as i64 * bytes_per_pixel
    {
        return Err("libheif gave no RGB plane".into());
    }
    let (width, height, stride) = (width as usize, height as usize, stride as usize);
    let row_len = width * bytes_per_pixel as usize;
    // SAFETY: libheif's plane holds `height` rows of `stride` bytes, each starting with
    // `width` pixels of `bytes_per_pixel` bytes (checked above: stride ≥ that), and `row`
    // is only called with y < height; the plane lives until `owned` releases the image,
    // after the last use of `row`.
    let row = |y: usize| unsafe { std::slice::from_raw_parts(plane.add(y * stride), row_len) };
    let mut rgb = Vec::with_capacity(width * height * 3);
    let tone_mapped = match hdr {
        None => {
            for y in 0..height {
                rgb.extend_from_slice(row(y));
            }
            None
        }
        Some((transfer, primaries, api)) => {
            // SAFETY: `image` is live; the interleaved channel exists (its plane is above).
            let bits = unsafe { (api.bits_range)(image, CHANNEL_INTERLEAVED) };
            if !(1..=16).contains(&bits) {
                return Err(format!(
                    "libheif gives the HDR picture {bits} bits a sample"
                ));
            }
            let samples = |y: usize| {
                row(y)
                    .chunks_exact(2)
                    .map(|s| u16::from_le_bytes([s[0], s[1]]))
            };
            // PQ's EETF starts from the frame's peak: one pass to find it.
            let peak = match transfer {
                Transfer::Pq => (0..height).map(|y| samples(y).max().unwrap_or(0)).max(),
                Transfer::Hlg => None,
            };
            let map = ToneMap::new(transfer, primaries, bits as u32, peak.unwrap_or(0).into());
            for y in 0..height {
                let mut s = samples(y);
                while let (Some(r), Some(g), Some(b)) = (s.next(), s.next(), s.next()) {
                    rgb.extend_from_slice(&map.pixel([r, g, b]));
                }
            }
            Some(transfer)
        }
    };
    drop(owned);
    Ok(Rgb {
        width: width as u32,
        height: height as u32,
        rgb,
        source,
        tone_mapped,
    })
}

/// The HDR transfer and the primaries of the picture `handle` decodes to, from its nclx
/// profile (libheif returns the `colr` box's; one in the coded stream only is not seen),
/// when the transfer is PQ or HLG; `None` for every other picture (SDR, an ICC profile,
/// no profile, a libheif without these functions).
fn hdr_of(api: &Api, handle: *mut Handle) -> Option<(Transfer, Primaries, &HdrApi)> {
    let hdr = api.hdr.as_ref()?;
    let mut nclx: *mut Nclx = std::ptr::null_mut();
    // SAFETY: `handle` is a live handle and `nclx` an out-pointer; libheif allocates the
    // profile, which is freed below whatever it holds.
    let error = unsafe { (hdr.nclx)(handle, &mut nclx) };
    if error.code != 0 || nclx.is_null() {
        return None;
    }
    // SAFETY: `nclx` points at a live profile of at least version 1 (every libheif that
    // has this function fills those fields); only they are read, then it is freed once.
    let (primaries, transfer) = unsafe {
        let p = ((*nclx).colour_primaries, (*nclx).transfer_characteristics);
        (hdr.nclx_free)(nclx);
        p
    };
    Some((
        Transfer::from_h273(transfer)?,
        Primaries::from_h273(primaries),
        hdr,
    ))
}
