//! `tar`: an archive every tar reads, written while the files are read in physical order.
//!
//! The archive is POSIX pax (see `format.rs`): symlinks and special files first (in the
//! order `find` lists them), then regular files in the order the disks yield them, each
//! followed by hard links to it, then directories (deepest first: the reverse of the
//! order `find` lists them).
//!
//! Directories come last because GNU tar restores a directory's mode and times as soon as
//! a member outside it arrives, unless told `--delay-directory-restore`: with directories
//! first and their files spread through the archive in disk order, a later file would
//! change the directory's mtime again, or could not be made in a read-only directory.
//! Extraction makes each missing parent as it goes (every tar does), and the directory's
//! own member, last, gives it its metadata. Deepest first, because making a directory
//! (one with no files) changes its parent's mtime, and bsdtar sets an existing
//! directory's times at once; and a read-only parent is made read-only only after. Metadata as GNU tar keeps it: mode, owner (ids and names), mtime with
//! nanoseconds, extended attributes on request; sparse files keep their holes.
//!
//! Faults are handled as GNU tar handles them: a file that changed while it was read is
//! reported ("file changed as we read it"); one that shrank is padded with zeros to the
//! size its header promised, one that grew is cut at it, so the archive stays valid; files
//! that vanished or cannot be read are reported and left out. Only a failure to write the
//! archive stops the run.
//!
//! ```
//! use seekless_jobs::tar::{TarOptions, archive};
//! use seekless_core::{PlanOptions, Quiet};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("photos"))?;
//! std::fs::write(dir.path().join("photos/a.jpg"), b"not really a jpeg")?;
//! let mut out = Vec::new();
//! let summary = archive(&[dir.path().join("photos")], &PlanOptions::default(),
//!                       &TarOptions::default(), &Quiet, &mut out)?;
//! assert_eq!((summary.files, summary.dirs, summary.failed), (1, 1, 0));
//! assert_eq!(out.len() % 10240, 0);
//! # Ok::<(), std::io::Error>(())
//! ```

mod format;
mod output;
mod sink;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::stat::{NodeKind, Stat};
use format::{Kind, Member};
use seekless_core::Error;
use seekless_core::FileId;
use seekless_core::Reporter;
use seekless_core::read::{self, Events, FileReader, NoEvents, ReadOptions};
use seekless_core::{Entry, Other};
use seekless_core::{Plan, PlanOptions};
use seekless_sys::path_to_bytes;
use seekless_sys::{self as os, sync};
use sink::{FillError, Sink};

pub use output::{ArchiveFile, ArchiveIdentity};
pub use sink::Compression;

/// How to archive.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct TarOptions {
    /// How to read.
    pub read: ReadOptions,
    /// Store extended attributes (PAX `SCHILY.xattr.*`, as GNU tar's `--xattrs`).
    pub xattrs: bool,
    /// How to compress the output.
    pub compression: Compression,
    /// The archive being written ([`ArchiveFile::identity`]), never stored in itself:
    /// where the walk meets it (or the file it replaces) it is left out and reported as
    /// "file is the archive; not dumped", once, under the archive's name, as GNU tar does.
    pub archive: ArchiveIdentity,
}

/// What an archive run stored and skipped.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[non_exhaustive]
pub struct TarSummary {
    /// Members written (of every kind).
    pub members: u64,
    /// Regular files stored with their content.
    pub files: u64,
    /// Content bytes of those files (their real sizes).
    pub bytes: u64,
    /// Directories.
    pub dirs: u64,
    /// Symlinks.
    pub symlinks: u64,
    /// Hard links (second and later names of a file).
    pub hardlinks: u64,
    /// FIFOs and device nodes.
    pub specials: u64,
    /// Files stored sparse.
    pub sparse: u64,
    /// Files that changed while they were read (stored, but not as they are now; each is
    /// reported as an error, and not counted in `failed`).
    pub changed: u64,
    /// Paths that could not be stored (or only in part: a read error mid-file).
    pub failed: u64,
    /// Bytes of the archive before compression.
    pub archive_bytes: u64,
}

