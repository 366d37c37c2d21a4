//! `seekless index` (docs/index.md) against independent tools, on real filesystems:
//! images written by Python's Pillow, EXIF written and read back by `exiftool`, content
//! hashes by `b3sum`, and the catalog read back only through the `sqlite3` command line,
//! as any user would query it.
//!
//! Runs that must be caught in the middle (a `kill -9`, a second writer) are frozen with
//! SIGSTOP between short slices of running, so the moment is chosen by what the database
//! already holds, not by a race against the clock.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::catalog::assert_exit;
use crate::common::catalog::*;
use crate::common::*;

// ---------------------------------------------------------------------------------------
// 1. Every field, against exiftool and b3sum.

/// Writes images of every format Pillow writes, EXIF where exiftool can put it (JPEG,
/// TIFF, PNG's eXIf chunk, WebP's EXIF chunk; GIF and BMP hold none), indexes `dir` and
/// compares every row with exiftool, b3sum and the file's metadata.
fn catalog_matches_exiftool_and_b3sum_in(test: &str, tools: &Tools, dir: &Path, db: &Path) {
    // (relative path, Pillow kind, EXIF set, format by content)
    let files: [(&str, &'static str, Option<usize>, &str); 17] = [
        ("jpeg/a.jpg", "JPEG", Some(0), "jpeg"),
        ("jpeg/b.jpeg", "JPEG", Some(1), "jpeg"),
        ("jpeg/C.JPG", "JPEG+progressive", Some(2), "jpeg"),
        ("jpeg/d.jpg", "JPEG", Some(3), "jpeg"),
        ("jpeg/plain.jpg", "JPEG", None, "jpeg"),
        ("tiff/a.tif", "TIFF", Some(2), "tiff"),
        ("tiff/b.tiff", "TIFF", Some(0), "tiff"),
        ("tiff/plain.tif", "TIFF", None, "tiff"),
        ("png/a.png", "PNG", Some(1), "png"),
        ("png/plain.png", "PNG", None, "png"),
        ("webp/a.webp", "WEBP", Some(0), "webp"),
        ("webp/lossless.webp", "WEBP+lossless", Some(3), "webp"),
        ("webp/plain.webp", "WEBP", None, "webp"),
        ("gif/a.gif", "GIF", None, "gif"),
        ("gif/b.GIF", "GIF", None, "gif"),
        ("bmp/a.bmp", "BMP", None, "bmp"),
        ("bmp/b.bmp", "BMP", None, "bmp"),
    ];
    let pictures: Vec<Picture> = files
        .iter()
        .enumerate()
        .map(|(i, (rel, kind, _, _))| Picture {
            path: dir.join(rel),
            kind,
            width: 17 + 13 * i as u32,
            height: 11 + 7 * (16 - i as u32),
            seed: i as u64,
        })
        .collect();
    draw(tools, &pictures);
    let edits: Vec<(&Path, &[&str])> = files
        .iter()
        .zip(&pictures)
        .filter_map(|((_, _, set, _), p)| set.map(|s| (p.path.as_path(), EXIF_SETS[s])))
        .collect();
    write_exif(test, &edits);

    let before = utc_now();
    let o = index(db, &[dir.as_os_str()]);
    let after = utc_now();
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "", "nothing to say without --summary");

    let paths: Vec<&Path> = pictures.iter().map(|p| p.path.as_path()).collect();
    let exif = exiftool_json(&paths);
    let rows = rows_by_key(db);
    assert_eq!(rows.len(), files.len(), "one row per image: {rows:#?}");
    for ((_, _, set, format), p) in files.iter().zip(&pictures) {
        let row = row_of(&rows, &p.path);
        assert_file_columns(row, &p.path);
        assert_eq!(row["format"], json!(format), "{}", p.path.display());
        assert_eq!(row["ext_mismatch"], json!(0), "{}", p.path.display());
        assert_eq!(row["error"], Value::Null, "{}", p.path.display());
        assert_eq!(
            (row["width"].clone(), row["height"].clone()),
            (json!(p.width), json!(p.height)),
            "{}: the size Pillow wrote",
            p.path.display()
        );
        let e = &exif[&p.path];
        assert_fields_match_exiftool(row, e);
        // The EXIF really is there (exiftool sees it), so matching it means reading it.
        assert_eq!(
            e.get("EXIF:Make").is_some(),
            set.is_some(),
            "{}: exiftool's view of the test data",
            p.path.display()
        );
        if set.is_some() {
            assert!(row["make"].is_string(), "{}", p.path.display());
        }
    }

    assert_eq!(
        one(db, "PRAGMA user_version", "user_version"),
        json!(9),
        "schema version"
    );
    assert_eq!(
        one(db, "PRAGMA journal_mode", "journal_mode"),
        json!("wal"),
        "WAL mode"
    );
    let scans = query(db, "SELECT * FROM scans");
    assert_eq!(scans.len(), 1, "{scans:?}");
    let s = &scans[0];
    let n = files.len();
    for (col, want) in [
        ("seen", n),
        ("added", n),
        ("changed", 0),
        ("moved", 0),
        ("unchanged", 0),
        ("removed", 0),
        ("failed", 0),
    ] {
        assert_eq!(s[col], json!(want), "scans.{col}: {s}");
    }
    assert_iso_between(&s["started"], &before, &after, "scans.started");
    assert_iso_between(&s["ended"], &before, &after, "scans.ended");
    assert!(s["started"].as_str() <= s["ended"].as_str(), "{s}");
    assert_eq!(
        one(
            db,
            "SELECT count(*) AS n FROM images WHERE scan = (SELECT id FROM scans)",
            "n"
        ),
        json!(n),
        "every row names the scan that wrote it"
    );
}

