//! The archive format: POSIX pax, as GNU tar writes with `--format=posix` and reads in any
//! mode. Each member is a 512-byte ustar header, preceded by an extended header (`x`) of
//! `key=value` records when the ustar fields cannot hold it exactly: names and link
//! targets too long, nanosecond times, large sizes and ids, long owner names, extended
//! attributes, sparse files (GNU's sparse format 1.0).
//!
//! The `tar` crate encodes the numeric fields and the checksum. Names are written here,
//! byte for byte: its `set_path` normalises paths (drops `.` and empty components, takes
//! `&str` for owner names), and it has no writer for sparse members or for data that must
//! be padded or cut as it streams.

use std::ops::Range;

use tar::{EntryType, Header};

/// Size of a tar block.
pub const BLOCK: usize = 512;

/// GNU tar's default record: archives are padded to a multiple of it.
pub const RECORD: u64 = 20 * BLOCK as u64;

/// Largest value of an 11-digit octal field (size, mtime).
const OCTAL_11: u64 = 0o77_777_777_777;
/// Largest value of a 7-digit octal field (uid, gid, device numbers).
const OCTAL_7: u64 = 0o7_777_777;

/// What a member is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    HardLink,
    Symlink,
    Dir,
    CharDevice,
    BlockDevice,
    Fifo,
}

/// Everything a member's headers say.
#[derive(Debug)]
pub struct Member<'a> {
    /// The name in the archive (directories end in `/`).
    pub name: &'a [u8],
    pub kind: Kind,
    /// Link target (symlinks) or the member linked to (hard links).
    pub link: &'a [u8],
    /// Permission bits (and set-id, sticky).
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    pub uname: Option<&'a [u8]>,
    pub gname: Option<&'a [u8]>,
    /// Seconds since the epoch and nanoseconds.
    pub mtime: (i64, u32),
    /// Device numbers (device nodes).
    pub device: (u32, u32),
    /// Extended attributes (`SCHILY.xattr.NAME`).
    pub xattrs: &'a [(Vec<u8>, Vec<u8>)],
    /// A regular file's content bytes (its real size).
    pub size: u64,
    /// Where a sparse file's data lies; `None` for a member stored whole.
    pub sparse: Option<&'a [Range<u64>]>,
}

