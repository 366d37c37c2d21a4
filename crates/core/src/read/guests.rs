//! The window bytes of guests: pieces that one disk's sweep prefetches of files another
//! sweep hands out (a filesystem split into its members: btrfs RAID0 stripes).
//!
//! Each guest piece is taken from the prefetching sweep's window, as any step is, but the
//! consumer reads the file through the sweep that handed it out. The ledger is where the
//! two meet: the guest sweep registers a slot per file, the consumer gives every slot's
//! bytes back when it is done with the file, and a guest sweep that arrives after that
//! prefetches nothing for it. A sweep never waits for another: one whose window is full of
//! guests' bytes, with nothing of its own left to consume, stops counting them
//! (`sweep.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::read::sweep::Slot;
use crate::read::window::Window;
use crate::sync::lock;

/// One guest file: the sweeps yet to register it, whether the consumer is done with it,
/// and the slots registered.
#[derive(Debug, Default)]
struct Entry {
    pending: u32,
    closed: bool,
    slots: Vec<(usize, Arc<Slot>)>,
}

#[derive(Debug)]
pub(crate) struct Ledger {
    /// By the file's index in the plan: the number of sweeps (lanes) it is a guest of,
    /// one byte a file.
    lanes: Vec<u8>,
    /// By the file's index in the plan: files between a first sweep registering them
    /// or the consumer closing them and the last of these; made on the first, gone after
    /// the last, so only files in flight have one.
    entries: Mutex<HashMap<u32, Entry>>,
    /// The windows of the lanes, by lane.
    windows: Vec<Arc<Window>>,
}

impl Ledger {
    /// The ledger of `guests` (each lane's guests, by lane) of a plan of `files` files,
    /// `None` when there are none.
    pub(crate) fn new<'a>(
        guests: impl IntoIterator<Item = &'a [u32]>,
        windows: Vec<Arc<Window>>,
        files: usize,
    ) -> Option<Ledger> {
        let mut lanes = Vec::new();
        for lane in guests {
            for &i in lane {
                if lanes.is_empty() {
                    lanes = vec![0u8; files];
                }
                if let Some(n) = lanes.get_mut(i as usize) {
                    *n = n.saturating_add(1);
                }
            }
        }
        (!lanes.is_empty()).then(|| Ledger {
            lanes,
            entries: Mutex::new(HashMap::new()),
            windows,
        })
    }

    /// File `index`'s entry, made if it has none yet and is a guest at all.
    fn entry<'e>(&self, entries: &'e mut HashMap<u32, Entry>, index: u32) -> Option<&'e mut Entry> {
        let lanes = *self.lanes.get(index as usize).filter(|&&n| n > 0)?;
        Some(entries.entry(index).or_insert_with(|| Entry {
            pending: u32::from(lanes),
            ..Entry::default()
        }))
    }

    /// Lane `lane`'s sweep reached guest `index`: its slot, or `None` if the consumer is
    /// done with the file.
    pub(crate) fn register(&self, index: u32, lane: usize) -> Option<Arc<Slot>> {
        let mut entries = lock(&self.entries);
        let entry = self.entry(&mut entries, index)?;
        entry.pending = entry.pending.saturating_sub(1);
        if entry.closed {
            if entry.pending == 0 {
                entries.remove(&index);
            }
            return None;
        }
        let slot = Arc::new(Slot::default());
        entry.slots.push((lane, slot.clone()));
        Some(slot)
    }

    /// The consumer is done with file `index` (read, failed, or dropped): every guest
    /// slot's bytes go back to its window, and sweeps that reach it later skip it.
    pub(crate) fn closed(&self, index: u32) {
        if self.lanes.get(index as usize).is_none_or(|&n| n == 0) {
            // Nobody's guest: nothing to look up.
            return;
        }
        let slots = {
            let mut entries = lock(&self.entries);
            let Some(entry) = self.entry(&mut entries, index) else {
                return;
            };
            entry.closed = true;
            let slots = std::mem::take(&mut entry.slots);
            if entry.pending == 0 {
                entries.remove(&index);
            }
            slots
        };
        for (lane, slot) in slots {
            if let Some(window) = self.windows.get(lane) {
                window.release(slot.close());
            }
        }
    }

    /// Files still in the ledger (for the tests: none once a read is over).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.entries).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::window::Admit;

    #[test]
    fn guest_bytes_go_back_when_the_consumer_is_done_and_late_sweeps_skip_the_file() {
        let windows: Vec<Arc<Window>> = (0..3)
            .map(|_| Arc::new(Window::new(100, 10, 0, 0)))
            .collect();
        // File 7 is a guest of lanes 1 and 2, file 8 of lane 1.
        let ledger = Ledger::new([&[][..], &[7, 8][..], &[7][..]], windows.clone(), 10).unwrap();
        assert_eq!(ledger.len(), 0, "entries are made on the way");
        let slot = ledger.register(7, 1).unwrap();
        assert!(matches!(windows[1].admit(60, false, false), Admit::Go));
        assert!(slot.issued(60));
        assert_eq!(windows[1].usage().0, 60);
        // The consumer is done with file 7 before lane 2 got there.
        ledger.closed(7);
        assert_eq!(
            windows[1].usage().0,
            0,
            "its bytes are back in lane 1's window"
        );
        assert!(
            !slot.issued(10),
            "the slot is closed: nothing more is prefetched"
        );
        assert!(ledger.register(7, 2).is_none(), "lane 2 skips it");
        assert_eq!(ledger.len(), 0, "file 7 is gone once every lane came");
        // File 8: registered, then closed.
        let slot = ledger.register(8, 1).unwrap();
        assert_eq!(ledger.len(), 1, "8 is in flight");
        assert!(slot.issued(5));
        ledger.closed(8);
        assert_eq!(ledger.len(), 0);
        // A file nobody has as a guest is not looked after.
        ledger.closed(9);
        assert!(ledger.register(9, 0).is_none());
        assert_eq!(ledger.len(), 0);
        assert!(Ledger::new([&[][..]], windows, 10).is_none());
    }
}
