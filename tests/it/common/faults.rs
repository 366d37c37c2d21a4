//! The fault harness's fixtures: faultfs mounts (unmounted on drop), its fault log, random
//! source trees and their next versions, snapshots of trees, and a run of seekless that
//! may be killed with SIGKILL once it has opened its k-th file.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use super::{RUN_LIMIT, Rng, Running, freeze_when, signal};

/// The faultfs binary, built once per test process next to the seekless binary (same
/// profile).
pub fn faultfs_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("SEEKLESS_FAULTFS") {
            return PathBuf::from(p);
        }
        let dir = Path::new(env!("CARGO_BIN_EXE_seekless")).parent().unwrap();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["build", "-q", "-p", "faultfs"]);
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        super::run(&mut cmd);
        dir.join("faultfs")
    })
}

/// Which faults a mount injects (`faultfs --help`).
#[derive(Clone, Debug, Default)]
pub struct FaultArgs {
    pub seed: u64,
    pub rate_permille: u32,
    pub kinds: Vec<&'static str>,
    pub enospc_after: Option<u64>,
}

/// A faultfs mount of `backing` at `mnt`; unmounted (and its process reaped) when dropped,
/// a panicking test included.
pub struct FaultMount {
    pub mnt: PathBuf,
    child: Option<std::process::Child>,
}

impl FaultMount {
    pub fn new(backing: &Path, mnt: &Path, args: &FaultArgs, log: &Path) -> FaultMount {
        fs::create_dir_all(mnt).unwrap();
        let mut cmd = Command::new(faultfs_bin());
        cmd.arg(format!("--seed={}", args.seed))
            .arg(format!("--rate={}", args.rate_permille))
            .arg("--log")
            .arg(log)
            .arg("--log-opens")
            .stdin(Stdio::null());
        if !args.kinds.is_empty() {
            cmd.arg(format!("--faults={}", args.kinds.join(",")));
        }
        if let Some(n) = args.enospc_after {
            cmd.arg(format!("--enospc-after={n}"));
        }
        let child = cmd
            .arg(backing)
            .arg(mnt)
            .spawn()
            .unwrap_or_else(|e| panic!("faultfs: {e}"));
        let mut me = FaultMount {
            mnt: mnt.to_path_buf(),
            child: Some(child),
        };
        // Mounted when the kernel lists it (an event, polled; not a guess at a delay).
        let deadline = Instant::now() + Duration::from_secs(30);
        while !is_mounted(mnt) {
            if let Some(status) = me.child.as_mut().unwrap().try_wait().unwrap() {
                me.child = None;
                panic!("faultfs exited before mounting: {status}");
            }
            assert!(Instant::now() < deadline, "faultfs did not mount");
            std::thread::sleep(Duration::from_millis(5));
        }
        me
    }

    /// Unmounts and waits for faultfs to end.
    pub fn unmount(mut self) {
        self.undo();
    }

