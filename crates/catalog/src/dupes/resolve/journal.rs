//! The journal of `dupes --act`: JSON lines, typed. The first line says what it is and
//! what run wrote it; each act's intent (what, from where, to where, the file as checked)
//! is written and made durable before the act, its outcome after; `--undo` appends what
//! it put back. A line cut short by a crash is not JSON and is passed over; every whole
//! line stands alone.
//!
//! ```text
//! {"about":{"act":"move","db":"/p.db","files":2,"to":"/moved"},"seekless_journal":1}
//! {"made":"/moved/photos"}
//! {"act":"move","file":{"blake3":"…","dev":2049,"ino":12,"mtime_ns":1,"size":3},"from":"/photos/a.jpg","keeper":"/photos/b.jpg","n":1,"to":"/moved/photos/a.jpg"}
//! {"done":1}
//! {"failed":2,"why":"changed since it was indexed"}
//! {"undone":1}
//! ```
//!
//! A path is a string where it is UTF-8, else `{"bytes":[…]}`.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use seekless_jobs::destructive::acts::Known;
use seekless_sys as os;

/// The version the first line names.
const VERSION: u32 = 1;

/// A path as the journal stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum JournalPath {
    /// UTF-8.
    Text(String),
    /// Any other bytes.
    Bytes {
        /// The path's bytes.
        bytes: Vec<u8>,
    },
}

impl JournalPath {
    /// `p`, as the journal stores it.
    pub fn of(p: &Path) -> JournalPath {
        let bytes = seekless_sys::path_to_bytes(p);
        match std::str::from_utf8(&bytes) {
            Ok(s) => JournalPath::Text(s.to_string()),
            Err(_) => JournalPath::Bytes {
                bytes: bytes.into_owned(),
            },
        }
    }

    /// The path.
    pub fn path(&self) -> PathBuf {
        match self {
            JournalPath::Text(s) => PathBuf::from(s),
            JournalPath::Bytes { bytes } => seekless_sys::path_from_bytes(bytes),
        }
    }
}

/// A file as it was checked: its identity, size, modification time and BLAKE3 (hex).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// BLAKE3 of its bytes (hex), where known.
    #[serde(default)]
    pub blake3: String,
}

impl Stamp {
    pub(super) fn of(k: &Known) -> Stamp {
        Stamp {
            dev: k.dev,
            ino: k.ino,
            size: k.size,
            mtime_ns: k.mtime_ns,
            blake3: k.blake3.clone(),
        }
    }

    /// The file at `path` as this stamp says it was.
    pub(super) fn known(&self, path: PathBuf) -> Known {
        Known {
            path,
            dev: self.dev,
            ino: self.ino,
            size: self.size,
            mtime_ns: self.mtime_ns,
            blake3: self.blake3.clone(),
        }
    }
}

/// What run wrote a journal (its first line). Each field may be missing (older journals).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct About {
    /// The act (`move`, `trash`, `hardlink`, `reflink`).
    pub act: String,
    /// The catalog.
    pub db: Option<JournalPath>,
    /// The folder moves go to.
    pub to: Option<JournalPath>,
    /// Files planned.
    pub files: u64,
}

impl About {
    /// A run of `act` over `files` files of the catalog `db`, moving to `to` if a move.
    pub fn new(act: &str, db: &Path, to: Option<&Path>, files: u64) -> About {
        About {
            act: act.to_string(),
            db: Some(JournalPath::of(db)),
            to: to.map(JournalPath::of),
            files,
        }
    }
}

/// One act's intent, written before the act.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// Its number in the journal, from 1.
    pub n: u64,
    /// `move`, `trash`, `hardlink` or `reflink`.
    pub act: String,
    /// The duplicate's path.
    pub from: JournalPath,
    /// Its keeper's path.
    pub keeper: JournalPath,
    /// The duplicate as checked.
    pub file: Stamp,
    /// Where a move or the trash puts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<JournalPath>,
    /// The trash's `.trashinfo`, named before it is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<JournalPath>,
    /// A hard link's temporary name beside the file, named before it is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp: Option<JournalPath>,
    /// The keeper as checked (hard links).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keeper_file: Option<Stamp>,
}

/// One line of a journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Header { seekless_journal: u32, about: About },
    Done { done: u64 },
    Failed { failed: u64, why: Option<String> },
    Undone { undone: u64 },
    Made { made: JournalPath },
    Act(Box<Intent>),
}

