//! Entry points for the fuzz targets under `fuzz/` (see `docs/fuzzing.md`): each parser of
//! untrusted bytes, taking the bytes a fuzzer makes up. Built only with the `fuzzing`
//! feature; not part of the library's interface.
//!
//! Each function throws away what the parser finds: what counts is that it returns, in
//! bounded time and memory, without a panic. Where a parser promises more than that (a
//! decoded image's size, a manifest line that parses back to what was written), the
//! function checks it and panics if it does not hold.

use std::path::PathBuf;

use crate::jobs::digest::Algorithm;
use crate::jobs::manifest::{Checklist, format_line, parse_line};
use seekless_catalog::fuzzing as parsers;

/// The DC-only JPEG decoder ([`crate::jobs::index::dc_jpeg::decode`]). An image it gives
/// has `width * height` RGB pixels, an eighth of the frame's size on each side.
pub fn dc_jpeg(data: &[u8]) {
    if let Some(image) = crate::jobs::index::dc_jpeg::decode(data) {
        let pixels = image.width as usize * image.height as usize;
        assert_eq!(
            image.rgb.len(),
            pixels * 3,
            "{}×{}",
            image.width,
            image.height
        );
        assert!(pixels > 0);
    }
}

/// The JPEG segment walk of `inspect`, and the EXIF block it finds read as TIFF.
pub fn jpeg(data: &[u8]) {
    parsers::jpeg(data);
}

/// The TIFF structure reader (a TIFF file's IFD0, every format's EXIF block).
pub fn tiff(data: &[u8]) {
    parsers::tiff(data);
}

/// The PNG chunk walk, for a whole file and for the head of a huge one.
pub fn png(data: &[u8]) {
    parsers::png(data, true);
    parsers::png(data, false);
}

/// The WebP chunk walk.
pub fn webp(data: &[u8]) {
    parsers::webp(data);
}

/// The BMP header reader, for a whole file and for the head of a huge one.
pub fn bmp(data: &[u8]) {
    parsers::bmp(data, true);
    parsers::bmp(data, false);
}

/// The XMP packet search, its property lookups and its date parser.
pub fn xmp(data: &[u8]) {
    parsers::xmp(data);
}

/// The XMP sidecar reader (rating, label, keywords, title of `IMG_1234.CR2.xmp`).
pub fn sidecar(data: &[u8]) {
    parsers::sidecar(data);
}

/// `index`'s `inspect` (what a file's bytes say) without its panic guard: the format told by
/// content, then that format's parsers. The first byte picks the extension and whether
/// the data is the whole file; the rest is the file.
pub fn inspect(data: &[u8]) {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let exts = [
        None,
        Some("jpg"),
        Some("png"),
        Some("tif"),
        Some("webp"),
        Some("bmp"),
        Some("heic"),
        Some("cr2"),
        Some("dng"),
        Some("cr3"),
        Some("mp4"),
        Some("mov"),
        Some("mkv"),
        Some("avi"),
        Some("jxl"),
    ];
    let ext = exts[usize::from(pick) % exts.len()];
    parsers::inspect(data, ext, pick & 0x80 == 0);
}

/// Checksum manifests as `hash --check` reads them: every line parsed, for each of the
/// algorithms, and every listed file judged. A line written by [`format_line`] for a parsed
/// name and digest parses back to them.
pub fn manifest(data: &[u8]) {
    for algo in [Algorithm::Blake3, Algorithm::Md5] {
        let mut list = Checklist::new(algo);
        list.add_manifest(data, false, |_| {})
            .expect("reading from memory does not fail");
        list.add_manifest(data, true, |_| {})
            .expect("reading from memory does not fail");
        let files = list.files();
        assert_eq!(list.pending().len(), list.awaiting());
        for (i, file) in files.iter().enumerate() {
            let digest = (i % 2 == 0).then_some("00");
            let verdicts = list.judge(file, digest);
            assert!(!verdicts.is_empty(), "{file:?} listed but not judged");
        }
        assert_eq!(list.awaiting(), 0);
        for i in 0..list.stdin_lines() {
            list.judge_stdin(i, None);
        }
    }
    for line in data.split(|&b| b == b'\n') {
        let Some(entry) = parse_line(line) else {
            continue;
        };
        // What was read, written again, reads back the same.
        let name = seekless_sys::path_to_bytes(&entry.path).into_owned();
        let again = parse_line(&format_line(&entry.hex, &name));
        let again = again.expect("a line format_line wrote parses");
        assert_eq!((&again.hex, &again.path), (&entry.hex, &entry.path));
    }
}

/// `--files-from` lists, newline- and NUL-separated: no name is empty or holds its
/// separator.
pub fn path_list(data: &[u8]) {
    for nul in [false, true] {
        let sep = if nul { 0 } else { b'\n' };
        let list: Vec<PathBuf> =
            crate::read_path_list(data, nul).expect("reading from memory does not fail");
        for path in &list {
            let bytes = seekless_sys::path_to_bytes(path);
            assert!(!bytes.is_empty() && !bytes.contains(&sep));
        }
    }
}

