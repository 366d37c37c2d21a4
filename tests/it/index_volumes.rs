//! Volumes known by identity (docs/index.md, "Volumes"): a filesystem read under another
//! device number (another loop device, as a disk on another port or another machine)
//! keeps its rows unread; one not mounted is offline, its rows kept and listed; a folder
//! emptied on a filesystem that came back under another number loses its rows. Real
//! ext4, xfs and btrfs on loop devices; `blkid` and `btrfs` say what the identity must be.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::catalog::assert_exit;
use crate::common::catalog::*;
use crate::common::*;

/// What `blkid` says the filesystem's UUID is, as seekless writes it (no dashes), with
/// the subvolume btrfs's top level has.
fn expected_key(fs: &LoopFs, kind: &str) -> String {
    let o = run(Command::new("blkid")
        .args(["-s", "UUID", "-o", "value"])
        .arg(&fs.device));
    let uuid = String::from_utf8_lossy(&o.stdout).trim().replace('-', "");
    assert_eq!(uuid.len(), 32, "blkid: {o:?}");
    match kind {
        "btrfs" => format!("uuid:{uuid}/subvol:5"),
        _ => format!("uuid:{uuid}"),
    }
}

fn volumes(db: &Path) -> Vec<Value> {
    query(
        db,
        "SELECT id, key, source, dev, offline_since FROM volumes ORDER BY id",
    )
}

fn dev_of(p: &Path) -> i64 {
    std::fs::metadata(p).unwrap().dev() as i64
}

#[test]
fn a_filesystem_read_under_another_device_number_keeps_its_rows_unread() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") || !require_tool(test, "blkid") {
        return;
    }
    for kind in ["ext4", "xfs", "btrfs"] {
        let mut fs = LoopFs::new(test, kind, 300);
        let t = scratch!();
        let db = t.path().join("c.db");
        let files: Vec<PathBuf> = ["a/1.gif", "a/2.gif", "b/3.gif", "4.gif"]
            .iter()
            .map(|r| fs.path(r))
            .collect();
        gifs(&files);
        assert_exit(&index(&db, &[fs.mnt.as_os_str()]), 0);
        let v = volumes(&db);
        assert_eq!(v.len(), 1, "{kind}: {v:?}");
        assert_eq!(v[0]["key"], expected_key(&fs, kind).as_str(), "{kind}");
        assert_eq!(v[0]["source"], "uuid", "{kind}");
        assert_eq!(
            one(
                &db,
                "SELECT count(*) AS n FROM images WHERE volume = 1",
                "n"
            ),
            4,
            "{kind}"
        );

        // Read under another device number, one file moved meanwhile: nothing is read,
        // the move is a move (the inode on the same volume), every row keeps its id.
        let _held = fs.mount_from_another_device(t.path());
        std::fs::create_dir(fs.path("c")).unwrap();
        std::fs::rename(fs.path("a/1.gif"), fs.path("c/1.gif")).unwrap();
        let ids_before = one(&db, "SELECT group_concat(id) AS ids FROM images", "ids");
        let again = index(&db, &[os("--summary"), fs.mnt.as_os_str()]);
        assert_exit(&again, 0);
        let counts = closing_counts(&again);
        assert_eq!(
            (
                counts["unchanged"],
                counts["moved"],
                counts["added"],
                counts["removed"]
            ),
            (3, 1, 0, 0),
            "{kind}: {}",
            stderr(&again)
        );
        assert_eq!(files_read(&again).unwrap_or(0), 0, "{kind}: nothing read");
        assert_eq!(
            one(&db, "SELECT group_concat(id) AS ids FROM images", "ids"),
            ids_before,
            "{kind}"
        );
        let v = volumes(&db);
        assert_eq!(v.len(), 1, "{kind}: one volume still: {v:?}");
        let dev = dev_of(&fs.mnt);
        assert_eq!(v[0]["dev"], dev, "{kind}: its device number now");
        let stale = one(
            &db,
            &format!("SELECT count(*) AS n FROM images WHERE dev != {dev} OR volume != 1"),
            "n",
        );
        assert_eq!(stale, 0, "{kind}: every row on the new number");
    }
}

