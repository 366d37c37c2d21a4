//! Helpers of the `index*` test modules: the independent tools (exiftool, sqlite3, b3sum,
//! Pillow), images drawn by Pillow and EXIF made by hand, running `seekless index`, and
//! reading the catalog back through the `sqlite3` command line.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use super::*;

// ---------------------------------------------------------------------------------------
// Tools.

/// The independent tools every test here compares against. `None` (after a [`skip`])
/// when one is missing.
pub struct Tools {
    /// A Python 3 that has Pillow (Debian's `python3-pil`).
    pub python: &'static str,
}

pub fn tools(test: &str) -> Option<Tools> {
    for tool in ["exiftool", "sqlite3", "b3sum"] {
        if !require_tool(test, tool) {
            return None;
        }
    }
    let python = python_with(test, &["PIL"])?;
    Some(Tools { python })
}

// ---------------------------------------------------------------------------------------
// Images.

/// Writes each `KIND:W:H:SEED:PATH` argument as an image of noise (its own content per
/// seed). KIND is Pillow's format name, optionally with a variant: `JPEG+progressive`,
/// `WEBP+lossless`, or `JPEG+exif` (Make, Model and DateTimeOriginal written by Pillow,
/// for corpora too big to pass through exiftool file by file).
pub const PILLOW: &str = r#"
import random, sys
from PIL import Image
for spec in sys.argv[1:]:
    kind, w, h, seed, path = spec.split(':', 4)
    w, h, seed = int(w), int(h), int(seed)
    rng = random.Random(seed)
    im = Image.frombytes('RGB', (w, h), rng.randbytes(w * h * 3))
    fmt, _, variant = kind.partition('+')
    kw = {}
    if variant == 'progressive':
        kw['progressive'] = True
    elif variant == 'lossless':
        kw['lossless'] = True
    elif variant == 'exif':
        exif = Image.Exif()
        exif[0x010F] = 'Seekless Test'
        exif[0x0110] = 'Model %d' % (seed % 7)
        exif[0x8769] = {0x9003: '2020:01:%02d 12:%02d:%02d' % (seed % 28 + 1, seed % 60, seed * 7 % 60)}
        kw['exif'] = exif.tobytes()
    im.save(path, fmt, **kw)
"#;

/// One image for [`draw`] to write.
pub struct Picture {
    pub path: PathBuf,
    /// Pillow's format name, with an optional `+variant` (see [`PILLOW`]).
    pub kind: &'static str,
    pub width: u32,
    pub height: u32,
    pub seed: u64,
}

/// Writes the pictures with Pillow, creating their directories.
pub fn draw(tools: &Tools, pictures: &[Picture]) {
    let mut args = Vec::new();
    for p in pictures {
        std::fs::create_dir_all(p.path.parent().unwrap()).unwrap();
        let path = p.path.to_str().expect("pictures are drawn at UTF-8 paths");
        args.push(format!(
            "{}:{}:{}:{}:{path}",
            p.kind, p.width, p.height, p.seed
        ));
    }
    // Well under ARG_MAX even for a corpus of thousands; one interpreter for all.
    for chunk in args.chunks(2000) {
        run(Command::new(tools.python).args(["-c", PILLOW]).args(chunk));
    }
}

/// `n` small JPEGs with EXIF (Make, Model, DateTimeOriginal) under `dir`, 100 per
/// directory. Returns their paths.
pub fn jpeg_corpus(tools: &Tools, dir: &Path, n: usize, seed: u64) -> Vec<PathBuf> {
    let pictures: Vec<Picture> = (0..n)
        .map(|i| Picture {
            path: dir.join(format!("d{:02}/IMG_{i:05}.jpg", i / 100)),
            kind: "JPEG+exif",
            width: 16 + (i % 5) as u32 * 4,
            height: 12 + (i % 3) as u32 * 4,
            seed: seed * 100_000 + i as u64,
        })
        .collect();
    draw(tools, &pictures);
    pictures.into_iter().map(|p| p.path).collect()
}

