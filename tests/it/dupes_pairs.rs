//! Files that belong together are linked in the catalog (its `pairs` view) and `dupes`
//! treats them so: a raw file and the camera's JPEG of the shot, a Live Photo's still and
//! its video are *pairs*, kept on purpose and never offered for deletion; a HEIF and the
//! JPEG exported from it are a similar group whose keeper is the HEIF, the original.
//!
//! The raw file is a Canon CR2 from ExifTool's samples (`.ci/fetch-corpora`); the video is
//! made by ffmpeg with Apple's content identifier key; the Live Photo's still is a JPEG
//! whose EXIF carries an Apple maker note (checked with exiftool); the HEIF is made by
//! heif-enc and exported back to JPEG by heif-convert, its EXIF copied by exiftool.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::catalog::{Ifd, Val, corpus, query, tiff_block, with_exif_segment};
use crate::common::*;

/// A group as compared: its kind, its link, its files (relative path, keeper).
type GroupShape = (String, Option<String>, Vec<(String, bool)>);

const CONTENT_ID: &str = "6E0D6A8C-1B2F-4E5A-9C3D-7F8E9A0B1C2D";

/// An Apple maker note (`Apple iOS`, version 1, big-endian) holding only the content
/// identifier (tag 0x0011), its offsets from the note's start, as iPhones write it.
fn apple_maker_note(content_id: &str) -> Vec<u8> {
    let mut note = b"Apple iOS\0\0\x01MM".to_vec();
    note.extend_from_slice(&1u16.to_be_bytes());
    let value = [content_id.as_bytes(), b"\0"].concat();
    note.extend_from_slice(&0x0011u16.to_be_bytes());
    note.extend_from_slice(&2u16.to_be_bytes());
    note.extend_from_slice(&(value.len() as u32).to_be_bytes());
    note.extend_from_slice(&((14 + 2 + 12 + 4) as u32).to_be_bytes());
    note.extend_from_slice(&0u32.to_be_bytes());
    note.extend_from_slice(&value);
    note
}

/// ImageMagick's built-in picture `picture` (`wizard:`, `logo:`, …: unlike each other to
/// a perceptual hash) as a JPEG of `size` at `path`.
fn draw(path: &Path, size: &str, picture: &str) {
    run(Command::new("convert")
        .args([picture, "-resize", &format!("{size}!"), "-quality", "92"])
        .arg(path));
}

fn exiftool(args: &[&str], path: &Path) {
    run(Command::new("exiftool")
        .args(["-q", "-overwrite_original"])
        .args(args)
        .arg(path));
}

