//! seekless: read very many files off rotational disks in physical order.
//!
//! This package is the command-line program. Its library is three crates, re-exported
//! here for programs that want all of them:
//!
//! - [`seekless_core`] (its items are at this crate's root): walk, locate, plan, read, and
//!   the consume layer jobs are built on; no SQLite, image decoder or command-line parser
//!   in its dependency tree;
//! - [`seekless_jobs`] (as [`jobs`]): `hash`, `check`, `tar`, `copy`, `bench`, and the one
//!   owner of everything they delete or replace;
//! - [`seekless_catalog`] (as [`jobs::index`] and [`jobs::dupes`]): the photo catalog.

#![warn(missing_docs)]

pub use seekless_core::*;

/// The jobs: [`seekless_jobs`] and [`seekless_catalog`] together.
pub mod jobs {
    pub use seekless_catalog::{dupes, index};
    pub use seekless_jobs::{bench, check, copy, digest, hash, manifest, tar};
}

pub use seekless_jobs::AtomicFile;

/// How seekless is built and why: the pipeline, the layers and their crates, the safety
/// model, the decisions behind them (`docs/design.md`, rendered here).
#[doc = include_str!("../docs/design.md")]
pub mod design {}

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
