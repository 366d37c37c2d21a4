//! Checksum manifest lines in the coreutils format (`sha256sum`, `b3sum`):
//! `HEX  PATH`, and `\HEX  PATH` with `\\` and `\n` escaped when the name contains a
//! backslash or a newline.

use std::path::PathBuf;

/// Formats one manifest line (without the trailing newline) from raw path bytes.
pub fn format_line(hex: &str, path: &[u8]) -> Vec<u8> {
    let needs_escape = path.iter().any(|&b| b == b'\\' || b == b'\n');
    let mut line = Vec::with_capacity(hex.len() + path.len() + 4);
    if needs_escape {
        line.push(b'\\');
    }
    line.extend_from_slice(hex.as_bytes());
    line.extend_from_slice(b"  ");
    for &b in path {
        match b {
            b'\\' if needs_escape => line.extend_from_slice(b"\\\\"),
            b'\n' => line.extend_from_slice(b"\\n"),
            _ => line.push(b),
        }
    }
    line
}

/// One parsed manifest line.
#[derive(Debug, PartialEq, Eq)]
pub struct ManifestEntry {
    /// The expected digest, lower-case hex.
    pub hex: String,
    /// The path as written (unescaped bytes).
    pub path: PathBuf,
}

/// Parses one line (without its newline). Accepts text (`HEX  PATH`) and binary
/// (`HEX *PATH`) markers and the leading-backslash escaping. `None` if malformed.
pub fn parse_line(line: &[u8]) -> Option<ManifestEntry> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let (escaped, rest) = match line.strip_prefix(b"\\") {
        Some(r) => (true, r),
        None => (false, line),
    };
    let hex_len = rest.iter().position(|b| *b == b' ')?;
    let hex = std::str::from_utf8(&rest[..hex_len]).ok()?;
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let after = &rest[hex_len + 1..];
    let name = match after.first()? {
        b' ' | b'*' => &after[1..],
        _ => return None,
    };
    if name.is_empty() {
        return None;
    }
    let mut path = Vec::with_capacity(name.len());
    if escaped {
        let mut i = 0;
        while i < name.len() {
            if name[i] == b'\\' {
                match name.get(i + 1)? {
                    b'\\' => path.push(b'\\'),
                    b'n' => path.push(b'\n'),
                    _ => return None,
                }
                i += 2;
            } else {
                path.push(name[i]);
                i += 1;
            }
        }
    } else {
        path.extend_from_slice(name);
    }
    Some(ManifestEntry {
        hex: hex.to_ascii_lowercase(),
        path: path_from_bytes(path),
    })
}

#[cfg(unix)]
fn path_from_bytes(b: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(b))
}

#[cfg(not(unix))]
fn path_from_bytes(b: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&b).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_written_as_is() {
        assert_eq!(format_line("ab", b"dir/f.jpg"), b"ab  dir/f.jpg".to_vec());
    }

    #[test]
    fn newlines_and_backslashes_are_escaped_like_coreutils() {
        assert_eq!(format_line("ab", b"a\nb\\c"), b"\\ab  a\\nb\\\\c".to_vec());
    }

    #[test]
    fn lines_round_trip_through_the_parser() {
        for name in [&b"plain"[..], b"a\nb", b"back\\slash", b"caf\xe9"] {
            let line = format_line("00ff", name);
            let e = parse_line(&line).unwrap();
            assert_eq!(e.hex, "00ff");
            assert_eq!(super::path_from_bytes(name.to_vec()), e.path);
        }
    }

    #[test]
    fn binary_markers_and_malformed_lines() {
        assert_eq!(parse_line(b"AB *x").unwrap().hex, "ab");
        assert!(parse_line(b"zz  x").is_none());
        assert!(parse_line(b"ab").is_none());
        assert!(parse_line(b"ab  ").is_none());
        assert!(parse_line(b"\\ab  bad\\q").is_none());
    }
}
