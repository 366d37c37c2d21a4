//! The journal parser, coalescing and resume decision, on records built byte by byte from
//! the documented layouts (`build.rs`), not captured from a live volume.

use super::build::{Journal, Rec, journal_data_bytes, ntfs_ref, output, v4_bytes};
use super::reason::*;
use super::*;

const ROOT: u64 = 5 | (5 << 48); // NTFS's root directory: MFT record 5, sequence 5
const DIR: u32 = FILE_ATTRIBUTE_DIRECTORY;

fn entries(buf: &[u8]) -> Vec<Entry<'_>> {
    let (_, records) = parse_output(buf).unwrap();
    records.map(Result::unwrap).collect()
}

fn change<'a>(e: &Entry<'a>) -> Record<'a> {
    match e {
        Entry::Change(r) => *r,
        Entry::Ranges(_) => panic!("a range record: {e:?}"),
    }
}

fn first_error(buf: &[u8]) -> UsnError {
    let (_, records) = parse_output(buf).unwrap();
    records.filter_map(Result::err).next().expect("an error")
}

// ---- the parser ----

#[test]
fn v2_record_fields_are_read_at_their_documented_offsets() {
    let mut rec = Rec::v2(
        ntfs_ref(0x1234, 3),
        ROOT,
        DATA_EXTEND | CLOSE,
        "IMG_0001.JPG",
    );
    rec.usn = 0x1_0000;
    rec.source_info = 0x4;
    rec.attributes = 0x21;
    let buf = output(0x1_0060, &[rec.bytes()]);
    // 60 fixed + 24 name bytes, rounded up to 88.
    assert_eq!(buf.len(), 8 + 88);
    let (next, _) = parse_output(&buf).unwrap();
    assert_eq!(next, 0x1_0060);
    let all = entries(&buf);
    assert_eq!(all.len(), 1);
    let r = change(&all[0]);
    assert_eq!((r.major_version, r.minor_version), (2, 0));
    assert_eq!(r.file, FileRef(u128::from(ntfs_ref(0x1234, 3))));
    assert_eq!(r.file.low64(), 0x0003_0000_0000_1234);
    assert_eq!(r.parent, FileRef(u128::from(ROOT)));
    assert_eq!(r.usn, 0x1_0000);
    assert_eq!(r.timestamp, 134_410_752_000_000_000);
    assert_eq!(r.reason, DATA_EXTEND | CLOSE);
    assert_eq!(r.source_info, 0x4);
    assert_eq!(r.security_id, 0x102);
    assert_eq!(r.attributes, 0x21);
    assert!(!r.is_dir());
    assert_eq!(r.name_lossy(), "IMG_0001.JPG");
    assert_eq!(all[0].usn(), 0x1_0000);
}

#[test]
fn v3_records_carry_128_bit_references() {
    let file = 0x0011_2233_4455_6677_8899_aabb_ccdd_eeffu128;
    let parent = 0xffee_u128 << 64 | 7;
    let rec = Rec::v3(file, parent, FILE_CREATE, "Ordner");
    let bytes = rec.bytes();
    assert_eq!(bytes.len(), 88); // 76 + 12, rounded up to 8
    let buf = output(4096, &[bytes]);
    let r = change(&entries(&buf)[0]);
    assert_eq!(r.major_version, 3);
    assert_eq!(r.file, FileRef(file));
    assert_eq!(r.parent, FileRef(parent));
    assert_eq!(r.reason, FILE_CREATE);
    assert_eq!(r.name_lossy(), "Ordner");
}

#[test]
fn v4_range_records_are_recognised_with_their_extents() {
    let buf = output(
        1 << 20,
        &[v4_bytes(
            9,
            5,
            0x2000,
            DATA_OVERWRITE,
            &[(0, 4096), (1 << 20, 65536)],
        )],
    );
    let all = entries(&buf);
    let Entry::Ranges(r) = all[0] else {
        panic!("{:?}", all[0])
    };
    assert_eq!((r.file, r.parent, r.usn), (FileRef(9), FileRef(5), 0x2000));
    assert_eq!(r.reason, DATA_OVERWRITE);
    assert_eq!(
        r.extents().collect::<Vec<_>>(),
        [(0, 4096), (1 << 20, 65536)]
    );
}

#[test]
fn records_of_every_version_follow_one_another() {
    let buf = output(
        0x3000,
        &[
            Rec::v2(10, ROOT, FILE_CREATE, "a").bytes(),
            Rec::v3(11, u128::from(ROOT), FILE_CREATE, "bb").bytes(),
            v4_bytes(11, u128::from(ROOT), 0x2f00, DATA_EXTEND, &[]),
            Rec::v2(10, ROOT, FILE_CREATE | CLOSE, "a").bytes(),
        ],
    );
    let all = entries(&buf);
    assert_eq!(all.len(), 4);
    assert!(matches!(all[2], Entry::Ranges(r) if r.extents().count() == 0));
    assert_eq!(change(&all[3]).reason, FILE_CREATE | CLOSE);
}

