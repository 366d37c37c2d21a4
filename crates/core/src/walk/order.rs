//! Given order: where each item was met (its directory and position in it), and the
//! permutation that puts items found by many threads back in the order `find` would print
//! them: inputs in the order given, directory contents in `readdir` order, depth first.

/// Where an item sits in given order: its directory node and position in it.
#[derive(Clone, Copy)]
pub(super) struct Position {
    pub(super) dir: u32,
    pub(super) pos: u32,
}

/// The pseudo-directory whose children are the inputs.
pub(super) const INPUTS: u32 = 0;

/// A directory met by the walk: the directory it is in and its position there. Node
/// [`INPUTS`] is the root; a directory's node comes after its parent's.
pub(super) struct DirNode {
    pub(super) parent: u32,
    pub(super) pos: u32,
}

/// Puts items in given order: a depth-first traversal where each directory's files and
/// subdirectories come in their readdir positions.
///
/// Works in place, with 4 bytes per item beside the items themselves (and 8 per item of the
/// directory part being sorted at a time): each item's place
/// comes from a traversal of the directories alone (which part of which directory it falls
/// in, and its position there), and the items are permuted to it.
pub(super) fn given_order<T>(nodes: &[DirNode], mut found: Vec<(Position, T)>) -> Vec<T> {
    // Each directory's subdirectories, by position: `subdirs[first[d]..first[d + 1]]`.
    let mut subdirs: Vec<(u32, u32, u32)> = nodes
        .iter()
        .enumerate()
        .skip(1)
        .map(|(id, n)| (n.parent, n.pos, id as u32))
        .collect();
    subdirs.sort_unstable();
    let mut first = vec![0usize; nodes.len() + 1];
    for &(parent, _, _) in &subdirs {
        first[parent as usize + 1] += 1;
    }
    for d in 0..nodes.len() {
        first[d + 1] += first[d];
    }
    // A directory with k subdirectories has k + 1 segments of items: before the first,
    // between two, after the last. Number them in traversal order: the segment after a
    // subdirectory comes after everything inside it. Segment j of directory d is
    // `segment[first[d] + d + j]`.
    let mut segment = vec![0u32; subdirs.len() + nodes.len()];
    let mut next = 0u32;
    // Stack of (directory, subdirectories done).
    let mut stack: Vec<(u32, usize)> = vec![(INPUTS, 0)];
    while let Some(&mut (d, ref mut done)) = stack.last_mut() {
        let d = d as usize;
        segment[first[d] + d + *done] = next;
        next += 1;
        let child = first[d] + *done;
        if child < first[d + 1] {
            *done += 1;
            stack.push((subdirs[child].2, 0));
        } else {
            stack.pop();
        }
    }
    // The segment (in traversal order) an item falls in.
    let segment_of = |at: &Position| {
        let d = at.dir as usize;
        let before = subdirs[first[d]..first[d + 1]].partition_point(|s| s.1 < at.pos);
        segment[first[d] + d + before] as usize
    };
    // A counting sort by segment, then a sort by position within each segment (a part of
    // one directory): linear but for those small sorts, and 4 bytes per item (8 more for
    // the items of the part being sorted). (A sort of
    // all items by a key recomputed at each comparison, which also kept memory at 4 bytes
    // per item, cost about as much as walking the tree's directories on a warm cache.)
    let mut starts = vec![0u32; segment.len() + 1];
    for (at, _) in &found {
        starts[segment_of(at) + 1] += 1;
    }
    for k in 0..segment.len() {
        starts[k + 1] += starts[k];
    }
    let mut from = vec![0u32; found.len()];
    let mut next_slot = starts.clone();
    for (i, (at, _)) in found.iter().enumerate() {
        let slot = &mut next_slot[segment_of(at)];
        from[*slot as usize] = i as u32;
        *slot += 1;
    }
    drop(next_slot);
    // Each part by position, through (position, item) pairs made once per item: a sort of
    // the indices by a key read from the items reached into a 144-byte item at random
    // twice per comparison, the most of this function's time.
    let mut pairs: Vec<u64> = Vec::new();
    for w in starts.windows(2) {
        let part = &mut from[w[0] as usize..w[1] as usize];
        if part.len() > 1 {
            pairs.clear();
            pairs.extend(
                part.iter()
                    .map(|&i| (u64::from(found[i as usize].0.pos) << 32) | u64::from(i)),
            );
            pairs.sort_unstable();
            for (slot, pair) in part.iter_mut().zip(&pairs) {
                *slot = *pair as u32;
            }
        }
    }
    drop(pairs);
    permute(&mut found, &mut from);
    found.into_iter().map(|(_, item)| item).collect()
}

