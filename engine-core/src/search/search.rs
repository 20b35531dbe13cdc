//! Alpha-beta search: iterative deepening, principal-variation search, transposition
//! table, quiescence (captures; all evasions when in check), move ordering (TT move,
//! MVV-LVA captures, killers, history), null-move pruning, late-move reductions, check
//! extension, repetition / perpetual-check and entering-king rules, and optional
//! mate-in-1 detection at nodes. Single-threaded and deterministic for a fixed depth or
//! node count.

use super::limits::{Limits, SearchOptions};
use super::mate::{DfPn, MateResult, mate_in_one};
use super::tt::{Bound, TranspositionTable, TtEntry, tt_move};
use crate::eval::material::piece_value;
use crate::eval::{EvalState, Evaluator};
use crate::rules::game::can_declare_win;
use crate::rules::{Move, MoveDelta, MoveList, Position};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub const MATE: i32 = 32000;
pub const MATE_IN_MAX_PLY: i32 = MATE - 1000;
/// Score of a repetition won because the opponent checked with every move.
pub const PERPETUAL_WIN: i32 = 28000;
pub const INFINITE: i32 = 32001;
pub const MAX_PLY: usize = 120;

/// Progress of one finished iteration (USI `info`).
#[derive(Clone, Debug)]
pub struct Info {
    pub depth: i32,
    pub seldepth: i32,
    pub score: i32,
    pub nodes: u64,
    pub elapsed: Duration,
    pub hashfull: u32,
    pub pv: Vec<Move>,
}

impl Info {
    pub fn nps(&self) -> u64 {
        let ms = self.elapsed.as_millis().max(1) as u64;
        self.nodes * 1000 / ms
    }

    /// Mate distance in plies (positive: we mate) if the score is a mate score.
    pub fn mate_in(&self) -> Option<i32> {
        if self.score >= MATE_IN_MAX_PLY {
            Some(MATE - self.score)
        } else if self.score <= -MATE_IN_MAX_PLY {
            Some(-(MATE + self.score))
        } else {
            None
        }
    }
}

#[derive(Clone, Debug)]
pub struct SearchResult {
    /// `Move::NONE` when there is no legal move (resign) or the side declares a win.
    pub best_move: Move,
    /// The side to move may declare an entering-king win (USI `bestmove win`).
    pub declare_win: bool,
    pub score: i32,
    pub depth: i32,
    pub seldepth: i32,
    pub nodes: u64,
    pub elapsed: Duration,
    /// Principal variation, including its quiescence tail.
    pub pv: Vec<Move>,
}

pub struct Searcher {
    evaluator: Arc<Evaluator>,
    tt: Arc<TranspositionTable>,
    stop: Arc<AtomicBool>,
    pub options: SearchOptions,
    pos: Position,
    estate: EvalState,
    /// Keys and in-check flags of the game so far plus the current search path.
    keys: Vec<u64>,
    checks: Vec<bool>,
    killers: Vec<[Move; 2]>,
    history: Vec<[i32; 81]>,
    pv: Vec<Vec<Move>>,
    nodes: u64,
    seldepth: i32,
    /// Depth of the current iteration: bounds the check extension.
    root_depth: i32,
    start: Instant,
    limits: Limits,
}

/// Ordering score of a move: TT move, then captures by MVV-LVA, killers, history.
fn victim_value(pos: &Position, m: Move) -> i32 {
    if m.is_drop() {
        return 0;
    }
    let v = pos.piece_on(m.to());
    if v.is_empty() { 0 } else { piece_value(v.piece_type()) }
}

impl Searcher {
    pub fn new(evaluator: Arc<Evaluator>, tt: Arc<TranspositionTable>) -> Searcher {
        let pos = Position::startpos();
        let estate = evaluator.new_state(&pos);
        Searcher {
            evaluator,
            tt,
            stop: Arc::new(AtomicBool::new(false)),
            options: SearchOptions::default(),
            pos,
            estate,
            keys: vec![pos.key()],
            checks: vec![pos.in_check()],
            killers: vec![[Move::NONE; 2]; MAX_PLY + 2],
            history: vec![[0; 81]; 32],
            pv: vec![Vec::new(); MAX_PLY + 2],
            nodes: 0,
            seldepth: 0,
            root_depth: 1,
            start: Instant::now(),
            limits: Limits::default(),
        }
    }