#[test]
fn every_stored_field_equals_what_exiftool_and_b3sum_read() {
    let test = test_name!();
    let Some(tools) = tools(test) else { return };
    let t = scratch!();
    let db = t.path().join("photos.db");
    catalog_matches_exiftool_and_b3sum_in(test, &tools, &t.path().join("photos"), &db);
}

#[test]
fn every_stored_field_equals_what_exiftool_and_b3sum_read_on_ext4() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "mkfs.ext4") {
        return;
    }
    let Some(tools) = tools(test) else { return };
    let lfs = LoopFs::new(test, "ext4", 64);
    let db = lfs.path("photos.db");
    catalog_matches_exiftool_and_b3sum_in(test, &tools, &lfs.path("photos"), &db);
}

#[test]
fn raw_formats_built_on_tiff_are_told_by_their_make_and_extension_without_a_mismatch() {
    let test = test_name!();
    let Some(tools) = tools(test) else { return };
    let t = scratch!();
    let raw = t.path().join("raw");
    // DNG, NEF, ARW and PEF are TIFF inside: a TIFF named like one agrees with its
    // extension, and is that raw format when its IFD0's Make is that camera maker's (the
    // NIKON one named .NEF), else a TIFF. A TIFF named .heic is a mismatch, and a TIFF
    // whatever its Make (NIKON here).
    let names = ["a.dng", "b.NEF", "c.arw", "d.pef", "e.heic"];
    // Written as .tif (exiftool will not write EXIF into a file whose name it doubts),
    // then renamed.
    let pictures: Vec<Picture> = (0..names.len())
        .map(|i| Picture {
            path: raw.join(format!("{i}.tif")),
            kind: "TIFF",
            width: 30 + i as u32,
            height: 20,
            seed: 50 + i as u64,
        })
        .collect();
    draw(&tools, &pictures);
    let edits: Vec<(&Path, &[&str])> = pictures
        .iter()
        .enumerate()
        .map(|(i, p)| (p.path.as_path(), EXIF_SETS[i % 3]))
        .collect();
    write_exif(test, &edits);
    let files: Vec<PathBuf> = names.iter().map(|n| raw.join(n)).collect();
    for (p, f) in pictures.iter().zip(&files) {
        std::fs::rename(&p.path, f).unwrap();
    }
    let db = t.path().join("raw.db");
    assert_exit(&index(&db, &[raw.as_os_str()]), 0);
    let rows = rows_by_key(&db);
    let exif = exiftool_json(&files.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    assert_eq!(rows.len(), names.len());
    for (f, p) in files.iter().zip(&pictures) {
        let row = row_of(&rows, f);
        let heic = f.extension() == Some(OsStr::new("heic"));
        let nef = f.extension() == Some(OsStr::new("NEF"));
        let (format, kind) = if nef {
            ("nef", "raw")
        } else {
            ("tiff", "image")
        };
        assert_eq!(
            (&row["format"], &row["ext_mismatch"], &row["error"]),
            (&json!(format), &json!(u8::from(heic)), &Value::Null),
            "{row}"
        );
        assert_eq!(row["kind"], kind, "{row}");
        assert_eq!(row["width"], json!(p.width), "{row}");
        assert_fields_match_exiftool(row, &exif[f]);
    }
}

// ---------------------------------------------------------------------------------------
// 2. Bad input.

#[test]
fn bad_images_each_get_a_row_and_a_named_error_and_the_run_goes_on() {
    let test = test_name!();
    let Some(tools) = tools(test) else { return };
    let t = scratch!();
    let dir = t.path().join("bad");
    let p = |name: &str| dir.join(name);

    // Raw material: JPEGs and a PNG from Pillow, the good one with full EXIF.
    let base = |name: &str, kind: &'static str, width, height, seed| Picture {
        path: t.path().join("src").join(name),
        kind,
        width,
        height,
        seed,
    };
    let sources = [
        base("good.jpg", "JPEG", 40, 30, 1),
        base("big.jpg", "JPEG", 160, 120, 2),
        base("plain.jpg", "JPEG", 48, 32, 3),
        base("plain.png", "PNG", 33, 21, 4),
    ];
    draw(&tools, &sources);
    std::fs::create_dir_all(&dir).unwrap();
    write_exif(
        test,
        &[
            (&sources[0].path, EXIF_SETS[0]),
            (&sources[1].path, EXIF_SETS[1]),
        ],
    );
    let read = |i: usize| std::fs::read(&sources[i].path).unwrap();

    std::fs::write(p("good.jpg"), read(0)).unwrap();
    // Cut in the middle of the compressed data: the headers and EXIF are all there.
    let big = read(1);
    let sos = marker_at(&big, 0xDA);
    std::fs::write(p("truncated-data.jpg"), &big[..(sos + big.len()) / 2]).unwrap();
    // Cut inside the EXIF segment.
    let app1 = marker_at(&big, 0xE1);
    std::fs::write(p("truncated-exif.jpg"), &big[..app1 + 40]).unwrap();
    std::fs::write(p("empty.jpg"), b"").unwrap();
    std::fs::write(p("text.png"), b"this is not a picture\n").unwrap();
    // A PNG whose IHDR CRC is wrong.
    let mut png = read(3);
    png[29] ^= 0xFF;
    std::fs::write(p("bad-crc.png"), &png).unwrap();
    // A PNG whose IHDR claims 100,000 x 100,000 pixels (with a right CRC).
    let mut png = read(3);
    png[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    png[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    std::fs::write(p("huge.png"), &png).unwrap();
    // A PNG named .jpg: a mismatch, not an error.
    std::fs::write(p("really-a-png.jpg"), read(3)).unwrap();

    let plain = read(2);
    // EXIF whose IFD0 offset points past the end of the file.
    let mut tiff = tiff_block(&[Ifd {
        entries: vec![(0x010F, Val::Ascii("Lost"))],
        next: None,
    }]);
    tiff[4..8].copy_from_slice(&0x00FF_FFF0u32.to_le_bytes());
    std::fs::write(p("exif-ifd0-outside.jpg"), with_exif_segment(&plain, &tiff)).unwrap();
    // EXIF whose IFD0 is fine but whose Exif sub-IFD is past the end of the file.
    let tiff = tiff_block(&[Ifd {
        entries: vec![
            (0x010F, Val::Ascii("NIKON CORPORATION")),
            (0x0110, Val::Ascii("NIKON D850")),
            (0x8769, Val::Long(0x7FFF_FFF0)),
        ],
        next: None,
    }]);
    std::fs::write(
        p("exif-subifd-outside.jpg"),
        with_exif_segment(&plain, &tiff),
    )
    .unwrap();
    // EXIF that loops: IFD0's next link is IFD0 itself, the Exif IFD's interop pointer is
    // the Exif IFD, and IFD0's SubIFDs entry is IFD0.
    let tiff = tiff_block(&[
        Ifd {
            entries: vec![
                (0x010F, Val::Ascii("Loop Camera Co")),
                (0x0110, Val::Ascii("Ouroboros 1")),
                (0x014A, Val::Ifd(0)),
                (0x8769, Val::Ifd(1)),
            ],
            next: Some(Val::Ifd(0)),
        },
        Ifd {
            entries: vec![
                (0x9003, Val::Ascii("2018:05:06 07:08:09")),
                (0xA005, Val::Ifd(1)),
            ],
            next: Some(Val::Ifd(0)),
        },
    ]);
    std::fs::write(p("exif-loop.jpg"), with_exif_segment(&plain, &tiff)).unwrap();
    // A maker note of garbage (a Canon's: parsers that read Canon notes will try it).
    let mut rng = Rng::new(99);
    let mut garbage = vec![0xFF, 0xFF, 0x01, 0x00];
    garbage.extend(rng.bytes(300));
    let tiff = tiff_block(&[
        Ifd {
            entries: vec![
                (0x010F, Val::Ascii("Canon")),
                (0x0110, Val::Ascii("Canon EOS 5D  \0\0")),
                (0x0112, Val::Short(1)),
                (0x8769, Val::Ifd(1)),
            ],
            next: None,
        },
        Ifd {
            entries: vec![
                (0x9003, Val::Ascii("2019:01:02 03:04:05")),
                (0x927C, Val::Undefined(garbage)),
            ],
            next: None,
        },
    ]);
    std::fs::write(p("makernote-garbage.jpg"), with_exif_segment(&plain, &tiff)).unwrap();
    // A TIFF whose first IFD is past the end of the file: nothing to read at all.
    let mut tif = b"II*\0".to_vec();
    tif.extend_from_slice(&0x0FFF_FFF0u32.to_le_bytes());
    tif.extend_from_slice(&[0; 32]);
    std::fs::write(p("ifd-outside.tif"), &tif).unwrap();

    let o = index(
        &t.path().join("bad.db"),
        &[os("--summary"), dir.as_os_str()],
    );
    let err = stderr(&o);
    assert_exit(&o, 1);
    let db = t.path().join("bad.db");
    let rows = rows_by_key(&db);
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(rows.len(), files.len(), "a row for every file: {rows:#?}");
    let exif = exiftool_json(&files.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    let row = |name: &str| row_of(&rows, &p(name)).clone();
    let has_error = |name: &str| row(name)["error"].is_string();
    let dims = |name: &str| (row(name)["width"].clone(), row(name)["height"].clone());

    // Every file: its row knows the file (metadata, hash), and stderr names it exactly
    // when its row has an error.
    for f in &files {
        let r = row_of(&rows, f);
        assert_file_columns(r, f);
        let named = err.contains(&format!("seekless: {}: ", f.display()));
        assert_eq!(
            named,
            r["error"].is_string(),
            "{}: error {} but stderr {} it:\n{err}",
            f.display(),
            r["error"],
            if named { "names" } else { "does not name" }
        );
    }

    // Fine ones.
    let good = row("good.jpg");
    assert_eq!(good["error"], Value::Null, "{good}");
    assert_eq!(good["format"], json!("jpeg"));
    assert_fields_match_exiftool(&good, &exif[&p("good.jpg")]);
    let mismatch = row("really-a-png.jpg");
    assert_eq!(
        (
            &mismatch["format"],
            &mismatch["ext_mismatch"],
            &mismatch["error"]
        ),
        (&json!("png"), &json!(1), &Value::Null),
        "a PNG named .jpg: {mismatch}"
    );
    assert_eq!(dims("really-a-png.jpg"), (json!(33), json!(21)));
    // A header is metadata: 100,000 x 100,000 is recorded as said (no decoding, so
    // nothing to run out of memory on), as exiftool reads it.
    let huge = row("huge.png");
    assert_eq!(huge["error"], Value::Null, "{huge}");
    assert_eq!(dims("huge.png"), (json!(100_000), json!(100_000)));
    assert_fields_match_exiftool(&huge, &exif[&p("huge.png")]);
    // A bad CRC: a header-only reader may not check it; if it has no error, the size
    // it recorded is the real one.
    let crc = row("bad-crc.png");
    assert_eq!(crc["format"], json!("png"), "{crc}");
    if !has_error("bad-crc.png") {
        assert_eq!(dims("bad-crc.png"), (json!(33), json!(21)), "{crc}");
    }
    // A maker note is the vendor's own: garbage there does not hide the standard fields.
    assert_fields_match_exiftool(
        &row("makernote-garbage.jpg"),
        &exif[&p("makernote-garbage.jpg")],
    );
    assert_eq!(
        (
            &row("makernote-garbage.jpg")["make"],
            &row("makernote-garbage.jpg")["model"]
        ),
        (&json!("Canon"), &json!("Canon EOS 5D")),
        "trailing NULs and spaces trimmed"
    );

    // Broken ones: an error, and what could be found still filled in.
    for name in [
        "truncated-data.jpg",
        "truncated-exif.jpg",
        "empty.jpg",
        "text.png",
        "exif-ifd0-outside.jpg",
        "exif-subifd-outside.jpg",
        "exif-loop.jpg",
        "ifd-outside.tif",
    ] {
        assert!(has_error(name), "{name} has no error: {}", row(name));
    }
    for name in ["empty.jpg", "text.png"] {
        assert_eq!(row(name)["format"], Value::Null, "{name}: not an image");
    }
    let cut = row("truncated-data.jpg");
    assert_eq!(cut["format"], json!("jpeg"));
    assert_eq!(
        dims("truncated-data.jpg"),
        (json!(160), json!(120)),
        "{cut}"
    );
    assert_fields_match_exiftool(&cut, &exif[&p("truncated-data.jpg")]);
    assert_eq!(cut["make"], json!("NIKON CORPORATION"), "{cut}");
    // Cut files are damaged, and --summary counts the damaged files it read, with the
    // query that lists them.
    let damaged = query(
        &db,
        "SELECT count(*) AS n, sum(path LIKE '%/truncated-data.jpg') AS cut FROM images
         WHERE damaged IS NOT NULL",
    );
    let (n, cut) = (&damaged[0]["n"], &damaged[0]["cut"]);
    assert_eq!(cut, &json!(1), "truncated-data.jpg is damaged");
    assert!(
        err.lines().any(|l| l
            == format!(
                "seekless: index: {n} damaged (cut short, or a size or checksum that does not \
                 match): SELECT path, damaged FROM images WHERE damaged IS NOT NULL"
            )),
        "{err}"
    );
    for name in [
        "truncated-exif.jpg",
        "exif-ifd0-outside.jpg",
        "exif-subifd-outside.jpg",
        "exif-loop.jpg",
    ] {
        assert_eq!(row(name)["format"], json!("jpeg"), "{name}");
    }
    for name in [
        "exif-ifd0-outside.jpg",
        "exif-subifd-outside.jpg",
        "exif-loop.jpg",
    ] {
        assert_eq!(dims(name), (json!(48), json!(32)), "{name}: {}", row(name));
    }
    assert_eq!(row("exif-ifd0-outside.jpg")["make"], Value::Null);
    let sub = row("exif-subifd-outside.jpg");
    assert_eq!(
        (&sub["make"], &sub["model"]),
        (&json!("NIKON CORPORATION"), &json!("NIKON D850")),
        "IFD0 was readable: {sub}"
    );
    assert_eq!(row("ifd-outside.tif")["format"], json!("tiff"));

    let failed = rows.values().filter(|r| r["error"].is_string()).count();
    assert_eq!(
        one(&db, "SELECT failed FROM scans", "failed"),
        json!(failed),
        "scans.failed"
    );
    let closing = closing_line(&o);
    assert!(
        closing.starts_with(&format!("seekless: index: {} seen, ", files.len()))
            && closing.ends_with(&format!(", {failed} failed")),
        "{closing}"
    );
    assert!(
        query(&db, "PRAGMA integrity_check")[0]["integrity_check"] == json!("ok"),
        "integrity"
    );
}

// ---------------------------------------------------------------------------------------
// 3. Incremental runs.

#[test]
fn a_second_run_reads_only_what_was_added_or_changed_and_ends_as_a_clean_run_would() {
    let test = test_name!();
    let Some(tools) = tools(test) else { return };
    let t = scratch!();
    let photos = t.path().join("photos");
    // A sibling whose name starts with the scanned tree's: its rows are another tree's.
    let sibling = t.path().join("photos2");
    let db = t.path().join("photos.db");
    let mut pictures: Vec<Picture> = (0..20)
        .map(|i| Picture {
            path: photos.join(format!("{}/img_{i:02}.jpg", 2020 + i % 2)),
            kind: if i % 5 == 4 { "PNG" } else { "JPEG+exif" },
            width: 20 + i as u32,
            height: 14 + i as u32 % 3,
            seed: 1000 + i,
        })
        .collect();
    pictures.extend((0..3).map(|i| Picture {
        path: sibling.join(format!("other_{i}.jpg")),
        kind: "JPEG+exif",
        width: 24,
        height: 16,
        seed: 2000 + i,
    }));
    draw(&tools, &pictures);

    assert_exit(&index(&db, &[sibling.as_os_str()]), 0);
    let first = index(&db, &[os("--summary"), photos.as_os_str()]);
    assert_exit(&first, 0);
    assert_eq!(
        closing_line(&first),
        "seekless: index: 20 seen, 20 added, 0 changed, 0 moved, 0 unchanged, 0 removed, 0 failed"
    );
    assert_eq!(files_read(&first), Some(20), "{}", stderr(&first));

    // Change one (new content and size, a later mtime), add one, delete one, rename one.
    let modified = photos.join("2021/img_03.jpg");
    let old_mtime = std::fs::metadata(&modified).unwrap().modified().unwrap();
    draw(
        &tools,
        &[Picture {
            path: modified.clone(),
            kind: "JPEG+exif",
            width: 50,
            height: 40,
            seed: 3000,
        }],
    );
    std::fs::File::options()
        .write(true)
        .open(&modified)
        .unwrap()
        .set_modified(old_mtime + Duration::from_secs(7))
        .unwrap();
    let added = photos.join("2022/new.jpg");
    draw(
        &tools,
        &[Picture {
            path: added.clone(),
            kind: "JPEG+exif",
            width: 30,
            height: 30,
            seed: 3001,
        }],
    );
    // Deleted after the addition, so the new file cannot reuse its inode.
    std::fs::remove_file(photos.join("2021/img_07.jpg")).unwrap();
    std::fs::create_dir(photos.join("sorted")).unwrap();
    let moved = photos.join("sorted/renamed_10.jpg");
    std::fs::rename(photos.join("2020/img_10.jpg"), &moved).unwrap();

    let second = index(&db, &[os("--summary"), photos.as_os_str()]);
    assert_exit(&second, 0);
    assert_eq!(
        closing_line(&second),
        "seekless: index: 20 seen, 1 added, 1 changed, 1 moved, 17 unchanged, 1 removed, 0 failed"
    );
    assert_eq!(
        files_read(&second),
        Some(2),
        "only the added and the changed file are read:\n{}",
        stderr(&second)
    );
    let scan = &query(&db, "SELECT * FROM scans ORDER BY id DESC LIMIT 1")[0];
    for (col, want) in [
        ("seen", 20),
        ("added", 1),
        ("changed", 1),
        ("moved", 1),
        ("unchanged", 17),
        ("removed", 1),
        ("failed", 0),
    ] {
        assert_eq!(scan[col], json!(want), "scans.{col}: {scan}");
    }
    let rows = rows_by_key(&db);
    assert_file_columns(row_of(&rows, &modified), &modified);
    assert_eq!(row_of(&rows, &modified)["width"], json!(50));
    assert_file_columns(row_of(&rows, &moved), &moved);
    assert_file_columns(row_of(&rows, &added), &added);

    // The catalog is what one clean run makes; the sibling tree's rows are untouched.
    let photos_only = |db: &Path| -> Vec<Value> {
        catalog(db)
            .into_iter()
            .filter(|r| {
                let p = PathBuf::from(r["path"].as_str().unwrap());
                p.starts_with(&photos)
            })
            .collect()
    };
    let clean_db = t.path().join("clean.db");
    assert_exit(&index(&clean_db, &[photos.as_os_str()]), 0);
    assert_same_catalog(
        &photos_only(&db),
        &catalog(&clean_db),
        "incremental vs clean",
    );
    let sibling_rows = || {
        catalog(&db)
            .into_iter()
            .filter(|r| PathBuf::from(r["path"].as_str().unwrap()).starts_with(&sibling))
            .count()
    };
    assert_eq!(sibling_rows(), 3, "rows of another tree are left alone");

    // Nothing changed: nothing read.
    let third = index(&db, &[os("--summary"), photos.as_os_str()]);
    assert_exit(&third, 0);
    assert_eq!(
        closing_line(&third),
        "seekless: index: 20 seen, 0 added, 0 changed, 0 moved, 20 unchanged, 0 removed, 0 failed"
    );
    assert!(
        matches!(files_read(&third), None | Some(0)),
        "{}",
        stderr(&third)
    );
    let before_rehash = photos_only(&db);

    // --rehash reads every image again, and finds the same.
    let fourth = index(&db, &[os("--summary"), os("--rehash"), photos.as_os_str()]);
    assert_exit(&fourth, 0);
    assert_eq!(
        files_read(&fourth),
        Some(20),
        "--rehash reads all:\n{}",
        stderr(&fourth)
    );
    // How docs/index.md counts a file read again only because of --rehash (changed or
    // unchanged) is not said; what is: nothing is added, moved, removed or failed.
    let counts = closing_counts(&fourth);
    assert_eq!(
        (
            counts["seen"],
            counts["added"],
            counts["moved"],
            counts["removed"]
        ),
        (20, 0, 0, 0),
        "{}",
        closing_line(&fourth)
    );
    assert_eq!(counts["failed"], 0);
    assert_eq!(counts["changed"] + counts["unchanged"], 20, "{counts:?}");
    assert_same_catalog(&photos_only(&db), &before_rehash, "after --rehash");
    assert_eq!(sibling_rows(), 3, "rows of another tree are left alone");
}

// ---------------------------------------------------------------------------------------
// 4. kill -9.

/// Starts `seekless index` and kills it (SIGKILL) at the first moment `ready`, asked while
/// the run is frozen between slices of `slice`, says yes. Returns false if the run ended
/// first (it then must have ended well).
fn kill_when(db: &Path, photos: &Path, slice: Duration, ready: impl FnMut() -> bool) -> bool {
    let mut run = start_index(db, photos);
    if !freeze_when_every(&mut run.0, slice, ready) {
        let (code, err) = finish(run);
        assert_eq!(code, Some(0), "{err}");
        return false;
    }
    signal(&run.0, libc::SIGKILL);
    let status = run.0.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    true
}

#[test]
fn a_run_killed_at_any_moment_leaves_a_sound_database_and_the_next_run_completes_it() {
    let test = test_name!();
    let Some(tools) = tools(test) else { return };
    const N: u64 = 1500;
    let t = scratch!();
    let photos = t.path().join("photos");
    jpeg_corpus(&tools, &photos, N as usize, 4);
    let db = t.path().join("crash.db");

    // A run that ended before it was caught is tried again from an empty database,
    // watched in shorter slices; the test fails if none could be caught.
    let mut slices = CATCH_SLICES.iter().enumerate();
    let committed = loop {
        let Some((attempt, &slice)) = slices.next() else {
            panic!(
                "every run ended before a commit was seen ({} attempts, slices \
                 {CATCH_SLICES:?}): none could be killed in the middle",
                CATCH_SLICES.len()
            );
        };
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }

        // Killed as soon as the database file exists: while it is set up, or before its
        // first commit.
        let early = kill_when(&db, &photos, slice, || db.exists());
        let kept = check_killed(&db, &t.path().join(format!("copy-early-{attempt}.db")));
        eprintln!("{test}: killed early ({early}) with {kept} rows committed");

        // Killed just after a commit of the next run.
        let mut committed = None;
        let caught = kill_when(&db, &photos, slice, || {
            committed = committed_rows(&db).filter(|&n| n > kept);
            committed.is_some()
        });
        match committed {
            Some(n) if caught => break n,
            _ => eprintln!(
                "{test}: attempt {attempt} (slices of {slice:?}) ended before a commit was seen"
            ),
        }
    };
    eprintln!("{test}: killed with {committed} of {N} rows committed");
    let copy = t.path().join("copy.db");
    assert_eq!(
        check_killed(&db, &copy),
        committed,
        "what was committed before the kill survives it"
    );
    if committed < N {
        assert_eq!(
            one(
                &copy,
                "SELECT ended FROM scans ORDER BY id DESC LIMIT 1",
                "ended"
            ),
            Value::Null,
            "a killed run's scan has no end"
        );
    }

    let again = index(&db, &[os("--summary"), photos.as_os_str()]);
    assert_exit(&again, 0);
    assert_eq!(
        closing_line(&again),
        format!(
            "seekless: index: {N} seen, {} added, 0 changed, 0 moved, {committed} unchanged, \
             0 removed, 0 failed",
            N - committed
        ),
        "the next run reads what was not committed, and only that"
    );
    assert_eq!(files_read(&again).unwrap_or(0), N - committed);
    assert_eq!(
        query(&db, "PRAGMA integrity_check"),
        vec![json!({"integrity_check": "ok"})]
    );

    let clean = t.path().join("clean.db");
    assert_exit(&index(&clean, &[photos.as_os_str()]), 0);
    let got = catalog(&db);
    assert_eq!(got.len() as u64, N);
    assert_same_catalog(
        &got,
        &catalog(&clean),
        "killed twice and resumed vs one clean run",
    );
}

// ---------------------------------------------------------------------------------------
// 5. --summary.

/// The lines of stderr that say what bound the run.
fn verdicts(err: &str) -> Vec<&str> {
    const WORDS: [&str; 4] = [
        "disk-bound",
        "CPU-bound",
        "writer-bound",
        "bound by what takes the results",
    ];
    err.lines()
        .filter(|l| WORDS.iter().any(|w| l.contains(w)))
        .collect()
}

#[test]
fn a_summary_says_once_what_bound_the_run() {
    let t = scratch!();
    let files = t.path().join("files");
    std::fs::create_dir(&files).unwrap();
    for i in 1..=20u8 {
        // A GIF's header, i pixels wide: all that is read of it without --thumbs.
        let gif = [&b"GIF89a"[..], &[i, 0, 1, 0, 0, 0, 0], b";"].concat();
        std::fs::write(files.join(format!("{i}.gif")), gif).unwrap();
    }
    let o = index(
        &t.path().join("c.db"),
        &[os("--summary"), files.as_os_str()],
    );
    assert_exit(&o, 0);
    let err = stderr(&o);
    // The phases' verdict, once; the read's line is there, without one of its own.
    let said = verdicts(&err);
    assert_eq!(said.len(), 1, "one verdict in:\n{err}");
    assert!(
        [
            "seekless: CPU-bound: ",
            "seekless: disk-bound: ",
            "seekless: writer-bound: "
        ]
        .iter()
        .any(|v| said[0].starts_with(v)),
        "{err}"
    );
    let workers = err
        .lines()
        .find(|l| l.contains(" s handing results on "))
        .unwrap_or_else(|| panic!("no workers' line in:\n{err}"));
    assert!(workers.ends_with("(summed over workers)"), "{workers}");

    // Nothing to read: no verdict at all.
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = index(
        &t.path().join("e.db"),
        &[os("--summary"), empty.as_os_str()],
    );
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert_eq!(verdicts(&err), Vec::<&str>::new(), "{err}");
    assert!(err.contains("seekless: nothing was read\n"), "{err}");

    // hash judges by the read alone: its line's verdict is the one.
    let o = output_within(
        seekless().args(["hash", "--summary"]).arg(&files),
        RUN_LIMIT,
    );
    crate::common::assert_exit(&o, 0);
    let err = stderr(&o);
    let said = verdicts(&err);
    assert_eq!(said.len(), 1, "one verdict in:\n{err}");
    assert!(said[0].contains(" s handing results on "), "{err}");
}
