//! Which faults a mount injects, and where: a fault of kind K strikes path P when a hash of
//! (seed, K, P) falls below the rate. No state, no clock, no thread timing: the same seed
//! over the same tree picks the same paths in every run.

use std::fmt;
use std::str::FromStr;

/// One kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `read` fails with EIO from an offset inside the file on.
    ReadEio,
    /// Listing a directory returns part of it, then EIO.
    ReaddirEio,
    /// `open` / `opendir` fails with EACCES.
    Eacces,
    /// Found by lookup, gone at `open` / `opendir` (ENOENT).
    Vanish,
    /// A new file is created in the directory just after it is listed.
    Appear,
    /// The listing says file where there is a directory and directory where there is a
    /// file (or symlink).
    ChangeType,
    /// The file grows by a few KiB at its first read (the backing file really changes).
    Grow,
    /// The file is truncated to half at its first read (the backing file really changes).
    Shrink,
    /// The file is rewritten in place as its last bytes are read: every byte changed, its
    /// size and modification time put back, as `touch -r` or `exiftool -P` leave an edited
    /// file (the backing file really changes; only its status-change time tells).
    Rewrite,
    /// `write` to the file fails with ENOSPC (destination mounts).
    Enospc,
    /// `write` and `fsync` of the file fail with EIO (destination mounts).
    WriteEio,
}

pub const ALL: [Kind; 11] = [
    Kind::ReadEio,
    Kind::ReaddirEio,
    Kind::Eacces,
    Kind::Vanish,
    Kind::Appear,
    Kind::ChangeType,
    Kind::Grow,
    Kind::Shrink,
    Kind::Rewrite,
    Kind::Enospc,
    Kind::WriteEio,
];

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::ReadEio => "read-eio",
            Kind::ReaddirEio => "readdir-eio",
            Kind::Eacces => "eacces",
            Kind::Vanish => "vanish",
            Kind::Appear => "appear",
            Kind::ChangeType => "change-type",
            Kind::Grow => "grow",
            Kind::Shrink => "shrink",
            Kind::Rewrite => "rewrite",
            Kind::Enospc => "enospc",
            Kind::WriteEio => "write-eio",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        ALL.into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown fault {s:?} (one of: {})", names()))
    }
}

fn names() -> String {
    ALL.map(Kind::name).join(", ")
}

/// The faults of one mount.
#[derive(Clone, Debug)]
pub struct Spec {
    pub seed: u64,
    /// Chance per path and kind, in thousandths.
    pub rate_permille: u32,
    pub kinds: Vec<Kind>,
    /// Every write fails with ENOSPC once this many bytes were written through the mount.
    pub enospc_after: Option<u64>,
}

impl Spec {
    /// Whether `kind` strikes the path `rel` (relative to the mount, as bytes).
    pub fn strikes(&self, kind: Kind, rel: &[u8]) -> bool {
        self.kinds.contains(&kind) && self.hash(kind, rel) % 1000 < u64::from(self.rate_permille)
    }

    /// A number that depends only on (seed, kind, path): for choosing an offset.
    pub fn hash(&self, kind: Kind, rel: &[u8]) -> u64 {
        let mut h = splitmix(self.seed ^ 0x9e37_79b9_7f4a_7c15);
        for b in kind.name().bytes().chain([0]).chain(rel.iter().copied()) {
            h = splitmix(h ^ u64::from(b));
        }
        h >> 10
    }
}

/// What marks a seekless temporary, `.NAME.seekless-tmp-RUN-N` (RUN: hex digits that
/// differ per process).
const TEMP_MARK: &[u8] = b".seekless-tmp-";

/// The path a write fault is decided by: a temporary's name cut after its mark (RUN and
/// N dropped), other names with their digits dropped, so that a temporary is decided the
/// same in every run.
pub fn write_key(rel: &[u8]) -> Vec<u8> {
    let cut = rel.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
    let (dir, name) = rel.split_at(cut);
    if let Some(at) = name.windows(TEMP_MARK.len()).position(|w| w == TEMP_MARK) {
        return [dir, &name[..at + TEMP_MARK.len()]].concat();
    }
    dir.iter()
        .copied()
        .chain(name.iter().copied().filter(|b| !b.is_ascii_digit()))
        .collect()
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_strikes_the_same_paths_and_about_the_rate() {
        let spec = Spec {
            seed: 7,
            rate_permille: 250,
            kinds: vec![Kind::ReadEio],
            enospc_after: None,
        };
        let paths: Vec<Vec<u8>> = (0..4000).map(|i| format!("d/{i}").into_bytes()).collect();
        let hits = paths
            .iter()
            .filter(|p| spec.strikes(Kind::ReadEio, p))
            .count();
        assert!((800..1200).contains(&hits), "{hits}");
        assert!(paths.iter().all(|p| !spec.strikes(Kind::Vanish, p)));
        let again = paths
            .iter()
            .filter(|p| spec.clone().strikes(Kind::ReadEio, p))
            .count();
        assert_eq!(hits, again);
    }

    #[test]
    fn a_temporary_is_decided_as_every_temporary_of_its_file() {
        assert_eq!(
            write_key(b"a1/.x2.seekless-tmp-123-4"),
            write_key(b"a1/.x2.seekless-tmp-99-17")
        );
        // RUN is hexadecimal: its letters differ from one process to the next too.
        assert_eq!(
            write_key(b"a1/.x2.seekless-tmp-0000a1b2c3d4e5f6-0"),
            write_key(b"a1/.x2.seekless-tmp-00009f8e7d6c5b4a-3")
        );
        assert_ne!(
            write_key(b"a1/.x2.seekless-tmp-0000a1b2c3d4e5f6-0"),
            write_key(b"a1/.x3.seekless-tmp-0000a1b2c3d4e5f6-0")
        );
        assert_ne!(write_key(b"a1/x"), write_key(b"a2/x"));
    }
}
