//! Duplicate photos in a seekless catalog: byte-identical files (same BLAKE3) and
//! near-duplicates (perceptual hashes within a Hamming distance, checked further), with a
//! keeper per group chosen by [`Keeping`]'s rules or by the user's [`decisions`]. Finding
//! only reads the catalog ([`Catalog::open`] refuses anything that is not a seekless
//! catalog, and opens it read-only); [`Dupes::removable`] lists the files offered for
//! removal (the CLI's `-0`). Writing is apart: [`decisions::record`] stores decisions, and
//! [`act`] moves, trashes or links files through the one owner of destructive acts, each
//! read again first and journalled.
//!
//! How near-duplicates are found:
//!
//! 1. Rows without a content hash (files that could not be read) are left out. Rows with
//!    the same BLAKE3 are one *class*: byte-identical, so of one pHash, size, EXIF.
//! 2. Every pair of classes whose pHashes are within `similar` bits, by multi-index
//!    hashing (`mih`): a million hashes in about a second, not pairs².
//! 3. Each such pair must pass `verify`'s checks (aspect ratio, thumbnail signature);
//!    a pair that does and whose shots are one camera's within 2 s is a *burst*.
//! 4. Union-find over the verified pairs: a group is a connected set of classes (with
//!    `--bursts-are-dupes`, burst pairs join too); burst pairs make burst groups of their
//!    own, listed for information (no keeper, nothing to delete).
//! 5. Files the catalog links (its `pairs` view) are never duplicates of each other: a
//!    raw file and the camera's JPEG of the same shot, a Live Photo's still and its video
//!    make *pair* groups, kept on purpose (no keeper, nothing to delete). A HEIF and the
//!    JPEG exported from it are a similar group whatever their pHashes, the HEIF (the
//!    original) its keeper.
//!
//! ```
//! use seekless_catalog::dupes::{Catalog, DupesOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # std::fs::write(dir.path().join("a.gif"), b"GIF89a\x01\0\x01\0\0\0\0;")?;
//! # std::fs::write(dir.path().join("b.gif"), b"GIF89a\x01\0\x01\0\0\0\0;")?;
//! # let db = dir.path().join("photos.db");
//! # seekless_catalog::index::index(&[dir.path().to_path_buf()], &Default::default(),
//! #     &seekless_catalog::index::IndexOptions::new(&db), &seekless_core::Quiet)?;
//! let catalog = Catalog::open(&db)?;
//! let dupes = catalog.find(&DupesOptions::default())?;
//! for group in &dupes.groups {
//!     println!("{:?}: {} bytes to free", group.kind, group.saving);
//!     for m in &group.members {
//!         println!("{} {}", if m.keeper { "*" } else { " " }, m.path);
//!     }
//! }
//! assert_eq!(dupes.groups.len(), 1); // a.gif and b.gif
//! # Ok(()) }
//! ```

pub mod act;
pub mod decisions;
mod grouping;
pub mod html;
mod keep;
mod mih;
pub(crate) mod resolve;
mod verify;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::index::CatalogError;
use crate::index::catalog::{HashedRow, ReadOnly};
use decisions::{Decision, DecisionKind};
pub use keep::{KeepRule, Keeping};

/// The default `--similar`: pHashes within 6 bits (re-encoding at quality 60 or a 50 %
/// resize stays within it; unrelated pictures are 20 and more apart: `docs/index.md`).
pub const DEFAULT_SIMILAR: u32 = 6;

/// The largest `--similar` taken (half the bits: any two hashes would be "similar" soon
/// after).
pub const MAX_SIMILAR: u32 = 32;

/// What to look for.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DupesOptions {
    /// Largest pHash distance (bits) of near-duplicates; 0: exact duplicates only.
    pub similar: u32,
    /// Put burst frames (one camera, within 2 s) in duplicate groups instead of groups of
    /// their own.
    pub bursts_are_dupes: bool,
    /// How each group's keeper is chosen.
    pub keeping: Keeping,
}