/// The record of a run's acts (see the module's manual).
pub struct Journal {
    pub(super) file: File,
    path: PathBuf,
    next: u64,
}

impl Journal {
    /// Creates the journal at `path` (which must not exist), with `about` (what run) as its
    /// first line, on the disk before anything is done.
    pub fn create(path: &Path, about: About) -> io::Result<Journal> {
        let file = fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)?;
        // Held while the run lives: what `clean_up` and `undo` take for proof that it
        // ended. Where there are no locks, nothing is ever taken for a dead run's.
        let _ = file.try_lock();
        let mut j = Journal {
            file,
            path: path.to_path_buf(),
            next: 1,
        };
        j.line(&Line::Header {
            seekless_journal: VERSION,
            about,
        })?;
        j.file.sync_all()?;
        if let Some(dir) = path.parent() {
            let _ = os::sync_directory(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            });
        }
        Ok(j)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn line(&mut self, line: &Line) -> io::Result<()> {
        write_line(&mut self.file, line)
    }

    /// A folder made for the moves (outermost first), before the acts that use it.
    pub(super) fn made(&mut self, folder: &Path) -> io::Result<()> {
        self.line(&Line::Made {
            made: JournalPath::of(folder),
        })
    }

    /// Writes `intent` under the next number, which it returns (made durable by the
    /// caller, once for a batch, before any of its acts).
    pub(super) fn intent(&mut self, mut intent: Intent) -> io::Result<u64> {
        let n = self.next;
        self.next += 1;
        intent.n = n;
        self.line(&Line::Act(Box::new(intent)))?;
        Ok(n)
    }

    pub(super) fn outcome(&mut self, n: u64, done: bool, why: Option<&str>) -> io::Result<()> {
        let line = if done {
            Line::Done { done: n }
        } else {
            Line::Failed {
                failed: n,
                why: why.map(str::to_string),
            }
        };
        self.line(&line)
    }
}

/// Appends that act `n` was undone to the journal open in `file`.
pub(super) fn undone(file: &mut File, n: u64) -> io::Result<()> {
    write_line(file, &Line::Undone { undone: n })
}

fn write_line(file: &mut File, line: &Line) -> io::Result<()> {
    let mut text = serde_json::to_vec(line).map_err(io::Error::other)?;
    text.push(b'\n');
    file.write_all(&text)
}

/// A journal as read: its acts, and the numbers of those undone or failed.
#[derive(Debug, Default)]
pub struct JournalRead {
    /// What run wrote it.
    pub about: About,
    /// Each act's intent, in order.
    pub acts: Vec<Intent>,
    /// Acts undone by an earlier `--undo`.
    pub undone: HashSet<u64>,
    /// Acts that failed (nothing was done).
    pub failed: HashSet<u64>,
    /// Lines that are not a journal's (1-based): a last line cut short by a crash.
    pub passed_over: Vec<usize>,
    /// Folders the run made for its moves, outermost first.
    pub made: Vec<PathBuf>,
}

/// Reads a journal's bytes. Its first line must be a seekless journal's header (version
/// 1); a line that is not one of a journal's (a last line cut short by a crash) is passed
/// over, every whole line standing alone.
pub fn parse_journal(text: &[u8]) -> Result<JournalRead, String> {
    let mut read = JournalRead::default();
    let mut header = false;
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = serde_json::from_slice::<Line>(line);
        if !header {
            match parsed {
                Ok(Line::Header {
                    seekless_journal: VERSION,
                    about,
                }) => {
                    read.about = about;
                    header = true;
                    continue;
                }
                Ok(Line::Header { .. }) => {
                    return Err(format!("not a seekless journal (version {VERSION})"));
                }
                _ => return Err("not a seekless journal".into()),
            }
        }
        match parsed {
            Ok(Line::Done { .. }) => {}
            Ok(Line::Failed { failed, .. }) => {
                read.failed.insert(failed);
            }
            Ok(Line::Undone { undone }) => {
                read.undone.insert(undone);
            }
            Ok(Line::Made { made }) => read.made.push(made.path()),
            Ok(Line::Act(intent)) => read.acts.push(*intent),
            Ok(Line::Header { .. }) | Err(_) => read.passed_over.push(i + 1),
        }
    }
    if !header {
        return Err("an empty journal".into());
    }
    Ok(read)
}
