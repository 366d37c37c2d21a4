//! Locate: where each file's data lies on its device.
//!
//! The operating system is asked for the file's extents (Linux `FS_IOC_FIEMAP`, Windows
//! `FSCTL_GET_RETRIEVAL_POINTERS`, macOS `F_LOG2PHYS_EXT`; the calls live in
//! `src/os/`). Not every filesystem answers, so each filesystem gets a *ladder* of
//! strategies — extents → block map (`FIBMAP`, root only) → inode number → given order —
//! chosen by `ladder` from facts (its kind, what the platform offers, a forced strategy,
//! privileges) and demoted on the first "unsupported" answer. The strategy each
//! filesystem ended up with is reported in the plan's summary.

use std::fmt;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::fs_kind::FsKind;
use crate::os;
use crate::placement::{LocateError, Placement, Strategy};
use crate::sync::{into_inner, lock};

/// The strategies to try on a filesystem, best first: the one place that decides.
///
/// - `forced` (`--locate`): that strategy, falling back to inode order where it yields
///   no positions;
/// - memory and network filesystems (tmpfs, NFS, SMB): inode order, since there is no
///   disk of ours to sweep, and the server's inode numbers roughly follow its allocation;
/// - FUSE and kernel pseudo-filesystems: as given (their inode numbers are made up);
/// - everything else: the platform's physical strategies (`offered`, best first; those
///   that need privileges only with them), then inode order.
pub(crate) fn ladder(
    kind: FsKind,
    offered: &[Strategy],
    forced: Option<Strategy>,
    privileged: bool,
) -> Vec<Strategy> {
    if let Some(s) = forced {
        return if s.is_physical() {
            vec![s, Strategy::Inode]
        } else {
            vec![s]
        };
    }
    match kind {
        FsKind::Tmpfs | FsKind::Nfs | FsKind::Cifs => vec![Strategy::Inode],
        FsKind::Fuse | FsKind::Virtual => vec![Strategy::Given],
        _ => offered
            .iter()
            .copied()
            .filter(|s| privileged || !s.needs_privilege())
            .chain([Strategy::Inode])
            .collect(),
    }
}

/// Why a filesystem's strategy was given up for the next one on its ladder
/// ([`FilesystemReport::demotions`](crate::FilesystemReport::demotions)). Printed (and
/// serialized) as one line: `fiemap unsupported (Operation not supported), using inode`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Demotion {
    /// The filesystem (or this process) cannot use `from` at all: the operating system
    /// answered `error` for the first file tried with it; `to` is used from then on.
    #[non_exhaustive]
    Unsupported {
        /// The strategy given up.
        from: Strategy,
        /// The strategy used instead.
        to: Strategy,
        /// What the operating system said (shared: a report is cloned whole).
        error: Arc<io::Error>,
    },
    /// A filesystem over several devices (btrfs) could not be split into its member
    /// disks (`why`): swept whole, in its own address order, as one disk standing for all
    /// its members' ([`Disk::pool`](crate::Disk::pool)), or where its devices could not be
    /// listed, as the disk it was mounted from.
    #[non_exhaustive]
    NotSplit {
        /// What stood in the way (no `CAP_SYS_ADMIN` to read the chunk tree, RAID5/6).
        why: String,
    },
}

impl fmt::Display for Demotion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Demotion::Unsupported { from, to, error } => write!(
                f,
                "{from} unsupported ({}), using {to}",
                crate::error::describe_io(error)
            ),
            Demotion::NotSplit { why } => write!(
                f,
                "not split into its devices ({why}), swept whole in its address order"
            ),
        }
    }
}

impl Serialize for Demotion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A per-filesystem strategy that is demoted when the filesystem says "unsupported".
#[derive(Debug)]
pub(crate) struct Ladder {
    rungs: Vec<Strategy>,
    current: AtomicUsize,
    /// Why the ladder was demoted, for the report.
    demotions: Mutex<Vec<Demotion>>,
}

impl Ladder {
    pub(crate) fn new(rungs: Vec<Strategy>) -> Self {
        debug_assert!(!rungs.is_empty());
        Self {
            rungs,
            current: AtomicUsize::new(0),
            demotions: Mutex::new(Vec::new()),
        }
    }

    /// The strategies, best first, as chosen.
    pub(crate) fn rungs(&self) -> &[Strategy] {
        &self.rungs
    }

    pub(crate) fn current(&self) -> Strategy {
        self.rungs[self.current.load(Ordering::Acquire)]
    }

    /// Records something the filesystem's report should say (a pool left whole).
    pub(crate) fn note(&self, d: Demotion) {
        lock(&self.demotions).push(d);
    }

    /// Why the ladder was demoted, once done with it.
    pub(crate) fn into_demotions(self) -> Vec<Demotion> {
        into_inner(self.demotions)
    }

