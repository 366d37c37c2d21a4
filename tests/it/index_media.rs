//! The catalog's fields for the formats phones and cameras write (HEIC, AVIF, JPEG XL,
//! camera raw, video) against `exiftool -n`, on a corpus of real files and made ones:
//!
//! - ExifTool's and Exiv2's own sample files (their Debian source tarballs, fetched and
//!   checked by `.ci/fetch-corpora`): raw files from Canon (CR2, CR3, CRW), Nikon, Fuji,
//!   Panasonic, Minolta, Phase One/Leaf, Sigma, a DNG; iPhone HEICs (a grid, a rotated
//!   one), AVIFs, JPEG XL, a camera's MOV, Matroska and AVI files;
//! - files made here by the tools a user has: ffmpeg (MP4, MOV, M4V, 3GP, Matroska, WebM,
//!   AVI), exiftool writing the tags phones write into them (a rotation, Apple's keys:
//!   make, model, creation date with its zone, location, content identifier), heif-enc
//!   (HEIC, AVIF).
//!
//! One `seekless index` run, one `exiftool` run. At least 99 % of the fields exiftool has
//! must agree; every difference must be a listed judgement call (docs/index.md), and a
//! listed one that agrees now must leave the list. Two rules are not differences but the
//! issue's definition of size, applied to exiftool's numbers before comparing: a video's
//! and a HEIF's size is the displayed one (exiftool's `ImageSize` turned by its
//! `Rotation`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::catalog::{
    Comparison, EXIF_COLUMNS, Ifd, Val, corpus, index_broken, query, reference_value, tiff_block,
};
use crate::common::*;
use crate::index_fields::{canonical_taken, reference_taken, same};

const EXIFTOOL: &str = "exiftool-12.57";
const EXIV2: &str = "exiv2-0.27.6";

/// The sample files used, from ExifTool's `t/images`.
const FROM_EXIFTOOL: &[&str] = &[
    "CanonRaw.cr2",
    "CanonRaw.cr3",
    "CanonRaw.crw",
    "DNG.dng",
    "Nikon.nef",
    "Panasonic.rw2",
    "FujiFilm.raf",
    "Minolta.mrw",
    "PhaseOne.iiq",
    "Sigma.x3f",
    "SigmaDP2.x3f",
    "QuickTime.heic",
    "QuickTime.mov",
    "Matroska.mkv",
    "RIFF.avi",
    "Pentax.avi",
    "JXL.jxl",
];

/// The sample files used, from Exiv2's `test/data`.
const FROM_EXIV2: &[&str] = &[
    "2021-02-13-1929.heic",
    "IMG_3578.heic",
    "Stonehenge.heic",
    "heic.heic",
    "avif.avif",
    "avif_exif_xmp.avif",
    "avif_metadata2.avif",
    "Reagan.jxl",
    "Canon-R6-pruned.CR3",
    "IMG_1361.dng",
    "exiv2-canon-powershot-s40.crw",
];

/// Where seekless is right and exiftool is not, or where the two answer different
/// questions: (file, field, why). docs/index.md explains each.
const JUDGEMENT_CALLS: &[(&str, &str, &str)] = &[
    // An iPhone HEIC held upright by `irot`: its size is the displayed one, so nothing is
    // left to turn; its EXIF Orientation (6) is informative only in a HEIF.
    (
        "2021-02-13-1929.heic",
        "orientation",
        "irot applied in the size: 1, not EXIF's 6",
    ),
    // Pentax's AVI says "2009/10/27 12:14:34"; exiftool's date pattern for it drops the
    // seconds.
    ("Pentax.avi", "taken", "the seconds the file states"),
    // An f-number of 0 is no aperture: no value, not 0.
    ("Pentax.avi", "f_number", "0 is no aperture"),
];

/// The kind each extension's files must have.
fn kind_of_extension(name: &str) -> &'static str {
    let ext = name.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "mp4" | "mov" | "m4v" | "3gp" | "mkv" | "webm" | "avi" => "video",
        "heic" | "avif" | "jxl" | "jpg" | "png" => "image",
        _ => "raw",
    }
}

/// ffmpeg's options for H.264 as cameras write it.
const H264: [&str; 4] = ["-c:v", "libx264", "-pix_fmt", "yuv420p"];

/// A 3-second clip of ffmpeg's test pattern of `size` at `out`, encoded with `args`.
fn clip(size: &str, args: &[&str], out: &Path) {
    run(Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg(format!("testsrc=size={size}:rate=10"))
        .args(["-t", "3"])
        .args(args)
        .arg(out));
}

