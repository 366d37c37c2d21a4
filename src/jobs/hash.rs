//! Checksums of every file, read in physical order with hashing on worker threads.
//!
//! ```
//! use std::sync::Arc;
//! use seekless::{Plan, PlanOptions, Quiet};
//! use seekless::jobs::hash::{Algorithm, hash_plan};
//! use seekless::read::ReadOptions;
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a"), b"abc")?;
//! let plan = Arc::new(Plan::build(&[dir.path().to_path_buf()], &PlanOptions::default(), &Quiet));
//! let mut out = Vec::new();
//! hash_plan(plan, Algorithm::Sha256, &ReadOptions::default(), 2, |file, result| {
//!     out.push((file.entry.path.clone(), result.unwrap()));
//! });
//! assert_eq!(out[0].1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::Read;
use std::sync::{Arc, Mutex};

use sha2::Digest;

use crate::error::Error;
use crate::plan::{Plan, PlannedFile};
use crate::read::{ReadOptions, ReadStats, Reader};

/// A checksum algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// BLAKE3 (256-bit), as `b3sum`.
    Blake3,
    /// SHA-256, as `sha256sum`.
    Sha256,
    /// SHA-1, as `sha1sum`.
    Sha1,
    /// MD5, as `md5sum`.
    Md5,
}

impl Algorithm {
    /// Digest length in hex characters.
    pub fn hex_len(self) -> usize {
        match self {
            Algorithm::Blake3 | Algorithm::Sha256 => 64,
            Algorithm::Sha1 => 40,
            Algorithm::Md5 => 32,
        }
    }

    /// The algorithm's name as its standard writes it, for messages: "SHA-256", "SHA-1",
    /// "MD5", "BLAKE3".
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Blake3 => "BLAKE3",
            Algorithm::Sha256 => "SHA-256",
            Algorithm::Sha1 => "SHA-1",
            Algorithm::Md5 => "MD5",
        }
    }

    /// A fresh hasher.
    pub fn hasher(self) -> Hasher {
        match self {
            Algorithm::Blake3 => Hasher::Blake3(Box::new(blake3::Hasher::new())),
            Algorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algorithm::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            Algorithm::Md5 => Hasher::Md5(md5::Md5::new()),
        }
    }
}

/// A running checksum.
pub enum Hasher {
    /// BLAKE3.
    Blake3(Box<blake3::Hasher>),
    /// SHA-256.
    Sha256(sha2::Sha256),
    /// SHA-1.
    Sha1(sha1::Sha1),
    /// MD5.
    Md5(md5::Md5),
}

impl Hasher {
    /// Adds bytes.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Blake3(h) => {
                h.update(data);
            }
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Md5(h) => h.update(data),
        }
    }

    /// The digest in lower-case hex.
    pub fn finish_hex(self) -> String {
        match self {
            Hasher::Blake3(h) => h.finalize().to_hex().to_string(),
            Hasher::Sha256(h) => hex(&h.finalize()),
            Hasher::Sha1(h) => hex(&h.finalize()),
            Hasher::Md5(h) => hex(&h.finalize()),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Hashes one file from a reader to its end, reusing `buf`, and checks it did not change.
pub fn hash_reader(
    mut file: crate::read::FileReader,
    algo: Algorithm,
    buf: &mut [u8],
) -> Result<String, Error> {
    let mut h = algo.hasher();
    loop {
        let n = match file.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e, &file.planned().entry.path)),
        };
        h.update(&buf[..n]);
    }
    file.finish()?;
    Ok(h.finish_hex())
}

/// Hashes everything `input` yields, to its end: a stream that has no place on a disk to
/// plan for, such as standard input (`-` in a manifest).
///
/// ```
/// use seekless::jobs::hash::{Algorithm, hash_stream};
/// let hex = hash_stream(&b"abc"[..], Algorithm::Md5)?;
/// assert_eq!(hex, "900150983cd24fb0d6963f7d28e17f72");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn hash_stream(mut input: impl Read, algo: Algorithm) -> std::io::Result<String> {
    let mut h = algo.hasher();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(h.finish_hex())
}

/// The error of a failed read: the reader already wraps OS errors in an [`Error`] naming
/// the path; take that one out rather than naming the path twice.
fn read_error(e: std::io::Error, path: &std::path::Path) -> Error {
    if e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
        if let Some(Ok(err)) = e.into_inner().map(|inner| inner.downcast::<Error>()) {
            return *err;
        }
        unreachable!("checked to hold an Error just above");
    }
    Error::io(path, e)
}

/// Hashes every file of `plan` with `workers` threads, in read order, calling `done` (on
/// one thread at a time) with each file and its hex digest or error. Files that failed to
/// open are reported with their error too. Returns the reader's statistics.
pub fn hash_plan<F>(
    plan: Arc<Plan>,
    algo: Algorithm,
    opts: &ReadOptions,
    workers: usize,
    done: F,
) -> ReadStats
where
    F: FnMut(&PlannedFile, Result<String, Error>) + Send,
{
    let done = Mutex::new(done);
    let reader = Reader::new(plan.clone(), opts.clone());
    reader.par_for_each(workers, |planned, item| {
        thread_local! {
            static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 1 << 20]);
        }
        let result =
            item.and_then(|file| BUF.with(|b| hash_reader(file, algo, &mut b.borrow_mut())));
        let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
        done(planned, result);
    })
}
