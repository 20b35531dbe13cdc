//! Zobrist hashing keys: board (piece, square), hand (colour, kind, count) and side.

use super::types::{Color, Piece, PieceType, Square};
use crate::rng::SplitMix64;
use std::sync::LazyLock;

pub struct ZobristKeys {
    board: [[u64; 81]; 32],
    hand: [[[u64; 19]; 7]; 2],
    side: u64,
}

static KEYS: LazyLock<Box<ZobristKeys>> = LazyLock::new(|| {
    // SplitMix64 with a fixed seed: keys are the same in every process, so keys written to
    // disk (dedupe sets, opening books) stay meaningful.
    let mut rng = SplitMix64::new(0x4b45_494d_415f_5a4f);
    let mut next = move || rng.next_u64();
    let mut k = Box::new(ZobristKeys { board: [[0; 81]; 32], hand: [[[0; 19]; 7]; 2], side: 0 });
    for piece in k.board.iter_mut() {
        for sq in piece.iter_mut() {
            *sq = next();
        }
    }
    for color in k.hand.iter_mut() {
        for kind in color.iter_mut() {
            // Count 0 hashes to 0 so an empty hand adds nothing.
            for count in kind.iter_mut().skip(1) {
                *count = next();
            }
        }
    }
    k.side = next();
    k
});

#[inline]
pub fn board_key(piece: Piece, sq: Square) -> u64 {
    KEYS.board[piece.code()][sq.index()]
}

/// Key of holding exactly `count` pieces of `pt` (an unpromoted hand kind).
#[inline]
pub fn hand_key(color: Color, pt: PieceType, count: u32) -> u64 {
    match pt.hand_index() {
        Some(i) => KEYS.hand[color.index()][i][count as usize],
        None => 0,
    }
}

/// XORed in when White is to move.
#[inline]
pub fn side_key() -> u64 {
    KEYS.side
}
