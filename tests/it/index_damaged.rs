//! The integrity verdict measured (issue 45): every intact sample of Pillow's, ExifTool's
//! and Exiv2's corpora of the formats judged, and of the media `index_media` makes with
//! ffmpeg, heif-enc and by hand (MP4, MOV, M4V, 3GP, MKV, WebM, AVI, HEIC, AVIF, the raw
//! layouts), is catalogued with no `damaged`, and of the
//! same files cut short at ten points each (5 % to 95 %, never the whole length) and of
//! the PNGs with one byte flipped, at least 95 % are said to be damaged. Prints the table
//! per format that `bench/RESULTS.md` quotes.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::catalog::{index_broken, sample_corpora};
use crate::common::*;
use crate::index_media::make_files;

/// The formats the verdict judges (as the catalog names them).
const JUDGED: &[&str] = &[
    "jpeg", "png", "gif", "webp", "avi", "tiff", "dng", "nef", "nrw", "cr2", "arw", "sr2", "pef",
    "orf", "rw2", "srw", "3fr", "iiq", "heif", "avif", "cr3", "mp4", "mov", "m4v", "3gp", "mkv",
    "webm", "crw", "raf", "x3f", "mrw",
];

/// The corpus files of those formats that are damaged in fact, and flagged: not intact,
/// so neither counted as intact nor cut. Each one's verdict is printed by the test.
const DAMAGED_SAMPLES: &[&str] = &[
    // Pillow's broken files, kept to test its error paths: truncated_*.png/jpg,
    // broken*.png, a CRC left wrong (unknown_compression_method.png), GIFs cut inside
    // their image data (zero_width, decompression_bomb), ultrahdr.jpg (cut after its SOS
    // header: no scan data), an MPO without its second picture, TIFFs from fuzzers or
    // with strips past the end.
    "pillow-13.0.0/Tests/images/broken.png",
    "pillow-13.0.0/Tests/images/broken_data_stream.png",
    "pillow-13.0.0/Tests/images/decompression_bomb.gif",
    "pillow-13.0.0/Tests/images/oom-225817ca0f8c663be7ab4b9e717b02c661e66834.tif",
    "pillow-13.0.0/Tests/images/seek_too_large.tif",
    "pillow-13.0.0/Tests/images/sugarshack_no_data.mpo",
    "pillow-13.0.0/Tests/images/tiff_wrong_bits_per_sample.tiff",
    "pillow-13.0.0/Tests/images/timeout-6646305047838720",
    "pillow-13.0.0/Tests/images/truncated_end_chunk.png",
    "pillow-13.0.0/Tests/images/truncated_image.png",
    "pillow-13.0.0/Tests/images/truncated_jpeg.jpg",
    "pillow-13.0.0/Tests/images/ultrahdr.jpg",
    "pillow-13.0.0/Tests/images/unknown_compression_method.png",
    "pillow-13.0.0/Tests/images/zero_width.gif",
    // ExifTool's samples hold metadata only: the image data of these is stripped (the
    // RIFF, Segment, raw data, strips or MPO picture their headers claim are not there).
    "Image-ExifTool-12.57/t/images/ExifTool.jpg",
    "Image-ExifTool-12.57/t/images/Matroska.mkv",
    "Image-ExifTool-12.57/t/images/Minolta.mrw",
    "Image-ExifTool-12.57/t/images/Panasonic.rw2",
    "Image-ExifTool-12.57/t/images/Pentax.avi",
    "Image-ExifTool-12.57/t/images/RIFF.avi",
    // Exiv2's bug reproducers (POC, poc, crash, overflow, invalid-mem, …: malformed on
    // purpose, sizes of gigabytes, bad CRCs) and minimised samples (IMG_1361.dng without
    // its raw data, IMGP0006-min.jpg without its scan, 17- and 65-byte JPEGs).
    "exiv2-0.27.6/test/data/005-invalid-mem",
    "exiv2-0.27.6/test/data/006-heap-buffer-over",
    "exiv2-0.27.6/test/data/007-heap-buffer-over",
    "exiv2-0.27.6/test/data/008-invalid-mem",
    "exiv2-0.27.6/test/data/009-stack-over",
    "exiv2-0.27.6/test/data/01-Null-exiv2-poc",
    "exiv2-0.27.6/test/data/010_bad_free",
    "exiv2-0.27.6/test/data/02-Invalid-mem-def",
    "exiv2-0.27.6/test/data/1-out-of-read-Poc",
    "exiv2-0.27.6/test/data/1-string-format.jpg",
    "exiv2-0.27.6/test/data/10-printStructure-outbound-read-2",
    "exiv2-0.27.6/test/data/2-invalid-memory-access",
    "exiv2-0.27.6/test/data/2-out-of-read-Poc",
    "exiv2-0.27.6/test/data/2018-01-09-exiv2-crash-002.tiff",
    "exiv2-0.27.6/test/data/2018-01-09-exiv2-crash-003.tiff",
    "exiv2-0.27.6/test/data/7-printIFD-divbyzero-1",
    "exiv2-0.27.6/test/data/9-printStructure-outbound-read-1",
    "exiv2-0.27.6/test/data/IMGP0006-min.jpg",
    "exiv2-0.27.6/test/data/IMG_1361.dng",
    "exiv2-0.27.6/test/data/POC",
    "exiv2-0.27.6/test/data/POC-file_issue_1019",
    "exiv2-0.27.6/test/data/POC1",
    "exiv2-0.27.6/test/data/POC12",
    "exiv2-0.27.6/test/data/POC13",
    "exiv2-0.27.6/test/data/POC2",
    "exiv2-0.27.6/test/data/POC3",
    "exiv2-0.27.6/test/data/POC4",
    "exiv2-0.27.6/test/data/POC5",
    "exiv2-0.27.6/test/data/POC6",
    "exiv2-0.27.6/test/data/POC7",
    "exiv2-0.27.6/test/data/POC8",
    "exiv2-0.27.6/test/data/POC9",
    "exiv2-0.27.6/test/data/cve_2017_1000126_stack-oob-read.webp",
    "exiv2-0.27.6/test/data/cve_2017_18005_reproducer.tiff",
    "exiv2-0.27.6/test/data/exiv2-bug1247.jpg",
    "exiv2-0.27.6/test/data/exiv2-bug841.png",
    "exiv2-0.27.6/test/data/exiv2_0-26_exiv2_uncontrolled-recursion_printIFDStructure.tif",
    "exiv2-0.27.6/test/data/heap-oob-write.tiff",
    "exiv2-0.27.6/test/data/issue_170_poc",
    "exiv2-0.27.6/test/data/issue_1793_poc.heic",
    "exiv2-0.27.6/test/data/issue_1817_poc.png",
    "exiv2-0.27.6/test/data/issue_1830_poc.tiff",
    "exiv2-0.27.6/test/data/issue_1841_poc.webp",
    "exiv2-0.27.6/test/data/issue_1847_poc.jpg",
    "exiv2-0.27.6/test/data/issue_187",
    "exiv2-0.27.6/test/data/issue_1881_poc.jpg",
    "exiv2-0.27.6/test/data/issue_378_1-poc-heapoverflow",
    "exiv2-0.27.6/test/data/issue_400_poc1",
    "exiv2-0.27.6/test/data/issue_400_poc2",
    "exiv2-0.27.6/test/data/issue_428_poc1.png",
    "exiv2-0.27.6/test/data/issue_428_poc2.png",
    "exiv2-0.27.6/test/data/issue_428_poc3.png",
    "exiv2-0.27.6/test/data/issue_428_poc4.png",
    "exiv2-0.27.6/test/data/issue_428_poc5.png",
    "exiv2-0.27.6/test/data/issue_428_poc6.png",
    "exiv2-0.27.6/test/data/issue_428_poc7.png",
    "exiv2-0.27.6/test/data/issue_428_poc8.png",
    "exiv2-0.27.6/test/data/issue_457_poc",
    "exiv2-0.27.6/test/data/issue_712_poc.tif",
    "exiv2-0.27.6/test/data/issue_789_poc1.png",
    "exiv2-0.27.6/test/data/issue_790_poc2.png",
    "exiv2-0.27.6/test/data/issue_828_poc.png",
    "exiv2-0.27.6/test/data/issue_839_poc.rw2",
    "exiv2-0.27.6/test/data/issue_843_poc.crw",
    "exiv2-0.27.6/test/data/issue_845_poc.png",
    "exiv2-0.27.6/test/data/issue_853_poc.jpg",
    "exiv2-0.27.6/test/data/issue_869_poc.png",
    "exiv2-0.27.6/test/data/issue_943_poc1.mrm",
    "exiv2-0.27.6/test/data/issue_943_poc2.mrm",
    "exiv2-0.27.6/test/data/issue_960.poc.webp",
    "exiv2-0.27.6/test/data/pocIssue283.jpg",
    "exiv2-0.27.6/test/data/pocIssue306",
    "exiv2-0.27.6/test/data/pocIssue511",
    "exiv2-0.27.6/test/data/printStructure",
    "exiv2-0.27.6/test/data/printStructure2",
    "exiv2-0.27.6/test/data/tiffimage_int-out-of-bound-read-poc-2",
];

