//! Prototype for issue 24.6: hashes a list of files with BLAKE3, doing each file's
//! openat + statx + read + close through io_uring, many files in flight, and prints
//! `b3sum` lines (`HEX  PATH`, checkable with `b3sum -c`). Not the engine: a measurement
//! of whether batching the per-file system calls pays on a solid-state disk
//! (`bench/uring.sh` runs it against `seekless hash` and the library's example).
//!
//! ```sh
//! find DIR -type f | cargo run --release --example uring_hash -- [-0] [-j N] [--depth N] [--iowq N] [--no-fixed] [--plain]
//! ```
//!
//! Per file, with `--depth` files in flight (each in a slot of the ring's fixed-file
//! table): STATX and OPENAT (into the slot: no descriptor in the process's table) by
//! path, submitted together; once both are in, READ of the whole file (its statx size)
//! into a reused buffer, linked to CLOSE of the slot. A short read breaks the link (the
//! kernel cancels the CLOSE): the rest is read, CLOSE linked again. Hashing is on `-j N`
//! worker threads (default one per CPU; `-j 0`: on the thread driving the ring).
//!
//! `--no-fixed` opens into the process's descriptor table instead (READ and CLOSE then
//! name the descriptor): an OPENAT that cannot complete at once (a cold lookup) runs on
//! one of the ring's kernel workers, and installing its result in a fixed slot takes the
//! ring's lock, for which the workers and the submitting thread then contend (perf, cold:
//! 11 % of the CPU in `mutex_spin_on_owner` under `io_fixed_fd_install`). `--iowq N`
//! caps those workers for blocking operations (the kernel's default here: 8). STATX is
//! always handed to a worker by the kernel (it has no non-blocking path).
//!
//! Where the kernel refuses io_uring (EPERM under a seccomp filter or
//! `kernel.io_uring_disabled`, ENOSYS on an old kernel), or with `--plain`, it says so on
//! stderr and does the same with plain system calls (open, statx, read, close) on one
//! thread, hashing on the workers as before.
//!
//! Limits of a prototype: the whole file is held in memory (the corpus is small files);
//! paths are printed without b3sum's escaping of newlines and backslashes; no check that
//! the file changed while it was read.

