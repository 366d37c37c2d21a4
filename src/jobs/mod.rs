//! Jobs: thin consumers of the reader. Each is a library function first; the command line
//! only parses and prints.

pub mod bench;
pub mod copy;
pub mod hash;
pub mod index;
pub mod manifest;
mod stat;
pub mod tar;
