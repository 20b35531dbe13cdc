//! A pattern set compiled for speed: a flat array of instances (one per absolute pattern,
//! two per side-relative one: for Black to move and for White to move), and an index from
//! every (piece, square) to the instances containing it.
//!
//! The differential update is stateless: a move is three single-square edits (the moved
//! piece leaves `from`, the captured piece leaves `to`, the placed piece arrives on `to`),
//! and an instance containing the edited (piece, square) switches on or off exactly when
//! its *other* triples stand on the board at that moment. Every index entry therefore
//! carries its instance's other triples (square and piece, packed into one `u64` with the
//! pattern id), entries are grouped by the sum they add to, and the update checks them,
//! without branches, against a 128-byte copy of the board: entries read in order, no
//! per-instance state. So undo is free — the caller pops the sums it saved — and nothing
//! else is kept per game.
//!
//! Fast path: when the instances use at most 64 distinct (piece, square) triples (sets
//! extracted from games are combinations of a few frequent placements; the research's
//! 10,924 patterns use 53), which of them stand on the board is one `u64`, and an entry is
//! matched with one AND and compare against the mask of its other triples.
//!
//! A full computation matches each instance against the board with its square bitboard
//! (one AND/compare) and its pieces; it is independent of the index, so tests compare the
//! two.

use super::pattern::{MAX_PATTERN_SIZE, Pattern};
use crate::rules::{Bitboard, Color, MoveDelta, Piece, Position, Square};

const PIECE_CODES: usize = 32;

/// Instance kinds: which sum an instance adds to.
const ABSOLUTE: u8 = 0;
const FOR_BLACK_TO_MOVE: u8 = 1;
const FOR_WHITE_TO_MOVE: u8 = 2;

/// A board as piece codes, padded to 128 squares so that a 7-bit square from an index
/// entry needs no bounds check; squares 81.. hold 0 (the empty code), which is what the
/// padding triples of patterns smaller than 4 look for.
type Board = [u8; 128];
/// Padding "other triple": square 81 (empty code 0, always satisfied).
const PAD_SQUARE: u64 = 81;
/// An index entry: the other triples' squares (7 bits each) at bit 0, their piece codes
/// (5 bits each) at `CODES_SHIFT`, the pattern id at `ID_SHIFT`.
const CODES_SHIFT: u32 = 21;
const ID_SHIFT: u32 = 36;
/// Patterns a set can hold (the id field of an index entry).
pub const MAX_PATTERNS: usize = 1 << (64 - ID_SHIFT);
const KINDS: usize = 3;

#[derive(Clone, Copy, Debug)]
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
    fn matches(&self, pos: &Position) -> bool {
        (pos.occupied() & self.squares) == self.squares
            && (0..self.len as usize).all(|k| {
                pos.piece_on(Square::from_index(self.sqs[k] as usize)).code() == self.pieces[k] as usize
            })
    }

    /// The index entry of this instance in the bucket of its triple `k`: the other
    /// triples (padded with an always-satisfied one) and the pattern id.
    fn entry(&self, k: usize) -> u64 {
        let (mut squares, mut codes, mut n) = (0u64, 0u64, 0);
        for j in 0..MAX_PATTERN_SIZE {
            if j == k {
                continue;
            }
            let (sq, code) = if j < self.len as usize {
                (self.sqs[j] as u64, self.pieces[j] as u64)
            } else {
                (PAD_SQUARE, 0)
            };
            squares |= sq << (7 * n);
            codes |= code << (5 * n);
            n += 1;
        }
        squares | codes << CODES_SHIFT | (self.pattern as u64) << ID_SHIFT
    }
}

/// Whether the other triples of an index entry stand on `board`: the three board codes
/// packed like the entry's and compared at once.
#[inline(always)]
fn others_on(board: &Board, e: u64) -> bool {
    let at = |shift: u32| board[((e >> shift) & 127) as usize] as u64;
    let found = at(0) | at(7) << 5 | at(14) << 10;
    found == (e >> CODES_SHIFT) & 0x7fff
}

/// The board of `pos` as piece codes.
#[inline]
fn board_of(pos: &Position) -> Board {
    let mut b = [0u8; 128];
    for (i, v) in b.iter_mut().take(81).enumerate() {
        *v = pos.piece_on(Square::from_index(i)).code() as u8;
    }
    b
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
    /// CSR index: entries for (piece code, square, instance kind) are
    /// `index[index_start[i] .. index_start[i+1]]` with `i = (c*81+sq)*3+kind`
    /// (`Instance::entry`), so the three kinds of a bucket are contiguous.
    index_start: Vec<u32>,
    index: Vec<u64>,
    /// The fast path, when the instances use at most 64 distinct triples.
    vocabulary: Option<Vocabulary>,
}

/// The distinct (piece, square) triples of a set's instances, when there are at most 64
/// (extracted sets are combinations of a few frequent placements: the research's 10,924
/// patterns use 53). Which of them stand on the board is then one `u64`, and an index
/// entry is matched with one AND and compare against the mask of its other triples.
#[derive(Clone, Debug)]
struct Vocabulary {
    /// Per (piece code * 81 + square): the triple's bit number, or `NOT_USED`.
    bit_of: Vec<u8>,
    /// Per bit: (square, piece code).
    triples: Vec<(u8, u8)>,
    /// Per index entry (parallel to `PatternSet::index`): the bits of its other triples.
    masks: Vec<u64>,
}

