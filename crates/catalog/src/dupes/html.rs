//! The contact sheet: one self-contained HTML file (thumbnails inline as `data:` URIs, the
//! style inline, no network) showing each group side by side with size, dimensions, date,
//! camera and path, the suggested keeper marked. A few lines of script count, once the
//! page has loaded, the thumbnails the browser could decode, and show the count at the end
//! (`<body data-thumbs-loaded="N">` too, for tests).

use std::io::{BufWriter, Write};
use std::path::Path;

use super::{Catalog, Dupes, DupesError, GroupKind, Member};
use seekless_jobs::AtomicFile;

const STYLE: &str = "
body{font:14px system-ui,sans-serif;margin:1em 1.5em;background:#eee;color:#222}
h1{font-size:20px;margin:.2em 0}
section{background:#fff;margin:0 0 1em;padding:.6em .8em;border-radius:6px;box-shadow:0 1px 3px #0003}
section.burst{background:#fff8ec}
h2{font-size:15px;margin:.1em 0 .6em;font-weight:600}
.files{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
figure{margin:0;width:264px;padding:4px;border:3px solid transparent;border-radius:6px}
figure.keeper{border-color:#2a8a3a;background:#eef8ef}
figure img,figure .none{display:block;max-width:256px;max-height:256px;margin:0 auto}
figure .none{width:256px;height:96px;line-height:96px;text-align:center;background:#ddd;color:#666}
figcaption{font-size:12px;line-height:1.4;margin-top:4px;overflow-wrap:anywhere}
.mark{display:inline-block;padding:0 .4em;border-radius:3px;background:#2a8a3a;color:#fff;font-weight:600}
.path{font-family:ui-monospace,monospace;color:#124}
footer{color:#666;font-size:12px}
";

/// The script that counts the decoded thumbnails after load.
const COUNT: &str = "addEventListener('load',function(){var n=0;\
for(var i=0;i<document.images.length;i++)if(document.images[i].naturalWidth>0)n++;\
document.getElementById('thumbs-loaded').textContent=n;document.body.dataset.thumbsLoaded=n;});";

/// Writes the contact sheet of `dupes` (found in `catalog`) to `path`, atomically (under a
/// temporary name, renamed into place when complete). `title` heads the page. Returns the
/// number of thumbnails put in it.
pub fn write_contact_sheet(
    catalog: &Catalog,
    dupes: &Dupes,
    title: &str,
    path: &Path,
) -> Result<u64, DupesError> {
    let write_err = |e: std::io::Error| DupesError::Write {
        path: path.to_path_buf(),
        message: seekless_core::error::describe_io(&e),
    };
    let file = AtomicFile::create(path).map_err(write_err)?;
    let mut out = BufWriter::new(file.file());
    let thumbs = page(catalog, dupes, title, &mut out).map_err(|e| match e {
        Failure::Catalog(e) => e,
        Failure::Output(e) => write_err(e),
    })?;
    out.flush().map_err(write_err)?;
    drop(out);
    file.commit().map_err(write_err)?;
    Ok(thumbs)
}

/// What stopped the page: reading the catalog, or writing the output.
enum Failure {
    Catalog(DupesError),
    Output(std::io::Error),
}

impl From<DupesError> for Failure {
    fn from(e: DupesError) -> Self {
        Failure::Catalog(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Output(e)
    }
}

fn page(
    catalog: &Catalog,
    dupes: &Dupes,
    title: &str,
    out: &mut impl Write,
) -> Result<u64, Failure> {
    let mut html = String::new();
    let mut thumbs = 0u64;
    let dup_groups = dupes.groups.iter().filter(|g| g.kind.is_duplicate());
    let saving: u64 = dup_groups.clone().map(|g| g.saving).sum();
    html += &format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{t}</title><style>{STYLE}</style></head>\n<body>\n<h1>{t}</h1>\n\
         <p>{n} groups of duplicates: {s} freed by keeping only the marked file of each",
        t = escape(title),
        n = dup_groups.count(),
        s = bytes(saving),
    );
    let bursts = dupes
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Burst)
        .count();
    if bursts > 0 {
        let s = if bursts == 1 { "" } else { "s" };
        html += &format!("; {bursts} burst{s} (shots of one camera within 2 s), for information");
    }
    let pairs = dupes
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Pair)
        .count();
    if pairs > 0 {
        let s = if pairs == 1 { "" } else { "s" };
        html += &format!("; {pairs} pair{s} of files kept together (raw and JPEG, Live Photos)");
    }
    html += ".</p>\n";
    out_flush(out, &mut html)?;
    for g in &dupes.groups {
        let kind = match g.kind {
            GroupKind::Exact => "exact",
            GroupKind::Similar => "similar",
            GroupKind::Burst => "burst",
            GroupKind::Pair => "pair",
        };
        html += &format!(
            "<section class=\"group {kind}\"><h2>{kind} · {} files",
            g.members.len()
        );
        if g.kind == GroupKind::Burst {
            html += " · not duplicates: pick yourself";
        } else if g.kind == GroupKind::Pair {
            html += " · one shot, kept together: not duplicates";
        } else {
            html += &format!(" · {} freed by keeping the marked one", bytes(g.saving));
        }
        html += "</h2><div class=\"files\">\n";
        for m in &g.members {
            let first = &g.members[0];
            let note = if std::ptr::eq(m, first) {
                None
            } else if g.kind == GroupKind::Similar && m.blake3 == first.blake3 {
                Some("identical to the kept file".to_string())
            } else {
                m.distance.map(|d| format!("pHash distance {d}"))
            };
            figure(catalog, m, note, &mut html, &mut thumbs)?;
            out_flush(out, &mut html)?;
        }
        html += "</div></section>\n";
    }
    html += &format!(
        "<footer>seekless dupes · thumbnails shown: <span id=\"thumbs-loaded\">?</span> of {thumbs}\
         </footer>\n<script>{COUNT}</script>\n</body></html>\n"
    );
    out_flush(out, &mut html)?;
    Ok(thumbs)
}

fn out_flush(out: &mut impl Write, html: &mut String) -> std::io::Result<()> {
    out.write_all(html.as_bytes())?;
    html.clear();
    Ok(())
}

/// One file: its thumbnail and caption, `note` (how it compares with the group's first
/// file) last but the path.
fn figure(
    catalog: &Catalog,
    m: &Member,
    note: Option<String>,
    html: &mut String,
    thumbs: &mut u64,
) -> Result<(), DupesError> {
    html.push_str(if m.keeper {
        "<figure class=\"keeper\">"
    } else {
        "<figure>"
    });
    match catalog.thumbnail(m.id)? {
        Some(t) => {
            *thumbs += 1;
            html.push_str("<img alt=\"\" src=\"data:image/jpeg;base64,");
            base64(&t.jpeg, html);
            html.push('"');
            if t.width > 0 && t.height > 0 {
                html.push_str(&format!(" width=\"{}\" height=\"{}\"", t.width, t.height));
            }
            html.push('>');
        }
        None => html.push_str("<div class=\"none\">no thumbnail</div>"),
    }
    html.push_str("<figcaption>");
    if m.keeper {
        html.push_str("<span class=\"mark\">keep</span> ");
    }
    let mut facts = vec![bytes(m.size)];
    if let Some((w, h)) = m.width.zip(m.height) {
        let (w, h) = if matches!(m.orientation, Some(5..=8)) {
            (h, w)
        } else {
            (w, h)
        };
        facts.push(format!("{w}×{h}"));
    }
    if let Some(t) = &m.taken {
        facts.push(escape(&t.replacen('T', " ", 1)));
    }
    // Models often repeat the make ("Canon" "Canon EOS 5D"): said once.
    let camera = match (m.make.as_deref(), m.model.as_deref()) {
        (Some(make), Some(model)) if model.to_lowercase().starts_with(&make.to_lowercase()) => {
            Some(model.to_string())
        }
        (Some(make), Some(model)) => Some(format!("{make} {model}")),
        (make, model) => make.or(model).map(str::to_string),
    };
    if let Some(camera) = camera {
        facts.push(escape(&camera));
    }
    facts.extend(note);
    html.push_str(&facts.join(" · "));
    html.push_str("<br><span class=\"path\">");
    html.push_str(&escape(&m.path));
    html.push_str("</span></figcaption></figure>\n");
    Ok(())
}

/// Bytes as people read them (KiB, MiB: powers of 1024).
pub(crate) fn bytes(n: u64) -> String {
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
}
