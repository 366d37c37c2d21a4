//! The platform layer of seekless (`seekless-core` and the crates on it): the calls
//! that talk to a particular operating system, with the same typed results on each, so
//! that the crates above read straight through without `cfg`.
//!
//! **No semver promise.** This crate is published only because `seekless-core`,
//! `seekless-jobs` and `seekless-catalog` depend on it; its items change with them, in
//! any release, whatever the version number says. Programs outside seekless should use
//! `seekless-core`, whose interface is the one promised (the few items of this crate it
//! re-exports, such as [`FileId`], are held to its promise there).
//!
//! What is here (Linux, macOS and Windows; another system gets the standard library's
//! calls and no hints):
//!
//! - identity: [`file_id`] ([`FileId`]), [`dir_entry_ino`], [`mount_id`] (which mount a
//!   path is on), [`volume_identity`] (which filesystem, by an identity that outlives mounts:
//!   [`VolumeIdentity`]), [`change_time`], [`allocated_bytes`];
//! - paths of any length (Linux; elsewhere the standard library's): [`metadata`],
//!   [`symlink_metadata`], [`read_dir`], [`with_path`], [`with_paths`],
//!   [`pinned_no_links`], [`open_directory`]; paths as bytes: [`path_to_bytes`],
//!   [`path_from_bytes`], [`member_name_bytes`], [`uri_path_bytes`];
//! - listing: [`is_empty_dir`], [`list_dir`] (names borrowed from a reused buffer, with their
//!   [`EntryType`]);
//! - opening: [`open_to_locate`] (by name in an open directory: [`open_to_locate_in`],
//!   [`open_dir_for_names`]), [`open_to_read`], [`read_uninit`];
//! - reading hints: [`prefetch`], [`await_prefetch`], [`drop_cache`], [`drop_all_caches`],
//!   [`free_memory`]; limits: [`open_file_limit`], [`raise_open_file_limit`], [`is_root`];
//! - attributes: [`attrs()`] (an entry's kind, mode, owner, times, device numbers), given
//!   to another file with [`set_owner`], [`set_mode`], [`set_times`],
//!   [`keep_owner_and_mode`];
//! - archiving: [`data_regions`], [`read_link`], [`xattrs`], [`user_name`], [`group_name`];
//! - writing and copying: [`clone_file`], [`copy_range`], [`make_node`], [`make_symlink`],
//!   [`write_all_at`], [`set_xattr`], [`remove_xattr`] ([`is_unsupported`]),
//!   [`sync_directory`], [`sync_filesystem`], [`sync_filesystem_of`],
//!   [`sync_filesystems`];
//! - replacing files: [`check_writable`], [`lock_holder`], [`locks_on`],
//!   [`process_exists`], [`command_of`], [`MANDATORY_LOCKS`];
//! - loading at run time: [`shared_library_names`], [`can_load_shared_libraries`],
//!   [`executable_name`];
//! - for the jobs' destructive owner: [`rename_exchange`] ([`exchange_unsupported`]),
//!   [`rename_no_replace`], [`share_extents`], [`create_locked_then_named`]; opening and
//!   making: [`set_create_mode`], [`set_dir_mode`], [`set_no_follow`],
//!   [`set_no_follow_no_wait`]; owners and links: [`process_uid`], [`link_count`]; names:
//!   [`name_cut_to`], [`is_descriptor_name`], [`stdout_if_same`], [`slashed`],
//!   [`local_now`];
//! - watching: [`DirWatch`] ([`WatchEvent`], [`Change`], [`watch_limit`]); catching up
//!   without a walk: [`btrfs_changes_since`] ([`BtrfsChanges`]: the directories of a btrfs
//!   subvolume that changed since a generation);
//! - scopes: [`Scope`] (whether a path is at or under a folder, as copy, index and dupes
//!   ask it); errors: [`describe_io`]; locks: [`sync`] (what a poisoned lock means here);
//! - change journals: [`usn`] (the NTFS/ReFS USN journal: its records parsed from
//!   untrusted bytes and coalesced per file, whether a catch-up may read from a stored
//!   position or must walk, and on Windows the live reader).
//!
//! Where each file's data lies (FIEMAP, FIBMAP, retrieval pointers, `F_LOG2PHYS_EXT`),
//! which disk a filesystem is on, and how a pool is laid out are the planner's, private
//! to `seekless-core`: they speak its vocabulary (`Placement`, `Disk`, `FsKind`).

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod btrfs;
mod c_escape;
mod file_id;
mod os;
mod path_bytes;
mod scope;
pub mod sync;
pub mod usn;
mod volume;
mod watch;

pub use btrfs::{BtrfsChanges, btrfs_changes_since, btrfs_generation};
pub use c_escape::push_c_escape;
pub use file_id::FileId;
pub use os::*;
pub use path_bytes::{path_from_bytes, path_to_bytes};
pub use scope::Scope;
pub use volume::{
    IdentitySource, VolumeIdentity, mount_points_under, volume_identity, volume_identity_of_device,
};
pub use watch::{Change, DirWatch, WatchEvent, watch_limit};

/// The operating system's description of an I/O error, without "(os error N)".
pub fn describe_io(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
