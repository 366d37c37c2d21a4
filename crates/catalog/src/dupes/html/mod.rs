//! The contact sheet: a review page for the groups, which scales to hundreds of thousands
//! of them.
//!
//! - **The page** (`sheet.html`) holds the groups as JSON data islands: a head
//!   (`<script type="application/json" id="groups">`: the catalog, the thumbnails' folder,
//!   the count) and one island a page of [`GROUPS_PER_PAGE`] groups
//!   (`<script type="application/json" class="page">`, one group a line, its contents
//!   listed once, members naming theirs by index), which its own script reads, parses and
//!   renders only when that page is shown (`sheet.js`, with `textContent` only: nothing
//!   from the catalog is ever parsed as HTML). In the islands `<`, `>`, `&` and every
//!   non-ASCII character are `\u` escapes: no file name can end the element, and the text
//!   stays ASCII (a browser keeps it at one byte a character).
//! - **The thumbnails** are files beside it, in [`thumbs_dir`] (`sheet.html.thumbs/`),
//!   one JPEG per distinct content named by its BLAKE3 (`<blake3>.jpg`): byte-identical
//!   files share one, and a later sheet reuses what is there. Only missing files are
//!   written (one holding only the start of its thumbnail, cut short, is completed; any
//!   other file there is never replaced: its content is shown without a thumbnail);
//!   nothing there is ever removed.
//!   A page's thumbnails are loaded when that page is shown, never before.
//! - **A Content-Security-Policy** first in `<head>`: `default-src 'none'`, the page's one
//!   script and one style by their SHA-256, images from the page's own place (`'self'`,
//!   which lets a `file://` page load `file://` thumbnails; Chromium checked) and `data:`.
//!   No network.
//! - **Decisions**: in exact and similar groups a click on a file picks (or confirms) the
//!   keeper; "Keep all" and "Not duplicates" mark the group; in a similar group "Not a
//!   duplicate of the keeper" marks one file against the keeper. "Save decisions" downloads
//!   them as `seekless-decisions.json` (`{"seekless_decisions": 1, "db", "decisions"}`), for
//!   `seekless dupes --apply`. Bursts and pairs are shown for information.
//!
//! The page (`<body data-thumbs-loaded="N" data-thumbs-shown="M" data-page="P">` once a
//! page's thumbnails are decoded, and `performance.mark("page-ready")`) says when it is
//! ready, for tests and benchmarks.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::Digest;

use super::{Catalog, Dupes, DupesError, GroupKind, Member};
use seekless_jobs::AtomicFile;

/// The page's style (its SHA-256 is in the policy).
const STYLE: &str = include_str!("sheet.css");

/// The page's script (its SHA-256 is in the policy).
const SCRIPT: &str = include_str!("sheet.js");

/// Groups a page shows, and a page island holds (the script reads it from the head island).
pub const GROUPS_PER_PAGE: usize = 25;

/// What [`write_contact_sheet`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sheet {
    /// Files shown with a thumbnail.
    pub thumbnails: u64,
    /// Distinct thumbnail files the page uses (one per content).
    pub distinct: u64,
    /// Of those, files written by this run (the others were there already).
    pub written: u64,
    /// Contents whose file in the folder is not the thumbnail this run would write (cut
    /// short, made at another size, or someone else's): left as they are, shown without a
    /// thumbnail.
    pub kept_aside: u64,
}

/// The folder of thumbnails beside the page `path`: its name with `.thumbs` added
/// (`sheet.html` → `sheet.html.thumbs`).
pub fn thumbs_dir(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".thumbs");
    path.with_file_name(name)
}

