//! The list of the 38 non-king pieces with their Black-view and White-view BonaPieces,
//! kept up to date from `MoveDelta`s. Pieces absent from the game (handicaps) keep
//! BonaPiece 0, whose table rows are zero.

use super::bona_piece::{BONA_PIECE_ZERO, BonaPiece, board_piece, hand_piece};
use crate::rules::{Color, MoveDelta, PieceType, Position, Square};

pub const PIECE_LIST_LEN: usize = 38;
const NO_ID: u8 = u8::MAX;

/// Which list entries a move changed and their previous values (for undo and for the
/// differential evaluation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangedPieces {
    pub count: usize,
    pub ids: [u8; 2],
    pub old_fb: [BonaPiece; 2],
    pub old_fw: [BonaPiece; 2],
    pub new_fb: [BonaPiece; 2],
    pub new_fw: [BonaPiece; 2],
    /// A drop: the hand slot the piece left, which its undo must give back to it (a
    /// capture in between may have reused the slot).
    pub drop_slot: u8,
}

impl ChangedPieces {
    /// Takes the change back on bare BonaPiece arrays (Black's and White's view).
    #[inline]
    pub fn revert_views(&self, fb: &mut [BonaPiece; PIECE_LIST_LEN], fw: &mut [BonaPiece; PIECE_LIST_LEN]) {
        for i in (0..self.count).rev() {
            fb[self.ids[i] as usize] = self.old_fb[i];
            fw[self.ids[i] as usize] = self.old_fw[i];
        }
    }

    /// Makes the change on bare BonaPiece arrays.
    #[inline]
    pub fn apply_views(&self, fb: &mut [BonaPiece; PIECE_LIST_LEN], fw: &mut [BonaPiece; PIECE_LIST_LEN]) {
        for i in 0..self.count {
            fb[self.ids[i] as usize] = self.new_fb[i];
            fw[self.ids[i] as usize] = self.new_fw[i];
        }
    }
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PieceList {
    fb: [BonaPiece; PIECE_LIST_LEN],
    fw: [BonaPiece; PIECE_LIST_LEN],
    id_on_square: [u8; 81],
    /// [colour][hand kind P..R][i] → id of the i-th piece of that kind in hand.
    hand_ids: [[[u8; 18]; 7]; 2],
}

impl PieceList {
    /// Builds the list of a position (ids in square order, then hands).
    pub fn new(pos: &Position) -> PieceList {
        let mut list = PieceList {
            fb: [BONA_PIECE_ZERO; PIECE_LIST_LEN],
            fw: [BONA_PIECE_ZERO; PIECE_LIST_LEN],
            id_on_square: [NO_ID; 81],
            hand_ids: [[[NO_ID; 18]; 7]; 2],
        };
        let mut next = 0usize;
        for sq in Square::all() {
            let p = pos.piece_on(sq);
            if p.is_empty() || p.piece_type() == PieceType::King {
                continue;
            }
            assert!(next < PIECE_LIST_LEN, "more than 38 non-king pieces");
            let (b, w) = board_piece(p.color(), p.piece_type(), sq);
            list.fb[next] = b;
            list.fw[next] = w;
            list.id_on_square[sq.index()] = next as u8;
            next += 1;
        }
        for color in Color::ALL {
            for pt in PieceType::HAND {
                for i in 0..pos.hand(color).count(pt) {
                    assert!(next < PIECE_LIST_LEN, "more than 38 non-king pieces");
                    let (b, w) = hand_piece(color, pt, i);
                    list.fb[next] = b;
                    list.fw[next] = w;
                    list.hand_ids[color.index()][pt.hand_index().unwrap()][i as usize] = next as u8;
                    next += 1;
                }
            }
        }
        list
    }

    #[inline]
    pub fn black_view(&self) -> &[BonaPiece; PIECE_LIST_LEN] {
        &self.fb
    }

    #[inline]
    pub fn white_view(&self) -> &[BonaPiece; PIECE_LIST_LEN] {
        &self.fw
    }

    fn set(&mut self, id: u8, (b, w): (BonaPiece, BonaPiece), changed: &mut ChangedPieces) {
        let i = changed.count;
        changed.ids[i] = id;
        changed.old_fb[i] = self.fb[id as usize];
        changed.old_fw[i] = self.fw[id as usize];
        changed.new_fb[i] = b;
        changed.new_fw[i] = w;
        changed.count += 1;
        self.fb[id as usize] = b;
        self.fw[id as usize] = w;
    }

    /// Applies a move; `after` is the position after `delta` was made.
    pub fn apply(&mut self, delta: &MoveDelta, after: &Position) -> ChangedPieces {
        let mut changed = ChangedPieces::default();
        let mover = delta.moved.color();
        let to = delta.to;
        match delta.from {
            None => {
                let pt = delta.moved.piece_type();
                // The dropped piece is the last one of its kind in hand.
                let i = after.hand(mover).count(pt) as usize;
                let id = self.hand_ids[mover.index()][pt.hand_index().unwrap()][i];
                self.set(id, board_piece(mover, pt, to), &mut changed);
                changed.drop_slot = i as u8;
                self.id_on_square[to.index()] = id;
            }
            Some(from) => {
                if delta.is_capture() {
                    let base = delta.captured.piece_type().unpromote();
                    let i = after.hand(mover).count(base) - 1;
                    let cid = self.id_on_square[to.index()];
                    self.set(cid, hand_piece(mover, base, i), &mut changed);
                    self.hand_ids[mover.index()][base.hand_index().unwrap()][i as usize] = cid;
                }
                if delta.moved.piece_type() != PieceType::King {
                    let id = self.id_on_square[from.index()];
                    self.set(id, board_piece(mover, delta.placed.piece_type(), to), &mut changed);
                    self.id_on_square[to.index()] = id;
                } else {
                    self.id_on_square[to.index()] = NO_ID;
                }
                self.id_on_square[from.index()] = NO_ID;
            }
        }
        changed
    }

