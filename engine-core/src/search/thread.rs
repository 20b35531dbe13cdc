//! One search thread: its own position, evaluation state, search stack and histories,
//! and the iterative-deepening loop with aspiration windows. Threads share only the
//! transposition table, the stop flag and their published node counts (Lazy SMP).

use super::correction::{CorrectionHistory, FEATURES as CORRECTION_FEATURES, FeatureHashes};
use super::history::{History, NO_ROW};
use super::limits::{Limits, SearchOptions};
use super::movepick::MovePicker;
use super::score::{
    INFINITE, MATE, MATE_IN_MAX_PLY, MAX_PLY, PERPETUAL_WIN, SUPERIOR_REPETITION, VALUE_NONE,
};
use super::see::captured_value;
use super::time::TimeManager;
use super::tt::TranspositionTable;
use crate::eval::{EvalState, Evaluator};
use crate::rules::{Color, Hand, Move, MoveDelta, Position};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Frames before ply 0, so that "four plies back" is always a valid index.
pub(super) const STACK_OFFSET: usize = 4;
/// Repetitions are looked for this many plies back (game history included).
const MAX_REPETITION_PLY: usize = 32;

/// What repetition detection keeps of a position of the game or the search path.
#[derive(Clone, Copy)]
struct Seen {
    key: u64,
    /// `Position::board_key`: equal for the same board and side to move, whatever the
    /// hands.
    board_key: u64,
    /// The side to move's hand (superior and inferior positions, `repetition_score`).
    hand: Hand,
    in_check: bool,
}

impl Seen {
    fn of(pos: &Position) -> Seen {
        Seen {
            key: pos.key(),
            board_key: pos.board_key(),
            hand: pos.hand(pos.side_to_move()),
            in_check: pos.in_check(),
        }
    }
}

/// Per-ply search state.
#[derive(Clone, Copy)]
pub(super) struct Frame {
    /// The static evaluation as the search uses it (corrected).
    pub static_eval: i32,
    pub current_move: Move,
    /// The move played from this node was a null move.
    pub null_move: bool,
    /// It captured something.
    pub captured: bool,
    pub cont_row: usize,
    pub excluded: Move,
    pub killers: [Move; 2],
    pub move_count: i32,
    pub stat_score: i32,
    pub in_check: bool,
    pub tt_pv: bool,
    pub double_extensions: i32,
    /// Beta cutoffs at this ply since the node two plies up began (a TT-move-less cutoff
    /// counts twice): many mean the moves here are refuted easily, so the node one ply up
    /// reduces its later moves more.
    pub cutoff_count: i32,
}