/// A raw file's layout: (file name, magic, Make, Model, whether the raw image is IFD0
/// itself (else a SubIFD, after IFD0's JPEG preview), its width and height).
type RawLayout = (
    &'static str,
    &'static [u8; 4],
    &'static str,
    &'static str,
    bool,
    u32,
    u32,
);

/// The TIFF-based raw formats no sample of which could be fetched, laid out as their
/// cameras write them.
const LAID_OUT: &[RawLayout] = &[
    ("Sony.ARW", b"II*\0", "SONY", "ILCE-7M3", false, 6048, 4024),
    ("Sony.SR2", b"II*\0", "SONY", "DSC-R1", false, 3888, 2592),
    (
        "Nikon.NRW",
        b"II*\0",
        "NIKON CORPORATION",
        "COOLPIX P7800",
        false,
        4000,
        3000,
    ),
    (
        "Samsung.SRW",
        b"II*\0",
        "SAMSUNG",
        "NX300",
        false,
        5472,
        3648,
    ),
    (
        "Hasselblad.3FR",
        b"II*\0",
        "Hasselblad",
        "H6D-100c",
        false,
        11600,
        8700,
    ),
    (
        "Pentax.PEF",
        b"II*\0",
        "PENTAX Corporation",
        "PENTAX K-5",
        true,
        4928,
        3264,
    ),
    (
        "Olympus.ORF",
        b"IIRO",
        "OLYMPUS IMAGING CORP.",
        "E-M5",
        true,
        4640,
        3472,
    ),
];

/// A raw file laid out as `LAID_OUT` says, with `preview` (a JPEG) as its preview when the
/// raw image is in a SubIFD, and EXIF (date, exposure) as cameras write it. The raw data
/// itself is 16 bytes: no reader looks at it.
fn laid_out_raw(
    magic: &[u8; 4],
    make: &'static str,
    model: &'static str,
    raw_in_ifd0: bool,
    (width, height): (u32, u32),
    preview: &[u8],
) -> Vec<u8> {
    let exif = || Ifd {
        entries: vec![
            (0x829A, Val::Rational(1, 250)),
            (0x829D, Val::Rational(56, 10)),
            (0x8827, Val::Short(400)),
            (0x9003, Val::Ascii("2023:05:06 07:08:09")),
            (0x920A, Val::Rational(35, 1)),
        ],
        next: None,
    };
    let raw_entries = |strip: u32| {
        vec![
            (0x00FE, Val::Long(0)),
            (0x0100, Val::Long(width)),
            (0x0101, Val::Long(height)),
            (0x0102, Val::Short(14)),
            (0x0103, Val::Short(1)),
            (0x0106, Val::Short(32803)),
            (0x0111, Val::Long(strip)),
            (0x0115, Val::Short(1)),
            (0x0117, Val::Long(16)),
        ]
    };
    // Built twice: the offsets of the data after the structure are known the second time
    // (every value has a fixed size).
    let build = |jpeg_at: u32, strip: u32| {
        let mut common = vec![
            (0x010F, Val::Ascii(make)),
            (0x0110, Val::Ascii(model)),
            (0x0112, Val::Short(1)),
        ];
        let ifds = if raw_in_ifd0 {
            let mut ifd0 = raw_entries(strip);
            ifd0.append(&mut common);
            ifd0.push((0x8769, Val::Ifd(1)));
            ifd0.sort_by_key(|(tag, _)| *tag);
            vec![
                Ifd {
                    entries: ifd0,
                    next: None,
                },
                exif(),
            ]
        } else {
            let mut ifd0 = vec![
                (0x00FE, Val::Long(1)),
                (0x0100, Val::Short(320)),
                (0x0101, Val::Short(240)),
                (0x0103, Val::Short(6)),
                (0x014A, Val::Ifd(1)),
                (0x0201, Val::Long(jpeg_at)),
                (0x0202, Val::Long(preview.len() as u32)),
                (0x8769, Val::Ifd(2)),
            ];
            ifd0.append(&mut common);
            ifd0.sort_by_key(|(tag, _)| *tag);
            vec![
                Ifd {
                    entries: ifd0,
                    next: None,
                },
                Ifd {
                    entries: raw_entries(strip),
                    next: None,
                },
                exif(),
            ]
        };
        let mut out = tiff_block(&ifds);
        out[..4].copy_from_slice(magic);
        out
    };
    let size = build(0, 0).len() as u32;
    let (jpeg_at, strip) = if raw_in_ifd0 {
        (0, size)
    } else {
        (size, size + preview.len() as u32)
    };
    let mut out = build(jpeg_at, strip);
    if !raw_in_ifd0 {
        out.extend_from_slice(preview);
    }
    out.extend_from_slice(&[0; 16]);
    out
}

