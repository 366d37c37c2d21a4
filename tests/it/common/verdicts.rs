//! Verdict lines (`NAME: OK`) of `sha256sum -c`, `b3sum -c` and `seekless hash --check`,
//! brought to the names they give.

/// A verdict line with its name unescaped: a line starting with a backslash loses it and
/// has its `\\`, `\n` and `\r` read back; any other line is as it is. `None` when an
/// escaped line holds a backslash followed by anything else, or ending it: no tool
/// writes that.
pub fn unescaped_verdict(line: &[u8]) -> Option<Vec<u8>> {
    let Some(escaped) = line.strip_prefix(b"\\") else {
        return Some(line.to_vec());
    };
    let mut raw = Vec::with_capacity(escaped.len());
    let mut bytes = escaped.iter();
    while let Some(&b) = bytes.next() {
        if b != b'\\' {
            raw.push(b);
            continue;
        }
        raw.push(match bytes.next()? {
            b'n' => b'\n',
            b'r' => b'\r',
            b'\\' => b'\\',
            _ => return None,
        });
    }
    Some(raw)
}
