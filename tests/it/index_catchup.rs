//! Catching up without a walk (docs/index.md, "Catching up without a walk"): on btrfs, as
//! root, a run over a root an earlier run saw whole walks only the directories btrfs says
//! changed since, reads again the files it says were written (an edit in place that put
//! the mtime back included), and ends with the catalog a fresh run would make; every case
//! it cannot vouch for walks the root whole. Nothing here syncs: a run commits the
//! filesystem before it reads the generation it records, so files written just before a
//! run are not read again by the next. Real btrfs and ext4 on loop devices.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::catalog::assert_exit;
use crate::common::catalog::*;
use crate::common::*;

/// The summary's catch-up line: (roots caught up, directories walked), if it said one.
fn caught_up(o: &std::process::Output) -> Option<(u64, u64)> {
    let err = stderr(o);
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("seekless: index: caught up without a walk: "))?;
    let words: Vec<&str> = line.split(' ').collect();
    Some((words[0].parse().unwrap(), words[4].parse().unwrap()))
}

/// Each row's path, size and content hash, by path: what a catalog says of the files.
fn contents(db: &Path) -> Vec<Value> {
    query(
        db,
        "SELECT path, size, blake3, width FROM images ORDER BY path",
    )
}

/// A run with `--summary`, which must succeed.
fn run_index(db: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let o = index(db, &[&[os("--summary")], args].concat());
    assert_exit(&o, 0);
    o
}

fn records(db: &Path) -> Vec<Value> {
    query(db, "SELECT root, generation FROM catchup ORDER BY root")
}

/// The same size and modification time, other bytes: what a walk cannot tell.
fn edit_in_place(path: &Path) {
    let before = std::fs::metadata(path).unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    *bytes.last_mut().unwrap() ^= 0x55;
    std::fs::write(path, &bytes).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(before.modified().unwrap()).unwrap();
}

#[test]
fn a_run_after_changes_on_btrfs_walks_only_what_changed_and_ends_as_a_fresh_catalog() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") {
        return;
    }
    let fs = LoopFs::new(test, "btrfs", 300);
    let t = scratch!();
    let db = t.path().join("c.db");
    let lib = fs.path("lib");
    // 40 files that change around them, 60 in directories nothing changes in.
    let files: Vec<PathBuf> = (0..40)
        .map(|i| lib.join(format!("{}/{}/{i}.gif", i % 4, i % 3)))
        .chain((0..60).map(|i| lib.join(format!("keep/{}/{i}.gif", i % 6))))
        .collect();
    gifs(&files);
    std::fs::create_dir_all(fs.path("outside")).unwrap();

    // The first run walks and records; an unchanged library is then caught up with
    // nothing walked, nothing read, every row as it was.
    let first = run_index(&db, &[lib.as_os_str()]);
    assert_eq!(caught_up(&first), None);
    assert_eq!(closing_counts(&first)["added"], 100);
    let recorded = records(&db);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let before = contents(&db);
    let again = run_index(&db, &[lib.as_os_str()]);
    assert_eq!(caught_up(&again), Some((1, 0)), "{}", stderr(&again));
    assert_eq!(closing_counts(&again)["seen"], 0);
    assert_eq!(files_read(&again).unwrap_or(0), 0);
    assert_eq!(contents(&db), before);

    // Every kind of change, in some directories only.
    let id_of = |db: &Path, p: &Path| {
        one(
            db,
            &format!("SELECT id FROM images WHERE path = '{}'", p.display()),
            "id",
        )
    };
    let renamed = lib.join("1/1/1.gif");
    let renamed_id = id_of(&db, &renamed);
    let moved_tree_id = id_of(&db, &lib.join("2/2/2.gif"));
    let edited = lib.join("3/0/3.gif");
    edit_in_place(&edited);
    std::fs::rename(&renamed, lib.join("1/1/renamed.gif")).unwrap();
    std::fs::rename(lib.join("0/0/0.gif"), lib.join("3/1/across.gif")).unwrap();
    std::fs::rename(lib.join("2/2"), lib.join("0/tree")).unwrap();
    std::fs::rename(lib.join("0/1/4.gif"), fs.path("outside/4.gif")).unwrap();
    std::fs::remove_file(lib.join("1/0/9.gif")).unwrap();
    gifs(&[lib.join("3/new/deep/n.gif")]);
    // A directory emptied: its rows go (it is not taken for a drive not mounted).
    for f in std::fs::read_dir(lib.join("3/2")).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }

    let caught = run_index(&db, &[lib.as_os_str()]);
    let (roots, dirs) = caught_up(&caught).expect("caught up");
    assert_eq!(roots, 1);
    assert!(dirs > 0 && dirs < 12, "{dirs} directories walked");
    let counts = closing_counts(&caught);
    assert!(
        counts["seen"] <= 41,
        "only what changed is walked: {counts:?}: {}",
        stderr(&caught)
    );
    assert_eq!(counts["changed"], 1, "the edit in place: {counts:?}");
    let fresh = t.path().join("fresh.db");
    run_index(&fresh, &[os("--walk"), lib.as_os_str()]);
    assert_eq!(
        contents(&db),
        contents(&fresh),
        "caught up as a fresh catalog"
    );
    // Moves are moves: the rows keep their ids.
    assert_eq!(id_of(&db, &lib.join("1/1/renamed.gif")), renamed_id);
    assert_eq!(id_of(&db, &lib.join("0/tree/2.gif")), moved_tree_id);
    // The edit in place (same size, same mtime, which a walk takes for unchanged) was
    // read again: its hash is the fresh catalog's (above), not the one before.
    let hash_before = &before
        .iter()
        .find(|r| r["path"] == edited.to_str().unwrap())
        .unwrap()["blake3"];
    assert_ne!(
        &one(
            &db,
            &format!(
                "SELECT blake3 FROM images WHERE path = '{}'",
                edited.display()
            ),
            "blake3"
        ),
        hash_before
    );

    // The next record is newer; nothing changed since: nothing walked.
    let newer = records(&db);
    assert!(newer[0]["generation"].as_i64() > recorded[0]["generation"].as_i64());
    let still = run_index(&db, &[lib.as_os_str()]);
    assert_eq!(caught_up(&still), Some((1, 0)), "{}", stderr(&still));
}