/// Writes the contact sheet of `dupes` (found in `catalog`) to `path`, and the thumbnails
/// it shows into [`thumbs_dir`]`(path)`: the thumbnails first, then the page, atomically
/// (under a temporary name, renamed into place when complete), so a page never names a
/// thumbnail that is not there. `title` heads the page.
///
/// ```no_run
/// use seekless_catalog::dupes::{Catalog, DupesOptions, html};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let catalog = Catalog::open("photos.db".as_ref())?;
/// let dupes = catalog.find(&DupesOptions::default())?;
/// let sheet = html::write_contact_sheet(&catalog, &dupes, "Duplicates", "sheet.html".as_ref())?;
/// println!("{} thumbnails, {} new files in sheet.html.thumbs", sheet.thumbnails, sheet.written);
/// # Ok(()) }
/// ```
pub fn write_contact_sheet(
    catalog: &Catalog,
    dupes: &Dupes,
    title: &str,
    path: &Path,
) -> Result<Sheet, DupesError> {
    let write_err = |path: &Path, e: std::io::Error| DupesError::Write {
        path: path.to_path_buf(),
        message: seekless_sys::describe_io(&e),
    };
    let dir = thumbs_dir(path);
    let mut sheet = Sheet::default();
    let thumbs = write_thumbnails(catalog, dupes, &dir, &mut sheet)?;
    let file = AtomicFile::create(path).map_err(|e| write_err(path, e))?;
    let mut out = BufWriter::new(file.file());
    page(catalog, dupes, title, &dir, &thumbs, &mut out).map_err(|e| write_err(path, e))?;
    out.flush().map_err(|e| write_err(path, e))?;
    drop(out);
    file.commit().map_err(|e| write_err(path, e))?;
    Ok(sheet)
}

/// Each distinct content's thumbnail (width, height; none when the catalog has none).
type Thumbs<'a> = HashMap<&'a str, Option<(u32, u32)>>;

/// Writes the thumbnail of every content the groups show that is not in `dir` yet.
///
/// Each is created under its final name (`create_new`: never over another file), without
/// the temporary-and-rename of [`AtomicFile`], which reads the directory on every call
/// (for temporaries of ended runs) and would make 100,000 thumbnails quadratic. A file
/// there that holds the start of the thumbnail, and nothing else (one cut short by a crash
/// or a full disk), is completed; any other file there (made at another size, not ours,
/// not a regular file) is never replaced: its content is shown without a thumbnail
/// ([`Sheet::kept_aside`]; remove the folder to have every thumbnail written again).
fn write_thumbnails<'a>(
    catalog: &Catalog,
    dupes: &'a Dupes,
    dir: &Path,
    sheet: &mut Sheet,
) -> Result<Thumbs<'a>, DupesError> {
    let write_err = |path: &Path, e: std::io::Error| DupesError::Write {
        path: path.to_path_buf(),
        message: seekless_sys::describe_io(&e),
    };
    let mut thumbs = Thumbs::new();
    let mut made_dir = false;
    for m in dupes.groups.iter().flat_map(|g| &g.members) {
        if let Some(known) = thumbs.get(m.blake3.as_str()) {
            sheet.thumbnails += u64::from(known.is_some());
            continue;
        }
        let Some(t) = catalog.thumbnail(m.id)? else {
            thumbs.insert(&m.blake3, None);
            continue;
        };
        if !made_dir {
            std::fs::create_dir_all(dir).map_err(|e| write_err(dir, e))?;
            made_dir = true;
        }
        let file = dir.join(format!("{}.jpg", m.blake3));
        // How much of the thumbnail is there already; `None`: something else is there.
        let there = match std::fs::symlink_metadata(&file) {
            Ok(meta) if meta.is_file() && meta.len() <= t.jpeg.len() as u64 => {
                let have = std::fs::read(&file).map_err(|e| write_err(&file, e))?;
                t.jpeg.starts_with(&have).then_some(have.len())
            }
            Ok(_) => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(0),
            Err(e) => return Err(write_err(&file, e)),
        };
        let Some(have) = there else {
            thumbs.insert(&m.blake3, None);
            sheet.kept_aside += 1;
            continue;
        };
        if have < t.jpeg.len() {
            let mut out = std::fs::OpenOptions::new()
                .append(have > 0)
                .write(true)
                .create_new(have == 0)
                .open(&file)
                .map_err(|e| write_err(&file, e))?;
            out.write_all(&t.jpeg[have..])
                .map_err(|e| write_err(&file, e))?;
            sheet.written += 1;
        }
        thumbs.insert(&m.blake3, Some((t.width, t.height)));
        sheet.thumbnails += 1;
        sheet.distinct += 1;
    }
    Ok(thumbs)
}

/// The head island: what the page's script needs before the groups.
#[derive(Serialize)]
struct Island {
    /// The catalog, as the decisions file names it.
    db: String,
    /// The thumbnails' folder, relative to the page.
    thumbs: String,
    per_page: usize,
    /// Groups in all (in the `page` islands that follow, `per_page` each).
    total: usize,
}

#[derive(Serialize)]
struct IslandGroup<'a> {
    kind: GroupKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<&'a str>,
    saving: u64,
    /// The group's distinct contents (BLAKE3s), each once: members name theirs by index
    /// (an exact group's files share one; 64 characters a file saved).
    c: Vec<&'a str>,
    members: Vec<IslandMember<'a>>,
}