    /// Locates `file` with the current strategy, stepping down the ladder on "unsupported".
    /// The rung is read without a lock: it is consulted for every file and changes at most
    /// a few times per filesystem.
    pub(crate) fn locate(
        &self,
        file: &File,
        size: u64,
        sync: bool,
        volume: &os::Volume,
    ) -> io::Result<Placement> {
        loop {
            let at = self.current.load(Ordering::Acquire);
            let strategy = self.rungs[at];
            if !strategy.is_physical() {
                return Ok(Placement::unmapped(strategy));
            }
            match os::map_extents(file, strategy, size, sync, volume) {
                Ok(placement) => return Ok(placement),
                Err(LocateError::Io(e)) => return Err(e),
                Err(LocateError::Unsupported(e)) => {
                    if at + 1 == self.rungs.len() {
                        return Err(e);
                    }
                    // Whichever thread demotes first records why; the others just retry.
                    let demoted = self
                        .current
                        .compare_exchange(at, at + 1, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok();
                    if demoted {
                        lock(&self.demotions).push(Demotion::Unsupported {
                            from: strategy,
                            to: self.rungs[at + 1],
                            error: Arc::new(e),
                        });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Strategy::*;

    /// Every kind, so a new one cannot be added without deciding its ladder here.
    fn every_kind() -> Vec<FsKind> {
        let all = [
            FsKind::Ext4,
            FsKind::Xfs,
            FsKind::Btrfs,
            FsKind::F2fs,
            FsKind::Vfat,
            FsKind::Exfat,
            FsKind::Ntfs,
            FsKind::Refs,
            FsKind::Apfs,
            FsKind::Hfs,
            FsKind::Zfs,
            FsKind::Tmpfs,
            FsKind::Nfs,
            FsKind::Cifs,
            FsKind::Fuse,
            FsKind::Overlay,
            FsKind::Virtual,
            FsKind::Other,
        ];
        // Fails to compile when a kind is added and not listed above.
        for k in all {
            match k {
                FsKind::Ext4
                | FsKind::Xfs
                | FsKind::Btrfs
                | FsKind::F2fs
                | FsKind::Vfat
                | FsKind::Exfat
                | FsKind::Ntfs
                | FsKind::Refs
                | FsKind::Apfs
                | FsKind::Hfs
                | FsKind::Zfs
                | FsKind::Tmpfs
                | FsKind::Nfs
                | FsKind::Cifs
                | FsKind::Fuse
                | FsKind::Overlay
                | FsKind::Virtual
                | FsKind::Other => {}
            }
        }
        all.to_vec()
    }

    #[test]
    fn every_filesystem_kind_gets_its_ladder_on_every_platform() {
        // (platform, what it offers, privileged)
        let platforms: [(&str, &[Strategy], bool); 6] = [
            ("linux, root", &[Fiemap, Fibmap], true),
            ("linux, user", &[Fiemap, Fibmap], false),
            ("windows", &[RetrievalPointers], false),
            ("windows, elevated", &[RetrievalPointers], true),
            ("macos", &[Log2Phys], false),
            ("other", &[], false),
        ];
        for (platform, offered, privileged) in platforms {
            for kind in every_kind() {
                let want: Vec<Strategy> = match kind {
                    FsKind::Tmpfs | FsKind::Nfs | FsKind::Cifs => vec![Inode],
                    FsKind::Fuse | FsKind::Virtual => vec![Given],
                    _ => match platform {
                        "linux, root" => vec![Fiemap, Fibmap, Inode],
                        "linux, user" => vec![Fiemap, Inode],
                        "windows" | "windows, elevated" => vec![RetrievalPointers, Inode],
                        "macos" => vec![Log2Phys, Inode],
                        _ => vec![Inode],
                    },
                };
                assert_eq!(
                    ladder(kind, offered, None, privileged),
                    want,
                    "{kind} on {platform}"
                );
                // A forced strategy wins over the kind, falling back to inode order when
                // it gives positions.
                assert_eq!(
                    ladder(kind, offered, Some(Fiemap), privileged),
                    vec![Fiemap, Inode]
                );
                assert_eq!(ladder(kind, offered, Some(Given), privileged), vec![Given]);
                assert_eq!(ladder(kind, offered, Some(Inode), privileged), vec![Inode]);
            }
        }
    }

    #[test]
    fn a_demotion_reads_as_one_line_naming_both_strategies_and_the_os_answer() {
        let d = Demotion::Unsupported {
            from: Fiemap,
            to: Inode,
            error: Arc::new(io::Error::new(io::ErrorKind::Unsupported, "no extent map")),
        };
        let line = "fiemap unsupported (no extent map), using inode";
        assert_eq!(d.to_string(), line);
        // Serialized (`bench --json`) as the same line, as when it was a string.
        assert_eq!(serde_json::to_value(&d).unwrap(), line);
    }

    #[test]
    fn the_platform_backend_offers_what_the_ladder_expects() {
        let ladder = ladder(FsKind::Ext4, os::EXTENT_STRATEGIES, None, true);
        assert_eq!(ladder.last(), Some(&Inode));
        if cfg!(target_os = "linux") {
            assert_eq!(ladder, vec![Fiemap, Fibmap, Inode]);
        }
    }
}
