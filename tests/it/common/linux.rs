//! Linux fixtures: filesystems on loop devices, corpora with fragmented files, `filefrag`,
//! and the lock that keeps a page-cache drop away from tests that measure the cache.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::{Rng, run, scratch_dir_in};

/// All integration tests share one process and run in parallel: a test that drops the
/// whole page cache (`bench`'s `drop-caches`) takes this for writing, and a test whose
/// assertions count what is cached or read from its device takes it for reading, so one
/// never runs during the other.
static PAGE_CACHE: RwLock<()> = RwLock::new(());

/// For a test that measures the page cache or its device's reads (many may run at once).
pub fn page_cache_watched() -> RwLockReadGuard<'static, ()> {
    PAGE_CACHE.read().unwrap_or_else(|e| e.into_inner())
}

/// For a test that drops the whole page cache (runs alone among the watchers).
pub fn page_cache_dropped() -> RwLockWriteGuard<'static, ()> {
    PAGE_CACHE.write().unwrap_or_else(|e| e.into_inner())
}

/// A filesystem made on an image file, attached to a loop device and mounted. Everything
/// is undone on drop, even when the test panics.
pub struct LoopFs {
    pub image: PathBuf,
    pub device: String,
    pub mnt: PathBuf,
    _dir: tempfile::TempDir,
    mounted: bool,
    /// Queue settings changed by the test, with their values before: a loop device keeps
    /// them after it is detached, for whoever attaches it next.
    saved_queue: std::cell::RefCell<Vec<(String, String)>>,
}

impl LoopFs {
    /// `fs` is ext4, ext4-nofiletype, xfs or btrfs; `size_mb` the image size. The image and mount point
    /// are in a scratch directory named after `test` (in `/dev/shm` when there is one).
    pub fn new(test: &str, fs: &str, size_mb: u64) -> LoopFs {
        let dir = scratch_dir_in(test, shm_or_tmp());
        let image = dir.path().join("fs.img");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let f = std::fs::File::create(&image).unwrap();
        f.set_len(size_mb << 20).unwrap();
        drop(f);
        let out = run(Command::new("losetup").args(["-f", "--show"]).arg(&image));
        let device = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mut me = LoopFs {
            image,
            device,
            mnt,
            _dir: dir,
            mounted: false,
            saved_queue: Default::default(),
        };
        let mkfs: Vec<&str> = match fs {
            "ext4" => vec![
                "mkfs.ext4",
                "-q",
                "-F",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
            ],
            // Directory entries without their file's type (`DT_UNKNOWN`), as on some older
            // or foreign filesystems: whoever lists them must ask each entry.
            "ext4-nofiletype" => vec![
                "mkfs.ext4",
                "-q",
                "-F",
                "-O",
                "^filetype",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
            ],
            "xfs" => vec!["mkfs.xfs", "-q", "-f"],
            "btrfs" => vec!["mkfs.btrfs", "-q", "-f"],
            other => panic!("unknown fs {other}"),
        };
        run(Command::new(mkfs[0]).args(&mkfs[1..]).arg(&me.device));
        run(Command::new("mount").arg(&me.device).arg(&me.mnt));
        me.mounted = true;
        me
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.mnt.join(rel)
    }

    /// Sets one of the device's `queue/` settings (restored when dropped).
    pub fn set_queue(&self, name: &str, value: &str) {
        let mut saved = self.saved_queue.borrow_mut();
        // read_ahead_kb too: the kernel recomputes it when some others are written.
        for n in [name, "read_ahead_kb"] {
            if !saved.iter().any(|(s, _)| s == n) {
                let knob = self.queue_knob(n);
                let old = std::fs::read_to_string(&knob)
                    .unwrap_or_else(|e| panic!("{}: {e}", knob.display()));
                saved.push((n.to_string(), old.trim().to_string()));
            }
        }
        let knob = self.queue_knob(name);
        std::fs::write(&knob, value).unwrap_or_else(|e| panic!("{}: {e}", knob.display()));
    }

