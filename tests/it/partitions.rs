//! One disk with two partitions (issue 16, item 2): the files of both filesystems share
//! one sweep of the disk, ordered by where they lie on the whole disk (partition start +
//! device offset), instead of two sweeps fighting for one head.
//!
//! The disk is an image on a loop device with an MBR partition table written here (two
//! primary partitions of 60 MiB at 1 MiB and 64 MiB; sfdisk is not installed on this
//! machine nor among CI's packages). Where the kernel reads partition tables, `losetup
//! -P` gives `loopNp1` and `loopNp2` and their starts come from
//! `/sys/class/block/loopNpK/start`. A kernel built without partition-table parsers (this
//! machine's: no `loopNpK` appears, and its own disk `vda` has no partitions either) gets
//! the same partitions as loop devices over the whole disk's loop device at the same
//! offsets (`losetup -o START --sizelimit LEN /dev/loopN`, what `mount -o offset=` does),
//! whose starts come from `/sys/block/loopM/loop/offset`. Either way the filesystems lie
//! at those offsets of one disk, `loopN`. Needs root (loop devices, mount) and `filefrag`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const SECTOR: u64 = 512;
const MIB: u64 = 1 << 20;
const IMAGE: u64 = 128 * MIB;
/// The partitions as written to the MBR: (first byte, length). The same size each, so the
/// two ext4 filesystems lay out their files alike and device offsets alone would
/// interleave the partitions' files.
const PARTITIONS: [(u64, u64); 2] = [(MIB, 60 * MIB), (64 * MIB, 60 * MIB)];
const FILES_EACH: usize = 20;

/// An image with an MBR partition table of `PARTITIONS` on a loop device, an ext4
/// filesystem mounted on each partition. Everything is undone on drop, even when the test
/// panics.
struct PartitionedDisk {
    /// `loopN`: the disk.
    name: String,
    /// `/dev/loopN`.
    device: String,
    /// The partitions' block devices: `/dev/loopNpK`, or loop devices over `/dev/loopN`
    /// at the partitions' offsets when the kernel does not read partition tables.
    partitions: Vec<String>,
    /// Whether `partitions` are loop devices of our own (detached on drop).
    emulated: bool,
    /// Mount points, one per partition (mounted ones only).
    mounts: Vec<PathBuf>,
    /// Queue settings changed, with their values before (a loop device keeps them after
    /// it is detached, for whoever attaches it next).
    saved_queue: Vec<(String, String)>,
    dir: tempfile::TempDir,
}