/// Full EXIF field sets for exiftool, varied: both hemispheres, above and below sea
/// level, with and without sub-seconds and time offset, trailing spaces in a text field,
/// a long exposure, every orientation kind, and a set with only some fields.
pub const EXIF_SETS: [&[&str]; 4] = [
    &[
        "-EXIF:DateTimeOriginal=2021:07:04 13:14:15",
        "-EXIF:SubSecTimeOriginal=123",
        "-EXIF:OffsetTimeOriginal=-03:00",
        "-EXIF:Make=Canon",
        "-EXIF:Model=Canon EOS R5",
        "-EXIF:LensModel=RF24-105mm F4 L IS USM",
        "-EXIF:Orientation#=6",
        "-EXIF:ExposureTime=1/250",
        "-EXIF:FNumber=2.8",
        "-EXIF:ISO=400",
        "-EXIF:FocalLength=35",
        "-EXIF:GPSLatitude=33.8688",
        "-EXIF:GPSLatitudeRef=S",
        "-EXIF:GPSLongitude=151.2093",
        "-EXIF:GPSLongitudeRef=W",
        "-EXIF:GPSAltitude=12.5",
        "-EXIF:GPSAltitudeRef#=1",
    ],
    &[
        "-EXIF:DateTimeOriginal=2015:12:31 23:59:58",
        "-EXIF:Make=NIKON CORPORATION",
        "-EXIF:Model=NIKON D750   ",
        "-EXIF:LensModel=AF-S NIKKOR 85mm f/1.4G",
        "-EXIF:Orientation#=1",
        "-EXIF:ExposureTime=1/8000",
        "-EXIF:FNumber=1.4",
        "-EXIF:ISO=6400",
        "-EXIF:FocalLength=85",
        "-EXIF:GPSLatitude=48.858370",
        "-EXIF:GPSLatitudeRef=N",
        "-EXIF:GPSLongitude=2.294481",
        "-EXIF:GPSLongitudeRef=E",
        "-EXIF:GPSAltitude=330.25",
        "-EXIF:GPSAltitudeRef#=0",
    ],
    &[
        "-EXIF:DateTimeOriginal=2009:02:13 23:31:30",
        "-EXIF:SubSecTimeOriginal=987",
        "-EXIF:OffsetTimeOriginal=+05:30",
        "-EXIF:Make=FUJIFILM",
        "-EXIF:Model=X-T4",
        "-EXIF:LensModel=XF18mmF1.4 R LM WR",
        "-EXIF:Orientation#=8",
        "-EXIF:ExposureTime=30",
        "-EXIF:FNumber=16",
        "-EXIF:ISO=160",
        "-EXIF:FocalLength=18.5",
        "-EXIF:GPSLatitude=64.1466",
        "-EXIF:GPSLatitudeRef=N",
        "-EXIF:GPSLongitude=21.9426",
        "-EXIF:GPSLongitudeRef=W",
        "-EXIF:GPSAltitude=0",
        "-EXIF:GPSAltitudeRef#=0",
    ],
    &[
        "-EXIF:Make=Apple",
        "-EXIF:Model=iPhone 12 Pro",
        "-EXIF:Orientation#=3",
        "-EXIF:OffsetTimeOriginal=+01:00",
    ],
];

/// Writes EXIF with exiftool: each file gets its argument list (one exiftool process for
/// all, through an argument file with `-execute` between files).
pub fn write_exif(test: &str, edits: &[(&Path, &[&str])]) {
    let mut script = String::new();
    for (path, args) in edits {
        script += "-overwrite_original\n-q\n";
        for a in *args {
            script += a;
            script.push('\n');
        }
        script += path.to_str().expect("EXIF is written at UTF-8 paths");
        script += "\n-execute\n";
    }
    let file = scratch_file(test);
    std::fs::write(file.path(), script).unwrap();
    run(Command::new("exiftool").arg("-@").arg(file.path()));
}

