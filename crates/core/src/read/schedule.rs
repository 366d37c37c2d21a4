//! The order of prefetch steps within one sweep.
//!
//! Every extent of every file becomes a step at its own place in the sweep, so a
//! fragmented file's pieces are fetched as the head passes them rather than by seeking
//! back and forth. Files without a position (and empty or inline files) are one step each
//! after the located ones, in the sweep's order. Steps longer than the piece size are cut
//! so window accounting stays fine-grained and large files can stream, and never longer
//! than one prefetch call can bring in on the file's filesystem (Linux drops the rest of
//! a longer `readahead(2)`, and that rest would then be read late, out of sweep order).
//!
//! On a filesystem split into its members (btrfs over several disks), an extent's pieces
//! lie on the member holding each (RAID0: every other 64 KiB stripe): a sweep takes only
//! the pieces on its own disk, of its own files and of its guests (files of other sweeps
//! with pieces here). Such an extent is held as one *seed* step, at its first piece here,
//! and cut into its pieces only when the sweep reaches it, so a terabyte of stripes does
//! not become a list of millions of steps.

use crate::os;
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

/// The length of a seed: an extent of a split filesystem whose pieces here are made when
/// the sweep reaches it (above [`MAX_PIECE`], so no real step has it).
const SEED: u32 = u32::MAX;

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

    /// The seed of the extent of file `file` at offset `offset` of a split filesystem,
    /// whose first piece on this disk is at `position`.
    fn seed(file: u32, offset: u64, position: u64) -> Self {
        Self {
            offset,
            at: position.min(UNKNOWN - 1),
            file,
            len: SEED,
        }
    }

    fn is_seed(&self) -> bool {
        self.len == SEED
    }

    /// Bytes to prefetch.
    pub fn length(&self) -> u64 {
        debug_assert!(!self.is_seed(), "a seed is cut before it is issued");
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
    /// Located steps (and seeds) by disk position (then file, offset).
    located: Vec<Step>,
    /// Steps per file, indexed like the sweep's files, then its guests.
    pub steps_per_file: Vec<u32>,
    /// Whether any file has steps without a position.
    any_unlocated: bool,
    files: &'p [PlannedFile],
    filesystems: &'p [crate::plan::FilesystemReport],
    sweep: &'p Sweep,
    /// The piece size per filesystem.
    pieces: Vec<u64>,
    /// Per filesystem split into members: per member, its first byte on this sweep's
    /// disk if it is on it.
    here: Vec<Option<Vec<Option<u64>>>>,
}

/// The plan's index of a sweep's file `local`: its files, then its guests.
pub(crate) fn planned(sweep: &Sweep, local: u32) -> u32 {
    let local = local as usize;
    match sweep.files.get(local) {
        Some(&i) => i,
        None => sweep.guests[local - sweep.files.len()],
    }
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
            seed: None,
        }
    }

    /// The pieces on this disk of the extent of file `local` at file offset `offset`,
    /// on a split filesystem. Empty for anything else.
    fn cut<'s>(&'s self, local: u32, offset: u64) -> Cut<'s> {
        let f = &self.files[planned(self.sweep, local) as usize];
        let extents = f.placement.extents();
        let fs = f.filesystem as usize;
        let split = self.split_here(fs);
        let (Some((layout, here)), Ok(k)) =
            (split, extents.binary_search_by_key(&offset, |e| e.logical))
        else {
            return Cut::none(local);
        };
        let e = &extents[k];
        Cut {
            layout: Some(layout),
            here,
            file: local,
            offset: e.logical,
            at: e.physical,
            end: e
                .physical
                .saturating_add(e.length.min(f.entry.size.saturating_sub(e.logical))),
            piece: self.pieces[fs],
            pieces: Pieces::none(),
        }
    }

    /// The layout of filesystem `fs` and which of its members are on this disk, if it
    /// is split into its members and one of them is.
    fn split_here(&self, fs: usize) -> Option<(&os::Striping, &[Option<u64>])> {
        let here = self.here.get(fs)?.as_deref()?;
        let split = self.filesystems[fs].split.as_ref()?;
        Some((&*split.layout, here))
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
    /// What is left of the seed at hand's pieces.
    seed: Option<Cut<'s>>,
}

