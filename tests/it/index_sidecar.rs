//! `seekless index` and XMP sidecars: written by exiftool as photo managers write them
//! (and one by hand as darktable does), read into the catalog's `sidecars` table, joined to
//! their images under both naming schemes, updated without reading the image again, and
//! forgotten only where the run saw their directory whole.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::catalog::assert_exit;
use crate::common::catalog::*;
use crate::common::*;

/// Writes the sidecar `path` from scratch with exiftool (`exiftool -o PATH -TAG=VALUE…`),
/// as Lightroom-style tools leave them.
fn exiftool_sidecar(path: &Path, tags: &[&str]) {
    let o = Command::new("exiftool")
        .arg("-q")
        .arg("-o")
        .arg(path)
        .args(tags)
        .output()
        .unwrap();
    assert!(
        o.status.success() && path.exists(),
        "exiftool -o {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A sidecar as darktable writes it: the simple properties as attributes, keywords in
/// `rdf:Seq`, hierarchical keywords beside them, and a history of structures.
const DARKTABLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:lr="http://ns.adobe.com/lightroom/1.0/"
    xmlns:darktable="http://darktable.sf.net/"
    xmp:Rating="1"
    darktable:xmp_version="5">
   <dc:subject>
    <rdf:Seq>
     <rdf:li>sea</rdf:li>
     <rdf:li>Caf&#xE9;</rdf:li>
    </rdf:Seq>
   </dc:subject>
   <lr:hierarchicalSubject>
    <rdf:Seq>
     <rdf:li>Places|France|Brest</rdf:li>
    </rdf:Seq>
   </lr:hierarchicalSubject>
   <darktable:history>
    <rdf:Seq>
     <rdf:li darktable:operation="exposure" darktable:enabled="1"/>
    </rdf:Seq>
   </darktable:history>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
"#;

/// Each image row's path with its sidecar's path and fields (NULLs when it has none).
fn joined(db: &Path) -> Vec<Value> {
    query(
        db,
        "SELECT i.path, s.path AS sidecar, s.rating, s.label, s.keywords,
                s.hierarchical_keywords, s.title
         FROM images i LEFT JOIN sidecars s ON s.id = i.sidecar ORDER BY i.path",
    )
}

fn shown(p: &Path) -> Value {
    json!(p.display().to_string())
}

/// The tree every test starts from: photos with sidecars of both schemes, and one sidecar
/// of no catalogued image.
struct Tree {
    photos: PathBuf,
    /// `IMG_1.jpg` and its `IMG_1.jpg.xmp` (exiftool: element form, Bag, Alt, entities).
    img1: PathBuf,
    img1_xmp: PathBuf,
    /// `IMG_2.CR2` and `IMG_2.JPG` sharing `IMG_2.xmp` (Lightroom's naming).
    raw2: PathBuf,
    jpg2: PathBuf,
    shared_xmp: PathBuf,
    /// `dt/IMG_3.CR2` with darktable's `IMG_3.CR2.xmp`, which wins over `IMG_3.xmp`.
    raw3: PathBuf,
    dt_xmp: PathBuf,
    lr3_xmp: PathBuf,
    /// `IMG_4.png` with `IMG_4.XMP` (upper case).
    png4: PathBuf,
    upper_xmp: PathBuf,
    /// `orphan.xmp`: no image of that name.
    orphan: PathBuf,
}

fn tree(root: &Path) -> Tree {
    let photos = root.join("photos");
    let t = Tree {
        img1: photos.join("IMG_1.jpg"),
        img1_xmp: photos.join("IMG_1.jpg.xmp"),
        raw2: photos.join("IMG_2.CR2"),
        jpg2: photos.join("IMG_2.JPG"),
        shared_xmp: photos.join("IMG_2.xmp"),
        raw3: photos.join("dt/IMG_3.CR2"),
        dt_xmp: photos.join("dt/IMG_3.CR2.xmp"),
        lr3_xmp: photos.join("dt/IMG_3.xmp"),
        png4: photos.join("IMG_4.png"),
        upper_xmp: photos.join("IMG_4.XMP"),
        orphan: photos.join("orphan.xmp"),
        photos,
    };
    gifs(&[
        t.img1.clone(),
        t.raw2.clone(),
        t.jpg2.clone(),
        t.raw3.clone(),
        t.png4.clone(),
    ]);
    exiftool_sidecar(
        &t.img1_xmp,
        &[
            "-XMP:Rating=4",
            "-XMP:Label=Red",
            "-XMP-dc:Subject=beach",
            "-XMP-dc:Subject=Fish & Chips",
            "-XMP-dc:Title=Sunset <3",
        ],
    );
    exiftool_sidecar(
        &t.shared_xmp,
        &["-XMP:Rating=5", "-XMP-dc:Subject=beach", "-XMP:Label=Green"],
    );
    std::fs::write(&t.dt_xmp, DARKTABLE).unwrap();
    exiftool_sidecar(&t.lr3_xmp, &["-XMP:Rating=2"]);
    exiftool_sidecar(&t.upper_xmp, &["-XMP-dc:Title=Upper"]);
    exiftool_sidecar(&t.orphan, &["-XMP:Rating=3"]);
    t
}

#[test]
fn sidecars_of_both_namings_are_read_and_joined_to_their_images() {
    let test = test_name!();
    if !require_tools(test, &["exiftool", "sqlite3"]) {
        return;
    }
    let s = scratch!();
    let t = tree(s.path());
    let db = s.path().join("photos.db");
    let o = index(&db, &["--summary".as_ref(), t.photos.as_os_str()]);
    assert_exit(&o, 0);
    let counts = closing_counts(&o);
    assert_eq!(counts["seen"], 5, "the sidecars are not images: {counts:?}");
    assert_eq!(counts["sidecars seen"], 6, "{counts:?}");
    assert_eq!(counts["sidecars read"], 6, "{counts:?}");

    assert_eq!(
        joined(&db),
        [
            json!({"path": shown(&t.img1), "sidecar": shown(&t.img1_xmp), "rating": 4,
                   "label": "Red", "keywords": "[\"beach\",\"Fish & Chips\"]",
                   "hierarchical_keywords": null, "title": "Sunset <3"}),
            json!({"path": shown(&t.raw2), "sidecar": shown(&t.shared_xmp), "rating": 5,
                   "label": "Green", "keywords": "[\"beach\"]",
                   "hierarchical_keywords": null, "title": null}),
            json!({"path": shown(&t.jpg2), "sidecar": shown(&t.shared_xmp), "rating": 5,
                   "label": "Green", "keywords": "[\"beach\"]",
                   "hierarchical_keywords": null, "title": null}),
            json!({"path": shown(&t.png4), "sidecar": shown(&t.upper_xmp), "rating": null,
                   "label": null, "keywords": null, "hierarchical_keywords": null,
                   "title": "Upper"}),
            json!({"path": shown(&t.raw3), "sidecar": shown(&t.dt_xmp), "rating": 1,
                   "label": null, "keywords": "[\"sea\",\"Café\"]",
                   "hierarchical_keywords": "[\"Places|France|Brest\"]", "title": null}),
        ]
    );
    // Every sidecar has its row, those of no image (or that lost to NAME.EXT.xmp) too.
    let rows: Vec<Value> = query(
        &db,
        "SELECT path, rating, error FROM sidecars ORDER BY path",
    )
    .into_iter()
    .collect();
    assert_eq!(rows.len(), 6, "{rows:?}");
    assert!(rows.iter().all(|r| r["error"].is_null()), "{rows:?}");
    assert!(rows.contains(&json!({"path": shown(&t.orphan), "rating": 3, "error": null})));
    assert!(rows.contains(&json!({"path": shown(&t.lr3_xmp), "rating": 2, "error": null})));

    // docs/index.md's example: the five-star photos with the keyword "beach".
    let beach = query(
        &db,
        "SELECT images.path FROM images JOIN sidecars ON sidecars.id = images.sidecar
         WHERE sidecars.rating = 5
           AND EXISTS (SELECT 1 FROM json_each(sidecars.keywords) WHERE value = 'beach')
         ORDER BY images.path",
    );
    assert_eq!(
        beach,
        [
            json!({"path": shown(&t.raw2)}),
            json!({"path": shown(&t.jpg2)})
        ]
    );

    // Nothing changed: nothing is read, not even a sidecar.
    let o = index(&db, &["--summary".as_ref(), t.photos.as_os_str()]);
    assert_exit(&o, 0);
    let counts = closing_counts(&o);
    assert_eq!(
        (counts["unchanged"], counts["sidecars read"]),
        (5, 0),
        "{counts:?}"
    );

    // With --ext the walk still sees the sidecars beside the images it takes.
    let only_jpg = s.path().join("jpg.db");
    let o = index(
        &only_jpg,
        &["--ext".as_ref(), "jpg".as_ref(), t.photos.as_os_str()],
    );
    assert_exit(&o, 0);
    assert_eq!(
        query(
            &only_jpg,
            "SELECT i.path, s.rating FROM images i JOIN sidecars s ON s.id = i.sidecar
             ORDER BY i.path"
        ),
        [
            json!({"path": shown(&t.img1), "rating": 4}),
            json!({"path": shown(&t.jpg2), "rating": 5}),
        ]
    );
    assert_eq!(
        one(&only_jpg, "SELECT count(*) AS n FROM sidecars", "n"),
        json!(6),
        "every sidecar has its row, whether or not its image is taken"
    );
    // A --glob that passes over the sidecars removes none of their rows: they are there.
    let o = index(
        &only_jpg,
        &[
            "--glob".as_ref(),
            "*.jpg".as_ref(),
            "--summary".as_ref(),
            t.photos.as_os_str(),
        ],
    );
    assert_exit(&o, 0);
    assert_eq!(
        one(&only_jpg, "SELECT count(*) AS n FROM sidecars", "n"),
        json!(6),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // With --all-files a sidecar is still a sidecar, never an image row.
    let all = s.path().join("all.db");
    assert_exit(
        &index(&all, &["--all-files".as_ref(), t.photos.as_os_str()]),
        0,
    );
    assert_eq!(one(&all, "SELECT count(*) AS n FROM images", "n"), json!(5));
    assert_eq!(joined(&all), joined(&db));
}

#[test]
fn a_changed_sidecar_updates_its_row_without_reading_the_image_and_a_removed_one_goes() {
    let test = test_name!();
    if !require_tools(test, &["exiftool", "sqlite3"]) {
        return;
    }
    let s = scratch!();
    let t = tree(s.path());
    let db = s.path().join("photos.db");
    assert_exit(&index(&db, &[t.photos.as_os_str()]), 0);
    let image_scans = || query(&db, "SELECT path, scan, blake3 FROM images ORDER BY path");
    let before = image_scans();

    // exiftool edits the sidecar in place, as a photo manager saving a new rating.
    let o = Command::new("exiftool")
        .args([
            "-q",
            "-overwrite_original",
            "-XMP:Rating=1",
            "-XMP-dc:Subject+=sunset",
        ])
        .arg(&t.img1_xmp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = index(&db, &["--summary".as_ref(), t.photos.as_os_str()]);
    assert_exit(&o, 0);
    let counts = closing_counts(&o);
    assert_eq!(
        (
            counts["changed"],
            counts["unchanged"],
            counts["sidecars read"]
        ),
        (0, 5, 1),
        "only the sidecar is read: {counts:?}"
    );
    assert_eq!(files_read(&o), Some(1), "{}", stderr(&o));
    assert_eq!(image_scans(), before, "no image row was written again");
    let scan = one(&db, "SELECT max(id) AS id FROM scans", "id");
    let row = query(
        &db,
        &format!(
            "SELECT s.rating, s.keywords, s.scan FROM images i JOIN sidecars s ON s.id = i.sidecar
             WHERE i.path = '{}'",
            t.img1.display()
        ),
    );
    assert_eq!(
        row,
        [
            json!({"rating": 1, "keywords": "[\"beach\",\"Fish & Chips\",\"sunset\"]",
                "scan": scan})
        ]
    );

    // Edited again keeping its size and modification time (`exiftool -P`, one digit for
    // another): a new file all the same, so it is read again.
    let meta = std::fs::metadata(&t.img1_xmp).unwrap();
    let o = Command::new("exiftool")
        .args(["-q", "-overwrite_original", "-P", "-XMP:Rating=2"])
        .arg(&t.img1_xmp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // exiftool -P keeps whole seconds; the time is put back to the nanosecond, as a tool
    // that copies it exactly would.
    std::fs::File::options()
        .write(true)
        .open(&t.img1_xmp)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    let now = std::fs::metadata(&t.img1_xmp).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (now.len(), now.modified().unwrap()),
        (meta.len(), meta.modified().unwrap()),
        "the same size and time"
    );
    assert_ne!(now.ino(), meta.ino(), "exiftool wrote a new file");
    let o = index(&db, &["--summary".as_ref(), t.photos.as_os_str()]);
    assert_exit(&o, 0);
    assert_eq!(closing_counts(&o)["sidecars read"], 1, "{}", stderr(&o));
    let rating = format!(
        "SELECT s.rating FROM images i JOIN sidecars s ON s.id = i.sidecar WHERE i.path = '{}'",
        t.img1.display()
    );
    assert_eq!(query(&db, &rating), [json!({"rating": 2})]);

    // The darktable sidecar goes: IMG_3.CR2 falls back to IMG_3.xmp (Lightroom's name).
    std::fs::remove_file(&t.dt_xmp).unwrap();
    // The shared sidecar goes: both its images lose their fields.
    std::fs::remove_file(&t.shared_xmp).unwrap();
    let o = index(&db, &["--summary".as_ref(), t.photos.as_os_str()]);
    assert_exit(&o, 0);
    let counts = closing_counts(&o);
    assert_eq!(
        (
            counts["sidecars removed"],
            counts["sidecars read"],
            counts["unchanged"]
        ),
        (2, 0, 5),
        "{counts:?}"
    );
    assert_eq!(image_scans(), before, "still no image row written again");
    let links: Vec<Value> = query(
        &db,
        "SELECT i.path, s.path AS sidecar, s.rating FROM images i
         LEFT JOIN sidecars s ON s.id = i.sidecar ORDER BY i.path",
    );
    let link = |image: &Path| {
        links
            .iter()
            .find(|r| r["path"] == shown(image))
            .unwrap_or_else(|| panic!("no row for {}", image.display()))
            .clone()
    };
    for image in [&t.raw2, &t.jpg2] {
        assert_eq!(
            link(image),
            json!({"path": shown(image), "sidecar": null, "rating": null})
        );
    }
    assert_eq!(
        link(&t.raw3),
        json!({"path": shown(&t.raw3), "sidecar": shown(&t.lr3_xmp), "rating": 2})
    );
    let gone = query(
        &db,
        &format!(
            "SELECT path FROM sidecars WHERE path IN ('{}', '{}')",
            t.dt_xmp.display(),
            t.shared_xmp.display()
        ),
    );
    assert!(gone.is_empty(), "{gone:?}");
}

#[test]
fn a_sidecar_in_a_directory_that_cannot_be_listed_keeps_its_row_and_its_link() {
    use std::os::unix::fs::PermissionsExt;
    let test = test_name!();
    // As nobody through setpriv: root lists every directory.
    if !require_root(test) || !require_tools(test, &["setpriv", "exiftool", "sqlite3"]) {
        return;
    }
    let s = scratch!();
    let mode = |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(s.path(), 0o755).unwrap();
    let t = tree(s.path());
    let db_dir = s.path().join("db");
    std::fs::create_dir(&db_dir).unwrap();
    mode(&db_dir, 0o777).unwrap();
    let db = db_dir.join("photos.db");
    let as_nobody = || {
        output_within(
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_seekless"))
                .args(["index", "--summary", "--db"])
                .arg(&db)
                .arg(&t.photos),
            RUN_LIMIT,
        )
    };
    assert_exit(&as_nobody(), 0);
    let dt_link = || {
        query(
            &db,
            &format!(
                "SELECT s.path AS sidecar, s.rating FROM images i
                 LEFT JOIN sidecars s ON s.id = i.sidecar WHERE i.path = '{}'",
                t.raw3.display()
            ),
        )
    };
    assert_eq!(
        dt_link(),
        [json!({"sidecar": shown(&t.dt_xmp), "rating": 1})]
    );

    // `dt` cannot be listed: its sidecars' rows and the image's link stay; a sidecar
    // really gone from a directory listed whole still goes.
    let dt = t.photos.join("dt");
    mode(&dt, 0o000).unwrap();
    std::fs::remove_file(&t.orphan).unwrap();
    let o = as_nobody();
    mode(&dt, 0o755).unwrap();
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("seekless: {}: Permission denied", dt.display())),
        "{err}"
    );
    assert_eq!(closing_counts(&o)["sidecars removed"], 1, "{err}");
    assert_eq!(
        dt_link(),
        [json!({"sidecar": shown(&t.dt_xmp), "rating": 1})]
    );
    let paths: Vec<Value> = query(&db, "SELECT path FROM sidecars ORDER BY path")
        .into_iter()
        .map(|r| r["path"].clone())
        .collect();
    assert_eq!(paths.len(), 5, "{paths:?}");
    assert!(!paths.contains(&shown(&t.orphan)), "{paths:?}");
    assert!(paths.contains(&shown(&t.dt_xmp)) && paths.contains(&shown(&t.lr3_xmp)));
}