#[test]
fn what_a_catch_up_cannot_vouch_for_is_walked_whole() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") || !require_tool(test, "btrfs") {
        return;
    }
    let t = scratch!();
    let walked = |o: &std::process::Output| caught_up(o).is_none();

    // ext4 has no generation to ask from: no record, always walked.
    let ext4 = LoopFs::new(test, "ext4", 100);
    gifs(&[ext4.path("lib/a/1.gif")]);
    let db = t.path().join("ext4.db");
    run_index(&db, &[ext4.path("lib").as_os_str()]);
    assert!(records(&db).is_empty());
    assert!(walked(&run_index(&db, &[ext4.path("lib").as_os_str()])));

    let fs = LoopFs::new(test, "btrfs", 300);
    let lib = fs.path("lib");
    gifs(&[lib.join("a/1.gif"), lib.join("b/2.gif")]);
    let db = t.path().join("btrfs.db");
    let plain = |db: &Path| run_index(db, &[lib.as_os_str()]);
    plain(&db);
    assert!(!walked(&plain(&db)), "the baseline catches up");

    // --walk walks, and records anew.
    assert!(walked(&run_index(&db, &[os("--walk"), lib.as_os_str()])));
    assert_eq!(records(&db).len(), 1);
    // --rehash reads everything.
    let rehash = run_index(&db, &[os("--rehash"), lib.as_os_str()]);
    assert!(walked(&rehash));
    assert_eq!(closing_counts(&rehash)["changed"], 2);

    // Other settings (other extensions) walk, and their record replaces the old one: a
    // run of the first settings then walks again.
    assert!(walked(&run_index(
        &db,
        &[os("--ext"), os("gif,jpg"), lib.as_os_str()]
    )));
    assert!(walked(&plain(&db)));
    assert!(!walked(&plain(&db)));

    // A run of other settings over a directory under the root drops the root's record.
    assert!(walked(&run_index(
        &db,
        &[os("--ext"), os("gif"), lib.join("a").as_os_str()]
    )));
    assert!(
        !records(&db)
            .iter()
            .any(|r| r["root"] == lib.to_str().unwrap()),
        "{:?}",
        records(&db)
    );
    assert!(walked(&plain(&db)));
    assert!(!walked(&plain(&db)));

    // --follow goes where links point, which btrfs would not report: walked.
    assert!(walked(&run_index(&db, &[os("--follow"), lib.as_os_str()])));
    assert!(walked(&run_index(&db, &[os("--follow"), lib.as_os_str()])));
    plain(&db);
    assert!(!walked(&plain(&db)));

    // A row whose read failed is retried by every run: its directory is walked though
    // nothing changed there.
    let failed = lib.join("b/2.gif");
    run(Command::new("sqlite3").arg(&db).arg(format!(
        "UPDATE images SET blake3 = NULL, error = 'read failed: planted' WHERE path = '{}'",
        failed.display()
    )));
    let retried = plain(&db);
    assert_eq!(caught_up(&retried), Some((1, 1)), "{}", stderr(&retried));
    assert_eq!(
        one(
            &db,
            &format!(
                "SELECT error FROM images WHERE path = '{}'",
                failed.display()
            ),
            "error"
        ),
        Value::Null
    );
    assert!(!walked(&plain(&db)));

    // A subvolume nested under the root: its changes are not in the root's tree.
    run(Command::new("btrfs")
        .args(["-q", "subvolume", "create"])
        .arg(lib.join("sub")));
    assert!(walked(&plain(&db)));
    gifs(&[lib.join("sub/3.gif")]);
    let o = plain(&db);
    assert!(walked(&o));
    assert!(has_row(&db, &lib.join("sub/3.gif")));
    run(Command::new("btrfs")
        .args(["-q", "subvolume", "delete"])
        .arg(lib.join("sub")));
    plain(&db);
    assert!(!walked(&plain(&db)));

    // A filesystem mounted under the root.
    let under = lib.join("mnt");
    std::fs::create_dir(&under).unwrap();
    plain(&db);
    let tmpfs = Mounted::tmpfs(&under, "size=1m");
    gifs(&[under.join("4.gif")]);
    assert!(walked(&plain(&db)));
    assert!(has_row(&db, &under.join("4.gif")));
    assert!(walked(&plain(&db)), "still mounted: walked again");
    drop(tmpfs);

    // Something the walk leaves out (a FIFO) is not seen whole: no record, walked again.
    std::fs::remove_dir(&under).unwrap();
    run(Command::new("mkfifo").arg(lib.join("b/pipe")));
    let o = index(&db, &[lib.as_os_str()]);
    assert!(
        records(&db).is_empty(),
        "{:?}: {}",
        records(&db),
        stderr(&o)
    );
    std::fs::remove_file(lib.join("b/pipe")).unwrap();
    plain(&db);
    assert!(!walked(&plain(&db)));
}

