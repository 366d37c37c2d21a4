//! `seekless index`, continued (see `index`): rows committed on time while a file stalls,
//! a catalog locked by another program waited for with its holder named, and databases
//! that are not seekless catalogs left alone.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::catalog::assert_exit;
use crate::common::catalog::*;
use crate::common::*;

// ---------------------------------------------------------------------------------------
// 9. Commits on time, locks held.

/// Starts `seekless index --db DB --batch-rows 256 ARGS…` with the fault hook armed (a
/// file named `seekless-fault-stall…` holds its reader for two minutes), output
/// discarded.
fn start_index_with_faults(db: &Path, args: &[&OsStr]) -> Running {
    let child = seekless()
        .env("SEEKLESS_INJECT_FAULTS", "1")
        .arg("index")
        .arg("--db")
        .arg(db)
        .args(["--batch-rows", "256"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Running(child)
}

/// Waits until `ready` (a hang guard, not a timing assertion: what is awaited is due
/// within a second or two).
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn rows_read_before_a_stalled_file_are_committed_while_it_stalls() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    let files: Vec<PathBuf> = (0..30).map(|i| photos.join(format!("{i}.gif"))).collect();
    gifs(&files);
    let stall = t.path().join("slow/seekless-fault-stall.gif");
    gifs(std::slice::from_ref(&stall));
    let db = t.path().join("c.db");
    // In the order given, the stalling file last, one reader: every other file is read
    // and its row sent before the stall starts, and no row comes after.
    let run = start_index_with_faults(
        &db,
        &[
            os("--locate"),
            os("given"),
            os("-j"),
            os("1"),
            photos.as_os_str(),
            stall.as_os_str(),
        ],
    );
    wait_for("the commit of the 30 rows read before the stall", || {
        committed_rows(&db) == Some(30)
    });
    signal(&run.0, libc::SIGKILL);
    drop(run);
    assert_eq!(
        check_killed(&db, &t.path().join("copy.db")),
        30,
        "the rows committed before the kill survive it"
    );
}

/// The inode numbers of the POSIX (fcntl) locks that process `pid` holds, from /proc/locks.
fn posix_locks_of(pid: u32) -> Vec<u64> {
    std::fs::read_to_string("/proc/locks")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // "1: POSIX  ADVISORY  READ 1234 08:01:5678 128 128"
            let at = f.iter().position(|w| *w == "POSIX")?;
            let (owner, file) = (f.get(at + 3)?, f.get(at + 4)?);
            (owner.parse::<u32>().ok()? == pid).then(|| file.rsplit(':').next()?.parse().ok())?
        })
        .collect()
}

#[test]
fn a_catalog_inside_the_tree_keeps_its_locks_through_the_walk() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let tree = t.path().join("tree");
    let files: Vec<PathBuf> = (0..10).map(|i| tree.join(format!("{i}.bin"))).collect();
    gifs(&files);
    let db = tree.join("catalog.db");
    let first = index(&db, &[os("--all-files"), tree.as_os_str()]);
    assert_exit(&first, 0);

    // A reader holds the database's -wal and -shm open, so the walk finds them too.
    let reader = SqliteReader::open(&db);
    let shm = tree.join("catalog.db-shm");
    assert!(shm.exists());

    // A new file, then one that stalls the read, given last: once the new file's row is
    // committed, the walk is long over and the run is reading.
    let new = tree.join("new.bin");
    gifs(std::slice::from_ref(&new));
    let stall = t.path().join("slow/seekless-fault-stall.bin");
    gifs(std::slice::from_ref(&stall));
    let run = start_index_with_faults(
        &db,
        &[
            os("--all-files"),
            os("--locate"),
            os("given"),
            os("-j"),
            os("1"),
            tree.as_os_str(),
            stall.as_os_str(),
        ],
    );
    wait_for("the new file's row", || {
        committed_rows(&db) == Some(files.len() as u64 + 1)
    });
    let locks = posix_locks_of(run.0.id());
    let shm_ino = std::fs::metadata(&shm).unwrap().ino();
    let db_ino = std::fs::metadata(&db).unwrap().ino();
    assert!(
        locks.contains(&shm_ino),
        "SQLite's locks on the -shm file are still held after the walk opened it \
         (inode {shm_ino}; the run's POSIX locks: {locks:?}; the database is {db_ino})"
    );
    for _ in 0..2 {
        let second = index(&db, &[os("--all-files"), tree.as_os_str()]);
        assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    }
    drop(run);
    drop(reader);
}

