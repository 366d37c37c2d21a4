use std::io::Cursor;

use super::super::boxes::tests::bx;
use super::super::heif::tests::{full, heif, iloc, infe, ispe};
use super::*;

/// The verdict on `view` with no TIFF structure parsed before (as the readers' own is
/// the same parse of the same bytes).
fn damaged(view: View<'_>, format: &str) -> Option<String> {
    super::damaged(view, format, None)
}

/// `file` is judged intact, and cut at ten points (never its whole length) damaged.
fn intact_and_every_cut_damaged(format: &str, file: &[u8]) {
    assert_eq!(
        damaged(View::whole(file), format),
        None,
        "{format}: the whole file"
    );
    let n = file.len();
    for i in 1..=10 {
        let cut = n * i / 11;
        let verdict = damaged(View::whole(&file[..cut]), format);
        assert!(
            verdict.is_some(),
            "{format} cut at {cut} of {n} is not said to be damaged"
        );
    }
}

/// Bytes that do not repeat and contain no 0xFF (they do not end a JPEG scan).
fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x1234_5678u32;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 255) as u8
        })
        .collect()
}

fn jpeg_file(progressive: bool) -> Vec<u8> {
    let pixels = noise(64 * 48 * 3);
    let mut out = Vec::new();
    let mut enc = jpeg_encoder::Encoder::new(&mut out, 90);
    enc.set_progressive(progressive);
    enc.encode(&pixels, 64, 48, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    out
}

/// `main` with an APP1 holding `thumb` (a whole JPEG, its EOI included) after its SOI.
fn with_thumbnail(main: &[u8], thumb: &[u8]) -> Vec<u8> {
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(thumb);
    app1.extend_from_slice(&[0; 16]);
    let mut file = main[..2].to_vec();
    file.extend_from_slice(&[0xFF, 0xE1]);
    file.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    file.extend_from_slice(&app1);
    file.extend_from_slice(&main[2..]);
    file
}

#[test]
fn a_jpeg_whose_scan_does_not_reach_its_end_marker_is_damaged() {
    let thumb = jpeg_file(false);
    for progressive in [false, true] {
        let main = jpeg_file(progressive);
        let file = with_thumbnail(&main, &thumb);
        intact_and_every_cut_damaged("jpeg", &file);
        // Cut just after the thumbnail's EOI (not the main image's end): the APP1 runs
        // past the end.
        let cut = 2 + 4 + 6 + thumb.len();
        let why = damaged(View::whole(&file[..cut]), "jpeg").unwrap();
        assert!(why.contains("APP1 runs past the end"), "{why}");
        // Cut just before the main EOI.
        let why = damaged(View::whole(&file[..file.len() - 2]), "jpeg").unwrap();
        assert!(why.contains("no end marker"), "{why}");
    }
    // Trailing bytes after the EOI are no damage.
    let mut file = jpeg_file(false);
    file.extend_from_slice(b"trailer");
    assert_eq!(damaged(View::whole(&file), "jpeg"), None);
}

/// An MPO: `first` with an MPF APP2 listing `second`, then `second`.
fn mpo(first: &[u8], second: &[u8]) -> Vec<u8> {
    // MPF: a big-endian TIFF block whose IFD has MPEntry (0xB002) of two entries.
    let mut block = b"MPF\0MM\0*\0\0\0\x08\0\x01".to_vec();
    block.extend_from_slice(&0xB002u16.to_be_bytes());
    block.extend_from_slice(&7u16.to_be_bytes());
    block.extend_from_slice(&32u32.to_be_bytes());
    block.extend_from_slice(&26u32.to_be_bytes()); // the entries, after the IFD
    block.extend_from_slice(&0u32.to_be_bytes());
    let app2_len = 2 + block.len() + 32;
    let file_len = first.len() + 2 + app2_len;
    // Offsets from the TIFF header (after SOI, the APP2 marker and length, `MPF\0`).
    let second_at = file_len - (2 + 2 + 2 + 4);
    for (len, at) in [
        (file_len as u32, 0u32),
        (second.len() as u32, second_at as u32),
    ] {
        block.extend_from_slice(&0u32.to_be_bytes());
        block.extend_from_slice(&len.to_be_bytes());
        block.extend_from_slice(&at.to_be_bytes());
        block.extend_from_slice(&0u32.to_be_bytes());
    }
    let mut file = first[..2].to_vec();
    file.extend_from_slice(&[0xFF, 0xE2]);
    file.extend_from_slice(&(app2_len as u16).to_be_bytes());
    file.extend_from_slice(&block);
    file.extend_from_slice(&first[2..]);
    assert_eq!(file.len(), file_len);
    file.extend_from_slice(second);
    file
}

#[test]
fn an_mpo_whose_second_picture_is_cut_short_is_damaged() {
    let (first, second) = (jpeg_file(false), jpeg_file(true));
    let file = mpo(&first, &second);
    assert_eq!(damaged(View::whole(&file), "jpeg"), None);
    let why = damaged(View::whole(&file[..file.len() - second.len() / 2]), "jpeg").unwrap();
    assert!(
        why.starts_with("picture 2 of the MPO runs past the end"),
        "{why}"
    );
}

#[test]
fn a_jpeg_whose_scan_lies_in_the_part_not_kept_is_not_judged() {
    let file = jpeg_file(false);
    let view = View::new(
        &file[..300],
        &file[file.len() - 10..file.len() - 4],
        file.len() as u64 - 4,
    );
    assert_eq!(damaged(view, "jpeg"), None);
}

fn png_file() -> Vec<u8> {
    let img = image::RgbImage::from_raw(32, 32, noise(32 * 32 * 3)).unwrap();
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

#[test]
fn a_png_cut_short_or_with_a_bad_crc_is_damaged() {
    let file = png_file();
    intact_and_every_cut_damaged("png", &file);
    for at in [20, file.len() / 2, file.len() - 20] {
        let mut flipped = file.clone();
        flipped[at] ^= 0x10;
        let why = damaged(View::whole(&flipped), "png");
        assert!(why.is_some(), "a flipped byte at {at} not seen");
    }
    let mut flipped = file.clone();
    flipped[file.len() / 2] ^= 1;
    assert_eq!(
        damaged(View::whole(&flipped), "png").as_deref(),
        Some("CRC mismatch in IDAT")
    );
    // Without IEND.
    let why = damaged(View::whole(&file[..file.len() - 12]), "png").unwrap();
    assert!(why.starts_with("no IEND chunk"), "{why}");
}

#[test]
fn a_gif_without_its_trailer_is_damaged() {
    let frame = image::RgbaImage::from_raw(24, 24, noise(24 * 24 * 4)).unwrap();
    let mut out = Vec::new();
    {
        let mut enc = image::codecs::gif::GifEncoder::new(&mut out);
        for _ in 0..3 {
            enc.encode_frame(image::Frame::new(frame.clone())).unwrap();
        }
    }
    intact_and_every_cut_damaged("gif", &out);
}

fn chunk(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut c = kind.to_vec();
    c.extend_from_slice(&(body.len() as u32).to_le_bytes());
    c.extend_from_slice(body);
    if body.len() % 2 == 1 {
        c.push(0);
    }
    c
}

fn riff(form: &[u8; 4], chunks: &[Vec<u8>]) -> Vec<u8> {
    let body = [&form[..], &chunks.concat()].concat();
    chunk(b"RIFF", &body)
}

#[test]
fn a_riff_past_the_end_is_damaged() {
    let webp = riff(
        b"WEBP",
        &[chunk(b"VP8X", &[0; 10]), chunk(b"VP8L", &noise(2001))],
    );
    intact_and_every_cut_damaged("webp", &webp);
    // A chunk past the RIFF, the RIFF itself whole.
    let mut bad = webp.clone();
    let at = 12 + 18 + 4;
    bad[at..at + 4].copy_from_slice(&5000u32.to_le_bytes());
    let why = damaged(View::whole(&bad), "webp").unwrap();
    assert!(why.starts_with("chunk VP8L runs past the RIFF"), "{why}");
    let avi = riff(
        b"AVI ",
        &[
            chunk(b"LIST", &[b"hdrl".as_slice(), &noise(100)].concat()),
            chunk(b"LIST", &[b"movi".as_slice(), &noise(3000)].concat()),
        ],
    );
    intact_and_every_cut_damaged("avi", &avi);
}

#[test]
fn a_box_past_the_end_or_an_iloc_extent_past_it_is_damaged() {
    let mdat = bx(b"mdat", &noise(4000));
    let head = heif(
        &[infe(1, b"hvc1")],
        &[ispe(64, 64)],
        &[iloc(&[(1, 0, 0, 0)])],
    );
    // The item's data: the mdat's payload, after the head.
    let at = head.len() as u32 + 8;
    let head = heif(
        &[infe(1, b"hvc1")],
        &[ispe(64, 64)],
        &[iloc(&[(1, 0, at, 4000)])],
    );
    let file = [head.clone(), mdat.clone()].concat();
    intact_and_every_cut_damaged("heif", &file);
    let why = damaged(View::whole(&file[..file.len() - 100]), "heif").unwrap();
    assert_eq!(
        why,
        "box mdat runs past the end (claims 3.9 KiB, 3.8 KiB left)"
    );
    // The boxes whole, the item past the end.
    let far = heif(
        &[infe(1, b"hvc1")],
        &[ispe(64, 64)],
        &[iloc(&[(1, 0, at, 9000)])],
    );
    let file = [far, mdat].concat();
    let why = damaged(View::whole(&file), "heif").unwrap();
    assert!(why.starts_with("an iloc extent runs past the end"), "{why}");
    // A movie whose moov is in the tail and whose mdat is in the gap: judged by the
    // headers kept.
    let movie = [
        bx(b"ftyp", b"isom\0\0\0\0isom"),
        bx(b"mdat", &noise(10_000)),
        bx(b"moov", &full(b"mvhd", 0, &[0; 96])),
    ]
    .concat();
    intact_and_every_cut_damaged("mp4", &movie);
    // A trailer that is not a box after the last one: not judged.
    let trailer = [movie.clone(), b"\x7f\xff\x00\x10\x01\x02SEFHxx".to_vec()].concat();
    assert_eq!(damaged(View::whole(&trailer), "mp4"), None);
    let view = View::new(
        &movie[..100],
        &movie[movie.len() - 200..],
        movie.len() as u64,
    );
    assert_eq!(damaged(view, "mp4"), None);
}

/// An EBML element: a one-byte-length ID or four, a size of 8 bytes.
fn element(id: u32, body: &[u8]) -> Vec<u8> {
    let mut e: Vec<u8> = id
        .to_be_bytes()
        .iter()
        .copied()
        .skip_while(|&b| b == 0)
        .collect();
    e.push(0x01);
    e.extend_from_slice(&(body.len() as u64).to_be_bytes()[1..]);
    e.extend_from_slice(body);
    e
}

#[test]
fn a_matroska_segment_or_cluster_past_the_end_is_damaged() {
    let ebml = element(0x1A45_DFA3, &element(0x4282, b"webm"));
    let clusters = [
        element(0x1549_A966, &noise(40)),
        element(0x1F43_B675, &noise(3000)),
        element(0x1F43_B675, &noise(2000)),
    ]
    .concat();
    let file = [ebml.clone(), element(0x1853_8067, &clusters)].concat();
    intact_and_every_cut_damaged("webm", &file);
    // Unknown size: the clusters still are.
    let mut unknown = ebml.clone();
    unknown.extend_from_slice(&[
        0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]);
    unknown.extend_from_slice(&clusters);
    assert_eq!(damaged(View::whole(&unknown), "webm"), None);
    let why = damaged(View::whole(&unknown[..unknown.len() - 100]), "webm").unwrap();
    assert!(why.starts_with("a Cluster runs past the end"), "{why}");
}

/// A little-endian TIFF: IFD0 with a size and two strips of `strip` bytes each, the
/// strips after it, then a Software text of `text` bytes.
fn tiff_file(strip: u32, text: u32) -> Vec<u8> {
    let entries: [(u16, u16, u32, u32); 5] = [
        (0x100, 4, 1, 64),
        (0x101, 4, 1, 64),
        (0x111, 4, 2, 0),
        (0x117, 4, 2, 0),
        (0x131, 2, text, 0),
    ];
    let ifd_len = 2 + 12 * entries.len() as u32 + 4;
    let arrays = 8 + ifd_len;
    let data = arrays + 16;
    let mut f = b"II*\0\x08\0\0\0".to_vec();
    f.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for (tag, kind, count, value) in entries {
        let value = match tag {
            0x111 => arrays,
            0x117 => arrays + 8,
            0x131 => data + 2 * strip,
            _ => value,
        };
        f.extend_from_slice(&tag.to_le_bytes());
        f.extend_from_slice(&kind.to_le_bytes());
        f.extend_from_slice(&count.to_le_bytes());
        f.extend_from_slice(&value.to_le_bytes());
    }
    f.extend_from_slice(&0u32.to_le_bytes());
    for v in [data, data + strip, strip, strip] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&noise(2 * strip as usize));
    f.extend_from_slice(&vec![b'a'; text as usize]);
    f
}

#[test]
fn a_tiff_strip_past_the_end_is_damaged() {
    let file = tiff_file(3000, 20);
    intact_and_every_cut_damaged("tiff", &file);
    intact_and_every_cut_damaged("dng", &file);
    let why = damaged(View::whole(&file[..file.len() - 30]), "nef").unwrap();
    assert!(why.starts_with("image data runs past the end"), "{why}");
    // The strips in the part not kept: past the kept head, inside the file.
    let view = View::new(&file[..200], &[], file.len() as u64);
    assert_eq!(damaged(view, "tiff"), None);
    // Cut in a value after the strips; cut inside the directory.
    let file = tiff_file(300, 2000);
    let why = damaged(View::whole(&file[..file.len() - 1000]), "tiff").unwrap();
    assert!(
        why.starts_with("the value of tag 0x0131 runs past the end"),
        "{why}"
    );
    let why = damaged(View::whole(&file[..30]), "tiff").unwrap();
    assert!(
        why.starts_with("image directory at 8 bytes cut short"),
        "{why}"
    );
}

#[test]
fn boxes_past_the_walks_limit_are_not_judged() {
    // More top-level boxes than the walk reads, every one whole: no verdict.
    let mut f = bx(b"ftyp", b"isom\0\0\0\0");
    for _ in 0..boxes::LIMIT {
        f.extend_from_slice(&bx(b"free", b""));
    }
    assert_eq!(damaged(View::whole(&f), "mp4"), None);
}

#[test]
fn inspect_judges_a_tiff_from_the_structure_its_readers_parsed_alike() {
    // `inspect` hands its TIFF parse to the verdict: the same as the verdict's own.
    let file = tiff_file(300, 2000);
    for cut in [file.len(), file.len() - 30, file.len() - 1000, 30] {
        let view = View::whole(&file[..cut]);
        let own = damaged(view, "tiff");
        assert_eq!(own.is_some(), cut < file.len(), "cut at {cut}");
        assert_eq!(super::super::inspect(view, Some("tif")).damaged, own);
    }
}

#[test]
fn a_raf_whose_parts_run_past_the_end_is_damaged() {
    let mut f = b"FUJIFILMCCD-RAW 0201FF383501".to_vec();
    f.resize(84, 0);
    let (jpeg, header, cfa) = (200u32, 1000u32, 4000u32);
    for v in [200, jpeg, 200 + jpeg, header, 200 + jpeg + header, cfa] {
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.resize(200, 0);
    f.extend_from_slice(&noise((jpeg + header + cfa) as usize));
    intact_and_every_cut_damaged("raf", &f);
}

#[test]
fn an_mrw_whose_raw_data_runs_past_the_end_is_damaged() {
    let mut prd = b"\0PRD".to_vec();
    prd.extend_from_slice(&24u32.to_be_bytes());
    let mut body = vec![0u8; 24];
    body[8..10].copy_from_slice(&40u16.to_be_bytes());
    body[10..12].copy_from_slice(&60u16.to_be_bytes());
    body[16] = 12;
    prd.extend_from_slice(&body);
    let mut f = b"\0MRM".to_vec();
    f.extend_from_slice(&(prd.len() as u32).to_be_bytes());
    f.extend_from_slice(&prd);
    f.extend_from_slice(&noise(40 * 60 * 12 / 8));
    intact_and_every_cut_damaged("mrw", &f);
}

#[test]
fn an_x3f_without_its_directory_is_damaged() {
    let mut f = b"FOVb".to_vec();
    f.resize(256, 0);
    f.extend_from_slice(&noise(3000));
    let dir = f.len() as u32;
    f.extend_from_slice(b"SECd\0\0\x02\0");
    f.extend_from_slice(&1u32.to_le_bytes());
    for v in [256u32, 3000, u32::from_le_bytes(*b"IMA2")] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(&dir.to_le_bytes());
    intact_and_every_cut_damaged("x3f", &f);
}

#[test]
fn a_crw_without_its_heap_directory_is_damaged() {
    let mut f = b"II".to_vec();
    f.extend_from_slice(&26u32.to_le_bytes());
    f.extend_from_slice(b"HEAPCCDR");
    f.resize(26, 0);
    let data = noise(3000);
    f.extend_from_slice(&data);
    let dir = data.len() as u32;
    f.extend_from_slice(&1u16.to_le_bytes());
    f.extend_from_slice(&0x2007u16.to_le_bytes());
    f.extend_from_slice(&3000u32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&dir.to_le_bytes());
    intact_and_every_cut_damaged("crw", &f);
}

#[test]
fn hostile_bytes_give_a_verdict_without_panicking() {
    let formats = [
        "jpeg", "png", "gif", "webp", "avi", "heif", "mp4", "webm", "tiff", "raf", "mrw", "x3f",
        "crw",
    ];
    let mut bytes = noise(600);
    for (i, b) in bytes.iter_mut().enumerate().step_by(7) {
        *b = [0xFF, 0, 0x7F][i % 3];
    }
    for format in formats {
        for len in [0, 1, 3, 8, 13, 40, 100, 600] {
            let _ = damaged(View::whole(&bytes[..len]), format);
        }
    }
}
