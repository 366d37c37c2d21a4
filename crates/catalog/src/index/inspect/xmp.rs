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

/// Decodes XML's entities: the five named ones and character references (`&#233;`,
/// `&#xE9;`). Anything else after `&` (or a reference to a character XML does not allow)
/// is kept as written. One pass: `&amp;lt;` is `&lt;`.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        // The longest reference is `&#x10FFFF;` (10 bytes).
        let name_len = rest.as_bytes()[1..]
            .iter()
            .take(10)
            .position(|&b| b == b';');
        let decoded = name_len.and_then(|n| entity(&rest[1..1 + n]).map(|c| (c, n + 2)));
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character an entity's name (between `&` and `;`) stands for.
fn entity(name: &str) -> Option<char> {
    let c = match name {
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "amp" => '&',
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    // XML 1.0 allows no control characters but tab, line feed and carriage return.
    (!c.is_control() || matches!(c, '\t' | '\n' | '\r')).then_some(c)
}

/// An XMP date (`YYYY-MM-DDTHH:MM:SS[.fff][±HH:MM|Z]`, ISO 8601 already) as the catalog
/// writes `taken` ([`Taken`](crate::index::taken::Taken)); `None` without seconds (a date
/// alone says no time) or when it is no date.
pub(super) fn date(value: &str) -> Option<String> {
    crate::index::taken::Taken::iso(value).map(|t| t.to_string())
}

/// The most a sidecar may be for its fields to be read (darktable's, with a long edit
/// history, are tens of kilobytes): a larger file is recorded with an error, not parsed.
pub(crate) const SIDECAR_MAX: usize = 16 << 20;

/// Items of an array property read at most (more are ignored): bounds the work and the
/// row on hostile input.
const MAX_ITEMS: usize = 4096;

/// What an XMP sidecar (`IMG_1234.CR2.xmp`, `IMG_1234.xmp`) says about its image: the
/// fields darktable, digiKam, Lightroom and Capture One write there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SidecarFields {
    /// `xmp:Rating`: −1 (rejected) to 5; 0 is "no stars".
    pub rating: Option<i64>,
    /// `xmp:Label`: a colour label's name as the tool writes it (`Red`, `Green`, …).
    pub label: Option<String>,
    /// `dc:subject`'s items: flat keywords.
    pub keywords: Vec<String>,
    /// `lr:hierarchicalSubject`'s items: keyword paths as written (`Places|France|Paris`).
    pub hierarchical: Vec<String>,
    /// `dc:title`: the `x-default` alternative, else the first.
    pub title: Option<String>,
}

/// Why a file larger than [`SIDECAR_MAX`] is not read as a sidecar.
pub(crate) fn too_large() -> String {
    format!(
        "larger than {} MiB: not read as a sidecar",
        SIDECAR_MAX >> 20
    )
}

/// Reads an XMP sidecar's fields from its bytes. Like the packet search above, a text
/// search, not an XML parser: each property is found by its usual prefix (`xmp:`, or the
/// older `xap:`), as attribute or element; arrays (`rdf:Bag`, `rdf:Seq`, `rdf:Alt`) by
/// their `rdf:li` items. Every loop moves forward through the text, nothing recurses:
/// hostile input costs time linear in its size. An error when the file holds no XMP.
pub(crate) fn sidecar(data: &[u8]) -> Result<SidecarFields, String> {
    if data.len() > SIDECAR_MAX {
        return Err(too_large());
    }
    let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    let text = std::str::from_utf8(data)
        .map_err(|e| format!("not UTF-8 text (at byte {})", e.valid_up_to()))?;
    // A packet may lack the `x:xmpmeta` wrapper (it is optional): then its RDF.
    let packet = text
        .find("<x:xmpmeta")
        .or_else(|| text.find("<rdf:RDF"))
        .map(|at| &text[at..])
        .ok_or("no XMP packet (neither x:xmpmeta nor rdf:RDF)")?;
    let simple = |names: &[&str]| names.iter().find_map(|n| property(packet, n));
    let rating = simple(&["xmp:Rating", "xap:Rating"]).and_then(|r| rating(&r));
    let label = simple(&["xmp:Label", "xap:Label"]);
    let texts = |items: Vec<(Option<String>, String)>| -> Vec<String> {
        items.into_iter().map(|(_, text)| text).collect()
    };
    let mut keywords = texts(items(packet, "dc:subject"));
    if keywords.is_empty() {
        // A writer that put one keyword as a simple property.
        keywords.extend(property(packet, "dc:subject"));
    }
    let hierarchical = texts(items(packet, "lr:hierarchicalSubject"));
    let titles = items(packet, "dc:title");
    let title = titles
        .iter()
        .find(|(lang, _)| lang.as_deref() == Some("x-default"))
        .or(titles.first())
        .map(|(_, text)| text.clone())
        .or_else(|| property(packet, "dc:title"));
    Ok(SidecarFields {
        rating,
        label,
        keywords,
        hierarchical,
        title,
    })
}

