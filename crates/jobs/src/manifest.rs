//! Checksum manifests in the coreutils format (`sha256sum`, `b3sum`), and what checking
//! one says, line by line, as `sha256sum -c` says it.
//!
//! Lines are `HEX  PATH` (`HEX *PATH` in binary mode) or, BSD style as `sha256sum --tag`
//! writes them, `SHA256 (PATH) = HEX`. A name containing a backslash, a newline or a
//! carriage return is written escaped (`\\`, `\n`, `\r`) on a line that starts with a
//! backslash, as coreutils 9.0 and later write it. Verdicts (`PATH: OK`) escape such
//! names the same way. On Windows, where a backslash in a path is always a separator,
//! names are written with `/` instead, as `b3sum` writes them there: a manifest made on
//! Windows reads as one made elsewhere, and Windows opens either separator.
//!
//! ```
//! use seekless_jobs::manifest::{Verdict, format_line, format_verdict, parse_line};
//!
//! let line = format_line("00ff", b"two\nlines");
//! assert_eq!(line, b"\\00ff  two\\nlines");
//! let entry = parse_line(&line).unwrap();
//! assert_eq!(entry.path, std::path::Path::new("two\nlines"));
//! assert_eq!(format_verdict(b"two\nlines", Verdict::Ok), b"\\two\\nlines: OK");
//! ```

use std::ffi::OsStr;
use std::hash::BuildHasher;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::AtomicFile;
use crate::digest::Algorithm;
use seekless_sys::{path_from_bytes, path_to_bytes};

/// Formats one manifest line (without the trailing newline) from raw path bytes.
///
/// The path is written as given: a file named `-` must be passed as `./-` (see
/// [`name_in_manifest`]), since `-` on a line means standard input.
pub fn format_line(hex: &str, path: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(hex.len() + path.len() + 4);
    push_line(&mut line, hex, path);
    line
}

/// Appends [`format_line`]'s line to `out`.
fn push_line(out: &mut Vec<u8>, hex: &str, path: &[u8]) {
    let path = &*portable_name(path);
    let escape = needs_escape(path);
    if escape {
        out.push(b'\\');
    }
    out.extend_from_slice(hex.as_bytes());
    out.extend_from_slice(b"  ");
    push_name(out, path, escape);
}

/// Bytes of lines a [`ManifestFile`] holds before writing them out.
const MANIFEST_BUFFER: usize = 64 << 10;

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
    file: AtomicFile,
    /// Lines not written yet: less than [`MANIFEST_BUFFER`] bytes, and one line.
    pending: Vec<u8>,
    /// The first write that failed.
    failed: Option<io::Error>,
}

impl ManifestFile {
    /// Starts writing the manifest `path` ([`AtomicFile::create`]: through a link, into a
    /// device or standard output, refusing a file this process could not write).
    pub fn create(path: &Path) -> io::Result<ManifestFile> {
        Ok(ManifestFile {
            file: AtomicFile::create(path)?,
            pending: Vec::new(),
            failed: None,
        })
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
        push_line(&mut self.pending, hex, &path_to_bytes(path));
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

/// What checking one listed file concluded, as `sha256sum -c` words it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// The digest matched: `OK`.
    Ok,
    /// The digest did not match: `FAILED`.
    Failed,
    /// The file could not be opened or read (missing, a directory, permission denied,
    /// changed while being read): `FAILED open or read`.
    FailedOpenOrRead,
}

impl Verdict {
    /// The words after `PATH: `.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Failed => "FAILED",
            Verdict::FailedOpenOrRead => "FAILED open or read",
        }
    }
}

/// Formats one verdict line (without the trailing newline): `PATH: OK`, byte-exact for
/// names that are not UTF-8. A name containing a backslash, newline or carriage return
/// is escaped as in manifest lines and the line starts with a backslash, as current
/// coreutils prints it. (coreutils 9.1, Debian 12's, escapes a verdict only when the
/// name contains a newline, and then escapes all three.)
pub fn format_verdict(path: &[u8], verdict: Verdict) -> Vec<u8> {
    let path = &*portable_name(path);
    let escape = needs_escape(path);
    let mut line = Vec::with_capacity(path.len() + 24);
    if escape {
        line.push(b'\\');
    }
    push_name(&mut line, path, escape);
    line.extend_from_slice(b": ");
    line.extend_from_slice(verdict.as_str().as_bytes());
    line
}

/// A path as a manifest or a verdict names it: as given; on Windows with `/` for its
/// separators (every `\` there is one), as `b3sum` writes names there.
fn portable_name(path: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    seekless_sys::slashed(path)
}

fn needs_escape(name: &[u8]) -> bool {
    name.iter().any(|&b| matches!(b, b'\\' | b'\n' | b'\r'))
}

fn push_name(out: &mut Vec<u8>, name: &[u8], escape: bool) {
    if !escape {
        out.extend_from_slice(name);
        return;
    }
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
}

/// One parsed manifest line.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManifestEntry {
    /// The expected digest, lower-case hex.
    pub hex: String,
    /// The path as written (unescaped bytes). `-` means standard input.
    pub path: PathBuf,
    /// The algorithm a BSD-style line names (`SHA256 (PATH) = HEX`); `None` for
    /// `HEX  PATH` lines, which do not say.
    pub tag: Option<Algorithm>,
}

