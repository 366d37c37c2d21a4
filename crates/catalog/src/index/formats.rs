//! The formats the catalog knows, in one table ([`FORMATS`]): each one's name as the
//! catalog stores it (`images.format`), its kind, its extensions, which reader finds its
//! size, whether `--thumbs` keeps it whole and what decodes its thumbnail. Everything
//! else is derived from it: the extensions catalogued by default
//! ([`IMAGE_EXTENSIONS`](super::IMAGE_EXTENSIONS)), the formats an extension may hold
//! (`ext_mismatch`), which raw format a TIFF structure is by its Make, the files kept
//! whole, `inspect`'s and `thumb`'s dispatch, and the SQL of the version-3 upgrade. The
//! signatures that tell a format from its bytes stay in `inspect::format_of` (code, not
//! a list); every name it gives is one of this table's (`inspect` checks, and tests).
//!
//! docs/index.md and docs/usage.md list the default extensions and the formats: tests
//! below hold them equal to the table.

use image::ImageFormat as I;

/// What a file holds, as `images.kind` says (`other`, [`OTHER_KIND`], for a format the
/// catalog does not know).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A picture (JPEG, PNG, HEIF, …).
    Image,
    /// A camera raw file.
    Raw,
    /// A video container.
    Video,
}

impl Kind {
    /// Every kind, in the order the docs list them.
    #[cfg(test)]
    pub(crate) const ALL: [Kind; 3] = [Kind::Image, Kind::Raw, Kind::Video];

    /// Its name in `images.kind`.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Kind::Image => "image",
            Kind::Raw => "raw",
            Kind::Video => "video",
        }
    }
}

/// `images.kind` of a file whose format the catalog does not know.
pub(crate) const OTHER_KIND: &str = "other";

/// `images.kind` of a video container that holds sound alone (a voice memo, a song in an
/// MP4, MKV or 3GP): duration and codec, no size, no thumbnail.
pub(crate) const AUDIO_KIND: &str = "audio";

/// Which of `inspect`'s readers reads a format's header (its size, where its EXIF is, what
/// it keeps outside EXIF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reader {
    /// None: `imagesize` alone (GIF).
    None,
    Jpeg,
    Png,
    Bmp,
    /// WebP's chunks, for EXIF (its size is `imagesize`'s).
    Webp,
    /// The file is a TIFF structure; IFD0 has the size.
    Tiff,
    /// HEIF and AVIF (ISO BMFF items).
    Heif,
    /// QuickTime and MP4 (ISO BMFF boxes).
    QuickTime,
    /// Matroska and WebM.
    Matroska,
    Avi,
    Jxl,
    /// One of the camera raw readers (`inspect/raw.rs`).
    Raw(RawReader),
}

/// Which camera raw reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RawReader {
    /// A TIFF structure (DNG, CR2, NEF, ORF, RW2, …).
    Tiff,
    Cr3,
    Raf,
    Mrw,
    /// CIFF (`inspect/ciff.rs`).
    Crw,
    /// `inspect/x3f.rs`.
    X3f,
}

/// How a format's width and height are found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    /// Its own reader finds them, or says why not (never `imagesize`).
    Reader,
    /// The `imagesize` crate, from the header.
    Imagesize,
}

/// What a format's thumbnail is made from (`thumb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decoder {
    /// `jpeg-decoder` (or `dc_jpeg`, libjpeg-turbo) at reduced scale.
    Jpeg,
    /// The `image` crate, whole.
    Image(image::ImageFormat),
    /// The system's libheif, loaded at run time.
    Libheif,
    /// The largest JPEG preview a raw file carries.
    Preview,
    /// A frame by ffmpeg, else the cover art.
    Frame,
    /// No decoder here (JPEG XL).
    None,
}

/// A TIFF structure's IFD0 Make that names a raw format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Make {
    /// The Make's first word, upper-case (`NIKON`, `SONY`, …).
    pub names: &'static [&'static str],
    /// The Make names this format only for a file with one of its extensions (Nikon's
    /// NRW beside NEF); otherwise for any file whose extension names a raw format.
    pub with_extension_only: bool,
}

/// What a version-3 catalog's rows of a format had right (version 4 added `kind` and read
/// again every row that had not). History: what a version-3 build wrote, frozen; a format
/// added since is [`V3::ReadAgain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum V3 {
    /// Every field: the upgrade gives its rows `kind = 'image'`.
    Right,
    /// Every field of a file with one of the format's own extensions (a TIFF named `.nef`
    /// was a raw file, sized by its preview).
    RightWithItsExtension,
    /// Not kept: read again by the next run.
    ReadAgain,
}