/// The library: `raw/` (a CR2 and the camera's JPEG; a JPEG of another time), `live/` (a
/// Live Photo), `heif/` and `shared/` (a HEIF and its export).
fn library(test: &str, dir: &Path) -> Option<PathBuf> {
    let samples = corpus(test, "exiftool-12.57", "Image-ExifTool-12.57/t/images")?;
    let photos = dir.join("photos");
    for sub in ["raw", "live", "heif", "shared"] {
        std::fs::create_dir_all(photos.join(sub)).unwrap();
    }
    // The CR2 was taken 2005:08:03 18:59:18 by a Canon EOS 350D.
    std::fs::copy(
        samples.join("CanonRaw.cr2"),
        photos.join("raw/IMG_0001.CR2"),
    )
    .unwrap();
    let camera = [
        "-Make=Canon",
        "-Model=Canon EOS 350D DIGITAL",
        "-DateTimeOriginal=2005:08:03 18:59:18",
    ];
    draw(&photos.join("raw/IMG_0001.JPG"), "1536x1024", "wizard:");
    exiftool(&camera, &photos.join("raw/IMG_0001.JPG"));
    // Same name stem, another time: not the camera's JPEG of that shot.
    draw(&photos.join("raw/IMG_0001.jpeg"), "640x480", "netscape:");
    exiftool(
        &["-DateTimeOriginal=2006:01:01 00:00:00"],
        &photos.join("raw/IMG_0001.jpeg"),
    );

    // The Live Photo: a JPEG with the content identifier in Apple's maker note, and the
    // video with the same identifier in its QuickTime keys.
    let still = photos.join("live/IMG_0100.JPG");
    draw(&still, "640x480", "logo:");
    let tiff = tiff_block(&[
        Ifd {
            entries: vec![
                (0x010F, Val::Ascii("Apple")),
                (0x0110, Val::Ascii("iPhone 12")),
                (0x8769, Val::Ifd(1)),
            ],
            next: None,
        },
        Ifd {
            entries: vec![
                (0x9003, Val::Ascii("2021:07:04 13:14:15")),
                (0x927C, Val::Undefined(apple_maker_note(CONTENT_ID))),
            ],
            next: None,
        },
    ]);
    let jpeg = std::fs::read(&still).unwrap();
    std::fs::write(&still, with_exif_segment(&jpeg, &tiff)).unwrap();
    run(Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i"])
        .args(["testsrc=size=320x240:rate=10", "-t", "2"])
        .args(["-c:v", "libx264", "-pix_fmt", "yuv420p"])
        .args(["-movflags", "use_metadata_tags", "-metadata"])
        .arg(format!(
            "com.apple.quicktime.content.identifier={CONTENT_ID}"
        ))
        .arg(photos.join("live/IMG_0100.MOV")));

    // The HEIF and the JPEG a user exported from it elsewhere, its EXIF copied.
    let source = dir.join("source.jpg");
    draw(&source, "800x600", "granite:");
    exiftool(
        &[
            "-Make=Apple",
            "-Model=iPhone 12",
            "-DateTimeOriginal=2022:03:04 05:06:07",
        ],
        &source,
    );
    let heic = photos.join("heif/IMG_0200.HEIC");
    run(Command::new("heif-enc")
        .args(["-q", "80", "-o"])
        .arg(&heic)
        .arg(&source));
    let export = photos.join("shared/IMG_0200 export.jpg");
    run(Command::new("heif-convert")
        .args(["-q", "85"])
        .arg(&heic)
        .arg(&export));
    run(Command::new("exiftool")
        .args(["-q", "-overwrite_original", "-tagsFromFile"])
        .arg(&heic)
        .args(["-Make", "-Model", "-DateTimeOriginal"])
        .arg(&export));
    Some(photos)
}

