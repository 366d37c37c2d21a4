//! Checksum manifests in the coreutils format (`sha256sum`, `b3sum`), and what checking
//! one says, line by line, as `sha256sum -c` says it.
//!
//! Lines are `HEX  PATH` (`HEX *PATH` in binary mode) or, BSD style as `sha256sum --tag`
//! writes them, `SHA256 (PATH) = HEX`. A name containing a backslash, a newline or a
//! carriage return is written escaped (`\\`, `\n`, `\r`) on a line that starts with a
//! backslash, as coreutils 9.0 and later write it; a BLAKE3 manifest leaves a carriage
//! return as it is, as `b3sum` writes it ([`LineStyle::b3sum`]). Verdicts (`PATH: OK`)
//! escape such names as coreutils does. On Windows, where a backslash in a path is
//! always a separator, names are written with `/` instead, as `b3sum` writes them
//! there: a manifest made on Windows reads as one made elsewhere, and Windows opens
//! either separator.
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

mod check;
mod parse;
mod write;

pub use check::{Checklist, Tally, Verdict, format_verdict};
pub use parse::{ManifestEntry, bsd_tag, is_blank_or_comment, parse_line};
pub use write::{LineStyle, ManifestFile, format_line, format_line_as, name_in_manifest};

#[cfg(test)]
mod tests;
