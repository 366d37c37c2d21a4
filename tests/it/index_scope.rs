//! `seekless index`, continued (see `index`): a second writer, which files a run takes,
//! names that are not UTF-8, files that cannot be read, and what a run could not see (a
//! directory it could not list, a disk not mounted) kept rather than forgotten.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::catalog::assert_exit;
use crate::common::catalog::*;
use crate::common::*;

// ---------------------------------------------------------------------------------------
// 5. A second writer.

#[test]
fn a_second_index_on_a_database_being_written_fails_at_once_naming_it() {
    let test = test_name!();
    let Some(tools) = tools(test) else { return };
    const N: u64 = 1500;
    let t = scratch!();
    let photos = t.path().join("photos");
    jpeg_corpus(&tools, &photos, N as usize, 5);
    let db = t.path().join("busy.db");

    let mut first = start_index(&db, &photos);
    // Tried just after each new commit the first run makes (between its transactions,
    // where a lock held only by a transaction would be free), up to three times.
    let mut attempts = 0;
    let mut last_seen = 0;
    while attempts < 3 {
        let caught = freeze_when(&mut first.0, || {
            committed_rows(&db).is_some_and(|n| n > last_seen && n < N)
        });
        if !caught {
            break;
        }
        last_seen = committed_rows(&db).unwrap();
        let started = Instant::now();
        let second = index(&db, &[photos.as_os_str()]);
        let took = started.elapsed();
        let err = stderr(&second);
        assert_eq!(
            second.status.code(),
            Some(2),
            "a second writer at {last_seen} of {N} rows: {err}"
        );
        assert!(
            err.contains(&db.display().to_string()),
            "the message names the database: {err}"
        );
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(!err.contains("--help"), "not a command-line mistake: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            took < Duration::from_secs(3),
            "the second run waited {took:?} instead of failing at once"
        );
        attempts += 1;
        thaw(&first.0);
    }
    assert!(
        attempts > 0,
        "the first run never showed a committed row before it ended"
    );
    eprintln!("{test}: {attempts} attempts refused");

    let (code, err) = finish(first);
    assert_eq!(code, Some(0), "the first run finishes fine: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        one(&db, "SELECT count(*) AS n FROM scans", "n"),
        json!(1),
        "the refused runs left no scan behind"
    );
    let clean = t.path().join("clean.db");
    assert_exit(&index(&clean, &[photos.as_os_str()]), 0);
    assert_same_catalog(&catalog(&db), &catalog(&clean), "after refused writers");
}

// ---------------------------------------------------------------------------------------
// 6. Which files.