/// The camera raw readers (`inspect/raw.rs`, `ciff.rs`, `x3f.rs`): the format by content
/// (or, for a TIFF structure, by its IFD0 and the extension the first byte picks), then
/// each reader on the rest as its format: true sizes, EXIF places, embedded previews.
pub fn raw(data: &[u8]) {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let exts = [
        "dng", "cr2", "nef", "nrw", "arw", "sr2", "pef", "srw", "3fr", "iiq", "orf", "rw2",
    ];
    parsers::raw(data, Some(exts[usize::from(pick) % exts.len()]));
    parsers::tiff_images(data);
    parsers::crw(data);
    parsers::x3f(data);
    parsers::cr3(data);
    parsers::raf(data);
    parsers::mrw(data);
}

/// The HEIF/AVIF reader (`inspect/heif.rs`: the primary item, its transforms, grids, the
/// Exif item) as a whole file and as a huge file's head and tail, and Apple's maker-note
/// reader (`inspect/apple.rs`).
pub fn heif(data: &[u8]) {
    parsers::heif(data, true);
    parsers::heif(data, false);
    parsers::apple(data);
}

/// The video readers: QuickTime/MP4 (`inspect/quicktime.rs`), Matroska/WebM
/// (`inspect/matroska.rs`) and AVI (`inspect/avi.rs`), whole and as head and tail.
pub fn video(data: &[u8]) {
    for complete in [true, false] {
        parsers::quicktime(data, complete);
        parsers::matroska(data, complete);
        parsers::avi(data, complete);
    }
}

/// The JPEG XL size header reader (`inspect/jxl.rs`), bare codestream and container.
pub fn jxl(data: &[u8]) {
    parsers::jxl(data, true);
    parsers::jxl(data, false);
}

/// The decisions file `dupes --apply` reads (`dupes/decisions.rs`). A decision it accepts
/// covers sorted, distinct BLAKE3s (64 lower-case hex digits), and a keeper decision's
/// keeper is one of them.
pub fn decisions(data: &[u8]) {
    use crate::jobs::dupes::decisions::DecisionKind;
    if let Ok(list) = crate::jobs::dupes::decisions::parse(data) {
        for d in list {
            assert!(!d.contents.is_empty());
            assert!(
                d.contents.windows(2).all(|w| w[0] < w[1]),
                "{:?}",
                d.contents
            );
            assert!(d.contents.iter().all(|c| {
                c.len() == 64
                    && c.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            }));
            if d.decision == DecisionKind::Keeper {
                let k = d
                    .keeper
                    .as_ref()
                    .expect("a keeper decision names its keeper");
                assert!(d.contents.contains(k));
            }
        }
    }
}

/// The journal `dupes --undo` reads (`seekless-catalog`'s `dupes/resolve/journal.rs`): each
/// act read is one a journal could have written.
pub fn journal(data: &[u8]) {
    if let Ok(read) = seekless_catalog::fuzzing::parse_journal(data) {
        for act in &read.acts {
            // Each act read is one a journal could have written.
            let again = serde_json::to_vec(act).unwrap();
            let back: seekless_catalog::fuzzing::Intent = serde_json::from_slice(&again).unwrap();
            assert_eq!(&back, act);
        }
    }
}

/// The USN change journal's records (`seekless-sys`'s `usn`): an output buffer of
/// `FSCTL_READ_USN_JOURNAL` parsed and coalesced per file, the same bytes as records
/// without the header and as `USN_JOURNAL_DATA`, and the resume decision on what parses.
/// Each record is at least 8 bytes; a name never reaches past the buffer; after an error
/// nothing more is read.
pub fn usn(data: &[u8]) {
    use seekless_sys::usn::{
        Changes, JournalData, JournalPosition, JournalState, Records, parse_output, resume,
    };
    let walk = |records: Records<'_>, len: usize| {
        let mut changes = Changes::new();
        let mut count = 0;
        let mut failed = false;
        for entry in records {
            assert!(!failed, "a record after an error");
            count += 1;
            match entry {
                Ok(e) => {
                    if let seekless_sys::usn::Entry::Change(r) = e {
                        assert!(r.name_units().len() * 2 <= len);
                        let _ = r.name_lossy();
                    }
                    changes.add(&e);
                }
                Err(e) => {
                    assert!(e.offset < len);
                    let _ = e.to_string();
                    failed = true;
                }
            }
        }
        assert!(count <= len / 8 + 1, "{count} records from {len} bytes");
        for c in changes.files() {
            let _ = (
                c.created(),
                c.data_changed(),
                c.metadata_only(),
                c.renamed(),
            );
        }
    };
    if let Ok((next, records)) = parse_output(data) {
        walk(records, data.len());
        if let Ok(d) = JournalData::parse(data) {
            let now = JournalState {
                volume_serial: d.journal_id as u32,
                data: d,
            };
            let stored = JournalPosition {
                volume_serial: now.volume_serial,
                journal_id: d.journal_id,
                next_usn: next,
            };
            let _ = resume(Some(&stored), Ok(&now));
        }
    }
    walk(Records::new(data), data.len());
}