#[test]
fn a_buffer_with_only_the_next_usn_has_no_records() {
    let buf = output(77 * 8, &[]);
    let (next, mut records) = parse_output(&buf).unwrap();
    assert_eq!(next, 616);
    assert!(records.next().is_none());
}

#[test]
fn a_buffer_shorter_than_the_next_usn_is_truncated() {
    for len in 0..8 {
        let e = parse_output(&vec![0; len]).unwrap_err();
        assert_eq!(e.offset, 0);
        assert_eq!(
            e.kind,
            UsnErrorKind::Truncated {
                needed: 8,
                available: len
            }
        );
    }
}

#[test]
fn a_record_of_length_zero_is_an_error_not_an_endless_loop() {
    let mut buf = output(0, &[Rec::v2(1, ROOT, 0, "x").bytes()]);
    buf.extend_from_slice(&[0; 64]);
    let (_, mut records) = parse_output(&buf).unwrap();
    assert!(records.next().unwrap().is_ok());
    let e = records.next().unwrap().unwrap_err();
    assert_eq!(e.offset, 8 + 64);
    assert_eq!(e.kind, UsnErrorKind::ZeroLength);
    // Nothing after an error: the record's length was the only way on.
    assert!(records.next().is_none());
}

#[test]
fn a_record_longer_than_the_buffer_is_an_error() {
    let mut rec = Rec::v2(1, ROOT, 0, "name").bytes();
    rec[0..4].copy_from_slice(&4096u32.to_le_bytes());
    let e = first_error(&output(0, &[rec]));
    assert_eq!(
        e,
        UsnError {
            offset: 8,
            kind: UsnErrorKind::PastEnd {
                length: 4096,
                available: 72
            }
        }
    );
    assert_eq!(
        e.to_string(),
        "change journal record at offset 8: record length 4096 runs past the buffer (72 bytes left)"
    );
}

#[test]
fn a_record_length_not_a_multiple_of_8_is_misaligned() {
    let mut rec = Rec::v2(1, ROOT, 0, "name").bytes();
    rec[0..4].copy_from_slice(&70u32.to_le_bytes());
    let e = first_error(&output(0, &[rec]));
    assert_eq!(e.kind, UsnErrorKind::Misaligned { length: 70 });
}

#[test]
fn an_unknown_major_version_is_an_error_naming_its_offset() {
    let good = Rec::v2(1, ROOT, 0, "a").bytes();
    let mut bad = Rec::v2(2, ROOT, 0, "b").bytes();
    bad[4..6].copy_from_slice(&5u16.to_le_bytes());
    bad[6..8].copy_from_slice(&1u16.to_le_bytes());
    let e = first_error(&output(0, &[good.clone(), bad]));
    assert_eq!(e.offset, 8 + good.len());
    assert_eq!(e.kind, UsnErrorKind::UnknownVersion { major: 5, minor: 1 });
    for major in [0u16, 1] {
        let mut old = Rec::v2(2, ROOT, 0, "b").bytes();
        old[4..6].copy_from_slice(&major.to_le_bytes());
        assert!(matches!(
            first_error(&output(0, &[old])).kind,
            UsnErrorKind::UnknownVersion { .. }
        ));
    }
}

#[test]
fn a_later_minor_version_is_read_by_its_name_offset() {
    let mut rec = Rec::v2(1, ROOT, CLOSE, "n");
    rec.minor = 1;
    let buf = output(0, &[rec.bytes()]);
    let r = change(&entries(&buf)[0]);
    assert_eq!((r.major_version, r.minor_version), (2, 1));
    assert_eq!(r.name_lossy(), "n");
}

#[test]
fn a_record_shorter_than_its_fixed_part_is_an_error() {
    // A V3 header claiming 64 bytes: the fixed part alone is 76.
    let mut rec = vec![0u8; 64];
    rec[0..4].copy_from_slice(&64u32.to_le_bytes());
    rec[4..6].copy_from_slice(&3u16.to_le_bytes());
    let e = first_error(&output(0, &[rec]));
    assert_eq!(
        e.kind,
        UsnErrorKind::TooShort {
            length: 64,
            fixed: 76
        }
    );
    // And a V2 record of 8 bytes.
    let mut rec = vec![0u8; 8];
    rec[0..4].copy_from_slice(&8u32.to_le_bytes());
    rec[4..6].copy_from_slice(&2u16.to_le_bytes());
    assert!(matches!(
        first_error(&output(0, &[rec])).kind,
        UsnErrorKind::TooShort { .. }
    ));
}

#[test]
fn an_odd_name_length_is_an_error() {
    let mut rec = Rec::v2(1, ROOT, 0, "abc").bytes();
    rec[56..58].copy_from_slice(&5u16.to_le_bytes());
    assert_eq!(
        first_error(&output(0, &[rec])).kind,
        UsnErrorKind::OddNameLength { length: 5 }
    );
}

