//! `seekless dupes` (docs/usage.md) on a set of photos drawn by Python's Pillow with known
//! copies: byte-identical, re-encoded at JPEG quality 60, halved, the next frame of a burst
//! (camera and time written by exiftool), stretched to another aspect ratio, and unrelated
//! pictures. The catalog is made by `seekless index --thumbs`; the contact sheet is loaded
//! by headless Chromium.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::*;

/// Draws the set into `dir` (Pillow), `KIND` as in the file names:
/// - `a.jpg`, `a-copy.jpg`, `old/a.jpg`: byte-identical;
/// - `b.png` and `b-q60.jpg`: the PNG saved again as JPEG quality 60;
/// - `c.jpg`, `c-copy.jpg` (identical) and `c-half.jpg` (halved);
/// - `d1.jpg` and `d2.jpg`: a burst (d2 shifted by 6 pixels, a small subject moved in;
///   camera and times 1 s apart written by exiftool afterwards);
/// - `h.jpg` and `h-wide.jpg`: the same picture stretched to 16:9 (the same pHash, another
///   aspect ratio: not a copy);
/// - `i.jpg` and `i-recoloured.jpg`: the same luminance, other colours (Cb and Cr swapped:
///   pHashes 2 bits apart, thumbnails far apart: not a copy);
/// - `e.jpg`, `f.png`, `g.jpg`: unrelated.
const DRAW: &str = r#"
import random, shutil, sys
from PIL import Image, ImageChops, ImageDraw
def scene(seed, w, h):
    rng = random.Random(seed)
    a = [rng.randrange(256) for _ in range(3)]
    b = [rng.randrange(256) for _ in range(3)]
    im = Image.new('RGB', (w, h))
    d = ImageDraw.Draw(im)
    vertical = rng.random() < 0.5
    n = h if vertical else w
    for i in range(n):
        t = i / (n - 1)
        c = tuple(int(a[k] + (b[k] - a[k]) * t) for k in range(3))
        d.line((0, i, w, i) if vertical else (i, 0, i, h), fill=c)
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
    return im
out = sys.argv[1]
def jpeg(im, name, q=92):
    im.save(f'{out}/{name}', 'JPEG', quality=q)
jpeg(scene(1, 640, 480), 'a.jpg')
shutil.copy(f'{out}/a.jpg', f'{out}/a-copy.jpg')
shutil.copy(f'{out}/a.jpg', f'{out}/old/a.jpg')
scene(2, 640, 480).save(f'{out}/b.png')
jpeg(Image.open(f'{out}/b.png').convert('RGB'), 'b-q60.jpg', 60)
jpeg(scene(3, 800, 600), 'c.jpg')
shutil.copy(f'{out}/c.jpg', f'{out}/c-copy.jpg')
jpeg(Image.open(f'{out}/c.jpg').resize((400, 300), Image.LANCZOS), 'c-half.jpg')
first = scene(4, 640, 480)
jpeg(first, 'd1.jpg')
following = ImageChops.offset(first, 6, 0)
ImageDraw.Draw(following).ellipse((400, 300, 420, 320), fill=(250, 250, 240))
jpeg(following, 'd2.jpg')
jpeg(scene(5, 640, 480), 'e.jpg')
scene(6, 640, 480).save(f'{out}/f.png')
jpeg(scene(7, 480, 640), 'g.jpg')
jpeg(scene(8, 640, 480), 'h.jpg')
jpeg(Image.open(f'{out}/h.jpg').resize((640, 360), Image.LANCZOS), 'h-wide.jpg')
recoloured = scene(9, 640, 480)
jpeg(recoloured, 'i.jpg')
y, cb, cr = recoloured.convert('YCbCr').split()
jpeg(Image.merge('YCbCr', (y, cr, cb)).convert('RGB'), 'i-recoloured.jpg')
"#;

/// A Python 3 with Pillow, or `None` after a [`skip`].
pub(crate) fn python(test: &str) -> Option<&'static str> {
    if !require_tools(test, &["exiftool", "sqlite3"]) {
        return None;
    }
    python_with(test, &["PIL"])
}

