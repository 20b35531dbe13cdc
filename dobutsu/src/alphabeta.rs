//! A plain alpha-beta player with a simple evaluation (material, hand pieces, lion
//! advance), for matches and as a teacher whose quality can be measured exactly.

use super::movegen::{MoveList, legal_moves};
use super::rules::{
    CHICK, Color, ELEPHANT, EMPTY, GIRAFFE, HEN, LION, Move, Position, SQUARES, Status, color_of, kind_of,
    rank_of,
};

pub const WIN: i32 = 30_000;

fn piece_value(kind: u8) -> i32 {
    match kind {
        CHICK => 100,
        HEN => 350,
        ELEPHANT => 300,
        GIRAFFE => 400,
        _ => 0,
    }
}

/// Static evaluation for the side to move (centipawn-like).
pub fn evaluate(p: &Position) -> i32 {
    let us = p.side;
    let mut s = 0;
    for sq in 0..SQUARES {
        let x = p.board[sq];
        if x == EMPTY {
            continue;
        }
        let k = kind_of(x);
        let sign = if color_of(x) == us { 1 } else { -1 };
        let mut v = piece_value(k);
        if k == LION {
            // distance advanced from the lion's home rank
            let adv = if color_of(x) == Color::Black { 3 - rank_of(sq) } else { rank_of(sq) };
            v = 30 * adv as i32;
        }
        s += sign * v;
    }
    for (i, k) in [CHICK, ELEPHANT, GIRAFFE].into_iter().enumerate() {
        let h = p.hands[us.index()][i] as i32 - p.hands[us.flip().index()][i] as i32;
        s += h * (piece_value(k) + 20);
    }
    s
}

/// Search statistics and result.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchResult {
    pub best: Option<Move>,
    pub score: i32,
    pub nodes: u64,
}

fn negamax(p: &mut Position, depth: u32, mut alpha: i32, beta: i32, ply: i32, nodes: &mut u64) -> i32 {
    *nodes += 1;
    if p.status() == Status::Lost {
        return -WIN + ply;
    }
    let mut list = MoveList::new();
    legal_moves(p, &mut list);
    // An immediate lion capture ends the search.
    for &m in list.as_slice() {
        let x = p.board[m.to()];
        if x != EMPTY && kind_of(x) == LION {
            return WIN - ply - 1;
        }
    }
    if depth == 0 {
        return evaluate(p);
    }
    if list.is_empty() {
        return -WIN + ply;
    }
    let mut moves: Vec<(i32, Move)> =
        list.as_slice().iter().map(|&m| (piece_value(kind_of(p.board[m.to()])), m)).collect();
    moves.sort_by_key(|x| std::cmp::Reverse(x.0));
    let mut best = -WIN - 1;
    for (_, m) in moves {
        let u = p.do_move(m);
        let v = -negamax(p, depth - 1, -beta, -alpha, ply + 1, nodes);
        p.undo_move(m, u);
        if v > best {
            best = v;
        }
        if v > alpha {
            alpha = v;
        }
        if alpha >= beta {
            break;
        }
    }
    best
}

/// Depth-limited alpha-beta from `pos`; ties between equal moves are broken by `tiebreak`
/// (a seed) so that games vary.
pub fn search(pos: &Position, depth: u32, tiebreak: u64) -> SearchResult {
    let mut p = *pos;
    let mut list = MoveList::new();
    legal_moves(&p, &mut list);
    let mut nodes = 0;
    let mut best: Option<(i32, u64, Move)> = None;
    for (i, &m) in list.as_slice().iter().enumerate() {
        let x = p.board[m.to()];
        let v = if x != EMPTY && kind_of(x) == LION {
            WIN - 1
        } else {
            let u = p.do_move(m);
            let v = -negamax(&mut p, depth.saturating_sub(1), -WIN - 1, WIN + 1, 1, &mut nodes);
            p.undo_move(m, u);
            v
        };
        let tb = super::playout::Rng::new(tiebreak ^ i as u64).next_u64();
        if best.is_none_or(|(bv, btb, _)| v > bv || (v == bv && tb > btb)) {
            best = Some((v, tb, m));
        }
    }
    SearchResult { best: best.map(|b| b.2), score: best.map_or(-WIN, |b| b.0), nodes }
}

/// The score mapped to a win probability for the side to move (σ(score/300)).
pub fn win_probability(score: i32) -> f64 {
    1.0 / (1.0 + (-(score as f64) / 300.0).exp())
}