impl Member<'_> {
    /// Bytes stored after the header: the content, or for a sparse file its map (padded to
    /// a block) and its data regions.
    pub fn stored_size(&self) -> u64 {
        match (self.kind, self.sparse) {
            (Kind::File, None) => self.size,
            (Kind::File, Some(regions)) => {
                sparse_map(regions, self.size).len() as u64
                    + regions.iter().map(|r| r.end - r.start).sum::<u64>()
            }
            _ => 0,
        }
    }

    /// Appends the member's headers to `out`: an extended header if one is needed, then
    /// the ustar header, then (sparse files) the map. The data follows, then
    /// [`padding`] for [`stored_size`](Self::stored_size).
    pub fn write_headers(&self, out: &mut Vec<u8>) {
        let stored = self.stored_size();
        let mut pax = Vec::new();
        let real_name: &[u8] = self.name;
        let sparse_name;
        let name: &[u8] = if self.sparse.is_some() {
            // GNU's sparse 1.0: the real name and size go in records; the header's name is
            // a stand-in that old readers extract as a file of map and data.
            record(&mut pax, b"GNU.sparse.major", b"1");
            record(&mut pax, b"GNU.sparse.minor", b"0");
            record(&mut pax, b"GNU.sparse.name", real_name);
            record(
                &mut pax,
                b"GNU.sparse.realsize",
                self.size.to_string().as_bytes(),
            );
            let (dir, base) = split_name(real_name);
            sparse_name = [dir, b"GNUSparseFile.0/", base].concat();
            &sparse_name
        } else {
            real_name
        };
        let mut header = Header::new_ustar();
        let fits = set_name(&mut header, name);
        if !fits && self.sparse.is_none() {
            record(&mut pax, b"path", name);
        }
        if !self.link.is_empty() {
            let field = &mut header.as_ustar_mut().expect("ustar").linkname;
            if self.link.len() <= field.len() {
                field[..self.link.len()].copy_from_slice(self.link);
            } else {
                let n = field.len();
                field.copy_from_slice(&self.link[..n]);
                record(&mut pax, b"linkpath", self.link);
            }
        }
        // Names that are not UTF-8 go in `path` as they are, as GNU tar writes them (its
        // 1.34 warns of a `hdrcharset` record and ignores it); GNU tar, libarchive and
        // Python take the bytes as they are.
        let (secs, nanos) = self.mtime;
        let header_mtime = secs.clamp(0, OCTAL_11 as i64) as u64;
        if nanos != 0 || secs < 0 || secs as u64 > OCTAL_11 {
            record(&mut pax, b"mtime", pax_time(secs, nanos).as_bytes());
        }
        if stored > OCTAL_11 {
            record(&mut pax, b"size", stored.to_string().as_bytes());
        }
        if self.uid > OCTAL_7 {
            record(&mut pax, b"uid", self.uid.to_string().as_bytes());
        }
        if self.gid > OCTAL_7 {
            record(&mut pax, b"gid", self.gid.to_string().as_bytes());
        }
        let ustar = header.as_ustar_mut().expect("ustar");
        for (value, field, key) in [
            (self.uname, &mut ustar.uname, &b"uname"[..]),
            (self.gname, &mut ustar.gname, &b"gname"[..]),
        ] {
            if let Some(value) = value {
                if value.len() <= field.len() {
                    field[..value.len()].copy_from_slice(value);
                } else {
                    record(&mut pax, key, value);
                }
            }
        }
        for (key, value) in self.xattrs {
            record(&mut pax, &[b"SCHILY.xattr.", &key[..]].concat(), value);
        }

        header.set_mode(self.mode & 0o7777);
        header.set_uid(self.uid.min(OCTAL_7));
        header.set_gid(self.gid.min(OCTAL_7));
        header.set_mtime(header_mtime);
        header.set_size(stored);
        header.set_entry_type(match self.kind {
            Kind::File => EntryType::Regular,
            Kind::HardLink => EntryType::Link,
            Kind::Symlink => EntryType::Symlink,
            Kind::Dir => EntryType::Directory,
            Kind::CharDevice => EntryType::Char,
            Kind::BlockDevice => EntryType::Block,
            Kind::Fifo => EntryType::Fifo,
        });
        if matches!(self.kind, Kind::CharDevice | Kind::BlockDevice) {
            let (major, minor) = self.device;
            // Numbers beyond 7 octal digits take the base-256 form GNU tar reads.
            let _ = header.set_device_major(major);
            let _ = header.set_device_minor(minor);
        }

        if !pax.is_empty() {
            let mut x = Header::new_ustar();
            let (dir, base) = split_name(name);
            let base = base.strip_suffix(b"/").unwrap_or(base);
            let mut xname = [dir, b"PaxHeaders/", base].concat();
            xname.truncate(100);
            set_name(&mut x, &xname);
            x.set_mode(0o644);
            x.set_mtime(header_mtime);
            x.set_size(pax.len() as u64);
            x.set_entry_type(EntryType::XHeader);
            x.set_cksum();
            out.extend_from_slice(x.as_bytes());
            out.extend_from_slice(&pax);
            out.resize(out.len() + padding(pax.len() as u64), 0);
        }
        header.set_cksum();
        out.extend_from_slice(header.as_bytes());
        if let Some(regions) = self.sparse {
            out.extend_from_slice(&sparse_map(regions, self.size));
        }
    }
}

/// Zero bytes that complete a member of `stored` bytes to a whole block.
pub fn padding(stored: u64) -> usize {
    (BLOCK - (stored % BLOCK as u64) as usize) % BLOCK
}

