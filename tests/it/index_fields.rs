//! The catalog's fields against exiftool's and ImageMagick's reading of the same files, on
//! Pillow's own test images (its sdist's `Tests/images`: hostile, truncated and odd files
//! in every format the catalog knows). One `seekless index` run, one `exiftool` run and
//! a few batched `identify` runs; every difference must be one of the judgement calls
//! listed below (docs/index.md, "Judgement calls"), and every judgement call must still be
//! a difference (a fixed one leaves the list).
//!
//! The sdist is fetched before the tests, by `.ci/fetch-corpora` (pinned version from PyPI,
//! checked by SHA-256), into `$SEEKLESS_CORPORA`, else `~/.cache/seekless-corpora`. Without
//! it the test fails, unless the skip is allowed (`SEEKLESS_ALLOW_SKIP=corpus:pillow`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::catalog::{Comparison, EXIF_COLUMNS, corpus, index_broken, reference_value};
use crate::common::*;

/// The directory `.ci/fetch-corpora` unpacks (its version, URL and SHA-256 are pinned there).
const PILLOW: &str = "pillow-13.0.0";

/// Where seekless is right and the reference is not, or where the two answer different
/// questions: (file under `Tests/images`, field, why). docs/index.md explains each kind.
const JUDGEMENT_CALLS: &[(&str, &str, &str)] = &[
    // Dimensions no image can have: the row has an error and no dimensions; exiftool
    // (identify cannot read these) prints the header's numbers.
    (
        "bmp/b/badwidth.bmp",
        "dims",
        "width -127: an error, not 4294967169",
    ),
    ("zero_width.gif", "dims", "width 0: an error, not a number"),
    // An IFD0 that claims more entries than fit in the file: the catalog keeps the
    // entries inside it (with the damage as the row's error); exiftool and identify
    // give up on the whole directory.
    (
        "oom-225817ca0f8c663be7ab4b9e717b02c661e66834.tif",
        "dims",
        "entries before the cut are kept",
    ),
    // GIF: the catalog's size is the logical screen (the canvas every frame is drawn on,
    // as exiftool reports it); identify's %w %h is the first frame's own rectangle.
    (
        "dispose_bgnd_transparency.gif",
        "dims",
        "canvas, not first frame",
    ),
    (
        "first_frame_transparency.gif",
        "dims",
        "canvas, not first frame",
    ),
    // A latitude of 4294967295° is no place: the catalog stores none.
    ("exif_gps.jpg", "gps_lat", "out of range"),
    (
        "hopper_bad_exif.jpg",
        "orientation",
        "entries before the cut are kept",
    ),
    // A byte that is not UTF-8: the catalog shows U+FFFD, exiftool's JSON a '?'.
    ("pport_g4.tif", "make", "not UTF-8"),
    // Values exiftool takes from places other than EXIF and XMP: maker notes.
    ("flower.jpg", "iso", "Canon maker note, not EXIF"),
    ("flower.webp", "iso", "Canon maker note, not EXIF"),
];

/// The pinned Pillow sdist's `Tests/images`, as `.ci/fetch-corpora` unpacks it (the test
/// run itself never uses the network); `None` after a [`skip`] when it is not there.
pub(crate) fn pillow_images(test: &str) -> Option<PathBuf> {
    corpus(test, PILLOW, &format!("{PILLOW}/Tests/images"))
}

