//! seekless's photo catalog, built on [`seekless_core`]'s consume layer: `index` reads
//! images in physical order into an SQLite catalog (format, dimensions, EXIF, BLAKE3;
//! with `--thumbs` thumbnails and perceptual hashes), and `dupes` finds exact and similar
//! duplicates in it. The catalog's schema is owned, for reading and writing, by
//! `index::catalog`.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod dupes;
pub mod index;

/// Each parser of untrusted bytes alone (`index`'s format, header, EXIF, raw, video and
/// sidecar readers, and the journal `dupes --undo` reads), for the fuzz targets through `seekless::fuzzing`: the parsers
/// themselves are private. Built only with the `fuzzing` feature; not part of the API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::dupes::resolve::journal::{Intent, parse_journal};
    pub use crate::index::inspect::fuzzing::*;
}
