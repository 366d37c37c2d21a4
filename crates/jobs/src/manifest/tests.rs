use std::path::{Path, PathBuf};

use super::check::{Checklist, Tally, Verdict, format_verdict};
use super::parse::parse_line;
use super::write::{MANIFEST_BUFFER, ManifestFile, format_line, name_in_manifest};
use crate::digest::Algorithm;
use seekless_sys::path_from_bytes;

const SHA256_ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

#[test]
fn a_manifest_file_is_written_as_its_lines_come_and_appears_only_when_complete() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("SUMS");
    let mut manifest = ManifestFile::create(&path).unwrap();
    let temp = manifest.file.temp_path().unwrap().to_path_buf();
    let hex = "ab".repeat(32);
    let mut want = Vec::new();
    for i in 0..20_000 {
        let name = format!("photos/{i:05}/{}.jpg", "x".repeat(i % 50));
        manifest.push(&hex, Path::new(&name));
        want.extend_from_slice(format!("{hex}  {name}\n").as_bytes());
        // Never more than one buffer's worth held: the rest is in the temporary. (Looked
        // at every 97th line: Wine leaks a handle per metadata call, and runs out.)
        if i % 97 == 0 {
            let written = std::fs::metadata(&temp).unwrap().len() as usize;
            assert!(
                want.len() - written <= MANIFEST_BUFFER + 200,
                "{} bytes of lines held after line {i}",
                want.len() - written
            );
        }
        assert!(manifest.pending.capacity() <= 2 * MANIFEST_BUFFER + 200);
    }
    assert!(want.len() > 20 * MANIFEST_BUFFER, "{} bytes", want.len());
    assert!(!path.exists(), "not under its name before the commit");
    // An escaped name is escaped in the file as format_line escapes it.
    manifest.push(&hex, Path::new("two\nlines"));
    want.extend_from_slice(&format_line(&hex, b"two\nlines"));
    want.push(b'\n');
    manifest.commit().unwrap();
    assert!(
        std::fs::read(&path).unwrap() == want,
        "every line, in order"
    );
    assert!(!temp.exists());
}

#[cfg(target_os = "linux")]
#[test]
fn a_manifest_that_cannot_be_written_fails_its_commit() {
    // /dev/full is written into, never replaced: every write fails with ENOSPC.
    let mut manifest = ManifestFile::create(Path::new("/dev/full")).unwrap();
    for _ in 0..5_000 {
        manifest.push(SHA256_ABC, Path::new("some/file/name"));
    }
    assert!(manifest.failed.is_some(), "a buffer's worth was written");
    let err = manifest.commit().unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    let mut short = ManifestFile::create(Path::new("/dev/full")).unwrap();
    short.push(SHA256_ABC, Path::new("a"));
    assert!(
        short.commit().is_err(),
        "the last lines are written at the commit"
    );
}

#[test]
fn plain_names_are_written_as_is() {
    assert_eq!(format_line("ab", b"dir/f.jpg"), b"ab  dir/f.jpg".to_vec());
}

#[test]
fn newlines_and_backslashes_are_escaped_like_coreutils() {
    let line = format_line("ab", b"a\nb\\c");
    if cfg!(windows) {
        // There the backslash is a separator, written `/`.
        assert_eq!(line, b"\\ab  a\\nb/c".to_vec());
    } else {
        assert_eq!(line, b"\\ab  a\\nb\\\\c".to_vec());
    }
}

#[test]
fn carriage_returns_are_escaped_like_coreutils_9() {
    assert_eq!(format_line("ab", b"c\rr"), b"\\ab  c\\rr".to_vec());
    assert_eq!(parse_line(b"\\ab  c\\rr").unwrap().path, Path::new("c\rr"));
}

#[test]
fn windows_separators_are_written_as_slashes_and_a_backslash_elsewhere_is_escaped() {
    let name = b".\\sub dir\\x";
    if cfg!(windows) {
        // As b3sum writes names on Windows; nothing left to escape.
        assert_eq!(format_line("00", name), b"00  ./sub dir/x");
        assert_eq!(format_verdict(name, Verdict::Ok), b"./sub dir/x: OK");
    } else {
        // A backslash in a Unix name is a character of it.
        assert_eq!(format_line("00", name), b"\\00  .\\\\sub dir\\\\x");
        assert_eq!(
            format_verdict(name, Verdict::Ok),
            b"\\.\\\\sub dir\\\\x: OK"
        );
    }
}

#[test]
fn a_file_named_dash_is_written_dot_slash_dash() {
    assert_eq!(name_in_manifest(b"-"), b"./-");
    assert_eq!(name_in_manifest(b"./-"), b"./-");
    assert_eq!(name_in_manifest(b"-x"), b"-x");
}