    fn undo(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while is_mounted(&self.mnt) {
            let ok = Command::new("umount")
                .arg(&self.mnt)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok && Instant::now() > deadline {
                let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
                break;
            }
            if !ok {
                // Busy: a sibling test's forked child may briefly hold a descriptor.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

impl Drop for FaultMount {
    fn drop(&mut self) {
        self.undo();
    }
}

fn is_mounted(mnt: &Path) -> bool {
    let info = fs::read("/proc/self/mountinfo").unwrap_or_default();
    let want = mnt.as_os_str().as_bytes();
    info.split(|&b| b == b'\n').any(|line| {
        line.split(|&b| b == b' ')
            .nth(4)
            .is_some_and(|p| unescape_mountinfo(p) == want)
    })
}

fn unescape_mountinfo(p: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        if p[i] == b'\\' && i + 3 < p.len() {
            let oct = std::str::from_utf8(&p[i + 1..i + 4]).ok();
            if let Some(v) = oct.and_then(|o| u8::from_str_radix(o, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(p[i]);
        i += 1;
    }
    out
}

/// One line of a fault log.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Logged {
    /// The fault's kind, or "open" for an open event.
    pub kind: String,
    pub path: Vec<u8>,
}

pub fn read_log(log: &Path) -> Vec<Logged> {
    let text = fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| {
            let kind = v["fault"].as_str().or(v["event"].as_str()).unwrap_or("?");
            let hex = v["path_hex"].as_str().unwrap_or("");
            let path = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            Logged {
                kind: kind.to_string(),
                path,
            }
        })
        .collect()
}

/// Opens logged so far (a cheap count for a kill point).
pub fn opens_logged(log: &Path) -> usize {
    let text = fs::read(log).unwrap_or_default();
    text.split(|&b| b == b'\n')
        .filter(|l| l.starts_with(br#"{"event":"open""#))
        .count()
}

// ---------------------------------------------------------------------------------------
// Trees.

const T0: u64 = 1_600_000_000;

fn set_mtime(path: &Path, secs: u64) {
    let f = File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::new(secs, 123_456_789))
        .unwrap();
}

fn write_file(path: &Path, data: &[u8], mtime: u64) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, data).unwrap();
    set_mtime(path, mtime);
}

fn random_size(rng: &mut Rng) -> usize {
    match rng.below(6) {
        0 => 0,
        1 => 1 + rng.below(100) as usize,
        2 | 3 => 100 + rng.below(8192) as usize,
        _ => 8192 + rng.below(200 << 10) as usize,
    }
}

/// A BMP of `w`×`h` pixels (24-bit): an image whose size `index` can tell.
fn bmp(w: u32, h: u32, rng: &mut Rng) -> Vec<u8> {
    let row = (w * 3).div_ceil(4) * 4;
    let pixels = row * h;
    let mut b = Vec::new();
    b.extend_from_slice(b"BM");
    b.extend_from_slice(&(54 + pixels).to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&54u32.to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes());
    b.extend_from_slice(&w.to_le_bytes());
    b.extend_from_slice(&h.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&pixels.to_le_bytes());
    b.extend_from_slice(&[0; 16]);
    b.extend_from_slice(&rng.bytes(pixels as usize));
    b
}

/// A directory of three small BMP images (a second filesystem for a tree).
pub fn build_images(dir: &Path, rng: &mut Rng) {
    for i in 0..3 {
        let (w, h) = (1 + rng.below(40) as u32, 1 + rng.below(40) as u32);
        write_file(&dir.join(format!("s{i}.bmp")), &bmp(w, h, rng), T0 + 70 + i);
    }
}

/// Directories of the generated trees: nested, one with a space, one not UTF-8.
const DIRS: [&[u8]; 7] = [
    b"a",
    b"a/b",
    b"a/b/c",
    b"with space",
    b"n\xffx",
    b"img",
    b"swap-dir",
];

/// A source tree for `seed`: files of random sizes (empty ones too) in nested
/// directories, images, an empty directory, symlinks (one dangling), hard links, and on
/// some seeds a user's file named like a seekless temporary.
pub fn build_tree(root: &Path, rng: &mut Rng) {
    fs::create_dir_all(root).unwrap();
    for d in DIRS {
        fs::create_dir_all(root.join(OsStr::from_bytes(d))).unwrap();
    }
    fs::create_dir_all(root.join("empty")).unwrap();
    let n = 12 + rng.below(20);
    for i in 0..n {
        let dir = DIRS[rng.below(DIRS.len() as u64) as usize];
        let mut rel = dir.to_vec();
        let image = rng.below(3) == 0;
        let ext = if image { "bmp" } else { "bin" };
        rel.extend_from_slice(format!("/f{i} {}.{ext}", rng.below(100)).as_bytes());
        let data = if image {
            bmp(1 + rng.below(60) as u32, 1 + rng.below(60) as u32, rng)
        } else {
            let size = random_size(rng);
            rng.bytes(size)
        };
        write_file(&root.join(OsStr::from_bytes(&rel)), &data, T0 + i);
    }
    for i in 0..3 {
        let (w, h) = (1 + rng.below(40) as u32, 1 + rng.below(40) as u32);
        write_file(
            &root.join(format!("img/p{i}.bmp")),
            &bmp(w, h, rng),
            T0 + 50 + i,
        );
    }
    write_file(&root.join("top.txt"), b"top\n", T0 + 60);
    // Becomes a directory in the next version, while swap-dir becomes a file.
    write_file(&root.join("swap-file"), &rng.bytes(3000), T0 + 61);
    write_file(&root.join("swap-dir/inner"), &rng.bytes(500), T0 + 62);
    symlink("top.txt", root.join("link")).unwrap();
    symlink("nowhere/at/all", root.join("dangling")).unwrap();
    fs::hard_link(root.join("top.txt"), root.join("a/hard-top")).unwrap();
    if rng.below(3) == 0 {
        write_file(&root.join("a/.x.seekless-tmp-1-2"), b"mine\n", T0 + 63);
    }
    fs::set_permissions(root.join("with space"), fs::Permissions::from_mode(0o750)).unwrap();
}

/// The tree's next version: some files rewritten (new content, later mtime), some
/// removed, some added; with `swap`, a file turned into a directory and a directory into
/// a file (which a copy without --delete refuses to replace, as `cp -a` does).
pub fn next_version(root: &Path, rng: &mut Rng, swap: bool) {
    let files: Vec<Vec<u8>> = snapshot(root)
        .entries
        .into_iter()
        .filter(|(rel, e)| e.kind == 'f' && !rel.starts_with(b"swap-"))
        .map(|(rel, _)| rel)
        .collect();
    for (i, rel) in files.iter().enumerate() {
        let path = root.join(OsStr::from_bytes(rel));
        match rng.below(10) {
            0 | 1 => {
                let size = random_size(rng);
                let data = if rel.ends_with(b".bmp") {
                    bmp(1 + rng.below(30) as u32, 1 + rng.below(30) as u32, rng)
                } else {
                    rng.bytes(size)
                };
                // Written in place, so hard links stay one file.
                fs::write(&path, data).unwrap();
                set_mtime(&path, T0 + 1000 + i as u64);
            }
            2 => fs::remove_file(&path).unwrap(),
            _ => {}
        }
    }
    for i in 0..1 + rng.below(4) {
        let dir = DIRS[rng.below(DIRS.len() as u64) as usize];
        let size = random_size(rng);
        let path = root
            .join(OsStr::from_bytes(dir))
            .join(format!("new{i}.dat"));
        if !path.parent().unwrap().is_dir() {
            continue;
        }
        write_file(&path, &rng.bytes(size), T0 + 2000 + i);
    }
    if !swap {
        return;
    }
    fs::remove_file(root.join("swap-file")).unwrap();
    write_file(
        &root.join("swap-file/now-a-dir"),
        &rng.bytes(700),
        T0 + 3000,
    );
    fs::remove_dir_all(root.join("swap-dir")).unwrap();
    write_file(&root.join("swap-dir"), &rng.bytes(1500), T0 + 3001);
}

/// One entry as the checks see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// 'f' file, 'd' directory, 'l' symlink, 'o' other.
    pub kind: char,
    pub mode: u32,
    pub size: u64,
    pub mtime: (i64, i64),
    pub hash: Option<[u8; 32]>,
    pub target: Option<Vec<u8>>,
    pub ino: u64,
}

/// A tree, by relative path ("" is the root), not following symlinks.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub entries: BTreeMap<Vec<u8>, Entry>,
}

impl Snapshot {
    pub fn get(&self, rel: &[u8]) -> Option<&Entry> {
        self.entries.get(rel)
    }

