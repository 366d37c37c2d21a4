//! What no run may lose, case by case (issue 30's named cases; the randomized harness
//! checks the same invariants over seeded faults): a directory in the way kept when the
//! file replacing it could not be read whole, a source nested in its destination never
//! deleted, temporaries removed only when provably another run's dead ones, one writer
//! per destination, outputs written through links and into standard output, source forms
//! placed as `cp -a` and rsync place them, and a tar member read with an error called
//! what it is.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::copying::{arg, copy, copy_cmd, counts, put, slash};
use crate::common::*;

/// A process holding an exclusive `flock` on `path` (made if missing, as a file) until
/// dropped: another program's lock, taken before this returns.
struct Holder(Child);

impl Holder {
    fn lock(path: &Path) -> Holder {
        let script = "import fcntl, os, sys\n\
                      p = sys.argv[1]\n\
                      fd = os.open(p, os.O_RDONLY) if os.path.isdir(p) else \
                      os.open(p, os.O_RDWR | os.O_CREAT, 0o600)\n\
                      fcntl.flock(fd, fcntl.LOCK_EX)\n\
                      print('locked', flush=True)\n\
                      sys.stdin.read()\n";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked", "the holder took its lock");
        Holder(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

fn ready(test: &str) -> bool {
    require_tool(test, "python3")
}

/// A temporary's name as seekless makes them, for `name`.
fn temp_name(name: &str) -> String {
    format!(".{name}.seekless-tmp-0123456789abcdef-1")
}

#[test]
fn delete_keeps_a_directory_in_the_way_when_the_file_replacing_it_changes_while_read() {
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    // The source has a file where the backup has a directory with the old backup in it.
    put(&src, b"b/seekless-fault-grow-x", &[7u8; 100_000]);
    put(&src, b"b/other", b"o");
    put(
        &dest,
        b"b/seekless-fault-grow-x/old/backup.jpg",
        b"only copy",
    );
    let o = output_within(
        copy_cmd()
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .args(["--delete", "--summary"])
            .arg(slash(&src))
            .arg(&dest),
        RUN_LIMIT,
    );
    let err = stderr(&o);
    assert_exit(&o, 1);
    assert!(err.contains("nothing deleted"), "{err}");
    assert_eq!(counts(&o).deleted, 0, "{err}");
    assert_eq!(
        fs::read(dest.join("b/seekless-fault-grow-x/old/backup.jpg")).unwrap(),
        b"only copy"
    );
    assert_eq!(fs::read(dest.join("b/other")).unwrap(), b"o");
    // The same file read whole (no fault): the directory goes, the file takes its place.
    let o = copy(&["--delete".as_ref(), slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(
        fs::read(dest.join("b/seekless-fault-grow-x")).unwrap(),
        fs::read(src.join("b/seekless-fault-grow-x")).unwrap()
    );
}

#[test]
fn a_file_in_the_way_of_a_directory_is_exchanged_never_leaving_the_name_empty() {
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    // The source has a directory where the backup has a file.
    put(&src, b"seekless-fault-abort-d/new.jpg", b"new");
    put(&dest, b"seekless-fault-abort-d", b"the old file");
    let at = dest.join("seekless-fault-abort-d");
    // Killed (an abort: nothing cleaned up) once the directory took the name and before
    // the file is removed: the name is never empty.
    let o = output_within(
        copy_cmd()
            .env("SEEKLESS_INJECT_FAULTS", "1")
            .arg(slash(&src))
            .arg(&dest),
        RUN_LIMIT,
    );
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        Some(libc::SIGABRT),
        "the run was stopped where the test meant: {}",
        stderr(&o)
    );
    assert!(
        fs::symlink_metadata(&at).unwrap().is_dir(),
        "{}",
        stderr(&o)
    );
    // The next run finishes the job and leaves nothing of its own.
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert_eq!(fs::read(at.join("new.jpg")).unwrap(), b"new");
    let left: Vec<_> = fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("seekless-fault-abort-d")]
    );
}

#[test]
fn delete_never_removes_a_source_nested_in_its_destination() {
    let t = scratch!();
    let p = t.path();
    put(p, b"photos/old.jpg", b"old");
    put(p, b"photos/new/deep/a.jpg", b"a");
    put(p, b"photos/new/b.jpg", b"b");
    let new = p.join("photos/new");
    let o = copy(&[
        "--delete".as_ref(),
        slash(&new).as_os_str(),
        arg(&p.join("photos")),
    ]);
    assert_eq!(
        fs::read(new.join("deep/a.jpg")).unwrap(),
        b"a",
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read(new.join("b.jpg")).unwrap(), b"b");
    assert_eq!(fs::read(p.join("photos/deep/a.jpg")).unwrap(), b"a");
    assert!(
        !p.join("photos/old.jpg").exists(),
        "an extra file still goes"
    );

    let deep = p.join("photos/new/deep");
    let o = copy(&["--delete".as_ref(), slash(&deep).as_os_str(), arg(p)]);
    assert_eq!(
        fs::read(deep.join("a.jpg")).unwrap(),
        b"a",
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read(p.join("a.jpg")).unwrap(), b"a");
    assert!(stderr(&o).contains("holds a source"), "{}", stderr(&o));
}

#[test]
fn delete_never_removes_a_source_reached_through_a_bind_mount() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "mount") {
        return;
    }
    let t = scratch!();
    let p = t.path();
    put(p, b"photos/new/a.jpg", b"a");
    put(p, b"photos/old.jpg", b"old");
    let bind = p.join("bind");
    fs::create_dir(&bind).unwrap();
    run(Command::new("mount")
        .arg("--bind")
        .arg(p.join("photos/new"))
        .arg(&bind));
    let o = copy(&[
        "--delete".as_ref(),
        slash(&bind).as_os_str(),
        arg(&p.join("photos")),
    ]);
    run(Command::new("umount").arg(&bind));
    assert_eq!(
        fs::read(p.join("photos/new/a.jpg")).unwrap(),
        b"a",
        "{}",
        stderr(&o)
    );
    assert_eq!(fs::read(p.join("photos/a.jpg")).unwrap(), b"a");
}

