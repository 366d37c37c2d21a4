//! What the CLI writes: paths, byte-exact where the format allows it, and summaries.

use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use seekless::read::{Bound, Consumed};
use seekless::{AtomicFile, Plan};

/// Writes the path's bytes as they are (non-UTF-8 names survive), then `end`.
pub fn write_path(out: &mut impl Write, path: &Path, end: u8) -> io::Result<()> {
    out.write_all(path_bytes(path).as_ref())?;
    out.write_all(&[end])
}

/// [`write_path`], but on a terminal (`terminal`) the name escaped as `ls -b` shows it
/// ([`escaped`]), as GNU `find` and `ls` keep a name from driving the terminal.
pub fn write_path_to(out: &mut impl Write, path: &Path, end: u8, terminal: bool) -> io::Result<()> {
    if !terminal {
        return write_path(out, path, end);
    }
    out.write_all(escaped(&path_bytes(path)).as_bytes())?;
    out.write_all(&[end])
}

pub use seekless_sys::path_to_bytes as path_bytes;

/// The path for JSON: a string, plus the raw bytes when the name is not UTF-8 (JSON
/// strings cannot carry them).
pub fn json_path(path: &Path) -> (String, Option<Vec<u8>>) {
    match path.to_str() {
        Some(s) => (s.to_string(), None),
        None => (
            path.to_string_lossy().into_owned(),
            Some(path_bytes(path).into_owned()),
        ),
    }
}

/// The plan's summary on stderr: what was found, where, how it was located, and how long
/// that took.
pub fn print_summary(plan: &Plan) {
    let s = plan.summary();
    let mut text = format!(
        "seekless: {} files, {} ({} fragmented, {} without position, {} duplicates)\n",
        s.files,
        indicatif::HumanBytes(s.bytes),
        s.fragmented,
        s.unlocated,
        s.duplicates
    );
    let w = &s.walk;
    if w.special + w.symlinks + w.other_fs + w.filtered > 0 {
        text += &format!(
            "seekless: skipped {} special files, {} symlinks, {} other-filesystem dirs, {} filtered\n",
            w.special, w.symlinks, w.other_fs, w.filtered
        );
    }
    if w.errors > 0 {
        text += &format!("seekless: {} paths failed (see above)\n", w.errors);
    }
    for fs in plan.filesystems() {
        let disk = &plan.disks()[fs.disk as usize];
        let kind = match disk.rotational {
            Some(true) => "rotational",
            Some(false) => "non-rotational",
            None => "unknown kind",
        };
        text += &format!(
            "seekless: {} on {} ({}): {} files located by {}\n",
            fs.kind, disk.name, kind, fs.files, fs.strategy
        );
        if !fs.members.is_empty() {
            let names: Vec<&str> = fs
                .members
                .iter()
                .map(|&m| plan.disks()[m as usize].name.as_str())
                .collect();
            text += &format!(
                "seekless:   over {} devices, swept per device: {}\n",
                names.len(),
                names.join(", ")
            );
        }
        if fs.unordered {
            text += "seekless:   not located: a disk that does not seek reads as fast in any \
                     order (--locate fiemap to locate anyway)\n";
        }
        for d in &fs.demotions {
            text += &format!("seekless:   {d}\n");
        }
    }
    text += &format!(
        "seekless: walk+locate {:.3} s (locate calls {:.3} s over all threads), sort {:.3} s",
        s.walk_time.as_secs_f64(),
        s.locate_time.as_secs_f64(),
        s.sort_time.as_secs_f64()
    );
    if w.dirs_read_ahead > 0 {
        text += &format!(
            "; {} of {} directories read ahead",
            w.dirs_read_ahead, w.dirs
        );
    }
    text.push('\n');
    eprint!("{text}");
}