/// What [`archive_with`] tells its caller as it goes, beyond the read's
/// [`Events`] (the plan read, each file stored or failed, the end);
/// all optional.
pub trait TarEvents: Events {
    /// A member was written (its name in the archive).
    fn member(&mut self, name: &[u8]) {
        let _ = name;
    }
}

impl TarEvents for NoEvents {}

/// Writes a tar archive of `inputs` to `out`. Per-path problems go to `reporter` and are
/// counted; the run goes on. Fails only when the archive cannot be written.
pub fn archive(
    inputs: &[PathBuf],
    plan_opts: &PlanOptions,
    opts: &TarOptions,
    reporter: &dyn Reporter,
    out: &mut (dyn Write + Send),
) -> io::Result<TarSummary> {
    archive_with(inputs, plan_opts, opts, reporter, &mut NoEvents, out)
}

/// [`archive`], telling `events` how it goes.
pub fn archive_with(
    inputs: &[PathBuf],
    plan_opts: &PlanOptions,
    opts: &TarOptions,
    reporter: &dyn Reporter,
    events: &mut dyn TarEvents,
    out: &mut (dyn Write + Send),
) -> io::Result<TarSummary> {
    let mut plan_opts = plan_opts.clone();
    plan_opts.walk.others = true;
    let plan = Plan::build(inputs, &plan_opts, reporter);
    let plan = if opts.archive.ids.is_empty() {
        plan
    } else {
        let mut named_before = Vec::new();
        plan.retain(|_, f| {
            let own = opts.archive.is_output(&f.entry.id);
            if own {
                let named = opts.archive.shown_as(&f.entry.path);
                // The temporary and the archive it replaces, named alike, once.
                if !named_before.contains(&named) {
                    reporter.warning(Some(&named), "file is the archive; not dumped");
                    named_before.push(named);
                }
            }
            !own
        })
    };
    let plan = Arc::new(plan);
    let compression = opts.compression;
    std::thread::scope(|s| {
        let (sink, writer) = sink::channel();
        let writing = s.spawn(move || sink::run_writer(writer, out, compression));
        let mut job = Job {
            opts,
            reporter,
            sink,
            names: Names::default(),
            stripped: Vec::new(),
            summary: TarSummary::default(),
            buf: Vec::new(),
            written: Vec::new(),
        };
        let archived = job.run(&plan, events);
        let summary = job.summary;
        // The writer ends once the sink is gone.
        drop(job.sink);
        let written = sync::join(writing);
        // The writer's own error explains a stopped sink best.
        written?;
        archived.map(|()| summary)
    })
}

/// A regular file's member: its name and the metadata its header gave.
type Stored = (Vec<u8>, Stat);

/// One archive being written.
struct Job<'a> {
    opts: &'a TarOptions,
    reporter: &'a dyn Reporter,
    sink: Sink,
    names: Names,
    /// Prefixes removed from member names so far (each is announced once).
    stripped: Vec<Vec<u8>>,
    summary: TarSummary,
    /// Headers of the member at hand.
    buf: Vec<u8>,
    /// Names of the members written and not yet told to `events`, each ended by a NUL
    /// (which no name holds).
    written: Vec<u8>,
}

