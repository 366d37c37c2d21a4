//! `seekless hash` against `sha256sum`, on real filesystems.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use crate::common::*;

fn hash(args: &[&std::ffi::OsStr]) -> std::process::Output {
    seekless().arg("hash").args(args).output().unwrap()
}

fn hashes_match_sha256sum_on(fs: &str) {
    let test = format!("hashes_match_sha256sum_on_{fs}");
    if !require_root(&test) || !require_tool(&test, &format!("mkfs.{fs}")) {
        return;
    }
    let lfs = LoopFs::new(&test, fs, 1024);
    let names = write_corpus(&lfs.mnt, 40, 21);
    let odd = lfs
        .mnt
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9 \\ new\nline"));
    std::fs::write(&odd, b"odd name").unwrap();
    let big_sparse = lfs.mnt.join("sparse-1g");
    let f = std::fs::File::create(&big_sparse).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    lfs.remount();

    let o = hash(&[lfs.mnt.as_os_str()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let manifest = o.stdout;
    assert_eq!(
        manifest
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        names.len() + 2
    );

    // Every line agrees with sha256sum, including the escaped odd name.
    for rel in names
        .iter()
        .map(|n| lfs.mnt.join(n))
        .chain([odd.clone(), big_sparse.clone()])
    {
        let want = sha256sum(&rel);
        let line = seekless::jobs::manifest::format_line(&want, rel.as_os_str().as_bytes());
        assert!(
            manifest
                .split(|b| *b == b'\n')
                .any(|l| l == line.as_slice()),
            "no line for {}",
            rel.display()
        );
    }
    // sha256sum -c accepts the manifest as a whole.
    let mfile = scratch_file(&test);
    std::fs::write(mfile.path(), &manifest).unwrap();
    let c = Command::new("sha256sum")
        .arg("-c")
        .arg("--quiet")
        .arg(mfile.path())
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stdout));

    // --check agrees, then catches a modified file.
    let ok = hash(&[std::ffi::OsStr::new("--check"), mfile.path().as_os_str()]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let victim = lfs.mnt.join(&names[3]);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .unwrap();
    f.write_all(b"tampered").unwrap();
    drop(f);
    let bad = hash(&[std::ffi::OsStr::new("--check"), mfile.path().as_os_str()]);
    assert_eq!(bad.status.code(), Some(1));
    let out = String::from_utf8_lossy(&bad.stdout);
    assert!(
        out.contains(&format!("{}: FAILED", victim.display())),
        "{out}"
    );
    assert_eq!(out.matches(": FAILED").count(), 1, "{out}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("1 computed checksum did NOT match"));
}

#[test]
fn hashes_match_sha256sum_on_ext4() {
    hashes_match_sha256sum_on("ext4");
}

#[test]
fn hashes_match_sha256sum_on_xfs() {
    hashes_match_sha256sum_on("xfs");
}

#[test]
fn hashes_match_sha256sum_on_btrfs() {
    hashes_match_sha256sum_on("btrfs");
}

#[test]
fn every_algorithm_matches_its_coreutils_tool() {
    let t = scratch!();
    let mut rng = Rng::new(5);
    for i in 0..20 {
        std::fs::write(t.path().join(format!("f{i}")), rng.bytes(i * 7919)).unwrap();
    }
    let mut tools = vec![
        ("sha256", "sha256sum"),
        ("sha1", "sha1sum"),
        ("md5", "md5sum"),
    ];
    if Command::new("b3sum").arg("--version").output().is_ok() {
        tools.push(("blake3", "b3sum"));
    }
    for (algo, tool) in tools {
        let o = hash(&[
            std::ffi::OsStr::new("--algo"),
            std::ffi::OsStr::new(algo),
            t.path().as_os_str(),
        ]);
        assert!(o.status.success());
        let m = scratch_file(test_name!());
        std::fs::write(m.path(), &o.stdout).unwrap();
        let c = Command::new(tool).arg("-c").arg(m.path()).output().unwrap();
        assert!(c.status.success(), "{tool} -c rejected our {algo} manifest");
        assert_eq!(
            String::from_utf8_lossy(&c.stdout).matches(": OK").count(),
            20
        );
    }
}

#[test]
fn a_file_changed_after_planning_is_reported_and_not_hashed() {
    use std::io::Read;
    let t = scratch!();
    let grow = t.path().join("grows");
    let keep = t.path().join("keeps");
    std::fs::write(&grow, vec![1u8; 100_000]).unwrap();
    std::fs::write(&keep, vec![2u8; 100_000]).unwrap();
    let plan = Arc::new(seekless::Plan::build(
        &[t.path().to_path_buf()],
        &seekless::PlanOptions::default(),
        &seekless::Quiet,
    ));
    // Appended to between planning and reading.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&grow)
        .unwrap()
        .write_all(b"more")
        .unwrap();
    let mut changed = Vec::new();
    let mut fine = Vec::new();
    for item in seekless::read::Reader::new(plan, seekless::read::ReadOptions::default()) {
        let mut f = item.unwrap();
        let path = f.planned().entry.path.to_path_buf();
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).unwrap();
        match f.finish() {
            Ok(_) => fine.push(path),
            Err(e) => {
                assert!(e.to_string().contains("changed while being read"), "{e}");
                changed.push(path);
            }
        }
    }
    assert_eq!(changed, vec![grow]);
    assert_eq!(fine, vec![keep]);
}

#[test]
fn unreadable_files_are_reported_and_the_rest_hashed() {
    if !require_root(test_name!()) {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let t = scratch!();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(t.path().join("ok"), b"fine").unwrap();
    let secret = t.path().join("secret");
    std::fs::write(&secret, b"no").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_seekless"))
        .arg("hash")
        .arg(t.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(&format!("{}: Permission denied", secret.display()))
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
}

#[test]
fn hashing_a_2_gib_file_keeps_memory_bounded() {
    // tmpfs holds the file in RAM (2 GiB of 24); the reader's memory must not grow with it.
    let t = scratch!("/dev/shm");
    let big = t.path().join("big");
    let mut f = std::fs::File::create(&big).unwrap();
    let chunk = Rng::new(9).bytes(1 << 20);
    for _ in 0..2048 {
        f.write_all(&chunk).unwrap();
    }
    drop(f);
    let (out, peak_kb) =
        output_and_peak_memory(seekless().args(["hash", "--algo", "blake3"]).arg(&big));
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    assert!(
        peak_kb < 200 * 1024,
        "peak RSS {peak_kb} kB for a 2 GiB file"
    );
}

#[test]
fn summary_reports_the_plan_and_the_read_phase_on_stderr_only() {
    let t = scratch!();
    let mut rng = Rng::new(11);
    for i in 0..7 {
        std::fs::write(t.path().join(format!("f{i}")), rng.bytes(1000 + i * 4096)).unwrap();
    }
    let unreadable = t.path().join("gone");
    std::os::unix::fs::symlink(t.path().join("missing"), &unreadable).unwrap();
    let o = hash(&[
        std::ffi::OsStr::new("--summary"),
        t.path().as_os_str(),
        unreadable.as_os_str(),
    ]);
    // The missing input is an error (exit 1); the seven files are hashed.
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 7);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("seekless: 7 files,"), "{err}");
    let walk = err
        .lines()
        .find(|l| l.starts_with("seekless: walk+locate "))
        .unwrap_or_else(|| panic!("no walk+locate line in {err}"));
    walk["seekless: walk+locate ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse::<f64>()
        .unwrap_or_else(|e| panic!("walk+locate seconds in {walk:?}: {e}"));
    let bytes: usize = (0..7).map(|i| 1000 + i * 4096).sum();
    let read = err
        .lines()
        .find(|l| l.starts_with("seekless: read "))
        .unwrap_or_else(|| panic!("no read line in {err}"));
    assert!(read.starts_with("seekless: read 7 files, "), "{read}");
    assert!(
        read.contains(&indicatif_like_bytes(bytes)),
        "{read} should name {bytes} bytes"
    );
}

/// The byte count as the summary prints it (binary units, two decimals).
fn indicatif_like_bytes(n: usize) -> String {
    format!("{:.2} KiB", n as f64 / 1024.0)
}

#[test]
fn pseudo_files_are_hashed_to_their_end_without_a_false_change() {
    // Sizes on proc and sysfs say nothing of content: 0 for /proc/version, a page for a
    // sysfs attribute. What sha256sum reads is what they hold.
    let stable = [
        "/proc/version",
        "/sys/kernel/mm/transparent_hugepage/enabled",
    ];
    let stable: Vec<&str> = stable
        .into_iter()
        .filter(|p| std::fs::read(p).is_ok_and(|c| !c.is_empty()))
        .collect();
    assert!(!stable.is_empty(), "no proc or sysfs file to test with");
    let mut args: Vec<&std::ffi::OsStr> = stable.iter().map(|p| os(p)).collect();
    args.push(os("/proc/self/status"));
    let o = hash(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("changed"), "{stderr}");
    let text = String::from_utf8_lossy(&o.stdout);
    for p in stable {
        let want = format!("{}  {p}", sha256sum(Path::new(p)));
        assert!(text.lines().any(|l| l == want), "{want} not in\n{text}");
    }
    assert!(text.lines().any(|l| l.ends_with("  /proc/self/status")));
}

#[test]
fn a_panic_fails_the_command_with_its_message_and_a_nonzero_exit() {
    // Debug builds panic in the sweep on a file of this name when asked to (see
    // `read::sweep::PANIC_ON_OPEN`); the tests run the debug build.
    let t = scratch!();
    for name in ["a", "b", "seekless-test-sweep-panics-here", "c"] {
        std::fs::write(t.path().join(name), name).unwrap();
    }
    let o = seekless()
        .arg("hash")
        .arg(t.path())
        .env("SEEKLESS_INJECT_FAULTS", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(101), "{stderr}");
    assert!(stderr.contains("injected sweep fault"), "{stderr}");
    // Without the request, the same tree hashes fine: the hook is opt-in.
    let o = seekless().arg("hash").arg(t.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        o.stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        4
    );
}

#[test]
fn hash_into_a_pipe_closed_by_head_stops_reading_at_once_and_exits_0() {
    let test = test_name!();
    if !require_root(test) {
        return;
    }
    let lfs = LoopFs::new(test, "ext4", 2300);
    let chunk: Vec<u8> = (0..4u32 << 20).map(|i| (i * 7 + i / 4096) as u8).collect();
    for i in 0..512 {
        std::fs::write(lfs.path(format!("f{i:03}")), &chunk).unwrap();
    }
    lfs.remount();
    let before = lfs.read_bytes();
    let o = run(Command::new("bash")
        .arg("-c")
        .arg("\"$0\" hash --algo blake3 \"$1\" | head -1; echo \"status ${PIPESTATUS[0]}\" >&2")
        .arg(env!("CARGO_BIN_EXE_seekless"))
        .arg(&lfs.mnt));
    let read = lfs.read_bytes() - before;
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), 1);
    assert_eq!(
        err.trim(),
        "status 0",
        "no message, exit 0, as sha256sum and rg"
    );
    let total = 512u64 << 22;
    assert!(
        read < total / 10,
        "read {read} bytes of {total} after head went away"
    );
}