/// `member` of the corpus `name` as `.ci/fetch-corpora` unpacks it (the test run itself
/// never uses the network), under `$SEEKLESS_CORPORA`, else `~/.cache/seekless-corpora`;
/// `None` after a [`skip`] when it is not there.
pub fn corpus(test: &str, name: &str, member: &str) -> Option<PathBuf> {
    if !in_group(test, "corpus") {
        return None;
    }
    let corpora = match std::env::var_os("SEEKLESS_CORPORA") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .unwrap_or_default()
            .join("seekless-corpora"),
    };
    let dir = corpora.join(member);
    let done = corpora.join(format!("{name}.unpacked"));
    if done.exists() && dir.is_dir() {
        return Some(dir);
    }
    let short = name.split('-').next().unwrap_or(name);
    skip(
        test,
        &format!("corpus:{short}"),
        &format!(
            "{} is missing: run .ci/fetch-corpora (SEEKLESS_CORPORA says where)",
            dir.display()
        ),
    );
    None
}

/// What exiftool reads from each file (`-json -n -G`), by path.
pub fn exiftool_json(files: &[&Path]) -> BTreeMap<PathBuf, Value> {
    let out = Command::new("exiftool")
        .args(["-json", "-n", "-G"])
        .args(files)
        .output()
        .unwrap();
    // exiftool exits 1 when it finds a file it cannot read (an empty one); the JSON is
    // still there for every file it could.
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "exiftool JSON: {e}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    list.into_iter()
        .map(|v| (PathBuf::from(v["SourceFile"].as_str().unwrap()), v))
        .collect()
}

/// The catalog's image fields as exiftool reads them from one file: NULL where exiftool
/// finds nothing. Text fields trimmed of trailing NULs and spaces, as the catalog keeps
/// them; the date in the catalog's form (`YYYY-MM-DDTHH:MM:SS[.fff][+HH:MM]`).
pub fn fields_by_exiftool(e: &Value) -> BTreeMap<&'static str, Value> {
    let mut f = BTreeMap::new();
    let (w, h) = match e["Composite:ImageSize"].as_str() {
        Some(size) => {
            let mut it = size.split([' ', 'x']).map(|n| n.parse::<i64>().unwrap());
            (json!(it.next()), json!(it.next()))
        }
        None => (Value::Null, Value::Null),
    };
    f.insert("width", w);
    f.insert("height", h);
    let taken = e
        .get("Composite:SubSecDateTimeOriginal")
        .or(e.get("EXIF:DateTimeOriginal"))
        .map(|d| {
            let d = d.as_str().unwrap();
            // "2021:07:04 13:14:15.123-03:00" → "2021-07-04T13:14:15.123-03:00"
            format!("{}-{}-{}T{}", &d[0..4], &d[5..7], &d[8..10], &d[11..])
        });
    f.insert("taken", json!(taken));
    for (col, tag) in [
        ("make", "EXIF:Make"),
        ("model", "EXIF:Model"),
        ("lens", "EXIF:LensModel"),
    ] {
        let text = e.get(tag).map(|v| match v {
            Value::String(s) => s.trim_end_matches([' ', '\0']).to_string(),
            other => other.to_string(),
        });
        f.insert(col, json!(text));
    }
    for (col, tag) in [
        ("orientation", "EXIF:Orientation"),
        ("exposure_time", "EXIF:ExposureTime"),
        ("f_number", "EXIF:FNumber"),
        ("iso", "EXIF:ISO"),
        ("focal_length", "EXIF:FocalLength"),
        ("gps_lat", "Composite:GPSLatitude"),
        ("gps_lon", "Composite:GPSLongitude"),
        ("gps_alt", "Composite:GPSAltitude"),
    ] {
        f.insert(col, e.get(tag).cloned().unwrap_or(Value::Null));
    }
    f
}

/// REAL columns are compared within 1e-6 relative; the rest exactly.
pub fn same_value(col: &str, got: &Value, want: &Value) -> bool {
    let real = matches!(
        col,
        "exposure_time" | "f_number" | "focal_length" | "gps_lat" | "gps_lon" | "gps_alt"
    );
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) if real => (g - w).abs() <= 1e-6 * w.abs().max(g.abs()),
        (Some(g), Some(w)) => g == w && got.is_number() == want.is_number(),
        _ => got == want,
    }
}

