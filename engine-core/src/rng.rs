//! Seeded pseudo-random numbers, one home for every crate: the SplitMix64 mixer and the two
//! generators built on it. Every stream is fixed by its seed (tests pin search signatures,
//! shuffles and training runs), so nothing here may change its output.
//!
//! - [`mix64`]: SplitMix64's output function, a stateless 64-bit hash (seeds, noise).
//! - [`SplitMix64`]: the generator whose whole state is one `u64` (the learner's shuffle
//!   keeps it in checkpoints).
//! - [`Xoshiro256`]: xoshiro256** (public-domain algorithm by Blackman and Vigna), seeded
//!   through `mix64`; a longer period for self-play's random moves.

/// SplitMix64's increment (2^64 / φ, odd).
pub const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function applied to `z + GOLDEN_GAMMA`: a strong 64-bit mixer.
#[inline]
pub const fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(GOLDEN_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Uniform in `0..n` from a 64-bit draw (multiply-shift; bias below 2^-50 for small `n`).
#[inline]
fn below(draw: u64, n: usize) -> usize {
    debug_assert!(n > 0);
    ((draw as u128 * n as u128) >> 64) as usize
}

/// SplitMix64: small, fast, and its whole state is one `u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub const fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub const fn next_u64(&mut self) -> u64 {
        let out = mix64(self.0);
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        out
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        below(self.next_u64(), n)
    }
}

/// xoshiro256**, its four words seeded from `mix64` of consecutive SplitMix64 states.
#[derive(Clone, Debug)]
pub struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    pub fn new(seed: u64) -> Xoshiro256 {
        let mut seeder = SplitMix64::new(seed);
        Xoshiro256 { s: std::array::from_fn(|_| seeder.next_u64()) }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        below(self.next_u64(), n)
    }

    /// `k` indices of `0..n` in random order, distinct while `k <= n`; beyond that, another
    /// shuffle of all `n` follows, and so on (empty when `n` is 0).
    pub fn distinct_indices(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(k);
        if n == 0 {
            return out;
        }
        // A partial Fisher-Yates shuffle of the pool 0..n, kept sparse (only the slots a
        // swap touched are stored): a shard takes 64 of 10,831 openings, and the pool
        // would cost O(n) per shard.
        let mut moved: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        while out.len() < k {
            let take = (k - out.len()).min(n);
            for i in 0..take {
                let j = i + self.below(n - i);
                let (at_i, at_j) = (*moved.get(&i).unwrap_or(&i), *moved.get(&j).unwrap_or(&j));
                moved.insert(i, at_j);
                moved.insert(j, at_i);
                out.push(at_j);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published SplitMix64 outputs for seed 0 (the reference implementation's first
    /// three values), and the stateless mixer agreeing with the generator.
    #[test]
    fn splitmix64_matches_the_reference_stream() {
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(r.next_u64(), 0x06c4_5d18_8009_454f);
        assert_eq!(mix64(0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(mix64(GOLDEN_GAMMA), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn distinct_indices_match_a_dense_shuffle() {
        fn dense(rng: &mut Xoshiro256, n: usize, k: usize) -> Vec<usize> {
            let mut out = Vec::new();
            let mut pool: Vec<usize> = (0..n).collect();
            while n > 0 && out.len() < k {
                for i in 0..(k - out.len()).min(n) {
                    let j = i + rng.below(n - i);
                    pool.swap(i, j);
                    out.push(pool[i]);
                }
            }
            out
        }
        for (n, k) in [(64, 40), (64, 64), (10, 25), (1, 3), (10_831, 64), (0, 4), (7, 0)] {
            let (mut a, mut b) = (Xoshiro256::new(n as u64 ^ 99), Xoshiro256::new(n as u64 ^ 99));
            assert_eq!(a.distinct_indices(n, k), dense(&mut b, n, k), "n {n} k {k}");
        }
    }

    #[test]
    fn distinct_indices_repeat_only_after_all_are_drawn() {
        let mut rng = Xoshiro256::new(7);
        for (n, k) in [(64, 40), (64, 64), (10, 25), (1, 3), (10_831, 64)] {
            let v = rng.distinct_indices(n, k);
            assert_eq!(v.len(), k);
            assert!(v.iter().all(|&i| i < n));
            for (c, chunk) in v.chunks(n).enumerate() {
                let mut sorted = chunk.to_vec();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), chunk.len(), "n {n} k {k}: a repeat inside round {c}");
            }
        }
        assert!(rng.distinct_indices(0, 5).is_empty());
        // Every index is drawn first about equally often.
        let mut first = [0u32; 8];
        for _ in 0..8000 {
            first[rng.distinct_indices(8, 3)[0]] += 1;
        }
        assert!(first.iter().all(|&c| (850..1150).contains(&c)), "{first:?}");
    }

    #[test]
    fn below_stays_in_range() {
        let mut a = SplitMix64::new(7);
        let mut b = Xoshiro256::new(7);
        for n in [1, 2, 3, 10, 1000] {
            for _ in 0..100 {
                assert!(a.below(n) < n);
                assert!(b.below(n) < n);
            }
        }
    }
}
