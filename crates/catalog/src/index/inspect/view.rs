//! The bytes of one file that the sweep kept: its head and, for a file larger than that,
//! its tail (where MP4 and MOV writers put the `moov` box, and some raw writers their
//! preview). Parsers address the file by offset and learn when a part was not kept.

/// What was kept of one file of `size` bytes: `head` from offset 0, and `tail`, the
/// file's last `tail.len()` bytes. Copy, like the slices it holds.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    size: u64,
}

impl<'a> View<'a> {
    /// A file kept whole.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn whole(data: &'a [u8]) -> Self {
        Self {
            head: data,
            tail: &[],
            size: data.len() as u64,
        }
    }

    /// A file of `size` bytes of which `head` (from offset 0) and `tail` (its last bytes)
    /// were kept. A `head` or `tail` longer than `size` is cut to it.
    pub fn new(head: &'a [u8], tail: &'a [u8], size: u64) -> Self {
        let head = &head[..head.len().min(usize::try_from(size).unwrap_or(usize::MAX))];
        let tail = &tail[tail
            .len()
            .saturating_sub(usize::try_from(size).unwrap_or(usize::MAX))..];
        Self { head, tail, size }
    }

    /// The file's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The bytes from offset 0 that were kept.
    pub fn head(&self) -> &'a [u8] {
        self.head
    }

    /// Whether every byte of the file was kept (in the head).
    pub fn complete(&self) -> bool {
        self.head.len() as u64 == self.size
    }

    /// The `len` bytes at offset `at`, if they lie wholly in what was kept; `None` when
    /// they reach past the end of the file or into the part not kept.
    pub fn get(&self, at: u64, len: u64) -> Option<&'a [u8]> {
        let end = at.checked_add(len)?;
        if end > self.size {
            return None;
        }
        if end <= self.head.len() as u64 {
            return self.head.get(at as usize..end as usize);
        }
        let tail_at = self.size - self.tail.len() as u64;
        if at >= tail_at {
            return self
                .tail
                .get((at - tail_at) as usize..(end - tail_at) as usize);
        }
        None
    }

    /// The bytes from `at` to `end`, cut to what was kept contiguously from `at` (for
    /// scanning a region whose end may not have been kept).
    pub fn get_upto(&self, at: u64, end: u64) -> &'a [u8] {
        let end = end.min(self.size);
        if at >= end {
            return &[];
        }
        if at < self.head.len() as u64 {
            return &self.head[at as usize..end.min(self.head.len() as u64) as usize];
        }
        let tail_at = self.size - self.tail.len() as u64;
        if at >= tail_at {
            return &self.tail[(at - tail_at) as usize..(end - tail_at) as usize];
        }
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_found_in_the_head_or_the_tail_and_never_across_the_gap() {
        let file: Vec<u8> = (0..100u8).collect();
        let v = View::new(&file[..10], &file[90..], 100);
        assert_eq!(v.get(2, 3), Some(&file[2..5]));
        assert_eq!(v.get(95, 5), Some(&file[95..100]));
        assert_eq!(v.get(8, 4), None, "across the head's end");
        assert_eq!(v.get(50, 1), None, "not kept");
        assert_eq!(v.get(99, 2), None, "past the end");
        assert_eq!(v.get(u64::MAX, 2), None);
        assert_eq!(v.get_upto(5, 50), &file[5..10]);
        assert_eq!(v.get_upto(92, 500), &file[92..]);
        assert!(!v.complete());
        assert!(View::whole(&file).complete());
        let overlapping = View::new(&file[..60], &file[40..], 100);
        assert_eq!(overlapping.get(50, 30), Some(&file[50..80]));
    }
}
