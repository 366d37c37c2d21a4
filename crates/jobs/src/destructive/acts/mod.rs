//! The acts of `dupes --act` on one file, and their evidence: [`Checked`], made only by
//! [`check`], which reads a duplicate and its keeper again now, in physical order, and
//! finds each exactly as the catalog knew it (device, inode, size, modification time, and
//! the content hash of the bytes read now), its status-change time the same before and
//! after the read, the file not its keeper under another name, and, for an exact
//! duplicate, the two the same bytes.
//!
//! Each act takes a `Checked` and looks at the file and its keeper again first (the
//! status-change time too: a rewrite that puts the modification time back still moves
//! it); any difference refuses it. A move or a trash ([`move_checked`], [`trash_checked`])
//! is a rename that never replaces a name, and confirms that the file it took is the one
//! checked (else puts it back): it gives a [`Moved`], the evidence that the old path is
//! empty because of this act ([`Forget::moved_away`](super::Forget::moved_away)). A hard
//! link ([`link_over`]) replaces the file with its keeper's inode atomically, after
//! confirming both; a reflink ([`reflink`]) asks the kernel to share the keeper's extents
//! (`FIDEDUPERANGE`), which compares the bytes itself and changes nothing when they
//! differ. The way back ([`put_back`]) never replaces a name either.
//!
//! What to act on, in which batches, the journal written before each act, the trash's
//! place and `--undo` are the catalog's (`seekless_catalog::dupes::act`): nothing there
//! removes or renames but through these.

mod check;
mod primitives;
mod trash_info;

pub use check::{Candidate, Checked, Ctime, Known, check, identity, same_file};
pub use primitives::{
    Leftover, Moved, link_over, move_checked, put_back, reflink, remove_leftover_link,
    remove_made_folder, trash_checked,
};
pub use trash_info::{PendingInfo, TrashInfo, forget_trash_info};

#[cfg(test)]
mod tests;
