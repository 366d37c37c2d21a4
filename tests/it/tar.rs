//! `seekless tar` against the tools that read tar archives: GNU tar lists, extracts and
//! compares what seekless wrote (`tar -tvf`, `-xf`, `--compare`), bsdtar and Python's
//! `tarfile` read the same archives, and every extracted tree is compared with its source
//! byte for byte and stat field by stat field (type, mode, owner, mtime to the nanosecond,
//! symlink targets, hard-link identity, extended attributes, holes) — on the scratch
//! filesystem and on ext4, xfs and btrfs made on loop devices.
//!
//! Files that change while they are read are made deterministically by the debug build's
//! fault injection (`SEEKLESS_INJECT_FAULTS=1`: a file named `seekless-fault-shrink*` is
//! cut to half its size, one named `seekless-fault-grow*` grows by 1000 bytes, right
//! after its header is written; one named `seekless-fault-vanish*` is removed after
//! planning, before it is read). A run that must be killed in the middle is frozen with
//! SIGSTOP between short slices of running, as in `index`, so the moment is chosen by
//! what the archive already holds, not by a race against the clock.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CString, OsStr};
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::*;

/// GNU tar's warnings about stamps before 1970 and far in the future (the trees have
/// both), the only things it may say on stderr while reading a sound archive of them.
const GNU_STAMP_WARNINGS: [&str; 2] = ["implausibly old time stamp", "s in the future"];

// ---------------------------------------------------------------------------------------
// Running seekless and the readers.

/// Runs `cmd` to its end with `input` on its stdin (none: /dev/null), collecting its
/// output; one still running after [`RUN_LIMIT`] is killed and the test fails (a hang,
/// say on a FIFO opened by mistake, is a bug, not a slow test).
fn bounded_with_input(cmd: &mut Command, input: Option<Vec<u8>>) -> Output {
    output_with_input(cmd, input, RUN_LIMIT)
}

/// [`bounded_with_input`] with nothing on stdin.
fn bounded(cmd: &mut Command) -> Output {
    bounded_with_input(cmd, None)
}

/// `seekless tar`, run in `cwd` (arguments to be added).
fn seekless_tar(cwd: &Path) -> Command {
    let mut cmd = seekless();
    cmd.current_dir(cwd).arg("tar");
    cmd
}

/// GNU tar in `cwd`, in the C locale and UTC (so listed times are the test's own).
fn gnu_tar(cwd: &Path) -> Command {
    let mut cmd = Command::new("tar");
    cmd.current_dir(cwd).env("TZ", "UTC").env("LC_ALL", "C");
    cmd
}

/// The run exited with `code`, printed nothing on stdout (the archive went to `-f`)
/// and did not panic.
fn assert_exit_quiet(o: &Output, code: i32) {
    assert_exit(o, code);
    assert!(
        o.stdout.is_empty(),
        "with -f nothing goes to stdout, got {} bytes",
        o.stdout.len()
    );
}

/// The lines of stderr that are seekless's own messages (`seekless: …`).
fn messages(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter(|l| l.starts_with("seekless: "))
        .map(str::to_string)
        .collect()
}

/// The effective user id (what seekless and its files run as).
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The name `getent` finds for a user or group id in `database` (`passwd`, `group`),
/// empty when there is none.
fn getent_name(database: &str, id: u64) -> String {
    sh(&format!("getent {database} {id} | cut -d: -f1"))
        .trim()
        .to_string()
}

/// Python 3 with `tarfile` (Debian's first: a pyenv `python3` first on PATH may be any).
fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// Extracts `archive` with GNU tar into `dst`, created empty: plain `tar EXTRA… -xpf
/// ARCHIVE -C DST` (no `--delay-directory-restore`: the archive's order must make that
/// unnecessary); tar must succeed and warn of nothing but stamps.
fn gnu_extract(archive: &Path, dst: &Path, extra: &[&str]) {
    gnu_extract_allowing(archive, dst, extra, &[]);
}

/// [`gnu_extract`], with more warnings `allowed` (the stderr lines containing them).
fn gnu_extract_allowing(archive: &Path, dst: &Path, extra: &[&str], allowed: &[&str]) {
    std::fs::create_dir_all(dst).unwrap();
    let o = bounded(
        gnu_tar(dst)
            .args(extra)
            .arg("-xpf")
            .arg(archive)
            .arg("-C")
            .arg(dst),
    );
    assert_read_allowing(
        &o,
        &format!("tar {extra:?} -xpf {}", archive.display()),
        allowed,
    );
}

/// A reader exited 0 and said nothing but GNU tar's warnings about stamps on stderr.
fn assert_sound_read(o: &Output, what: &str) {
    assert_read_allowing(o, what, &[]);
}

/// [`assert_sound_read`], with more warnings `allowed`.
fn assert_read_allowing(o: &Output, what: &str, allowed: &[&str]) {
    let err = stderr(o);
    assert!(o.status.success(), "{what}: {}\n{err}", o.status);
    let other: Vec<&str> = err
        .lines()
        .filter(|l| {
            !GNU_STAMP_WARNINGS
                .iter()
                .chain(allowed)
                .any(|w| l.contains(w))
        })
        .collect();
    assert!(other.is_empty(), "{what} warned:\n{err}");
}

/// `tar -tf`: the member names, in archive order (GNU tar's escaping for odd bytes).
fn gnu_names(archive: &Path, extra: &[&str]) -> Vec<String> {
    let o = bounded(gnu_tar(Path::new("/")).args(extra).arg("-tf").arg(archive));
    assert_sound_read(&o, &format!("tar -tf {}", archive.display()));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

// ---------------------------------------------------------------------------------------
// GNU tar's verbose listing.

/// One line of `tar --numeric-owner --full-time -tvf`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    /// `-`, `d`, `l`, `h`, `p`, `c` or `b`.
    kind: char,
    /// The nine permission characters (`rwsr-xr-x`).
    perms: String,
    /// `UID/GID`.
    owner: String,
    /// The size, or `MAJOR,MINOR` for a device.
    size: String,
    /// `YYYY-MM-DD HH:MM:SS[.fraction]` in UTC, as GNU tar prints it.
    mtime: String,
    name: String,
    /// A symlink's target (`-> T`) or the first name of a hard link (`link to T`).
    target: Option<String>,
}

fn parse_listed(line: &str) -> Listed {
    let mut rest = line;
    let mut fields = Vec::new();
    for _ in 0..5 {
        rest = rest.trim_start();
        let end = rest
            .find(' ')
            .unwrap_or_else(|| panic!("not a tar -tv line: {line:?}"));
        fields.push(&rest[..end]);
        rest = &rest[end..];
    }
    let rest = rest.trim_start();
    let kind = fields[0].chars().next().unwrap();
    let (name, target) = match kind {
        'l' => rest.split_once(" -> ").map(|(n, t)| (n, Some(t))),
        'h' => rest.split_once(" link to ").map(|(n, t)| (n, Some(t))),
        _ => Some((rest, None)),
    }
    .unwrap_or_else(|| panic!("no link target in {line:?}"));
    Listed {
        kind,
        perms: fields[0][1..].to_string(),
        owner: fields[1].to_string(),
        size: fields[2].to_string(),
        mtime: format!("{} {}", fields[3], fields[4]),
        name: name.to_string(),
        target: target.map(str::to_string),
    }
}

/// GNU tar's verbose listing of `archive`, in archive order.
fn gnu_listing(archive: &Path, extra: &[&str]) -> Vec<Listed> {
    let o = bounded(
        gnu_tar(Path::new("/"))
            .args(extra)
            .args(["--numeric-owner", "--full-time", "-tvf"])
            .arg(archive),
    );
    assert_sound_read(&o, &format!("tar -tvf {}", archive.display()));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(parse_listed)
        .collect()
}

/// The permission characters `ls` and tar print for `mode`.
fn perms(mode: u32) -> String {
    let rwx = |r: u32, w: u32, x: u32, special: u32, on: char, off: char| {
        let exec = match (mode & x != 0, mode & special != 0) {
            (true, true) => on,
            (false, true) => off,
            (true, false) => 'x',
            (false, false) => '-',
        };
        format!(
            "{}{}{exec}",
            if mode & r != 0 { 'r' } else { '-' },
            if mode & w != 0 { 'w' } else { '-' }
        )
    };
    rwx(0o400, 0o200, 0o100, 0o4000, 's', 'S')
        + &rwx(0o040, 0o020, 0o010, 0o2000, 's', 'S')
        + &rwx(0o004, 0o002, 0o001, 0o1000, 't', 'T')
}

/// `YYYY-MM-DD HH:MM:SS[.fraction]` in UTC, the fraction without trailing zeros, as
/// `tar --full-time` prints a time (proleptic Gregorian, days from civil by H. Hinnant).
fn utc(sec: i64, nsec: i64) -> String {
    let days = sec.div_euclid(86_400);
    let secs = sec.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let mut s = format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if nsec != 0 {
        s.push('.');
        s.push_str(format!("{nsec:09}").trim_end_matches('0'));
    }
    s
}

/// What GNU tar should list for the tree at `root`, archived under the member name
/// `prefix` (`tree`, `.`): by name, every hard link as a plain file (see
/// [`resolve_hard_links`]); sockets are not archived.
fn expected_listing(root: &Path, prefix: &str) -> BTreeMap<String, Listed> {
    let mut want = BTreeMap::new();
    for (rel, node) in scan(root) {
        let rel = String::from_utf8(rel).expect("listed trees have UTF-8 names");
        let mut name = if rel.is_empty() {
            prefix.to_string()
        } else {
            format!("{prefix}/{rel}")
        };
        let (kind, size, target) = match &node.kind {
            Kind::Socket => continue,
            Kind::File => ('-', node.size.to_string(), None),
            Kind::Dir => {
                name.push('/');
                ('d', "0".to_string(), None)
            }
            Kind::Symlink(t) => ('l', "0".to_string(), Some(lossy(t))),
            Kind::Fifo => ('p', "0".to_string(), None),
            Kind::Char(rdev) | Kind::Block(rdev) => {
                let c = if matches!(node.kind, Kind::Char(_)) {
                    'c'
                } else {
                    'b'
                };
                (
                    c,
                    format!("{},{}", libc::major(*rdev), libc::minor(*rdev)),
                    None,
                )
            }
        };
        want.insert(
            name.clone(),
            Listed {
                kind,
                perms: perms(node.mode),
                owner: format!("{}/{}", node.uid, node.gid),
                size,
                mtime: utc(node.mtime.0, node.mtime.1),
                name,
                target,
            },
        );
    }
    want
}

/// Checks the hard-link entries of `listing` (each names a plain member archived before
/// it) and returns the listing by name with each one turned into the plain file it
/// stands for; also returns the groups of names of one file.
fn resolve_hard_links(listing: &[Listed]) -> (BTreeMap<String, Listed>, Vec<BTreeSet<String>>) {
    let mut by_name = BTreeMap::new();
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (i, m) in listing.iter().enumerate() {
        let mut m = m.clone();
        if m.kind == 'h' {
            let first = m.target.take().unwrap();
            let at = listing[..i]
                .iter()
                .position(|e| e.name == first)
                .unwrap_or_else(|| {
                    panic!(
                        "hard link {} names {first}, which is not archived before it",
                        m.name
                    )
                });
            let target = &listing[at];
            assert_eq!(
                target.kind, '-',
                "hard link {} points to a {} entry",
                m.name, target.kind
            );
            m.kind = '-';
            m.size = target.size.clone();
            groups
                .entry(first.clone())
                .or_insert_with(|| BTreeSet::from([first.clone()]))
                .insert(m.name.clone());
        }
        assert!(
            by_name.insert(m.name.clone(), m).is_none(),
            "{} is archived twice",
            listing[i].name
        );
    }
    (by_name, groups.into_values().collect())
}

/// The order the archive promises: symlinks and special files before the first regular
/// file; directories after the last regular file and hard link, a directory's header
/// after its subdirectories' (deepest first); each hard-link entry right after its file
/// (or after other links to it).
fn assert_archive_order(listing: &[Listed]) {
    let position: BTreeMap<&str, usize> = listing
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name.as_str(), i))
        .collect();
    for (i, m) in listing.iter().enumerate().filter(|(_, m)| m.kind == 'd') {
        if let Some((parent, _)) = m.name.trim_end_matches('/').rsplit_once('/')
            && let Some(&p) = position.get(format!("{parent}/").as_str())
        {
            assert!(
                p > i,
                "directory {} is archived after its directory {parent}/",
                m.name
            );
        }
    }
    let files: Vec<usize> = (0..listing.len())
        .filter(|&i| matches!(listing[i].kind, '-' | 'h'))
        .collect();
    if let (Some(&first), Some(&last)) = (files.first(), files.last()) {
        let misplaced: Vec<&str> = listing
            .iter()
            .enumerate()
            .filter(|&(i, m)| match m.kind {
                '-' | 'h' => false,
                'd' => i < last,
                _ => i > first,
            })
            .map(|(_, m)| m.name.as_str())
            .collect();
        assert!(
            misplaced.is_empty(),
            "symlinks and special files come before the first regular file ({}), \
             directories after the last ({}); these do not: {misplaced:?}",
            listing[first].name,
            listing[last].name
        );
    }
    for (i, m) in listing.iter().enumerate().filter(|(_, m)| m.kind == 'h') {
        let target = m.target.as_deref().unwrap();
        let at = position[target];
        let between_are_links = listing[at + 1..i]
            .iter()
            .all(|e| e.kind == 'h' && e.target.as_deref() == Some(target));
        assert!(
            at < i && between_are_links,
            "hard link {} does not follow its file {target} directly: {:?}",
            m.name,
            listing[at.min(i)..=i.max(at)]
                .iter()
                .map(|e| &e.name)
                .collect::<Vec<_>>()
        );
    }
}