#[test]
fn a_name_outside_its_record_is_an_error() {
    // Past the record's end (but inside the buffer: the next record follows).
    let mut rec = Rec::v2(1, ROOT, 0, "abcd").bytes();
    rec[56..58].copy_from_slice(&64u16.to_le_bytes());
    let next = Rec::v2(2, ROOT, 0, "next").bytes();
    assert_eq!(
        first_error(&output(0, &[rec.clone(), next])).kind,
        UsnErrorKind::NameOutsideRecord {
            name_offset: 60,
            name_length: 64,
            length: 72
        }
    );
    // Overlapping the fixed fields.
    let mut rec = Rec::v2(1, ROOT, 0, "abcd").bytes();
    rec[58..60].copy_from_slice(&40u16.to_le_bytes());
    assert!(matches!(
        first_error(&output(0, &[rec])).kind,
        UsnErrorKind::NameOutsideRecord {
            name_offset: 40,
            ..
        }
    ));
    // A V3 name offset of 60 is inside V3's fixed part.
    let mut rec = Rec::v3(1, 5, 0, "abcd").bytes();
    rec[74..76].copy_from_slice(&60u16.to_le_bytes());
    assert!(matches!(
        first_error(&output(0, &[rec])).kind,
        UsnErrorKind::NameOutsideRecord { .. }
    ));
}

#[test]
fn range_records_whose_extents_do_not_fit_are_errors() {
    let mut rec = v4_bytes(1, 5, 0, DATA_OVERWRITE, &[(0, 1)]);
    rec[60..62].copy_from_slice(&2u16.to_le_bytes()); // two extents claimed, one there
    assert_eq!(
        first_error(&output(0, &[rec])).kind,
        UsnErrorKind::BadExtents {
            count: 2,
            size: 16,
            length: 80
        }
    );
    let mut rec = v4_bytes(1, 5, 0, DATA_OVERWRITE, &[(0, 1)]);
    rec[62..64].copy_from_slice(&8u16.to_le_bytes()); // smaller than an extent
    assert!(matches!(
        first_error(&output(0, &[rec])).kind,
        UsnErrorKind::BadExtents { size: 8, .. }
    ));
}

#[test]
fn a_partial_header_after_the_last_record_is_truncated() {
    let mut buf = output(0, &[Rec::v2(1, ROOT, 0, "a").bytes()]);
    buf.extend_from_slice(&[8, 0, 0]);
    let e = first_error(&buf);
    assert_eq!(e.offset, 8 + 64);
    assert_eq!(
        e.kind,
        UsnErrorKind::Truncated {
            needed: 8,
            available: 3
        }
    );
}

#[test]
fn names_are_utf16_with_unpaired_surrogates_replaced() {
    let buf = output(0, &[Rec::v2(1, ROOT, 0, "Ærø 📷.jpg").bytes()]);
    let r = change(&entries(&buf)[0]);
    assert_eq!(r.name_lossy(), "Ærø 📷.jpg");
    assert_eq!(r.name_units().len(), "Ærø 📷.jpg".encode_utf16().count());
    // A lone high surrogate (NTFS names are UTF-16 code units, not checked).
    let mut rec = Rec::v2(1, ROOT, 0, "ab").bytes();
    rec[60..62].copy_from_slice(&0xD800u16.to_le_bytes());
    let buf = output(0, &[rec]);
    assert_eq!(change(&entries(&buf)[0]).name_lossy(), "\u{FFFD}b");
}

#[test]
fn an_empty_name_is_accepted() {
    let buf = output(0, &[Rec::v2(1, ROOT, CLOSE, "").bytes()]);
    assert_eq!(change(&entries(&buf)[0]).name_lossy(), "");
}

/// Every prefix and every one-byte corruption of a valid buffer: the parser returns
/// (no panic, no endless loop) and never yields more records than bytes / 8.
#[test]
fn damaged_buffers_never_panic_or_loop() {
    let buf = output(
        0x4000,
        &[
            Rec::v2(10, ROOT, FILE_CREATE, "a.jpg").bytes(),
            Rec::v3(11, 5, DATA_EXTEND, "b.jpg").bytes(),
            v4_bytes(11, 5, 0x2f00, DATA_EXTEND, &[(0, 512)]),
            Rec::v2(10, ROOT, CLOSE, "a.jpg").bytes(),
        ],
    );
    let walk = |b: &[u8]| {
        if let Ok((_, records)) = parse_output(b) {
            let n = records.take(b.len()).count();
            assert!(n <= b.len() / 8, "{n} records from {} bytes", b.len());
        }
    };
    for len in 0..=buf.len() {
        walk(&buf[..len]);
    }
    let mut b = buf.clone();
    for at in 0..buf.len() {
        for v in [0x00, 0x01, 0x07, 0x80, 0xff] {
            b[at] = v;
            walk(&b);
        }
        b[at] = buf[at];
    }
}

// ---- the query's answer and the read's input ----

