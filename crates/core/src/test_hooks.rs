//! Fault points, for tests of what the jobs do when a file changes, vanishes, stalls or
//! makes a sweep panic while it is read. Built only with the `test-hooks` feature (which
//! `cargo test` turns on and no release build has) and in this crate's own unit tests;
//! armed by `SEEKLESS_INJECT_FAULTS=1`, read here and nowhere else, or by [`arm`].
//!
//! Each point acts on a file only by its name, so a test chooses what strikes where:
//!
//! - `seekless-test-sweep-panics-here` ([`PANIC_ON_OPEN`]): the sweep that opens it panics;
//! - `seekless-fault-shrink…` / `seekless-fault-grow…`: cut to half its size / 1000 bytes
//!   longer, right after its header is written (tar), its temporary made (copy);
//! - `seekless-fault-swap…`: another file renamed over it (`dupes --act`: after the last
//!   look before the act, so that only the act's own confirmation can tell;
//!   `NAME.swapped` then says so);
//! - `seekless-fault-stall…`: its reader is held for two minutes (index: a slow file);
//! - `seekless-fault-pause…`: its reader is held until a file of its name with `.go`
//!   appended exists (two minutes at most: the test chooses the moment);
//! - `seekless-fault-vanish…`: removed once a run has planned and before it reads (a name
//!   deleted while the run goes on; its other hard-linked names stay);
//! - `seekless-fault-retouch…`: rewritten in place once checked and before it is acted on
//!   (`dupes --act`): its last byte changed, its size and modification time put back, as
//!   `touch -r` or `exiftool -P` leave an edited photo (`NAME.retouched` then says so);
//! - `seekless-fault-lateedit…`: the same, once read by the check and before the check
//!   looks at it again (`dupes --act`);
//! - `seekless-fault-relink…`: its old folder moved aside (to `FOLDER.was`) and a link to a
//!   new folder `FOLDER.elsewhere` put in its place, once `dupes --undo` has checked the
//!   way back and before it puts the file back there;
//! - `seekless-fault-abort…`: the process aborts (as under `kill -9`: nothing is cleaned
//!   up) in the middle of replacing it (`copy`: a file in the way of this directory, once
//!   the directory took its name and before the file is removed);
//! - `seekless-fault-undoswap…`: another file renamed over it where it was moved, at the
//!   same moment (`dupes --undo`: only the confirmation after the move back can tell).

use std::path::Path;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// A file of this name makes the sweep that opens it panic.
pub const PANIC_ON_OPEN: &str = "seekless-test-sweep-panics-here";

static ARMED: AtomicBool = AtomicBool::new(cfg!(test));
static ARMED_BY_ENV: LazyLock<bool> =
    LazyLock::new(|| std::env::var_os("SEEKLESS_INJECT_FAULTS").is_some_and(|v| v == "1"));

/// Arms the fault points in this process (a unit test's).
pub fn arm() {
    ARMED.store(true, Ordering::Relaxed);
}

/// Whether the fault points act.
pub fn armed() -> bool {
    ARMED.load(Ordering::Relaxed) || *ARMED_BY_ENV
}

/// Where a sweep opens a file.
pub fn at_open(path: &Path) {
    if armed() && path.file_name().is_some_and(|n| n == PANIC_ON_OPEN) {
        panic!("injected sweep fault at {}", path.display());
    }
}

