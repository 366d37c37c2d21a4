//! Helpers of the `copy*` test modules and `safety`: running `seekless copy` and reading its
//! counts, trees snapshotted and compared entry by entry as `cp -a` keeps them, the tools
//! (`getfattr`, `diff -r`, `rsync`, `du`), and runs frozen at a chosen moment.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CString, OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::*;

/// The tools every root test here uses besides seekless.
pub const TOOLS: [&str; 6] = ["getfattr", "setfattr", "diff", "cp", "mknod", "filefrag"];

/// Root, and the tools: false after a [`skip`].
pub fn ready(test: &str, more: &[&str]) -> bool {
    require_root(test)
        && TOOLS
            .iter()
            .chain(more)
            .all(|tool| require_tool(test, tool))
}

// ---------------------------------------------------------------------------------------
// Running seekless.

/// `seekless copy`, the fault hooks off whatever the environment says.
pub fn copy_cmd() -> Command {
    let mut cmd = seekless();
    cmd.arg("copy").env_remove("SEEKLESS_INJECT_FAULTS");
    cmd
}

/// `seekless copy ARGS…`, bounded in time.
pub fn copy(args: &[&OsStr]) -> Output {
    output_within(copy_cmd().args(args), RUN_LIMIT)
}

/// The run exited with `code`, printed nothing on stdout and did not panic.
pub fn assert_exit(o: &Output, code: i32) {
    crate::common::assert_exit(o, code);
    assert!(
        o.stdout.is_empty(),
        "copy prints nothing on stdout, printed {:?}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// The counts line (`seekless: copy: N copied, N updated, …`), the only one.
pub fn count_line(err: &str) -> String {
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("seekless: copy: ") && l.contains(" copied, "))
        .collect();
    assert_eq!(lines.len(), 1, "one line of counts expected in:\n{err}");
    lines[0].to_string()
}

/// What the counts line says: copied, updated, skipped, deleted, failed.
#[derive(Debug, PartialEq, Eq)]
pub struct Counts {
    pub copied: u64,
    pub updated: u64,
    pub skipped: u64,
    pub deleted: u64,
    pub failed: u64,
}

pub fn counts_of(copied: u64, updated: u64, skipped: u64, deleted: u64, failed: u64) -> Counts {
    Counts {
        copied,
        updated,
        skipped,
        deleted,
        failed,
    }
}

pub fn counts_in(err: &str) -> Counts {
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

pub fn counts(o: &Output) -> Counts {
    counts_in(&stderr(o))
}

/// The `files of device MAJ:MIN …` lines of the summary, without their prefix.
pub fn methods(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter_map(|l| l.strip_prefix("seekless: copy: files of device "))
        .map(String::from)
        .collect()
}

/// `MAJ:MIN` of the filesystem `path` is on, decoded as glibc's `major`/`minor` do.
pub fn device_of(path: &Path) -> String {
    let dev = fs::metadata(path).unwrap().dev();
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    format!("{major}:{minor}")
}

pub const CLONED: &str = "cloned (FICLONE: blocks shared)";
pub const IN_KERNEL: &str = "copied in the kernel (copy_file_range)";
pub const READ_WRITTEN: &str = "read and written";

// ---------------------------------------------------------------------------------------
// Filesystems and trees.

pub fn size_for(fs: &str) -> u64 {
    match fs {
        "xfs" => 300,
        _ => 256,
    }
}

/// Remounts `noatime`: reading leaves access times alone, so they can be compared.
pub fn noatime(fs: &LoopFs) {
    run(Command::new("mount")
        .args(["-o", "remount,noatime"])
        .arg(&fs.mnt));
}

/// A copy's two disks, each a filesystem on a loop device of its own: the source `(kind,
/// MiB)` and the destination; returns both and the source folder `name` on the first (not
/// made).
pub fn two_disks(
    test: &str,
    source: (&str, u64),
    dest: (&str, u64),
    name: &str,
) -> (LoopFs, LoopFs, PathBuf) {
    let s = LoopFs::new(test, source.0, source.1);
    let d = LoopFs::new(test, dest.0, dest.1);
    let src = s.path(name);
    (s, d, src)
}

/// The first copy of a source on `s` written by the test: both disks remounted
/// [`noatime`], then `seekless copy SRC D/copy`, asserted to succeed. Returns `D/copy` and
/// the copy of `src` in it.
pub fn first_copy(s: &LoopFs, d: &LoopFs, src: &Path) -> (PathBuf, PathBuf) {
    noatime(s);
    noatime(d);
    let dest = d.path("copy");
    assert_exit(&copy(&[arg(src), arg(&dest)]), 0);
    let root = dest.join(src.file_name().unwrap());
    (dest, root)
}

pub fn at(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(OsStr::from_bytes(rel))
    }
}

pub fn show(rel: &[u8]) -> String {
    format!("\"{}\"", rel.escape_ascii())
}

/// Sets access and modification times, not following a symlink.
pub fn set_times(path: &Path, atime: (i64, i64), mtime: (i64, i64)) {
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

pub fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

pub fn setfattr(path: &Path, name: &str, value: &str) {
    run(Command::new("setfattr")
        .args(["-h", "-n", name, "-v", value])
        .arg(path));
}

/// Every entry under `root` (itself included, as ""), by relative path, not following
/// symlinks, sorted by path.
pub fn entries(root: &Path) -> Vec<(Vec<u8>, PathBuf, fs::Metadata)> {
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
pub fn is_temp(rel: &[u8]) -> bool {
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    name.starts_with(b".") && name.windows(14).any(|w| w == b".seekless-tmp-")
}

pub fn temporaries(root: &Path) -> Vec<Vec<u8>> {
    entries(root)
        .into_iter()
        .map(|(rel, _, _)| rel)
        .filter(|rel| is_temp(rel))
        .collect()
}

/// Distinct regular files (inodes) under `root`: what seekless plans once each.
pub fn distinct_files(root: &Path) -> u64 {
    entries(root)
        .into_iter()
        .filter(|(_, _, m)| m.is_file())
        .map(|(_, _, m)| m.ino())
        .collect::<BTreeSet<_>>()
        .len() as u64
}

/// The extended attributes `getfattr` reads (all namespaces, values in hex).
pub fn xattrs_of(path: &Path) -> Vec<(String, String)> {
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
pub struct Node {
    pub kind: &'static str,
    pub mode: u32,
    pub owner: (u32, u32),
    pub size: Option<u64>,
    /// Regular files: the link count (hard links reach nothing outside the tree).
    pub nlink: Option<u64>,
    pub mtime: (i64, i64),
    pub atime: (i64, i64),
    pub target: Option<Vec<u8>>,
    pub rdev: Option<u64>,
    pub xattrs: Vec<(String, String)>,
}

/// A tree as the comparisons see it: its entries, and which names are one file.
#[derive(Debug)]
pub struct Snapshot {
    pub nodes: BTreeMap<Vec<u8>, Node>,
    pub hard_links: BTreeSet<BTreeSet<Vec<u8>>>,
}

pub fn kind_of(ft: fs::FileType) -> &'static str {
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

pub fn snapshot(root: &Path, with_xattrs: bool) -> Snapshot {
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
pub fn assert_same_tree(got: &Snapshot, want: &Snapshot, what: &str) {
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
pub fn assert_diff_clean(a: &Path, b: &Path) {
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
pub fn du(path: &Path) -> u64 {
    let out = run(Command::new("du").arg("--block-size=1").arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// What `rsync -n -i` (itemized, dry run) would still do to make `dest` like `src`:
/// its lines, `src` and `dest` given as directories whose contents are compared.
pub fn rsync_would(src: &Path, dest: &Path, flags: &[&str]) -> Vec<String> {
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
pub fn put(root: &Path, rel: &[u8], data: &[u8]) {
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
pub fn build_tree(root: &Path, seed: u64) {
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
pub fn flat_corpus(dir: &Path, n: usize, min: usize, max: usize, seed: u64) -> Vec<Vec<u8>> {
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
pub fn indicatif_bytes(n: u64) -> String {
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

pub fn sync() {
    run(&mut Command::new("sync"));
}

pub fn arg(p: &Path) -> &OsStr {
    p.as_os_str()
}

/// `path` with a trailing slash (a directory's contents, as rsync means it).
pub fn slash(p: &Path) -> OsString {
    let mut s = p.as_os_str().to_os_string();
    s.push("/");
    s
}

// ---------------------------------------------------------------------------------------
// Freezing a run at a chosen moment (as in `index`).

/// Starts `seekless copy ARGS…` (the fault hooks off), stderr kept for [`finish`].
pub fn start_copy(args: &[&OsStr]) -> Running {
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
pub fn in_place(dir: &Path, names: &[Vec<u8>]) -> usize {
    names
        .iter()
        .filter(|n| fs::symlink_metadata(at(dir, n)).is_ok())
        .count()
}

/// Names, kinds, sizes and mtimes under `root` (itself too unless a directory, whose
/// times are its parent's business when it existed before), for comparing layouts.
pub fn layout(root: &Path) -> Vec<(String, &'static str, u64, i64)> {
    entries(root)
        .into_iter()
        .filter(|(rel, _, m)| !rel.is_empty() || !m.is_dir())
        .map(|(rel, _, m)| {
            let size = if m.is_dir() { 0 } else { m.size() };
            (show(&rel), kind_of(m.file_type()), size, m.mtime())
        })
        .collect()
}
