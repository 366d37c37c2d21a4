//! Temporaries: the one module that names them, recognises them and judges whether the
//! run that made one is alive. Every file seekless writes appears under its name only when
//! complete (`atomic.rs`); until then it is a temporary beside it,
//! `.NAME.seekless-tmp-RUN-N`. This is the one description of that name: NAME is the final
//! name (cut short so that the whole fits `NAME_MAX`), RUN 16 lowercase hex digits (the
//! process id, then 32 random bits: two processes never share one), N a decimal counter of
//! this process. A name of that form exactly is a temporary ([`is_temp`]); anything else
//! (`.notes.seekless-tmp-2024-12`) is a user's. A temporary's file is locked (`flock`)
//! while the run that made it lives (the destructive owner makes and locks it, and is the
//! only one to remove one, after [`temp_state`] proves its run dead).

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use seekless_sys as os;
use seekless_sys::path_to_bytes;

/// What marks a temporary, between NAME and RUN-N.
const TEMP_MARK: &str = ".seekless-tmp-";

/// Hex digits of RUN.
const RUN_DIGITS: usize = 16;

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Longest file name most filesystems take (`NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// This process's RUN: its process id (8 hex digits) and 32 random bits (8 more), so that
/// two processes (in two PID namespaces, on two hosts sharing a disk) never share one. The
/// process id is a hint only, for the instant between a temporary's creation and its lock
/// ([`temp_pid`]).
fn run_id() -> u64 {
    static RUN: OnceLock<u64> = OnceLock::new();
    *RUN.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        (u64::from(std::process::id()) << 32) | (h.finish() & 0xffff_ffff)
    })
}

/// The process id in a temporary's RUN, if `name` is a temporary.
pub(crate) fn temp_pid(name: &OsStr) -> Option<u32> {
    let bytes = path_to_bytes(Path::new(name));
    let at = temp_mark_at(&bytes)?;
    let run = &bytes[at + TEMP_MARK.len()..][..8];
    u32::from_str_radix(std::str::from_utf8(run).ok()?, 16).ok()
}

/// A fresh temporary name beside `dest`: `.NAME.seekless-tmp-RUN-N`, NAME cut short where
/// the whole would be longer than a file name may be.
pub(crate) fn temp_beside(dest: &Path) -> PathBuf {
    let name = dest.file_name().unwrap_or_default();
    let suffix = format!(
        "{TEMP_MARK}{:0width$x}-{}",
        run_id(),
        NEXT_TEMP.fetch_add(1, Ordering::Relaxed),
        width = RUN_DIGITS
    );
    let mut temp = OsString::from(".");
    temp.push(os::name_cut_to(name, NAME_MAX - 1 - suffix.len()));
    temp.push(suffix);
    dest.with_file_name(temp)
}

/// Where TEMP_MARK starts in `name`, if `name` is `.NAME.seekless-tmp-RUN-N` exactly: RUN
/// sixteen lowercase hexadecimal digits, N decimal digits.
fn temp_mark_at(name: &[u8]) -> Option<usize> {
    let mark = TEMP_MARK.as_bytes();
    let at = name.windows(mark.len()).rposition(|w| w == mark)?;
    let tail = &name[at + mark.len()..];
    let (run, n) = (tail.get(..RUN_DIGITS)?, tail.get(RUN_DIGITS..)?);
    let hex = run
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    let counter = n.len() > 1 && n[0] == b'-' && n[1..].iter().all(u8::is_ascii_digit);
    (name.starts_with(b".") && at > 0 && hex && counter).then_some(at)
}

/// Whether `name` is a temporary of seekless (of any run).
pub(crate) fn is_temp(name: &OsStr) -> bool {
    temp_mark_at(&path_to_bytes(Path::new(name))).is_some()
}

/// Whether `name` is a temporary [`temp_beside`] made for `dest`: NAME is `dest`'s name,
/// or the start of it, cut where the whole name reached the limit.
pub(crate) fn is_temp_of(dest: &Path, name: &OsStr) -> bool {
    let Some(dest_name) = dest.file_name() else {
        return false;
    };
    let dest_name = path_to_bytes(Path::new(dest_name));
    let bytes = path_to_bytes(Path::new(name));
    let Some(at) = temp_mark_at(&bytes) else {
        return false;
    };
    let stem = &bytes[1..at];
    stem == &dest_name[..] || (bytes.len() == NAME_MAX && dest_name.starts_with(stem))
}

/// Whether `path` is named as a seekless temporary whose run may be alive (its lock is
/// held, or cannot be tried): another job's file, half made.
pub(crate) fn may_be_live_temp(path: &Path) -> bool {
    path.file_name().is_some_and(is_temp) && !matches!(temp_state(path), TempState::Dead(_))
}

/// What a temporary's lock says of it.
pub(crate) enum TempState {
    /// Its run has ended; we hold its lock now.
    Dead(File),
    /// Its run is alive.
    Alive,
    /// Not a regular file, or its lock cannot be tried.
    Unknown,
}

/// What `path`'s lock says: [`TempState`].
pub(crate) fn temp_state(path: &Path) -> TempState {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    os::set_no_follow(&mut opts);
    let Ok(file) = os::with_path(path, |p| opts.open(p)) else {
        return TempState::Unknown;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return TempState::Unknown;
    }
    match file.try_lock() {
        // Free: dead, unless it was made a moment ago by a process that still runs (it
        // may be between making the file and locking it: a FUSE create takes a while).
        Ok(()) if just_made_by_a_running_process(path, &file) => TempState::Alive,
        Ok(()) => TempState::Dead(file),
        Err(fs::TryLockError::WouldBlock) => TempState::Alive,
        Err(fs::TryLockError::Error(_)) => TempState::Unknown,
    }
}

/// How long after its creation an unlocked temporary whose process runs is still taken for
/// alive: far longer than making and locking a file takes.
const JUST_MADE: std::time::Duration = std::time::Duration::from_secs(10);

fn just_made_by_a_running_process(path: &Path, file: &File) -> bool {
    let young = file
        .metadata()
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().map_or(true, |age| age < JUST_MADE));
    let pid = path.file_name().and_then(temp_pid);
    young && pid.is_none_or(os::process_exists)
}

/// Who is writing `dest` under a temporary of its own right now, if anyone: another
/// seekless run (its process, where the system says).
pub(crate) fn live_writer(dest: &Path, which: impl Fn(&OsStr) -> bool) -> Option<String> {
    let dir = parent_of(dest);
    let entries = os::read_dir(dir).ok()?;
    entries.flatten().find_map(|entry| {
        let name = entry.file_name();
        if !is_temp(&name) || !which(&name) {
            return None;
        }
        let path = dir.join(&name);
        match temp_state(&path) {
            TempState::Alive => {
                Some(os::lock_holder(&path).unwrap_or_else(|| "another seekless run".to_string()))
            }
            _ => None,
        }
    })
}

/// The directory `path` is in (`.` for a bare name).
pub(crate) fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_are_recognised_by_their_exact_form_only() {
        let t = temp_beside(Path::new("/x/photo.jpg"));
        assert!(is_temp(t.file_name().unwrap()), "{t:?}");
        for not in [
            "photo.jpg",
            ".photo.jpg",
            ".a.seekless-tmp-",
            ".a.seekless-tmp-x1",
            "a.seekless-tmp-0123456789abcdef-2",
            // The old form, and a user's file that looks like it.
            ".a.seekless-tmp-12-3",
            ".notes.seekless-tmp-2024-12",
            ".a.seekless-tmp-0123456789ABCDEF-2",
            ".a.seekless-tmp-0123456789abcdef-",
            ".a.seekless-tmp-0123456789abcdef-2x",
            ".seekless-tmp-0123456789abcdef-2",
        ] {
            assert!(!is_temp(not.as_ref()), "{not}");
        }
        assert!(is_temp(".a.seekless-tmp-0123456789abcdef-2".as_ref()));
        let long = "x".repeat(255);
        let t = temp_beside(&Path::new("/d").join(&long));
        let name = t.file_name().unwrap();
        assert!(is_temp(name), "{name:?}");
        // Unix names are bytes and are cut to fit; elsewhere they are left whole.
        #[cfg(unix)]
        assert!(name.len() <= 255, "{name:?}");
    }

    #[test]
    fn a_temporary_names_the_process_that_made_it() {
        let t = temp_beside(Path::new("/x/a"));
        assert_eq!(temp_pid(t.file_name().unwrap()), Some(std::process::id()));
        assert_eq!(
            temp_pid(".a.seekless-tmp-000004d2abcdef01-3".as_ref()),
            Some(1234)
        );
        assert_eq!(temp_pid(".a.seekless-tmp-12-3".as_ref()), None);
    }

    #[test]
    fn a_temporary_belongs_to_its_own_file_only() {
        let dest = Path::new("/x/backup.tar");
        let t = temp_beside(dest);
        assert!(is_temp_of(dest, t.file_name().unwrap()));
        assert!(is_temp_of(
            dest,
            ".backup.tar.seekless-tmp-00000000000000ff-7".as_ref()
        ));
        for not in [
            ".other.tar.seekless-tmp-00000000000000ff-7",
            ".backup.ta.seekless-tmp-00000000000000ff-7",
            ".backup.tar.x.seekless-tmp-00000000000000ff-7",
            ".backup.tar.seekless-tmp-4242-7",
        ] {
            assert!(!is_temp_of(dest, not.as_ref()), "{not}");
        }
        // A name cut to fit is still recognised, as its own file's only.
        let long = Path::new("/d").join("y".repeat(250));
        let t = temp_beside(&long);
        assert!(is_temp_of(&long, t.file_name().unwrap()));
        let other = Path::new("/d").join("z".repeat(250));
        assert!(!is_temp_of(&other, t.file_name().unwrap()));
    }
}