impl Job<'_> {
    fn run(&mut self, plan: &Arc<Plan>, events: &mut dyn TarEvents) -> io::Result<()> {
        // Symlinks and special files first; directories last (see the module's doc).
        for other in plan.others().iter().filter(|o| !o.metadata.is_dir()) {
            self.other(other)?;
            self.tell(events);
        }
        // Second names of files, to store as hard links after the first.
        let mut aliases: HashMap<FileId, Vec<&Entry>> = HashMap::new();
        for alias in plan.aliases() {
            aliases.entry(alias.id).or_default().push(alias);
        }
        #[cfg(any(test, feature = "test-hooks"))]
        for f in plan.files() {
            seekless_core::test_hooks::before_read(&f.entry.path);
        }

        // In sweep order, on this thread: the archive is one ordered sink.
        read::run_in_order(plan, &self.opts.read, events, |events, work| {
            let planned = work.planned();
            let (item, _) = work.into_parts();
            let names = aliases
                .get(&planned.entry.id)
                .map_or(&[][..], Vec::as_slice);
            let opened = match item {
                Ok(mut file) => self.file(&planned.entry.path, &mut file)?,
                Err(e) => {
                    self.fail(&e);
                    None
                }
            };
            let stored = match opened {
                Some(member) => Some((member, names)),
                // Its planned name failed: the next name that can be read is stored as the
                // file, and the names after it as links to it.
                None if names.is_empty() => None,
                None => self.first_readable(planned.entry.id, names)?,
            };
            if let Some(((name, st), links)) = &stored {
                // Its other names share its inode, and so its metadata.
                for alias in *links {
                    self.hard_link(alias, name, st)?;
                }
            }
            self.tell(events);
            Ok::<_, io::Error>(stored.is_some())
        })?;
        for other in plan.others().iter().rev().filter(|o| o.metadata.is_dir()) {
            self.other(other)?;
            self.tell(events);
        }

        let end = format::trailer(self.sink.written());
        self.sink.write(&end)?;
        self.summary.archive_bytes = self.sink.written();
        self.sink.finish()
    }

    /// Tells `events` the members written since it was last told.
    fn tell(&mut self, events: &mut dyn TarEvents) {
        for name in self.written.split(|&b| b == 0).filter(|n| !n.is_empty()) {
            events.member(name);
        }
        self.written.clear();
    }

    fn fail(&mut self, err: &Error) {
        self.summary.failed += 1;
        self.reporter.error(err);
    }

    /// The member name of `path`, as GNU tar makes it: leading `/` and `../` removed (and
    /// announced once per prefix), `/` appended for directories.
    fn member_name(&mut self, path: &Path, dir: bool) -> Vec<u8> {
        // Windows: `/` separators, and no drive (`C:`) in a member name.
        let bytes = os::member_name_bytes(path);
        let mut name: &[u8] = &bytes;
        let mut cut = 0;
        loop {
            if let Some(rest) = name.strip_prefix(b"/") {
                name = rest;
            } else if let Some(rest) = name.strip_prefix(b"../") {
                name = rest;
            } else if name == b".." {
                name = b"";
            } else {
                break;
            }
            cut = bytes.len() - name.len();
        }
        if cut > 0 {
            let prefix = bytes[..cut].to_vec();
            if !self.stripped.contains(&prefix) {
                let text = String::from_utf8_lossy(&prefix).into_owned();
                self.reporter.warning(
                    None,
                    &format!("Removing leading `{text}' from member names"),
                );
                self.stripped.push(prefix);
            }
        }
        let mut name = if name.is_empty() {
            b".".to_vec()
        } else {
            name.to_vec()
        };
        if dir && !name.ends_with(b"/") {
            name.push(b'/');
        }
        name
    }

    fn xattrs_of(&mut self, path: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
        if !self.opts.xattrs {
            return Vec::new();
        }
        match os::xattrs(path) {
            Ok(x) => x,
            Err(e) => {
                self.fail(&Error::io(path, e));
                Vec::new()
            }
        }
    }

    /// Writes the headers in `self.buf`, and names the member.
    fn put_headers(&mut self, name: &[u8]) -> io::Result<()> {
        self.sink.write(&self.buf)?;
        self.buf.clear();
        self.summary.members += 1;
        self.written.extend_from_slice(name);
        self.written.push(0);
        Ok(())
    }

    /// A directory, symlink or special file: headers only.
    fn other(&mut self, other: &Other) -> io::Result<()> {
        let st = Stat::of(&other.metadata);
        let kind = match st.kind {
            NodeKind::File => Kind::File,
            NodeKind::Dir => Kind::Dir,
            NodeKind::Symlink => Kind::Symlink,
            NodeKind::Fifo => Kind::Fifo,
            NodeKind::CharDevice => Kind::CharDevice,
            NodeKind::BlockDevice => Kind::BlockDevice,
            NodeKind::Socket | NodeKind::Unknown => {
                if st.kind == NodeKind::Socket {
                    self.reporter.warning(Some(&other.path), "socket ignored");
                }
                return Ok(());
            }
        };
        let link = match kind {
            Kind::Symlink => match os::read_link(&other.path) {
                Ok(target) => path_to_bytes(&target).into_owned(),
                Err(e) => {
                    self.fail(&Error::io(&*other.path, e));
                    return Ok(());
                }
            },
            _ => Vec::new(),
        };
        let name = self.member_name(&other.path, kind == Kind::Dir);
        let xattrs = self.xattrs_of(&other.path);
        self.headers(&name, kind, &link, &st, &xattrs, None)?;
        match kind {
            Kind::Dir => self.summary.dirs += 1,
            Kind::Symlink => self.summary.symlinks += 1,
            _ => self.summary.specials += 1,
        }
        Ok(())
    }

    /// Stores the first of `names` that can be read as the file `id` (whose planned name
    /// failed). Returns its member name and metadata, and the names after it.
    fn first_readable<'n>(
        &mut self,
        id: FileId,
        names: &'n [&'n Entry],
    ) -> io::Result<Option<(Stored, &'n [&'n Entry])>> {
        for (i, alias) in names.iter().enumerate() {
            let mut file = match LooseFile::open(&alias.path, id) {
                Ok(file) => file,
                Err(e) => {
                    self.fail(&e);
                    continue;
                }
            };
            if let Some(member) = self.file(&alias.path, &mut file)? {
                return Ok(Some((member, &names[i + 1..])));
            }
        }
        Ok(None)
    }

    /// A second name of a file already stored as `target`, whose metadata is `st`.
    fn hard_link(&mut self, alias: &Entry, target: &[u8], st: &Stat) -> io::Result<()> {
        let name = self.member_name(&alias.path, false);
        if name == target {
            // The same path given twice: stored once.
            return Ok(());
        }
        self.headers(&name, Kind::HardLink, target, st, &[], None)?;
        self.summary.hardlinks += 1;
        Ok(())
    }

    /// Writes a member's headers from its metadata (a regular file's size is `st.size`;
    /// other kinds store no data). Returns the bytes of data that must follow.
    fn headers(
        &mut self,
        name: &[u8],
        kind: Kind,
        link: &[u8],
        st: &Stat,
        xattrs: &[(Vec<u8>, Vec<u8>)],
        sparse: Option<&[Range<u64>]>,
    ) -> io::Result<u64> {
        let (uname, gname) = self.names.of(st);
        let member = Member {
            name,
            kind,
            link,
            mode: st.mode,
            uid: st.uid,
            gid: st.gid,
            uname: uname.as_deref(),
            gname: gname.as_deref(),
            mtime: st.mtime,
            device: st.device,
            xattrs,
            size: if kind == Kind::File { st.size } else { 0 },
            sparse,
        };
        let stored = member.stored_size();
        member.write_headers(&mut self.buf);
        self.put_headers(name)?;
        Ok(stored)
    }

    /// A regular file: headers, then its content as it streams in, padded or cut to the
    /// size the header gave. Returns its member name and metadata, or `None` if it was
    /// not stored.
    fn file(&mut self, path: &Path, file: &mut impl Source) -> io::Result<Option<(Vec<u8>, Stat)>> {
        let st = Stat::of(file.opened());
        let size = st.size;
        // Where the data lies, for a file with fewer blocks than its size (GNU tar's test).
        let regions = match file.regions(size) {
            Ok(r) if r.len() != 1 || r[0] != (0..size) => Some(r),
            Ok(_) => None,
            Err(e) => {
                self.fail(&e);
                return Ok(None);
            }
        };
        let name = self.member_name(path, false);
        let xattrs = self.xattrs_of(path);
        let stored = self.headers(&name, Kind::File, b"", &st, &xattrs, regions.as_deref())?;
        if regions.is_some() {
            self.summary.sparse += 1;
        }
        #[cfg(any(test, feature = "test-hooks"))]
        seekless_core::test_hooks::at_start(path);

        // Content: each data region in turn (the whole file when not sparse), straight
        // into the archive's buffer.
        let whole = std::iter::once(0..size).collect::<Vec<_>>();
        let mut missing = 0u64;
        let mut read_error = None;
        for region in regions.as_deref().unwrap_or(&whole[..]) {
            if file.position() != region.start
                && let Err(e) = file.seek_to(region.start)
            {
                read_error.get_or_insert((io::Error::from(e), region.start));
            }
            let mut left = region.end - region.start;
            while left > 0 && read_error.is_none() {
                let got = self.sink.fill(left, |buf| {
                    loop {
                        match file.read(buf) {
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                            other => break other,
                        }
                    }
                });
                match got {
                    Ok(0) => break,
                    Ok(n) => left -= n as u64,
                    Err(FillError::Write(e)) => return Err(e),
                    Err(FillError::Read(e)) => {
                        read_error = Some((e, region.end - left));
                    }
                }
            }
            if left > 0 {
                missing += left;
                self.sink.zeros(left)?;
            }
        }
        self.sink.zeros(format::padding(stored) as u64)?;
        self.summary.files += 1;
        self.summary.bytes += size;

        if let Some((e, at)) = read_error {
            // Stored, with zeros where it could not be read: the archive stays valid, and
            // the message says the member is not the file's content (as GNU tar says it).
            let s = if missing == 1 { "" } else { "s" };
            let why = io::Error::new(
                e.kind(),
                format!(
                    "read error at byte {at}: {}; the member is padded with {missing} zero \
                     byte{s} and is not this file's content",
                    // The error may carry this path already: its words only.
                    match e.get_ref().and_then(|i| i.downcast_ref::<Error>()) {
                        Some(inner) => match inner.io_error() {
                            Some(io) => seekless_sys::describe_io(io),
                            None => inner.kind().to_string(),
                        },
                        None => seekless_sys::describe_io(&e),
                    }
                ),
            );
            self.fail(&Error::io(path, why));
            return Ok(Some((name, st)));
        }
        let changed = if missing > 0 {
            let s = if missing == 1 { "" } else { "s" };
            Some(format!(
                "File shrank by {missing} byte{s}; padding with zeros"
            ))
        } else if !file.unchanged(size) {
            Some("file changed as we read it".to_string())
        } else {
            None
        };
        if let Some(what) = changed {
            // Stored: counted once, as changed (not also as failed), and still an error.
            self.summary.changed += 1;
            self.reporter
                .error(&Error::io(path, io::Error::other(what)));
        }
        Ok(Some((name, st)))
    }
}