/// Every dimension and EXIF field of `row` is what exiftool reads from the file.
pub fn assert_fields_match_exiftool(row: &Value, exif: &Value) {
    let path = row["path"].as_str().unwrap_or("?");
    for (col, want) in fields_by_exiftool(exif) {
        assert!(
            same_value(col, &row[col], &want),
            "{path}: {col} is {} in the catalog, exiftool says {want}",
            row[col]
        );
    }
}

// ---------------------------------------------------------------------------------------
// Hand-made EXIF (for the broken cases no tool would write).

/// A value of an entry in a hand-made IFD.
pub enum Val {
    Ascii(&'static str),
    Short(u16),
    /// A LONG: also an offset pointing wherever the test wants.
    Long(u32),
    Undefined(Vec<u8>),
    /// A LONG holding the offset of the IFD with this index.
    Ifd(usize),
    /// A RATIONAL: numerator, denominator.
    Rational(u32, u32),
}

impl Val {
    /// TIFF type and count, and the value's bytes (little-endian).
    pub fn encode(&self, offsets: &[u32]) -> (u16, u32, Vec<u8>) {
        match self {
            Val::Ascii(s) => {
                let mut b = s.as_bytes().to_vec();
                b.push(0);
                (2, b.len() as u32, b)
            }
            Val::Short(v) => (3, 1, v.to_le_bytes().to_vec()),
            Val::Long(v) => (4, 1, v.to_le_bytes().to_vec()),
            Val::Undefined(b) => (7, b.len() as u32, b.clone()),
            Val::Ifd(i) => (4, 1, offsets[*i].to_le_bytes().to_vec()),
            Val::Rational(n, d) => (5, 1, [n.to_le_bytes(), d.to_le_bytes()].concat()),
        }
    }
}

/// One IFD: its entries (in tag order) and its next-IFD link (None: 0, the end).
pub struct Ifd {
    pub entries: Vec<(u16, Val)>,
    pub next: Option<Val>,
}

/// A little-endian TIFF structure ("II*\0"), IFD 0 first: each IFD followed by its
/// values that do not fit in an entry.
pub fn tiff_block(ifds: &[Ifd]) -> Vec<u8> {
    let mut offsets = Vec::new();
    let mut at = 8u32;
    for ifd in ifds {
        offsets.push(at);
        at += 2 + 12 * ifd.entries.len() as u32 + 4;
        for (_, v) in &ifd.entries {
            let (_, _, bytes) = v.encode(&[0; 16]);
            if bytes.len() > 4 {
                at += bytes.len().next_multiple_of(2) as u32;
            }
        }
    }
    let mut out = b"II*\0".to_vec();
    out.extend_from_slice(&8u32.to_le_bytes());
    for (ifd, &start) in ifds.iter().zip(&offsets) {
        let mut data_at = start + 2 + 12 * ifd.entries.len() as u32 + 4;
        let mut data = Vec::new();
        out.extend_from_slice(&(ifd.entries.len() as u16).to_le_bytes());
        for (tag, v) in &ifd.entries {
            let (typ, count, mut bytes) = v.encode(&offsets);
            out.extend_from_slice(&tag.to_le_bytes());
            out.extend_from_slice(&typ.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
            if bytes.len() <= 4 {
                bytes.resize(4, 0);
                out.extend_from_slice(&bytes);
            } else {
                out.extend_from_slice(&data_at.to_le_bytes());
                if bytes.len() % 2 == 1 {
                    bytes.push(0);
                }
                data_at += bytes.len() as u32;
                data.extend_from_slice(&bytes);
            }
        }
        let next = match &ifd.next {
            Some(v) => v.encode(&offsets).2,
            None => vec![0; 4],
        };
        out.extend_from_slice(&next);
        out.extend_from_slice(&data);
    }
    out
}

/// The JPEG with `tiff` inserted as its EXIF (an APP1 segment after SOI and JFIF's APP0).
pub fn with_exif_segment(jpeg: &[u8], tiff: &[u8]) -> Vec<u8> {
    assert_eq!(jpeg[..2], [0xFF, 0xD8], "not a JPEG");
    let mut at = 2;
    if jpeg[2..4] == [0xFF, 0xE0] {
        at = 4 + u16::from_be_bytes([jpeg[4], jpeg[5]]) as usize;
    }
    let mut payload = b"Exif\0\0".to_vec();
    payload.extend_from_slice(tiff);
    let mut out = jpeg[..at].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&(payload.len() as u16 + 2).to_be_bytes());
    out.extend_from_slice(&payload);
    out.extend_from_slice(&jpeg[at..]);
    out
}

/// The offset of the first JPEG marker `code` (0xFF, code) after SOI.
pub fn marker_at(jpeg: &[u8], code: u8) -> usize {
    jpeg.windows(2)
        .skip(2)
        .position(|w| w == [0xFF, code])
        .map(|p| p + 2)
        .unwrap_or_else(|| panic!("no marker FF{code:02X}"))
}

/// PNG's CRC-32 (ISO 3309), over a chunk's type and data.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

// ---------------------------------------------------------------------------------------
// Running seekless and reading the catalog.

/// `seekless index --db DB ARGS…`, bounded in time.
pub fn index(db: &Path, args: &[&OsStr]) -> Output {
    output_within(
        seekless().arg("index").arg("--db").arg(db).args(args),
        RUN_LIMIT,
    )
}

/// `seekless index --db DB ARGS…` over files some of which are broken on purpose (the
/// corpora), not bounded in time: it must end with 0 or 1 (a broken file is an error,
/// with its row), never anything else.
pub fn index_broken(db: &Path, args: &[&OsStr]) -> Output {
    let out = seekless()
        .arg("index")
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("run seekless index");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "index: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The sample folders of the three corpora: Pillow's `Tests/images`, ExifTool's
/// `t/images` and Exiv2's `test/data` (`None` after a skip when one is not there).
pub fn sample_corpora(test: &str) -> Option<[PathBuf; 3]> {
    Some([
        corpus(test, "pillow-13.0.0", "pillow-13.0.0/Tests/images")?,
        corpus(test, "exiftool-12.57", "Image-ExifTool-12.57/t/images")?,
        corpus(test, "exiv2-0.27.6", "exiv2-0.27.6/test/data")?,
    ])
}

/// The run exited with `code`, printed nothing on stdout and did not panic.
pub fn assert_exit(o: &Output, code: i32) {
    crate::common::assert_exit(o, code);
    assert!(
        o.stdout.is_empty(),
        "index prints nothing on stdout, printed {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// `--summary`'s closing line (`seekless: index: N seen, …`), the only one (the line
/// counting damaged files, `seekless: index: N damaged …`, follows it when there are).
pub fn closing_line(o: &Output) -> String {
    let err = stderr(o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("seekless: index: ") && l.contains(" seen, "))
        .collect();
    assert_eq!(lines.len(), 1, "one closing line expected in:\n{err}");
    lines[0].to_string()
}

/// The closing line's counts by name (`seen`, `added`, …).
pub fn closing_counts(o: &Output) -> BTreeMap<String, u64> {
    let line = closing_line(o);
    line["seekless: index: ".len()..]
        .split(", ")
        .map(|part| {
            let (n, name) = part
                .split_once(' ')
                .unwrap_or_else(|| panic!("{part:?} in {line:?}"));
            let n = n
                .parse()
                .unwrap_or_else(|e| panic!("{part:?} in {line:?}: {e}"));
            (name.to_string(), n)
        })
        .collect()
}

/// `--summary`'s read line (`seekless: read N files, …`), if the run printed one.
pub fn read_line(o: &Output) -> Option<String> {
    let err = stderr(o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| {
            l.strip_prefix("seekless: read ")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect();
    assert!(lines.len() <= 1, "more than one read line in:\n{err}");
    lines.first().map(|l| l.to_string())
}

/// The number of files the read line says were read.
pub fn files_read(o: &Output) -> Option<u64> {
    let line = read_line(o)?;
    let n = line["seekless: read ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok());
    Some(n.unwrap_or_else(|| panic!("no file count in {line:?}")))
}

/// `sqlite3 -json DB SQL`: the result rows (an empty list when there are none). A
/// database that does not exist is an error here (sqlite3 would create an empty one).
pub fn try_query(db: &Path, sql: &str, timeout_ms: u32) -> Result<Vec<Value>, String> {
    if !db.exists() {
        return Err(format!("{} does not exist", db.display()));
    }
    let out = Command::new("sqlite3")
        .args(["-batch", "-bail", "-json", "-cmd"])
        .arg(format!(".timeout {timeout_ms}"))
        .arg(db)
        .arg(sql)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run sqlite3: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !out.stderr.is_empty() {
        return Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stderr),
            out.status
        ));
    }
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))
}

pub fn query(db: &Path, sql: &str) -> Vec<Value> {
    try_query(db, sql, 5000).unwrap_or_else(|e| panic!("sqlite3 {} {sql:?}: {e}", db.display()))
}

/// The value of column `col` in the one row `sql` returns.
pub fn one(db: &Path, sql: &str, col: &str) -> Value {
    let rows = query(db, sql);
    assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
    rows[0][col].clone()
}

/// Every column of `images` but `id` and `scan` (which differ between equal catalogs
/// made by different runs), the key as hex.
pub const CATALOG_COLUMNS: &str = "path, hex(path_bytes) AS path_bytes, dev, ino, size, \
     mtime_ns, format, ext_mismatch, width, height, taken, make, model, lens, orientation, \
     exposure_time, f_number, iso, focal_length, gps_lat, gps_lon, gps_alt, blake3, error, \
     kind, duration, codec, rotation, content_id";

/// The catalog's rows (all columns but `id` and `scan`), in key order.
pub fn catalog(db: &Path) -> Vec<Value> {
    query(
        db,
        &format!("SELECT {CATALOG_COLUMNS} FROM images ORDER BY path_bytes"),
    )
}

/// The catalog's rows by path bytes (as hex, upper case, as SQLite's `hex()`).
pub fn rows_by_key(db: &Path) -> BTreeMap<String, Value> {
    catalog(db)
        .into_iter()
        .map(|r| (r["path_bytes"].as_str().unwrap().to_string(), r))
        .collect()
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

pub fn key(path: &Path) -> String {
    hex(path.as_os_str().as_bytes())
}

/// The row of `path`; fails naming the path when there is none.
pub fn row_of<'a>(rows: &'a BTreeMap<String, Value>, path: &Path) -> &'a Value {
    rows.get(&key(path))
        .unwrap_or_else(|| panic!("no row for {}", path.display()))
}

/// The two catalogs hold the same rows; on a difference, names the first one.
pub fn assert_same_catalog(got: &[Value], want: &[Value], what: &str) {
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g, w, "{what}: first differing row");
    }
    assert_eq!(got.len(), want.len(), "{what}: row counts differ");
}