impl Default for DupesOptions {
    fn default() -> Self {
        DupesOptions {
            similar: DEFAULT_SIMILAR,
            bursts_are_dupes: false,
            keeping: Keeping::default(),
        }
    }
}

/// Why duplicates could not be found.
#[derive(Debug, thiserror::Error)]
pub enum DupesError {
    /// The catalog cannot be used (not a seekless catalog, missing, newer, unreadable).
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// Reading the catalog failed.
    #[error("{}: {message}", .path.display())]
    Sql {
        /// The catalog.
        path: PathBuf,
        /// SQLite's message.
        message: String,
    },
    /// A folder of `--prefer` or `--protect` cannot be resolved (missing, not searchable):
    /// nothing is found rather than a protection that protects nothing.
    #[error("{}: {message}", .path.display())]
    Folder {
        /// The folder as given.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// Writing the contact sheet failed.
    #[error("{}: {message}", .path.display())]
    Write {
        /// The file being written.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

impl DupesError {
    /// Whether the database was refused as not being a seekless catalog (left untouched).
    pub fn is_refusal(&self) -> bool {
        matches!(self, DupesError::Catalog(CatalogError::NotCatalog { .. }))
    }
}

/// What kind of group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupKind {
    /// Byte-identical files (one BLAKE3).
    Exact,
    /// Near-duplicates: pHashes within the distance, checks passed (byte-identical copies
    /// among them included).
    Similar,
    /// Frames of a burst: similar shots of one camera within 2 s. For information: no
    /// keeper, nothing counted as saving.
    Burst,
    /// Files that belong together, kept on purpose ([`Group::link`] says how): a raw file
    /// and the camera's JPEG of the shot, a Live Photo's still and video. For information:
    /// no keeper, nothing counted as saving.
    Pair,
}

impl GroupKind {
    /// Whether the group's files are duplicates (one may go): exact and similar groups,
    /// not bursts nor pairs.
    pub fn is_duplicate(self) -> bool {
        matches!(self, GroupKind::Exact | GroupKind::Similar)
    }
}

/// One file of a group, as the catalog has it.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct Member {
    /// `images.id`.
    pub id: i64,
    /// The path, as text (lossy UTF-8).
    pub path: String,
    /// The path's bytes, exactly (in JSON only when they are not UTF-8, as an array of
    /// numbers: `path` is then lossy).
    #[serde(skip_serializing_if = "is_utf8")]
    pub path_bytes: Vec<u8>,
    /// Size in bytes.
    pub size: u64,
    /// Stored width and height (before EXIF orientation).
    pub width: Option<u32>,
    /// See `width`.
    pub height: Option<u32>,
    /// EXIF orientation (1–8).
    pub orientation: Option<u32>,
    /// `DateTimeOriginal`, as the catalog stores it.
    pub taken: Option<String>,
    /// Camera make.
    pub make: Option<String>,
    /// Camera model.
    pub model: Option<String>,
    /// Format by content.
    pub format: Option<String>,
    /// BLAKE3, lower-case hex.
    pub blake3: String,
    /// The perceptual hash, 16 hex digits (`printf('%016x', phash)`).
    pub phash: Option<String>,
    /// pHash distance to the group's keeper (similar groups; 0 for the keeper).
    pub distance: Option<u32>,
    /// The suggested keeper (first member of a group; never in burst and pair groups).
    pub keeper: bool,
    /// Why it is never offered for removal, when it is not (part of a pair, under a
    /// protected folder): kept beside the keeper.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protected: Option<&'static str>,
    /// The user chose it as the keeper (a `keeper` decision).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub chosen: bool,
    /// Part of a pair the catalog links (raw and JPEG, a Live Photo's still and video).
    #[serde(skip)]
    pub paired: bool,
    /// Device, inode and modification time (ns) as the catalog has them: what the file
    /// must still have to be acted on.
    #[serde(skip)]
    pub dev: u64,
    /// See `dev`.
    #[serde(skip)]
    pub ino: u64,
    /// See `dev`.
    #[serde(skip)]
    pub mtime_ns: i64,
    /// The original a JPEG in its group was exported from (a HEIF the catalog links to
    /// it): the keeper before any other rule.
    pub original: bool,
    /// Why `index` found the file damaged (`images.damaged`): never the suggested keeper
    /// while an intact file is in its group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
}

impl Member {
    /// Whether it is offered for removal: not the keeper, not protected (in a duplicate
    /// group; [`Dupes::removable`] looks at those only).
    pub fn removable(&self) -> bool {
        !self.keeper && self.protected.is_none()
    }