#[test]
fn the_database_in_the_scanned_tree_is_never_catalogued_and_non_images_only_with_all_files() {
    let test = test_name!();
    let Some(tools) = tools(test) else { return };
    let t = scratch!();
    let tree = t.path().join("tree");
    draw(
        &tools,
        &[
            Picture {
                path: tree.join("a.jpg"),
                kind: "JPEG",
                width: 20,
                height: 20,
                seed: 1,
            },
            Picture {
                path: tree.join("sub/B.PNG"),
                kind: "PNG",
                width: 21,
                height: 20,
                seed: 2,
            },
            Picture {
                path: tree.join("sub/c.Tiff"),
                kind: "TIFF",
                width: 22,
                height: 20,
                seed: 3,
            },
        ],
    );
    std::fs::write(tree.join("notes.txt"), b"not a picture\n").unwrap();
    std::fs::write(tree.join("README"), b"no extension\n").unwrap();
    std::fs::write(tree.join("sub/photo.jpg.bak"), b"a backup\n").unwrap();
    let images = ["a.jpg", "sub/B.PNG", "sub/c.Tiff"].map(|r| tree.join(r));
    let others = ["notes.txt", "README", "sub/photo.jpg.bak"].map(|r| tree.join(r));
    let paths = |db: &Path| -> Vec<PathBuf> {
        catalog(db)
            .iter()
            .map(|r| PathBuf::from(r["path"].as_str().unwrap()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let sorted = |v: &[PathBuf]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };

    // Images only, by extension (case-insensitive).
    let outside = t.path().join("outside.db");
    assert_exit(&index(&outside, &[tree.as_os_str()]), 0);
    assert_eq!(paths(&outside), sorted(&images), "images only by default");
    // An explicit --ext replaces the list.
    let only_png = t.path().join("only-png.db");
    assert_exit(
        &index(&only_png, &[os("--ext"), os("png"), tree.as_os_str()]),
        0,
    );
    assert_eq!(paths(&only_png), vec![tree.join("sub/B.PNG")], "--ext png");
    // A narrower run over a catalog made by a wider one removes no row of a file that is
    // still there: the walk passed those files over, it did not find them gone.
    for narrower in [[os("--ext"), os("png")], [os("--glob"), os("*.PNG")]] {
        let o = index(
            &outside,
            &[&narrower[..], &[os("--summary"), tree.as_os_str()]].concat(),
        );
        assert_exit(&o, 0);
        assert_eq!(closing_counts(&o)["removed"], 0, "{narrower:?}");
        assert_eq!(paths(&outside), sorted(&images), "{narrower:?}");
    }
    // A file that is really gone still goes.
    std::fs::rename(tree.join("a.jpg"), t.path().join("a.jpg")).unwrap();
    let o = index(&outside, &[os("--summary"), tree.as_os_str()]);
    std::fs::rename(t.path().join("a.jpg"), tree.join("a.jpg")).unwrap();
    assert_exit(&o, 0);
    assert_eq!(closing_counts(&o)["removed"], 1);

    // The database inside the tree, with --all-files: everything but the database.
    let db = tree.join("catalog.db");
    let o = index(&db, &[os("--all-files"), tree.as_os_str()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let all: Vec<PathBuf> = images.iter().chain(&others).cloned().collect();
    assert_eq!(
        paths(&db),
        sorted(&all),
        "--all-files: every file but the db"
    );

    // Again, with the database's -wal and -shm held open by a reader, and the database
    // named through a symbolic link to the tree: still not catalogued.
    let reader = SqliteReader::open(&db);
    let side_files = ["catalog.db-wal", "catalog.db-shm"].map(|n| tree.join(n));
    for f in &side_files {
        assert!(f.exists(), "{} is there during the run", f.display());
    }
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&tree, &link).unwrap();
    let o = index(
        &link.join("catalog.db"),
        &[os("--all-files"), tree.as_os_str()],
    );
    drop(reader);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert_eq!(
        paths(&db),
        sorted(&all),
        "neither the database nor its -wal and -shm"
    );
    let seen = one(
        &db,
        "SELECT seen FROM scans ORDER BY id DESC LIMIT 1",
        "seen",
    );
    assert_eq!(seen, json!(all.len()), "the database is not a candidate");
}

// ---------------------------------------------------------------------------------------
// 7. Names that are not UTF-8.

#[test]
fn a_name_that_is_not_utf8_is_kept_byte_for_byte_in_path_bytes() {
    let test = test_name!();
    let Some(tools) = tools(test) else { return };
    let t = scratch!();
    let photos = t.path().join("photos");
    draw(
        &tools,
        &[
            Picture {
                path: photos.join("tmp1.jpg"),
                kind: "JPEG+exif",
                width: 25,
                height: 17,
                seed: 7,
            },
            Picture {
                path: photos.join("tmp2.png"),
                kind: "PNG",
                width: 26,
                height: 18,
                seed: 8,
            },
        ],
    );
    let latin1 = OsStr::from_bytes(b"caf\xe9.jpg");
    let newline = OsStr::from_bytes(b"two\nlines\xff.png");
    std::fs::rename(photos.join("tmp1.jpg"), photos.join(latin1)).unwrap();
    std::fs::rename(photos.join("tmp2.png"), photos.join(newline)).unwrap();

    // Given relatively, from the parent: stored absolute, the names below the root byte
    // for byte.
    let db = t.path().join("names.db");
    let o = output_within(
        seekless()
            .current_dir(t.path())
            .args(["index", "--db", "names.db", "photos"]),
        RUN_LIMIT,
    );
    assert_exit(&o, 0);
    let rows = query(
        &db,
        "SELECT hex(path_bytes) AS hex, path, format, width, blake3 FROM images ORDER BY 1",
    );
    let mut want = vec![
        (
            b"photos/caf\xe9.jpg".to_vec(),
            "photos/caf\u{FFFD}.jpg",
            "jpeg",
            25,
        ),
        (
            b"photos/two\nlines\xff.png".to_vec(),
            "photos/two\nlines\u{FFFD}.png",
            "png",
            26,
        ),
    ];
    want.sort_by_key(|w| hex(&w.0));
    let parent = std::fs::canonicalize(t.path()).unwrap();
    let parent = format!("{}/", parent.display());
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, (bytes, shown, format, width)) in rows.iter().zip(&want) {
        let absolute = [parent.as_bytes(), bytes].concat();
        assert_eq!(row["hex"], json!(hex(&absolute)), "{row}");
        let shown = format!("{parent}{shown}");
        assert_eq!(row["path"], json!(shown), "lossy UTF-8 for display: {row}");
        assert_eq!(row["format"], json!(format), "{row}");
        assert_eq!(row["width"], json!(width), "{row}");
        let file = t.path().join(OsStr::from_bytes(bytes));
        assert_eq!(row["blake3"], json!(b3sum(&file)), "{row}");
    }
}

// ---------------------------------------------------------------------------------------
// Files that cannot be read.

#[test]
fn an_unreadable_image_gets_a_row_with_its_error_and_is_read_once_it_can_be() {
    use std::os::unix::fs::PermissionsExt;
    let test = test_name!();
    // Runs as nobody through setpriv: root reads everything.
    if !require_root(test) || !require_tool(test, "setpriv") {
        return;
    }
    let Some(tools) = tools(test) else { return };
    let t = scratch!();
    let mode = |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(t.path(), 0o755).unwrap();
    let photos = t.path().join("photos");
    let readable = photos.join("ok.jpg");
    let secret = photos.join("secret.jpg");
    draw(
        &tools,
        &[
            Picture {
                path: readable.clone(),
                kind: "JPEG+exif",
                width: 20,
                height: 10,
                seed: 1,
            },
            Picture {
                path: secret.clone(),
                kind: "JPEG+exif",
                width: 30,
                height: 10,
                seed: 2,
            },
        ],
    );
    mode(&secret, 0o000).unwrap();
    let db_dir = t.path().join("db");
    std::fs::create_dir(&db_dir).unwrap();
    mode(&db_dir, 0o777).unwrap();
    let db = db_dir.join("photos.db");
    let as_nobody = || {
        output_within(
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_seekless"))
                .args(["index", "--summary", "--db"])
                .arg(&db)
                .arg(&photos),
            RUN_LIMIT,
        )
    };

    let o = as_nobody();
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "seekless: {}: Permission denied",
            secret.display()
        )),
        "{err}"
    );
    let rows = rows_by_key(&db);
    let listed: Vec<&Value> = rows.values().map(|r| &r["path"]).collect();
    assert_eq!(
        rows.len(),
        2,
        "a row for each file, the unreadable one too (docs/index.md: a file that could \
         not be read still gets its row, with error set): rows {listed:?}\n{err}"
    );
    let ok = row_of(&rows, &readable);
    assert_eq!(
        (&ok["error"], &ok["width"]),
        (&Value::Null, &json!(20)),
        "{ok}"
    );
    let denied = row_of(&rows, &secret);
    assert!(
        denied["error"]
            .as_str()
            .is_some_and(|e| e.contains("Permission denied")),
        "the row keeps why: {denied}"
    );
    assert_eq!(denied["blake3"], Value::Null, "nothing was read: {denied}");
    assert_eq!(
        denied["size"],
        json!(std::fs::metadata(&secret).unwrap().len())
    );
    assert!(closing_line(&o).ends_with(", 1 failed"), "{err}");

    // Made readable (its size and mtime unchanged): a row that holds a read error is not
    // a catalogued file, so the next run reads it.
    mode(&secret, 0o644).unwrap();
    let o = as_nobody();
    assert_exit(&o, 0);
    let rows = rows_by_key(&db);
    let fixed = row_of(&rows, &secret);
    assert_eq!(fixed["error"], Value::Null, "{fixed}");
    assert_file_columns(fixed, &secret);
    assert_eq!(fixed["width"], json!(30));
    assert_eq!(
        files_read(&o),
        Some(1),
        "only the file that failed is read again: {}",
        stderr(&o)
    );
}

