//! `seekless copy` against independent tools on real filesystems (ext4, xfs and btrfs made
//! on loop devices): every copy is compared entry by entry with its source and with what
//! `cp -a` makes of the same tree (names, types, modes, owners, access and modification
//! times to the nanosecond, symlink targets, device numbers, hard-link identity by inode
//! number, extended attributes read by `getfattr`, sparse files' allocation by `du`), its
//! content with `diff -r`; `rsync` says what is left to do and where things go,
//! `b3sum -c` / `sha256sum -c` check manifests and `filefrag` shows shared blocks.
//!
//! Runs that must be caught in the middle (a `kill -9`, a copy corrupted on its disk
//! before `--verify` reads it back) are frozen with SIGSTOP between short slices of
//! running, as in `index`, so the moment is chosen by what the destination already holds,
//! not by a race against the clock. Files that change while they are copied are made
//! deterministically by the debug build's fault injection (`SEEKLESS_INJECT_FAULTS=1`).
//!
//! Sources are remounted `noatime`, so that reading them (seekless, `cp`, `diff`) leaves
//! their access times as the test set them, and those can be compared too.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CString, OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::common::*;

/// The tools every root test here uses besides seekless.
const TOOLS: [&str; 6] = ["getfattr", "setfattr", "diff", "cp", "mknod", "filefrag"];

/// Root, and the tools: false after a [`skip`].
pub(crate) fn ready(test: &str, more: &[&str]) -> bool {
    require_root(test)
        && TOOLS
            .iter()
            .chain(more)
            .all(|tool| require_tool(test, tool))
}

// ---------------------------------------------------------------------------------------
// Running seekless.

/// `seekless copy`, the fault hooks off whatever the environment says.
pub(crate) fn copy_cmd() -> Command {
    let mut cmd = seekless();
    cmd.arg("copy").env_remove("SEEKLESS_INJECT_FAULTS");
    cmd
}

/// `seekless copy ARGS…`, bounded in time.
pub(crate) fn copy(args: &[&OsStr]) -> Output {
    output_within(copy_cmd().args(args), RUN_LIMIT)
}

/// The run exited with `code`, printed nothing on stdout and did not panic.
pub(crate) fn assert_exit(o: &Output, code: i32) {
    crate::common::assert_exit(o, code);
    assert!(
        o.stdout.is_empty(),
        "copy prints nothing on stdout, printed {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// The counts line (`seekless: copy: N copied, N updated, …`), the only one.
pub(crate) fn count_line(err: &str) -> String {
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("seekless: copy: ") && l.contains(" copied, "))
        .collect();
    assert_eq!(lines.len(), 1, "one line of counts expected in:\n{err}");
    lines[0].to_string()
}

/// What the counts line says: copied, updated, skipped, deleted, failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    pub copied: u64,
    pub updated: u64,
    pub skipped: u64,
    pub deleted: u64,
    pub failed: u64,
}

pub(crate) fn counts_of(
    copied: u64,
    updated: u64,
    skipped: u64,
    deleted: u64,
    failed: u64,
) -> Counts {
    Counts {
        copied,
        updated,
        skipped,
        deleted,
        failed,
    }
}

pub(crate) fn counts_in(err: &str) -> Counts {
    let line = count_line(err);
    let head = line["seekless: copy: ".len()..].split(';').next().unwrap();
    let mut n = BTreeMap::new();
    for part in head.split(", ") {
        let (num, name) = part
            .split_once(' ')
            .unwrap_or_else(|| panic!("{part:?} in {line:?}"));
        let num: u64 = num
            .parse()
            .unwrap_or_else(|e| panic!("{part:?} in {line:?}: {e}"));
        n.insert(name.to_string(), num);
    }
    let get = |k: &str| *n.get(k).unwrap_or_else(|| panic!("no {k} in {line:?}"));
    counts_of(
        get("copied"),
        get("updated"),
        get("skipped"),
        get("deleted"),
        get("failed"),
    )
}

pub(crate) fn counts(o: &Output) -> Counts {
    counts_in(&stderr(o))
}

/// The `files of device MAJ:MIN …` lines of the summary, without their prefix.
fn methods(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter_map(|l| l.strip_prefix("seekless: copy: files of device "))
        .map(String::from)
        .collect()
}

/// `MAJ:MIN` of the filesystem `path` is on, decoded as glibc's `major`/`minor` do.
fn device_of(path: &Path) -> String {
    let dev = fs::metadata(path).unwrap().dev();
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    format!("{major}:{minor}")
}

const CLONED: &str = "cloned (FICLONE: blocks shared)";
const IN_KERNEL: &str = "copied in the kernel (copy_file_range)";
const READ_WRITTEN: &str = "read and written";

// ---------------------------------------------------------------------------------------
// Filesystems and trees.

fn size_for(fs: &str) -> u64 {
    match fs {
        "xfs" => 300,
        _ => 256,
    }
}

/// Remounts `noatime`: reading leaves access times alone, so they can be compared.
pub(crate) fn noatime(fs: &LoopFs) {
    run(Command::new("mount")
        .args(["-o", "remount,noatime"])
        .arg(&fs.mnt));
}

pub(crate) fn at(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(OsStr::from_bytes(rel))
    }
}

pub(crate) fn show(rel: &[u8]) -> String {
    format!("\"{}\"", rel.escape_ascii())
}