    /// Width × height, 0 when unknown.
    pub fn pixels(&self) -> u64 {
        u64::from(self.width.unwrap_or(0)) * u64::from(self.height.unwrap_or(0))
    }
}

/// A group of duplicates (or a burst).
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct Group {
    /// What joins them.
    pub kind: GroupKind,
    /// For a pair group, the catalog's link: `raw+jpeg` or `live-photo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Bytes freed by removing every file offered for removal (0 for bursts and pairs).
    pub saving: u64,
    /// The `keeper` decision that chose its keeper, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<i64>,
    /// The files, the keeper first (see [`Keeping`]).
    pub members: Vec<Member>,
}

/// What [`Catalog::find`] found, and what it looked at.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct Dupes {
    /// Duplicate groups, largest saving first, then burst groups.
    pub groups: Vec<Group>,
    /// Rows with a content hash (looked at).
    pub images: u64,
    /// Rows without one (files that could not be read): left out.
    pub ignored: u64,
    /// Rows with a perceptual hash.
    pub with_phash: u64,
    /// Pairs of distinct contents within the pHash distance.
    pub candidates: u64,
    /// Of those, pairs refused by the aspect-ratio check.
    pub rejected_aspect: u64,
    /// Of those, pairs refused by the thumbnail check.
    pub rejected_thumbnail: u64,
    /// Groups not shown: the user decided to keep all their files (`keep-all`).
    pub decided: u64,
}

impl Dupes {
    /// The files one could delete: every member of each duplicate group (exact or
    /// similar) but its keeper, group by group in [`groups`](Self::groups)' order; never a
    /// burst's frames (bursts have no keeper), nor a file kept for another reason
    /// ([`Member::protected`]). What `seekless dupes -0` prints, and what [`act::plan`] acts on.
    ///
    /// ```
    /// # use seekless_catalog::dupes::Dupes;
    /// # fn show(dupes: &Dupes) {
    /// for m in dupes.removable() {
    ///     assert!(!m.keeper);
    ///     println!("{}", m.path);
    /// }
    /// # }
    /// ```
    pub fn removable(&self) -> impl Iterator<Item = &Member> {
        self.groups
            .iter()
            .filter(|g| g.kind.is_duplicate())
            .flat_map(|g| g.members.iter().filter(|m| m.removable()))
    }

    /// Bytes freed by keeping only the keeper of each group: the sum of the groups'
    /// [`saving`](Group::saving) (bursts count nothing).
    pub fn saving(&self) -> u64 {
        self.groups.iter().map(|g| g.saving).sum()
    }
}

/// A stored thumbnail.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Thumbnail {
    /// The JPEG.
    pub jpeg: Vec<u8>,
    /// Its width.
    pub width: u32,
    /// Its height.
    pub height: u32,
}

/// A seekless catalog opened for reading only.
pub struct Catalog {
    catalog: ReadOnly,
    path: PathBuf,
}