// ---------------------------------------------------------------------------------------
// 8. What a run could not see, it does not forget; what it could, it recognises.

/// Paths of the catalog's rows, sorted.
fn row_paths(db: &Path) -> Vec<String> {
    query(db, "SELECT path FROM images ORDER BY path")
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect()
}

fn shown(paths: &[PathBuf]) -> Vec<String> {
    let mut v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    v.sort();
    v
}

#[test]
fn an_unreadable_subdirectory_keeps_its_rows() {
    use std::os::unix::fs::PermissionsExt;
    let test = test_name!();
    // As nobody through setpriv: root lists every directory.
    if !require_root(test) || !require_tool(test, "setpriv") || !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let mode = |p: &Path, m| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m));
    mode(t.path(), 0o755).unwrap();
    let photos = t.path().join("photos");
    let hidden: Vec<PathBuf> = ["sub/a.gif", "sub/deeper/b.gif"]
        .iter()
        .map(|r| photos.join(r))
        .collect();
    let open: Vec<PathBuf> = ["c.gif", "other/d.gif"]
        .iter()
        .map(|r| photos.join(r))
        .collect();
    gifs(&[hidden.clone(), open.clone()].concat());
    // A catalog nobody can write, in a directory nobody can write.
    let db_dir = t.path().join("db");
    std::fs::create_dir(&db_dir).unwrap();
    mode(&db_dir, 0o777).unwrap();
    let db = db_dir.join("photos.db");
    let as_nobody = || {
        output_within(
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_seekless"))
                .args(["index", "--summary", "--db"])
                .arg(&db)
                .arg(&photos),
            RUN_LIMIT,
        )
    };
    assert_exit(&as_nobody(), 0);
    let all = shown(&[hidden.clone(), open.clone()].concat());
    assert_eq!(row_paths(&db), all);

    // The subdirectory cannot be listed: its rows stay; a file really gone still goes.
    let sub = photos.join("sub");
    mode(&sub, 0o000).unwrap();
    std::fs::remove_file(&open[1]).unwrap();
    let o = as_nobody();
    mode(&sub, 0o755).unwrap();
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("seekless: {}: Permission denied", sub.display())),
        "{err}"
    );
    let counts = closing_counts(&o);
    assert_eq!(counts["removed"], 1, "{err}");
    assert_eq!(
        row_paths(&db),
        shown(&[hidden.clone(), vec![open[0].clone()]].concat()),
        "the rows under the unreadable directory stay, the deleted file's row goes"
    );
}

