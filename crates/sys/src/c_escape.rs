//! A control byte written as C writes it in a string: the one form seekless shows a
//! control character in, on a terminal (names, messages) and in the catalog's errors.

/// Appends `b` as C writes it in a string: `\a`, `\b`, `\t`, `\n`, `\v`, `\f`, `\r`, else
/// three octal digits (`\033`, `\000`).
pub fn push_c_escape(out: &mut String, b: u8) {
    match b {
        0x07 => out.push_str("\\a"),
        0x08 => out.push_str("\\b"),
        b'\t' => out.push_str("\\t"),
        b'\n' => out.push_str("\\n"),
        0x0b => out.push_str("\\v"),
        0x0c => out.push_str("\\f"),
        b'\r' => out.push_str("\\r"),
        b => out.push_str(&format!("\\{b:03o}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_are_written_as_c_writes_them() {
        let mut out = String::new();
        for b in [
            0x07, 0x08, b'\t', b'\n', 0x0b, 0x0c, b'\r', 0x1b, 0, 0x7f, 0xc2,
        ] {
            push_c_escape(&mut out, b);
        }
        assert_eq!(out, "\\a\\b\\t\\n\\v\\f\\r\\033\\000\\177\\302");
    }
}