/// One file, in short keys (100,000 groups make 200,000 and more of them).
#[derive(Serialize)]
struct IslandMember<'a> {
    /// Path (lossy UTF-8).
    p: &'a str,
    /// The path's bytes, when not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pb: Option<&'a [u8]>,
    /// Size in bytes.
    s: u64,
    /// Dimensions as seen (orientation applied), `W×H`.
    #[serde(skip_serializing_if = "Option::is_none")]
    d: Option<String>,
    /// Date taken.
    #[serde(skip_serializing_if = "Option::is_none")]
    t: Option<String>,
    /// Camera.
    #[serde(skip_serializing_if = "Option::is_none")]
    c: Option<String>,
    /// Its content: an index into the group's `c`.
    b: usize,
    /// pHash distance to the group's first file.
    #[serde(skip_serializing_if = "Option::is_none")]
    x: Option<u32>,
    /// The suggested keeper.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    k: bool,
    /// Thumbnail width and height (none: no thumbnail).
    #[serde(skip_serializing_if = "Option::is_none")]
    th: Option<(u32, u32)>,
    /// Why `index` found the file damaged.
    #[serde(skip_serializing_if = "Option::is_none")]
    dm: Option<&'a str>,
}

impl<'a> IslandMember<'a> {
    fn new(m: &'a Member, content: usize, thumbs: &Thumbs) -> Self {
        let d = m.width.zip(m.height).map(|(w, h)| {
            let (w, h) = if matches!(m.orientation, Some(5..=8)) {
                (h, w)
            } else {
                (w, h)
            };
            format!("{w}×{h}")
        });
        IslandMember {
            p: &m.path,
            pb: std::str::from_utf8(&m.path_bytes)
                .is_err()
                .then_some(&m.path_bytes[..]),
            s: m.size,
            d,
            t: m.taken.as_ref().map(|t| t.replacen('T', " ", 1)),
            c: camera(m),
            b: content,
            x: m.distance,
            k: m.keeper,
            th: thumbs.get(m.blake3.as_str()).copied().flatten(),
            dm: m.damaged.as_deref(),
        }
    }
}

/// The camera, said once when the model repeats the make ("Canon" "Canon EOS 5D").
fn camera(m: &Member) -> Option<String> {
    match (m.make.as_deref(), m.model.as_deref()) {
        (Some(make), Some(model)) if model.to_lowercase().starts_with(&make.to_lowercase()) => {
            Some(model.to_string())
        }
        (Some(make), Some(model)) => Some(format!("{make} {model}")),
        (make, model) => make.or(model).map(str::to_string),
    }
}

/// The policy: nothing but the page's own script and style (by hash) and its thumbnails.
fn policy() -> String {
    format!(
        "default-src 'none'; script-src '{}'; style-src '{}'; img-src 'self' data:; \
         base-uri 'none'; form-action 'none'",
        sha256_source(SCRIPT),
        sha256_source(STYLE)
    )
}

/// A CSP hash source, `sha256-<base64 of the SHA-256 of text>`.
fn sha256_source(text: &str) -> String {
    let mut s = String::from("sha256-");
    base64(&sha2::Sha256::digest(text.as_bytes()), &mut s);
    s
}