#[test]
fn journal_data_is_read_in_each_version() {
    let v0 = journal_data_bytes(0, 0x01D9_0000_AAAA_BBBB, 4096, 1 << 30, 0);
    assert_eq!(v0.len(), 56);
    let d = JournalData::parse(&v0).unwrap();
    assert_eq!(d.journal_id, 0x01D9_0000_AAAA_BBBB);
    assert_eq!(
        (d.first_usn, d.next_usn, d.lowest_valid_usn),
        (4096, 1 << 30, 0)
    );
    assert_eq!(d.max_usn, i64::MAX);
    assert_eq!((d.maximum_size, d.allocation_delta), (32 << 20, 8 << 20));
    assert_eq!((d.versions, d.range_tracking), (None, None));

    let v1 = journal_data_bytes(1, 1, 0, 8, 0);
    assert_eq!(v1.len(), 60);
    assert_eq!(JournalData::parse(&v1).unwrap().versions, Some((2, 4)));
    // As the driver writes it: sizeof(USN_JOURNAL_DATA_V1) is 64, with padding.
    let mut padded = v1.clone();
    padded.extend_from_slice(&[0; 4]);
    assert_eq!(JournalData::parse(&padded).unwrap().range_tracking, None);

    let v2 = journal_data_bytes(2, 1, 0, 8, 0);
    assert_eq!(v2.len(), 80);
    let d = JournalData::parse(&v2).unwrap();
    assert_eq!(d.versions, Some((2, 4)));
    assert_eq!(d.range_tracking, Some((1, 16 << 10, 1 << 20)));

    let e = JournalData::parse(&v0[..55]).unwrap_err();
    assert_eq!(
        e.kind,
        UsnErrorKind::Truncated {
            needed: 56,
            available: 55
        }
    );
}

#[test]
fn the_read_request_asks_for_everything_from_a_usn_as_v2_or_v3_records() {
    let b = read_request(0x0123_4567_89ab, 0xfeed_f00d);
    assert_eq!(b.len(), 48);
    assert_eq!(
        i64::from_le_bytes(b[0..8].try_into().unwrap()),
        0x0123_4567_89ab
    );
    assert_eq!(&b[8..12], &[0xff; 4]); // every reason
    assert_eq!(&b[12..32], &[0; 20]); // closed or not; no timeout, no waiting
    assert_eq!(
        u64::from_le_bytes(b[32..40].try_into().unwrap()),
        0xfeed_f00d
    );
    assert_eq!(&b[40..44], &[2, 0, 3, 0]);
    assert_eq!(&b[44..], &[0; 4]);
}

// ---- coalescing ----

/// A realistic day on a photo volume, record by record as NTFS writes them: a photo
/// copied in, written and closed; moved to another folder; a folder renamed; a photo
/// deleted; an ACL changed; a temporary file made and removed; a video still being written.
struct Day {
    journal: Journal,
    inbox: u64,
    photos_2024: u64,
    trip: u64,
    img: u64,
    old: u64,
    acl: u64,
    tmp: u64,
    video: u64,
}

fn a_day() -> Day {
    let inbox = ntfs_ref(40, 1);
    let photos_2024 = ntfs_ref(41, 1);
    let trip = ntfs_ref(42, 2);
    let img = ntfs_ref(100, 1);
    let old = ntfs_ref(101, 4);
    let acl = ntfs_ref(102, 1);
    let tmp = ntfs_ref(103, 9);
    let video = ntfs_ref(104, 1);
    let mut j = Journal::new(0x20_0000);
    let push = |j: &mut Journal, r: Rec<'_>| j.push(r);
    // The photo: created, written, closed.
    push(&mut j, Rec::v2(img, inbox, FILE_CREATE, "IMG_0001.JPG"));
    push(
        &mut j,
        Rec::v2(img, inbox, FILE_CREATE | DATA_EXTEND, "IMG_0001.JPG"),
    );
    push(
        &mut j,
        Rec::v2(
            img,
            inbox,
            FILE_CREATE | DATA_EXTEND | CLOSE,
            "IMG_0001.JPG",
        ),
    );
    // Moved to Photos\2024 (another directory).
    push(&mut j, Rec::v2(img, inbox, RENAME_OLD_NAME, "IMG_0001.JPG"));
    push(
        &mut j,
        Rec::v2(img, photos_2024, RENAME_NEW_NAME, "IMG_0001.JPG"),
    );
    push(
        &mut j,
        Rec::v2(img, photos_2024, RENAME_NEW_NAME | CLOSE, "IMG_0001.JPG"),
    );
    // A folder renamed in place.
    let mut d = Rec::v2(trip, ROOT, RENAME_OLD_NAME, "Trip");
    d.attributes = DIR;
    push(&mut j, d.clone());
    d.reason = RENAME_NEW_NAME;
    d.name = "Trip to Oslo";
    push(&mut j, d.clone());
    d.reason = RENAME_NEW_NAME | CLOSE;
    push(&mut j, d);
    // A photo deleted.
    push(
        &mut j,
        Rec::v2(old, photos_2024, FILE_DELETE | CLOSE, "old.jpg"),
    );
    // An ACL changed.
    push(
        &mut j,
        Rec::v2(acl, photos_2024, SECURITY_CHANGE, "shared.jpg"),
    );
    push(
        &mut j,
        Rec::v2(acl, photos_2024, SECURITY_CHANGE | CLOSE, "shared.jpg"),
    );
    // A temporary: created, written, renamed, deleted.
    push(&mut j, Rec::v2(tmp, inbox, FILE_CREATE, "~tmp1"));
    push(
        &mut j,
        Rec::v2(tmp, inbox, FILE_CREATE | DATA_EXTEND | CLOSE, "~tmp1"),
    );
    push(&mut j, Rec::v2(tmp, inbox, RENAME_OLD_NAME, "~tmp1"));
    push(
        &mut j,
        Rec::v2(tmp, inbox, RENAME_NEW_NAME | CLOSE, "~tmp2"),
    );
    push(&mut j, Rec::v2(tmp, inbox, FILE_DELETE | CLOSE, "~tmp2"));
    // A video being copied in: not closed yet.
    push(&mut j, Rec::v2(video, inbox, FILE_CREATE, "MVI_0002.MOV"));
    push(
        &mut j,
        Rec::v2(video, inbox, FILE_CREATE | DATA_EXTEND, "MVI_0002.MOV"),
    );
    Day {
        journal: j,
        inbox,
        photos_2024,
        trip,
        img,
        old,
        acl,
        tmp,
        video,
    }
}

