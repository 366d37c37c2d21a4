//! Files that appear under their name only when complete: written under a temporary name
//! beside it, `.NAME.seekless-tmp-RUN-N`, and renamed into place. This is the one
//! description of that name: NAME is the final name (cut short so that the whole fits
//! `NAME_MAX`), RUN 16 lowercase hex digits (the process id, then 32 random bits: two
//! processes never share one), N a decimal counter of this process. A name of that form
//! exactly is a temporary ([`is_temp`]); anything else (`.notes.seekless-tmp-2024-12`) is
//! a user's. Archives, manifests, seek maps, contact sheets and
//! every file `copy` writes go through here, so an interrupted run never leaves a partial
//! file under a final name, and its temporaries are recognisable ([`is_temp`]) by
//! whoever comes next. Renaming and removing are the business of
//! [`destructive`](crate::destructive), which also proves a temporary dead before anyone
//! removes it.
//!
//! An output is written the way `cp` and GNU tar write it: through a symbolic link (the
//! link's target is replaced, the link stays), straight into a device, a FIFO or this
//! process's own standard output (`/dev/stdout`: never replaced), and an existing file
//! that this process could not have opened for writing is refused.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::destructive::{Durable, OwnTemp, live_writer, remove_dead_temps};
use seekless_core::os;
use seekless_core::path_to_bytes;

/// What marks a temporary, between NAME and RUN-N.
const TEMP_MARK: &str = ".seekless-tmp-";

/// Hex digits of RUN.
const RUN_DIGITS: usize = 16;

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Longest file name most filesystems take (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// Symbolic links followed to an output before giving up (as the kernel's `ELOOP`).
const MAX_LINKS: usize = 40;

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

/// An output a run writes, as its walk may meet it ([`AtomicFile::identity`]): a run
/// never reads its own output as an input (an archive is not stored in itself, a copy's
/// manifest is not copied).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputIdentity {
    /// The files that are the output: the one being written and the one it replaces.
    pub ids: Vec<seekless_core::FileId>,
    /// The output's file name, to name it by where the walk meets it under its temporary
    /// name.
    pub name: Option<OsString>,
}

impl OutputIdentity {
    /// Whether the file `id` is the output.
    pub fn is_output(&self, id: &seekless_core::FileId) -> bool {
        self.ids.contains(id)
    }

    /// The name to report the output by where the walk met it at `path`: the output's
    /// own name where `path` is its temporary, else `path`.
    pub fn shown_as(&self, path: &Path) -> PathBuf {
        match (&self.name, path.file_name()) {
            (Some(output), Some(name)) if is_temp(name) => path.with_file_name(output),
            _ => path.to_path_buf(),
        }
    }
}

/// A file being written under a temporary name beside its final name;
/// [`commit`](Self::commit) renames it into place. Dropped without a commit (an error, a
/// panic), the temporary is removed. Written into a device, a FIFO or standard output,
/// there is no temporary: the bytes go straight there.
#[derive(Debug)]
pub struct AtomicFile {
    /// The name asked for.
    path: PathBuf,
    target: Target,
    /// Temporaries of ended runs writing the same file, removed.
    removed: Vec<PathBuf>,
}

#[derive(Debug)]
enum Target {
    Replace { temp: OwnTemp, file: Option<File> },
    Into { file: File },
}