/// An `xmp:Rating` value: an integer from −1 to 5 (XMP types it Real: `3.0` is 3; a
/// fraction or anything out of range is no rating).
fn rating(value: &str) -> Option<i64> {
    let value = value.trim();
    let n = match value.parse::<i64>() {
        Ok(n) => n,
        Err(_) => {
            let f = value.parse::<f64>().ok()?;
            if f.fract() != 0.0 || !f.is_finite() {
                return None;
            }
            f as i64
        }
    };
    (-1..=5).contains(&n).then_some(n)
}

/// The start of element `name` at or after `from` in `xmp`: where its start tag's name
/// ends (`<name` followed by `>`, `/` or white space), if there is one.
fn start_tag(xmp: &str, name: &str, mut from: usize) -> Option<usize> {
    // The name, then a look at the byte before it: no `<name` string made per call.
    while let Some(found) = xmp.get(from..)?.find(name) {
        let at = from + found;
        let end = at + name.len();
        from = end;
        let opened = at > 0 && xmp.as_bytes()[at - 1] == b'<';
        let next = xmp[end..].chars().next();
        if opened && next.is_some_and(|c| c == '>' || c == '/' || c.is_whitespace()) {
            return Some(end);
        }
    }
    None
}

/// The items of the array property `name` (`<name><rdf:Bag|Seq|Alt><rdf:li …>text</rdf:li>…`),
/// each with its `xml:lang` if it has one, entities decoded and trimmed; empty items and
/// items holding elements (structures) are left out.
fn items(xmp: &str, name: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let Some(open) = start_tag(xmp, name, 0) else {
        return out;
    };
    let Some(tag_end) = xmp[open..].find('>').map(|n| open + n) else {
        return out;
    };
    if xmp[..tag_end].ends_with('/') {
        return out;
    }
    let body_start = tag_end + 1;
    let close = format!("</{name}");
    let Some(body_end) = xmp[body_start..].find(&close).map(|n| body_start + n) else {
        return out;
    };
    let body = &xmp[body_start..body_end];
    let mut from = 0;
    while out.len() < MAX_ITEMS {
        let Some(li) = start_tag(body, "rdf:li", from) else {
            break;
        };
        let Some(attrs_end) = body[li..].find('>').map(|n| li + n) else {
            break;
        };
        from = attrs_end + 1;
        let attrs = &body[li..attrs_end];
        if attrs.ends_with('/') {
            continue;
        }
        let Some(text_end) = body[from..].find("</rdf:li").map(|n| from + n) else {
            break;
        };
        let text = &body[from..text_end];
        from = text_end;
        if text.contains('<') {
            continue;
        }
        let text = unescape(text.trim());
        if text.is_empty() {
            continue;
        }
        out.push((property(attrs, "xml:lang"), text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sidecar as exiftool writes one (`exiftool -o X.xmp -XMP:Rating=4 …`): element
    /// form, arrays in `rdf:Bag` and `rdf:Alt`, single quotes.
    const EXIFTOOL: &str = "<?xpacket begin='\u{feff}' id='W5M0MpCehiHzreSzNTczkc9d'?>
<x:xmpmeta xmlns:x='adobe:ns:meta/' x:xmptk='Image::ExifTool 12.57'>
<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>
 <rdf:Description rdf:about=''
  xmlns:dc='http://purl.org/dc/elements/1.1/'>
  <dc:subject>
   <rdf:Bag>
    <rdf:li>beach</rdf:li>
    <rdf:li>Fish &amp; Chips</rdf:li>
   </rdf:Bag>
  </dc:subject>
  <dc:title>
   <rdf:Alt>
    <rdf:li xml:lang='fr'>Plage</rdf:li>
    <rdf:li xml:lang='x-default'>Beach &lt;3 &#x1F3D6;&#65;</rdf:li>
   </rdf:Alt>
  </dc:title>
 </rdf:Description>
 <rdf:Description rdf:about='' xmlns:xmp='http://ns.adobe.com/xap/1.0/'>
  <xmp:Label>Red</xmp:Label>
  <xmp:Rating>4</xmp:Rating>
 </rdf:Description>
</rdf:RDF>
</x:xmpmeta>
<?xpacket end='w'?>";

    /// As darktable writes one: simple properties as attributes, keywords in `rdf:Seq`,
    /// hierarchical ones beside them, a history whose items are structures.
    const DARKTABLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:darktable="http://darktable.sf.net/"
    xmp:Rating="-1"
    darktable:xmp_version="5">
   <dc:subject>
    <rdf:Seq>
     <rdf:li>sea</rdf:li>
     <rdf:li/>
     <rdf:li>  sky  </rdf:li>
    </rdf:Seq>
   </dc:subject>
   <lr:hierarchicalSubject>
    <rdf:Seq>
     <rdf:li>Places|France|Brest</rdf:li>
    </rdf:Seq>
   </lr:hierarchicalSubject>
   <darktable:history>
    <rdf:Seq>
     <rdf:li darktable:operation="exposure"><rdf:Bag><rdf:li>no</rdf:li></rdf:Bag></rdf:li>
    </rdf:Seq>
   </darktable:history>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>"#;

    #[test]
    fn a_sidecar_in_element_form_gives_rating_label_keywords_and_the_default_title() {
        let f = sidecar(EXIFTOOL.as_bytes()).unwrap();
        assert_eq!(f.rating, Some(4));
        assert_eq!(f.label.as_deref(), Some("Red"));
        assert_eq!(f.keywords, ["beach", "Fish & Chips"]);
        assert!(f.hierarchical.is_empty());
        assert_eq!(f.title.as_deref(), Some("Beach <3 🏖A"));
    }

    #[test]
    fn a_sidecar_in_attribute_form_gives_its_rating_and_its_keyword_sequences() {
        let f = sidecar(DARKTABLE.as_bytes()).unwrap();
        assert_eq!(f.rating, Some(-1));
        assert_eq!(f.label, None);
        assert_eq!(f.keywords, ["sea", "sky"], "empty items are left out");
        assert_eq!(f.hierarchical, ["Places|France|Brest"]);
        assert_eq!(f.title, None);
    }

    #[test]
    fn a_title_without_a_default_language_is_the_first_and_the_old_prefix_is_read() {
        let xmp = "<rdf:RDF><rdf:Description xap:Rating='5.0' xap:Label='Blue'>\
                   <dc:title><rdf:Alt><rdf:li xml:lang='de'>Strand</rdf:li>\
                   <rdf:li xml:lang='fr'>Plage</rdf:li></rdf:Alt></dc:title>\
                   </rdf:Description></rdf:RDF>";
        let f = sidecar(xmp.as_bytes()).unwrap();
        assert_eq!((f.rating, f.label.as_deref()), (Some(5), Some("Blue")));
        assert_eq!(f.title.as_deref(), Some("Strand"));
    }

    #[test]
    fn ratings_outside_minus_one_to_five_or_not_whole_are_no_rating() {
        for (value, want) in [
            ("0", Some(0)),
            ("-1", Some(-1)),
            ("5", Some(5)),
            ("3.0", Some(3)),
            ("6", None),
            ("-2", None),
            ("2.5", None),
            ("NaN", None),
            ("inf", None),
            ("", None),
            ("x", None),
        ] {
            assert_eq!(rating(value), want, "{value:?}");
        }
    }

    #[test]
    fn entities_are_decoded_once_and_unknown_ones_kept() {
        assert_eq!(unescape("a &amp;lt; b"), "a &lt; b");
        assert_eq!(unescape("&#233;t&#xE9; &#X41;"), "été A");
        assert_eq!(
            unescape("&nbsp; &#0; &#x110000; &#xZZ; &"),
            "&nbsp; &#0; &#x110000; &#xZZ; &"
        );
        assert_eq!(unescape("&#1234567890123;"), "&#1234567890123;");
        assert_eq!(unescape("&quot;&apos;&gt;"), "\"'>");
    }

    #[test]
    fn garbage_is_an_error_or_empty_fields_and_never_a_panic() {
        assert!(sidecar(b"").is_err());
        assert!(sidecar(b"hello").is_err());
        assert!(sidecar(b"\xff\xfe<\0x\0").unwrap_err().contains("UTF-8"));
        let big = vec![b' '; SIDECAR_MAX + 1];
        assert!(sidecar(&big).unwrap_err().contains("larger than"));
        // Cut anywhere, the packets still parse to something, without a panic.
        for text in [EXIFTOOL, DARKTABLE] {
            for cut in (0..text.len()).filter(|&n| text.is_char_boundary(n)) {
                let _ = sidecar(&text.as_bytes()[..cut]);
            }
        }
        let f = sidecar(b"<x:xmpmeta><dc:subject><rdf:Bag><rdf:li>a").unwrap();
        assert!(f.keywords.is_empty(), "an unclosed array is no keywords");
        let f = sidecar(b"<x:xmpmeta><dc:subject/><xmp:Rating>2</xmp:Rating>").unwrap();
        assert_eq!((f.keywords.len(), f.rating), (0, Some(2)));
        // A huge array: its first items only.
        let many = "<rdf:RDF><dc:subject>".to_string()
            + &"<rdf:li>k</rdf:li>".repeat(100_000)
            + "</dc:subject>";
        let f = sidecar(many.as_bytes()).unwrap();
        assert_eq!(f.keywords.len(), MAX_ITEMS);
    }
}
