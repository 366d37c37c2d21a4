//! What to do with each planned file, from the destination's metadata alone: pure
//! decisions, tested here on hand-built metadata.

use std::time::SystemTime;

/// What to do with a planned file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// Not at the destination: copy.
    Copy,
    /// At the destination, different: copy over it.
    Update,
    /// A directory at the destination (`delete`): copy, and put the copy in place over the
    /// directory at the end of the run, if the run saw everything there.
    OverDirectory,
    /// Same size at the destination; compare content (`checksum`).
    Compare,
    /// Unchanged; read only to hash it (`hash`).
    HashOnly,
    /// Unchanged: nothing to do.
    Skip,
}

/// What the destination has at a file's place, as far as deciding goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Existing {
    pub is_file: bool,
    pub is_dir: bool,
    pub len: u64,
    pub modified: Option<SystemTime>,
}

impl Existing {
    pub(super) fn of(m: &std::fs::Metadata) -> Existing {
        Existing {
            is_file: m.is_file(),
            is_dir: m.is_dir(),
            len: m.len(),
            modified: m.modified().ok(),
        }
    }
}

/// How to decide: `checksum` compares content instead of trusting size and mtime;
/// `hashing` reads unchanged files too (a manifest of every file).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Rules {
    pub checksum: bool,
    pub hashing: bool,
}

/// The action for a source file of `size` bytes modified at `modified`, given what the
/// destination has there (a directory is replaced only by `delete`, at the end of the run). rsync's quick
/// check: same size and mtime is unchanged, unless `checksum`.
pub(super) fn action(
    size: u64,
    modified: Option<SystemTime>,
    existing: Option<&Existing>,
    rules: Rules,
) -> Action {
    match existing {
        None => Action::Copy,
        Some(d) if d.is_dir => Action::OverDirectory,
        Some(d) if !d.is_file => Action::Update,
        Some(d) if d.len != size => Action::Update,
        Some(_) if rules.checksum => Action::Compare,
        // An unknown time on either side is never "the same".
        Some(d) if d.modified.is_none() || d.modified != modified => Action::Update,
        Some(_) if rules.hashing => Action::HashOnly,
        Some(_) => Action::Skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn file(len: u64, secs: u64) -> Existing {
        Existing {
            is_file: true,
            is_dir: false,
            len,
            modified: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)),
        }
    }

    fn at(secs: u64) -> Option<SystemTime> {
        Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
    }

    #[test]
    fn the_quick_check_skips_only_same_size_and_mtime() {
        let quick = Rules::default();
        assert_eq!(action(10, at(5), None, quick), Action::Copy);
        assert_eq!(action(10, at(5), Some(&file(10, 5)), quick), Action::Skip);
        assert_eq!(action(10, at(5), Some(&file(11, 5)), quick), Action::Update);
        assert_eq!(action(10, at(5), Some(&file(10, 6)), quick), Action::Update);
        let symlink = Existing {
            is_file: false,
            ..file(10, 5)
        };
        assert_eq!(action(10, at(5), Some(&symlink), quick), Action::Update);
    }

    #[test]
    fn a_directory_in_the_way_is_copied_over_at_the_end() {
        let dir = Existing {
            is_file: false,
            is_dir: true,
            ..file(0, 5)
        };
        assert_eq!(
            action(10, at(5), Some(&dir), Rules::default()),
            Action::OverDirectory
        );
    }

    #[test]
    fn an_unknown_time_is_never_the_same() {
        let no_time = Existing {
            modified: None,
            ..file(10, 5)
        };
        assert_eq!(
            action(10, None, Some(&no_time), Rules::default()),
            Action::Update
        );
        assert_eq!(
            action(10, None, Some(&file(10, 5)), Rules::default()),
            Action::Update
        );
    }

    #[test]
    fn checksum_compares_same_sized_files_and_hashing_reads_unchanged_ones() {
        let checksum = Rules {
            checksum: true,
            hashing: false,
        };
        assert_eq!(
            action(10, at(5), Some(&file(10, 9)), checksum),
            Action::Compare
        );
        assert_eq!(
            action(10, at(5), Some(&file(12, 5)), checksum),
            Action::Update
        );
        let hashing = Rules {
            checksum: false,
            hashing: true,
        };
        assert_eq!(
            action(10, at(5), Some(&file(10, 5)), hashing),
            Action::HashOnly
        );
        assert_eq!(action(10, at(5), None, hashing), Action::Copy);
    }
}