impl ManifestEntry {
    /// A line expecting `hex` (lower-case) for `path`, tagged with `tag` if BSD style.
    ///
    /// ```
    /// use seekless_jobs::digest::Algorithm;
    /// use seekless_jobs::manifest::{ManifestEntry, parse_line};
    ///
    /// let want = ManifestEntry::new("900150983cd24fb0d6963f7d28e17f72", "a", Some(Algorithm::Md5));
    /// assert_eq!(parse_line(b"MD5 (a) = 900150983CD24FB0D6963F7D28E17F72"), Some(want));
    /// ```
    pub fn new(hex: impl Into<String>, path: impl Into<PathBuf>, tag: Option<Algorithm>) -> Self {
        Self {
            hex: hex.into(),
            path: path.into(),
            tag,
        }
    }

    /// Whether the line can be checked with `algo`: its digest has `algo`'s length and
    /// its tag, if it has one, names `algo`. `sha256sum -c` counts other lines (an `MD5
    /// (f) = …` line, a 40-digit digest) as improperly formatted.
    pub fn fits(&self, algo: Algorithm) -> bool {
        self.hex.len() == algo.hex_len() && self.tag.is_none_or(|t| t == algo)
    }

    /// Whether the line names standard input (`-`).
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }
}

/// The tag a BSD-style line starts with for each algorithm (`sha256sum --tag`,
/// `sha1sum --tag`, `md5sum --tag`; `b3sum` has no `--tag`, `BLAKE3` is by analogy).
pub fn bsd_tag(algo: Algorithm) -> &'static str {
    match algo {
        Algorithm::Sha256 => "SHA256",
        Algorithm::Sha1 => "SHA1",
        Algorithm::Md5 => "MD5",
        Algorithm::Blake3 => "BLAKE3",
    }
}

/// Whether `sha256sum -c` skips the line (without its newline) without counting it:
/// empty lines (also a lone `\r`) and `#` comments.
pub fn is_blank_or_comment(line: &[u8]) -> bool {
    line.first() == Some(&b'#') || line.is_empty() || line == b"\r"
}

/// Parses one line (without its newline), as coreutils does: blanks before the line,
/// the leading-backslash escaping (`\\`, `\n`, `\r`), a trailing `\r`; `HEX  PATH` and
/// `HEX *PATH`; BSD style `TAG (PATH) = HEX`, also OpenSSL's `TAG(PATH)= HEX`. `None` if
/// malformed. Whether the digest suits an algorithm is [`ManifestEntry::fits`].
pub fn parse_line(line: &[u8]) -> Option<ManifestEntry> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let start = line.iter().position(|b| !is_blank(*b))?;
    let line = &line[start..];
    let (escaped, rest) = match line.strip_prefix(b"\\") {
        Some(r) => (true, r),
        None => (false, line),
    };
    let (hex, name, tag) = match split_tag(rest) {
        Some((algo, inner)) => {
            let (name, hex) = split_bsd(inner)?;
            (hex, name, Some(algo))
        }
        None => {
            let (hex, name) = split_gnu(rest)?;
            (hex, name, None)
        }
    };
    if hex.is_empty() || !hex.iter().all(u8::is_ascii_hexdigit) || name.is_empty() {
        return None;
    }
    let path = if escaped {
        unescape(name)?
    } else {
        // coreutils' names are C strings: one ends at a NUL (`HEX  a\0b` checks `a`).
        let name = name.split(|&b| b == 0).next().unwrap_or_default();
        if name.is_empty() {
            return None;
        }
        name.to_vec()
    };
    Some(ManifestEntry {
        hex: String::from_utf8_lossy(hex).to_ascii_lowercase(),
        path: path_from_bytes(&path),
        tag,
    })
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `TAG (` or `TAG(` at the start: the algorithm and what follows the parenthesis.
fn split_tag(line: &[u8]) -> Option<(Algorithm, &[u8])> {
    [
        Algorithm::Sha256,
        Algorithm::Sha1,
        Algorithm::Md5,
        Algorithm::Blake3,
    ]
    .into_iter()
    .find_map(|algo| {
        let after = line.strip_prefix(bsd_tag(algo).as_bytes())?;
        let after = after.strip_prefix(b" ").unwrap_or(after);
        Some((algo, after.strip_prefix(b"(")?))
    })
}

/// `PATH) = HEX`: the name runs to the last `)`, as in coreutils (names are not escaped
/// for parentheses).
fn split_bsd(inner: &[u8]) -> Option<(&[u8], &[u8])> {
    let close = inner.iter().rposition(|&b| b == b')')?;
    let after = trim_blanks_start(&inner[close + 1..]);
    let hex = trim_blanks_start(after.strip_prefix(b"=")?);
    Some((&inner[..close], hex))
}

/// `HEX  PATH` or `HEX *PATH` (the first separator may be a tab).
fn split_gnu(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let hex_len = rest.iter().position(|b| is_blank(*b))?;
    let after = &rest[hex_len + 1..];
    match after.first()? {
        b' ' | b'*' => Some((&rest[..hex_len], &after[1..])),
        _ => None,
    }
}

fn trim_blanks_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| is_blank(**b)).count();
    &s[n..]
}

