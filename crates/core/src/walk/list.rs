//! Lists of paths, as `--files-from` takes them.

use std::path::PathBuf;

use seekless_sys::path_from_bytes;

/// Reads a list of paths, one per line or NUL-terminated, as `--files-from` takes them.
///
/// With `nul`, names are taken byte-exact; otherwise a trailing `\r` is kept (it may be
/// part of a name) and empty lines are ignored.
pub fn read_path_list(mut input: impl std::io::Read, nul: bool) -> std::io::Result<Vec<PathBuf>> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    let sep = if nul { 0u8 } else { b'\n' };
    Ok(bytes
        .split(|b| *b == sep)
        .filter(|s| !s.is_empty())
        .map(path_from_bytes)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_lists_split_on_newlines_or_nuls() {
        let l = read_path_list(&b"a\nb c\n\nd\n"[..], false).unwrap();
        assert_eq!(
            l,
            vec![PathBuf::from("a"), PathBuf::from("b c"), PathBuf::from("d")]
        );
        let l = read_path_list(&b"a\nb\0c\0"[..], true).unwrap();
        assert_eq!(l, vec![PathBuf::from("a\nb"), PathBuf::from("c")]);
    }
}