#[test]
fn raw_and_jpeg_and_live_photos_are_pairs_and_an_export_is_a_duplicate_of_its_original() {
    let test =
        "raw_and_jpeg_and_live_photos_are_pairs_and_an_export_is_a_duplicate_of_its_original";
    if !require_tools(
        test,
        &[
            "exiftool",
            "sqlite3",
            "convert",
            "ffmpeg",
            "heif-enc",
            "heif-convert",
        ],
    ) {
        return;
    }
    let scratch = scratch_dir(test);
    let Some(photos) = library(test, scratch.path()) else {
        return;
    };
    // The maker note is one exiftool reads (12.57 names tag 0x0011 `MediaGroupUUID`; later
    // versions `ContentIdentifier`).
    let e = Command::new("exiftool")
        .args(["-j", "-ContentIdentifier", "-MediaGroupUUID"])
        .arg(photos.join("live/IMG_0100.JPG"))
        .output()
        .unwrap();
    let e: Value = serde_json::from_slice(&e.stdout).unwrap();
    let said = e[0].get("ContentIdentifier").or(e[0].get("MediaGroupUUID"));
    assert_eq!(said, Some(&Value::from(CONTENT_ID)), "{e}");

    let db = scratch.path().join("photos.db");
    let o = crate::common::catalog::index(&db, &["--thumbs".as_ref(), photos.as_os_str()]);
    // The stripped CR2 has no preview to make a thumbnail of: a warning, not a failure.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rel = |p: &Value| {
        Path::new(p.as_str().unwrap())
            .strip_prefix(&photos)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let pairs: Vec<(String, String, String)> = query(
        &db,
        "SELECT x.path AS a, y.path AS b, p.link FROM pairs p \
         JOIN images x ON x.id = p.a JOIN images y ON y.id = p.b ORDER BY p.link",
    )
    .iter()
    .map(|r| {
        (
            r["link"].as_str().unwrap().to_string(),
            rel(&r["a"]),
            rel(&r["b"]),
        )
    })
    .collect();
    assert_eq!(
        pairs,
        [
            (
                "export".to_string(),
                "heif/IMG_0200.HEIC".to_string(),
                "shared/IMG_0200 export.jpg".to_string()
            ),
            (
                "live-photo".into(),
                "live/IMG_0100.JPG".into(),
                "live/IMG_0100.MOV".into()
            ),
            (
                "raw+jpeg".into(),
                "raw/IMG_0001.CR2".into(),
                "raw/IMG_0001.JPG".into()
            ),
        ]
    );

    let o = output_within(
        seekless().args(["dupes", "--json", "--db"]).arg(&db),
        RUN_LIMIT,
    );
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut groups: Vec<GroupShape> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let mut members: Vec<(String, bool)> = g["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| (rel(&m["path"]), m["keeper"].as_bool().unwrap()))
                .collect();
            members.sort();
            (
                g["kind"].as_str().unwrap().to_string(),
                g["link"].as_str().map(str::to_string),
                members,
            )
        })
        .collect();
    groups.sort();
    assert_eq!(
        groups,
        [
            (
                "pair".to_string(),
                Some("live-photo".to_string()),
                vec![
                    ("live/IMG_0100.JPG".to_string(), false),
                    ("live/IMG_0100.MOV".to_string(), false)
                ]
            ),
            (
                "pair".into(),
                Some("raw+jpeg".into()),
                vec![
                    ("raw/IMG_0001.CR2".into(), false),
                    ("raw/IMG_0001.JPG".into(), false)
                ]
            ),
            (
                "similar".into(),
                None,
                vec![
                    ("heif/IMG_0200.HEIC".into(), true),
                    ("shared/IMG_0200 export.jpg".into(), false)
                ]
            ),
        ],
        "{doc}"
    );
    // Only the export is offered for deletion.
    let o = output_within(seekless().args(["dupes", "-0", "--db"]).arg(&db), RUN_LIMIT);
    assert_exit(&o, 0);
    assert_eq!(
        o.stdout,
        [
            photos
                .join("shared/IMG_0200 export.jpg")
                .as_os_str()
                .as_encoded_bytes(),
            b"\0"
        ]
        .concat()
    );

    // A copy of the pair's JPEG elsewhere: an exact group whose copy may go, never the
    // pair's own JPEG, whichever the rules keep.
    std::fs::create_dir_all(photos.join("b")).unwrap();
    std::fs::copy(
        photos.join("raw/IMG_0001.JPG"),
        photos.join("b/IMG_0001.JPG"),
    )
    .unwrap();
    let o = crate::common::catalog::index(&db, &["--thumbs".as_ref(), photos.as_os_str()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    for keep in ["shortest-path", "largest,newest"] {
        let o = output_within(
            seekless()
                .args(["dupes", "-0", "--keep", keep, "--db"])
                .arg(&db),
            RUN_LIMIT,
        );
        assert_exit(&o, 0);
        let listed = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(!listed.contains("raw/IMG_0001.JPG"), "{keep}: {listed:?}");
    }
    // Kept by shortest path, the copy in b/ is the keeper: the pair's JPEG stays beside it.
    let o = output_within(
        seekless()
            .args(["dupes", "--keep", "shortest-path", "--db"])
            .arg(&db),
        RUN_LIMIT,
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("raw/IMG_0001.JPG  (kept: part of a pair)"),
        "{text}"
    );
}