impl PartitionedDisk {
    fn new(dir: tempfile::TempDir) -> PartitionedDisk {
        let image = dir.path().join("disk.img");
        std::fs::write(&image, mbr(&PARTITIONS)).unwrap();
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&image)
            .unwrap();
        f.set_len(IMAGE).unwrap();
        drop(f);
        let out = run(Command::new("losetup")
            .args(["-f", "--show", "-P"])
            .arg(&image));
        let device = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let name = device.trim_start_matches("/dev/").to_string();
        let mut disk = PartitionedDisk {
            name,
            device,
            partitions: Vec::new(),
            emulated: false,
            mounts: Vec::new(),
            saved_queue: Vec::new(),
            dir,
        };
        if disk.kernel_partitions_appear() {
            disk.partitions = (1..=PARTITIONS.len())
                .map(|k| format!("{}p{k}", disk.device))
                .collect();
        } else {
            disk.emulated = true;
            for &(start, len) in &PARTITIONS {
                let out = run(Command::new("losetup")
                    .args(["-f", "--show"])
                    .arg(format!("--offset={start}"))
                    .arg(format!("--sizelimit={len}"))
                    .arg(&disk.device));
                let part = String::from_utf8_lossy(&out.stdout).trim().to_string();
                disk.partitions.push(part);
            }
        }
        disk
    }

    /// Whether the kernel made `loopNp1`.. from the table (sysfs entry and device node;
    /// `losetup -P` scans before it returns, devtmpfs makes the node).
    fn kernel_partitions_appear(&self) -> bool {
        for _ in 0..20 {
            let all = (1..=PARTITIONS.len()).all(|k| {
                let part = format!("{}p{k}", self.name);
                Path::new("/sys/class/block").join(&part).exists()
                    && Path::new("/dev").join(&part).exists()
            });
            if all {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }

    /// Where partition `i` (from 0) lies on the disk, as the kernel says: (first byte,
    /// length).
    fn partition_extent(&self, i: usize) -> (u64, u64) {
        let number = |p: PathBuf| -> u64 {
            std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .trim()
                .parse()
                .unwrap()
        };
        let part = self.partitions[i].trim_start_matches("/dev/");
        if self.emulated {
            let sys = Path::new("/sys/block").join(part);
            let backing = std::fs::read_to_string(sys.join("loop/backing_file")).unwrap();
            assert_eq!(backing.trim(), self.device, "{part} is on the disk");
            let size = number(sys.join("loop/sizelimit"));
            (number(sys.join("loop/offset")), size)
        } else {
            let sys = Path::new("/sys/class/block").join(part);
            (
                number(sys.join("start")) * SECTOR,
                number(sys.join("size")) * SECTOR,
            )
        }
    }

    fn mkfs_and_mount(&mut self, i: usize) -> PathBuf {
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"])
            .arg(&self.partitions[i]));
        let mnt = self.dir.path().join(format!("mnt{}", i + 1));
        std::fs::create_dir(&mnt).unwrap();
        run(Command::new("mount").arg(&self.partitions[i]).arg(&mnt));
        self.mounts.push(mnt.clone());
        mnt
    }

    /// Unmounts and mounts every filesystem again, so the run reads metadata afresh.
    fn remount(&self) {
        for (i, mnt) in self.mounts.iter().enumerate() {
            run(Command::new("umount").arg(mnt));
            run(Command::new("mount").arg(&self.partitions[i]).arg(mnt));
        }
    }

    /// Sets one of the whole disk's `queue/` settings (restored when dropped).
    fn set_queue(&mut self, name: &str, value: &str) {
        // read_ahead_kb too: the kernel recomputes it when rotational is written.
        for n in [name, "read_ahead_kb"] {
            if !self.saved_queue.iter().any(|(s, _)| s == n) {
                let knob = self.queue_knob(n);
                let old = std::fs::read_to_string(&knob)
                    .unwrap_or_else(|e| panic!("{}: {e}", knob.display()));
                self.saved_queue
                    .push((n.to_string(), old.trim().to_string()));
            }
        }
        let knob = self.queue_knob(name);
        std::fs::write(&knob, value).unwrap_or_else(|e| panic!("{}: {e}", knob.display()));
    }

    fn queue_knob(&self, name: &str) -> PathBuf {
        Path::new("/sys/block")
            .join(&self.name)
            .join("queue")
            .join(name)
    }
}

impl Drop for PartitionedDisk {
    fn drop(&mut self) {
        for mnt in self.mounts.iter().rev() {
            unmount_or_detach(mnt);
        }
        if self.emulated {
            for part in self.partitions.iter().rev() {
                let _ = Command::new("losetup").arg("-d").arg(part).status();
            }
        }
        // read_ahead_kb last: writing rotational makes the kernel recompute it.
        let mut saved = std::mem::take(&mut self.saved_queue);
        saved.sort_by_key(|(name, _)| name == "read_ahead_kb");
        for (name, old) in saved {
            let _ = std::fs::write(self.queue_knob(&name), old);
        }
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
    }
}

