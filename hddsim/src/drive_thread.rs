//! The drive thread: owns the command queue and the image file, does the I/O, and sends
//! each reply when the wall clock reaches the command's modeled completion.
//!
//! The FUSE thread only stamps arrivals and forwards the reply objects here, so the kernel
//! can have many requests outstanding while the drive works through them.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::Duration;

use fuser::{Errno, ReplyData, ReplyWrite};

use crate::model::{Command, Drive};
use crate::queue::{CommandQueue, Dispatched, Policy, Queued};
use crate::stats::Shared;

/// Sleep overshoots by 100–200 µs here: sleep to this much before a deadline, then spin.
const SPIN_NS: u64 = 200_000;

/// A message from the FUSE thread.
pub enum Msg {
    Read {
        cmd: Command,
        arrival: u64,
        reply: ReplyData,
    },
    Write {
        cmd: Command,
        arrival: u64,
        data: Vec<u8>,
        reply: ReplyWrite,
    },
    /// A line for the trace file, to separate runs.
    Mark(String),
}

pub enum Payload {
    Read(ReplyData),
    Write(Vec<u8>, ReplyWrite),
}

/// A command whose I/O is done and whose reply waits for its completion time.
enum Done {
    Read(ReplyData, io::Result<Vec<u8>>),
    Write(ReplyWrite, io::Result<u32>),
}

pub struct DriveThread {
    pub shared: Arc<Shared>,
    pub image: File,
    pub queue: CommandQueue<Payload>,
    pub trace: Option<BufWriter<File>>,
}

impl DriveThread {
    pub fn new(
        shared: Arc<Shared>,
        image: File,
        drive: Drive,
        depth: usize,
        max_wait_ns: u64,
        trace: Option<&Path>,
    ) -> io::Result<Self> {
        let trace = match trace {
            Some(p) => Some(BufWriter::new(
                File::options().create(true).append(true).open(p)?,
            )),
            None => None,
        };
        let policy = if shared.fcfs.load(Ordering::SeqCst) {
            Policy::Fcfs
        } else {
            Policy::Sptf
        };
        Ok(DriveThread {
            shared,
            image,
            queue: CommandQueue::new(drive, policy, depth, max_wait_ns),
            trace,
        })
    }

    /// Runs until the FUSE side hangs up (unmount).
    pub fn run(mut self, rx: Receiver<Msg>) {
        let mut in_service: Option<(u64, Done)> = None;
        loop {
            if let Some((completion, done)) = in_service.take() {
                let connected = self.wait_until(completion, &rx);
                self.answer(completion, done);
                if !connected {
                    self.drain_and_stop();
                    return;
                }
            }
            // Everything that has arrived by now is a candidate.
            loop {
                match rx.try_recv() {
                    Ok(m) => self.accept(m),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        self.drain_and_stop();
                        return;
                    }
                }
            }
            if self.queue.is_empty() {
                self.flush_trace();
                match rx.recv() {
                    Ok(m) => self.accept(m),
                    Err(_) => break,
                }
                continue;
            }
            self.queue.policy = if self.shared.fcfs.load(Ordering::Relaxed) {
                Policy::Fcfs
            } else {
                Policy::Sptf
            };
            let model_on = self.shared.model_on.load(Ordering::Relaxed);
            if let Some(d) = self.queue.dispatch(model_on) {
                in_service = Some((d.completion, self.perform(d, model_on)));
            }
        }
        self.flush_trace();
    }

    fn drain_and_stop(&mut self) {
        let model_on = self.shared.model_on.load(Ordering::Relaxed);
        while let Some(d) = self.queue.dispatch(model_on) {
            let completion = d.completion;
            let done = self.perform(d, model_on);
            self.answer(completion, done);
        }
        self.flush_trace();
    }

    fn accept(&mut self, m: Msg) {
        match m {
            Msg::Read {
                cmd,
                arrival,
                reply,
            } => self.queue.push(Queued {
                cmd,
                arrival,
                payload: Payload::Read(reply),
            }),
            Msg::Write {
                cmd,
                arrival,
                data,
                reply,
            } => self.queue.push(Queued {
                cmd,
                arrival,
                payload: Payload::Write(data, reply),
            }),
            Msg::Mark(label) => {
                let at = self.shared.now_ns() / 1000;
                if let Some(t) = self.trace.as_mut() {
                    // Trace errors must not stop the disk; they show up as a short trace.
                    let _ = writeln!(t, "# mark {label} virtual_us={at}");
                    let _ = t.flush();
                }
            }
        }
    }

    /// Wait for `deadline` (virtual ns) while accepting arrivals. False if the FUSE side
    /// hung up meanwhile.
    fn wait_until(&mut self, deadline: u64, rx: &Receiver<Msg>) -> bool {
        loop {
            let now = self.shared.now_ns();
            if now >= deadline {
                return true;
            }
            let left = deadline - now;
            if left > SPIN_NS {
                match rx.recv_timeout(Duration::from_nanos(left - SPIN_NS)) {
                    Ok(m) => self.accept(m),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return false,
                }
            } else {
                match rx.try_recv() {
                    Ok(m) => self.accept(m),
                    Err(TryRecvError::Empty) => std::hint::spin_loop(),
                    Err(TryRecvError::Disconnected) => return false,
                }
            }
        }
    }

    /// Do the command's I/O now (it overlaps the modeled service time), record it.
    fn perform(&mut self, d: Dispatched<Payload>, model_on: bool) -> Done {
        if model_on && let (Some(t), Some(plan)) = (self.trace.as_mut(), d.plan.as_ref()) {
            let _ = writeln!(
                t,
                "{},{},{},{},{},{:.0},{:.0},{:.0}",
                d.start / 1000,
                d.cmd.offset,
                d.cmd.len,
                if d.cmd.write { "write" } else { "read" },
                plan.seek_distance,
                plan.seek_s * 1e6,
                plan.rotation_s * 1e6,
                plan.transfer_s * 1e6
            );
        }
        if let Ok(mut c) = self.shared.counters.lock() {
            c.record(d.cmd.len, d.cmd.write, d.plan.as_ref(), d.candidates);
        }
        match d.payload {
            Payload::Read(reply) => {
                let mut buf = vec![0u8; d.cmd.len as usize];
                let res = read_full_at(&self.image, &mut buf, d.cmd.offset).map(|n| {
                    buf.truncate(n);
                    buf
                });
                Done::Read(reply, res)
            }
            Payload::Write(data, reply) => {
                let res = self
                    .image
                    .write_all_at(&data, d.cmd.offset)
                    .map(|()| data.len() as u32);
                Done::Write(reply, res)
            }
        }
    }

    fn answer(&mut self, completion: u64, done: Done) {
        // Measured before the reply is written: this is the scheduler's own lateness.
        let late_us = self.shared.now_ns().saturating_sub(completion) as f64 / 1e3;
        match done {
            Done::Read(reply, Ok(buf)) => reply.data(&buf),
            Done::Read(reply, Err(e)) => reply.error(errno(&e)),
            Done::Write(reply, Ok(n)) => reply.written(n),
            Done::Write(reply, Err(e)) => reply.error(errno(&e)),
        }
        if let Ok(mut c) = self.shared.counters.lock() {
            c.reply_lateness_us_sum += late_us;
            c.reply_lateness_us_max = c.reply_lateness_us_max.max(late_us);
        }
        self.shared.request_answered();
    }

    fn flush_trace(&mut self) {
        if let Some(t) = self.trace.as_mut() {
            let _ = t.flush();
        }
    }
}

fn errno(e: &io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

/// Read until `buf` is full or end of file; returns the bytes read.
fn read_full_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}