fn coalesce(buf: &[u8]) -> Changes {
    let mut changes = Changes::new();
    changes.extend(entries(buf));
    changes
}

fn fref(r: u64) -> FileRef {
    FileRef(u128::from(r))
}

fn place(parent: u64, name: &str) -> Place {
    Place {
        parent: fref(parent),
        name: name.encode_utf16().collect(),
    }
}

#[test]
fn a_day_of_records_becomes_one_change_per_file() {
    let day = a_day();
    let buf = day.journal.read_from(day.journal.start);
    let changes = coalesce(&buf);
    let order: Vec<FileRef> = changes.files().iter().map(|c| c.file).collect();
    assert_eq!(
        order,
        [day.img, day.trip, day.old, day.acl, day.tmp, day.video].map(fref)
    );

    // Created in the inbox, written, closed, then moved: a new file at its new place (it
    // was not in the catalog before, so there is no old place to move a row from).
    let img = changes.get(fref(day.img)).unwrap();
    assert!(img.created() && img.data_changed() && img.renamed() && img.closed);
    assert!(!img.deleted() && !img.is_dir && !img.metadata_only());
    assert_eq!(img.place, Some(place(day.photos_2024, "IMG_0001.JPG")));
    assert_eq!(img.renamed_from, None);

    // A directory renamed: visible as a directory, from its old name to its new one.
    let trip = changes.get(fref(day.trip)).unwrap();
    assert!(trip.is_dir && trip.renamed() && trip.closed);
    assert!(!trip.created() && !trip.data_changed() && !trip.deleted());
    assert_eq!(trip.renamed_from, Some(place(ROOT, "Trip")));
    assert_eq!(trip.place.as_ref().unwrap().name_lossy(), "Trip to Oslo");

    let old = changes.get(fref(day.old)).unwrap();
    assert!(old.deleted() && !old.transient() && old.closed);
    assert_eq!(old.place, Some(place(day.photos_2024, "old.jpg")));

    let acl = changes.get(fref(day.acl)).unwrap();
    assert!(acl.metadata_only() && !acl.data_changed() && acl.closed);

    let tmp = changes.get(fref(day.tmp)).unwrap();
    assert!(tmp.transient());
    assert_eq!(tmp.renamed_from, None);

    let video = changes.get(fref(day.video)).unwrap();
    assert!(video.created() && video.still_being_written());
    assert_eq!(video.place, Some(place(day.inbox, "MVI_0002.MOV")));
}

#[test]
fn a_file_renamed_across_directories_keeps_where_it_came_from() {
    let day = a_day();
    // Resume just after the photo was closed: the catalog has it in the inbox.
    let mut usn = day.journal.start;
    for r in &day.journal.records[..3] {
        usn += r.len() as i64;
    }
    let changes = coalesce(&day.journal.read_from(usn));
    let img = changes.get(fref(day.img)).unwrap();
    assert!(img.renamed() && !img.created() && !img.data_changed() && img.closed);
    assert_eq!(img.renamed_from, Some(place(day.inbox, "IMG_0001.JPG")));
    assert_eq!(img.place, Some(place(day.photos_2024, "IMG_0001.JPG")));
    assert_eq!(img.usns.0, usn);
}

#[test]
fn a_change_is_closed_only_by_its_latest_record() {
    let f = ntfs_ref(200, 1);
    let mut j = Journal::new(0);
    j.push(Rec::v2(f, ROOT, DATA_OVERWRITE | CLOSE, "a.jpg"));
    j.push(Rec::v2(f, ROOT, DATA_EXTEND, "a.jpg")); // opened and written again
    let changes = coalesce(&j.read_from(0));
    let c = changes.get(fref(f)).unwrap();
    assert!(c.still_being_written() && c.data_changed());
    j.push(Rec::v2(f, ROOT, DATA_EXTEND | CLOSE, "a.jpg"));
    let changes = coalesce(&j.read_from(0));
    assert!(changes.get(fref(f)).unwrap().closed);
}