    /// Read requests the device has completed (the first field of its sysfs `stat`).
    pub fn read_requests(&self) -> u64 {
        let stat = std::fs::read_to_string(self.sys_block().join("stat")).unwrap();
        stat.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// Bytes read from the device so far (its `stat`'s sectors read).
    pub fn read_bytes(&self) -> u64 {
        let stat = std::fs::read_to_string(self.sys_block().join("stat")).unwrap();
        let sectors: u64 = stat.split_whitespace().nth(2).unwrap().parse().unwrap();
        sectors * 512
    }

    fn sys_block(&self) -> PathBuf {
        let dev = Path::new(&self.device).file_name().unwrap();
        Path::new("/sys/block").join(dev)
    }

    fn queue_knob(&self, name: &str) -> PathBuf {
        self.sys_block().join("queue").join(name)
    }

    /// Puts back what `set_queue` changed. Writing `rotational` or `max_sectors_kb` makes
    /// the kernel recompute `read_ahead_kb`, so that one goes last.
    fn restore_queue(&self) {
        let mut saved = self.saved_queue.take();
        saved.sort_by_key(|(name, _)| name == "read_ahead_kb");
        for (name, old) in saved {
            let _ = std::fs::write(self.queue_knob(&name), old);
        }
    }

    /// Unmounts and mounts again, so everything is read from the device afresh.
    ///
    /// An unmount that finds the filesystem busy is tried again for a while: another
    /// test's child, forked from this process but not yet at its `exec`, holds copies of
    /// whatever files this test had open at that moment (close-on-exec closes them only at
    /// the `exec`).
    pub fn remount(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let o = Command::new("umount").arg(&self.mnt).output().unwrap();
            if o.status.success() {
                break;
            }
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("busy") && std::time::Instant::now() < deadline,
                "umount {}: {}\n{err}",
                self.mnt.display(),
                o.status
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        run(Command::new("mount").arg(&self.device).arg(&self.mnt));
    }
}

impl LoopFs {
    /// The same filesystem mounted at the same place under another device number, as a
    /// disk on another port or the same disk read on another machine: the image is
    /// attached to a new loop device, the old one detached. A filesystem whose device
    /// number is anonymous (btrfs) would get its old one again: a tmpfs mounted in
    /// between holds it, in `hold` (a scratch directory), unmounted on the holder's drop.
    /// Asserts that the device number changed.
    pub fn mount_from_another_device(&mut self, hold: &Path) -> Vec<Held> {
        use std::os::unix::fs::MetadataExt;
        let before = std::fs::metadata(&self.mnt).unwrap().dev();
        let out = run(Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&self.image));
        let new = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mut held = Vec::new();
        for attempt in 0..5 {
            let o = Command::new("umount").arg(&self.mnt).output().unwrap();
            assert!(o.status.success(), "umount {}: {o:?}", self.mnt.display());
            self.mounted = false;
            let at = hold.join(format!("hold-{attempt}"));
            std::fs::create_dir_all(&at).unwrap();
            run(Command::new("mount").args(["-t", "tmpfs", "hold"]).arg(&at));
            held.push(Held(at));
            run(Command::new("mount").arg(&new).arg(&self.mnt));
            self.mounted = true;
            if std::fs::metadata(&self.mnt).unwrap().dev() != before {
                break;
            }
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
        self.device = new;
        let after = std::fs::metadata(&self.mnt).unwrap().dev();
        assert_ne!(after, before, "the filesystem kept its device number");
        held
    }
}

/// A mount held for a test's duration, unmounted (and its directory removed) on drop.
pub struct Held(pub PathBuf);

impl Held {
    /// `from` bind-mounted at `at` (an existing directory), unmounted on drop.
    pub fn bind(from: &Path, at: &Path) -> Held {
        run(Command::new("mount").arg("--bind").arg(from).arg(at));
        Held(at.to_path_buf())
    }

    /// Unmounts it now, leaving its directory where it was (a drive unplugged).
    pub fn unmount(self) {
        run(Command::new("umount").arg(&self.0));
        std::mem::forget(self);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        unmount_or_detach(&self.0);
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Unmounts `mnt` for a test's cleanup, lazily (detached, to go once unused) if it is busy:
/// a cleanup never fails the test it ends.
pub fn unmount_or_detach(mnt: &Path) {
    let ok = Command::new("umount")
        .arg(mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let _ = Command::new("umount").arg("-l").arg(mnt).status();
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            unmount_or_detach(&self.mnt);
        }
        self.restore_queue();
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
    }
}

/// One btrfs filesystem over two loop devices (`mkfs.btrfs -d PROFILE -m raid1`), the
/// first set rotational, the second not, mounted (from the first, unless made with
/// [`BtrfsPool::mounted_from`]). Everything is undone on drop, the devices' queue
/// settings put back.
pub struct BtrfsPool {
    pub devices: [String; 2],
    pub mnt: PathBuf,
    /// The member that is btrfs's device 1 (`devices[first]`), mounted from.
    first: usize,
    saved_queue: Vec<(PathBuf, String)>,
    mounted: bool,
    _dir: tempfile::TempDir,
}

impl BtrfsPool {
    pub fn new(test: &str, data_profile: &str, size_mb: u64) -> BtrfsPool {
        BtrfsPool::mounted_from(test, data_profile, size_mb, 0)
    }

