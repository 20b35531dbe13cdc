//! The principal-variation search.
//!
//! Main search, in the order a node applies them: repetition, declaration and
//! mate-distance pruning; transposition-table cutoff (non-PV nodes); static evaluation
//! (cached in the table, then corrected by the correction history, which each node's
//! result updates); reverse futility pruning; null move (with a verification
//! search at high depth); internal iterative reduction; then the moves in staged
//! order with, per move, late-move (move-count) pruning, futility pruning,
//! continuation-history pruning and SEE pruning at shallow depth, singular extension of
//! the TT move (with multi-cut, and a negative extension when it is not singular), a
//! bounded check extension, and late-move reductions from a log-log table adjusted by the
//! move's history, the node type, whether the evaluation is improving and how often moves
//! one ply down failed high.
//!
//! Shogi is not chess here: mating attacks are strings of quiet checks, launched by the
//! side that is often behind in material. So move-count pruning never drops a quiet check
//! (dropping them cost 147 Elo), and there is no razoring (39 Elo); checks that lose
//! material by SEE are pruned like other moves (exempting them cost 109 Elo). See
//! BENCHMARKS.md "Search" for every technique's SPRT.
//!
//! Quiescence search is in `qsearch.rs`.
//!
//! Shogi-specific: no legal move is a loss whether in check or not; a repetition is a
//! draw unless one side checked throughout (then the checker loses); the same board and
//! side to move as before with more (fewer) pieces in the mover's hand is a superior
//! (inferior) position, scored as all but won (lost); an entering-king declaration wins.

use super::history::{NO_ROW, cont_row, stat_bonus};
use super::movepick::is_capture;
use super::score::{
    INFINITE, MATE_IN_MAX_PLY, MAX_PLY, VALUE_NONE, mate_in, mated_in, score_from_tt, score_to_tt,
};
use super::see::{captured_value, see_ge};
use super::thread::{STACK_OFFSET, SearchThread};
use super::tt::{Bound, DEPTH_NONE, TtEntry, tt_move};
use crate::rules::game::can_declare_win;
use crate::rules::{Move, PieceType};

#[inline]
fn futility_move_count(improving: bool, depth: i32) -> i32 {
    (3 + depth * depth) / (2 - improving as i32)
}

/// A move that changes the material balance a lot: captures, and promotions of pawns,
/// bishops and rooks.
#[inline]
fn is_tactical(capture: bool, m: Move) -> bool {
    capture
        || (m.is_promotion()
            && matches!(m.moved_piece().piece_type(), PieceType::Pawn | PieceType::Bishop | PieceType::Rook))
}

impl SearchThread {
    /// The late-move reduction of move number `move_count` at `depth`, in plies.
    #[inline]
    fn reduction(&self, improving: bool, depth: i32, move_count: i32) -> i32 {
        let t = &self.reductions;
        let p = &self.options.params;
        let r = t[depth.clamp(0, 255) as usize] * t[move_count.clamp(0, 255) as usize];
        (r + p.lmr_base) / 1024 + (!improving && r > p.lmr_nonimproving) as i32
    }

    pub(super) fn update_pv(&mut self, ply: usize, m: Move) {
        let (head, tail) = self.pv.split_at_mut(ply + 1);
        let line = &mut head[ply];
        line.clear();
        line.push(m);
        line.extend_from_slice(&tail[0]);
    }

    /// Adds `bonus` to the continuation histories of a move to `row` played at `ply`
    /// after the moves one, two and four plies before.
    fn update_continuation(&mut self, ply: usize, row: usize, bonus: i32) {
        let f = ply + STACK_OFFSET;
        let in_check = self.stack[f].in_check;
        for back in [1, 2, 4] {
            if in_check && back > 2 {
                break;
            }
            let prev = self.stack[f - back].cont_row;
            self.history.update_cont(prev, row, bonus);
        }
    }

    fn update_quiet_stats(&mut self, ply: usize, m: Move, bonus: i32) {
        let f = ply + STACK_OFFSET;
        let k = &mut self.stack[f].killers;
        if k[0] != m {
            k[1] = k[0];
            k[0] = m;
        }
        self.history.update_main(m, bonus);
        self.update_continuation(ply, cont_row(m), bonus);
        let prev = self.stack[f - 1];
        if !prev.null_move && !prev.current_move.is_none() {
            self.history.set_counter_move(prev.cont_row, m);
        }
    }