impl Iterator for Steps<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        loop {
            if let Some(cut) = &mut self.seed {
                if let Some(step) = cut.next() {
                    return Some(step);
                }
                self.seed = None;
            }
            match self.located.next() {
                Some(&step) if step.is_seed() => {
                    self.seed = Some(self.schedule.cut(step.file, step.offset));
                }
                Some(&step) => return Some(step),
                None => break,
            }
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
    // Per split filesystem, its members on this disk.
    let here = plan
        .filesystems()
        .iter()
        .map(|r| {
            let split = r.split.as_ref()?;
            let here: Vec<Option<u64>> = split
                .members
                .iter()
                .map(|&(disk, base)| (disk == sweep.disk).then_some(base))
                .collect();
            here.iter().any(Option::is_some).then_some(here)
        })
        .collect();
    let mut schedule = Schedule {
        located: Vec::new(),
        steps_per_file: vec![0u32; sweep.files.len() + sweep.guests.len()],
        any_unlocated: false,
        files,
        filesystems: plan.filesystems(),
        sweep,
        pieces,
        here,
    };
    // Every located step (each file's in offset order) and seed, with the steps it makes.
    // `counting`: only the number of entries is wanted, not the steps a seed makes.
    let each_located =
        |schedule: &Schedule<'_>, counting: bool, emit: &mut dyn FnMut(Step, u32)| {
            let locals = sweep.files.len() + sweep.guests.len();
            for local in 0..locals as u32 {
                let f = &files[planned(sweep, local) as usize];
                let piece = schedule.pieces[f.filesystem as usize];
                let extents = f.placement.extents();
                if extents.is_empty() {
                    // One step for the whole file, cut into pieces.
                    if let Some(position) = f.disk_offset() {
                        Pieces::new(local, 0, f.entry.size, Some(position), piece)
                            .for_each(|s| emit(s, 1));
                    }
                    continue;
                }
                if schedule.split_here(f.filesystem as usize).is_some() {
                    // Each extent's pieces here, made when the sweep reaches the first.
                    let mut seeds = 0;
                    for e in extents {
                        let cut = schedule.cut(local, e.logical);
                        if let Some(first) = cut.clone().next() {
                            let position = first.position().unwrap_or(UNKNOWN - 1);
                            let steps = if counting { 0 } else { cut.count() as u32 };
                            emit(Step::seed(local, e.logical, position), steps);
                            seeds += 1;
                        }
                    }
                    // A guest may have nothing here after all; a file of this sweep must
                    // have a step, or it would never be handed out: one whose pieces the
                    // layout does not place (outside the chunk map) is fetched whole here,
                    // at its sort key, as on a pool left whole.
                    if seeds > 0 || local as usize >= sweep.files.len() {
                        continue;
                    }
                }
                for e in extents {
                    let length = e.length.min(f.entry.size.saturating_sub(e.logical));
                    let position = Some(f.base.saturating_add(e.physical));
                    Pieces::new(local, e.logical, length, position, piece).for_each(|s| emit(s, 1));
                }
            }
        };
    // Counted first, so the list is allocated once at its size: at a million files, the
    // schedule is a large part of the reader's memory.
    let mut located = 0usize;
    each_located(&schedule, true, &mut |_, _| located += 1);
    let mut steps: Vec<Step> = Vec::with_capacity(located);
    let mut steps_per_file = std::mem::take(&mut schedule.steps_per_file);
    each_located(&schedule, false, &mut |s, n| {
        steps_per_file[s.file as usize] += n;
        steps.push(s);
    });
    steps.sort_unstable_by_key(|s| (s.at, s.file, s.offset));
    schedule.located = steps;
    schedule.steps_per_file = steps_per_file;
    for local in 0..sweep.files.len() {
        if let Some(pieces) = schedule.unlocated_pieces(local) {
            schedule.steps_per_file[local] = pieces.count() as u32;
            schedule.any_unlocated = true;
        }
    }
    // A file of the sweep is handed out when its last step is issued: one without a step
    // would never be.
    debug_assert!(
        schedule.steps_per_file[..sweep.files.len()]
            .iter()
            .all(|&n| n > 0),
        "a file of the sweep without a step"
    );
    schedule
}

/// The pieces on one disk of one extent of a split filesystem, as steps cut to the
/// piece size: what a seed becomes. Cloning it gives the steps still to come.
#[derive(Clone)]
struct Cut<'s> {
    /// `None`: no pieces.
    layout: Option<&'s os::Striping>,
    /// Per member, its first byte on this disk if it is on it.
    here: &'s [Option<u64>],
    file: u32,
    /// The file offset of the address `at`.
    offset: u64,
    /// The filesystem address reached, and where the extent ends.
    at: u64,
    end: u64,
    piece: u64,
    /// What is left of the piece at hand.
    pieces: Pieces,
}

impl Cut<'_> {
    fn none(file: u32) -> Self {
        Self {
            layout: None,
            here: &[],
            file,
            offset: 0,
            at: 0,
            end: 0,
            piece: 1,
            pieces: Pieces::none(),
        }
    }
}

impl Iterator for Cut<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        loop {
            if let Some(step) = self.pieces.next() {
                return Some(step);
            }
            let layout = self.layout?;
            if self.at >= self.end {
                return None;
            }
            // The walk is started afresh at each piece (a search of the chunk map): it
            // borrows nothing, so this stays a plain value to clone.
            let Some(p) = layout.pieces(self.at, self.end - self.at).next() else {
                // The rest has no known place: it is read when the file is.
                self.at = self.end;
                return None;
            };
            let offset = self.offset;
            self.at = self.at.saturating_add(p.length);
            self.offset = self.offset.saturating_add(p.length);
            if let Some(Some(base)) = self.here.get(p.member) {
                let position = Some(base.saturating_add(p.offset));
                self.pieces = Pieces::new(self.file, offset, p.length, position, self.piece);
            }
        }
    }
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
pub(crate) mod tests {
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

