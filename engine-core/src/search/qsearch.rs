//! Quiescence search: stand pat (on the corrected static evaluation), captures (only
//! recaptures deep down) pruned by futility and SEE, quiet checks at the first quiescence
//! ply, and every evasion when in check — but at most two quiet evasions once one line is
//! known not to be mated, which is what keeps drop-interpositions from exploding.

use super::history::cont_row;
use super::movepick::is_capture;
use super::score::{INFINITE, MATE_IN_MAX_PLY, MAX_PLY, VALUE_NONE, mated_in, score_from_tt, score_to_tt};
use super::see::{captured_value, see_ge};
use super::thread::{STACK_OFFSET, SearchThread};
use super::tt::{Bound, DEPTH_NONE, TtEntry, tt_move};
use crate::rules::Move;

impl SearchThread {
    /// Quiescence search (`depth` ≤ 0 counts plies into it).
    pub(super) fn qsearch<const PV: bool>(
        &mut self,
        mut alpha: i32,
        beta: i32,
        depth: i32,
        ply: usize,
    ) -> i32 {
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
        if let Some(s) = self.repetition_score() {
            return s;
        }
        if ply >= MAX_PLY {
            return if in_check { 0 } else { self.evaluate() };
        }
        let original_alpha = alpha;
        let tt_depth = if in_check || depth >= 0 { 0 } else { -1 };
        let key = self.pos.key();
        let tte = self.tt.probe(key);
        let tt_value = tte.map_or(VALUE_NONE, |e| score_from_tt(e.score, ply));
        let tt_mv = tte.and_then(|e| tt_move(&self.pos, e.move16)).unwrap_or(Move::NONE);
        let pv_hit = tte.is_some_and(|e| e.pv);
        if !PV
            && let Some(e) = tte
            && e.depth >= tt_depth
            && tt_value != VALUE_NONE
            && e.bound.has(if tt_value >= beta { Bound::Lower } else { Bound::Upper })
        {
            return tt_value;
        }

        let static_eval;
        let mut raw_eval = VALUE_NONE;
        let mut best;
        let futility_base;
        if in_check {
            static_eval = VALUE_NONE;
            best = -INFINITE;
            futility_base = -INFINITE;
            self.forget_features(f);
        } else {
            raw_eval = match tte {
                Some(e) if e.eval != VALUE_NONE => e.eval,
                _ => self.evaluate(),
            };
            let features = self.correction_features(f);
            static_eval = self.corrected_eval(raw_eval, features.as_ref());
            best = static_eval;
            if let Some(e) = tte
                && tt_value != VALUE_NONE
                && e.bound.has(if tt_value > best { Bound::Lower } else { Bound::Upper })
            {
                best = tt_value;
            }
            if best >= beta {
                if tte.is_none() {
                    self.tt.store(
                        key,
                        TtEntry {
                            move16: 0,
                            score: score_to_tt(best, ply),
                            eval: raw_eval,
                            depth: DEPTH_NONE,
                            bound: Bound::Lower,
                            pv: false,
                        },
                    );
                }
                return best;
            }
            if PV && best > alpha {
                alpha = best;
            }
            futility_base = best + self.options.params.qs_futility;
        }
        self.stack[f].static_eval = static_eval;

        let prev = self.stack[f - 1];
        let recapture =
            (depth <= -5 && !prev.null_move && !prev.current_move.is_none()).then(|| prev.current_move.to());
        let cont_rows = [self.stack[f - 1].cont_row, self.stack[f - 2].cont_row];
        let mut mp = self.take_picker();
        mp.init_qsearch(&self.pos, tt_mv, recapture);
        if depth == 0 && !in_check {
            mp.with_quiet_checks(&self.pos.check_info());
        }
        // Computed at the first move: most quiescence nodes have none.
        let mut discoverers = None;
        let mut best_move = Move::NONE;
        let mut quiet_evasions = 0;
        loop {
            let m = mp.next(&self.pos, &self.history);
            if m.is_none() {
                break;
            }
            let capture = is_capture(&self.pos, m);
            let disc = *discoverers.get_or_insert_with(|| self.pos.discovered_check_candidates());
            let gives_check = self.pos.gives_check_with(m, disc);
            if best > -MATE_IN_MAX_PLY && self.options.pruning {
                if !gives_check && futility_base > -MATE_IN_MAX_PLY {
                    let futility_value = futility_base + captured_value(&self.pos, m);
                    if futility_value <= alpha {
                        best = best.max(futility_value);
                        continue;
                    }
                    if futility_base <= alpha && !see_ge(&self.pos, m, 1) {
                        best = best.max(futility_base);
                        continue;
                    }
                }
                // After two quiet evasions, the rest (mostly drops in the way) are left out.
                if quiet_evasions > 1 {
                    break;
                }
                if !capture {
                    let row = cont_row(m);
                    if self.history.cont(cont_rows[0], row) < 0 && self.history.cont(cont_rows[1], row) < 0 {
                        continue;
                    }
                }
                if !see_ge(&self.pos, m, -self.options.params.qs_see) {
                    continue;
                }
            }
            quiet_evasions += (in_check && !capture) as i32;
            self.stack[f].current_move = m;
            self.stack[f].captured = capture;
            self.stack[f].null_move = false;
            self.stack[f].cont_row = cont_row(m);
            let d = self.do_move(m);
            let value = -self.qsearch::<PV>(-beta, -alpha, depth - 1, ply + 1);
            self.undo_move(&d);
            if self.stopped() {
                self.give_picker(mp);
                return 0;
            }
            if value > best {
                best = value;
                if value > alpha {
                    best_move = m;
                    if PV {
                        self.update_pv(ply, m);
                    }
                    if PV && value < beta {
                        alpha = value;
                    } else {
                        break;
                    }
                }
            }
        }
        self.give_picker(mp);
        if in_check && best == -INFINITE {
            return mated_in(ply);
        }
        let bound = if best >= beta {
            Bound::Lower
        } else if PV && best > original_alpha {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.tt.store(
            key,
            TtEntry {
                move16: best_move.to_move16(),
                score: score_to_tt(best, ply),
                eval: raw_eval,
                depth: tt_depth,
                bound,
                pv: pv_hit,
            },
        );
        best
    }
}