/// The GNU listing of a seekless archive equals what the source tree says, field by
/// field, and keeps the order the archive promises.
fn assert_listing_matches(archive: &Path, root: &Path, prefix: &str) -> Vec<Listed> {
    let listing = gnu_listing(archive, &[]);
    assert_archive_order(&listing);
    let (got, groups) = resolve_hard_links(&listing);
    let want = expected_listing(root, prefix);
    let got_names: Vec<&String> = got.keys().collect();
    let want_names: Vec<&String> = want.keys().collect();
    assert_eq!(got_names, want_names, "the members GNU tar lists");
    for (name, w) in &want {
        assert_eq!(&got[name], w, "tar -tvf's line for {name}");
    }
    // Hard links: the names of one source file are one group, and only they.
    let source = scan(root);
    let mut by_inode: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    for (rel, node) in &source {
        if node.kind == Kind::File {
            let rel = lossy(rel);
            by_inode
                .entry(node.ino)
                .or_default()
                .insert(format!("{prefix}/{rel}"));
        }
    }
    let want_groups: BTreeSet<BTreeSet<String>> =
        by_inode.into_values().filter(|g| g.len() > 1).collect();
    let got_groups: BTreeSet<BTreeSet<String>> = groups.into_iter().collect();
    assert_eq!(got_groups, want_groups, "names archived as one file");
    listing
}

// ---------------------------------------------------------------------------------------
// Python's tarfile.

/// Prints one JSON line per member of the archive `argv[1]`: names and link targets as
/// hex of their bytes, the PAX records (values as hex), and a regular member's SHA-256
/// (up to 2 GiB).
const PY_LIST: &str = r#"
import hashlib, json, sys, tarfile
def raw(s):
    return s.encode('utf-8', 'surrogateescape').hex()
with tarfile.open(sys.argv[1], 'r:') as t:
    for m in t:
        d = {'name': raw(m.name), 'type': m.type.decode('latin-1'), 'size': m.size,
             'mode': m.mode, 'uid': m.uid, 'gid': m.gid, 'uname': m.uname,
             'gname': m.gname, 'linkname': raw(m.linkname), 'devmajor': m.devmajor,
             'devminor': m.devminor, 'sparse': m.sparse is not None,
             'mtime': m.pax_headers.get('mtime', str(int(m.mtime))),
             'pax': {k: raw(v) for k, v in m.pax_headers.items()}}
        if m.isreg() and m.size <= 1 << 31:
            h = hashlib.sha256()
            f = t.extractfile(m)
            for chunk in iter(lambda: f.read(1 << 20), b''):
                h.update(chunk)
            d['sha256'] = h.hexdigest()
        print(json.dumps(d))
"#;

/// One member as Python's tarfile reads it.
#[derive(Debug)]
struct PyMember {
    /// The name's bytes (tarfile drops a directory's trailing `/`; `./` is `.`).
    name: Vec<u8>,
    json: Value,
}

impl PyMember {
    fn pax(&self, key: &str) -> Option<Vec<u8>> {
        self.json["pax"][key].as_str().map(unhex)
    }
    fn str(&self, key: &str) -> String {
        self.json[key].as_str().unwrap().to_string()
    }
    fn u64(&self, key: &str) -> u64 {
        self.json[key].as_u64().unwrap()
    }
}

/// Every member of `archive` as Python's tarfile reads it, in archive order.
fn python_members(archive: &Path) -> Vec<PyMember> {
    let o = bounded(Command::new(python()).args(["-c", PY_LIST]).arg(archive));
    assert!(
        o.status.success(),
        "Python's tarfile cannot read {}:\n{}",
        archive.display(),
        stderr(&o)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let json: Value = serde_json::from_str(l).unwrap();
            PyMember {
                name: unhex(json["name"].as_str().unwrap()),
                json,
            }
        })
        .collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A PAX time (`1600000000.123456789`, `-631151999.5`) as seconds and nanoseconds
/// (nanoseconds always ≥ 0, as `struct timespec` has them).
fn pax_time(s: &str) -> (i64, i64) {
    let (negative, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let mut ns = int.parse::<i128>().unwrap() * 1_000_000_000;
    if !frac.is_empty() {
        let digits: String = format!("{frac:0<9}").chars().take(9).collect();
        ns += digits.parse::<i128>().unwrap();
    }
    if negative {
        ns = -ns;
    }
    (
        ns.div_euclid(1_000_000_000) as i64,
        ns.rem_euclid(1_000_000_000) as i64,
    )
}

/// What `sha256sum` says of a file.
fn sha256sum(path: &Path) -> String {
    let out = run(Command::new("sha256sum").arg("--").arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim_start_matches('\\')
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

// ---------------------------------------------------------------------------------------
// Trees: building them and comparing them.

/// What a tree entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Symlink(Vec<u8>),
    Fifo,
    Char(u64),
    Block(u64),
    Socket,
}

/// What `lstat` (and `llistxattr`) say of one entry.
#[derive(Debug, Clone)]
struct Node {
    kind: Kind,
    /// Permission bits with setuid, setgid and sticky.
    mode: u32,
    uid: u32,
    gid: u32,
    /// A regular file's size (0 for the rest).
    size: u64,
    /// Seconds and nanoseconds.
    mtime: (i64, i64),
    ino: u64,
    nlink: u64,
    /// Bytes allocated (`st_blocks` × 512).
    allocated: u64,
    /// The `user.*` extended attributes.
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
}

fn node(path: &Path) -> Node {
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = m.file_type();
    let kind = if t.is_file() {
        Kind::File
    } else if t.is_dir() {
        Kind::Dir
    } else if t.is_symlink() {
        Kind::Symlink(
            std::fs::read_link(path)
                .unwrap()
                .into_os_string()
                .into_vec(),
        )
    } else if t.is_fifo() {
        Kind::Fifo
    } else if t.is_char_device() {
        Kind::Char(m.rdev())
    } else if t.is_block_device() {
        Kind::Block(m.rdev())
    } else {
        Kind::Socket
    };
    Node {
        size: if kind == Kind::File { m.len() } else { 0 },
        xattrs: if matches!(kind, Kind::File | Kind::Dir) {
            xattrs(path)
        } else {
            BTreeMap::new()
        },
        kind,
        mode: m.mode() & 0o7777,
        uid: m.uid(),
        gid: m.gid(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ino: m.ino(),
        nlink: m.nlink(),
        allocated: m.blocks() * 512,
    }
}

/// Every entry under `root`, `root` itself included (as the empty path), by its path
/// relative to `root` as bytes.
fn scan(root: &Path) -> BTreeMap<Vec<u8>, Node> {
    let mut all = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let path = root.join(&rel);
        let n = node(&path);
        if n.kind == Kind::Dir {
            for e in std::fs::read_dir(&path).unwrap() {
                stack.push(rel.join(e.unwrap().file_name()));
            }
        }
        all.insert(rel.into_os_string().into_vec(), n);
    }
    all
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether two files hold the same bytes (read in 1 MiB pieces: some are sparse GiBs).
fn same_content(a: &Path, b: &Path) -> bool {
    let mut fa = std::fs::File::open(a).unwrap();
    let mut fb = std::fs::File::open(b).unwrap();
    let mut ba = vec![0u8; 1 << 20];
    let mut bb = vec![0u8; 1 << 20];
    loop {
        let na = read_full(&mut fa, &mut ba);
        let nb = read_full(&mut fb, &mut bb);
        if na != nb || ba[..na] != bb[..nb] {
            return false;
        }
        if na == 0 {
            return true;
        }
    }
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]).unwrap() {
            0 => break,
            k => n += k,
        }
    }
    n
}

/// What a comparison of an extracted tree with its source leaves out.
#[derive(Clone, Copy)]
struct Compare {
    /// Compare the `user.*` extended attributes (the archive has them: `--xattrs`).
    xattrs: bool,
    /// Compare mtimes to the nanosecond (else to the second).
    nanoseconds: bool,
}

const EVERYTHING: Compare = Compare {
    xattrs: true,
    nanoseconds: true,
};

/// The tree extracted at `dst` is the tree at `src`: the same names (sockets aside),
/// and for each the same kind, mode, owner, mtime, symlink target, device number,
/// content (regular files), extended attributes if asked; hard links of one source file
/// are one file again, and a sparse source file is sparse again.
fn assert_same_tree(src: &Path, dst: &Path, what: &str, compare: Compare) {
    let want: BTreeMap<Vec<u8>, Node> = scan(src)
        .into_iter()
        .filter(|(_, n)| n.kind != Kind::Socket)
        .collect();
    let got = scan(dst);
    let names = |m: &BTreeMap<Vec<u8>, Node>| m.keys().map(|k| lossy(k)).collect::<Vec<_>>();
    assert_eq!(names(&got), names(&want), "{what}: the names extracted");
    for (rel, w) in &want {
        let g = &got[rel];
        let shown = format!("{what}: {:?}", lossy(rel));
        assert_eq!(g.kind, w.kind, "{shown}: kind");
        assert_eq!(
            (g.mode, g.uid, g.gid),
            (w.mode, w.uid, w.gid),
            "{shown}: mode {:o}, owner",
            w.mode
        );
        if compare.nanoseconds {
            assert_eq!(g.mtime, w.mtime, "{shown}: mtime (seconds, nanoseconds)");
        } else {
            assert_eq!(g.mtime.0, w.mtime.0, "{shown}: mtime (seconds)");
        }
        if compare.xattrs {
            assert_eq!(g.xattrs, w.xattrs, "{shown}: user.* extended attributes");
        }
        if w.kind == Kind::File {
            assert_eq!(g.size, w.size, "{shown}: size");
            assert!(
                same_content(
                    &src.join(OsStr::from_bytes(rel)),
                    &dst.join(OsStr::from_bytes(rel))
                ),
                "{shown}: content differs"
            );
            if w.allocated < w.size {
                assert!(
                    g.allocated <= w.allocated + (1 << 20),
                    "{shown}: sparse source ({} of {} bytes allocated) extracted with {} \
                     bytes allocated: its holes were lost",
                    w.allocated,
                    w.size,
                    g.allocated
                );
            }
        }
    }
    // Hard links: names of one source file share an inode again, all of them.
    let mut groups: BTreeMap<u64, Vec<&Vec<u8>>> = BTreeMap::new();
    for (rel, w) in &want {
        if w.kind == Kind::File && w.nlink > 1 {
            groups.entry(w.ino).or_default().push(rel);
        }
    }
    for names in groups.values().filter(|g| g.len() > 1) {
        let inodes: BTreeSet<u64> = names.iter().map(|n| got[*n].ino).collect();
        let shown: Vec<String> = names.iter().map(|n| lossy(n)).collect();
        assert_eq!(
            inodes.len(),
            1,
            "{what}: {shown:?} are one file in the source but not once extracted"
        );
        assert_eq!(
            got[names[0]].nlink,
            names.len() as u64,
            "{what}: {shown:?}: link count once extracted"
        );
    }
}

