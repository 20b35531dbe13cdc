//! A pattern set compiled for speed: a flat array of instances (one per absolute pattern,
//! two per side-relative one: for Black to move and for White to move), and an index from
//! every (piece, square) to the instances containing it.
//!
//! The differential update keeps, per instance, how many of its triples stand on the board
//! (`PatternCounts`). A move takes a piece off `from` (and a captured one off `to`) and
//! puts one on `to`: the instances in those index buckets get their count decremented or
//! incremented, and an instance whose count leaves or reaches its size subtracts or adds
//! its weight. So a move costs one byte update per index entry of the pieces that moved,
//! and nothing is re-matched. A full computation matches each instance against the board
//! with its square bitboard (one AND/compare) and its pieces.

use super::pattern::{MAX_PATTERN_SIZE, Pattern};
use crate::rules::{Bitboard, Color, MoveDelta, Piece, Position, Square};

const PIECE_CODES: usize = 32;

/// Instance kinds: which sum an instance adds to.
const ABSOLUTE: u8 = 0;
const FOR_BLACK_TO_MOVE: u8 = 1;
const FOR_WHITE_TO_MOVE: u8 = 2;

#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Instance {
    squares: Bitboard,
    pieces: [u8; MAX_PATTERN_SIZE],
    sqs: [u8; MAX_PATTERN_SIZE],
    len: u8,
    kind: u8,
    pattern: u32,
}

impl Instance {
    #[inline]
    fn satisfied(&self, pos: &Position) -> u8 {
        (0..self.len as usize)
            .filter(|&k| {
                pos.piece_on(Square::from_index(self.sqs[k] as usize)).code() == self.pieces[k] as usize
            })
            .count() as u8
    }

    #[inline]
    fn matches(&self, pos: &Position) -> bool {
        (pos.occupied() & self.squares) == self.squares && self.satisfied(pos) == self.len
    }
}

/// Pattern sums in FV_SCALE units: [absolute (Black's view), side-relative for Black to
/// move, side-relative for White to move] (the last two from the side to move's view).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PatternSums(pub [i32; 3]);

impl PatternSums {
    /// The value from the side to move's view.
    #[inline]
    pub fn value(&self, stm: Color) -> i32 {
        match stm {
            Color::Black => self.0[0] + self.0[1],
            Color::White => -self.0[0] + self.0[2],
        }
    }
}

/// Per-instance count of the triples on the board (part of a game's evaluation state).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatternCounts(Vec<u8>);

#[derive(Clone, Debug)]
pub struct PatternSet {
    patterns: Vec<Pattern>,
    weights: Vec<i32>,
    instances: Vec<Instance>,
    /// Per instance, its pattern's weight (kept in step by `set_weight`), so the update
    /// loop needs one array.
    inst_weight: Vec<i32>,
    /// CSR index: entries for (piece code, square) are
    /// `index_ids[index_start[c*81+sq] .. index_start[c*81+sq+1]]`; an entry packs the
    /// instance id, its size and its kind (`pack_entry`).
    index_start: Vec<u32>,
    index_ids: Vec<u32>,
}

/// An index entry: instance id << 4 | (size - 1) << 2 | kind.
fn pack_entry(id: usize, inst: &Instance) -> u32 {
    assert!(id < 1 << 28, "too many pattern instances");
    (id as u32) << 4 | ((inst.len as u32 - 1) << 2) | inst.kind as u32
}

#[inline(always)]
fn unpack_entry(entry: u32) -> (usize, u8, usize) {
    ((entry >> 4) as usize, ((entry >> 2) & 3) as u8 + 1, (entry & 3) as usize)
}

