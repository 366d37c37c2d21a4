//! The readahead window: how much has been prefetched but not yet consumed.
//!
//! The sweep thread takes bytes and open files from the window before each prefetch; the
//! consumer gives them back as it reads and closes files. This bounds the page cache the
//! scan occupies and the descriptors it holds, whatever the number or size of files.
//!
//! A sweep that finds the window full sleeps until it has drained to half (or is empty of
//! files being consumed, or cancelled), not until one file's worth came back: on a warm
//! cache of small files the consumer frees a file every few microseconds, and waking the
//! sweep for each cost a context switch per file. Nobody is woken (no system call) while
//! no sweep waits.

use std::sync::{Condvar, Mutex};

use crate::sync;

#[derive(Debug, Default)]
pub(crate) struct Usage {
    /// Prefetched and not yet consumed.
    pub bytes: u64,
    /// Files opened by the sweep and not yet closed by the consumer.
    pub files: usize,
    /// Files handed to the consumer and not yet closed.
    pub handed: usize,
    /// Of `bytes`, those prefetched for files still waiting for later extents.
    pub held_bytes: u64,
    /// Of `files`, those still waiting for later extents.
    pub held_files: usize,
    /// Set when the reader is dropped: the sweep stops.
    pub cancelled: bool,
    /// Sweeps waiting in [`Window::admit`].
    waiting: usize,
}

#[derive(Debug)]
pub(crate) struct Window {
    pub max_bytes: u64,
    pub max_files: usize,
    /// Bytes and files that fragmented files may hold while the sweep travels to their
    /// later extents. Held outside the window proper, so a disk region full of first
    /// pieces does not force reads out of sweep order.
    max_held_bytes: u64,
    max_held_files: usize,
    usage: Mutex<Usage>,
    changed: Condvar,
    /// Times [`Window::wake`] woke the waiting sweeps, counted under the lock (for tests
    /// to see that it did not).
    #[cfg(test)]
    wakes: std::sync::atomic::AtomicUsize,
}

/// What the sweep may do next.
pub(crate) enum Admit {
    /// There is room: go on.
    Go,
    /// The window is full of files waiting for later extents and nobody is consuming:
    /// finish the oldest partial file out of order.
    Force,
    /// The reader is gone.
    Cancelled,
}