fn c_path(path: &Path) -> CString {
    CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// The `user.*` extended attributes of `path` (not following a symlink).
fn xattrs(path: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let c = c_path(path);
    let mut names = vec![0u8; 1 << 16];
    // SAFETY: the buffer is valid for its length; the path is NUL-terminated.
    let n = unsafe { libc::llistxattr(c.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOTSUP) {
            return BTreeMap::new();
        }
        panic!("llistxattr {}: {e}", path.display());
    }
    let mut all = BTreeMap::new();
    for name in names[..n as usize].split(|b| *b == 0) {
        if !name.starts_with(b"user.") {
            continue;
        }
        let cname = CString::new(name).unwrap();
        let mut value = vec![0u8; 1 << 16];
        // SAFETY: as above; the name is NUL-terminated.
        let len = unsafe {
            libc::lgetxattr(
                c.as_ptr(),
                cname.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        assert!(
            len >= 0,
            "lgetxattr {} {}: {}",
            path.display(),
            lossy(name),
            std::io::Error::last_os_error()
        );
        value.truncate(len as usize);
        all.insert(name.to_vec(), value);
    }
    all
}

fn set_xattr(path: &Path, name: &str, value: &[u8]) {
    let c = c_path(path);
    let cname = CString::new(name).unwrap();
    // SAFETY: valid NUL-terminated strings and a buffer valid for its length.
    let rc = unsafe {
        libc::lsetxattr(
            c.as_ptr(),
            cname.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    assert_eq!(
        rc,
        0,
        "setting {name} on {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
}

/// Sets the mtime (and atime) of `path` itself, a symlink too.
fn set_mtime(path: &Path, sec: i64, nsec: i64) {
    let c = c_path(path);
    let t = libc::timespec {
        tv_sec: sec as libc::time_t,
        tv_nsec: nsec as _,
    };
    // SAFETY: a NUL-terminated path and an array of two timespecs.
    let rc = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            [t, t].as_ptr(),
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

fn mkfifo(path: &Path) {
    let c = c_path(path);
    // SAFETY: a NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

/// A character (`c`) or block (`b`) device node (root only).
fn mknod(path: &Path, kind: char, major: u32, minor: u32) {
    let c = c_path(path);
    let (fmt, perm) = match kind {
        'c' => (libc::S_IFCHR, 0o644),
        _ => (libc::S_IFBLK, 0o660),
    };
    // SAFETY: a NUL-terminated path and plain integers.
    let rc = unsafe { libc::mknod(c.as_ptr(), fmt | perm, libc::makedev(major, minor)) };
    assert_eq!(rc, 0, "mknod: {}", std::io::Error::last_os_error());
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn symlink(target: impl AsRef<Path>, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// A tree with one of everything tar stores (`tree` is created):
///
/// plain files (empty, one block exactly, a few blocks, 100 kB), modes 0755, 0600 and
/// setuid, a sticky directory, nested directories, a file of three names, symlinks
/// (relative, absolute, dangling, to a directory), a FIFO and a socket, extended
/// attributes (one binary), and mtimes with and without nanoseconds, one before 1970 and
/// one after 2242 (past what the ustar header holds). As root also an owner that is not
/// root (uid 1234, gid 5678, no names) and two device nodes.
fn build_tree(tree: &Path, rng: &mut Rng) {
    let root = is_root();
    let dirs = ["", "dir", "dir/nested", "dir/nested/deep", "sticky"];
    for d in dirs {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    chmod(&tree.join("dir"), 0o750);
    chmod(&tree.join("sticky"), 0o1777);
    let files: [(&str, Vec<u8>); 10] = [
        ("empty", Vec::new()),
        ("small.txt", b"hello\n".to_vec()),
        ("exact-512", rng.bytes(512)),
        ("random-100k", rng.bytes(100_000)),
        ("exec.sh", b"#!/bin/sh\necho hi\n".to_vec()),
        ("private", rng.bytes(3000)),
        ("setuid", rng.bytes(1500)),
        ("dir/nested/deep/file", rng.bytes(20_000)),
        ("hard-a", rng.bytes(7000)),
        ("old", b"from 1950\n".to_vec()),
    ];
    for (name, data) in &files {
        std::fs::write(tree.join(name), data).unwrap();
    }
    std::fs::write(tree.join("future"), b"from 2300\n").unwrap();
    chmod(&tree.join("exec.sh"), 0o755);
    if root {
        std::os::unix::fs::lchown(tree.join("private"), Some(1234), Some(5678)).unwrap();
    }
    chmod(&tree.join("private"), 0o600);
    chmod(&tree.join("setuid"), 0o4755);
    std::fs::hard_link(tree.join("hard-a"), tree.join("dir/hard-b")).unwrap();
    std::fs::hard_link(tree.join("hard-a"), tree.join("hard-c")).unwrap();
    symlink("small.txt", &tree.join("link-rel"));
    symlink("/etc/hostname", &tree.join("link-abs"));
    symlink("nowhere", &tree.join("link-dangling"));
    symlink("dir", &tree.join("link-dir"));
    mkfifo(&tree.join("fifo"));
    if root {
        mknod(&tree.join("char-dev"), 'c', 1, 3);
        mknod(&tree.join("block-dev"), 'b', 7, 200);
    }
    drop(std::os::unix::net::UnixListener::bind(tree.join("sock")).unwrap());
    set_xattr(&tree.join("small.txt"), "user.comment", b"hello");
    set_xattr(&tree.join("random-100k"), "user.bin", b"\0\xff\x01binary\n");
    set_xattr(&tree.join("dir"), "user.dir", b"a directory's");
    // Distinct mtimes: whole seconds, nanoseconds, half seconds; then the two far ones.
    let mut all: Vec<Vec<u8>> = scan(tree).into_keys().collect();
    all.sort();
    for (i, rel) in all.iter().enumerate() {
        let nsec = match i % 3 {
            0 => 0,
            1 => (i as i64 * 123_456_789) % 1_000_000_000,
            _ => 500_000_000,
        };
        set_mtime(
            &tree.join(OsStr::from_bytes(rel)),
            1_600_000_000 + i as i64 * 86_401,
            nsec,
        );
    }
    set_mtime(&tree.join("old"), -631_152_000, 0);
    set_mtime(&tree.join("future"), 10_413_792_000, 1);
}

/// Random files under `dir`: `count` files of up to `max` bytes in a few directories.
fn random_files(dir: &Path, count: usize, max: u64, rng: &mut Rng) -> Vec<PathBuf> {
    (0..count)
        .map(|i| {
            let rel = PathBuf::from(format!("d{}/f{i:04}.bin", i % 3));
            std::fs::create_dir_all(dir.join(&rel).parent().unwrap()).unwrap();
            let len = rng.below(max) as usize + 1;
            std::fs::write(dir.join(&rel), rng.bytes(len)).unwrap();
            rel
        })
        .collect()
}

/// The entries of a directory, by name.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The archive as a byte stream is a POSIX one: ustar headers with the POSIX magic
/// (`ustar\0` `00`, not GNU's `ustar  \0`), two zero blocks at the end, padded to a
/// 10240-byte record.
fn assert_posix_layout(bytes: &[u8], what: &str) {
    assert!(bytes.len() >= 10240, "{what}: {} bytes", bytes.len());
    assert_eq!(
        bytes.len() % 10240,
        0,
        "{what}: {} bytes is not whole 10240-byte records",
        bytes.len()
    );
    assert_eq!(
        &bytes[257..265],
        b"ustar\x0000",
        "{what}: the first header's magic and version"
    );
    assert!(
        bytes[bytes.len() - 1024..].iter().all(|b| *b == 0),
        "{what}: the archive does not end with two zero blocks"
    );
}

// ---------------------------------------------------------------------------------------
// 1. What GNU tar lists, extracts and compares.

#[test]
fn gnu_tar_lists_every_member_with_its_type_mode_owner_size_and_mtime() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    build_tree(&t.path().join("tree"), &mut Rng::new(1));
    let archive = t.path().join("tree.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree"));
    assert_exit_quiet(&o, 0);
    assert_eq!(
        messages(&o),
        vec!["seekless: tree/sock: socket ignored".to_string()],
        "the socket, and nothing else, is named"
    );
    assert_posix_layout(&std::fs::read(&archive).unwrap(), "tree.tar");
    let listing = assert_listing_matches(&archive, &t.path().join("tree"), "tree");
    if is_root() {
        let dev = |n: &str| listing.iter().find(|m| m.name == n).unwrap().clone();
        assert_eq!(
            (dev("tree/char-dev").kind, dev("tree/char-dev").size),
            ('c', "1,3".to_string())
        );
        assert_eq!(
            (dev("tree/block-dev").kind, dev("tree/block-dev").size),
            ('b', "7,200".to_string())
        );
    }
    // User and group names, as Python reads them: the system's names for the ids, none
    // for an id without one (1234 and 5678, as root).
    if require_tool(test, python()) {
        let members = python_members(&archive);
        for m in &members {
            let name = lossy(&m.name);
            assert_eq!(
                (m.str("uname"), m.str("gname")),
                (
                    getent_name("passwd", m.u64("uid")),
                    getent_name("group", m.u64("gid"))
                ),
                "{name}: user and group names of {}/{}",
                m.u64("uid"),
                m.u64("gid")
            );
        }
        let own = members
            .iter()
            .find(|m| m.name == b"tree/small.txt")
            .unwrap();
        assert_eq!(own.u64("uid"), u64::from(euid()));
        assert!(!own.str("uname").is_empty(), "the running user has a name");
    }
}

#[test]
fn extracting_with_gnu_tar_restores_content_mode_owner_mtime_links_and_xattrs() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    build_tree(&tree, &mut Rng::new(2));
    // A fraction of a second before 1970 too (PAX writes it as -631151999.5).
    std::fs::write(tree.join("old-fraction"), b"1950 and a half second\n").unwrap();
    set_mtime(&tree.join("old-fraction"), -631_152_000, 500_000_000);
    set_mtime(&tree, 1_700_000_000, 999_999_999);
    let archive = t.path().join("tree.tar");
    let o = bounded(
        seekless_tar(t.path())
            .args(["--xattrs", "-f"])
            .arg(&archive)
            .arg("tree"),
    );
    assert_exit_quiet(&o, 0);
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &["--xattrs", "--xattrs-include=*"]);
    assert_same_tree(&tree, &out.join("tree"), "GNU tar -x --xattrs", EVERYTHING);

    // Without --xattrs the archive has no xattr records.
    let plain = t.path().join("plain.tar");
    assert_exit_quiet(
        &bounded(seekless_tar(t.path()).arg("-f").arg(&plain).arg("tree")),
        0,
    );
    if require_tool(test, python()) {
        for m in python_members(&plain) {
            let keys: Vec<String> = m.json["pax"]
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| k.starts_with("SCHILY.xattr"))
                .cloned()
                .collect();
            assert!(
                keys.is_empty(),
                "{}: {keys:?} without --xattrs",
                lossy(&m.name)
            );
        }
        // With it, the records are GNU tar's: SCHILY.xattr.NAME=VALUE, byte-exact.
        let members = python_members(&archive);
        let bin = members
            .iter()
            .find(|m| m.name == b"tree/random-100k")
            .expect("tree/random-100k in the archive");
        assert_eq!(
            bin.pax("SCHILY.xattr.user.bin").as_deref(),
            Some(&b"\0\xff\x01binary\n"[..]),
            "the binary xattr's PAX record"
        );
        // Every mtime, to the nanosecond, in the PAX records.
        let source = scan(&tree);
        for m in &members {
            let rel = m.name.strip_prefix(b"tree").unwrap();
            let rel = rel.strip_prefix(b"/").unwrap_or(rel);
            let want = source[rel].mtime;
            assert_eq!(
                pax_time(&m.str("mtime")),
                want,
                "{}: the archived mtime ({})",
                lossy(&m.name),
                m.str("mtime")
            );
        }
    }
}

/// A tree whose directories' files are written in turn (`a/f0`, `b/f0`, `ro/f0`, `a/f1`,
/// …, each synced), so that in disk order no directory's files are together; `ro` is
/// read-only (0555); every directory has an mtime of its own.
fn interleaved_tree(tree: &Path, rng: &mut Rng) {
    use std::io::Write;
    for d in ["a", "b", "ro"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    for i in 0..8 {
        for d in ["a", "b", "ro"] {
            let mut f = std::fs::File::create(tree.join(d).join(format!("f{i}"))).unwrap();
            f.write_all(&rng.bytes(40_000)).unwrap();
            f.sync_all().unwrap();
        }
    }
    chmod(&tree.join("ro"), 0o555);
    for (i, d) in ["a", "b", "ro", ""].iter().enumerate() {
        set_mtime(&tree.join(d), 1_400_000_000 + i as i64 * 1000, 250_000_000);
    }
}

/// Makes every directory under a path writable again when dropped, so that a scratch
/// directory holding read-only directories can be removed by a user other than root,
/// even after a failed test.
struct WritableOnDrop(PathBuf);

impl Drop for WritableOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("chmod")
            .arg("-R")
            .arg("u+w")
            .arg(&self.0)
            .status();
    }
}

/// [`interleaved_tree`] at `DIR/tree`, archived by seekless (`DIR/seekless.tar`) and, as
/// the control, by GNU tar (`DIR/gnu.tar`): what GNU tar restores from its own archive is
/// what `tar -x` can restore. Returns the tree and the two archives, GNU's first.
fn interleaved_archives(test: &str, dir: &Path) -> (PathBuf, [(PathBuf, &'static str); 2]) {
    chmod(dir, 0o755);
    let tree = dir.join("tree");
    interleaved_tree(&tree, &mut Rng::new(16));
    let ours = dir.join("seekless.tar");
    assert_exit_quiet(
        &bounded(seekless_tar(dir).arg("-f").arg(&ours).arg("tree")),
        0,
    );
    let theirs = dir.join("gnu.tar");
    run(gnu_tar(dir)
        .args(["--format=posix", "-cf"])
        .arg(&theirs)
        .arg("tree"));
    let dir_of = |n: &str| n.rsplit_once('/').map(|(d, _)| d.to_string());
    let changes = gnu_names(&ours, &[])
        .windows(2)
        .filter(|w| !w[0].ends_with('/') && !w[1].ends_with('/'))
        .filter(|w| dir_of(&w[0]) != dir_of(&w[1]))
        .count();
    eprintln!("{test}: seekless's archive changes directory {changes} times between files");
    (tree, [(theirs, "gnu"), (ours, "seekless")])
}

#[test]
fn plain_gnu_tar_x_restores_directory_mtimes_as_it_does_for_its_own_archives() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let _writable = WritableOnDrop(t.path().to_path_buf());
    let (tree, archives) = interleaved_archives(test, t.path());
    // Plain `tar -xpf`, no --delay-directory-restore: directories keep mtimes and modes.
    for (archive, name) in &archives {
        let out = t.path().join(format!("out-{name}"));
        std::fs::create_dir(&out).unwrap();
        let o = bounded(gnu_tar(&out).arg("-xpf").arg(archive));
        assert_sound_read(&o, &format!("tar -xpf {name}'s archive"));
        assert_same_tree(
            &tree,
            &out.join("tree"),
            &format!("plain tar -xpf of {name}'s archive"),
            Compare {
                xattrs: false,
                nanoseconds: true,
            },
        );
    }
}

#[test]
fn plain_gnu_tar_x_by_a_user_extracts_every_file_of_a_read_only_directory() {
    let test = test_name!();
    // Runs tar as nobody through setpriv (root is not bound by a directory's mode).
    if !require_root(test) || !require_tools(test, &["tar", "setpriv"]) {
        return;
    }
    let t = scratch!();
    let _writable = WritableOnDrop(t.path().to_path_buf());
    let (tree, archives) = interleaved_archives(test, t.path());
    // A directory's mode set before its files are in would lock them out.
    for (archive, name) in &archives {
        let out = t.path().join(format!("nobody-{name}"));
        std::fs::create_dir(&out).unwrap();
        chmod(&out, 0o777);
        let o = bounded(
            Command::new("setpriv")
                .current_dir(&out)
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .args(["tar", "-xf"])
                .arg(archive),
        );
        assert_sound_read(&o, &format!("tar -xf of {name}'s archive as nobody"));
        assert_eq!(
            find_paths(&out.join("tree")),
            find_paths(&tree),
            "tar -xf of {name}'s archive as nobody"
        );
    }
}

#[test]
fn gnu_tar_compare_finds_no_difference_and_a_changed_byte_is_found() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    build_tree(&tree, &mut Rng::new(3));
    write_corpus(&tree.join("corpus"), 20, 3);
    let archive = t.path().join("tree.tar");
    assert_exit_quiet(
        &bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree")),
        0,
    );
    let compare = || bounded(gnu_tar(t.path()).arg("--compare").arg("-f").arg(&archive));
    let o = compare();
    assert_sound_read(&o, "tar --compare");
    assert!(
        o.stdout.is_empty(),
        "tar --compare found differences:\n{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // The comparison has teeth: one byte changed, size and mtime kept, is found.
    let victim = tree.join("random-100k");
    let before = std::fs::symlink_metadata(&victim).unwrap();
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[50_000] ^= 0xff;
    std::fs::write(&victim, bytes).unwrap();
    set_mtime(&victim, before.mtime(), before.mtime_nsec());
    let o = compare();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        report.contains("tree/random-100k: Contents differ"),
        "{report}"
    );
}

#[test]
fn bsdtar_and_python_tarfile_read_the_archive_as_gnu_tar_does() {
    let test = test_name!();
    if !require_tools(test, &["tar", "bsdtar", "sha256sum", python()]) {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    build_tree(&tree, &mut Rng::new(4));
    let archive = t.path().join("tree.tar");
    assert_exit_quiet(
        &bounded(
            seekless_tar(t.path())
                .args(["--xattrs", "-f"])
                .arg(&archive)
                .arg("tree"),
        ),
        0,
    );
    let names = gnu_names(&archive, &[]);

    // bsdtar: the same names, and the same tree once extracted.
    let o = bounded(Command::new("bsdtar").arg("-tf").arg(&archive));
    assert_sound_read(&o, "bsdtar -tf");
    let bsd: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(bsd, names, "bsdtar -tf lists what tar -tf lists");
    let out = t.path().join("bsd");
    std::fs::create_dir(&out).unwrap();
    let o = bounded(
        Command::new("bsdtar")
            .args(["--xattrs", "-xpf"])
            .arg(&archive)
            .arg("-C")
            .arg(&out),
    );
    assert_sound_read(&o, "bsdtar -xpf");
    assert_same_tree(&tree, &out.join("tree"), "bsdtar -x", EVERYTHING);

    // Python: the same names, kinds, modes, owners, links and contents.
    let members = python_members(&archive);
    let py_names: Vec<String> = members.iter().map(|m| lossy(&m.name)).collect();
    let gnu_trimmed: Vec<String> = names
        .iter()
        .map(|n| n.trim_end_matches('/').to_string())
        .collect();
    assert_eq!(py_names, gnu_trimmed, "tarfile's names");
    let source = scan(&tree);
    let first_names: BTreeSet<&str> = members
        .iter()
        .filter(|m| m.str("type") == "1")
        .map(|m| m.json["linkname"].as_str().unwrap())
        .collect();
    for m in &members {
        let name = lossy(&m.name);
        let rel = name.strip_prefix("tree").unwrap().trim_start_matches('/');
        let s = &source[rel.as_bytes()];
        let kind = m.str("type");
        let want_kind = match &s.kind {
            Kind::File => "0",
            Kind::Dir => "5",
            Kind::Symlink(_) => "2",
            Kind::Fifo => "6",
            Kind::Char(_) => "3",
            Kind::Block(_) => "4",
            Kind::Socket => panic!("{name}: a socket was archived"),
        };
        if kind == "1" {
            assert_eq!(want_kind, "0", "{name}: hard link to a non-file");
            let first = lossy(&unhex(m.json["linkname"].as_str().unwrap()));
            let first_rel = first.strip_prefix("tree/").unwrap();
            assert_eq!(
                source[first_rel.as_bytes()].ino,
                s.ino,
                "{name} is archived as a link to {first}, another file"
            );
        } else {
            assert_eq!(kind, want_kind, "{name}: member type");
        }
        assert_eq!(m.u64("mode") as u32, s.mode, "{name}: mode");
        assert_eq!(
            (m.u64("uid") as u32, m.u64("gid") as u32),
            (s.uid, s.gid),
            "{name}: owner"
        );
        assert_eq!(pax_time(&m.str("mtime")), s.mtime, "{name}: mtime");
        match &s.kind {
            Kind::File if kind == "0" => {
                assert_eq!(m.u64("size"), s.size, "{name}: size");
                assert_eq!(
                    m.str("sha256"),
                    sha256sum(&tree.join(rel)),
                    "{name}: content"
                );
            }
            Kind::Symlink(target) => {
                assert_eq!(
                    &unhex(m.json["linkname"].as_str().unwrap()),
                    target,
                    "{name}"
                );
            }
            Kind::Char(rdev) | Kind::Block(rdev) => {
                assert_eq!(
                    (m.u64("devmajor"), m.u64("devminor")),
                    (u64::from(libc::major(*rdev)), u64::from(libc::minor(*rdev))),
                    "{name}: device number"
                );
            }
            _ => {}
        }
    }
    assert!(
        !first_names.is_empty(),
        "the tree's file of three names gave no hard-link members"
    );
}

// ---------------------------------------------------------------------------------------
// 2. Compression.

#[test]
fn compressed_archives_chosen_by_suffix_or_flag_extract_with_gnu_tar() {
    let test = test_name!();
    if !require_tools(test, &["tar", "gzip", "zstd"]) {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let mut rng = Rng::new(5);
    random_files(&tree, 40, 200_000, &mut rng);
    std::fs::write(tree.join("zeros"), vec![0u8; 3 << 20]).unwrap();
    const GZIP: &[u8] = b"\x1f\x8b";
    const ZSTD: &[u8] = b"\x28\xb5\x2f\xfd";
    let check = |archive: &Path, magic: &[u8], flag: &str, what: &str| {
        let bytes = std::fs::read(archive).unwrap();
        assert!(
            bytes.starts_with(magic),
            "{what}: starts with {:02x?}",
            &bytes[..bytes.len().min(8)]
        );
        let out = t.path().join(format!("out-{what}"));
        gnu_extract(archive, &out, &[flag]);
        assert_same_tree(
            &tree,
            &out.join("tree"),
            what,
            Compare {
                xattrs: false,
                nanoseconds: true,
            },
        );
        // What is inside is the same POSIX archive, whole records and all.
        let tool = if magic == GZIP { "gzip" } else { "zstd" };
        let plain = run(Command::new(tool).arg("-dc").arg(archive)).stdout;
        assert_posix_layout(&plain, what);
    };
    for (name, magic, flag) in [
        ("a.tar.gz", GZIP, "-z"),
        ("a.tgz", GZIP, "-z"),
        ("a.tar.zst", ZSTD, "--zstd"),
        ("a.tzst", ZSTD, "--zstd"),
    ] {
        let archive = t.path().join(name);
        assert_exit_quiet(
            &bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree")),
            0,
        );
        check(&archive, magic, flag, name);
    }
    // To standard output, by flag.
    for (flag, magic, name) in [
        ("-z", GZIP, "stdout.tar.gz"),
        ("--zstd", ZSTD, "stdout.tar.zst"),
    ] {
        let o = bounded(seekless_tar(t.path()).arg(flag).arg("tree"));
        assert_exit(&o, 0);
        let archive = t.path().join(name);
        std::fs::write(&archive, &o.stdout).unwrap();
        check(&archive, magic, flag, name);
    }
    // A plain name, no flag: not compressed.
    let archive = t.path().join("plain.tar");
    assert_exit_quiet(
        &bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree")),
        0,
    );
    assert_posix_layout(&std::fs::read(&archive).unwrap(), "plain.tar");
}

// ---------------------------------------------------------------------------------------
// 3. Names.

/// A name of `len` bytes made of `fill`.
fn component(fill: char, len: usize) -> String {
    std::iter::repeat_n(fill, len).collect()
}

/// `find . -print0` run in `dir`: every path under it, as bytes, sorted (find goes
/// through directories relative to each other: no path length limit).
fn find_paths(dir: &Path) -> Vec<Vec<u8>> {
    let out = run(Command::new("find").current_dir(dir).args([".", "-print0"]));
    let mut paths: Vec<Vec<u8>> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    paths.sort();
    paths
}

#[test]
fn odd_names_survive_byte_exact() {
    let test = test_name!();
    if !require_tools(test, &["tar", "find", python()]) {
        return;
    }
    let t = scratch!();
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let mut rng = Rng::new(6);
    // 15 directories of 250 bytes and a file of 235: a 4000-byte relative path.
    let mut deep = PathBuf::new();
    for i in 0..15 {
        deep.push(component(char::from(b'a' + i), 250));
    }
    let deep_file = deep.join(component('z', 235));
    assert_eq!(deep_file.as_os_str().len(), 4000);
    assert!(
        src.join(&deep_file).as_os_str().len() < libc::PATH_MAX as usize,
        "the test's own paths stay under PATH_MAX: shorten the scratch directory's name"
    );
    std::fs::create_dir_all(src.join(&deep)).unwrap();
    let odd: Vec<Vec<u8>> = vec![
        b"new\nline".to_vec(),
        b"back\\slash".to_vec(),
        b"caf\xe9".to_vec(),
        b"\xff\xfe dir".to_vec(),
        b"\xff\xfe dir/caf\xe9 inside".to_vec(),
        b"  leading spaces and trailing  ".to_vec(),
        b"-starts-with-dash".to_vec(),
        b"tab\there".to_vec(),
        b"\xe2\x82\xac euro, valid UTF-8".to_vec(),
        component('n', 250).into_bytes(),
        [component('l', 150).as_bytes(), b" caf\xe9"].concat(),
        deep_file.as_os_str().as_bytes().to_vec(),
    ];
    std::fs::create_dir(src.join(OsStr::from_bytes(b"\xff\xfe dir"))).unwrap();
    for name in odd.iter().filter(|n| n.as_slice() != b"\xff\xfe dir") {
        let len = rng.below(3000) as usize;
        std::fs::write(src.join(OsStr::from_bytes(name)), rng.bytes(len)).unwrap();
    }
    // Links with long and odd names and targets (PAX linkpath).
    symlink(&deep_file, &src.join("to-the-deep-file"));
    symlink(
        OsStr::from_bytes(b"caf\xe9"),
        &src.join(OsStr::from_bytes(b"link \xe9\n")),
    );
    std::fs::hard_link(src.join(&deep_file), src.join(deep.join("second name"))).unwrap();

    // The whole tree, from inside it.
    let archive = t.path().join("odd.tar");
    let o = bounded(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&archive)
            .arg("-C")
            .arg(&src)
            .arg("."),
    );
    assert_exit_quiet(&o, 0);
    // GNU tar takes the bytes of a PAX path as they are, and warns of nothing.
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_eq!(
        find_paths(&out),
        find_paths(&src),
        "the paths GNU tar extracts, as bytes"
    );
    assert_same_tree(
        &src,
        &out,
        "odd names",
        Compare {
            xattrs: false,
            nanoseconds: true,
        },
    );
    let members = python_members(&archive);
    let deep_member = [b"./".as_slice(), deep_file.as_os_str().as_bytes()].concat();
    let m = members
        .iter()
        .find(|m| m.name == deep_member)
        .expect("the 4000-byte path, whole, in Python's listing");
    assert_eq!(
        m.pax("path"),
        Some(deep_member.clone()),
        "a PAX path record"
    );
    let link = members
        .iter()
        .find(|m| m.name == b"./to-the-deep-file")
        .unwrap();
    assert_eq!(
        unhex(link.json["linkname"].as_str().unwrap()),
        deep_file.as_os_str().as_bytes(),
        "a 4000-byte symlink target"
    );
    // A name that is not UTF-8 and too long for the ustar header: a PAX path with its
    // bytes as they are and no `hdrcharset` record, as GNU tar writes it (its 1.34 warns
    // of one). (A short name fits in the header as it is.)
    let long_latin1 = [
        b"./".as_slice(),
        component('l', 150).as_bytes(),
        b" caf\xe9",
    ]
    .concat();
    let m = members.iter().find(|m| m.name == long_latin1).unwrap();
    assert_eq!(
        m.pax("path"),
        Some(long_latin1.clone()),
        "its PAX path record"
    );
    assert_eq!(m.pax("hdrcharset"), None, "no hdrcharset record");

    // A NUL-separated list of names, from standard input: exactly those, as given.
    let listed: Vec<&[u8]> = vec![
        &b"new\nline"[..],
        &b"caf\xe9"[..],
        &b"\xff\xfe dir/caf\xe9 inside"[..],
        deep_file.as_os_str().as_bytes(),
    ];
    let mut list = Vec::new();
    for name in &listed {
        list.extend_from_slice(name);
        list.push(0);
    }
    let from_list = t.path().join("list.tar");
    let o = bounded_with_input(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&from_list)
            .arg("-C")
            .arg(&src)
            .args(["--files-from", "-", "-0"]),
        Some(list),
    );
    assert_exit_quiet(&o, 0);
    let got: BTreeSet<Vec<u8>> = python_members(&from_list)
        .into_iter()
        .map(|m| m.name)
        .collect();
    let want: BTreeSet<Vec<u8>> = listed.iter().map(|n| n.to_vec()).collect();
    assert_eq!(
        got.iter().map(|n| lossy(n)).collect::<Vec<_>>(),
        want.iter().map(|n| lossy(n)).collect::<Vec<_>>(),
        "members of a --files-from -0 list"
    );
    assert_eq!(got, want, "the same, as bytes");
}

#[test]
fn a_leading_slash_is_stripped_with_gnu_tars_message() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 5, 5000, &mut Rng::new(7));
    let archive = t.path().join("abs.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg(&tree));
    assert_exit_quiet(&o, 0);
    assert_eq!(
        messages(&o),
        vec!["seekless: Removing leading `/' from member names".to_string()],
        "GNU tar's words, once"
    );
    let relative = tree
        .strip_prefix("/")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    for name in gnu_names(&archive, &[]) {
        assert!(
            name.starts_with(&relative) && !name.starts_with('/'),
            "{name} is not {relative} without its leading /"
        );
    }
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_same_tree(
        &tree,
        &out.join(&relative),
        "absolute input",
        Compare {
            xattrs: false,
            nanoseconds: true,
        },
    );
}

// ---------------------------------------------------------------------------------------
// 4. Special files and symbolic links.

#[test]
fn fifos_and_devices_are_archived_as_headers_without_being_opened() {
    let test = test_name!();
    // mknod needs root; the FIFO has no writer: opened for reading, the run would hang.
    if !require_root(test) || !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    mkfifo(&tree.join("fifo"));
    mknod(&tree.join("null-like"), 'c', 1, 3);
    // A block device of a loop minor nothing has: opening it would fail.
    mknod(&tree.join("no-such-disk"), 'b', 7, 250);
    std::fs::write(tree.join("file"), b"data\n").unwrap();
    let archive = t.path().join("special.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree"));
    assert_exit_quiet(&o, 0);
    assert!(messages(&o).is_empty(), "{}", stderr(&o));
    assert_listing_matches(&archive, &tree, "tree");
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_same_tree(&tree, &out.join("tree"), "special files", EVERYTHING);

    // Named as inputs themselves: the same headers (as GNU tar stores them).
    let named = t.path().join("named.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&named).args([
        "tree/fifo",
        "tree/null-like",
        "tree/no-such-disk",
    ]));
    assert_exit_quiet(&o, 0);
    let kinds: Vec<(String, char, String)> = gnu_listing(&named, &[])
        .into_iter()
        .map(|m| (m.name, m.kind, m.size))
        .collect();
    assert_eq!(
        kinds.into_iter().collect::<BTreeSet<_>>(),
        BTreeSet::from([
            ("tree/fifo".to_string(), 'p', "0".to_string()),
            ("tree/null-like".to_string(), 'c', "1,3".to_string()),
            ("tree/no-such-disk".to_string(), 'b', "7,250".to_string()),
        ]),
        "special files named as inputs"
    );
}

#[test]
fn symlinks_are_archived_as_links_and_followed_only_with_follow() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let target = t.path().join("target");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::create_dir_all(target.join("inner")).unwrap();
    std::fs::write(target.join("file.txt"), b"pointed to\n").unwrap();
    std::fs::write(target.join("inner/deep.txt"), b"deep\n").unwrap();
    std::fs::write(tree.join("sub/own.txt"), b"own\n").unwrap();
    symlink(target.join("file.txt"), &tree.join("sub/to-file"));
    symlink(&target, &tree.join("sub/to-dir"));
    symlink(t.path().join("tree/sub"), &t.path().join("named-link"));

    let kinds = |archive: &Path| -> BTreeMap<String, (char, String, Option<String>)> {
        gnu_listing(archive, &[])
            .into_iter()
            .map(|m| (m.name, (m.kind, m.size, m.target)))
            .collect()
    };
    // Without -L: links stay links, a link named as input too.
    let plain = t.path().join("plain.tar");
    let o = bounded(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&plain)
            .args(["tree", "named-link"]),
    );
    assert_exit_quiet(&o, 0);
    let got = kinds(&plain);
    let link = |to: &Path| ('l', "0".to_string(), Some(to.to_str().unwrap().to_string()));
    assert_eq!(got["tree/sub/to-file"], link(&target.join("file.txt")));
    assert_eq!(got["tree/sub/to-dir"], link(&target));
    assert_eq!(
        got["named-link"],
        link(&t.path().join("tree/sub")),
        "a symlink named as input is archived as the link itself"
    );
    assert_eq!(got.len(), 6, "{:?}", got.keys());

    // With -L: what they point to, under the link's name.
    let followed = t.path().join("followed.tar");
    let o = bounded(
        seekless_tar(t.path())
            .args(["-L", "-f"])
            .arg(&followed)
            .arg("tree"),
    );
    assert_exit_quiet(&o, 0);
    let got = kinds(&followed);
    // One file reached twice (through to-file and to-dir): the second name is a hard link.
    let (kind, size, first) = &got["tree/sub/to-file"];
    assert!(
        matches!(
            (kind, size.as_str(), first.as_deref()),
            ('-', "11", None) | ('h', "0", Some("tree/sub/to-dir/file.txt"))
        ),
        "tree/sub/to-file with -L: {:?}",
        got["tree/sub/to-file"]
    );
    assert_eq!(got["tree/sub/to-dir/"].0, 'd');
    assert_eq!(
        got["tree/sub/to-dir/inner/deep.txt"],
        ('-', "5".to_string(), None)
    );
    let out = t.path().join("out");
    gnu_extract(&followed, &out, &[]);
    assert_eq!(
        std::fs::read(out.join("tree/sub/to-file")).unwrap(),
        b"pointed to\n"
    );
    assert_eq!(
        std::fs::read(out.join("tree/sub/to-dir/file.txt")).unwrap(),
        b"pointed to\n"
    );
}