/// The photo set in `dir/photos`, and a catalog of it in `dir/photos.db` (with thumbnails
/// and perceptual hashes when `thumbs`).
pub(crate) fn catalog(python: &str, dir: &Path, thumbs: bool) -> (PathBuf, PathBuf) {
    let photos = dir.join("photos");
    std::fs::create_dir_all(photos.join("old")).unwrap();
    run(Command::new(python).args(["-c", DRAW]).arg(&photos));
    for (name, time) in [("d1.jpg", "10:00:00"), ("d2.jpg", "10:00:01")] {
        run(Command::new("exiftool")
            .args([
                "-q",
                "-overwrite_original",
                "-Make=Canon",
                "-Model=Canon EOS 5D",
            ])
            .arg(format!("-DateTimeOriginal=2026:05:01 {time}"))
            .arg(photos.join(name)));
    }
    let db = dir.join("photos.db");
    let mut cmd = seekless();
    cmd.args(["index", "--db"]).arg(&db);
    if thumbs {
        cmd.arg("--thumbs");
    }
    let o = output_within(cmd.arg(&photos), RUN_LIMIT);
    assert_exit(&o, 0);
    (photos, db)
}

pub(crate) fn dupes(db: &Path, args: &[&str]) -> Output {
    output_within(
        seekless().args(["dupes", "--db"]).arg(db).args(args),
        RUN_LIMIT,
    )
}

/// A group as the tests compare it: its kind, and its files relative to the photos, the
/// keeper first (marked `*`), the rest sorted.
type Shape = (String, Vec<String>);

fn shape(kind: &str, photos: &Path, mut files: Vec<(String, bool)>) -> Shape {
    let rel = |p: &str| {
        Path::new(p)
            .strip_prefix(photos)
            .unwrap_or_else(|_| panic!("{p} is not under {}", photos.display()))
            .to_string_lossy()
            .into_owned()
    };
    files.sort_by_key(|(p, keeper)| (!keeper, rel(p)));
    let names = files
        .into_iter()
        .map(|(p, keeper)| format!("{}{}", if keeper { "*" } else { "" }, rel(&p)))
        .collect();
    (kind.to_string(), names)
}

fn expect(groups: &[(&str, &[&str])]) -> BTreeSet<Shape> {
    groups
        .iter()
        .map(|(k, files)| (k.to_string(), files.iter().map(|f| f.to_string()).collect()))
        .collect()
}

/// The groups of the text output: a heading `KIND: …`, one line per file (the keeper
/// marked `*` in the first column, the path last, after the columns), a blank line between.
fn text_groups(out: &[u8], photos: &Path) -> Vec<Shape> {
    let text = String::from_utf8(out.to_vec()).unwrap();
    let prefix = format!("{}/", photos.display());
    text.split("\n\n")
        .filter(|g| !g.trim().is_empty())
        .map(|g| {
            let mut lines = g.lines();
            let kind = lines.next().unwrap().split(':').next().unwrap().to_string();
            let files = lines
                .map(|l| {
                    let at = l
                        .find(&prefix)
                        .unwrap_or_else(|| panic!("no path in {l:?}"));
                    (l[at..].to_string(), l.starts_with('*'))
                })
                .collect();
            shape(&kind, photos, files)
        })
        .collect()
}

fn json_groups(out: &[u8], photos: &Path) -> (Value, Vec<Shape>) {
    let doc: Value = serde_json::from_slice(out).unwrap();
    let groups = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let files = g["members"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["path"].as_str().unwrap().to_string(),
                        m["keeper"].as_bool().unwrap(),
                    )
                })
                .collect();
            shape(g["kind"].as_str().unwrap(), photos, files)
        })
        .collect();
    (doc, groups)
}

