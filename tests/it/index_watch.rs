//! `seekless index --watch` (docs/index.md, "Watching") on real ext4, xfs and btrfs: a
//! file made, edited in place (same size, mtime put back), renamed within and across
//! directories and out of the roots, deleted; a directory tree moved; a file written
//! slowly (never catalogued half-written); a burst; SIGTERM with a change pending; the
//! watcher killed (-9) and started again; a drive unmounted and mounted again under
//! watch; a second writer refused. Each step waits for the watcher's batches (its
//! `--summary` lines) until the catalog shows the change, within a deadline.

use std::io::{BufRead, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::catalog::assert_exit;
use crate::common::catalog::*;
use crate::common::*;

/// How long a change may take to reach the catalog here before the test fails (the
/// watcher settles for 0.2 s; the rest is the batches' runs on a loaded machine).
const DEADLINE: Duration = Duration::from_secs(60);

/// A running `seekless index --watch --summary`, its stderr read line by line.
struct Watcher {
    child: Child,
    lines: Receiver<String>,
    said: Vec<String>,
    db: PathBuf,
}

impl Watcher {
    fn start(db: &Path, root: &Path, settle: &str) -> Watcher {
        Self::start_as(db, root, settle, false)
    }

    /// As root, or (`nobody`) as user 65534, which inotify serves (fanotify's filesystem
    /// marks need root).
    fn start_as(db: &Path, root: &Path, settle: &str, nobody: bool) -> Watcher {
        let mut cmd = if nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_seekless"));
            c
        } else {
            seekless()
        };
        let child = cmd
            .args(["index", "--watch", "--summary", "--settle", settle, "--db"])
            .arg(db)
            .arg(root)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut w = Watcher::of(child, db);
        w.first_run();
        w
    }

    /// The watcher `child` (its stderr piped), writing the catalog `db`.
    fn of(mut child: Child, db: &Path) -> Watcher {
        let err = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watcher {
            child,
            lines: rx,
            said: Vec::new(),
            db: db.to_path_buf(),
        }
    }

    /// Waits for the first run's closing line.
    fn first_run(&mut self) {
        let end = Instant::now() + DEADLINE;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let closing = line.starts_with("seekless: index: ");
                    self.said.push(line);
                    if closing {
                        return;
                    }
                }
                Err(e) => panic!("no first run ({e:?}): {}", self.said.join("\n")),
            }
        }
    }

    /// Waits until `done` holds of the catalog (looked at as each line comes, and twice
    /// a second): the change cannot show before the batch that applies it commits.
    fn until(&mut self, what: &str, done: impl Fn(&Path) -> bool) {
        let end = Instant::now() + DEADLINE;
        while !done(&self.db) {
            let left = end.saturating_duration_since(Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(500)))
            {
                Ok(line) => self.said.push(line),
                Err(RecvTimeoutError::Timeout) if !left.is_zero() => {}
                Err(e) => panic!(
                    "{what}: not in the catalog ({e:?}); the watcher said:\n{}",
                    self.said.join("\n")
                ),
            }
        }
    }

    fn signal(&mut self, sig: &str) -> std::process::ExitStatus {
        run(Command::new("kill")
            .args(["-s", sig])
            .arg(self.child.id().to_string()));
        let status = self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.said.push(line);
        }
        status
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rows(db: &Path) -> Vec<Value> {
    try_query(
        db,
        "SELECT id, path, size, blake3 FROM images ORDER BY path",
        2000,
    )
    .unwrap_or_default()
}

fn row<'a>(rows: &'a [Value], path: &Path) -> Option<&'a Value> {
    let p = path.display().to_string();
    rows.iter().find(|r| r["path"].as_str() == Some(p.as_str()))
}

fn has(db: &Path, path: &Path) -> bool {
    row(&rows(db), path).is_some()
}

fn id_of(db: &Path, path: &Path) -> Value {
    row(&rows(db), path).map_or(Value::Null, |r| r["id"].clone())
}

#[test]
fn every_change_reaches_the_catalog_on_ext4_xfs_and_btrfs() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") {
        return;
    }
    for kind in ["ext4", "xfs", "btrfs"] {
        every_change(test, kind, false);
    }
}

#[test]
fn every_change_reaches_the_catalog_by_inotify_as_a_user_who_is_not_root() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") || !require_tool(test, "setpriv") {
        return;
    }
    every_change(test, "ext4", true);
}

