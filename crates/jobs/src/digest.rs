//! Checksum algorithms and running hashers: what `hash`, `--check`, the manifest format
//! and `copy` (`--checksum`, `--verify`, `--manifest`) share, with no notion of a plan.
//!
//! ```
//! use seekless_jobs::digest::{Algorithm, hash_stream};
//!
//! let mut h = Algorithm::Sha1.hasher();
//! h.update(b"ab");
//! h.update(b"c");
//! assert_eq!(h.finish_hex(), "a9993e364706816aba3e25717850c26c9cd0d89d");
//! assert_eq!(hash_stream(&b"abc"[..], Algorithm::Sha1)?, "a9993e364706816aba3e25717850c26c9cd0d89d");
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::Read;

use sha2::Digest;

/// A checksum algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
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

/// `bytes` in lower-case hex.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// Hashes everything `input` yields, to its end: a stream that has no place on a disk to
/// plan for, such as standard input (`-` in a manifest).
///
/// ```
/// use seekless_jobs::digest::{Algorithm, hash_stream};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_algorithm_gives_its_standard_digest_of_abc() {
        for (algo, want) in [
            (
                Algorithm::Sha256,
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (Algorithm::Sha1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (Algorithm::Md5, "900150983cd24fb0d6963f7d28e17f72"),
            (
                Algorithm::Blake3,
                "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85",
            ),
        ] {
            let got = hash_stream(&b"abc"[..], algo).unwrap();
            assert_eq!(got, want, "{algo:?}");
            assert_eq!(got.len(), algo.hex_len(), "{algo:?}");
        }
    }
}
