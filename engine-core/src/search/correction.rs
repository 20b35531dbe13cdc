//! Correction history: how far the search's results have landed from the static
//! evaluation in positions that share a feature, learned during the search and added to
//! the static evaluation before pruning uses it.
//!
//! An evaluation errs in the same direction across many positions of one search tree:
//! those with the same pawns, the same pieces in hand, the same guard around a king. Each
//! feature has a table (by side to move and a hash of the feature); the correction is
//! the sum of the entries of the position's features, and each entry moves a little
//! towards the part of the error the sum did not explain (a least-mean-squares step),
//! so features that share a cause do not correct it twice.

use crate::rules::attacks::king_attacks;
use crate::rules::{Bitboard, Color, Move, PieceType, Position, Square};

/// Entries per side and feature.
const SIZE: usize = 1 << 14;
/// Entries count sixteenths of an evaluation unit.
const GRAIN: i32 = 16;
/// Largest entry: 48 evaluation units, about half a pawn, per feature.
const LIMIT: i32 = 48 * GRAIN;
/// Largest error learned from one search result, in evaluation units.
const MAX_ERROR: i32 = 256;
/// Largest total correction, in evaluation units: about a pawn.
const MAX_CORRECTION: i32 = 96;

/// Pawns of both sides; pieces in hand of both sides; Black's king and what stands
/// around it; the same for White.
pub const FEATURES: usize = 4;

pub struct CorrectionHistory {
    /// `[feature][side to move][hash]`
    table: Vec<i16>,
}

impl Default for CorrectionHistory {
    fn default() -> Self {
        CorrectionHistory::new()
    }
}

/// SplitMix64's finaliser: spreads every input bit over the output.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[inline]
fn mix128(x: u128, seed: u64) -> u64 {
    mix(mix(seed ^ x as u64) ^ (x >> 64) as u64)
}

/// The king of `color`, its square and the pieces (kind and side) on the squares next to it.
#[inline]
fn king_guard_hash(pos: &Position, color: Color) -> u64 {
    let Some(k) = pos.king_square(color) else { return 0 };
    let mut h = mix(0x6b69_6e67 ^ ((k.index() as u64) << 8) ^ color.index() as u64);
    for sq in (king_attacks(k) & pos.occupied()).iter() {
        h = mix(h ^ ((sq.index() as u64) << 8) ^ pos.piece_on(sq).code() as u64);
    }
    h
}

#[inline]
fn pawns_hash(pawns: [Bitboard; 2]) -> u64 {
    mix128(pawns[0].0, 1) ^ mix128(pawns[1].0, 2)
}

#[inline]
fn pawns_of(pos: &Position) -> [Bitboard; 2] {
    [pos.pieces(Color::Black, PieceType::Pawn), pos.pieces(Color::White, PieceType::Pawn)]
}

/// Indices of the position's features (side to move included).
#[inline]
pub fn feature_indices(pos: &Position) -> [usize; FEATURES] {
    FeatureHashes::of(pos).indices(pos)
}

/// The features' hashes that cost the most to compute (pawns, kings' guards), kept
/// along a line of play so that a move that does not change them does not recompute
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureHashes {
    pawns: [Bitboard; 2],
    pawns_hash: u64,
    kings: [Option<Square>; 2],
    guards: [u64; 2],
}

impl FeatureHashes {
    pub fn of(pos: &Position) -> FeatureHashes {
        let pawns = pawns_of(pos);
        FeatureHashes {
            pawns,
            pawns_hash: pawns_hash(pawns),
            kings: [pos.king_square(Color::Black), pos.king_square(Color::White)],
            guards: [king_guard_hash(pos, Color::Black), king_guard_hash(pos, Color::White)],
        }
    }

    /// The hashes of `pos`, reached by `m` (`Move::NONE`: a null move) from the position
    /// these are for.
    #[inline]
    pub fn after(&self, pos: &Position, m: Move) -> FeatureHashes {
        let pawns = pawns_of(pos);
        let pawns_hash = if pawns == self.pawns { self.pawns_hash } else { pawns_hash(pawns) };
        let mut kings = self.kings;
        let mut guards = self.guards;
        for color in [Color::Black, Color::White] {
            let c = color.index();
            let king = pos.king_square(color);
            let unchanged = match king {
                None => self.kings[c].is_none(),
                Some(k) => {
                    // The guard is the king's square and what stands next to it: a move
                    // that neither leaves nor reaches those squares keeps it.
                    let area = king_attacks(k) | Bitboard::from_square(k);
                    self.kings[c] == Some(k)
                        && (m.is_none()
                            || !(area.contains(m.to()) || !m.is_drop() && area.contains(m.from())))
                }
            };
            if !unchanged {
                kings[c] = king;
                guards[c] = king_guard_hash(pos, color);
            }
        }
        FeatureHashes { pawns, pawns_hash, kings, guards }
    }

    /// Indices of the features of `pos`, the position these hashes are for.
    #[inline]
    pub fn indices(&self, pos: &Position) -> [usize; FEATURES] {
        let side = pos.side_to_move().index();
        let hands = mix(((pos.hand(Color::Black).raw() as u64) << 32) | pos.hand(Color::White).raw() as u64);
        let hashes = [self.pawns_hash, hands, self.guards[0], self.guards[1]];
        let mut out = [0; FEATURES];
        for (i, h) in hashes.into_iter().enumerate() {
            out[i] = (i * 2 + side) * SIZE + (h as usize & (SIZE - 1));
        }
        out
    }
}

impl CorrectionHistory {
    pub fn new() -> CorrectionHistory {
        CorrectionHistory { table: vec![0; FEATURES * 2 * SIZE] }
    }

