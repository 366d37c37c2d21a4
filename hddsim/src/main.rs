//! hddsim: an emulated 7200 rpm hard disk served over FUSE.
//!
//! Mounts a directory with one file, `disk.img`, backed by an image file; every read and
//! write of it is delayed by a seek/rotation/transfer model with an SPTF command queue, on a
//! virtual timeline. Put a loop device and a real filesystem on `disk.img` (see
//! `bench/hdd/stack.sh`). `control` in the same directory reports stats as JSON and takes
//! commands (`on`, `off`, `reset`, `fcfs`, `sptf`, `trace-mark LABEL`).

mod drive_thread;
mod fs;
mod model;
mod queue;
mod stats;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use clap::Parser;
use fuser::{Config, MountOption, Session};
use nix::errno::Errno;
use nix::mount::{MntFlags, umount2};
use nix::sys::signal::{SigSet, Signal};

use crate::drive_thread::DriveThread;
use crate::fs::{DiskFs, FuseTuning};
use crate::model::{DiskParams, Drive};
use crate::stats::{Settings, Shared};

const MB: f64 = 1e6;

/// An emulated 7200 rpm hard disk: a FUSE directory with `disk.img` (every read and write
/// delayed by a seek/rotation/transfer model behind an SPTF queue) and `control` (JSON stats
/// on read; `on`, `off`, `reset`, `fcfs`, `sptf`, `trace-mark LABEL` on write).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Backing image file (keep it on tmpfs, e.g. /dev/shm). Created sparse if absent.
    #[arg(long)]
    image: PathBuf,
    /// Disk size in bytes (suffixes K, M, G, T = powers of 1024). Required when the image
    /// does not exist; if it does, it must match (or be omitted).
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Spindle speed.
    #[arg(long, default_value_t = 7200.0)]
    rpm: f64,
    /// Shortest seek (head settle), ms.
    #[arg(long, default_value_t = 0.8)]
    settle_ms: f64,
    /// Full-stroke seek, ms. With 0.8 ms settle, 15.2 ms gives an 8.48 ms average seek.
    #[arg(long, default_value_t = 15.2)]
    full_stroke_ms: f64,
    /// Media rate at the outer edge (offset 0), MB/s (10^6 bytes).
    #[arg(long, default_value_t = 200.0)]
    outer_mbps: f64,
    /// Media rate at the inner edge (last byte), MB/s.
    #[arg(long, default_value_t = 100.0)]
    inner_mbps: f64,
    /// One media rate everywhere, MB/s (overrides --outer-mbps/--inner-mbps).
    #[arg(long)]
    flat_mbps: Option<f64>,
    /// Commands the drive chooses from (NCQ depth); the rest wait in arrival order.
    #[arg(long, default_value_t = 32)]
    queue_depth: usize,
    /// Serve commands first-come-first-served instead of shortest-positioning-time-first.
    #[arg(long)]
    fcfs: bool,
    /// A command queued longer than this is served next, whatever SPTF prefers, ms.
    #[arg(long, default_value_t = 1000.0)]
    max_wait_ms: f64,
    /// Drive read-ahead segment, KiB: after a read, while idle, the head keeps reading up to
    /// this far past the last byte delivered, into the drive's buffer; a read that starts
    /// there is served from it (or continues the stream without rotational wait). 0 = off.
    #[arg(long, default_value_t = 512)]
    drive_cache_kb: u64,
    /// Interface rate for data served from the drive's buffer, MB/s.
    #[arg(long, default_value_t = 550.0)]
    bus_mbps: f64,
    /// Start with the model off (no delays) until `on` is written to `control`.
    #[arg(long)]
    model_off: bool,
    /// Append `virtual_start_us,offset,len,read|write,seek_distance_bytes,seek_us,rotation_us,transfer_us`
    /// per command (the last three are the modeled service time).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Background (async) requests the kernel may have outstanding on this mount.
    #[arg(long, default_value_t = 128)]
    max_background: u16,
    /// Largest single FUSE read/write, KiB.
    #[arg(long, default_value_t = 1024)]
    max_request_kb: u32,
    /// Do not ask for FUSE_ASYNC_DIO (for experiments: the loop device then gets one
    /// request at a time through).
    #[arg(long)]
    no_async_dio: bool,
    /// Threads reading requests from /dev/fuse (they only queue them, so 1 is enough).
    #[arg(long, default_value_t = 1)]
    fuse_threads: usize,
    /// Directory to mount on.
    mountpoint: PathBuf,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        Some('T') => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    let n: u64 = num.parse().map_err(|e| format!("bad size {s:?}: {e}"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} overflows"))
}