    /// Three files on a btrfs RAID0 pool over two disks (64 KiB stripes, the chunk at
    /// address 1 GiB, its stripes at 10 MiB on device 1 and 20 MiB on device 2), as the
    /// planner places them: each with the member of its first byte, its extents at the
    /// filesystem's addresses.
    #[cfg(target_os = "linux")]
    pub(crate) fn raid0_plan() -> Plan {
        raid0_plan_with(|_, _| {})
    }

    /// [`raid0_plan`], each file (a, b, c) changed by `adjust` first.
    #[cfg(target_os = "linux")]
    pub(crate) fn raid0_plan_with(adjust: impl Fn(usize, &mut PlannedFile)) -> Plan {
        const K: u64 = 1024;
        const M: u64 = K * K;
        let (a, l) = (RAID0_AT, 64 * K);
        let file = |name, ino, size, address, disk, key| {
            let mut f = located(name, (1, ino), size, &[(0, address, size)], 0);
            f.disk = disk;
            f.placement = f.placement.with_key(key);
            f
        };
        let mut files = vec![
            // Stripes 0-3: device 1, 2, 1, 2.
            file("a", 1, 200 * K, a, 0, 10 * M),
            // Stripe 4: device 1 alone.
            file("b", 2, l, a + 4 * l, 0, 10 * M + 2 * l),
            // Stripes 5-6: device 2, then 36 KiB on device 1.
            file("c", 3, 100 * K, a + 5 * l, 1, 20 * M + 2 * l),
        ];
        for (i, f) in files.iter_mut().enumerate() {
            adjust(i, f);
        }
        raid0_plan_of(files)
    }

    /// Where the RAID0 chunk of [`raid0_plan_of`] starts in the filesystem's addresses.
    #[cfg(target_os = "linux")]
    pub(crate) const RAID0_AT: u64 = 1 << 30;

    /// A plan of `files` on a btrfs RAID0 pool over two disks (64 KiB stripes, one chunk
    /// of 1 GiB at address [`RAID0_AT`], its stripes at 10 MiB on device 1, disk 0, and
    /// 20 MiB on device 2, disk 1).
    #[cfg(target_os = "linux")]
    pub(crate) fn raid0_plan_of(files: Vec<PlannedFile>) -> Plan {
        use crate::plan::Split;
        const M: u64 = 1 << 20;
        let layout = crate::os::raid0_for_tests(RAID0_AT, 1024 * M, &[10 * M, 20 * M]);
        let mut fs = filesystem(1, 0, None);
        fs.members = vec![0, 1];
        fs.split = Some(Split {
            layout,
            members: vec![(0, 0), (1, 0)],
        });
        let disks = vec![crate::Disk::unknown("disk0"), crate::Disk::unknown("disk1")];
        Plan::from_located(files, vec![fs], disks, &crate::Quiet)
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn on_a_raid0_pool_each_disk_prefetches_the_stripes_it_holds_of_every_file() {
        const K: u64 = 1024;
        const M: u64 = K * K;
        let l = 64 * K;
        let plan = raid0_plan();
        let sweeps = plan.sweeps();
        assert_eq!(sweeps.len(), 2);
        assert_eq!(
            (&sweeps[0].files, &sweeps[0].guests),
            (&vec![0, 1], &vec![2])
        );
        assert_eq!((&sweeps[1].files, &sweeps[1].guests), (&vec![2], &vec![0]));
        // (file in the plan, file offset, length, position) of each step; steps per file.
        type Steps = (Vec<(u32, u64, u64, Option<u64>)>, Vec<u32>);
        let steps = |s: usize| -> Steps {
            let sweep = &sweeps[s];
            let schedule = schedule(&plan, sweep, 4 << 20);
            let steps = schedule
                .steps()
                .map(|st| {
                    (
                        planned(sweep, st.file),
                        st.offset,
                        st.length(),
                        st.position(),
                    )
                })
                .collect();
            (steps, schedule.steps_per_file.clone())
        };
        // Disk 0 (device 1): a's stripes 0 and 2, b, and guest c's last 36 KiB, in the
        // device's order; (file in the plan, file offset, length, position).
        assert_eq!(
            steps(0),
            (
                vec![
                    (0, 0, l, Some(10 * M)),
                    (0, 2 * l, l, Some(10 * M + l)),
                    (1, 0, l, Some(10 * M + 2 * l)),
                    (2, l, 36 * K, Some(10 * M + 3 * l)),
                ],
                vec![2, 1, 1]
            )
        );
        // Disk 1 (device 2): guest a's stripes 1 and 3 (its last 8 KiB), then c's first.
        assert_eq!(
            steps(1),
            (
                vec![
                    (0, l, l, Some(20 * M)),
                    (0, 3 * l, 8 * K, Some(20 * M + l)),
                    (2, 0, l, Some(20 * M + 2 * l)),
                ],
                vec![1, 2]
            )
        );
    }
}
