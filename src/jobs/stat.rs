//! The metadata jobs that recreate files need (tar headers, copies), from `stat`, the same
//! on every platform: where a platform has no such field, a plain default (the fields are
//! the platform's: [`os::attrs`]).

use std::fs::Metadata;

use crate::os;
pub(crate) use crate::os::Attrs as Stat;
pub(crate) use crate::os::NodeKind;

impl Stat {
    /// The metadata in `meta`.
    pub fn of(meta: &Metadata) -> Stat {
        os::attrs(meta)
    }

    /// Whether the file has fewer bytes on disk than its size: it has holes.
    pub fn has_holes(&self) -> bool {
        self.allocated.is_some_and(|a| a < self.size)
    }
}
