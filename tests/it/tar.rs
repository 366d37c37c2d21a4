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

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::archive::*;
use crate::common::trees::*;
use crate::common::*;

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
    } else {
        skip(test, "root", "device nodes in the tree need root");
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
