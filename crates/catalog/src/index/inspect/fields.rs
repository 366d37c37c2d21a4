//! The fields of an [`ImageInfo`] filled from what a file carries: its EXIF (the capture
//! time made one [`Taken`] form), then what its container's own structure says, then its
//! XMP packet, each only where the one before had nothing.

use super::{ImageInfo, Meta, tiff, xmp};
use crate::index::taken::Taken;

pub(super) fn fill_exif(info: &mut ImageInfo, f: tiff::Fields) {
    info.make = f.make;
    info.model = f.model;
    info.lens = f.lens;
    info.orientation = f.orientation;
    info.exposure_time = f.exposure_time;
    info.f_number = f.f_number;
    info.iso = f.iso;
    info.focal_length = f.focal_length;
    info.taken = f
        .date
        .and_then(|date| Taken::exif(&date, f.subsec.as_deref(), f.offset.as_deref()))
        .map(|t| t.to_string());
    info.gps_lat = f.gps_lat;
    info.gps_lon = f.gps_lon;
    info.gps_alt = f.gps_alt;
}

/// The fields EXIF did not have, from the container's own structure; and what only the
/// container says (a preview's place, a video's duration).
pub(super) fn fill_meta(info: &mut ImageInfo, m: Meta) {
    fn or<T>(field: &mut Option<T>, value: Option<T>) {
        if field.is_none() {
            *field = value;
        }
    }
    or(&mut info.taken, m.taken);
    or(&mut info.make, m.make);
    or(&mut info.model, m.model);
    or(&mut info.orientation, m.orientation);
    or(&mut info.exposure_time, m.exposure_time);
    or(&mut info.f_number, m.f_number);
    or(&mut info.iso, m.iso);
    or(&mut info.focal_length, m.focal_length);
    // A position is one: the container's only where EXIF has none at all.
    if info.gps_lat.is_none() && info.gps_lon.is_none() && info.gps_alt.is_none() {
        (info.gps_lat, info.gps_lon, info.gps_alt) = (m.gps_lat, m.gps_lon, m.gps_alt);
    }
    or(&mut info.duration, m.duration);
    or(&mut info.codec, m.codec);
    or(&mut info.rotation, m.rotation);
    or(&mut info.content_id, m.content_id);
    or(&mut info.preview, m.preview);
}

/// The fields EXIF did not have, from XMP.
pub(super) fn fill_xmp(info: &mut ImageInfo, packet: &str) {
    let get = |name| xmp::property(packet, name);
    if info.orientation.is_none() {
        info.orientation = get("tiff:Orientation")
            .and_then(|o| o.parse().ok())
            .filter(|o| (1..=8).contains(o));
    }
    // Where EXIF has no date: XMP's copy of it, else when the picture was created
    // (`photoshop:DateCreated`, IPTC's date in XMP), with a time.
    if info.taken.is_none() {
        info.taken = ["exif:DateTimeOriginal", "photoshop:DateCreated"]
            .into_iter()
            .find_map(|name| get(name).and_then(|d| xmp::date(&d)));
    }
    if info.lens.is_none() {
        info.lens = get("exifEX:LensModel");
    }
    if info.make.is_none() {
        info.make = get("tiff:Make");
    }
    if info.model.is_none() {
        info.model = get("tiff:Model");
    }
}