/// The read phase's lines of the summary: how much was read, how long it took, how fast,
/// how often the sweep waited at a gap, what each disk was taken for; then where the
/// workers' time went, and `verdict`, what set the pace (none where the job gives its
/// own: one verdict a run).
pub fn print_read_summary(
    files: u64,
    bytes: u64,
    took: Duration,
    consumed: &Consumed,
    verdict: Option<Bound>,
) {
    let secs = took.as_secs_f64();
    eprintln!(
        "seekless: read {} files, {} in {:.3} s ({}/s); waited at {} gaps",
        files,
        indicatif::HumanBytes(bytes),
        secs,
        indicatif::HumanBytes((bytes as f64 / secs.max(1e-9)) as u64),
        consumed.stats.gap_waits
    );
    for disk in &consumed.disks {
        eprintln!("seekless: {disk}");
    }
    if consumed.stats.kept_in_cache > 0 {
        eprintln!(
            "seekless: read data left in the page cache on {} solid-state disk(s): it fits \
             in free memory",
            consumed.stats.kept_in_cache
        );
    }
    let verdict = match verdict {
        Some(Bound::Disk) => ": disk-bound",
        Some(Bound::Sink) => ": bound by what takes the results",
        Some(Bound::Cpu) => ": CPU-bound",
        None => "",
    };
    eprintln!(
        "seekless: {} worker{}: {:.3} s waiting for the disks, {:.3} s working, {:.3} s \
         handing results on (summed over workers){verdict}",
        consumed.workers,
        if consumed.workers == 1 { "" } else { "s" },
        consumed.waiting.as_secs_f64(),
        consumed.working.as_secs_f64(),
        consumed.sinking.as_secs_f64(),
    );
}

/// Writes `data` into `file` and puts it in place durably ([`AtomicFile::commit`]).
pub fn commit_durably(file: AtomicFile, data: &[u8]) -> io::Result<()> {
    file.file().write_all(data)?;
    file.commit()
}

/// Whether standard output is a pipe, a socket or a terminal (someone reading as the lines
/// come), not a file or `/dev/null`.
pub fn stdout_is_stream() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        // SAFETY: fd 1 is borrowed for the duration of this call only, never closed here.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(1) };
        match fd
            .try_clone_to_owned()
            .and_then(|fd| std::fs::File::from(fd).metadata())
        {
            Ok(m) => {
                let t = m.file_type();
                t.is_fifo() || t.is_socket() || std::io::IsTerminal::is_terminal(&std::io::stdout())
            }
            Err(_) => false,
        }
    }
    #[cfg(not(unix))]
    {
        std::io::IsTerminal::is_terminal(&std::io::stdout())
    }
}

/// A name's bytes made safe to print on a terminal, as `ls -b` shows them: `\\` for a
/// backslash, C escapes (`\n`, `\t`, …) and octal (`\033`) for control characters and for
/// bytes that are not UTF-8; everything else as it is. For human-readable output only:
/// `-0` and `--json` stay exact.
pub fn escaped(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let push_byte = |out: &mut String, b: u8| match b {
        b'\\' => out.push_str("\\\\"),
        b if !(0x20..0x7f).contains(&b) => seekless_sys::push_c_escape(out, b),
        b => out.push(b as char),
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_ascii() {
                push_byte(&mut out, c as u8);
            } else if c.is_control() {
                // C1 controls (U+0080–U+009F): their UTF-8 bytes, in octal.
                let mut buf = [0; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    push_byte(&mut out, b);
                }
            } else {
                out.push(c);
            }
        }
        for &b in chunk.invalid() {
            push_byte(&mut out, b);
        }
    }
    out
}

/// A message's bytes with the control characters a terminal would obey escaped (as
/// [`escaped`] writes them: `\n`, `\033`, …), everything else as it is: names that are not
/// UTF-8 stay byte for byte, backslashes stay (Windows paths). For stderr, where every
/// message names a path: a file name cannot move the cursor, clear the screen or retitle
/// the terminal.
pub fn terminal_safe(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let control = |b: u8| b < 0x20 || b == 0x7f;
    // C1 controls (U+0080–U+009F), encoded in UTF-8: 0xC2 then 0x80–0x9F.
    let c1 =
        |i: usize| bytes[i] == 0xc2 && bytes.get(i + 1).is_some_and(|&n| (0x80..0xa0).contains(&n));
    if !(0..bytes.len()).any(|i| control(bytes[i]) || c1(i)) {
        return std::borrow::Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        if c1(i) {
            out.extend_from_slice(escaped(&bytes[i..i + 2]).as_bytes());
            i += 2;
        } else if control(bytes[i]) {
            out.extend_from_slice(escaped(&bytes[i..i + 1]).as_bytes());
            i += 1;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Standard output, whose write errors say they are ([`WriteError`]): a full
/// disk under `> file` or `/dev/full` ends the run with `seekless: write error: No space
/// left on device` and exit 1, as coreutils' `close_stdout` has it. A reader gone away
/// keeps its kind (`BrokenPipe`): that stays quiet.
pub fn stdout() -> Stdout {
    Stdout(io::stdout())
}

/// [`stdout`]'s writer.
pub struct Stdout(io::Stdout);

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(write_error)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(write_error)
    }
}

/// A write to standard output failed: `write error: No space left on device`.
#[derive(Debug)]
pub struct WriteError(io::Error);

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "write error: {}", seekless_sys::describe_io(&self.0))
    }
}

