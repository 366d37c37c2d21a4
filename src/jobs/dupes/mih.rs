//! Multi-index hashing: every pair of 64-bit hashes within a Hamming distance, without
//! comparing all pairs.
//!
//! Pigeonhole: cut the 64 bits into `m` chunks. `n` differing bits touch at most `n`
//! chunks, so two hashes within `n` agree exactly on at least `m - n` of them. For
//! `n < 8` the chunks are the 8 bytes, so a pair within `n` shares at least `8 - n` bytes
//! exactly; for `n ≤ 6` that is at least two, and the hashes are bucketed by each of the
//! 28 pairs of byte positions (a 16-bit key: with a million random hashes a bucket holds
//! ~15, so a table costs ~7 million comparisons instead of 5 × 10¹¹ for all pairs); for
//! `n = 7` by each single byte (one shared byte is all that is certain: buckets 256 times
//! larger). For `n ≥ 8` the 64 bits are cut into `n + 1` chunks of nearly equal width, one
//! of which must agree: correct at any `n`, but the buckets grow fast (pHash distances
//! that large no longer mean "the same picture"). `n = 0` is a sort.
//!
//! Tables are built one at a time (a counting sort of (hash, index) by the key: 12 bytes a
//! hash), so memory stays at one table whatever `n`. A pair that agrees on several keys is
//! met in several tables; it is reported only from the first of them (the lowest chunk
//! positions it agrees on), so every pair is reported exactly once.

/// Calls `found(i, j)` (indices into `hashes`, `i < j`) exactly once for every pair whose
/// hashes differ in at most `n` bits.
pub fn pairs_within(hashes: &[u64], n: u32, mut found: impl FnMut(usize, usize)) {
    assert!(hashes.len() < u32::MAX as usize, "at most 2^32 - 1 hashes");
    if hashes.len() < 2 {
        return;
    }
    if n == 0 {
        return equal_runs(hashes, &mut found);
    }
    if n >= 64 {
        for j in 1..hashes.len() {
            for i in 0..j {
                found(i, j);
            }
        }
        return;
    }
    let chunks = Chunks::for_distance(n);
    let m = chunks.widths.len();
    let mut table = Table::new(hashes.len());
    if chunks.need == 2 {
        for a in 0..m {
            for b in a + 1..m {
                let key = |h: u64| (chunks.get(h, a) << chunks.widths[b]) | chunks.get(h, b);
                table.fill(hashes, key, chunks.widths[a] + chunks.widths[b]);
                table.pairs(n, |x| chunks.first_equal(x, 2) == [a, b], &mut found);
            }
        }
    } else {
        for a in 0..m {
            table.fill(hashes, |h| chunks.get(h, a), chunks.widths[a]);
            table.pairs(n, |x| chunks.first_equal(x, 1)[0] == a, &mut found);
        }
    }
}

/// Pairs of equal hashes: sorted, each run of equal ones paired.
fn equal_runs(hashes: &[u64], found: &mut impl FnMut(usize, usize)) {
    let mut order: Vec<(u64, u32)> = hashes
        .iter()
        .enumerate()
        .map(|(i, &h)| (h, i as u32))
        .collect();
    order.sort_unstable();
    for run in order.chunk_by(|a, b| a.0 == b.0) {
        for (k, &(_, j)) in run.iter().enumerate() {
            for &(_, i) in &run[..k] {
                found(i.min(j) as usize, i.max(j) as usize);
            }
        }
    }
}

/// How the 64 bits are cut, and how many chunks a key is made of.
struct Chunks {
    /// Widths in bits, from the most significant end.
    widths: Vec<u32>,
    /// Shift of each chunk's least significant bit.
    shifts: Vec<u32>,
    /// Chunks per key: 2 where the pigeonhole promises two equal chunks, else 1.
    need: usize,
}

impl Chunks {
    fn for_distance(n: u32) -> Chunks {
        let (m, need) = if n < 8 {
            (8u32, if n <= 6 { 2 } else { 1 })
        } else {
            (n + 1, 1)
        };
        // Widths as even as they go: the first 64 % m chunks one bit wider.
        let widths: Vec<u32> = (0..m).map(|i| 64 / m + u32::from(i < 64 % m)).collect();
        let mut shifts = Vec::with_capacity(widths.len());
        let mut top = 64;
        for &w in &widths {
            top -= w;
            shifts.push(top);
        }
        Chunks {
            widths,
            shifts,
            need,
        }
    }

    fn get(&self, h: u64, i: usize) -> u32 {
        ((h >> self.shifts[i]) & ((1u64 << self.widths[i]) - 1)) as u32
    }