#[test]
fn a_drive_not_mounted_is_offline_its_rows_kept_until_it_is_back() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") {
        return;
    }
    let fs = LoopFs::new(test, "ext4", 32);
    let t = scratch!();
    let db = t.path().join("c.db");
    let root = t.path().join("root");
    let sub = root.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    gifs(&[root.join("top.gif")]);
    gifs(&[fs.path("d/a.gif"), fs.path("d/b.gif")]);
    let mounted = Held::bind(&fs.path("d"), &sub);
    assert_exit(&index(&db, &[root.as_os_str()]), 0);
    assert_eq!(volumes(&db).len(), 2, "{:?}", volumes(&db));
    assert!(query(&db, "SELECT * FROM offline").is_empty());

    // Unplugged: its rows stay, listed as offline with their volume, and the run says so.
    mounted.unmount();
    let away = index(&db, &[root.as_os_str()]);
    assert_exit(&away, 1);
    assert!(
        stderr(&away).contains("is the drive mounted?"),
        "{}",
        stderr(&away)
    );
    let offline = query(
        &db,
        "SELECT path, volume, offline_since FROM offline ORDER BY path",
    );
    let paths: Vec<&str> = offline
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    let shown = |r: &str| sub.join(r).display().to_string();
    assert_eq!(paths, [shown("a.gif"), shown("b.gif")]);
    assert!(
        offline[0]["volume"].as_str().unwrap().starts_with("uuid:"),
        "{offline:?}"
    );
    let since = offline[0]["offline_since"].clone();
    assert!(since.is_string(), "{offline:?}");
    // A second run away keeps the time it was first found absent.
    assert_exit(&index(&db, &[root.as_os_str()]), 1);
    assert_eq!(
        one(&db, "SELECT min(offline_since) AS s FROM offline", "s"),
        since
    );

    // Back: nothing read, nothing offline.
    let _mounted = Held::bind(&fs.path("d"), &sub);
    let back = index(&db, &[os("--summary"), root.as_os_str()]);
    assert_exit(&back, 0);
    assert_eq!(closing_counts(&back)["unchanged"], 3, "{}", stderr(&back));
    assert!(query(&db, "SELECT * FROM offline").is_empty());
    assert_eq!(
        one(
            &db,
            "SELECT count(*) AS n FROM volumes WHERE offline_since IS NULL",
            "n"
        ),
        2
    );
}

#[test]
fn a_folder_emptied_on_a_filesystem_back_under_another_number_loses_its_rows() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") {
        return;
    }
    // The case the device number could not tell (docs/faults.md): the mount point is an
    // empty directory under another device number than the rows', but it is the same
    // filesystem (its files deleted), so the rows go; no error, nothing offline.
    let mut fs = LoopFs::new(test, "btrfs", 200);
    let t = scratch!();
    let db = t.path().join("c.db");
    let root = t.path().join("root");
    let sub = root.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    gifs(&[root.join("top.gif")]);
    gifs(&[fs.path("d/a.gif"), fs.path("d/b.gif")]);
    let first = Held::bind(&fs.path("d"), &sub);
    assert_exit(&index(&db, &[root.as_os_str()]), 0);
    let dev_before = dev_of(&sub);
    first.unmount();

    let _held = fs.mount_from_another_device(t.path());
    for f in ["d/a.gif", "d/b.gif"] {
        std::fs::remove_file(fs.path(f)).unwrap();
    }
    let _mounted = Held::bind(&fs.path("d"), &sub);
    assert_ne!(dev_of(&sub), dev_before, "another device number");
    assert!(std::fs::read_dir(&sub).unwrap().next().is_none(), "empty");
    let o = index(&db, &[os("--summary"), root.as_os_str()]);
    assert_exit(&o, 0);
    assert_eq!(closing_counts(&o)["removed"], 2, "{}", stderr(&o));
    assert!(query(&db, "SELECT * FROM offline").is_empty());
}
