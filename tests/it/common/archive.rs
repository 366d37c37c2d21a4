//! Running `seekless tar` and the tools that read its archives (GNU tar, bsdtar, Python's
//! `tarfile`), and what they say: GNU tar's verbose listing parsed, the listing a tree should
//! give, Python's view of each member. Used by the `tar*` test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use super::trees::*;
use super::*;

/// GNU tar's warnings about stamps before 1970 and far in the future (the trees have
/// both), the only things it may say on stderr while reading a sound archive of them.
pub const GNU_STAMP_WARNINGS: [&str; 2] = ["implausibly old time stamp", "s in the future"];

// ---------------------------------------------------------------------------------------
// Running seekless and the readers.

/// Runs `cmd` to its end with `input` on its stdin (none: /dev/null), collecting its
/// output; one still running after [`RUN_LIMIT`] is killed and the test fails (a hang,
/// say on a FIFO opened by mistake, is a bug, not a slow test).
pub fn bounded_with_input(cmd: &mut Command, input: Option<Vec<u8>>) -> Output {
    output_with_input(cmd, input, RUN_LIMIT)
}

/// [`bounded_with_input`] with nothing on stdin.
pub fn bounded(cmd: &mut Command) -> Output {
    bounded_with_input(cmd, None)
}

/// `seekless tar`, run in `cwd` (arguments to be added).
pub fn seekless_tar(cwd: &Path) -> Command {
    let mut cmd = seekless();
    cmd.current_dir(cwd).arg("tar");
    cmd
}

/// GNU tar in `cwd`, in the C locale and UTC (so listed times are the test's own).
pub fn gnu_tar(cwd: &Path) -> Command {
    let mut cmd = Command::new("tar");
    cmd.current_dir(cwd).env("TZ", "UTC").env("LC_ALL", "C");
    cmd
}

/// The run exited with `code`, printed nothing on stdout (the archive went to `-f`)
/// and did not panic.
pub fn assert_exit_quiet(o: &Output, code: i32) {
    assert_exit(o, code);
    assert!(
        o.stdout.is_empty(),
        "with -f nothing goes to stdout, got {} bytes",
        o.stdout.len()
    );
}

/// The lines of stderr that are seekless's own messages (`seekless: …`).
pub fn messages(o: &Output) -> Vec<String> {
    stderr(o)
        .lines()
        .filter(|l| l.starts_with("seekless: "))
        .map(str::to_string)
        .collect()
}

/// The effective user id (what seekless and its files run as).
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The name `getent` finds for a user or group id in `database` (`passwd`, `group`),
/// empty when there is none.
pub fn getent_name(database: &str, id: u64) -> String {
    sh(&format!("getent {database} {id} | cut -d: -f1"))
        .trim()
        .to_string()
}

/// Python 3 with `tarfile` (Debian's first: a pyenv `python3` first on PATH may be any).
pub fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// Extracts `archive` with GNU tar into `dst`, created empty: plain `tar EXTRA… -xpf
/// ARCHIVE -C DST` (no `--delay-directory-restore`: the archive's order must make that
/// unnecessary); tar must succeed and warn of nothing but stamps.
pub fn gnu_extract(archive: &Path, dst: &Path, extra: &[&str]) {
    gnu_extract_allowing(archive, dst, extra, &[]);
}

/// [`gnu_extract`], with more warnings `allowed` (the stderr lines containing them).
pub fn gnu_extract_allowing(archive: &Path, dst: &Path, extra: &[&str], allowed: &[&str]) {
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
pub fn assert_sound_read(o: &Output, what: &str) {
    assert_read_allowing(o, what, &[]);
}

/// [`assert_sound_read`], with more warnings `allowed`.
pub fn assert_read_allowing(o: &Output, what: &str, allowed: &[&str]) {
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
pub fn gnu_names(archive: &Path, extra: &[&str]) -> Vec<String> {
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
pub struct Listed {
    /// `-`, `d`, `l`, `h`, `p`, `c` or `b`.
    pub kind: char,
    /// The nine permission characters (`rwsr-xr-x`).
    pub perms: String,
    /// `UID/GID`.
    pub owner: String,
    /// The size, or `MAJOR,MINOR` for a device.
    pub size: String,
    /// `YYYY-MM-DD HH:MM:SS[.fraction]` in UTC, as GNU tar prints it.
    pub mtime: String,
    pub name: String,
    /// A symlink's target (`-> T`) or the first name of a hard link (`link to T`).
    pub target: Option<String>,
}

pub fn parse_listed(line: &str) -> Listed {
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
pub fn gnu_listing(archive: &Path, extra: &[&str]) -> Vec<Listed> {
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
pub fn perms(mode: u32) -> String {
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
pub fn utc(sec: i64, nsec: i64) -> String {
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
pub fn expected_listing(root: &Path, prefix: &str) -> BTreeMap<String, Listed> {
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
pub fn resolve_hard_links(listing: &[Listed]) -> (BTreeMap<String, Listed>, Vec<BTreeSet<String>>) {
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
pub fn assert_archive_order(listing: &[Listed]) {
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
pub fn assert_listing_matches(archive: &Path, root: &Path, prefix: &str) -> Vec<Listed> {
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
pub const PY_LIST: &str = r#"
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
pub struct PyMember {
    /// The name's bytes (tarfile drops a directory's trailing `/`; `./` is `.`).
    pub name: Vec<u8>,
    pub json: Value,
}

impl PyMember {
    pub fn pax(&self, key: &str) -> Option<Vec<u8>> {
        self.json["pax"][key].as_str().map(unhex)
    }
    pub fn str(&self, key: &str) -> String {
        self.json[key].as_str().unwrap().to_string()
    }
    pub fn u64(&self, key: &str) -> u64 {
        self.json[key].as_u64().unwrap()
    }
}

/// Every member of `archive` as Python's tarfile reads it, in archive order.
pub fn python_members(archive: &Path) -> Vec<PyMember> {
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

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A PAX time (`1600000000.123456789`, `-631151999.5`) as seconds and nanoseconds
/// (nanoseconds always ≥ 0, as `struct timespec` has them).
pub fn pax_time(s: &str) -> (i64, i64) {
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