// ---------------------------------------------------------------------------------------
// 5. Sparse and large files.

/// A sparse file of `size` bytes with `data` written at each offset (the rest holes).
fn sparse_file(path: &Path, size: u64, data: &[(u64, Vec<u8>)]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::create(path).unwrap();
    f.set_len(size).unwrap();
    for (at, bytes) in data {
        f.write_all_at(bytes, *at).unwrap();
    }
    f.sync_all().unwrap();
}

#[test]
fn sparse_files_keep_their_holes_and_content_through_gnu_tar_bsdtar_and_python() {
    let test = test_name!();
    if !require_tools(test, &["tar", "bsdtar", "sha256sum", python()]) {
        return;
    }
    const GIB: u64 = 1 << 30;
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let mut rng = Rng::new(8);
    // Data at the start and in the middle, ending in a hole.
    sparse_file(
        &tree.join("hole-at-end"),
        GIB,
        &[(0, rng.bytes(4096)), (512 << 20, rng.bytes(8192))],
    );
    // Starting with a hole, ending with data.
    sparse_file(
        &tree.join("data-at-end"),
        GIB,
        &[(100 << 20, rng.bytes(65536)), (GIB - 4096, rng.bytes(4096))],
    );
    // Nothing but a hole.
    sparse_file(&tree.join("all-hole"), 256 << 20, &[]);
    // Larger than 8 GiB, which a ustar size field cannot hold.
    let far = 8 * GIB + (GIB >> 1);
    let far_data = rng.bytes(4096);
    sparse_file(&tree.join("nine-gib"), 9 * GIB, &[(far, far_data.clone())]);
    std::fs::write(tree.join("dense"), rng.bytes(100_000)).unwrap();
    for (name, n) in scan(&tree) {
        if n.kind == Kind::File && lossy(&name) != "dense" {
            assert!(
                n.allocated < n.size / 100,
                "{}: the scratch filesystem did not make it sparse",
                lossy(&name)
            );
        }
    }
    let archive = t.path().join("sparse.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree"));
    assert_exit_quiet(&o, 0);
    let archived = std::fs::metadata(&archive).unwrap().len();
    assert!(
        archived < 4 << 20,
        "the archive holds {archived} bytes: the holes were stored as data"
    );

    // GNU tar lists the real sizes and extracts the holes as holes.
    let listing = gnu_listing(&archive, &[]);
    let size_of = |name: &str| {
        listing
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name} not listed"))
            .size
            .clone()
    };
    assert_eq!(size_of("tree/nine-gib"), (9 * GIB).to_string());
    assert_eq!(size_of("tree/hole-at-end"), GIB.to_string());
    // The nine GiB are checked where the data is (reading them whole twice is slow).
    let small = |out: &Path| {
        for name in ["hole-at-end", "data-at-end", "all-hole", "dense"] {
            let (a, b) = (tree.join(name), out.join("tree").join(name));
            let (na, nb) = (node(&a), node(&b));
            assert_eq!(nb.size, na.size, "{}: size", b.display());
            assert!(same_content(&a, &b), "{}: content", b.display());
            if name != "dense" {
                assert!(
                    nb.allocated <= na.allocated + (1 << 20),
                    "{}: {} bytes allocated, the source {}: holes lost",
                    b.display(),
                    nb.allocated,
                    na.allocated
                );
            }
        }
        let big = out.join("tree/nine-gib");
        let n = node(&big);
        assert_eq!(n.size, 9 * GIB, "{}", big.display());
        assert!(n.allocated < 1 << 20, "{}: holes lost", big.display());
        let mut at_far = vec![0u8; 4096];
        std::os::unix::fs::FileExt::read_exact_at(
            &std::fs::File::open(&big).unwrap(),
            &mut at_far,
            far,
        )
        .unwrap();
        assert!(at_far == far_data, "{}: the data at 8.5 GiB", big.display());
    };
    let out = t.path().join("gnu");
    gnu_extract(&archive, &out, &[]);
    small(&out);

    let out = t.path().join("bsd");
    std::fs::create_dir(&out).unwrap();
    let o = bounded(
        Command::new("bsdtar")
            .arg("-xpf")
            .arg(&archive)
            .arg("-C")
            .arg(&out),
    );
    assert_sound_read(&o, "bsdtar -xpf");
    small(&out);

    // Python reads the real sizes and the same bytes (the 9 GiB hashed too).
    for m in python_members(&archive) {
        let name = lossy(&m.name);
        if m.str("type") != "0" {
            continue;
        }
        let path = t.path().join(&name);
        assert_eq!(m.u64("size"), node(&path).size, "{name}: size");
        if name != "tree/nine-gib" {
            assert_eq!(m.str("sha256"), sha256sum(&path), "{name}: content");
        }
        assert_eq!(
            m.json["sparse"].as_bool(),
            Some(name != "tree/dense"),
            "{name}: stored sparse or not"
        );
        if name != "tree/dense" {
            assert_eq!(
                (m.pax("GNU.sparse.major"), m.pax("GNU.sparse.minor")),
                (Some(b"1".to_vec()), Some(b"0".to_vec())),
                "{name}: GNU's PAX sparse format 1.0"
            );
        }
    }
}