#[test]
fn lines_round_trip_through_the_parser() {
    for name in [
        &b"plain"[..],
        b"a\nb",
        b"back\\slash",
        b"caf\xe9",
        b"c\rr",
        b"end\r",
        b"sp ace",
    ] {
        let line = format_line("00ff", name);
        let e = parse_line(&line).unwrap();
        assert_eq!(e.hex, "00ff");
        assert_eq!(e.tag, None);
        assert_eq!(path_from_bytes(name), e.path);
    }
}

#[test]
fn binary_markers_and_malformed_lines() {
    assert_eq!(parse_line(b"AB *x").unwrap().hex, "ab");
    assert!(parse_line(b"zz  x").is_none());
    assert!(parse_line(b"ab").is_none());
    assert!(parse_line(b"ab ").is_none());
    assert!(parse_line(b"\\ab  bad\\q").is_none());
    assert!(parse_line(b"\\ab  trailing\\").is_none());
}

/// Each line checked with `sha256sum -c` (coreutils 9.1): what it names, or that it is
/// improperly formatted. `tests/it/hash_conformance.rs` runs such lines through both.
#[test]
fn single_space_lines_are_read_as_coreutils_reads_them() {
    let name = |line: &[u8]| parse_line(line).map(|e| e.path);
    assert_eq!(name(b"ab x"), Some("x".into()), "md5 -r's form");
    assert_eq!(name(b"ab\tx"), Some("x".into()));
    assert_eq!(name(b"ab \tx"), Some("\tx".into()), "a blank, then a name");
    assert_eq!(
        name(b"ab  "),
        Some(" ".into()),
        "one character after: single-space"
    );
    assert_eq!(name(b"ab *"), Some("*".into()));
    assert_eq!(
        name(b"ab\t*x"),
        Some("x".into()),
        "tab, then the binary mark"
    );
    assert_eq!(name(b"\\ab b\\\\s"), Some("b\\s".into()));
    assert!(parse_line(b"ab ").is_none(), "no name");
}

/// The first untagged line decides the form of the others, in every manifest after it:
/// `sha256sum -c` keeps it for the run, and refuses to mix them.
#[test]
fn the_first_untagged_line_decides_the_form_of_the_rest() {
    let hex = SHA256_ABC;
    let mut single = Checklist::new(Algorithm::Sha256);
    single.start_manifest(false);
    assert!(single.add_line(format!("{hex} a").as_bytes()));
    assert!(single.add_line(format!("SHA256 (t) = {hex}").as_bytes()));
    assert!(single.add_line(format!("{hex}  b").as_bytes()));
    assert!(single.add_line(format!("{hex} *c").as_bytes()));
    single.start_manifest(false);
    assert!(single.add_line(format!("{hex}  d").as_bytes()));
    assert_eq!(
        single.files(),
        ["a", "t", " b", "*c", " d"].map(PathBuf::from)
    );

    let mut double = Checklist::new(Algorithm::Sha256);
    assert!(
        !double.add_line(format!("{hex}0 a").as_bytes()),
        "too long: decides nothing"
    );
    assert!(double.add_line(format!("{hex} *a").as_bytes()));
    assert!(!double.add_line(format!("{hex} b").as_bytes()));
    double.start_manifest(false);
    assert!(!double.add_line(format!("{hex} c").as_bytes()));
    assert_eq!(double.files(), [PathBuf::from("a")]);
}

#[test]
fn a_name_ends_at_a_nul_as_in_coreutils() {
    // sha256sum 9.1 checks `a` for these lines; the fuzz target `manifest` found
    // that such a line named the path `a\0zz`, which no file has.
    assert_eq!(parse_line(b"ab  a\0zz").unwrap().path, Path::new("a"));
    assert_eq!(
        parse_line(b"MD5 (a\0zz) = ab").unwrap().path,
        Path::new("a")
    );
    // Nothing before the NUL: no name (coreutils lists `''`, which cannot be read).
    assert!(parse_line(b"ab  \0zz").is_none());
    // Escaped names have no way to write a NUL, as in coreutils.
    assert!(parse_line(b"\\ab  a\0zz\\\\z").is_none());
}

#[test]
fn blanks_before_the_line_and_a_trailing_cr_are_ignored() {
    let e = parse_line(b" \tab  x\r").unwrap();
    assert_eq!((e.hex.as_str(), e.path.as_path()), ("ab", Path::new("x")));
    assert_eq!(parse_line(b"ab\t x").unwrap().path, Path::new("x"));
}

