//! Writing manifests: a line ([`format_line`]), a whole manifest written as files are
//! hashed ([`ManifestFile`]), and names as a manifest or a verdict writes them.

use std::io::{self, Write};
use std::path::Path;

use crate::AtomicFile;
use seekless_sys::path_to_bytes;

/// Formats one manifest line (without the trailing newline) from raw path bytes.
///
/// The path is written as given: a file named `-` must be passed as `./-` (see
/// [`name_in_manifest`]), since `-` on a line means standard input.
pub fn format_line(hex: &str, path: &[u8]) -> Vec<u8> {
    format_line_as(hex, path, LineStyle::default())
}

/// Bytes of lines a [`ManifestFile`] holds before writing them out.
pub(super) const MANIFEST_BUFFER: usize = 64 << 10;

/// A manifest written to its file as its lines are made, through an [`AtomicFile`]: it
/// appears under its name only when [`commit`](Self::commit)ted, complete, and a run of a
/// million files holds no more than 64 KiB of it at any time. Lines are written in the
/// order they are pushed. A failure to write is kept and returned by `commit` (lines
/// pushed after it are dropped): the caller hashing files need not stop to hear of it.
///
/// ```
/// use seekless_jobs::manifest::ManifestFile;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("SUMS");
/// let mut manifest = ManifestFile::create(&path)?;
/// manifest.push("00ff", "photos/a.jpg".as_ref());
/// assert!(!path.exists());
/// manifest.commit()?;
/// assert_eq!(std::fs::read(&path)?, b"00ff  photos/a.jpg\n");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ManifestFile {
    pub(super) file: AtomicFile,
    /// Lines not written yet: less than [`MANIFEST_BUFFER`] bytes, and one line.
    pub(super) pending: Vec<u8>,
    /// The first write that failed.
    pub(super) failed: Option<io::Error>,
    /// How its lines are written.
    pub(super) style: LineStyle,
}

impl ManifestFile {
    /// Starts writing the manifest `path` ([`AtomicFile::create`]: through a link, into a
    /// device or standard output, refusing a file this process could not write).
    pub fn create(path: &Path) -> io::Result<ManifestFile> {
        Ok(ManifestFile {
            file: AtomicFile::create(path)?,
            pending: Vec::new(),
            failed: None,
            style: LineStyle::default(),
        })
    }

    /// Writes its lines for `algo`: a BLAKE3 manifest as `b3sum` writes one (a carriage
    /// return as it is, [`LineStyle::b3sum`]), which `b3sum -c` reads.
    pub fn for_algorithm(mut self, algo: crate::digest::Algorithm) -> Self {
        self.style.b3sum = algo == crate::digest::Algorithm::Blake3;
        self
    }

    /// The name asked for.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// What a walk may meet of this manifest ([`AtomicFile::identity`]): a copy leaves it
    /// out ([`CopyOptions::outputs`](crate::copy::CopyOptions::outputs)).
    pub fn identity(&self) -> crate::OutputIdentity {
        self.file.identity()
    }

    /// Adds the line of the file read at `path` whose digest is `hex` ([`format_line`]:
    /// the path's bytes as they are, escaped where needed), written out once 64 KiB of
    /// lines are waiting.
    pub fn push(&mut self, hex: &str, path: &Path) {
        if self.failed.is_some() {
            return;
        }
        push_line_as(&mut self.pending, hex, &path_to_bytes(path), self.style);
        self.pending.push(b'\n');
        if self.pending.len() >= MANIFEST_BUFFER {
            self.write_pending();
        }
    }

    fn write_pending(&mut self) {
        if let Err(e) = self.file.file().write_all(&self.pending) {
            self.failed = Some(e);
        }
        self.pending.clear();
    }

    /// Writes the lines still waiting and puts the manifest in place durably
    /// ([`AtomicFile::commit`]); the first write that failed, if one did, instead.
    pub fn commit(mut self) -> io::Result<()> {
        self.write_pending();
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.file.commit(),
        }
    }
}

/// The name to write in a manifest for a path: `./-` for a file named `-`, which a
/// manifest would otherwise read as standard input; any other path as it is.
///
/// ```
/// use seekless_jobs::manifest::name_in_manifest;
/// assert_eq!(name_in_manifest(b"-"), b"./-");
/// assert_eq!(name_in_manifest(b"dir/-"), b"dir/-");
/// ```
pub fn name_in_manifest(path: &[u8]) -> &[u8] {
    if path == b"-" { b"./-" } else { path }
}

