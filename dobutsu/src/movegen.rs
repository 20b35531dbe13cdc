//! Legal move generation (into a fixed array, no allocation) and perft.
//!
//! Dobutsu shogi has no check rule: every move of a piece to a square not held by an own
//! piece, and every drop to an empty square, is legal (a lion may step into capture — it
//! just loses). A position whose game is over (`Status::Lost`) has no moves.

use super::rules::{ATTACKS, EMPTY, Move, Position, SQUARES, Status, color_of, kind_of};

/// More than the most moves any position can have (36 board moves + 30 drops).
pub const MAX_MOVES: usize = 80;

/// A fixed-capacity move list.
#[derive(Clone)]
pub struct MoveList {
    moves: [Move; MAX_MOVES],
    len: usize,
}

impl Default for MoveList {
    fn default() -> Self {
        MoveList { moves: [Move::default(); MAX_MOVES], len: 0 }
    }
}

impl MoveList {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn as_slice(&self) -> &[Move] {
        &self.moves[..self.len]
    }
    fn push(&mut self, m: Move) {
        self.moves[self.len] = m;
        self.len += 1;
    }
}

/// All moves of the side to move, ignoring whether the game is over.
pub fn pseudo_moves(pos: &Position, list: &mut MoveList) {
    list.len = 0;
    let us = pos.side;
    let mut own = 0u16;
    let mut empty = 0u16;
    for sq in 0..SQUARES {
        let x = pos.board[sq];
        if x == EMPTY {
            empty |= 1 << sq;
        } else if color_of(x) == us {
            own |= 1 << sq;
        }
    }
    for from in 0..SQUARES {
        if own & (1 << from) == 0 {
            continue;
        }
        let mut t = ATTACKS[pos.board[from] as usize][from] & !own;
        while t != 0 {
            let to = t.trailing_zeros() as usize;
            t &= t - 1;
            list.push(Move::board(from, to));
        }
    }
    let hand = pos.hands[us.index()];
    for (i, &n) in hand.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let mut t = empty;
        while t != 0 {
            let to = t.trailing_zeros() as usize;
            t &= t - 1;
            list.push(Move::drop(i, to));
        }
    }
}

/// Legal moves: none if the game is over for the side to move, else all moves.
pub fn legal_moves(pos: &Position, list: &mut MoveList) {
    if pos.status() == Status::Lost {
        list.len = 0;
        return;
    }
    pseudo_moves(pos, list);
}

/// True if `m` is among the legal moves.
pub fn is_legal(pos: &Position, m: Move) -> bool {
    let mut l = MoveList::new();
    legal_moves(pos, &mut l);
    l.as_slice().contains(&m)
}

/// True if the move captures the opponent's lion.
pub fn captures_lion(pos: &Position, m: Move) -> bool {
    let x = pos.board[m.to()];
    x != EMPTY && kind_of(x) == super::rules::LION
}

/// Leaves of the legal-move tree at `depth` plies (game-over positions are leaves with
/// no children, so they count only at depth 0).
pub fn perft(pos: &mut Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut list = MoveList::new();
    legal_moves(pos, &mut list);
    if depth == 1 {
        return list.len() as u64;
    }
    let mut n = 0;
    for &m in list.as_slice() {
        let u = pos.do_move(m);
        n += perft(pos, depth - 1);
        pos.undo_move(m, u);
    }
    n
}