/// Undoes the escaping; `None` for a backslash before anything but `\`, `n`, `r`, a
/// trailing backslash, or a NUL.
fn unescape(name: &[u8]) -> Option<Vec<u8>> {
    let mut path = Vec::with_capacity(name.len());
    let mut bytes = name.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'\\' => path.push(match bytes.next()? {
                b'\\' => b'\\',
                b'n' => b'\n',
                b'r' => b'\r',
                _ => return None,
            }),
            0 => return None,
            _ => path.push(b),
        }
    }
    Some(path)
}

/// One manifest's counts while it is checked, and the warnings `sha256sum -c` closes
/// with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tally {
    /// Properly formatted lines.
    pub listed: u64,
    /// Improperly formatted lines (blank lines and comments are not counted).
    pub malformed: u64,
    /// Lines whose file matched.
    pub ok: u64,
    /// Lines whose file did not match.
    pub failed: u64,
    /// Lines whose file could not be opened or read.
    pub unreadable: u64,
}

impl Tally {
    /// Counts a verdict.
    pub fn add(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Ok => self.ok += 1,
            Verdict::Failed => self.failed += 1,
            Verdict::FailedOpenOrRead => self.unreadable += 1,
        }
    }

    /// The closing warnings in coreutils' words, singular or plural as there.
    ///
    /// ```
    /// use seekless_jobs::manifest::Tally;
    /// let mut t = Tally::default();
    /// (t.listed, t.malformed, t.ok, t.failed, t.unreadable) = (3, 2, 1, 1, 1);
    /// assert_eq!(t.warnings(), [
    ///     "WARNING: 2 lines are improperly formatted",
    ///     "WARNING: 1 listed file could not be read",
    ///     "WARNING: 1 computed checksum did NOT match",
    /// ]);
    /// ```
    pub fn warnings(&self) -> Vec<String> {
        let plural = |n: u64, one: &str, many: &str| {
            format!("WARNING: {n} {}", if n == 1 { one } else { many })
        };
        let mut out = Vec::new();
        if self.malformed > 0 {
            out.push(plural(
                self.malformed,
                "line is improperly formatted",
                "lines are improperly formatted",
            ));
        }
        if self.unreadable > 0 {
            out.push(plural(
                self.unreadable,
                "listed file could not be read",
                "listed files could not be read",
            ));
        }
        if self.failed > 0 {
            out.push(plural(
                self.failed,
                "computed checksum did NOT match",
                "computed checksums did NOT match",
            ));
        }
        out
    }

    /// Whether the manifest passed, as `sha256sum -c` decides: some line was properly
    /// formatted, some file matched, none failed or was unreadable, and with `strict` no
    /// line was improperly formatted.
    pub fn passed(&self, strict: bool) -> bool {
        self.listed > 0
            && self.ok > 0
            && self.failed == 0
            && self.unreadable == 0
            && (!strict || self.malformed == 0)
    }
}

/// What one properly formatted line expects: its digest's bytes (the checklist's
/// algorithm fixes the length) and the next line naming the same file.
#[derive(Clone, Copy, Debug)]
struct Line {
    digest: [u8; 32],
    /// The next line naming the same file, or [`NONE`].
    next: u32,
}

/// No line, no file.
const NONE: u32 = u32::MAX;

/// One distinct listed file: where its name lies in the checklist's buffer of names, and
/// its lines, chained from the last ([`NONE`] once judged).
#[derive(Clone, Copy, Debug)]
struct Listed {
    start: usize,
    len: u32,
    last_line: u32,
}