impl PatternSet {
    /// Compiles patterns with their weights (FV_SCALE units).
    pub fn new(patterns: Vec<Pattern>, weights: Vec<i32>) -> PatternSet {
        assert_eq!(patterns.len(), weights.len(), "one weight per pattern");
        let mut instances = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let kinds: &[(u8, Color)] = if p.is_relative() {
                &[(FOR_BLACK_TO_MOVE, Color::Black), (FOR_WHITE_TO_MOVE, Color::White)]
            } else {
                &[(ABSOLUTE, Color::Black)]
            };
            for &(kind, stm) in kinds {
                let triples = p.instantiate(stm);
                let mut inst = Instance {
                    squares: Bitboard::EMPTY,
                    pieces: [0; MAX_PATTERN_SIZE],
                    sqs: [0; MAX_PATTERN_SIZE],
                    len: triples.len() as u8,
                    kind,
                    pattern: i as u32,
                };
                for (k, t) in triples.iter().enumerate() {
                    inst.squares.set(t.square);
                    inst.pieces[k] = t.piece().code() as u8;
                    inst.sqs[k] = t.square.index() as u8;
                }
                instances.push(inst);
            }
        }
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); PIECE_CODES * 81];
        for (id, inst) in instances.iter().enumerate() {
            for k in 0..inst.len as usize {
                lists[inst.pieces[k] as usize * 81 + inst.sqs[k] as usize].push(pack_entry(id, inst));
            }
        }
        let mut index_start = Vec::with_capacity(lists.len() + 1);
        let mut index_ids = Vec::new();
        for l in &lists {
            index_start.push(index_ids.len() as u32);
            index_ids.extend_from_slice(l);
        }
        index_start.push(index_ids.len() as u32);
        PatternSet {
            inst_weight: instances.iter().map(|i| weights[i.pattern as usize]).collect(),
            patterns,
            weights,
            instances,
            index_start,
            index_ids,
        }
    }

    pub fn empty() -> PatternSet {
        PatternSet::new(Vec::new(), Vec::new())
    }

    pub fn len(&self) -> usize {
        self.patterns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }

    pub fn weights(&self) -> &[i32] {
        &self.weights
    }

    /// Changes one weight (the learner's update); the compiled index is unaffected.
    pub fn set_weight(&mut self, pattern: usize, weight: i32) {
        self.weights[pattern] = weight;
        for (w, inst) in self.inst_weight.iter_mut().zip(&self.instances) {
            if inst.pattern as usize == pattern {
                *w = weight;
            }
        }
    }

    #[inline]
    fn bucket(&self, piece: Piece, sq: Square) -> &[u32] {
        let i = piece.code() * 81 + sq.index();
        &self.index_ids[self.index_start[i] as usize..self.index_start[i + 1] as usize]
    }

    /// How many index entries `update` visits for this move (a cost diagnostic).
    pub fn entries_visited(&self, delta: &MoveDelta) -> usize {
        let mut n = self.bucket(delta.placed, delta.to).len();
        if let Some(from) = delta.from {
            n += self.bucket(delta.moved, from).len();
            if !delta.captured.is_empty() {
                n += self.bucket(delta.captured, delta.to).len();
            }
        }
        n
    }

    /// Number of (instance, triple) index entries.
    pub fn index_len(&self) -> usize {
        self.index_ids.len()
    }

    /// Sums over all instances, from scratch.
    pub fn compute(&self, pos: &Position) -> PatternSums {
        let mut sums = PatternSums::default();
        for inst in &self.instances {
            if inst.matches(pos) {
                sums.0[inst.kind as usize] += self.weights[inst.pattern as usize];
            }
        }
        sums
    }

    /// Counts of satisfied triples per instance, and the sums, from scratch.
    pub fn compute_counts(&self, pos: &Position) -> (PatternCounts, PatternSums) {
        let counts: Vec<u8> = self.instances.iter().map(|inst| inst.satisfied(pos)).collect();
        (PatternCounts(counts), self.compute(pos))
    }

    /// Indices of the patterns active in `pos` for its side to move (absolute patterns, and
    /// side-relative ones instantiated for the side to move): the learner's features.
    pub fn active_patterns(&self, pos: &Position, out: &mut Vec<u32>) {
        let skip = match pos.side_to_move() {
            Color::Black => FOR_WHITE_TO_MOVE,
            Color::White => FOR_BLACK_TO_MOVE,
        };
        for inst in &self.instances {
            if inst.kind != skip && inst.matches(pos) {
                out.push(inst.pattern);
            }
        }
    }

    #[inline]
    fn take_off(&self, counts: &mut [u8], sums: &mut PatternSums, piece: Piece, sq: Square) {
        for &entry in self.bucket(piece, sq) {
            let (id, len, kind) = unpack_entry(entry);
            let c = &mut counts[id];
            if *c == len {
                sums.0[kind] -= self.inst_weight[id];
            }
            *c -= 1;
        }
    }

    #[inline]
    fn put_on(&self, counts: &mut [u8], sums: &mut PatternSums, piece: Piece, sq: Square) {
        for &entry in self.bucket(piece, sq) {
            let (id, len, kind) = unpack_entry(entry);
            let c = &mut counts[id];
            *c += 1;
            if *c == len {
                sums.0[kind] += self.inst_weight[id];
            }
        }
    }

    /// Updates counts and sums for the move in `delta`.
    pub fn update(&self, counts: &mut PatternCounts, sums: &mut PatternSums, delta: &MoveDelta) {
        let counts = &mut counts.0[..];
        if let Some(from) = delta.from {
            self.take_off(counts, sums, delta.moved, from);
            if !delta.captured.is_empty() {
                self.take_off(counts, sums, delta.captured, delta.to);
            }
        }
        self.put_on(counts, sums, delta.placed, delta.to);
    }

    /// Takes back `update` on the counts (the caller restores the sums it saved).
    pub fn revert(&self, counts: &mut PatternCounts, delta: &MoveDelta) {
        let counts = &mut counts.0[..];
        for &entry in self.bucket(delta.placed, delta.to) {
            counts[unpack_entry(entry).0] -= 1;
        }
        if let Some(from) = delta.from {
            for &entry in self.bucket(delta.moved, from) {
                counts[unpack_entry(entry).0] += 1;
            }
            if !delta.captured.is_empty() {
                for &entry in self.bucket(delta.captured, delta.to) {
                    counts[unpack_entry(entry).0] += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::patterns::Triple;
    use crate::rules::PieceType;

    #[test]
    fn startpos_patterns_match() {
        let pos = Position::startpos();
        let t = |c, pt, f, r| Triple { color: c, piece_type: pt, square: Square::new(f, r) };
        let castle = Pattern::new(
            vec![t(Color::Black, PieceType::King, 4, 8), t(Color::Black, PieceType::Gold, 3, 8)],
            false,
        )
        .unwrap();
        let rel = Pattern::new(
            vec![t(Color::Black, PieceType::King, 4, 8), t(Color::White, PieceType::King, 4, 0)],
            true,
        )
        .unwrap();
        let absent = Pattern::new(
            vec![t(Color::Black, PieceType::King, 4, 8), t(Color::Black, PieceType::Gold, 4, 7)],
            false,
        )
        .unwrap();
        let set = PatternSet::new(vec![castle, rel, absent], vec![100, 10, 1000]);
        assert_eq!(set.compute(&pos), PatternSums([100, 10, 10]));
        let mut after = pos;
        let (mut counts, mut sums) = set.compute_counts(&after);
        let d = after.do_move(after.parse_usi_move("5i4h").unwrap());
        set.update(&mut counts, &mut sums, &d);
        assert_eq!(sums, set.compute(&after));
        assert_eq!(sums.value(Color::White), 0, "castle and king-king patterns broken");
        set.revert(&mut counts, &d);
        after.undo_move(&d);
        assert_eq!(set.compute_counts(&after), (counts, PatternSums([100, 10, 10])));
    }
}