/// The steps of a watched library's life on a `kind` filesystem, the watcher run as root
/// (fanotify) or as a user who is not (inotify).
fn every_change(test: &str, kind: &str, nobody: bool) {
    {
        let fs = LoopFs::new(test, kind, 300);
        let t = scratch!();
        let lib = fs.path("lib");
        // Where user 65534 may write its catalog and read the library.
        let open = fs.path("db");
        std::fs::create_dir(&open).unwrap();
        run(Command::new("chmod")
            .arg("a+rwx")
            .arg(&open)
            .arg(fs.path("")));
        let db = if nobody {
            open.join("c.db")
        } else {
            t.path().join("c.db")
        };
        gifs(&[
            lib.join("a/1.gif"),
            lib.join("a/2.gif"),
            lib.join("b/3.gif"),
        ]);
        std::fs::create_dir(fs.path("outside")).unwrap();
        let mut w = Watcher::start_as(&db, &lib, "0.2", nobody);
        assert_eq!(rows(&db).len(), 3, "{kind}");
        // As root: one fanotify mark for the filesystem, no watch per directory; else
        // inotify, a watch per directory.
        let how = if nobody {
            "seekless: index: watching with inotify (3 directories)"
        } else {
            "seekless: index: watching with fanotify (1 filesystem)"
        };
        assert!(
            w.said.iter().any(|l| l == how),
            "{kind}: {}",
            w.said.join("\n")
        );

        // Made.
        gifs(&[lib.join("a/new.gif")]);
        w.until("a new file", |db| has(db, &lib.join("a/new.gif")));

        // Edited in place: the same size, the mtime put back.
        let one = lib.join("a/1.gif");
        let before = row(&rows(&db), &one).unwrap()["blake3"].clone();
        let meta = std::fs::metadata(&one).unwrap();
        let mut bytes = std::fs::read(&one).unwrap();
        *bytes.last_mut().unwrap() ^= 0x20;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&one)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
        let mtime = std::fs::FileTimes::new().set_modified(meta.modified().unwrap());
        std::fs::File::options()
            .write(true)
            .open(&one)
            .unwrap()
            .set_times(mtime)
            .unwrap();
        assert_eq!(
            std::fs::metadata(&one).unwrap().mtime_nsec(),
            meta.mtime_nsec()
        );
        w.until("an edit in place", |db| {
            row(&rows(db), &one).is_some_and(|r| r["blake3"] != before)
        });

        // Renamed across directories: the row follows (its id kept), nothing read.
        let id2 = id_of(&db, &lib.join("a/2.gif"));
        std::fs::rename(lib.join("a/2.gif"), lib.join("b/2.gif")).unwrap();
        w.until("a rename", |db| id_of(db, &lib.join("b/2.gif")) == id2);
        assert!(!has(&db, &lib.join("a/2.gif")));

        // Renamed out of the roots, and deleted: the rows go.
        std::fs::rename(lib.join("b/3.gif"), fs.path("outside/3.gif")).unwrap();
        std::fs::remove_file(lib.join("a/new.gif")).unwrap();
        w.until("a file gone", |db| {
            !has(db, &lib.join("b/3.gif")) && !has(db, &lib.join("a/new.gif"))
        });

        // A directory tree moved: its rows follow.
        std::fs::rename(lib.join("b"), lib.join("a/b")).unwrap();
        w.until("a tree moved", |db| {
            id_of(db, &lib.join("a/b/2.gif")) == id2
        });

        // Written slowly: while it is open for writing, a batch (another directory's
        // change) does not catalogue it; once closed, it is, whole.
        // (Its directory is made and catalogued first: a file written in a directory made
        // the same instant can be written before the directory's watch is added, a gap
        // inotify has; docs/index.md.)
        gifs(&[lib.join("c/first.gif")]);
        w.until("a new directory", |db| has(db, &lib.join("c/first.gif")));
        let slow = lib.join("c/slow.gif");
        let mut f = std::fs::File::create(&slow).unwrap();
        f.write_all(b"GIF89a\x01\0\x01\0\0\0\0").unwrap();
        gifs(&[lib.join("marker/m.gif")]);
        w.until("another change", |db| has(db, &lib.join("marker/m.gif")));
        assert!(!has(&db, &slow), "{kind}: catalogued while written");
        f.write_all(b";slow").unwrap();
        drop(f);
        let size = std::fs::metadata(&slow).unwrap().len();
        w.until("a slow file closed", |db| {
            row(&rows(db), &slow).is_some_and(|r| r["size"] == size)
        });

        // A burst.
        let burst: Vec<PathBuf> = (0..300)
            .map(|i| lib.join(format!("burst/{i}.gif")))
            .collect();
        gifs(&burst);
        w.until("a burst", |db| {
            rows(db)
                .iter()
                .filter(|r| r["path"].as_str().is_some_and(|p| p.contains("/burst/")))
                .count()
                == 300
        });

        // Ended by SIGTERM: exit 0, the catalog whole.
        let status = w.signal("TERM");
        assert!(
            status.success(),
            "{kind}: {status:?}: {}",
            w.said.join("\n")
        );
        let fresh = t.path().join("fresh.db");
        assert_exit(&index(&fresh, &[lib.as_os_str()]), 0);
        let paths =
            |db: &Path| -> Vec<Value> { rows(db).iter().map(|r| r["path"].clone()).collect() };
        assert_eq!(
            paths(&db),
            paths(&fresh),
            "{kind}: the watched catalog is a fresh one's"
        );
    }
}