/// What is kept of each row while pairs are found: 80 bytes, whatever the path's length
/// (paths are read only for the rows that end up in a group).
struct Row {
    id: i64,
    size: u64,
    phash: u64,
    /// `i64::MIN`: unknown.
    taken: i64,
    blake3: [u8; 32],
    has_phash: bool,
    /// Sides with the EXIF orientation applied (0: unknown).
    sides: (u32, u32),
    /// Interned (make, model); 0 when either is unknown.
    camera: u32,
}

impl Catalog {
    /// Opens the catalog at `path` read-only. A file that is not a seekless catalog is
    /// refused ([`DupesError::is_refusal`]) and left exactly as it was; nothing is created
    /// beside it.
    pub fn open(path: &Path) -> Result<Catalog, DupesError> {
        Ok(Catalog {
            catalog: ReadOnly::open(path)?,
            path: path.to_path_buf(),
        })
    }

    fn sql(&self, e: rusqlite::Error) -> DupesError {
        let message = match &e {
            rusqlite::Error::SqliteFailure(_, Some(m)) => m.clone(),
            other => other.to_string(),
        };
        DupesError::Sql {
            path: self.path.clone(),
            message,
        }
    }

    /// The catalog's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The user's decisions, oldest first (none in a catalog older than version 5).
    pub fn decisions(&self) -> Result<Vec<Decision>, DupesError> {
        let stored = self.catalog.decisions().map_err(|e| self.sql(e))?;
        Ok(stored
            .into_iter()
            .filter_map(Decision::from_stored)
            .collect())
    }

    /// The stored thumbnail of image `id`, if it has one.
    pub fn thumbnail(&self, id: i64) -> Result<Option<Thumbnail>, DupesError> {
        let found = self.catalog.thumbnail(id).map_err(|e| self.sql(e))?;
        Ok(found.map(|(jpeg, width, height)| Thumbnail {
            jpeg,
            width,
            height,
        }))
    }

    /// Finds the duplicate groups.
    pub fn find(&self, opts: &DupesOptions) -> Result<Dupes, DupesError> {
        // Folders compared with the catalog's paths as the system resolves them.
        let keeping = opts
            .keeping
            .resolved()
            .map_err(|(path, e)| DupesError::Folder {
                path,
                message: seekless_sys::describe_io(&e),
            })?;
        let mut dupes = Dupes::default();
        let decisions = self.decisions()?;
        // The compact rows are gone (freed) before the groups' members are read in full.
        let (found, linked) = self.group_rows(opts, &decisions, &mut dupes)?;
        // The decisions that name each content (a decision covering a group names all of
        // its contents, so its first one's list is where to look), oldest first.
        let mut naming: HashMap<&str, Vec<&Decision>> = HashMap::new();
        for d in &decisions {
            for c in &d.contents {
                naming.entry(c.as_str()).or_default().push(d);
            }
        }
        let mut groups = Vec::with_capacity(found.len());
        for (kind, link, rows) in found {
            let mut list = rows
                .iter()
                .map(|&(id, size)| {
                    let mut m = self.member(id, size)?;
                    m.original = kind == GroupKind::Similar && linked.originals.contains(&id);
                    m.paired = linked.paired.contains(&id);
                    Ok(m)
                })
                .collect::<Result<Vec<_>, DupesError>>()?;
            let mut decision = None;
            if kind.is_duplicate() {
                let covered = |d: &&&Decision| d.covers(list.iter().map(|m| m.blake3.as_str()));
                let named = naming
                    .get(list[0].blake3.as_str())
                    .map_or(&[][..], |v| &v[..]);
                if named
                    .iter()
                    .filter(|d| d.decision == DecisionKind::KeepAll)
                    .any(|d| covered(&d))
                {
                    dupes.decided += 1;
                    continue;
                }
                decision = named
                    .iter()
                    .filter(|d| d.decision == DecisionKind::Keeper)
                    .rfind(covered)
                    .and_then(|d| choose(&mut list, d).then_some(d.id).flatten());
            }
            let mut g = group(kind, list, &keeping);
            g.link = link;
            g.decision = decision;
            groups.push(g);
        }
        groups.sort_by(|a, b| {
            (!a.kind.is_duplicate())
                .cmp(&!b.kind.is_duplicate())
                .then((a.kind == GroupKind::Pair).cmp(&(b.kind == GroupKind::Pair)))
                .then(b.saving.cmp(&a.saving))
                .then_with(|| a.members[0].path_bytes.cmp(&b.members[0].path_bytes))
        });
        dupes.groups = groups;
        Ok(dupes)
    }

