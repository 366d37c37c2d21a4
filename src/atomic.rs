//! Files that appear under their name only when complete: written under a temporary name
//! beside it, `.NAME.seekless-tmp-PID-N`, and renamed into place. Archives, manifests,
//! seek maps and every file `copy` writes go through here, so an interrupted run never
//! leaves a partial file under a final name, and its temporaries are recognisable
//! ([`is_temp`]) by whoever comes next.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::path_bytes::path_to_bytes;

/// What marks a temporary, between NAME and PID-N.
const TEMP_MARK: &str = ".seekless-tmp-";

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Longest file name most filesystems take (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// A file being written under a temporary name beside `path`; [`commit`](Self::commit)
/// renames it into place. Dropped without a commit (an error, a panic), it is removed.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    temp: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Creates the temporary file beside `path` (so a place that cannot be written fails
    /// at once), with the usual permissions for a new file.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        Self::create_with(path, None)
    }

    /// [`create`](Self::create), readable by the owner alone until given other
    /// permissions (a copy gets its source's mode before it is put in place).
    pub(crate) fn create_private(path: &Path) -> io::Result<AtomicFile> {
        Self::create_with(path, Some(0o600))
    }

    fn create_with(path: &Path, mode: Option<u32>) -> io::Result<AtomicFile> {
        if path.file_name().is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a file name",
            ));
        }
        let temp = temp_beside(path);
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        if let Some(mode) = mode {
            std::os::unix::fs::OpenOptionsExt::mode(&mut opts, mode);
        }
        #[cfg(not(unix))]
        let _ = mode;
        let file = crate::os::with_path(&temp, |t| opts.open(t))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            temp,
            file: Some(file),
        })
    }

    /// The final name.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary name.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// The temporary file, to write to (`&File` is `Write`).
    pub fn file(&self) -> &File {
        self.file.as_ref().expect("open until committed")
    }

    /// Puts the file in place durably: its data is flushed to the disk (`fsync`), it is
    /// renamed over whatever is there, and the directory is flushed so the new name
    /// survives a power cut too. Without the first flush a crash after the rename can
    /// leave the name with the right size and zeros inside (XFS; ext4 without
    /// `auto_da_alloc`).
    pub fn commit(mut self) -> io::Result<()> {
        if let Some(f) = &self.file {
            f.sync_all()?;
        }
        drop(self.file.take());
        crate::os::with_paths(&self.temp, &self.path, |a, b| fs::rename(a, b))?;
        self.temp = PathBuf::new();
        crate::os::sync_directory(parent_of(&self.path))
    }

    /// Closes the temporary (it stays under its temporary name until committed or
    /// dropped); [`file`](Self::file) may not be called after this.
    pub(crate) fn close(&mut self) {
        drop(self.file.take());
    }

    /// Renames the file into place without flushing anything: for a caller that has made
    /// the data durable itself (`copy` flushes a batch of temporaries at once, then renames
    /// them, and flushes the filesystem again at the end).
    pub(crate) fn commit_unsynced(mut self) -> io::Result<()> {
        drop(self.file.take());
        crate::os::with_paths(&self.temp, &self.path, |a, b| fs::rename(a, b))?;
        self.temp = PathBuf::new();
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            let _ = crate::os::with_path(&self.temp, |p| fs::remove_file(p));
        }
    }
}

/// The directory `path` is in (`.` for a bare name).
pub(crate) fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A fresh temporary name beside `dest`: `.NAME.seekless-tmp-PID-N`, NAME cut short where
/// the whole would be longer than a file name may be.
pub(crate) fn temp_beside(dest: &Path) -> PathBuf {
    let name = dest.file_name().unwrap_or_default();
    let suffix = format!(
        "{TEMP_MARK}{}-{}",
        std::process::id(),
        NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
    );
    let mut temp = OsString::from(".");
    temp.push(shortened(name, NAME_MAX - 1 - suffix.len()));
    temp.push(suffix);
    dest.with_file_name(temp)
}

/// `name`, cut to at most `max` bytes (Unix: bytes; elsewhere names are left whole).
fn shortened(name: &OsStr, max: usize) -> OsString {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = name.as_bytes();
        OsStr::from_bytes(&bytes[..bytes.len().min(max)]).to_os_string()
    }
    #[cfg(not(unix))]
    {
        let _ = max;
        name.to_os_string()
    }
}

