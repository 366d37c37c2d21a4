//! seekless's photo catalog, built on [`seekless_core`]'s consume layer: `index` reads
//! images in physical order into an SQLite catalog (format, dimensions, EXIF, BLAKE3;
//! with `--thumbs` thumbnails and perceptual hashes), and `dupes` finds exact and similar
//! duplicates in it. The catalog's schema is owned, for reading and writing, by
//! `index::catalog`.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod dupes;
pub mod index;
