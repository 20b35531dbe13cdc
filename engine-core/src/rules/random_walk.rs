//! Seeded random games for tests and benchmarks: positions far from the opening, with
//! material traded and pieces in hand, where checks and drops abound.

use super::Position;

/// xorshift64 from `seed` (0 is mapped to 1).
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// The position after 40..120 plies of a capture-heavy random game (a capture two times
/// in three when one exists; the game stops early at a position without legal moves).
pub fn capture_heavy_position(next: &mut impl FnMut() -> u64) -> Position {
    let mut pos = Position::startpos();
    for _ in 0..(40 + next() % 80) {
        let l = pos.legal_moves();
        if l.is_empty() {
            break;
        }
        let caps: Vec<_> =
            l.iter().copied().filter(|m| !m.is_drop() && !pos.piece_on(m.to()).is_empty()).collect();
        let m = if !caps.is_empty() && !next().is_multiple_of(3) {
            caps[(next() % caps.len() as u64) as usize]
        } else {
            l[(next() % l.len() as u64) as usize]
        };
        pos.do_move(m);
    }
    pos
}

/// `count` positions from `capture_heavy_position` (with `xorshift(seed)`) that still have
/// a legal move: the same seed gives the same suite.
pub fn capture_heavy_suite(count: usize, seed: u64) -> Vec<Position> {
    let mut next = xorshift(seed);
    std::iter::repeat_with(|| capture_heavy_position(&mut next))
        .filter(|p| p.has_legal_move())
        .take(count)
        .collect()
}
