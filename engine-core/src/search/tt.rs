//! Transposition table: a power-of-two array of two-word entries. Each entry stores
//! `key ^ data` and `data` in two atomics, so threads can share the table without locks: a
//! torn entry fails the key check and reads as a miss.

use crate::rules::Move;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Exact = 0,
    Lower = 1,
    Upper = 2,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TtEntry {
    /// Move16 of the best move (0 if none).
    pub move16: u16,
    pub score: i32,
    pub eval: i32,
    pub depth: i32,
    pub bound: Bound,
}

struct Slot {
    key_xor_data: AtomicU64,
    data: AtomicU64,
}

pub struct TranspositionTable {
    slots: Vec<Slot>,
    mask: usize,
    generation: AtomicU8,
}

fn pack(e: &TtEntry, generation: u8) -> u64 {
    (e.move16 as u64)
        | ((e.score as i16 as u16 as u64) << 16)
        | ((e.eval as i16 as u16 as u64) << 32)
        | (((e.depth.clamp(-1, 254) + 1) as u64) << 48)
        | ((e.bound as u64) << 56)
        | ((generation as u64 & 0x3f) << 58)
}

fn unpack(d: u64) -> (TtEntry, u8) {
    let bound = match (d >> 56) & 3 {
        0 => Bound::Exact,
        1 => Bound::Lower,
        _ => Bound::Upper,
    };
    (
        TtEntry {
            move16: d as u16,
            score: (d >> 16) as u16 as i16 as i32,
            eval: (d >> 32) as u16 as i16 as i32,
            depth: ((d >> 48) & 0xff) as i32 - 1,
            bound,
        },
        ((d >> 58) & 0x3f) as u8,
    )
}

impl TranspositionTable {
    /// A table of about `mib` MiB (rounded down to a power of two of entries; at least 1).
    pub fn new(mib: usize) -> TranspositionTable {
        let bytes = mib.max(1) << 20;
        let count = (bytes / std::mem::size_of::<Slot>()).next_power_of_two() / 2;
        let count = count.max(1024);
        let slots =
            (0..count).map(|_| Slot { key_xor_data: AtomicU64::new(0), data: AtomicU64::new(0) }).collect();
        TranspositionTable { slots, mask: count - 1, generation: AtomicU8::new(0) }
    }

    pub fn clear(&self) {
        for s in &self.slots {
            s.key_xor_data.store(0, Ordering::Relaxed);
            s.data.store(0, Ordering::Relaxed);
        }
    }

    /// Call once per search so that older entries are replaced first.
    pub fn new_search(&self) {
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    pub fn probe(&self, key: u64) -> Option<TtEntry> {
        let s = &self.slots[key as usize & self.mask];
        let data = s.data.load(Ordering::Relaxed);
        let kx = s.key_xor_data.load(Ordering::Relaxed);
        if data != 0 && kx ^ data == key { Some(unpack(data).0) } else { None }
    }

    /// Stores unless a deeper entry of the current search for another position sits there.
    pub fn store(&self, key: u64, entry: TtEntry) {
        let s = &self.slots[key as usize & self.mask];
        let generation = self.generation.load(Ordering::Relaxed);
        let old = s.data.load(Ordering::Relaxed);
        let old_key = s.key_xor_data.load(Ordering::Relaxed) ^ old;
        if old != 0 && old_key != key {
            let (prev, prev_gen) = unpack(old);
            if prev_gen == generation & 0x3f && prev.depth > entry.depth + 2 {
                return;
            }
        }
        let mut entry = entry;
        if entry.move16 == 0 && old != 0 && old_key == key {
            entry.move16 = unpack(old).0.move16;
        }
        let data = pack(&entry, generation);
        s.data.store(data, Ordering::Relaxed);
        s.key_xor_data.store(key ^ data, Ordering::Relaxed);
    }

    /// Permille of the first 1000 slots in use by the current search (USI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        let generation = self.generation.load(Ordering::Relaxed) & 0x3f;
        self.slots
            .iter()
            .take(1000)
            .filter(|s| {
                let d = s.data.load(Ordering::Relaxed);
                d != 0 && unpack(d).1 == generation
            })
            .count() as u32
    }
}

/// Decodes a stored Move16 into a legal move of `pos`, if it is one.
pub fn tt_move(pos: &crate::rules::Position, move16: u16) -> Option<Move> {
    if move16 == 0 { None } else { pos.move_from_move16(move16) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_and_probe_round_trip() {
        let tt = TranspositionTable::new(1);
        let e = TtEntry { move16: 0x1234, score: -31000, eval: 77, depth: 12, bound: Bound::Lower };
        tt.store(0xdead_beef_0000_0042, e);
        assert_eq!(tt.probe(0xdead_beef_0000_0042), Some(e));
        assert_eq!(tt.probe(0xdead_beef_0000_0043), None);
        let q = TtEntry { move16: 0, score: 5, eval: -5, depth: -1, bound: Bound::Upper };
        tt.store(0xdead_beef_0000_0042, q);
        assert_eq!(tt.probe(0xdead_beef_0000_0042).unwrap().move16, 0x1234, "keeps the old move");
        assert_eq!(tt.probe(0xdead_beef_0000_0042).unwrap().depth, -1);
    }
}