#[test]
fn a_users_file_named_like_a_temporary_is_never_removed() {
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    put(&src, b"a", b"a");
    put(&src, b".notes.seekless-tmp-2024-12", b"mine");
    put(&dest, b".notes.seekless-tmp-2024-12", b"mine");
    put(&dest, b"sub/.x.seekless-tmp-1-2", b"also mine");
    put(&src, b"sub/.x.seekless-tmp-1-2", b"also mine");
    for delete in [false, true] {
        let mut args = vec![slash(&src), dest.clone().into_os_string()];
        if delete {
            args.insert(0, "--delete".into());
        }
        let o = output_within(copy_cmd().args(&args), RUN_LIMIT);
        assert_exit(&o, 0);
        assert_eq!(
            fs::read(dest.join(".notes.seekless-tmp-2024-12")).unwrap(),
            b"mine"
        );
        assert_eq!(
            fs::read(dest.join("sub/.x.seekless-tmp-1-2")).unwrap(),
            b"also mine"
        );
    }
}

#[test]
fn a_live_temporary_of_another_run_is_left_alone_and_a_dead_one_removed() {
    let test = test_name!();
    if !ready(test) {
        return;
    }
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    put(&src, b"sub/a", b"a");
    fs::create_dir_all(dest.join("sub")).unwrap();
    let temp = dest.join("sub").join(temp_name("x.tar"));
    let holder = Holder::lock(&temp);
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert!(temp.exists(), "a running program's temporary is left alone");
    drop(holder);
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 0);
    assert!(!temp.exists(), "a dead run's temporary is removed");
}

#[test]
fn a_second_copy_into_one_destination_is_refused_naming_the_first() {
    let test = test_name!();
    if !ready(test) {
        return;
    }
    let t = scratch!();
    let (src, dest) = (t.path().join("src"), t.path().join("dest"));
    put(&src, b"a", b"a");
    fs::create_dir(&dest).unwrap();
    let holder = Holder::lock(&dest);
    let o = copy(&[slash(&src).as_os_str(), arg(&dest)]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("process {}", holder.pid())),
        "names the holder: {err}"
    );
    assert!(!dest.join("a").exists(), "nothing written");
    drop(holder);
    assert_exit(&copy(&[slash(&src).as_os_str(), arg(&dest)]), 0);
    assert_eq!(fs::read(dest.join("a")).unwrap(), b"a");
}