/// A master boot record with one primary Linux partition (type 0x83) per (first byte,
/// length) in `parts`, CHS fields saying "use LBA".
fn mbr(parts: &[(u64, u64)]) -> Vec<u8> {
    let mut sector = vec![0u8; SECTOR as usize];
    sector[440..444].copy_from_slice(&0x5eec_1e55u32.to_le_bytes()); // disk signature
    for (i, &(start, len)) in parts.iter().enumerate() {
        let e = &mut sector[446 + 16 * i..446 + 16 * (i + 1)];
        e[0] = 0x00; // not bootable
        e[1..4].copy_from_slice(&[0xfe, 0xff, 0xff]);
        e[4] = 0x83;
        e[5..8].copy_from_slice(&[0xfe, 0xff, 0xff]);
        e[8..12].copy_from_slice(&u32::try_from(start / SECTOR).unwrap().to_le_bytes());
        e[12..16].copy_from_slice(&u32::try_from(len / SECTOR).unwrap().to_le_bytes());
    }
    sector[510] = 0x55;
    sector[511] = 0xaa;
    sector
}

/// `count` files of 4–300 KiB in `dir`, created in shuffled order, each synced (so placed).
fn write_files(dir: &Path, count: usize, seed: u64) -> Vec<PathBuf> {
    let mut rng = Rng::new(seed);
    let mut names: Vec<PathBuf> = (0..count)
        .map(|i| dir.join(format!("IMG_{i:04}.JPG")))
        .collect();
    rng.shuffle(&mut names);
    for path in &names {
        let size = 4096 + rng.below(296 * 1024) as usize;
        std::fs::write(path, rng.bytes(size)).unwrap();
        std::fs::File::open(path).unwrap().sync_all().unwrap();
    }
    names.sort();
    names
}

/// The disk, its partitions' places, their mount points and the files on each; `None`
/// when the test cannot run here.
struct Setup {
    disk: PartitionedDisk,
    parts: Vec<(u64, u64)>,
    mnts: Vec<PathBuf>,
    files: Vec<Vec<PathBuf>>,
}

impl Setup {
    fn new(test: &str) -> Option<Setup> {
        if !require_root(test)
            || !require_tool(test, "mkfs.ext4")
            || !require_tool(test, "filefrag")
            || !require_tool(test, "sha256sum")
        {
            return None;
        }
        let dir = if Path::new("/dev/shm").is_dir() {
            scratch_dir_in(test, "/dev/shm")
        } else {
            scratch_dir(test)
        };
        let mut disk = PartitionedDisk::new(dir);
        // The partitions are where the table puts them.
        let parts: Vec<(u64, u64)> = (0..PARTITIONS.len())
            .map(|i| disk.partition_extent(i))
            .collect();
        assert_eq!(parts, PARTITIONS, "partitions of {}", disk.device);
        let mnts: Vec<PathBuf> = (0..PARTITIONS.len())
            .map(|i| disk.mkfs_and_mount(i))
            .collect();
        let files = mnts
            .iter()
            .enumerate()
            .map(|(i, m)| write_files(m, FILES_EACH, 11 + i as u64))
            .collect();
        // A spinning disk, as the emulated one: the plan sweeps it (and the reader waits
        // at gaps) as it would a real one.
        disk.set_queue("rotational", "1");
        disk.remount();
        Some(Setup {
            disk,
            parts,
            mnts,
            files,
        })
    }

    /// Which partition (from 0) `path` is on.
    fn partition_of(&self, path: &Path) -> usize {
        self.mnts.iter().position(|m| path.starts_with(m)).unwrap()
    }

    /// `seekless order --json --summary` on both filesystems: the files, and the summary.
    fn order(&self) -> (Vec<OrderLine>, String) {
        let (listed, summary) = order_json(&self.mnts);
        assert_eq!(listed.len(), 2 * FILES_EACH, "{listed:#?}");
        let mut seen: Vec<&PathBuf> = listed.iter().map(|l| &l.path).collect();
        seen.sort();
        let mut want: Vec<&PathBuf> = self.files.iter().flatten().collect();
        want.sort();
        assert_eq!(seen, want, "every file once");
        (listed, summary)
    }
}