    /// Every row with a content hash, compactly.
    fn load(&self, dupes: &mut Dupes) -> Result<Vec<Row>, DupesError> {
        let sql = |e| self.sql(e);
        let count = usize::try_from(self.catalog.hashed().map_err(sql)?).unwrap_or(0);
        // Reserved exactly: growing by doubling would copy (and briefly hold twice) the lot.
        let mut rows = Vec::with_capacity(count);
        let mut cameras: HashMap<(String, String), u32> = HashMap::new();
        self.catalog
            .each_hashed(|r: HashedRow| {
                let Some(blake3) = parse_hex32(&r.blake3) else {
                    dupes.ignored += 1;
                    return;
                };
                let (w, h) = (r.width.unwrap_or(0), r.height.unwrap_or(0));
                let sides = if matches!(r.orientation, Some(5..=8)) {
                    (h, w)
                } else {
                    (w, h)
                };
                let camera = match (r.make, r.model) {
                    (Some(make), Some(model)) => {
                        let next = cameras.len() as u32 + 1;
                        *cameras.entry((make, model)).or_insert(next)
                    }
                    _ => 0,
                };
                rows.push(Row {
                    id: r.id,
                    size: r.size,
                    phash: r.phash.unwrap_or(0) as u64,
                    has_phash: r.phash.is_some(),
                    taken: r
                        .taken
                        .as_deref()
                        .and_then(verify::taken_ms)
                        .unwrap_or(i64::MIN),
                    blake3,
                    sides,
                    camera,
                });
            })
            .map_err(sql)?;
        Ok(rows)
    }

    /// The rest of a row, for a group.
    fn member(&self, id: i64, size: u64) -> Result<Member, DupesError> {
        let r = self.catalog.detail(id).map_err(|e| self.sql(e))?;
        Ok(Member {
            id,
            path: r.path,
            path_bytes: r.path_bytes,
            size,
            width: r.width,
            height: r.height,
            orientation: r.orientation,
            taken: r.taken,
            make: r.make,
            model: r.model,
            format: r.format,
            blake3: r.blake3,
            phash: r.phash.map(|p| format!("{:016x}", p as u64)),
            distance: None,
            keeper: false,
            original: false,
            protected: None,
            chosen: false,
            paired: false,
            dev: r.dev,
            ino: r.ino,
            mtime_ns: r.mtime_ns,
            damaged: r.damaged,
        })
    }
}