impl AtomicFile {
    /// Starts writing the output `path`, as `cp` or GNU tar would write it: through a
    /// symbolic link to its target; straight into a device, a FIFO or standard output; an
    /// existing file only if this process could open it for writing (else `Permission
    /// denied`), keeping its permission bits (and owner, where allowed; the temporary is
    /// private until it has them). Refuses while another seekless run is writing the same
    /// file (`WouldBlock`, naming it), and removes temporaries of runs that ended writing it.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let target = match resolve_output(path)? {
            Output::Into(file) => {
                return Ok(AtomicFile {
                    path: path.to_path_buf(),
                    target: Target::Into { file },
                    removed: Vec::new(),
                });
            }
            Output::File(target) => target,
        };
        let old = match os::metadata(&target) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        if old.is_some() {
            os::check_writable(&target)?;
        }
        let ours = |name: &OsStr| is_temp_of(&target, name);
        if let Some(holder) = live_writer(&target, ours) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{holder} is writing it now"),
            ));
        }
        let removed = remove_dead_temps(parent_of(&target), ours);
        let (temp, file) = OwnTemp::create_file_locked(&target, old.as_ref().map(|_| 0o600))?;
        if let Some(old) = &old {
            os::keep_owner_and_mode(&file, old)?;
        }
        Ok(AtomicFile {
            path: path.to_path_buf(),
            target: Target::Replace {
                temp,
                file: Some(file),
            },
            removed,
        })
    }

    /// A temporary beside `path` itself (no links followed, nothing checked), readable by
    /// the owner alone until given other permissions: for `copy`, which names every
    /// destination itself and gives each copy its source's mode before it is put in place.
    pub(crate) fn create_private(path: &Path) -> io::Result<AtomicFile> {
        let (temp, file) = OwnTemp::create_file(path, Some(0o600))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            target: Target::Replace {
                temp,
                file: Some(file),
            },
            removed: Vec::new(),
        })
    }

    /// The name asked for.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the file goes: the name asked for, or the target of the link it names.
    pub fn final_path(&self) -> &Path {
        match &self.target {
            Target::Replace { temp, .. } => temp.dest(),
            Target::Into { .. } => &self.path,
        }
    }

    /// The temporary name, if there is one (not for a device, FIFO or standard output).
    pub fn temp_path(&self) -> Option<&Path> {
        match &self.target {
            Target::Replace { temp, .. } => Some(temp.path()),
            Target::Into { .. } => None,
        }
    }

    /// Where the bytes are written now: the temporary, or the name asked for.
    pub(crate) fn temp(&self) -> &Path {
        self.temp_path().unwrap_or(&self.path)
    }

    /// Temporaries of ended runs writing the same file, removed by [`create`](Self::create).
    pub fn removed(&self) -> &[PathBuf] {
        &self.removed
    }

    /// The file to write to (`&File` is `Write`).
    pub fn file(&self) -> &File {
        match &self.target {
            Target::Replace { file, .. } => file.as_ref().expect("open until committed"),
            Target::Into { file } => file,
        }
    }

    /// What a walk may meet of this output: the file being written (its temporary, or
    /// the device or FIFO written into), the file it replaces, and its name. Identities
    /// are taken as the walk takes them ([`os::file_id`]: device and inode; on Windows
    /// volume serial number and file index); a file that cannot be looked at is not among
    /// them.
    pub fn identity(&self) -> OutputIdentity {
        let written = self.file().metadata().and_then(|m| {
            let path = self.temp_path().unwrap_or(self.path());
            os::file_id(path, Some(self.file()), &m)
        });
        let replaced =
            os::metadata(self.final_path()).and_then(|m| os::file_id(self.final_path(), None, &m));
        let mut ids = Vec::new();
        for id in [written, replaced].into_iter().flatten() {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        OutputIdentity {
            ids,
            name: self.final_path().file_name().map(ToOwned::to_owned),
        }
    }

    /// Puts the file in place durably: its data is flushed to the disk (`fsync`), it is
    /// renamed over whatever is there, and the directory is flushed so the new name
    /// survives a power cut too. Without the first flush a crash after the rename can
    /// leave the name with the right size and zeros inside (XFS; ext4 without
    /// `auto_da_alloc`). Written into a device or standard output, a regular file behind
    /// it is flushed; nothing else is to do.
    pub fn commit(self) -> io::Result<()> {
        match self.target {
            Target::Replace { temp, file } => {
                let file = file.expect("open until committed");
                let durable = Durable::synced(&file)?;
                drop(file);
                let dest = temp.dest().to_path_buf();
                temp.put_in_place(durable)?;
                os::sync_directory(parent_of(&dest))
            }
            Target::Into { file } => match file.metadata() {
                Ok(m) if m.is_file() => file.sync_all(),
                _ => Ok(()),
            },
        }
    }

    /// Closes the temporary (it stays under its temporary name until committed or
    /// dropped); [`file`](Self::file) may not be called after this.
    pub(crate) fn close(&mut self) {
        if let Target::Replace { file, .. } = &mut self.target {
            drop(file.take());
        }
    }

    /// Renames the file into place, its data made durable by the caller (`copy` flushes a
    /// batch of temporaries at once, then renames them, and flushes the filesystem again at
    /// the end), without flushing the directory.
    pub(crate) fn commit_with(self, durable: Durable) -> io::Result<()> {
        match self.target {
            Target::Replace { temp, file } => {
                drop(file);
                temp.put_in_place(durable)
            }
            Target::Into { .. } => Ok(()),
        }
    }

    /// The temporary itself, for a caller that puts it in place another way
    /// ([`OwnTemp::put_in_place_over_dir`]); closed.
    pub(crate) fn into_temp(self) -> Option<OwnTemp> {
        match self.target {
            Target::Replace { temp, .. } => Some(temp),
            Target::Into { .. } => None,
        }
    }
}