#[test]
fn an_unmounted_root_is_an_error_that_keeps_its_rows_unless_pruned() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") {
        return;
    }
    let fs = LoopFs::new(test, "ext4", 32);
    let t = scratch!();
    let db = t.path().join("usb.db");
    let files: Vec<PathBuf> = ["photos/a.gif", "photos/b.gif", "c.gif"]
        .iter()
        .map(|r| fs.path(r))
        .collect();
    gifs(&files);
    let mnt = fs.mnt.clone();
    let photos = fs.path("photos");
    assert_exit(&index(&db, &[os("--summary"), mnt.as_os_str()]), 0);
    let all = shown(&files);
    assert_eq!(row_paths(&db), all);

    // The drive is not mounted: the mount point is an empty directory, the subdirectory
    // does not exist. Nothing is removed, and the run says why.
    run(Command::new("umount").arg(&mnt));
    let remount = || run(Command::new("mount").arg(&fs.device).arg(&mnt));
    let empty = index(&db, &[os("--summary"), mnt.as_os_str()]);
    let missing = index(&db, &[os("--summary"), photos.as_os_str()]);
    for (o, what) in [
        (&empty, "is an empty directory"),
        (&missing, "does not exist"),
    ] {
        assert_exit(o, 1);
        let err = stderr(o);
        assert_eq!(closing_counts(o)["removed"], 0, "{err}");
        assert!(err.contains(what) && err.contains("--prune"), "{err}");
        assert!(err.contains("rows under it: kept"), "{err}");
    }
    assert!(stderr(&empty).contains(&format!("seekless: {}: ", mnt.display())));
    assert!(stderr(&missing).contains(&format!("seekless: {}: ", photos.display())));
    assert_eq!(row_paths(&db), all, "every row is kept");

    // Mounted again: the same catalog, nothing read.
    remount();
    let back = index(&db, &[os("--summary"), mnt.as_os_str()]);
    assert_exit(&back, 0);
    assert_eq!(closing_counts(&back)["unchanged"], 3, "{}", stderr(&back));
    assert_eq!(row_paths(&db), all);

    // Gone for good, said with --prune: the rows go.
    run(Command::new("umount").arg(&mnt));
    let pruned = index(&db, &[os("--summary"), os("--prune"), photos.as_os_str()]);
    assert_exit(&pruned, 0);
    assert_eq!(closing_counts(&pruned)["removed"], 2, "{}", stderr(&pruned));
    assert_eq!(row_paths(&db), shown(&files[2..]));
    let pruned = index(&db, &[os("--summary"), os("--prune"), mnt.as_os_str()]);
    assert_exit(&pruned, 0);
    assert_eq!(closing_counts(&pruned)["removed"], 1, "{}", stderr(&pruned));
    assert_eq!(row_paths(&db), Vec::<String>::new());
    remount();
}