/// One format the catalog knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Format {
    /// Its name in `images.format`, as `inspect::format_of` gives it.
    pub name: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// Its extensions, lower-case: each one's files are catalogued by default, and are
    /// expected to hold this format (or one of [`Format::also`]).
    pub extensions: &'static [&'static str],
    /// The other formats a file with one of its extensions may hold without an
    /// `ext_mismatch` (a `.mp4` that is a MOV; a `.nef` whose IFD0 does not say Nikon).
    pub also: &'static [&'static str],
    /// Its reader.
    pub reader: Reader,
    /// How its size is found.
    pub size: Size,
    /// Whether `--thumbs` keeps a file of it whole (up to `MAX_THUMB_FILE`) for its
    /// thumbnail; otherwise only its head and tail are kept (raw files, videos: their
    /// thumbnail is a preview they carry or ffmpeg's).
    pub kept_whole: bool,
    /// What decodes its thumbnail.
    pub decoder: Decoder,
    /// For a TIFF-based raw format the content cannot name: the Make that names it.
    pub make: Option<Make>,
    /// What a version-3 catalog had right of its rows.
    pub v3: V3,
}

impl Format {
    /// Whether a file with one of this format's extensions may hold `format`.
    pub(crate) fn accepts(&self, format: &str) -> bool {
        self.name == format || self.also.contains(&format)
    }

    const fn also(self, also: &'static [&'static str]) -> Self {
        Self { also, ..self }
    }

    const fn size(self, size: Size) -> Self {
        Self { size, ..self }
    }

    const fn v3(self, v3: V3) -> Self {
        Self { v3, ..self }
    }

    const fn make(self, names: &'static [&'static str], with_extension_only: bool) -> Self {
        Self {
            make: Some(Make {
                names,
                with_extension_only,
            }),
            ..self
        }
    }
}

/// An image format: kept whole, sized by its reader.
const fn image(
    name: &'static str,
    extensions: &'static [&'static str],
    reader: Reader,
    decoder: Decoder,
) -> Format {
    Format {
        name,
        kind: Kind::Image,
        extensions,
        also: &[],
        reader,
        size: Size::Reader,
        kept_whole: true,
        decoder,
        make: None,
        v3: V3::ReadAgain,
    }
}

