//! The order of prefetch steps within one sweep.
//!
//! Every extent of every file becomes a step at its own place in the sweep, so a
//! fragmented file's pieces are fetched as the head passes them rather than by seeking
//! back and forth. Files without a position (and empty or inline files) are one step each
//! after the located ones, in the sweep's order. Steps longer than the piece size are cut
//! so window accounting stays fine-grained and large files can stream, and never longer
//! than one prefetch call can bring in on the file's filesystem (Linux drops the rest of
//! a longer `readahead(2)`, and that rest would then be read late, out of sweep order).

use crate::plan::{Plan, PlannedFile, Sweep};

/// One prefetch request: a byte range of one file. 24 bytes: a sweep of a million files
/// holds a million of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// Offset in the file.
    pub offset: u64,
    /// Where the bytes lie on the disk; [`UNKNOWN`] if not known.
    at: u64,
    /// Index into the sweep's files (not the plan's: a sweep's arrays are as long as
    /// its own files, however many lanes share a plan).
    pub file: u32,
    /// Bytes to prefetch (0 for empty, inline or all-hole files); at most [`MAX_PIECE`].
    len: u32,
}

/// No position on the disk.
const UNKNOWN: u64 = u64::MAX;

/// The longest step: pieces are cut to this at most (the default piece is 4 MiB).
const MAX_PIECE: u64 = 1 << 31;

impl Step {
    fn new(file: u32, offset: u64, length: u64, position: Option<u64>) -> Self {
        debug_assert!(length <= MAX_PIECE);
        Self {
            offset,
            // A device offset of 2^64 - 1 is no place a byte can be.
            at: position.map_or(UNKNOWN, |p| p.min(UNKNOWN - 1)),
            file,
            len: length as u32,
        }
    }

    /// Bytes to prefetch.
    pub fn length(&self) -> u64 {
        u64::from(self.len)
    }

    /// Where the bytes lie on the disk, if known.
    pub fn position(&self) -> Option<u64> {
        (self.at != UNKNOWN).then_some(self.at)
    }
}

/// The steps of a sweep in disk order, and how many steps each file has.
///
/// Only the located steps are held in a list (24 bytes each); the rest, which keep the
/// sweep's order, are made as [`steps`](Self::steps) reaches them: on a disk that is not
/// located, that is every file, and a list of them would be the reader's largest array.
pub(crate) struct Schedule<'p> {
    /// Located steps by disk position (then file, offset).
    located: Vec<Step>,
    /// Steps per file, indexed like the sweep's files.
    pub steps_per_file: Vec<u32>,
    /// Whether any file has steps without a position.
    any_unlocated: bool,
    files: &'p [PlannedFile],
    sweep: &'p Sweep,
    /// The piece size per filesystem.
    pieces: Vec<u64>,
}

impl Schedule<'_> {
    /// Every step, in the order the sweep issues them: the located ones, then each file
    /// without a position in the sweep's order, its pieces in offset order.
    pub fn steps(&self) -> Steps<'_> {
        Steps {
            located: self.located.iter(),
            schedule: self,
            next_file: if self.any_unlocated {
                0
            } else {
                self.sweep.files.len()
            },
            pieces: Pieces::none(),
        }
    }

    /// The steps of file `local` (its index in the sweep), if they have no position.
    fn unlocated_pieces(&self, local: usize) -> Option<Pieces> {
        let f = &self.files[self.sweep.files[local] as usize];
        (f.placement.extents().is_empty() && f.disk_offset().is_none()).then(|| {
            let piece = self.pieces[f.filesystem as usize];
            Pieces::new(local as u32, 0, f.entry.size, None, piece)
        })
    }
}

/// The steps of a [`Schedule`] in order; cloning it gives the steps still to come.
#[derive(Clone)]
pub(crate) struct Steps<'s> {
    located: std::slice::Iter<'s, Step>,
    schedule: &'s Schedule<'s>,
    /// The next file (index in the sweep) to look at once the located steps are done.
    next_file: usize,
    /// What is left of the file at hand's steps without a position.
    pieces: Pieces,
}

