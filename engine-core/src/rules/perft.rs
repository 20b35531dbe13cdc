//! Perft: counts leaves of the legal-move tree, the standard check of move generation.

use super::movegen::MoveList;
use super::position::Position;
use super::types::Move;

/// Number of leaf positions `depth` plies below `pos` (bulk-counted at the last ply).
pub fn perft(pos: &mut Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut list = MoveList::new();
    pos.generate_legal(&mut list);
    if depth == 1 {
        return list.len() as u64;
    }
    let mut nodes = 0;
    for &m in list.iter() {
        let delta = pos.do_move(m);
        nodes += perft(pos, depth - 1);
        pos.undo_move(&delta);
    }
    nodes
}

/// Leaf counts below each legal move of `pos`.
pub fn perft_divide(pos: &mut Position, depth: u32) -> Vec<(Move, u64)> {
    let list = pos.legal_moves();
    list.iter()
        .map(|&m| {
            let delta = pos.do_move(m);
            let n = if depth <= 1 { 1 } else { perft(pos, depth - 1) };
            pos.undo_move(&delta);
            (m, n)
        })
        .collect()
}