/// ImageMagick's first-frame dimensions of every file it can read. IM 6's TIFF reader
/// silently loses the TIFF files after one that fails in the same process, so the files
/// without an answer and without an error of their own go through again, until none is
/// left (a round per failing file at most; a handful here).
fn identify_dims(files: &[String]) -> BTreeMap<String, (u64, u64)> {
    let mut dims = BTreeMap::new();
    let mut pending: Vec<&String> = files.iter().collect();
    let mut failed = BTreeSet::new();
    for _round in 0..50 {
        if pending.is_empty() {
            break;
        }
        let out = Command::new("identify")
            .args(["-format", "%w %h %i\\n"])
            .args(pending.iter().map(|f| format!("{f}[0]")))
            .output()
            .expect("run identify");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut parts = line.splitn(3, ' ');
            let (Some(w), Some(h), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            if let (Ok(w), Ok(h)) = (w.parse(), h.parse()) {
                dims.entry(path.to_string()).or_insert((w, h));
            }
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        for f in &pending {
            if stderr.contains(&format!("`{f}'")) && !dims.contains_key(*f) {
                failed.insert((*f).clone());
            }
        }
        // The first file without an answer failed itself (its message may name it by
        // its base name only): files before it were answered, so nothing poisoned it.
        if let Some(first) = pending.iter().find(|f| !dims.contains_key(**f)) {
            failed.insert((*first).clone());
        }
        pending.retain(|f| !dims.contains_key(*f) && !failed.contains(*f));
    }
    dims
}

/// `taken` as the catalog writes it, from exiftool's DateTimeOriginal (EXIF's, or XMP's
/// with its offset) and the EXIF sub-seconds and offset.
pub(crate) fn reference_taken(e: &Value) -> Option<String> {
    let d = e["DateTimeOriginal"].as_str()?;
    let b = d.as_bytes();
    if b.len() < 19 || !b[..4].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut out = format!("{}-{}-{}T{}", &d[0..4], &d[5..7], &d[8..10], &d[11..19]);
    let sub = match &e["SubSecTimeOriginal"] {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.trim().to_string()),
        _ => None,
    };
    if let Some(sub) = sub.filter(|s| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())) {
        out.push('.');
        out.push_str(&sub);
    }
    let offset = e["OffsetTimeOriginal"]
        .as_str()
        .map(str::to_string)
        .or_else(|| (d.len() == 25).then(|| d[19..].to_string()));
    if let Some(o) = offset.filter(|o| o.len() == 6 && (o.starts_with('+') || o.starts_with('-'))) {
        out.push_str(&o);
    }
    canonical_taken(&out)
}

/// An ISO 8601 date and time in the one form docs/index.md gives `taken`
/// (`YYYY-MM-DDTHH:MM:SS[.mmm][±HH:MM]`: three digits of milliseconds when there is a
/// fraction, UTC as `+00:00`), or none when it is no date (a zero date, month 13, 30
/// February): the test's own reading, to compare the catalog's with.
pub(crate) fn canonical_taken(s: &str) -> Option<String> {
    let (date, rest) = (s.get(..19)?, &s[19..]);
    let n = |r: std::ops::Range<usize>| date.get(r)?.parse::<u32>().ok();
    let (y, mo, d, h, mi, sec) = (
        n(0..4)?,
        n(5..7)?,
        n(8..10)?,
        n(11..13)?,
        n(14..16)?,
        n(17..19)?,
    );
    let leap = y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400));
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if y == 0
        || !(1..=12).contains(&mo)
        || d == 0
        || d > days[mo as usize - 1]
        || h > 23
        || mi > 59
        || sec > 60
    {
        return None;
    }
    let mut out = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}");
    let mut rest = rest;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits: String = frac.chars().take_while(char::is_ascii_digit).collect();
        rest = &frac[digits.len()..];
        if !digits.is_empty() {
            out.push('.');
            out.extend(digits.chars().chain("00".chars()).take(3));
        }
    }
    match rest {
        "" => {}
        "Z" => out.push_str("+00:00"),
        z if z.len() == 6 => out.push_str(z),
        z if z.len() == 5 => out.push_str(&format!("{}:{}", &z[..3], &z[3..])),
        _ => return None,
    }
    Some(out)
}

pub(crate) fn same(ours: &Value, reference: &Value) -> bool {
    match (ours, reference) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            (a - b).abs() <= 1e-6 * b.abs().max(1.0)
        }
        (Value::String(a), Value::String(b)) => a.trim() == b.trim(),
        (Value::String(a), Value::Number(b)) => a.trim() == b.to_string(),
        (a, b) => a == b,
    }
}

