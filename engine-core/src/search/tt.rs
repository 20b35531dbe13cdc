//! Transposition table shared by all search threads without locks.
//!
//! The table is an array of 64-byte clusters (one cache line), each holding four entries.
//! An entry is two atomics: `key ^ data` and `data`. A reader that sees a torn entry (one
//! word from one writer, the other from another) computes a key that does not match, so a
//! race reads as a miss and never as a wrong position's data.
//!
//! Replacement: a store goes to the entry already holding the same key, else an empty
//! entry, else the entry whose depth minus eight times its age (searches since it was
//! written) is lowest. An existing entry of the same position is only overwritten when
//! the new result is exact, about as deep, or from a newer search, so a shallow
//! re-search does not wipe out a deep bound. Every entry also caches the static
//! evaluation of its position, so a revisit skips the evaluator.

use crate::huge_pages::{HugeArray, ZeroValid};
use crate::rules::Move;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Only the static evaluation is stored.
    None = 0,
    /// The score is an upper bound (the search failed low).
    Upper = 1,
    /// The score is a lower bound (the search failed high).
    Lower = 2,
    Exact = 3,
}

impl Bound {
    /// True if this bound includes `other`'s direction (Exact includes both).
    #[inline]
    pub fn has(self, other: Bound) -> bool {
        (self as u8) & (other as u8) != 0
    }
}

/// Depths stored are `depth - DEPTH_OFFSET` in 8 bits, so quiescence depths (down to
/// `DEPTH_OFFSET + 1`) fit and 0 can mean "empty".
pub const DEPTH_OFFSET: i32 = -8;
/// The depth of entries that only cache a static evaluation.
pub const DEPTH_NONE: i32 = DEPTH_OFFSET + 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtEntry {
    /// Move16 of the best move (0 if none).
    pub move16: u16,
    pub score: i32,
    pub eval: i32,
    pub depth: i32,
    pub bound: Bound,
    /// The position was on a principal variation when stored.
    pub pv: bool,
}

struct Slot {
    key_xor_data: AtomicU64,
    data: AtomicU64,
}

const CLUSTER_SIZE: usize = 4;

#[repr(C, align(64))]
struct Cluster {
    slots: [Slot; CLUSTER_SIZE],
}

/// Generations are 5 bits: they wrap every 32 searches, and ages are taken modulo 32.
const GENERATION_MASK: u8 = 0x1f;

pub struct TranspositionTable {
    memory: ClusterMemory,
    generation: AtomicU8,
}

/// The clusters live on huge pages (see `huge_pages`).
struct ClusterMemory(HugeArray<Cluster>);

// SAFETY: a cluster is four pairs of AtomicU64, valid at zero.
unsafe impl ZeroValid for Cluster {}

impl ClusterMemory {
    fn new(len: usize) -> ClusterMemory {
        ClusterMemory(HugeArray::zeroed(len))
    }

    #[inline]
    fn clusters(&self) -> &[Cluster] {
        &self.0
    }
}

fn pack(e: &TtEntry, generation: u8) -> u64 {
    let depth8 = (e.depth.clamp(DEPTH_OFFSET + 1, DEPTH_OFFSET + 255) - DEPTH_OFFSET) as u64;
    (e.move16 as u64)
        | ((e.score.clamp(-32767, 32767) as i16 as u16 as u64) << 16)
        | ((e.eval.clamp(-32767, 32767) as i16 as u16 as u64) << 32)
        | (depth8 << 48)
        | ((e.bound as u64) << 56)
        | ((e.pv as u64) << 58)
        | (((generation & GENERATION_MASK) as u64) << 59)
}

fn unpack(d: u64) -> TtEntry {
    let bound = match (d >> 56) & 3 {
        0 => Bound::None,
        1 => Bound::Upper,
        2 => Bound::Lower,
        _ => Bound::Exact,
    };
    TtEntry {
        move16: d as u16,
        score: (d >> 16) as u16 as i16 as i32,
        eval: (d >> 32) as u16 as i16 as i32,
        depth: ((d >> 48) & 0xff) as i32 + DEPTH_OFFSET,
        bound,
        pv: (d >> 58) & 1 != 0,
    }
}

#[inline]
fn depth8(d: u64) -> i32 {
    ((d >> 48) & 0xff) as i32
}

