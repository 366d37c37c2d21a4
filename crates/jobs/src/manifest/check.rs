//! Checking against a manifest: the [`Checklist`] of what it lists, the [`Tally`] of
//! one manifest, and each file's [`Verdict`] as `sha256sum -c` words it.

use std::ffi::OsStr;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};

use super::parse::{UntaggedForm, is_blank_or_comment, parse_line_in};
use super::write::{needs_escape, portable_name, push_name};
use crate::digest::Algorithm;

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
    let escape = needs_escape(path, true);
    let mut line = Vec::with_capacity(path.len() + 24);
    if escape {
        line.push(b'\\');
    }
    push_name(&mut line, path, escape, true);
    line.extend_from_slice(b": ");
    line.extend_from_slice(verdict.as_str().as_bytes());
    line
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
pub(super) struct Line {
    digest: [u8; 32],
    /// The next line naming the same file, or [`NONE`].
    next: u32,
}

/// No line, no file.
pub(super) const NONE: u32 = u32::MAX;

/// One distinct listed file: where its name lies in the checklist's buffer of names, and
/// its lines, chained from the last ([`NONE`] once judged).
#[derive(Clone, Copy, Debug)]
pub(super) struct Listed {
    start: usize,
    len: u32,
    last_line: u32,
}

/// A digest's bytes from `hex` (either case); `None` if it is not an even number of at
/// most 64 hex digits.
pub(super) fn digest_from_hex(hex: &[u8]) -> Option<[u8; 32]> {
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
    /// The form of untagged lines, once the first has decided it (for every manifest
    /// after, as coreutils).
    form: UntaggedForm,
    /// What ends a line: `\n`, or NUL for manifests written with `-z`.
    line_end: u8,
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
            form: UntaggedForm::Unknown,
            line_end: b'\n',
        }
    }

    /// Reads manifests whose lines end with NUL (as `sha256sum -z` writes them, names
    /// unescaped) instead of a newline: a trailing `\r` is then part of the name.
    pub fn set_nul_terminated(&mut self, nul: bool) {
        self.line_end = if nul { 0 } else { b'\n' };
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
            if manifest.read_until(self.line_end, &mut line)? == 0 {
                break;
            }
            n += 1;
            let text = line.strip_suffix(&[self.line_end]).unwrap_or(&line);
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
        // `b3sum -c` keeps a trailing CR in the name (and reads no `\r` escape).
        let strip_cr = self.line_end == b'\n' && self.algo != Algorithm::Blake3;
        let entry = parse_line_in(line, &mut self.form, Some(self.algo), strip_cr)
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

    /// Drops every line listing `path` without a verdict (`--ignore-missing`, for a file
    /// that does not exist): they are counted neither as read nor as failed. Returns how
    /// many lines were dropped.
    pub fn ignore(&mut self, path: &Path) -> usize {
        let Ok(file) = self.find(path.as_os_str().as_encoded_bytes()) else {
            return 0;
        };
        let mut line = std::mem::replace(&mut self.files[file as usize].last_line, NONE);
        if line == NONE {
            return 0;
        }
        self.awaiting -= 1;
        let mut n = 0;
        while line != NONE {
            n += 1;
            line = self.lines[line as usize].next;
        }
        n
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