const NOT_USED: u8 = u8::MAX;

impl Vocabulary {
    fn build(instances: &[Instance], index: &[u64]) -> Option<Vocabulary> {
        let mut bit_of = vec![NOT_USED; PIECE_CODES * 81];
        let mut triples = Vec::new();
        for inst in instances {
            for k in 0..inst.len as usize {
                let slot = &mut bit_of[inst.pieces[k] as usize * 81 + inst.sqs[k] as usize];
                if *slot == NOT_USED {
                    if triples.len() == 64 {
                        return None;
                    }
                    *slot = triples.len() as u8;
                    triples.push((inst.sqs[k], inst.pieces[k]));
                }
            }
        }
        let mut v = Vocabulary { bit_of, triples, masks: Vec::with_capacity(index.len()) };
        for &e in index {
            let mut mask = 0;
            for n in 0..MAX_PATTERN_SIZE - 1 {
                let sq = (e >> (7 * n)) & 127;
                let code = (e >> (CODES_SHIFT + 5 * n as u32)) & 31;
                if sq != PAD_SQUARE {
                    mask |= v.bit(code as usize, sq as usize);
                }
            }
            v.masks.push(mask);
        }
        Some(v)
    }

    #[inline(always)]
    fn bit(&self, code: usize, sq: usize) -> u64 {
        let b = self.bit_of[code * 81 + sq];
        if b == NOT_USED { 0 } else { 1u64 << b }
    }

    /// The triples standing in `pos`.
    #[inline]
    fn present(&self, pos: &Position) -> u64 {
        let mut present = 0;
        for (n, &(sq, code)) in self.triples.iter().enumerate() {
            present |= ((pos.piece_on(Square::from_index(sq as usize)).code() == code as usize) as u64) << n;
        }
        present
    }
}

impl PatternSet {
    /// Compiles patterns with their weights (FV_SCALE units).
    pub fn new(patterns: Vec<Pattern>, weights: Vec<i32>) -> PatternSet {
        assert_eq!(patterns.len(), weights.len(), "one weight per pattern");
        assert!(patterns.len() <= MAX_PATTERNS, "at most {MAX_PATTERNS} patterns");
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
        let mut lists: Vec<Vec<u64>> = vec![Vec::new(); PIECE_CODES * 81 * KINDS];
        for inst in &instances {
            for k in 0..inst.len as usize {
                let bucket = inst.pieces[k] as usize * 81 + inst.sqs[k] as usize;
                lists[bucket * KINDS + inst.kind as usize].push(inst.entry(k));
            }
        }
        let mut index_start = Vec::with_capacity(lists.len() + 1);
        let mut index = Vec::new();
        for l in &lists {
            index_start.push(index.len() as u32);
            index.extend_from_slice(l);
        }
        index_start.push(index.len() as u32);
        let vocabulary = Vocabulary::build(&instances, &index);
        PatternSet { patterns, weights, instances, index_start, index, vocabulary }
    }

    pub fn empty() -> PatternSet {
        PatternSet::new(Vec::new(), Vec::new())
    }

