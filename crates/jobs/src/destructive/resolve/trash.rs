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
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

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

/// A `.trashinfo` chosen (its name free) and not yet written: it is named in the act's
/// journalled intent first, so that a run killed at any point leaves no `.trashinfo` its
/// journal does not name.
pub(super) struct Pending {
    path: PathBuf,
    text: String,
}

impl Pending {
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes it, under its name only if that is still free.
    pub(super) fn write(self) -> Result<Info, String> {
        match File::options()
            .write(true)
            .create_new(true)
            .open(&self.path)
        {
            Ok(mut f) => {
                let info = Info {
                    path: self.path,
                    kept: false,
                };
                f.write_all(self.text.as_bytes())
                    .map_err(|e| format!("{}: {}", info.path.display(), describe_io(&e)))?;
                Ok(info)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(format!(
                "{}: taken meanwhile by another program: not put in the trash",
                self.path.display()
            )),
            Err(e) => Err(format!("{}: {}", self.path.display(), describe_io(&e))),
        }
    }
}

/// A `.trashinfo` this run wrote: removed when dropped, unless [`kept`](Info::keep).
pub(super) struct Info {
    path: PathBuf,
    kept: bool,
}

impl Info {
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The file is in the trash: its info stays.
    pub(super) fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        if !self.kept {
            // Our own `.trashinfo`, just written, for a file that did not go to the trash.
            #[allow(clippy::disallowed_methods)]
            let _ = fs::remove_file(&self.path);
        }
    }
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
    pub(super) fn reserve(&mut self, path: &Path) -> Result<(Pending, PathBuf), String> {
        let name = path.file_name().ok_or_else(|| "no file name".to_string())?;
        let shown = match &self.topdir {
            Some(top) => path.strip_prefix(top).unwrap_or(path),
            None => path,
        };
        let text = format!(
            "[Trash Info]\nPath={}\nDeletionDate={}\n",
            encode(&seekless_sys::path_to_bytes(shown)),
            local_now()
        );
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
            return Ok((Pending { path: info, text }, files));
        }
        Err(format!("no free name in the trash {}", self.dir.display()))
    }
}

/// Removes the `.trashinfo` at `info` (a path a journal of this tool names) if it is the one
/// written for `from` (its file was put back, or never went), or empty: created and not
/// yet written when its run was killed (its text is one write).
pub(super) fn forget_info(info: &Path, from: &Path) {
    let Ok(text) = fs::read_to_string(info) else {
        return;
    };
    let ours = text.is_empty()
        || text.starts_with("[Trash Info]\n")
            && text.lines().any(|l| {
                l.strip_prefix("Path=").is_some_and(|p| {
                    let p = seekless_sys::path_from_bytes(&decode(p));
                    p == from || (p.is_relative() && from.ends_with(&p))
                })
            });
    if ours {
        // The info of a file this run's journal put in the trash and that is back.
        #[allow(clippy::disallowed_methods)]
        let _ = fs::remove_file(info);
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
    crate::destructive::identity(path).map(|(dev, _)| dev)
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

/// A path's bytes percent-encoded (RFC 2396: all but unreserved characters and `/`).
fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Now, in local time, as `DeletionDate` has it (`2026-12-05T14:03:09`).
fn local_now() -> String {
    seekless_sys::local_now().unwrap_or_else(|| String::from("1970-01-01T00:00:00"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_encoded_and_back() {
        let raw = b"/p/a b/\xffcaf\xc3\xa9%.jpg";
        let e = encode(raw);
        assert_eq!(e, "/p/a%20b/%FFcaf%C3%A9%25.jpg");
        assert_eq!(decode(&e), raw);
        assert_eq!(decode("%4"), b"%4");
    }

    #[test]
    fn an_info_goes_when_it_names_the_file_or_is_empty_and_stays_otherwise() {
        let t = tempfile::tempdir().unwrap();
        let from = Path::new("/p/a.jpg");
        let cases: [(&str, &[u8], bool); 4] = [
            (
                "ours",
                b"[Trash Info]\nPath=/p/a.jpg\nDeletionDate=2026-12-06T10:00:00\n",
                true,
            ),
            ("killed-as-written", b"", true),
            (
                "another-file",
                b"[Trash Info]\nPath=/p/b.jpg\nDeletionDate=2026-12-06T10:00:00\n",
                false,
            ),
            ("not-an-info", b"notes", false),
        ];
        for (name, text, goes) in cases {
            let info = t.path().join(name);
            fs::write(&info, text).unwrap();
            forget_info(&info, from);
            assert_eq!(!info.exists(), goes, "{name}");
        }
    }

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
        written.keep();
        // A name taken meanwhile is not written over.
        fs::write(b.path(), b"someone else's").unwrap();
        assert!(b.write().is_err());
    }
}
