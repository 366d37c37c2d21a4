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
/// the leading-backslash escaping (`\\`, `\n`, `\r`), a trailing `\r`; `HEX  PATH`,
/// `HEX *PATH` and the single-space `HEX PATH` (as `md5 -r` writes it); BSD style
/// `TAG (PATH) = HEX`, also OpenSSL's `TAG(PATH)= HEX`. `None` if malformed. Whether the
/// digest suits an algorithm is [`ManifestEntry::fits`].
///
/// A line alone cannot always say which untagged form it is in: `HEX  PATH` is also the
/// single-space form of a name starting with a blank. This reads it as the first
/// untagged line of a manifest; checking, coreutils and
/// [`Checklist`](super::Checklist) let the first untagged line decide the form of every
/// later one.
pub fn parse_line(line: &[u8]) -> Option<ManifestEntry> {
    parse_line_in(line, &mut UntaggedForm::Unknown, None, true)
}

/// Which form untagged lines are in, as `sha256sum -c` decides it: the first untagged
/// line that is otherwise well formed fixes it for the rest of the run (the manifests
/// after it too). Once lines are two-space, a `HEX NAME` line is improperly formatted;
/// once they are single-space, a `HEX  NAME` line names ` NAME` (coreutils refuses to
/// mix them: a file renamed with a leading blank could pass for another).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum UntaggedForm {
    /// No untagged line seen yet.
    #[default]
    Unknown,
    /// Two-space (or space-star) lines.
    TwoSpace,
    /// Single-space lines.
    OneSpace,
}

/// [`parse_line`], minding and updating `form`. With `algo`, an untagged line whose
/// digest is not `algo`'s length is refused before it can decide the form (coreutils
/// reads exactly that many digits). `strip_cr`: drop a trailing `\r` (not for lines
/// ended by NUL, whose names are written raw).
pub(crate) fn parse_line_in(
    line: &[u8],
    form: &mut UntaggedForm,
    algo: Option<Algorithm>,
    strip_cr: bool,
) -> Option<ManifestEntry> {
    let line = match strip_cr {
        true => line.strip_suffix(b"\r").unwrap_or(line),
        false => line,
    };
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
            let (hex, name) = split_gnu(rest, form, algo)?;
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

/// `HEX  PATH`, `HEX *PATH` (the first separator may be a tab) or `HEX PATH`, as `form`
/// allows, deciding it if it is still open.
fn split_gnu<'a>(
    rest: &'a [u8],
    form: &mut UntaggedForm,
    algo: Option<Algorithm>,
) -> Option<(&'a [u8], &'a [u8])> {
    let hex_len = rest.iter().position(|b| is_blank(*b))?;
    let hex = &rest[..hex_len];
    let after = &rest[hex_len + 1..];
    if after.is_empty()
        || algo.is_some_and(|a| a.hex_len() != hex_len)
        || !hex.iter().all(u8::is_ascii_hexdigit)
    {
        return None;
    }
    let single = after.len() == 1 || !matches!(after[0], b' ' | b'*');
    if single {
        if *form == UntaggedForm::TwoSpace {
            return None;
        }
        *form = UntaggedForm::OneSpace;
        return Some((hex, after));
    }
    match form {
        UntaggedForm::OneSpace => Some((hex, after)),
        _ => {
            *form = UntaggedForm::TwoSpace;
            Some((hex, &after[1..]))
        }
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