#[test]
fn a_change_pending_at_sigterm_is_committed_and_one_made_while_killed_is_caught_up() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let db = t.path().join("c.db");
    let lib = t.path().join("lib");
    gifs(&[lib.join("a.gif")]);
    // A settle time longer than the test: the change is pending when SIGTERM comes.
    let mut w = Watcher::start(&db, &lib, "3600");
    gifs(&[lib.join("pending.gif")]);
    let status = w.signal("TERM");
    assert!(status.success(), "{status:?}: {}", w.said.join("\n"));
    assert!(has(&db, &lib.join("pending.gif")), "{}", w.said.join("\n"));

    // Killed: a change made while it is dead is caught up by the next start.
    let mut w = Watcher::start(&db, &lib, "0.2");
    let status = w.signal("KILL");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    gifs(&[lib.join("while-dead.gif")]);
    let mut w = Watcher::start(&db, &lib, "0.2");
    assert!(has(&db, &lib.join("while-dead.gif")));

    // A second writer is refused while it watches.
    let second = index(&db, &[lib.as_os_str()]);
    assert_exit(&second, 2);
    assert!(
        stderr(&second).contains("is being written by another seekless run"),
        "{}",
        stderr(&second)
    );
    assert!(w.signal("INT").success());
}

#[test]
fn a_drive_unmounted_under_watch_goes_offline_and_is_caught_up_when_back() {
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
    gifs(&[root.join("top.gif"), fs.path("d/a.gif")]);
    let held = Held::bind(&fs.path("d"), &sub);
    let mut w = Watcher::start(&db, &root, "0.2");
    assert_eq!(rows(&db).len(), 2);
    held.unmount();
    w.until("the drive offline", |db| {
        try_query(db, "SELECT path FROM offline", 2000).is_ok_and(|r| r.len() == 1)
    });
    assert!(has(&db, &sub.join("a.gif")), "kept");
    // Back, with a file added meanwhile: caught up, nothing offline.
    gifs(&[fs.path("d/b.gif")]);
    let _held = Held::bind(&fs.path("d"), &sub);
    w.until("the drive back", |db| {
        has(db, &sub.join("b.gif"))
            && try_query(db, "SELECT path FROM offline", 2000).is_ok_and(|r| r.is_empty())
    });
    // The batch that found the drive away said so: exit 1.
    assert_eq!(w.signal("TERM").code(), Some(1), "{}", w.said.join("\n"));
}

#[test]
fn past_the_inotify_limit_directories_not_watched_are_walked_at_intervals_and_said() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") || !require_tool(test, "unshare") {
        return;
    }
    // A user who is not root, in a user namespace of its own whose limit is 3 watches
    // (user.max_inotify_watches: the machine's other watchers are not touched).
    let t = scratch!();
    let top = t.path().join("open");
    let lib = top.join("lib");
    let dirs: Vec<PathBuf> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|d| lib.join(d))
        .collect();
    gifs(&dirs.iter().map(|d| d.join("1.gif")).collect::<Vec<_>>());
    run(Command::new("chmod").args(["-R", "a+rwX"]).arg(&top));
    run(Command::new("chmod").arg("a+rx").arg(t.path()));
    let db = top.join("c.db");
    let script = format!(
        "echo 3 > /proc/sys/user/max_inotify_watches && exec {} index --watch --summary \
         --settle 0.2 --rescan 1 --db {} {}",
        env!("CARGO_BIN_EXE_seekless"),
        db.display(),
        lib.display()
    );
    let child = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "unshare",
            "-U",
            "-r",
            "sh",
            "-c",
        ])
        .arg(&script)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = Watcher::of(child, &db);
    w.first_run();
    assert!(
        w.said.iter().any(
            |l| l.contains("the inotify watch limit is reached (3 watches")
                && l.contains("directories here are not watched but indexed again every 1 s")
        ),
        "{}",
        w.said.join("\n")
    );
    // A change in each directory, watched or not, reaches the catalog.
    let new: Vec<PathBuf> = dirs.iter().map(|d| d.join("new.gif")).collect();
    gifs(&new);
    w.until("changes in directories not watched", |db| {
        new.iter().all(|p| has(db, p))
    });
    assert!(w.signal("TERM").success(), "{}", w.said.join("\n"));
}
