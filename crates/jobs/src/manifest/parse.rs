//! Reading manifests: one line parsed ([`parse_line`]) into a [`ManifestEntry`], in
//! either style (`HEX  PATH`, `TAG (PATH) = HEX`), escaped names unescaped.

use std::path::PathBuf;

use crate::digest::Algorithm;
use seekless_sys::path_from_bytes;

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

pub(super) fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `TAG (` or `TAG(` at the start: the algorithm and what follows the parenthesis.
pub(super) fn split_tag(line: &[u8]) -> Option<(Algorithm, &[u8])> {
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
pub(super) fn split_bsd(inner: &[u8]) -> Option<(&[u8], &[u8])> {
    let close = inner.iter().rposition(|&b| b == b')')?;
    let after = trim_blanks_start(&inner[close + 1..]);
    let hex = trim_blanks_start(after.strip_prefix(b"=")?);
    Some((&inner[..close], hex))
}

/// `HEX  PATH` or `HEX *PATH` (the first separator may be a tab).
pub(super) fn split_gnu(rest: &[u8]) -> Option<(&[u8], &[u8])> {
    let hex_len = rest.iter().position(|b| is_blank(*b))?;
    let after = &rest[hex_len + 1..];
    match after.first()? {
        b' ' | b'*' => Some((&rest[..hex_len], &after[1..])),
        _ => None,
    }
}

pub(super) fn trim_blanks_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| is_blank(**b)).count();
    &s[n..]
}

/// Undoes the escaping; `None` for a backslash before anything but `\`, `n`, `r`, a
/// trailing backslash, or a NUL.
pub(super) fn unescape(name: &[u8]) -> Option<Vec<u8>> {
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
