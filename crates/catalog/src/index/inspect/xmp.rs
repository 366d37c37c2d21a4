//! XMP: the fields EXIF lacks, from the file's XMP packet (`<x:xmpmeta>…</x:xmpmeta>`),
//! as exiftool reads them: Adobe's tools, ImageMagick and Pillow write orientation and
//! dates there, and viewers honour them. EXIF comes first; XMP only fills what EXIF
//! does not have. A plain text search, not an XML parser: the properties the catalog
//! reads are simple values, written either as attributes (`tiff:Orientation="3"`) or as
//! elements (`<tiff:Orientation>3</tiff:Orientation>`). Compressed packets (PNG `zTXt`)
//! are not looked into.

/// The XMP packet in `data`, if there is one in plain text.
pub(super) fn packet(data: &[u8]) -> Option<&str> {
    let start = memchr::memmem::find(data, b"<x:xmpmeta")?;
    let len = memchr::memmem::find(&data[start..], b"</x:xmpmeta>")?;
    std::str::from_utf8(&data[start..start + len]).ok()
}

/// The value of the simple property `name` (prefix included) in `xmp`; `None` when it is
/// not there or empty.
pub(super) fn property(xmp: &str, name: &str) -> Option<String> {
    let mut from = 0;
    while let Some(found) = xmp[from..].find(name) {
        let at = from + found;
        from = at + name.len();
        let before = xmp[..at].chars().next_back();
        if !before.is_some_and(|c| c.is_whitespace() || c == '<') {
            continue;
        }
        let rest = &xmp[from..];
        let value = if let Some(rest) = rest.trim_start().strip_prefix('=') {
            let rest = rest.trim_start();
            let quote = rest.chars().next().filter(|&q| q == '"' || q == '\'')?;
            let rest = &rest[1..];
            &rest[..rest.find(quote)?]
        } else if let Some(rest) = rest.strip_prefix('>') {
            &rest[..rest.find('<')?]
        } else {
            continue;
        };
        let value = unescape(value.trim());
        return (!value.is_empty()).then_some(value);
    }
    None
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// An XMP date (`YYYY-MM-DDTHH:MM:SS[.fff][±HH:MM|Z]`, ISO 8601 already) as the catalog
/// writes `taken`; `None` without seconds (a date alone says no time).
pub(super) fn date(value: &str) -> Option<String> {
    let b = value.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let shape = digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && b.get(10) == Some(&b'T')
        && digits(11..13)
        && digits(14..16)
        && digits(17..19);
    if !shape {
        return None;
    }
    let mut out = value[..19].to_string();
    let mut rest = &value[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            out.push('.');
            out.push_str(&frac[..n]);
        }
        rest = &frac[n..];
    }
    if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) {
        out.push_str(rest);
    } else if rest == "Z" {
        out.push_str("+00:00");
    }
    Some(out)
}
