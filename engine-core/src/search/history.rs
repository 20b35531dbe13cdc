//! Move-ordering statistics learned during the search: the butterfly history (by side,
//! origin or dropped kind, and destination), the capture history (by moving piece,
//! destination and captured kind), continuation histories (a quiet move's success after
//! the move played one, two and four plies before), counter-moves (the refutation last
//! seen for the previous move) and killers (per ply, kept in the search stack).
//!
//! Every update uses "gravity": `h += bonus - h·|bonus|/LIMIT`, which keeps `|h| < LIMIT`
//! and lets old knowledge fade as new results arrive.

use crate::huge_pages::HugeArray;
use crate::rules::{Move, Piece, PieceType, Square};

const PIECES: usize = 32;
/// Rows of the continuation history: (piece after the move, destination).
pub const CONT_ROWS: usize = PIECES * 81;

pub const MAIN_LIMIT: i32 = 10692;
pub const CAPTURE_LIMIT: i32 = 10692;
pub const CONT_LIMIT: i32 = 29952;

/// The continuation row of the sentinel "no move" (null move, or before the root).
pub const NO_ROW: usize = 0;

pub struct History {
    /// By side, origin (or dropped kind) and destination, at `main_index`
    main: Box<[i16; MAIN_SIZE]>,
    /// `[piece after move][to][captured kind]`
    capture: Vec<i16>,
    /// `[row of the earlier move][row of this move]` (13 MB: on huge pages)
    continuation: HugeArray<i16>,
    /// `[row of the previous move]`
    counter: Vec<Move>,
}

#[inline]
fn gravity(entry: &mut i16, bonus: i32, limit: i32) {
    let e = *entry as i32;
    let b = bonus.clamp(-limit, limit);
    *entry = (e + b - e * b.abs() / limit) as i16;
}

/// Butterfly entries, indexed by a move's own bits: its low 15 (destination; origin square,
/// or dropped kind with the drop flag) and the mover's colour (bit 20) as bit 15. Not every
/// index is a move, but finding the entry costs three instructions, where packing the
/// 2 × 88 × 81 real ones tightly took some twenty (a cost paid for every quiet move scored).
const MAIN_SIZE: usize = 1 << 16;

#[inline]
fn main_index(m: Move) -> usize {
    let raw = m.raw() as usize;
    (raw & 0x7fff) | ((raw >> 5) & 0x8000)
}

#[inline]
fn capture_index(m: Move, captured: PieceType) -> usize {
    (m.moved_piece_after().code() * 81 + m.to().index()) * 16 + captured as usize
}

/// The continuation-history row of a move (what it moved where).
#[inline]
pub fn cont_row(m: Move) -> usize {
    cont_row_of(m.moved_piece_after(), m.to())
}