/// The columns of the row that the file's metadata and content decide: path, key,
/// device, inode, size, modification time and content hash.
pub fn assert_file_columns(row: &Value, path: &Path) {
    let m = std::fs::metadata(path).unwrap();
    let shown = path.display().to_string();
    assert_eq!(row["path"], json!(shown), "path of {shown}");
    assert_eq!(row["path_bytes"], json!(key(path)), "path_bytes of {shown}");
    assert_eq!(row["dev"], json!(m.dev()), "dev of {shown}");
    assert_eq!(row["ino"], json!(m.ino()), "ino of {shown}");
    assert_eq!(row["size"], json!(m.size()), "size of {shown}");
    let mtime_ns = m.mtime() * 1_000_000_000 + m.mtime_nsec();
    assert_eq!(row["mtime_ns"], json!(mtime_ns), "mtime_ns of {shown}");
    assert_eq!(row["blake3"], json!(b3sum(path)), "blake3 of {shown}");
}

/// The time now as the catalog writes it, to the second (`date -u`).
pub fn utc_now() -> String {
    sh("date -u +%Y-%m-%dT%H:%M:%S").trim().to_string()
}

/// `started`/`ended` are ISO 8601 UTC (`2026-12-03T12:00:00[.123]Z`) within the interval.
pub fn assert_iso_between(v: &Value, after: &str, before: &str, what: &str) {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("{what} is {v}, not text"));
    let shape_ok = s.len() >= 20
        && s.ends_with('Z')
        && s.char_indices().take(19).all(|(i, c)| match i {
            4 | 7 => c == '-',
            10 => c == 'T',
            13 | 16 => c == ':',
            _ => c.is_ascii_digit(),
        })
        && (s.len() == 20 || s[19..s.len() - 1].starts_with('.'));
    assert!(shape_ok, "{what} {s:?} is not ISO 8601 UTC");
    assert!(
        after <= &s[..19] && &s[..19] <= before,
        "{what} {s} is not between {after} and {before}"
    );
}