#[inline]
fn generation_of(d: u64) -> u8 {
    ((d >> 59) as u8) & GENERATION_MASK
}

impl TranspositionTable {
    /// A table of at most `mib` MiB (a whole number of 64-byte clusters; at least 1 MiB).
    pub fn new(mib: usize) -> TranspositionTable {
        let bytes = mib.max(1) << 20;
        let count = bytes / std::mem::size_of::<Cluster>();
        let tt = TranspositionTable { memory: ClusterMemory::new(count), generation: AtomicU8::new(0) };
        // Touch every page now: the OS maps anonymous memory at first write, and paying
        // those faults inside the first search cost 3-4% of a one-second search.
        tt.clear();
        tt
    }

    pub fn clear(&self) {
        for c in self.memory.clusters() {
            for s in &c.slots {
                s.key_xor_data.store(0, Ordering::Relaxed);
                s.data.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Call once per search so that older entries are replaced first.
    pub fn new_search(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    fn cluster(&self, key: u64) -> &Cluster {
        // The high half of key × count: uniform over any count, not only powers of two.
        let clusters = self.memory.clusters();
        let i = ((key as u128 * clusters.len() as u128) >> 64) as usize;
        &clusters[i]
    }

    /// Starts loading the cluster of `key` into the cache, so that the probe a little
    /// later (after the evaluation update) does not wait for memory.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        crate::prefetch::prefetch(self.cluster(key));
    }

    pub fn probe(&self, key: u64) -> Option<TtEntry> {
        for s in &self.cluster(key).slots {
            let data = s.data.load(Ordering::Relaxed);
            let kx = s.key_xor_data.load(Ordering::Relaxed);
            if data != 0 && kx ^ data == key {
                return Some(unpack(data));
            }
        }
        None
    }

    /// Stores a search result (see the module documentation for what it replaces).
    pub fn store(&self, key: u64, entry: TtEntry) {
        let generation = self.generation.load(Ordering::Relaxed) & GENERATION_MASK;
        let cluster = self.cluster(key);
        let mut target = 0;
        let mut target_worth = i32::MAX;
        let mut same: Option<u64> = None;
        for (i, s) in cluster.slots.iter().enumerate() {
            let data = s.data.load(Ordering::Relaxed);
            let kx = s.key_xor_data.load(Ordering::Relaxed);
            if data == 0 {
                target = i;
                break;
            }
            if kx ^ data == key {
                target = i;
                same = Some(data);
                break;
            }
            let age = (generation.wrapping_sub(generation_of(data)) & GENERATION_MASK) as i32;
            let worth = depth8(data) - 8 * age;
            if worth < target_worth {
                target_worth = worth;
                target = i;
            }
        }
        let mut entry = entry;
        if let Some(old) = same {
            if entry.move16 == 0 {
                entry.move16 = old as u16;
            }
            let new_depth8 = entry.depth - DEPTH_OFFSET;
            let keep_old = entry.bound != Bound::Exact
                && new_depth8 + 2 * entry.pv as i32 <= depth8(old) - 4
                && generation_of(old) == generation;
            if keep_old {
                return;
            }
        }
        let data = pack(&entry, generation);
        let s = &cluster.slots[target];
        s.data.store(data, Ordering::Relaxed);
        s.key_xor_data.store(key ^ data, Ordering::Relaxed);
    }

    /// Permille of the entries of the first 250 clusters written by the current search
    /// (USI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        let generation = self.generation.load(Ordering::Relaxed) & GENERATION_MASK;
        let clusters = self.memory.clusters();
        let sample = clusters.len().min(250);
        let used = clusters[..sample]
            .iter()
            .flat_map(|c| c.slots.iter())
            .filter(|s| {
                let d = s.data.load(Ordering::Relaxed);
                d != 0 && generation_of(d) == generation
            })
            .count();
        (used * 1000 / (sample * CLUSTER_SIZE).max(1)) as u32
    }
}

/// Decodes a stored Move16 into a legal move of `pos`, if it is one.
pub fn tt_move(pos: &crate::rules::Position, move16: u16) -> Option<Move> {
    if move16 == 0 { None } else { pos.move_from_move16(move16) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(move16: u16, score: i32, depth: i32, bound: Bound) -> TtEntry {
        TtEntry { move16, score, eval: -score, depth, bound, pv: false }
    }

    #[test]
    fn store_and_probe_round_trip() {
        let tt = TranspositionTable::new(1);
        let e = TtEntry { move16: 0x1234, score: -31000, eval: 77, depth: 12, bound: Bound::Lower, pv: true };
        tt.store(0xdead_beef_0000_0042, e);
        assert_eq!(tt.probe(0xdead_beef_0000_0042), Some(e));
        assert_eq!(tt.probe(0xdead_beef_0000_0043), None);
        // A shallow non-exact result does not replace a deep one of the same search ...
        tt.store(0xdead_beef_0000_0042, entry(0, 5, -1, Bound::Upper));
        assert_eq!(tt.probe(0xdead_beef_0000_0042), Some(e));
        // ... but an exact one does, keeping the old move when it has none.
        tt.store(0xdead_beef_0000_0042, entry(0, 5, 3, Bound::Exact));
        let got = tt.probe(0xdead_beef_0000_0042).unwrap();
        assert_eq!((got.move16, got.score, got.depth, got.bound), (0x1234, 5, 3, Bound::Exact));
        // Extreme depths survive the 8-bit field.
        tt.store(7, entry(1, 0, DEPTH_NONE, Bound::None));
        assert_eq!(tt.probe(7).unwrap().depth, DEPTH_NONE);
        tt.store(8, entry(1, 0, 200, Bound::Exact));
        assert_eq!(tt.probe(8).unwrap().depth, 200);
    }

    #[test]
    fn a_cluster_keeps_four_positions_and_replaces_the_shallowest_oldest() {
        let tt = TranspositionTable::new(1);
        let n = tt.memory.clusters().len() as u128;
        // Keys mapping to cluster 0: the high half of key × n must be 0.
        let keys: Vec<u64> = (1..=5u64).map(|i| i * 977).collect();
        assert!(keys.iter().all(|&k| (k as u128 * n) >> 64 == 0));
        for (i, &k) in keys[..4].iter().enumerate() {
            tt.store(k, entry(1, i as i32, 10 + i as i32, Bound::Exact));
        }
        for (i, &k) in keys[..4].iter().enumerate() {
            assert_eq!(tt.probe(k).map(|e| e.score), Some(i as i32), "all four stay");
        }
        // A fifth position evicts the shallowest (depth 10, the first key).
        tt.store(keys[4], entry(1, 99, 1, Bound::Exact));
        assert_eq!(tt.probe(keys[0]), None);
        assert_eq!(tt.probe(keys[4]).map(|e| e.score), Some(99));
        // Two searches later the old entries lose 16 of worth: a new shallow entry is kept
        // and an old deeper one (depth 11, worth 19 - 16) goes first.
        tt.new_search();
        tt.new_search();
        tt.store(keys[0], entry(1, 7, 1, Bound::Exact));
        assert_eq!(tt.probe(keys[4]), None, "old depth 1 evicted first");
        tt.store(6 * 977, entry(1, 8, 1, Bound::Exact));
        assert_eq!(tt.probe(keys[1]), None, "old depth 11 is worth less than new depth 1");
        assert_eq!(tt.probe(keys[0]).map(|e| e.score), Some(7));
        assert_eq!(tt.probe(6 * 977).map(|e| e.score), Some(8));
    }

    #[test]
    fn torn_entries_read_as_misses() {
        let tt = TranspositionTable::new(1);
        tt.store(42, entry(3, 10, 4, Bound::Exact));
        let c = tt.cluster(42);
        let s = c.slots.iter().find(|s| s.data.load(Ordering::Relaxed) != 0).unwrap();
        // Another writer's data word without its key word.
        s.data.store(pack(&entry(9, 1, 1, Bound::Lower), 0), Ordering::Relaxed);
        assert_eq!(tt.probe(42), None);
    }

    #[test]
    fn hashfull_counts_this_search_only() {
        let tt = TranspositionTable::new(1);
        assert_eq!(tt.hashfull(), 0);
        for k in 0..200_000u64 {
            tt.store(k.wrapping_mul(0x9e37_79b9_7f4a_7c15), entry(1, 0, 5, Bound::Exact));
        }
        assert!(tt.hashfull() > 900, "{}", tt.hashfull());
        tt.new_search();
        assert_eq!(tt.hashfull(), 0);
    }
}