    /// Takes back `apply` (call before or after `Position::undo_move`; it needs only the
    /// delta and the changes).
    pub fn revert(&mut self, delta: &MoveDelta, changed: &ChangedPieces) {
        for i in (0..changed.count).rev() {
            let id = changed.ids[i] as usize;
            self.fb[id] = changed.old_fb[i];
            self.fw[id] = changed.old_fw[i];
        }
        match delta.from {
            None => {
                self.id_on_square[delta.to.index()] = NO_ID;
                let kind = delta.moved.piece_type().hand_index().expect("dropped pieces have a hand kind");
                self.hand_ids[delta.moved.color().index()][kind][changed.drop_slot as usize] = changed.ids[0];
            }
            Some(from) => {
                let moved_id = if delta.moved.piece_type() == PieceType::King {
                    NO_ID
                } else {
                    changed.ids[changed.count - 1]
                };
                self.id_on_square[from.index()] = moved_id;
                self.id_on_square[delta.to.index()] = if delta.is_capture() { changed.ids[0] } else { NO_ID };
                // The hand slot the captured piece took is simply unused again.
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every board piece has the id its square names, with that square's BonaPieces;
    /// every hand slot in use names a distinct piece with the BonaPieces of that slot.
    fn check_consistent(list: &PieceList, pos: &Position) -> Result<(), String> {
        let mut seen = [false; PIECE_LIST_LEN];
        let mut claim = |id: u8, (b, w): (BonaPiece, BonaPiece), place: String| {
            if id == NO_ID || seen[id as usize] {
                return Err(format!("{place}: id {id} missing or used twice"));
            }
            seen[id as usize] = true;
            if (list.fb[id as usize], list.fw[id as usize]) != (b, w) {
                return Err(format!("{place}: id {id} has the wrong BonaPieces"));
            }
            Ok(())
        };
        for sq in Square::all() {
            let p = pos.piece_on(sq);
            let id = list.id_on_square[sq.index()];
            if p.is_empty() || p.piece_type() == PieceType::King {
                if id != NO_ID {
                    return Err(format!("{sq:?} is empty but names id {id}"));
                }
            } else {
                claim(id, board_piece(p.color(), p.piece_type(), sq), format!("{sq:?}"))?;
            }
        }
        for color in Color::ALL {
            for pt in PieceType::HAND {
                for i in 0..pos.hand(color).count(pt) {
                    let id = list.hand_ids[color.index()][pt.hand_index().unwrap()][i as usize];
                    claim(id, hand_piece(color, pt, i), format!("{color:?} hand {pt:?} slot {i}"))?;
                }
            }
        }
        Ok(())
    }

    /// A search's walk: moves tried and taken back in a tree, drops and captures
    /// preferred, so that a drop's hand slot is reused by a capture below it before the
    /// drop is undone (which once left the slot naming the captured piece: the next drop
    /// then moved a piece that was on the board).
    #[test]
    fn list_stays_consistent_through_a_tree_of_moves_and_undos() {
        use crate::rules::random_walk::{TreeStep, capture_heavy_suite, walk_tree, xorshift};
        let mut next = xorshift(0x5eed_0fd4_0b00);
        let mut checked = 0;
        for (n, start) in capture_heavy_suite(40, 21).iter().enumerate() {
            let mut list = PieceList::new(start);
            check_consistent(&list, start).unwrap_or_else(|e| panic!("position {n} as built: {e}"));
            let mut changes = Vec::new();
            checked += walk_tree(start, 5, 3, &mut next, &mut |step| match step {
                TreeStep::Made(pos, d) => {
                    changes.push(list.apply(d, pos));
                    check_consistent(&list, pos)
                        .unwrap_or_else(|e| panic!("after {}: {e} at {}", d.mv, pos.to_sfen()));
                }
                TreeStep::Undone(pos, d) => {
                    list.revert(d, &changes.pop().expect("made before undone"));
                    check_consistent(&list, pos)
                        .unwrap_or_else(|e| panic!("after undoing {}: {e} at {}", d.mv, pos.to_sfen()));
                }
            });
        }
        assert!(checked > 10_000, "{checked} positions checked");
    }

    #[test]
    fn incremental_list_equals_rebuilt_list_as_a_multiset() {
        let mut pos = Position::startpos();
        let mut list = PieceList::new(&pos);
        let mut x = 12345u64;
        for _ in 0..300 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let m = moves[(x % moves.len() as u64) as usize];
            let before = list.clone();
            let d = pos.do_move(m);
            let ch = list.apply(&d, &pos);
            let fresh = PieceList::new(&pos);
            let mut a = list.fb;
            let mut b = fresh.fb;
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "after {m}");
            let mut a = list.fw;
            let mut b = fresh.fw;
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "after {m}");
            let mut undone = list.clone();
            undone.revert(&d, &ch);
            assert_eq!(undone.fb, before.fb);
            assert_eq!(undone.fw, before.fw);
            assert_eq!(undone.id_on_square, before.id_on_square);
        }
    }
}