/// Makes the corpus's own files in `dir` with ffmpeg, exiftool and heif-enc.
pub(crate) fn make_files(dir: &Path) {
    // The raw formats laid out by hand, each with a 320×240 JPEG preview.
    let preview = dir.join("preview.jpg.in");
    run(Command::new("convert")
        .args(["wizard:", "-resize", "320x240!", "-quality", "85"])
        .arg(format!("jpeg:{}", preview.display())));
    let jpeg = std::fs::read(&preview).unwrap();
    std::fs::remove_file(&preview).unwrap();
    for &(name, magic, make, model, in_ifd0, w, h) in LAID_OUT {
        let raw = laid_out_raw(magic, make, model, in_ifd0, (w, h), &jpeg);
        std::fs::write(dir.join(name), raw).unwrap();
    }
    let ffmpeg = |size: &str, args: &[&str], out: &str| clip(size, args, &dir.join(out));
    let h264 = H264;
    ffmpeg(
        "320x240",
        &[
            &h264[..],
            &[
                "-metadata",
                "creation_time=2021-07-04T13:14:15Z",
                "-metadata",
                "location=+48.8584+002.2945+035.000/",
            ],
        ]
        .concat(),
        "plain.mp4",
    );
    ffmpeg("320x240", &h264, "rotated.mp4");
    ffmpeg(
        "320x240",
        &[
            &h264[..],
            &["-metadata", "make=Canon", "-metadata", "model=EOS R6"],
        ]
        .concat(),
        "camera.mov",
    );
    ffmpeg(
        "640x360",
        &[
            &h264[..],
            &[
                "-movflags",
                "use_metadata_tags",
                "-metadata",
                "com.apple.quicktime.content.identifier=1A2B3C4D-0000-4000-8000-0123456789AB",
            ],
        ]
        .concat(),
        "phone.mov",
    );
    ffmpeg("320x240", &h264, "clip.m4v");
    ffmpeg("176x144", &["-c:v", "h263"], "clip.3gp");
    ffmpeg(
        "320x240",
        &[
            &h264[..],
            &["-metadata", "creation_time=2020-01-02T03:04:05Z"],
        ]
        .concat(),
        "clip.mkv",
    );
    ffmpeg(
        "320x240",
        &["-c:v", "libvpx-vp9", "-b:v", "100k"],
        "clip.webm",
    );
    ffmpeg("320x240", &["-c:v", "mjpeg"], "clip.avi");
    // What phones write, by exiftool: a matrix turned 90°; Apple's keys.
    run(Command::new("exiftool")
        .args(["-q", "-overwrite_original", "-Rotation=90"])
        .arg(dir.join("rotated.mp4")));
    run(Command::new("exiftool")
        .args([
            "-q",
            "-overwrite_original",
            "-Rotation=270",
            "-Keys:Make=Apple",
            "-Keys:Model=iPhone 12",
            "-Keys:CreationDate=2021:07:04 13:14:15+02:00",
            "-Keys:GPSCoordinates=-33.8568, 151.2153, 12",
        ])
        .arg(dir.join("phone.mov")));
    // HEICs and AVIFs by libheif's encoder, from JPEGs with the EXIF phones write: a
    // northern and western place above the sea, a southern and eastern one below it (the
    // signs), a long exposure at high ISO, a portrait frame. (AVIF from RGB input hits an
    // assertion in Debian 12's libaom: a JPEG's 4:2:0 is what cameras give anyway.)
    let phone = [
        "-Make=Apple",
        "-Model=iPhone 12",
        "-LensModel=iPhone 12 back camera 4.2mm f/1.6",
        "-FocalLength=4.2",
        "-FNumber=1.6",
    ];
    let made: [(&str, &str, &[&str]); 4] = [
        (
            "made",
            "640x480",
            &[
                "-DateTimeOriginal=2022:03:04 05:06:07",
                "-OffsetTimeOriginal=+01:00",
                "-SubSecTimeOriginal=250",
                "-GPSLatitude=51.5",
                "-GPSLatitudeRef=N",
                "-GPSLongitude=0.12",
                "-GPSLongitudeRef=W",
                "-GPSAltitude=35.5",
                "-GPSAltitudeRef=0",
                "-ExposureTime=1/120",
                "-ISO=64",
            ],
        ),
        (
            "dead-sea",
            "640x480",
            &[
                "-DateTimeOriginal=2023:11:12 06:30:00",
                "-OffsetTimeOriginal=+02:00",
                "-GPSLatitude=31.5",
                "-GPSLatitudeRef=S",
                "-GPSLongitude=35.5",
                "-GPSLongitudeRef=E",
                "-GPSAltitude=430",
                "-GPSAltitudeRef=1",
                "-ExposureTime=1/2000",
                "-ISO=32",
            ],
        ),
        (
            "night",
            "800x600",
            &[
                "-DateTimeOriginal=2024:01:01 00:00:05",
                "-ExposureTime=2",
                "-ISO=3200",
            ],
        ),
        (
            "portrait",
            "480x640",
            &[
                "-DateTimeOriginal=2024:06:21 12:00:00",
                "-ExposureTime=1/60",
                "-ISO=100",
            ],
        ),
    ];
    for (name, size, exif) in made {
        let jpeg = dir.join(format!("{name}.jpg.in"));
        run(Command::new("convert")
            .args(["-size", size, "gradient:red-blue", "-quality", "90"])
            .arg(format!("jpeg:{}", jpeg.display())));
        run(Command::new("exiftool")
            .args(["-q", "-overwrite_original"])
            .args(phone)
            .args(exif)
            .arg(&jpeg));
        run(Command::new("heif-enc")
            .args(["-q", "50", "-o"])
            .arg(dir.join(format!("{name}.heic")))
            .arg(&jpeg));
        run(Command::new("heif-enc")
            .args(["-A", "-p", "chroma=444", "-q", "50", "-o"])
            .arg(dir.join(format!("{name}.avif")))
            .arg(&jpeg));
        std::fs::remove_file(&jpeg).unwrap();
    }
}

