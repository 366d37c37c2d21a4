//! Files that appear under their name only when complete: written under a temporary name
//! beside it (`.NAME.seekless-tmp-RUN-N`: named, recognised and judged in `temp.rs`, its
//! one description) and renamed into place. Archives, manifests, seek maps, contact sheets
//! and every file `copy` writes go through here, so an interrupted run never leaves a
//! partial file under a final name, and its temporaries are recognisable by whoever comes
//! next. Renaming and removing are the business of [`destructive`](crate::destructive),
//! which also proves a temporary dead before anyone removes it.
//!
//! An output is written the way `cp` and GNU tar write it: through a symbolic link (the
//! link's target is replaced, the link stays), straight into a device, a FIFO or this
//! process's own standard output (`/dev/stdout`: never replaced), and an existing file
//! that this process could not have opened for writing is refused.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::destructive::{Durable, OwnTemp, remove_dead_temps};
pub(crate) use crate::temp::parent_of;
use crate::temp::{is_temp, is_temp_of, live_writer};
use seekless_sys as os;

/// Symbolic links followed to an output before giving up (as the kernel's `ELOOP`).
const MAX_LINKS: usize = 40;

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
    os::is_descriptor_name(path)
}

/// Opens what `path` names to write into it, without truncating: this process's own
/// standard output (by any name) as the descriptor it has, so its offset and append mode
/// hold.
fn open_into(path: &Path) -> io::Result<File> {
    if let Some(stdout) = os::stdout_if_same(path) {
        return Ok(stdout);
    }
    OpenOptions::new().write(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
