//! The fault log: one JSON object per line, written (and flushed) as the fault is
//! injected, so a test can wait for a line and knows which paths failed.
//!
//! `{"fault":"read-eio","path":"a/b.jpg","path_hex":"612f622e6a7067","offset":4096}`;
//! with `--log-opens` also `{"event":"open","path":…,"path_hex":…}` for every file opened.
//! A kind is logged once per path (the first time it strikes).

use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

use crate::spec::Kind;

pub struct FaultLog {
    file: Mutex<Option<File>>,
    logged: Mutex<HashSet<(Kind, Vec<u8>)>>,
    pub log_opens: bool,
}

impl FaultLog {
    pub fn new(file: Option<File>, log_opens: bool) -> FaultLog {
        FaultLog {
            file: Mutex::new(file),
            logged: Mutex::new(HashSet::new()),
            log_opens,
        }
    }

    /// Records that `kind` struck `rel` (once per path and kind).
    pub fn fault(&self, kind: Kind, rel: &[u8], offset: Option<u64>) {
        let first = lock(&self.logged).insert((kind, rel.to_vec()));
        if first {
            let mut line = entry("fault", kind.name(), rel);
            if let Some(o) = offset {
                line.insert("offset".into(), o.into());
            }
            self.write(line);
        }
    }

    /// Records that a file was opened (with `--log-opens`).
    pub fn opened(&self, rel: &[u8]) {
        if self.log_opens {
            self.write(entry("event", "open", rel));
        }
    }

    fn write(&self, line: serde_json::Map<String, serde_json::Value>) {
        if let Some(f) = lock(&self.file).as_mut() {
            // A log that cannot be written is reported, but the mount keeps serving.
            if let Err(e) = writeln!(f, "{}", serde_json::Value::Object(line)) {
                eprintln!("faultfs: writing the fault log: {e}");
            }
        }
    }
}

fn entry(key: &str, value: &str, rel: &[u8]) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert(key.into(), value.into());
    m.insert(
        "path".into(),
        String::from_utf8_lossy(rel).into_owned().into(),
    );
    let hex: String = rel.iter().map(|b| format!("{b:02x}")).collect();
    m.insert("path_hex".into(), hex.into());
    m
}

/// A poisoned lock (a panicking FUSE thread) still guards consistent data here.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