/// Open the image read-write, creating it sparse with `size` bytes if absent.
fn open_image(path: &Path, size: Option<u64>) -> Result<(File, u64)> {
    let exists = path.exists();
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .with_context(|| format!("opening image {}", path.display()))?;
    let len = file
        .metadata()
        .with_context(|| format!("stat {}", path.display()))?
        .len();
    match (exists, size) {
        (true, None) if len > 0 => Ok((file, len)),
        (true, Some(s)) if s == len => Ok((file, len)),
        (true, Some(s)) if len > 0 => {
            bail!("image {} is {len} bytes but --size is {s}", path.display())
        }
        (_, Some(s)) if s > 0 => {
            file.set_len(s)
                .with_context(|| format!("sizing image {} to {s} bytes", path.display()))?;
            Ok((file, s))
        }
        _ => bail!("image {} is absent or empty: give --size", path.display()),
    }
}

/// Unmount on SIGINT/SIGTERM. A busy mount (loop device still attached) is retried for
/// 5 s, then lazily detached so the process ends when the last user lets go.
fn spawn_signal_unmounter(signals: SigSet, mountpoint: PathBuf) -> Result<()> {
    thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let sig = match signals.wait() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("hddsim: waiting for signals failed: {e}");
                    return;
                }
            };
            eprintln!("hddsim: {sig}, unmounting {}", mountpoint.display());
            for _ in 0..50 {
                match umount2(&mountpoint, MntFlags::empty()) {
                    Ok(()) | Err(Errno::EINVAL) | Err(Errno::ENOENT) => return,
                    Err(Errno::EBUSY) => thread::sleep(Duration::from_millis(100)),
                    Err(e) => {
                        eprintln!("hddsim: unmount failed: {e}");
                        break;
                    }
                }
            }
            eprintln!("hddsim: mount still busy; detaching lazily");
            if let Err(e) = umount2(&mountpoint, MntFlags::MNT_DETACH) {
                eprintln!("hddsim: lazy unmount failed: {e}");
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let (image, size) = open_image(&args.image, args.size)?;

    let mut params = DiskParams::hdd_7200(size);
    params.rpm = args.rpm;
    params.settle_s = args.settle_ms * 1e-3;
    params.full_stroke_s = args.full_stroke_ms * 1e-3;
    params.outer_rate = args.flat_mbps.unwrap_or(args.outer_mbps) * MB;
    params.inner_rate = args.flat_mbps.unwrap_or(args.inner_mbps) * MB;
    params.cache_bytes = args.drive_cache_kb * 1024;
    params.bus_rate = args.bus_mbps * MB;
    if !(params.rpm > 0.0 && params.outer_rate > 0.0 && params.inner_rate > 0.0) {
        bail!("--rpm and the media rates must be positive");
    }

    let settings = Settings {
        revolution_ms: params.revolution_s() * 1e3,
        average_seek_ms: params.average_seek_s() * 1e3,
        queue_depth: args.queue_depth.max(1),
        max_wait_ms: args.max_wait_ms,
        drive_cache_kb: args.drive_cache_kb,
        max_background: args.max_background,
        disk: params.clone(),
    };
    let shared = Arc::new(Shared::new(settings, !args.model_off, args.fcfs));

    // Block the signals before any thread starts so that all inherit the mask and only
    // the signal thread receives them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().context("blocking SIGINT/SIGTERM")?;

    let (tx, rx) = mpsc::channel();
    let drive = DriveThread::new(
        shared.clone(),
        image,
        Drive::new(params),
        args.queue_depth.max(1),
        (args.max_wait_ms * 1e6) as u64,
        args.trace.as_deref(),
    )
    .context("opening the trace file")?;
    let drive_handle = thread::Builder::new()
        .name("drive".into())
        .spawn(move || drive.run(rx))
        .context("starting the drive thread")?;

    let fs = DiskFs {
        shared,
        tx,
        size,
        tuning: FuseTuning {
            max_background: args.max_background.max(1),
            max_request: args.max_request_kb.max(4) * 1024,
            async_dio: !args.no_async_dio,
        },
        started: SystemTime::now(),
    };
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("hddsim".into()),
        MountOption::Subtype("hddsim".into()),
        MountOption::NoAtime,
    ];
    config.n_threads = Some(args.fuse_threads.max(1));
    config.clone_fd = args.fuse_threads > 1;

    let session = Session::new(fs, &args.mountpoint, &config)
        .with_context(|| format!("mounting on {}", args.mountpoint.display()))?;
    spawn_signal_unmounter(signals, args.mountpoint.clone())?;
    eprintln!(
        "hddsim: {} bytes, {}/{} served at {}",
        size,
        fs::DISK_NAME,
        fs::CONTROL_NAME,
        args.mountpoint.display()
    );
    session.run().context("FUSE session")?;
    // The filesystem (and with it the channel's sender) is gone: the drive thread answers
    // what is left, flushes the trace and ends.
    if drive_handle.join().is_err() {
        bail!("drive thread panicked");
    }
    eprintln!("hddsim: unmounted");
    Ok(())
}
