//! The walk's threads: a stack of work they share, run until it is empty and nobody can add
//! more, and the collection of what they produce. Knows nothing of directories: the walk
//! says what a piece of work is and what doing it means.

use std::sync::{Condvar, Mutex};

use crate::sync::{join_all, lock, wait};

struct Queue<W> {
    work: Vec<W>,
    busy: usize,
    /// Workers waiting for work: a wake-up is a system call, made only when one waits.
    waiting: usize,
    /// A worker panicked: the others stop taking work, and the walk re-raises the panic.
    aborted: bool,
}

/// Work shared by a walk's threads, taken last in, first out.
pub(super) struct Pool<W> {
    queue: Mutex<Queue<W>>,
    wake: Condvar,
}

impl<W> Pool<W> {
    pub(super) fn new() -> Self {
        Self {
            queue: Mutex::new(Queue {
                work: Vec::new(),
                busy: 0,
                waiting: 0,
                aborted: false,
            }),
            wake: Condvar::new(),
        }
    }

    /// Adds work for any thread to take.
    pub(super) fn push(&self, work: W) {
        let mut q = lock(&self.queue);
        q.work.push(work);
        let waiting = q.waiting > 0;
        drop(q);
        if waiting {
            self.wake.notify_one();
        }
    }

    /// A worker: does work (with `job`) until none is left and nobody busy can add more,
    /// or another worker panicked.
    pub(super) fn work(&self, mut job: impl FnMut(W)) {
        loop {
            let next = {
                let mut q = lock(&self.queue);
                loop {
                    if q.aborted {
                        break None;
                    }
                    if let Some(work) = q.work.pop() {
                        q.busy += 1;
                        break Some(work);
                    }
                    if q.busy == 0 {
                        break None;
                    }
                    q.waiting += 1;
                    q = wait(&self.wake, q);
                    q.waiting -= 1;
                }
            };
            let Some(work) = next else {
                self.wake.notify_all();
                return;
            };
            let _busy = Busy { pool: self };
            job(work);
        }
    }
}

/// Runs `worker` on up to `threads` threads and waits for all of them. A worker that
/// panicked has marked the queue aborted, so the others stop; its panic is re-raised here,
/// on the caller's thread, once all of them have ended.
pub(super) fn run(threads: usize, worker: impl Fn() + Sync) {
    let threads = threads.max(1);
    std::thread::scope(|s| {
        // Where threads are scarce (a pids or address-space limit), work with those that
        // could be had, down to this thread alone.
        let mut handles = Vec::with_capacity(threads);
        for _ in 0..threads {
            match std::thread::Builder::new().spawn_scoped(s, &worker) {
                Ok(h) => handles.push(h),
                Err(_) => break,
            }
        }
        if handles.is_empty() {
            worker();
        }
        join_all(handles);
    });
}

/// Marks a worker busy with one job; when dropped (also when the job panics) it marks it
/// idle again and wakes the others, so a panic can never leave them waiting forever.
struct Busy<'a, W> {
    pool: &'a Pool<W>,
}

impl<W> Drop for Busy<'_, W> {
    fn drop(&mut self) {
        let mut q = lock(&self.pool.queue);
        q.busy -= 1;
        if std::thread::panicking() {
            q.aborted = true;
        }
        let idle = (q.aborted || (q.busy == 0 && q.work.is_empty())) && q.waiting > 0;
        drop(q);
        if idle {
            self.pool.wake.notify_all();
        }
    }
}

/// Bytes per chunk of collected results: what each walk thread may hold before handing
/// its items over (64 threads: 1 MiB in all, whatever the item size and thread timing).
const CHUNK_BYTES: usize = 16 << 10;

/// Collects items into one shared list, a chunk at a time (one lock per chunk, not per
/// item). Gathering n items holds n plus a chunk per thread: the list grows in place
/// (large reallocations remap pages rather than copy them), and each thread's chunk
/// buffer, allocated once at its full size, is reused. A list per thread joined at the end
/// held twice the items at its peak, since memory freed by the allocator is not returned
/// to the system.
pub(super) struct Collector<'a, I> {
    chunk: Vec<I>,
    all: &'a Mutex<Vec<I>>,
}

impl<'a, I> Collector<'a, I> {
    /// Items per chunk: [`CHUNK_BYTES`] of them, at least one.
    const ITEMS: usize = {
        let size = std::mem::size_of::<I>();
        if size >= CHUNK_BYTES {
            1
        } else {
            CHUNK_BYTES / size
        }
    };

    pub(super) fn new(all: &'a Mutex<Vec<I>>) -> Self {
        Self {
            chunk: Vec::new(),
            all,
        }
    }

    pub(super) fn push(&mut self, item: I) {
        if self.chunk.len() == Self::ITEMS {
            lock(self.all).append(&mut self.chunk);
        }
        if self.chunk.capacity() == 0 {
            // Once, at its full size: growing it by doubling would leave the smaller
            // buffers behind in this thread's allocator arena.
            self.chunk.reserve_exact(Self::ITEMS);
        }
        self.chunk.push(item);
    }
}

impl<I> Drop for Collector<'_, I> {
    fn drop(&mut self) {
        if !self.chunk.is_empty() {
            lock(self.all).append(&mut self.chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::report::Quiet;
    use crate::walk::dir::BATCH;
    use crate::walk::tests::panic_message;
    use crate::walk::{Entry, WalkOptions, walk};
    use std::fs;
    use std::fs::File;

    #[test]
    fn a_visitor_that_panics_fails_the_walk_with_its_message() {
        let t = tempfile::tempdir().unwrap();
        for d in 0..4 {
            let dir = t.path().join(format!("d{d}"));
            fs::create_dir(&dir).unwrap();
            for i in 0..(BATCH * 3) {
                fs::write(dir.join(format!("f{i}")), b"x").unwrap();
            }
        }
        fs::write(t.path().join("d2/bad"), b"x").unwrap();
        for threads in [1, 64] {
            let root = t.path().to_path_buf();
            let message = panic_message(move || {
                let opts = WalkOptions {
                    threads,
                    ..WalkOptions::default()
                };
                walk(&[root], &opts, &Quiet, &|e: Entry, _: &File| {
                    assert!(
                        !e.path.ends_with("bad"),
                        "visitor fault at {}",
                        e.path.display()
                    );
                    Ok(())
                });
            });
            assert!(message.contains("visitor fault at"), "{threads}: {message}");
        }
    }
}
