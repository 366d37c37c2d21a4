//! Resolving duplicates (`seekless dupes --act`): moving a file away, putting it in the
//! trash, replacing it with a hard link to its keeper, sharing its keeper's extents.
//!
//! [`resolve`] works a batch at a time, and each act takes a [`Checked`], made only by
//! the batch's check: the file and its keeper were read just now, in physical order, each
//! found exactly as the catalog knew it (device, inode, size, modification time, and the
//! content hash of the bytes read now), its status-change time the same before and after
//! the read, the file is not its keeper under another name, and, for an exact duplicate,
//! the two read the same. Immediately before each act the file and its keeper are looked
//! at again (the status-change time too: a rewrite that puts the modification time back
//! still moves it); any difference skips it. A move, a trash or a hard link then confirms
//! that the file it took from its name is the one checked, and puts it back if not. Every
//! act is written to a [`Journal`] first (made durable before the act), so that a move or
//! a trash can be undone ([`undo`]) after anything, a `kill -9` included.
//!
//! Moves stay on the file's filesystem (a rename: nothing is copied, nothing can be half
//! done); so does the trash (the freedesktop.org Trash specification: the home trash when
//! the file is on the home's filesystem, else the trash at the top of its own). A hard link
//! replaces the file with its keeper's inode, atomically (a rename over it); a reflink
//! asks the kernel to share the keeper's extents (`FIDEDUPERANGE`), which compares the
//! bytes itself, under its locks, and changes nothing when they differ.

mod journal;
mod trash;
pub use journal::{About, Intent, Journal, JournalPath, JournalRead, Stamp, parse_journal};

mod act;
mod check;
mod clean_up;
mod places;
mod prepare;
mod rename;
mod undo;

pub use act::{Act, Moved, Outcome, resolve};
pub use check::{Candidate, Checked, Known};
pub use clean_up::{Cleaned, clean_up};
pub use undo::{Undone, undo};

#[cfg(test)]
mod tests;
