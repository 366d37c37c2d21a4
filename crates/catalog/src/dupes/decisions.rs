//! The user's decisions about duplicate groups, kept in the catalog (its `decisions`
//! table) and respected by every later run until undone (`--undecide`).
//!
//! A decision is keyed by content: the BLAKE3s of the files it covers, so it survives
//! moves, renames and new runs of `index`.
//!
//! - `keep-all`: a group whose contents are all among the decision's is not shown, and
//!   nothing in it is offered for removal.
//! - `not-duplicates`: no two of its contents are put in one group again. Byte-identical
//!   files of one content stay a group (they are duplicates by their bytes), unless a
//!   `keep-all` covers them. Over one content (identical files) it is recorded as
//!   `keep-all`.
//! - `keeper`: in a group whose contents are all among the decision's, the kept file is one
//!   of the `keeper` content: the one at `path` if it is still there, else the one the
//!   rules choose among those. A group that gained a content since is left to the rules.
//!
//! The decisions file (`seekless dupes --apply FILE`, written by the contact sheet) is
//! JSON:
//!
//! ```json
//! {"seekless_decisions": 1, "db": "/photos.db", "decisions": [
//!   {"decision": "keeper", "contents": ["<blake3>", "<blake3>"], "keeper": "<blake3>", "path": "/p/a.jpg"},
//!   {"decision": "keep-all", "contents": ["<blake3>"]},
//!   {"decision": "not-duplicates", "contents": ["<blake3>", "<blake3>"]}
//! ]}
//! ```
//!
//! A path that is not UTF-8 is given as its bytes too: `"path_bytes": [47, 112, …]`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::DupesError;
use crate::index::catalog::{StoredDecision, WriterLock};

/// What was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionKind {
    /// Keep every file of the group.
    KeepAll,
    /// The files are not duplicates of each other.
    NotDuplicates,
    /// Keep this one.
    Keeper,
}

impl DecisionKind {
    /// As stored and written: `keep-all`, `not-duplicates`, `keeper`.
    pub fn name(self) -> &'static str {
        match self {
            DecisionKind::KeepAll => "keep-all",
            DecisionKind::NotDuplicates => "not-duplicates",
            DecisionKind::Keeper => "keeper",
        }
    }

    fn from_name(name: &str) -> Option<DecisionKind> {
        [
            DecisionKind::KeepAll,
            DecisionKind::NotDuplicates,
            DecisionKind::Keeper,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

/// One decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Decision {
    /// Its id in the catalog (`--undecide ID`); `None` before it is recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// What was decided.
    pub decision: DecisionKind,
    /// The contents it covers: BLAKE3s, lower-case hex, sorted, each once.
    pub contents: Vec<String>,
    /// `keeper`: the kept content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keeper: Option<String>,
    /// `keeper`: the kept file's path (lossy UTF-8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `keeper`: the kept file's path, its bytes.
    #[serde(skip)]
    pub path_bytes: Option<Vec<u8>>,
    /// When it was recorded (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub made: Option<String>,
}

impl Decision {
    /// A decision on `contents` (BLAKE3s, hex, in any order, repeats allowed), checked.
    pub fn new(
        decision: DecisionKind,
        contents: impl IntoIterator<Item = String>,
        keeper: Option<(String, Vec<u8>)>,
    ) -> Result<Decision, String> {
        let mut contents: Vec<String> = contents
            .into_iter()
            .map(|c| c.to_ascii_lowercase())
            .collect();
        contents.sort();
        contents.dedup();
        if let Some(bad) = contents
            .iter()
            .find(|c| c.len() != 64 || !c.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(format!("{bad:?} is not a BLAKE3 (64 hex digits)"));
        }
        if contents.is_empty() {
            return Err("a decision covers no content".into());
        }
        let mut decision = decision;
        if decision == DecisionKind::NotDuplicates && contents.len() == 1 {
            // Identical files are duplicates by their bytes: "keep them all" is what it means.
            decision = DecisionKind::KeepAll;
        }
        let (keeper, path_bytes) = match (decision, keeper) {
            (DecisionKind::Keeper, Some((k, p))) => {
                let k = k.to_ascii_lowercase();
                if !contents.contains(&k) {
                    return Err(format!(
                        "the keeper {k} is not among the decision's contents"
                    ));
                }
                (Some(k), Some(p))
            }
            (DecisionKind::Keeper, None) => return Err("a keeper decision names no keeper".into()),
            (_, _) => (None, None),
        };
        Ok(Decision {
            id: None,
            decision,
            contents,
            keeper,
            path: path_bytes
                .as_deref()
                .map(|b| String::from_utf8_lossy(b).into_owned()),
            path_bytes,
            made: None,
        })
    }

    /// Whether it covers every one of `contents`.
    pub fn covers<'a>(&self, mut contents: impl Iterator<Item = &'a str>) -> bool {
        contents.all(|c| {
            self.contents
                .binary_search_by(|x| x.as_str().cmp(c))
                .is_ok()
        })
    }

    pub(crate) fn to_stored(&self) -> StoredDecision {
        StoredDecision {
            id: self.id.unwrap_or(0),
            decision: self.decision.name().into(),
            contents: self.contents.join(" "),
            keeper: self.keeper.clone(),
            keeper_path: self.path_bytes.clone(),
            made: self.made.clone().unwrap_or_default(),
        }
    }

    pub(crate) fn from_stored(s: StoredDecision) -> Option<Decision> {
        let decision = DecisionKind::from_name(&s.decision)?;
        let keeper = s.keeper.zip(s.keeper_path.clone());
        let mut d =
            Decision::new(decision, s.contents.split(' ').map(String::from), keeper).ok()?;
        d.id = Some(s.id);
        d.made = Some(s.made);
        Some(d)
    }
}