#[test]
fn a_second_tar_of_one_archive_is_refused_while_the_first_writes_it() {
    let test = test_name!();
    if !ready(test) {
        return;
    }
    let t = scratch!();
    put(t.path(), b"d/a", b"a");
    let archive = t.path().join("a.tar");
    let holder = Holder::lock(&t.path().join(temp_name("a.tar")));
    let o = output_within(
        seekless()
            .arg("tar")
            .arg("-f")
            .arg(&archive)
            .arg(t.path().join("d")),
        RUN_LIMIT,
    );
    crate::common::assert_exit(&o, 2);
    assert!(
        stderr(&o).contains(&format!("process {}", holder.pid())),
        "{}",
        stderr(&o)
    );
    assert!(!archive.exists());
    drop(holder);
    let o = output_within(
        seekless()
            .arg("tar")
            .arg("-f")
            .arg(&archive)
            .arg(t.path().join("d")),
        RUN_LIMIT,
    );
    crate::common::assert_exit(&o, 0);
    assert!(archive.exists());
    assert!(
        !t.path().join(temp_name("a.tar")).exists(),
        "the dead one went"
    );
}

#[test]
fn copy_of_a_file_onto_a_link_writes_the_links_target_as_cp_does() {
    let test = test_name!();
    if !require_tool(test, "cp") {
        return;
    }
    let t = scratch!();
    let p = t.path();
    let mut shapes = Vec::new();
    for tool in ["cp", "seekless"] {
        let d = p.join(tool);
        put(&d, b"f", b"new");
        put(&d, b"real", b"old");
        symlink("real", d.join("link")).unwrap();
        symlink("made", d.join("dangling")).unwrap();
        // Written through a link to a file; refused through a dangling one.
        for (to, ok) in [("link", true), ("dangling", false)] {
            let o = if tool == "cp" {
                Command::new("cp")
                    .arg("-a")
                    .arg(d.join("f"))
                    .arg(d.join(to))
                    .output()
                    .unwrap()
            } else {
                copy(&[arg(&d.join("f")), arg(&d.join(to))])
            };
            assert_eq!(o.status.success(), ok, "{tool} {to}: {}", stderr(&o));
        }
        let shape: Vec<(String, bool, Vec<u8>)> = ["link", "dangling", "real", "made"]
            .iter()
            .map(|n| {
                let path = d.join(n);
                let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
                (n.to_string(), is_link, fs::read(&path).unwrap_or_default())
            })
            .collect();
        shapes.push(shape);
    }
    assert_eq!(shapes[1], shapes[0], "seekless as cp -a");
    assert_eq!(shapes[1][2].2, b"new");
}

#[test]
fn tar_f_through_a_link_replaces_the_target_and_keeps_the_link_as_gnu_tar_does() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    let p = t.path();
    put(p, b"d/a", b"alpha");
    for tool in ["tar", "seekless"] {
        let real = p.join(format!("{tool}-real.tar"));
        fs::write(&real, b"old").unwrap();
        let link = p.join(format!("{tool}-link.tar"));
        symlink(real.file_name().unwrap(), &link).unwrap();
        let o = if tool == "tar" {
            run(Command::new("tar")
                .arg("-cf")
                .arg(&link)
                .arg("-C")
                .arg(p)
                .arg("d"))
        } else {
            output_within(
                seekless()
                    .arg("tar")
                    .arg("-f")
                    .arg(&link)
                    .arg("-C")
                    .arg(p)
                    .arg("d"),
                RUN_LIMIT,
            )
        };
        assert!(o.status.success(), "{tool}: {}", stderr(&o));
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink(), "{tool}");
        let listed = run(Command::new("tar").arg("-tf").arg(&real));
        assert!(
            String::from_utf8_lossy(&listed.stdout).contains("d/a"),
            "{tool}: the target is the archive"
        );
    }
}

