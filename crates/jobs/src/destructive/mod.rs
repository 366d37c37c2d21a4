//! The one owner of every destructive act.
//!
//! Removing a file, a directory or a tree, renaming over an existing name, and forgetting
//! catalog rows happen here and nowhere else: `clippy.toml` forbids the primitives
//! (`remove_file`, `remove_dir`, `remove_dir_all`, `rename`, `unlink`, …) in the rest of
//! the crate, and this module allows itself each use, with the reason beside it. Each act
//! takes the evidence that permits it, as a value the rest of the crate cannot make:
//!
//! - [`Clearance`] (from a [`Witness`] of the run): the run saw everything it needed. Either
//!   no error at all happened that could hide an entry, or (`--ignore-errors`, and `index`,
//!   which keeps a row at or under anything it could not see) the paths it could not see
//!   are shielded, with everything under them. A clearance also spares, by identity (so a
//!   bind mount or a `..` does not fool it), every source of the run and each directory
//!   that holds one: removing them would remove what is being copied.
//! - `Durable`: a replacement's data is on the disk (or the user gave that up:
//!   `--no-sync`).
//! - `OwnTemp`: a temporary this run made, under a name only seekless makes
//!   (`.NAME.seekless-tmp-RUN-N`: its one description is in `temp.rs`), locked while it
//!   lives. A temporary of another run is removed only by `remove_dead_temps`, which
//!   proves that run has ended: the temporary's lock is free. A name alone proves nothing:
//!   a user's `.notes.seekless-tmp-2024-12` is never touched.
//! - [`Forget`]: catalog rows of files that were seen gone.
//! - [`acts::Checked`]: a duplicate and its keeper read just now, each as the catalog
//!   knew it, and (exact duplicates) the same bytes: what `dupes --act` moves, trashes,
//!   links or reflinks ([`acts`]); an [`acts::Moved`], what a move or a trash gives, is
//!   the evidence that the file's old path is empty because of it. What to act on, the
//!   journal each act is written to first, the trash's place and the undo are the
//!   catalog's (`seekless_catalog::dupes::act`), which removes and renames nothing but
//!   through these.
//!
//! Beyond the evidence, trees are removed conservatively: never across a mount point, never
//! a source or a directory holding one, and a directory is removed only once everything
//! in it is.

pub(crate) use crate::temp::may_be_live_temp;
pub mod acts;

mod directory;
mod evidence;
mod forget;
mod lock;
mod temporaries;
mod tree;

pub(crate) use directory::make_directory;
pub(crate) use evidence::Durable;
pub use evidence::{Clearance, Withheld, Witness};
pub use forget::Forget;
pub(crate) use lock::DestinationLock;
pub(crate) use temporaries::{OwnTemp, remove_dead_temps};
pub(crate) use tree::remove_extra;
pub use tree::{Lies, through_a_link};

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests;