/// exiftool's `ImageSize` (`-n`: "W H"), turned by its `Rotation` for a video or a HEIF
/// (the catalog's size is the displayed one).
fn reference_dims(e: &Value, kind: &str) -> Value {
    let Some(size) = e["ImageSize"].as_str() else {
        return Value::Null;
    };
    let mut it = size.split([' ', 'x']).filter_map(|n| n.parse::<u64>().ok());
    let (Some(w), Some(h)) = (it.next(), it.next()) else {
        return Value::Null;
    };
    let heif = matches!(e["FileType"].as_str(), Some("HEIC" | "HEIF" | "AVIF"));
    let turned = (kind == "video" || heif) && matches!(e["Rotation"].as_i64(), Some(90 | 270));
    let (w, h) = if turned { (h, w) } else { (w, h) };
    Value::String(format!("{w}×{h}"))
}

/// `taken` as the catalog writes it, from what exiftool reads: EXIF's DateTimeOriginal
/// (with sub-seconds and offset) for images and raw files; for videos Apple's
/// `CreationDate` (local time with its zone), else the container's date: QuickTime's
/// `CreateDate` is UTC by its specification (exiftool prints it without a zone unless
/// asked: the catalog writes the `Z`), Matroska's `DateTimeOriginal` is UTC and printed
/// with its `Z`, AVI's is the camera's local time (no zone).
fn reference_video_taken(e: &Value) -> Option<String> {
    let iso = |d: &str| -> Option<String> {
        let b = d.as_bytes();
        if b.len() < 19 || !b[..4].iter().all(u8::is_ascii_digit) || d.starts_with("0000") {
            return None;
        }
        Some(format!(
            "{}-{}-{}T{}",
            &d[0..4],
            &d[5..7],
            &d[8..10],
            &d[11..]
        ))
    };
    if let Some(d) = e["CreationDate"].as_str().and_then(iso) {
        return canonical_taken(&d);
    }
    if let Some(d) = e["DateTimeOriginal"].as_str().and_then(iso) {
        return canonical_taken(&d);
    }
    let d = e["CreateDate"].as_str().and_then(iso)?;
    canonical_taken(&if d.len() == 19 { d + "Z" } else { d })
}

