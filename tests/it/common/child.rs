//! Driving a child process to its end within a time limit, and freezing it at a chosen
//! moment (SIGSTOP between short slices of running), for tests that must catch a run in
//! the middle (a `kill -9`, a second writer). Linux: threads' states come from /proc.

use std::io::{Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long any one run may take before the test calls it hung.
pub const RUN_LIMIT: Duration = Duration::from_secs(300);

/// Runs `cmd` to its end with nothing on stdin, collecting its output; one still running
/// after `limit` is killed and the test fails (a hang is a bug, not a slow test).
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    output_with_input(cmd, None, limit)
}

/// [`output_within`], with `input` on stdin (none: /dev/null).
pub fn output_with_input(cmd: &mut Command, input: Option<Vec<u8>>, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let writer = input.map(|bytes| {
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        })
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
            panic!("{cmd:?} still running after {limit:?}, killed\n{err}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if let Some(w) = writer {
        let _ = w.join();
    }
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A child that is killed (and reaped) when dropped, frozen or not: a failing test leaves
/// no process behind.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) with plain integers, on our own child, not yet reaped (its pid
    // cannot have been reused).
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
}

/// Whether every thread of `pid` is stopped, or the process is gone or a zombie.
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    tasks.flatten().all(|t| {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        // The state follows the command name, which ends at the last ')'.
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
        matches!(state, None | Some('T' | 't' | 'Z' | 'X'))
    })
}

/// Stops the child (SIGSTOP) and waits until all its threads have stopped.
pub fn freeze(child: &Child) {
    signal(child, libc::SIGSTOP);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !all_threads_stopped(child.id()) {
        assert!(Instant::now() < deadline, "the run did not stop on SIGSTOP");
        std::thread::sleep(Duration::from_micros(200));
    }
}

pub fn thaw(child: &Child) {
    signal(child, libc::SIGCONT);
}

/// Lets the child run in short slices, frozen between them, until `ready` (asked while
/// it is frozen) says yes: returns true with the child frozen at that moment, or false
/// if it exited first.
pub fn freeze_when(child: &mut Child, ready: impl FnMut() -> bool) -> bool {
    freeze_when_every(child, CATCH_SLICES[0], ready)
}

/// The slices of running a test that must catch a run in the middle tries in turn: a run
/// that ended before it was caught is started again with shorter ones (fewer steps
/// between two looks), and one that was never caught fails the test.
pub const CATCH_SLICES: [Duration; 4] = [
    Duration::from_millis(2),
    Duration::from_micros(500),
    Duration::from_micros(100),
    Duration::from_micros(20),
];

/// [`freeze_when`], letting the child run `slice` at a time.
pub fn freeze_when_every(
    child: &mut Child,
    slice: Duration,
    mut ready: impl FnMut() -> bool,
) -> bool {
    let deadline = Instant::now() + RUN_LIMIT;
    loop {
        freeze(child);
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if ready() {
            return true;
        }
        assert!(Instant::now() < deadline, "the run never got there");
        thaw(child);
        std::thread::sleep(slice);
    }
}

/// Waits for a started run (thawed; started with its stderr piped) and returns its exit
/// code and stderr.
pub fn finish(mut run: Running) -> (Option<i32>, String) {
    // One that ended while running in slices is reaped already: no pid to signal.
    if run.0.try_wait().unwrap().is_none() {
        thaw(&run.0);
    }
    let mut err = run.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = run.0.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < RUN_LIMIT, "the run did not finish");
        std::thread::sleep(Duration::from_millis(10));
    };
    (status.code(), reader.join().unwrap())
}

/// Runs `cmd` to its end (nothing on stdin), returning its output and its peak resident
/// memory in KiB: the largest `VmHWM` (the process's own high-water mark, from
/// `/proc/PID/status`) seen while it ran, looked at every 20 ms. A high-water mark only
/// grows, so a peak is missed only if the process ends within 20 ms of reaching it.
pub fn output_and_peak_memory(cmd: &mut Command) -> (Output, u64) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = pipe.read_to_end(&mut b);
            b
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok());
            peak_kib = peak_kib.max(hwm.unwrap_or(0));
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(peak_kib > 0, "could not read VmHWM from {status_path}");
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, peak_kib)
}
