//! Which file of a duplicate group is kept: the keeper rules (`--keep`, `--prefer`,
//! `--protect`).
//!
//! Before any rule: the original an exported JPEG was made from (a HEIF the catalog links
//! to it) is the keeper; a file that is part of a pair (a raw file's JPEG, a Live Photo's
//! still or video) or under a `--protect` folder is never offered for removal: it is kept
//! beside the keeper, which the rules choose. The rules, in the order given, break ties; the
//! path's bytes break the last.
//!
//! ```
//! use seekless_catalog::dupes::{DupesOptions, KeepRule, Keeping};
//!
//! let mut opts = DupesOptions::default();
//! opts.keeping.rules = Keeping::parse_rules("largest,oldest").unwrap();
//! opts.keeping.protect.push("/photos/vault".into());
//! assert_eq!(opts.keeping.rules, [KeepRule::Largest, KeepRule::Oldest]);
//! assert!(Keeping::parse_rules("oldest,newest").is_err());
//! ```

use std::cmp::Ordering;
use std::path::PathBuf;

use seekless_sys::Scope;
use std::str::FromStr;

use super::Member;
use super::verify;

/// One criterion of the keeper rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeepRule {
    /// Under a `--prefer` folder (an earlier one before a later one).
    Preferred,
    /// The most pixels.
    Resolution,
    /// The most bytes (of two re-encodings of one size, the better quality, usually).
    Largest,
    /// The earliest capture date (known before unknown), then the earliest modification.
    Oldest,
    /// The latest capture date (known before unknown), then the latest modification.
    Newest,
    /// The shortest path.
    ShortestPath,
}

impl KeepRule {
    /// Every rule, by its name.
    pub const ALL: [(&'static str, KeepRule); 6] = [
        ("preferred", KeepRule::Preferred),
        ("resolution", KeepRule::Resolution),
        ("largest", KeepRule::Largest),
        ("oldest", KeepRule::Oldest),
        ("newest", KeepRule::Newest),
        ("shortest-path", KeepRule::ShortestPath),
    ];

    /// Its name, as `--keep` takes it.
    pub fn name(self) -> &'static str {
        KeepRule::ALL
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("", |(n, _)| n)
    }
}

impl FromStr for KeepRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        KeepRule::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, r)| *r)
            .ok_or_else(|| {
                let names: Vec<&str> = KeepRule::ALL.iter().map(|(n, _)| *n).collect();
                format!("unknown keeper rule {s:?} (one of: {})", names.join(", "))
            })
    }
}

/// The default rules: `preferred,resolution,oldest,shortest-path`. Not `largest`: of a
/// lossless original and its lossy re-encoding, the re-encoding can be the larger file.
pub(crate) const DEFAULT_RULES: [KeepRule; 4] = [
    KeepRule::Preferred,
    KeepRule::Resolution,
    KeepRule::Oldest,
    KeepRule::ShortestPath,
];

/// How the keeper of each group is chosen.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Keeping {
    /// The rules, in order; by default `preferred,resolution,oldest,shortest-path` (not
    /// `largest`: of a lossless original and its lossy re-encoding, the re-encoding can be
    /// the larger file). Without [`KeepRule::Preferred`] among them, preferred folders come
    /// first.
    pub rules: Vec<KeepRule>,
    /// Folders whose files are kept before others (`--prefer`, absolute).
    pub prefer: Vec<PathBuf>,
    /// Folders whose files are never offered for removal (`--protect`, absolute).
    pub protect: Vec<PathBuf>,
}

impl Default for Keeping {
    fn default() -> Self {
        Keeping {
            rules: DEFAULT_RULES.to_vec(),
            prefer: Vec::new(),
            protect: Vec::new(),
        }
    }
}

impl Keeping {
    /// Rules from `--keep`'s text: names separated by commas, each once, not both
    /// `oldest` and `newest`.
    pub fn parse_rules(text: &str) -> Result<Vec<KeepRule>, String> {
        let mut rules: Vec<KeepRule> = Vec::new();
        for name in text.split(',').map(str::trim) {
            let rule: KeepRule = name.parse()?;
            if rules.contains(&rule) {
                return Err(format!("keeper rule {name:?} given twice"));
            }
            rules.push(rule);
        }
        if rules.contains(&KeepRule::Oldest) && rules.contains(&KeepRule::Newest) {
            return Err("keeper rules: oldest and newest contradict each other".into());
        }
        Ok(rules)
    }

