//! The duplicate groups found in the catalog's rows, step by step: the rows made classes
//! of one content; the catalog's links between classes (pairs kept apart, exports joined);
//! the user's "not duplicates"; near-duplicate candidates joined or turned down; the
//! groups read off what was joined. [`Catalog::find`] reads their members in full.

use std::collections::{HashMap, HashSet};

use super::{
    Catalog, Decision, DecisionKind, Dupes, DupesError, DupesOptions, GroupKind, Linked, Row,
    UnionFind, mih, parse_hex32, verify,
};

/// The groups, each as its kind, its link (pairs) and its rows' ids and sizes.
pub(super) type Found = Vec<(GroupKind, Option<String>, Vec<(i64, u64)>)>;

impl Catalog {
    /// The groups, each as its kind, its link (pairs) and its rows' ids and sizes; the ids
    /// of the originals of exported JPEGs; and the counts in `dupes`.
    pub(super) fn group_rows(
        &self,
        opts: &DupesOptions,
        decisions: &[Decision],
        dupes: &mut Dupes,
    ) -> Result<(Found, Linked), DupesError> {
        let sql = |e| self.sql(e);
        dupes.ignored = self.catalog.unhashed().map_err(sql)?;
        let rows = self.load(dupes)?;
        dupes.images = rows.len() as u64;
        dupes.with_phash = rows.iter().filter(|r| r.has_phash).count() as u64;

        let classes = Classes::of(&rows);
        let links = self.links(&rows, &classes)?;
        let not_dups = NotDuplicates::of(decisions);
        let kept_apart = |ci: u32, cj: u32| not_dups.keep_apart(&rows, &classes, ci, cj);

        let mut joins = Joins {
            same: UnionFind::new(classes.len()),
            burst: UnionFind::new(classes.len()),
        };
        for &(a, b) in &links.exports {
            if kept_apart(a, b) {
                continue;
            }
            joins.same.union(a as usize, b as usize);
        }
        if opts.similar > 0 {
            let apart = |ci: u32, cj: u32| {
                links.apart.contains(&(ci.min(cj), ci.max(cj))) || kept_apart(ci, cj)
            };
            self.join_similar(&rows, &classes, opts, apart, dupes, &mut joins)?;
        }

        let Links {
            paired,
            pair_link,
            originals,
            paired_ids,
            ..
        } = links;
        let groups = read_groups(&rows, &classes, paired, &pair_link, joins);
        Ok((
            groups,
            Linked {
                originals,
                paired: paired_ids,
            },
        ))
    }

    /// The catalog's links between the classes of `rows`: pairs kept apart, exports
    /// joined; and which rows are an export's original or part of a pair.
    fn links(&self, rows: &[Row], classes: &Classes) -> Result<Links, DupesError> {
        let class_of = classes.by_id(rows);
        let mut links = Links {
            apart: HashSet::new(),
            paired: UnionFind::new(classes.len()),
            pair_link: HashMap::new(),
            exports: Vec::new(),
            originals: HashSet::new(),
            paired_ids: HashSet::new(),
        };
        self.catalog
            .each_pair(|a, b, link| {
                let (Some(&ca), Some(&cb)) = (class_of.get(&a), class_of.get(&b)) else {
                    return;
                };
                if link != "export" {
                    links.paired_ids.insert(a);
                    links.paired_ids.insert(b);
                }
                if ca == cb {
                    return;
                }
                if link == "export" {
                    links.exports.push((ca, cb));
                    links.originals.insert(a);
                } else {
                    links.apart.insert((ca.min(cb), ca.max(cb)));
                    links.paired.union(ca as usize, cb as usize);
                    links.pair_link.insert(ca as usize, link);
                }
            })
            .map_err(|e| self.sql(e))?;
        Ok(links)
    }