/// A bind mount made by a test, undone (lazily, if busy) when dropped.
struct BindMount(PathBuf);

impl BindMount {
    fn new(from: &Path, at: &Path) -> BindMount {
        run(Command::new("mount").arg("--bind").arg(from).arg(at));
        BindMount(at.to_path_buf())
    }

    fn unmount(&mut self) {
        run(Command::new("umount").arg(&self.0));
        self.0 = PathBuf::new();
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

#[test]
fn a_drive_unmounted_below_a_root_is_an_error_that_keeps_its_rows_unless_pruned() {
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
    // On the drive, mounted at root/sub: files at its top and deeper.
    let on_drive: Vec<PathBuf> = ["a.gif", "b.gif", "deep/er/c.gif"]
        .iter()
        .map(|r| fs.path(r))
        .collect();
    gifs(&on_drive);
    let mut mount = BindMount::new(&fs.mnt, &sub);
    // On the root's own filesystem: a file, and a directory that is emptied.
    let top = root.join("top.gif");
    let plain: Vec<PathBuf> = ["plain/d.gif", "plain/e.gif"]
        .iter()
        .map(|r| root.join(r))
        .collect();
    gifs(&[vec![top.clone()], plain.clone()].concat());
    assert_exit(&index(&db, &[root.as_os_str()]), 0);
    let rows = row_paths(&db);
    assert_eq!(rows.len(), 6, "{rows:?}");

    // Not mounted any more, and plain/ emptied on the root's own filesystem.
    mount.unmount();
    for p in &plain {
        std::fs::remove_file(p).unwrap();
    }
    let unmounted = index(&db, &[os("--summary"), root.as_os_str()]);
    assert_exit(&unmounted, 1);
    let err = stderr(&unmounted);
    assert!(
        err.contains(&format!(
            "seekless: {}: an empty directory now, was the mount point of another filesystem \
             with 3 rows in the catalog: kept (is the drive mounted? --prune removes them)",
            sub.display()
        )),
        "{err}"
    );
    assert_eq!(err.matches("mount point").count(), 1, "one error: {err}");
    assert_eq!(
        closing_counts(&unmounted)["removed"],
        2,
        "plain/'s rows: {err}"
    );
    let shown_drive: Vec<String> = ["a.gif", "b.gif", "deep/er/c.gif"]
        .iter()
        .map(|r| sub.join(r).display().to_string())
        .collect();
    let mut expected = [shown_drive.clone(), vec![top.display().to_string()]].concat();
    expected.sort();
    assert_eq!(row_paths(&db), expected, "the drive's rows are kept");

    // With --prune they go, with a warning.
    let pruned = index(&db, &[os("--summary"), os("--prune"), root.as_os_str()]);
    assert_exit(&pruned, 0);
    assert!(
        stderr(&pruned).contains("removed (--prune)"),
        "{}",
        stderr(&pruned)
    );
    assert_eq!(closing_counts(&pruned)["removed"], 3);
    assert_eq!(row_paths(&db), vec![top.display().to_string()]);
}

/// Unmounts `mnt` and detaches `device` when dropped.
struct Attached {
    device: String,
    mnt: PathBuf,
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = Command::new("losetup").arg("-d").arg(&self.device).status();
    }
}

#[test]
fn a_filesystem_mounted_again_under_another_device_number_is_not_read_again() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") {
        return;
    }
    let fs = LoopFs::new(test, "ext4", 32);
    let t = scratch!();
    let db = t.path().join("usb.db");
    let files: Vec<PathBuf> = (0..20)
        .map(|i| fs.path(format!("{}/img_{i}.gif", i % 3)))
        .collect();
    gifs(&files);
    let first = index(&db, &[os("--summary"), fs.mnt.as_os_str()]);
    assert_exit(&first, 0);
    let dev_before = std::fs::metadata(&files[0]).unwrap().dev();

    // The same filesystem through another loop device: another st_dev, as a disk plugged
    // in again gets.
    run(Command::new("umount").arg(&fs.mnt));
    let out = run(Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&fs.image));
    let other = Attached {
        device: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        mnt: fs.mnt.clone(),
    };
    run(Command::new("mount").arg(&other.device).arg(&fs.mnt));
    let dev_after = std::fs::metadata(&files[0]).unwrap().dev();
    assert_ne!(dev_before, dev_after, "the device number changed");

    let again = index(&db, &[os("--summary"), fs.mnt.as_os_str()]);
    assert_exit(&again, 0);
    assert_eq!(
        closing_line(&again),
        "seekless: index: 20 seen, 0 added, 0 changed, 0 moved, 20 unchanged, 0 removed, 0 failed"
    );
    assert_eq!(files_read(&again).unwrap_or(0), 0, "nothing read");
    let rows = rows_by_key(&db);
    assert_eq!(rows.len(), 20);
    for f in &files {
        // The device number recorded follows the filesystem.
        assert_file_columns(row_of(&rows, f), f);
    }
    drop(other);
    run(Command::new("mount").arg(&fs.device).arg(&fs.mnt));
}

