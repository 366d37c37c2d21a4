//! `seekless copy`, continued (see `copy`): interrupted and failing runs (`kill -9` at a
//! chosen moment, a full disk, files that change while copied), and `--delete`,
//! `--checksum`, `--verify`, `--manifest` against `rsync`, `b3sum -c` and `sha256sum -c`.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::process::Command;

use crate::common::copying::assert_exit;
use crate::common::copying::*;
use crate::common::*;

// ---------------------------------------------------------------------------------------
// 4. Interrupted and failing runs.

#[test]
fn a_copy_killed_mid_run_leaves_only_complete_files_and_a_rerun_completes_it() {
    let test = test_name!();
    if !ready(test, &[]) {
        return;
    }
    let (s, d, src) = two_disks(test, ("ext4", 256), ("xfs", 300), "data");
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
    let (s, d, src) = two_disks(test, ("ext4", 256), ("ext4", 128), "big");
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
    let (_s, d, src) = two_disks(test, ("ext4", 64), ("ext4", 64), "src");
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
    let (_s, d, src) = two_disks(test, ("ext4", 256), ("btrfs", 256), "src");
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
    let (s, d, src) = two_disks(test, ("ext4", 256), ("xfs", 300), "data");
    let names = flat_corpus(&src, 20, 1000, 200_000, 6);
    let (dest, root) = first_copy(&s, &d, &src);

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
    let (s, d, src) = two_disks(test, ("ext4", 256), ("xfs", 300), "data");
    let names = flat_corpus(&src, 5, 1000, 50_000, 13);
    let (dest, root) = first_copy(&s, &d, &src);

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
    let (_s, d, src) = two_disks(test, ("ext4", 256), ("ext4", 512), "data");
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
    let mut rng = Rng::new(9);
    let (s, d, src) = two_disks(test, ("ext4", 256), ("xfs", 300), "src");
    for (name, size) in [
        (&b"a.txt"[..], 10),
        (b"sub/b.bin", 100_000),
        (b"new\nline.txt", 20),
        (b"back\\slash.txt", 30),
        // Written as it is in a BLAKE3 manifest, as b3sum writes it (b3sum -c refuses
        // the `\r` escape), escaped in a SHA-256 one, as sha256sum writes it.
        (b"c\rr.txt", 25),
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
    assert_eq!(counts(&o), counts_of(1, 1, 7, 0, 0), "{}", stderr(&o));
    let after = fs::metadata(&unchanged).unwrap();
    assert_eq!(
        (after.ino(), after.ctime(), after.ctime_nsec()),
        (before.ino(), before.ctime(), before.ctime_nsec()),
        "an unchanged file is read for its hash, not written"
    );
    let lines = manifest_lines(&b3);
    assert_eq!(lines.len(), 9, "one line per source file");
    assert!(
        lines.iter().any(|l| l.ends_with(b"  src/c\rr.txt")),
        "a CR as it is"
    );
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
    assert_eq!(checked_ok("b3sum", &utf8_manifest, &s.mnt), 8);
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
    assert_eq!(counts(&o), counts_of(0, 0, 9, 0, 0), "{}", stderr(&o));
    assert_eq!(manifest_lines(&sha).len(), 9);
    assert_eq!(checked_ok("sha256sum", &sha, &s.mnt), 9);
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

#[test]
fn a_manifest_written_inside_the_source_is_not_copied_and_its_copy_not_deleted() {
    let t = scratch!();
    let (src, dst) = (t.path().join("src"), t.path().join("dst"));
    put(&src, b"a.txt", b"alpha");
    put(&src, b"sub/b.txt", b"beta");
    put(&src, b"SUMS", b"the previous manifest\n");
    let o = copy(&[slash(&src).as_os_str(), dst.as_os_str()]);
    assert_exit(&o, 0);
    assert_eq!(
        fs::read(dst.join("SUMS")).unwrap(),
        b"the previous manifest\n"
    );

    // A run that writes src/SUMS while it reads src/: its manifest (the temporary it is
    // writing, and the file it replaces) is left out, not read while it grows, and with
    // --delete the destination's copy of it stays.
    let manifest = src.join("SUMS");
    let o = copy(&[
        os("--delete"),
        os("--checksum"),
        os("--manifest"),
        manifest.as_os_str(),
        os("--verbose"),
        slash(&src).as_os_str(),
        dst.as_os_str(),
    ]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(!err.contains("changed"), "{err}");
    assert!(
        err.contains("SUMS: skipped: this run writes it; not copied"),
        "{err}"
    );
    assert_eq!(
        fs::read(dst.join("SUMS")).unwrap(),
        b"the previous manifest\n",
        "the destination's copy of the manifest is neither replaced nor deleted"
    );
    assert!(temporaries(&dst).is_empty(), "{:?}", temporaries(&dst));
    let lines = String::from_utf8(fs::read(&manifest).unwrap()).unwrap();
    let mut names: Vec<&str> = lines
        .lines()
        .map(|l| l.split_once("  ").unwrap().1)
        .collect();
    names.sort_unstable();
    let want = [src.join("a.txt"), src.join("sub/b.txt")];
    assert_eq!(
        names,
        want.iter().map(|p| p.to_str().unwrap()).collect::<Vec<_>>(),
        "the manifest lists the files read, not itself"
    );
}