    /// Names that are one file (hard links), each group sorted.
    pub fn hard_links(&self) -> BTreeSet<Vec<Vec<u8>>> {
        let mut by_ino: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
        for (rel, e) in &self.entries {
            if e.kind == 'f' {
                by_ino.entry(e.ino).or_default().push(rel.clone());
            }
        }
        by_ino.into_values().filter(|g| g.len() > 1).collect()
    }
}

pub fn snapshot(root: &Path) -> Snapshot {
    let mut entries = BTreeMap::new();
    let mut stack = vec![Vec::new()];
    while let Some(rel) = stack.pop() {
        let path = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(OsStr::from_bytes(&rel))
        };
        let m = fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let ft = m.file_type();
        let kind = if ft.is_file() {
            'f'
        } else if ft.is_dir() {
            'd'
        } else if ft.is_symlink() {
            'l'
        } else {
            'o'
        };
        if kind == 'd' {
            for e in fs::read_dir(&path).unwrap() {
                let mut r = rel.clone();
                if !r.is_empty() {
                    r.push(b'/');
                }
                r.extend_from_slice(e.unwrap().file_name().as_bytes());
                stack.push(r);
            }
        }
        let entry = Entry {
            kind,
            mode: m.mode() & 0o7777,
            size: if kind == 'd' { 0 } else { m.size() },
            mtime: (m.mtime(), m.mtime_nsec()),
            hash: (kind == 'f').then(|| *blake3::hash(&fs::read(&path).unwrap()).as_bytes()),
            target: (kind == 'l').then(|| {
                fs::read_link(&path)
                    .unwrap()
                    .as_os_str()
                    .as_bytes()
                    .to_vec()
            }),
            ino: m.ino(),
        };
        entries.insert(rel, entry);
    }
    Snapshot { entries }
}