/// Puts the item at `from[k]` in slot k, for every k, in place: one cycle of the
/// permutation at a time, with the cycle's first item held aside, so each item is moved
/// once (swapping moved each ~140-byte item three times: most of given order's time).
/// Leaves `from` as the identity.
///
/// # Panics
///
/// If `from` is not a permutation of `0..items.len()`.
fn permute<T>(items: &mut Vec<T>, from: &mut [u32]) {
    let n = items.len();
    assert_eq!(from.len(), n, "one source per slot");
    let mut seen = vec![false; n];
    for &i in from.iter() {
        assert!(
            !std::mem::replace(&mut seen[i as usize], true),
            "not a permutation"
        );
    }
    drop(seen);
    // While items are moved, two slots may hold the same item: with the length at 0, a
    // panic leaks them rather than dropping one twice.
    // SAFETY: the `n` items stay initialized in the buffer, which `base` points to; the
    // length is set back once every slot holds exactly one item again.
    unsafe { items.set_len(0) };
    let base = items.as_mut_ptr();
    for start in 0..n {
        if from[start] as usize == start {
            continue;
        }
        // SAFETY: `start < n`; the item read out is written back into the cycle's last
        // slot before the next cycle, and no slot is read after being vacated: each slot
        // of the cycle is read once (as `next`) before it is written (as `at`).
        let held = unsafe { std::ptr::read(base.add(start)) };
        let mut at = start;
        loop {
            let next = from[at] as usize;
            from[at] = at as u32;
            if next == start {
                // SAFETY: `at < n`, and its item was moved on (or is `held` itself).
                unsafe { std::ptr::write(base.add(at), held) };
                break;
            }
            // SAFETY: `next` and `at` are distinct slots below `n`; `at`'s item was
            // moved on already (or is held), so it is overwritten, not lost.
            unsafe { std::ptr::copy_nonoverlapping(base.add(next), base.add(at), 1) };
            at = next;
        }
    }
    // SAFETY: every slot holds exactly one item again (each cycle closed).
    unsafe { items.set_len(n) };
}