/// Where a job has started on a file (see the module's manual).
pub fn at_start(path: &Path) {
    if !armed() {
        return;
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let open = || std::fs::OpenOptions::new().write(true).open(path);
    if name.starts_with("seekless-fault-shrink")
        && let Ok(f) = open()
        && let Ok(m) = f.metadata()
    {
        let _ = f.set_len(m.len() / 2);
    } else if name.starts_with("seekless-fault-grow")
        && let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(path)
    {
        let _ = std::io::Write::write_all(&mut f, &[b'+'; 1000]);
    } else if name.starts_with("seekless-fault-swap") {
        // Another file put in its place under its name (a new inode, other bytes).
        let mut other = path.as_os_str().to_owned();
        other.push(".swapped-in");
        let other = std::path::PathBuf::from(other);
        if std::fs::write(&other, b"another file, put here by the test").is_ok() {
            // A test's own file, renamed over to stand for someone else replacing it;
            // never a release build.
            #[allow(clippy::disallowed_methods)]
            if std::fs::rename(&other, path).is_ok() {
                let _ = std::fs::write(marked(path, ".swapped"), b"");
            }
        }
    } else if name.starts_with("seekless-fault-stall") {
        std::thread::sleep(std::time::Duration::from_secs(120));
    } else if name.starts_with("seekless-fault-pause") {
        let mut go = path.as_os_str().to_owned();
        go.push(".go");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !Path::new(&go).exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Once a run has planned and before it reads.
pub fn before_read(path: &Path) {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    if armed() && name.starts_with("seekless-fault-vanish") {
        // A test's own file, removed to stand for someone else removing it; never a
        // release build.
        #[allow(clippy::disallowed_methods)]
        let _ = std::fs::remove_file(path);
    }
}

/// Once a file (or a keeper) has been checked and before it is acted on.
pub fn after_check(path: &Path) {
    retouch_if_named(path, "seekless-fault-retouch");
}

/// In the middle of replacing `path` (see the module's manual).
pub fn mid_replace(path: &Path) {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    if armed() && name.starts_with("seekless-fault-abort") {
        std::process::abort();
    }
}

/// Once `dupes --undo` has checked the file at `at` and the way back to `from`, and before
/// it moves the file there.
pub fn before_put_back(at: &Path, from: &Path) {
    let name = from.file_name().unwrap_or_default().to_string_lossy();
    let Some(dir) = from.parent() else {
        return;
    };
    if armed() && name.starts_with("seekless-fault-undoswap") {
        let other = marked(at, ".swapped-in");
        if std::fs::write(&other, b"another file, put here by the test").is_ok() {
            // A test's own file, renamed over to stand for someone else replacing it.
            #[allow(clippy::disallowed_methods)]
            let _ = std::fs::rename(&other, at);
        }
    }
    if armed() && name.starts_with("seekless-fault-relink") {
        let (was, elsewhere) = (marked(dir, ".was"), marked(dir, ".elsewhere"));
        // A test's own folder, moved aside to stand for someone else replacing it; never
        // a release build.
        #[allow(clippy::disallowed_methods)]
        let moved = std::fs::rename(dir, &was);
        if moved.is_ok() && std::fs::create_dir(&elsewhere).is_ok() {
            #[cfg(unix)]
            let _ = std::os::unix::fs::symlink(&elsewhere, dir);
        }
    }
}

/// Once a file has been read for a check, before the check looks at it again.
pub fn after_read(path: &Path) {
    retouch_if_named(path, "seekless-fault-lateedit");
}

/// Rewrites `path` in place (its last byte changed, its size and mtime put back) if its
/// name starts with `prefix`, once: a keeper of several copies is checked once for each.
fn retouch_if_named(path: &Path, prefix: &str) {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    if !(armed() && name.starts_with(prefix)) || marked(path, ".retouched").exists() {
        return;
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    let Ok(mut bytes) = std::fs::read(path) else {
        return;
    };
    if let Some(last) = bytes.last_mut() {
        *last ^= 0xff;
    }
    if let Ok(f) = std::fs::OpenOptions::new().write(true).open(path)
        && std::io::Write::write_all(&mut &f, &bytes).is_ok()
        && let Ok(mtime) = meta.modified()
    {
        let _ = f.set_modified(mtime);
        // Said beside it, for a test that must know the edit happened.
        let _ = std::fs::write(marked(path, ".retouched"), b"");
    }
}

/// `path` with `suffix` appended to its name.
fn marked(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    std::path::PathBuf::from(p)
}

/// Runs `f` on a thread of its own and returns its panic's message; fails if it returns
/// or has not panicked within a minute (a hang).
pub fn panic_message(f: impl FnOnce() + Send + 'static) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r.err().map(|p| crate::sync::panic_text(&*p)));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(Some(message)) => message,
        Ok(None) => panic!("returned instead of panicking"),
        Err(_) => panic!("hung instead of panicking"),
    }
}

/// Whether a test that cannot run here for want of `need` (`root`, `tool:exiftool`,
/// `holes`, …) may skip: `SEEKLESS_ALLOW_SKIP` is a comma list of needs, their kinds (the
/// part before `:`), or `all`; `SEEKLESS_REQUIRE_ROOT_TESTS=1` (CI) allows none. The one
/// rule of the unit tests and the integration tests (`tests/it/common/skip.rs`).
pub fn skip_allowed(need: &str) -> bool {
    if std::env::var_os("SEEKLESS_REQUIRE_ROOT_TESTS").is_some_and(|v| v == "1") {
        return false;
    }
    let Ok(list) = std::env::var("SEEKLESS_ALLOW_SKIP") else {
        return false;
    };
    let kind = need.split(':').next().unwrap_or(need);
    list.split(',')
        .map(str::trim)
        .any(|entry| entry == "all" || entry == need || entry == kind)
}

/// A unit test that cannot run here, for want of `need`: fails unless [`skip_allowed`],
/// and says so on stderr when it is.
pub fn skip(need: &str, why: &str) {
    assert!(
        skip_allowed(need),
        "cannot run here ({why}); SEEKLESS_ALLOW_SKIP={need} lets it skip"
    );
    eprintln!("SKIP ({need}): {why}");
}
