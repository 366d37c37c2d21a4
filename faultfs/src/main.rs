//! faultfs: a FUSE passthrough of a backing directory that injects faults chosen by a
//! seed, for seekless's randomized fault harness (`tests/it/faults.rs`, `docs/faults.md`).
//!
//! `faultfs --seed 7 --rate 100 --faults read-eio,vanish --log faults.jsonl BACKING MNT`
//! serves BACKING at MNT; each kind of fault strikes a path when a hash of (seed, kind,
//! path) falls under the rate (thousandths), so a seed is a scenario that replays. What
//! struck is logged as JSON lines. SIGINT/SIGTERM unmount; so does `umount MNT`.

// A passthrough filesystem removes and renames what its client asks it to: the rule that
// only `seekless::destructive` removes or renames binds seekless, not this test tool.
#![allow(clippy::disallowed_methods)]

mod fs;
mod log;
mod nodes;
mod spec;

use std::fs::File;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use fuser::{Config, MountOption, Session};
use nix::errno::Errno;
use nix::mount::{MntFlags, umount2};
use nix::sys::signal::{SigSet, Signal};

use crate::fs::FaultFs;
use crate::log::FaultLog;
use crate::nodes::Nodes;
use crate::spec::{Kind, Spec};

/// A FUSE passthrough of BACKING at MOUNTPOINT that injects faults chosen by a seed.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Chooses the paths each fault strikes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Chance that a fault kind strikes a given path, in thousandths (0: none).
    #[arg(long, default_value_t = 0)]
    rate: u32,
    /// Fault kinds, comma-separated: read-eio, readdir-eio, eacces, vanish, appear,
    /// change-type, grow, shrink, rewrite, enospc, write-eio.
    #[arg(long, value_delimiter = ',')]
    faults: Vec<Kind>,
    /// Every write fails with ENOSPC once this many bytes were written through the mount.
    #[arg(long)]
    enospc_after: Option<u64>,
    /// Where to append the JSON lines of the faults injected.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Also log every file opened (`{"event":"open",…}`): a point a test can wait for.
    #[arg(long)]
    log_opens: bool,
    /// The directory served.
    backing: PathBuf,
    /// Where to mount it.
    mountpoint: PathBuf,
}

/// Unmounts on SIGINT/SIGTERM (lazily if busy), which ends the session.
fn spawn_signal_unmounter(signals: SigSet, mountpoint: PathBuf) -> Result<()> {
    thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if signals.wait().is_err() {
                return;
            }
            for _ in 0..20 {
                match umount2(&mountpoint, MntFlags::empty()) {
                    Ok(()) | Err(Errno::EINVAL) | Err(Errno::ENOENT) => return,
                    Err(Errno::EBUSY) => thread::sleep(Duration::from_millis(50)),
                    Err(_) => break,
                }
            }
            let _ = umount2(&mountpoint, MntFlags::MNT_DETACH);
        })
        .context("starting the signal thread")?;
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let backing = args
        .backing
        .canonicalize()
        .with_context(|| format!("backing directory {}", args.backing.display()))?;
    let log = match &args.log {
        Some(p) => Some(
            File::options()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("fault log {}", p.display()))?,
        ),
        None => None,
    };
    // Modes of what is created are the caller's (mode & !umask, given by the kernel).
    // SAFETY: umask has no preconditions.
    unsafe { libc::umask(0) };
    let spec = Spec {
        seed: args.seed,
        rate_permille: args.rate.min(1000),
        kinds: args.faults.clone(),
        enospc_after: args.enospc_after,
    };
    let fs = FaultFs::new(
        Nodes::new(backing),
        spec,
        FaultLog::new(log, args.log_opens),
    );

    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().context("blocking SIGINT/SIGTERM")?;

    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("faultfs".into()),
        MountOption::Subtype("faultfs".into()),
    ];
    config.acl = fuser::SessionACL::All;
    let session = Session::new(fs, &args.mountpoint, &config)
        .with_context(|| format!("mounting on {}", args.mountpoint.display()))?;
    spawn_signal_unmounter(signals, args.mountpoint.clone())?;
    session.run().context("FUSE session")?;
    Ok(())
}
