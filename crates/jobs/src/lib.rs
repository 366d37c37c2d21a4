//! The jobs of seekless built on [`seekless_core`]'s consume layer: `hash` and `check`
//! (with the manifest formats they write and read), `tar`, `copy` and `bench`. Each is a
//! library function first; the command line only parses and prints.
//!
//! Everything these jobs write goes through [`AtomicFile`] (it appears under its name only
//! when complete), and everything they delete or replace goes through one module,
//! `destructive`, which demands the evidence for it: the run saw everything it needed,
//! the replacement is complete and durable, the thing removed is provably ours.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

// What jobs write: files that appear under their name only when complete.
mod atomic;
// The one owner of every destructive act, and the evidence each demands.
pub mod destructive;

pub mod bench;
pub mod check;
pub mod copy;
pub mod digest;
pub mod hash;
pub mod manifest;
mod stat;
pub mod tar;
mod temp;

pub use atomic::{AtomicFile, OutputIdentity};