impl Iterator for Steps<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if let Some(&step) = self.located.next() {
            return Some(step);
        }
        loop {
            if let Some(step) = self.pieces.next() {
                return Some(step);
            }
            let local = self.next_file;
            if local >= self.schedule.sweep.files.len() {
                return None;
            }
            self.next_file += 1;
            if let Some(pieces) = self.schedule.unlocated_pieces(local) {
                self.pieces = pieces;
            }
        }
    }
}

pub(crate) fn schedule<'p>(plan: &'p Plan, sweep: &'p Sweep, piece: u64) -> Schedule<'p> {
    let files = plan.files();
    // The piece size per filesystem: never more than one prefetch call brings in there.
    let pieces: Vec<u64> = plan
        .filesystems()
        .iter()
        .map(|r| {
            piece
                .min(r.max_prefetch.unwrap_or(u64::MAX))
                .clamp(4096, MAX_PIECE)
        })
        .collect();
    // Every located step (each file's in offset order), and counts of every step.
    let each_located = |emit: &mut dyn FnMut(Step)| {
        for (local, &i) in sweep.files.iter().enumerate() {
            let f = &files[i as usize];
            let i = local as u32;
            let piece = pieces[f.filesystem as usize];
            let extents = f.placement.extents();
            if extents.is_empty() {
                // One step for the whole file, cut into pieces.
                if let Some(position) = f.disk_offset() {
                    Pieces::new(i, 0, f.entry.size, Some(position), piece).for_each(&mut *emit);
                }
                continue;
            }
            for e in extents {
                let length = e.length.min(f.entry.size.saturating_sub(e.logical));
                let position = Some(f.base.saturating_add(e.physical));
                Pieces::new(i, e.logical, length, position, piece).for_each(&mut *emit);
            }
        }
    };
    // Counted first, so the list is allocated once at its size: at a million files, the
    // schedule is a large part of the reader's memory.
    let mut located = 0usize;
    each_located(&mut |_| located += 1);
    let mut steps: Vec<Step> = Vec::with_capacity(located);
    each_located(&mut |s| steps.push(s));
    steps.sort_unstable_by_key(|s| (s.at, s.file, s.offset));
    let mut steps_per_file = vec![0u32; sweep.files.len()];
    for s in &steps {
        steps_per_file[s.file as usize] += 1;
    }
    let mut schedule = Schedule {
        located: steps,
        steps_per_file,
        any_unlocated: false,
        files,
        sweep,
        pieces,
    };
    for local in 0..sweep.files.len() {
        if let Some(pieces) = schedule.unlocated_pieces(local) {
            schedule.steps_per_file[local] = pieces.count() as u32;
            schedule.any_unlocated = true;
        }
    }
    schedule
}

/// The steps of `length` bytes of file `file` from `offset`, at `position` on the disk
/// if known, cut into pieces of at most `piece` bytes (one step of length 0 if empty).
#[derive(Clone)]
struct Pieces {
    file: u32,
    offset: u64,
    length: u64,
    position: Option<u64>,
    piece: u64,
    /// Bytes already stepped over; `None` once an empty file's one step is made.
    done: Option<u64>,
}

impl Pieces {
    fn new(file: u32, offset: u64, length: u64, position: Option<u64>, piece: u64) -> Self {
        Self {
            file,
            offset,
            length,
            position,
            piece,
            done: Some(0),
        }
    }

    /// No steps.
    fn none() -> Self {
        Self {
            done: None,
            ..Self::new(0, 0, 0, None, 1)
        }
    }
}