fn page(
    catalog: &Catalog,
    dupes: &Dupes,
    title: &str,
    dir: &Path,
    thumbs: &Thumbs,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let dup_groups = dupes.groups.iter().filter(|g| g.kind.is_duplicate());
    let saving: u64 = dup_groups.clone().map(|g| g.saving).sum();
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head>\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\
         <meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{t}</title><style>{STYLE}</style></head>\n<body>\n<h1>{t}</h1>\n\
         <p>{n} groups of duplicates: {s} freed by keeping only the marked file of each",
        csp = policy(),
        t = escape(title),
        n = dup_groups.count(),
        s = bytes(saving),
    )?;
    let count = |kind| dupes.groups.iter().filter(|g| g.kind == kind).count();
    let bursts = count(GroupKind::Burst);
    if bursts > 0 {
        let s = if bursts == 1 { "" } else { "s" };
        write!(
            out,
            "; {bursts} burst{s} (shots of one camera within 2 s), for information"
        )?;
    }
    let pairs = count(GroupKind::Pair);
    if pairs > 0 {
        let s = if pairs == 1 { "" } else { "s" };
        write!(
            out,
            "; {pairs} pair{s} of files kept together (raw and JPEG, Live Photos)"
        )?;
    }
    out.write_all(
        b".</p>\n<p class=\"help\">Click a file to keep it (the suggested keeper is marked; \
          a click on it confirms it). Nothing is deleted here: \
          <b>Save decisions</b> downloads them for <code>seekless dupes --apply</code>.</p>\n\
          <noscript><p>This page needs JavaScript to show the groups.</p></noscript>\n\
          <nav id=\"pager\"></nav>\n<main id=\"sheet\"></main>\n<nav id=\"pager-end\"></nav>\n\
          <footer>seekless dupes \xc2\xb7 thumbnails shown: <span id=\"thumbs-loaded\">?</span>\
          </footer>\n<script type=\"application/json\" id=\"groups\">",
    )?;
    let island = Island {
        db: catalog.path.to_string_lossy().into_owned(),
        thumbs: dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
        per_page: GROUPS_PER_PAGE,
        total: dupes.groups.len(),
    };
    let mut text = String::new();
    escape_json(
        &serde_json::to_string(&island).map_err(std::io::Error::other)?,
        &mut text,
    );
    out.write_all(text.as_bytes())?;
    out.write_all(b"</script>\n")?;
    // Then the groups, one island a page, one group a line (JSON strings hold no raw
    // newline), written as they are made: the script reads and parses only the page it
    // shows. One island for all (bench/RESULTS.md) held the whole text in one string and
    // its parse's copies: ~35 MiB more at 100,000 groups.
    for chunk in dupes.groups.chunks(GROUPS_PER_PAGE) {
        out.write_all(b"<script type=\"application/json\" class=\"page\">")?;
        for g in chunk {
            let mut contents: Vec<&str> = Vec::new();
            let members = g
                .members
                .iter()
                .map(|m| {
                    let at = contents
                        .iter()
                        .position(|c| *c == m.blake3)
                        .unwrap_or_else(|| {
                            contents.push(&m.blake3);
                            contents.len() - 1
                        });
                    IslandMember::new(m, at, thumbs)
                })
                .collect();
            let group = IslandGroup {
                kind: g.kind,
                link: g.link.as_deref(),
                saving: g.saving,
                c: contents,
                members,
            };
            let json = serde_json::to_string(&group).map_err(std::io::Error::other)?;
            text.clear();
            text.push('\n');
            escape_json(&json, &mut text);
            out.write_all(text.as_bytes())?;
        }
        out.write_all(b"\n</script>\n")?;
    }
    write!(out, "<script>{SCRIPT}</script>\n</body></html>\n")
}

/// JSON made safe inside `<script type="application/json">` and kept ASCII: `<`, `>`, `&`
/// and every non-ASCII character as `\u` escapes (UTF-16 units). Outside strings JSON
/// has none of them, so the text means the same.
fn escape_json(json: &str, out: &mut String) {
    use std::fmt::Write as _;
    out.reserve(json.len());
    for c in json.chars() {
        match c {
            '<' | '>' | '&' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if c.is_ascii() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
}

/// Bytes as people read them (KiB, MiB: powers of 1024).
fn bytes(n: u64) -> String {
    format!("{}", indicatif::HumanBytes(n))
}

/// Text made safe in HTML content and attribute values.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 (RFC 4648, with padding), appended to `out`.
fn base64(data: &[u8], out: &mut String) {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.reserve(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_follows_rfc_4648() {
        // RFC 4648, section 10.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            let mut s = String::new();
            base64(plain.as_bytes(), &mut s);
            assert_eq!(s, coded);
        }
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("<a href='x'>&\""),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;"
        );
    }

    #[test]
    fn json_island_cannot_end_its_element_and_stays_ascii() {
        let name = "</script><script>alert(1)</script> é 😀 &amp;";
        let json = serde_json::to_string(&serde_json::json!({ "p": name })).unwrap();
        let mut s = String::new();
        escape_json(&json, &mut s);
        assert!(s.is_ascii());
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["p"], name);
    }

    #[test]
    fn csp_hash_is_of_the_exact_script() {
        // echo -n abc | openssl dgst -sha256 -binary | base64
        assert_eq!(
            sha256_source("abc"),
            "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
        );
        assert!(policy().starts_with("default-src 'none'; script-src 'sha256-"));
    }
}