    /// Joins the classes whose representatives' pHashes are within `opts.similar` bits
    /// (multi-index hashing): in `joins.burst` when they are a burst (unless bursts are
    /// duplicates), else in `joins.same`. A candidate `apart` says to keep apart is
    /// skipped; one of another aspect ratio, or whose thumbnails differ, is turned down
    /// (counted in `dupes`).
    fn join_similar(
        &self,
        rows: &[Row],
        classes: &Classes,
        opts: &DupesOptions,
        apart: impl Fn(u32, u32) -> bool,
        dupes: &mut Dupes,
        joins: &mut Joins,
    ) -> Result<(), DupesError> {
        let nodes: Vec<u32> = (0..classes.len())
            .filter(|&c| rows[classes.rep(rows, c)].has_phash)
            .map(|c| c as u32)
            .collect();
        let hashes: Vec<u64> = nodes
            .iter()
            .map(|&c| rows[classes.rep(rows, c as usize)].phash)
            .collect();
        let mut signatures: HashMap<u32, Option<verify::Signature>> = HashMap::new();
        let mut failure = None;
        mih::pairs_within(&hashes, opts.similar, |i, j| {
            let (ci, cj) = (nodes[i], nodes[j]);
            if apart(ci, cj) {
                return;
            }
            let (a, b) = (
                &rows[classes.rep(rows, ci as usize)],
                &rows[classes.rep(rows, cj as usize)],
            );
            dupes.candidates += 1;
            let known = |t: i64| (t != i64::MIN).then_some(t);
            let sides = |r: &Row| (r.sides.0 > 0 && r.sides.1 > 0).then_some(r.sides);
            if !verify::same_aspect(sides(a), sides(b)) {
                dupes.rejected_aspect += 1;
                return;
            }
            let mut sig = |c: u32| -> Option<verify::Signature> {
                if let Some(s) = signatures.get(&c) {
                    return *s;
                }
                let mut found = None;
                for &r in classes.members(c as usize) {
                    match self.thumbnail(rows[r as usize].id) {
                        Ok(Some(t)) => {
                            found = verify::signature(&t.jpeg);
                            break;
                        }
                        Ok(None) => {}
                        Err(e) => {
                            failure.get_or_insert(e);
                            break;
                        }
                    }
                }
                signatures.insert(c, found);
                found
            };
            if let (Some(sa), Some(sb)) = (sig(ci), sig(cj))
                && verify::signature_distance(&sa, &sb) > verify::SIGNATURE_TOLERANCE
            {
                dupes.rejected_thumbnail += 1;
                return;
            }
            if !opts.bursts_are_dupes
                && verify::is_burst((a.camera, b.camera), (known(a.taken), known(b.taken)))
            {
                joins.burst.union(ci as usize, cj as usize);
            } else {
                joins.same.union(ci as usize, cj as usize);
            }
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The rows' classes: runs of one BLAKE3 in `order`.
struct Classes {
    /// The rows' indexes, by BLAKE3.
    order: Vec<u32>,
    /// Where each class starts in `order`, then the end of the last.
    start: Vec<u32>,
}

impl Classes {
    fn of(rows: &[Row]) -> Classes {
        let mut order: Vec<u32> = (0..rows.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| rows[a as usize].blake3.cmp(&rows[b as usize].blake3));
        let mut start: Vec<u32> = Vec::new();
        for (k, &r) in order.iter().enumerate() {
            if k == 0 || rows[order[k - 1] as usize].blake3 != rows[r as usize].blake3 {
                start.push(k as u32);
            }
        }
        start.push(order.len() as u32);
        Classes { order, start }
    }

    /// How many classes.
    fn len(&self) -> usize {
        self.start.len() - 1
    }

    /// Class `c`'s rows (indexes into the rows).
    fn members(&self, c: usize) -> &[u32] {
        &self.order[self.start[c] as usize..self.start[c + 1] as usize]
    }

    /// Class `c`'s representative: its first row with a pHash (else its first row).
    fn rep(&self, rows: &[Row], c: usize) -> usize {
        let m = self.members(c);
        *m.iter()
            .find(|&&r| rows[r as usize].has_phash)
            .unwrap_or(&m[0]) as usize
    }

    /// Each row's class, by the row's id.
    fn by_id(&self, rows: &[Row]) -> HashMap<i64, u32> {
        self.start
            .windows(2)
            .enumerate()
            .flat_map(|(c, w)| {
                self.order[w[0] as usize..w[1] as usize]
                    .iter()
                    .map(move |&r| (r, c as u32))
            })
            .map(|(r, c)| (rows[r as usize].id, c))
            .collect()
    }
}

/// The catalog's links between classes.
struct Links {
    /// Classes of a raw+jpeg or Live Photo pair: never joined as duplicates.
    apart: HashSet<(u32, u32)>,
    /// The pairs, as groups of their own.
    paired: UnionFind,
    /// A pair's link (`raw+jpeg`, `live-photo`), by one of its classes.
    pair_link: HashMap<usize, String>,
    /// An export's original and its JPEG: joined.
    exports: Vec<(u32, u32)>,
    /// HEIFs a JPEG was exported from.
    originals: HashSet<i64>,
    /// Files of a raw+jpeg or Live Photo pair.
    paired_ids: HashSet<i64>,
}

/// The user's "not duplicates": no two of a decision's contents are joined. Each content's
/// decisions, by number.
struct NotDuplicates(HashMap<[u8; 32], Vec<u32>>);

impl NotDuplicates {
    fn of(decisions: &[Decision]) -> NotDuplicates {
        let mut not_dups: HashMap<[u8; 32], Vec<u32>> = HashMap::new();
        for (i, d) in decisions
            .iter()
            .filter(|d| d.decision == DecisionKind::NotDuplicates)
            .enumerate()
        {
            for c in d.contents.iter().filter_map(|c| parse_hex32(c)) {
                not_dups.entry(c).or_default().push(i as u32);
            }
        }
        NotDuplicates(not_dups)
    }

    /// Whether one decision names the contents of both classes `ci` and `cj`.
    fn keep_apart(&self, rows: &[Row], classes: &Classes, ci: u32, cj: u32) -> bool {
        let of = |c: u32| {
            self.0
                .get(&rows[classes.members(c as usize)[0] as usize].blake3)
        };
        match (of(ci), of(cj)) {
            (Some(a), Some(b)) => a.iter().any(|i| b.contains(i)),
            _ => false,
        }
    }
}

/// The classes joined as duplicates (`same`) and as bursts.
struct Joins {
    same: UnionFind,
    burst: UnionFind,
}

/// The groups: components of `same` with two files or more (exact when one content, else
/// similar); of `burst` with two contents or more; of `paired` with two contents or more,
/// with their link.
fn read_groups(
    rows: &[Row],
    classes: &Classes,
    mut paired: UnionFind,
    pair_link: &HashMap<usize, String>,
    mut joins: Joins,
) -> Found {
    let mut same_groups: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut burst_groups: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut pair_groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for c in 0..classes.len() {
        let root = paired.find(c);
        if paired.size[root] > 1 {
            pair_groups.entry(root).or_default().push(c);
        }
        let root = joins.same.find(c);
        if joins.same.size[root] > 1 || classes.members(c).len() > 1 {
            same_groups.entry(root).or_default().push(c);
        }
        let root = joins.burst.find(c);
        if joins.burst.size[root] > 1 {
            burst_groups.entry(root).or_default().push(c);
        }
    }
    let kinds = same_groups
        .into_values()
        .map(|p| {
            let kind = if p.len() == 1 {
                GroupKind::Exact
            } else {
                GroupKind::Similar
            };
            (kind, None, p)
        })
        .chain(
            burst_groups
                .into_values()
                .map(|p| (GroupKind::Burst, None, p)),
        )
        .chain(pair_groups.into_values().map(|p| {
            let link = p.iter().find_map(|c| pair_link.get(c).cloned());
            (GroupKind::Pair, link, p)
        }));
    kinds
        .map(|(kind, link, parts)| {
            let rows = parts
                .iter()
                .flat_map(|&c| classes.members(c))
                .map(|&r| (rows[r as usize].id, rows[r as usize].size))
                .collect();
            (kind, link, rows)
        })
        .collect()
}