/// A group of `members` of `kind`: the keeper first (not for bursts and pairs), chosen by
/// the user ([`Member::chosen`]) or by `keeping`; the files never offered for removal
/// marked; the saving; each member's pHash distance to the keeper.
fn group(kind: GroupKind, mut members: Vec<Member>, keeping: &Keeping) -> Group {
    // The user's choice first; then an intact file before a damaged one, whatever the rules.
    members.sort_by(|a, b| {
        b.chosen
            .cmp(&a.chosen)
            .then_with(|| a.damaged.is_some().cmp(&b.damaged.is_some()))
            .then_with(|| keeping.order(a, b))
    });
    let saving = if !kind.is_duplicate() {
        0
    } else {
        members[0].keeper = true;
        let keeper = (members[0].dev, members[0].ino);
        // A damaged keeper the user did not choose: every file of the group is damaged,
        // and none is offered for removal in its favour.
        let unsound = members[0].damaged.is_some() && !members[0].chosen;
        for m in &mut members[1..] {
            m.protected = keeping.protects(m);
            if unsound {
                m.protected = Some("every file of the group is damaged");
            }
            // Removing this name would free nothing, and through a bind mount it would
            // remove the keeper itself.
            if (m.dev, m.ino) == keeper && m.ino != 0 {
                m.protected = Some("the keeper's own file under another name");
            }
        }
        members
            .iter()
            .filter(|m| m.removable())
            .map(|m| m.size)
            .sum()
    };
    if kind != GroupKind::Exact {
        let hash = |m: &Member| {
            m.phash
                .as_deref()
                .and_then(|h| u64::from_str_radix(h, 16).ok())
        };
        let first = hash(&members[0]);
        for m in &mut members {
            m.distance = first
                .zip(hash(m))
                .map(|(a, b)| crate::index::phash::distance(a, b));
        }
    }
    Group {
        kind,
        link: None,
        saving,
        decision: None,
        members,
    }
}

/// Marks the files of `list` that `decision` (a `keeper` decision covering them) keeps:
/// the one at its path, else every file of its content (the rules choose among them).
/// Whether any was.
fn choose(list: &mut [Member], decision: &Decision) -> bool {
    let Some(keeper) = decision.keeper.as_deref() else {
        return false;
    };
    let at_path = list
        .iter()
        .any(|m| m.blake3 == keeper && decision.path_bytes.as_deref() == Some(&m.path_bytes));
    let mut any = false;
    for m in list.iter_mut().filter(|m| m.blake3 == keeper) {
        m.chosen = !at_path || decision.path_bytes.as_deref() == Some(&m.path_bytes);
        any |= m.chosen;
    }
    any
}

/// What the catalog links, by row id.
struct Linked {
    /// HEIFs a JPEG was exported from.
    originals: HashSet<i64>,
    /// Files of a raw+jpeg or Live Photo pair.
    paired: HashSet<i64>,
}

fn is_utf8(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok()
}

fn parse_hex32(hex: &str) -> Option<[u8; 32]> {
    let b = hex.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        *o = (digit(b[2 * i])? * 16 + digit(b[2 * i + 1])?) as u8;
    }
    Some(out)
}