/// A file being archived: read through the reader in plan order, or opened on its own (a
/// second name of a file whose first name failed).
trait Source: Read {
    /// Its metadata when opened.
    fn opened(&self) -> &std::fs::Metadata;
    /// The ranges to read for its `size` bytes (its data regions when it has holes).
    fn regions(&mut self, size: u64) -> Result<Vec<Range<u64>>, Error>;
    fn position(&self) -> u64;
    fn seek_to(&mut self, offset: u64) -> Result<(), Error>;
    /// Whether it is unchanged, `content` bytes having been stored as its content.
    fn unchanged(&self, content: u64) -> bool;
}

impl Source for FileReader {
    fn opened(&self) -> &std::fs::Metadata {
        FileReader::opened(self)
    }
    fn regions(&mut self, size: u64) -> Result<Vec<Range<u64>>, Error> {
        FileReader::regions(self, size)
    }
    fn position(&self) -> u64 {
        FileReader::position(self)
    }
    fn seek_to(&mut self, offset: u64) -> Result<(), Error> {
        FileReader::seek_to(self, offset)
    }
    fn unchanged(&self, content: u64) -> bool {
        self.check_unchanged(content).is_ok()
    }
}

/// A file opened by name, outside the reader's sweep.
struct LooseFile {
    file: std::fs::File,
    opened: std::fs::Metadata,
    path: PathBuf,
    pos: u64,
}