    /// The same, each of `prefer` and `protect` resolved as the system sees it (absolute,
    /// links followed: [`Scope::resolve`]), as the catalog's paths are: a folder named
    /// through a link protects what is in it. A folder that cannot be resolved (missing,
    /// not searchable) is an error, never a protection that protects nothing.
    pub fn resolved(&self) -> Result<Keeping, (PathBuf, std::io::Error)> {
        let resolve = |dirs: &[PathBuf]| {
            dirs.iter()
                .map(|d| {
                    Scope::resolve(d)
                        .map(|s| s.root().to_path_buf())
                        .map_err(|e| (d.clone(), e))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Keeping {
            rules: self.rules.clone(),
            prefer: resolve(&self.prefer)?,
            protect: resolve(&self.protect)?,
        })
    }

    /// Whether `m` is never to be offered for removal, and why (`protect` as resolved by
    /// [`resolved`](Self::resolved)).
    pub fn protects(&self, m: &Member) -> Option<&'static str> {
        if m.paired {
            Some("part of a pair")
        } else if under_any(m, &self.protect).is_some() {
            Some("under a protected folder")
        } else {
            None
        }
    }

    /// The order of a group's members, the keeper first.
    pub fn order(&self, a: &Member, b: &Member) -> Ordering {
        let mut o = b.original.cmp(&a.original);
        if !self.rules.contains(&KeepRule::Preferred) {
            o = o.then_with(|| self.compare(KeepRule::Preferred, a, b));
        }
        for &rule in &self.rules {
            o = o.then_with(|| self.compare(rule, a, b));
        }
        o.then_with(|| a.path_bytes.cmp(&b.path_bytes))
    }

    fn compare(&self, rule: KeepRule, a: &Member, b: &Member) -> Ordering {
        let taken = |m: &Member| m.taken.as_deref().and_then(verify::taken_ms);
        // Known dates first; among them, the earliest (or latest) first.
        let by_date = |newest: bool| match (taken(a), taken(b)) {
            (Some(x), Some(y)) if newest => y.cmp(&x),
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        match rule {
            KeepRule::Preferred => {
                let rank = |m: &Member| under_any(m, &self.prefer).unwrap_or(usize::MAX);
                rank(a).cmp(&rank(b))
            }
            KeepRule::Resolution => b.pixels().cmp(&a.pixels()),
            KeepRule::Largest => b.size.cmp(&a.size),
            KeepRule::Oldest => by_date(false).then(a.mtime_ns.cmp(&b.mtime_ns)),
            KeepRule::Newest => by_date(true).then(b.mtime_ns.cmp(&a.mtime_ns)),
            KeepRule::ShortestPath => a.path_bytes.len().cmp(&b.path_bytes.len()),
        }
    }
}

/// The index of the first of `dirs` (resolved: see [`Keeping::resolved`]) that `m` is
/// under, if any.
fn under_any(m: &Member, dirs: &[PathBuf]) -> Option<usize> {
    dirs.iter()
        .position(|d| Scope::bytes_within(d, &m.path_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dupes::tests::member;

    fn keeper(k: &Keeping, mut members: Vec<Member>) -> String {
        members.sort_by(|a, b| k.order(a, b));
        members[0].path.clone()
    }

    #[test]
    fn rules_are_parsed_in_order_once_each() {
        assert_eq!(
            Keeping::parse_rules("largest, shortest-path").unwrap(),
            [KeepRule::Largest, KeepRule::ShortestPath]
        );
        assert!(Keeping::parse_rules("largest,largest").is_err());
        assert!(Keeping::parse_rules("oldest,newest").is_err());
        assert!(
            Keeping::parse_rules("biggest")
                .unwrap_err()
                .contains("resolution")
        );
        for (name, rule) in KeepRule::ALL {
            assert_eq!(rule.name(), name);
        }
    }

    #[test]
    fn each_rule_decides_in_its_turn() {
        let t1 = Some("2020-01-01T10:00:00");
        let t2 = Some("2021-01-01T10:00:00");
        let big = member("/long/path/big", 200, 100, t2, 10);
        let heavy = member("/b/heavy", 100, 100, t1, 50);
        let old = member("/c/old", 100, 100, t1, 10);
        let all = || vec![big.clone(), heavy.clone(), old.clone()];
        let k = Keeping::default();
        assert_eq!(keeper(&k, all()), "/long/path/big");
        let with = |rules: &str| Keeping {
            rules: Keeping::parse_rules(rules).unwrap(),
            ..Keeping::default()
        };
        assert_eq!(keeper(&with("largest"), all()), "/b/heavy");
        assert_eq!(keeper(&with("newest"), all()), "/long/path/big");
        // Same date: the path decides last.
        assert_eq!(keeper(&with("oldest"), all()), "/b/heavy");
        assert_eq!(keeper(&with("oldest,shortest-path"), all()), "/c/old");
        assert_eq!(keeper(&with("shortest-path,largest"), all()), "/c/old");
        assert_eq!(keeper(&with("largest,shortest-path"), all()), "/b/heavy");
    }

    #[test]
    fn preferred_folders_first_and_protected_files_are_kept() {
        let a = member("/photos/master/a.jpg", 100, 100, None, 10);
        let b = member("/backup/a.jpg", 400, 400, None, 10);
        let mut k = Keeping {
            prefer: vec![PathBuf::from("/photos/master")],
            ..Keeping::default()
        };
        assert_eq!(
            keeper(&k, vec![b.clone(), a.clone()]),
            "/photos/master/a.jpg"
        );
        // Ranked where `preferred` is in the rules.
        k.rules = Keeping::parse_rules("resolution,preferred").unwrap();
        assert_eq!(keeper(&k, vec![a.clone(), b.clone()]), "/backup/a.jpg");
        // A protected file does not change the keeper (the rules choose it); it is kept
        // beside it, never offered.
        k.protect = vec![PathBuf::from("/photos")];
        assert_eq!(keeper(&k, vec![a.clone(), b.clone()]), "/backup/a.jpg");
        assert!(k.protects(&a).is_some() && k.protects(&b).is_none());
        // A folder's name is not a prefix of its neighbour's.
        let c = member("/photos-old/x.jpg", 1, 1, None, 1);
        assert!(k.protects(&c).is_none());
        let mut paired = member("/x/IMG_1.JPG", 1, 1, None, 1);
        paired.paired = true;
        assert_eq!(k.protects(&paired), Some("part of a pair"));
    }
}