/// Reads a tar stream on stdin with tarfile (`r|`) and prints one JSON line per
/// member; for a regular member larger than `argv[1]` bytes also the bytes found at that
/// offset (hex, as many as `argv[2]` holds) and how many bytes the member held.
const PY_STREAM: &str = r#"
import json, sys, tarfile
at, want = int(sys.argv[1]), len(sys.argv[2]) // 2
with tarfile.open(fileobj=sys.stdin.buffer, mode='r|', bufsize=1 << 20) as t:
    for m in t:
        d = {'name': m.name, 'type': m.type.decode('latin-1'), 'size': m.size,
             'pax': sorted(m.pax_headers)}
        if m.isreg() and m.size > at:
            f = t.extractfile(m)
            left = at
            while left:
                c = f.read(min(left, 1 << 20))
                if not c:
                    break
                left -= len(c)
            found = f.read(want)
            d['found'] = found.hex()
            total = at - left + len(found)
            for c in iter(lambda: f.read(1 << 20), b''):
                total += len(c)
            d['read'] = total
        print(json.dumps(d), flush=True)
"#;

#[test]
fn a_file_of_more_than_8_gib_is_sized_by_a_pax_record() {
    use std::os::fd::AsRawFd;
    let test = test_name!();
    if !require_tools(test, &["tar", "bash", python()]) {
        return;
    }
    const SIZE: u64 = 9 << 30;
    const AT: u64 = (8 << 30) + (1 << 29);
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    // Allocated whole (so not sparse), read back as zeros without disk reads, with a
    // little data past 8 GiB to find again.
    let big = tree.join("big");
    let f = std::fs::File::create(&big).unwrap();
    // SAFETY: fallocate on an open fd with plain integer arguments.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, SIZE as libc::off_t) };
    if rc != 0 {
        skip(
            test,
            "space",
            &format!(
                "cannot allocate 9 GiB in {}: {}",
                t.path().display(),
                std::io::Error::last_os_error()
            ),
        );
        return;
    }
    let mut rng = Rng::new(9);
    let data = rng.bytes(4096);
    std::os::unix::fs::FileExt::write_all_at(&f, &data, AT).unwrap();
    f.sync_all().unwrap();
    drop(f);
    std::fs::write(tree.join("small"), b"after or before the big one\n").unwrap();
    let meta = std::fs::metadata(&big).unwrap();
    assert!(
        meta.blocks() * 512 >= SIZE,
        "fallocate left holes: {} bytes allocated",
        meta.blocks() * 512
    );

    // One stream, read by GNU tar and Python's tarfile at once (9 GiB is not stored).
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    let script = r#"
set -o pipefail
mkfifo "$D/py.fifo"
"$PY" -c "$PY_STREAM" "$AT" "$HEX" < "$D/py.fifo" > "$D/py.out" & py=$!
"$SEEKLESS" tar -C "$D" tree 2> "$D/seekless.err" | tee "$D/py.fifo" | tar --numeric-owner -tvf - > "$D/gnu.out" 2> "$D/gnu.err"
rc=$?
wait $py
echo "pipeline $rc python $?"
"#;
    let o = bounded(
        Command::new("bash")
            .args(["-c", script])
            .env("D", t.path())
            .env("PY", python())
            .env("PY_STREAM", PY_STREAM)
            .env("AT", AT.to_string())
            .env("HEX", &hex)
            .env("SEEKLESS", env!("CARGO_BIN_EXE_seekless")),
    );
    let read = |name: &str| std::fs::read_to_string(t.path().join(name)).unwrap_or_default();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "pipeline 0 python 0",
        "seekless: {}\ntar: {}",
        read("seekless.err"),
        read("gnu.err")
    );
    assert!(read("gnu.err").is_empty(), "{}", read("gnu.err"));
    let listing: Vec<Listed> = read("gnu.out").lines().map(parse_listed).collect();
    let names: BTreeMap<&str, &str> = listing
        .iter()
        .map(|m| (m.name.as_str(), m.size.as_str()))
        .collect();
    assert_eq!(
        names,
        BTreeMap::from([
            ("tree/", "0"),
            ("tree/big", "9663676416"),
            ("tree/small", "28")
        ]),
        "what GNU tar lists"
    );
    let py: Vec<Value> = read("py.out")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let m = py
        .iter()
        .find(|m| m["name"] == "tree/big")
        .expect("tree/big in Python's listing");
    assert_eq!(m["size"], SIZE, "{m}");
    assert!(
        m["pax"].as_array().unwrap().iter().any(|k| k == "size"),
        "the size is in a PAX record: {m}"
    );
    assert_eq!(m["type"], "0", "stored as a plain file: {m}");
    assert_eq!(m["found"], hex.as_str(), "the data at 8.5 GiB");
    assert_eq!(m["read"], SIZE, "the member's bytes");
}