#[cfg(target_os = "linux")]
fn main() -> std::io::Result<()> {
    linux::main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("uring_hash: io_uring is Linux only");
    std::process::exit(2);
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::CString;
    use std::io::{self, Read, Write};
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;
    use std::sync::Mutex;

    use crossbeam_channel::{Receiver, Sender};
    use io_uring::{IoUring, opcode, squeue, types};

    /// A read is at most this long (a larger file takes several, the last linked to its close).
    const CHUNK: usize = 1 << 30;

    struct Args {
        nul: bool,
        jobs: usize,
        depth: usize,
        plain: bool,
        /// Cap on the ring's kernel workers for operations that block (0: the kernel's).
        iowq: u32,
        /// Open into the process's descriptor table instead of the ring's fixed slots.
        no_fixed: bool,
    }

    fn args() -> Args {
        let mut a = Args {
            nul: false,
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
            depth: 128,
            plain: false,
            iowq: 0,
            no_fixed: false,
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let mut num = |name: &str| -> usize {
                it.next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage(&format!("{name} needs a number")))
            };
            match arg.as_str() {
                "-0" => a.nul = true,
                "-j" => a.jobs = num("-j"),
                "--depth" => a.depth = num("--depth").clamp(1, 4096),
                "--plain" => a.plain = true,
                "--no-fixed" => a.no_fixed = true,
                "--iowq" => a.iowq = num("--iowq") as u32,
                _ => usage(&format!("unknown argument {arg}")),
            }
        }
        a
    }

    fn usage(msg: &str) -> ! {
        eprintln!(
            "uring_hash: {msg}\nusage: uring_hash [-0] [-j N] [--depth N] [--iowq N] [--no-fixed] [--plain] < LIST"
        );
        std::process::exit(2);
    }

    /// A file's bytes (or why it has none), on its way to a hasher.
    struct Done {
        index: usize,
        data: Result<Vec<u8>, io::Error>,
    }

    /// Hashes what comes in, prints b3sum lines, sends the buffers back for reuse.
    struct Hashers {
        paths: Vec<PathBuf>,
        out: Mutex<io::BufWriter<io::Stdout>>,
        failed: std::sync::atomic::AtomicBool,
    }

    impl Hashers {
        fn hash(&self, done: Done) -> Option<Vec<u8>> {
            let path = &self.paths[done.index];
            match done.data {
                Ok(buf) => {
                    let hash = blake3::hash(&buf);
                    let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = writeln!(out, "{}  {}", hash.to_hex(), path.display());
                    Some(buf)
                }
                Err(e) => {
                    eprintln!("uring_hash: {}: {e}", path.display());
                    self.failed
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    None
                }
            }
        }
    }

    /// Where a finished file goes: hashed here, or sent to the workers.
    enum Sink<'a> {
        Inline(&'a Hashers),
        Workers(Sender<Done>),
    }

    /// Buffers the workers are done with, and those not yet handed out.
    struct Pool {
        back: Option<Receiver<Vec<u8>>>,
        spare: Vec<Vec<u8>>,
    }

    impl Pool {
        fn take(&mut self) -> Vec<u8> {
            if let Some(back) = &self.back {
                self.spare.extend(back.try_iter());
            }
            let mut buf = self.spare.pop().unwrap_or_default();
            buf.clear();
            buf
        }
    }

    impl Sink<'_> {
        fn send(&self, done: Done, pool: &mut Pool) {
            match self {
                Sink::Inline(h) => {
                    if let Some(buf) = h.hash(done) {
                        pool.spare.push(buf);
                    }
                }
                Sink::Workers(tx) => {
                    let _ = tx.send(done);
                }
            }
        }
    }

    pub fn main() -> io::Result<()> {
        let args = args();
        let mut list = Vec::new();
        io::stdin().lock().read_to_end(&mut list)?;
        let sep = if args.nul { b'\0' } else { b'\n' };
        let paths: Vec<PathBuf> = list
            .split(|&b| b == sep)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
            .collect();
        let hashers = Hashers {
            paths,
            out: Mutex::new(io::BufWriter::with_capacity(1 << 16, io::stdout())),
            failed: false.into(),
        };

        std::thread::scope(|s| -> io::Result<()> {
            let (sink, back) = if args.jobs == 0 {
                (Sink::Inline(&hashers), None)
            } else {
                // Bounded: the ring does not run more than a few buffers ahead of the hashers.
                let (tx, rx) = crossbeam_channel::bounded::<Done>(args.depth.max(16));
                let (back_tx, back_rx) = crossbeam_channel::unbounded::<Vec<u8>>();
                for _ in 0..args.jobs {
                    let rx = rx.clone();
                    let back_tx = back_tx.clone();
                    let hashers = &hashers;
                    s.spawn(move || {
                        for done in rx {
                            if let Some(buf) = hashers.hash(done) {
                                let _ = back_tx.send(buf);
                            }
                        }
                    });
                }
                (Sink::Workers(tx), Some(back_rx))
            };
            let mut pool = Pool {
                back,
                spare: Vec::new(),
            };
            if args.plain {
                eprintln!("uring_hash: --plain: plain system calls");
                plain(&hashers.paths, 0, &sink, &mut pool);
            } else {
                match Ring::new(args.depth, args.iowq, !args.no_fixed) {
                    Ok(mut ring) => ring.run(&hashers.paths, &sink, &mut pool)?,
                    Err(e) => {
                        eprintln!("uring_hash: io_uring refused ({e}): plain system calls");
                        plain(&hashers.paths, 0, &sink, &mut pool);
                    }
                }
            }
            drop(sink); // the workers end when the channel does
            Ok(())
        })?;
        hashers
            .out
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .flush()?;
        if hashers.failed.into_inner() {
            std::process::exit(1);
        }
        Ok(())
    }

    /// The fallback: open, statx (in `metadata`), read, close, one file after another.
    fn plain(paths: &[PathBuf], from: usize, sink: &Sink, pool: &mut Pool) {
        for (index, path) in paths.iter().enumerate().skip(from) {
            let mut buf = pool.take();
            let data = std::fs::File::open(path).and_then(|mut f| {
                let size = f.metadata()?.len();
                buf.reserve(size as usize);
                f.read_to_end(&mut buf)?;
                Ok(buf)
            });
            sink.send(Done { index, data }, pool);
        }
    }

    /// Operation tags in the low bits of `user_data`, the slot above them.
    const STATX: u64 = 0;
    const OPEN: u64 = 1;
    const READ: u64 = 2;
    const CLOSE: u64 = 3;

    struct Slot {
        index: usize,
        path: CString,
        stx: Box<libc::statx>,
        /// Completions still expected before the next step (STATX and OPEN: 2).
        waiting: u8,
        /// OPENAT's result: the descriptor when not opened into the slot.
        open_res: i32,
        stat_res: i32,
        /// Empty (length 0) while the kernel writes into its capacity.
        buf: Vec<u8>,
        /// The size statx gave, and how much of it has been read.
        want: usize,
        size: usize,
        err: Option<io::Error>,
        busy: bool,
    }

    impl Slot {
        fn new() -> Slot {
            Slot {
                index: 0,
                path: CString::default(),
                // SAFETY: statx is plain integers, for which all zeroes is a valid value.
                stx: Box::new(unsafe { std::mem::zeroed() }),
                waiting: 0,
                open_res: 0,
                stat_res: 0,
                buf: Vec::new(),
                want: 0,
                size: 0,
                err: None,
                busy: false,
            }
        }
    }

    struct Ring {
        ring: IoUring,
        slots: Vec<Slot>,
        /// Files opened into the ring's fixed slots (else into the descriptor table).
        fixed: bool,
    }

    impl Ring {
        fn new(depth: usize, iowq: u32, fixed: bool) -> io::Result<Ring> {
            let entries = (2 * depth).next_power_of_two() as u32;
            // One thread submits and reaps: the kernel may then run completion work when
            // we wait instead of interrupting (6.1+); older kernels refuse the flags.
            let ring = IoUring::builder()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_cqsize(2 * entries)
                .build(entries)
                .or_else(|_| IoUring::builder().setup_cqsize(2 * entries).build(entries))?;
            if fixed {
                ring.submitter().register_files_sparse(depth as u32)?;
            }
            if iowq > 0 {
                ring.submitter().register_iowq_max_workers(&mut [iowq, 0])?;
            }
            let slots = (0..depth).map(|_| Slot::new()).collect();
            Ok(Ring { ring, slots, fixed })
        }

        fn run(&mut self, paths: &[PathBuf], sink: &Sink, pool: &mut Pool) -> io::Result<()> {
            let mut next = 0;
            let mut in_flight = 0;
            let mut free: Vec<usize> = (0..self.slots.len()).rev().collect();
            let mut finished: Vec<usize> = Vec::new();
            loop {
                while let (Some(&slot), true) = (free.last(), next < paths.len()) {
                    free.pop();
                    self.start(slot, next, &paths[next])?;
                    next += 1;
                    in_flight += 1;
                }
                if in_flight == 0 {
                    return Ok(());
                }
                self.ring.submit_and_wait(1)?;
                let cqes: Vec<(u64, i32)> = self
                    .ring
                    .completion()
                    .map(|c| (c.user_data(), c.result()))
                    .collect();
                for (data, res) in cqes {
                    let slot = (data >> 2) as usize;
                    if self.complete(slot, data & 3, res, pool)? {
                        finished.push(slot);
                    }
                }
                for slot in finished.drain(..) {
                    let s = &mut self.slots[slot];
                    let data = match s.err.take() {
                        Some(e) => Err(e),
                        None => {
                            let mut buf = std::mem::take(&mut s.buf);
                            // SAFETY: the kernel wrote `s.size` bytes from the start of the
                            // buffer's capacity (READ completions, in order, each at the
                            // offset the previous ended), and `s.size <= s.want <= capacity`.
                            unsafe { buf.set_len(s.size) };
                            Ok(buf)
                        }
                    };
                    s.busy = false;
                    sink.send(
                        Done {
                            index: s.index,
                            data,
                        },
                        pool,
                    );
                    free.push(slot);
                    in_flight -= 1;
                }
            }
        }

        fn push(&mut self, entries: &[squeue::Entry]) -> io::Result<()> {
            // SAFETY: every pointer in the entries (paths, statx buffers, data buffers)
            // belongs to a slot that stays busy, and so untouched, until the operation's
            // completion has been reaped.
            while unsafe { self.ring.submission().push_multiple(entries) }.is_err() {
                self.ring.submit()?;
            }
            Ok(())
        }

        fn start(&mut self, slot: usize, index: usize, path: &std::path::Path) -> io::Result<()> {
            let s = &mut self.slots[slot];
            s.index = index;
            s.path = CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
            s.waiting = 2;
            s.err = None;
            s.busy = true;
            let tag = (slot as u64) << 2;
            let statx = opcode::Statx::new(
                types::Fd(libc::AT_FDCWD),
                s.path.as_ptr(),
                (&mut *s.stx as *mut libc::statx).cast(),
            )
            .mask(libc::STATX_TYPE | libc::STATX_SIZE | libc::STATX_MTIME)
            .build()
            .user_data(tag | STATX);
            let dest = match self.fixed {
                true => Some(
                    types::DestinationSlot::try_from_slot_target(slot as u32)
                        .map_err(|_| io::Error::other("slot out of range"))?,
                ),
                false => None,
            };
            let flags = libc::O_RDONLY | if self.fixed { 0 } else { libc::O_CLOEXEC };
            let open = opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), s.path.as_ptr())
                .flags(flags)
                .file_index(dest)
                .build()
                .user_data(tag | OPEN);
            self.push(&[statx, open])
        }

        /// READ of what is left of the file (linked to its CLOSE when that is all of it).
        fn read(&mut self, slot: usize) -> io::Result<()> {
            let s = &mut self.slots[slot];
            let at = s.size;
            let want = (s.want - at).min(CHUNK);
            let last = at + want == s.want;
            let tag = (slot as u64) << 2;
            // The kernel writes into the buffer's spare capacity (`want` bytes of it were
            // reserved); `finish` sets the length to what it reported written.
            let spare = s.buf.spare_capacity_mut();
            let buf = spare[at..].as_mut_ptr().cast();
            let read = match self.fixed {
                true => opcode::Read::new(types::Fixed(slot as u32), buf, want as u32),
                false => opcode::Read::new(types::Fd(s.open_res), buf, want as u32),
            }
            .offset(at as u64)
            .build()
            .user_data(tag | READ);
            if last {
                let close = self.close_entry(slot);
                self.push(&[read.flags(squeue::Flags::IO_LINK), close])
            } else {
                self.push(&[read])
            }
        }

        fn close_entry(&self, slot: usize) -> squeue::Entry {
            let close = match self.fixed {
                true => opcode::Close::new(types::Fixed(slot as u32)),
                false => opcode::Close::new(types::Fd(self.slots[slot].open_res)),
            };
            close.build().user_data((slot as u64) << 2 | CLOSE)
        }

        fn close(&mut self, slot: usize) -> io::Result<()> {
            let close = self.close_entry(slot);
            self.push(&[close])
        }

        /// One completion; true when the slot's file is finished.
        fn complete(
            &mut self,
            slot: usize,
            op: u64,
            res: i32,
            pool: &mut Pool,
        ) -> io::Result<bool> {
            let s = &mut self.slots[slot];
            debug_assert!(s.busy);
            match op {
                STATX | OPEN => {
                    if op == STATX {
                        s.stat_res = res;
                    } else {
                        s.open_res = res;
                    }
                    s.waiting -= 1;
                    if s.waiting > 0 {
                        return Ok(false);
                    }
                    if s.open_res < 0 {
                        s.err = Some(io::Error::from_raw_os_error(-s.open_res));
                        return Ok(true); // nothing open, nothing to close
                    }
                    if s.stat_res < 0 {
                        s.err = Some(io::Error::from_raw_os_error(-s.stat_res));
                        self.close(slot)?;
                        return Ok(false);
                    }
                    if u32::from(s.stx.stx_mode) & libc::S_IFMT != libc::S_IFREG {
                        s.err = Some(io::Error::other("not a regular file"));
                        self.close(slot)?;
                        return Ok(false);
                    }
                    let size = s.stx.stx_size as usize;
                    let mut buf = pool.take();
                    buf.reserve(size);
                    s.buf = buf;
                    s.want = size;
                    s.size = 0;
                    if size == 0 {
                        self.close(slot)?;
                    } else {
                        self.read(slot)?;
                    }
                    Ok(false)
                }
                READ => {
                    if res < 0 {
                        s.err = Some(io::Error::from_raw_os_error(-res));
                    } else if res == 0 {
                        s.err = Some(io::Error::other("file shrank while being read"));
                    } else {
                        s.size += res as usize;
                        if s.size < s.want {
                            // A short read (a linked CLOSE comes back cancelled), or one
                            // chunk of a large file: read on.
                            self.read(slot)?;
                        }
                        return Ok(false);
                    }
                    // The read failed: a linked CLOSE, if any, comes back cancelled.
                    self.close(slot)?;
                    Ok(false)
                }
                _ => {
                    if res == -libc::ECANCELED {
                        return Ok(false); // its READ was short or failed, handled there
                    }
                    if res < 0 && s.err.is_none() {
                        s.err = Some(io::Error::from_raw_os_error(-res));
                    }
                    Ok(true)
                }
            }
        }
    }
}