// ---------------------------------------------------------------------------------------
// Freezing a run at a chosen moment.

/// Rows of `images` committed so far, as another connection sees them; None while the
/// database or its table does not exist yet, or readers are locked out.
pub fn committed_rows(db: &Path) -> Option<u64> {
    let rows = try_query(db, "SELECT count(*) AS n FROM images", 200).ok()?;
    rows.first()?["n"].as_u64()
}

/// Starts `seekless index --db DB --no-prefetch -j 1 PATH` (one file at a time: the
/// slowest way through, to have a middle to stop in), output discarded.
pub fn start_index(db: &Path, path: &Path) -> Running {
    // Transactions of 256 rows (4,096 by default): commits happen within the run,
    // whatever the machine's speed.
    let child = seekless()
        .env("SEEKLESS_INJECT_FAULTS", "1")
        .arg("index")
        .arg("--db")
        .arg(db)
        .args(["--no-prefetch", "-j", "1", "--batch-rows", "256"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Running(child)
}

/// Writes a tiny GIF (1×1, `seed` in its trailer so each file's content is its own) at each
/// path, creating directories.
pub fn gifs(paths: &[PathBuf]) {
    for (i, p) in paths.iter().enumerate() {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let mut bytes = b"GIF89a\x01\0\x01\0\0\0\0;".to_vec();
        bytes.extend_from_slice(format!("{i}").as_bytes());
        std::fs::write(p, bytes).unwrap();
    }
}

/// Checks a copy of the database as a kill left it (its WAL too), with sqlite3, leaving
/// the original for seekless to recover by itself: the copy passes `integrity_check` and
/// every row's scan exists. Returns the rows it holds (0 when it has no table yet).
pub fn check_killed(db: &Path, copy: &Path) -> u64 {
    std::fs::copy(db, copy).unwrap();
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    if wal.exists() {
        std::fs::copy(&wal, format!("{}-wal", copy.display())).unwrap();
    }
    assert_eq!(
        query(copy, "PRAGMA integrity_check"),
        vec![json!({"integrity_check": "ok"})],
        "integrity after kill -9"
    );
    let Ok(rows) = try_query(copy, "SELECT count(*) AS n FROM images", 5000) else {
        return 0;
    };
    assert_eq!(
        one(
            copy,
            "SELECT count(*) AS n FROM images WHERE scan NOT IN (SELECT id FROM scans)",
            "n"
        ),
        json!(0),
        "every row's scan exists"
    );
    rows[0]["n"].as_u64().unwrap()
}

/// A `sqlite3` shell that has read the catalog and stays open, holding its `-wal` and
/// `-shm` (and SQLite's locks on them) until dropped.
pub struct SqliteReader(std::process::Child);

impl SqliteReader {
    pub fn open(db: &Path) -> SqliteReader {
        use std::io::{BufRead, Write};
        let mut child = Command::new("sqlite3")
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.as_mut().unwrap();
        writeln!(stdin, "SELECT count(*) FROM images;").unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        SqliteReader(child)
    }
}

impl Drop for SqliteReader {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// `PRAGMA application_id` of a catalog: "SKLS" (docs/index.md).
pub const APPLICATION_ID: i64 = 0x534b_4c53;

// ---------------------------------------------------------------------------------------
// Comparing the catalog's fields with a reference's (exiftool, identify), file by file.

/// The reference's value of an exiftool tag as the catalog would store it: text that is
/// only NULs or spaces is no value; a number given as text is a number, except in the
/// text columns (`text`).
pub fn reference_value(v: &Value, text: bool) -> Value {
    match v {
        Value::String(s) if s.trim_end_matches(['\0', ' ']).trim().is_empty() => Value::Null,
        Value::String(s) if !text => s.trim().parse::<f64>().map_or(Value::Null, Value::from),
        v => v.clone(),
    }
}

/// Field-by-field agreement with a reference: how many files each field was compared on
/// and agreed on, and every difference, which must be one of the judgement calls.
#[derive(Default)]
pub struct Comparison {
    /// Per field: [compared, agreed].
    tally: BTreeMap<&'static str, [usize; 2]>,
    /// (file, field) of each difference, with its line for the report.
    differences: BTreeMap<(String, String), String>,
}

impl Comparison {
    /// Compares one field of one file (skipped when neither side has it); `agree` says
    /// whether `ours` and `reference` are the same value.
    pub fn field(
        &mut self,
        file: &str,
        field: &'static str,
        ours: &Value,
        reference: &Value,
        agree: bool,
        error: &Value,
    ) {
        if ours.is_null() && reference.is_null() {
            return;
        }
        let t = self.tally.entry(field).or_default();
        t[0] += 1;
        if agree {
            t[1] += 1;
        } else {
            self.differences.insert(
                (file.to_string(), field.to_string()),
                format!("{file}: {field}: catalog {ours}, reference {reference} (error: {error})"),
            );
        }
    }

    /// How many files `field` was compared on.
    pub fn compared(&self, field: &str) -> usize {
        self.tally.get(field).map_or(0, |t| t[0])
    }

    /// Prints the agreement per field and over all; returns the share of fields agreeing.
    pub fn print(&self) -> f64 {
        let (mut compared, mut agreed) = (0, 0);
        for (field, [c, a]) in &self.tally {
            eprintln!(
                "{field}: {a} of {c} files agree ({:.1} %)",
                100.0 * *a as f64 / *c as f64
            );
            compared += c;
            agreed += a;
        }
        let share = agreed as f64 / compared.max(1) as f64;
        eprintln!(
            "all fields: {agreed} of {compared} agree ({:.2} %)",
            100.0 * share
        );
        share
    }

    /// Every difference is one of `calls` (file, field, why), and every call is still a
    /// difference (a fixed one must leave the list, here and in docs/index.md).
    pub fn assert_only(&self, calls: &[(&str, &str, &str)]) {
        let listed: BTreeSet<(String, String)> = calls
            .iter()
            .map(|(f, field, _)| (f.to_string(), field.to_string()))
            .collect();
        let unlisted: Vec<&str> = self
            .differences
            .iter()
            .filter(|(d, _)| !listed.contains(*d))
            .map(|(_, line)| line.as_str())
            .collect();
        assert!(
            unlisted.is_empty(),
            "differences that are no listed judgement call:\n{}",
            unlisted.join("\n")
        );
        let stale: Vec<_> = listed
            .iter()
            .filter(|d| !self.differences.contains_key(*d))
            .collect();
        assert!(
            stale.is_empty(),
            "judgement calls that are no longer differences (remove them here and in docs/index.md): {stale:?}"
        );
    }
}

/// The catalog's EXIF columns and the exiftool tags (`-n`) they are compared with.
pub const EXIF_COLUMNS: [(&str, &str); 11] = [
    ("make", "Make"),
    ("model", "Model"),
    ("lens", "LensModel"),
    ("orientation", "Orientation"),
    ("exposure_time", "ExposureTime"),
    ("f_number", "FNumber"),
    ("iso", "ISO"),
    ("focal_length", "FocalLength"),
    ("gps_lat", "GPSLatitude"),
    ("gps_lon", "GPSLongitude"),
    ("gps_alt", "GPSAltitude"),
];