// ---------------------------------------------------------------------------------------
// 6. Real filesystems on loop devices.

fn round_trip_on(fs: &str) {
    let test = format!("round_trip_on_{fs}");
    if !require_root(&test) || !require_tools(&test, &[&format!("mkfs.{fs}"), "tar", "filefrag"]) {
        return;
    }
    let lfs = LoopFs::new(&test, fs, 512);
    let mut names = write_corpus(&lfs.mnt, 60, 31);
    let mut rng = Rng::new(32);
    std::fs::write(lfs.path("d0/IMG_0000.JPG"), rng.bytes(123_457)).unwrap();
    symlink("d1/IMG_0001.JPG", &lfs.path("a-link"));
    std::fs::hard_link(lfs.path("d2/IMG_0002.JPG"), lfs.path("d3/second-name")).unwrap();
    set_xattr(&lfs.path("d1/IMG_0005.JPG"), "user.origin", b"camera \xff");
    set_xattr(&lfs.path("d2"), "user.album", b"holidays");
    set_mtime(&lfs.path("d3/IMG_0003.JPG"), 1_500_000_000, 123_456_789);
    names.push(PathBuf::from("d3/second-name"));
    lfs.remount();

    let t = scratch_dir(&test);
    let archive = t.path().join(format!("{fs}.tar"));
    // Taken for a seeking disk: a loop device in memory that reports non-rotational
    // would otherwise be read unlocated, in inode order (nothing to gain from disk order).
    let o = bounded(
        seekless_tar(t.path())
            .args(["--disk", "hdd", "--xattrs", "-f"])
            .arg(&archive)
            .arg("-C")
            .arg(&lfs.mnt)
            .arg("."),
    );
    assert_exit_quiet(&o, 0);
    let listing = assert_listing_matches(&archive, &lfs.mnt, ".");
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &["--xattrs", "--xattrs-include=*"]);
    assert_same_tree(&lfs.mnt, &out, &format!("{fs}: GNU tar -x"), EVERYTHING);
    let o = bounded(gnu_tar(&lfs.mnt).arg("--compare").arg("-f").arg(&archive));
    assert_sound_read(&o, "tar --compare");
    assert!(
        o.stdout.is_empty(),
        "{fs}: tar --compare: {}",
        String::from_utf8_lossy(&o.stdout)
    );

    // Regular files in physical order: each file of one extent starts no earlier on
    // the disk than the one before it (filefrag). Fragmented files are left out: one is
    // complete, and archived, only once its last extent has been read in the sweep.
    let mut previous: Option<(u64, &str)> = None;
    let mut placed = 0;
    for m in listing.iter().filter(|m| m.kind == '-') {
        let (Some(first), 1) = filefrag(&lfs.path(&m.name)) else {
            continue;
        };
        if let Some((before, name)) = previous {
            assert!(
                before <= first,
                "{fs}: {} (at byte {first} of the disk) is archived after {name} (at {before})",
                m.name
            );
        }
        previous = Some((first, &m.name));
        placed += 1;
    }
    assert!(
        placed * 4 >= names.len() * 3,
        "{fs}: only {placed} of {} files have one extent",
        names.len()
    );
}

#[test]
fn round_trip_on_ext4() {
    round_trip_on("ext4");
}

#[test]
fn round_trip_on_xfs() {
    round_trip_on("xfs");
}

#[test]
fn round_trip_on_btrfs() {
    round_trip_on("btrfs");
}

// ---------------------------------------------------------------------------------------
// 7. Faults.

#[test]
fn files_that_shrink_or_grow_while_read_are_padded_or_cut_and_the_run_exits_1() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let mut rng = Rng::new(10);
    let others = random_files(&tree, 30, 50_000, &mut rng);
    let originals: Vec<(&str, Vec<u8>)> = vec![
        ("seekless-fault-shrink.bin", rng.bytes(10_000)),
        ("seekless-fault-shrink-big.bin", rng.bytes(3_000_000)),
        ("seekless-fault-grow.bin", rng.bytes(10_000)),
        ("seekless-fault-grow-big.bin", rng.bytes(3_000_000)),
    ];
    for (name, data) in &originals {
        std::fs::write(tree.join(name), data).unwrap();
    }
    let saved: BTreeMap<PathBuf, Vec<u8>> = others
        .iter()
        .map(|r| (r.clone(), std::fs::read(tree.join(r)).unwrap()))
        .collect();

    // Without the switch, the names mean nothing.
    let calm = t.path().join("calm.tar");
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&calm).arg("tree"));
    assert_exit_quiet(&o, 0);
    for (name, data) in &originals {
        assert_eq!(
            std::fs::metadata(tree.join(name)).unwrap().len(),
            data.len() as u64,
            "{name} changed without SEEKLESS_INJECT_FAULTS"
        );
    }

    let archive = t.path().join("faults.tar");
    let o = bounded(
        seekless_tar(t.path())
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .arg("-f")
            .arg(&archive)
            .arg("tree"),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    for want in [
        "seekless: tree/seekless-fault-shrink.bin: File shrank by 5000 bytes; padding with zeros",
        "seekless: tree/seekless-fault-shrink-big.bin: File shrank by 1500000 bytes; padding with zeros",
        "seekless: tree/seekless-fault-grow.bin: file changed as we read it",
        "seekless: tree/seekless-fault-grow-big.bin: file changed as we read it",
    ] {
        assert!(said.iter().any(|l| l == want), "no {want:?} in:\n{said:#?}");
    }
    // The faults happened (the switch reached seekless).
    assert_eq!(
        std::fs::metadata(tree.join("seekless-fault-shrink.bin"))
            .unwrap()
            .len(),
        5000
    );
    assert_eq!(
        std::fs::metadata(tree.join("seekless-fault-grow.bin"))
            .unwrap()
            .len(),
        11_000
    );

    // The archive is sound: GNU tar lists the sizes of the headers and extracts it.
    let listing = gnu_listing(&archive, &[]);
    for (name, data) in &originals {
        let m = listing
            .iter()
            .find(|m| m.name == format!("tree/{name}"))
            .unwrap_or_else(|| panic!("tree/{name} not archived"));
        assert_eq!(m.size, data.len().to_string(), "{name}: the header's size");
    }
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    for (name, data) in &originals {
        let got = std::fs::read(out.join("tree").join(name)).unwrap();
        let want = if name.contains("shrink") {
            let half = data.len() / 2;
            [&data[..half], &vec![0u8; data.len() - half][..]].concat()
        } else {
            data.clone()
        };
        assert!(
            got == want,
            "{name}: extracted {} bytes, not {} (shrunk: its half and zeros; grown: cut at \
             the header's size)",
            got.len(),
            want.len()
        );
    }
    for (rel, data) in &saved {
        assert_eq!(
            &std::fs::read(out.join("tree").join(rel)).unwrap(),
            data,
            "{}: another member, intact",
            rel.display()
        );
    }
}

#[test]
fn hard_links_of_a_file_whose_first_name_vanished_are_stored_under_its_next_name() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir_all(tree.join("d")).unwrap();
    std::fs::create_dir_all(tree.join("e")).unwrap();
    let data = Rng::new(24).bytes(30_000);
    // The first name is removed after planning, before it is read (the fault hook).
    let first = tree.join("seekless-fault-vanish-first");
    std::fs::write(&first, &data).unwrap();
    std::fs::hard_link(&first, tree.join("d/second")).unwrap();
    std::fs::hard_link(&first, tree.join("e/third")).unwrap();
    std::fs::write(tree.join("other"), b"another file\n").unwrap();
    let archive = t.path().join("links.tar");
    let o = bounded(
        seekless_tar(t.path())
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .args(["-f", "links.tar"])
            .args([
                "tree/seekless-fault-vanish-first",
                "tree/d/second",
                "tree/e/third",
                "tree/other",
            ]),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    assert!(
        said.iter().any(
            |l| l.starts_with("seekless: tree/seekless-fault-vanish-first: ")
                && l.contains("No such file or directory")
        ),
        "the vanished name is named: {said:#?}"
    );
    assert!(!first.exists(), "the fault happened");
    let listing = gnu_listing(&archive, &[]);
    let kinds: Vec<(char, &str, Option<&str>)> = listing
        .iter()
        .map(|m| (m.kind, m.name.as_str(), m.target.as_deref()))
        .collect();
    assert!(kinds.contains(&('-', "tree/d/second", None)), "{kinds:?}");
    assert!(
        kinds.contains(&('h', "tree/e/third", Some("tree/d/second"))),
        "{kinds:?}"
    );
    assert!(kinds.contains(&('-', "tree/other", None)), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k.1.contains("vanish")), "{kinds:?}");
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_eq!(std::fs::read(out.join("tree/d/second")).unwrap(), data);
    let (a, b) = (
        std::fs::metadata(out.join("tree/d/second")).unwrap(),
        std::fs::metadata(out.join("tree/e/third")).unwrap(),
    );
    assert_eq!(a.ino(), b.ino(), "extracted as one file with two names");
}