/// Puts `name` in the header's name field, or split at a `/` between prefix and name.
/// Returns false, with the name cut to fit, when it cannot be held whole.
fn set_name(header: &mut Header, name: &[u8]) -> bool {
    let ustar = header.as_ustar_mut().expect("ustar");
    if name.len() <= ustar.name.len() {
        ustar.name[..name.len()].copy_from_slice(name);
        return true;
    }
    // The last `/` that leaves at most 100 bytes after it and at most 155 before it (the
    // separator itself is implied).
    let split = (0..name.len().min(ustar.prefix.len() + 1))
        .rev()
        .find(|&i| name[i] == b'/' && name.len() - i - 1 <= ustar.name.len() && i > 0);
    if let Some(i) = split
        && name.len() - i > 1
    {
        ustar.prefix[..i].copy_from_slice(&name[..i]);
        let rest = &name[i + 1..];
        ustar.name[..rest.len()].copy_from_slice(rest);
        return true;
    }
    let n = ustar.name.len();
    ustar.name.copy_from_slice(&name[..n]);
    false
}

/// A name's directory part (with its trailing `/`) and last component (with a trailing
/// `/` if it had one).
fn split_name(name: &[u8]) -> (&[u8], &[u8]) {
    let body = name.strip_suffix(b"/").unwrap_or(name);
    match body.iter().rposition(|&b| b == b'/') {
        Some(i) => (&name[..=i], &name[i + 1..]),
        None => (&[], name),
    }
}