/// A decisions file as read.
#[derive(Deserialize)]
struct FileDoc {
    seekless_decisions: u32,
    decisions: Vec<FileDecision>,
}

#[derive(Deserialize)]
struct FileDecision {
    decision: DecisionKind,
    contents: Vec<String>,
    keeper: Option<String>,
    path: Option<String>,
    path_bytes: Option<Vec<u8>>,
}

/// Reads a decisions file (the contact sheet's "Save decisions"). Every decision is
/// checked; the first bad one fails the whole file, naming it (nothing is recorded).
pub fn read_file(path: &Path) -> Result<Vec<Decision>, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!("{}: {}", path.display(), seekless_sys::describe_io(&e)))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses a decisions file's bytes.
pub fn parse(text: &[u8]) -> Result<Vec<Decision>, String> {
    let doc: FileDoc =
        serde_json::from_slice(text).map_err(|e| format!("not a decisions file: {e}"))?;
    if doc.seekless_decisions != 1 {
        return Err(format!(
            "decisions file version {} (this seekless reads version 1)",
            doc.seekless_decisions
        ));
    }
    doc.decisions
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let path = d.path_bytes.or_else(|| d.path.map(String::into_bytes));
            let keeper = match (d.keeper, path) {
                (Some(k), Some(p)) => Some((k, p)),
                (Some(_), None) => {
                    return Err(format!("decision {}: a keeper without its path", i + 1));
                }
                (None, _) => None,
            };
            Decision::new(d.decision, d.contents, keeper)
                .map_err(|e| format!("decision {}: {e}", i + 1))
        })
        .collect()
}

/// Records `decisions` in the catalog at `db` (one transaction; each replaces the decision
/// of its kind on the same contents, if there is one), setting their ids.
pub fn record(db: &Path, decisions: &mut [Decision]) -> Result<(), DupesError> {
    let mut writer = WriterLock::take(db)?.open_for_dupes(&|_| {})?;
    let stored: Vec<_> = decisions.iter().map(Decision::to_stored).collect();
    let ids = writer.record(&stored, &|_| {})?;
    for (d, id) in decisions.iter_mut().zip(ids) {
        d.id = Some(id);
    }
    Ok(())
}

/// Removes the decisions `ids` from the catalog at `db`; returns those that were there.
pub fn undecide(db: &Path, ids: &[i64]) -> Result<Vec<i64>, DupesError> {
    let mut writer = WriterLock::take(db)?.open_for_dupes(&|_| {})?;
    Ok(writer.undecide(ids, &|_| {})?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(c: char) -> String {
        std::iter::repeat_n(c, 64).collect()
    }

    #[test]
    fn a_decisions_file_is_read_and_checked() {
        let text = format!(
            r#"{{"seekless_decisions": 1, "db": "/x.db", "decisions": [
              {{"decision": "keeper", "contents": ["{b}", "{a}", "{b}"], "keeper": "{b}", "path": "/p/b.jpg"}},
              {{"decision": "keep-all", "contents": ["{c}"]}},
              {{"decision": "not-duplicates", "contents": ["{a}"], "path_bytes": [47]}},
              {{"decision": "not-duplicates", "contents": ["{A}", "{c}"]}}
            ]}}"#,
            a = h('a'),
            b = h('b'),
            c = h('c'),
            A = h('A')
        );
        let d = parse(text.as_bytes()).unwrap();
        assert_eq!(d[0].contents, [h('a'), h('b')]);
        assert_eq!(d[0].keeper.as_deref(), Some(h('b').as_str()));
        assert_eq!(d[0].path_bytes.as_deref(), Some(&b"/p/b.jpg"[..]));
        assert_eq!(d[1].decision, DecisionKind::KeepAll);
        // "Not duplicates" over identical files is "keep all".
        assert_eq!(d[2].decision, DecisionKind::KeepAll);
        assert_eq!(d[3].contents, [h('a'), h('c')]);
        assert!(d[3].covers([h('c').as_str()].into_iter()));
        assert!(!d[3].covers([h('b').as_str()].into_iter()));
        // Stored and read back, the same.
        for x in &d {
            let mut back = Decision::from_stored(x.to_stored()).unwrap();
            back.id = None;
            back.made = None;
            assert_eq!(&back, x);
        }
    }

    #[test]
    fn a_bad_decision_fails_the_file_naming_it() {
        let bad = [
            r#"{"seekless_decisions": 2, "decisions": []}"#.to_string(),
            r#"{"decisions": []}"#.to_string(),
            r#"{"seekless_decisions": 1, "decisions": [{"decision": "keep-all", "contents": ["xyz"]}]}"#
                .to_string(),
            format!(
                r#"{{"seekless_decisions": 1, "decisions": [{{"decision": "keeper", "contents": ["{}"], "keeper": "{}", "path": "/a"}}]}}"#,
                h('a'),
                h('b')
            ),
            format!(
                r#"{{"seekless_decisions": 1, "decisions": [{{"decision": "keeper", "contents": ["{}"]}}]}}"#,
                h('a')
            ),
            r#"{"seekless_decisions": 1, "decisions": [{"decision": "delete", "contents": []}]}"#
                .into(),
        ];
        for text in bad {
            assert!(parse(text.as_bytes()).is_err(), "{text}");
        }
    }
}