impl Default for Frame {
    fn default() -> Self {
        Frame {
            static_eval: VALUE_NONE,
            current_move: Move::NONE,
            null_move: false,
            captured: false,
            cont_row: NO_ROW,
            excluded: Move::NONE,
            killers: [Move::NONE; 2],
            move_count: 0,
            stat_score: 0,
            in_check: false,
            tt_pv: false,
            double_extensions: 0,
            cutoff_count: 0,
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct RootMove {
    pub mv: Move,
    pub score: i32,
    pub prev_score: i32,
    pub avg_score: i32,
    pub sel_depth: i32,
    pub pv: Vec<Move>,
}

impl RootMove {
    fn new(mv: Move) -> RootMove {
        RootMove {
            mv,
            score: -INFINITE,
            prev_score: -INFINITE,
            avg_score: -INFINITE,
            sel_depth: 0,
            pv: vec![mv],
        }
    }
}

/// What the threads of one search share besides the table.
pub(super) struct Shared {
    pub stop: Arc<AtomicBool>,
    /// Node counts published by each thread every few thousand nodes.
    pub nodes: Vec<AtomicU64>,
}

/// One line of a finished iteration, as the main thread reports it.
pub(super) struct Iteration {
    pub depth: i32,
    pub seldepth: i32,
    pub score: i32,
    pub pv: Vec<Move>,
    /// The line's rank (1 = best) when the search keeps several (`SearchOptions::multi_pv`).
    pub multipv: Option<usize>,
}

pub(super) struct SearchThread {
    pub id: usize,
    pub evaluator: Arc<Evaluator>,
    pub tt: Arc<TranspositionTable>,
    pub shared: Arc<Shared>,
    pub options: SearchOptions,
    pub limits: Limits,
    pub time: TimeManager,
    pub pos: Position,
    pub estate: EvalState,
    /// The game `set_position` was last given (start and moves), so that a game that goes
    /// on is advanced by its new moves instead of replayed and evaluated from scratch.
    game_start: Position,
    game_moves: Vec<Move>,
    /// The positions of the game so far plus the current search path, for repetitions.
    seen: Vec<Seen>,
    pub stack: Vec<Frame>,
    /// Per frame, the correction features' hashes of its node (`None`: not computed),
    /// which its children carry on instead of recomputing.
    feature_hashes: Vec<Option<FeatureHashes>>,
    pub history: History,
    pub correction: CorrectionHistory,
    /// Move pickers to reuse (a LIFO pool: a node takes one and gives it back).
    pub pickers: Vec<Box<MovePicker>>,
    pub pv: Vec<Vec<Move>>,
    pub nodes: u64,
    pub seldepth: i32,
    pub root_depth: i32,
    pub completed_depth: i32,
    pub root_moves: Vec<RootMove>,
    /// The root move whose line is being searched (MultiPV): moves before it keep the
    /// lines already found at this depth, the search at the root tries it and those after.
    pub pv_idx: usize,
    pub best_move_changes: f64,
    /// Null-move verification: no null move for `nmp_color` before this ply.
    pub nmp_min_ply: i32,
    pub nmp_color: Color,
    /// Side to move at the root (whose view `SearchOptions::contempt` takes).
    pub root_color: Color,
    /// The late-move reduction table of `options.params` (`sync_params` keeps it so).
    pub reductions: [i32; 256],
    reductions_scale: i32,
    /// Nodes of the other threads at the last look (main thread, node limits).
    others_nodes: u64,
}

impl SearchThread {
    pub fn new(
        id: usize,
        evaluator: Arc<Evaluator>,
        tt: Arc<TranspositionTable>,
        shared: Arc<Shared>,
    ) -> SearchThread {
        let pos = Position::startpos();
        let estate = evaluator.new_state(&pos);
        SearchThread {
            id,
            evaluator,
            tt,
            shared,
            options: SearchOptions::default(),
            limits: Limits::default(),
            time: TimeManager::new(Instant::now(), Limits::default()),
            pos,
            estate,
            game_start: pos,
            game_moves: Vec::new(),
            seen: vec![Seen::of(&pos)],
            stack: vec![Frame::default(); MAX_PLY + STACK_OFFSET + 4],
            feature_hashes: vec![None; MAX_PLY + STACK_OFFSET + 4],
            history: History::new(),
            correction: CorrectionHistory::new(),
            pickers: Vec::new(),
            pv: vec![Vec::new(); MAX_PLY + 2],
            nodes: 0,
            seldepth: 0,
            root_depth: 1,
            completed_depth: 0,
            root_moves: Vec::new(),
            pv_idx: 0,
            best_move_changes: 0.0,
            nmp_min_ply: 0,
            nmp_color: Color::Black,
            root_color: Color::Black,
            reductions: SearchOptions::default().params.reductions(),
            reductions_scale: SearchOptions::default().params.lmr_scale,
            others_nodes: 0,
        }
    }

    /// Sets the options of the next search, and the reduction table they call for.
    pub fn set_options(&mut self, options: SearchOptions) {
        self.options = options;
        if options.params.lmr_scale != self.reductions_scale {
            self.reductions = options.params.reductions();
            self.reductions_scale = options.params.lmr_scale;
        }
    }

    /// Sets the game: a start position and the moves played (for repetition detection).
    ///
    /// When the game is the last one set plus moves (the next search of a game), only
    /// the new moves are made, and the evaluation follows them incrementally: the same
    /// sums as from scratch, without a full computation at every root.
    pub fn set_position(&mut self, start: &Position, moves: &[Move]) {
        let goes_on = self.game_start == *start
            && moves.starts_with(&self.game_moves)
            && self.seen.len() == self.game_moves.len() + 1
            && self.estate.at_root();
        if goes_on {
            let new_moves = &moves[self.game_moves.len()..];
            for &m in new_moves {
                let d = self.pos.do_move(m);
                self.evaluator.advance_root(&mut self.estate, &d, &self.pos);
                self.seen.push(Seen::of(&self.pos));
            }
            self.game_moves.extend_from_slice(new_moves);
        } else {
            self.pos = *start;
            self.seen.clear();
            self.seen.push(Seen::of(start));
            for &m in moves {
                self.pos.do_move(m);
                self.seen.push(Seen::of(&self.pos));
            }
            self.evaluator.reset_state(&mut self.estate, &self.pos);
            self.game_start = *start;
            self.game_moves.clear();
            self.game_moves.extend_from_slice(moves);
        }
    }

    /// Copies another thread's game (same position, history and evaluation state).
    pub fn copy_position(&mut self, from: &SearchThread) {
        self.pos = from.pos;
        self.seen.clone_from(&from.seen);
        self.estate.clone_from(&from.estate);
        self.game_start = from.game_start;
        self.game_moves.clone_from(&from.game_moves);
    }

    pub fn clear_heuristics(&mut self) {
        self.history.clear();
        self.correction.clear();
        self.stack.iter_mut().for_each(|f| *f = Frame::default());
        self.feature_hashes.fill(None);
    }

    #[inline]
    pub fn take_picker(&mut self) -> Box<MovePicker> {
        self.pickers.pop().unwrap_or_else(MovePicker::boxed)
    }

    #[inline]
    pub fn give_picker(&mut self, p: Box<MovePicker>) {
        self.pickers.push(p);
    }

    #[inline]
    pub fn do_move(&mut self, m: Move) -> MoveDelta {
        let d = self.pos.do_move(m);
        self.tt.prefetch(self.pos.key());
        self.evaluator.do_move(&mut self.estate, &d, &self.pos);
        self.evaluator.prefetch(&mut self.estate);
        self.seen.push(Seen::of(&self.pos));
        d
    }

    #[inline]
    pub fn undo_move(&mut self, d: &MoveDelta) {
        self.seen.pop();
        self.evaluator.undo_move(&mut self.estate, d);
        self.pos.undo_move(d);
    }

    pub fn do_null_move(&mut self) -> MoveDelta {
        // The position after a null move shares this one's evaluation entry.
        self.evaluator.prepare(&mut self.estate);
        let d = self.pos.do_null_move();
        self.seen.push(Seen::of(&self.pos));
        d
    }

    pub fn undo_null_move(&mut self, d: &MoveDelta) {
        self.seen.pop();
        self.pos.undo_null_move(d);
    }

    #[inline]
    pub fn evaluate(&mut self) -> i32 {
        let mut eval = self.evaluator.evaluate(&mut self.estate, &self.pos).eval;
        if let Some(noise) = self.options.eval_noise {
            eval += noise.at(self.pos.key());
        }
        eval.clamp(-MATE_IN_MAX_PLY + 1, MATE_IN_MAX_PLY - 1)
    }

    /// The features of the current position that the correction history keys on, when
    /// it is in use (see `SearchOptions::correction_history`).
    #[inline]
    /// The correction features of the node at frame `f` (every node calls this or
    /// `forget_features` before it plays a move), from its parent's hashes if it has them.
    pub fn correction_features(&mut self, f: usize) -> Option<[usize; CORRECTION_FEATURES]> {
        if !(self.options.correction_history && self.options.pruning) {
            self.feature_hashes[f] = None;
            return None;
        }
        let parent = &self.stack[f - 1];
        let hashes = match &self.feature_hashes[f - 1] {
            Some(h) => h.after(&self.pos, if parent.null_move { Move::NONE } else { parent.current_move }),
            None => FeatureHashes::of(&self.pos),
        };
        self.feature_hashes[f] = Some(hashes);
        Some(hashes.indices(&self.pos))
    }

    /// The node at frame `f` has no features of its own (in check): its children compute
    /// theirs afresh.
    #[inline]
    pub fn forget_features(&mut self, f: usize) {
        self.feature_hashes[f] = None;
    }

    /// `raw`, a static evaluation, plus the correction learned for `features`.
    #[inline]
    pub fn corrected_eval(&self, raw: i32, features: Option<&[usize; CORRECTION_FEATURES]>) -> i32 {
        match features {
            Some(f) => (raw + self.correction.correction(f)).clamp(-MATE_IN_MAX_PLY + 1, MATE_IN_MAX_PLY - 1),
            None => raw,
        }
    }

    /// Score of a repetition of the current position within the game or search, if any;
    /// or of a superior or inferior position: the same board and side to move as before,
    /// with more (fewer) pieces in the mover's hand.
    pub fn repetition_score(&self) -> Option<i32> {
        let seen = &self.seen;
        let n = seen.len() - 1;
        if n < 4 {
            return None;
        }
        let Seen { key, board_key, hand: now, .. } = seen[n];
        let oldest = n.saturating_sub(MAX_REPETITION_PLY);
        // The same side is to move every two plies, and no position recurs within two.
        let mut i = n - 4;
        loop {
            // (Keys that differ in the board part differ in all: one test for both cases.)
            if seen[i].board_key == board_key {
                if seen[i].key == key {
                    // Positions i+1..=n: those with the current side to move were reached
                    // by the opponent's moves.
                    let them_all_checks =
                        (i + 1..=n).filter(|&k| (n - k).is_multiple_of(2)).all(|k| seen[k].in_check);
                    let us_all_checks = (i + 1..=n).filter(|&k| (n - k) % 2 == 1).all(|k| seen[k].in_check);
                    return Some(if them_all_checks {
                        PERPETUAL_WIN
                    } else if us_all_checks {
                        -PERPETUAL_WIN
                    } else if self.pos.side_to_move() == self.root_color {
                        -self.options.contempt
                    } else {
                        self.options.contempt
                    });
                }
                // Same board, other hands (the pieces are the same, so the side to move's
                // hand alone tells which way).
                let then = seen[i].hand;
                if now.covers(then) {
                    return Some(SUPERIOR_REPETITION);
                }
                if then.covers(now) {
                    return Some(-SUPERIOR_REPETITION);
                }
            }
            if i < oldest + 2 {
                return None;
            }
            i -= 2;
        }
    }

    #[inline]
    pub fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    /// Counts a node and, on the main thread, checks the node and time limits.
    #[inline]
    pub fn count_node_and_check_limits(&mut self) -> bool {
        self.nodes += 1;
        if self.nodes & 1023 == 0 {
            self.shared.nodes[self.id].store(self.nodes, Ordering::Relaxed);
            if self.id == 0 {
                self.others_nodes = self.shared.nodes[1..].iter().map(|n| n.load(Ordering::Relaxed)).sum();
                if self.time.hard_limit_reached() {
                    self.shared.stop.store(true, Ordering::Relaxed);
                }
            }
        }
        if self.id == 0
            && let Some(max) = self.limits.nodes
            && self.nodes + self.others_nodes >= max
        {
            self.shared.stop.store(true, Ordering::Relaxed);
        }
        self.stopped()
    }

    /// Nodes of all threads, as far as published (exact for this thread).
    pub fn total_nodes(&self) -> u64 {
        self.nodes
            + self
                .shared
                .nodes
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != self.id)
                .map(|(_, n)| n.load(Ordering::Relaxed))
                .sum::<u64>()
    }

    /// Fills `root_moves` with every legal move (inferior non-promotions included):
    /// `first` (a TT move) first, then captures by value, then the rest.
    pub fn init_root_moves(&mut self, first: Option<Move>) {
        let list = self.pos.legal_moves();
        let mut moves: Vec<(i32, Move)> = list
            .iter()
            .map(|&m| (if Some(m) == first { INFINITE } else { captured_value(&self.pos, m) }, m))
            .collect();
        moves.sort_by_key(|&(s, _)| std::cmp::Reverse(s));
        self.root_moves = moves.into_iter().map(|(_, m)| RootMove::new(m)).collect();
    }

    /// Searches the line of root move `pv_idx` at `depth` (the best of the root moves
    /// from `pv_idx` on) with aspiration windows around its last score, re-searching
    /// until the score falls inside the window or the search stops.
    fn search_root_line(&mut self, depth: i32) {
        self.seldepth = 0;
        let pv_idx = self.pv_idx;
        let previous = self.root_moves[pv_idx].avg_score;
        let (mut alpha, mut beta, mut delta) = if depth >= 4 && previous.abs() < MATE_IN_MAX_PLY {
            let delta = self.options.params.asp_delta + previous.abs() / self.options.params.asp_score_div;
            ((previous - delta).max(-INFINITE), (previous + delta).min(INFINITE), delta)
        } else {
            (-INFINITE, INFINITE, INFINITE)
        };
        let mut failed_high = 0;
        loop {
            let adjusted = (depth - failed_high).max(1);
            let score = self.search::<true>(alpha, beta, adjusted, 0, false);
            // Moves that failed low keep their old order behind the best one.
            self.root_moves[pv_idx..].sort_by_key(|rm| std::cmp::Reverse(rm.score));
            if self.stopped() {
                break;
            }
            if score <= alpha {
                beta = (alpha + beta) / 2;
                alpha = (score - delta).max(-INFINITE);
                failed_high = 0;
            } else if score >= beta {
                beta = (score + delta).min(INFINITE);
                failed_high += 1;
            } else {
                break;
            }
            delta += delta / 4 + 5;
        }
    }

    /// Iterative deepening until the depth limit or a stop; the main thread calls
    /// `report` after each finished iteration and decides when to stop.
    pub fn iterate(&mut self, mut report: impl FnMut(&SearchThread, &Iteration)) {
        let main = self.id == 0;
        let max_depth = self.limits.depth.unwrap_or(MAX_PLY as i32 - 10).clamp(1, MAX_PLY as i32 - 10);
        self.completed_depth = 0;
        self.best_move_changes = 0.0;
        self.nmp_min_ply = 0;
        self.root_color = self.pos.side_to_move();
        self.stack.iter_mut().for_each(|f| {
            f.excluded = Move::NONE;
            f.double_extensions = 0;
        });
        let mut last_best_move = Move::NONE;
        let mut last_best_move_depth = 0;
        let mut iteration_scores = [self.root_moves[0].avg_score; 4];
        let mut previous_time_reduction = 1.0;
        let lines = self.options.multi_pv.clamp(1, self.root_moves.len());
        for depth in 1..=max_depth {
            if self.stopped() {
                break;
            }
            if main {
                self.best_move_changes *= 0.5;
            }
            self.root_depth = depth;
            for rm in &mut self.root_moves {
                rm.prev_score = rm.score;
            }
            let previous = self.root_moves[0].avg_score;
            for pv_idx in 0..lines {
                self.pv_idx = pv_idx;
                self.search_root_line(depth);
                if self.stopped() {
                    // An unfinished line keeps an older depth's score: it must not be
                    // sorted above the lines this depth finished.
                    break;
                }
                // The lines found so far at this depth, best first (a later line can
                // score above an earlier one when its search saw more).
                self.root_moves[..=pv_idx].sort_by_key(|rm| std::cmp::Reverse(rm.score));
            }
            self.pv_idx = 0;
            if self.stopped() {
                break;
            }
            self.completed_depth = depth;
            let best = &self.root_moves[0];
            if best.mv != last_best_move {
                last_best_move = best.mv;
                last_best_move_depth = depth;
            }
            let score = best.score;
            if main {
                for (i, rm) in self.root_moves[..lines].iter().enumerate() {
                    let it = Iteration {
                        depth,
                        seldepth: rm.sel_depth,
                        score: rm.score,
                        pv: rm.pv.clone(),
                        multipv: (lines > 1).then_some(i + 1),
                    };
                    report(self, &it);
                }
            }
            if score.abs() >= MATE_IN_MAX_PLY && depth >= MATE - score.abs() {
                if main {
                    self.shared.stop.store(true, Ordering::Relaxed);
                }
                break;
            }
            if main {
                // Use more of the time when the best move keeps changing or the score
                // falls, less when the best move has been the same for many iterations.
                let falling =
                    ((66 + 12 * (previous - score) + 6 * (iteration_scores[depth as usize % 4] - score))
                        as f64
                        / 800.0)
                        .clamp(0.5, 1.5);
                let time_reduction = if last_best_move_depth + 9 < depth { 1.9 } else { 0.95 };
                let reduction = (1.47 + previous_time_reduction) / (2.32 * time_reduction);
                previous_time_reduction = time_reduction;
                let instability = 1.0 + 1.7 * self.best_move_changes;
                iteration_scores[depth as usize % 4] = score;
                if self.time.iteration_should_stop(falling * reduction * instability) {
                    self.shared.stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        self.shared.nodes[self.id].store(self.nodes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::random_walk::{capture_heavy_suite, xorshift};

    /// The board key each move records (`Position::board_key`, kept up to date by the
    /// moves) equals the key less the hands' part computed from scratch, through random
    /// games full of drops and captures, null moves included, and back again on undo.
    #[test]
    fn recorded_board_keys_equal_a_full_recomputation() {
        let shared =
            Arc::new(Shared { stop: Arc::new(AtomicBool::new(false)), nodes: vec![AtomicU64::new(0)] });
        let mut t = SearchThread::new(
            0,
            Arc::new(Evaluator::material_only()),
            Arc::new(TranspositionTable::new(1)),
            shared,
        );
        let mut next = xorshift(0x5e_e4);
        let (mut drops, mut captures) = (0, 0);
        for start in capture_heavy_suite(40, 0x5e_e5) {
            t.set_position(&start, &[]);
            let mut deltas = Vec::new();
            for _ in 0..60 {
                let moves = t.pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                if !t.pos.in_check() && next().is_multiple_of(8) {
                    let d = t.do_null_move();
                    deltas.push((d, true));
                } else {
                    let m = moves[(next() % moves.len() as u64) as usize];
                    drops += m.is_drop() as u32;
                    captures += crate::search::movepick::is_capture(&t.pos, m) as u32;
                    deltas.push((t.do_move(m), false));
                }
                let last = t.seen.last().expect("pushed");
                assert_eq!(last.key, t.pos.key());
                assert_eq!(last.board_key, t.pos.key() ^ t.pos.hands_key(), "{}", t.pos.to_sfen());
                assert_eq!(last.hand, t.pos.hand(t.pos.side_to_move()));
            }
            while let Some((d, null)) = deltas.pop() {
                if null {
                    t.undo_null_move(&d);
                } else {
                    t.undo_move(&d);
                }
                let last = t.seen.last().expect("the start stays");
                assert_eq!(last.board_key, t.pos.key() ^ t.pos.hands_key());
            }
            assert_eq!(t.seen.len(), 1);
        }
        assert!(drops > 100 && captures > 100, "{drops} drops, {captures} captures");
    }
}
