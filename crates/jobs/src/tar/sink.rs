//! Where the archive goes: blocks of the archive stream are handed to a writer thread that
//! compresses (if asked) and writes them, so the reading thread never waits for a
//! compressor or a slow output while the disk could be streaming. A few buffers circulate
//! between the two threads; nothing is allocated per member.

use std::io::{self, Write};

use crossbeam_channel::{Receiver, Sender, bounded};

/// How to compress the archive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// A plain tar.
    #[default]
    None,
    /// gzip (`flate2`), at this level (1–9).
    Gzip(u32),
    /// zstd at this level (1–19), with this many worker threads (0: on the writer thread).
    Zstd {
        /// Compression level.
        level: i32,
        /// Worker threads of libzstd.
        threads: u32,
    },
}

impl Compression {
    /// gzip at its usual level (6).
    pub fn gzip() -> Compression {
        Compression::Gzip(6)
    }

    /// zstd at its usual level (3), on every CPU.
    pub fn zstd() -> Compression {
        Compression::Zstd {
            level: 3,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        }
    }

    /// What a file name's suffix asks for: `.tar.gz`/`.tgz` gzip, `.tar.zst`/`.tzst` zstd.
    pub fn from_suffix(name: &std::path::Path) -> Option<Compression> {
        let name = name.file_name()?.to_string_lossy().to_ascii_lowercase();
        if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Some(Compression::gzip())
        } else if name.ends_with(".tar.zst") || name.ends_with(".tzst") {
            Some(Compression::zstd())
        } else {
            None
        }
    }
}

/// Size of the blocks handed to the writer thread.
const CHUNK: usize = 1 << 20;
/// Blocks in flight: enough to ride out a compressor's bursts.
const IN_FLIGHT: usize = 4;

/// The reading side: collects the archive stream into blocks and sends them on. A block is
/// always `CHUNK` long; `used` says how much of it holds the stream, so reading into it
/// needs no zeroing first.
pub struct Sink {
    buf: Vec<u8>,
    used: usize,
    full: Sender<Vec<u8>>,
    empty: Receiver<Vec<u8>>,
    /// Bytes of the (uncompressed) archive so far.
    written: u64,
}

/// The writing side, run on its own thread by [`run_writer`].
pub struct Writer {
    full: Receiver<Vec<u8>>,
    empty: Sender<Vec<u8>>,
}

/// A connected sink and writer.
pub fn channel() -> (Sink, Writer) {
    let (full_tx, full_rx) = bounded(IN_FLIGHT);
    let (empty_tx, empty_rx) = bounded(IN_FLIGHT + 1);
    for _ in 0..IN_FLIGHT {
        let _ = empty_tx.send(vec![0; CHUNK]);
    }
    (
        Sink {
            buf: vec![0; CHUNK],
            used: 0,
            full: full_tx,
            empty: empty_rx,
            written: 0,
        },
        Writer {
            full: full_rx,
            empty: empty_tx,
        },
    )
}

/// The writer thread stopped (its error is what the caller reports).
fn writer_gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the archive writer stopped")
}

impl Sink {
    /// Bytes of the archive so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Appends `data`.
    pub fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let n = data.len().min(CHUNK - self.used);
            self.buf[self.used..self.used + n].copy_from_slice(&data[..n]);
            self.used += n;
            self.written += n as u64;
            data = &data[n..];
            self.flush_if_full()?;
        }
        Ok(())
    }

    /// Appends `n` zero bytes.
    pub fn zeros(&mut self, mut n: u64) -> io::Result<()> {
        while n > 0 {
            let k = (n as usize).min(CHUNK - self.used);
            self.buf[self.used..self.used + k].fill(0);
            self.used += k;
            self.written += k as u64;
            n -= k as u64;
            self.flush_if_full()?;
        }
        Ok(())
    }

    /// Appends up to `max` bytes that `read` puts into the space it is given (reading
    /// straight into the block, no copy). Returns what `read` returned: 0 at the end.
    pub fn fill<E>(
        &mut self,
        max: u64,
        read: impl FnOnce(&mut [u8]) -> Result<usize, E>,
    ) -> Result<usize, FillError<E>> {
        let start = self.used;
        let n = ((CHUNK - start) as u64).min(max) as usize;
        let got = read(&mut self.buf[start..start + n])
            .map_err(FillError::Read)?
            .min(n);
        self.used += got;
        self.written += got as u64;
        self.flush_if_full().map_err(FillError::Write)?;
        Ok(got)
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.used < CHUNK {
            return Ok(());
        }
        self.send()
    }

    /// Hands the block on (cut to what it holds) and takes a free one.
    fn send(&mut self) -> io::Result<()> {
        let mut next = self.empty.recv().map_err(|_| writer_gone())?;
        // Blocks come back as they were sent: only a short last one needs growing.
        next.resize(CHUNK, 0);
        let mut block = std::mem::replace(&mut self.buf, next);
        block.truncate(self.used);
        self.used = 0;
        self.full.send(block).map_err(|_| writer_gone())
    }

    /// Sends what is left; the writer finishes once the sink is dropped.
    pub fn finish(&mut self) -> io::Result<()> {
        if self.used > 0 {
            self.send()?;
        }
        Ok(())
    }
}

/// Why [`Sink::fill`] failed: reading the source, or writing the archive.
pub enum FillError<E> {
    Read(E),
    Write(io::Error),
}

/// The writer thread's work: compresses and writes every block until the sink is gone,
/// then ends the compressed stream and flushes `out`.
pub fn run_writer(
    writer: Writer,
    out: &mut (dyn Write + Send),
    compression: Compression,
) -> io::Result<()> {
    match compression {
        Compression::None => {
            pump(&writer, &mut *out)?;
        }
        Compression::Gzip(level) => {
            let mut gz = flate2::write::GzEncoder::new(&mut *out, flate2::Compression::new(level));
            pump(&writer, &mut gz)?;
            gz.finish()?;
        }
        #[cfg(feature = "zstd")]
        Compression::Zstd { level, threads } => {
            let mut z = zstd::stream::write::Encoder::new(&mut *out, level)?;
            if threads > 0 {
                z.multithread(threads)?;
            }
            pump(&writer, &mut z)?;
            z.finish()?;
        }
        #[cfg(not(feature = "zstd"))]
        Compression::Zstd { .. } => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this seekless was built without zstd (cargo feature `zstd`)",
            ));
        }
    }
    out.flush()
}

fn pump(writer: &Writer, out: &mut dyn Write) -> io::Result<()> {
    for block in writer.full.iter() {
        out.write_all(&block)?;
        // The sink may already be gone at the end; then the buffer is simply dropped.
        let _ = writer.empty.send(block);
    }
    Ok(())
}