/// A duration as exiftool prints it with `-n`: seconds, or (a Matroska `DURATION` tag
/// that ffmpeg writes) `HH:MM:SS.fffffffff`.
fn seconds(v: &Value) -> Value {
    match v {
        Value::String(s) => {
            let parts: Vec<f64> = s.split(':').filter_map(|p| p.parse().ok()).collect();
            match parts[..] {
                [h, m, sec] => Value::from(h * 3600.0 + m * 60.0 + sec),
                _ => Value::Null,
            }
        }
        other => other.clone(),
    }
}

#[test]
fn media_fields_agree_with_exiftool() {
    let test = "media_fields_agree_with_exiftool";
    if !require_tools(
        test,
        &["exiftool", "ffmpeg", "heif-enc", "convert", "sqlite3"],
    ) {
        return;
    }
    let Some(exiftool_images) = corpus(test, EXIFTOOL, "Image-ExifTool-12.57/t/images") else {
        return;
    };
    let Some(exiv2_data) = corpus(test, EXIV2, "exiv2-0.27.6/test/data") else {
        return;
    };
    let scratch = scratch_dir(test);
    let dir = scratch.path().join("library");
    std::fs::create_dir(&dir).unwrap();
    for (from, names) in [(&exiftool_images, FROM_EXIFTOOL), (&exiv2_data, FROM_EXIV2)] {
        for name in names {
            std::fs::copy(from.join(name), dir.join(name)).unwrap();
        }
    }
    make_files(&dir);

    let db = scratch.path().join("catalog.db");
    index_broken(&db, &[dir.as_os_str()]);
    let rows = query(
        &db,
        "SELECT path, kind, format, width, height, taken, make, model, lens, orientation, \
         exposure_time, f_number, iso, focal_length, gps_lat, gps_lon, gps_alt, duration, \
         codec, rotation, content_id, error FROM images ORDER BY path",
    );
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(rows.len(), names.len(), "every file has a row: {rows:?}");
    let paths: Vec<&Path> = rows
        .iter()
        .map(|r| Path::new(r["path"].as_str().unwrap()))
        .collect();
    let exif = Command::new("exiftool")
        .args(["-json", "-n", "-q", "-q"])
        .args(&paths)
        .output()
        .expect("run exiftool");
    let exif: Vec<Value> = serde_json::from_slice(&exif.stdout).expect("exiftool -json");
    let exif: BTreeMap<&str, &Value> = exif
        .iter()
        .map(|e| (e["SourceFile"].as_str().unwrap(), e))
        .collect();

    let mut comparison = Comparison::default();
    let mut kinds = BTreeSet::new();
    let media = [
        ("duration", "Duration"),
        ("rotation", "Rotation"),
        ("content_id", "ContentIdentifier"),
    ];
    let fields: Vec<(&'static str, &str)> = EXIF_COLUMNS.into_iter().chain(media).collect();
    for row in &rows {
        let path = row["path"].as_str().unwrap();
        let name = Path::new(path).file_name().unwrap().to_str().unwrap();
        let kind = kind_of_extension(name);
        assert_eq!(row["kind"], kind, "{name}: {row}");
        kinds.insert((kind, row["format"].as_str().unwrap_or("?").to_string()));
        let e = exif.get(path).copied().unwrap_or(&Value::Null);
        let mut checks: Vec<(&str, Value, Value)> = Vec::new();
        let ours_dims = match (&row["width"], &row["height"]) {
            (Value::Number(w), Value::Number(h)) => Value::String(format!("{w}×{h}")),
            _ => Value::Null,
        };
        checks.push(("dims", ours_dims, reference_dims(e, kind)));
        let taken = if kind == "video" {
            reference_video_taken(e)
        } else {
            reference_taken(e)
        };
        checks.push((
            "taken",
            row["taken"].clone(),
            taken.map_or(Value::Null, Value::String),
        ));
        for &(col, tag) in &fields {
            // Rotation and duration are a video's (a CR3 is a QuickTime file whose movie
            // header says 1 s, of nothing).
            if matches!(col, "rotation" | "duration") && kind != "video" {
                continue;
            }
            // exiftool 12.57 names Apple's maker-note identifier `MediaGroupUUID`.
            let value = match &e[tag] {
                Value::Null if tag == "ContentIdentifier" => &e["MediaGroupUUID"],
                v => v,
            };
            let value = &if col == "duration" {
                seconds(value)
            } else {
                value.clone()
            };
            let text = matches!(col, "make" | "model" | "lens" | "content_id");
            checks.push((col, row[col].clone(), reference_value(value, text)));
        }
        for (field, ours, reference) in checks {
            // Positions to 1e-5° (a metre): QuickTime's `loci` box holds 16.16 fixed point,
            // which exiftool prints to 5 decimals.
            let near = matches!(field, "gps_lat" | "gps_lon")
                && matches!((ours.as_f64(), reference.as_f64()), (Some(a), Some(b)) if (a - b).abs() <= 1e-5);
            let agree = near || same(&ours, &reference);
            comparison.field(name, field, &ours, &reference, agree, &row["error"]);
        }
    }
    let share = comparison.print();
    comparison.assert_only(JUDGEMENT_CALLS);
    assert!(share >= 0.99, "only {:.2} % agree", 100.0 * share);
    // Every format the issue names is in the corpus, with its kind.
    for (kind, format) in [
        ("raw", "cr2"),
        ("raw", "cr3"),
        ("raw", "crw"),
        ("raw", "dng"),
        ("raw", "nef"),
        ("raw", "rw2"),
        ("raw", "raf"),
        ("raw", "mrw"),
        ("raw", "iiq"),
        ("raw", "x3f"),
        ("raw", "arw"),
        ("raw", "sr2"),
        ("raw", "nrw"),
        ("raw", "srw"),
        ("raw", "3fr"),
        ("raw", "pef"),
        ("raw", "orf"),
        ("image", "heif"),
        ("image", "avif"),
        ("image", "jxl"),
        ("video", "mp4"),
        ("video", "mov"),
        ("video", "m4v"),
        ("video", "3gp"),
        ("video", "mkv"),
        ("video", "webm"),
        ("video", "avi"),
    ] {
        assert!(
            kinds.contains(&(kind, format.to_string())),
            "no {kind} of format {format} in {kinds:?}"
        );
    }
    // Enough files carry each field for the comparison to mean something.
    for (field, least) in [
        ("dims", 40),
        ("taken", 20),
        ("make", 20),
        ("duration", 10),
        ("gps_lat", 4),
    ] {
        let compared = comparison.compared(field);
        assert!(compared >= least, "{field}: only {compared} files compared");
    }
}

/// A top-level ISO BMFF `free` box of `len` bytes (sparse: only its header is written).
fn free_box(file: &mut std::fs::File, len: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let at = file.seek(SeekFrom::End(0)).unwrap();
    file.write_all(&1u32.to_be_bytes()).unwrap();
    file.write_all(b"free").unwrap();
    file.write_all(&len.to_be_bytes()).unwrap();
    file.set_len(at + len).unwrap();
    file.seek(SeekFrom::End(0)).unwrap();
}

/// The offset of the first top-level box of type `kind` in `data`.
fn top_box(data: &[u8], kind: &[u8; 4]) -> usize {
    let mut at = 0;
    while at + 8 <= data.len() {
        let size = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        if &data[at + 4..at + 8] == kind {
            return at;
        }
        assert!(size >= 8, "a box of size {size} at {at}");
        at += size;
    }
    panic!("no {} box", String::from_utf8_lossy(kind));
}

/// Every kind gets its thumbnail and perceptual hash: a raw file's preview, oriented; a
/// HEIC by libheif, turned by its `irot` once (not again by its EXIF Orientation); a
/// video's frame by ffmpeg, turned by its matrix; its cover art when ffmpeg is missing;
/// and with neither ffmpeg nor libheif the recorded error says what to install. A 400 MiB
/// raw file and video are not held whole: the run's peak memory stays below their size.
#[test]
fn every_kind_gets_a_thumbnail_with_bounded_memory() {
    let test = "every_kind_gets_a_thumbnail_with_bounded_memory";
    if !require_tools(
        test,
        &["exiftool", "ffmpeg", "heif-enc", "convert", "sqlite3"],
    ) {
        return;
    }
    let Some(exiv2_data) = corpus(test, EXIV2, "exiv2-0.27.6/test/data") else {
        return;
    };
    let scratch = scratch_dir(test);
    let dir = scratch.path().join("library");
    std::fs::create_dir(&dir).unwrap();
    // A Canon R6's CR3 (its 1620×1080 preview in `PRVW`) and an iPhone XR's HEIC held
    // upright by `irot` (its EXIF Orientation says 6 too).
    for name in ["Canon-R6-pruned.CR3", "2021-02-13-1929.heic"] {
        std::fs::copy(exiv2_data.join(name), dir.join(name)).unwrap();
    }
    // A HEIC made from a JPEG (both catalogued: their pHashes must be close).
    run(Command::new("convert")
        .args(["wizard:", "-resize", "640x480!", "-quality", "92"])
        .arg(dir.join("wizard.jpg")));
    run(Command::new("heif-enc")
        .args(["-q", "90", "-o"])
        .arg(dir.join("wizard.heic"))
        .arg(dir.join("wizard.jpg")));
    // Videos: one turned 90° by its matrix; one with cover art.
    clip("320x240", &H264, &dir.join("turned.mp4"));
    // A clip whose only keyframe is its first: no keyframe a tenth in.
    clip(
        "320x240",
        &[&H264[..], &["-g", "1000"]].concat(),
        &dir.join("one-keyframe.mp4"),
    );
    run(Command::new("exiftool")
        .args(["-q", "-overwrite_original", "-Rotation=90"])
        .arg(dir.join("turned.mp4")));
    let cover = scratch.path().join("cover.jpg");
    run(Command::new("convert")
        .args(["logo:", "-resize", "300x200!"])
        .arg(&cover));
    run(Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i"])
        .args(["testsrc=size=320x240:rate=10", "-i"])
        .arg(&cover)
        // `-t` after the inputs: the clip's length (before them, it would be the cover's).
        .args(["-t", "3", "-map", "0", "-map", "1"])
        .args(["-c:v:0", "libx264", "-pix_fmt", "yuv420p"])
        .args(["-c:v:1", "copy", "-disposition:v:1", "attached_pic"])
        .arg(dir.join("covered.mp4")));

    let thumbs = |db: &Path, env: &[(&str, &str)]| -> BTreeMap<String, Value> {
        let mut cmd = seekless();
        cmd.args(["index", "--thumbs", "--db"]).arg(db).arg(&dir);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        query(
            db,
            "SELECT i.path, i.phash, t.width, t.height, t.thumb_source, t.error \
             FROM images i JOIN thumbs t ON t.image = i.id",
        )
        .into_iter()
        .map(|r| {
            let name = Path::new(r["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (name, r)
        })
        .collect()
    };
    let got = thumbs(&scratch.path().join("all.db"), &[]);
    let shape = |name: &str| {
        let r = &got[name];
        (
            r["width"].as_u64(),
            r["height"].as_u64(),
            r["thumb_source"].as_str().map(str::to_string),
            r["error"].as_str().map(str::to_string),
        )
    };
    let some = |w, h, s: &str| (Some(w), Some(h), Some(s.to_string()), None);
    assert_eq!(shape("Canon-R6-pruned.CR3"), some(256, 171, "preview"));
    assert_eq!(
        shape("2021-02-13-1929.heic"),
        some(192, 256, "heif-thumbnail"),
        "upright, turned once"
    );
    assert_eq!(shape("turned.mp4"), some(192, 256, "frame"));
    assert_eq!(shape("covered.mp4"), some(256, 192, "frame"));
    assert_eq!(shape("one-keyframe.mp4"), some(256, 192, "frame"));
    assert_eq!(shape("wizard.heic"), some(256, 192, "full"));
    let phash = |name: &str| got[name]["phash"].as_i64().unwrap() as u64;
    let distance = (phash("wizard.heic") ^ phash("wizard.jpg")).count_ones();
    assert!(distance <= 4, "HEIC and its JPEG are {distance} bits apart");
    for name in ["Canon-R6-pruned.CR3", "2021-02-13-1929.heic", "turned.mp4"] {
        assert!(got[name]["phash"].is_i64(), "{name}: no pHash");
    }

    // Without ffmpeg and libheif: the cover art, and errors that say what to install.
    let got = thumbs(
        &scratch.path().join("bare.db"),
        &[("SEEKLESS_FFMPEG", ""), ("SEEKLESS_LIBHEIF", "")],
    );
    let error = |name: &str| got[name]["error"].as_str().unwrap_or("").to_string();
    assert_eq!(got["covered.mp4"]["thumb_source"], "cover");
    assert!(
        error("turned.mp4").starts_with("no decoder for video: ffmpeg is not installed")
            && error("turned.mp4").contains("apt install ffmpeg"),
        "{}",
        error("turned.mp4")
    );
    for heif in ["wizard.heic", "2021-02-13-1929.heic"] {
        assert!(
            error(heif).starts_with("no decoder for heif: libheif is not installed")
                && error(heif).contains("apt install libheif1"),
            "{heif}: {}",
            error(heif)
        );
    }
    assert_eq!(got["Canon-R6-pruned.CR3"]["thumb_source"], "preview");

    // Memory: a 400 MiB raw file (the CR3, then a sparse `free` box) and a 400 MiB video
    // (a `free` box between its media data and its `moov`, which ends the file).
    let big = scratch.path().join("big");
    std::fs::create_dir(&big).unwrap();
    std::fs::copy(dir.join("Canon-R6-pruned.CR3"), big.join("big.CR3")).unwrap();
    let mut raw = std::fs::OpenOptions::new()
        .append(true)
        .open(big.join("big.CR3"))
        .unwrap();
    free_box(&mut raw, 400 << 20);
    // ffmpeg writes `moov` after the media data (exiftool, writing, moves it first).
    clip("320x240", &H264, &scratch.path().join("moov-last.mp4"));
    let video = std::fs::read(scratch.path().join("moov-last.mp4")).unwrap();
    let moov = top_box(&video, b"moov");
    assert!(moov > top_box(&video, b"mdat"), "ffmpeg put moov last");
    let mut out = std::fs::File::create(big.join("big.mp4")).unwrap();
    std::io::Write::write_all(&mut out, &video[..moov]).unwrap();
    free_box(&mut out, 400 << 20);
    std::io::Write::write_all(&mut out, &video[moov..]).unwrap();
    drop(out);
    let db = scratch.path().join("big.db");
    // The run's own high-water mark (VmHWM: not that of the test process it was spawned
    // from, which a child's `ru_maxrss` would include).
    let (out, peak_kib) = output_and_peak_memory(
        seekless()
            .args(["index", "--thumbs", "--db"])
            .arg(&db)
            .arg(&big),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let peak_mib = peak_kib >> 10;
    eprintln!("peak memory indexing two 400 MiB files: {peak_mib} MiB");
    assert!(peak_mib < 300, "peak memory {peak_mib} MiB");
    let rows = query(
        &db,
        "SELECT i.width, i.height, i.duration, t.thumb_source FROM images i \
         JOIN thumbs t ON t.image = i.id ORDER BY i.path",
    );
    assert_eq!(rows[0]["width"], 3408, "{rows:?}");
    assert_eq!(rows[0]["thumb_source"], "preview");
    assert_eq!(
        (rows[1]["width"].as_u64(), rows[1]["height"].as_u64()),
        (Some(320), Some(240))
    );
    assert_eq!(rows[1]["duration"].as_f64(), Some(3.0));
    assert_eq!(rows[1]["thumb_source"], "frame");
}

#[test]
fn sound_alone_is_audio_with_its_duration_and_codec_and_no_thumbnail() {
    let test = "sound_alone_is_audio_with_its_duration_and_codec_and_no_thumbnail";
    if !require_tools(test, &["ffmpeg", "sqlite3"]) {
        return;
    }
    let scratch = scratch_dir(test);
    let dir = scratch.path().join("library");
    std::fs::create_dir(&dir).unwrap();
    // Two seconds of a tone: AAC in an MP4 (a voice memo's form), FLAC in Matroska.
    for (name, codec) in [("memo.mp4", "aac"), ("song.mkv", "flac")] {
        run(Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i"])
            .arg("sine=frequency=440:duration=2")
            .args(["-c:a", codec])
            .arg(dir.join(name)));
    }
    let db = scratch.path().join("catalog.db");
    let out = seekless()
        .args(["index", "--thumbs", "--db"])
        .arg(&db)
        .arg(&dir)
        .output()
        .expect("run seekless index");
    assert_exit(&out, 0);
    let rows = query(
        &db,
        "SELECT substr(path, -8) AS name, kind, round(duration) AS secs, codec, width, error,
                (SELECT count(*) FROM thumbs WHERE image = images.id) AS thumbs
         FROM images ORDER BY path",
    );
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            serde_json::json!([
                r["name"],
                r["kind"],
                r["secs"],
                r["codec"],
                r["width"],
                r["error"],
                r["thumbs"]
            ])
        })
        .collect();
    assert_eq!(
        rows,
        [
            serde_json::json!(["memo.mp4", "audio", 2.0, "mp4a", null, null, 0]),
            serde_json::json!(["song.mkv", "audio", 2.0, "A_FLAC", null, null, 0]),
        ]
    );
}