/// Appends one extended-header record, `"LEN key=value\n"`, where LEN counts the whole
/// record, its own digits included.
fn record(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    let rest = key.len() + value.len() + 3;
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    out.extend_from_slice(len.to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(key);
    out.push(b'=');
    out.extend_from_slice(value);
    out.push(b'\n');
}

/// A time as pax writes it: seconds, a point and nine digits; negative times count back
/// from the epoch.
fn pax_time(secs: i64, nanos: u32) -> String {
    if secs < 0 && nanos > 0 {
        format!("-{}.{:09}", -(secs + 1), 1_000_000_000 - nanos)
    } else {
        format!("{secs}.{nanos:09}")
    }
}

/// GNU's sparse 1.0 map, as stored at the start of a sparse member's data: the number of
/// regions, then each region's offset and length, one decimal per line, padded with zeros
/// to a whole block. A file that ends in a hole gets a last, empty region at its end so
/// extraction restores the size.
fn sparse_map(regions: &[Range<u64>], size: u64) -> Vec<u8> {
    let ends_in_hole = regions.last().is_none_or(|r| r.end < size);
    let count = regions.len() + usize::from(ends_in_hole);
    let mut map = format!("{count}\n");
    for r in regions {
        map += &format!("{}\n{}\n", r.start, r.end - r.start);
    }
    if ends_in_hole {
        map += &format!("{size}\n0\n");
    }
    let mut map = map.into_bytes();
    map.resize(map.len() + padding(map.len() as u64), 0);
    map
}

/// The end of an archive: two zero blocks, then zeros to a whole record, given the bytes
/// written before it.
pub fn trailer(written: u64) -> Vec<u8> {
    let end = written + 2 * BLOCK as u64;
    let total = end.div_ceil(RECORD) * RECORD;
    vec![0; (total - written) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &[u8]) -> Member<'_> {
        Member {
            name,
            kind: Kind::File,
            link: b"",
            mode: 0o644,
            uid: 1000,
            gid: 1000,
            uname: Some(b"user"),
            gname: Some(b"group"),
            mtime: (1_700_000_000, 0),
            device: (0, 0),
            xattrs: &[],
            size: 5,
            sparse: None,
        }
    }

    fn records(bytes: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() && rest[0] != 0 {
            let space = rest.iter().position(|&b| b == b' ').unwrap();
            let len: usize = std::str::from_utf8(&rest[..space])
                .unwrap()
                .parse()
                .unwrap();
            let rec = &rest[space + 1..len - 1];
            assert_eq!(rest[len - 1], b'\n');
            let eq = rec.iter().position(|&b| b == b'=').unwrap();
            out.push((rec[..eq].to_vec(), rec[eq + 1..].to_vec()));
            rest = &rest[len..];
        }
        out
    }

    #[test]
    fn record_lengths_count_their_own_digits() {
        for n in [0, 1, 4, 5, 6, 90, 94, 95, 96, 97, 990, 995, 996, 1000] {
            let mut out = Vec::new();
            record(&mut out, b"k", &vec![b'v'; n]);
            let space = out.iter().position(|&b| b == b' ').unwrap();
            let len: usize = std::str::from_utf8(&out[..space]).unwrap().parse().unwrap();
            assert_eq!(len, out.len(), "value of {n} bytes");
        }
    }

    #[test]
    fn a_short_member_has_one_ustar_header_and_no_extended_one() {
        let mut out = Vec::new();
        member(b"dir/a").write_headers(&mut out);
        assert_eq!(out.len(), BLOCK);
        let h = Header::from_byte_slice(&out);
        assert_eq!(&*h.path_bytes(), b"dir/a");
        assert_eq!(h.size().unwrap(), 5);
        assert_eq!(h.mtime().unwrap(), 1_700_000_000);
        assert_eq!(h.username_bytes(), Some(&b"user"[..]));
        assert_eq!(h.cksum().unwrap(), {
            let mut c = h.clone();
            c.set_cksum();
            c.cksum().unwrap()
        });
    }

    #[test]
    fn long_names_nanoseconds_and_big_numbers_go_in_an_extended_header() {
        let name = [&[b'd'; 150][..], b"/", &[b'\xe9'; 120][..]].concat();
        let mut m = member(&name);
        m.mtime = (1_700_000_000, 123_456_789);
        m.uid = 1 << 40;
        m.size = 9 << 30;
        let mut out = Vec::new();
        m.write_headers(&mut out);
        let x = Header::from_byte_slice(&out[..BLOCK]);
        assert_eq!(x.entry_type(), EntryType::XHeader);
        let len = x.size().unwrap() as usize;
        let recs = records(&out[BLOCK..BLOCK + len]);
        let get = |k: &[u8]| {
            recs.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get(b"hdrcharset"), None);
        assert_eq!(get(b"path").as_deref(), Some(&name[..]));
        assert_eq!(get(b"mtime").as_deref(), Some(&b"1700000000.123456789"[..]));
        assert_eq!(get(b"uid"), Some((1u64 << 40).to_string().into_bytes()));
        assert_eq!(get(b"size"), Some((9u64 << 30).to_string().into_bytes()));
        let main = &out[BLOCK + len + padding(len as u64)..];
        assert_eq!(main.len(), BLOCK);
    }

    #[test]
    fn names_up_to_256_bytes_split_between_prefix_and_name() {
        let name = [&[b'p'; 155][..], b"/", &[b'n'; 100][..]].concat();
        let mut out = Vec::new();
        member(&name).write_headers(&mut out);
        assert_eq!(out.len(), BLOCK, "no extended header");
        assert_eq!(&*Header::from_byte_slice(&out).path_bytes(), &name[..]);
    }

    #[test]
    fn negative_and_fractional_times_are_written_as_pax_wants() {
        assert_eq!(pax_time(5, 0), "5.000000000");
        assert_eq!(pax_time(-2, 500_000_000), "-1.500000000");
        assert_eq!(pax_time(-2, 0), "-2.000000000");
    }

    #[test]
    fn sparse_maps_list_regions_and_a_final_hole() {
        let regions = [0..4096, 1 << 20..(1 << 20) + 10];
        let map = sparse_map(&regions, 1 << 30);
        assert_eq!(map.len(), BLOCK);
        let text = std::str::from_utf8(&map).unwrap().trim_end_matches('\0');
        assert_eq!(text, "3\n0\n4096\n1048576\n10\n1073741824\n0\n");
        let mut m = member(b"s");
        m.size = 1 << 30;
        m.sparse = Some(&regions);
        assert_eq!(m.stored_size(), 512 + 4096 + 10);
        assert_eq!(
            sparse_map(&[], 7),
            b"1\n7\n0\n"
                .iter()
                .copied()
                .chain([0; 506])
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_trailer_ends_the_archive_on_a_record() {
        assert_eq!(trailer(0).len(), RECORD as usize);
        assert_eq!(trailer(512).len(), RECORD as usize - 512);
        assert_eq!(trailer(RECORD - 1024).len(), 1024);
        assert_eq!(trailer(RECORD - 512).len(), 512 + RECORD as usize);
    }
}