impl Iterator for Pieces {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        let done = self.done?;
        if self.length == 0 {
            self.done = None;
            return Some(Step::new(self.file, self.offset, 0, self.position));
        }
        if done >= self.length {
            self.done = None;
            return None;
        }
        let n = self.piece.min(self.length - done);
        self.done = Some(done + n);
        Some(Step::new(
            self.file,
            self.offset + done,
            n,
            self.position.map(|p| p.saturating_add(done)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::{filesystem, located, plan_of};

    fn steps(plan: &Plan, piece: u64) -> Vec<(u32, u64, u64, Option<u64>)> {
        schedule(plan, &plan.sweeps()[0], piece)
            .steps()
            .map(|s| (s.file, s.offset, s.length(), s.position()))
            .collect()
    }

    #[test]
    fn each_extent_of_a_fragmented_file_is_fetched_at_its_place_in_the_sweep() {
        const M: u64 = 1 << 20;
        let files = vec![
            // File 0: two extents, at 1 MiB and at 9 MiB on the disk.
            located(
                "frag",
                (1, 1),
                128 << 10,
                &[(0, M, 64 << 10), (64 << 10, 9 * M, 64 << 10)],
                0,
            ),
            // File 1: in between.
            located("mid", (1, 2), 4096, &[(0, 5 * M, 4096)], 0),
            // File 2: no position, after every located step.
            located("unlocated", (1, 3), 8192, &[], 0),
        ];
        let plan = plan_of(files, vec![filesystem(1, 0, None)]);
        let s = schedule(&plan, &plan.sweeps()[0], 4 << 20);
        assert_eq!(
            s.steps()
                .map(|s| (s.file, s.offset, s.length(), s.position()))
                .collect::<Vec<_>>(),
            vec![
                (0, 0, 64 << 10, Some(M)),
                (1, 0, 4096, Some(5 * M)),
                (0, 64 << 10, 64 << 10, Some(9 * M)),
                (2, 0, 8192, None),
            ]
        );
        assert_eq!(s.steps_per_file, vec![2, 1, 1]);
    }

    #[test]
    fn steps_are_cut_to_the_piece_size_and_to_what_one_prefetch_call_reads() {
        let files = vec![located("big", (1, 1), 10 << 20, &[(0, 0, 10 << 20)], 0)];
        let uncapped = plan_of(files.clone(), vec![filesystem(1, 0, None)]);
        let lengths =
            |plan: &Plan, piece| -> Vec<u64> { steps(plan, piece).iter().map(|s| s.2).collect() };
        assert_eq!(lengths(&uncapped, 4 << 20), vec![4 << 20, 4 << 20, 2 << 20]);
        // A device that reads at most 1280 KiB per readahead(2) call.
        let capped = plan_of(files, vec![filesystem(1, 0, Some(1280 << 10))]);
        let cut = lengths(&capped, 4 << 20);
        assert_eq!(cut.len(), 8);
        assert!(cut.iter().all(|&l| l <= 1280 << 10));
        assert_eq!(cut.iter().sum::<u64>(), 10 << 20);
        // Positions follow the pieces.
        let s = steps(&capped, 4 << 20);
        assert_eq!(s[1].3, Some(1280 << 10));
    }

    #[test]
    fn a_step_is_24_bytes_and_pieces_stay_under_2_gib() {
        assert_eq!(std::mem::size_of::<Step>(), 24);
        let files = vec![located("huge", (1, 1), 5 << 30, &[(0, 0, 5 << 30)], 0)];
        let plan = plan_of(files, vec![filesystem(1, 0, None)]);
        let lengths: Vec<u64> = steps(&plan, u64::MAX).iter().map(|s| s.2).collect();
        assert_eq!(lengths, vec![2 << 30, 2 << 30, 1 << 30]);
    }

    #[test]
    fn partition_bases_shift_positions_onto_the_whole_disk() {
        let mut f = located("p2", (2, 1), 4096, &[(0, 8192, 4096)], 0);
        f.base = 1 << 30;
        let plan = plan_of(vec![f], vec![filesystem(2, 0, None)]);
        assert_eq!(
            steps(&plan, 4 << 20),
            vec![(0, 0, 4096, Some((1 << 30) + 8192))]
        );
    }
}