    /// [`BtrfsPool::new`], mounted from `devices[member]` (1: the non-rotational one),
    /// which is also made btrfs's device 1: the kernel names the device of lowest id as
    /// the mount's source (`/proc/self/mountinfo`) whichever one `mount` was given, so
    /// that is the device a filesystem is seen as mounted from.
    pub fn mounted_from(test: &str, data_profile: &str, size_mb: u64, member: usize) -> BtrfsPool {
        let dir = scratch_dir_in(test, shm_or_tmp());
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let mut devices = Vec::new();
        for i in 0..2 {
            let image = dir.path().join(format!("dev{i}.img"));
            std::fs::File::create(&image)
                .unwrap()
                .set_len(size_mb << 20)
                .unwrap();
            let out = run(Command::new("losetup").args(["-f", "--show"]).arg(&image));
            devices.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
        }
        let devices: [String; 2] = devices.try_into().unwrap();
        let mut me = BtrfsPool {
            devices,
            mnt,
            first: member,
            saved_queue: Vec::new(),
            mounted: false,
            _dir: dir,
        };
        // read_ahead_kb too: the kernel recomputes it when rotational is written and at
        // mkfs.
        for dev in &me.devices {
            let queue = Path::new("/sys/block")
                .join(Path::new(dev).file_name().unwrap())
                .join("queue");
            for knob in ["rotational", "read_ahead_kb"] {
                let old = std::fs::read_to_string(queue.join(knob)).unwrap();
                me.saved_queue
                    .push((queue.join(knob), old.trim().to_string()));
            }
        }
        let rotational = me.saved_queue[0].0.clone();
        std::fs::write(&rotational, "1").unwrap();
        run(Command::new("mkfs.btrfs")
            .args(["-q", "-f", "-d", data_profile, "-m", "raid1"])
            .arg(&me.devices[member])
            .arg(&me.devices[1 - member]));
        run(Command::new("mount").arg(&me.devices[member]).arg(&me.mnt));
        me.mounted = true;
        me
    }

    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.mnt.join(rel)
    }

