//! BonaPiece numbering (fe_end = 1548), as used by the ecosystem's KPPT files.
//!
//! Hand features come first (the i-th piece of a kind in hand, i = 0..n-1, is `base + i`),
//! then 81 board slots per (side, kind), promoted pawn/lance/knight/silver counting as gold.
//! "f" means the viewer's own piece, "e" the opponent's.

use crate::rules::{Color, PieceType, Square};

/// A feature index 0..FE_END; 0 means "no piece" (its table rows are zero).
pub type BonaPiece = u16;

pub const BONA_PIECE_ZERO: BonaPiece = 0;
pub const FE_HAND_END: BonaPiece = 90;
pub const FE_END: usize = 1548;

/// Hand bases [kind in P, L, N, S, G, B, R order][own = 0, opponent's = 1].
const HAND_BASE: [[BonaPiece; 2]; 7] = [[1, 20], [39, 44], [49, 54], [59, 64], [69, 74], [79, 82], [85, 88]];

/// Board base of the own ("f") pieces of a kind; the opponent's ("e") is 81 higher.
const fn board_base(pt: PieceType) -> BonaPiece {
    match pt {
        PieceType::Pawn => 90,
        PieceType::Lance => 252,
        PieceType::Knight => 414,
        PieceType::Silver => 576,
        PieceType::Gold
        | PieceType::ProPawn
        | PieceType::ProLance
        | PieceType::ProKnight
        | PieceType::ProSilver => 738,
        PieceType::Bishop => 900,
        PieceType::Horse => 1062,
        PieceType::Rook => 1224,
        PieceType::Dragon => 1386,
        PieceType::King => 0,
    }
}

/// (Black-view, White-view) indices of a non-king piece of `color` on `sq`.
#[inline]
pub fn board_piece(color: Color, pt: PieceType, sq: Square) -> (BonaPiece, BonaPiece) {
    debug_assert!(pt != PieceType::King);
    let base = board_base(pt);
    let (black_off, white_off) = if color == Color::Black { (0, 81) } else { (81, 0) };
    (base + black_off + sq.index() as BonaPiece, base + white_off + sq.inverse().index() as BonaPiece)
}

/// (Black-view, White-view) indices of the `i`-th (0-based) piece of kind `pt` in
/// `color`'s hand.
#[inline]
pub fn hand_piece(color: Color, pt: PieceType, i: u32) -> (BonaPiece, BonaPiece) {
    let k = pt.hand_index().expect("hand kinds only");
    let own = HAND_BASE[k][0] + i as BonaPiece;
    let opp = HAND_BASE[k][1] + i as BonaPiece;
    if color == Color::Black { (own, opp) } else { (opp, own) }
}

/// The same feature with colours swapped and the board rotated 180 degrees (own ↔
/// opponent's; square → inverse). Maps Black-view indices to White-view ones and back.
pub fn flip(p: BonaPiece) -> BonaPiece {
    if p == BONA_PIECE_ZERO {
        return p;
    }
    if p < FE_HAND_END {
        for [own, opp] in HAND_BASE {
            let width = opp - own;
            if (own..opp).contains(&p) {
                return opp + (p - own);
            }
            if (opp..opp + width).contains(&p) {
                return own + (p - opp);
            }
        }
        unreachable!("every hand index belongs to a kind");
    }
    let slot = (p - FE_HAND_END) / 81;
    let sq = (p - FE_HAND_END) % 81;
    FE_HAND_END + (slot ^ 1) * 81 + (80 - sq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_matches_the_spec() {
        assert_eq!(hand_piece(Color::Black, PieceType::Pawn, 0), (1, 20));
        assert_eq!(hand_piece(Color::White, PieceType::Rook, 1), (89, 86));
        assert_eq!(board_piece(Color::Black, PieceType::Pawn, Square::from_index(0)).0, 90);
        assert_eq!(board_piece(Color::White, PieceType::Pawn, Square::from_index(0)).0, 171);
        assert_eq!(board_piece(Color::White, PieceType::Pawn, Square::from_index(0)).1, 90 + 80);
        let (fb, fw) = board_piece(Color::White, PieceType::Dragon, Square::from_index(80));
        assert_eq!(fb as usize, FE_END - 1);
        assert_eq!(fw, 1386);
        assert_eq!(board_piece(Color::Black, PieceType::ProSilver, Square::from_index(5)).0, 738 + 5);
        // Largest hand index of each kind stays below the next base.
        assert!(hand_piece(Color::White, PieceType::Pawn, 17).0 < 39);
        assert!(hand_piece(Color::White, PieceType::Rook, 1).0 < FE_HAND_END);
    }

    #[test]
    fn flip_maps_black_view_to_white_view() {
        for color in [Color::Black, Color::White] {
            for pt in PieceType::HAND {
                for i in 0..pt.max_count() as u32 {
                    let (b, w) = hand_piece(color, pt, i);
                    assert_eq!(flip(b), w, "{color:?} {pt:?} {i}");
                    assert_eq!(flip(w), b);
                }
            }
            for pt in PieceType::ALL.into_iter().filter(|&p| p != PieceType::King) {
                for sq in Square::all() {
                    let (b, w) = board_piece(color, pt, sq);
                    assert_eq!(flip(b), w);
                    assert_eq!(flip(w), b);
                }
            }
        }
    }
}