#[test]
fn a_name_that_is_not_utf8_is_named_as_sha256sum_names_it_in_messages() {
    let t = scratch!();
    let missing = t.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9-gone"));
    let fifo = t.path().join(std::ffi::OsStr::from_bytes(b"pipe-\xff"));
    run(Command::new("mkfifo").arg(&fifo));
    let o = hash(&[missing.as_os_str(), os("-v"), t.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    // Quoted for the shell, the byte escaped, as coreutils quotes names in messages.
    let dir = t.path().to_str().unwrap();
    let want = format!("seekless: '{dir}/caf'$'\\351''-gone': No such file or directory\n");
    let want = want.as_bytes();
    assert!(
        o.stderr.windows(want.len()).any(|w| w == want),
        "{:?}",
        String::from_utf8_lossy(&o.stderr)
    );
    let skipped = format!("seekless: '{dir}/pipe-'$'\\377': skipped: ");
    let skipped = skipped.as_bytes();
    assert!(
        o.stderr.windows(skipped.len()).any(|w| w == skipped),
        "{:?}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn terminal_controls_in_a_name_are_escaped_in_messages() {
    // A name that would clear the screen and retitle the terminal if printed raw.
    let t = scratch!();
    let missing = t.path().join(std::ffi::OsStr::from_bytes(
        b"x\x1b[2J\x1b]0;pwned\x07\n\xff.jpg",
    ));
    let o = hash(&[missing.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !o.stderr.iter().any(|&b| b == 0x1b || b == 0x07),
        "{:?}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Quoted as coreutils quotes it, each control character a `$'…'` escape.
    let want = format!(
        "'{}/x'$'\\033''[2J'$'\\033'']0;pwned'$'\\a\\n\\377''.jpg': No such file or directory\n",
        t.path().to_str().unwrap()
    );
    let want = want.as_bytes();
    assert!(
        o.stderr.windows(want.len()).any(|w| w == want),
        "{:?}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The usage errors' and the final error's lines too: `dupes` on a catalog so named.
    let db = t.path().join("a\x1b[31m.db");
    let o = seekless()
        .args(["dupes", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        !o.stderr.contains(&0x1b),
        "{:?}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("a\\033[31m.db"));
}