    /// The set without its zero-weight patterns, for search: it evaluates every position
    /// exactly as `self` does, with a smaller index. Pattern numbers change (the second
    /// value maps each kept pattern to its number in `self`), so a learner, which needs a
    /// feature for every pattern, keeps the full set.
    pub fn without_zero_weights(&self) -> (PatternSet, Vec<u32>) {
        let kept: Vec<u32> = (0..self.len() as u32).filter(|&i| self.weights[i as usize] != 0).collect();
        let set = PatternSet::new(
            kept.iter().map(|&i| self.patterns[i as usize].clone()).collect(),
            kept.iter().map(|&i| self.weights[i as usize]).collect(),
        );
        (set, kept)
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

    /// The entries of (`piece`, `sq`): where they start in `index`, and the ends of the
    /// three kinds' runs.
    #[inline]
    fn bucket_range(&self, piece: Piece, sq: Square) -> (usize, [usize; KINDS]) {
        let i = (piece.code() * 81 + sq.index()) * KINDS;
        let s = &self.index_start[i..i + KINDS + 1];
        (s[0] as usize, [s[1] as usize, s[2] as usize, s[3] as usize])
    }

    #[inline]
    fn bucket(&self, piece: Piece, sq: Square) -> (&[u64], [usize; KINDS]) {
        let (base, ends) = self.bucket_range(piece, sq);
        (&self.index[base..ends[KINDS - 1]], ends.map(|e| e - base))
    }

    /// Whether the fast path (at most 64 distinct triples) is in use.
    pub fn uses_vocabulary(&self) -> bool {
        self.vocabulary.is_some()
    }

    /// How many index entries `update` visits for this move (a cost diagnostic).
    pub fn entries_visited(&self, delta: &MoveDelta) -> usize {
        let mut n = self.bucket(delta.placed, delta.to).0.len();
        if let Some(from) = delta.from {
            n += self.bucket(delta.moved, from).0.len();
            if !delta.captured.is_empty() {
                n += self.bucket(delta.captured, delta.to).0.len();
            }
        }
        n
    }

    /// Number of (instance, triple) index entries.
    pub fn index_len(&self) -> usize {
        self.index.len()
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

    /// Adds (`SIGN` 1) or subtracts (-1) the weights of the instances in the bucket of
    /// (`piece`, `sq`) whose other triples stand on `board`.
    #[inline(always)]
    fn edit<const SIGN: i32>(&self, board: &Board, sums: &mut PatternSums, piece: Piece, sq: Square) {
        let (entries, ends) = self.bucket(piece, sq);
        let mut start = 0;
        for (kind, &end) in ends.iter().enumerate() {
            let mut acc = 0i32;
            for &e in &entries[start..end] {
                // Branch-free (whether an instance matches is hard to predict): the
                // weight is read either way.
                let w = self.weights[(e >> ID_SHIFT) as usize];
                acc += std::hint::select_unpredictable(others_on(board, e), w, 0);
            }
            sums.0[kind] += SIGN * acc;
            start = end;
        }
    }

    /// `edit` on the fast path: `present` holds the bits of the triples on the board.
    #[inline(always)]
    fn edit_present<const SIGN: i32>(
        &self,
        v: &Vocabulary,
        present: u64,
        sums: &mut PatternSums,
        piece: Piece,
        sq: Square,
    ) {
        let (mut start, ends) = self.bucket_range(piece, sq);
        for (kind, &end) in ends.iter().enumerate() {
            let mut acc = 0i32;
            for (&e, &mask) in self.index[start..end].iter().zip(&v.masks[start..end]) {
                let w = self.weights[(e >> ID_SHIFT) as usize];
                acc += std::hint::select_unpredictable(present & mask == mask, w, 0);
            }
            sums.0[kind] += SIGN * acc;
            start = end;
        }
    }

    /// Updates the sums for the move in `delta`; `after` is the position after it. Undo
    /// needs nothing: restore the sums saved before.
    pub fn update(&self, sums: &mut PatternSums, delta: &MoveDelta, after: &Position) {
        if let Some(v) = &self.vocabulary {
            self.update_present(v, sums, delta, after);
        } else {
            self.update_board(sums, delta, after);
        }
    }

    /// `update` on the fast path: the same three edits on the present-triples mask.
    fn update_present(&self, v: &Vocabulary, sums: &mut PatternSums, delta: &MoveDelta, after: &Position) {
        let mut present = v.present(after);
        let to = delta.to.index();
        let placed = v.bit(delta.placed.code(), to);
        if let Some(from) = delta.from {
            let moved = v.bit(delta.moved.code(), from.index());
            let captured = v.bit(delta.captured.code(), to);
            present = (present & !placed) | moved | captured;
            self.edit_present::<-1>(v, present, sums, delta.moved, from);
            present &= !moved;
            if !delta.captured.is_empty() {
                self.edit_present::<-1>(v, present, sums, delta.captured, delta.to);
            }
            present = (present & !captured) | placed;
        }
        self.edit_present::<1>(v, present, sums, delta.placed, delta.to);
    }

    /// `update` on any set: the edits checked against a copy of the board.
    fn update_board(&self, sums: &mut PatternSums, delta: &MoveDelta, after: &Position) {
        let mut board = board_of(after);
        let to = delta.to;
        if let Some(from) = delta.from {
            // The board before the move, then one edit at a time.
            board[from.index()] = delta.moved.code() as u8;
            board[to.index()] = delta.captured.code() as u8;
            self.edit::<-1>(&board, sums, delta.moved, from);
            board[from.index()] = 0;
            if !delta.captured.is_empty() {
                self.edit::<-1>(&board, sums, delta.captured, to);
            }
            board[to.index()] = delta.placed.code() as u8;
        }
        self.edit::<1>(&board, sums, delta.placed, to);
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
        let mut sums = set.compute(&after);
        let d = after.do_move(after.parse_usi_move("5i4h").unwrap());
        set.update(&mut sums, &d, &after);
        assert_eq!(sums, set.compute(&after));
        assert_eq!(sums.value(Color::White), 0, "castle and king-king patterns broken");
        let d2 = after.do_move(after.parse_usi_move("5a4b").unwrap());
        set.update(&mut sums, &d2, &after);
        assert_eq!(sums, PatternSums([0, 0, 0]));
        let d3 = after.do_move(after.parse_usi_move("4h5i").unwrap());
        set.update(&mut sums, &d3, &after);
        assert_eq!(sums, PatternSums([100, 0, 0]), "castle back, kings not facing");
        let d4 = after.do_move(after.parse_usi_move("4b5a").unwrap());
        set.update(&mut sums, &d4, &after);
        assert_eq!(sums, PatternSums([100, 10, 10]));
        assert_eq!(after.to_sfen(), Position::startpos().to_sfen().replace(" 1", " 5"));
    }
}