#[test]
fn two_partitions_of_one_disk_are_one_disk_and_one_sweep() {
    let Some(s) = Setup::new(test_name!()) else {
        return;
    };
    let (listed, summary) = s.order();
    // "seekless: ext4 on loop3 (rotational): 20 files located by fiemap", one line per
    // filesystem: both on the whole disk.
    let on: Vec<&str> = summary
        .lines()
        .filter(|l| l.contains(" files located by "))
        .collect();
    let expected = format!(
        "seekless: ext4 on {} (rotational): {FILES_EACH} files located by fiemap",
        s.disk.name
    );
    assert_eq!(
        on,
        [expected.as_str(), expected.as_str()],
        "summary:\n{summary}"
    );
    for l in &listed {
        assert_eq!(l.disk, s.disk.name, "one disk for both partitions: {l:?}");
        assert_eq!(l.strategy, "fiemap", "{l:?}");
    }

    // One sweep: a single hashing thread gets the files of both filesystems in the plan's
    // order (two sweeps would hand them out interleaved as each disk's reads complete).
    s.disk.remount();
    let out = run(seekless()
        .args(["hash", "--summary", "-j", "1", "--algo", "sha256"])
        .args(&s.mnts));
    let parse = |text: &str| -> Vec<(String, PathBuf)> {
        text.lines()
            .map(|l| {
                let (hex, path) = l.split_once("  ").unwrap();
                (hex.to_string(), PathBuf::from(path))
            })
            .collect()
    };
    let mut hashed = parse(&String::from_utf8_lossy(&out.stdout));
    let read_order: Vec<&PathBuf> = hashed.iter().map(|(_, p)| p).collect();
    let plan_order: Vec<&PathBuf> = listed.iter().map(|l| &l.path).collect();
    assert_eq!(read_order, plan_order, "read order is the plan's one sweep");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("read {} files,", 2 * FILES_EACH)),
        "{stderr}"
    );
    // Every byte: the same digests as sha256sum.
    let mut cmd = Command::new("sha256sum");
    cmd.args(s.files.iter().flatten());
    let mut want = parse(&String::from_utf8_lossy(&run(&mut cmd).stdout));
    want.sort_by(|a, b| a.1.cmp(&b.1));
    hashed.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(hashed, want, "seekless hash against sha256sum");
}

#[test]
fn two_partitions_of_one_disk_are_read_in_disk_order() {
    let Some(s) = Setup::new(test_name!()) else {
        return;
    };
    let (listed, _) = s.order();
    let mut last = 0;
    for (i, l) in listed.iter().enumerate() {
        let off = l.offset.unwrap_or_else(|| panic!("no offset: {l:?}"));
        // Independently: filefrag's first physical block on the filesystem's device, plus
        // where that device starts on the disk (the kernel's partition start or loop
        // offset), is the file's place on the disk, inside its partition.
        let k = s.partition_of(&l.path);
        let (start, len) = s.parts[k];
        let (first, _) = filefrag(&l.path);
        let first = first.unwrap_or_else(|| panic!("filefrag: no extent for {l:?}"));
        assert_eq!(
            off,
            start + first,
            "#{i} {l:?}: partition {} start {start} + filefrag {first}",
            k + 1
        );
        assert!(
            off >= start && off < start + len,
            "{l:?} outside partition {}",
            k + 1
        );
        assert!(off >= last, "offset went backwards at #{i}: {l:?}");
        last = off;
    }
    // All of the first partition's files, then all of the second's.
    let partitions: Vec<usize> = listed.iter().map(|l| s.partition_of(&l.path)).collect();
    assert_eq!(
        partitions,
        [[0; FILES_EACH], [1; FILES_EACH]].concat(),
        "partition of each file in plan order"
    );
    // The test means something: by device offset alone (without the partition start) the
    // two partitions' files would interleave.
    let relative = |k: usize| -> Vec<u64> {
        listed
            .iter()
            .filter(|l| s.partition_of(&l.path) == k)
            .map(|l| l.offset.unwrap() - s.parts[k].0)
            .collect()
    };
    let (r0, r1) = (relative(0), relative(1));
    assert!(
        r1.iter().min() < r0.iter().max(),
        "device offsets of the two partitions do not overlap: {r0:?} {r1:?}"
    );
}