/// Whether `rel` is `base` or under it.
pub fn at_or_under(rel: &[u8], base: &[u8]) -> bool {
    base.is_empty()
        || rel == base
        || (rel.len() > base.len() && rel.starts_with(base) && rel[base.len()] == b'/')
}

/// Whether the last component of `rel` is named like a seekless temporary
/// (`.NAME.seekless-tmp-…`).
pub fn temp_named(rel: &[u8]) -> bool {
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    name.starts_with(b".") && name.windows(14).any(|w| w == b".seekless-tmp-")
}

/// The final name a temporary stands for (`.NAME.seekless-tmp-…` → `NAME`).
pub fn final_name_of(rel: &[u8]) -> Vec<u8> {
    let cut = rel.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
    let (dir, name) = rel.split_at(cut);
    match name.windows(14).position(|w| w == b".seekless-tmp-") {
        Some(at) if name.starts_with(b".") => [dir, &name[1..at]].concat(),
        _ => rel.to_vec(),
    }
}

pub fn show(rel: &[u8]) -> String {
    String::from_utf8_lossy(rel).into_owned()
}

// ---------------------------------------------------------------------------------------
// Runs.

/// How a run ended.
#[derive(Debug)]
pub struct Ended {
    /// The exit code; None when killed.
    pub code: Option<i32>,
    pub killed: bool,
    pub stderr: String,
}

/// Runs `cmd` (stderr to a file beside `log`); with `kill_at` = Some(k), freezes it in
/// short slices until faultfs has logged its k-th open, then kills it with SIGKILL while
/// frozen (so the kill lands at that point). A run that ends first is not killed.
pub fn run_maybe_killed(cmd: &mut Command, log: &Path, kill_at: Option<usize>) -> Ended {
    let err_path = log.with_extension("stderr");
    let err = File::create(&err_path).unwrap();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let mut run = Running(child);
    let mut killed = false;
    if let Some(k) = kill_at
        && freeze_when(&mut run.0, || opens_logged(log) >= k)
    {
        signal(&run.0, libc::SIGKILL);
        killed = true;
    }
    let started = Instant::now();
    let status = loop {
        if let Some(s) = run.0.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > RUN_LIMIT {
            panic!("{cmd:?} still running after {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Ended {
        code: if killed { None } else { status.code() },
        killed,
        // Lossy: names that are not UTF-8 are printed as their bytes.
        stderr: String::from_utf8_lossy(&fs::read(&err_path).unwrap_or_default()).into_owned(),
    }
}