    /// The flag that stops a running search (USI `stop`, signals).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    pub fn evaluator(&self) -> &Arc<Evaluator> {
        &self.evaluator
    }

    pub fn position(&self) -> &Position {
        &self.pos
    }

    /// Sets the game: a start position and the moves played (for repetition detection).
    /// Moves must be legal.
    pub fn set_position(&mut self, start: &Position, moves: &[Move]) {
        self.pos = *start;
        self.keys.clear();
        self.checks.clear();
        self.keys.push(start.key());
        self.checks.push(start.in_check());
        for &m in moves {
            self.pos.do_move(m);
            self.keys.push(self.pos.key());
            self.checks.push(self.pos.in_check());
        }
        self.estate = self.evaluator.new_state(&self.pos);
    }

    /// Clears killers and history (between games, for reproducibility).
    pub fn clear_heuristics(&mut self) {
        self.killers.iter_mut().for_each(|k| *k = [Move::NONE; 2]);
        self.history.iter_mut().for_each(|h| *h = [0; 81]);
    }

    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    fn do_move(&mut self, m: Move) -> MoveDelta {
        let d = self.pos.do_move(m);
        self.evaluator.do_move(&mut self.estate, &d, &self.pos);
        self.keys.push(self.pos.key());
        self.checks.push(self.pos.in_check());
        d
    }

    fn undo_move(&mut self, d: &MoveDelta) {
        self.keys.pop();
        self.checks.pop();
        self.evaluator.undo_move(&mut self.estate, d);
        self.pos.undo_move(d);
    }

    fn evaluate(&self) -> i32 {
        self.evaluator.evaluate(&self.estate, &self.pos).eval.clamp(-MATE_IN_MAX_PLY + 1, MATE_IN_MAX_PLY - 1)
    }

    /// Score of a repetition of the current position within the game or search, if any.
    fn repetition_score(&self) -> Option<i32> {
        let n = self.keys.len() - 1;
        let key = self.keys[n];
        // The same side is to move every two plies, and no position recurs within two.
        for i in (0..=n.saturating_sub(4)).rev().step_by(2).filter(|_| n >= 4) {
            if self.keys[i] == key {
                // Positions i+1..=n: those with the current side to move were reached by the
                // opponent's moves.
                let them_all_checks =
                    (i + 1..=n).filter(|&k| (n - k).is_multiple_of(2)).all(|k| self.checks[k]);
                let us_all_checks = (i + 1..=n).filter(|&k| (n - k) % 2 == 1).all(|k| self.checks[k]);
                return Some(if them_all_checks {
                    PERPETUAL_WIN
                } else if us_all_checks {
                    -PERPETUAL_WIN
                } else {
                    0
                });
            }
        }
        None
    }

    fn time_up(&mut self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return true;
        }
        if let Some(max) = self.limits.nodes
            && self.nodes >= max
        {
            self.stop.store(true, Ordering::Relaxed);
            return true;
        }
        if self.nodes & 1023 == 0
            && let Some(t) = self.limits.time
            && self.start.elapsed() >= t
        {
            self.stop.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    fn order_moves(&self, list: &MoveList, tt_mv: Option<Move>, ply: usize) -> Vec<(i32, Move)> {
        let killers = self.killers[ply];
        list.iter()
            .map(|&m| {
                let score = if Some(m) == tt_mv {
                    1 << 30
                } else {
                    let victim = victim_value(&self.pos, m);
                    if victim > 0 {
                        (1 << 28) + victim * 16 - piece_value(m.moved_piece().piece_type()) / 16
                    } else if m.is_promotion() {
                        (1 << 27) + piece_value(m.moved_piece_after().piece_type())
                    } else if m == killers[0] {
                        1 << 26
                    } else if m == killers[1] {
                        (1 << 26) - 1
                    } else {
                        self.history[m.moved_piece().code()][m.to().index()]
                    }
                };
                (score, m)
            })
            .collect()
    }

    /// Picks the best remaining move by selection (cheap when a cutoff comes early).
    fn pick(moves: &mut [(i32, Move)], i: usize) -> Move {
        let mut best = i;
        for j in i + 1..moves.len() {
            if moves[j].0 > moves[best].0 {
                best = j;
            }
        }
        moves.swap(i, best);
        moves[i].1
    }

    fn update_pv(&mut self, ply: usize, m: Move) {
        let (head, tail) = self.pv.split_at_mut(ply + 1);
        let line = &mut head[ply];
        line.clear();
        line.push(m);
        line.extend_from_slice(&tail[0]);
    }

    fn search(&mut self, mut alpha: i32, beta: i32, depth: i32, ply: usize, null_ok: bool) -> i32 {
        self.pv[ply].clear();
        if depth <= 0 {
            return self.qsearch(alpha, beta, ply);
        }
        self.nodes += 1;
        self.seldepth = self.seldepth.max(ply as i32);
        if self.time_up() {
            return 0;
        }
        let pv_node = beta - alpha > 1;
        if ply > 0 {
            if let Some(s) = self.repetition_score() {
                return s;
            }
            if self.options.declaration && can_declare_win(&self.pos) {
                return MATE - ply as i32;
            }
            // Mate-distance pruning.
            let a = alpha.max(-MATE + ply as i32);
            let b = beta.min(MATE - ply as i32 - 1);
            if a >= b {
                return a;
            }
        }
        if ply >= MAX_PLY {
            return self.evaluate();
        }
        let in_check = self.pos.in_check();
        let key = self.pos.key();
        let tt_entry = self.tt.probe(key);
        let tt_mv = tt_entry.and_then(|e| tt_move(&self.pos, e.move16));
        if let Some(e) = tt_entry
            && !pv_node
            && e.depth >= depth
        {
            let s = score_from_tt(e.score, ply);
            let usable = match e.bound {
                Bound::Exact => true,
                Bound::Lower => s >= beta,
                Bound::Upper => s <= alpha,
            };
            if usable {
                return s;
            }
        }
        // Mate in one near the horizon, where finding it saves a ply of search.
        if self.options.mate1
            && !in_check
            && ply > 0
            && depth <= 2
            && let Some(m) = mate_in_one(&self.pos)
        {
            self.pv[ply].push(m);
            return MATE - ply as i32 - 1;
        }
        let static_eval = if in_check { -INFINITE } else { self.evaluate() };
        // Null move: if passing still beats beta, a real move will too.
        if self.options.null_move && null_ok && !pv_node && !in_check && depth >= 3 && static_eval >= beta {
            let r = 2 + depth / 4;
            let d = self.pos.do_null_move();
            self.keys.push(self.pos.key());
            self.checks.push(false);
            let score = -self.search(-beta, -beta + 1, depth - 1 - r, ply + 1, false);
            self.keys.pop();
            self.checks.pop();
            self.pos.undo_null_move(&d);
            if self.stop.load(Ordering::Relaxed) {
                return 0;
            }
            if score >= beta {
                return if score >= MATE_IN_MAX_PLY { beta } else { score };
            }
        }
        let mut list = MoveList::new();
        self.pos.generate_legal(&mut list);
        if list.is_empty() {
            return -MATE + ply as i32;
        }
        let mut moves = self.order_moves(&list, tt_mv, ply);
        let mut best = -INFINITE;
        let mut best_move = Move::NONE;
        let original_alpha = alpha;
        for i in 0..moves.len() {
            let m = Self::pick(&mut moves, i);
            let is_quiet = victim_value(&self.pos, m) == 0 && !m.is_promotion();
            let gives_check = self.pos.gives_check(m);
            let d = self.do_move(m);
            let mut new_depth = depth - 1;
            // Check extension, one ply per check and only within twice the iteration's
            // depth: a checking sequence then still loses a ply per move pair, so it ends.
            // (Extending evasions as well kept the depth constant through long strings of
            // checks and drops: a depth-1 search could take millions of nodes.)
            if gives_check && ply < 2 * self.root_depth as usize {
                new_depth += 1;
            }
            let mut score;
            if i == 0 {
                score = -self.search(-beta, -alpha, new_depth, ply + 1, true);
            } else {
                let reduction =
                    if self.options.lmr && is_quiet && !in_check && !gives_check && depth >= 3 && i >= 3 {
                        1 + (i >= 8) as i32 + (depth >= 8) as i32
                    } else {
                        0
                    };
                score = -self.search(-alpha - 1, -alpha, new_depth - reduction, ply + 1, true);
                if score > alpha && reduction > 0 {
                    score = -self.search(-alpha - 1, -alpha, new_depth, ply + 1, true);
                }
                if score > alpha && score < beta {
                    score = -self.search(-beta, -alpha, new_depth, ply + 1, true);
                }
            }
            self.undo_move(&d);
            if self.stop.load(Ordering::Relaxed) {
                return 0;
            }
            if score > best {
                best = score;
                best_move = m;
                if score > alpha {
                    alpha = score;
                    self.update_pv(ply, m);
                    if score >= beta {
                        if is_quiet {
                            let k = &mut self.killers[ply];
                            if k[0] != m {
                                k[1] = k[0];
                                k[0] = m;
                            }
                            let h = &mut self.history[m.moved_piece().code()][m.to().index()];
                            *h = (*h + depth * depth).min(1 << 20);
                        }
                        break;
                    }
                }
            }
        }
        let bound = if best >= beta {
            Bound::Lower
        } else if best > original_alpha {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.tt.store(
            key,
            TtEntry {
                move16: best_move.to_move16(),
                score: score_to_tt(best, ply),
                eval: static_eval.clamp(-30000, 30000),
                depth,
                bound,
            },
        );
        best
    }

    /// Quiescence search: stand pat, then captures (every evasion when in check).
    fn qsearch(&mut self, mut alpha: i32, beta: i32, ply: usize) -> i32 {
        self.pv[ply].clear();
        self.nodes += 1;
        self.seldepth = self.seldepth.max(ply as i32);
        if self.time_up() {
            return 0;
        }
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
                return -MATE + ply as i32;
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
        let mut moves = self.order_moves(&list, None, ply);
        for i in 0..moves.len() {
            let m = Self::pick(&mut moves, i);
            let d = self.do_move(m);
            let score = -self.qsearch(-beta, -alpha, ply + 1);
            self.undo_move(&d);
            if self.stop.load(Ordering::Relaxed) {
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    self.update_pv(ply, m);
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        best
    }

    /// Quiescence search from the current position with a full window: its score and PV.
    /// Playing the PV reaches the leaf whose evaluation the learner trains.
    pub fn qsearch_root(&mut self) -> (i32, Vec<Move>) {
        self.stop.store(false, Ordering::Relaxed);
        self.limits = Limits::default();
        let score = self.qsearch(-INFINITE, INFINITE, 0);
        (score, self.pv[0].clone())
    }

    /// Iterative deepening within `limits`; `on_iteration` sees each finished depth.
    pub fn go(&mut self, limits: Limits, mut on_iteration: impl FnMut(&Info)) -> SearchResult {
        self.start = Instant::now();
        self.limits = limits;
        self.nodes = 0;
        self.seldepth = 0;
        self.stop.store(false, Ordering::Relaxed);
        self.tt.new_search();
        let root_moves = self.pos.legal_moves();
        let mut result = SearchResult {
            best_move: Move::NONE,
            declare_win: false,
            score: -MATE,
            depth: 0,
            seldepth: 0,
            nodes: 0,
            elapsed: Duration::ZERO,
            pv: Vec::new(),
        };
        if self.options.declaration && can_declare_win(&self.pos) {
            result.declare_win = true;
            result.score = MATE;
            return result;
        }
        if root_moves.is_empty() {
            return result;
        }
        result.best_move = root_moves[0];
        if self.options.root_mate_nodes > 0 && !self.pos.in_check() {
            let mut dfpn = DfPn::new(self.options.root_mate_nodes, 31);
            let outcome = dfpn.search(&self.pos);
            self.nodes += dfpn.nodes();
            if let MateResult::Mate(line) = outcome {
                result.best_move = line[0];
                result.score = MATE - line.len() as i32;
                result.depth = line.len() as i32;
                result.pv = line;
                result.nodes = self.nodes;
                result.elapsed = self.start.elapsed();
                on_iteration(&Info {
                    depth: result.depth,
                    seldepth: result.depth,
                    score: result.score,
                    nodes: self.nodes,
                    elapsed: result.elapsed,
                    hashfull: self.tt.hashfull(),
                    pv: result.pv.clone(),
                });
                return result;
            }
        }
        let max_depth = limits.depth.unwrap_or(MAX_PLY as i32 - 10).clamp(1, MAX_PLY as i32 - 10);
        for depth in 1..=max_depth {
            self.root_depth = depth;
            let score = self.search(-INFINITE, INFINITE, depth, 0, false);
            let stopped = self.stop.load(Ordering::Relaxed);
            if stopped && depth > 1 {
                // An unfinished iteration: keep its move only if it is the same as or
                // better-founded than the last (its first move was searched fully).
                if let Some(&m) = self.pv[0].first()
                    && (m == result.best_move || score > result.score)
                {
                    result.best_move = m;
                }
                break;
            }
            if let Some(&m) = self.pv[0].first() {
                result.best_move = m;
                result.pv = self.pv[0].clone();
            }
            result.score = score;
            result.depth = depth;
            result.seldepth = self.seldepth;
            let info = Info {
                depth,
                seldepth: self.seldepth,
                score,
                nodes: self.nodes,
                elapsed: self.start.elapsed(),
                hashfull: self.tt.hashfull(),
                pv: result.pv.clone(),
            };
            on_iteration(&info);
            if stopped || score.abs() >= MATE_IN_MAX_PLY && depth >= MATE - score.abs() {
                break;
            }
            if let Some(soft) = limits.soft_time
                && self.start.elapsed() >= soft
            {
                break;
            }
        }
        result.nodes = self.nodes;
        result.elapsed = self.start.elapsed();
        result
    }
}

fn score_to_tt(s: i32, ply: usize) -> i32 {
    if s >= MATE_IN_MAX_PLY {
        s + ply as i32
    } else if s <= -MATE_IN_MAX_PLY {
        s - ply as i32
    } else {
        s
    }
}

fn score_from_tt(s: i32, ply: usize) -> i32 {
    if s >= MATE_IN_MAX_PLY {
        s - ply as i32
    } else if s <= -MATE_IN_MAX_PLY {
        s + ply as i32
    } else {
        s
    }
}
