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

/// Origins: 81 squares, then one per droppable kind (hand index).
const ORIGINS: usize = 81 + 7;
const PIECES: usize = 32;
/// Rows of the continuation history: (piece after the move, destination).
pub const CONT_ROWS: usize = PIECES * 81;

pub const MAIN_LIMIT: i32 = 10692;
pub const CAPTURE_LIMIT: i32 = 10692;
pub const CONT_LIMIT: i32 = 29952;

/// The continuation row of the sentinel "no move" (null move, or before the root).
pub const NO_ROW: usize = 0;

pub struct History {
    /// `[side][origin][to]`
    main: Vec<i16>,
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

/// A drop's origin after the 81 squares, by the dropped kind's code: its hand index.
const DROP_ORIGIN: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut code = 0;
    while code < 16 {
        if let Some(pt) = PieceType::from_u8(code as u8)
            && let Some(h) = pt.hand_index()
        {
            t[code] = h as u8;
        }
        code += 1;
    }
    t
};

#[inline]
fn origin(m: Move) -> usize {
    // A drop keeps its kind where a board move keeps its origin square.
    let from = m.from().index();
    if m.is_drop() { 81 + DROP_ORIGIN[from & 15] as usize } else { from }
}

#[inline]
fn main_index(m: Move) -> usize {
    let side = m.moved_piece().color().index();
    (side * ORIGINS + origin(m)) * 81 + m.to().index()
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
            main: vec![0; 2 * ORIGINS * 81],
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
