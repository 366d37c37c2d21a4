//! Tests of the Windows backend on a real filesystem. They run on Windows and under Wine
//! (ci/cross-check.sh); where the two differ, the test says which it checks.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::*;
use crate::error::Error;
use crate::os::{drop_cache, file_id, is_root, open_to_locate, open_to_read, prefetch};
use crate::plan::{Order, Plan, PlanOptions};
use crate::report::Reporter;
use seekless_sys::FileId;
use seekless_sys::ioctl::is_wine;

#[derive(Default)]
struct Errors(Mutex<Vec<String>>);

impl Reporter for Errors {
    fn error(&self, err: &Error) {
        self.0.lock().unwrap().push(err.to_string());
    }
}

fn tree() -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    let mut files = Vec::new();
    for (name, size) in [
        ("b.bin", 100_000),
        ("a.txt", 10),
        ("sub/c.bin", 300_000),
        ("sub/d", 4096),
        ("empty", 0),
    ] {
        let p = dir.path().join(name);
        fs::write(&p, vec![7u8; size]).unwrap();
        files.push(p);
    }
    (dir, files)
}

#[test]
fn under_wine_the_stub_extent_demotes_the_ladder_to_inode_order() {
    if !is_wine() {
        eprintln!("not under Wine: see files_are_located_by_retrieval_pointers_on_windows");
        return;
    }
    let (dir, files) = tree();
    let errors = Errors::default();
    let plan = Plan::build(
        &[dir.path().to_path_buf()],
        &PlanOptions::default(),
        &errors,
    );
    assert!(errors.0.lock().unwrap().is_empty(), "{:?}", errors.0);
    assert_eq!(plan.summary().files, files.len() as u64);
    let mut listed: Vec<PathBuf> = plan
        .order(Order::Physical)
        .iter()
        .map(|&i| plan.files()[i as usize].entry.path.to_path_buf())
        .collect();
    listed.sort();
    let mut want = files.clone();
    want.sort();
    assert_eq!(listed, want);
    for f in plan.files() {
        assert_eq!(
            f.placement.strategy,
            Strategy::Inode,
            "{}",
            f.entry.path.display()
        );
        assert_eq!(f.placement.physical(), None);
    }
    let fs = &plan.filesystems()[0];
    assert_eq!(
        fs.ladder,
        vec![Strategy::RetrievalPointers, Strategy::Inode]
    );
    assert_eq!(fs.strategy, Strategy::Inode);
    assert_eq!(fs.demotions.len(), 1, "{:?}", fs.demotions);
    let why = fs.demotions[0].to_string();
    assert!(
        why.starts_with("retrieval-pointers unsupported") && why.contains("Wine"),
        "{:?}",
        fs.demotions
    );
}

#[test]
fn under_wine_retrieval_pointers_say_unsupported() {
    if !is_wine() {
        return;
    }
    let (_dir, files) = tree();
    let file = open_to_locate(&files[0], false).unwrap();
    let dev = file_id(&files[0], Some(&file), &file.metadata().unwrap())
        .unwrap()
        .dev;
    let volume = probe(&file, dev);
    match map_extents(&file, Strategy::RetrievalPointers, 100_000, false, &volume) {
        Err(LocateError::Unsupported(e)) => assert!(e.to_string().contains("VCN 1 to 0"), "{e}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn files_are_located_by_retrieval_pointers_on_windows() {
    if is_wine() {
        return;
    }
    let (dir, _files) = tree();
    let plan = Plan::build(
        &[dir.path().to_path_buf()],
        &PlanOptions::default(),
        &Errors::default(),
    );
    for f in plan.files() {
        assert_eq!(f.placement.strategy, Strategy::RetrievalPointers);
        if f.entry.size >= 100_000 {
            assert!(
                f.placement.physical().is_some(),
                "{}",
                f.entry.path.display()
            );
        }
    }
}

#[test]
fn a_missing_input_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no such file.bin");
    let errors = Errors::default();
    let plan = Plan::build(&[missing.clone()], &PlanOptions::default(), &errors);
    assert_eq!(plan.summary().files, 0);
    assert_eq!(plan.summary().walk.errors, 1);
    let errors = errors.0.into_inner().unwrap();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].contains("no such file.bin"), "{errors:?}");
    assert!(!errors[0].contains("os error"), "{errors:?}");
}

#[test]
fn opening_a_missing_file_fails_with_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_to_locate(&dir.path().join("gone"), false).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    let e = open_to_read(&dir.path().join("gone")).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    let meta = fs::metadata(dir.path()).unwrap();
    assert!(file_id(&dir.path().join("gone"), None, &meta).is_err());
}