impl LooseFile {
    /// Opens `path`, which must still be the file `id`.
    fn open(path: &Path, id: FileId) -> Result<LooseFile, Error> {
        let file = os::open_to_read(path).map_err(|e| Error::io(path, e))?;
        let opened = file.metadata().map_err(|e| Error::io(path, e))?;
        let now = os::file_id(path, Some(&file), &opened).map_err(|e| Error::io(path, e))?;
        if now != id {
            let e = io::Error::other("file changed as we read it (another file by that name)");
            return Err(Error::io(path, e));
        }
        Ok(LooseFile {
            file,
            opened,
            path: path.to_path_buf(),
            pos: 0,
        })
    }
}

impl Read for LooseFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Source for LooseFile {
    fn opened(&self) -> &std::fs::Metadata {
        &self.opened
    }
    fn regions(&mut self, size: u64) -> Result<Vec<Range<u64>>, Error> {
        let opened = self.opened.clone();
        read::sparse_regions(&opened, size, |size| {
            let regions = os::data_regions(&self.file, size);
            // The probes moved the offset: put it back.
            let back = self.seek_to(self.pos);
            let regions = regions.map_err(|e| Error::io(&*self.path, e))?;
            back?;
            Ok(regions)
        })
    }
    fn position(&self) -> u64 {
        self.pos
    }
    fn seek_to(&mut self, offset: u64) -> Result<(), Error> {
        use std::io::Seek;
        self.file
            .seek(io::SeekFrom::Start(offset))
            .map_err(|e| Error::io(&*self.path, e))?;
        self.pos = offset;
        Ok(())
    }
    fn unchanged(&self, content: u64) -> bool {
        self.file.metadata().is_ok_and(|now| {
            content == self.opened.len() && read::changed_between(&self.opened, &now).is_none()
        })
    }
}

