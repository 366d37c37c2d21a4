//! The form of every error the corpora produce: each stored error (`images.error`,
//! `thumbs.error`, `sidecars.error`) is one line with no control character and no
//! trailing space, and every line `index` writes on stderr starts with `seekless:`
//! (an AVIF damaged inside its AV1 stream included: libheif's default AV1 decoder, dav1d,
//! would write its own lines there).

use std::process::Command;

use std::ffi::OsStr;

use crate::common::catalog::{index_broken, sample_corpora};
use crate::common::*;

/// Whether `text` is as the catalog stores errors: no control character (C0, DEL, C1),
/// nothing trailing.
fn one_clean_line(text: &str) -> bool {
    !text.chars().any(char::is_control) && text.trim_end() == text && !text.is_empty()
}

#[test]
fn every_error_the_corpora_produce_is_one_clean_line_and_every_stderr_line_is_prefixed() {
    let test =
        "every_error_the_corpora_produce_is_one_clean_line_and_every_stderr_line_is_prefixed";
    if !require_tools(test, &["sqlite3", "convert", "avifenc"]) {
        return;
    }
    let Some([pillow, exiftool, exiv2]) = sample_corpora(test) else {
        return;
    };
    let scratch = scratch_dir(test);
    // And one made here whose error names a damaged box, its type a NUL and an ESC.
    let made = scratch.path().join("made");
    std::fs::create_dir(&made).unwrap();
    let mut heic = b"\0\0\0\x18ftypheic\0\0\0\0mif1heic".to_vec();
    // A meta box whose first child claims 1,000 bytes.
    heic.extend_from_slice(b"\0\0\0\x20meta\0\0\0\0\0\0\x03\xe8\0\x1bab");
    heic.resize(24 + 32, 0);
    std::fs::write(made.join("damaged.heic"), &heic).unwrap();
    // And an AVIF whose AV1 stream is damaged while its boxes are whole: the size of its
    // first OBU flipped, which dav1d reports on stderr by itself ("Error parsing OBU
    // data").
    let png = scratch.path().join("plasma.png");
    run(Command::new("convert")
        .args([
            "-seed",
            "7",
            "-size",
            "640x480",
            "plasma:fractal",
            "-depth",
            "8",
        ])
        .arg(&png));
    let avif = made.join("damaged-stream.avif");
    run(Command::new("avifenc")
        .args(["--min", "20", "--max", "40"])
        .arg(&png)
        .arg(&avif));
    let mut bytes = std::fs::read(&avif).unwrap();
    let mdat = bytes
        .windows(4)
        .position(|w| w == b"mdat")
        .expect("an mdat box");
    bytes[mdat + 5] ^= 0xff;
    std::fs::write(&avif, &bytes).unwrap();
    let db = scratch.path().join("catalog.db");
    let folders = [&pillow, &exiftool, &exiv2, &made].map(|p| p.as_os_str());
    let out = index_broken(&db, &[&[OsStr::new("--thumbs")], &folders[..]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let unprefixed: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("seekless: "))
        .collect();
    assert!(
        unprefixed.is_empty(),
        "stderr lines without the prefix: {unprefixed:#?}"
    );
    let mut seen = 0;
    for sql in [
        "SELECT error FROM images WHERE error IS NOT NULL",
        "SELECT error FROM thumbs WHERE error IS NOT NULL",
        "SELECT error FROM sidecars WHERE error IS NOT NULL",
    ] {
        // Each error hex-encoded: sqlite3's own output would hide the bytes in question.
        let sql = sql.replacen("SELECT error", "SELECT hex(error)", 1);
        let listed = run(Command::new("sqlite3").arg(&db).arg(&sql)).stdout;
        for hex in String::from_utf8(listed).unwrap().lines() {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let text = String::from_utf8(bytes).expect("errors are UTF-8");
            assert!(one_clean_line(&text), "{sql}: {text:?}");
            seen += 1;
        }
    }
    // The corpora hold hundreds of broken files: a query that found none is broken itself.
    assert!(seen > 100, "only {seen} errors stored");
    let damaged = run(Command::new("sqlite3")
        .arg(&db)
        .arg("SELECT error FROM images WHERE path LIKE '%/made/damaged.heic'"))
    .stdout;
    let damaged = String::from_utf8(damaged).unwrap();
    assert!(damaged.contains("the \\000\\033ab box"), "{damaged:?}");
    // The damaged stream was decoded and failed (else the stderr check above proves
    // nothing about the AV1 decoder).
    let thumb = run(Command::new("sqlite3").arg(&db).arg(
        "SELECT t.error FROM thumbs t JOIN images i ON i.id = t.image \
         WHERE i.path LIKE '%/made/damaged-stream.avif'",
    ))
    .stdout;
    assert!(
        !String::from_utf8(thumb).unwrap().trim().is_empty(),
        "the damaged AVIF's thumbnail has no error"
    );
}