/// Every file in `dir` (recursively) with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(snapshot(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn dupes_finds_exactly_the_expected_groups_in_text_json_and_nul_lists() {
    let test = "dupes_finds_exactly_the_expected_groups_in_text_json_and_nul_lists";
    let Some(python) = python(test) else { return };
    let dir = scratch_dir(test);
    let (photos, db) = catalog(python, dir.path(), true);
    let before = snapshot(dir.path());

    let o = dupes(&db, &["--summary"]);
    assert_exit(&o, 0);
    let want = expect(&[
        ("exact", &["*a.jpg", "a-copy.jpg", "old/a.jpg"]),
        ("similar", &["*b.png", "b-q60.jpg"]),
        ("similar", &["*c.jpg", "c-copy.jpg", "c-half.jpg"]),
        ("burst", &["d1.jpg", "d2.jpg"]),
    ]);
    let text = text_groups(&o.stdout, &photos);
    assert_eq!(
        text.iter().cloned().collect::<BTreeSet<_>>(),
        want,
        "stdout:\n{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(text.len(), want.len(), "each group once");
    // The stretched copy was a pHash match refused by its aspect ratio, the recoloured one
    // by its thumbnail.
    let err = stderr(&o);
    assert!(
        err.contains(", 1 refused by aspect ratio, 1 by thumbnail\n"),
        "{err}"
    );
    assert!(
        err.contains("17 images (17 with a perceptual hash, 0 without a content hash ignored)"),
        "{err}"
    );

    // JSON: the same groups, largest saving first, bursts last, savings that add up.
    let o = dupes(&db, &["--json"]);
    assert_exit(&o, 0);
    let (doc, groups) = json_groups(&o.stdout, &photos);
    assert_eq!(
        groups, text,
        "JSON and text list the same groups in the same order"
    );
    let arr = doc["groups"].as_array().unwrap();
    let savings: Vec<u64> = arr.iter().map(|g| g["saving"].as_u64().unwrap()).collect();
    assert!(savings.windows(2).all(|w| w[0] >= w[1]), "{savings:?}");
    assert_eq!(arr.last().unwrap()["kind"], "burst");
    for g in arr {
        let members = g["members"].as_array().unwrap();
        let rest: u64 = members
            .iter()
            .filter(|m| m["keeper"] == false)
            .map(|m| m["size"].as_u64().unwrap())
            .sum();
        let expected = if g["kind"] == "burst" { 0 } else { rest };
        assert_eq!(g["saving"].as_u64().unwrap(), expected);
        let on_disk = std::fs::metadata(members[0]["path"].as_str().unwrap())
            .unwrap()
            .len();
        assert_eq!(members[0]["size"].as_u64().unwrap(), on_disk);
    }
    let burst = arr.last().unwrap()["members"].as_array().unwrap();
    assert_eq!(burst[0]["model"], "Canon EOS 5D");
    assert_eq!(doc["saving"].as_u64().unwrap(), savings.iter().sum::<u64>());

    // -0: the files one could delete, each ended by a NUL, bursts not among them.
    let o = dupes(&db, &["-0"]);
    assert_exit(&o, 0);
    let listed: BTreeSet<String> = o
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| {
            Path::new(std::str::from_utf8(p).unwrap())
                .strip_prefix(&photos)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let deletable: BTreeSet<String> = [
        "a-copy.jpg",
        "old/a.jpg",
        "b-q60.jpg",
        "c-copy.jpg",
        "c-half.jpg",
    ]
    .map(String::from)
    .into();
    assert_eq!(listed, deletable);
    assert_eq!(o.stdout.last(), Some(&0));

    // Bursts counted as duplicates: the older frame is kept.
    let o = dupes(&db, &["--json", "--bursts-are-dupes"]);
    assert_exit(&o, 0);
    let (_, groups) = json_groups(&o.stdout, &photos);
    let mut want_all = want.clone();
    want_all.remove(&("burst".into(), vec!["d1.jpg".into(), "d2.jpg".into()]));
    want_all.insert(("similar".into(), vec!["*d1.jpg".into(), "d2.jpg".into()]));
    assert_eq!(groups.into_iter().collect::<BTreeSet<_>>(), want_all);

    // --similar 0: byte-identical files only.
    let o = dupes(&db, &["--json", "--similar", "0"]);
    assert_exit(&o, 0);
    let (_, groups) = json_groups(&o.stdout, &photos);
    assert_eq!(
        groups.into_iter().collect::<BTreeSet<_>>(),
        expect(&[
            ("exact", &["*a.jpg", "a-copy.jpg", "old/a.jpg"]),
            ("exact", &["*c.jpg", "c-copy.jpg"])
        ])
    );

    // The catalog was only read: every file as it was, nothing made beside it.
    assert_eq!(snapshot(dir.path()), before, "dupes wrote something");

    // A file that could not be read (no content hash) is left out.
    let broken = dir.path().join("broken.db");
    std::fs::copy(&db, &broken).unwrap();
    run(Command::new("sqlite3").arg(&broken).arg(
        "UPDATE images SET blake3 = NULL, error = 'unreadable' WHERE path LIKE '%/a-copy.jpg'",
    ));
    let o = dupes(&broken, &["--json", "--similar", "0", "--summary"]);
    assert_exit(&o, 0);
    let (doc, groups) = json_groups(&o.stdout, &photos);
    assert!(
        groups.contains(&("exact".into(), vec!["*a.jpg".into(), "old/a.jpg".into()])),
        "{groups:?}"
    );
    assert_eq!(doc["ignored"], 1);
}

#[test]
fn dupes_without_perceptual_hashes_finds_exact_groups_and_says_so() {
    let test = "dupes_without_perceptual_hashes_finds_exact_groups_and_says_so";
    let Some(python) = python(test) else { return };
    let dir = scratch_dir(test);
    let (photos, db) = catalog(python, dir.path(), false);
    let o = dupes(&db, &[]);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).contains(
            "has a perceptual hash (seekless index --thumbs makes them): exact duplicates only"
        ),
        "{}",
        stderr(&o)
    );
    let groups: BTreeSet<_> = text_groups(&o.stdout, &photos).into_iter().collect();
    assert_eq!(
        groups,
        expect(&[
            ("exact", &["*a.jpg", "a-copy.jpg", "old/a.jpg"]),
            ("exact", &["*c.jpg", "c-copy.jpg"])
        ])
    );
    // With --similar 0 there is nothing to say.
    let o = dupes(&db, &["--similar", "0"]);
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");
}

