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
//! inputs ──► walk ──► locate ──► plan ──► read ──► job
//! ```
//!
//! - walk ([`walk()`]): expand files and directories into [`Entry`]s (inode-sorted per
//!   directory), [`WalkOptions`];
//! - locate: ask the OS where each file's data lies (FIEMAP, …) — its [`Placement`] —
//!   with a fallback ladder of [`Strategy`]s per filesystem;
//! - device: map each filesystem to its physical [`Disk`], once per device;
//! - plan ([`Plan`]): one [`Sweep`] per disk, in physical order;
//! - [`read`]: the sweeps, with the disk's queue kept full ([`read::Reader`]);
//! - [`jobs`]: what is built on them (`hash`, `bench`).
//!
//! A whole program on this library, reading a list of paths from standard input and
//! printing each file's size and BLAKE3 in the order the files lie on their disks:
//! `examples/hash_in_physical_order.rs` (`find DIR -type f | cargo run --release --example
//! hash_in_physical_order`).
//!
//! # Example: list files in physical order
//!
//! ```
//! use seekless::{Order, Plan, PlanOptions, Quiet};
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
mod file_id;
mod fs_kind;
mod path_bytes;
mod placement;
mod sync;

// The pipeline, in order.
mod device;
mod filter;
mod locate;
mod plan;
pub mod read;
mod report;
mod walk;

pub mod jobs;

// What jobs write: files that appear under their name only when complete.
mod atomic;

mod os;

pub use atomic::AtomicFile;
pub use disk::{Disk, DiskIndex, device_name};
pub use error::{Change, Error, ErrorKind};
pub use file_id::FileId;
pub use filter::Filter;
pub use fs_kind::FsKind;
pub use locate::Demotion;
pub use path_bytes::{path_from_bytes, path_to_bytes};
pub use placement::{Extent, ExtentFlags, Placement, Strategy};
pub use plan::{FilesystemReport, Order, Plan, PlanOptions, PlannedFile, Summary, Sweep};
pub use report::{Quiet, Reporter};
pub use walk::{Entry, Other, WalkOptions, WalkStats, Walked, read_path_list, walk};
