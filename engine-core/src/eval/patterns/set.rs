//! A pattern set compiled for speed: a flat array of instances (one per absolute pattern,
//! two per side-relative one: for Black to move and for White to move), each with a
//! bitboard of its squares for a one-AND rejection and its pieces for the final compare,
//! plus an index from every (piece, square) to the instances containing it, so that a move
//! visits only the instances of the pieces it moved, captured or dropped.

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
    fn matches(&self, occ: Bitboard, piece_on: impl Fn(Square) -> Piece) -> bool {
        if (occ & self.squares) != self.squares {
            return false;
        }
        (0..self.len as usize)
            .all(|k| piece_on(Square::from_index(self.sqs[k] as usize)).code() == self.pieces[k] as usize)
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

#[derive(Clone, Debug)]
pub struct PatternSet {
    patterns: Vec<Pattern>,
    weights: Vec<i32>,
    instances: Vec<Instance>,
    /// CSR index: instances containing (piece code, square) are
    /// `index_ids[index_start[c*81+sq] .. index_start[c*81+sq+1]]`.
    index_start: Vec<u32>,
    index_ids: Vec<u32>,
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
                lists[inst.pieces[k] as usize * 81 + inst.sqs[k] as usize].push(id as u32);
            }
        }
        let mut index_start = Vec::with_capacity(lists.len() + 1);
        let mut index_ids = Vec::new();
        for l in &lists {
            index_start.push(index_ids.len() as u32);
            index_ids.extend_from_slice(l);
        }
        index_start.push(index_ids.len() as u32);
        PatternSet { patterns, weights, instances, index_start, index_ids }
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
    }

    #[inline]
    fn instances_of(&self, piece: Piece, sq: Square) -> &[u32] {
        let i = piece.code() * 81 + sq.index();
        &self.index_ids[self.index_start[i] as usize..self.index_start[i + 1] as usize]
    }

    /// Sums over all instances, from scratch.
    pub fn compute(&self, pos: &Position) -> PatternSums {
        let occ = pos.occupied();
        let mut sums = PatternSums::default();
        for inst in &self.instances {
            if inst.matches(occ, |sq| pos.piece_on(sq)) {
                sums.0[inst.kind as usize] += self.weights[inst.pattern as usize];
            }
        }
        sums
    }

    /// Indices of the patterns active in `pos` for its side to move (absolute patterns, and
    /// side-relative ones instantiated for the side to move): the learner's features.
    pub fn active_patterns(&self, pos: &Position, out: &mut Vec<u32>) {
        let occ = pos.occupied();
        let skip = match pos.side_to_move() {
            Color::Black => FOR_WHITE_TO_MOVE,
            Color::White => FOR_BLACK_TO_MOVE,
        };
        for inst in &self.instances {
            if inst.kind != skip && inst.matches(occ, |sq| pos.piece_on(sq)) {
                out.push(inst.pattern);
            }
        }
    }

    /// Updates `sums` for the move in `delta`; `after` is the position after it. Only the
    /// instances containing the moved, captured or placed piece are visited.
    pub fn update(&self, sums: &mut PatternSums, delta: &MoveDelta, after: &Position) {
        let to = delta.to;
        let occ_after = after.occupied();
        let mut occ_before = occ_after;
        let before = |sq: Square| -> Piece {
            if Some(sq) == delta.from {
                delta.moved
            } else if sq == to {
                delta.captured
            } else {
                after.piece_on(sq)
            }
        };
        if let Some(from) = delta.from {
            occ_before.set(from);
            if delta.captured.is_empty() {
                occ_before.clear(to);
            }
            for &id in self.instances_of(delta.moved, from) {
                let inst = &self.instances[id as usize];
                if inst.matches(occ_before, before) {
                    sums.0[inst.kind as usize] -= self.weights[inst.pattern as usize];
                }
            }
            if !delta.captured.is_empty() {
                for &id in self.instances_of(delta.captured, to) {
                    let inst = &self.instances[id as usize];
                    // Instances that also need the moved piece on `from` were handled above.
                    if !inst.squares.contains(from) && inst.matches(occ_before, before) {
                        sums.0[inst.kind as usize] -= self.weights[inst.pattern as usize];
                    }
                }
            }
        }
        for &id in self.instances_of(delta.placed, to) {
            let inst = &self.instances[id as usize];
            if inst.matches(occ_after, |sq| after.piece_on(sq)) {
                sums.0[inst.kind as usize] += self.weights[inst.pattern as usize];
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
        after.do_move(after.parse_usi_move("7g7f").unwrap());
        assert_eq!(set.compute(&after).value(Color::White), -100 + 10);
    }
}
