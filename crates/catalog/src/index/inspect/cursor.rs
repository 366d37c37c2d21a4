//! A position in a byte slice that reads big- and little-endian integers forward, each
//! read `None` once the slice runs out (the box and chunk payloads of the container
//! parsers, read field by field).

/// Reads forward from `at` in `data`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(data: &'a [u8]) -> Self {
        Self { data, at: 0 }
    }

    /// How far it has read.
    pub(super) fn at(&self) -> usize {
        self.at
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(bytes)
    }

    pub(super) fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    pub(super) fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|b| b[0])
    }

    pub(super) fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_be_bytes)
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_be_bytes)
    }

    pub(super) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_be_bytes)
    }

    pub(super) fn u32_le(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    /// A big-endian unsigned integer of `n` bytes (0 to 8; 0 reads nothing and is 0), as
    /// ISO BMFF's `iloc` sizes its fields.
    pub(super) fn uint(&mut self, n: usize) -> Option<u64> {
        if n > 8 {
            return None;
        }
        let bytes = self.take(n)?;
        Some(bytes.iter().fold(0, |v, &b| (v << 8) | u64::from(b)))
    }

    /// A four-character code.
    pub(super) fn fourcc(&mut self) -> Option<[u8; 4]> {
        self.array()
    }
}

/// A four-character code as text (`hvc1`), trailing spaces and NULs dropped; `None` when
/// it is not printable ASCII.
pub(super) fn fourcc_text(code: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(code).ok()?;
    let text = text.trim_end_matches([' ', '\0']);
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic() || b == b' '))
        .then(|| text.to_string())
}