    /// The loop devices' names (`loop3`), the rotational one first.
    pub fn names(&self) -> [String; 2] {
        self.devices.clone().map(|d| {
            Path::new(&d)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
    }

    /// The name of the one disk the pool is swept as when it is not split into its
    /// members: theirs joined with `+` (`loop3+loop4`), in device-id order (the one
    /// mounted from first).
    pub fn whole_disk_name(&self) -> String {
        let names = self.names();
        format!("{}+{}", names[self.first], names[1 - self.first])
    }
}

impl Drop for BtrfsPool {
    fn drop(&mut self) {
        if self.mounted {
            unmount_or_detach(&self.mnt);
        }
        // rotational before read_ahead_kb (writing it recomputes read_ahead_kb).
        for (knob, old) in &self.saved_queue {
            let _ = std::fs::write(knob, old);
        }
        // The kernel remembers a multi-device btrfs's members (mkfs scanned them in):
        // forget them before the loop devices go to whoever attaches them next.
        let _ = Command::new("btrfs")
            .args(["device", "scan", "--forget"])
            .args(&self.devices)
            .status();
        for dev in &self.devices {
            let _ = Command::new("losetup").arg("-d").arg(dev).status();
        }
    }
}

fn shm_or_tmp() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Writes a corpus into `dir`: `count` files of 4–300 KiB written in shuffled order, a few
/// deliberately fragmented files (blocks written back to front with fsync between, so each
/// block is allocated after the one that follows it), an empty file and a sparse file.
/// Returns the relative paths of all files written.
pub fn write_corpus(dir: &Path, count: usize, seed: u64) -> Vec<PathBuf> {
    use std::io::{Seek, SeekFrom, Write};
    let mut rng = Rng::new(seed);
    let mut names: Vec<PathBuf> = (0..count)
        .map(|i| PathBuf::from(format!("d{}/IMG_{:04}.JPG", i % 4, i)))
        .collect();
    for d in 0..4 {
        std::fs::create_dir_all(dir.join(format!("d{d}"))).unwrap();
    }
    let mut order = names.clone();
    rng.shuffle(&mut order);
    for rel in &order {
        let size = 4096 + rng.below(300 * 1024) as usize;
        let mut f = std::fs::File::create(dir.join(rel)).unwrap();
        f.write_all(&rng.bytes(size)).unwrap();
        f.sync_all().unwrap();
    }
    for k in 0..3 {
        let rel = PathBuf::from(format!("frag{k}.bin"));
        write_fragmented(&dir.join(&rel), 8, &mut rng);
        names.push(rel);
    }
    std::fs::File::create(dir.join("empty")).unwrap();
    names.push(PathBuf::from("empty"));
    let f = std::fs::File::create(dir.join("sparse")).unwrap();
    f.set_len(64 << 20).unwrap();
    let mut f = f;
    f.seek(SeekFrom::Start(32 << 20)).unwrap();
    f.write_all(&rng.bytes(4096)).unwrap();
    f.sync_all().unwrap();
    names.push(PathBuf::from("sparse"));
    names
}

/// Writes a file of `chunks` × 64 KiB, then punches out every other chunk and writes it
/// again with fsync. Freed blocks are not reused before the journal commits, so each
/// rewritten chunk lands elsewhere: the file ends up with about `chunks` extents on ext4,
/// xfs and btrfs alike (ext4's allocator is too good to fragment by write order alone).
pub fn write_fragmented(path: &Path, chunks: u64, rng: &mut Rng) {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    const CHUNK: u64 = 65536;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    f.write_all(&rng.bytes((chunks * CHUNK) as usize)).unwrap();
    f.sync_all().unwrap();
    for c in (1..chunks).step_by(2) {
        // SAFETY: fallocate on an open fd with plain integer arguments.
        let rc = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                (c * CHUNK) as libc::off_t,
                CHUNK as libc::off_t,
            )
        };
        assert_eq!(rc, 0, "punch hole: {}", std::io::Error::last_os_error());
        f.write_all_at(&rng.bytes(CHUNK as usize), c * CHUNK)
            .unwrap();
        f.sync_all().unwrap();
    }
}

/// What `filefrag -v` says about a file: (first physical byte offset, extent count).
pub fn filefrag(path: &Path) -> (Option<u64>, u64) {
    let out = run(Command::new("filefrag").arg("-v").arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut block = 4096u64;
    let mut first = None;
    let mut count = 0;
    for line in text.lines() {
        if let Some(rest) = line.split(" blocks of ").nth(1) {
            block = rest.split_whitespace().next().unwrap().parse().unwrap();
        }
        let t = line.trim_start();
        if first.is_none() && t.starts_with("0:") {
            // "0:        0..       2:      34816..     34818:      3: ..."
            let phys = t.split(':').nth(2).unwrap().trim();
            let start = phys.split("..").next().unwrap().trim();
            first = Some(start.parse::<u64>().unwrap() * block);
        }
        if let Some(n) = line
            .strip_suffix(" extents found")
            .or(line.strip_suffix(" extent found"))
        {
            count = n.rsplit(' ').next().unwrap().parse().unwrap();
        }
    }
    (first, count)
}

/// A filesystem mounted by the test (tmpfs, a bind mount, mergerfs), unmounted when dropped.
pub struct Mounted(pub PathBuf);

impl Mounted {
    pub fn tmpfs(at: &Path, options: &str) -> Mounted {
        std::fs::create_dir_all(at).unwrap();
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "seekless-test"])
            .arg(at));
        Mounted(at.to_path_buf())
    }
}

impl Mounted {
    /// `from` bind-mounted at `at` (made if missing).
    pub fn bind(from: &Path, at: &Path) -> Mounted {
        std::fs::create_dir_all(at).unwrap();
        run(Command::new("mount").arg("--bind").arg(from).arg(at));
        Mounted(at.to_path_buf())
    }

    /// mergerfs over `branches` at `at` (no free space kept back: the default keeps 4 GiB,
    /// more than a test's loop filesystem has).
    pub fn mergerfs(at: &Path, branches: &[&Path]) -> Mounted {
        Mounted::mergerfs_with(at, branches, "")
    }

    /// [`Mounted::mergerfs`] with more mergerfs options (`-o`, comma-separated).
    pub fn mergerfs_with(at: &Path, branches: &[&Path], options: &str) -> Mounted {
        std::fs::create_dir_all(at).unwrap();
        let branches: Vec<String> = branches.iter().map(|b| b.display().to_string()).collect();
        let options = match options {
            "" => "minfreespace=0".to_string(),
            more => format!("minfreespace=0,{more}"),
        };
        run(Command::new("mergerfs")
            .arg("-o")
            .arg(options)
            .arg(branches.join(":"))
            .arg(at));
        Mounted(at.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        unmount_or_detach(&self.0);
    }
}

/// What `sha256sum` says of a file.
pub fn sha256sum(path: &Path) -> String {
    let out = run(Command::new("sha256sum").arg("--").arg(path));
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim_start_matches('\\')
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// What `b3sum` prints for the file.
pub fn b3sum(path: &Path) -> String {
    let out = run(Command::new("b3sum").arg("--no-names").arg(path));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