#[test]
fn dupes_refuses_what_is_not_a_catalog_and_leaves_it_untouched() {
    let test = "dupes_refuses_what_is_not_a_catalog_and_leaves_it_untouched";
    if !require_tool(test, "sqlite3") {
        return;
    }
    let dir = scratch_dir(test);
    let other = dir.path().join("other.db");
    run(Command::new("sqlite3")
        .arg(&other)
        .arg("PRAGMA application_id = 1234; CREATE TABLE images (id INTEGER PRIMARY KEY, blake3 TEXT); INSERT INTO images VALUES (1, 'x')"));
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database\n".repeat(20)).unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, "").unwrap();
    let before = snapshot(dir.path());
    for (file, why) in [
        (
            &other,
            "an SQLite database of another application (application_id 0x000004d2)",
        ),
        (&text, "not an SQLite database"),
        (&empty, "an empty file"),
    ] {
        let o = dupes(file, &[]);
        assert_exit(&o, 2);
        assert_eq!(
            stderr(&o),
            format!(
                "seekless: {}: {why}: not a seekless catalog, left untouched\n",
                file.display()
            )
        );
        assert!(o.stdout.is_empty());
    }
    assert_eq!(
        snapshot(dir.path()),
        before,
        "a refused file was changed, or something made beside it"
    );
    // A missing catalog is an error (exit 1), and is not created.
    let missing = dir.path().join("missing.db");
    let o = dupes(&missing, &[]);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("missing.db"), "{}", stderr(&o));
    assert!(!missing.exists());
    // Usage: --json and -0 do not go together; --similar has a ceiling.
    assert_exit(&dupes(&missing, &["--json", "-0"]), 2);
    assert_exit(&dupes(&missing, &["--similar", "33"]), 2);
}