/// Where an output's bytes go.
enum Output {
    /// Replaced through a temporary beside this regular file (which may not exist yet).
    File(PathBuf),
    /// Written straight into what is open here.
    Into(File),
}

/// Follows `path` as `open(2)` would, to the file that is written: a link to its target
/// (a dangling one to the file it names, which is created); a device, a FIFO, a socket or
/// a descriptor's name (`/dev/stdout`, `/proc/self/fd/N`) to what is open there.
fn resolve_output(path: &Path) -> io::Result<Output> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if is_descriptor_name(&p) {
            return open_into(path).map(Output::Into);
        }
        let meta = match os::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Output::File(p)),
            Err(e) => return Err(e),
        };
        if meta.file_type().is_symlink() {
            let to = os::read_link(&p)?;
            p = if to.is_absolute() {
                to
            } else {
                parent_of(&p).join(to)
            };
            continue;
        }
        if meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "Is a directory",
            ));
        }
        if meta.is_file() {
            if p.file_name().is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a file name",
                ));
            }
            return Ok(Output::File(p));
        }
        return open_into(path).map(Output::Into);
    }
    Err(io::Error::other("Too many levels of symbolic links"))
}

/// The file `path` names once every symbolic link on the way is followed by name (a
/// dangling link: the file it names, which may not exist); `path` itself if it is no link.
pub(crate) fn through_links(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match os::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = os::read_link(&p)?;
                p = if to.is_absolute() {
                    to
                } else {
                    parent_of(&p).join(to)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other("Too many levels of symbolic links"))
}

/// Whether `path` names an open descriptor (`/proc/PID/fd/N`, `/dev/fd/N`): written into,
/// as the descriptor's own file, never replaced.
fn is_descriptor_name(path: &Path) -> bool {
    let bytes = path_to_bytes(path);
    cfg!(unix) && (bytes.starts_with(b"/proc/") || bytes.starts_with(b"/dev/fd/")) && {
        let parent = path.parent().and_then(Path::file_name);
        parent == Some(OsStr::new("fd"))
    }
}

/// Opens what `path` names to write into it, without truncating: this process's own
/// standard output (by any name) as the descriptor it has, so its offset and append mode
/// hold.
fn open_into(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    if let Some(stdout) = os::stdout_if_same(path) {
        return Ok(stdout);
    }
    OpenOptions::new().write(true).open(path)
}

/// The directory `path` is in (`.` for a bare name).
pub(crate) fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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

    #[test]
    fn a_file_appears_under_its_name_only_when_committed() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("out");
        let f = AtomicFile::create(&path).unwrap();
        std::io::Write::write_all(&mut f.file(), b"data").unwrap();
        let temp = f.temp_path().unwrap().to_path_buf();
        assert!(!path.exists() && temp.exists());
        f.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"data");
        assert!(!temp.exists());
        let dropped = AtomicFile::create(&t.path().join("never")).unwrap();
        let temp = dropped.temp_path().unwrap().to_path_buf();
        drop(dropped);
        assert!(!temp.exists() && !t.path().join("never").exists());
    }

    #[cfg(unix)]
    #[test]
    fn an_output_named_through_a_link_replaces_the_target_and_keeps_the_link() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real.tar");
        fs::write(&real, b"old").unwrap();
        let link = t.path().join("link.tar");
        std::os::unix::fs::symlink("real.tar", &link).unwrap();
        let f = AtomicFile::create(&link).unwrap();
        assert_eq!(f.final_path(), real);
        std::io::Write::write_all(&mut f.file(), b"new").unwrap();
        f.commit().unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&real).unwrap(), b"new");
        // A dangling link: its target is made.
        let dangling = t.path().join("dangling");
        std::os::unix::fs::symlink("made.tar", &dangling).unwrap();
        let f = AtomicFile::create(&dangling).unwrap();
        f.commit().unwrap();
        assert!(t.path().join("made.tar").is_file());
    }

    #[cfg(unix)]
    #[test]
    fn a_second_writer_of_the_same_output_is_refused_while_the_first_runs() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("a.tar");
        let first = AtomicFile::create(&path).unwrap();
        let second = AtomicFile::create(&path).unwrap_err();
        assert_eq!(second.kind(), io::ErrorKind::WouldBlock, "{second}");
        first.commit().unwrap();
        AtomicFile::create(&path).unwrap().commit().unwrap();
    }
}