/// Union-find with path halving and union by size.
struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    fn new(n: usize) -> UnionFind {
        UnionFind {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] as usize != x {
            let grand = self.parent[self.parent[x] as usize];
            self.parent[x] = grand;
            x = grand as usize;
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a as u32;
        self.size[a] += self.size[b];
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn member(path: &str, w: u32, h: u32, taken: Option<&str>, size: u64) -> Member {
        Member {
            id: 0,
            path: path.into(),
            path_bytes: path.as_bytes().to_vec(),
            size,
            width: Some(w),
            height: Some(h),
            orientation: None,
            taken: taken.map(String::from),
            make: None,
            model: None,
            format: None,
            blake3: String::new(),
            phash: None,
            distance: None,
            keeper: false,
            original: false,
            damaged: None,
            protected: None,
            chosen: false,
            paired: false,
            dev: 0,
            ino: 0,
            mtime_ns: 0,
        }
    }

    fn group(kind: GroupKind, members: Vec<Member>) -> Group {
        super::group(kind, members, &Keeping::default())
    }

    fn keeper(members: Vec<Member>) -> String {
        group(GroupKind::Similar, members).members[0].path.clone()
    }

    #[test]
    fn a_damaged_file_is_never_the_suggested_keeper_and_never_the_reason_to_remove() {
        let damaged = |mut m: Member| {
            m.damaged = Some("truncated at 1 B of 2 B".into());
            m
        };
        // The damaged file has the most pixels: the intact one is kept all the same.
        let g = group(
            GroupKind::Exact,
            vec![
                damaged(member("/big", 400, 300, None, 9)),
                member("/small", 100, 100, None, 1),
            ],
        );
        assert_eq!(g.members[0].path, "/small");
        assert!(g.members[1].removable());
        // Every file damaged: one is first, none is offered for removal.
        let g = group(
            GroupKind::Exact,
            vec![
                damaged(member("/a", 100, 100, None, 1)),
                damaged(member("/b", 100, 100, None, 1)),
            ],
        );
        assert!(g.members.iter().all(|m| !m.removable()));
        // Unless the user chose it.
        let mut chosen = damaged(member("/a", 100, 100, None, 1));
        chosen.chosen = true;
        let g = group(
            GroupKind::Exact,
            vec![chosen, damaged(member("/b", 100, 100, None, 1))],
        );
        assert!(g.members[1].removable());
    }

    #[test]
    fn the_keeper_has_the_most_pixels_then_the_oldest_date_then_the_shortest_path() {
        let t1 = Some("2020-01-01T10:00:00");
        let t2 = Some("2021-01-01T10:00:00");
        // Pixels first, whatever the date and path.
        assert_eq!(
            keeper(vec![
                member("/a", 100, 100, t1, 1),
                member("/long/b", 200, 100, t2, 1)
            ]),
            "/long/b"
        );
        // Same pixels: the oldest; a known date before none.
        assert_eq!(
            keeper(vec![
                member("/a", 100, 100, t2, 1),
                member("/long/b", 100, 100, t1, 1)
            ]),
            "/long/b"
        );
        assert_eq!(
            keeper(vec![
                member("/a", 100, 100, None, 1),
                member("/long/b", 100, 100, t2, 1)
            ]),
            "/long/b"
        );
        // Same pixels and date: the shortest path, then the smallest.
        assert_eq!(
            keeper(vec![
                member("/bb/x", 10, 10, t1, 1),
                member("/c/x", 10, 10, t1, 1),
                member("/a/x", 10, 10, t1, 1)
            ]),
            "/a/x"
        );
    }

    #[test]
    fn the_saving_is_every_file_but_the_keeper_and_bursts_keep_nothing() {
        let g = group(
            GroupKind::Similar,
            vec![
                member("/a", 10, 10, None, 5),
                member("/b", 20, 10, None, 7),
                member("/c", 5, 5, None, 3),
            ],
        );
        assert_eq!(g.saving, 8);
        assert!(g.members[0].keeper && g.members[0].path == "/b");
        assert_eq!(g.members.iter().filter(|m| m.keeper).count(), 1);
        let b = group(
            GroupKind::Burst,
            vec![member("/a", 10, 10, None, 5), member("/b", 20, 10, None, 7)],
        );
        assert_eq!(b.saving, 0);
        assert!(b.members.iter().all(|m| !m.keeper));
    }

    #[test]
    fn the_removable_files_are_every_member_but_the_keeper_never_a_burst_frame() {
        let dupes = Dupes {
            groups: vec![
                group(
                    GroupKind::Exact,
                    vec![
                        member("/e1", 10, 10, None, 4),
                        member("/e2", 10, 10, None, 4),
                    ],
                ),
                group(
                    GroupKind::Similar,
                    vec![
                        member("/s1", 10, 10, None, 5),
                        member("/s2", 20, 10, None, 7),
                        member("/s3", 5, 5, None, 3),
                    ],
                ),
                group(
                    GroupKind::Burst,
                    vec![
                        member("/b1", 10, 10, None, 5),
                        member("/b2", 20, 10, None, 7),
                    ],
                ),
                group(
                    GroupKind::Pair,
                    vec![
                        member("/p1.cr2", 30, 20, None, 50),
                        member("/p1.jpg", 30, 20, None, 9),
                    ],
                ),
            ],
            ..Dupes::default()
        };
        let removable: Vec<&str> = dupes.removable().map(|m| m.path.as_str()).collect();
        // The keepers (/e1: same pixels and date, the smaller path; /s2: the most pixels)
        // stay, and so do both burst frames and both files of the pair.
        assert!(dupes.groups[3].members.iter().all(|m| !m.keeper));
        assert_eq!(dupes.groups[3].saving, 0);
        assert_eq!(removable, ["/e2", "/s1", "/s3"]);
        assert_eq!(dupes.saving(), 4 + 5 + 3);
        assert_eq!(Dupes::default().removable().count(), 0);
    }

    #[test]
    fn a_second_name_of_the_keepers_file_is_never_offered() {
        // Rows of one file under two names (a bind mount, a hard link seen by two runs):
        // removing one would free nothing, or remove the keeper itself.
        let mut a = member("/p/a.jpg", 10, 10, None, 5);
        let mut b = member("/mnt/p/a.jpg", 10, 10, None, 5);
        let c = member("/q/a.jpg", 10, 10, None, 5);
        (a.dev, a.ino, b.dev, b.ino) = (1, 7, 1, 7);
        let g = group(GroupKind::Exact, vec![b, a, c]);
        assert_eq!(g.members[0].path, "/p/a.jpg");
        let second = g.members.iter().find(|m| m.path == "/mnt/p/a.jpg").unwrap();
        assert!(second.protected.is_some());
        assert_eq!(g.saving, 5);
        let dupes = Dupes {
            groups: vec![g],
            ..Dupes::default()
        };
        let removable: Vec<&str> = dupes.removable().map(|m| m.path.as_str()).collect();
        assert_eq!(removable, ["/q/a.jpg"]);
    }

    #[test]
    fn the_original_of_an_export_is_the_keeper_whatever_its_pixels() {
        let mut heif = member("/IMG_1.heic", 100, 100, None, 9);
        heif.original = true;
        let jpeg = member("/export/IMG_1.jpg", 200, 200, None, 30);
        assert_eq!(keeper(vec![jpeg, heif]), "/IMG_1.heic");
    }

    #[test]
    fn union_find_joins_transitively() {
        let mut uf = UnionFind::new(5);
        uf.union(0, 1);
        uf.union(3, 4);
        uf.union(1, 4);
        assert_eq!(uf.find(0), uf.find(3));
        assert_ne!(uf.find(2), uf.find(0));
        let root = uf.find(0);
        assert_eq!(uf.size[root], 4);
    }

    #[cfg(unix)]
    #[test]
    fn a_library_caller_protecting_through_a_link_protects_the_folder_it_leads_to() {
        let dir = tempfile::tempdir().unwrap();
        let gif = b"GIF89a\x01\0\x01\0\0\0\0;";
        for sub in ["a", "vault"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
            std::fs::write(dir.path().join(sub).join("x.gif"), gif).unwrap();
        }
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let db = root.join("photos.db");
        crate::index::index(
            std::slice::from_ref(&root),
            &Default::default(),
            &crate::index::IndexOptions::new(&db),
            &seekless_core::Quiet,
        )
        .unwrap();
        std::os::unix::fs::symlink(root.join("vault"), root.join("link")).unwrap();
        let catalog = Catalog::open(&db).unwrap();
        let mut opts = DupesOptions::default();
        // Unprotected, the vault's copy is offered (a/x.gif, older, is the keeper).
        opts.keeping.protect = vec![root.join("link")];
        let found = catalog.find(&opts).unwrap();
        let vault = found.groups[0]
            .members
            .iter()
            .find(|m| m.path.contains("vault"))
            .unwrap();
        assert!(vault.protected.is_some() || vault.keeper, "{vault:?}");
        assert!(found.removable().all(|m| !m.path.contains("vault")));
        // A folder that is not there protects nothing: an error, not a silent run.
        opts.keeping.protect = vec![root.join("missing")];
        assert!(matches!(
            catalog.find(&opts),
            Err(DupesError::Folder { .. })
        ));
    }
}