/// Per format: files, cut variants, cuts flagged, flipped variants, flips flagged,
/// intact files flagged.
#[derive(Default)]
struct Row {
    files: usize,
    cuts: usize,
    cuts_flagged: usize,
    flips: usize,
    flips_flagged: usize,
    intact_flagged: usize,
}

/// `(path, format, damaged)` of every row of the catalog at `db`.
fn verdicts(db: &Path) -> Vec<(String, String, Option<String>)> {
    let out = run(Command::new("sqlite3")
        .args(["-separator", "\t", "-nullvalue", "\\N"])
        .arg(db)
        .arg("SELECT path, coalesce(format, ''), damaged FROM images"))
    .stdout;
    String::from_utf8(out)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, '\t');
            let (path, format, damaged) = (f.next()?, f.next()?, f.next()?);
            Some((
                path.to_string(),
                format.to_string(),
                (damaged != "\\N").then(|| damaged.to_string()),
            ))
        })
        .collect()
}

/// Indexes `dirs` into `db` (their broken files are errors: exit 1, with their rows).
fn index(db: &Path, dirs: &[&Path]) {
    let dirs: Vec<&OsStr> = dirs.iter().map(|d| d.as_os_str()).collect();
    index_broken(db, &dirs);
}

#[test]
fn cut_and_flipped_samples_are_flagged_damaged_and_intact_ones_are_not() {
    let test = "cut_and_flipped_samples_are_flagged_damaged_and_intact_ones_are_not";
    if !require_tools(
        test,
        &["exiftool", "ffmpeg", "heif-enc", "convert", "sqlite3"],
    ) {
        return;
    }
    let Some([pillow, exiftool, exiv2]) = sample_corpora(test) else {
        return;
    };
    let corpora = pillow
        .ancestors()
        .nth(3)
        .expect("the corpora's directory")
        .to_path_buf();
    let scratch = scratch_dir(test);
    let media = scratch.path().join("media");
    std::fs::create_dir(&media).unwrap();
    make_files(&media);
    let db = scratch.path().join("originals.db");
    index(&db, &[&pillow, &exiftool, &exiv2, &media]);
    let known: BTreeSet<PathBuf> = DAMAGED_SAMPLES.iter().map(|p| corpora.join(p)).collect();
    let mut table: BTreeMap<String, Row> = BTreeMap::new();
    let mut wrongly_flagged = Vec::new();
    let mut variants = Vec::new(); // (variant's path, format, cut or flipped)
    let made = scratch.path().join("variants");
    for (i, (path, format, damaged)) in verdicts(&db).into_iter().enumerate() {
        if !JUDGED.contains(&format.as_str()) {
            continue;
        }
        let path = PathBuf::from(path);
        if known.contains(&path) {
            println!("damaged sample {}: {damaged:?}", path.display());
            continue;
        }
        let row = table.entry(format.clone()).or_default();
        row.files += 1;
        if let Some(why) = damaged {
            row.intact_flagged += 1;
            wrongly_flagged.push(format!("{}: {why}", path.display()));
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let ext = path
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let dir = made.join(format!("{i:05}"));
        std::fs::create_dir_all(&dir).unwrap();
        for k in 1..=10 {
            let cut = bytes.len() * k / 11;
            let to = dir.join(format!("cut{k:02}{ext}"));
            std::fs::write(&to, &bytes[..cut]).unwrap();
            variants.push((to, format.clone(), true));
        }
        if format == "png" {
            for k in [3, 5, 7] {
                let mut flipped = bytes.clone();
                let at = (bytes.len() * k / 10).max(8);
                if let Some(b) = flipped.get_mut(at) {
                    *b ^= 0x01;
                }
                let to = dir.join(format!("flip{k}{ext}"));
                std::fs::write(&to, &flipped).unwrap();
                variants.push((to, format.clone(), false));
            }
        }
    }
    let db = scratch.path().join("variants.db");
    index(&db, &[&made]);
    let flagged: BTreeMap<PathBuf, Option<String>> = verdicts(&db)
        .into_iter()
        .map(|(p, _, d)| (PathBuf::from(p), d))
        .collect();
    for (path, format, cut) in &variants {
        let row = table.get_mut(format).unwrap();
        let hit = flagged.get(path).is_some_and(Option::is_some);
        if *cut {
            row.cuts += 1;
            row.cuts_flagged += usize::from(hit);
        } else {
            row.flips += 1;
            row.flips_flagged += usize::from(hit);
        }
    }
    let mut total = Row::default();
    println!(
        "{:<7} {:>6} {:>6} {:>8} {:>6} {:>8} {:>15}",
        "format", "files", "cuts", "flagged", "flips", "flagged", "intact flagged"
    );
    for (format, r) in &table {
        println!(
            "{format:<7} {:>6} {:>6} {:>8} {:>6} {:>8} {:>15}",
            r.files, r.cuts, r.cuts_flagged, r.flips, r.flips_flagged, r.intact_flagged
        );
        total.files += r.files;
        total.cuts += r.cuts;
        total.cuts_flagged += r.cuts_flagged;
        total.flips += r.flips;
        total.flips_flagged += r.flips_flagged;
        total.intact_flagged += r.intact_flagged;
    }
    println!(
        "{:<7} {:>6} {:>6} {:>8} {:>6} {:>8} {:>15}",
        "all",
        total.files,
        total.cuts,
        total.cuts_flagged,
        total.flips,
        total.flips_flagged,
        total.intact_flagged
    );
    assert!(
        wrongly_flagged.is_empty(),
        "intact samples flagged damaged: {wrongly_flagged:#?}"
    );
    assert!(total.cuts > 1000, "only {} cut variants", total.cuts);
    assert!(
        total.cuts_flagged * 100 >= total.cuts * 95,
        "{} of {} cut files flagged",
        total.cuts_flagged,
        total.cuts
    );
    assert!(
        total.flips_flagged * 100 >= total.flips * 95,
        "{} of {} flipped PNGs flagged",
        total.flips_flagged,
        total.flips
    );
}