#[test]
fn contact_sheet_shows_every_thumbnail_in_chromium() {
    let test = "contact_sheet_shows_every_thumbnail_in_chromium";
    let Some(python) = python(test) else { return };
    if !require_tools(test, &["chromium", "openssl"]) {
        return;
    }
    let dir = scratch_dir(test);
    let (photos, db) = catalog(python, dir.path(), true);
    // One file of an exact group as index finds a damaged one: the sheet says so.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "UPDATE images SET damaged = 'truncated at 1.0 KiB of 2.0 KiB' WHERE id = (
                SELECT min(id) FROM images WHERE blake3 IN (
                    SELECT blake3 FROM images GROUP BY blake3 HAVING count(*) > 1))",
        )
        .unwrap();
    let sheet = dir.path().join("sheet.html");
    let o = dupes(&db, &["--html", sheet.to_str().unwrap(), "--json"]);
    assert_exit(&o, 0);
    let (doc, groups) = json_groups(&o.stdout, &photos);
    let files: usize = groups.iter().map(|(_, f)| f.len()).sum();
    let html = std::fs::read_to_string(&sheet).unwrap();
    // --json says which file is damaged, and it is not the keeper.
    let damaged: Vec<&Value> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["members"].as_array().unwrap())
        .filter(|m| m.get("damaged").is_some())
        .collect();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    assert_eq!(
        (&damaged[0]["damaged"], &damaged[0]["keeper"]),
        (
            &serde_json::json!("truncated at 1.0 KiB of 2.0 KiB"),
            &serde_json::json!(false)
        )
    );

    // The policy comes first in <head>, and names the page's one script and one style by
    // their SHA-256 (computed here by openssl).
    let head = "<html lang=\"en\"><head><meta http-equiv=\"Content-Security-Policy\" content=\"";
    let policy = html
        .split_once(head)
        .unwrap_or_else(|| panic!("no policy first in <head>:\n{}", &html[..300]))
        .1
        .split('"')
        .next()
        .unwrap();
    let inline = |open: &str, close: &str| -> Vec<String> {
        html.split(open)
            .skip(1)
            .map(|s| s.split(close).next().unwrap().to_string())
            .collect()
    };
    let scripts = inline("<script>", "</script>");
    let styles = inline("<style>", "</style>");
    assert_eq!(
        (scripts.len(), styles.len()),
        (1, 1),
        "one script, one style"
    );
    let sha256 = |text: &str| {
        let file = dir.path().join("hashed");
        std::fs::write(&file, text).unwrap();
        let digest = sh(&format!(
            "openssl dgst -sha256 -binary '{}' | base64 -w0",
            file.display()
        ));
        format!("'sha256-{digest}'")
    };
    assert_eq!(
        policy,
        format!(
            "default-src 'none'; script-src {}; style-src {}; img-src 'self' data:; \
             base-uri 'none'; form-action 'none'",
            sha256(&scripts[0]),
            sha256(&styles[0])
        )
    );
    // The groups are JSON islands nothing in them can end: a head, and one a page of 25.
    assert_eq!(
        html.matches("<script type=\"application/json\" id=\"groups\">")
            .count(),
        1
    );
    assert_eq!(
        html.matches("<script type=\"application/json\" class=\"page\">")
            .count(),
        groups.len().div_ceil(25)
    );
    // Nothing from the network; no thumbnail inline.
    for remote in [
        "http:",
        "https:",
        "\"//",
        "'//",
        "<link",
        "@import",
        "url(",
        "data:image",
    ] {
        assert!(
            !html.contains(remote),
            "the page refers to something outside it: {remote}"
        );
    }

    // Thumbnails: one file per distinct content, named by its BLAKE3, the catalog's own.
    let thumbs = dir.path().join("sheet.html.thumbs");
    let stored: std::collections::BTreeMap<String, Vec<u8>> = {
        let con = rusqlite::Connection::open(&db).unwrap();
        let mut st = con
            .prepare("SELECT i.blake3, t.jpeg FROM images i JOIN thumbs t ON t.image = i.id")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let contents: BTreeSet<String> = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["members"].as_array().unwrap())
        .map(|m| m["blake3"].as_str().unwrap().to_string())
        .collect();
    let listing = || -> BTreeSet<String> {
        std::fs::read_dir(&thumbs)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    let want: BTreeSet<String> = contents.iter().map(|b| format!("{b}.jpg")).collect();
    assert!(contents.len() < files, "the set has exact copies");
    assert_eq!(listing(), want, "one thumbnail per content");
    for b in &contents {
        assert_eq!(
            &std::fs::read(thumbs.join(format!("{b}.jpg"))).unwrap(),
            &stored[b],
            "{b}.jpg is the catalog's thumbnail"
        );
    }
    // No temporary left beside the page.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("seekless-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Chromium (its own profile, offline) shows the first page and decodes every
    // thumbnail on it.
    {
        let mut browser = cdp::Browser::launch(&dir.path().join("profile"), (1280, 1000));
        let tab = browser.open(&format!("file://{}", sheet.display()));
        browser.wait_for(
            &tab,
            "document.body.dataset.page === '1'",
            "first page shown",
        );
        let shown = browser.eval(
            &tab,
            "[document.querySelectorAll('section').length, \
              document.querySelectorAll('figure').length, \
              Number(document.body.dataset.thumbsShown), \
              Number(document.body.dataset.thumbsLoaded), \
              document.querySelectorAll('figure.keeper').length, \
              Array.from(document.images).every(i => i.complete && i.naturalWidth > 0), \
              Array.from(document.querySelectorAll('.damaged'), e => e.textContent), \
              document.querySelector('.damaged')?.closest('figure').classList.contains('keeper')]",
        );
        let duplicates = groups
            .iter()
            .filter(|(k, _)| k == "exact" || k == "similar")
            .count();
        assert_eq!(
            shown,
            serde_json::json!([
                groups.len(),
                files,
                files,
                files,
                duplicates,
                true,
                ["damaged: truncated at 1.0 KiB of 2.0 KiB"],
                false
            ]),
            "[groups, files, thumbnails shown, decoded, keepers marked, all decoded, \
             damaged marks, the damaged one the keeper]"
        );
        let shot = browser.call(
            Some(&tab.session),
            "Page.captureScreenshot",
            serde_json::json!({"format": "png"}),
        );
        let png = shot["data"].as_str().unwrap_or_default();
        assert!(
            png.starts_with("iVBORw0KGgo") && png.len() > 13_000,
            "a rendered page"
        );
    }

    // A second sheet reuses the thumbnails, and leaves what else is in the folder.
    std::fs::write(thumbs.join("mine.txt"), b"kept").unwrap();
    let times = || -> Vec<_> {
        want.iter()
            .map(|n| {
                std::fs::metadata(thumbs.join(n))
                    .unwrap()
                    .modified()
                    .unwrap()
            })
            .collect()
    };
    let before = times();
    assert_exit(&dupes(&db, &["--html", sheet.to_str().unwrap()]), 0);
    let after = times();
    assert_eq!(
        before, after,
        "thumbnails already there are not written again"
    );
    assert_eq!(std::fs::read(thumbs.join("mine.txt")).unwrap(), b"kept");
    // A file there that is not the thumbnail it would write is never replaced: said, and
    // its content shown without one.
    // One cut short (a crash, a full disk) is completed.
    let cut = thumbs.join(want.iter().nth(1).unwrap());
    let whole = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    assert_exit(&dupes(&db, &["--html", sheet.to_str().unwrap()]), 0);
    assert_eq!(
        std::fs::read(&cut).unwrap(),
        whole,
        "the cut-short thumbnail completed"
    );
    let theirs = thumbs.join(want.iter().next().unwrap());
    std::fs::write(&theirs, b"someone else's").unwrap();
    let o = dupes(&db, &["--html", sheet.to_str().unwrap()]);
    assert_exit(&o, 0);
    assert_eq!(std::fs::read(&theirs).unwrap(), b"someone else's");
    assert!(
        stderr(&o).contains(
            "files there that are not the thumbnail this sheet would write, left as they are: 1 "
        ),
        "{}",
        stderr(&o)
    );
}