    pub fn clear(&mut self) {
        self.table.fill(0);
    }

    /// The correction for a position with these features, in evaluation units.
    #[inline]
    pub fn correction(&self, idx: &[usize; FEATURES]) -> i32 {
        let sum: i32 = idx.iter().map(|&i| self.table[i] as i32).sum();
        (sum / GRAIN).clamp(-MAX_CORRECTION, MAX_CORRECTION)
    }

    /// Learns from a search of `depth` that found `error` = result − corrected evaluation
    /// (a bound that says which side of the evaluation the truth lies is enough).
    #[inline]
    pub fn update(&mut self, idx: &[usize; FEATURES], error: i32, depth: i32) {
        // Deeper results are more trustworthy. Four features share each step, so the sum
        // moves by at most 1/8 of the error: one search result is mostly noise.
        let step = error.clamp(-MAX_ERROR, MAX_ERROR) * GRAIN * depth.clamp(1, 8) / 256;
        for &i in idx {
            let e = &mut self.table[i];
            *e = (*e as i32 + step).clamp(-LIMIT, LIMIT) as i16;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_move_towards_the_error_and_stay_bounded() {
        let pos = Position::startpos();
        let idx = feature_indices(&pos);
        let mut c = CorrectionHistory::new();
        assert_eq!(c.correction(&idx), 0);
        // A steady error of +50 is learned, without overshooting it.
        for _ in 0..200 {
            let err = 50 - c.correction(&idx);
            c.update(&idx, err, 8);
        }
        let learned = c.correction(&idx);
        assert!((45..=50).contains(&learned), "{learned}");
        // Huge errors are capped.
        for _ in 0..1000 {
            c.update(&idx, 100_000, 20);
        }
        assert!(c.correction(&idx) <= MAX_CORRECTION);
        assert_eq!(c.correction(&idx), MAX_CORRECTION.min(FEATURES as i32 * LIMIT / GRAIN));
        c.clear();
        assert_eq!(c.correction(&idx), 0);
    }

    #[test]
    fn features_separate_sides_and_positions() {
        let a = Position::startpos();
        let mut b = a;
        let m = b.parse_usi_move("7g7f").expect("legal");
        b.do_move(m);
        let (ia, ib) = (feature_indices(&a), feature_indices(&b));
        // Same hands and kings' guards, other side to move: other entries.
        for f in 0..FEATURES {
            assert_ne!(ia[f], ib[f]);
            assert_eq!(ia[f] / SIZE, 2 * f, "Black to move uses the first half of feature {f}");
            assert_eq!(ib[f] / SIZE, 2 * f + 1);
        }
        // The pawn structure changed; after a White pawn move back to Black, only the
        // pawn feature differs from the start (hands and guards are unchanged).
        let m2 = b.parse_usi_move("3c3d").expect("legal");
        b.do_move(m2);
        let ic = feature_indices(&b);
        assert_ne!(ic[0], ia[0]);
        assert_eq!(&ic[1..], &ia[1..]);
    }

    /// Hashes carried along games (null moves included) are those computed afresh.
    #[test]
    fn carried_hashes_equal_fresh_ones() {
        let mut rng = crate::rng::SplitMix64::new(0x5eed_c0de);
        let (mut reused_guards, mut recomputed_guards, mut steps) = (0, 0, 0);
        for game in 0..60 {
            let mut pos = crate::rules::random_walk::capture_heavy_suite(1, 100 + game)[0];
            let mut h = FeatureHashes::of(&pos);
            for _ in 0..160 {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                let m = if !pos.in_check() && rng.next_u64().is_multiple_of(8) {
                    pos.do_null_move();
                    Move::NONE
                } else {
                    let m = moves[(rng.next_u64() % moves.len() as u64) as usize];
                    pos.do_move(m);
                    m
                };
                let next = h.after(&pos, m);
                let fresh = FeatureHashes::of(&pos);
                assert_eq!(next, fresh, "after {m} in {}", pos.to_sfen());
                assert_eq!(next.indices(&pos), feature_indices(&pos));
                for c in 0..2 {
                    if next.guards[c] == h.guards[c] {
                        reused_guards += 1;
                    } else {
                        recomputed_guards += 1;
                    }
                }
                h = next;
                steps += 1;
            }
        }
        assert!(
            steps > 5000 && reused_guards > 2000 && recomputed_guards > 500,
            "{steps} {reused_guards} {recomputed_guards}"
        );
    }

    #[test]
    fn only_the_kings_neighbourhood_keys_their_guards() {
        let play = |pos: &mut Position, moves: &[&str]| {
            for m in moves {
                let mv = pos.parse_usi_move(m).expect("legal");
                pos.do_move(mv);
            }
        };
        let start = Position::startpos();
        let base = feature_indices(&start);
        // Rooks moving far from both kings: back to Black to move, the same features.
        let mut p = start;
        play(&mut p, &["2h3h", "8b7b"]);
        assert_eq!(feature_indices(&p), base);
        // A gold stepping inside Black's king's neighbourhood: only Black's guard changes.
        play(&mut p, &["6i5h", "7b8b"]);
        let after = feature_indices(&p);
        assert_eq!(after[0], base[0]);
        assert_eq!(after[1], base[1]);
        assert_ne!(after[2], base[2]);
        assert_eq!(after[3], base[3]);
        // A capture changes the hands' feature.
        let mut q = start;
        play(&mut q, &["7g7f", "3c3d", "8h2b+"]);
        play(&mut q, &["3a2b"]);
        let (s, t) = (feature_indices(&start), feature_indices(&q));
        assert_ne!(s[1], t[1]);
    }
}