#[test]
fn a_rename_whose_old_half_came_before_the_run_has_no_origin() {
    let f = ntfs_ref(201, 1);
    let buf = output(
        0,
        &[Rec::v2(f, ROOT, RENAME_NEW_NAME | CLOSE, "new.jpg").bytes()],
    );
    let c = coalesce(&buf).get(fref(f)).unwrap().clone();
    assert!(c.renamed());
    assert_eq!(c.renamed_from, None);
    assert_eq!(c.place, Some(place(ROOT, "new.jpg")));
}

#[test]
fn renamed_twice_keeps_the_first_origin_and_the_last_place() {
    let f = ntfs_ref(202, 1);
    let a = ntfs_ref(50, 1);
    let b = ntfs_ref(51, 1);
    let buf = output(
        0,
        &[
            Rec::v2(f, a, RENAME_OLD_NAME, "one").bytes(),
            Rec::v2(f, b, RENAME_NEW_NAME | CLOSE, "two").bytes(),
            Rec::v2(f, b, RENAME_OLD_NAME, "two").bytes(),
            Rec::v2(f, ROOT, RENAME_NEW_NAME | CLOSE, "three").bytes(),
        ],
    );
    let c = coalesce(&buf).get(fref(f)).unwrap().clone();
    assert_eq!(c.renamed_from, Some(place(a, "one")));
    assert_eq!(c.place, Some(place(ROOT, "three")));
}

#[test]
fn attribute_and_security_changes_are_metadata_only() {
    for r in [
        BASIC_INFO_CHANGE,
        SECURITY_CHANGE,
        EA_CHANGE,
        NAMED_DATA_EXTEND | STREAM_CHANGE,
        COMPRESSION_CHANGE | INDEXABLE_CHANGE,
        OBJECT_ID_CHANGE | ENCRYPTION_CHANGE,
    ] {
        let buf = output(0, &[Rec::v2(7, ROOT, r | CLOSE, "x").bytes()]);
        let c = coalesce(&buf).files()[0].clone();
        assert!(c.metadata_only() && !c.data_changed(), "{r:#x}");
    }
    for r in [
        DATA_TRUNCATION,
        FILE_CREATE,
        RENAME_NEW_NAME,
        HARD_LINK_CHANGE,
    ] {
        let buf = output(0, &[Rec::v2(7, ROOT, r | CLOSE, "x").bytes()]);
        assert!(!coalesce(&buf).files()[0].metadata_only(), "{r:#x}");
    }
}

#[test]
fn links_and_reparse_points_are_changes_to_look_at() {
    let buf = output(
        0,
        &[Rec::v2(7, ROOT, REPARSE_POINT_CHANGE | CLOSE, "x").bytes()],
    );
    let c = coalesce(&buf).files()[0].clone();
    assert!(c.links_changed() && !c.metadata_only());
}

#[test]
fn an_unknown_reason_flag_is_taken_as_a_content_change() {
    let buf = output(0, &[Rec::v2(7, ROOT, 0x0200_0000 | CLOSE, "x").bytes()]);
    let c = coalesce(&buf).files()[0].clone();
    assert!(c.data_changed() && !c.metadata_only());
}

#[test]
fn a_range_record_marks_the_data_changed() {
    let buf = output(
        0,
        &[
            Rec::v3(8, 5, BASIC_INFO_CHANGE, "y").bytes(),
            v4_bytes(8, 5, 8, 0, &[(0, 4096)]),
        ],
    );
    let c = coalesce(&buf).files()[0].clone();
    assert!(c.data_changed() && !c.closed);
    assert_eq!(c.place.unwrap().name_lossy(), "y");
}

// ---- the resume decision ----

const SERIAL: u32 = 0x9C3E_51A0;
const JOURNAL: u64 = 0x01DB_4A2C_0000_0001;

fn state(first: i64, next: i64, lowest: i64) -> JournalState {
    JournalState {
        volume_serial: SERIAL,
        data: JournalData::parse(&journal_data_bytes(1, JOURNAL, first, next, lowest)).unwrap(),
    }
}

fn stored(next_usn: i64) -> JournalPosition {
    JournalPosition {
        volume_serial: SERIAL,
        journal_id: JOURNAL,
        next_usn,
    }
}

#[test]
fn the_journal_is_read_from_the_stored_usn_when_it_still_reaches_back_there() {
    let now = state(0x10_0000, 0x40_0000, 0);
    assert_eq!(
        resume(Some(&stored(0x20_0000)), Ok(&now)),
        Resume::Read {
            from: 0x20_0000,
            until: 0x40_0000
        }
    );
    // At the first kept record, and with nothing new.
    assert_eq!(
        resume(Some(&stored(0x10_0000)), Ok(&now)),
        Resume::Read {
            from: 0x10_0000,
            until: 0x40_0000
        }
    );
    assert_eq!(
        resume(Some(&stored(0x40_0000)), Ok(&now)),
        Resume::Read {
            from: 0x40_0000,
            until: 0x40_0000
        }
    );
    // The position to store next is the state's own.
    assert_eq!(now.position(), stored(0x40_0000));
}

