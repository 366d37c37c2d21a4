//! Multi-index hashing: every pair of 64-bit hashes within a Hamming distance `n`, without
//! comparing all pairs.
//!
//! Pigeonhole, two ways:
//!
//! - **`n ≤ 6`: shared bytes.** `n` differing bits touch at most `n` of the 8 bytes, so a
//!   pair within `n` agrees exactly on at least `8 - n ≥ 2` bytes. The hashes are bucketed
//!   by each of the 28 pairs of byte positions (a 16-bit key: with a million random hashes
//!   a bucket holds ~15, so a table costs ~7 million comparisons, not the 5 × 10¹¹ of all
//!   pairs), and only hashes in one bucket are compared.
//! - **`7 ≤ n < 20`: near chunks.** At `n = 7` a single shared byte is all that is certain,
//!   and single-byte buckets are 256 times larger (a million hashes took 77 s). Instead the
//!   64 bits are cut into four 16-bit chunks: the `n` differing bits spread over four
//!   chunks leave one chunk within `r = ⌊n / 4⌋` bits. Each of the four tables is bucketed
//!   by its chunk, and each hash looks in every bucket whose key is within `r` bits of its
//!   own (17 buckets at `r = 1`, 137 at `r = 2`, 697 at `r = 3`, 2517 at `r = 4`).
//! - `n = 0` is a sort; from `n = 20` on (pHash distances that no longer mean "the same
//!   picture") every pair is compared.
//!
//! Tables are built one at a time (a counting sort of (hash, index) by the key: 12 bytes a
//! hash, and 256 KiB of bucket starts), so memory stays at one table whatever `n`. A pair
//! met in several tables is reported only from the first of them (the lowest byte
//! positions it agrees on; the lowest chunk within `r`), so every pair is reported exactly
//! once.

/// Calls `found(i, j)` (indices into `hashes`, `i < j`) exactly once for every pair whose
/// hashes differ in at most `n` bits.
pub fn pairs_within(hashes: &[u64], n: u32, mut found: impl FnMut(usize, usize)) {
    assert!(hashes.len() < u32::MAX as usize, "at most 2^32 - 1 hashes");
    if hashes.len() < 2 {
        return;
    }
    match n {
        0 => equal_runs(hashes, &mut found),
        1..=6 => {
            let mut table = Table::new(hashes.len());
            let byte = |h: u64, i: u32| ((h >> (56 - 8 * i)) & 0xff) as u32;
            for a in 0..8 {
                for b in a + 1..8 {
                    table.fill(hashes, |h| (byte(h, a) << 8) | byte(h, b));
                    let first = |x: u64| first_equal_bytes(x) == (a, b);
                    table.pairs(n, first, &mut found);
                }
            }
        }
        7..=19 => {
            let mut table = Table::new(hashes.len());
            let r = n / 4;
            let masks: Vec<u32> = (0..1u32 << 16).filter(|m| m.count_ones() <= r).collect();
            let chunk = |h: u64, i: u32| ((h >> (48 - 16 * i)) & 0xffff) as u32;
            for k in 0..4 {
                table.fill(hashes, |h| chunk(h, k));
                let first = |x: u64| (0..4).find(|&i| chunk(x, i).count_ones() <= r) == Some(k);
                table.probe(n, &masks, first, &mut found);
            }
        }
        _ => {
            for j in 1..hashes.len() {
                for i in 0..j {
                    if (hashes[i] ^ hashes[j]).count_ones() <= n {
                        found(i, j);
                    }
                }
            }
        }
    }
}

/// The first two byte positions (0: the most significant) at which `x` (the XOR of two
/// hashes) is zero, `(8, 8)` where there are fewer.
fn first_equal_bytes(x: u64) -> (u32, u32) {
    let mut zero = (0..8).filter(|&i| (x >> (56 - 8 * i)) & 0xff == 0);
    let a = zero.next().unwrap_or(8);
    (a, zero.next().unwrap_or(8))
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

    /// Sorts `hashes` into the table by their 16-bit `key`.
    fn fill(&mut self, hashes: &[u64], key: impl Fn(u64) -> u32) {
        let buckets = 1usize << 16;
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

impl Table {
    /// Every pair within `n` whose keys are within one of `masks` of each other (each hash
    /// looks in the buckets of its key XOR every mask) and that `first` says is met first
    /// in this table.
    fn probe(
        &self,
        n: u32,
        masks: &[u32],
        first: impl Fn(u64) -> bool,
        found: &mut impl FnMut(usize, usize),
    ) {
        for w in 0..self.starts.len() - 1 {
            for p in self.starts[w] as usize..self.starts[w + 1] as usize {
                let (hp, ip) = (self.hashes[p], self.index[p]);
                for &m in masks {
                    let key = w ^ m as usize;
                    for q in self.starts[key] as usize..self.starts[key + 1] as usize {
                        // Each pair is met from both ends: kept from the lower index.
                        let iq = self.index[q];
                        if iq <= ip {
                            continue;
                        }
                        let x = hp ^ self.hashes[q];
                        if x.count_ones() <= n && first(x) {
                            found(ip as usize, iq as usize);
                        }
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
    fn distances_of_seven_and_more_probe_near_chunks_and_stay_exact() {
        let mut rng = Rng(42);
        let h = hashes(&mut rng, 1500);
        for n in [7, 8, 11, 12, 19, 20, 63, 64] {
            assert_eq!(mih(&h, n), brute(&h, n), "n = {n}");
        }
    }

    #[test]
    fn first_equal_bytes_counts_from_the_most_significant() {
        assert_eq!(first_equal_bytes(0), (0, 1));
        assert_eq!(first_equal_bytes(0xff00_0000_0000_0000), (1, 2));
        assert_eq!(first_equal_bytes(0xffff_ffff_ffff_ff00), (7, 8));
        assert_eq!(first_equal_bytes(u64::MAX), (8, 8));
    }
}
