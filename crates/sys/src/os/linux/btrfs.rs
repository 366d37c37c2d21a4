//! Linux: what changed in a btrfs subvolume since a generation, from its tree.
//!
//! Every inode item records the transaction that last changed it (`transid`). Searching
//! the subvolume's tree (`BTRFS_IOC_TREE_SEARCH_V2`) with `min_transid` visits only the
//! tree blocks written since, as `btrfs subvolume find-new` does; of the inode items in
//! them, those whose own `transid` is newer are the inodes changed. A changed file names
//! its directories through its `INODE_REF`/`INODE_EXTREF` items (one per hard link's
//! directory); a changed directory is one whose entries were added, removed or renamed
//! (what the inodes alone cannot show: a deleted file has no inode left). Paths come from
//! `BTRFS_IOC_INO_LOOKUP`. Structures: the kernel's `include/uapi/linux/btrfs.h` and
//! `btrfs_tree.h` (<https://btrfs.readthedocs.io/en/latest/dev/On-disk-format.html>).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::volume::{BTRFS_FIRST_FREE_OBJECTID, BTRFS_IOC_INO_LOOKUP};
use crate::btrfs::BtrfsChanges;

/// `BTRFS_IOC_TREE_SEARCH_V2`: `_IOWR(0x94, 17, struct btrfs_ioctl_search_args_v2)` (the
/// 104-byte search key, then the buffer's size, then the buffer). Needs CAP_SYS_ADMIN.
const BTRFS_IOC_TREE_SEARCH_V2: libc::c_ulong = (3 << 30) | (112 << 16) | (0x94 << 8) | 17;
/// `BTRFS_LAST_FREE_OBJECTID` (-256): the highest inode number.
const BTRFS_LAST_FREE_OBJECTID: u64 = u64::MAX - 255;
const BTRFS_ROOT_TREE_OBJECTID: u64 = 1;
const BTRFS_ROOT_ITEM_KEY: u32 = 132;
const BTRFS_INODE_ITEM_KEY: u32 = 1;
const BTRFS_INODE_REF_KEY: u32 = 12;
const BTRFS_INODE_EXTREF_KEY: u32 = 13;
/// A file's data: a `struct btrfs_file_extent_item`, whose first field is the transaction
/// that wrote it.
const BTRFS_EXTENT_DATA_KEY: u32 = 108;
/// In the tree of tree roots: (parent subvolume, this, child subvolume), a
/// `struct btrfs_root_ref` (the directory it is in, a sequence, the name's length) and
/// the name.
const BTRFS_ROOT_REF_KEY: u32 = 156;

/// `struct btrfs_ioctl_search_key`: its size and the offsets of its fields.
const KEY_SIZE: usize = 104;
const KEY_NR_ITEMS: usize = 64;
/// `struct btrfs_ioctl_search_header`: transid, objectid, offset (u64), type, len (u32).
const HEADER_SIZE: usize = 32;
/// The search buffer: a tree block (at most 64 KiB) holds no item larger, so one always
/// fits; the kernel's limit is 16 MiB.
const SEARCH_BUF: usize = 64 << 10;
const SEARCH_BUF_MAX: usize = 16 << 20;

/// A tree key: (object id, type, offset), ordered as btrfs orders them.
type Key = (u64, u32, u64);