#[test]
fn catalog_fields_agree_with_exiftool_and_identify_on_pillows_test_images() {
    let test = "catalog_fields_agree_with_exiftool_and_identify_on_pillows_test_images";
    if !require_tools(test, &["exiftool", "identify", "sqlite3"]) {
        return;
    }
    let Some(images) = pillow_images(test) else {
        return;
    };
    let scratch = scratch_dir(test);
    let db = scratch.path().join("catalog.db");
    // Some of these files are broken: exit 1, with their rows.
    let out = index_broken(&db, &[images.as_os_str()]);
    let sql = "SELECT path, width, height, taken, make, model, lens, orientation, \
               exposure_time, f_number, iso, focal_length, gps_lat, gps_lon, gps_alt, error \
               FROM images ORDER BY path";
    let rows: Vec<Value> =
        serde_json::from_slice(&run(Command::new("sqlite3").arg("-json").arg(&db).arg(sql)).stdout)
            .expect("sqlite3 -json");
    assert!(rows.len() > 700, "only {} rows", rows.len());
    let files: Vec<String> = rows
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect();

    let list = scratch.path().join("files");
    std::fs::write(&list, files.join("\n") + "\n").unwrap();
    let exif = Command::new("exiftool")
        .args(["-json", "-n", "-q", "-q", "-@"])
        .arg(&list)
        .output()
        .expect("run exiftool");
    let exif: Vec<Value> = serde_json::from_slice(&exif.stdout).expect("exiftool -json");
    let exif: BTreeMap<&str, &Value> = exif
        .iter()
        .map(|e| (e["SourceFile"].as_str().unwrap(), e))
        .collect();
    let dims = identify_dims(&files);

    let prefix = format!("{}/", images.display());
    let by_name: BTreeMap<&str, &Value> = rows
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().strip_prefix(&prefix).unwrap(),
                r,
            )
        })
        .collect();
    let mut comparison = Comparison::default();
    let fields = EXIF_COLUMNS;
    for (name, row) in &by_name {
        let path = row["path"].as_str().unwrap();
        let e = exif.get(path).copied().unwrap_or(&Value::Null);
        let mut checks: Vec<(&'static str, Value, Value)> = Vec::new();
        let ours_dims = match (&row["width"], &row["height"]) {
            (Value::Number(w), Value::Number(h)) => Value::String(format!("{w}×{h}")),
            _ => Value::Null,
        };
        // identify's reading where it can decode the file, else exiftool's (which
        // reads headers only: a file damaged past its header still has dimensions).
        let ref_dims = match (dims.get(path), &e["ImageWidth"], &e["ImageHeight"]) {
            (Some((w, h)), _, _) => Value::String(format!("{w}×{h}")),
            (None, Value::Number(w), Value::Number(h)) => Value::String(format!("{w}×{h}")),
            _ => Value::Null,
        };
        checks.push(("dims", ours_dims, ref_dims));
        checks.push((
            "taken",
            row["taken"].clone(),
            reference_taken(e).map_or(Value::Null, Value::String),
        ));
        for (col, tag) in fields {
            let text = matches!(col, "make" | "model" | "lens");
            checks.push((col, row[col].clone(), reference_value(&e[tag], text)));
        }
        for (field, ours, reference) in checks {
            let agree = same(&ours, &reference);
            comparison.field(name, field, &ours, &reference, agree, &row["error"]);
        }
    }
    comparison.print();
    comparison.assert_only(JUDGEMENT_CALLS);
    // Enough files carry each field for the comparison to mean something.
    for (field, least) in [
        ("dims", 690),
        ("orientation", 100),
        ("taken", 10),
        ("make", 10),
    ] {
        let compared = comparison.compared(field);
        assert!(compared >= least, "{field}: only {compared} files compared");
    }

    // The known cases of issue 21, by name: what the row says besides the fields.
    let error = |name: &str| by_name[name]["error"].as_str().map(str::to_string);
    for junk in [
        "junk_jpeg_header.jpg",
        "photoshop-200dpi-broken.jpg",
        "truncated_app14.jpg",
    ] {
        assert_eq!(
            error(junk),
            None,
            "{junk}: junk between segments is a warning"
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.lines()
                .any(|l| l.contains(&format!("/{junk}: ")) && l.contains("junk")),
            "{junk}: the warning is printed:\n{said}"
        );
    }
    for broken in [
        "bmp/b/shortfile.bmp",
        "bmp/b/badwidth.bmp",
        "broken.png",
        "zero_width.gif",
    ] {
        assert!(error(broken).is_some(), "{broken}: no error");
    }
    for no_dims in ["bmp/b/badwidth.bmp", "broken.png", "zero_width.gif"] {
        assert!(
            by_name[no_dims]["width"].is_null() && by_name[no_dims]["height"].is_null(),
            "{no_dims}: impossible dimensions stored: {}",
            by_name[no_dims]
        );
    }
    assert_eq!(
        error("tRNS_null_1x1.png"),
        None,
        "bytes after IEND are no error"
    );
    assert_eq!(by_name["hopper_bigtiff.tif"]["width"], 128);
}