    /// The main search. `ply` 0 is the root, whose moves come from `root_moves`.
    pub(super) fn search<const PV: bool>(
        &mut self,
        mut alpha: i32,
        mut beta: i32,
        mut depth: i32,
        ply: usize,
        cut_node: bool,
    ) -> i32 {
        let root = ply == 0;
        if depth <= 0 {
            return self.qsearch::<PV>(alpha, beta, 0, ply);
        }
        depth = depth.min(MAX_PLY as i32 - 1);
        if PV {
            self.pv[ply].clear();
            self.seldepth = self.seldepth.max(ply as i32 + 1);
        }
        if self.count_node_and_check_limits() {
            return 0;
        }
        let f = ply + STACK_OFFSET;
        let in_check = self.pos.in_check();
        self.stack[f].in_check = in_check;
        self.stack[f].move_count = 0;
        self.stack[f].double_extensions = self.stack[f - 1].double_extensions;
        self.stack[f + 2].killers = [Move::NONE; 2];
        self.stack[f + 2].cutoff_count = 0;
        self.stack[f + 1].excluded = Move::NONE;
        let prev = self.stack[f - 1];
        let prior_capture = prev.captured;

        if !root {
            if let Some(s) = self.repetition_score() {
                return s;
            }
            if self.options.declaration && can_declare_win(&self.pos) {
                return mate_in(ply);
            }
            if ply >= MAX_PLY {
                return if in_check { 0 } else { self.evaluate() };
            }
            alpha = alpha.max(mated_in(ply));
            beta = beta.min(mate_in(ply + 1));
            if alpha >= beta {
                return alpha;
            }
        }

        let excluded = self.stack[f].excluded;
        let key = self.pos.key();
        let tte = if excluded.is_none() { self.tt.probe(key) } else { None };
        let tt_value = tte.map_or(VALUE_NONE, |e| score_from_tt(e.score, ply));
        let tt_mv = if root {
            self.root_moves[self.pv_idx].mv
        } else {
            tte.and_then(|e| tt_move(&self.pos, e.move16)).unwrap_or(Move::NONE)
        };
        let tt_capture = !tt_mv.is_none() && is_capture(&self.pos, tt_mv);
        if excluded.is_none() {
            self.stack[f].tt_pv = PV || tte.is_some_and(|e| e.pv);
        }
        let tt_pv = self.stack[f].tt_pv;

        // Transposition-table cutoff.
        if !PV
            && let Some(e) = tte
            && e.depth >= depth
            && tt_value != VALUE_NONE
            && e.bound.has(if tt_value >= beta { Bound::Lower } else { Bound::Upper })
        {
            if !tt_mv.is_none() {
                if tt_value >= beta {
                    if !tt_capture {
                        self.update_quiet_stats(ply, tt_mv, stat_bonus(depth));
                    }
                    if prev.move_count <= 2
                        && !prior_capture
                        && !prev.null_move
                        && !prev.current_move.is_none()
                    {
                        self.update_continuation(ply - 1, prev.cont_row, -stat_bonus(depth + 1));
                    }
                } else if !tt_capture {
                    let penalty = -stat_bonus(depth);
                    self.history.update_main(tt_mv, penalty);
                    self.update_continuation(ply, cont_row(tt_mv), penalty);
                }
            }
            return tt_value;
        }

        // Mate in one near the horizon (optional: see `SearchOptions::mate1`).
        if self.options.mate1
            && !in_check
            && !root
            && depth <= 2
            && let Some(m) = super::mate::mate_in_one(&self.pos)
        {
            if PV {
                self.pv[ply].push(m);
            }
            return mate_in(ply + 1);
        }

        // Static evaluation: the table keeps it as evaluated (`raw_eval`); the search uses
        // it corrected by the correction history (`static_eval`). An excluded-move
        // re-entry takes the outer node's and neither corrects nor stores it.
        let static_eval;
        let mut raw_eval = VALUE_NONE;
        let mut eval;
        let improving;
        // (An excluded-move re-entry leaves the outer node's hashes, of this position.)
        let correction_features = if !excluded.is_none() {
            None
        } else if in_check {
            self.forget_features(f);
            None
        } else {
            self.correction_features(f)
        };
        if in_check {
            static_eval = VALUE_NONE;
            eval = VALUE_NONE;
            improving = false;
        } else {
            if !excluded.is_none() {
                static_eval = self.stack[f].static_eval;
                eval = static_eval;
            } else if let Some(e) = tte {
                raw_eval = if e.eval != VALUE_NONE { e.eval } else { self.evaluate() };
                static_eval = self.corrected_eval(raw_eval, correction_features.as_ref());
                eval = static_eval;
                if tt_value != VALUE_NONE
                    && e.bound.has(if tt_value > eval { Bound::Lower } else { Bound::Upper })
                {
                    eval = tt_value;
                }
            } else {
                raw_eval = self.evaluate();
                static_eval = self.corrected_eval(raw_eval, correction_features.as_ref());
                eval = static_eval;
                self.tt.store(
                    key,
                    TtEntry {
                        move16: 0,
                        score: VALUE_NONE,
                        eval: raw_eval,
                        depth: DEPTH_NONE,
                        bound: Bound::None,
                        pv: tt_pv,
                    },
                );
            }
            self.stack[f].static_eval = static_eval;
            let two_back = self.stack[f - 2].static_eval;
            let four_back = self.stack[f - 4].static_eval;
            improving = if two_back != VALUE_NONE {
                static_eval > two_back
            } else {
                four_back == VALUE_NONE || static_eval > four_back
            };
        }
        if in_check {
            self.stack[f].static_eval = VALUE_NONE;
        }

        if !in_check && !root && self.options.pruning {
            // Reverse futility: far above beta, a quiet move will not drop below it.
            if !PV
                && depth < self.options.params.rfp_depth
                && eval - self.options.params.rfp_margin * (depth - improving as i32) >= beta
                && eval < MATE_IN_MAX_PLY
            {
                return eval;
            }
            // Null move: if passing still beats beta, a real move will too.
            if !PV
                && self.options.null_move
                && excluded.is_none()
                && !prev.null_move
                && prev.stat_score < 23000
                && eval >= beta
                && eval >= static_eval
                && static_eval
                    >= beta - self.options.params.nmp_depth_mul * depth - 25 * improving as i32
                        + 80 * tt_pv as i32
                        + self.options.params.nmp_margin
                && (ply as i32 >= self.nmp_min_ply || self.pos.side_to_move() != self.nmp_color)
            {
                let p = &self.options.params;
                let r = ((eval - beta) / p.nmp_eval_div).min(3) + depth / 3 + p.nmp_reduction;
                self.stack[f].current_move = Move::NONE;
                self.stack[f].null_move = true;
                self.stack[f].captured = false;
                self.stack[f].cont_row = NO_ROW;
                let d = self.do_null_move();
                let null_value = -self.search::<false>(-beta, -beta + 1, depth - r, ply + 1, !cut_node);
                self.undo_null_move(&d);
                self.stack[f].null_move = false;
                if self.stopped() {
                    return 0;
                }
                if null_value >= beta {
                    let v = if null_value >= MATE_IN_MAX_PLY { beta } else { null_value };
                    if self.nmp_min_ply != 0 || depth < 14 {
                        return v;
                    }
                    // Verification at high depth, without null moves for this side for a while.
                    self.nmp_min_ply = ply as i32 + 3 * (depth - r) / 4;
                    self.nmp_color = self.pos.side_to_move();
                    let w = self.search::<false>(beta - 1, beta, depth - r, ply, false);
                    self.nmp_min_ply = 0;
                    if w >= beta {
                        return v;
                    }
                }
            }
        }

        // Internal iterative reduction: without a TT move this node was not searched
        // before, and a shallower search costs less and fills the table.
        if !root && tt_mv.is_none() && self.options.pruning {
            if PV {
                depth -= 2;
                if depth <= 0 {
                    return self.qsearch::<PV>(alpha, beta, 0, ply);
                }
            } else if cut_node && depth >= 8 {
                depth -= 2;
            }
        }

        // The moves.
        let cont_rows = [self.stack[f - 1].cont_row, self.stack[f - 2].cont_row, self.stack[f - 4].cont_row];
        let counter = if prev.null_move { Move::NONE } else { self.history.counter_move(prev.cont_row) };
        let mut mp = self.take_picker();
        mp.init_main(&self.pos, tt_mv, depth, self.stack[f].killers, counter, cont_rows);
        let check_info = self.pos.check_info();
        let original_alpha = alpha;
        let mut best = -INFINITE;
        let mut best_move = Move::NONE;
        let mut move_count = 0;
        let mut quiets_searched = [Move::NONE; 64];
        let mut quiets_count = 0;
        let mut captures_searched = [Move::NONE; 32];
        let mut captures_count = 0;
        let mut singular_quiet_lmr = false;
        // MultiPV: the root tries the moves whose lines are not yet found at this depth.
        let mut root_index = if root { self.pv_idx } else { 0 };
        loop {
            let m = if root {
                if root_index >= self.root_moves.len() {
                    break;
                }
                root_index += 1;
                self.root_moves[root_index - 1].mv
            } else {
                let m = mp.next(&self.pos, &self.history);
                if m.is_none() {
                    break;
                }
                m
            };
            if m == excluded {
                continue;
            }
            move_count += 1;
            self.stack[f].move_count = move_count;
            let capture = is_capture(&self.pos, m);
            let tactical = is_tactical(capture, m);
            let gives_check = check_info.gives_check(m);
            let row = cont_row(m);
            let mut new_depth = depth - 1;

            // Pruning at shallow depth, once a line that is not mated is known.
            if !root && best > -MATE_IN_MAX_PLY && self.options.pruning {
                let move_count_pruning = move_count >= futility_move_count(improving, depth);
                if move_count_pruning {
                    mp.skip_quiets_but_checks(&check_info);
                    if !tactical && !gives_check {
                        continue;
                    }
                }
                let lmr_depth = (new_depth - self.reduction(improving, depth, move_count)).max(0);
                let p = &self.options.params;
                if tactical || gives_check {
                    if capture
                        && !gives_check
                        && !in_check
                        && lmr_depth < 6
                        && static_eval
                            + p.fut_capture_base
                            + p.fut_capture_mul * lmr_depth
                            + captured_value(&self.pos, m)
                            <= alpha
                    {
                        continue;
                    }
                    if !see_ge(&self.pos, m, -p.see_capture_mul * depth) {
                        continue;
                    }
                } else {
                    if lmr_depth < 4 + (prev.stat_score > 0 || prev.move_count == 1) as i32
                        && self.history.cont(cont_rows[0], row) < 0
                        && self.history.cont(cont_rows[1], row) < 0
                    {
                        continue;
                    }
                    if !in_check
                        && lmr_depth < 7
                        && static_eval + p.fut_quiet_base + p.fut_quiet_mul * lmr_depth <= alpha
                    {
                        continue;
                    }
                    if !see_ge(&self.pos, m, -(p.see_quiet_base - lmr_depth.min(18)) * lmr_depth * lmr_depth)
                    {
                        continue;
                    }
                }
            }

            // Extensions.
            let mut extension = 0;
            if !root
                && depth >= 7
                && m == tt_mv
                && excluded.is_none()
                && (ply as i32) < 2 * self.root_depth
                && let Some(e) = tte
                && tt_value != VALUE_NONE
                && tt_value.abs() < MATE_IN_MAX_PLY
                && e.bound.has(Bound::Lower)
                && e.depth >= depth - 3
            {
                // Singular extension: is the TT move much better than every other move?
                let singular_beta = tt_value - self.options.params.singular_margin * depth / 16;
                let singular_depth = (depth - 1) / 2;
                self.stack[f].excluded = m;
                let v = self.search::<false>(singular_beta - 1, singular_beta, singular_depth, ply, cut_node);
                self.stack[f].excluded = Move::NONE;
                if self.stopped() {
                    self.give_picker(mp);
                    return 0;
                }
                if v < singular_beta {
                    extension = 1;
                    singular_quiet_lmr = !tt_capture;
                    if !PV
                        && v < singular_beta - self.options.params.double_ext_margin
                        && self.stack[f].double_extensions <= 6
                    {
                        extension = 2;
                    }
                } else if singular_beta >= beta {
                    // Multi-cut: another move beats beta as well.
                    self.give_picker(mp);
                    return singular_beta;
                } else if tt_value >= beta || cut_node || tt_value <= v {
                    // Negative extension: not singular, and the TT move is expected to fail
                    // high anyway (by its value or the node's type) or is no better than
                    // the other moves: it is searched a ply shallower.
                    extension = -1;
                }
            } else if gives_check
                && (ply as i32) < 2 * self.root_depth
                && (check_info.discoverers.contains(m.from()) && !m.is_drop() || see_ge(&self.pos, m, 0))
            {
                // Checks that do not lose material; bounded by twice the iteration depth so
                // that strings of checks still end.
                extension = 1;
            }
            new_depth += extension;
            self.stack[f].double_extensions = self.stack[f - 1].double_extensions + (extension == 2) as i32;

            self.stack[f].current_move = m;
            self.stack[f].captured = capture;
            self.stack[f].cont_row = row;
            // (A singular search at this node overwrote it.)
            self.stack[f].move_count = move_count;
            let delta = self.do_move(m);

            let mut value;
            let do_full_depth;
            let mut did_lmr = false;
            if depth >= 2 && move_count > 1 + root as i32 && self.options.lmr {
                let mut r = self.reduction(improving, depth, move_count);
                if (root || !PV) && depth > 10 && self.best_move_changes <= 2.0 {
                    r += 1;
                }
                if tt_pv {
                    // A PV line's cut node whose TT entry is already as deep: reduce less.
                    r -= if cut_node && tte.is_some_and(|e| e.depth >= depth) { 3 } else { 2 };
                }
                if singular_quiet_lmr {
                    r -= 1;
                }
                if !tactical {
                    if tt_capture {
                        r += 1;
                    }
                    if cut_node {
                        r += 2;
                    }
                    let stat = 2 * self.history.main(m)
                        + self.history.cont(cont_rows[0], row)
                        + self.history.cont(cont_rows[1], row)
                        + self.history.cont(cont_rows[2], row)
                        - 4000;
                    self.stack[f].stat_score = stat;
                    if stat >= -100 && prev.stat_score < -100 {
                        r -= 1;
                    } else if prev.stat_score >= -100 && stat < -100 {
                        r += 1;
                    }
                    r -= stat / self.options.params.lmr_history_div;
                } else {
                    self.stack[f].stat_score = 0;
                    if depth < 8 && move_count > 2 {
                        r += 1;
                    }
                    if cut_node {
                        r += 1;
                    }
                }
                // One ply down (this node's earlier children and their cousins), moves
                // failed high often: that level's moves are refuted easily.
                if self.stack[f + 1].cutoff_count > 3 {
                    r += 1;
                }
                let d = (new_depth - r).clamp(1, new_depth.max(1));
                value = -self.search::<false>(-(alpha + 1), -alpha, d, ply + 1, true);
                do_full_depth = value > alpha && d < new_depth;
                did_lmr = true;
            } else {
                self.stack[f].stat_score = 0;
                value = -INFINITE;
                do_full_depth = !PV || move_count > 1;
            }
            if do_full_depth {
                value = -self.search::<false>(-(alpha + 1), -alpha, new_depth, ply + 1, !cut_node);
                if did_lmr && !tactical {
                    let bonus = if value > alpha { stat_bonus(new_depth) } else { -stat_bonus(new_depth) };
                    self.update_continuation(ply, row, bonus);
                }
            }
            if PV && (move_count == 1 || (value > alpha && (root || value < beta))) {
                value = -self.search::<true>(-beta, -alpha, new_depth, ply + 1, false);
            }
            self.undo_move(&delta);
            if self.stopped() {
                self.give_picker(mp);
                return 0;
            }

            if root {
                let seldepth = self.seldepth;
                let child_pv = self.pv[1].clone();
                let rm =
                    self.root_moves.iter_mut().find(|rm| rm.mv == m).expect("root moves hold every move");
                rm.avg_score = if rm.avg_score == -INFINITE { value } else { (2 * value + rm.avg_score) / 3 };
                if move_count == 1 || value > alpha {
                    rm.score = value;
                    rm.sel_depth = seldepth;
                    rm.pv.clear();
                    rm.pv.push(m);
                    rm.pv.extend_from_slice(&child_pv);
                    // (Only the best line's changes make the time manager think longer.)
                    if move_count > 1 && self.pv_idx == 0 {
                        self.best_move_changes += 1.0;
                    }
                } else {
                    rm.score = -INFINITE;
                }
            }

            if value > best {
                best = value;
                if value > alpha {
                    best_move = m;
                    if PV && !root {
                        self.update_pv(ply, m);
                    }
                    if PV && value < beta {
                        alpha = value;
                    } else {
                        self.stack[f].cutoff_count += 1 + tt_mv.is_none() as i32;
                        break;
                    }
                }
            }
            if m != best_move {
                if capture && captures_count < captures_searched.len() {
                    captures_searched[captures_count] = m;
                    captures_count += 1;
                } else if !capture && quiets_count < quiets_searched.len() {
                    quiets_searched[quiets_count] = m;
                    quiets_count += 1;
                }
            }
        }
        self.give_picker(mp);

        if move_count == 0 {
            // No legal move (other than the excluded one): in shogi that loses, in check or not.
            best = if excluded.is_none() { mated_in(ply) } else { alpha };
        } else if !best_move.is_none() {
            let bonus_best = stat_bonus(depth + 1);
            let bonus_quiet = if best > beta + 90 { bonus_best } else { stat_bonus(depth) };
            if !is_capture(&self.pos, best_move) {
                self.update_quiet_stats(ply, best_move, bonus_quiet);
                for &q in &quiets_searched[..quiets_count] {
                    self.history.update_main(q, -bonus_quiet);
                    self.update_continuation(ply, cont_row(q), -bonus_quiet);
                }
            } else {
                let victim = self.pos.piece_on(best_move.to()).piece_type();
                self.history.update_capture(best_move, victim, bonus_best);
            }
            // The previous move was refuted quickly: it was worse than it looked.
            if !prior_capture
                && !prev.null_move
                && !prev.current_move.is_none()
                && (prev.move_count == 1 || prev.current_move == prev.killers[0])
            {
                self.update_continuation(ply - 1, prev.cont_row, -bonus_best);
            }
            for &c in &captures_searched[..captures_count] {
                let victim = self.pos.piece_on(c.to()).piece_type();
                self.history.update_capture(c, victim, -bonus_best);
            }
        } else if !prior_capture && !prev.null_move && !prev.current_move.is_none() && !root {
            // Every move failed low: the previous move was good; reward it (and its
            // butterfly entry by half), the more so the deeper the node, on an expected
            // line (PV or cut node), far below alpha (about three pawns) or the later the
            // move came in its own node's order (Stockfish 16's weights).
            let weight = (depth > 5) as i32
                + (PV || cut_node) as i32
                + (best < alpha - 280) as i32
                + (prev.move_count > 11) as i32;
            if weight > 0 {
                let bonus = stat_bonus(depth) * weight;
                self.update_continuation(ply - 1, prev.cont_row, bonus);
                self.history.update_main(prev.current_move, bonus / 2);
            }
        }

        // What the search found teaches the correction history, when it says on which
        // side of the static evaluation the truth lies and is not about material won by a
        // capture or about a mate.
        // (No features at excluded-move re-entries: their result is not the node's; nor
        // for the root's later MultiPV lines, which leave its best move out.)
        let whole_node = !(root && self.pv_idx > 0);
        if let Some(features) = correction_features
            && whole_node
            && (best_move.is_none() || !is_capture(&self.pos, best_move))
            && best.abs() < MATE_IN_MAX_PLY
            && !(best >= beta && best <= static_eval)
            && !(best_move.is_none() && best >= static_eval)
        {
            self.correction.update(&features, best - static_eval, depth);
        }

        if excluded.is_none() && whole_node {
            let bound = if best >= beta {
                Bound::Lower
            } else if PV && !best_move.is_none() && best > original_alpha {
                Bound::Exact
            } else {
                Bound::Upper
            };
            self.tt.store(
                key,
                TtEntry {
                    move16: best_move.to_move16(),
                    score: score_to_tt(best, ply),
                    eval: if in_check { VALUE_NONE } else { raw_eval },
                    depth,
                    bound,
                    pv: tt_pv,
                },
            );
        }
        best
    }
}