/// A camera raw format (its own extension): never kept whole, its thumbnail its preview.
const fn raw(name: &'static str, extensions: &'static [&'static str], reader: RawReader) -> Format {
    Format {
        name,
        kind: Kind::Raw,
        extensions,
        also: &[],
        reader: Reader::Raw(reader),
        size: Size::Reader,
        kept_whole: false,
        decoder: Decoder::Preview,
        make: None,
        v3: V3::ReadAgain,
    }
}

/// A TIFF-based raw format: a TIFF structure inside, which IFD0 may not tell from a plain
/// TIFF, so its extensions accept `tiff` too.
const fn tiff_raw(name: &'static str, extensions: &'static [&'static str]) -> Format {
    raw(name, extensions, RawReader::Tiff).also(&["tiff"])
}

/// A video container: never kept whole, its thumbnail a frame.
const fn video(name: &'static str, extensions: &'static [&'static str], reader: Reader) -> Format {
    Format {
        name,
        kind: Kind::Video,
        extensions,
        also: &[],
        reader,
        size: Size::Reader,
        kept_whole: false,
        decoder: Decoder::Frame,
        make: None,
        v3: V3::ReadAgain,
    }
}

/// Every format the catalog knows; images, then camera raw, then video (the order of the
/// default extensions and of the docs).
pub(crate) const FORMATS: &[Format] = &[
    image("jpeg", &["jpg", "jpeg", "jpe"], Reader::Jpeg, Decoder::Jpeg).v3(V3::Right),
    image("png", &["png"], Reader::Png, Decoder::Image(I::Png)).v3(V3::Right),
    image("gif", &["gif"], Reader::None, Decoder::Image(I::Gif))
        .size(Size::Imagesize)
        .v3(V3::Right),
    image("webp", &["webp"], Reader::Webp, Decoder::Image(I::WebP))
        .size(Size::Imagesize)
        .v3(V3::Right),
    image(
        "tiff",
        &["tif", "tiff"],
        Reader::Tiff,
        Decoder::Image(I::Tiff),
    )
    .v3(V3::RightWithItsExtension),
    image("bmp", &["bmp"], Reader::Bmp, Decoder::Image(I::Bmp)).v3(V3::Right),
    image(
        "heif",
        &["heic", "heif", "hif"],
        Reader::Heif,
        Decoder::Libheif,
    ),
    image("avif", &["avif"], Reader::Heif, Decoder::Libheif).also(&["heif"]),
    image("jxl", &["jxl"], Reader::Jxl, Decoder::None),
    tiff_raw("dng", &["dng"]),
    tiff_raw("cr2", &["cr2"]),
    raw("cr3", &["cr3"], RawReader::Cr3),
    raw("crw", &["crw"], RawReader::Crw),
    tiff_raw("nef", &["nef"]).make(&["NIKON"], false),
    tiff_raw("nrw", &["nrw"])
        .also(&["nef", "tiff"])
        .make(&["NIKON"], true),
    tiff_raw("arw", &["arw"]).make(&["SONY"], false),
    tiff_raw("sr2", &["sr2"])
        .also(&["arw", "tiff"])
        .make(&["SONY"], true),
    raw("orf", &["orf"], RawReader::Tiff),
    raw("rw2", &["rw2"], RawReader::Tiff),
    tiff_raw("pef", &["pef"]).make(&["PENTAX", "RICOH", "ASAHI"], false),
    raw("raf", &["raf"], RawReader::Raf),
    tiff_raw("srw", &["srw"]).make(&["SAMSUNG"], false),
    tiff_raw("3fr", &["3fr"]).make(&["HASSELBLAD"], false),
    tiff_raw("iiq", &["iiq"]).make(&["LEAF", "PHASE"], true),
    raw("x3f", &["x3f"], RawReader::X3f),
    raw("mrw", &["mrw"], RawReader::Mrw),
    video("mp4", &["mp4"], Reader::QuickTime).also(&["m4v", "mov", "3gp"]),
    video("mov", &["mov", "qt"], Reader::QuickTime).also(&["mp4"]),
    video("m4v", &["m4v"], Reader::QuickTime).also(&["mp4", "mov"]),
    video("3gp", &["3gp", "3g2"], Reader::QuickTime).also(&["mp4"]),
    video("mkv", &["mkv"], Reader::Matroska).also(&["webm"]),
    video("webm", &["webm"], Reader::Matroska).also(&["mkv"]),
    video("avi", &["avi"], Reader::Avi),
];

/// The format named `name` (as `images.format` says).
pub(crate) fn named(name: &str) -> Option<&'static Format> {
    FORMATS.iter().find(|f| f.name == name)
}

/// The format whose extensions include `ext` (any case).
pub(crate) fn of_extension(ext: &str) -> Option<&'static Format> {
    FORMATS
        .iter()
        .find(|f| f.extensions.iter().any(|e| e.eq_ignore_ascii_case(ext)))
}

/// `images.kind` of a file of `format`: its [`Kind`]'s name, [`OTHER_KIND`] for a format
/// the table does not have.
pub(crate) fn kind_of(format: &str) -> &'static str {
    named(format).map_or(OTHER_KIND, |f| f.kind.name())
}

/// Whether a file with extension `ext` is kept whole by `--thumbs`: every file but those
/// with the extension of a format that is not ([`Format::kept_whole`]).
pub(crate) fn kept_whole(ext: Option<&str>) -> bool {
    ext.and_then(of_extension).is_none_or(|f| f.kept_whole)
}

const fn extension_count() -> usize {
    let (mut n, mut i) = (0, 0);
    while i < FORMATS.len() {
        n += FORMATS[i].extensions.len();
        i += 1;
    }
    n
}

