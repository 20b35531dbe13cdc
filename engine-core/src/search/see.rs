//! Static exchange evaluation: the material outcome of the capture sequence a move starts
//! on its destination square, each side recapturing with its least valuable piece and
//! free to stop when going on would lose. Sliders behind a capturer join in (x-rays).
//!
//! Values are *capture* values: taking a piece in shogi removes it from the opponent and
//! puts it in our hand, so a capture is worth the piece's board value plus the value of
//! its unpromoted kind in hand (a pawn 180, a dragon 2,385). Pins and the promotions a
//! recapture could make are ignored, as usual for SEE: it orders and prunes, it does not
//! decide.

use crate::eval::material::piece_value;
use crate::rules::{Bitboard, Color, Move, PieceType, Position};

/// What capturing a piece of this kind gains: its board value plus its value in hand.
#[inline]
pub const fn capture_value(pt: PieceType) -> i32 {
    match pt {
        PieceType::King => 30000,
        _ => piece_value(pt) + piece_value(pt.unpromote()),
    }
}

/// Attackers from the least to the most valuable (by capture value).
const ATTACKER_ORDER: [PieceType; 14] = [
    PieceType::Pawn,
    PieceType::Lance,
    PieceType::ProPawn,
    PieceType::Knight,
    PieceType::ProLance,
    PieceType::ProKnight,
    PieceType::Silver,
    PieceType::ProSilver,
    PieceType::Gold,
    PieceType::Bishop,
    PieceType::Horse,
    PieceType::Rook,
    PieceType::Dragon,
    PieceType::King,
];

/// The value of what a move captures (0 for drops and non-captures).
#[inline]
pub fn captured_value(pos: &Position, m: Move) -> i32 {
    if m.is_drop() {
        return 0;
    }
    let victim = pos.piece_on(m.to());
    if victim.is_empty() { 0 } else { capture_value(victim.piece_type()) }
}

/// Does the exchange started by the legal move `m` gain at least `threshold`?
pub fn see_ge(pos: &Position, m: Move, threshold: i32) -> bool {
    let to = m.to();
    let us = m.moved_piece().color();
    let mut swap = captured_value(pos, m) - threshold;
    if swap < 0 {
        return false;
    }
    swap = capture_value(m.moved_piece_after().piece_type()) - swap;
    if swap <= 0 {
        return true;
    }
    let mut occ = pos.occupied() | Bitboard::from_square(to);
    if !m.is_drop() {
        occ.clear(m.from());
    }
    let mut stm = us;
    // `res` is 1 while the side that moved first is ahead of the threshold.
    let mut res = 1;
    loop {
        stm = stm.opponent();
        let stm_attackers = pos.attackers_to(stm, to, occ) & occ;
        if stm_attackers.is_empty() {
            break;
        }
        res ^= 1;
        let (pt, from) = least_valuable(pos, stm, stm_attackers);
        if pt == PieceType::King {
            // The king may only take if the other side has nothing left to retake with.
            let theirs = pos.attackers_to(stm.opponent(), to, occ) & occ;
            return if theirs.any() { res ^ 1 == 1 } else { res == 1 };
        }
        swap = capture_value(pt) - swap;
        if swap < res {
            break;
        }
        occ.clear(from);
    }
    res == 1
}

fn least_valuable(pos: &Position, color: Color, attackers: Bitboard) -> (PieceType, crate::rules::Square) {
    for pt in ATTACKER_ORDER {
        let b = attackers & pos.pieces(color, pt);
        if b.any() {
            return (pt, b.lsb());
        }
    }
    unreachable!("attackers is not empty")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(sfen: &str) -> Position {
        Position::from_sfen(sfen).unwrap()
    }

    /// The exact SEE value, found as the largest threshold `see_ge` accepts.
    fn see_value(p: &Position, usi: &str) -> i32 {
        let m = p.parse_usi_move(usi).unwrap();
        let (mut lo, mut hi) = (-40_000, 40_000);
        assert!(see_ge(p, m, lo) && !see_ge(p, m, hi));
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if see_ge(p, m, mid) { lo = mid } else { hi = mid }
        }
        lo
    }

    #[test]
    fn known_exchanges() {
        // Pawn takes an undefended pawn: +180.
        assert_eq!(see_value(&pos("4k4/9/9/9/4p4/4P4/9/9/K8 b - 1"), "5f5e"), 180);
        // Rook takes a pawn defended by a silver: 180 - 1980.
        assert_eq!(see_value(&pos("4k4/9/9/5s3/4p4/9/9/9/K3R4 b - 1"), "5i5e"), -1800);
        // X-ray: the second rook retakes the lance through the first rook's square:
        // +180 (pawn) - 1980 (rook) + 630 (lance).
        assert_eq!(see_value(&pos("4l3k/9/9/9/4p4/9/9/4R4/K3R4 b - 1"), "5h5e"), -1170);
        // Without the second rook the lance's recapture stands.
        assert_eq!(see_value(&pos("4l3k/9/9/9/4p4/9/9/4R4/K8 b - 1"), "5h5e"), -1800);
        // A gold dropped where a pawn takes it loses the gold; on a safe square nothing.
        let p = pos("4k4/9/9/4p4/9/9/9/9/K8 b G 1");
        assert_eq!(see_value(&p, "G*5e"), -1080);
        assert_eq!(see_value(&p, "G*1e"), 0);
        // Pawn takes pawn (+180), silver retakes (-180), silver retakes (+990), gold
        // retakes (-990): every capture is answered, and the pawns trade evenly.
        let p = pos("4k4/9/9/3gs4/4p4/4PS3/4S4/9/K8 b - 1");
        assert_eq!(see_value(&p, "5f5e"), 0);
        // A pawn defended only by the king: with a rook behind the bishop the king may
        // not retake; without it, it does.
        let p = pos("9/9/9/3k5/4p4/9/9/4R4/K7B b - 1");
        assert_eq!(see_value(&p, "1i5e"), 180);
        let p = pos("9/9/9/3k5/4p4/9/9/9/K7B b - 1");
        assert_eq!(see_value(&p, "1i5e"), 180 - 1710);
    }

    #[test]
    fn see_is_monotone_in_the_threshold_over_random_positions() {
        let suite = crate::rules::random_walk::capture_heavy_suite(60, 7);
        let mut checked = 0;
        for p in &suite {
            for &m in p.legal_moves().iter() {
                let mut last = true;
                for t in (-3000..=3000).step_by(90) {
                    let now = see_ge(p, m, t);
                    assert!(last || !now, "see_ge not monotone for {m} in {}", p.to_sfen());
                    last = now;
                }
                // A capture gains at most the captured piece.
                assert!(!see_ge(p, m, captured_value(p, m) + 1), "{m} in {}", p.to_sfen());
                checked += 1;
            }
        }
        assert!(checked > 1000);
    }
}