/// A digest's bytes from `hex` (either case); `None` if it is not an even number of at
/// most 64 hex digits.
fn digest_from_hex(hex: &[u8]) -> Option<[u8; 32]> {
    if !hex.len().is_multiple_of(2) || hex.len() > 64 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut bytes = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        bytes[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(bytes)
}

/// The lines of one or more manifests, and the verdicts given so far: which files to
/// read, what each line expects, and each manifest's [`Tally`].
///
/// Every line gets its own verdict, as `sha256sum -c` gives it, but a file listed on
/// several lines (or in several manifests) is read once. A line naming `-` means
/// standard input, which is read again for each such line (as `sha256sum -c` does: the
/// second read finds it at its end); in a manifest that is itself read from standard
/// input, such a line is improperly formatted, as in coreutils.
///
/// Memory: each distinct name once, in one buffer (rounds are planned from borrowed
/// paths into it, not from copies), 16 bytes per file, ~8 for its slot in the lookup
/// table and 36 per line (issue 21.4's budget for `--check` is 250 bytes per line, the
/// plan included).
///
/// ```
/// use seekless_jobs::digest::Algorithm;
/// use seekless_jobs::manifest::{Checklist, Verdict};
///
/// let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
/// let mut list = Checklist::new(Algorithm::Sha256);
/// list.start_manifest(false);
/// assert!(list.add_line(format!("{abc}  a").as_bytes()));
/// assert!(list.add_line(format!("SHA256 (a) = {abc}").as_bytes()));
/// assert!(!list.add_line(b"not a checksum line"));
/// assert_eq!(list.files(), [std::path::PathBuf::from("a")]);
/// // The file is read once; both lines get their verdict.
/// let verdicts = list.judge("a".as_ref(), Some(abc));
/// assert_eq!(verdicts, [Verdict::Ok, Verdict::Ok]);
/// assert_eq!(list.tallies()[0].warnings(), ["WARNING: 1 line is improperly formatted"]);
/// ```
#[derive(Debug)]
pub struct Checklist {
    algo: Algorithm,
    tallies: Vec<Tally>,
    from_stdin: Vec<bool>,
    /// The index in `lines` of each manifest's first line.
    first_line: Vec<u32>,
    /// Every distinct listed name, one after the other.
    names: Vec<u8>,
    /// The distinct listed files, in the order first listed.
    files: Vec<Listed>,
    /// Open addressing over `files`: each slot holds a file's index or [`NONE`]; at most
    /// half full.
    table: Vec<u32>,
    hasher: std::collections::hash_map::RandomState,
    /// The lines naming files, in manifest order.
    lines: Vec<Line>,
    /// The lines naming standard input: their manifest and digest.
    stdin: Vec<(u32, [u8; 32])>,
    /// Files without verdicts yet.
    awaiting: usize,
}

impl Checklist {
    /// The algorithm its digests are for.
    pub fn algorithm(&self) -> Algorithm {
        self.algo
    }

    /// An empty checklist for digests of `algo`.
    pub fn new(algo: Algorithm) -> Self {
        Self {
            algo,
            tallies: Vec::new(),
            from_stdin: Vec::new(),
            first_line: Vec::new(),
            names: Vec::new(),
            files: Vec::new(),
            table: Vec::new(),
            hasher: Default::default(),
            lines: Vec::new(),
            stdin: Vec::new(),
            awaiting: 0,
        }
    }

    /// Starts the next manifest: the lines added after belong to it. `from_stdin`: the
    /// manifest is read from standard input. Returns its index in
    /// [`tallies`](Self::tallies).
    pub fn start_manifest(&mut self, from_stdin: bool) -> usize {
        self.tallies.push(Tally::default());
        self.from_stdin.push(from_stdin);
        self.first_line.push(self.lines.len() as u32);
        self.tallies.len() - 1
    }

    /// Adds every line of a manifest, as a new manifest (see
    /// [`start_manifest`](Self::start_manifest)), calling `malformed` with the number
    /// (from 1) of each improperly formatted line (`sha256sum -c -w` names them).
    pub fn add_manifest(
        &mut self,
        mut manifest: impl std::io::BufRead,
        from_stdin: bool,
        mut malformed: impl FnMut(usize),
    ) -> std::io::Result<()> {
        self.start_manifest(from_stdin);
        let mut line = Vec::new();
        let mut n = 0;
        loop {
            line.clear();
            if manifest.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            n += 1;
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            if !self.add_line(text) {
                malformed(n);
            }
        }
        self.shrink_to_fit();
        Ok(())
    }

    /// Gives back the spare capacity the lists grew with.
    fn shrink_to_fit(&mut self) {
        self.names.shrink_to_fit();
        self.files.shrink_to_fit();
        self.lines.shrink_to_fit();
        self.stdin.shrink_to_fit();
    }

    /// Adds one line (without its newline) of the current manifest (lines added before
    /// any [`start_manifest`](Self::start_manifest) start one). Blank lines and comments
    /// are skipped. Returns `false` if the line is improperly formatted for this
    /// checklist's algorithm (it is counted in the manifest's tally).
    pub fn add_line(&mut self, line: &[u8]) -> bool {
        if self.tallies.is_empty() {
            self.start_manifest(false);
        }
        let manifest = self.tallies.len() - 1;
        if is_blank_or_comment(line) {
            return true;
        }
        let entry = parse_line(line)
            .filter(|e| e.fits(self.algo) && !(e.is_stdin() && self.from_stdin[manifest]));
        let Some(entry) = entry else {
            self.tallies[manifest].malformed += 1;
            return false;
        };
        let Some(digest) = digest_from_hex(entry.hex.as_bytes()) else {
            self.tallies[manifest].malformed += 1;
            return false;
        };
        if entry.is_stdin() {
            self.tallies[manifest].listed += 1;
            self.stdin.push((manifest as u32, digest));
            return true;
        }
        let name = entry.path.as_os_str().as_encoded_bytes();
        if self.lines.len() >= NONE as usize - 1 || u32::try_from(name.len()).is_err() {
            // More lines than a u32 counts: no manifest is that long in practice.
            self.tallies[manifest].malformed += 1;
            return false;
        }
        self.tallies[manifest].listed += 1;
        let file = match self.find(name) {
            Ok(file) => file,
            Err(slot) => self.insert(slot, name),
        };
        let last = &mut self.files[file as usize].last_line;
        if *last == NONE {
            self.awaiting += 1;
        }
        self.lines.push(Line {
            digest,
            next: *last,
        });
        *last = (self.lines.len() - 1) as u32;
        true
    }

    /// The index of the file named `name`, or the free slot of the table where it would go.
    fn find(&self, name: &[u8]) -> Result<u32, usize> {
        if self.table.is_empty() {
            return Err(0);
        }
        let mask = self.table.len() - 1;
        // Names compare as bytes (`a//b` is not `a/b`, as in `sha256sum -c`), not as
        // `Path`s, which compare by components.
        let mut slot = self.hasher.hash_one(name) as usize & mask;
        loop {
            match self.table[slot] {
                NONE => return Err(slot),
                i if self.name(i) == name => return Ok(i),
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// Adds a file named `name` at `slot` (from [`find`](Self::find)); returns its index.
    fn insert(&mut self, slot: usize, name: &[u8]) -> u32 {
        let index = self.files.len() as u32;
        self.files.push(Listed {
            start: self.names.len(),
            len: name.len() as u32,
            last_line: NONE,
        });
        self.names.extend_from_slice(name);
        if self.files.len() * 2 > self.table.len() {
            self.rehash();
        } else {
            self.table[slot] = index;
        }
        index
    }

    /// Doubles the table (16 slots at first) and places every file again.
    fn rehash(&mut self) {
        let size = (self.table.len() * 2).max(16);
        self.table = vec![NONE; size];
        let mask = size - 1;
        for i in 0..self.files.len() as u32 {
            let mut slot = self.hasher.hash_one(self.name(i)) as usize & mask;
            while self.table[slot] != NONE {
                slot = (slot + 1) & mask;
            }
            self.table[slot] = i;
        }
    }

    /// The distinct files listed (not `-`), in the order they were first listed.
    pub fn files(&self) -> Vec<PathBuf> {
        (0..self.files.len() as u32)
            .map(|i| self.path(i).to_path_buf())
            .collect()
    }

    /// The name of file `i`, as listed.
    fn name(&self, i: u32) -> &[u8] {
        let f = &self.files[i as usize];
        &self.names[f.start..f.start + f.len as usize]
    }

    /// The path of file `i`.
    fn path(&self, i: u32) -> &Path {
        // SAFETY: each name in the buffer is the whole of an `OsStr`'s encoded bytes
        // (`add_line`), taken by this same program.
        Path::new(unsafe { OsStr::from_encoded_bytes_unchecked(self.name(i)) })
    }

    /// [`pending`](Self::pending), borrowed: to plan from without a copy of each path
    /// (nor a list of them: 16 bytes a line at the peak of a million-line check).
    pub fn pending_paths(&self) -> impl Iterator<Item = &Path> + '_ {
        (self.files.iter().enumerate())
            .filter(|(_, f)| f.last_line != NONE)
            .map(|(i, _)| self.path(i as u32))
    }

    /// The listed files without verdicts yet, in the order they were first listed.
    pub fn pending(&self) -> Vec<PathBuf> {
        self.pending_where(|_| true)
    }

    /// The listed files without verdicts yet for which `keep` is true, in the order they
    /// were first listed.
    pub fn pending_where(&self, mut keep: impl FnMut(&Path) -> bool) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (i, f) in self.files.iter().enumerate() {
            let path = self.path(i as u32);
            if f.last_line != NONE && keep(path) {
                out.push(path.to_path_buf());
            }
        }
        out
    }

    /// How many listed files have no verdicts yet.
    pub fn awaiting(&self) -> usize {
        self.awaiting
    }

    /// How many lines name standard input (`-`).
    pub fn stdin_lines(&self) -> usize {
        self.stdin.len()
    }

    /// Gives every line listing `path` its verdict from the file's digest (`None`: it
    /// could not be opened or read), and counts them. Returns the verdicts in manifest
    /// order; none if `path` is not listed or already has its verdicts.
    pub fn judge(&mut self, path: &Path, digest: Option<&str>) -> Vec<Verdict> {
        let Ok(file) = self.find(path.as_os_str().as_encoded_bytes()) else {
            return Vec::new();
        };
        let mut line = std::mem::replace(&mut self.files[file as usize].last_line, NONE);
        if line == NONE {
            return Vec::new();
        }
        self.awaiting -= 1;
        let digest = digest.map(|d| digest_from_hex(d.as_bytes()));
        let mut verdicts = Vec::new();
        while line != NONE {
            let l = self.lines[line as usize];
            let manifest = self.first_line.partition_point(|&first| first <= line) - 1;
            verdicts.push(self.judge_line(manifest, &l.digest, digest));
            line = l.next;
        }
        verdicts.reverse();
        verdicts
    }

    /// Gives the `i`-th line naming standard input its verdict from what reading standard
    /// input gave for it.
    ///
    /// # Panics
    ///
    /// If `i` is not below [`stdin_lines`](Self::stdin_lines).
    pub fn judge_stdin(&mut self, i: usize, digest: Option<&str>) -> Verdict {
        let (manifest, expected) = self.stdin[i];
        let digest = digest.map(|d| digest_from_hex(d.as_bytes()));
        self.judge_line(manifest as usize, &expected, digest)
    }

    /// The verdict on a line of `manifest` expecting `expected`, counted, from the
    /// file's digest (`None`: unreadable; `Some(None)`: not a digest).
    fn judge_line(
        &mut self,
        manifest: usize,
        expected: &[u8; 32],
        digest: Option<Option<[u8; 32]>>,
    ) -> Verdict {
        let verdict = match digest {
            None => Verdict::FailedOpenOrRead,
            Some(Some(d)) if d == *expected => Verdict::Ok,
            Some(_) => Verdict::Failed,
        };
        self.tallies[manifest].add(verdict);
        verdict
    }

    /// Each manifest's tally, in the order they were started.
    pub fn tallies(&self) -> &[Tally] {
        &self.tallies
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA256_ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn a_manifest_file_is_written_as_its_lines_come_and_appears_only_when_complete() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("SUMS");
        let mut manifest = ManifestFile::create(&path).unwrap();
        let temp = manifest.file.temp_path().unwrap().to_path_buf();
        let hex = "ab".repeat(32);
        let mut want = Vec::new();
        for i in 0..20_000 {
            let name = format!("photos/{i:05}/{}.jpg", "x".repeat(i % 50));
            manifest.push(&hex, Path::new(&name));
            want.extend_from_slice(format!("{hex}  {name}\n").as_bytes());
            // Never more than one buffer's worth held: the rest is in the temporary. (Looked
            // at every 97th line: Wine leaks a handle per metadata call, and runs out.)
            if i % 97 == 0 {
                let written = std::fs::metadata(&temp).unwrap().len() as usize;
                assert!(
                    want.len() - written <= MANIFEST_BUFFER + 200,
                    "{} bytes of lines held after line {i}",
                    want.len() - written
                );
            }
            assert!(manifest.pending.capacity() <= 2 * MANIFEST_BUFFER + 200);
        }
        assert!(want.len() > 20 * MANIFEST_BUFFER, "{} bytes", want.len());
        assert!(!path.exists(), "not under its name before the commit");
        // An escaped name is escaped in the file as format_line escapes it.
        manifest.push(&hex, Path::new("two\nlines"));
        want.extend_from_slice(&format_line(&hex, b"two\nlines"));
        want.push(b'\n');
        manifest.commit().unwrap();
        assert!(
            std::fs::read(&path).unwrap() == want,
            "every line, in order"
        );
        assert!(!temp.exists());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_manifest_that_cannot_be_written_fails_its_commit() {
        // /dev/full is written into, never replaced: every write fails with ENOSPC.
        let mut manifest = ManifestFile::create(Path::new("/dev/full")).unwrap();
        for _ in 0..5_000 {
            manifest.push(SHA256_ABC, Path::new("some/file/name"));
        }
        assert!(manifest.failed.is_some(), "a buffer's worth was written");
        let err = manifest.commit().unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
        let mut short = ManifestFile::create(Path::new("/dev/full")).unwrap();
        short.push(SHA256_ABC, Path::new("a"));
        assert!(
            short.commit().is_err(),
            "the last lines are written at the commit"
        );
    }

    #[test]
    fn plain_names_are_written_as_is() {
        assert_eq!(format_line("ab", b"dir/f.jpg"), b"ab  dir/f.jpg".to_vec());
    }

    #[test]
    fn newlines_and_backslashes_are_escaped_like_coreutils() {
        let line = format_line("ab", b"a\nb\\c");
        if cfg!(windows) {
            // There the backslash is a separator, written `/`.
            assert_eq!(line, b"\\ab  a\\nb/c".to_vec());
        } else {
            assert_eq!(line, b"\\ab  a\\nb\\\\c".to_vec());
        }
    }

    #[test]
    fn carriage_returns_are_escaped_like_coreutils_9() {
        assert_eq!(format_line("ab", b"c\rr"), b"\\ab  c\\rr".to_vec());
        assert_eq!(parse_line(b"\\ab  c\\rr").unwrap().path, Path::new("c\rr"));
    }

    #[test]
    fn windows_separators_are_written_as_slashes_and_a_backslash_elsewhere_is_escaped() {
        let name = b".\\sub dir\\x";
        if cfg!(windows) {
            // As b3sum writes names on Windows; nothing left to escape.
            assert_eq!(format_line("00", name), b"00  ./sub dir/x");
            assert_eq!(format_verdict(name, Verdict::Ok), b"./sub dir/x: OK");
        } else {
            // A backslash in a Unix name is a character of it.
            assert_eq!(format_line("00", name), b"\\00  .\\\\sub dir\\\\x");
            assert_eq!(
                format_verdict(name, Verdict::Ok),
                b"\\.\\\\sub dir\\\\x: OK"
            );
        }
    }

    #[test]
    fn a_file_named_dash_is_written_dot_slash_dash() {
        assert_eq!(name_in_manifest(b"-"), b"./-");
        assert_eq!(name_in_manifest(b"./-"), b"./-");
        assert_eq!(name_in_manifest(b"-x"), b"-x");
    }

    #[test]
    fn lines_round_trip_through_the_parser() {
        for name in [
            &b"plain"[..],
            b"a\nb",
            b"back\\slash",
            b"caf\xe9",
            b"c\rr",
            b"end\r",
            b"sp ace",
        ] {
            let line = format_line("00ff", name);
            let e = parse_line(&line).unwrap();
            assert_eq!(e.hex, "00ff");
            assert_eq!(e.tag, None);
            assert_eq!(path_from_bytes(name), e.path);
        }
    }

    #[test]
    fn binary_markers_and_malformed_lines() {
        assert_eq!(parse_line(b"AB *x").unwrap().hex, "ab");
        assert!(parse_line(b"zz  x").is_none());
        assert!(parse_line(b"ab").is_none());
        assert!(parse_line(b"ab  ").is_none());
        assert!(parse_line(b"\\ab  bad\\q").is_none());
        assert!(parse_line(b"\\ab  trailing\\").is_none());
        assert!(parse_line(b"ab x").is_none());
    }

    #[test]
    fn a_name_ends_at_a_nul_as_in_coreutils() {
        // sha256sum 9.1 checks `a` for these lines; the fuzz target `manifest` found
        // that such a line named the path `a\0zz`, which no file has.
        assert_eq!(parse_line(b"ab  a\0zz").unwrap().path, Path::new("a"));
        assert_eq!(
            parse_line(b"MD5 (a\0zz) = ab").unwrap().path,
            Path::new("a")
        );
        // Nothing before the NUL: no name (coreutils lists `''`, which cannot be read).
        assert!(parse_line(b"ab  \0zz").is_none());
        // Escaped names have no way to write a NUL, as in coreutils.
        assert!(parse_line(b"\\ab  a\0zz\\\\z").is_none());
    }

    #[test]
    fn blanks_before_the_line_and_a_trailing_cr_are_ignored() {
        let e = parse_line(b" \tab  x\r").unwrap();
        assert_eq!((e.hex.as_str(), e.path.as_path()), ("ab", Path::new("x")));
        assert_eq!(parse_line(b"ab\t x").unwrap().path, Path::new("x"));
    }

    #[test]
    fn bsd_tagged_lines_name_their_algorithm() {
        let e = parse_line(format!("SHA256 (dir/a b) = {SHA256_ABC}").as_bytes()).unwrap();
        assert_eq!(e.path, Path::new("dir/a b"));
        assert_eq!(e.tag, Some(Algorithm::Sha256));
        assert!(e.fits(Algorithm::Sha256));
        assert!(!e.fits(Algorithm::Blake3), "same length, other algorithm");

        // OpenSSL's spacing, and a name with parentheses: it runs to the last ')'.
        let e = parse_line(format!("SHA256(x (1))= {SHA256_ABC}").as_bytes()).unwrap();
        assert_eq!(e.path, Path::new("x (1)"));

        let md5 = parse_line(b"MD5 (a) = 900150983cd24fb0d6963f7d28e17f72").unwrap();
        assert_eq!(md5.tag, Some(Algorithm::Md5));
        assert!(md5.fits(Algorithm::Md5) && !md5.fits(Algorithm::Sha256));
        let sha1 = parse_line(b"SHA1 (a) = a9993e364706816aba3e25717850c26c9cd0d89d").unwrap();
        assert!(sha1.fits(Algorithm::Sha1));
        let b3 = parse_line(format!("BLAKE3 (a) = {SHA256_ABC}").as_bytes()).unwrap();
        assert!(b3.fits(Algorithm::Blake3) && !b3.fits(Algorithm::Sha256));

        let esc = parse_line(format!("\\SHA256 (n\\nl) = {SHA256_ABC}").as_bytes()).unwrap();
        assert_eq!(esc.path, Path::new("n\nl"));

        assert!(parse_line(b"SHA256 (a) = zz").is_none());
        assert!(parse_line(b"SHA256 (a) zz").is_none());
        assert!(parse_line(b"SHA512 (a) = 00").is_none(), "unknown tag");
        assert!(parse_line(format!("SHA256 () = {SHA256_ABC}").as_bytes()).is_none());
    }

    #[test]
    fn untagged_lines_fit_by_digest_length() {
        let e = parse_line(format!("{SHA256_ABC}  a").as_bytes()).unwrap();
        assert!(e.fits(Algorithm::Sha256) && e.fits(Algorithm::Blake3));
        assert!(!e.fits(Algorithm::Md5));
    }

    #[test]
    fn verdicts_escape_names_like_current_coreutils() {
        assert_eq!(format_verdict(b"a", Verdict::Ok), b"a: OK");
        assert_eq!(format_verdict(b"a", Verdict::Failed), b"a: FAILED");
        assert_eq!(
            format_verdict(b"a\nb", Verdict::FailedOpenOrRead),
            b"\\a\\nb: FAILED open or read"
        );
        let backslash = format_verdict(b"b\\s", Verdict::Ok);
        if cfg!(windows) {
            // There the backslash is a separator, written `/`.
            assert_eq!(backslash, b"b/s: OK");
        } else {
            assert_eq!(backslash, b"\\b\\\\s: OK");
        }
        assert_eq!(format_verdict(b"c\rr", Verdict::Ok), b"\\c\\rr: OK");
        assert_eq!(format_verdict(b"caf\xe9", Verdict::Ok), b"caf\xe9: OK");
    }

    #[test]
    fn warnings_are_singular_or_plural_like_coreutils() {
        let one = Tally {
            listed: 2,
            malformed: 1,
            ok: 0,
            failed: 1,
            unreadable: 1,
        };
        assert_eq!(
            one.warnings(),
            [
                "WARNING: 1 line is improperly formatted",
                "WARNING: 1 listed file could not be read",
                "WARNING: 1 computed checksum did NOT match",
            ]
        );
        let many = Tally {
            listed: 4,
            malformed: 2,
            ok: 0,
            failed: 2,
            unreadable: 2,
        };
        assert_eq!(
            many.warnings(),
            [
                "WARNING: 2 lines are improperly formatted",
                "WARNING: 2 listed files could not be read",
                "WARNING: 2 computed checksums did NOT match",
            ]
        );
        assert!(Tally::default().warnings().is_empty());
    }

    #[test]
    fn a_manifest_passes_only_with_a_match_and_no_failure() {
        let clean = Tally {
            listed: 1,
            ok: 1,
            ..Tally::default()
        };
        assert!(clean.passed(true));
        let sloppy = Tally {
            malformed: 1,
            ..clean.clone()
        };
        assert!(sloppy.passed(false) && !sloppy.passed(true));
        assert!(
            !Tally::default().passed(false),
            "no properly formatted line"
        );
        let unreadable = Tally {
            unreadable: 1,
            ..clean
        };
        assert!(!unreadable.passed(false));
    }

    #[test]
    fn every_line_gets_a_verdict_and_each_file_is_read_once() {
        let mut list = Checklist::new(Algorithm::Sha256);
        let zeros = "0".repeat(64);
        let first = list.start_manifest(false);
        assert!(list.add_line(format!("{SHA256_ABC}  a").as_bytes()));
        assert!(list.add_line(b"# a comment"));
        assert!(list.add_line(b""));
        assert!(list.add_line(format!("{zeros}  a\r").as_bytes()));
        assert!(list.add_line(format!("{zeros}  b").as_bytes()));
        assert!(!list.add_line(b"MD5 (a) = 900150983cd24fb0d6963f7d28e17f72"));
        let second = list.start_manifest(false);
        assert!(list.add_line(format!("SHA256 (a) = {SHA256_ABC}").as_bytes()));
        assert!(list.add_line(format!("{SHA256_ABC}  ./a").as_bytes()));

        assert_eq!(
            list.files(),
            [PathBuf::from("a"), PathBuf::from("b"), PathBuf::from("./a")]
        );
        assert_eq!(
            list.judge(Path::new("a"), Some(SHA256_ABC)),
            [Verdict::Ok, Verdict::Failed, Verdict::Ok]
        );
        assert!(list.judge(Path::new("a"), Some(SHA256_ABC)).is_empty());
        assert!(list.judge(Path::new("unlisted"), None).is_empty());
        assert_eq!(list.pending(), [PathBuf::from("b"), PathBuf::from("./a")]);
        assert_eq!(
            list.judge(Path::new("b"), None),
            [Verdict::FailedOpenOrRead]
        );
        assert_eq!(
            list.judge(Path::new("./a"), Some(SHA256_ABC)),
            [Verdict::Ok]
        );
        assert!(list.pending().is_empty());

        let t = list.tallies();
        assert_eq!(
            t[first],
            Tally {
                listed: 3,
                malformed: 1,
                ok: 1,
                failed: 1,
                unreadable: 1
            }
        );
        assert_eq!(
            t[second],
            Tally {
                listed: 2,
                ok: 2,
                ..Tally::default()
            }
        );
    }

    #[test]
    fn names_are_told_apart_byte_for_byte_as_in_coreutils() {
        // `Path`s compare by components: `a//b` equals `a/b` there, not here.
        let mut list = Checklist::new(Algorithm::Sha256);
        for name in ["a/b", "a//b", "a/./b", "a/b/", "a/b"] {
            assert!(list.add_line(format!("{SHA256_ABC}  {name}").as_bytes()));
        }
        assert_eq!(
            list.files(),
            ["a/b", "a//b", "a/./b", "a/b/"].map(PathBuf::from)
        );
        assert_eq!(list.awaiting(), 4);
        assert_eq!(list.judge(Path::new("a/b"), None).len(), 2);
        assert_eq!(list.judge(Path::new("a//b"), None).len(), 1);
        assert_eq!(list.pending(), ["a/./b", "a/b/"].map(PathBuf::from));
    }

    #[test]
    fn many_files_are_found_again_after_the_table_grows() {
        let mut list = Checklist::new(Algorithm::Md5);
        let hex = |i: u32| format!("{:032x}", i);
        for i in 0..5000 {
            assert!(list.add_line(format!("{}  f{i}", hex(i)).as_bytes()));
        }
        assert!(list.add_line(format!("{}  f7", hex(7)).as_bytes()));
        assert_eq!(list.files().len(), 5000);
        for i in (0..5000).rev() {
            let want = if i == 7 { 2 } else { 1 };
            let v = list.judge(Path::new(&format!("f{i}")), Some(&hex(i)));
            assert_eq!(v, vec![Verdict::Ok; want], "f{i}");
        }
        assert_eq!(list.awaiting(), 0);
        assert_eq!(list.tallies()[0].ok, 5001);
    }

    #[test]
    fn dash_means_standard_input_except_in_a_manifest_read_from_it() {
        let mut list = Checklist::new(Algorithm::Sha256);
        list.start_manifest(false);
        assert!(list.add_line(format!("{SHA256_ABC}  -").as_bytes()));
        assert!(list.add_line(format!("{SHA256_ABC}  ./-").as_bytes()));
        assert_eq!(list.stdin_lines(), 1);
        assert_eq!(list.files(), [PathBuf::from("./-")]);
        assert_eq!(list.judge_stdin(0, Some(SHA256_ABC)), Verdict::Ok);

        let piped = list.start_manifest(true);
        assert!(!list.add_line(format!("{SHA256_ABC}  -").as_bytes()));
        assert_eq!(list.tallies()[piped].malformed, 1);
        assert_eq!(list.stdin_lines(), 1);
    }
}