    /// The first `k` chunk positions at which `x` (the XOR of two hashes) is zero; positions
    /// past the last chunk where fewer are.
    fn first_equal(&self, x: u64, k: usize) -> [usize; 2] {
        let mut out = [usize::MAX; 2];
        let mut got = 0;
        for i in 0..self.widths.len() {
            if self.get(x, i) == 0 {
                out[got] = i;
                got += 1;
                if got == k {
                    break;
                }
            }
        }
        out
    }
}

/// One bucketed table: hashes and their indices, sorted by key (a counting sort).
struct Table {
    starts: Vec<u32>,
    hashes: Vec<u64>,
    index: Vec<u32>,
}

impl Table {
    fn new(len: usize) -> Table {
        Table {
            starts: Vec::new(),
            hashes: vec![0; len],
            index: vec![0; len],
        }
    }

    fn fill(&mut self, hashes: &[u64], key: impl Fn(u64) -> u32, bits: u32) {
        let buckets = 1usize << bits;
        self.starts.clear();
        self.starts.resize(buckets + 1, 0);
        for &h in hashes {
            self.starts[key(h) as usize + 1] += 1;
        }
        for b in 0..buckets {
            self.starts[b + 1] += self.starts[b];
        }
        // `next` borrows the starts shifted by one bucket: filled, it equals the ends.
        let mut next = self.starts.clone();
        for (i, &h) in hashes.iter().enumerate() {
            let slot = &mut next[key(h) as usize];
            self.hashes[*slot as usize] = h;
            self.index[*slot as usize] = i as u32;
            *slot += 1;
        }
    }

    /// Every pair within a bucket that is within `n` and that `first` says is met first
    /// in this table.
    fn pairs(&self, n: u32, first: impl Fn(u64) -> bool, found: &mut impl FnMut(usize, usize)) {
        for w in self.starts.windows(2) {
            let (s, e) = (w[0] as usize, w[1] as usize);
            for p in s..e {
                let hp = self.hashes[p];
                for q in p + 1..e {
                    let x = hp ^ self.hashes[q];
                    if x.count_ones() <= n && first(x) {
                        let (i, j) = (self.index[p], self.index[q]);
                        found(i.min(j) as usize, i.max(j) as usize);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: reproducible random hashes without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// Random hashes, a third of them near copies (1 to 9 bits flipped) of earlier ones, some
    /// exact copies: pairs at every distance around the thresholds.
    fn hashes(rng: &mut Rng, len: usize) -> Vec<u64> {
        let mut v: Vec<u64> = Vec::with_capacity(len);
        for i in 0..len {
            if i > 0 && rng.next().is_multiple_of(3) {
                let mut h = v[(rng.next() % i as u64) as usize];
                for _ in 0..rng.next() % 10 {
                    h ^= 1 << (rng.next() % 64);
                }
                v.push(h);
            } else {
                v.push(rng.next());
            }
        }
        v
    }

    fn brute(hashes: &[u64], n: u32) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for j in 0..hashes.len() {
            for i in 0..j {
                if (hashes[i] ^ hashes[j]).count_ones() <= n {
                    out.push((i, j));
                }
            }
        }
        out.sort_unstable();
        out
    }

    fn mih(hashes: &[u64], n: u32) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        pairs_within(hashes, n, |i, j| out.push((i, j)));
        let len = out.len();
        out.sort_unstable();
        out.dedup();
        assert_eq!(out.len(), len, "a pair was reported twice at n = {n}");
        out
    }

    #[test]
    fn every_pair_within_n_is_found_once_as_brute_force_finds_it() {
        let mut rng = Rng(0x5eed_1e55);
        for n in 0..=7 {
            for len in [0, 1, 2, 50, 3000] {
                let h = hashes(&mut rng, len);
                let want = brute(&h, n);
                assert_eq!(mih(&h, n), want, "n = {n}, {len} hashes");
                if len == 3000 {
                    assert!(want.len() > 50, "the set has pairs to find at n = {n}");
                }
            }
        }
    }

    #[test]
    fn distances_of_eight_and_more_cut_into_more_chunks_and_stay_exact() {
        let mut rng = Rng(42);
        let h = hashes(&mut rng, 1500);
        for n in [8, 9, 12, 20, 63, 64] {
            assert_eq!(mih(&h, n), brute(&h, n), "n = {n}");
        }
    }

    #[test]
    fn chunks_cover_all_64_bits() {
        for n in 1..40 {
            let c = Chunks::for_distance(n);
            assert_eq!(c.widths.iter().sum::<u32>(), 64, "n = {n}");
            assert_eq!(*c.shifts.last().unwrap(), 0);
            assert!(
                c.widths.iter().all(|&w| w <= 16),
                "keys index a table of 2^16"
            );
        }
    }
}
