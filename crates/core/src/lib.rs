//! seekless reads very many files off rotational disks as fast as the disk can stream, by
//! reading them in the order in which they lie on the platter instead of the order in
//! which the filesystem lists them.
//!
//! A 149 KiB file takes about 1 ms to transfer from a 7200 rpm disk and about 12 ms to
//! reach (seek plus half a revolution). Directory order has nothing to do with physical
//! order, so a naive scan pays a seek per file. seekless asks the operating system where
//! each file lies, sorts the work by physical position per disk, and reads in one sweep
//! while keeping the disk's queue full.
//!
//! # The pipeline
//!
//! ```text
//! inputs ──► walk ──► locate ──► plan ──► decide ──► read ──► job
//! ```
//!
//! - walk ([`walk()`]): expand files and directories into [`Entry`]s (inode-sorted per
//!   directory), [`WalkOptions`];
//! - locate: ask the OS where each file's data lies (FIEMAP, …) — its [`Placement`] —
//!   with a fallback ladder of [`Strategy`]s per filesystem;
//! - device: map each filesystem to its physical [`Disk`], once per device;
//! - plan ([`Plan`]): one [`Sweep`] per disk, in physical order ([`Plan::build`], or
//!   [`Plan::build_tagged`] to get each file back with an id of the caller's, or
//!   [`Plan::from_located`] from placements found elsewhere);
//! - decide ([`read::decide`]): what to do with each file, before anything is read;
//! - [`read`]: the sweeps, with the disk's queue kept full ([`read::Reader`]), and the
//!   consume layer every job is built on ([`read::run`], [`read::Job`]);
//! - the jobs built on them live in crates of their own: `seekless-jobs` (`hash`, `check`,
//!   `tar`, `copy`, `bench`) and `seekless-catalog` (`index`, `dupes`); this crate has no
//!   SQLite, image decoder or command-line parser in its dependency tree.
//!
//! # Two programs on this library
//!
//! - `examples/hash_in_physical_order.rs`: reads a list of paths from standard input and
//!   prints each file's size and BLAKE3 in the order the files lie on their disks, on the
//!   [`read::Reader`] directly (`find DIR -type f | cargo run --release --example
//!   hash_in_physical_order`);
//! - `examples/custom_job.rs`: a job of one's own on the consume layer, as a photo manager
//!   would write it: rows of its own table tagged onto the plan, a decision step, a
//!   [`read::Job`] on worker threads, [`read::Events`] for progress, and where the time
//!   went (`find DIR -type f | nl -ba -w1 | cargo run --release --example custom_job`).
//!
//! # Guarantees
//!
//! - **Never modifies what it reads.** Files are opened read-only (`O_NOATIME` where
//!   allowed); nothing is written beside them.
//! - **Changes are noticed.** A file is checked after it is read by one rule
//!   ([`read::FileReader::check_unchanged`]): its size, modification time and
//!   status-change time are what they were when it was planned and opened, and as many
//!   bytes were read as it holds; otherwise the job gets an [`ErrorKind::Changed`] error.
//! - **Errors name their path and do not stop the run**: they go to a [`Reporter`]; a
//!   file replaced since it was planned is never read as the planned one.
//! - **Bounded memory**: the reader holds a window of bytes and of open files per disk,
//!   whatever the number or size of the files; each worker reuses one buffer.
//! - **A panic is never a short read**: a panic in a sweep, a job or a sink is re-raised
//!   by the call that runs them, with its own message.
//! - **Stops when the work is pointless**: a sink that returns
//!   [`ControlFlow::Break`](std::ops::ControlFlow::Break) stops the sweeps at once.
//!
//! # Example: list files in physical order
//!
//! ```
//! use seekless_core::{Order, Plan, PlanOptions, Quiet};
//!
//! let dir = tempfile::tempdir()?;
//! for name in ["b", "a", "c"] {
//!     std::fs::write(dir.path().join(name), vec![0u8; 10_000])?;
//! }
//! let plan = Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet);
//! for file in plan.iter(Order::Physical) {
//!     println!("{} at {:?}", file.entry.path.display(), file.disk_offset());
//! }
//! assert_eq!(plan.summary().files, 3);
//! # Ok::<(), std::io::Error>(())
//! ```

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

// The vocabulary every stage and platform backend shares: leaf modules that import
// nothing else from the crate.
mod disk;
mod error;
mod fs_kind;
mod placement;
// Platform vocabulary from `seekless-sys`, under the paths the stages name it by.
mod file_id {
    pub use seekless_sys::FileId;
}
use seekless_sys::sync;

// The pipeline, in order.
mod device;
mod filter;
mod locate;
mod measure;
mod plan;
pub mod read;
mod report;
mod walk;

mod os;

#[cfg(any(test, feature = "test-hooks"))]
#[doc(hidden)]
pub mod test_hooks;

pub use disk::{Disk, DiskBasis, DiskIndex, DiskKind, DiskVerdict, device_name};
pub use error::{Change, Error, ErrorKind};
pub use filter::Filter;
pub use fs_kind::FsKind;
pub use locate::Demotion;
pub use placement::{Extent, ExtentFlags, Placement, Strategy};
pub use plan::{FilesystemReport, Order, Plan, PlanOptions, PlannedFile, Summary, Sweep};
pub use report::{Quiet, Reporter};
pub use seekless_sys::FileId;
pub use walk::{Entry, Other, WalkOptions, WalkStats, Walked, read_path_list, walk};