/// Sets access and modification times, not following a symlink.
fn set_times(path: &Path, atime: (i64, i64), mtime: (i64, i64)) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    let ts = [
        libc::timespec {
            tv_sec: atime.0,
            tv_nsec: atime.1,
        },
        libc::timespec {
            tv_sec: mtime.0,
            tv_nsec: mtime.1,
        },
    ];
    // SAFETY: a NUL-terminated path and an array of two timespecs, as utimensat(2) takes.
    let rc = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            ts.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(
        rc,
        0,
        "utimensat {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

pub(crate) fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

pub(crate) fn setfattr(path: &Path, name: &str, value: &str) {
    run(Command::new("setfattr")
        .args(["-h", "-n", name, "-v", value])
        .arg(path));
}

/// Every entry under `root` (itself included, as ""), by relative path, not following
/// symlinks, sorted by path.
pub(crate) fn entries(root: &Path) -> Vec<(Vec<u8>, PathBuf, fs::Metadata)> {
    let mut out = Vec::new();
    let mut stack = vec![(Vec::new(), root.to_path_buf())];
    while let Some((rel, path)) = stack.pop() {
        let meta =
            fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if meta.is_dir() {
            for e in fs::read_dir(&path).unwrap() {
                let e = e.unwrap();
                let mut r = rel.clone();
                if !r.is_empty() {
                    r.push(b'/');
                }
                r.extend_from_slice(e.file_name().as_bytes());
                stack.push((r, e.path()));
            }
        }
        out.push((rel, path, meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether the last part of `rel` is one of seekless's temporaries
/// (`.NAME.seekless-tmp-PID-N`).
fn is_temp(rel: &[u8]) -> bool {
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    name.starts_with(b".") && name.windows(14).any(|w| w == b".seekless-tmp-")
}

pub(crate) fn temporaries(root: &Path) -> Vec<Vec<u8>> {
    entries(root)
        .into_iter()
        .map(|(rel, _, _)| rel)
        .filter(|rel| is_temp(rel))
        .collect()
}

/// Distinct regular files (inodes) under `root`: what seekless plans once each.
fn distinct_files(root: &Path) -> u64 {
    entries(root)
        .into_iter()
        .filter(|(_, _, m)| m.is_file())
        .map(|(_, _, m)| m.ino())
        .collect::<BTreeSet<_>>()
        .len() as u64
}

/// The extended attributes `getfattr` reads (all namespaces, values in hex).
pub(crate) fn xattrs_of(path: &Path) -> Vec<(String, String)> {
    let out = run(Command::new("getfattr")
        .args(["-h", "-d", "-m", "-", "-e", "hex", "--absolute-names"])
        .arg(path));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap_or((l, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// One entry as the comparisons see it. Directories' sizes are left out (they are the
/// filesystem's business), and so is ctime (no copier can set it).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Node {
    kind: &'static str,
    mode: u32,
    owner: (u32, u32),
    size: Option<u64>,
    /// Regular files: the link count (hard links reach nothing outside the tree).
    nlink: Option<u64>,
    mtime: (i64, i64),
    atime: (i64, i64),
    target: Option<Vec<u8>>,
    rdev: Option<u64>,
    xattrs: Vec<(String, String)>,
}

/// A tree as the comparisons see it: its entries, and which names are one file.
#[derive(Debug)]
pub(crate) struct Snapshot {
    nodes: BTreeMap<Vec<u8>, Node>,
    hard_links: BTreeSet<BTreeSet<Vec<u8>>>,
}

pub(crate) fn kind_of(ft: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_file() {
        "file"
    } else if ft.is_dir() {
        "dir"
    } else if ft.is_symlink() {
        "symlink"
    } else if ft.is_fifo() {
        "fifo"
    } else if ft.is_char_device() {
        "char"
    } else if ft.is_block_device() {
        "block"
    } else {
        "socket"
    }
}

pub(crate) fn snapshot(root: &Path, with_xattrs: bool) -> Snapshot {
    let mut nodes = BTreeMap::new();
    let mut groups: BTreeMap<u64, BTreeSet<Vec<u8>>> = BTreeMap::new();
    for (rel, path, m) in entries(root) {
        let kind = kind_of(m.file_type());
        let node = Node {
            kind,
            mode: m.mode() & 0o7777,
            owner: (m.uid(), m.gid()),
            size: matches!(kind, "file" | "symlink").then(|| m.size()),
            nlink: (kind == "file").then(|| m.nlink()),
            mtime: (m.mtime(), m.mtime_nsec()),
            atime: (m.atime(), m.atime_nsec()),
            target: (kind == "symlink")
                .then(|| fs::read_link(&path).unwrap().into_os_string().into_vec()),
            rdev: matches!(kind, "char" | "block").then(|| m.rdev()),
            xattrs: if with_xattrs {
                xattrs_of(&path)
            } else {
                Vec::new()
            },
        };
        if kind == "file" && m.nlink() > 1 {
            groups.entry(m.ino()).or_default().insert(rel.clone());
        }
        nodes.insert(rel, node);
    }
    Snapshot {
        nodes,
        hard_links: groups.into_values().collect(),
    }
}

/// The two trees have the same names, and each name the same node; the same names are
/// hard links to one another.
pub(crate) fn assert_same_tree(got: &Snapshot, want: &Snapshot, what: &str) {
    let mut problems = Vec::new();
    let names: BTreeSet<&Vec<u8>> = got.nodes.keys().chain(want.nodes.keys()).collect();
    for name in names {
        match (got.nodes.get(name), want.nodes.get(name)) {
            (Some(g), Some(w)) if g == w => {}
            (g, w) => problems.push(format!("{}:\n   got  {g:?}\n   want {w:?}", show(name))),
        }
    }
    if got.hard_links != want.hard_links {
        let fmt = |s: &BTreeSet<BTreeSet<Vec<u8>>>| {
            s.iter()
                .map(|g| g.iter().map(|n| show(n)).collect::<Vec<_>>().join(" = "))
                .collect::<Vec<_>>()
        };
        problems.push(format!(
            "hard links: got {:?}, want {:?}",
            fmt(&got.hard_links),
            fmt(&want.hard_links)
        ));
    }
    assert!(
        problems.is_empty(),
        "{what}: {} differences:\n{}",
        problems.len(),
        problems
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `diff -r` finds no difference (symlinks compared as links; FIFOs and device nodes,
/// which diff cannot compare, are named `special-*` and left to the snapshots).
fn assert_diff_clean(a: &Path, b: &Path) {
    let o = Command::new("diff")
        .args(["-r", "--no-dereference", "-x", "special-*"])
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "diff -r {} {}: {}\n{}{}",
        a.display(),
        b.display(),
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Bytes allocated to a file, as `du` says.
fn du(path: &Path) -> u64 {
    let out = run(Command::new("du").arg("--block-size=1").arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// What `rsync -n -i` (itemized, dry run) would still do to make `dest` like `src`:
/// its lines, `src` and `dest` given as directories whose contents are compared.
fn rsync_would(src: &Path, dest: &Path, flags: &[&str]) -> Vec<String> {
    let mut s = src.as_os_str().to_os_string();
    s.push("/");
    let mut d = dest.as_os_str().to_os_string();
    d.push("/");
    let out = run(Command::new("rsync")
        .args(["-n", "-i", "--numeric-ids"])
        .args(flags)
        .arg(s)
        .arg(d));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}

/// Writes `data` at `rel` under `root`, making its directory.
pub(crate) fn put(root: &Path, rel: &[u8], data: &[u8]) {
    let path = at(root, rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, data).unwrap();
}

/// A tree with every kind of thing `cp -a` keeps: nested and empty directories, files
/// empty to a few MiB, a sparse file, hard links across directories, symlinks (relative,
/// absolute, dangling, to a directory, with a target that is not UTF-8), a FIFO, a
/// character and a block device, set-id and sticky bits, other owners (a symlink's too),
/// extended attributes (user and trusted, on a directory, a symlink and a FIFO), times to
/// the nanosecond (one before 1970), and names with a newline, a backslash and bytes that
/// are not UTF-8.
fn build_tree(root: &Path, seed: u64) {
    use std::os::unix::fs::{lchown, symlink};
    let mut rng = Rng::new(seed);
    for d in [
        &b"deep/a/b/c"[..],
        b"empty-dir",
        b"sticky",
        b"shared",
        b"dir-\xff\xfe",
        b"links",
    ] {
        fs::create_dir_all(at(root, d)).unwrap();
    }
    put(root, b"plain.txt", b"plain text\n");
    put(root, b"private.key", &rng.bytes(3000));
    put(root, b"setuid-tool", &rng.bytes(200 << 10));
    put(root, b"big.bin", &rng.bytes((3 << 20) + 17));
    put(root, b"empty", b"");
    put(root, b"deep/a/b/c/leaf.txt", b"leaf\n");
    put(root, b"shared/inside.dat", &rng.bytes(70_000));
    put(root, b"new\nline", b"a name with a newline\n");
    put(root, b"back\\slash", b"a name with a backslash\n");
    put(root, b"caf\xe9", b"latin-1, not UTF-8\n");
    put(root, b"dir-\xff\xfe/inner\nname", &rng.bytes(5000));
    put(root, b"old-times", b"before 1970\n");
    let sparse = fs::File::create(at(root, b"sparse.img")).unwrap();
    sparse.set_len(16 << 20).unwrap();
    sparse.write_all_at(&rng.bytes(64 << 10), 1 << 20).unwrap();
    sparse.write_all_at(&rng.bytes(64 << 10), 9 << 20).unwrap();
    sparse.sync_all().unwrap();
    drop(sparse);

    for (first, other) in [
        (&b"plain.txt"[..], &b"links/hard-plain"[..]),
        (b"plain.txt", b"deep/a/hard-plain2"),
        (b"big.bin", b"big-again.bin"),
    ] {
        fs::hard_link(at(root, first), at(root, other)).unwrap();
    }
    for (name, target) in [
        (&b"links/rel"[..], &b"../plain.txt"[..]),
        (b"links/abs", b"/etc/hostname"),
        (b"links/dangling", b"nowhere/at all"),
        (b"links/dirlink", b"../deep"),
        (b"links/odd-target", b"odd\nname\xff"),
    ] {
        symlink(OsStr::from_bytes(target), at(root, name)).unwrap();
    }
    run(Command::new("mknod")
        .arg(at(root, b"special-fifo"))
        .arg("p"));
    run(Command::new("mknod")
        .arg(at(root, b"special-chr"))
        .args(["c", "1", "3"]));
    run(Command::new("mknod")
        .arg(at(root, b"special-blk"))
        .args(["b", "7", "200"]));

    // Owners first: chown clears set-id bits.
    for (rel, uid, gid) in [
        (&b"private.key"[..], 1234, 5678),
        (b"links/rel", 4321, 8765),
        (b"deep", 1000, 1000),
        (b"special-fifo", 42, 42),
        (b"caf\xe9", 65534, 65534),
    ] {
        lchown(at(root, rel), Some(uid), Some(gid)).unwrap();
    }
    for (rel, mode) in [
        (&b"private.key"[..], 0o600),
        (b"setuid-tool", 0o4755),
        (b"shared", 0o2775),
        (b"sticky", 0o1777),
        (b"empty-dir", 0o700),
        (b"special-fifo", 0o640),
        (b"big.bin", 0o444),
        (b"deep/a/b/c/leaf.txt", 0o640),
        (b"dir-\xff\xfe", 0o750),
    ] {
        set_mode(&at(root, rel), mode);
    }
    for (rel, name, value) in [
        (&b""[..], "user.root", "top"),
        (b"plain.txt", "user.comment", "hello"),
        (b"plain.txt", "user.binary", "0x00ff10"),
        (b"deep", "user.dir", "1"),
        (b"private.key", "trusted.seekless", "yes"),
        (b"links/rel", "trusted.link", "1"),
        (b"special-fifo", "trusted.fifo", "1"),
        (b"caf\xe9", "user.name", "ok"),
    ] {
        setfattr(&at(root, rel), name, value);
    }
    // Times last (creating entries changes their directories' times): each its own, to
    // the nanosecond; access times three days after modification.
    for (i, (rel, path, _)) in entries(root).into_iter().enumerate() {
        let i = i as i64;
        let mtime = if rel == b"old-times" {
            (-315_619_200, 250_000_000)
        } else {
            (1_400_000_000 + i * 1013, (i * 123_456_789) % 1_000_000_000)
        };
        let atime = (
            mtime.0 + 3 * 86_400,
            (mtime.1 + 500_000_001) % 1_000_000_000,
        );
        set_times(&path, atime, mtime);
    }
}

/// A flat corpus: `n` files of `min..max` bytes, `NAME-{i:05}.bin` under `dir`, written
/// in order (so on a fresh ext4 they lie in that order). Returns their names.
pub(crate) fn flat_corpus(dir: &Path, n: usize, min: usize, max: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    fs::create_dir_all(dir).unwrap();
    (0..n)
        .map(|i| {
            let name = format!("f-{i:05}.bin").into_bytes();
            let size = min + rng.below((max - min + 1) as u64) as usize;
            put(dir, &name, &rng.bytes(size));
            name
        })
        .collect()
}

/// Bytes as the counts line prints them (indicatif's `HumanBytes`).
fn indicatif_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.2} {unit}")
}

pub(crate) fn sync() {
    run(&mut Command::new("sync"));
}

pub(crate) fn arg(p: &Path) -> &OsStr {
    p.as_os_str()
}

/// `path` with a trailing slash (a directory's contents, as rsync means it).
pub(crate) fn slash(p: &Path) -> OsString {
    let mut s = p.as_os_str().to_os_string();
    s.push("/");
    s
}

// ---------------------------------------------------------------------------------------
// Freezing a run at a chosen moment (as in `index`).

/// Starts `seekless copy ARGS…` (the fault hooks off), stderr kept for [`finish`].
pub(crate) fn start_copy(args: &[&OsStr]) -> Running {
    let child = copy_cmd()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Running(child)
}

/// How many of `names` are in `dir` under their final names.
pub(crate) fn in_place(dir: &Path, names: &[Vec<u8>]) -> usize {
    names
        .iter()
        .filter(|n| fs::symlink_metadata(at(dir, n)).is_ok())
        .count()
}

// ---------------------------------------------------------------------------------------
// 1. The copy is the source, as cp -a would make it.

/// Copies the tree of [`build_tree`] from a `from` filesystem to a `to` one and compares
/// the copy with the source and with `cp -a`'s copy of it, entry by entry; content with
/// `diff -r`; and asks `rsync -aHX --checksum` what is left to do (nothing).
fn copy_matches_source_and_cp_a(test: &str, from: &str, to: &str) {
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, from, size_for(from));
    let d = LoopFs::new(test, to, size_for(to));
    let src = s.path("tree");
    build_tree(&src, 1);
    noatime(&s);
    noatime(&d);
    let want = snapshot(&src, true);

    let o = copy(&[os("--summary"), arg(&src), arg(&d.path("by-seekless"))]);
    assert_exit(&o, 0);
    assert_eq!(
        counts(&o),
        counts_of(distinct_files(&src), 0, 0, 0, 0),
        "{}",
        stderr(&o)
    );
    let ours = d.path("by-seekless/tree");
    let got = snapshot(&ours, true);
    assert_same_tree(
        &got,
        &want,
        &format!("{from} → {to}: the copy vs its source"),
    );

    fs::create_dir(d.path("by-cp")).unwrap();
    run(Command::new("cp").arg("-a").arg(&src).arg(d.path("by-cp")));
    let theirs = d.path("by-cp/tree");
    assert_same_tree(
        &got,
        &snapshot(&theirs, true),
        &format!("{from} → {to}: seekless copy vs cp -a"),
    );

    assert_diff_clean(&src, &ours);
    let left = rsync_would(&src, &ours, &["-aHX", "--checksum"]);
    assert!(
        left.is_empty(),
        "rsync -aHX --checksum would still change: {left:#?}"
    );

    // Holes stay holes: no more allocated than cp -a's copy (which keeps them too), and
    // far less than the file's size.
    let (ours_du, theirs_du) = (du(&ours.join("sparse.img")), du(&theirs.join("sparse.img")));
    assert!(
        ours_du <= theirs_du + (64 << 10) && ours_du < 2 << 20,
        "sparse.img: {ours_du} bytes allocated in the copy, {theirs_du} in cp -a's \
         (128 KiB of data in 16 MiB)"
    );
    // The odd names, byte for byte.
    for name in [
        &b"new\nline"[..],
        b"back\\slash",
        b"caf\xe9",
        b"dir-\xff\xfe/inner\nname",
    ] {
        assert_eq!(
            fs::read(at(&ours, name)).ok(),
            fs::read(at(&src, name)).ok(),
            "{}",
            show(name)
        );
    }
}

#[test]
fn a_tree_copied_from_ext4_to_xfs_is_its_source_as_cp_a_copies_it() {
    copy_matches_source_and_cp_a(test_name!(), "ext4", "xfs");
}

#[test]
fn a_tree_copied_from_xfs_to_btrfs_is_its_source_as_cp_a_copies_it() {
    copy_matches_source_and_cp_a(test_name!(), "xfs", "btrfs");
}

#[test]
fn a_tree_copied_from_btrfs_to_ext4_is_its_source_as_cp_a_copies_it() {
    copy_matches_source_and_cp_a(test_name!(), "btrfs", "ext4");
}

// ---------------------------------------------------------------------------------------
// 2. Incremental runs.

/// (inode, ctime) of every entry but directories (whose times each run sets again).
fn stamps(root: &Path) -> BTreeMap<Vec<u8>, (u64, i64, i64)> {
    entries(root)
        .into_iter()
        .filter(|(_, _, m)| !m.is_dir())
        .map(|(rel, _, m)| (rel, (m.ino(), m.ctime(), m.ctime_nsec())))
        .collect()
}

#[test]
fn a_second_run_copies_nothing_and_a_third_only_what_rsync_would() {
    let test = test_name!();
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "ext4", 256);
    let src = s.path("tree");
    build_tree(&src, 2);
    noatime(&s);
    noatime(&d);
    let dest = d.path("backup");
    assert_exit(&copy(&[arg(&src), arg(&dest)]), 0);
    let ours = dest.join("tree");
    let files = distinct_files(&src);
    assert_eq!(
        rsync_would(&src, &ours, &["-aHX"]),
        Vec::<String>::new(),
        "rsync -aHX sees nothing to do after the first run"
    );
    let before = stamps(&ours);

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(0, 0, files, 0, 0), "{}", stderr(&o));
    let line = count_line(&stderr(&o));
    assert!(
        line.contains("0 B written") && line.contains("0 links and special files, 0 hard links"),
        "nothing written, no link or node made again: {line}"
    );
    assert_eq!(
        stamps(&ours),
        before,
        "no file, link or node of the copy was touched (inode and ctime)"
    );

    // One file rewritten (same size), one only touched, one added.
    let rewritten = src.join("shared/inside.dat");
    let len = fs::metadata(&rewritten).unwrap().len() as usize;
    fs::write(&rewritten, Rng::new(99).bytes(len)).unwrap();
    let touched = src.join("deep/a/b/c/leaf.txt");
    let m = fs::metadata(&touched).unwrap();
    set_times(
        &touched,
        (m.atime(), m.atime_nsec()),
        (m.mtime() + 1, m.mtime_nsec()),
    );
    put(&src, b"deep/added.txt", b"new\n");
    let mut rsync_files: Vec<String> = rsync_would(&src, &ours, &["-aHX"])
        .into_iter()
        .filter(|l| l.starts_with(">f"))
        .collect();
    rsync_files.sort();
    assert_eq!(
        rsync_files.len(),
        3,
        "rsync's view of what changed: {rsync_files:?}"
    );
    assert_eq!(
        rsync_files
            .iter()
            .filter(|l| l.starts_with(">f+++"))
            .count(),
        1,
        "{rsync_files:?}"
    );

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(
        counts(&o),
        counts_of(1, 2, files - 2, 0, 0),
        "one new and two changed files, as rsync says: {rsync_files:?}\n{}",
        stderr(&o)
    );
    assert_same_tree(
        &snapshot(&ours, true),
        &snapshot(&src, true),
        "after the third run",
    );
    assert_eq!(
        rsync_would(&src, &ours, &["-aHX", "--checksum"]),
        Vec::<String>::new()
    );
}

#[test]
fn a_rerun_brings_over_mode_owner_and_xattr_changes_of_unchanged_files_as_rsync_does() {
    let test = test_name!();
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "xfs", 300);
    let src = s.path("src");
    put(&src, b"f1", b"one");
    put(&src, b"f2", b"two");
    put(&src, b"sub/f3", b"three");
    std::os::unix::fs::symlink("f1", src.join("link")).unwrap();
    run(Command::new("mknod").arg(src.join("special-fifo")).arg("p"));
    noatime(&s);
    noatime(&d);
    let dest = d.path("copy");
    assert_exit(&copy(&[arg(&src), arg(&dest)]), 0);
    let root = dest.join("src");

    // Metadata alone changes: content, size and mtime stay.
    set_mode(&src.join("f1"), 0o600);
    std::os::unix::fs::lchown(src.join("f2"), Some(1234), Some(5678)).unwrap();
    setfattr(&src.join("sub/f3"), "user.added", "later");
    set_mode(&src.join("special-fifo"), 0o600);
    std::os::unix::fs::lchown(src.join("link"), Some(42), Some(42)).unwrap();
    let todo = rsync_would(&src, &root, &["-aHX"]);
    assert!(
        todo.len() >= 5,
        "rsync -aHX sees the five changes: {todo:?}"
    );

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    let c = counts(&o);
    assert_eq!((c.copied, c.failed), (0, 0), "{}", stderr(&o));
    assert_same_tree(
        &snapshot(&root, true),
        &snapshot(&src, true),
        "after a rerun that follows chmod, chown and setfattr on the source",
    );
    assert_eq!(
        rsync_would(&src, &root, &["-aHX"]),
        Vec::<String>::new(),
        "rsync -aHX finds nothing left to do"
    );
}

// ---------------------------------------------------------------------------------------
// 3. Where things go, and what is refused.

/// Names, kinds, sizes and mtimes under `root` (itself too unless a directory, whose
/// times are its parent's business when it existed before), for comparing layouts.
fn layout(root: &Path) -> Vec<(String, &'static str, u64, i64)> {
    entries(root)
        .into_iter()
        .filter(|(rel, _, m)| !rel.is_empty() || !m.is_dir())
        .map(|(rel, _, m)| {
            let size = if m.is_dir() { 0 } else { m.size() };
            (show(&rel), kind_of(m.file_type()), size, m.mtime())
        })
        .collect()
}

#[test]
fn destinations_are_named_as_rsync_names_them_and_the_same_on_every_run() {
    let test = test_name!();
    if !require_tool(test, "rsync") {
        return;
    }
    let t = scratch!();
    let base = t.path();
    put(base, b"photos/a.jpg", b"a");
    put(base, b"photos/sub/b.jpg", b"bb");
    put(base, b"one.txt", b"1");
    put(base, b"two.txt", b"22");
    fs::create_dir_all(base.join("ours/existing")).unwrap();
    fs::create_dir_all(base.join("rsync/existing")).unwrap();
    let cases: [(&str, &[&str], &str); 7] = [
        ("a directory into a new DEST", &["photos"], "d1"),
        (
            "a directory's contents (trailing slash)",
            &["photos/"],
            "d2",
        ),
        ("a file to a new name", &["one.txt"], "d3"),
        ("a file into DEST/ (trailing slash)", &["one.txt"], "d4/"),
        ("files into a new DEST", &["one.txt", "two.txt"], "d5"),
        ("a directory and a file", &["photos", "one.txt"], "d6"),
        ("a directory into an existing DEST", &["photos"], "existing"),
    ];
    for round in ["first", "second"] {
        for (what, sources, dest) in cases {
            let o = output_within(
                copy_cmd()
                    .current_dir(base)
                    .args(sources)
                    .arg(format!("ours/{dest}")),
                RUN_LIMIT,
            );
            assert_exit(&o, 0);
            run(Command::new("rsync")
                .current_dir(base)
                .arg("-a")
                .args(sources)
                .arg(format!("rsync/{dest}")));
            let dest = dest.trim_end_matches('/');
            assert_eq!(
                layout(&base.join("ours").join(dest)),
                layout(&base.join("rsync").join(dest)),
                "{what}, {round} run: seekless copy {sources:?} DEST vs rsync -a"
            );
        }
    }
}

#[test]
fn a_destination_inside_its_source_is_refused_with_exit_2() {
    let t = scratch!();
    let src = t.path().join("src");
    put(&src, b"a", b"a");
    put(&src, b"sub/b", b"b");
    let link = t.path().join("link-into-src");
    std::os::unix::fs::symlink(src.join("sub"), &link).unwrap();
    let file = t.path().join("file");
    fs::write(&file, b"a file\n").unwrap();
    let before = layout(&src);

    let cases: Vec<(Vec<OsString>, &str)> = vec![
        (
            vec![src.clone().into(), src.join("sub/new").into()],
            "into itself",
        ),
        (vec![slash(&src), src.join("sub").into()], "into itself"),
        (vec![src.clone().into(), src.clone().into()], "into itself"),
        (
            vec![src.clone().into(), link.join("x").into()],
            "into itself",
        ),
        (
            vec![src.join("sub").into(), src.clone().into()],
            "into itself",
        ),
        (
            vec![
                src.join("a").into(),
                src.join("sub/b").into(),
                file.clone().into(),
            ],
            "is not a directory",
        ),
    ];
    for (args, says) in cases {
        let o = output_within(copy_cmd().args(&args), RUN_LIMIT);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert_eq!(layout(&src), before, "{args:?} changed the source");
        assert_eq!(fs::read(&file).unwrap(), b"a file\n", "{args:?}");
    }
}

#[test]
fn names_of_255_bytes_are_copied_as_cp_a_copies_them() {
    let test = test_name!();
    if !ready(test, &[]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "xfs", 300);
    let src = s.path("src");
    // NAME_MAX: 255 bytes, each of a file, a hard link to it, a symlink, a FIFO and a
    // directory.
    let long = |c: u8| vec![c; 255];
    put(&src, &long(b'f'), b"a file with a long name\n");
    fs::hard_link(at(&src, &long(b'f')), at(&src, &long(b'h'))).unwrap();
    std::os::unix::fs::symlink("target", at(&src, &long(b'l'))).unwrap();
    run(Command::new("mknod").arg(at(&src, &long(b'p'))).arg("p"));
    put(
        &src,
        &[long(b'd'), b"/inner".to_vec()].concat(),
        b"inside\n",
    );
    noatime(&s);
    noatime(&d);
    let want = snapshot(&src, true);

    let o = copy(&[os("--summary"), arg(&src), arg(&d.path("ours"))]);
    let ours = d.path("ours/src");
    fs::create_dir(d.path("theirs")).unwrap();
    run(Command::new("cp").arg("-a").arg(&src).arg(d.path("theirs")));
    assert_same_tree(
        &snapshot(&d.path("theirs/src"), true),
        &want,
        "cp -a copies them",
    );
    assert_exit(&o, 0);
    assert_same_tree(&snapshot(&ours, true), &want, "seekless copy");
}

// ---------------------------------------------------------------------------------------
// 4. Interrupted and failing runs.

#[test]
fn a_copy_killed_mid_run_leaves_only_complete_files_and_a_rerun_completes_it() {
    let test = test_name!();
    if !ready(test, &[]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "xfs", 300);
    let src = s.path("data");
    let mut names = Vec::new();
    for k in 0..4 {
        let sub = format!("d{k}");
        for n in flat_corpus(&src.join(&sub), 100, 16 << 10, 256 << 10, 10 + k) {
            names.push([sub.as_bytes(), &b"/"[..], &n[..]].concat());
        }
    }
    std::os::unix::fs::symlink("d0/f-00000.bin", src.join("link")).unwrap();
    run(Command::new("mknod").arg(src.join("special-fifo")).arg("p"));
    sync();
    noatime(&s);
    noatime(&d);
    let dest = d.path("copy");
    let root = dest.join("data");
    let n = names.len();

    // Killed with a fifth to four fifths of the files in place.
    let mut running = start_copy(&[os("--fsync"), os("-j"), os("1"), arg(&src), arg(&dest)]);
    let caught = freeze_when(&mut running.0, || {
        let k = in_place(&root, &names);
        k >= n / 5 && k <= 4 * n / 5
    });
    if !caught {
        let (code, err) = finish(running);
        assert_eq!(code, Some(0), "{err}");
        panic!("the run ended before it could be killed in the middle");
    }
    let pid = running.0.id();
    signal(&running.0, libc::SIGKILL);
    let status = running.0.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    drop(running);

    // No partial file under a final name: each one there is its source, whole.
    let complete = in_place(&root, &names);
    for name in &names {
        let got = at(&root, name);
        if let Ok(m) = fs::symlink_metadata(&got) {
            let want = fs::metadata(at(&src, name)).unwrap();
            assert_eq!(
                (m.len(), m.mtime(), m.mtime_nsec()),
                (want.len(), want.mtime(), want.mtime_nsec()),
                "{} after the kill",
                show(name)
            );
            assert!(
                fs::read(&got).unwrap() == fs::read(at(&src, name)).unwrap(),
                "{} is in place after the kill but differs from its source",
                show(name)
            );
        }
    }
    let left = temporaries(&root);
    // Each temporary is `.NAME.seekless-tmp-RUN-N` beside NAME's place, RUN the killed
    // run's (one for all of them).
    let marker = b".seekless-tmp-";
    let mut runs = BTreeSet::new();
    for t in &left {
        let (dir, name) = match t.iter().rposition(|&b| b == b'/') {
            Some(i) => (&t[..=i], &t[i + 2..]),
            None => (&t[..0], &t[1..]),
        };
        let cut = name
            .windows(marker.len())
            .rposition(|w| w == marker)
            .unwrap_or_else(|| panic!("{} is not a temporary of pid {pid}", show(t)));
        let tail = &name[cut + marker.len()..];
        let (run, number) = tail.split_at(16.min(tail.len()));
        assert!(
            run.iter().all(u8::is_ascii_hexdigit)
                && number.len() > 1
                && number[0] == b'-'
                && number[1..].iter().all(u8::is_ascii_digit),
            "{}",
            show(t)
        );
        runs.insert(run.to_vec());
        let meant = [dir, &name[..cut]].concat();
        assert!(
            names.contains(&meant),
            "{} is beside no file of the source",
            show(t)
        );
    }
    assert!(runs.len() <= 1, "one run left them all: {runs:?}");
    eprintln!(
        "{test}: killed with {complete} of {n} files in place, {} temporaries",
        left.len()
    );

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(
        counts(&o),
        counts_of((n - complete) as u64, 0, complete as u64, 0, 0),
        "what was in place is skipped, the rest copied:\n{}",
        stderr(&o)
    );
    let line = count_line(&stderr(&o));
    if left.is_empty() {
        assert!(!line.contains("temporaries"), "{line}");
    } else {
        assert!(
            line.contains(&format!(
                "removed {} temporaries of an interrupted run",
                left.len()
            )),
            "the kill left {:?}: {line}",
            left.iter().map(|t| show(t)).collect::<Vec<_>>()
        );
    }
    assert_eq!(temporaries(&dest), Vec::<Vec<u8>>::new());
    assert_same_tree(
        &snapshot(&root, false),
        &snapshot(&src, false),
        "killed, then run again",
    );
    assert_diff_clean(&src, &root);
}

#[test]
fn a_full_destination_stops_the_copy_naming_the_file_and_a_rerun_after_freeing_space_completes_it()
{
    let test = test_name!();
    if !ready(test, &["fallocate"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "ext4", 128);
    let src = s.path("big");
    // 60 MiB of source, 12 files of 5 MiB.
    let names = flat_corpus(&src, 12, 5 << 20, 5 << 20, 3);
    sync();
    noatime(&s);
    noatime(&d);
    // The destination: about 20 MiB left beside a filler.
    let avail = {
        let out = run(Command::new("stat").args(["-f", "-c", "%a %S"]).arg(&d.mnt));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut it = text.split_whitespace().map(|n| n.parse::<u64>().unwrap());
        it.next().unwrap() * it.next().unwrap()
    };
    let filler = d.path("filler");
    run(Command::new("fallocate")
        .args(["-l", &(avail - (20 << 20)).to_string()])
        .arg(&filler));
    let dest = d.path("copy");
    let root = dest.join("big");

    let o = copy(&[arg(&src), arg(&dest)]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.lines()
            .any(|l| l == "seekless: copy: stopped early: the destination is full; run again when there is room"),
        "{err}"
    );
    let full: Vec<&str> = err
        .lines()
        .filter(|l| l.ends_with(": No space left on device"))
        .collect();
    assert!(!full.is_empty(), "ENOSPC is named: {err}");
    let prefix = format!("seekless: {}/f-", root.display());
    for l in &full {
        assert!(
            l.starts_with(&prefix) && l.ends_with(".bin: No space left on device"),
            "the file that did not fit is named: {l:?}\n{err}"
        );
        let name = &l["seekless: ".len()..l.len() - ": No space left on device".len()];
        assert!(!Path::new(name).exists(), "{name} failed but is in place");
    }
    assert_eq!(
        temporaries(&dest),
        Vec::<Vec<u8>>::new(),
        "a stopped run removes its temporaries"
    );
    let complete = in_place(&root, &names);
    assert!(
        (1..names.len()).contains(&complete),
        "{complete} of {} files in place with 20 MiB free",
        names.len()
    );
    for name in &names {
        if let Ok(got) = fs::read(at(&root, name)) {
            assert!(
                got == fs::read(at(&src, name)).unwrap(),
                "{} is in place but not whole",
                show(name)
            );
        }
    }

    fs::remove_file(&filler).unwrap();
    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(
        counts(&o),
        counts_of((names.len() - complete) as u64, 0, complete as u64, 0, 0),
        "{}",
        stderr(&o)
    );
    assert_diff_clean(&src, &root);
    assert_same_tree(
        &snapshot(&root, false),
        &snapshot(&src, false),
        "after space was freed",
    );
}

#[test]
fn an_unwritable_destination_fails_before_anything_is_read() {
    let test = test_name!();
    if !ready(test, &[]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 64);
    let d = LoopFs::new(test, "ext4", 64);
    let src = s.path("src");
    flat_corpus(&src, 3, 1000, 5000, 4);
    fs::create_dir(d.path("out")).unwrap();
    run(Command::new("mount").args(["-o", "remount,ro"]).arg(&d.mnt));
    let o = copy(&[os("--summary"), arg(&src), arg(&d.path("out"))]);
    run(Command::new("mount").args(["-o", "remount,rw"]).arg(&d.mnt));
    assert_exit(&o, 1);
    let err = stderr(&o);
    // Named as every other error is: the path, then what the system says (without Rust's
    // " (os error N)").
    let line = format!(
        "seekless: {}: cannot write the destination: {}",
        d.path("out/src").display(),
        os_message(&std::io::Error::from_raw_os_error(libc::EROFS))
    );
    assert!(err.lines().any(|l| l == line), "{line:?} in:\n{err}");
    assert!(
        !err.contains("seekless: read ") && !err.contains(" files, "),
        "nothing was planned or read before the destination was found unwritable:\n{err}"
    );
    assert!(!d.path("out/src").exists());
}

/// Copies a tree with a `seekless-fault-shrink` and a `seekless-fault-grow` file, the
/// fault hooks armed: both are named, neither is put in place, the rest is copied (by
/// `method`); a rerun without the hooks copies the two.
fn faults_case(test: &str, from: &str, to: Option<&str>, method: &str) {
    if !ready(test, &[]) {
        return;
    }
    let s = LoopFs::new(test, from, size_for(from));
    let d = to.map(|to| LoopFs::new(test, to, size_for(to)));
    let src = s.path("src");
    let dest = d
        .as_ref()
        .map_or_else(|| s.path("copy"), |d| d.path("copy"));
    let root = dest.join("src");
    let mut rng = Rng::new(5);
    let ok: [&[u8]; 3] = [b"ok-1.bin", b"ok-2.bin", b"sub/ok-3.bin"];
    for name in ok {
        put(&src, name, &rng.bytes(300 << 10));
    }
    let faulty: [&[u8]; 2] = [
        b"seekless-fault-shrink-1.bin",
        b"sub/seekless-fault-grow-1.bin",
    ];
    for name in faulty {
        put(&src, name, &rng.bytes(256 << 10));
    }
    sync();

    let o = output_within(
        copy_cmd()
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .arg("--summary")
            .arg(&src)
            .arg(&dest),
        RUN_LIMIT,
    );
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert_eq!(
        (
            fs::metadata(at(&src, faulty[0])).unwrap().len(),
            fs::metadata(at(&src, faulty[1])).unwrap().len()
        ),
        (128 << 10, (256 << 10) + 1000),
        "the hooks fired (the shrink file halved, the grow file 1000 bytes longer)"
    );
    for name in faulty {
        let line = format!(
            "seekless: {}: file changed while being copied; not copied",
            at(&src, name).display()
        );
        assert!(err.lines().any(|l| l == line), "{line:?} in:\n{err}");
        assert!(
            fs::symlink_metadata(at(&root, name)).is_err(),
            "{} is in place",
            show(name)
        );
    }
    assert_eq!(counts_in(&err), counts_of(3, 0, 0, 0, 2), "{err}");
    for name in ok {
        assert!(
            fs::read(at(&root, name)).unwrap() == fs::read(at(&src, name)).unwrap(),
            "{}",
            show(name)
        );
    }
    assert_eq!(temporaries(&root), Vec::<Vec<u8>>::new());
    assert_eq!(
        methods(&o),
        vec![format!("{} {method}", device_of(&src))],
        "{err}"
    );

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(2, 0, 3, 0, 0), "{}", stderr(&o));
    assert_diff_clean(&src, &root);
}

#[test]
fn files_changing_while_copied_between_filesystems_are_not_put_in_place() {
    faults_case(test_name!(), "ext4", Some("xfs"), READ_WRITTEN);
}

#[test]
fn files_changing_while_cloned_on_btrfs_are_not_put_in_place() {
    faults_case(test_name!(), "btrfs", None, CLONED);
}

#[test]
fn files_changing_while_copied_in_the_kernel_on_ext4_are_not_put_in_place() {
    faults_case(test_name!(), "ext4", None, IN_KERNEL);
}

// ---------------------------------------------------------------------------------------
// 5. --delete, --checksum, --verify, --manifest.

#[test]
fn delete_removes_what_the_source_no_longer_has_as_rsync_delete_does() {
    let test = test_name!();
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "btrfs", 256);
    let src = s.path("src");
    for name in [
        &b"keep.txt"[..],
        b"gone.txt",
        b"olddir/1",
        b"olddir/2",
        b"olddir/deeper/3",
        b"swap",
        b"sub/keep2",
        b"sub/gone2",
    ] {
        put(&src, name, name);
    }
    let ours = d.path("ours");
    assert_exit(&copy(&[arg(&src), arg(&ours)]), 0);
    let ours = ours.join("src");

    // The source loses a file, a tree and a nested file; a file becomes a directory.
    fs::remove_file(src.join("gone.txt")).unwrap();
    fs::remove_dir_all(src.join("olddir")).unwrap();
    fs::remove_file(src.join("sub/gone2")).unwrap();
    fs::remove_file(src.join("swap")).unwrap();
    put(&src, b"swap/now-a-dir", b"x");
    // The copy gains things of its own.
    put(&ours, b"extra.txt", b"extra");
    put(&ours, b"extra-dir/x/y", b"y");
    put(&ours, b"sub/extra3", b"3");
    std::os::unix::fs::symlink("keep.txt", ours.join("extra-link")).unwrap();
    // rsync's copy starts from the same state.
    let theirs_parent = d.path("theirs");
    fs::create_dir(&theirs_parent).unwrap();
    run(Command::new("cp").arg("-a").arg(&ours).arg(&theirs_parent));
    let theirs = theirs_parent.join("src");

    // Without --delete: nothing goes (a file in the way of a directory is replaced).
    let o = copy(&[os("--summary"), arg(&src), arg(&d.path("ours"))]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o).deleted, 0, "{}", stderr(&o));
    run(Command::new("rsync")
        .arg("-a")
        .arg(&src)
        .arg(&theirs_parent));
    assert_eq!(
        layout(&ours),
        layout(&theirs),
        "without --delete, as rsync -a"
    );
    assert!(ours.join("gone.txt").exists() && ours.join("extra-dir/x/y").exists());

    // With it: what the source does not have goes; a directory counts once.
    let o = copy(&[
        os("--delete"),
        os("--summary"),
        arg(&src),
        arg(&d.path("ours")),
    ]);
    assert_exit(&o, 0);
    assert_eq!(
        counts(&o),
        counts_of(0, 0, 3, 7, 0),
        "gone.txt, olddir, sub/gone2, extra.txt, extra-dir, sub/extra3, extra-link:\n{}",
        stderr(&o)
    );
    run(Command::new("rsync")
        .args(["-a", "--delete"])
        .arg(&src)
        .arg(&theirs_parent));
    assert_eq!(layout(&ours), layout(&theirs), "as rsync -a --delete");
    assert_eq!(layout(&ours), layout(&src), "the copy is the source");
    assert_diff_clean(&src, &ours);
}

#[test]
fn checksum_finds_a_file_changed_without_its_size_or_mtime_and_the_quick_check_does_not() {
    let test = test_name!();
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "xfs", 300);
    let src = s.path("data");
    let names = flat_corpus(&src, 20, 1000, 200_000, 6);
    noatime(&s);
    noatime(&d);
    let dest = d.path("copy");
    assert_exit(&copy(&[arg(&src), arg(&dest)]), 0);
    let root = dest.join("data");

    // One copy changed behind seekless's back: same size, its times put back.
    let victim = at(&root, &names[7]);
    let m = fs::metadata(&victim).unwrap();
    let mut bytes = fs::read(&victim).unwrap();
    for b in bytes.iter_mut().step_by(997) {
        *b ^= 0x5a;
    }
    fs::write(&victim, &bytes).unwrap();
    set_times(
        &victim,
        (m.atime(), m.atime_nsec()),
        (m.mtime(), m.mtime_nsec()),
    );
    assert!(fs::read(&victim).unwrap() != fs::read(at(&src, &names[7])).unwrap());
    assert_eq!(
        rsync_would(&src, &root, &["-a"]),
        Vec::<String>::new(),
        "rsync's quick check sees nothing either"
    );
    let rsync_checksum: Vec<String> = rsync_would(&src, &root, &["-a", "--checksum"])
        .into_iter()
        .filter(|l| l.starts_with(">f"))
        .collect();
    assert_eq!(rsync_checksum.len(), 1, "{rsync_checksum:?}");

    let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(0, 0, 20, 0, 0), "{}", stderr(&o));
    assert!(
        fs::read(&victim).unwrap() != fs::read(at(&src, &names[7])).unwrap(),
        "the quick check leaves it"
    );

    let o = copy(&[os("--checksum"), os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(
        counts(&o),
        counts_of(0, 1, 19, 0, 0),
        "as rsync --checksum: {rsync_checksum:?}\n{}",
        stderr(&o)
    );
    let size = fs::metadata(at(&src, &names[7])).unwrap().len();
    let line = count_line(&stderr(&o));
    let written = indicatif_bytes(size);
    assert!(
        line.contains(&format!("; {written} written")),
        "the repair wrote {size} bytes: {line}"
    );
    assert_diff_clean(&src, &root);
    assert_same_tree(
        &snapshot(&root, true),
        &snapshot(&src, true),
        "after --checksum",
    );
    let o = copy(&[os("--checksum"), os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(0, 0, 20, 0, 0), "{}", stderr(&o));
}

#[test]
fn checksum_brings_over_a_new_mtime_of_unchanged_content_as_rsync_checksum_does() {
    let test = test_name!();
    if !ready(test, &["rsync"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "xfs", 300);
    let src = s.path("data");
    let names = flat_corpus(&src, 5, 1000, 50_000, 13);
    noatime(&s);
    noatime(&d);
    let dest = d.path("copy");
    assert_exit(&copy(&[arg(&src), arg(&dest)]), 0);
    let root = dest.join("data");

    // Touched, not changed: the same bytes with another mtime.
    let touched = at(&src, &names[2]);
    let m = fs::metadata(&touched).unwrap();
    set_times(
        &touched,
        (m.atime(), m.atime_nsec()),
        (1_262_304_000, 123_456_789),
    );
    let todo = rsync_would(&src, &root, &["-a", "--checksum"]);
    assert!(
        todo.iter().any(|l| l.starts_with(".f..t")),
        "rsync --checksum would set the time: {todo:?}"
    );

    let o = copy(&[os("--checksum"), os("--summary"), arg(&src), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o).copied + counts(&o).failed, 0, "{}", stderr(&o));
    assert_same_tree(
        &snapshot(&root, false),
        &snapshot(&src, false),
        "after --checksum on a touched file",
    );
    assert_eq!(
        rsync_would(&src, &root, &["-a", "--checksum"]),
        Vec::<String>::new()
    );
}

/// Flips four bytes of `file`'s first block in its filesystem's image, under the filesystem:
/// what a bad disk or a bad write path would do. The file is flushed first, so its blocks
/// are allocated and clean in the page cache; what is cached still reads right until
/// it is dropped.
fn corrupt_on_disk(lfs: &LoopFs, file: &Path) {
    fs::File::open(file).unwrap().sync_all().unwrap();
    let (first, _) = filefrag(file);
    let start = first.expect("the copy has blocks on the disk");
    let image = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&lfs.image)
        .unwrap();
    for k in 0..4u64 {
        let off = start + k * 1000 + 100;
        let mut b = [0u8];
        image.read_exact_at(&mut b, off).unwrap();
        b[0] ^= 0xff;
        image.write_all_at(&b, off).unwrap();
    }
}

#[test]
fn verify_reads_the_copies_back_and_names_one_corrupted_on_the_destination_disk() {
    let test = test_name!();
    if !ready(test, &[]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "ext4", 512);
    let src = s.path("data");
    let names = flat_corpus(&src, 1000, 16 << 10, 40 << 10, 8);
    sync();
    let n = names.len() as u64;
    // The victim: the file that lies first, so it is copied first; the thousand after it
    // keep the run busy until it is caught.
    let (victim_name, _) = names
        .iter()
        .map(|name| (name, filefrag(&at(&src, name)).0.unwrap()))
        .min_by_key(|(_, first)| *first)
        .unwrap();
    let victim = at(&src, victim_name);
    let others: Vec<Vec<u8>> = names
        .iter()
        .filter(|n| *n != victim_name)
        .cloned()
        .collect();

    // A clean run: every file read back, none differs.
    let o = copy(&[
        os("--verify"),
        os("--summary"),
        arg(&src),
        arg(&d.path("clean")),
    ]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(n, 0, 0, 0, 0), "{}", stderr(&o));
    assert!(
        count_line(&stderr(&o)).contains(&format!("; verified {n}, 0 differ")),
        "{}",
        stderr(&o)
    );

    for attempt in 0..3 {
        let dest = d.path(format!("run{attempt}"));
        let root = dest.join("data");
        let copied = at(&root, victim_name);
        let mut running = start_copy(&[
            os("--verify"),
            os("--summary"),
            os("-j"),
            os("1"),
            os("--no-prefetch"),
            arg(&src),
            arg(&dest),
        ]);
        // Caught with the victim in place and files still to copy: before the read-back.
        let caught = freeze_when(&mut running.0, || {
            copied.exists() && in_place(&root, &others) < others.len()
        });
        if !caught {
            let (code, err) = finish(running);
            assert_eq!(code, Some(0), "{err}");
            eprintln!("NOTE {test}: attempt {attempt} ended before it was caught");
            continue;
        }
        corrupt_on_disk(&d, &copied);
        let (code, err) = finish(running);
        assert_eq!(code, Some(1), "{err}");
        let line = format!(
            "seekless: {}: verify: the copy differs from the source",
            copied.display()
        );
        assert!(err.lines().any(|l| l == line), "{line:?} in:\n{err}");
        assert_eq!(err.matches("differs from the source").count(), 1, "{err}");
        assert!(
            count_line(&err).contains(&format!("; verified {n}, 1 differ")),
            "{err}"
        );
        assert!(
            fs::read(&copied).unwrap() != fs::read(&victim).unwrap(),
            "the copy does differ, read plainly"
        );

        // The quick check cannot see it (size and mtime are right); --checksum can.
        let o = copy(&[os("--summary"), arg(&src), arg(&dest)]);
        assert_exit(&o, 0);
        assert_eq!(counts(&o), counts_of(0, 0, n, 0, 0), "{}", stderr(&o));
        let o = copy(&[
            os("--checksum"),
            os("--verify"),
            os("--summary"),
            arg(&src),
            arg(&dest),
        ]);
        assert_exit(&o, 0);
        assert_eq!(counts(&o), counts_of(0, 1, n - 1, 0, 0), "{}", stderr(&o));
        assert!(fs::read(&copied).unwrap() == fs::read(&victim).unwrap());
        return;
    }
    panic!("three runs ended before one could be caught between copying and reading back");
}

/// A manifest's lines (one per file: names with a newline are escaped).
fn manifest_lines(path: &Path) -> Vec<Vec<u8>> {
    fs::read(path)
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// The lines of `checker -c MANIFEST` run in `dir` that end in ": OK"; fails unless it
/// exits 0.
fn checked_ok(checker: &str, manifest: &Path, dir: &Path) -> usize {
    let o = Command::new(checker)
        .arg("-c")
        .arg(manifest)
        .current_dir(dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{checker} -c: {}\n{out}{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out.lines().filter(|l| l.ends_with(": OK")).count()
}

#[test]
fn manifest_lists_every_source_file_as_b3sum_and_sha256sum_check_it() {
    let test = test_name!();
    if !ready(test, &["b3sum", "sha256sum"]) {
        return;
    }
    let s = LoopFs::new(test, "ext4", 256);
    let d = LoopFs::new(test, "xfs", 300);
    let mut rng = Rng::new(9);
    let src = s.path("src");
    for (name, size) in [
        (&b"a.txt"[..], 10),
        (b"sub/b.bin", 100_000),
        (b"new\nline.txt", 20),
        (b"back\\slash.txt", 30),
        (b"caf\xe9.txt", 40),
        (b"sub/deeper/c", 5000),
        (b"empty", 0),
    ] {
        put(&src, name, &rng.bytes(size));
    }
    let dest = d.path("copy");
    // Paths as given: relative to the source filesystem's root.
    let run_in = |args: &[&OsStr]| {
        output_within(
            copy_cmd()
                .current_dir(&s.mnt)
                .args(args)
                .arg("src")
                .arg(&dest),
            RUN_LIMIT,
        )
    };
    assert_exit(&run_in(&[]), 0);
    let unchanged = dest.join("src/sub/b.bin");
    let before = fs::metadata(&unchanged).unwrap();

    // One file changed, one added: the manifest still lists all, unchanged ones too.
    fs::write(src.join("a.txt"), b"changed content").unwrap();
    put(&src, b"sub/added.bin", &rng.bytes(7000));
    let t = scratch!();
    let b3 = t.path().join("m.b3");
    let o = run_in(&[os("--manifest"), arg(&b3), os("--summary")]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(1, 1, 6, 0, 0), "{}", stderr(&o));
    let after = fs::metadata(&unchanged).unwrap();
    assert_eq!(
        (after.ino(), after.ctime(), after.ctime_nsec()),
        (before.ino(), before.ctime(), before.ctime_nsec()),
        "an unchanged file is read for its hash, not written"
    );
    let lines = manifest_lines(&b3);
    assert_eq!(lines.len(), 8, "one line per source file");
    for l in &lines {
        let path = &l[l.iter().position(|&b| b == b' ').unwrap() + 2..];
        assert!(path.starts_with(b"src/"), "paths as read: {}", show(l));
    }
    // b3sum reads only UTF-8 manifests: the line of the Latin-1 name is checked by hand.
    let (utf8, other): (Vec<_>, Vec<_>) = lines
        .into_iter()
        .partition(|l| std::str::from_utf8(l).is_ok());
    let utf8_manifest = t.path().join("utf8.b3");
    fs::write(&utf8_manifest, concat_lines(&utf8)).unwrap();
    assert_eq!(checked_ok("b3sum", &utf8_manifest, &s.mnt), 7);
    assert_eq!(
        other.len(),
        1,
        "{:?}",
        other.iter().map(|l| show(l)).collect::<Vec<_>>()
    );
    let want = run(Command::new("b3sum")
        .arg("--no-names")
        .stdin(fs::File::open(src.join(OsStr::from_bytes(b"caf\xe9.txt"))).unwrap()));
    let want = String::from_utf8_lossy(&want.stdout).trim().to_string();
    assert_eq!(
        other[0],
        [want.as_bytes(), &b"  src/caf\xe9.txt"[..]].concat(),
        "the Latin-1 name's line"
    );

    // sha256sum reads any bytes: the whole manifest, checked as it is.
    let sha = t.path().join("m.sha256");
    let o = run_in(&[
        os("--manifest"),
        arg(&sha),
        os("--algo"),
        os("sha256"),
        os("--summary"),
    ]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(0, 0, 8, 0, 0), "{}", stderr(&o));
    assert_eq!(manifest_lines(&sha).len(), 8);
    assert_eq!(checked_ok("sha256sum", &sha, &s.mnt), 8);
}

/// Lines joined, each ended by a newline.
fn concat_lines(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

// ---------------------------------------------------------------------------------------
// 6. Within one filesystem.

/// (extents, extents flagged shared) of a file, as `filefrag -v` lists them.
fn shared_extents(path: &Path) -> (usize, usize) {
    let out = run(Command::new("filefrag").arg("-v").arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text
        .lines()
        .map(str::trim_start)
        .filter(|l| {
            l.split_once(':')
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let shared = rows.iter().filter(|l| l.contains("shared")).count();
    (rows.len(), shared)
}

/// Copies within one `kind` filesystem and checks the method the summary names, the
/// content, and (by `filefrag`) whether blocks are shared; then again with `--no-clone`.
fn same_filesystem_case(test: &str, kind: &str, method: &str, shares: bool) {
    if !ready(test, &[]) {
        return;
    }
    let lfs = LoopFs::new(test, kind, size_for(kind));
    noatime(&lfs);
    let src = lfs.path("src");
    let names = flat_corpus(&src, 4, 1 << 20, 4 << 20, 11);
    sync();
    let dev = device_of(&src);

    let o = copy(&[os("--summary"), arg(&src), arg(&lfs.path("fast"))]);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(4, 0, 0, 0, 0), "{}", stderr(&o));
    assert_eq!(
        methods(&o),
        vec![format!("{dev} {method}")],
        "{}",
        stderr(&o)
    );
    // Shared blocks are not "written": the counts say which is which.
    let line = count_line(&stderr(&o));
    if method == CLONED {
        assert!(
            line.contains("; 0 B written, ") && line.contains(" shared with the source (cloned)"),
            "{line}"
        );
    } else {
        assert!(
            !line.contains("; 0 B written") && !line.contains("shared"),
            "{line}"
        );
    }
    let root = lfs.path("fast/src");
    assert_diff_clean(&src, &root);
    assert_same_tree(
        &snapshot(&root, true),
        &snapshot(&src, true),
        &format!("within {kind}"),
    );
    sync();
    for name in &names {
        let (extents, shared) = shared_extents(&at(&root, name));
        assert!(extents > 0, "{}", show(name));
        if shares {
            assert_eq!(shared, extents, "{}: every extent shared", show(name));
        } else {
            assert_eq!(shared, 0, "{}: nothing shared on {kind}", show(name));
        }
    }

    let o = copy(&[
        os("--no-clone"),
        os("--summary"),
        arg(&src),
        arg(&lfs.path("slow")),
    ]);
    assert_exit(&o, 0);
    assert_eq!(
        methods(&o),
        vec![format!("{dev} {READ_WRITTEN}")],
        "{}",
        stderr(&o)
    );
    let root = lfs.path("slow/src");
    assert_diff_clean(&src, &root);
    sync();
    for name in &names {
        assert_eq!(
            shared_extents(&at(&root, name)).1,
            0,
            "{}: --no-clone shares nothing",
            show(name)
        );
    }
}

#[test]
fn within_ext4_a_sparse_file_keeps_its_holes_and_the_others_are_still_reported_copied_in_the_kernel()
 {
    let test = test_name!();
    if !ready(test, &[]) {
        return;
    }
    let lfs = LoopFs::new(test, "ext4", 256);
    noatime(&lfs);
    let src = lfs.path("src");
    fs::create_dir(&src).unwrap();
    let sparse = fs::File::create(src.join("a-sparse")).unwrap();
    sparse.write_all_at(b"the end", 8 << 20).unwrap();
    sparse.sync_all().unwrap();
    drop(sparse);
    let names = flat_corpus(&src, 3, 1 << 20, 1 << 20, 12);
    sync();
    // The sparse file first (in the order given, one worker), then three plain ones.
    let mut args = vec![
        os("-j"),
        os("1"),
        os("--locate"),
        os("given"),
        os("--summary"),
    ];
    let paths: Vec<PathBuf> = std::iter::once(src.join("a-sparse"))
        .chain(names.iter().map(|n| at(&src, n)))
        .collect();
    args.extend(paths.iter().map(|p| p.as_os_str()));
    let root = lfs.path("copy");
    args.push(arg(&root));
    let o = copy(&args);
    assert_exit(&o, 0);
    assert_eq!(counts(&o), counts_of(4, 0, 0, 0, 0), "{}", stderr(&o));
    assert_diff_clean(&src, &root);
    let allocated = du(&root.join("a-sparse"));
    assert!(
        allocated <= 64 << 10,
        "a-sparse: {allocated} bytes allocated"
    );
    // Three of the four files were copied in the kernel: the summary says so, whatever
    // else it says of the sparse one.
    let want = format!("{} {IN_KERNEL}", device_of(&src));
    assert!(
        methods(&o).contains(&want),
        "{want:?} among {:?}\n{}",
        methods(&o),
        stderr(&o)
    );
}

#[test]
fn within_btrfs_files_are_cloned_sharing_their_blocks() {
    same_filesystem_case(test_name!(), "btrfs", CLONED, true);
}

#[test]
fn within_xfs_files_are_cloned_sharing_their_blocks() {
    same_filesystem_case(test_name!(), "xfs", CLONED, true);
}

#[test]
fn within_ext4_files_are_copied_in_the_kernel() {
    same_filesystem_case(test_name!(), "ext4", IN_KERNEL, false);
}