impl std::error::Error for WriteError {}

/// `e`, a failed write to standard output, marked as one ([`WriteError`]), its kind
/// kept.
pub fn write_error(e: io::Error) -> io::Error {
    if e.get_ref().is_some_and(|inner| inner.is::<WriteError>()) {
        return e;
    }
    io::Error::new(e.kind(), WriteError(e))
}

/// A name quoted for a diagnostic as GNU coreutils quotes it (gnulib's `shell-escape`
/// style, as `sha256sum` prints names in its messages in a UTF-8 locale), so that it can
/// be pasted back into a shell:
///
/// - as it is when nothing in it is special to a shell: letters, digits, `%+,-./@]_`,
///   printable non-ASCII characters, `{`/`}` unless alone, `#`/`~` unless first;
/// - in double quotes when it holds a `'` and nothing that double quotes would change or
///   that needs an escape (`"it's"`);
/// - else in single quotes, a `'` written `'\''`, and control characters, bytes that are
///   not UTF-8 and unprintable characters as `$'…'` escapes (`\n`, `\t`, … and octal
///   `\351`): `'d/new'$'\n''line'`.
pub fn shell_quoted(name: &[u8]) -> String {
    if name.is_empty() {
        return "''".to_string();
    }
    // Whether it needs quotes at all, needs an escape, has a `'`, and is all made of what
    // double quotes leave as it is.
    let (mut quote, mut escape, mut apostrophe, mut plain) = (false, false, false, true);
    let mut at = 0;
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '%' | '+' | ',' | '-' | '.' | '/' => {}
                '_' | '@' | ']' => {}
                ':' | ' ' => quote = true,
                '\'' => (quote, apostrophe) = (true, true),
                '#' | '~' if at == 0 => quote = true,
                '{' | '}' if name.len() == 1 => quote = true,
                '#' | '~' | '{' | '}' => plain = false,
                c if !printable(c) => (escape, plain) = (true, false),
                c if c.is_ascii() => (quote, plain) = (true, false),
                _ => {}
            }
            at += c.len_utf8();
        }
        if !chunk.invalid().is_empty() {
            (escape, plain) = (true, false);
            at += chunk.invalid().len();
        }
    }
    if !quote && !escape {
        return String::from_utf8_lossy(name).into_owned();
    }
    if apostrophe && plain {
        return format!("\"{}\"", String::from_utf8_lossy(name));
    }
    let mut out = String::from("'");
    // Inside `$'…'` (after an escape): closed before plain text.
    let mut escaping = false;
    let escape_byte = |out: &mut String, escaping: &mut bool, b: u8| {
        if !*escaping {
            out.push_str("'$'");
            *escaping = true;
        }
        seekless_sys::push_c_escape(out, b);
    };
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            if !printable(c) {
                let mut buf = [0; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    escape_byte(&mut out, &mut escaping, b);
                }
            } else if c == '\'' {
                // Closes either quoting; what follows opens a plain one.
                out.push_str("'\\''");
                escaping = false;
            } else {
                if escaping {
                    out.push_str("''");
                    escaping = false;
                }
                out.push(c);
            }
        }
        for &b in chunk.invalid() {
            escape_byte(&mut out, &mut escaping, b);
        }
    }
    out.push('\'');
    out
}

