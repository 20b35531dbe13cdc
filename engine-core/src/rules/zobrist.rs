//! Zobrist hashing keys: board (piece, square), hand (colour, kind, count) and side.

use super::types::{Color, Piece, PieceType, Square};
use crate::rng::SplitMix64;

struct ZobristKeys {
    board: [[u64; 81]; 32],
    hand: [[[u64; 19]; 7]; 2],
    side: u64,
}

/// Computed at compile time: a lookup is a load from a fixed address.
static KEYS: ZobristKeys = build_keys();

const fn build_keys() -> ZobristKeys {
    // SplitMix64 with a fixed seed: keys are the same in every process, so keys written to
    // disk (dedupe sets, opening books) stay meaningful. The draw order below is part of
    // that contract.
    let mut rng = SplitMix64::new(0x4b45_494d_415f_5a4f);
    let mut k = ZobristKeys { board: [[0; 81]; 32], hand: [[[0; 19]; 7]; 2], side: 0 };
    let mut piece = 0;
    while piece < 32 {
        let mut sq = 0;
        while sq < 81 {
            k.board[piece][sq] = rng.next_u64();
            sq += 1;
        }
        piece += 1;
    }
    let mut color = 0;
    while color < 2 {
        let mut kind = 0;
        while kind < 7 {
            // Count 0 hashes to 0 so an empty hand adds nothing.
            let mut count = 1;
            while count < 19 {
                k.hand[color][kind][count] = rng.next_u64();
                count += 1;
            }
            kind += 1;
        }
        color += 1;
    }
    k.side = rng.next_u64();
    k
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys written to disk must not change: values from an independent SplitMix64
    /// (Python) over the same seed and draw order.
    #[test]
    fn keys_are_the_published_splitmix_draws() {
        assert_eq!(KEYS.board[0][0], 0x69cf_ee94_3da3_8f04);
        assert_eq!(KEYS.board[31][80], 0x52f6_bb3b_9ddf_b136);
        assert_eq!(KEYS.hand[0][0][0], 0);
        assert_eq!(KEYS.hand[0][0][1], 0xa36a_1f79_caf1_4874);
        assert_eq!(side_key(), 0x44a2_d635_2a11_0c07);
    }
}