/// Flips a byte in the middle of the data of the file whose content starts with `head`
/// (unique), in the btrfs image under it: btrfs's data checksum then turns every read of
/// that block into EIO once the page cache is dropped (a remount).
fn corrupt_btrfs_data(lfs: &LoopFs, file: &Path, head: &[u8]) {
    use std::os::unix::fs::FileExt;
    std::fs::File::open(file).unwrap().sync_all().unwrap();
    let image = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&lfs.image)
        .unwrap();
    let bytes = std::fs::read(&lfs.image).unwrap();
    let found: Vec<usize> = bytes
        .windows(head.len())
        .enumerate()
        .filter(|(_, w)| *w == head)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "the file's data is in the image once (single profile)"
    );
    let at = (found[0] + 8000) as u64;
    let mut b = [0u8];
    image.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0xff;
    image.write_all_at(&b, at).unwrap();
}

#[test]
fn rehash_of_a_file_failing_with_eio_keeps_its_known_fields_beside_the_error() {
    let test = test_name!();
    if !require_root(test) || !require_tool(test, "sqlite3") || !require_tool(test, "mkfs.btrfs") {
        return;
    }
    let t = scratch!();
    let lfs = LoopFs::new(test, "btrfs", 128);
    let photos = lfs.path("photos");
    // 1×1 GIFs followed by 16 KiB of random bytes: data blocks of their own (not inlined
    // in btrfs's metadata), with a pattern found once in the image.
    let mut rng = Rng::new(30);
    let (bad, good) = (photos.join("bad.gif"), photos.join("good.gif"));
    let mut heads = Vec::new();
    for p in [&bad, &good] {
        std::fs::create_dir_all(&photos).unwrap();
        let mut bytes = b"GIF89a\x01\0\x01\0\0\0\0;".to_vec();
        let random = rng.bytes(16 << 10);
        heads.push(random[..64].to_vec());
        bytes.extend_from_slice(&random);
        std::fs::write(p, bytes).unwrap();
    }
    let db = t.path().join("c.db");
    assert_exit(&index(&db, &[photos.as_os_str()]), 0);
    let bad_sql = format!(
        "SELECT {CATALOG_COLUMNS}, error FROM images WHERE path = '{}'",
        bad.display()
    );
    let before = query(&db, &bad_sql);
    assert_eq!(before[0]["format"], json!("gif"), "{before:?}");
    assert!(before[0]["blake3"].is_string(), "{before:?}");

    corrupt_btrfs_data(&lfs, &bad, &heads[0]);
    lfs.remount();
    let eio = std::fs::read(&bad).unwrap_err();
    assert_eq!(eio.raw_os_error(), Some(libc::EIO), "{eio}");

    // --rehash: the read fails; what was known stays, with the error beside it.
    let rehash = index(&db, &[os("--rehash"), photos.as_os_str()]);
    assert_exit(&rehash, 1);
    let after = query(&db, &bad_sql);
    let error = after[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(error.starts_with("read failed: "), "{error}");
    assert!(
        error.contains("the other fields are from its last read"),
        "{error}"
    );
    // The device number is the file's now (btrfs gives another at each mount).
    let mut kept = after[0].clone();
    kept["error"] = Value::Null;
    kept["dev"] = before[0]["dev"].clone();
    assert_eq!(kept, before[0], "every field but the error as before");

    // The next run reads it again (not unchanged), fails again, keeps the fields.
    let again = index(&db, &[os("--summary"), photos.as_os_str()]);
    assert_exit(&again, 1);
    let counts = closing_counts(&again);
    assert_eq!(
        (counts["changed"], counts["unchanged"], counts["failed"]),
        (1, 1, 1),
        "{}",
        closing_line(&again)
    );
    assert_eq!(query(&db, &bad_sql), after);

    // Its mtime changed (its blocks did not: still EIO): the fields stay, with the size
    // and mtime they describe, and the error says the file changed since.
    let f = std::fs::File::options().write(true).open(&bad).unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
        .unwrap();
    drop(f);
    assert_exit(&index(&db, &[photos.as_os_str()]), 1);
    let changed = query(&db, &bad_sql);
    let error = changed[0]["error"].as_str().unwrap_or_default().to_string();
    assert!(
        error.contains(
            "it changed since its last read (now 16398 bytes, mtime_ns 1000000000000000)"
        ),
        "{error}"
    );
    let mut kept = changed[0].clone();
    kept["error"] = Value::Null;
    kept["dev"] = before[0]["dev"].clone();
    assert_eq!(
        kept, before[0],
        "size and mtime_ns as read, with the fields"
    );
}

/// Another program holding the catalog's write lock: a Python `sqlite3` connection that
/// takes it with `BEGIN IMMEDIATE` when told to (trying again at once until it gets it)
/// and keeps it until told to let go, or until dropped.
struct LockHolder {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
}

const LOCK_HOLDER: &str = "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
while True:
    line = sys.stdin.readline()
    if not line:
        break
    if line.strip() == 'take':
        while True:
            try:
                c.execute('BEGIN IMMEDIATE')
                break
            except sqlite3.OperationalError:
                pass
        n = c.execute('SELECT count(*) FROM images').fetchone()[0]
        print('locked', n, flush=True)
    elif line.strip() == 'release':
        c.execute('COMMIT')
        print('released', flush=True)
";

impl LockHolder {
    fn start(db: &Path) -> LockHolder {
        let mut child = Command::new("python3")
            .args(["-c", LOCK_HOLDER])
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        LockHolder { child, out }
    }

    fn say(&mut self, what: &str) -> String {
        use std::io::{BufRead, Write};
        writeln!(self.child.stdin.as_mut().unwrap(), "{what}").unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        line.trim().to_string()
    }

    /// Takes the lock as soon as it is free; returns the rows committed then.
    fn take(&mut self) -> u64 {
        let said = self.say("take");
        let rows = said.strip_prefix("locked ").and_then(|n| n.parse().ok());
        rows.unwrap_or_else(|| panic!("the lock holder said {said:?}"))
    }

    fn release(&mut self) {
        assert_eq!(self.say("release"), "released");
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// A run's stderr as it comes, collected by a thread.
struct StderrSoFar(std::sync::Arc<std::sync::Mutex<String>>);

impl StderrSoFar {
    fn collect(child: &mut std::process::Child) -> StderrSoFar {
        use std::io::Read;
        let mut err = child.stderr.take().unwrap();
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let shared = text.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shared
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        StderrSoFar(text)
    }

    fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

/// Starts an index run (one reader, 256-row transactions, in the order given) of 300 files,
/// then one that holds the read (`seekless-fault-pause…`, debug builds), then 1,500 more
/// (more than the writer's queue holds: a writer that stops must not leave the reader
/// blocked on a full queue); once the first 300 rows are committed (the writer is then
/// idle, out of any transaction), `holder` takes the catalog's write lock, and the read
/// goes on. Returns the run (1,801 files) and its stderr as it comes.
fn lock_mid_run(t: &Path, db: &Path, holder: &mut LockHolder) -> (Running, StderrSoFar) {
    let (before, after) = (t.join("before"), t.join("after"));
    gifs(
        &(0..300)
            .map(|i| before.join(format!("{i}.gif")))
            .collect::<Vec<_>>(),
    );
    gifs(
        &(0..1500)
            .map(|i| after.join(format!("{i}.gif")))
            .collect::<Vec<_>>(),
    );
    let pause = t.join("slow/seekless-fault-pause.gif");
    gifs(std::slice::from_ref(&pause));
    let mut run = start_index_with_faults(
        db,
        &[
            os("--locate"),
            os("given"),
            os("-j"),
            os("1"),
            before.as_os_str(),
            pause.as_os_str(),
            after.as_os_str(),
        ],
    );
    let err = StderrSoFar::collect(&mut run.0);
    wait_for("the commit of the 300 rows read before the pause", || {
        committed_rows(db) == Some(300)
    });
    assert_eq!(holder.take(), 300);
    std::fs::write(t.join("slow/seekless-fault-pause.gif.go"), b"").unwrap();
    (run, err)
}

/// Waits for the run to end by itself: within three minutes (the lock wait is 60 s).
fn exit_code(run: &mut Running) -> Option<i32> {
    let started = Instant::now();
    loop {
        if let Some(status) = run.0.try_wait().unwrap() {
            return status.code();
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the run never ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_lock_held_15_s_mid_run_by_another_program_is_waited_out_with_its_holder_named() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") || !require_tool(test, "python3") {
        return;
    }
    let t = scratch!();
    let db = t.path().join("c.db");
    let mut holder = LockHolder::start(&db);
    let (mut run, err) = lock_mid_run(t.path(), &db, &mut holder);
    let locked = Instant::now();
    let named = format!("locked by PID {} (", holder.child.id());
    wait_for("the run's message naming the lock's holder", || {
        err.text().contains(&named)
    });
    assert!(
        err.text().contains("python3"),
        "its command line: {}",
        err.text()
    );
    // Held 15 s in all (the scenario of the issue: longer than SQLite's own 10 s wait).
    std::thread::sleep(Duration::from_secs(15).saturating_sub(locked.elapsed()));
    assert!(run.0.try_wait().unwrap().is_none(), "{}", err.text());
    holder.release();
    let code = exit_code(&mut run);
    let text = err.text();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("waiting for it (up to 60 s"), "{text}");
    assert!(text.contains("lock was released after"), "{text}");
    assert_eq!(committed_rows(&db), Some(1801));
    let ended = one(
        &db,
        "SELECT count(*) AS n FROM scans WHERE ended IS NOT NULL",
        "n",
    );
    assert_eq!(ended, json!(1));
}

#[test]
fn a_lock_held_past_the_wait_stops_the_run_with_exit_1_keeping_committed_rows() {
    let test = test_name!();
    if !in_group(test, "slow") {
        return;
    }
    if !require_tool(test, "sqlite3") || !require_tool(test, "python3") {
        return;
    }
    let t = scratch!();
    let db = t.path().join("c.db");
    let mut holder = LockHolder::start(&db);
    let (mut run, err) = lock_mid_run(t.path(), &db, &mut holder);
    // Held until the run ends by itself: it must (the run hung 754 s, silent).
    let code = exit_code(&mut run);
    let text = err.text();
    assert_eq!(code, Some(1), "{text}");
    let holder_named = format!("locked by PID {} (", holder.child.id());
    assert!(text.contains(&holder_named), "{text}");
    assert!(text.contains("python3"), "its command line: {text}");
    assert!(
        text.contains(" s: stopped (rows committed before are kept"),
        "{text}"
    );
    holder.release();
    assert_eq!(
        committed_rows(&db),
        Some(300),
        "the rows committed before the lock are kept, none after"
    );
    // The next run goes on from them.
    let again = index(
        &db,
        &[
            t.path().join("before").as_os_str(),
            t.path().join("after").as_os_str(),
        ],
    );
    assert_exit(&again, 0);
    assert_eq!(committed_rows(&db), Some(1800));
}

// ---------------------------------------------------------------------------------------
// 10. Someone else's database.

/// `sha256sum FILE`'s digest.
fn sha256(path: &Path) -> String {
    let out = run(Command::new("sha256sum").arg(path));
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// The files beside `db` that SQLite would make for it.
fn journals_of(db: &Path) -> Vec<PathBuf> {
    ["-wal", "-shm", "-journal"]
        .iter()
        .map(|s| {
            let mut p = db.as_os_str().to_owned();
            p.push(s);
            PathBuf::from(p)
        })
        .filter(|p| p.exists())
        .collect()
}

/// `index --db FILE` on a file that is not a seekless catalog: exit 2, one line naming it
/// and saying so (no pointer to --help), the file byte for byte as it was, and nothing
/// made beside it.
fn assert_refused_untouched(db: &Path, photos: &Path) {
    let before = std::fs::read(db).unwrap();
    let digest = sha256(db);
    let o = index(db, &[photos.as_os_str()]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(
        lines[0].starts_with(&format!("seekless: {}: ", db.display()))
            && lines[0].contains("not a seekless catalog"),
        "names the file and says why: {err}"
    );
    assert!(!err.contains("--help"), "{err}");
    assert_eq!(
        journals_of(db),
        Vec::<PathBuf>::new(),
        "nothing made beside it"
    );
    assert_eq!(sha256(db), digest, "{} changed", db.display());
    assert!(std::fs::read(db).unwrap() == before, "byte for byte");
}

#[test]
fn another_applications_database_is_refused_and_left_exactly_as_it_was() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") || !require_tool(test, "sha256sum") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    gifs(&[photos.join("a.gif"), photos.join("b.gif")]);
    // Another application's photo table, in each journal mode; one without tables named
    // like ours; one marked with another application id.
    let cases = [
        (
            "images-delete.db",
            "delete",
            "CREATE TABLE images (id INTEGER PRIMARY KEY, path TEXT, width INTEGER);
          INSERT INTO images (path, width) VALUES ('/x/1.jpg', 640), ('/x/2.jpg', 800);",
        ),
        (
            "images-wal.db",
            "wal",
            "CREATE TABLE images (id INTEGER PRIMARY KEY, path TEXT);
          INSERT INTO images (path) VALUES ('/x/1.jpg');",
        ),
        (
            "notes.db",
            "delete",
            "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me');",
        ),
        (
            "marked.db",
            "delete",
            "PRAGMA application_id = 1234; CREATE TABLE scans (id INTEGER PRIMARY KEY);",
        ),
    ];
    for (name, mode, sql) in cases {
        let db = t.path().join(name);
        query(
            &db_new(&db),
            &format!("PRAGMA journal_mode = {mode}; {sql}"),
        );
        assert_eq!(journals_of(&db), Vec::<PathBuf>::new(), "{name} as made");
        assert_refused_untouched(&db, &photos);
        assert_eq!(
            one(&db, "PRAGMA journal_mode", "journal_mode"),
            json!(mode),
            "{name}: the journal mode is unchanged"
        );
    }
}

/// `db`, made an empty file first so [`query`] lets sqlite3 create the database.
fn db_new(db: &Path) -> PathBuf {
    std::fs::write(db, b"").unwrap();
    db.to_path_buf()
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_exactly_as_it_was() {
    let test = test_name!();
    if !require_tool(test, "sha256sum") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    gifs(&[photos.join("a.gif")]);
    let text = t.path().join("notes.txt");
    std::fs::write(&text, "a text file\nof two lines\n").unwrap();
    assert_refused_untouched(&text, &photos);
    let image = photos.join("a.gif");
    assert_refused_untouched(&image, &photos);
    // Shorter than an SQLite header, but starting like one.
    let short = t.path().join("short.db");
    std::fs::write(&short, b"SQLite format 3\0").unwrap();
    assert_refused_untouched(&short, &photos);
}

#[test]
fn an_empty_file_becomes_a_new_catalog() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    gifs(&[photos.join("a.gif")]);
    let db = t.path().join("c.db");
    std::fs::write(&db, b"").unwrap();
    assert_exit(&index(&db, &[photos.as_os_str()]), 0);
    assert_eq!(
        one(&db, "PRAGMA application_id", "application_id"),
        json!(APPLICATION_ID)
    );
    assert_eq!(one(&db, "SELECT count(*) AS n FROM images", "n"), json!(1));
}

#[test]
fn a_catalog_made_before_the_application_id_is_recognised_by_its_schema_and_marked() {
    let test = test_name!();
    if !require_tool(test, "sqlite3") {
        return;
    }
    let t = scratch!();
    let photos = t.path().join("photos");
    let files: Vec<PathBuf> = (0..4).map(|i| photos.join(format!("{i}.gif"))).collect();
    gifs(&files);
    let db = t.path().join("c.db");
    assert_exit(&index(&db, &[photos.as_os_str()]), 0);
    assert_eq!(
        one(&db, "PRAGMA application_id", "application_id"),
        json!(APPLICATION_ID),
        "a new catalog is marked"
    );
    // As a version-2 catalog made before catalogs were marked.
    query(&db, "PRAGMA application_id = 0");
    let rows = catalog(&db);
    let o = index(&db, &["--summary".as_ref(), photos.as_os_str()]);
    assert_exit(&o, 0);
    assert_eq!(
        closing_line(&o),
        "seekless: index: 4 seen, 0 added, 0 changed, 0 moved, 4 unchanged, 0 removed, 0 failed",
        "accepted as the catalog it is"
    );
    assert_eq!(
        one(&db, "PRAGMA application_id", "application_id"),
        json!(APPLICATION_ID),
        "and marked"
    );
    assert_eq!(one(&db, "PRAGMA user_version", "user_version"), json!(9));
    assert_same_catalog(&catalog(&db), &rows, "after marking");

    // The same tables with a column more are not the catalog's.
    query(
        &db,
        "PRAGMA application_id = 0; ALTER TABLE images ADD COLUMN rating INTEGER;",
    );
    assert_refused_untouched(&db, &photos);
}
