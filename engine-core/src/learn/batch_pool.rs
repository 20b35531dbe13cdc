//! A worker's batch pool: each shard's gradient is computed over a random sample of the
//! worker's recent teacher records (the shard's own included), not over the shard's games
//! alone.
//!
//! Why: a self-play shard is a few dozen games, so its positions are strongly correlated,
//! and one AdaGrad step per shard then follows those games. Learning the same 2.25 M
//! records offline, batches drawn through a shuffle buffer gave +283 Elo over material where
//! batches in shard order gave +157 (BENCHMARKS.md, "Shuffled batches online"). The pool
//! gives the online run the same mixing without moving records over the network: +226
//! instead of +155 in the one-CPU-hour recipe.

use crate::rng::SplitMix64;
use crate::teacher::psv::PackedSfenValue;

/// The newest `capacity` records, as a ring.
#[derive(Debug, Default)]
pub struct BatchPool {
    records: Vec<PackedSfenValue>,
    /// Where the next record goes once the ring is full.
    next: usize,
    capacity: usize,
}

impl BatchPool {
    /// The largest pool a lease may ask for: 640 MB of records.
    pub const MAX_RECORDS: usize = 16 << 20;
    /// The most records a lease may have drawn per record its shard made.
    pub const MAX_DRAWS: u32 = 8;

    /// A pool of `capacity` records, at most `MAX_RECORDS` (the capacity comes over the
    /// network).
    pub fn new(capacity: usize) -> BatchPool {
        BatchPool { records: Vec::new(), next: 0, capacity: capacity.min(Self::MAX_RECORDS) }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keeps the records if `capacity` (capped as in `new`) is the current one, else starts
    /// an empty pool of that capacity.
    pub fn set_capacity(&mut self, capacity: usize) {
        if capacity.min(Self::MAX_RECORDS) != self.capacity {
            *self = BatchPool::new(capacity);
        }
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Adds records, overwriting the oldest once `capacity` are held.
    pub fn push(&mut self, new: impl IntoIterator<Item = PackedSfenValue>) {
        if self.capacity == 0 {
            return;
        }
        for r in new {
            if self.records.len() < self.capacity {
                self.records.push(r);
            } else {
                self.records[self.next] = r;
                self.next = (self.next + 1) % self.capacity;
            }
        }
    }

    /// `n` distinct records (all of them if fewer are held), chosen uniformly by `seed`.
    pub fn sample(&self, n: usize, seed: u64) -> Vec<PackedSfenValue> {
        let len = self.records.len();
        let n = n.min(len);
        // Partial Fisher-Yates over the indices: the first n are a uniform sample.
        let mut order: Vec<u32> = (0..len as u32).collect();
        let mut rng = SplitMix64::new(seed);
        for i in 0..n {
            let j = i + rng.below(len - i);
            order.swap(i, j);
        }
        order[..n].iter().map(|&i| self.records[i as usize]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tag: i16) -> PackedSfenValue {
        PackedSfenValue { score: tag, ..Default::default() }
    }

    fn tags(rs: &[PackedSfenValue]) -> Vec<i16> {
        rs.iter().map(|r| r.score).collect()
    }

    #[test]
    fn the_ring_keeps_the_newest_records() {
        let mut b = BatchPool::new(4);
        b.push((0..3).map(record));
        assert_eq!(b.len(), 3);
        b.push((3..7).map(record));
        assert_eq!(b.len(), 4);
        let mut held = tags(&b.sample(10, 1));
        held.sort();
        assert_eq!(held, vec![3, 4, 5, 6]);
    }

    #[test]
    fn samples_are_distinct_reproducible_and_reach_old_records() {
        let mut b = BatchPool::new(1000);
        b.push((0..1000).map(record));
        let s = tags(&b.sample(100, 7));
        assert_eq!(s, tags(&b.sample(100, 7)));
        assert_ne!(s, tags(&b.sample(100, 8)));
        let mut d = s.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), 100, "no record twice in one sample");
        // Uniform: about half from the older half of the buffer.
        let old = s.iter().filter(|&&t| t < 500).count();
        assert!((30..=70).contains(&old), "{old} of 100 from the older half");
    }

    #[test]
    fn a_capacity_from_the_network_is_capped() {
        assert_eq!(BatchPool::new(usize::MAX).capacity(), BatchPool::MAX_RECORDS);
        assert_eq!(BatchPool::new(5).capacity(), 5);
    }

    #[test]
    fn the_same_capacity_keeps_the_records_and_another_starts_afresh() {
        let mut b = BatchPool::new(usize::MAX);
        b.push([record(1)]);
        b.set_capacity(BatchPool::MAX_RECORDS + 1);
        assert_eq!(b.len(), 1, "the same capacity once capped");
        b.set_capacity(10);
        assert!(b.is_empty());
        assert_eq!(b.capacity(), 10);
    }

    #[test]
    fn capacity_zero_holds_nothing() {
        let mut b = BatchPool::new(0);
        b.push([record(1)]);
        assert!(b.is_empty());
        assert!(b.sample(5, 1).is_empty());
    }
}