#[test]
fn missing_inputs_are_named_and_exit_1_and_the_rest_is_archived() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let src = t.path().join("src");
    let mut rng = Rng::new(11);
    random_files(&src, 6, 10_000, &mut rng);
    std::fs::write(src.join("present"), b"here\n").unwrap();
    let archive = t.path().join("a.tar");
    let o = bounded(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&archive)
            .arg("-C")
            .arg(&src)
            .args(["present", "nosuch", "d1", "gone/deeper"]),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    for missing in ["nosuch", "gone/deeper"] {
        assert!(
            said.iter()
                .any(|l| l.starts_with(&format!("seekless: {missing}: "))
                    && l.contains("No such file or directory")),
            "{missing} is named: {said:#?}"
        );
    }
    let mut names = gnu_names(&archive, &[]);
    names.sort();
    let mut want: Vec<String> = vec!["present".into(), "d1/".into()];
    want.extend(
        entries(&src.join("d1"))
            .into_iter()
            .map(|n| format!("d1/{n}")),
    );
    want.sort();
    assert_eq!(names, want, "the inputs that exist are archived");
    let out = t.path().join("out");
    gnu_extract(&archive, &out, &[]);
    assert_eq!(std::fs::read(out.join("present")).unwrap(), b"here\n");

    // The same through --files-from.
    let list = t.path().join("list");
    std::fs::write(&list, "present\nnot-there\n").unwrap();
    let archive = t.path().join("b.tar");
    let o = bounded(
        seekless_tar(t.path())
            .arg("-f")
            .arg(&archive)
            .arg("-C")
            .arg(&src)
            .arg("--files-from")
            .arg(&list),
    );
    assert_exit_quiet(&o, 1);
    assert!(
        messages(&o)
            .iter()
            .any(|l| l.starts_with("seekless: not-there: ")),
        "{}",
        stderr(&o)
    );
    assert_eq!(gnu_names(&archive, &[]), vec!["present".to_string()]);
}

#[test]
fn unreadable_files_and_directories_are_named_and_skipped_as_gnu_tar_skips_them() {
    let test = test_name!();
    // Runs as nobody through setpriv: root reads everything.
    if !require_root(test) || !require_tools(test, &["setpriv", "tar"]) {
        return;
    }
    let t = scratch!();
    chmod(t.path(), 0o755);
    let src = t.path().join("src");
    let mut rng = Rng::new(12);
    random_files(&src, 6, 10_000, &mut rng);
    std::fs::write(src.join("open.txt"), b"anyone may read this\n").unwrap();
    std::fs::write(src.join("secret"), b"root only\n").unwrap();
    chmod(&src.join("secret"), 0o600);
    std::fs::create_dir(src.join("locked")).unwrap();
    std::fs::write(src.join("locked/inner"), b"behind a locked door\n").unwrap();
    chmod(&src.join("locked"), 0o700);
    let outdir = t.path().join("out");
    std::fs::create_dir(&outdir).unwrap();
    chmod(&outdir, 0o777);
    let as_nobody = |program: &str| {
        let mut cmd = Command::new("setpriv");
        cmd.current_dir(t.path())
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program);
        cmd
    };

    let archive = outdir.join("seekless.tar");
    let o = bounded(
        as_nobody(env!("CARGO_BIN_EXE_seekless"))
            .args(["tar", "-f"])
            .arg(&archive)
            .arg("src"),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    for path in ["src/secret", "src/locked"] {
        assert!(
            said.iter()
                .any(|l| l.starts_with(&format!("seekless: {path}: "))
                    && l.contains("Permission denied")),
            "{path} is named: {said:#?}"
        );
    }
    // GNU tar, run the same way, archives the same files (its archive goes to stdout).
    let o = bounded(as_nobody("tar").args(["--format=posix", "-cf", "-", "src"]));
    assert!(!o.status.success(), "GNU tar as nobody: {}", stderr(&o));
    let gnu_archive = t.path().join("gnu.tar");
    std::fs::write(&gnu_archive, &o.stdout).unwrap();
    let files = |archive: &Path| -> Vec<String> {
        gnu_listing(archive, &[])
            .into_iter()
            .filter(|m| m.kind != 'd')
            .map(|m| m.name)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let got = files(&archive);
    assert_eq!(got, files(&gnu_archive), "what GNU tar archives as nobody");
    assert!(got.contains(&"src/open.txt".to_string()), "{got:?}");
    assert!(
        !got.iter()
            .any(|n| n.contains("secret") || n.contains("inner"))
    );
    let out = t.path().join("extracted");
    gnu_extract(&archive, &out, &[]);
    assert_eq!(
        std::fs::read(out.join("src/open.txt")).unwrap(),
        b"anyone may read this\n"
    );
}

// ---------------------------------------------------------------------------------------
// 8. The archive file.

#[test]
fn the_archive_inside_the_archived_tree_is_not_dumped() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let files = random_files(&tree, 10, 20_000, &mut Rng::new(13));
    let check = |round: &str| {
        let o = bounded(seekless_tar(t.path()).args(["-f", "tree/out.tar", "tree"]));
        assert_exit_quiet(&o, 0);
        let said = messages(&o);
        assert!(
            said.iter()
                .any(|l| l == "seekless: tree/out.tar: file is the archive; not dumped"),
            "{round}: the archive is named: {said:#?}"
        );
        assert!(
            !said.iter().any(|l| l.contains("seekless-tmp")),
            "{round}: the temporary is not named: {said:#?}"
        );
        let names = gnu_names(&tree.join("out.tar"), &[]);
        let archives: Vec<&String> = names
            .iter()
            .filter(|n| n.contains("out.tar") || n.contains("seekless-tmp"))
            .collect();
        assert!(
            archives.is_empty(),
            "{round}: the archive archived: {archives:?}"
        );
        for rel in &files {
            let name = format!("tree/{}", rel.display());
            assert!(names.contains(&name), "{round}: {name} missing");
        }
        assert_eq!(
            entries(&tree),
            vec!["d0", "d1", "d2", "out.tar"],
            "{round}: nothing else left beside it"
        );
    };
    check("first run");
    // Again, with the previous archive in place (GNU tar truncates it and skips it).
    check("second run, over the first one's archive");
}

/// Starts `seekless tar -z -f ARCHIVE tree` in `dir` and kills it (SIGKILL) once its
/// temporary archive holds data ([`caught_mid_write`]: a test fails if that never
/// happens).
fn kill_mid_write(dir: &Path, archive: &Path) {
    let mut run = caught_mid_write(dir, archive);
    signal(&run.0, libc::SIGKILL);
    let status = run.0.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
}

/// A tmpfs mounted by the test, unmounted when dropped.
struct Mounted(PathBuf);

impl Mounted {
    fn tmpfs(at: &Path, options: &str) -> Mounted {
        std::fs::create_dir_all(at).unwrap();
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "seekless-test"])
            .arg(at));
        Mounted(at.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

#[test]
fn an_archive_appears_under_its_name_only_when_complete() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let mut rng = Rng::new(14);
    random_files(&tree, 48, 2 << 20, &mut rng);
    let dir = t.path().join("archives");
    std::fs::create_dir(&dir).unwrap();

    // A complete run: the archive and nothing beside it.
    let o = bounded(seekless_tar(t.path()).args(["-f", "archives/whole.tar", "tree"]));
    assert_exit_quiet(&o, 0);
    assert_eq!(entries(&dir), vec!["whole.tar"], "no temporary file left");
    gnu_names(&dir.join("whole.tar"), &[]);

    // Killed while writing over an older archive: the older one is still there, whole.
    let previous = dir.join("over.tar.gz");
    std::fs::write(&previous, b"the previous archive").unwrap();
    kill_mid_write(t.path(), &previous);
    assert_eq!(
        std::fs::read(&previous).unwrap(),
        b"the previous archive",
        "a killed run replaced the archive"
    );
    // Killed while writing a new one: nothing under its name.
    let fresh = dir.join("fresh.tar.gz");
    kill_mid_write(t.path(), &fresh);
    assert!(!fresh.exists(), "a killed run left {}", fresh.display());

    // A run that fails for want of space: nothing under the name, no temporary file.
    if is_root() {
        let small = t.path().join("small");
        let _mounted = Mounted::tmpfs(&small, "size=1m");
        let o = bounded(seekless_tar(t.path()).args(["-f", "small/full.tar", "tree"]));
        assert!(
            !o.status.success() && o.status.code().is_some(),
            "a full disk is an error: {}",
            o.status
        );
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        assert!(
            messages(&o).iter().any(|l| l
                == "seekless: small/full.tar: cannot write the archive: No space left on device"),
            "the message names the archive: {}",
            stderr(&o)
        );
        assert!(
            entries(&small).is_empty(),
            "a failed run left {:?}",
            entries(&small)
        );
    }
}

/// `setpriv` running `program` as nobody (uid and gid 65534, no other groups) in `cwd`.
fn as_nobody(cwd: &Path, program: &str) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.current_dir(cwd)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(program);
    cmd
}

fn chown_nobody(path: &Path) {
    std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
}

#[test]
fn an_archive_its_user_may_not_write_is_refused_as_gnu_tar_refuses_it_and_others_keep_their_mode() {
    let test = test_name!();
    // As nobody through setpriv: root may write any file.
    if !require_root(test) || !require_tools(test, &["setpriv", "tar"]) {
        return;
    }
    let t = scratch!();
    chmod(t.path(), 0o755);
    let src = t.path().join("src");
    random_files(&src, 5, 10_000, &mut Rng::new(20));
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    chown_nobody(&out);
    let seekless_bin = env!("CARGO_BIN_EXE_seekless");

    // A read-only archive of nobody's own, in nobody's own directory.
    let read_only = out.join("ro.tar");
    std::fs::write(&read_only, b"the previous archive").unwrap();
    chown_nobody(&read_only);
    chmod(&read_only, 0o444);
    let o = bounded(as_nobody(t.path(), seekless_bin).args(["tar", "-f", "out/ro.tar", "src"]));
    assert_exit_quiet(&o, 2);
    assert_eq!(
        messages(&o),
        vec!["seekless: out/ro.tar: cannot open: Permission denied"]
    );
    assert_eq!(std::fs::read(&read_only).unwrap(), b"the previous archive");
    assert_eq!(
        std::fs::metadata(&read_only).unwrap().mode() & 0o7777,
        0o444
    );
    assert_eq!(entries(&out), vec!["ro.tar"], "nothing written beside it");
    // GNU tar, the same way: the same refusal.
    let o = bounded(as_nobody(t.path(), "tar").args(["-cf", "out/ro.tar", "src"]));
    assert_eq!(o.status.code(), Some(2), "GNU tar: {}", stderr(&o));
    assert!(
        stderr(&o).contains("Cannot open: Permission denied"),
        "{}",
        stderr(&o)
    );

    // A private archive nobody may write is replaced, and stays private.
    let private = out.join("private.tar");
    std::fs::write(&private, b"the previous archive").unwrap();
    chown_nobody(&private);
    chmod(&private, 0o600);
    let o =
        bounded(as_nobody(t.path(), seekless_bin).args(["tar", "-f", "out/private.tar", "src"]));
    assert_exit_quiet(&o, 0);
    let meta = std::fs::metadata(&private).unwrap();
    assert_eq!(
        meta.mode() & 0o7777,
        0o600,
        "the mode of the archive replaced"
    );
    assert_eq!(meta.uid(), 65534);
    let files = |a: &Path| {
        gnu_names(a, &[])
            .iter()
            .filter(|n| !n.ends_with('/'))
            .count()
    };
    assert_eq!(files(&private), 5);

    // Root replacing nobody's archive keeps its owner and mode.
    chmod(&private, 0o640);
    let o = bounded(seekless_tar(t.path()).args(["-f", "out/private.tar", "src"]));
    assert_exit_quiet(&o, 0);
    let meta = std::fs::metadata(&private).unwrap();
    assert_eq!(
        (meta.mode() & 0o7777, meta.uid(), meta.gid()),
        (0o640, 65534, 65534),
        "mode and owner of the archive replaced"
    );
    assert_eq!(entries(&out), vec!["private.tar", "ro.tar"]);
}

