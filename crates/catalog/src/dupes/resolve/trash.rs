//! The trash, as the freedesktop.org Trash specification (1.0) has it: a file goes to the
//! home trash (`$XDG_DATA_HOME/Trash`) when it is on the home's filesystem, else to the
//! trash at the top of its own filesystem (`$topdir/.Trash/$uid` when `$topdir/.Trash`
//! is a sticky directory and not a link, else `$topdir/.Trash-$uid`); never across
//! filesystems. Its `.trashinfo` (original path, deletion date) is written, and on the
//! disk, before the file is renamed into `files/`: file managers and `trash-cli` list and
//! restore it.
//!
//! <https://specifications.freedesktop.org/trash-spec/1.0/>

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use seekless_jobs::destructive::acts::PendingInfo;
use seekless_sys::describe_io;

/// The trash a file goes to.
pub(super) struct Place {
    /// The trash directory (holding `files/` and `info/`).
    dir: PathBuf,
    /// The top of the file's filesystem, when the trash is there: `Path=` is then
    /// relative to it.
    topdir: Option<PathBuf>,
    /// Names this run chose here and has not written yet (two files of one name in a
    /// batch get two).
    taken: HashSet<OsString>,
}

/// The trash for the file at `path` (absolute), on device `dev`.
pub(super) fn place_for(path: &Path, dev: u64) -> Result<Place, String> {
    let uid = uid()?;
    if let Some(home) = home_trash()
        && device_of_nearest(&home) == Some(dev)
    {
        make_dirs(&home).map_err(|e| format!("the home trash {}: {e}", home.display()))?;
        return Ok(Place {
            dir: home,
            topdir: None,
            taken: HashSet::new(),
        });
    }
    let topdir = topdir(path, dev)?;
    let shared = topdir.join(".Trash");
    if let Ok(m) = fs::symlink_metadata(&shared)
        && m.is_dir()
        && is_sticky(&m)
    {
        let dir = shared.join(uid.to_string());
        if make_dirs(&dir).is_ok() {
            return Ok(Place {
                dir,
                topdir: Some(topdir),
                taken: HashSet::new(),
            });
        }
    }
    let dir = topdir.join(format!(".Trash-{uid}"));
    make_dirs(&dir).map_err(|e| format!("no trash on its filesystem ({}: {e})", dir.display()))?;
    Ok(Place {
        dir,
        topdir: Some(topdir),
        taken: HashSet::new(),
    })
}

impl Place {
    /// Chooses the `.trashinfo` of `path` under a name free in both `info/` and `files/`
    /// (`a.jpg`, else `a.2.jpg`, `a.3.jpg`, …) and not chosen before in this run; returns
    /// it, not yet written, and the path the file is to be renamed to. The caller
    /// journals it, writes it, and flushes it before the rename (`act_batch`: its
    /// filesystem once per batch).
    pub(super) fn reserve(&mut self, path: &Path) -> Result<(PendingInfo, PathBuf), String> {
        let name = path.file_name().ok_or_else(|| "no file name".to_string())?;
        let shown = match &self.topdir {
            Some(top) => path.strip_prefix(top).unwrap_or(path),
            None => path,
        };
        let stem = Path::new(name).file_stem().unwrap_or(name).to_owned();
        let ext = Path::new(name).extension().map(|e| e.to_owned());
        for k in 1..10_000u32 {
            let mut candidate = stem.clone();
            if k > 1 {
                candidate.push(format!(".{k}"));
            }
            if let Some(ext) = &ext {
                candidate.push(".");
                candidate.push(ext);
            }
            let files = self.dir.join("files").join(&candidate);
            let mut info_name = candidate.clone();
            info_name.push(".trashinfo");
            let info = self.dir.join("info").join(info_name);
            if self.taken.contains(&candidate)
                || fs::symlink_metadata(&files).is_ok()
                || fs::symlink_metadata(&info).is_ok()
            {
                continue;
            }
            self.taken.insert(candidate);
            return Ok((PendingInfo::new(info, shown), files));
        }
        Err(format!("no free name in the trash {}", self.dir.display()))
    }
}

