//! Resolving duplicates (`seekless dupes --act`): moving a file away, putting it in the
//! trash, replacing it with a hard link to its keeper, sharing its keeper's extents.
//!
//! [`resolve`] works a batch at a time: the batch is read again ([`acts::check`]: only
//! what is found exactly as the catalog knew it becomes a [`Checked`](acts::Checked)),
//! each act is made ready (a move's folders, a trash's `.trashinfo` chosen, a hard link's
//! name), written to a [`Journal`] and made durable, and then done through the one owner
//! of destructive acts ([`seekless_jobs::destructive::acts`]), which looks at the file and
//! its keeper again just before, never replaces a name, and confirms the file it took.
//! Because every act is journalled first, a move or a trash can be undone ([`undo`]) after
//! anything, a `kill -9` included, and what a killed run left is cleaned up
//! ([`clean_up`]).
//!
//! Moves stay on the file's filesystem (a rename: nothing is copied, nothing can be half
//! done); so does the trash (the freedesktop.org Trash specification: the home trash when
//! the file is on the home's filesystem, else the trash at the top of its own).
//!
//! [`acts::check`]: seekless_jobs::destructive::acts::check

pub(crate) mod journal;
mod trash;
pub(crate) use journal::{About, Journal};

mod act;
mod clean_up;
mod places;
mod prepare;
mod undo;

pub use act::{Act, Outcome, resolve};
pub use clean_up::{Cleaned, clean_up};
pub use undo::{Undone, undo};

#[cfg(test)]
mod tests;