#[inline]
pub fn cont_row_of(piece: Piece, to: Square) -> usize {
    piece.code() * 81 + to.index()
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl History {
    pub fn new() -> History {
        History {
            main: vec![0; MAIN_SIZE].into_boxed_slice().try_into().expect("MAIN_SIZE entries"),
            capture: vec![0; PIECES * 81 * 16],
            continuation: HugeArray::zeroed(CONT_ROWS * CONT_ROWS),
            counter: vec![Move::NONE; CONT_ROWS],
        }
    }

    pub fn clear(&mut self) {
        self.main.fill(0);
        self.capture.fill(0);
        self.continuation.fill(0);
        self.counter.fill(Move::NONE);
    }

    #[inline]
    pub fn main(&self, m: Move) -> i32 {
        self.main[main_index(m)] as i32
    }

    #[inline]
    pub fn update_main(&mut self, m: Move, bonus: i32) {
        gravity(&mut self.main[main_index(m)], bonus, MAIN_LIMIT);
    }

    #[inline]
    pub fn capture(&self, m: Move, captured: PieceType) -> i32 {
        self.capture[capture_index(m, captured)] as i32
    }

    #[inline]
    pub fn update_capture(&mut self, m: Move, captured: PieceType, bonus: i32) {
        gravity(&mut self.capture[capture_index(m, captured)], bonus, CAPTURE_LIMIT);
    }

    /// The continuation row of the earlier move `prev`: how well each move row did after
    /// it (index it with `cont_row`).
    #[inline]
    pub fn cont_after(&self, prev: usize) -> &[i16] {
        &self.continuation[prev * CONT_ROWS..(prev + 1) * CONT_ROWS]
    }

    /// How well a move to `row` did after the earlier move whose row is `prev`.
    #[inline]
    pub fn cont(&self, prev: usize, row: usize) -> i32 {
        self.continuation[prev * CONT_ROWS + row] as i32
    }

    #[inline]
    pub fn update_cont(&mut self, prev: usize, row: usize, bonus: i32) {
        if prev != NO_ROW {
            gravity(&mut self.continuation[prev * CONT_ROWS + row], bonus, CONT_LIMIT);
        }
    }

    #[inline]
    pub fn counter_move(&self, prev: usize) -> Move {
        self.counter[prev]
    }

    #[inline]
    pub fn set_counter_move(&mut self, prev: usize, m: Move) {
        if prev != NO_ROW {
            self.counter[prev] = m;
        }
    }
}

/// The history bonus for a result at `depth`.
#[inline]
pub fn stat_bonus(depth: i32) -> i32 {
    if depth > 13 { 29 } else { 17 * depth * depth + 134 * depth - 134 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Color, Square};

    /// Every (side, origin or dropped kind, destination) has its own butterfly entry, inside
    /// the table, and promoting or not shares it.
    #[test]
    fn butterfly_entries_are_distinct_per_side_origin_and_destination() {
        let mut seen = std::collections::HashSet::new();
        for color in [Color::Black, Color::White] {
            for to in 0..81 {
                let to = Square::from_index(to);
                for from in 0..81 {
                    let board = |promote, pt| {
                        Move::new_board(Square::from_index(from), to, promote, Piece::new(color, pt))
                    };
                    let m = board(false, PieceType::Silver);
                    let promoted = board(true, PieceType::Silver);
                    assert_eq!(main_index(m), main_index(promoted));
                    // The moved kind does not matter, only where it came from.
                    let other = board(false, PieceType::Gold);
                    assert_eq!(main_index(m), main_index(other));
                    assert!(seen.insert(main_index(m)));
                }
                for pt in PieceType::HAND {
                    assert!(seen.insert(main_index(Move::new_drop(pt, to, color))));
                }
            }
        }
        // Origins: 81 squares and 7 droppable kinds.
        assert_eq!(seen.len(), 2 * (81 + 7) * 81);
        assert!(seen.iter().all(|&i| i < MAIN_SIZE));
    }

    #[test]
    fn gravity_keeps_values_bounded_and_signs_right() {
        let mut h = History::new();
        let m = Move::new_board(
            Square::new(6, 6),
            Square::new(6, 5),
            false,
            Piece::new(Color::Black, PieceType::Pawn),
        );
        for _ in 0..1000 {
            h.update_main(m, stat_bonus(12));
        }
        assert!(h.main(m) > MAIN_LIMIT * 9 / 10 && h.main(m) <= MAIN_LIMIT, "{}", h.main(m));
        for _ in 0..3 {
            h.update_main(m, -stat_bonus(12));
        }
        assert!(h.main(m) < MAIN_LIMIT / 2, "maluses pull a saturated entry back fast");
        // Drops of different kinds to the same square are different entries.
        let d1 = Move::new_drop(PieceType::Pawn, Square::new(4, 4), Color::White);
        let d2 = Move::new_drop(PieceType::Gold, Square::new(4, 4), Color::White);
        h.update_main(d1, 500);
        assert_eq!(h.main(d1), 500);
        assert_eq!(h.main(d2), 0);
        // Continuation rows: the sentinel row is never written.
        h.update_cont(NO_ROW, cont_row(m), 400);
        assert_eq!(h.cont(NO_ROW, cont_row(m)), 0);
        h.update_cont(cont_row(d1), cont_row(m), 400);
        assert_eq!(h.cont(cont_row(d1), cont_row(m)), 400);
        h.clear();
        assert_eq!(h.cont(cont_row(d1), cont_row(m)), 0);
    }
}