/// A user or group name.
type Name = Option<Arc<[u8]>>;

/// User and group names by id, looked up once each.
#[derive(Default)]
struct Names {
    users: HashMap<u64, Name>,
    groups: HashMap<u64, Name>,
}

impl Names {
    fn of(&mut self, st: &Stat) -> (Name, Name) {
        (
            cached(&mut self.users, st.uid, os::user_name),
            cached(&mut self.groups, st.gid, os::group_name),
        )
    }
}

/// The name of `id`, looked up once.
fn cached(names: &mut HashMap<u64, Name>, id: u64, lookup: fn(u32) -> Option<Vec<u8>>) -> Name {
    names
        .entry(id)
        .or_insert_with(|| u32::try_from(id).ok().and_then(lookup).map(Arc::from))
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use seekless_core::Quiet;
    use std::fs;

    /// A member read back: name, type flag, link target, content.
    #[cfg(unix)]
    type Got = (String, char, String, Vec<u8>);

    /// Archives `inputs` and reads the archive back with the `tar` crate.
    #[cfg(unix)]
    fn round_trip(inputs: &[PathBuf]) -> (Vec<Got>, TarSummary) {
        let mut out = Vec::new();
        let summary = archive(
            inputs,
            &PlanOptions::default(),
            &TarOptions::default(),
            &Quiet,
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len() as u64 % format::RECORD, 0);
        let mut members = Vec::new();
        let mut archive = tar::Archive::new(&out[..]);
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            let kind = entry.header().entry_type().as_byte() as char;
            let link = entry
                .link_name_bytes()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .unwrap_or_default();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            members.push((name, kind, link, data));
        }
        (members, summary)
    }

    #[cfg(unix)]
    #[test]
    fn links_first_then_files_each_with_its_hard_links_then_directories() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("r");
        fs::create_dir_all(root.join("d/e")).unwrap();
        fs::write(root.join("d/a"), b"alpha").unwrap();
        fs::write(root.join("b"), vec![7u8; 70_000]).unwrap();
        fs::hard_link(root.join("d/a"), root.join("d/e/a2")).unwrap();
        std::os::unix::fs::symlink("d/a", root.join("s")).unwrap();
        let (members, summary) = round_trip(std::slice::from_ref(&root));
        let base = format!("{}/", root.display())
            .trim_start_matches('/')
            .to_string();
        let rel = |m: &Got| m.0.trim_start_matches(&base).to_string();
        let kinds: String = members.iter().map(|m| m.1).collect();
        assert!(
            kinds.starts_with('2') && kinds.ends_with("555") && kinds.len() == 7,
            "{kinds}"
        );
        let pos = |name: &str| members.iter().position(|m| rel(m) == name).unwrap();
        assert_eq!(pos(""), 6, "the input directory last");
        assert!(pos("d/e/") < pos("d/"), "deepest first");
        let (first, second) = if members[pos("d/a")].1 == '0' {
            ("d/a", "d/e/a2")
        } else {
            ("d/e/a2", "d/a")
        };
        assert_eq!(members[pos(first)].3, b"alpha");
        assert_eq!(members[pos(second)].1, '1', "hard link");
        assert_eq!(pos(second), pos(first) + 1, "right after its target");
        assert_eq!(members[pos(second)].2, members[pos(first)].0);
        assert_eq!(members[pos("b")].3, vec![7u8; 70_000]);
        assert_eq!(
            (summary.files, summary.hardlinks, summary.failed),
            (2, 1, 0)
        );
        assert_eq!(
            (members[pos("s")].1, members[pos("s")].2.as_str()),
            ('2', "d/a")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_file_whose_first_name_fails_is_stored_under_its_next_name_with_the_rest_linked() {
        seekless_core::test_hooks::arm();
        let t = tempfile::tempdir().unwrap();
        let first = t.path().join("seekless-fault-vanish-a");
        fs::write(&first, b"one inode, three names").unwrap();
        fs::hard_link(&first, t.path().join("b")).unwrap();
        fs::hard_link(&first, t.path().join("c")).unwrap();
        let (members, summary) = round_trip(&[first, t.path().join("b"), t.path().join("c")]);
        let got: Vec<(char, &str, &[u8])> = members
            .iter()
            .map(|m| (m.1, m.0.rsplit('/').next().unwrap(), &m.3[..]))
            .collect();
        assert_eq!(
            got,
            vec![
                ('0', "b", &b"one inode, three names"[..]),
                ('1', "c", &b""[..])
            ]
        );
        assert!(
            members[1].2.ends_with("/b"),
            "c links to b: {:?}",
            members[1].2
        );
        assert_eq!(
            (summary.files, summary.hardlinks, summary.failed),
            (1, 1, 1)
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_shrinks_is_padded_and_one_that_grows_is_cut_and_both_are_reported() {
        seekless_core::test_hooks::arm();
        let t = tempfile::tempdir().unwrap();
        let shrink = t.path().join("seekless-fault-shrink-x");
        let grow = t.path().join("seekless-fault-grow-x");
        fs::write(&shrink, vec![1u8; 10_000]).unwrap();
        fs::write(&grow, vec![2u8; 10_000]).unwrap();
        let (members, summary) = round_trip(&[shrink, grow]);
        let mut want = vec![1u8; 5_000];
        want.resize(10_000, 0);
        assert_eq!(members[0].3, want);
        assert_eq!(members[1].3, vec![2u8; 10_000]);
        assert_eq!(
            (summary.changed, summary.failed),
            (2, 0),
            "each counted once"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sparse_files_keep_only_their_data() {
        use std::io::{Seek, SeekFrom};
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("sparse");
        let mut f = fs::File::create(&path).unwrap();
        f.seek(SeekFrom::Start(64 << 20)).unwrap();
        f.write_all(&[9u8; 4096]).unwrap();
        f.set_len(256 << 20).unwrap();
        drop(f);
        let mut out = Vec::new();
        let summary = archive(
            std::slice::from_ref(&path),
            &PlanOptions::default(),
            &TarOptions::default(),
            &Quiet,
            &mut out,
        )
        .unwrap();
        if summary.sparse == 0 {
            seekless_core::test_hooks::skip(
                "holes",
                "the filesystem under the temporary directory does not make holes",
            );
            return;
        }
        assert!(out.len() < 1 << 20, "archive of {} bytes", out.len());
        assert!(
            out.windows(20).any(|w| w == b"GNU.sparse.realsize="),
            "a GNU sparse 1.0 member"
        );
    }

    /// The warnings a run gave, with their paths.
    #[derive(Default)]
    struct Warnings(std::sync::Mutex<Vec<(Option<PathBuf>, String)>>);

    impl Reporter for Warnings {
        fn warning(&self, path: Option<&Path>, what: &str) {
            let said = (path.map(Path::to_path_buf), what.to_string());
            self.0.lock().unwrap().push(said);
        }
    }

    #[test]
    fn the_archive_itself_is_left_out() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("keep"), b"k").unwrap();
        let own = t.path().join("own.tar");
        fs::write(&own, b"previous archive").unwrap();
        // The archive being written beside the one it replaces: the walk meets both.
        let file = ArchiveFile::create(&own).unwrap();
        let temp = file.temp_path().unwrap().to_path_buf();
        fs::write(&temp, b"half an archive").unwrap();
        let opts = TarOptions {
            archive: file.identity(),
            ..TarOptions::default()
        };
        assert_eq!(opts.archive.ids.len(), 2, "{:?}", opts.archive);
        let warnings = Warnings::default();
        let mut out = Vec::new();
        let summary = archive(
            &[t.path().to_path_buf()],
            &PlanOptions::default(),
            &opts,
            &warnings,
            &mut out,
        )
        .unwrap();
        assert_eq!(summary.files, 1);
        assert!(!out.windows(7).any(|w| w == b"own.tar"));
        assert!(!out.windows(14).any(|w| w == b".seekless-tmp-"));
        // Both are the archive, named once by the archive's own name.
        let said: Vec<_> = (warnings.0.into_inner().unwrap().into_iter())
            .filter(|(_, what)| what.contains("archive"))
            .collect();
        assert_eq!(
            said,
            [(Some(own.clone()), "file is the archive; not dumped".into())]
        );
    }

    #[test]
    fn an_archive_is_shown_by_its_own_name_where_the_walk_meets_its_temporary() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("b.tar");
        let file = ArchiveFile::create(&path).unwrap();
        let own = file.identity();
        // Nothing to replace: the temporary alone.
        assert_eq!(own.ids.len(), 1);
        let meta = fs::metadata(file.temp_path().unwrap()).unwrap();
        let temp_id = seekless_sys::file_id(&path, Some(file.file()), &meta).unwrap();
        assert!(own.is_output(&temp_id));
        let other = seekless_sys::file_id(t.path(), None, &fs::metadata(t.path()).unwrap());
        assert!(!own.is_output(&other.unwrap()));
        assert_eq!(own.shown_as(file.temp_path().unwrap()), path);
        let elsewhere = Path::new("/x/.notes.seekless-tmp-2024-12");
        assert_eq!(own.shown_as(elsewhere), elsewhere);
        assert_eq!(own.shown_as(Path::new("/x/y.tar")), Path::new("/x/y.tar"));
        // An archive written into a device is the device.
        #[cfg(unix)]
        {
            let own = ArchiveFile::create(Path::new("/dev/null"))
                .unwrap()
                .identity();
            let meta = fs::metadata("/dev/null").unwrap();
            let id = seekless_sys::file_id(Path::new("/dev/null"), None, &meta).unwrap();
            assert_eq!(own.ids, [id]);
        }
    }
}