/// Whether `name` is one of our temporaries (from any run).
pub(crate) fn is_temp(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    let Some(at) = name.rfind(TEMP_MARK) else {
        return false;
    };
    let tail = &name[at + TEMP_MARK.len()..];
    name.starts_with('.')
        && !tail.is_empty()
        && tail
            .split('-')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The process that made `name`, if `name` is a temporary [`temp_beside`] made for
/// `dest`: the PID of `.NAME.seekless-tmp-PID-N`, NAME being `dest`'s name (or the start
/// of it, cut where the whole name reached the limit).
pub(crate) fn temp_owner(dest: &Path, name: &OsStr) -> Option<u32> {
    if !is_temp(name) {
        return None;
    }
    let dest_name = path_to_bytes(Path::new(dest.file_name()?)).into_owned();
    let bytes = path_to_bytes(Path::new(name)).into_owned();
    let mark = TEMP_MARK.as_bytes();
    let at = bytes.windows(mark.len()).rposition(|w| w == mark)?;
    let stem = &bytes[1..at];
    let whole = stem == &dest_name[..];
    let cut = bytes.len() == NAME_MAX && dest_name.starts_with(stem);
    if !(whole || cut) {
        return None;
    }
    let tail = std::str::from_utf8(&bytes[at + mark.len()..]).ok()?;
    let (pid, _n) = tail.split_once('-')?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_are_recognised_by_name() {
        let t = temp_beside(Path::new("/x/photo.jpg"));
        assert!(is_temp(t.file_name().unwrap()), "{t:?}");
        for not in [
            "photo.jpg",
            ".photo.jpg",
            ".a.seekless-tmp-",
            ".a.seekless-tmp-x1",
            "a.seekless-tmp-1-2",
        ] {
            assert!(!is_temp(not.as_ref()), "{not}");
        }
        assert!(is_temp(".a.seekless-tmp-12".as_ref()));
        let long = "x".repeat(255);
        let t = temp_beside(&Path::new("/d").join(&long));
        let name = t.file_name().unwrap();
        assert!(is_temp(name), "{name:?}");
        // Unix names are bytes and are cut to fit; elsewhere they are left whole.
        #[cfg(unix)]
        assert!(name.len() <= 255, "{name:?}");
    }

    #[test]
    fn a_temporary_names_the_process_that_made_it_and_only_for_its_own_file() {
        let me = std::process::id();
        let dest = Path::new("/x/backup.tar");
        let t = temp_beside(dest);
        assert_eq!(temp_owner(dest, t.file_name().unwrap()), Some(me));
        assert_eq!(
            temp_owner(dest, ".backup.tar.seekless-tmp-4242-7".as_ref()),
            Some(4242)
        );
        for not in [
            ".backup.tar.seekless-tmp-4242",
            ".other.tar.seekless-tmp-4242-7",
            ".backup.ta.seekless-tmp-4242-7",
            ".backup.tar.x.seekless-tmp-4242-7",
            "backup.tar.seekless-tmp-4242-7",
            ".backup.tar.seekless-tmp-42a-7",
        ] {
            assert_eq!(temp_owner(dest, not.as_ref()), None, "{not}");
        }
        // A name cut to fit is still recognised, as its own file's only.
        let long = Path::new("/d").join("y".repeat(250));
        let t = temp_beside(&long);
        assert_eq!(temp_owner(&long, t.file_name().unwrap()), Some(me));
        let other = Path::new("/d").join("z".repeat(250));
        assert_eq!(temp_owner(&other, t.file_name().unwrap()), None);
    }

    #[test]
    fn a_file_appears_under_its_name_only_when_committed() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("out");
        let f = AtomicFile::create(&path).unwrap();
        std::io::Write::write_all(&mut f.file(), b"data").unwrap();
        assert!(!path.exists() && f.temp_path().exists());
        let temp = f.temp_path().to_path_buf();
        f.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"data");
        assert!(!temp.exists());
        let dropped = AtomicFile::create(&t.path().join("never")).unwrap();
        let temp = dropped.temp_path().to_path_buf();
        drop(dropped);
        assert!(!temp.exists() && !t.path().join("never").exists());
    }
}