/// How many of the items `found` came from each of `inputs` inputs, found directly or
/// under a directory given as that input. In given order the inputs come one after
/// another, so these counts cut the ordered items into each input's run.
pub(super) fn files_per_input<T>(
    nodes: &[DirNode],
    found: &[(Position, T)],
    inputs: usize,
) -> Vec<u32> {
    // The input each directory is under. A directory's node is made while its parent is
    // read (or, for an input, before anything is), so parents come first.
    let mut input_of = vec![0u32; nodes.len()];
    for d in 1..nodes.len() {
        let n = &nodes[d];
        input_of[d] = if n.parent == INPUTS {
            n.pos
        } else {
            input_of[n.parent as usize]
        };
    }
    let mut counts = vec![0u32; inputs];
    for (at, _) in found {
        let input = if at.dir == INPUTS {
            at.pos
        } else {
            input_of[at.dir as usize]
        };
        counts[input as usize] += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random number below `n` at each call (xorshift64).
    fn rand_below() -> impl FnMut(u32) -> u32 {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        move |n: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % u64::from(n)) as u32
        }
    }

    #[test]
    fn permuting_moves_each_item_to_its_slot_and_drops_none_twice() {
        let mut rand = rand_below();
        for n in [0u32, 1, 2, 3, 10, 1000] {
            // Owned items (a double drop or a leak of a String would show under a checker;
            // a lost or duplicated item shows in the result).
            let mut items: Vec<String> = (0..n).map(|i| format!("item {i}")).collect();
            let mut from: Vec<u32> = (0..n).collect();
            for i in (1..n as usize).rev() {
                from.swap(i, rand(i as u32 + 1) as usize);
            }
            let expected: Vec<String> = from.iter().map(|i| format!("item {i}")).collect();
            permute(&mut items, &mut from);
            assert_eq!(items, expected);
            assert!(from.iter().enumerate().all(|(k, &i)| k == i as usize));
        }
    }

    #[test]
    #[should_panic(expected = "not a permutation")]
    fn permuting_by_what_is_not_a_permutation_panics_before_moving_anything() {
        let mut items = vec![String::from("a"), String::from("b")];
        permute(&mut items, &mut [0, 0]);
    }

    #[test]
    fn given_order_is_depth_first_in_readdir_positions() {
        let nodes = vec![
            DirNode { parent: 0, pos: 0 },
            DirNode { parent: 0, pos: 0 }, // input 0 is dir 1
            DirNode { parent: 1, pos: 1 }, // dir 2 is child 1 of dir 1
        ];
        let found = vec![
            (Position { dir: 1, pos: 2 }, "d1/after"),
            (Position { dir: 2, pos: 0 }, "d1/sub/x"),
            (Position { dir: 1, pos: 0 }, "d1/first"),
            (Position { dir: 0, pos: 1 }, "input1"),
        ];
        assert_eq!(
            given_order(&nodes, found),
            vec!["d1/first", "d1/sub/x", "d1/after", "input1"]
        );
    }

    #[test]
    fn given_order_matches_a_recursive_traversal_of_a_random_tree() {
        // A deterministic pseudo-random tree: each directory's entries are files or
        // subdirectories at positions 0.., items found in a shuffled order.
        let mut rand = rand_below();
        let mut nodes = vec![DirNode { parent: 0, pos: 0 }];
        // (dir, entries) to fill; entry kinds per directory for the reference.
        let mut children: Vec<Vec<Option<u32>>> = vec![Vec::new()];
        let mut found = Vec::new();
        let mut d = 0;
        while d < nodes.len() && nodes.len() < 400 {
            let entries = rand(40);
            for pos in 0..entries {
                if rand(5) == 0 {
                    nodes.push(DirNode {
                        parent: d as u32,
                        pos,
                    });
                    children.push(Vec::new());
                    children[d].push(Some(nodes.len() as u32 - 1));
                } else if rand(7) != 0 {
                    // A file (some positions stay empty: filtered, symlinks skipped).
                    found.push((Position { dir: d as u32, pos }, (d as u32, pos)));
                    children[d].push(None);
                } else {
                    children[d].push(None);
                }
            }
            d += 1;
        }
        fn reference(
            d: u32,
            children: &[Vec<Option<u32>>],
            have: &[(u32, u32)],
            out: &mut Vec<(u32, u32)>,
        ) {
            for (pos, child) in children[d as usize].iter().enumerate() {
                match child {
                    Some(sub) => reference(*sub, children, have, out),
                    None if have.contains(&(d, pos as u32)) => out.push((d, pos as u32)),
                    None => {}
                }
            }
        }
        let have: Vec<(u32, u32)> = found.iter().map(|(_, item)| *item).collect();
        let mut want = Vec::new();
        reference(0, &children, &have, &mut want);
        for i in (1..found.len()).rev() {
            found.swap(i, rand(i as u32 + 1) as usize);
        }
        assert!(want.len() > 1000, "{}", want.len());
        assert_eq!(given_order(&nodes, found), want);
    }

    #[test]
    fn items_are_counted_under_the_input_they_were_found_through() {
        let nodes = vec![
            DirNode { parent: 0, pos: 0 },
            DirNode { parent: 0, pos: 1 }, // input 1 is dir 1
            DirNode { parent: 1, pos: 3 }, // dir 2 is in dir 1
            DirNode { parent: 0, pos: 3 }, // input 3 is dir 3
        ];
        let found = [
            (Position { dir: 2, pos: 0 }, ()),
            (Position { dir: 0, pos: 0 }, ()),
            (Position { dir: 1, pos: 0 }, ()),
            (Position { dir: 3, pos: 7 }, ()),
        ];
        // Input 2 found nothing (an error, or a directory already walked).
        assert_eq!(files_per_input(&nodes, &found, 4), [1, 2, 0, 1]);
    }
}
