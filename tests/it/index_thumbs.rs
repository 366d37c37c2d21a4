//! `seekless index --thumbs` (docs/index.md, "Thumbnails and perceptual hashes") against
//! independent tools: images drawn by Python's Pillow, orientations as ImageMagick's
//! `convert -auto-orient -thumbnail` shows them, thumbnails read back by ImageMagick's
//! `identify`, perceptual hashes from Python's `imagehash.phash`, the catalog read only
//! through the `sqlite3` command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

/// ImageMagick 6's `convert` itself (a `convert` first on PATH may be something else).
const CONVERT: &str = "convert-im6.q16";

/// A Python 3 with Pillow (and, when `imagehash`, Python's `imagehash`), or `None` after a
/// [`skip`].
fn python(test: &str, imagehash: bool) -> Option<&'static str> {
    if !require_tools(test, &["sqlite3", "identify", CONVERT]) {
        return None;
    }
    if imagehash {
        // The reference perceptual hash: a Python module ci/test installs.
        if !in_group(test, "corpus") {
            return None;
        }
        python_with(test, &["PIL", "imagehash"])
    } else {
        python_with(test, &["PIL"])
    }
}

/// Draws images with Pillow. Each argument is `KIND:SEED:W:H:PATH[:EXTRA]`:
/// - `scene`: shapes on a gradient, different for every seed (saved as the path's format);
/// - `oriented`: an asymmetric picture (a bright block top-left, a gradient) saved as JPEG
///   with EXIF Orientation EXTRA;
/// - `requality`: the JPEG or PNG at EXTRA saved again as JPEG quality 60;
/// - `halved`: the image at EXTRA resized to half its size (Lanczos), saved as JPEG.
const DRAW: &str = r#"
import random, sys
from PIL import Image, ImageDraw
for spec in sys.argv[1:]:
    kind, seed, w, h, rest = spec.split(':', 4)
    path, _, extra = rest.partition(':')
    seed, w, h = int(seed), int(w), int(h)
    rng = random.Random(seed)
    if kind == 'scene':
        a = [rng.randrange(256) for _ in range(3)]
        b = [rng.randrange(256) for _ in range(3)]
        im = Image.new('RGB', (w, h))
        vertical = rng.random() < 0.5
        for i in range(h if vertical else w):
            t = i / ((h if vertical else w) - 1)
            c = tuple(int(a[k] + (b[k] - a[k]) * t) for k in range(3))
            box = (0, i, w, i) if vertical else (i, 0, i, h)
            ImageDraw.Draw(im).line(box, fill=c)
        d = ImageDraw.Draw(im)
        for _ in range(rng.randrange(4, 14)):
            x, y = rng.randrange(w), rng.randrange(h)
            s = rng.randrange(w // 10, w // 2)
            fill = tuple(rng.randrange(256) for _ in range(3))
            shape = rng.randrange(3)
            if shape == 0:
                d.ellipse((x - s // 2, y - s // 3, x + s // 2, y + s // 3), fill=fill)
            elif shape == 1:
                d.rectangle((x - s // 2, y - s // 4, x + s // 2, y + s // 4), fill=fill)
            else:
                d.polygon([(x, y - s // 2), (x + s // 2, y + s // 2), (x - s // 2, y + s // 3)], fill=fill)
        if path.endswith('.png'):
            im.save(path)
        else:
            im.save(path, 'JPEG', quality=92)
    elif kind == 'oriented':
        im = Image.new('RGB', (w, h), (40, 40, 200))
        d = ImageDraw.Draw(im)
        for x in range(w):
            d.line((x, h // 2, x, h), fill=(255 * x // w, 80, 40))
        d.rectangle((0, 0, w // 4, h // 3), fill=(250, 250, 250))
        exif = Image.Exif()
        exif[0x0112] = int(extra)
        im.save(path, 'JPEG', quality=92, exif=exif.tobytes())
    elif kind == 'requality':
        Image.open(extra).convert('RGB').save(path, 'JPEG', quality=60)
    elif kind == 'halved':
        im = Image.open(extra).convert('RGB')
        im.resize((im.width // 2, im.height // 2), Image.LANCZOS).save(path, 'JPEG', quality=92)
"#;

fn draw(python: &str, specs: &[String]) {
    for spec in specs {
        let path = spec.split(':').nth(4).unwrap();
        std::fs::create_dir_all(Path::new(path).parent().unwrap()).unwrap();
    }
    run(Command::new(python).args(["-c", DRAW]).args(specs));
}

fn index(db: &Path, args: &[&str], dir: &Path) -> Output {
    output_within(
        seekless()
            .args(["index", "--summary", "--db"])
            .arg(db)
            .args(args)
            .arg(dir),
        RUN_LIMIT,
    )
}

/// The counts of the run's closing line, by name (`seen`, `thumbnails made`, …).
fn counts(o: &Output) -> BTreeMap<String, u64> {
    let err = stderr(o);
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("seekless: index: "))
        .unwrap_or_else(|| panic!("no closing line in:\n{err}"));
    line.split(", ")
        .map(|part| {
            let (n, what) = part.split_once(' ').unwrap();
            (what.to_string(), n.parse().unwrap())
        })
        .collect()
}

/// The rows `sql` returns, through the `sqlite3` command line.
fn query(db: &Path, sql: &str) -> Vec<Value> {
    let o = run(Command::new("sqlite3").arg("-json").arg(db).arg(sql));
    let text = String::from_utf8(o.stdout).unwrap();
    if text.trim().is_empty() {
        return Vec::new();
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{sql}: {e}: {text}"))
}

/// Per image file name: the catalog's phash (as unsigned), thumbnail size, source, error,
/// the JPEG as hex, and the row's scan.
#[derive(Debug, Clone, PartialEq)]
struct Thumb {
    phash: Option<u64>,
    width: Option<u64>,
    height: Option<u64>,
    source: Option<String>,
    error: Option<String>,
    jpeg_hex: Option<String>,
    scan: u64,
}

fn thumbs(db: &Path) -> BTreeMap<String, Thumb> {
    query(
        db,
        "SELECT i.path, i.phash, i.scan, t.width, t.height, t.thumb_source, t.error,
                hex(t.jpeg) AS jpeg
         FROM images i LEFT JOIN thumbs t ON t.image = i.id",
    )
    .into_iter()
    .map(|r| {
        let name = Path::new(r["path"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let s = |k: &str| r[k].as_str().map(str::to_string);
        let thumb = Thumb {
            phash: r["phash"].as_i64().map(|h| h as u64),
            width: r["width"].as_u64(),
            height: r["height"].as_u64(),
            source: s("thumb_source"),
            error: s("error"),
            jpeg_hex: s("jpeg").filter(|h| !h.is_empty()),
            scan: r["scan"].as_u64().unwrap(),
        };
        (name, thumb)
    })
    .collect()
}

/// Writes each row's thumbnail to `out/NAME.jpg` with sqlite3's `writefile`.
fn export_thumbs(db: &Path, out: &Path) {
    std::fs::create_dir_all(out).unwrap();
    let rows = query(
        db,
        &format!(
            // rtrim(path, path without its slashes) is the path's directory.
            "SELECT writefile('{}/' || substr(i.path, length(rtrim(i.path, \
             replace(i.path, '/', ''))) + 1) || '.jpg', t.jpeg) AS n \
             FROM images i JOIN thumbs t ON t.image = i.id WHERE t.jpeg IS NOT NULL",
            out.display()
        ),
    );
    assert!(!rows.is_empty(), "no thumbnails in {}", db.display());
}

/// `identify`'s format, width and height of an image.
fn identify(path: &Path) -> (String, u64, u64) {
    let o = run(Command::new("identify")
        .args(["-format", "%m %w %h"])
        .arg(path));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut parts = text.split_whitespace();
    let fmt = parts.next().unwrap().to_string();
    let w = parts.next().unwrap().parse().unwrap();
    let h = parts.next().unwrap().parse().unwrap();
    (fmt, w, h)
}

/// Mean absolute difference of two images' 16×16 RGB downsamples (0 to 255), by Pillow.
fn mean_difference(python: &str, a: &Path, b: &Path) -> f64 {
    let script = "import sys\nfrom PIL import Image\n\
        s = [Image.open(p).convert('RGB').resize((16, 16), Image.BOX).tobytes() for p in sys.argv[1:3]]\n\
        print(sum(abs(x - y) for x, y in zip(*s)) / len(s[0]))";
    let o = run(Command::new(python).args(["-c", script]).arg(a).arg(b));
    String::from_utf8(o.stdout).unwrap().trim().parse().unwrap()
}

/// `imagehash.phash` of each image, as unsigned integers (its hex string's value).
fn imagehash(python: &str, paths: &[PathBuf]) -> Vec<u64> {
    let script = "import sys, imagehash\nfrom PIL import Image\n\
        for p in sys.argv[1:]: print(imagehash.phash(Image.open(p)))";
    let o = run(Command::new(python).args(["-c", script]).args(paths));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l.trim(), 16).unwrap())
        .collect()
}

fn distance(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[test]
fn the_eight_exif_orientations_give_thumbnails_as_imagemagick_shows_them() {
    let test = test_name!();
    let Some(python) = python(test, false) else {
        return;
    };
    let t = scratch!();
    let photos = t.path().join("photos");
    // 1100×733: a quarter-scale decode (275 px wide) resized to 256×171 (170.6 rounded
    // as ImageMagick rounds it).
    let specs: Vec<String> = (1..=8)
        .map(|o| format!("oriented:0:1100:733:{}/o{o}.jpg:{o}", photos.display()))
        .collect();
    draw(python, &specs);
    let db = t.path().join("c.db");
    let o = index(&db, &["--thumbs"], &photos);
    assert_exit(&o, 0);
    assert_eq!(counts(&o)["thumbnails made"], 8, "{}", stderr(&o));
    let rows = thumbs(&db);
    let ours = t.path().join("ours");
    export_thumbs(&db, &ours);
    let theirs = t.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    for o in 1..=8 {
        let name = format!("o{o}.jpg");
        let reference = theirs.join(&name);
        run(Command::new(CONVERT)
            .arg(photos.join(&name))
            .args(["-auto-orient", "-thumbnail", "256x256"])
            .arg(&reference));
        let (_, w, h) = identify(&reference);
        let row = &rows[&name];
        assert_eq!(
            (row.width, row.height),
            (Some(w), Some(h)),
            "orientation {o}: the catalog's thumbnail size against ImageMagick's"
        );
        assert_eq!(row.source.as_deref(), Some("dct-scaled"), "orientation {o}");
        // The stored JPEG itself: a JPEG ImageMagick reads, of that size.
        let file = ours.join(format!("{name}.jpg"));
        assert_eq!(
            identify(&file),
            ("JPEG".to_string(), w, h),
            "orientation {o}"
        );
        // Turned the right way: close to ImageMagick's, far from the other orientations'.
        let diff = mean_difference(python, &file, &reference);
        assert!(
            diff < 8.0,
            "orientation {o}: mean difference {diff} from ImageMagick's"
        );
    }
    // The check above could tell a wrong turn: orientations 6 and 8 differ that much.
    let apart = mean_difference(python, &theirs.join("o6.jpg"), &theirs.join("o8.jpg"));
    assert!(apart > 20.0, "6 and 8 differ by {apart} only");
}

/// Twelve scenes (JPEG and PNG, landscape and portrait), each also re-encoded at JPEG
/// quality 60 and halved.
fn scenes(python: &str, dir: &Path) -> Vec<PathBuf> {
    let mut specs = Vec::new();
    let mut derived = Vec::new();
    for seed in 0..12u32 {
        let (w, h) = if seed % 3 == 2 {
            (600, 800)
        } else {
            (1024, 768)
        };
        let ext = if seed % 4 == 1 { "png" } else { "jpg" };
        let base = dir.join(format!("s{seed}.{ext}"));
        specs.push(format!("scene:{seed}:{w}:{h}:{}", base.display()));
        derived.push(format!(
            "requality:0:0:0:{}/s{seed}-q60.jpg:{}",
            dir.display(),
            base.display()
        ));
        derived.push(format!(
            "halved:0:0:0:{}/s{seed}-half.jpg:{}",
            dir.display(),
            base.display()
        ));
    }
    draw(python, &specs);
    draw(python, &derived);
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    all.sort();
    all
}

#[test]
fn phash_agrees_with_imagehash_within_four_bits_on_every_image() {
    let test = test_name!();
    let Some(python) = python(test, true) else {
        return;
    };
    let t = scratch!();
    let photos = t.path().join("photos");
    let files = scenes(python, &photos);
    assert_eq!(files.len(), 36);
    let db = t.path().join("c.db");
    let o = index(&db, &["--thumbs"], &photos);
    assert_exit(&o, 0);
    let rows = thumbs(&db);
    let reference = imagehash(python, &files);
    let mut histogram = BTreeMap::new();
    for (file, theirs) in files.iter().zip(reference) {
        let name = file.file_name().unwrap().to_string_lossy();
        let ours = rows[name.as_ref()]
            .phash
            .unwrap_or_else(|| panic!("{name}: no phash"));
        let d = distance(ours, theirs);
        assert!(
            d <= 4,
            "{name}: ours {ours:016x}, imagehash {theirs:016x}: {d} bits apart"
        );
        *histogram.entry(d).or_insert(0) += 1;
    }
    eprintln!("{test}: Hamming distance to imagehash.phash → images: {histogram:?}");
    assert!(
        histogram.get(&0).copied().unwrap_or(0) * 2 > files.len(),
        "exact on most: {histogram:?}"
    );
}

#[test]
fn phash_survives_reencoding_and_halving_and_tells_unrelated_images_apart() {
    let test = test_name!();
    let Some(python) = python(test, false) else {
        return;
    };
    let t = scratch!();
    let photos = t.path().join("photos");
    scenes(python, &photos);
    let db = t.path().join("c.db");
    assert_exit(&index(&db, &["--thumbs"], &photos), 0);
    let rows = thumbs(&db);
    let hash = |name: &str| {
        rows[name]
            .phash
            .unwrap_or_else(|| panic!("{name}: no phash"))
    };
    let mut bases = Vec::new();
    for seed in 0..12 {
        let ext = if seed % 4 == 1 { "png" } else { "jpg" };
        let base = hash(&format!("s{seed}.{ext}"));
        for copy in ["q60", "half"] {
            let d = distance(base, hash(&format!("s{seed}-{copy}.jpg")));
            assert!(d <= 6, "scene {seed} and its {copy} copy: {d} bits apart");
        }
        bases.push((seed, base));
    }
    for (i, &(a, ha)) in bases.iter().enumerate() {
        for &(b, hb) in &bases[i + 1..] {
            let d = distance(ha, hb);
            assert!(d >= 20, "unrelated scenes {a} and {b}: only {d} bits apart");
        }
    }
}

#[test]
fn an_unchanged_image_keeps_its_thumbnail_and_a_changed_one_gets_a_new_one() {
    let test = test_name!();
    let Some(python) = python(test, false) else {
        return;
    };
    let t = scratch!();
    let photos = t.path().join("photos");
    let scene = |seed: u32, name: &str| format!("scene:{seed}:800:600:{}/{name}", photos.display());
    draw(
        python,
        &[scene(1, "a.jpg"), scene(2, "b.jpg"), scene(3, "c.png")],
    );
    let db = t.path().join("c.db");

    // Without --thumbs: no thumbnails, no hashes.
    assert_exit(&index(&db, &[], &photos), 0);
    assert!(
        thumbs(&db)
            .values()
            .all(|r| r.jpeg_hex.is_none() && r.phash.is_none())
    );

    // With --thumbs on that catalog: the unchanged images are read once for them.
    let o = index(&db, &["--thumbs"], &photos);
    assert_exit(&o, 0);
    let c = counts(&o);
    assert_eq!((c["unchanged"], c["thumbnails made"]), (3, 3), "{c:?}");
    let first = thumbs(&db);
    assert!(
        first
            .values()
            .all(|r| r.jpeg_hex.is_some() && r.phash.is_some())
    );

    // Again: nothing read, nothing rewritten.
    let o = index(&db, &["--thumbs"], &photos);
    assert_exit(&o, 0);
    assert_eq!(counts(&o)["thumbnails made"], 0);
    assert_eq!(thumbs(&db), first, "kept as they were");

    // b.jpg becomes another picture: its thumbnail and hash are made again, the others kept.
    draw(python, &[scene(9, "b.jpg")]);
    let o = index(&db, &["--thumbs"], &photos);
    assert_exit(&o, 0);
    let c = counts(&o);
    assert_eq!(
        (c["changed"], c["unchanged"], c["thumbnails made"]),
        (1, 2, 1),
        "{c:?}"
    );
    let second = thumbs(&db);
    for name in ["a.jpg", "c.png"] {
        assert_eq!(second[name], first[name], "{name} kept");
    }
    assert_ne!(
        second["b.jpg"].jpeg_hex, first["b.jpg"].jpeg_hex,
        "b.jpg's thumbnail"
    );
    assert!(
        distance(
            second["b.jpg"].phash.unwrap(),
            first["b.jpg"].phash.unwrap()
        ) >= 20
    );

    // Changed again, indexed without --thumbs: its stale thumbnail and hash go, the rest stay.
    draw(python, &[scene(10, "b.jpg")]);
    assert_exit(&index(&db, &[], &photos), 0);
    let third = thumbs(&db);
    assert_eq!(
        (third["b.jpg"].jpeg_hex.as_ref(), third["b.jpg"].phash),
        (None, None)
    );
    for name in ["a.jpg", "c.png"] {
        assert_eq!(third[name], first[name], "{name} kept");
    }
}

#[test]
fn an_image_over_max_megapixels_gets_a_recorded_error_instead_of_a_thumbnail() {
    let test = test_name!();
    let Some(python) = python(test, false) else {
        return;
    };
    let t = scratch!();
    let photos = t.path().join("photos");
    draw(
        python,
        &[
            format!("scene:1:1280:960:{}/big.jpg", photos.display()),
            format!("scene:2:1280:960:{}/big.png", photos.display()),
            format!("scene:3:800:600:{}/small.jpg", photos.display()),
        ],
    );
    let db = t.path().join("c.db");
    // 1280×960 is 1.2 megapixels; 800×600 is 0.48.
    let o = index(&db, &["--thumbs", "--max-megapixels", "1"], &photos);
    assert_exit(&o, 0);
    let rows = thumbs(&db);
    for name in ["big.jpg", "big.png"] {
        let row = &rows[name];
        assert_eq!((row.jpeg_hex.as_ref(), row.phash), (None, None), "{name}");
        let why = row.error.as_deref().unwrap_or_default();
        assert!(why.contains("--max-megapixels 1"), "{name}: {why:?}");
        assert!(
            stderr(&o).contains(&format!("{name}: no thumbnail:")),
            "{name} told: {}",
            stderr(&o)
        );
    }
    assert_eq!(rows["small.jpg"].width, Some(256));
}

#[test]
fn an_exif_thumbnail_large_enough_and_of_the_same_shape_is_used_instead_of_decoding() {
    let test = test_name!();
    let Some(python) = python(test, false) else {
        return;
    };
    if !require_tool(test, "exiftool") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    let small = t.path().join("small");
    draw(
        python,
        &[
            format!("scene:1:1280:960:{}/land.jpg", photos.display()),
            format!("scene:2:960:1280:{}/portrait.jpg", photos.display()),
            format!("scene:3:160:120:{}/t.jpg", small.display()),
        ],
    );
    // A 160×120 EXIF thumbnail in both: the landscape's shape, not the portrait's (as an
    // editor that turned the pixels and left the old thumbnail would leave it).
    run(Command::new("exiftool")
        .args(["-q", "-overwrite_original"])
        .arg(format!(
            "-ThumbnailImage<={}",
            small.join("t.jpg").display()
        ))
        .arg(photos.join("land.jpg"))
        .arg(photos.join("portrait.jpg")));
    let db = t.path().join("c.db");
    let o = index(&db, &["--thumbs", "--thumb-size", "128"], &photos);
    assert_exit(&o, 0);
    let rows = thumbs(&db);
    let land = &rows["land.jpg"];
    assert_eq!(land.source.as_deref(), Some("exif"));
    assert_eq!((land.width, land.height), (Some(128), Some(96)));
    let portrait = &rows["portrait.jpg"];
    assert_eq!(
        portrait.source.as_deref(),
        Some("dct-scaled"),
        "a thumbnail of another shape"
    );
    assert_eq!((portrait.width, portrait.height), (Some(96), Some(128)));
    // At 256 px the 160-px EXIF thumbnail is too small: decoded.
    let db = t.path().join("c256.db");
    assert_exit(&index(&db, &["--thumbs"], &photos), 0);
    assert_eq!(
        thumbs(&db)["land.jpg"].source.as_deref(),
        Some("dct-scaled")
    );
}

#[test]
fn pillows_test_images_each_get_a_thumbnail_or_a_recorded_error_and_no_panic_is_printed() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") {
        return;
    }
    let Some(images) = crate::index_fields::pillow_images(test) else {
        return;
    };
    let t = scratch!();
    let db = t.path().join("c.db");
    // Exit 1: some of these files are broken on purpose (their rows carry the error).
    let o = index(&db, &["--thumbs"], &images);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // Decoders that panic on hostile files (the tiff crate does on some) are caught, and
    // the panic is the thumbnail's error, not a backtrace on stderr.
    assert!(!err.contains("panicked"), "{err}");
    let rows = query(
        &db,
        "SELECT count(*) AS images, count(t.image) AS thumbs,
                sum(t.jpeg IS NOT NULL) AS jpegs, sum(t.error IS NOT NULL) AS errors,
                sum((t.jpeg IS NULL) = (t.error IS NULL)) AS neither_or_both,
                sum(t.jpeg IS NOT NULL AND i.phash IS NULL) AS unhashed
         FROM images i LEFT JOIN thumbs t ON t.image = i.id",
    );
    let n = |k: &str| rows[0][k].as_u64().unwrap();
    assert_eq!(n("images"), 718, "{rows:?}");
    assert_eq!(
        n("thumbs"),
        n("images"),
        "a thumbnail or its error for every image"
    );
    assert_eq!((n("neither_or_both"), n("unhashed")), (0, 0), "{rows:?}");
    assert_eq!(counts(&o)["thumbnails made"], n("jpegs"));
    // Today 643 of 718 (with libheif): the rest are features no decoder here has (CMYK
    // and fax-compressed TIFF, …) and files broken on purpose.
    assert!(n("jpegs") >= 600, "{rows:?}");
}

/// `--summary`'s phase lines (`seekless:   NAME   S s  what`), by name.
fn phase_times(o: &Output) -> BTreeMap<String, f64> {
    stderr(o)
        .lines()
        .filter_map(|l| l.strip_prefix("seekless:   "))
        .map(|l| {
            let (name, rest) = l.split_once("  ").unwrap();
            let secs = rest.split_whitespace().next().unwrap();
            (name.trim().to_string(), secs.parse().unwrap())
        })
        .collect()
}

#[test]
fn summary_says_where_the_time_went_by_phase_and_what_bound_the_run() {
    let test = test_name!();
    let Some(python) = python(test, false) else {
        return;
    };
    let t = scratch!();
    let photos = t.path().join("photos");
    let specs: Vec<String> = (0..6)
        .map(|i| format!("scene:{i}:1280:960:{}/{i}.jpg", photos.display()))
        .collect();
    draw(python, &specs);
    let phases = [
        "read wait",
        "read",
        "hash",
        "inspect",
        "decode",
        "resize",
        "encode",
        "phash",
        "insert",
    ];
    let verdict = |o: &Output| {
        let err = stderr(o);
        let bound = err.lines().any(|l| {
            l.starts_with("seekless: CPU-bound: ") || l.starts_with("seekless: disk-bound: ")
        });
        let writer = err.lines().any(|l| {
            l == "seekless: the writer never blocked a worker (0 of 6 rows waited for room in its queue)"
        });
        assert!(
            bound && writer,
            "a verdict and the writer's line in:\n{err}"
        );
    };

    // Without thumbnails: every phase has its line; those of thumbnails are zero.
    let db = t.path().join("c.db");
    let o = index(&db, &[], &photos);
    assert_exit(&o, 0);
    let times = phase_times(&o);
    assert_eq!(
        times.keys().collect::<std::collections::BTreeSet<_>>(),
        phases
            .iter()
            .map(|p| p.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .iter()
            .collect(),
        "{}",
        stderr(&o)
    );
    for p in ["decode", "resize", "encode", "phash"] {
        assert_eq!(times[p], 0.0, "{p} without --thumbs");
    }
    verdict(&o);

    // With them: decoding, resizing, encoding and hashing took time.
    let o = index(&db, &["--thumbs"], &photos);
    assert_exit(&o, 0);
    let times = phase_times(&o);
    assert_eq!(times.len(), phases.len(), "{}", stderr(&o));
    for p in ["decode", "resize", "phash"] {
        assert!(times[p] > 0.0, "{p} with --thumbs: {}", stderr(&o));
    }
    verdict(&o);
    assert_eq!(counts(&o)["thumbnails made"], 6);

    // Nothing to read: the lines are there, at zero, and say so.
    let o = index(&db, &["--thumbs"], &photos);
    assert_exit(&o, 0);
    assert!(
        phase_times(&o).values().all(|&s| s == 0.0),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("seekless: nothing was read\n"),
        "{}",
        stderr(&o)
    );
}

/// Writes the awkward and hostile images of issue 23.6 into the directory given, each
/// named for what it is, beside `scene.png` (the picture most are made from):
/// - `huge.jpg`: a baseline JPEG whose frame header claims 65,535 × 65,535;
/// - `cut-progressive.jpg`: a progressive JPEG cut at 40 % of its length;
/// - `cmyk.jpg`: CMYK (Adobe transform 0, as Pillow writes it);
/// - `palette-alpha.png`: 16 colours with transparent entries (a tRNS chunk);
/// - `animated.gif`: three frames, the first the scene;
/// - `bomb.png`: 30,000 × 30,000 1-bit grey, all zero: 110 KB that decode to 900 MP;
/// - `bomb-36mp.png`: the same at 6,000 × 6,000 (36 MP, under the default limit).
///
/// ImageMagick adds `ycck.jpg` (its CMYK JPEGs are YCCK) and `deep16.png` (16 bits a
/// channel).
const HOSTILE: &str = r#"
import random, struct, sys, zlib
from PIL import Image, ImageDraw
root = sys.argv[1]
rng = random.Random(7)
im = Image.new('RGB', (1024, 768), (200, 30, 30))
d = ImageDraw.Draw(im)
d.rectangle((0, 0, 512, 384), fill=(30, 200, 60))
d.ellipse((480, 300, 1000, 740), fill=(20, 40, 220))
im.save(root + '/scene.png')
noisy = Image.blend(im, Image.effect_noise(im.size, 60).convert('RGB'), 0.3)
im.save(root + '/base.jpg', quality=90)
b = bytearray(open(root + '/base.jpg', 'rb').read())
sof = b.index(b'\xff\xc0')
b[sof + 5:sof + 9] = b'\xff\xff\xff\xff'
open(root + '/huge.jpg', 'wb').write(b)
noisy.save(root + '/progressive.jpg', progressive=True, quality=90)
p = open(root + '/progressive.jpg', 'rb').read()
open(root + '/cut-progressive.jpg', 'wb').write(p[:len(p) * 2 // 5])
im.convert('CMYK').save(root + '/cmyk.jpg', quality=90)
rgba = im.convert('RGBA')
rgba.paste((0, 0, 0, 0), (0, 0, 512, 384))
rgba.quantize(16).save(root + '/palette-alpha.png')
frames = [im.convert('P')] + [Image.new('RGB', im.size, c).convert('P') for c in ((255, 255, 0), (0, 0, 0))]
frames[0].save(root + '/animated.gif', save_all=True, append_images=frames[1:], duration=100, loop=0)
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
for name, side in (('bomb.png', 30000), ('bomb-36mp.png', 6000)):
    c = zlib.compressobj(9)
    row = b'\0' * (1 + (side + 7) // 8)
    idat = b''.join(c.compress(row) for _ in range(side)) + c.flush()
    ihdr = struct.pack('>IIBBBBB', side, side, 1, 0, 0, 0, 0)
    open(root + '/' + name, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', idat) + chunk(b'IEND', b''))
"#;

/// Runs `index` under GNU time: its output, and its peak resident memory in bytes.
fn index_measured(db: &Path, args: &[&str], dir: &Path) -> (Output, u64) {
    let o = output_within(
        Command::new("/usr/bin/time")
            .args(["-f", "peak-rss-kib %M"])
            .arg(env!("CARGO_BIN_EXE_seekless"))
            .args(["index", "--summary", "--db"])
            .arg(db)
            .args(args)
            .arg(dir),
        RUN_LIMIT,
    );
    let err = stderr(&o);
    let kib: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("peak-rss-kib "))
        .unwrap_or_else(|| panic!("no peak in:\n{err}"))
        .trim()
        .parse()
        .unwrap();
    (o, kib * 1024)
}

#[test]
fn hostile_and_unusual_images_each_get_a_thumbnail_or_a_recorded_error_in_bounded_memory() {
    let test = test_name!();
    let Some(python) = python(test, false) else {
        return;
    };
    if !require_tool(test, "/usr/bin/time") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    std::fs::create_dir(&photos).unwrap();
    run(Command::new(python).args(["-c", HOSTILE]).arg(&photos));
    let scene = photos.join("scene.png");
    run(Command::new(CONVERT)
        .arg(&scene)
        .args(["-colorspace", "CMYK", "-quality", "90"])
        .arg(photos.join("ycck.jpg")));
    run(Command::new(CONVERT)
        .arg(&scene)
        .args(["-depth", "16"])
        .arg(format!("png48:{}", photos.join("deep16.png").display())));
    // What each really is (a generator that silently wrote something else proves nothing).
    let jpeg = |name: &str| std::fs::read(photos.join(name)).unwrap();
    let adobe_transform = |bytes: &[u8]| {
        // APP14: "Adobe", version (2 bytes), two flag words, the transform.
        let at = bytes.windows(5).position(|w| w == b"Adobe").unwrap();
        bytes[at + 11]
    };
    assert_eq!(adobe_transform(&jpeg("cmyk.jpg")), 0, "CMYK");
    assert_eq!(adobe_transform(&jpeg("ycck.jpg")), 2, "YCCK");
    let progressive = jpeg("cut-progressive.jpg");
    assert!(
        progressive.windows(2).any(|w| w == b"\xff\xc2"),
        "progressive"
    );
    assert_eq!(
        identify(&photos.join("deep16.png")),
        ("PNG".into(), 1024, 768)
    );

    let db = t.path().join("c.db");
    // Exit 1: the cut JPEG is an error of its row.
    let (o, peak) = index_measured(&db, &["--thumbs"], &photos);
    assert_exit(&o, 1);
    let rows = thumbs(&db);
    assert_eq!(rows.len(), 12, "{rows:?}");
    for (name, row) in &rows {
        assert!(
            row.jpeg_hex.is_some() != row.error.is_some(),
            "{name}: a thumbnail or an error, not both, not neither: {row:?}"
        );
    }
    // Refused before decoding, by what their headers claim.
    for (name, claim) in [("huge.jpg", "65535×65535"), ("bomb.png", "30000×30000")] {
        let why = rows[name].error.as_deref().unwrap_or_default();
        assert_eq!(
            why,
            format!("{claim} is over --max-megapixels 200: not decoded"),
            "{name}"
        );
    }
    let dims = query(
        &db,
        "SELECT path, width, height FROM images WHERE path LIKE '%huge.jpg'",
    );
    assert_eq!(
        (dims[0]["width"].as_u64(), dims[0]["height"].as_u64()),
        (Some(65535), Some(65535))
    );
    // The cut progressive JPEG: its row says it is cut; whatever the decoder made of it
    // (here an error) is recorded.
    let cut = query(
        &db,
        "SELECT error FROM images WHERE path LIKE '%cut-progressive.jpg'",
    );
    assert_eq!(cut[0]["error"], "truncated JPEG (no end-of-image marker)");
    // The rest get thumbnails that look as ImageMagick shows them (transparency over
    // white; the GIF's first frame).
    let out = t.path().join("thumbs");
    export_thumbs(&db, &out);
    for name in [
        "cmyk.jpg",
        "ycck.jpg",
        "deep16.png",
        "palette-alpha.png",
        "animated.gif",
        "progressive.jpg",
        "bomb-36mp.png",
    ] {
        let row = &rows[name];
        let want = if name.starts_with("bomb") {
            (256, 256)
        } else {
            (256, 192)
        };
        assert_eq!(
            (row.width, row.height),
            (Some(want.0), Some(want.1)),
            "{name}"
        );
        assert!(row.phash.is_some(), "{name}");
        let reference = t.path().join(format!("{name}.reference.png"));
        run(Command::new(CONVERT)
            .arg(format!("{}[0]", photos.join(name).display()))
            .args(["-colorspace", "sRGB", "-background", "white", "-flatten"])
            .args(["-thumbnail", "256x256"])
            .arg(&reference));
        let d = mean_difference(python, &out.join(format!("{name}.jpg")), &reference);
        assert!(d < 8.0, "{name}: mean difference {d} from ImageMagick's");
    }
    // Memory: nothing was decoded at the sizes claimed. The 36 MP bomb, decoded, costs its
    // 1 byte a pixel as decoded plus 4 (RGB, then its grey for the pHash): docs/index.md.
    let budget = (64 << 20) + 36_000_000 * 5;
    eprintln!("peak RSS {} MiB", peak >> 20);
    assert!(peak < budget, "peak RSS {peak} over {budget}");
}

/// `seekless::jobs::index::dc_jpeg` (the DC-only decoder `index --thumbs` tries first at
/// 1/8 scale) against `jpeg-decoder`'s own 1/8 decode of the same file: the mean and
/// largest absolute difference per channel, or `None` when either does not decode it.
fn dc_difference(data: &[u8]) -> Option<(f64, u8)> {
    let ours = seekless::jobs::index::dc_jpeg::decode(data)?;
    let mut d = jpeg_decoder::Decoder::new(data);
    d.read_info().ok()?;
    let (w, h) = d.scale(ours.width as u16, ours.height as u16).ok()?;
    let px = d.decode().ok()?;
    let theirs: Vec<u8> = match d.info()?.pixel_format {
        jpeg_decoder::PixelFormat::L8 => px.iter().flat_map(|&l| [l, l, l]).collect(),
        jpeg_decoder::PixelFormat::RGB24 => px,
        _ => return None,
    };
    assert_eq!((u32::from(w), u32::from(h)), (ours.width, ours.height));
    assert_eq!(ours.rgb.len(), theirs.len());
    let diffs = ours.rgb.iter().zip(&theirs).map(|(a, b)| a.abs_diff(*b));
    let sum: u64 = diffs.clone().map(u64::from).sum();
    Some((sum as f64 / theirs.len() as f64, diffs.max()?))
}

/// Saves the PNG at argv[1] as JPEGs in the directory argv[2], one per way of encoding.
const VARIANTS: &str = r#"
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert('RGB')
out = sys.argv[2]
im.save(out + '/444.jpg', quality=90, subsampling=0)
im.save(out + '/422.jpg', quality=90, subsampling=1)
im.save(out + '/420.jpg', quality=90, subsampling=2)
im.convert('L').save(out + '/gray.jpg', quality=90)
im.save(out + '/optimized.jpg', quality=75, optimize=True)
im.save(out + '/progressive.jpg', quality=90, progressive=True)
im.convert('L').save(out + '/gray-progressive.jpg', quality=90, progressive=True)
"#;

#[test]
fn the_dc_only_decoder_matches_jpeg_decoder_at_an_eighth_on_pillow_and_imagemagick_jpegs() {
    let test = test_name!();
    let Some(python) = python(test, false) else {
        return;
    };
    let t = scratch!();
    // An odd size: not a multiple of 8, nor of any MCU.
    let png = t.path().join("scene.png");
    draw(python, &[format!("scene:7:1003:757:{}", png.display())]);
    run(Command::new(python)
        .args(["-c", VARIANTS])
        .arg(&png)
        .arg(t.path()));
    for (name, args) in [
        (
            "im-1x2.jpg",
            &["-sampling-factor", "1x2", "-quality", "90"][..],
        ),
        ("im-2x2.jpg", &["-sampling-factor", "2x2", "-quality", "95"]),
        (
            "im-progressive.jpg",
            &["-interlace", "JPEG", "-sampling-factor", "2x1"],
        ),
        ("im-gray.jpg", &["-colorspace", "Gray", "-quality", "80"]),
    ] {
        run(Command::new(CONVERT)
            .arg(&png)
            .args(args)
            .arg(t.path().join(name)));
    }
    let mut checked = 0;
    for entry in std::fs::read_dir(t.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jpg") {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        let Some((mean, max)) = dc_difference(&data) else {
            panic!("{}: not decoded", path.display());
        };
        assert!(
            mean <= 1.5 && max <= 4,
            "{}: mean {mean:.3}, max {max}",
            path.display()
        );
        checked += 1;
        // Cut in the middle of its data: no image, and no panic.
        assert_eq!(
            seekless::jobs::index::dc_jpeg::decode(&data[..data.len() * 2 / 3]),
            None
        );
    }
    assert_eq!(checked, 11);
}

#[test]
fn the_dc_only_decoder_reads_pillows_test_jpegs_as_jpeg_decoder_does_or_declines() {
    let test = test_name!();
    let Some(images) = crate::index_fields::pillow_images(test) else {
        return;
    };
    let (mut jpegs, mut decoded) = (0, Vec::new());
    for entry in std::fs::read_dir(&images).unwrap() {
        let path = entry.unwrap().path();
        let Ok(data) = std::fs::read(&path) else {
            continue;
        };
        if !data.starts_with(&[0xff, 0xd8]) {
            continue;
        }
        jpegs += 1;
        // Never a panic, whatever the file; compared where both decode it.
        if let Some((mean, max)) = dc_difference(&data) {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(mean <= 2.0 && max <= 4, "{name}: mean {mean:.3}, max {max}");
            decoded.push(name);
        }
    }
    assert!(jpegs >= 60, "{jpegs} JPEGs");
    // Restart intervals from cameras and editors (one with a stray `FF 00` segment among
    // its headers, which libjpeg-based readers step over); a CMYK file and a cut one
    // declined.
    for name in [
        "flower2.jpg",
        "pil_sample_rgb.jpg",
        "fujifilm.mpo",
        "jpeg_ff00_header.jpg",
    ] {
        assert!(decoded.iter().any(|d| d == name), "{name}: {decoded:?}");
    }
    for name in ["pil_sample_cmyk.jpg", "truncated_jpeg.jpg"] {
        assert!(!decoded.iter().any(|d| d == name), "{name}");
    }
    eprintln!(
        "{} of {jpegs} JPEGs decoded by both: {decoded:?}",
        decoded.len()
    );
}