/// What changed in the btrfs subvolume holding the directory `path` since its generation
/// was `since` ([`BtrfsChanges`]): the directories to list again, and the generation to
/// ask from next time. `path` is resolved first (symbolic links followed): the
/// directories are under the path it resolves to.
///
/// Errors: `Unsupported` when `path` is not on btrfs; `InvalidInput` when `since` is newer
/// than the subvolume's generation (it was another subvolume's, or another filesystem's);
/// `PermissionDenied` without CAP_SYS_ADMIN (searching a tree needs it); `InvalidData`
/// for a search result that does not parse; a directory whose path within the subvolume
/// is longer than `BTRFS_IOC_INO_LOOKUP` can return (4,080 bytes) fails the call
/// (`ENAMETOOLONG`). Whatever the error, the caller walks instead.
///
/// What is in the tree is what is reported: inode updates btrfs still holds in memory
/// (its delayed inodes, written at the next commit) are in a transaction newer than the
/// returned generation, so the next call reports them.
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// let stored = 0; // the generation kept from last time (0: everything)
/// let changes = seekless_sys::btrfs_changes_since(std::path::Path::new("/mnt/photos"), stored)?;
/// for dir in &changes.dirs {
///     println!("list again: {}", dir.display());
/// }
/// let _keep_for_next_time = changes.generation;
/// # Ok(())
/// # }
/// ```
pub fn btrfs_changes_since(path: &Path, since: u64) -> io::Result<BtrfsChanges> {
    let named = |e: io::Error, what: &str| {
        io::Error::new(
            e.kind(),
            format!("{}: {what}: {}", path.display(), crate::describe_io(&e)),
        )
    };
    let path = std::fs::canonicalize(path).map_err(|e| named(e, "resolving"))?;
    let dir = crate::open_directory(&path).map_err(|e| named(e, "opening"))?;
    let fd = dir.as_raw_fd();
    if !is_btrfs(fd).map_err(|e| named(e, "statfs"))? {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{}: not on btrfs", path.display()),
        ));
    }
    // Committed first, then the generation: whatever changed before this call is at or
    // below it, and whatever changes from here on is newer.
    commit(fd).map_err(|e| named(e, "syncfs"))?;
    let (tree, generation) = subvol_tree_and_generation(fd).map_err(|e| search_error(e, &path))?;
    if since > generation {
        // A generation this subvolume never had: stored for another one (a snapshot, a
        // filesystem made again). Nothing found newer would be taken for nothing changed.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: generation {since} is newer than the subvolume's ({generation}): \
                 not this subvolume's",
                path.display()
            ),
        ));
    }
    let (top, top_rel) = visible_top(&dir, &path, tree).map_err(|e| named(e, "looking up"))?;

    let mut changed_dirs: BTreeSet<u64> = BTreeSet::new();
    let mut changed_files: Vec<u64> = Vec::new();
    // Files whose data was written since: an extent of theirs is newer.
    let mut written: BTreeSet<u64> = BTreeSet::new();
    // Each written file's names: (its directory's inode, the name in it).
    let mut written_names: Vec<(u64, Vec<u8>)> = Vec::new();
    let min = (BTRFS_FIRST_FREE_OBJECTID, BTRFS_INODE_ITEM_KEY, 0);
    let max = (BTRFS_LAST_FREE_OBJECTID, BTRFS_EXTENT_DATA_KEY, u64::MAX);
    search(fd, tree, min, max, since.saturating_add(1), &mut |item| {
        match item.kind {
            BTRFS_INODE_ITEM_KEY => {
                let inode = inode_item(item.data)?;
                if inode.transid > since {
                    if inode.is_dir {
                        changed_dirs.insert(item.objectid);
                    } else {
                        changed_files.push(item.objectid);
                    }
                }
            }
            BTRFS_EXTENT_DATA_KEY if extent_generation(item.data)? > since => {
                written.insert(item.objectid);
            }
            _ => {}
        }
        Ok(())
    })
    .map_err(|e| search_error(e, &path))?;

    // Every directory a changed file is in (a hard link is in several), from its refs,
    // whatever their age: a ref's block may be older than its inode item's.
    for ino in changed_files {
        let min = (ino, BTRFS_INODE_REF_KEY, 0);
        let max = (ino, BTRFS_INODE_EXTREF_KEY, u64::MAX);
        let data = written.contains(&ino);
        search(fd, tree, min, max, 0, &mut |item| {
            for (dir, name) in ref_names(item)? {
                changed_dirs.insert(dir);
                if data {
                    written_names.push((dir, name.to_vec()));
                }
            }
            Ok(())
        })
        .map_err(|e| search_error(e, &path))?;
    }

    let mut dirs = Vec::with_capacity(changed_dirs.len());
    // Each directory's path (absent: not reachable here).
    let mut dir_paths: std::collections::HashMap<u64, PathBuf> = std::collections::HashMap::new();
    for ino in changed_dirs {
        let rel = match ino_lookup(fd, tree, ino) {
            Ok(rel) => rel,
            // Removed since the search: its parent changed after `generation`, so the
            // next call reports that.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(named(e, "BTRFS_IOC_INO_LOOKUP")),
        };
        let path = match rel_under(&rel, &top_rel) {
            Some([]) => top.clone(),
            Some(under) => top.join(OsStr::from_bytes(under)),
            None => continue,
        };
        dir_paths.insert(ino, path.clone());
        dirs.push(path);
    }
    dirs.sort();
    dirs.dedup();
    let mut files: Vec<PathBuf> = written_names
        .into_iter()
        .filter_map(|(dir, name)| Some(dir_paths.get(&dir)?.join(OsStr::from_bytes(&name))))
        .collect();
    files.sort();
    files.dedup();
    let subvolumes =
        nested_subvolumes(fd, tree, &top, &top_rel).map_err(|e| named(e, "looking up"))?;
    Ok(BtrfsChanges {
        generation,
        dirs,
        files,
        subvolumes,
    })
}