#[test]
fn every_doubt_walks_with_its_reason() {
    let now = state(0x10_0000, 0x40_0000, 0x08_0000);
    let walk = |s: Option<JournalPosition>, now: Result<&JournalState, &Unavailable>| match resume(
        s.as_ref(),
        now,
    ) {
        Resume::Walk(why) => why,
        read => panic!("{read:?}"),
    };
    assert_eq!(walk(None, Ok(&now)), WalkReason::NoPosition);
    assert_eq!(
        walk(
            Some(JournalPosition {
                volume_serial: 1,
                ..stored(0x20_0000)
            }),
            Ok(&now)
        ),
        WalkReason::OtherVolume {
            stored: 1,
            current: SERIAL
        }
    );
    // Deleted and recreated: a new id, even if the USN happens to be in range.
    assert_eq!(
        walk(
            Some(JournalPosition {
                journal_id: JOURNAL - 1,
                ..stored(0x20_0000)
            }),
            Ok(&now)
        ),
        WalkReason::JournalRecreated {
            stored: JOURNAL - 1,
            current: JOURNAL
        }
    );
    // Wrapped or trimmed: the records after the stored USN are gone.
    assert_eq!(
        walk(Some(stored(0x0F_FFF8)), Ok(&now)),
        WalkReason::RecordsLost {
            stored: 0x0F_FFF8,
            first_kept: Some(0x10_0000)
        }
    );
    // Before this instance's lowest valid USN (FirstUsn below it): a discontinuity.
    let restamped = state(0, 0x40_0000, 0x30_0000);
    assert_eq!(
        walk(Some(stored(0x20_0000)), Ok(&restamped)),
        WalkReason::RecordsLost {
            stored: 0x20_0000,
            first_kept: Some(0x30_0000)
        }
    );
    // Restored from a backup, or the journal rolled back.
    assert_eq!(
        walk(Some(stored(0x40_0008)), Ok(&now)),
        WalkReason::BeyondEnd {
            stored: 0x40_0008,
            next_usn: 0x40_0000
        }
    );
    // No journal.
    for u in [
        Unavailable::NotActive,
        Unavailable::BeingDeleted,
        Unavailable::NotJournaled("FAT32".into()),
        Unavailable::AccessDenied,
        Unavailable::Os(1),
    ] {
        assert_eq!(
            walk(Some(stored(0x20_0000)), Err(&u)),
            WalkReason::Unavailable(u)
        );
    }
    // Numbers that contradict each other.
    for bad in [
        state(0x50_0000, 0x40_0000, 0),
        state(0, 0x40_0000, 0x50_0000),
        state(-8, 0x40_0000, 0),
    ] {
        assert!(matches!(
            walk(Some(stored(0x20_0000)), Ok(&bad)),
            WalkReason::Inconsistent(_)
        ));
    }
    let mut past_max = state(0, 0x40_0000, 0);
    past_max.data.max_usn = 0x3F_0000;
    assert!(matches!(
        walk(Some(stored(0x20_0000)), Ok(&past_max)),
        WalkReason::Inconsistent(_)
    ));
    // A negative stored USN is never read from.
    assert!(matches!(
        walk(Some(stored(-1)), Ok(&state(0, 0x40_0000, 0))),
        WalkReason::RecordsLost { .. }
    ));
}

#[test]
fn a_journal_that_wrapped_during_the_day_loses_the_morning() {
    // The day's records, then the journal trimmed to its last quarter: the catalog's
    // position (the day's start) is gone, so the catch-up walks.
    let day = a_day();
    let trimmed_to = day.journal.next_usn - (day.journal.next_usn - day.journal.start) / 4;
    let now = state(trimmed_to & !7, day.journal.next_usn, 0);
    let decision = resume(Some(&stored(day.journal.start)), Ok(&now));
    assert!(
        matches!(
            decision,
            Resume::Walk(WalkReason::RecordsLost { stored, first_kept: Some(_) }) if stored == day.journal.start
        ),
        "{decision:?}"
    );
    // A read that raced with the trim fails with ERROR_JOURNAL_ENTRY_DELETED: walk too.
    assert_eq!(
        read_failed(day.journal.start, win32::JOURNAL_ENTRY_DELETED),
        WalkReason::RecordsLost {
            stored: day.journal.start,
            first_kept: None
        }
    );
}

#[test]
fn windows_errors_map_to_walk_reasons() {
    assert_eq!(Unavailable::from_os_error(1179), Unavailable::NotActive);
    assert_eq!(Unavailable::from_os_error(1178), Unavailable::BeingDeleted);
    assert_eq!(Unavailable::from_os_error(5), Unavailable::AccessDenied);
    assert_eq!(Unavailable::from_os_error(1), Unavailable::Os(1));
    assert_eq!(
        read_failed(0, 1179),
        WalkReason::Unavailable(Unavailable::NotActive)
    );
    assert!(is_journaled("NTFS") && is_journaled("ReFS") && is_journaled("refs"));
    assert!(!is_journaled("FAT32") && !is_journaled("exFAT") && !is_journaled(""));
}

