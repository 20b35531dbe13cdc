//! Seeded random games for tests and benchmarks: positions far from the opening, with
//! material traded and pieces in hand, where checks and drops abound.

use super::{MoveDelta, Position};

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

/// What `walk_tree` shows its visitor: the position after a move was made, or after it
/// was taken back, with the move's delta.
pub enum TreeStep<'a> {
    Made(&'a Position, &'a MoveDelta),
    Undone(&'a Position, &'a MoveDelta),
}

/// A search's walk from `start`: at every node `branching` moves are made, walked below
/// to `depth` plies, and taken back. Drops and captures are picked three times in four,
/// so a drop's hand slot is often reused by a capture below it before the drop is undone
/// (what incremental state must survive). Returns the number of moves made.
pub fn walk_tree(
    start: &Position,
    depth: u32,
    branching: u32,
    next: &mut impl FnMut() -> u64,
    visit: &mut impl FnMut(TreeStep),
) -> u64 {
    fn walk(
        pos: &mut Position,
        depth: u32,
        branching: u32,
        next: &mut impl FnMut() -> u64,
        visit: &mut impl FnMut(TreeStep),
    ) -> u64 {
        let moves: Vec<_> = pos.legal_moves().iter().copied().collect();
        if depth == 0 || moves.is_empty() {
            return 0;
        }
        let preferred: Vec<_> =
            moves.iter().copied().filter(|m| m.is_drop() || !pos.piece_on(m.to()).is_empty()).collect();
        let mut made = 0;
        for _ in 0..branching {
            let from = if !preferred.is_empty() && !next().is_multiple_of(4) { &preferred } else { &moves };
            let m = from[(next() % from.len() as u64) as usize];
            let d = pos.do_move(m);
            visit(TreeStep::Made(pos, &d));
            made += 1 + walk(pos, depth - 1, branching, next, visit);
            pos.undo_move(&d);
            visit(TreeStep::Undone(pos, &d));
        }
        made
    }
    let mut pos = *start;
    walk(&mut pos, depth, branching, next, visit)
}
