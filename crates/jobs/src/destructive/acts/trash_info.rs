//! A trash's `.trashinfo` (the freedesktop.org Trash specification 1.0: original path,
//! percent-encoded, and deletion date): chosen and journalled first ([`PendingInfo`]),
//! written under a free name only ([`TrashInfo`]: removed again unless its file went to
//! the trash), and removed after an undo or a killed run only when it names the file
//! ([`forget_trash_info`]). Where the trash is, is the catalog's
//! (`seekless_catalog::dupes::act`).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use seekless_sys::describe_io;

/// A `.trashinfo` chosen (its name free) and not yet written: it is named in the act's
/// journalled intent first, so that a run killed at any point leaves no `.trashinfo` its
/// journal does not name.
#[derive(Debug)]
pub struct PendingInfo {
    path: PathBuf,
    text: String,
}

impl PendingInfo {
    /// The `.trashinfo` at `path` for a file whose original path is `shown` (relative to
    /// the top of its filesystem for a trash there, else absolute), deleted now.
    pub fn new(path: PathBuf, shown: &Path) -> PendingInfo {
        let text = format!(
            "[Trash Info]\nPath={}\nDeletionDate={}\n",
            encode(&seekless_sys::path_to_bytes(shown)),
            local_now()
        );
        PendingInfo { path, text }
    }

    /// Where it is to be written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes it, under its name only if that is still free.
    pub fn write(self) -> Result<TrashInfo, String> {
        match File::options()
            .write(true)
            .create_new(true)
            .open(&self.path)
        {
            Ok(mut f) => {
                let info = TrashInfo {
                    path: self.path,
                    kept: false,
                };
                f.write_all(self.text.as_bytes())
                    .map_err(|e| format!("{}: {}", info.path.display(), describe_io(&e)))?;
                Ok(info)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(format!(
                "{}: taken meanwhile by another program: not put in the trash",
                self.path.display()
            )),
            Err(e) => Err(format!("{}: {}", self.path.display(), describe_io(&e))),
        }
    }
}

/// A `.trashinfo` this run wrote (made only by [`PendingInfo::write`]): removed when
/// dropped, unless its file went to the trash ([`trash_checked`](super::trash_checked)).
///
/// ```compile_fail
/// let forged = seekless_jobs::destructive::acts::TrashInfo { path: "/a".into(), kept: false };
/// ```
#[derive(Debug)]
pub struct TrashInfo {
    path: PathBuf,
    kept: bool,
}

impl TrashInfo {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file is in the trash: its info stays.
    pub(super) fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for TrashInfo {
    fn drop(&mut self) {
        if !self.kept {
            // Our own `.trashinfo`, just written, for a file that did not go to the trash.
            #[allow(clippy::disallowed_methods)]
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Removes the `.trashinfo` at `info` (a path a journal of this tool names, ending in
/// `.trashinfo`: nothing else is one) if it is the one written for `from` (its file was
/// put back, or never went), or empty: created and not yet written when its run was
/// killed (its text is one write).
pub fn forget_trash_info(info: &Path, from: &Path) {
    if info.extension().is_none_or(|e| e != "trashinfo") {
        return;
    }
    let Ok(text) = fs::read_to_string(info) else {
        return;
    };
    let ours = text.is_empty()
        || text.starts_with("[Trash Info]\n")
            && text.lines().any(|l| {
                l.strip_prefix("Path=").is_some_and(|p| {
                    let p = seekless_sys::path_from_bytes(&decode(p));
                    p == from || (p.is_relative() && from.ends_with(&p))
                })
            });
    if ours {
        // The info of a file this run's journal put in the trash and that is back.
        #[allow(clippy::disallowed_methods)]
        let _ = fs::remove_file(info);
    }
}

/// A path's bytes percent-encoded (RFC 2396: all but unreserved characters and `/`).
fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Now, in local time, as `DeletionDate` has it (`2026-12-05T14:03:09`).
fn local_now() -> String {
    seekless_sys::local_now().unwrap_or_else(|| String::from("1970-01-01T00:00:00"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_encoded_and_back() {
        let raw = b"/p/a b/\xffcaf\xc3\xa9%.jpg";
        let e = encode(raw);
        assert_eq!(e, "/p/a%20b/%FFcaf%C3%A9%25.jpg");
        assert_eq!(decode(&e), raw);
        assert_eq!(decode("%4"), b"%4");
    }

    #[test]
    fn an_info_goes_when_it_names_the_file_or_is_empty_and_stays_otherwise() {
        let t = tempfile::tempdir().unwrap();
        let from = Path::new("/p/a.jpg");
        let cases: [(&str, &[u8], bool); 5] = [
            (
                "ours.trashinfo",
                b"[Trash Info]\nPath=/p/a.jpg\nDeletionDate=2026-12-06T10:00:00\n",
                true,
            ),
            ("killed-as-written.trashinfo", b"", true),
            (
                "another-file.trashinfo",
                b"[Trash Info]\nPath=/p/b.jpg\nDeletionDate=2026-12-06T10:00:00\n",
                false,
            ),
            ("not-an-info.trashinfo", b"notes", false),
            // Whatever it holds, a file not named as a `.trashinfo` is not one.
            ("empty-notes.txt", b"", false),
        ];
        for (name, text, goes) in cases {
            let info = t.path().join(name);
            fs::write(&info, text).unwrap();
            forget_trash_info(&info, from);
            assert_eq!(!info.exists(), goes, "{name}");
        }
    }
}