/// The generation of the btrfs subvolume holding the directory `path` (see
/// [`BtrfsChanges::generation`]): what a later [`btrfs_changes_since`] is given. Errors
/// as that function's.
pub fn btrfs_generation(path: &Path) -> io::Result<u64> {
    let named = |e: io::Error, what: &str| {
        io::Error::new(
            e.kind(),
            format!("{}: {what}: {}", path.display(), crate::describe_io(&e)),
        )
    };
    let dir = crate::open_directory(path).map_err(|e| named(e, "opening"))?;
    if !is_btrfs(dir.as_raw_fd()).map_err(|e| named(e, "statfs"))? {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{}: not on btrfs", path.display()),
        ));
    }
    commit(dir.as_raw_fd()).map_err(|e| named(e, "syncfs"))?;
    subvol_tree_and_generation(dir.as_raw_fd())
        .map(|(_, generation)| generation)
        .map_err(|e| search_error(e, path))
}

/// Commits the filesystem open as `fd` (`syncfs`: its data written, its transaction
/// committed), so that the subvolume's generation read after it covers every change made
/// before. Without it, a change still in the open transaction (data not yet written back,
/// inodes btrfs still holds in memory) would be newer than the generation and reported
/// again next time: never missed, but read again.
fn commit(fd: i32) -> io::Result<()> {
    // SAFETY: `fd` is an open descriptor (its `File` is borrowed by the caller).
    if unsafe { libc::syncfs(fd) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The subvolumes nested in subvolume `tree` (its `ROOT_REF`s in the tree of tree roots),
/// those at or under `top` (whose path within the subvolume is `top_rel`), absolute.
fn nested_subvolumes(fd: i32, tree: u64, top: &Path, top_rel: &[u8]) -> io::Result<Vec<PathBuf>> {
    let mut refs: Vec<(u64, Vec<u8>)> = Vec::new();
    let min = (tree, BTRFS_ROOT_REF_KEY, 0);
    let max = (tree, BTRFS_ROOT_REF_KEY, u64::MAX);
    search(fd, BTRFS_ROOT_TREE_OBJECTID, min, max, 0, &mut |item| {
        if item.kind == BTRFS_ROOT_REF_KEY && item.objectid == tree {
            refs.push(root_ref(item.data)?);
        }
        Ok(())
    })?;
    let mut found = Vec::new();
    for (dir, name) in refs {
        let mut rel = match ino_lookup(fd, tree, dir) {
            Ok(rel) => rel,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(&name);
        match rel_under(&rel, top_rel) {
            Some([]) => found.push(top.to_path_buf()),
            Some(under) => found.push(top.join(OsStr::from_bytes(under))),
            None => {}
        }
    }
    found.sort();
    Ok(found)
}

/// A `struct btrfs_root_ref` (little-endian: the directory's inode, a sequence, the
/// name's length) and the name after it.
fn root_ref(data: &[u8]) -> io::Result<(u64, Vec<u8>)> {
    if data.len() < 18 {
        return Err(invalid("a root ref shorter than 18 bytes"));
    }
    let len = u16::from_le_bytes([data[16], data[17]]) as usize;
    let name = data
        .get(18..18 + len)
        .ok_or_else(|| invalid("a root ref's name past its item"))?;
    Ok((le_u64(data, 0), name.to_vec()))
}

/// A search's error, with what it means here.
fn search_error(e: io::Error, path: &Path) -> io::Error {
    let why = match e.kind() {
        io::ErrorKind::PermissionDenied => {
            "searching a btrfs tree needs CAP_SYS_ADMIN (root)".to_string()
        }
        _ => crate::describe_io(&e),
    };
    io::Error::new(
        e.kind(),
        format!("{}: searching the btrfs tree: {why}", path.display()),
    )
}

/// Whether the open file is on btrfs.
fn is_btrfs(fd: i32) -> io::Result<bool> {
    // SAFETY: statfs is plain integers, for which all zeroes is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open for the call (its `File` is borrowed by the caller) and `st` a
    // statfs buffer the kernel writes into.
    if unsafe { libc::fstatfs(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // f_type is an i64 here, 32 bits on some architectures (signed on some): the magic
    // number compared as the 32 bits it is.
    Ok((st.f_type as u64 & 0xffff_ffff) == libc::BTRFS_SUPER_MAGIC as u64)
}

/// The tree id of the subvolume holding `fd` (`BTRFS_IOC_INO_LOOKUP` of its root with tree
/// id 0, unprivileged), and its generation: that of its `ROOT_ITEM` in the tree of tree
/// roots, the one `btrfs subvolume show` prints. (`BTRFS_IOC_GET_SUBVOL_INFO` would need no
/// privilege, but failed with EINVAL for a subvolume other than the top level here, Linux
/// 6.18; the search needs CAP_SYS_ADMIN, as the rest does.)
fn subvol_tree_and_generation(fd: i32) -> io::Result<(u64, u64)> {
    let mut lookup = vec![0u8; 4096];
    lookup[8..16].copy_from_slice(&BTRFS_FIRST_FREE_OBJECTID.to_ne_bytes());
    // SAFETY: `lookup` is the 4,096-byte `struct btrfs_ioctl_ino_lookup_args` (tree id 0,
    // object id 256) the request reads and writes, live for the call.
    if unsafe { libc::ioctl(fd, BTRFS_IOC_INO_LOOKUP as _, lookup.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let tree = ne_u64(&lookup, 0);
    let mut generation = None;
    let min = (tree, BTRFS_ROOT_ITEM_KEY, 0);
    let max = (tree, BTRFS_ROOT_ITEM_KEY, u64::MAX);
    search(fd, BTRFS_ROOT_TREE_OBJECTID, min, max, 0, &mut |item| {
        if item.kind == BTRFS_ROOT_ITEM_KEY && item.objectid == tree {
            generation = Some(root_item_generation(item.data)?);
        }
        Ok(())
    })?;
    let generation =
        generation.ok_or_else(|| invalid("no root item for the subvolume in the tree of roots"))?;
    Ok((tree, generation))
}

/// The generation of a `struct btrfs_root_item` (little-endian: after its 160-byte inode
/// item).
fn root_item_generation(data: &[u8]) -> io::Result<u64> {
    if data.len() < 168 {
        return Err(invalid("a root item shorter than 168 bytes"));
    }
    Ok(le_u64(data, 160))
}

/// The highest directory at or above `path` (open as `dir`) reachable on the same mount
/// of the same subvolume, and its path within the subvolume: the subvolume's root, or
/// where a bind mount (or `subvol=` mount of a directory) shows only part of it.
fn visible_top(dir: &File, path: &Path, tree: u64) -> io::Result<(PathBuf, Vec<u8>)> {
    let meta = dir.metadata()?;
    let (dev, mount) = (meta.dev(), crate::mount_id(path)?);
    let (mut top, mut ino) = (path.to_path_buf(), meta.ino());
    while ino != BTRFS_FIRST_FREE_OBJECTID {
        let Some(parent) = top.parent() else { break };
        let m = crate::symlink_metadata(parent)?;
        if m.dev() != dev || crate::mount_id(parent)? != mount {
            break;
        }
        (top, ino) = (parent.to_path_buf(), m.ino());
    }
    Ok((top, ino_lookup(dir.as_raw_fd(), tree, ino)?))
}

/// The path of directory inode `ino` within subvolume `tree`, without a trailing slash
/// (empty for the subvolume's root).
fn ino_lookup(fd: i32, tree: u64, ino: u64) -> io::Result<Vec<u8>> {
    if ino == BTRFS_FIRST_FREE_OBJECTID {
        return Ok(Vec::new());
    }
    let mut args = vec![0u8; 4096];
    args[..8].copy_from_slice(&tree.to_ne_bytes());
    args[8..16].copy_from_slice(&ino.to_ne_bytes());
    // SAFETY: `args` is the 4,096-byte `struct btrfs_ioctl_ino_lookup_args` (tree id,
    // object id, name) the request reads and writes, live for the call.
    if unsafe { libc::ioctl(fd, BTRFS_IOC_INO_LOOKUP as _, args.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(lookup_name(&args[16..]))
}

/// The name field of `struct btrfs_ioctl_ino_lookup_args`: up to its NUL, without the
/// trailing slash the kernel puts after a directory.
fn lookup_name(field: &[u8]) -> Vec<u8> {
    let end = memchr::memchr(0, field).unwrap_or(field.len());
    let mut name = field[..end].to_vec();
    while name.last() == Some(&b'/') {
        name.pop();
    }
    name
}

/// `rel` (a path within the subvolume) relative to `top` (another), if it is at or
/// under it.
fn rel_under<'a>(rel: &'a [u8], top: &[u8]) -> Option<&'a [u8]> {
    if top.is_empty() {
        return Some(rel);
    }
    let rest = rel.strip_prefix(top)?;
    match rest {
        [] => Some(rest),
        [b'/', tail @ ..] => Some(tail),
        _ => None,
    }
}

/// Calls `each` with every item of tree `tree` whose key is in `[min, max]` and which
/// lies in a tree block written in transaction `min_transid` or later.
fn search(
    fd: i32,
    tree: u64,
    min: Key,
    max: Key,
    min_transid: u64,
    each: &mut dyn FnMut(&Item<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut buf_size = SEARCH_BUF;
    let mut args: Vec<u8> = Vec::new();
    let mut from = min;
    loop {
        args.clear();
        args.resize(KEY_SIZE + 8 + buf_size, 0);
        let fields: [(usize, u64); 7] = [
            (0, tree),
            (8, from.0),
            (16, max.0),
            (24, from.2),
            (32, max.2),
            (40, min_transid),
            (48, u64::MAX),
        ];
        for (at, v) in fields {
            args[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        }
        args[56..60].copy_from_slice(&from.1.to_ne_bytes());
        args[60..64].copy_from_slice(&max.1.to_ne_bytes());
        args[KEY_NR_ITEMS..KEY_NR_ITEMS + 4].copy_from_slice(&u32::MAX.to_ne_bytes());
        args[KEY_SIZE..KEY_SIZE + 8].copy_from_slice(&(buf_size as u64).to_ne_bytes());
        // SAFETY: `args` is a `struct btrfs_ioctl_search_args_v2` whose `buf_size` field
        // says how many bytes follow it, all allocated and live for the call; the kernel
        // writes at most that many.
        if unsafe { libc::ioctl(fd, BTRFS_IOC_TREE_SEARCH_V2 as _, args.as_mut_ptr()) } != 0 {
            let e = io::Error::last_os_error();
            // One item larger than the buffer: the kernel says the size it needs.
            let needed = usize::try_from(ne_u64(&args, KEY_SIZE)).unwrap_or(usize::MAX);
            if e.raw_os_error() == Some(libc::EOVERFLOW)
                && needed > buf_size
                && needed <= SEARCH_BUF_MAX
            {
                buf_size = needed;
                continue;
            }
            return Err(e);
        }
        let count = u32::from_ne_bytes(
            args[KEY_NR_ITEMS..KEY_NR_ITEMS + 4]
                .try_into()
                .expect("four bytes"),
        );
        if count == 0 {
            return Ok(());
        }
        let items = search_items(&args[KEY_SIZE + 8..], count)?;
        let mut last = from;
        for item in &items {
            each(item)?;
            last = (item.objectid, item.kind, item.offset);
        }
        match next_key(last, max.1) {
            Some(next) if next <= max && next > from => from = next,
            _ => return Ok(()),
        }
    }
}

/// The key to search from after `last`: the next one, or, past the highest type wanted
/// (`max_type`), the next object's first (its other items, data extents and attributes,
/// are not wanted; the kernel's range is one of whole keys, not of types).
fn next_key(last: Key, max_type: u32) -> Option<Key> {
    let (objectid, kind, offset) = last;
    if kind >= max_type {
        return Some((objectid.checked_add(1)?, 0, 0));
    }
    match offset.checked_add(1) {
        Some(offset) => Some((objectid, kind, offset)),
        None => Some((objectid, kind + 1, 0)),
    }
}

/// One item of a search's result: its key and its bytes.
#[derive(Debug, PartialEq, Eq)]
struct Item<'a> {
    objectid: u64,
    kind: u32,
    offset: u64,
    data: &'a [u8],
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("btrfs tree search: {what}"),
    )
}

/// The `count` items of a search's result buffer `buf`: each a `struct
/// btrfs_ioctl_search_header` (native byte order) followed by its item's bytes. A header
/// or item reaching past the buffer is an error, never a shorter list: a missed item
/// would be a change missed.
fn search_items(buf: &[u8], count: u32) -> io::Result<Vec<Item<'_>>> {
    let mut items = Vec::new();
    let mut at = 0usize;
    for _ in 0..count {
        let header = buf
            .get(at..at + HEADER_SIZE)
            .ok_or_else(|| invalid("a header past the buffer"))?;
        let len = u32::from_ne_bytes(header[28..32].try_into().expect("four bytes")) as usize;
        let start = at + HEADER_SIZE;
        let data = start
            .checked_add(len)
            .and_then(|end| buf.get(start..end))
            .ok_or_else(|| invalid("an item past the buffer"))?;
        items.push(Item {
            objectid: ne_u64(header, 8),
            kind: u32::from_ne_bytes(header[24..28].try_into().expect("four bytes")),
            offset: ne_u64(header, 16),
            data,
        });
        at = start + len;
    }
    Ok(items)
}

/// What is wanted of a `struct btrfs_inode_item` (little-endian, 160 bytes).
#[derive(Debug, PartialEq, Eq)]
struct Inode {
    transid: u64,
    is_dir: bool,
}

fn inode_item(data: &[u8]) -> io::Result<Inode> {
    if data.len() < 160 {
        return Err(invalid("an inode item shorter than 160 bytes"));
    }
    let transid = le_u64(data, 8);
    let mode = u32::from_le_bytes(data[52..56].try_into().expect("four bytes"));
    Ok(Inode {
        transid,
        is_dir: mode & libc::S_IFMT == libc::S_IFDIR,
    })
}

/// The transaction that wrote a `struct btrfs_file_extent_item` (its first field,
/// little-endian).
fn extent_generation(data: &[u8]) -> io::Result<u64> {
    if data.len() < 8 {
        return Err(invalid("a file extent item shorter than 8 bytes"));
    }
    Ok(le_u64(data, 0))
}

/// The names an `INODE_REF` or `INODE_EXTREF` item gives its inode: each the directory's
/// inode number and the name in it; nothing for another item.
fn ref_names<'a>(item: &Item<'a>) -> io::Result<Vec<(u64, &'a [u8])>> {
    match item.kind {
        // The directory is the key's offset; the item lists the names in it (index u64,
        // name_len u16, name), checked to fit.
        BTRFS_INODE_REF_KEY => {
            let mut names = Vec::new();
            let mut rest = item.data;
            while !rest.is_empty() {
                let head = rest.get(..10).ok_or_else(|| invalid("a short inode ref"))?;
                let len = usize::from(u16::from_le_bytes([head[8], head[9]]));
                let name = rest
                    .get(10..10 + len)
                    .ok_or_else(|| invalid("an inode ref's name past its item"))?;
                names.push((item.offset, name));
                rest = &rest[10 + len..];
            }
            Ok(names)
        }
        // (parent u64, index u64, name_len u16, name) repeated.
        BTRFS_INODE_EXTREF_KEY => {
            let mut names = Vec::new();
            let mut rest = item.data;
            while !rest.is_empty() {
                let head = rest
                    .get(..18)
                    .ok_or_else(|| invalid("a short inode extref"))?;
                let len = usize::from(u16::from_le_bytes([head[16], head[17]]));
                let name = rest
                    .get(18..18 + len)
                    .ok_or_else(|| invalid("an inode extref's name past its item"))?;
                names.push((le_u64(head, 0), name));
                rest = &rest[18 + len..];
            }
            Ok(names)
        }
        _ => Ok(Vec::new()),
    }
}

/// The native-endian u64 at `at` of `b` (which holds it: callers check the length).
fn ne_u64(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

/// The little-endian u64 at `at` of `b` (which holds it).
fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search result buffer holding `items` (key, bytes).
    fn buffer(items: &[(Key, Vec<u8>)]) -> Vec<u8> {
        let mut buf = Vec::new();
        for ((objectid, kind, offset), data) in items {
            buf.extend_from_slice(&7u64.to_ne_bytes());
            buf.extend_from_slice(&objectid.to_ne_bytes());
            buf.extend_from_slice(&offset.to_ne_bytes());
            buf.extend_from_slice(&kind.to_ne_bytes());
            buf.extend_from_slice(&(data.len() as u32).to_ne_bytes());
            buf.extend_from_slice(data);
        }
        buf
    }

    fn inode_bytes(transid: u64, mode: u32) -> Vec<u8> {
        let mut b = vec![0u8; 160];
        b[0..8].copy_from_slice(&3u64.to_le_bytes());
        b[8..16].copy_from_slice(&transid.to_le_bytes());
        b[52..56].copy_from_slice(&mode.to_le_bytes());
        b
    }

    fn ref_bytes(names: &[&[u8]]) -> Vec<u8> {
        let mut b = Vec::new();
        for (i, n) in names.iter().enumerate() {
            b.extend_from_slice(&(i as u64 + 2).to_le_bytes());
            b.extend_from_slice(&(n.len() as u16).to_le_bytes());
            b.extend_from_slice(n);
        }
        b
    }

    fn extref_bytes(refs: &[(u64, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        for (parent, n) in refs {
            b.extend_from_slice(&parent.to_le_bytes());
            b.extend_from_slice(&9u64.to_le_bytes());
            b.extend_from_slice(&(n.len() as u16).to_le_bytes());
            b.extend_from_slice(n);
        }
        b
    }

    #[test]
    fn a_search_result_parses_into_its_items_and_their_fields() {
        let buf = buffer(&[
            ((257, 1, 0), inode_bytes(12, 0o040755)),
            ((257, 12, 256), ref_bytes(&[b"photos"])),
            ((258, 1, 0), inode_bytes(11, 0o100644)),
            ((258, 12, 257), ref_bytes(&[b"a.jpg", b"b.jpg"])),
            (
                (258, 13, 99),
                extref_bytes(&[(300, b"c.jpg"), (301, b"d.jpg")]),
            ),
            ((258, 108, 0), vec![1, 2, 3]),
        ]);
        let items = search_items(&buf, 6).unwrap();
        assert_eq!(items.len(), 6);
        assert_eq!((items[0].objectid, items[0].kind), (257, 1));
        let dir = inode_item(items[0].data).unwrap();
        assert_eq!(
            dir,
            Inode {
                transid: 12,
                is_dir: true
            }
        );
        assert!(!inode_item(items[2].data).unwrap().is_dir);
        let parents = |i: usize| -> Vec<u64> {
            ref_names(&items[i])
                .unwrap()
                .iter()
                .map(|(p, _)| *p)
                .collect()
        };
        assert_eq!(parents(1), [256]);
        // Two hard links in one directory: both names.
        assert_eq!(
            ref_names(&items[3]).unwrap(),
            [(257, &b"a.jpg"[..]), (257, &b"b.jpg"[..])]
        );
        assert_eq!(
            ref_names(&items[4]).unwrap(),
            [(300, &b"c.jpg"[..]), (301, &b"d.jpg"[..])]
        );
        assert!(ref_names(&items[5]).unwrap().is_empty());
        let mut root = vec![0u8; 439];
        root[160..168].copy_from_slice(&42u64.to_le_bytes());
        assert_eq!(root_item_generation(&root).unwrap(), 42);
        assert!(root_item_generation(&root[..167]).is_err());
        // Fewer items asked for than the buffer holds: only those.
        assert_eq!(search_items(&buf, 2).unwrap().len(), 2);
        assert!(search_items(&[], 0).unwrap().is_empty());
    }

    #[test]
    fn hostile_search_results_are_errors_never_panics_nor_shorter_lists() {
        let buf = buffer(&[
            ((257, 1, 0), inode_bytes(12, 0o040755)),
            ((258, 12, 257), ref_bytes(&[b"a.jpg"])),
            ((258, 13, 1), extref_bytes(&[(300, b"c.jpg")])),
        ]);
        // Every cut of the buffer: a count that no longer fits is an error.
        for cut in 0..buf.len() {
            let got = search_items(&buf[..cut], 3);
            assert_eq!(
                got.map(|i| i.len()).map_err(|e| e.kind()),
                Err(io::ErrorKind::InvalidData),
                "cut at {cut}"
            );
        }
        // More items claimed than there are.
        assert!(search_items(&buf, 4).is_err());
        // A length that overflows when added.
        let mut huge = buf.clone();
        huge[28..32].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(search_items(&huge, 1).is_err());
        // Every byte flipped in turn, every cut of every item: any answer but a panic.
        for at in 0..buf.len() {
            let mut b = buf.clone();
            b[at] ^= 0xff;
            if let Ok(items) = search_items(&b, 3) {
                for item in &items {
                    let _ = inode_item(item.data);
                    let _ = ref_names(item);
                }
            }
        }
        for cut in 0..160 {
            assert!(inode_item(&inode_bytes(1, 0o100644)[..cut]).is_err());
        }
        let r = ref_bytes(&[b"a.jpg", b"bb"]);
        for cut in 1..r.len() {
            let item = Item {
                objectid: 258,
                kind: BTRFS_INODE_REF_KEY,
                offset: 257,
                data: &r[..cut],
            };
            // A cut between two whole names is a shorter valid item; any other is not.
            if cut != 15 {
                assert!(ref_names(&item).is_err(), "ref cut at {cut}");
            }
        }
        let x = extref_bytes(&[(300, b"c.jpg"), (301, b"d")]);
        for cut in 1..x.len() {
            let item = Item {
                objectid: 258,
                kind: BTRFS_INODE_EXTREF_KEY,
                offset: 1,
                data: &x[..cut],
            };
            // A cut between two whole extrefs is a shorter valid item; any other is not.
            if cut != 23 {
                assert!(ref_names(&item).is_err(), "extref cut at {cut}");
            }
        }
    }

    #[test]
    fn the_search_resumes_after_the_last_key_and_skips_unwanted_items_of_an_inode() {
        assert_eq!(next_key((257, 1, 0), 13), Some((257, 1, 1)));
        assert_eq!(next_key((257, 1, u64::MAX), 13), Some((257, 2, 0)));
        assert_eq!(next_key((257, 108, 4096), 13), Some((258, 0, 0)));
        assert_eq!(next_key((257, 13, 5), 13), Some((258, 0, 0)));
        assert_eq!(next_key((u64::MAX, 200, 0), 13), None);
    }

    #[test]
    fn lookup_names_lose_their_trailing_slash_and_paths_are_taken_under_the_visible_top() {
        let mut field = b"a/b/c/".to_vec();
        field.resize(40, 0);
        assert_eq!(lookup_name(&field), b"a/b/c");
        assert_eq!(lookup_name(&[0; 8]), b"");
        assert_eq!(lookup_name(b"no-nul"), b"no-nul");
        assert_eq!(rel_under(b"a/b", b""), Some(&b"a/b"[..]));
        assert_eq!(rel_under(b"a/b/c", b"a/b"), Some(&b"c"[..]));
        assert_eq!(rel_under(b"a/b", b"a/b"), Some(&b""[..]));
        assert_eq!(rel_under(b"a/bc", b"a/b"), None);
        assert_eq!(rel_under(b"x", b"a/b"), None);
    }

    #[test]
    fn a_directory_not_on_btrfs_is_unsupported() {
        let t = tempfile::tempdir().unwrap();
        if is_btrfs(File::open(t.path()).unwrap().as_raw_fd()).unwrap() {
            return;
        }
        let e = btrfs_changes_since(t.path(), 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{e}");
    }
}