/// A path as a manifest or a verdict names it: as given; on Windows with `/` for its
/// separators (every `\` there is one), as `b3sum` writes names there.
pub(super) fn portable_name(path: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    seekless_sys::slashed(path)
}

/// Whether `name` is written escaped: it holds a backslash, a newline or (with `cr`,
/// as coreutils has it; `b3sum` leaves it as it is) a carriage return.
pub(super) fn needs_escape(name: &[u8], cr: bool) -> bool {
    name.iter()
        .any(|&b| matches!(b, b'\\' | b'\n') || (cr && b == b'\r'))
}

/// Appends `name`, escaped (`\\`, `\n`, with `cr` `\r`) if `escape`
/// ([`needs_escape`] with the same `cr`).
pub(super) fn push_name(out: &mut Vec<u8>, name: &[u8], escape: bool, cr: bool) {
    if !escape {
        out.extend_from_slice(name);
        return;
    }
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' if cr => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
}

/// How [`format_line_as`] writes a line: `sha256sum`'s output options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineStyle {
    /// BSD style, `TAG (PATH) = HEX` with this algorithm's tag ([`bsd_tag`]), as
    /// `sha256sum --tag` writes it.
    ///
    /// [`bsd_tag`]: super::bsd_tag
    pub tag: Option<crate::digest::Algorithm>,
    /// `HEX *PATH`, binary mode's mark (`sha256sum -b`); not with `tag`.
    pub binary: bool,
    /// The name as it is, never escaped (`sha256sum -z`, whose lines end with NUL).
    pub raw: bool,
    /// Escape only what `b3sum` escapes, a backslash and a newline: a carriage return
    /// is written as it is, which `b3sum -c` reads (it refuses the `\r` escape, and
    /// stops there).
    pub b3sum: bool,
}

/// Formats one manifest line (without its end) as `style` says: [`format_line`]'s line
/// by default.
///
/// ```
/// use seekless_jobs::digest::Algorithm;
/// use seekless_jobs::manifest::{LineStyle, format_line_as};
///
/// let mut style = LineStyle::default();
/// style.tag = Some(Algorithm::Sha256);
/// assert_eq!(format_line_as("00ff", b"a\nb", style), b"\\SHA256 (a\\nb) = 00ff");
/// style.raw = true;
/// assert_eq!(format_line_as("00ff", b"a\nb", style), b"SHA256 (a\nb) = 00ff");
/// let mut binary = LineStyle::default();
/// binary.binary = true;
/// assert_eq!(format_line_as("00ff", b"a", binary), b"00ff *a");
/// let mut b3sum = LineStyle::default();
/// b3sum.b3sum = true;
/// assert_eq!(format_line_as("00ff", b"c\rr", b3sum), b"00ff  c\rr");
/// // A backslash in a name (Unix: on Windows it separates folders, written `/`).
/// if cfg!(unix) {
///     assert_eq!(format_line_as("00ff", b"c\r\\", b3sum), b"\\00ff  c\r\\\\");
/// }
/// ```
pub fn format_line_as(hex: &str, path: &[u8], style: LineStyle) -> Vec<u8> {
    let mut out = Vec::with_capacity(hex.len() + path.len() + 16);
    push_line_as(&mut out, hex, path, style);
    out
}

/// Appends [`format_line_as`]'s line to `out`.
fn push_line_as(out: &mut Vec<u8>, hex: &str, path: &[u8], style: LineStyle) {
    let path = &*portable_name(path);
    let cr = !style.b3sum;
    let escape = !style.raw && needs_escape(path, cr);
    if escape {
        out.push(b'\\');
    }
    match style.tag {
        Some(algo) => {
            out.extend_from_slice(super::bsd_tag(algo).as_bytes());
            out.extend_from_slice(b" (");
            push_name(out, path, escape, cr);
            out.extend_from_slice(b") = ");
            out.extend_from_slice(hex.as_bytes());
        }
        None => {
            out.extend_from_slice(hex.as_bytes());
            out.extend_from_slice(if style.binary { b" *" } else { b"  " });
            push_name(out, path, escape, cr);
        }
    }
}
