//! The sweep thread of one disk: prefetch steps in disk order within the window and hand
//! files to the consumer as soon as all their bytes are on the way.

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::Sender;

use crate::error::{Change, Error, ErrorKind};
use crate::os;
use crate::plan::{Plan, Sweep};
use crate::read::guests::Ledger;
use crate::read::schedule::{Step, planned, schedule};
use crate::read::window::{Admit, Window};
use crate::sync::lock;

/// What the sweep and the consumer share about one handed-over file.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
}

#[derive(Debug, Default)]
struct SlotState {
    issued: u64,
    released: u64,
    closed: bool,
}

impl Slot {
    /// The sweep prefetched `bytes` more; false if the consumer already closed the file
    /// (the bytes go straight back to the window).
    pub(crate) fn issued(&self, bytes: u64) -> bool {
        let mut s = lock(&self.state);
        if s.closed {
            return false;
        }
        s.issued += bytes;
        true
    }

    /// The consumer read `bytes`: how many window bytes that frees.
    pub(crate) fn consumed(&self, bytes: u64) -> u64 {
        let mut s = lock(&self.state);
        let free = bytes.min(s.issued - s.released);
        s.released += free;
        free
    }

    /// Whether the consumer closed the file.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// The consumer closed the file: the window bytes still held.
    pub(crate) fn close(&self) -> u64 {
        let mut s = lock(&self.state);
        s.closed = true;
        let rest = s.issued - s.released;
        s.released = s.issued;
        rest
    }
}

/// Whether a step at disk position `next` must wait, having `end` as the end of the last
/// located step the sweep reached: the first located step does, and so does one that lies
/// `barrier` bytes or more past `end`. Steps without a position and a zero barrier never do.
fn crosses_gap(end: Option<u64>, next: Option<u64>, barrier: u64) -> bool {
    match (barrier, next, end) {
        (0, _, _) | (_, None, _) => false,
        (_, Some(_), None) => true,
        (_, Some(next), Some(end)) => next.saturating_sub(end) >= barrier,
    }
}

/// The payload of a panic that ended a sweep thread.
pub(crate) type Panic = Box<dyn std::any::Any + Send>;

/// What a sweep thread sends: a file, or the panic that ended the sweep (the consumer
/// re-raises it, so that a sweep that died never looks like one that finished).
pub(crate) type Message = Result<Handover, Panic>;

/// A file handed to the consumer, or the error that kept it from being opened.
pub(crate) struct Handover {
    pub index: u32,
    pub seq: u64,
    /// Which lane (and so which window) the file came from.
    pub sweep: usize,
    pub result: Result<Opened, Error>,
}

/// A file as handed over: open, its metadata when it was opened, and its window slot.
pub(crate) type Opened = (File, Metadata, Arc<Slot>);

struct Partial {
    /// The open file (taken when it is handed over for the last time).
    file: Option<File>,
    /// Its metadata when opened (taken when it is handed over).
    opened: Option<Metadata>,
    slot: Arc<Slot>,
    /// Bytes prefetched while waiting for later extents (held outside the window).
    held: u64,
    holding: bool,
    remaining: u32,
    first_step: usize,
    handed: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    New,
    Open,
    Done,
}

pub(crate) struct SweepRun<'a> {
    pub plan: &'a Plan,
    pub sweep: &'a Sweep,
    /// Its lane's index among the reader's (a sweep of the plan, or on a solid-state disk
    /// a share of one), which is its window's.
    pub sweep_index: usize,
    pub window: &'a Window,
    pub tx: Sender<Message>,
    pub seq: &'a AtomicU64,
    pub piece: u64,
    /// Whether to prefetch at all (off: plain reads in plan order, for comparison).
    pub prefetch: bool,
    /// Wait at gaps of at least this many bytes on the disk (0: never); see
    /// [`ReadOptions::gap_barrier`](crate::read::ReadOptions::gap_barrier).
    pub gap_barrier: u64,
    /// Counts the waits at gaps.
    pub gap_waits: &'a AtomicU64,
    /// Where the window bytes of guests' pieces are given back (see [`Ledger`]); `None`
    /// when no sweep has guests.
    pub ledger: Option<&'a Ledger>,
}