/// `seekless ARGS` run in `dir` by `sh` in a mount namespace of its own with a fresh
/// `/dev` holding only `/dev/stdout` (a link to `/proc/self/fd/1`), standard output
/// redirected to `dir/out`: whatever the run does to `/dev/stdout` stays there. Asserts
/// it succeeded and left `/dev/stdout` a link; returns `dir/out`.
fn to_dev_stdout(test: &str, dir: &Path, args: &str) -> PathBuf {
    if !require_root(test) || !require_tool(test, "unshare") {
        return PathBuf::new();
    }
    let out = dir.join("out");
    let o = output_within(
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount -t tmpfs none /dev && ln -s /proc/self/fd/1 /dev/stdout && \
                 \"$SEEKLESS\" {args} > out; \
                 rc=$?; test -L /dev/stdout || echo 'STDOUT REPLACED' >&2; exit $rc"
            ))
            .current_dir(dir)
            .env("SEEKLESS", env!("CARGO_BIN_EXE_seekless"))
            .env_remove("SEEKLESS_INJECT_FAULTS"),
        RUN_LIMIT,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("STDOUT REPLACED"), "{}", stderr(&o));
    out
}

#[test]
fn tar_f_dev_stdout_writes_into_standard_output_and_never_replaces_it() {
    let test = test_name!();
    if !require_tool(test, "tar") {
        return;
    }
    let t = scratch!();
    put(t.path(), b"d/a", b"alpha");
    let out = to_dev_stdout(test, t.path(), "tar -f /dev/stdout d");
    if out.as_os_str().is_empty() {
        return;
    }
    let listed = run(Command::new("tar").arg("-tf").arg(&out));
    let mut names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    names.sort();
    assert_eq!(names, ["d/", "d/a"]);
}

#[test]
fn copy_manifest_dev_stdout_writes_into_standard_output_and_never_replaces_it() {
    let test = test_name!();
    if !require_tool(test, "b3sum") {
        return;
    }
    let t = scratch!();
    put(t.path(), b"src/a", b"alpha");
    let out = to_dev_stdout(test, t.path(), "copy --manifest /dev/stdout src/ dest");
    if out.as_os_str().is_empty() {
        return;
    }
    let manifest = fs::read_to_string(&out).unwrap();
    assert!(manifest.contains("src/a"), "{manifest:?}");
    let check = run(Command::new("b3sum")
        .arg("-c")
        .arg(&out)
        .current_dir(t.path()));
    assert!(check.status.success(), "b3sum -c: {}", stderr(&check));
}

/// Where `cp -a SOURCE DEST` (or `rsync -a`) puts things, for a fresh DEST: the sorted
/// relative names under DEST.
fn placed(tool: &str, cwd: &Path, source: &str, dest: &Path) -> Vec<String> {
    let _ = fs::remove_dir_all(dest);
    fs::create_dir(dest).unwrap();
    let o = match tool {
        "cp" => Command::new("cp")
            .arg("-a")
            .arg(source)
            .arg(dest)
            .current_dir(cwd)
            .output()
            .unwrap(),
        "rsync" => Command::new("rsync")
            .arg("-a")
            .arg(source)
            .arg(dest)
            .current_dir(cwd)
            .output()
            .unwrap(),
        _ => output_within(copy_cmd().arg(source).arg(dest).current_dir(cwd), RUN_LIMIT),
    };
    assert!(o.status.success(), "{tool} {source}: {}", stderr(&o));
    let mut names: Vec<String> = walk(dest)
        .into_iter()
        .map(|p| p.strip_prefix(dest).unwrap().display().to_string())
        .collect();
    names.sort();
    names
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        out.push(p.clone());
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}