/// Every format's extensions, in the table's order: the files catalogued by default.
pub(crate) const EXTENSIONS: [&str; extension_count()] = {
    let mut out = [""; extension_count()];
    let (mut n, mut i) = (0, 0);
    while i < FORMATS.len() {
        let mut j = 0;
        while j < FORMATS[i].extensions.len() {
            out[n] = FORMATS[i].extensions[j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    out
};

/// The raw format a TIFF structure is by its IFD0 Make (`make`, as written) and the
/// file's extension, if its Make names one: first the format whose extension the file
/// has, else one the Make names alone ([`Make::with_extension_only`]).
pub(crate) fn by_make(make: &str, ext: Option<&str>) -> Option<&'static Format> {
    let make = make.to_ascii_uppercase();
    let first = make.split_whitespace().next().unwrap_or_default();
    let named = || {
        FORMATS
            .iter()
            .filter(move |f| f.make.is_some_and(|m| m.names.contains(&first)))
    };
    let own =
        |f: &&Format| ext.is_some_and(|e| f.extensions.iter().any(|x| x.eq_ignore_ascii_case(e)));
    named()
        .find(own)
        .or_else(|| named().find(|f| f.make.is_some_and(|m| !m.with_extension_only)))
}

/// Whether a file with extension `ext` may be a camera raw file (its extension's formats
/// include a raw one); without an extension, it may.
pub(crate) fn raw_extension(ext: Option<&str>) -> bool {
    let Some(ext) = ext else { return true };
    of_extension(ext).is_some_and(|f| {
        f.kind == Kind::Raw
            || f.also
                .iter()
                .any(|a| named(a).is_some_and(|a| a.kind == Kind::Raw))
    })
}

/// The condition (SQL, on `images`) of the rows a version-3 catalog had right
/// ([`Format::v3`]), which the version-4 upgrade gives `kind = 'image'`.
pub(crate) fn v3_right_sql() -> String {
    let quote = |s: &str| format!("'{s}'");
    let right: Vec<String> = FORMATS
        .iter()
        .filter(|f| f.v3 == V3::Right)
        .map(|f| quote(f.name))
        .collect();
    let mut terms = vec![format!("format IN ({})", right.join(", "))];
    for f in FORMATS.iter().filter(|f| f.v3 == V3::RightWithItsExtension) {
        let paths: Vec<String> = f
            .extensions
            .iter()
            .map(|e| format!("lower(path) LIKE '%.{e}'"))
            .collect();
        terms.push(format!(
            "(format = {} AND ({}))",
            quote(f.name),
            paths.join(" OR ")
        ));
    }
    terms.join(" OR ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_extensions_are_unique_and_lower_case() {
        let mut names = HashSet::new();
        let mut exts = HashSet::new();
        for f in FORMATS {
            assert!(names.insert(f.name), "{} twice", f.name);
            assert_eq!(f.name, f.name.to_ascii_lowercase());
            assert!(!f.extensions.is_empty(), "{} has no extension", f.name);
            for e in f.extensions {
                assert!(exts.insert(*e), "extension {e} twice");
                assert_eq!(*e, e.to_ascii_lowercase());
                // XMP sidecars are never images.
                assert_ne!(*e, super::super::SIDECAR_EXTENSION);
            }
        }
        assert_eq!(EXTENSIONS.len(), exts.len());
    }

    #[test]
    fn every_default_extension_maps_to_the_format_that_lists_it() {
        assert_eq!(super::super::IMAGE_EXTENSIONS, &EXTENSIONS[..]);
        for e in EXTENSIONS {
            let f = of_extension(e).unwrap();
            assert!(f.extensions.contains(&e));
            assert_eq!(of_extension(&e.to_ascii_uppercase()), Some(f));
        }
        assert!(
            EXTENSIONS.contains(&"qt"),
            "QuickTime's .qt is inspected as MOV"
        );
        assert_eq!(of_extension("xmp"), None);
    }

    #[test]
    fn what_an_extension_accepts_is_formats_of_the_table() {
        for f in FORMATS {
            for a in f.also {
                assert!(named(a).is_some(), "{}: {a} is no format", f.name);
                assert_ne!(*a, f.name);
            }
            // A TIFF-based raw format's extension accepts a plain TIFF; one the Make
            // names is TIFF-based.
            if f.reader == Reader::Raw(RawReader::Tiff) && f.also.contains(&"tiff") {
                assert_eq!(f.kind, Kind::Raw);
            }
            if f.make.is_some() {
                assert_eq!(f.reader, Reader::Raw(RawReader::Tiff), "{}", f.name);
                assert!(f.also.contains(&"tiff"), "{}", f.name);
            }
        }
    }

    #[test]
    fn kinds_decide_readers_decoders_and_what_is_kept_whole() {
        for f in FORMATS {
            let raw_reader = matches!(f.reader, Reader::Raw(_));
            assert_eq!(f.kind == Kind::Raw, raw_reader, "{}", f.name);
            assert_eq!(
                f.kind == Kind::Raw,
                f.decoder == Decoder::Preview,
                "{}",
                f.name
            );
            assert_eq!(
                f.kind == Kind::Video,
                f.decoder == Decoder::Frame,
                "{}",
                f.name
            );
            // A thumbnail decoded from the kept bytes needs them whole; a preview is
            // read back and a frame is ffmpeg's.
            assert_eq!(
                f.kept_whole,
                !matches!(f.decoder, Decoder::Preview | Decoder::Frame),
                "{}",
                f.name
            );
            if f.size == Size::Imagesize {
                assert!(
                    matches!(f.reader, Reader::None | Reader::Webp),
                    "{}",
                    f.name
                );
            }
            assert_eq!(kind_of(f.name), f.kind.name());
            // The rows a version-3 catalog had right were images.
            if f.v3 != V3::ReadAgain {
                assert_eq!(f.kind, Kind::Image, "{}", f.name);
            }
        }
        assert_eq!(kind_of("pdf"), OTHER_KIND);
        assert!(kept_whole(Some("JPG")) && kept_whole(None) && kept_whole(Some("pdf")));
        assert!(!kept_whole(Some("qt")) && !kept_whole(Some("NEF")));
    }

    #[test]
    fn a_make_names_a_raw_format_with_its_extension_first() {
        let name = |make, ext| by_make(make, ext).map(|f| f.name);
        assert_eq!(name("NIKON CORPORATION", Some("NRW")), Some("nrw"));
        assert_eq!(name("NIKON CORPORATION", Some("nef")), Some("nef"));
        assert_eq!(name("NIKON", Some("dng")), Some("nef"));
        assert_eq!(name("Sony", Some("sr2")), Some("sr2"));
        assert_eq!(name("SONY", None), Some("arw"));
        assert_eq!(name("Phase One", Some("iiq")), Some("iiq"));
        assert_eq!(name("Leaf", Some("nef")), None);
        assert_eq!(name("Canon", Some("cr2")), None);
        assert!(raw_extension(None) && raw_extension(Some("DNG")) && raw_extension(Some("nrw")));
        assert!(!raw_extension(Some("tif")) && !raw_extension(Some("heic")));
    }

    /// The version-3 upgrade's condition: history, it must not change as the table grows.
    #[test]
    fn the_v3_upgrades_sql_is_what_version_3_had_right() {
        assert_eq!(
            v3_right_sql(),
            "format IN ('jpeg', 'png', 'gif', 'webp', 'bmp') OR (format = 'tiff' AND \
             (lower(path) LIKE '%.tif' OR lower(path) LIKE '%.tiff'))"
        );
    }

    fn doc(name: &str) -> String {
        let path = format!("{}/../../docs/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The words of `text` from `start` to the first `end` after it, split at commas,
    /// semicolons, slashes and white space.
    fn words_between<'a>(text: &'a str, start: &str, end: &str) -> Vec<&'a str> {
        let from = text.find(start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
        let to = from
            + text[from..]
                .find(end)
                .unwrap_or_else(|| panic!("no {end:?}"));
        text[from..to]
            .split(|c: char| c == ',' || c == ';' || c == '/' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .collect()
    }

    fn extensions_of(kind: Kind) -> Vec<&'static str> {
        FORMATS
            .iter()
            .filter(|f| f.kind == kind)
            .flat_map(|f| f.extensions.iter().copied())
            .collect()
    }

    fn names_of(kind: Kind) -> Vec<&'static str> {
        FORMATS
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| f.name)
            .collect()
    }

    #[test]
    fn docs_index_lists_the_default_extensions_and_the_formats_of_the_table() {
        let text = doc("index.md");
        let list = "Which files: by default those whose extension (case-insensitive) is one of";
        let list = &text[text.find(list).expect("the default extensions")..];
        for (kind, label) in Kind::ALL
            .iter()
            .zip(["- images:", "- camera raw:", "- video:"])
        {
            let words = words_between(
                list,
                label,
                if *kind == Kind::Video { "\n\n" } else { "\n-" },
            );
            assert_eq!(words, extensions_of(*kind), "docs/index.md, {label}");
        }
        // The schema's comment on `images.format`.
        let format = &text[text.find("format        TEXT,").expect("images.format")..];
        let images = words_between(format, "-- by content:", ", a raw format");
        assert_eq!(
            images,
            names_of(Kind::Image),
            "docs/index.md, images.format"
        );
        let raw = words_between(format, "-- (", "),");
        assert_eq!(raw, names_of(Kind::Raw), "docs/index.md, images.format");
        let videos = words_between(format, "-- a video format (", ");");
        assert_eq!(
            videos,
            names_of(Kind::Video),
            "docs/index.md, images.format"
        );
        let kinds = words_between(&text, "kind TEXT,     --", "(a format not known)");
        let named: Vec<&str> = Kind::ALL
            .iter()
            .map(|k| k.name())
            .chain([AUDIO_KIND, OTHER_KIND])
            .collect();
        assert_eq!(
            kinds.into_iter().filter(|w| *w != "|").collect::<Vec<_>>(),
            named
        );
    }

    #[test]
    fn docs_usage_lists_the_default_extensions() {
        let text = doc("usage.md");
        let words = words_between(
            &text,
            "camera raw or video extension (",
            "; `--ext` replaces",
        );
        assert_eq!(words, EXTENSIONS, "docs/usage.md");
    }
}