#[test]
fn another_filesystem_at_the_same_path_is_walked_whole() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let place = t.path().join("photos");
    std::fs::create_dir(&place).unwrap();
    let a = LoopFs::new(test, "btrfs", 300);
    gifs(&[a.path("lib/x/1.gif")]);
    let db = t.path().join("c.db");
    let held = Held::bind(&a.path("lib"), &place);
    run_index(&db, &[place.as_os_str()]);
    assert!(caught_up(&run_index(&db, &[place.as_os_str()])).is_some());
    let recorded = records(&db)[0]["generation"].as_i64().unwrap();
    held.unmount();

    // Another btrfs, further on in its generations than the record, at the same path: a
    // catch-up from the record's generation would see none of its files.
    let b = LoopFs::new(test, "btrfs", 300);
    let mut generation = 0;
    for i in 0.. {
        gifs(&[b.path(format!("lib/y/{i}.gif"))]);
        run(&mut Command::new("sync"));
        let o = run(Command::new("btrfs")
            .args(["subvolume", "show"])
            .arg(&b.mnt));
        generation = String::from_utf8_lossy(&o.stdout)
            .lines()
            .find_map(|l| l.trim().strip_prefix("Generation:"))
            .map(|g| g.trim().parse::<i64>().unwrap())
            .unwrap();
        if generation > recorded + 2 {
            break;
        }
    }
    assert!(generation > recorded);
    let _held = Held::bind(&b.path("lib"), &place);
    let o = run_index(&db, &[place.as_os_str()]);
    assert_eq!(caught_up(&o), None, "another volume: walked");
    assert!(has_row(&db, &place.join("y/0.gif")));
}

#[test]
fn a_catch_up_killed_half_way_leaves_the_next_run_walking_whole() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") {
        return;
    }
    let fs = LoopFs::new(test, "btrfs", 300);
    let t = scratch!();
    let db = t.path().join("c.db");
    let lib = fs.path("lib");
    gifs(&[lib.join("a/1.gif"), lib.join("a/2.gif")]);
    run_index(&db, &[lib.as_os_str()]);
    assert_eq!(records(&db).len(), 1);
    // A new file the catch-up reads, held there (`seekless-fault-pause…`) until killed;
    // and one removed, whose row the catch-up removes before it reads.
    let held = lib.join("b/seekless-fault-pause-1.gif");
    gifs(std::slice::from_ref(&held));
    std::fs::remove_file(lib.join("a/2.gif")).unwrap();
    let running = start_index(&db, &lib);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // The removal committed: the run has changed a row.
    while !try_query(&db, "SELECT count(*) AS n FROM images", 200).is_ok_and(|r| r[0]["n"] == 1) {
        assert!(
            std::time::Instant::now() < deadline,
            "the removal never committed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    signal(&running.0, libc::SIGKILL);
    drop(running);
    assert!(
        !has_row(&db, &held),
        "the kill landed after the held file was read"
    );
    assert!(
        records(&db).is_empty(),
        "a record outlived the run that dropped it"
    );
    let mut go = held.as_os_str().to_owned();
    go.push(".go");
    std::fs::write(PathBuf::from(go), b"").unwrap();
    let next = run_index(&db, &[lib.as_os_str()]);
    assert_eq!(caught_up(&next), None, "walked whole after the kill");
    assert!(has_row(&db, &held));
    assert_eq!(records(&db).len(), 1);
}

fn has_row(db: &Path, path: &Path) -> bool {
    one(
        db,
        &format!(
            "SELECT count(*) AS n FROM images WHERE path = '{}'",
            path.display()
        ),
        "n",
    ) == 1
}