#[test]
fn bsd_tagged_lines_name_their_algorithm() {
    let e = parse_line(format!("SHA256 (dir/a b) = {SHA256_ABC}").as_bytes()).unwrap();
    assert_eq!(e.path, Path::new("dir/a b"));
    assert_eq!(e.tag, Some(Algorithm::Sha256));
    assert!(e.fits(Algorithm::Sha256));
    assert!(!e.fits(Algorithm::Blake3), "same length, other algorithm");

    // OpenSSL's spacing, and a name with parentheses: it runs to the last ')'.
    let e = parse_line(format!("SHA256(x (1))= {SHA256_ABC}").as_bytes()).unwrap();
    assert_eq!(e.path, Path::new("x (1)"));

    let md5 = parse_line(b"MD5 (a) = 900150983cd24fb0d6963f7d28e17f72").unwrap();
    assert_eq!(md5.tag, Some(Algorithm::Md5));
    assert!(md5.fits(Algorithm::Md5) && !md5.fits(Algorithm::Sha256));
    let sha1 = parse_line(b"SHA1 (a) = a9993e364706816aba3e25717850c26c9cd0d89d").unwrap();
    assert!(sha1.fits(Algorithm::Sha1));
    let b3 = parse_line(format!("BLAKE3 (a) = {SHA256_ABC}").as_bytes()).unwrap();
    assert!(b3.fits(Algorithm::Blake3) && !b3.fits(Algorithm::Sha256));

    let esc = parse_line(format!("\\SHA256 (n\\nl) = {SHA256_ABC}").as_bytes()).unwrap();
    assert_eq!(esc.path, Path::new("n\nl"));

    assert!(parse_line(b"SHA256 (a) = zz").is_none());
    assert!(parse_line(b"SHA256 (a) zz").is_none());
    assert!(parse_line(b"SHA512 (a) = 00").is_none(), "unknown tag");
    assert!(parse_line(format!("SHA256 () = {SHA256_ABC}").as_bytes()).is_none());
}

#[test]
fn untagged_lines_fit_by_digest_length() {
    let e = parse_line(format!("{SHA256_ABC}  a").as_bytes()).unwrap();
    assert!(e.fits(Algorithm::Sha256) && e.fits(Algorithm::Blake3));
    assert!(!e.fits(Algorithm::Md5));
}

#[test]
fn verdicts_escape_names_like_current_coreutils() {
    assert_eq!(format_verdict(b"a", Verdict::Ok), b"a: OK");
    assert_eq!(format_verdict(b"a", Verdict::Failed), b"a: FAILED");
    assert_eq!(
        format_verdict(b"a\nb", Verdict::FailedOpenOrRead),
        b"\\a\\nb: FAILED open or read"
    );
    let backslash = format_verdict(b"b\\s", Verdict::Ok);
    if cfg!(windows) {
        // There the backslash is a separator, written `/`.
        assert_eq!(backslash, b"b/s: OK");
    } else {
        assert_eq!(backslash, b"\\b\\\\s: OK");
    }
    assert_eq!(format_verdict(b"c\rr", Verdict::Ok), b"\\c\\rr: OK");
    assert_eq!(format_verdict(b"caf\xe9", Verdict::Ok), b"caf\xe9: OK");
}

#[test]
fn warnings_are_singular_or_plural_like_coreutils() {
    let one = Tally {
        listed: 2,
        malformed: 1,
        ok: 0,
        failed: 1,
        unreadable: 1,
    };
    assert_eq!(
        one.warnings(),
        [
            "WARNING: 1 line is improperly formatted",
            "WARNING: 1 listed file could not be read",
            "WARNING: 1 computed checksum did NOT match",
        ]
    );
    let many = Tally {
        listed: 4,
        malformed: 2,
        ok: 0,
        failed: 2,
        unreadable: 2,
    };
    assert_eq!(
        many.warnings(),
        [
            "WARNING: 2 lines are improperly formatted",
            "WARNING: 2 listed files could not be read",
            "WARNING: 2 computed checksums did NOT match",
        ]
    );
    assert!(Tally::default().warnings().is_empty());
}

#[test]
fn a_manifest_passes_only_with_a_match_and_no_failure() {
    let clean = Tally {
        listed: 1,
        ok: 1,
        ..Tally::default()
    };
    assert!(clean.passed(true));
    let sloppy = Tally {
        malformed: 1,
        ..clean.clone()
    };
    assert!(sloppy.passed(false) && !sloppy.passed(true));
    assert!(
        !Tally::default().passed(false),
        "no properly formatted line"
    );
    let unreadable = Tally {
        unreadable: 1,
        ..clean
    };
    assert!(!unreadable.passed(false));
}