impl Window {
    pub(crate) fn new(
        max_bytes: u64,
        max_files: usize,
        max_held_bytes: u64,
        max_held_files: usize,
    ) -> Self {
        Self {
            max_bytes: max_bytes.max(1),
            max_files: max_files.max(1),
            max_held_bytes,
            max_held_files,
            usage: Mutex::new(Usage::default()),
            changed: Condvar::new(),
            #[cfg(test)]
            wakes: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Usage> {
        sync::lock(&self.usage)
    }

    /// Waits until `bytes` more (and one more open file if `open`) fit, then takes them.
    /// With an empty window anything fits, so one oversized step cannot stall the sweep.
    pub(crate) fn admit(&self, bytes: u64, open: bool, have_partials: bool) -> Admit {
        let mut u = self.lock();
        loop {
            if u.cancelled {
                return Admit::Cancelled;
            }
            if have_partials
                && (u.held_bytes > self.max_held_bytes || u.held_files > self.max_held_files)
            {
                return Admit::Force;
            }
            let active_bytes = u.bytes - u.held_bytes.min(u.bytes);
            let active_files = u.files - u.held_files.min(u.files);
            let bytes_fit = active_bytes == 0 || active_bytes + bytes <= self.max_bytes;
            let files_fit = !open || active_files < self.max_files;
            if bytes_fit && files_fit {
                u.bytes += bytes;
                if open {
                    u.files += 1;
                }
                return Admit::Go;
            }
            if u.handed == 0 && have_partials {
                return Admit::Force;
            }
            u.waiting += 1;
            u = sync::wait(&self.changed, u);
            u.waiting -= 1;
        }
    }

    /// Wakes a waiting sweep if there is one and it has reason to look again: the window
    /// drained to half (bytes and files), nothing handed over is left (it may have to
    /// force a partial file, or an oversized step now fits), or the reader is gone.
    fn wake(&self, u: std::sync::MutexGuard<'_, Usage>) {
        if u.waiting == 0 {
            return;
        }
        let active_bytes = u.bytes - u.held_bytes.min(u.bytes);
        let active_files = u.files - u.held_files.min(u.files);
        let drained = active_bytes <= self.max_bytes / 2 && active_files <= self.max_files / 2;
        if drained || u.handed == 0 || u.cancelled {
            // Counted under the lock, for the tests of when a sweep is woken.
            #[cfg(test)]
            self.wakes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(u);
            self.changed.notify_all();
        }
    }

    /// Bytes just prefetched for a file that still waits for later extents; `new` when it
    /// is the file's first piece.
    pub(crate) fn hold(&self, bytes: u64, new: bool) {
        let mut u = self.lock();
        u.held_bytes += bytes;
        if new {
            u.held_files += 1;
        }
    }

    /// A file that held bytes is complete: they count in the window again.
    pub(crate) fn unhold(&self, bytes: u64) {
        let mut u = self.lock();
        u.held_bytes = u.held_bytes.saturating_sub(bytes);
        u.held_files = u.held_files.saturating_sub(1);
    }

    /// Takes bytes without waiting (finishing a forced file).
    pub(crate) fn take(&self, bytes: u64) {
        self.lock().bytes += bytes;
    }

    pub(crate) fn handed(&self) {
        self.lock().handed += 1;
    }

    /// Gives back consumed bytes.
    pub(crate) fn release(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut u = self.lock();
        u.bytes = u.bytes.saturating_sub(bytes);
        self.wake(u);
    }

    /// A handed-over file was closed, returning its remaining bytes.
    pub(crate) fn closed(&self, bytes: u64) {
        let mut u = self.lock();
        u.bytes = u.bytes.saturating_sub(bytes);
        u.files = u.files.saturating_sub(1);
        u.handed = u.handed.saturating_sub(1);
        self.wake(u);
    }

    /// A file the sweep opened but never handed over (it failed) was closed.
    pub(crate) fn abandoned(&self, bytes: u64) {
        let mut u = self.lock();
        u.bytes = u.bytes.saturating_sub(bytes);
        u.files = u.files.saturating_sub(1);
        self.wake(u);
    }

    pub(crate) fn cancel(&self) {
        self.lock().cancelled = true;
        self.changed.notify_all();
    }

    #[cfg(test)]
    pub(crate) fn usage(&self) -> (u64, usize, usize) {
        let u = self.lock();
        (u.bytes, u.files, u.handed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_until_full_then_forces_when_nothing_is_being_consumed() {
        let w = Window::new(100, 10, 0, 0);
        assert!(matches!(w.admit(60, true, false), Admit::Go));
        assert!(matches!(w.admit(30, false, false), Admit::Go));
        // Full, nothing handed over, a partial file holds the window: force.
        assert!(matches!(w.admit(30, false, true), Admit::Force));
        w.release(50);
        assert!(matches!(w.admit(30, false, true), Admit::Go));
        assert_eq!(w.usage(), (70, 1, 0));
    }

    #[test]
    fn held_bytes_of_partial_files_do_not_fill_the_window_until_their_own_limit() {
        let w = Window::new(100, 10, 1000, 5);
        assert!(matches!(w.admit(80, true, false), Admit::Go));
        w.hold(80, true);
        // The 80 held bytes do not count: another 80 fit.
        assert!(matches!(w.admit(80, true, true), Admit::Go));
        assert!(matches!(w.admit(80, false, true), Admit::Force));
        w.unhold(80);
        assert_eq!(w.usage(), (160, 2, 0));
        // Past the held limit the oldest partial must be finished.
        let w = Window::new(100, 10, 50, 5);
        assert!(matches!(w.admit(80, true, false), Admit::Go));
        w.hold(80, true);
        assert!(matches!(w.admit(10, true, true), Admit::Force));
    }

    #[test]
    fn an_oversized_step_fits_an_empty_window() {
        let w = Window::new(10, 1, 0, 0);
        assert!(matches!(w.admit(1000, true, false), Admit::Go));
        w.closed(1000);
        assert_eq!(w.usage(), (0, 0, 0));
    }

    /// Runs `admit` (a sweep's call of [`Window::admit`]) on another thread and returns
    /// once that sweep waits in the window; fails if it went on without waiting.
    fn waiting<T: Send + 'static>(
        w: &std::sync::Arc<Window>,
        admit: impl FnOnce(&Window) -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let w2 = w.clone();
        let t = std::thread::spawn(move || admit(&w2));
        while w.lock().waiting == 0 && !t.is_finished() {
            std::thread::yield_now();
        }
        assert_eq!(w.lock().waiting, 1, "the sweep went on without waiting");
        t
    }

    /// A sweep admitting `bytes` (and a file) on another thread, returned once it waits;
    /// it ends with whether it may go.
    fn waiting_admit(w: &std::sync::Arc<Window>, bytes: u64) -> std::thread::JoinHandle<bool> {
        waiting(w, move |w| matches!(w.admit(bytes, true, false), Admit::Go))
    }

    /// A full window of ten 10-byte files, handed over.
    fn full_window() -> std::sync::Arc<Window> {
        let w = std::sync::Arc::new(Window::new(100, 100, 0, 0));
        for _ in 0..10 {
            assert!(matches!(w.admit(10, true, false), Admit::Go));
            w.handed();
        }
        w
    }

    #[test]
    fn a_waiting_sweep_is_not_woken_before_the_window_drained_to_half() {
        use std::sync::atomic::Ordering;
        let w = full_window();
        let t = waiting_admit(&w, 10);
        // Four files back (60 of 100 left): room for one, but not yet half. Whether a
        // close wakes the sweep is decided under the window's lock, and counted there (a
        // wait may still end spuriously, as Windows' condition variables do under load:
        // the sweep then finds room and goes on, which is right too).
        for _ in 0..4 {
            w.closed(10);
        }
        assert_eq!(
            w.wakes.load(Ordering::SeqCst),
            0,
            "woken before the window drained to half"
        );
        w.closed(10);
        assert!(t.join().unwrap());
        assert!(w.wakes.load(Ordering::SeqCst) <= 1);
        assert_eq!(w.usage(), (60, 6, 5));
    }

    #[test]
    fn a_waiting_sweep_resumes_once_the_window_drained_to_half() {
        use std::sync::atomic::Ordering;
        let w = full_window();
        // A step of half the window: it fits only once the window drained to half, so
        // the sweep is still waiting however often its wait ends early.
        let t = waiting_admit(&w, 50);
        for _ in 0..4 {
            w.closed(10);
        }
        assert_eq!(w.wakes.load(Ordering::SeqCst), 0);
        assert_eq!(w.lock().waiting, 1, "it cannot have gone on: 60 + 50 > 100");
        // The fifth brings it to half: the sweep is woken and goes on.
        w.closed(10);
        assert_eq!(w.wakes.load(Ordering::SeqCst), 1);
        assert!(t.join().unwrap());
        assert_eq!(w.usage(), (100, 6, 5));
    }

    #[test]
    fn a_waiting_sweep_is_woken_when_nothing_handed_over_is_left() {
        // One oversized step in flight: when it is closed the window is empty.
        let w = std::sync::Arc::new(Window::new(100, 10, 0, 0));
        assert!(matches!(w.admit(90, true, false), Admit::Go));
        w.handed();
        let t = waiting_admit(&w, 95);
        w.closed(90);
        assert!(t.join().unwrap());
    }

    #[test]
    fn cancel_wakes_a_waiting_sweep() {
        let w = std::sync::Arc::new(Window::new(10, 10, 0, 0));
        assert!(matches!(w.admit(10, false, false), Admit::Go));
        w.handed();
        let t = waiting(&w, |w| matches!(w.admit(5, false, false), Admit::Cancelled));
        w.cancel();
        assert!(t.join().unwrap());
    }
}
