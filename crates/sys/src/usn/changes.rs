//! A run of journal records turned into one change per file: created, data changed,
//! renamed (from where to where), deleted, attributes only, and whether the last set of
//! changes was closed.

use std::collections::HashMap;

use super::reason;
use super::record::{Entry, FileRef, Record, Usn};

/// Where a file is: its directory and its name in it (one path component, UTF-16 as the
/// volume stores it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The directory's reference.
    pub parent: FileRef,
    /// The name, UTF-16 code units.
    pub name: Vec<u16>,
}

impl Place {
    fn of(r: &Record<'_>) -> Self {
        Place {
            parent: r.parent,
            name: r.name_units().collect(),
        }
    }

    /// Overwrites this place with `r`'s, reusing the name's allocation.
    fn set(&mut self, r: &Record<'_>) {
        self.parent = r.parent;
        self.name.clear();
        self.name.extend(r.name_units());
    }

    /// The name as text, unpaired surrogates replaced by U+FFFD.
    pub fn name_lossy(&self) -> String {
        String::from_utf16_lossy(&self.name)
    }
}

/// Everything a run of records says about one file or directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// The file or directory.
    pub file: FileRef,
    /// Whether its latest record says it is a directory (`FILE_ATTRIBUTE_DIRECTORY`): a
    /// directory renamed moves every row under it.
    pub is_dir: bool,
    /// Every `USN_REASON_*` flag of its records, or-ed.
    pub reasons: u32,
    /// Whether its latest record has `USN_REASON_CLOSE`. A change not closed yet is
    /// still being written: catalogue it when a later record closes it.
    pub closed: bool,
    /// Its directory and name in its latest record that is not a rename's old-name record;
    /// `None` if it had none (only range records, or a rename's old half).
    pub place: Option<Place>,
    /// Where it was before its first rename in this run, if it existed before the run
    /// (not created in it) and the rename's old-name record is in the run.
    pub renamed_from: Option<Place>,
    /// The USN of its first and of its latest record.
    pub usns: (Usn, Usn),
}

impl FileChange {
    fn new(file: FileRef, usn: Usn) -> Self {
        FileChange {
            file,
            is_dir: false,
            reasons: 0,
            closed: false,
            place: None,
            renamed_from: None,
            usns: (usn, usn),
        }
    }

    /// Created in this run.
    pub fn created(&self) -> bool {
        self.reasons & reason::FILE_CREATE != 0
    }

    /// Deleted in this run (its reference is not reused: NTFS bumps the sequence number).
    pub fn deleted(&self) -> bool {
        self.reasons & reason::FILE_DELETE != 0
    }

    /// Created and deleted within the run: nothing for a catalog to do.
    pub fn transient(&self) -> bool {
        self.created() && self.deleted()
    }

    /// Its unnamed data stream changed, or a flag this code does not know was set (taken
    /// to touch the content).
    pub fn data_changed(&self) -> bool {
        const KNOWN: u32 = reason::DATA
            | reason::METADATA_ONLY
            | reason::FILE_CREATE
            | reason::FILE_DELETE
            | reason::RENAME_OLD_NAME
            | reason::RENAME_NEW_NAME
            | reason::HARD_LINK_CHANGE
            | reason::REPARSE_POINT_CHANGE
            | reason::CLOSE;
        self.reasons & (reason::DATA | !KNOWN) != 0
    }

    /// Renamed or moved in this run (see [`FileChange::renamed_from`] and
    /// [`FileChange::place`]).
    pub fn renamed(&self) -> bool {
        self.reasons & (reason::RENAME_OLD_NAME | reason::RENAME_NEW_NAME) != 0
    }

    /// A hard link was added or removed, or a reparse point changed: its names or its
    /// kind may differ, so whoever catalogues it looks at it again.
    pub fn links_changed(&self) -> bool {
        self.reasons & (reason::HARD_LINK_CHANGE | reason::REPARSE_POINT_CHANGE) != 0
    }

    /// Only attributes, times, security, extended attributes, alternate streams or the
    /// like changed: the content and the place did not (times may have: a catalog keeping
    /// mtime looks at the file's metadata again, not at its bytes).
    pub fn metadata_only(&self) -> bool {
        self.reasons & !(reason::METADATA_ONLY | reason::CLOSE) == 0
    }

    /// Not closed yet: being written.
    pub fn still_being_written(&self) -> bool {
        !self.closed
    }
}

/// The changes of a run of records, one per file, in the order files first appear.
///
/// ```
/// use seekless_sys::usn::Changes;
///
/// let changes = Changes::new();
/// assert!(changes.files().is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Changes {
    files: Vec<FileChange>,
    index: HashMap<FileRef, usize>,
}

impl Changes {
    /// No changes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one record (in journal order).
    pub fn add(&mut self, entry: &Entry<'_>) {
        let (file, usn) = match entry {
            Entry::Change(r) => (r.file, r.usn),
            Entry::Ranges(r) => (r.file, r.usn),
        };
        let at = *self.index.entry(file).or_insert_with(|| {
            self.files.push(FileChange::new(file, usn));
            self.files.len() - 1
        });
        let c = &mut self.files[at];
        c.usns.1 = usn;
        match entry {
            Entry::Change(r) => {
                let old_name = r.reason & reason::RENAME_OLD_NAME != 0
                    && r.reason & reason::RENAME_NEW_NAME == 0;
                if old_name {
                    if c.renamed_from.is_none() && !c.created() {
                        c.renamed_from = Some(Place::of(r));
                    }
                } else {
                    match &mut c.place {
                        Some(p) => p.set(r),
                        None => c.place = Some(Place::of(r)),
                    }
                }
                c.reasons |= r.reason;
                c.is_dir = r.is_dir();
                c.closed = r.reason & reason::CLOSE != 0;
            }
            // Range records come beside the V3 records of the same change; their
            // extents are not kept, only that the data changed.
            Entry::Ranges(r) => c.reasons |= r.reason | reason::DATA_OVERWRITE,
        }
    }

    /// Adds every record of `entries`.
    pub fn extend<'a>(&mut self, entries: impl IntoIterator<Item = Entry<'a>>) {
        for e in entries {
            self.add(&e);
        }
    }

    /// The files changed, in the order they first appeared.
    pub fn files(&self) -> &[FileChange] {
        &self.files
    }

    /// The change of one file, if it has one.
    pub fn get(&self, file: FileRef) -> Option<&FileChange> {
        self.index.get(&file).map(|&i| &self.files[i])
    }
}