/// The BLAKE3 of each file of the groups, by name relative to the photos.
fn contents(doc: &Value, photos: &Path) -> std::collections::BTreeMap<String, String> {
    doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["members"].as_array().unwrap())
        .map(|m| {
            let p = Path::new(m["path"].as_str().unwrap());
            (
                p.strip_prefix(photos)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                m["blake3"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn similar_files_are_acted_on_only_when_asked_and_only_by_moving_them() {
    let test = "similar_files_are_acted_on_only_when_asked_and_only_by_moving_them";
    let Some(python) = python(test) else { return };
    let dir = scratch_dir(test);
    let (photos, db) = catalog(python, dir.path(), true);
    let moved = dir.path().join("moved");
    let to = moved.to_str().unwrap();
    let under = |rel: &str| moved.join(photos.join(rel).strip_prefix("/").unwrap());

    // Without --include-similar: the exact copies only, a similar group's identical copy
    // of its keeper among them.
    let o = dupes(&db, &["--act", "move", "--to", to, "--dry-run"]);
    assert_exit(&o, 0);
    let plan = String::from_utf8_lossy(&o.stdout).into_owned();
    for rel in ["a-copy.jpg", "old/a.jpg", "c-copy.jpg"] {
        assert!(
            plan.contains(&format!("move {} ->", photos.join(rel).display())),
            "{plan}"
        );
    }
    assert_eq!(plan.lines().count(), 3, "{plan}");
    // Replacing a file that is not identical is refused outright.
    assert_exit(&dupes(&db, &["--act", "reflink", "--include-similar"]), 2);

    // "Not duplicates" for b's pair; then similar files are moved when asked.
    let o = dupes(&db, &["--json"]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let blake = contents(&doc, &photos);
    let decisions = dir.path().join("decisions.json");
    std::fs::write(
        &decisions,
        serde_json::to_vec(&serde_json::json!({
            "seekless_decisions": 1,
            "decisions": [{"decision": "not-duplicates",
                           "contents": [blake["b.png"], blake["b-q60.jpg"]]}]
        }))
        .unwrap(),
    )
    .unwrap();
    let journal = dir.path().join("similar.journal");
    let o = dupes(
        &db,
        &[
            "--apply",
            decisions.to_str().unwrap(),
            "--act",
            "move",
            "--to",
            to,
            "--include-similar",
            "--journal",
            journal.to_str().unwrap(),
        ],
    );
    assert_exit(&o, 0);
    for rel in ["a-copy.jpg", "old/a.jpg", "c-copy.jpg", "c-half.jpg"] {
        assert!(!photos.join(rel).exists() && under(rel).exists(), "{rel}");
    }
    for rel in ["a.jpg", "b.png", "b-q60.jpg", "c.jpg", "d1.jpg", "d2.jpg"] {
        assert!(photos.join(rel).exists(), "{rel}");
    }
    // The decision holds on the next run: b's files are not a group.
    let o = dupes(&db, &["--json", "--summary"]);
    let (_, groups) = json_groups(&o.stdout, &photos);
    assert!(
        groups
            .iter()
            .all(|(_, f)| !f.iter().any(|n| n.contains("b."))),
        "{groups:?}"
    );
    let o = dupes(&db, &["--decisions"]);
    let listed = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.contains("not-duplicates  2 contents"), "{listed}");
    let o = output_within(
        seekless().args(["dupes", "--undo"]).arg(&journal),
        RUN_LIMIT,
    );
    assert_exit(&o, 0);
    assert!(photos.join("c-half.jpg").exists() && photos.join("old/a.jpg").exists());
}