fn id_of(path: &Path) -> FileId {
    file_id(path, None, &fs::metadata(path).unwrap()).unwrap()
}

#[test]
fn identity_is_volume_serial_and_file_index() {
    let (dir, files) = tree();
    let a = id_of(&files[0]);
    let b = id_of(&files[1]);
    let d = id_of(dir.path());
    let sub = id_of(&dir.path().join("sub"));
    assert_eq!(a.dev, b.dev);
    assert_eq!(a.dev, d.dev);
    assert_ne!(a.ino, b.ino);
    assert_ne!(d.ino, sub.ino);
    assert_ne!(a.ino, d.ino);
    // The same identity whether asked through the open file or by path.
    let f = open_to_locate(&files[0], false).unwrap();
    assert_eq!(
        file_id(&files[0], Some(&f), &f.metadata().unwrap()).unwrap(),
        a
    );
    assert_eq!(id_of(&files[0]), a);
}

#[test]
fn hard_links_share_an_identity_and_are_planned_once() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    fs::write(&a, b"same bytes").unwrap();
    fs::hard_link(&a, &b).unwrap();
    assert_eq!(id_of(&a), id_of(&b));
    let plan = Plan::build(
        &[dir.path().to_path_buf()],
        &PlanOptions::default(),
        &Errors::default(),
    );
    assert_eq!(plan.summary().files, 1);
    assert_eq!(plan.summary().duplicates, 1);
}

#[test]
fn the_volume_is_probed_and_has_a_disk() {
    let (_dir, files) = tree();
    let file = open_to_locate(&files[0], false).unwrap();
    let id = file_id(&files[0], Some(&file), &file.metadata().unwrap()).unwrap();
    let volume = probe(&file, id.dev);
    assert_eq!(u64::from(volume.serial), id.dev);
    let (disk, _base) = disk_of(&volume);
    assert!(!disk.name.is_empty());
    // A volume nothing is known about is an unknown disk, not a failure.
    let (unknown, base) = disk_of(&Volume::unknown(0xDEAD_BEEF));
    assert_eq!(unknown.rotational, None);
    assert_eq!(base, 0);
}

#[test]
fn other_strategies_are_unsupported() {
    let (_dir, files) = tree();
    let file = open_to_locate(&files[0], false).unwrap();
    let volume = Volume::unknown(0);
    for s in [Strategy::Fiemap, Strategy::Fibmap, Strategy::Log2Phys] {
        assert!(matches!(
            map_extents(&file, s, 100_000, false, &volume),
            Err(LocateError::Unsupported(_))
        ));
    }
}

#[test]
fn reading_with_hints_returns_the_bytes() {
    let (_dir, files) = tree();
    let mut f = open_to_read(&files[2]).unwrap();
    prefetch(&f, 0, 300_000).unwrap();
    let mut buf = Vec::new();
    io::Read::read_to_end(&mut f, &mut buf).unwrap();
    drop_cache(&f, 0, 300_000).unwrap();
    assert_eq!(buf.len(), 300_000);
    assert!(buf.iter().all(|&b| b == 7));
}

#[test]
fn elevation_can_be_asked() {
    // Either answer is fine, but it must be the token's: `is_root` answers false when it
    // cannot ask, so it is checked against another question to the same token, whether
    // the Administrators group is enabled in it (which UAC leaves disabled in the
    // filtered token of an administrator who did not elevate).
    use windows_sys::Win32::Security::{
        CheckTokenMembership, CreateWellKnownSid, SECURITY_MAX_SID_SIZE,
        WinBuiltinAdministratorsSid,
    };
    let mut sid = [0u8; SECURITY_MAX_SID_SIZE as usize];
    let mut size = SECURITY_MAX_SID_SIZE;
    // SAFETY: `sid` is a writable buffer of `size` bytes; no domain SID is needed for a
    // builtin group.
    let made = unsafe {
        CreateWellKnownSid(
            WinBuiltinAdministratorsSid,
            std::ptr::null_mut(),
            sid.as_mut_ptr().cast(),
            &mut size,
        )
    };
    assert_ne!(
        made,
        0,
        "CreateWellKnownSid: {}",
        io::Error::last_os_error()
    );
    let mut member = 0;
    // SAFETY: a null token means the calling thread's (or process's) own; `sid` holds
    // the SID CreateWellKnownSid wrote; `member` is a valid BOOL.
    let asked =
        unsafe { CheckTokenMembership(std::ptr::null_mut(), sid.as_mut_ptr().cast(), &mut member) };
    assert_ne!(
        asked,
        0,
        "CheckTokenMembership: {}",
        io::Error::last_os_error()
    );
    assert_eq!(
        is_root(),
        member != 0,
        "elevated, or the Administrators group enabled in the token"
    );
}