/// The home trash: `$XDG_DATA_HOME/Trash`, else `$HOME/.local/share/Trash`.
fn home_trash() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(data.join("Trash"))
}

/// The device of `path`, or of its nearest existing ancestor.
fn device_of_nearest(path: &Path) -> Option<u64> {
    path.ancestors().find_map(device_of)
}

/// The top directory of the filesystem of `path` (device `dev`): its highest ancestor on
/// that device.
fn topdir(path: &Path, dev: u64) -> Result<PathBuf, String> {
    let mut top = None;
    for a in path.ancestors().skip(1) {
        match device_of(a) {
            Some(d) if d == dev => top = Some(a.to_path_buf()),
            _ => break,
        }
    }
    top.ok_or_else(|| "cannot find the top of its filesystem".into())
}

fn device_of(path: &Path) -> Option<u64> {
    seekless_sys::metadata(path)
        .ok()
        .and_then(|m| seekless_sys::file_id(path, None, &m).ok())
        .map(|id| id.dev)
}

/// Makes the trash directory `dir` with `files/` and `info/` (mode 0700), each a directory
/// of ours, not a link.
fn make_dirs(dir: &Path) -> Result<(), String> {
    for d in [dir.to_path_buf(), dir.join("files"), dir.join("info")] {
        match fs::symlink_metadata(&d) {
            Ok(m) if m.is_dir() && owned_by_us(&m) => continue,
            Ok(_) => return Err(format!("{} is not a directory of ours", d.display())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {}", d.display(), describe_io(&e))),
        }
        let mut b = fs::DirBuilder::new();
        b.recursive(true);
        seekless_sys::set_dir_mode(&mut b, 0o700);
        b.create(&d)
            .map_err(|e| format!("{}: {}", d.display(), describe_io(&e)))?;
    }
    Ok(())
}

/// This process's user id, which names its trash (`.Trash-$uid`): there is none where
/// files have no owners.
fn uid() -> Result<u32, String> {
    seekless_sys::process_uid()
        .ok_or_else(|| "the freedesktop.org trash is for Linux and other Unix systems".into())
}

/// Whether this process's user owns the file of `m` (never where files have no owners).
fn owned_by_us(m: &fs::Metadata) -> bool {
    uid().is_ok_and(|uid| seekless_sys::attrs(m).uid == u64::from(uid))
}

/// Whether the sticky bit is set (never where there are no such bits).
fn is_sticky(m: &fs::Metadata) -> bool {
    seekless_sys::attrs(m).mode & 0o1000 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_files_of_one_name_in_a_run_get_two_names_and_nothing_is_written_before_asked() {
        let t = tempfile::tempdir().unwrap();
        let mut place = Place {
            dir: t.path().to_path_buf(),
            topdir: None,
            taken: HashSet::new(),
        };
        fs::create_dir_all(t.path().join("info")).unwrap();
        fs::create_dir_all(t.path().join("files")).unwrap();
        let (a, a_files) = place.reserve(Path::new("/x/a.jpg")).unwrap();
        let (b, b_files) = place.reserve(Path::new("/y/a.jpg")).unwrap();
        assert_ne!(a.path(), b.path());
        assert_ne!(a_files, b_files);
        assert!(
            !a.path().exists() && !b.path().exists(),
            "chosen, not written"
        );
        let written = a.write().unwrap();
        assert!(
            fs::read_to_string(written.path())
                .unwrap()
                .contains("Path=/x/a.jpg")
        );
        // Its file did not go to the trash: our own info goes with it.
        let info = written.path().to_path_buf();
        drop(written);
        assert!(!info.exists());
        // A name taken meanwhile is not written over.
        fs::write(b.path(), b"someone else's").unwrap();
        assert!(b.write().is_err());
    }
}