#[test]
fn a_relative_and_an_absolute_run_of_one_tree_are_one_catalog() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    let files: Vec<PathBuf> = (0..5)
        .map(|i| photos.join(format!("d{}/{i}.gif", i % 2)))
        .collect();
    gifs(&files);
    let db = t.path().join("c.db");
    let relative = output_within(
        seekless().current_dir(t.path()).args([
            "index",
            "--summary",
            "--db",
            "c.db",
            "photos/../photos",
        ]),
        RUN_LIMIT,
    );
    assert_exit(&relative, 0);
    assert_eq!(row_paths(&db), shown(&files), "stored absolute");
    let absolute = index(&db, &[os("--summary"), photos.as_os_str()]);
    assert_exit(&absolute, 0);
    assert_eq!(
        closing_line(&absolute),
        "seekless: index: 5 seen, 0 added, 0 changed, 0 moved, 5 unchanged, 0 removed, 0 failed"
    );
    assert_eq!(row_paths(&db), shown(&files));
}

#[test]
fn a_version_1_catalog_is_upgraded_in_place_and_keeps_its_rows() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    let files: Vec<PathBuf> = (0..6).map(|i| photos.join(format!("{i}.gif"))).collect();
    gifs(&files);
    let db = t.path().join("c.db");
    assert_exit(&index(&db, &[photos.as_os_str()]), 0);
    // As version 1 left it when run as `index photos` from the parent (the first three)
    // and as `index $PWD/link` through a symbolic link to it (the rest): the same tables
    // (docs/index.md, schema version 1), paths as given; and a row of a file no longer
    // there, and one of another tree given absolute.
    std::os::unix::fs::symlink("photos", t.path().join("link")).unwrap();
    let prefix = format!("{}/", t.path().display());
    let via_link = files[3..]
        .iter()
        .map(|f| format!("'{}'", f.display()))
        .collect::<Vec<_>>()
        .join(", ");
    query(
        &db,
        &format!(
            "UPDATE images SET path = replace(path, '/photos/', '/link/')
                 WHERE path IN ({via_link});
             UPDATE images SET path_bytes = CAST(path AS BLOB);
             UPDATE images SET path = substr(path, {n}), path_bytes = substr(path_bytes, {n})
                 WHERE path NOT LIKE '%/link/%';
             INSERT INTO images (path, path_bytes, dev, ino, size, mtime_ns, blake3, scan)
                 VALUES ('photos/gone.gif', CAST('photos/gone.gif' AS BLOB), 1, 1, 1, 1, 'x', 1),
                        ('/elsewhere/x.gif', CAST('/elsewhere/x.gif' AS BLOB), 1, 2, 1, 1, 'y', 1);
             PRAGMA user_version = 1;
             PRAGMA application_id = 0;",
            n = prefix.len() + 1
        ),
    );
    let count = |sql: &str| one(&db, &format!("SELECT count(*) AS n FROM images {sql}"), "n");
    assert_eq!(
        count("WHERE path LIKE '%/link/%'"),
        json!(3),
        "the v1 catalog as built"
    );
    assert_eq!(
        count("WHERE path LIKE 'photos/%'"),
        json!(4),
        "the v1 catalog as built"
    );
    let ids_before = query(&db, "SELECT id FROM images ORDER BY id");
    let o = output_within(
        seekless()
            .current_dir(t.path())
            .args(["index", "--summary", "--db", "c.db", "photos"]),
        RUN_LIMIT,
    );
    assert_exit(&o, 0);
    assert_eq!(
        closing_line(&o),
        "seekless: index: 6 seen, 0 added, 0 changed, 0 moved, 6 unchanged, 0 removed, 0 failed",
        "the upgraded rows are recognised: nothing read"
    );
    assert_eq!(one(&db, "PRAGMA user_version", "user_version"), json!(9));
    assert_eq!(
        one(&db, "PRAGMA application_id", "application_id"),
        json!(APPLICATION_ID),
        "recognised by its schema and marked"
    );
    assert_eq!(
        query(&db, "SELECT id FROM images ORDER BY id"),
        ids_before,
        "upgraded in place: the same rows"
    );
    let mut want = shown(&files);
    want.extend([
        "/elsewhere/x.gif".to_string(),
        "photos/gone.gif".to_string(),
    ]);
    want.sort();
    assert_eq!(
        row_paths(&db),
        want,
        "relative paths of files found made absolute; the rest left as they were"
    );
    let rows = rows_by_key(&db);
    for f in &files {
        assert_file_columns(row_of(&rows, f), f);
    }
}