#[test]
fn every_line_gets_a_verdict_and_each_file_is_read_once() {
    let mut list = Checklist::new(Algorithm::Sha256);
    let zeros = "0".repeat(64);
    let first = list.start_manifest(false);
    assert!(list.add_line(format!("{SHA256_ABC}  a").as_bytes()));
    assert!(list.add_line(b"# a comment"));
    assert!(list.add_line(b""));
    assert!(list.add_line(format!("{zeros}  a\r").as_bytes()));
    assert!(list.add_line(format!("{zeros}  b").as_bytes()));
    assert!(!list.add_line(b"MD5 (a) = 900150983cd24fb0d6963f7d28e17f72"));
    let second = list.start_manifest(false);
    assert!(list.add_line(format!("SHA256 (a) = {SHA256_ABC}").as_bytes()));
    assert!(list.add_line(format!("{SHA256_ABC}  ./a").as_bytes()));

    assert_eq!(
        list.files(),
        [PathBuf::from("a"), PathBuf::from("b"), PathBuf::from("./a")]
    );
    assert_eq!(
        list.judge(Path::new("a"), Some(SHA256_ABC)),
        [Verdict::Ok, Verdict::Failed, Verdict::Ok]
    );
    assert!(list.judge(Path::new("a"), Some(SHA256_ABC)).is_empty());
    assert!(list.judge(Path::new("unlisted"), None).is_empty());
    assert_eq!(list.pending(), [PathBuf::from("b"), PathBuf::from("./a")]);
    assert_eq!(
        list.judge(Path::new("b"), None),
        [Verdict::FailedOpenOrRead]
    );
    assert_eq!(
        list.judge(Path::new("./a"), Some(SHA256_ABC)),
        [Verdict::Ok]
    );
    assert!(list.pending().is_empty());

    let t = list.tallies();
    assert_eq!(
        t[first],
        Tally {
            listed: 3,
            malformed: 1,
            ok: 1,
            failed: 1,
            unreadable: 1
        }
    );
    assert_eq!(
        t[second],
        Tally {
            listed: 2,
            ok: 2,
            ..Tally::default()
        }
    );
}

#[test]
fn names_are_told_apart_byte_for_byte_as_in_coreutils() {
    // `Path`s compare by components: `a//b` equals `a/b` there, not here.
    let mut list = Checklist::new(Algorithm::Sha256);
    for name in ["a/b", "a//b", "a/./b", "a/b/", "a/b"] {
        assert!(list.add_line(format!("{SHA256_ABC}  {name}").as_bytes()));
    }
    assert_eq!(
        list.files(),
        ["a/b", "a//b", "a/./b", "a/b/"].map(PathBuf::from)
    );
    assert_eq!(list.awaiting(), 4);
    assert_eq!(list.judge(Path::new("a/b"), None).len(), 2);
    assert_eq!(list.judge(Path::new("a//b"), None).len(), 1);
    assert_eq!(list.pending(), ["a/./b", "a/b/"].map(PathBuf::from));
}

#[test]
fn many_files_are_found_again_after_the_table_grows() {
    let mut list = Checklist::new(Algorithm::Md5);
    let hex = |i: u32| format!("{:032x}", i);
    for i in 0..5000 {
        assert!(list.add_line(format!("{}  f{i}", hex(i)).as_bytes()));
    }
    assert!(list.add_line(format!("{}  f7", hex(7)).as_bytes()));
    assert_eq!(list.files().len(), 5000);
    for i in (0..5000).rev() {
        let want = if i == 7 { 2 } else { 1 };
        let v = list.judge(Path::new(&format!("f{i}")), Some(&hex(i)));
        assert_eq!(v, vec![Verdict::Ok; want], "f{i}");
    }
    assert_eq!(list.awaiting(), 0);
    assert_eq!(list.tallies()[0].ok, 5001);
}

#[test]
fn dash_means_standard_input_except_in_a_manifest_read_from_it() {
    let mut list = Checklist::new(Algorithm::Sha256);
    list.start_manifest(false);
    assert!(list.add_line(format!("{SHA256_ABC}  -").as_bytes()));
    assert!(list.add_line(format!("{SHA256_ABC}  ./-").as_bytes()));
    assert_eq!(list.stdin_lines(), 1);
    assert_eq!(list.files(), [PathBuf::from("./-")]);
    assert_eq!(list.judge_stdin(0, Some(SHA256_ABC)), Verdict::Ok);

    let piped = list.start_manifest(true);
    assert!(!list.add_line(format!("{SHA256_ABC}  -").as_bytes()));
    assert_eq!(list.tallies()[piped].malformed, 1);
    assert_eq!(list.stdin_lines(), 1);
}
