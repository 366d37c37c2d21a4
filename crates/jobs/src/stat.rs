//! The metadata jobs that recreate files need (tar headers, copies), from `stat`, the same
//! on every platform: where a platform has no such field, a plain default (the fields are
//! the platform's: [`os::attrs`]).

pub(crate) use seekless_sys::Attrs as Stat;
pub(crate) use seekless_sys::NodeKind;
