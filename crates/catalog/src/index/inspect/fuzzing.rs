use std::hint::black_box;

use crate::index::formats::RawReader;

pub fn inspect(data: &[u8], ext: Option<&str>, complete: bool) {
    // Not complete: the file goes on past `data`, as a huge file's head.
    let size = data.len() as u64 + u64::from(!complete) * (1 << 30);
    black_box(super::inspect_inner(
        super::View::new(data, &[], size),
        ext,
        &mut None,
    ));
}
pub fn jpeg(data: &[u8]) {
    let layout = super::jpeg::read(data);
    if let Some(block) = layout.exif {
        let _ = black_box(super::tiff::read(block));
    }
    black_box(layout);
}
pub fn tiff(data: &[u8]) {
    let _ = black_box(super::tiff::read(data));
}
pub fn png(data: &[u8], complete: bool) {
    black_box(super::png::read(data, complete));
}
pub fn webp(data: &[u8]) {
    black_box(super::webp::read(data));
}
pub fn bmp(data: &[u8], complete: bool) {
    black_box(super::bmp::read(data, complete));
}
/// The raw readers, each on `data` as a whole file (the format by its signature or,
/// for a TIFF structure, by `raw::tiff_format`).
pub fn raw(data: &[u8], ext: Option<&str>) {
    let view = super::View::whole(data);
    let (format, images) = match super::format_of(data) {
        Some("tiff") => super::raw::tiff_format(data, ext),
        Some(f) => (f, None),
        None => return,
    };
    if let Some(super::Reader::Raw(reader)) = super::formats::named(format).map(|f| f.reader) {
        black_box(super::raw::read(view, reader, format, images));
    }
}
pub fn tiff_images(data: &[u8]) {
    let _ = black_box(super::tiff::images(data));
}
pub fn crw(data: &[u8]) {
    black_box(super::raw::read(
        super::View::whole(data),
        RawReader::Crw,
        "crw",
        None,
    ));
}
pub fn x3f(data: &[u8]) {
    black_box(super::raw::read(
        super::View::whole(data),
        RawReader::X3f,
        "x3f",
        None,
    ));
}
pub fn cr3(data: &[u8]) {
    black_box(super::raw::read(
        super::View::whole(data),
        RawReader::Cr3,
        "cr3",
        None,
    ));
}
pub fn raf(data: &[u8]) {
    black_box(super::raw::read(
        super::View::whole(data),
        RawReader::Raf,
        "raf",
        None,
    ));
}
pub fn mrw(data: &[u8]) {
    black_box(super::raw::read(
        super::View::whole(data),
        RawReader::Mrw,
        "mrw",
        None,
    ));
}
/// `data` as a file's head; when not `complete`, the file goes on (not kept) for as
/// many bytes again, and its last quarter is kept as the tail.
fn view(data: &[u8], complete: bool) -> super::View<'_> {
    if complete {
        super::View::whole(data)
    } else {
        let size = data.len() as u64 * 2;
        super::View::new(&data[..data.len() / 2], &data[data.len() * 3 / 4..], size)
    }
}
pub fn heif(data: &[u8], complete: bool) {
    let layout = super::heif::read(view(data, complete));
    if let Some(block) = layout.exif.or(layout.owned_exif.as_deref()) {
        black_box(super::apple::content_id(block));
    }
    black_box(layout);
}
pub fn quicktime(data: &[u8], complete: bool) {
    black_box(super::quicktime::read(view(data, complete)));
    black_box(super::quicktime::is_classic(data));
}
pub fn matroska(data: &[u8], complete: bool) {
    black_box(super::matroska::read(view(data, complete)));
    black_box(super::matroska::doc_type(data));
}
pub fn avi(data: &[u8], complete: bool) {
    black_box(super::avi::read(view(data, complete)));
}
pub fn jxl(data: &[u8], complete: bool) {
    black_box(super::jxl::read(view(data, complete)));
}
pub fn apple(data: &[u8]) {
    black_box(super::apple::content_id(data));
}
pub fn xmp(data: &[u8]) {
    if let Some(packet) = super::xmp::packet(data) {
        for name in ["tiff:Orientation", "exif:DateTimeOriginal", "tiff:Make"] {
            black_box(super::xmp::property(packet, name).and_then(|v| super::xmp::date(&v)));
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        black_box(super::xmp::date(text));
    }
}
pub fn sidecar(data: &[u8]) {
    let _ = black_box(super::xmp::sidecar(data));
}