#[test]
fn walk_reasons_read_as_sentences() {
    assert_eq!(
        WalkReason::JournalRecreated {
            stored: 0x10,
            current: 0x11
        }
        .to_string(),
        "the change journal was recreated (id 0x11, stored 0x10)"
    );
    assert_eq!(
        WalkReason::Unavailable(Unavailable::NotJournaled("FAT32".into())).to_string(),
        "FAT32 keeps no change journal"
    );
}

/// Writes the fuzz target's seeds (`fuzz/corpus/usn/seed-*`) from the records above:
/// `cargo test -p seekless-sys -- --ignored write_usn_fuzz_seeds`.
#[test]
#[ignore = "writes fuzz seeds into the source tree"]
fn write_usn_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/usn");
    std::fs::create_dir_all(&dir).unwrap();
    let day = a_day();
    let seeds: Vec<(&str, Vec<u8>)> = vec![
        ("seed-day-v2", day.journal.read_from(day.journal.start)),
        (
            "seed-v3-v4",
            output(
                0x3000,
                &[
                    Rec::v3(11, 5, FILE_CREATE, "bb").bytes(),
                    v4_bytes(11, 5, 0x2f00, DATA_EXTEND, &[(0, 512), (4096, 8192)]),
                    Rec::v3(11, 5, FILE_CREATE | CLOSE, "bb").bytes(),
                ],
            ),
        ),
        ("seed-empty", output(0x1000, &[])),
        (
            "seed-journal-data-v2",
            journal_data_bytes(2, JOURNAL, 0, 0x4000, 0),
        ),
    ];
    for (name, bytes) in seeds {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

// ---- the reading loop ----

/// A recorded journal served a few records per buffer, as a small output buffer would.
struct Paged {
    journal: Journal,
    per_buffer: usize,
    buf: Vec<u8>,
    reads: usize,
}

impl JournalReader for Paged {
    fn read_from(&mut self, from: Usn) -> Result<&[u8], WalkReason> {
        self.reads += 1;
        let mut usn = self.journal.start;
        let mut picked = Vec::new();
        let mut next = self.journal.next_usn;
        for r in &self.journal.records {
            if usn >= from {
                if picked.len() == self.per_buffer {
                    next = usn;
                    break;
                }
                picked.push(r.clone());
            }
            usn += r.len() as i64;
        }
        self.buf = output(next, &picked);
        Ok(&self.buf)
    }
}

#[test]
fn the_journal_is_read_buffer_by_buffer_up_to_its_end() {
    let day = a_day();
    let (start, end, n) = (
        day.journal.start,
        day.journal.next_usn,
        day.journal.records.len(),
    );
    let mut reader = Paged {
        journal: day.journal,
        per_buffer: 4,
        buf: Vec::new(),
        reads: 0,
    };
    let mut changes = Changes::new();
    assert_eq!(read_changes(&mut reader, start, end, &mut changes), Ok(end));
    assert_eq!(reader.reads, n.div_ceil(4));
    let all_at_once = coalesce(&reader.journal.read_from(start));
    assert_eq!(changes.files(), all_at_once.files());
    // Nothing new: no read at all.
    let mut none = Changes::new();
    assert_eq!(read_changes(&mut reader, end, end, &mut none), Ok(end));
    assert_eq!(reader.reads, n.div_ceil(4));
}

/// A reader that always answers with the same buffer.
struct Stuck(Vec<u8>);

impl JournalReader for Stuck {
    fn read_from(&mut self, _from: Usn) -> Result<&[u8], WalkReason> {
        Ok(&self.0)
    }
}

#[test]
fn a_reader_that_does_not_move_forward_ends_the_loop_with_a_walk() {
    let malformed = Err(WalkReason::Unavailable(Unavailable::Malformed));
    let mut rec = Rec::v2(1, ROOT, CLOSE, "a");
    rec.usn = 64;
    // Next USN not past the one asked for, with records: would loop forever.
    let mut stuck = Stuck(output(64, &[rec.bytes()]));
    assert_eq!(
        read_changes(&mut stuck, 64, 4096, &mut Changes::new()),
        malformed
    );
    // A record before the USN asked for.
    let mut behind = Stuck(output(128, &[rec.bytes()]));
    assert_eq!(
        read_changes(&mut behind, 96, 4096, &mut Changes::new()),
        malformed
    );
    // A buffer that does not parse.
    let mut short = Stuck(vec![0; 5]);
    assert_eq!(
        read_changes(&mut short, 0, 4096, &mut Changes::new()),
        malformed
    );
    // No records: the journal ends before `until` (it was asked early); its next USN
    // is the position.
    let mut empty = Stuck(output(2048, &[]));
    assert_eq!(
        read_changes(&mut empty, 1024, 4096, &mut Changes::new()),
        Ok(2048)
    );
}

#[test]
fn a_failed_read_is_a_walk() {
    struct Purged;
    impl JournalReader for Purged {
        fn read_from(&mut self, from: Usn) -> Result<&[u8], WalkReason> {
            Err(read_failed(from, win32::JOURNAL_ENTRY_DELETED))
        }
    }
    assert_eq!(
        read_changes(&mut Purged, 8, 16, &mut Changes::new()),
        Err(WalkReason::RecordsLost {
            stored: 8,
            first_kept: None
        })
    );
}