#[test]
fn every_source_form_is_placed_as_cp_a_and_rsync_a_place_it() {
    let test = test_name!();
    if !require_tool(test, "cp") || !require_tool(test, "rsync") {
        return;
    }
    let t = scratch!();
    let p = t.path().join("p");
    put(&p, b"src/sub/f", b"f");
    put(&p, b"src/g", b"g");
    symlink("src", p.join("lnk")).unwrap();
    let dest = t.path().join("d");
    // (form, where it is run, which tool it is placed as). A trailing slash is rsync's
    // "contents of" (seekless follows rsync there; cp copies the directory itself).
    let cases = [
        ("src", "p", "cp"),
        ("src/", "p", "rsync"),
        ("src/.", "p", "cp"),
        ("src/./", "p", "cp"),
        ("src/sub/..", "p", "cp"),
        (".", "p/src", "cp"),
        ("./", "p/src", "cp"),
        ("..", "p/src/sub", "cp"),
        ("lnk", "p", "cp"),
        ("lnk/", "p", "rsync"),
        ("lnk/.", "p", "cp"),
    ];
    for (form, cwd, like) in cases {
        let cwd = t.path().join(cwd);
        let want = placed(like, &cwd, form, &dest);
        let got = placed("seekless", &cwd, form, &dest);
        assert_eq!(got, want, "{form} (from {}) as {like}", cwd.display());
    }
}

/// The byte offset of `file`'s first data block on the block device under its btrfs, so
/// the test can corrupt it (btrfs then returns EIO: its checksum fails).
fn btrfs_data_offset(fs: &LoopFs, file: &Path) -> u64 {
    let o = run(Command::new("filefrag").arg("-v").arg("-b4096").arg(file));
    let text = String::from_utf8_lossy(&o.stdout);
    // "   0:        0..       0:      3328..      3328:      1:             last,eof"
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("0:"))
        .unwrap_or_else(|| panic!("no extent in {text}"));
    let physical: u64 = line
        .split(':')
        .nth(2)
        .unwrap()
        .split("..")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let logical = physical * 4096;
    let o = run(Command::new("btrfs-map-logical")
        .arg("-l")
        .arg(logical.to_string())
        .arg(&fs.device));
    let text = String::from_utf8_lossy(&o.stdout);
    // "mirror 1 logical 13631488 physical 22020096 device /dev/loop3"
    let physical = text
        .split_whitespace()
        .skip_while(|w| *w != "physical")
        .nth(1)
        .unwrap_or_else(|| panic!("no mapping in {text}"));
    physical.parse().unwrap()
}

#[test]
fn tar_says_a_member_read_with_an_error_is_padded_and_not_the_files_content() {
    let test = test_name!();
    if !require_root(test)
        || !require_tool(test, "btrfs-map-logical")
        || !require_tool(test, "filefrag")
        || !require_tool(test, "tar")
    {
        return;
    }
    let fs_ = LoopFs::new(test, "btrfs", 200);
    let dir = fs_.path("d");
    put(&dir, b"bad.bin", &[0x5a; 64 << 10]);
    put(&dir, b"good.bin", &[0x33; 10 << 10]);
    run(&mut Command::new("sync"));
    let offset = btrfs_data_offset(&fs_, &dir.join("bad.bin"));
    run(Command::new("umount").arg(&fs_.mnt));
    {
        let mut img = fs::OpenOptions::new().write(true).open(&fs_.image).unwrap();
        std::io::Seek::seek(&mut img, std::io::SeekFrom::Start(offset)).unwrap();
        img.write_all(&[0xff; 4096]).unwrap();
        img.sync_all().unwrap();
    }
    run(Command::new("mount").arg(&fs_.device).arg(&fs_.mnt));
    let out = scratch!();
    let archive = out.path().join("a.tar");
    let o = output_within(
        seekless()
            .arg("tar")
            .arg("-f")
            .arg(&archive)
            .arg("-C")
            .arg(&fs_.mnt)
            .arg("d"),
        RUN_LIMIT,
    );
    let err = stderr(&o);
    crate::common::assert_exit(&o, 1);
    assert!(
        err.contains("bad.bin")
            && err.contains("read error at byte 0")
            && err.contains("padded with 65536 zero bytes and is not this file's content"),
        "{err}"
    );
    let listed = run(Command::new("tar").arg("-tvf").arg(&archive));
    assert!(String::from_utf8_lossy(&listed.stdout).contains("d/good.bin"));
}