#[test]
fn an_archive_onto_a_device_node_or_fifo_is_written_into_it_not_renamed_over_it() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 5, 20_000, &mut Rng::new(21));
    // A null device of the test's own (mknod c 1 3), not /dev/null.
    let null = t.path().join("null");
    mknod(&null, 'c', 1, 3);
    let o = bounded(seekless_tar(t.path()).args(["-f", "null", "tree"]));
    assert_exit_quiet(&o, 0);
    let meta = std::fs::symlink_metadata(&null).unwrap();
    assert!(
        std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type()),
        "the device node was replaced"
    );
    // A FIFO: the archive goes to whoever reads it.
    let fifo = t.path().join("fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).unwrap())
    };
    let o = bounded(seekless_tar(t.path()).args(["-f", "fifo", "tree"]));
    assert_exit_quiet(&o, 0);
    // Checked before waiting for the reader: a FIFO renamed over would leave it waiting.
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()),
        "the FIFO was replaced"
    );
    let got = t.path().join("got.tar");
    std::fs::write(&got, reader.join().unwrap()).unwrap();
    let names = gnu_names(&got, &[]);
    assert_eq!(
        names.iter().filter(|n| !n.ends_with('/')).count(),
        5,
        "{names:?}"
    );
    assert_eq!(entries(t.path()), vec!["fifo", "got.tar", "null", "tree"]);
}

/// Starts `seekless tar -z -f ARCHIVE tree` in `dir` and, once its temporary holds data,
/// freezes it and returns the run. A run that ended first (it then must have ended well)
/// is undone (the archive put back as it was) and started again, watched in shorter
/// slices ([`CATCH_SLICES`]); the test fails if none was caught.
fn caught_mid_write(dir: &Path, archive: &Path) -> Running {
    caught_mid_write_with(dir, archive, libc::SIG_DFL)
}

/// [`caught_mid_write`], started with SIGHUP, SIGINT and SIGTERM set to `disposition`:
/// the default (as from a terminal, whatever this test process was started with: under
/// `nohup`, or in the background of a shell, it ignores some of them, and a child would
/// inherit that), or ignored.
fn caught_mid_write_with(dir: &Path, archive: &Path, disposition: libc::sighandler_t) -> Running {
    let before = std::fs::read(archive).ok();
    for slice in CATCH_SLICES {
        let mut cmd = seekless_tar(dir);
        cmd.args(["-z", "-f"])
            .arg(archive)
            .arg("tree")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: only async-signal-safe calls (signal) between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
                    libc::signal(sig, disposition);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let mut run = Running(child);
        // The temporary: `.NAME.seekless-tmp-RUN-N` beside the archive, RUN the process id
        // in 8 hex digits and 8 more of its own (src/atomic.rs).
        let prefix = format!(
            ".{}.seekless-tmp-{:08x}",
            archive.file_name().unwrap().to_str().unwrap(),
            run.0.id()
        );
        let parent = archive.parent().unwrap().to_path_buf();
        let caught = freeze_when_every(&mut run.0, slice, || {
            std::fs::read_dir(&parent).unwrap().flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with(&prefix)
                    && e.metadata().is_ok_and(|m| m.len() > 0)
            })
        });
        if caught {
            return run;
        }
        let status = run.0.wait().unwrap();
        assert!(status.success(), "{status}");
        match &before {
            Some(bytes) => std::fs::write(archive, bytes).unwrap(),
            None => std::fs::remove_file(archive).unwrap(),
        }
    }
    panic!(
        "every run ended before its archive held data ({} attempts, slices {CATCH_SLICES:?}): \
         none could be caught in the middle",
        CATCH_SLICES.len()
    );
}

#[test]
fn an_interrupted_run_removes_its_temporary_and_ends_by_the_signal() {
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 48, 2 << 20, &mut Rng::new(22));
    let dir = t.path().join("archives");
    std::fs::create_dir(&dir).unwrap();
    for (sig, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let archive = dir.join("a.tar.gz");
        let run = caught_mid_write(t.path(), &archive);
        signal(&run.0, sig);
        let (code, err) = finish(run);
        assert_eq!(
            code, None,
            "{name}: ended by the signal, not an exit; {err}"
        );
        assert!(entries(&dir).is_empty(), "{name} left {:?}", entries(&dir));
    }
    // The status says which signal: checked once more on a run waited for directly.
    let mut run = caught_mid_write(t.path(), &dir.join("b.tar.gz"));
    signal(&run.0, libc::SIGTERM);
    thaw(&run.0);
    let status = run.0.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    assert!(entries(&dir).is_empty(), "left {:?}", entries(&dir));
}

#[test]
fn signals_ignored_when_started_stay_ignored_as_under_nohup() {
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 48, 2 << 20, &mut Rng::new(24));
    let archive = t.path().join("kept.tar.gz");
    let run = caught_mid_write_with(t.path(), &archive, libc::SIG_IGN);
    signal(&run.0, libc::SIGHUP);
    let (code, err) = finish(run);
    // `nohup seekless tar ...` outlives its terminal: the archive is finished, not dropped.
    assert_eq!(code, Some(0), "{err}");
    let listed = Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(listed.status.success());
    let members = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|l| !l.ends_with('/'))
        .count();
    assert_eq!(members, 48);
}

#[test]
fn a_later_run_removes_the_temporaries_a_killed_run_of_the_same_archive_left() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 48, 2 << 20, &mut Rng::new(23));
    let dir = t.path().join("archives");
    std::fs::create_dir(&dir).unwrap();
    let archive = dir.join("k.tar.gz");
    kill_mid_write(t.path(), &archive);
    let left = entries(&dir);
    assert_eq!(left.len(), 1, "the killed run's temporary: {left:?}");
    // A temporary of a process that runs (this test) and one of another archive's name:
    // both left alone.
    let live = format!(".k.tar.gz.seekless-tmp-{}-0", std::process::id());
    std::fs::write(dir.join(&live), b"being written").unwrap();
    let other = ".other.tar.seekless-tmp-999999999-0";
    std::fs::write(dir.join(other), b"another archive's").unwrap();

    let o = bounded(seekless_tar(t.path()).args(["-z", "-f", "archives/k.tar.gz", "tree"]));
    assert_exit_quiet(&o, 0);
    let removed = format!(
        "seekless: archives/{}: removed, the temporary of an interrupted run",
        left[0]
    );
    assert_eq!(messages(&o), vec![removed]);
    let mut want = vec![other.to_string(), live, "k.tar.gz".to_string()];
    want.sort();
    assert_eq!(entries(&dir), want);
    let names = gnu_names(&archive, &["-z"]);
    assert_eq!(
        names.iter().filter(|n| !n.ends_with('/')).count(),
        48,
        "{names:?}"
    );
}

#[test]
fn a_file_that_changed_while_read_is_counted_once_in_the_summary() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("seekless-fault-grow.bin"), vec![1u8; 10_000]).unwrap();
    std::fs::write(tree.join("calm.bin"), vec![2u8; 10_000]).unwrap();
    let o = bounded(
        seekless_tar(t.path())
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .args(["--summary", "-f", "s.tar", "tree"]),
    );
    assert_exit_quiet(&o, 1);
    let said = messages(&o);
    let counts = said
        .iter()
        .find(|l| l.starts_with("seekless: tar: "))
        .unwrap_or_else(|| panic!("no counts: {said:#?}"));
    assert!(
        counts.ends_with("1 changed while read, 0 failed"),
        "{counts}"
    );
}

#[test]
fn the_help_says_directories_come_last_deepest_first() {
    let o = bounded(seekless().args(["tar", "--help"]));
    assert_exit(&o, 0);
    let help = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("then directories, deepest first"), "{help}");
    assert!(!help.contains("before their contents"), "{help}");
}

#[test]
fn a_terminal_on_standard_output_is_refused() {
    let test = test_name!();
    if !require_tool(test, "script") {
        return;
    }
    let t = scratch!();
    std::fs::write(t.path().join("file"), b"data\n").unwrap();
    let command = format!(
        "'{}' tar '{}'",
        env!("CARGO_BIN_EXE_seekless"),
        t.path().join("file").display()
    );
    let o = bounded(
        Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .current_dir(t.path()),
    );
    let shown = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{shown}");
    assert!(
        shown.contains("seekless: "),
        "a message says why: {shown:?}"
    );
    assert!(!shown.contains("ustar"), "an archive went to the terminal");
}

// ---------------------------------------------------------------------------------------
// 9. Options shared with the other jobs, and usage.

#[test]
fn verbose_names_the_members_in_archive_order_and_summary_counts() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    random_files(&tree, 25, 30_000, &mut Rng::new(15));
    symlink("d0", &tree.join("link"));
    let archive = t.path().join("v.tar");
    let o = bounded(
        seekless_tar(t.path())
            .args(["-v", "-f"])
            .arg(&archive)
            .arg("tree"),
    );
    assert_exit_quiet(&o, 0);
    let err = stderr(&o);
    let named: Vec<&str> = err.lines().collect();
    assert_eq!(
        named,
        gnu_names(&archive, &[]),
        "-v: the member names, as written"
    );
    let o = bounded(
        seekless_tar(t.path())
            .args(["--summary", "-f"])
            .arg(&archive)
            .arg("tree"),
    );
    assert_exit_quiet(&o, 0);
    let said = messages(&o);
    assert!(
        said.iter().any(|l| l.chars().any(|c| c.is_ascii_digit())),
        "--summary prints counts: {said:#?}"
    );
    let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).arg("tree"));
    assert_exit_quiet(&o, 0);
    assert!(messages(&o).is_empty(), "without --summary: {}", stderr(&o));
}

#[test]
fn filters_and_lists_choose_the_regular_files() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    for name in [
        "a.txt",
        "b.TXT",
        "c.jpg",
        "sub/d.txt",
        "sub/IMG_1.jpg",
        "sub/e.png",
    ] {
        std::fs::write(tree.join(name), name).unwrap();
    }
    let regular = |args: &[&str]| -> Vec<String> {
        let archive = t.path().join("f.tar");
        let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).args(args));
        assert_exit_quiet(&o, 0);
        let mut names: Vec<String> = gnu_listing(&archive, &[])
            .into_iter()
            .filter(|m| m.kind == '-')
            .map(|m| m.name)
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        regular(&["--ext", "txt", "tree"]),
        vec!["tree/a.txt", "tree/b.TXT", "tree/sub/d.txt"],
        "--ext txt"
    );
    assert_eq!(
        regular(&["--glob", "IMG_*", "tree"]),
        vec!["tree/sub/IMG_1.jpg"],
        "--glob"
    );
    assert_eq!(
        regular(&["--ext", "txt", "tree", "tree/c.jpg"]),
        vec!["tree/a.txt", "tree/b.TXT", "tree/c.jpg", "tree/sub/d.txt"],
        "a file named explicitly is always taken"
    );
    let list = t.path().join("list");
    std::fs::write(&list, b"tree/c.jpg\0tree/sub/e.png\0").unwrap();
    let list_arg = list.to_str().unwrap();
    assert_eq!(
        regular(&["--files-from", list_arg, "-0"]),
        vec!["tree/c.jpg", "tree/sub/e.png"],
        "--files-from -0"
    );
    // A list with NUL bytes read without -0 is a usage error, as for every job.
    let o = bounded(seekless_tar(t.path()).args(["-f", "never.tar", "--files-from", list_arg]));
    assert_exit(&o, 2);
    assert!(!t.path().join("never.tar").exists());
}

#[test]
fn one_file_system_leaves_out_what_is_mounted_inside() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("here"), b"on the scratch filesystem\n").unwrap();
    let mounted = Mounted::tmpfs(&tree.join("mnt"), "size=4m");
    std::fs::write(mounted.0.join("elsewhere"), b"on a tmpfs\n").unwrap();
    let files = |args: &[&str]| -> Vec<String> {
        let archive = t.path().join("x.tar");
        let o = bounded(seekless_tar(t.path()).arg("-f").arg(&archive).args(args));
        assert_exit_quiet(&o, 0);
        let mut names: Vec<String> = gnu_listing(&archive, &[])
            .into_iter()
            .filter(|m| m.kind == '-')
            .map(|m| m.name)
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        files(&["tree"]),
        vec!["tree/here", "tree/mnt/elsewhere"],
        "without -x"
    );
    assert_eq!(files(&["-x", "tree"]), vec!["tree/here"], "with -x");
}

#[test]
fn usage_errors_exit_2_and_write_nothing() {
    let t = scratch!();
    std::fs::write(t.path().join("file"), b"data\n").unwrap();
    for args in [
        vec!["--no-such-option", "file"],
        vec!["-f"],
        vec!["--locate", "sideways", "-f", "a.tar", "file"],
    ] {
        let o = bounded(seekless_tar(t.path()).args(&args));
        assert_exit(&o, 2);
        assert!(o.stdout.is_empty(), "{args:?}: wrote to stdout");
        assert!(!t.path().join("a.tar").exists(), "{args:?}: wrote a.tar");
    }
    assert_eq!(entries(t.path()), vec!["file"], "nothing was left behind");
}
