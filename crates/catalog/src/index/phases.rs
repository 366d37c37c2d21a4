//! Where an index run's time went: one clock per phase, summed over the workers (and the
//! writer thread's own), so that `--summary` can say what bound the run.

use std::time::{Duration, Instant};

use seekless_core::read::Bound;
use serde::Serialize;

/// The time each phase of an index run took, summed over the worker threads (a run with
/// two busy workers accrues two seconds of phase time per second), and the writer
/// thread's. Zero for phases that did not run (the thumbnail phases without
/// [`IndexOptions::thumbs`](super::IndexOptions::thumbs), everything when nothing was
/// read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Phases {
    /// Workers waiting for the sweeps to hand them the next file
    /// ([`Consumed::waiting`](seekless_core::read::Consumed::waiting)).
    pub read_wait: Duration,
    /// Workers in read calls on an open file: copies from the page cache, or waiting for
    /// the disk where the sweep's window had not got there first.
    pub read: Duration,
    /// BLAKE3 over the file's bytes (and keeping them for the rest).
    pub hash: Duration,
    /// Format, header and EXIF (`inspect`).
    pub inspect: Duration,
    /// Decoding the image (at reduced scale for JPEG), or its EXIF thumbnail.
    pub decode: Duration,
    /// Resizing to the thumbnail's size and applying the EXIF orientation.
    pub resize: Duration,
    /// Encoding the thumbnail as JPEG.
    pub encode: Duration,
    /// The perceptual hash (luminance, 32×32, DCT).
    pub phash: Duration,
    /// The writer thread's time in SQLite (inserting rows and thumbnails, committing), not
    /// counting its waits for rows.
    pub insert: Duration,
    /// Workers blocked handing a row to the writer because its queue was full: non-zero
    /// only when the writer could not keep up.
    pub blocked: Duration,
    /// Rows whose hand-over to the writer had to wait for room in its queue.
    pub blocked_rows: u64,
    /// Rows handed to the writer.
    pub rows: u64,
    /// Workers' whole time on their files (every phase above but `read_wait` and
    /// `insert`, and what lies between them), summed.
    pub working: Duration,
    /// From the start of the read to the last file's result (wall clock).
    pub took: Duration,
    /// Worker threads that ran.
    pub workers: usize,
}

impl Phases {
    /// The workers' time waiting for the disk: for the next file, and inside reads.
    pub fn disk_wait(&self) -> Duration {
        self.read_wait + self.read
    }

    /// The workers' time computing: everything they did on their files but reading.
    pub fn computing(&self) -> Duration {
        self.working.saturating_sub(self.read)
    }

    /// Whether the disk, not the CPUs, set the pace: the workers spent more time waiting
    /// for bytes ([`disk_wait`](Self::disk_wait)) than computing. On a warm cache the
    /// read calls are memory copies, so a warm run is CPU-bound unless there was almost
    /// nothing to compute.
    pub fn disk_bound(&self) -> bool {
        self.disk_wait() > self.computing() && !self.writer_bound()
    }

    /// Whether the writer thread set the pace: workers waited longer for room in its
    /// queue ([`blocked`](Self::blocked)) than they computed or waited for bytes.
    pub fn writer_bound(&self) -> bool {
        self.blocked > self.computing() && self.blocked > self.disk_wait()
    }

    /// The run's one verdict, what `index --summary` prints: the writer
    /// ([`Bound::Sink`], [`writer_bound`](Self::writer_bound)), else the disk
    /// ([`disk_bound`](Self::disk_bound)), else the CPUs; `None` when nothing was read.
    /// Finer than the read's own [`Consumed::bound`](seekless_core::read::Consumed::bound):
    /// it counts the time in read calls as waiting for the disk, and what the writer held
    /// up apart from the rest.
    pub fn bound(&self) -> Option<Bound> {
        if self.rows == 0 {
            None
        } else if self.writer_bound() {
            Some(Bound::Sink)
        } else if self.disk_bound() {
            Some(Bound::Disk)
        } else {
            Some(Bound::Cpu)
        }
    }

    /// Adds the per-file clocks of `other` (phases a worker measured on one file).
    pub(crate) fn add_file(&mut self, other: &Phases) {
        self.read += other.read;
        self.hash += other.hash;
        self.inspect += other.inspect;
        self.decode += other.decode;
        self.resize += other.resize;
        self.encode += other.encode;
        self.phash += other.phash;
    }
}

/// Times a section: `lap` returns the time since the previous lap (or the start).
pub(crate) struct Stopwatch(Instant);

impl Stopwatch {
    pub(crate) fn start() -> Self {
        Self(Instant::now())
    }

    pub(crate) fn lap(&mut self) -> Duration {
        let now = Instant::now();
        let d = now - self.0;
        self.0 = now;
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_verdict_names_what_the_workers_waited_on_most() {
        // Computing 300 ms (400 working less 100 reading), 150 waiting for bytes.
        let mut p = Phases {
            read_wait: ms(50),
            read: ms(100),
            working: ms(400),
            ..Phases::default()
        };
        assert!(!p.disk_bound() && !p.writer_bound(), "CPU-bound: {p:?}");
        p.read_wait = ms(500);
        assert!(p.disk_bound() && !p.writer_bound(), "disk-bound: {p:?}");
        p.blocked = ms(700);
        assert!(p.writer_bound() && !p.disk_bound(), "writer-bound: {p:?}");
        p.read_wait = ms(900);
        assert!(p.disk_bound() && !p.writer_bound(), "the disk again: {p:?}");
    }

    #[test]
    fn a_run_has_one_verdict_and_none_when_nothing_was_read() {
        let mut p = Phases {
            read_wait: ms(50),
            read: ms(100),
            working: ms(400),
            ..Phases::default()
        };
        assert_eq!(p.bound(), None, "no rows: nothing was read");
        p.rows = 3;
        assert_eq!(p.bound(), Some(Bound::Cpu));
        p.read_wait = ms(500);
        assert_eq!(p.bound(), Some(Bound::Disk));
        p.blocked = ms(700);
        assert_eq!(p.bound(), Some(Bound::Sink), "the writer");
        p.read_wait = ms(900);
        assert_eq!(p.bound(), Some(Bound::Disk));
    }
}