/// Guests a sweep holds open at once (see [`Guest`]). A RAID0 file's pieces on one disk
/// lie together, so a guest is open from its first piece here to its last, a few steps;
/// only fragmented guests wait longer.
pub(crate) const MAX_OPEN_GUESTS: usize = 64;

/// A guest (another sweep's file with pieces on this disk) while its pieces here are
/// being prefetched.
struct Guest {
    file: File,
    slot: Arc<Slot>,
    remaining: u32,
}

impl SweepRun<'_> {
    pub(crate) fn run(self) {
        let schedule = schedule(self.plan, self.sweep, self.piece);
        let steps_per_file = &schedule.steps_per_file;
        let large = self.window.max_bytes / 2;
        // Files by their index in the sweep (`Step::file`).
        let mut state = vec![State::New; steps_per_file.len()];
        let mut open: HashMap<u32, Partial> = HashMap::new();
        // End on the disk of the last located step the sweep reached (None before the first).
        let mut disk_end: Option<u64> = None;

        // Guests whose pieces here are being prefetched, and the window slots of every
        // guest not yet known to be closed.
        let mut guests: HashMap<u32, Guest> = HashMap::new();
        let mut guest_slots: Vec<Arc<Slot>> = Vec::new();

        let mut steps = schedule.steps().enumerate();
        while let Some((k, step)) = steps.next() {
            let i = step.file;
            if state[i as usize] == State::Done {
                continue;
            }
            let guest = i as usize >= self.sweep.files.len();
            if guest && state[i as usize] == State::New {
                state[i as usize] = State::Open;
                // Guests waiting here for later pieces hold descriptors outside the
                // window's count: past a few, a new one is left to be read when its
                // file is (what an unsplit pool does with every piece).
                let room = guests.len() < MAX_OPEN_GUESTS;
                match self.open_guest(i, steps_per_file[i as usize], room) {
                    Some(g) => {
                        guest_slots.push(g.slot.clone());
                        guests.insert(i, g);
                    }
                    None => {
                        state[i as usize] = State::Done;
                        continue;
                    }
                }
            }
            let opening = !guest && state[i as usize] == State::New;
            loop {
                let has_partials = open.values().any(|p| !p.handed);
                match self.window.admit(
                    step.length(),
                    opening,
                    has_partials || !guest_slots.is_empty(),
                ) {
                    Admit::Go => break,
                    Admit::Cancelled => return,
                    Admit::Force if !guest_slots.is_empty() => {
                        // Nothing of this sweep's own left to consume, the window full of
                        // guests' pieces whose files other sweeps have not handed out
                        // yet: their bytes stop counting (they stay in the page cache),
                        // so that no two sweeps wait for each other.
                        for slot in guest_slots.drain(..) {
                            self.window.release(slot.close());
                        }
                    }
                    Admit::Force => {
                        let oldest = open
                            .iter()
                            .filter(|(_, p)| !p.handed)
                            .min_by_key(|(_, p)| p.first_step)
                            .map(|(&f, _)| f);
                        if let Some(f) = oldest {
                            let rest = std::iter::once(step).chain(steps.clone().map(|s| s.1));
                            self.force(f, rest, &mut open, &mut state);
                        }
                    }
                }
            }
            if state[i as usize] == State::Done {
                // Forced to completion while we waited.
                self.window.release(step.length());
                continue;
            }
            if guest {
                let barrier = crosses_gap(disk_end, step.position(), self.gap_barrier);
                if let Some(g) = guests.get_mut(&i) {
                    if g.slot.issued(step.length()) {
                        g.remaining = g.remaining.saturating_sub(1);
                        if step.length() > 0
                            && self.prefetch
                            && os::prefetch(&g.file, step.offset, step.length()).is_ok()
                            && barrier
                        {
                            let _ = os::await_prefetch(&g.file, step.offset);
                            self.gap_waits.fetch_add(1, Ordering::Relaxed);
                        }
                    } else {
                        // The file was read already: the rest of its pieces are not needed.
                        self.window.release(step.length());
                        g.remaining = 0;
                    }
                    if g.remaining == 0 {
                        guests.remove(&i);
                        state[i as usize] = State::Done;
                    }
                }
                if let Some(pos) = step.position() {
                    disk_end = Some(pos.saturating_add(step.length()));
                }
                if guest_slots.len() >= 2 * self.window.max_files.max(1024) {
                    // Those the consumer closed are done with.
                    guest_slots.retain(|slot| !slot.is_closed());
                }
                continue;
            }
            if opening {
                match self.open(i) {
                    Ok((file, meta)) => {
                        open.insert(
                            i,
                            Partial {
                                file: Some(file),
                                opened: Some(meta),
                                slot: Arc::new(Slot::default()),
                                held: 0,
                                holding: false,
                                remaining: steps_per_file[i as usize],
                                first_step: k,
                                handed: false,
                            },
                        );
                        state[i as usize] = State::Open;
                    }
                    Err(e) => {
                        self.window.abandoned(step.length());
                        state[i as usize] = State::Done;
                        self.send(i, Err(e));
                        continue;
                    }
                }
            }
            let Some(p) = open.get_mut(&i) else {
                continue;
            };
            let barrier = crosses_gap(disk_end, step.position(), self.gap_barrier);
            if self.issue(p, &step) && barrier {
                // Past a gap the drive seeks, and a drive that reorders its queue lands on
                // whichever queued request comes round first, not necessarily the gap's
                // first: what lies before it would then be read when the queue drains,
                // with a seek back. So let the first request past a gap be served alone.
                // An error here is the consumer's to report.
                if let Some(file) = &p.file {
                    let _ = os::await_prefetch(file, step.offset);
                }
                self.gap_waits.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(pos) = step.position() {
                disk_end = Some(pos.saturating_add(step.length()));
            }
            p.remaining = p.remaining.saturating_sub(1);
            let size = self.plan.files()[self.planned(i) as usize].entry.size;
            if p.remaining > 0 && !p.handed && size <= large {
                // A fragmented file's earlier piece: held until the sweep reaches the rest.
                self.window.hold(step.length(), !p.holding);
                p.held += step.length();
                p.holding = true;
            }
            if !p.handed && (p.remaining == 0 || size > large) {
                // Large files stream: handed over at their first piece, the rest follows.
                let last = p.remaining == 0;
                self.hand_over(i, p, last);
            }
            if p.remaining == 0 {
                open.remove(&i);
                state[i as usize] = State::Done;
            }
        }
        // Every step was issued; anything left open is complete.
        for (i, mut p) in open.drain() {
            if !p.handed {
                self.hand_over(i, &mut p, true);
            }
        }
    }

    /// Prefetches one step; true if a prefetch was started.
    fn issue(&self, p: &Partial, step: &Step) -> bool {
        if !p.slot.issued(step.length()) {
            self.window.release(step.length());
            return false;
        }
        // A failed hint is not an error: the consumer's read will say what is wrong.
        step.length() > 0
            && self.prefetch
            && p.file
                .as_ref()
                .is_some_and(|f| os::prefetch(f, step.offset, step.length()).is_ok())
    }

    /// Issues every remaining step of file `f` now, out of disk order, and hands it over.
    fn force(
        &self,
        f: u32,
        rest: impl Iterator<Item = Step>,
        open: &mut HashMap<u32, Partial>,
        state: &mut [State],
    ) {
        let Some(mut p) = open.remove(&f) else {
            return;
        };
        for step in rest.filter(|s| s.file == f) {
            self.window.take(step.length());
            self.issue(&p, &step);
        }
        self.hand_over(f, &mut p, true);
        state[f as usize] = State::Done;
    }

    /// Hands file `i` to the consumer: its own descriptor when the sweep is done with it
    /// (`last`: every step issued), a duplicate while the sweep still prefetches its rest.
    fn hand_over(&self, i: u32, p: &mut Partial, last: bool) {
        if p.holding {
            self.window.unhold(p.held);
            p.held = 0;
            p.holding = false;
        }
        let file = if last {
            p.file
                .take()
                .ok_or_else(|| io::Error::other("handed over twice"))
        } else {
            p.file.as_ref().map_or_else(
                || Err(io::Error::other("handed over twice")),
                File::try_clone,
            )
        };
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                let path = &self.plan.files()[self.planned(i) as usize].entry.path;
                self.window.abandoned(p.slot.close());
                p.handed = true;
                self.send(i, Err(Error::io(&**path, e)));
                return;
            }
        };
        p.handed = true;
        self.window.handed();
        let meta = p.opened.take().expect("a file is handed over once");
        self.send(i, Ok((file, meta, p.slot.clone())));
    }

    /// The plan's index of the sweep's file `local` (its files, then its guests).
    fn planned(&self, local: u32) -> u32 {
        planned(self.sweep, local)
    }

    /// Opens guest `local` to prefetch its pieces here, with a window slot the consumer
    /// gives back when it is done with the file; `None` if the consumer is done with it
    /// already, there is no `room`, or it cannot be opened (its own sweep says why). The
    /// sweep has reached it either way (the ledger counts on that).
    fn open_guest(&self, local: u32, steps: u32, room: bool) -> Option<Guest> {
        let slot = self
            .ledger?
            .register(self.planned(local), self.sweep_index)?;
        match room.then(|| self.open(local).ok()).flatten() {
            Some((file, _)) => Some(Guest {
                file,
                slot,
                remaining: steps,
            }),
            None => {
                slot.close();
                None
            }
        }
    }

    /// Hands the sweep's file `local` (opened, or why not) to the consumer.
    fn send(&self, local: u32, result: Result<Opened, Error>) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        if self
            .tx
            .send(Ok(Handover {
                index: self.planned(local),
                seq,
                sweep: self.sweep_index,
                result,
            }))
            .is_err()
        {
            self.window.cancel();
        }
    }

    /// Opens the file for reading and checks it is still the file that was planned.
    /// Returns it with its metadata as opened (what the read is checked against).
    fn open(&self, i: u32) -> Result<(File, Metadata), Error> {
        let entry = &self.plan.files()[self.planned(i) as usize].entry;
        #[cfg(any(test, feature = "test-hooks"))]
        crate::test_hooks::at_open(&entry.path);
        let file = os::open_to_read(&entry.path).map_err(|e| Error::io(&*entry.path, e))?;
        let meta = file.metadata().map_err(|e| Error::io(&*entry.path, e))?;
        let id =
            os::file_id(&entry.path, Some(&file), &meta).map_err(|e| Error::io(&*entry.path, e))?;
        if id != entry.id || !meta.is_file() {
            return Err(Error::new(
                &*entry.path,
                ErrorKind::Changed(Change::Replaced),
            ));
        }
        Ok((file, meta))
    }
}

#[cfg(test)]
mod tests {
    use super::crosses_gap;

    #[test]
    fn only_the_first_step_and_steps_past_a_wide_gap_wait() {
        let b = 128 << 10;
        assert!(
            crosses_gap(None, Some(0), b),
            "the first step follows a seek"
        );
        assert!(!crosses_gap(Some(4096), Some(4096), b), "contiguous");
        assert!(
            !crosses_gap(Some(4096), Some(4096 + b - 1), b),
            "narrower than the barrier"
        );
        assert!(crosses_gap(Some(4096), Some(4096 + b), b));
        assert!(
            !crosses_gap(Some(1 << 20), Some(0), b),
            "overlapping or behind: no seek ahead"
        );
        assert!(
            !crosses_gap(Some(0), None, b),
            "unlocated files follow in sweep order"
        );
        assert!(!crosses_gap(None, Some(1 << 40), 0), "turned off");
    }
}
