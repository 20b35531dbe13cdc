//! The learner's quiescence search: its score must be the evaluation of the leaf its PV
//! reaches, because the learner trains that leaf. So nothing is pruned by margins or
//! cut off by the transposition table: stand pat, then every capture (the promotion
//! when a capture may promote or not), every evasion in check, ordered by MVV-LVA and
//! then promotions. Deterministic: no table and no learned ordering are used.

use super::score::{INFINITE, MAX_PLY, mated_in};
use super::thread::SearchThread;
use crate::eval::material::piece_value;
use crate::rules::{Move, MoveList, Position};

fn order_score(pos: &Position, m: Move) -> i32 {
    let victim = if m.is_drop() { crate::rules::Piece::EMPTY } else { pos.piece_on(m.to()) };
    if !victim.is_empty() {
        (1 << 28) + piece_value(victim.piece_type()) * 16 - piece_value(m.moved_piece().piece_type()) / 16
    } else if m.is_promotion() {
        (1 << 27) + piece_value(m.moved_piece_after().piece_type())
    } else {
        0
    }
}

impl SearchThread {
    /// Full-window leaf quiescence from the current position: its score and PV.
    pub(super) fn leaf_qsearch_root(&mut self) -> (i32, Vec<Move>) {
        let score = self.leaf_qsearch(-INFINITE, INFINITE, 0);
        (score, self.pv[0].clone())
    }

    fn leaf_qsearch(&mut self, mut alpha: i32, beta: i32, ply: usize) -> i32 {
        self.pv[ply].clear();
        self.nodes += 1;
        if ply >= MAX_PLY {
            return self.evaluate();
        }
        if let Some(s) = self.repetition_score() {
            return s;
        }
        let in_check = self.pos.in_check();
        let mut list = MoveList::new();
        let mut best;
        if in_check {
            self.pos.generate_legal(&mut list);
            if list.is_empty() {
                return mated_in(ply);
            }
            best = -INFINITE;
        } else {
            best = self.evaluate();
            if best >= beta {
                return best;
            }
            alpha = alpha.max(best);
            self.pos.generate_captures(&mut list);
            // Among promotion choices keep the promotion (a non-promotion capture is almost
            // never better, and it doubles the tree).
            let promoting: Vec<Move> = list.iter().copied().filter(|m| m.is_promotion()).collect();
            list.retain(|m| {
                m.is_promotion()
                    || !promoting.iter().any(|p| p.from() == m.from() && p.to() == m.to() && !m.is_drop())
            });
        }
        let mut moves: Vec<(i32, Move)> = list.iter().map(|&m| (order_score(&self.pos, m), m)).collect();
        for i in 0..moves.len() {
            // Selection of the first best: ties keep the generation order.
            let mut b = i;
            for j in i + 1..moves.len() {
                if moves[j].0 > moves[b].0 {
                    b = j;
                }
            }
            moves.swap(i, b);
            let m = moves[i].1;
            let d = self.do_move(m);
            let score = -self.leaf_qsearch(-beta, -alpha, ply + 1);
            self.undo_move(&d);
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    let (head, tail) = self.pv.split_at_mut(ply + 1);
                    head[ply].clear();
                    head[ply].push(m);
                    head[ply].extend_from_slice(&tail[0]);
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        best
    }
}
