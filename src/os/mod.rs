//! Platform backends: the only place that talks to a particular operating system.
//!
//! Each backend offers the same small set of functions with the same typed results, so
//! the portable pipeline (`walk`, `locate`, `device`, `plan`, `read`) reads straight
//! through without `cfg`:
//!
//! - identity: [`file_id`], [`dir_entry_ino`];
//! - opening: [`open_to_locate`], [`open_to_read`];
//! - locating: [`filesystem`], [`map_extents`];
//! - devices: [`disk_of`];
//! - reading hints: [`prefetch`], [`await_prefetch`], [`drop_cache`];
//! - walking: [`DirReadahead`] (Linux; elsewhere a no-op); [`metadata`], [`symlink_metadata`]
//!   and [`read_dir`] for paths of any length (Linux; elsewhere the standard library's).

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod unix;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub(crate) use macos::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub(crate) use other::*;

/// Paths of any length are Linux's concern (see `linux/longpath.rs`); elsewhere the
/// standard library's calls are used as they are.
#[cfg(not(target_os = "linux"))]
pub(crate) use std::fs::{metadata, read_dir, symlink_metadata};

/// Directory read-ahead applies to Linux only (see `linux/dirahead.rs`); elsewhere it
/// never starts anything.
#[cfg(not(target_os = "linux"))]
#[derive(Default)]
pub(crate) struct DirReadahead;

#[cfg(not(target_os = "linux"))]
impl DirReadahead {
    pub(crate) fn start(&self, _dir: &std::path::Path, _dev: u64, _size: u64) -> bool {
        false
    }
}