/// Whether a character prints as itself (glibc's `iswprint` in a UTF-8 locale, but for
/// unassigned code points): not a control character nor a line or paragraph separator.
fn printable(c: char) -> bool {
    !c.is_control() && c != '\u{2028}' && c != '\u{2029}'
}

#[cfg(test)]
mod tests {
    use super::escaped;

    #[test]
    fn names_are_escaped_as_ls_b_shows_them() {
        assert_eq!(escaped(b"plain caf\xc3\xa9.jpg"), "plain café.jpg");
        assert_eq!(escaped(b"a\nb\tc\\d"), "a\\nb\\tc\\\\d");
        assert_eq!(escaped(b"\x1b]0;pwned\x07.jpg"), "\\033]0;pwned\\a.jpg");
        assert_eq!(escaped(b"\xff\xfe"), "\\377\\376");
        assert_eq!(escaped("\u{9b}31m".as_bytes()), "\\302\\23331m");
        assert_eq!(escaped(b"del\x7f"), "del\\177");
    }

    /// Every case checked against GNU coreutils 9.1's `sha256sum` (its message for a
    /// missing file, in C.UTF-8); `tests/it/hash_conformance.rs` compares the hostile
    /// names' messages with the real tool's.
    #[test]
    fn names_are_quoted_as_gnu_shell_escape_quoting() {
        use super::shell_quoted as q;
        let cases: &[(&[u8], &str)] = &[
            (b"d/x", "d/x"),
            (b"a%b+c,d-e.f/g_h@i]j", "a%b+c,d-e.f/g_h@i]j"),
            (b"d/with space", "'d/with space'"),
            (b"d/new\nline", r"'d/new'$'\n''line'"),
            (b"d/c\rr", r"'d/c'$'\r''r'"),
            (b"d/caf\xe9", r"'d/caf'$'\351'"),
            (b"d/it's", r#""d/it's""#),
            (b"d/a'b c", r#""d/a'b c""#),
            (b"x':y", r#""x':y""#),
            ("x'éy".as_bytes(), r#""x'éy""#),
            (b"~x'y", r#""~x'y""#),
            (b"x'~y", r"'x'\''~y'"),
            (b"x'{y", r"'x'\''{y'"),
            (b"x'$y", r"'x'\''$y'"),
            (b"x'\\y", r"'x'\''\y'"),
            (b"d/b\\s", r"'d/b\s'"),
            (b"~x", "'~x'"),
            (b"x~", "x~"),
            (b"#x", "'#x'"),
            (b"x#", "x#"),
            (b"{", "'{'"),
            (b"a{", "a{"),
            (b"a=b", "'a=b'"),
            (b"a:b", "'a:b'"),
            (b"a?b", "'a?b'"),
            (b"a^b", "'a^b'"),
            (b"!x", "'!x'"),
            (b"a\"b", r#"'a"b'"#),
            (b"", "''"),
            ("été".as_bytes(), "été"),
            (b"x\x7fy", r"'x'$'\177''y'"),
            ("\u{9b}".as_bytes(), r"''$'\302\233'"),
            ("a\u{2028}b".as_bytes(), r"'a'$'\342\200\250''b'"),
            (b"a\x01\x02b", r"'a'$'\001\002''b'"),
            (b"\t\x07\x08\x0c\x0b\x1b", r"''$'\t\a\b\f\v\033'"),
            (b"x\xc3", r"'x'$'\303'"),
            (b"\xc3x", r"''$'\303''x'"),
            (b"\n'", r"''$'\n'\'''"),
            (b"d/it's\nx", r"'d/it'\''s'$'\n''x'"),
        ];
        for (name, want) in cases {
            assert_eq!(q(name), *want, "{:?}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn messages_keep_their_bytes_but_not_terminal_controls() {
        use super::terminal_safe;
        assert_eq!(&*terminal_safe(b"caf\xe9 C:\\x"), b"caf\xe9 C:\\x");
        assert_eq!(&*terminal_safe(b"a\x1b[2Jb\n"), b"a\\033[2Jb\\n");
        assert_eq!(&*terminal_safe("x\u{9b}y".as_bytes()), b"x\\302\\233y");
    }
}
