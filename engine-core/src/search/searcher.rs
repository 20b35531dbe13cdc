//! The searcher: what play, teacher generation and the learner call. It owns one or more
//! search threads over a shared transposition table (Lazy SMP: every thread runs the
//! same iterative deepening, and they help each other only through the table), runs
//! them for one `go`, and picks the answer.
//!
//! With one thread and a depth or node limit the search is deterministic.

use super::limits::{Limits, SearchOptions};
use super::mate::{DfPn, MateResult};
use super::score::{INFINITE, MATE, MATE_IN_MAX_PLY};
use super::thread::{SearchThread, Shared};
use super::time::TimeManager;
use super::tt::{TranspositionTable, tt_move};
use crate::eval::Evaluator;
use crate::rules::game::can_declare_win;
use crate::rules::{Move, Position};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Stack of a helper search thread: a search frame with its move picker on the heap is
/// small, but quiescence can go deep.
const THREAD_STACK: usize = 16 << 20;

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
    /// The line's rank (1 = best) when the search keeps several lines (USI `MultiPV` > 1);
    /// `None` for the ordinary search's single line.
    pub multipv: Option<usize>,
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
    /// Principal variation (the search's; it ends where the main search ended).
    pub pv: Vec<Move>,
}

pub struct Searcher {
    evaluator: Arc<Evaluator>,
    tt: Arc<TranspositionTable>,
    stop: Arc<AtomicBool>,
    pub options: SearchOptions,
    /// Thread 0 is the main thread (it runs on the caller's thread).
    threads: Vec<SearchThread>,
    last_nodes: u64,
}

impl Searcher {
    pub fn new(evaluator: Arc<Evaluator>, tt: Arc<TranspositionTable>) -> Searcher {
        let stop = Arc::new(AtomicBool::new(false));
        let mut s = Searcher {
            evaluator,
            tt,
            stop,
            options: SearchOptions::default(),
            threads: Vec::new(),
            last_nodes: 0,
        };
        s.set_threads(1);
        s
    }

    /// Sets the number of search threads (at least 1). Helper threads keep their
    /// histories between searches; new ones start empty.
    pub fn set_threads(&mut self, n: usize) {
        let n = n.max(1);
        if n == self.threads.len() {
            return;
        }
        let shared =
            Arc::new(Shared { stop: self.stop.clone(), nodes: (0..n).map(|_| AtomicU64::new(0)).collect() });
        self.threads.truncate(n);
        for t in &mut self.threads {
            t.shared = shared.clone();
        }
        while self.threads.len() < n {
            let id = self.threads.len();
            let mut t = SearchThread::new(id, self.evaluator.clone(), self.tt.clone(), shared.clone());
            if id > 0 {
                t.copy_position(&self.threads[0]);
            }
            self.threads.push(t);
        }
    }

    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// The flag that stops a running search (USI `stop`, signals).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    pub fn evaluator(&self) -> &Arc<Evaluator> {
        &self.evaluator
    }

    pub fn position(&self) -> &Position {
        &self.threads[0].pos
    }

    /// Sets the game: a start position and the moves played (for repetition detection).
    /// Moves must be legal.
    pub fn set_position(&mut self, start: &Position, moves: &[Move]) {
        self.threads[0].set_position(start, moves);
    }

    /// Clears the move-ordering statistics and the evaluation's correction history of
    /// every thread (between games, for reproducibility).
    pub fn clear_heuristics(&mut self) {
        self.threads.iter_mut().for_each(SearchThread::clear_heuristics);
    }

    /// Nodes of the last search (all threads).
    pub fn nodes(&self) -> u64 {
        self.last_nodes
    }

    /// Quiescence search from the current position with a full window: its score and PV.
    /// Playing the PV reaches the leaf whose evaluation the learner trains.
    pub fn qsearch_root(&mut self) -> (i32, Vec<Move>) {
        let t = &mut self.threads[0];
        t.nodes = 0;
        let r = t.leaf_qsearch_root();
        self.last_nodes = t.nodes;
        r
    }

    /// The evaluation at the end of `line` (moves from the current position), from the
    /// side to move there: what `Evaluator::evaluate_full` gives for that position, but
    /// from the current position's sums, one incremental update a move. The current
    /// position is unchanged after.
    pub fn evaluate_after(&mut self, line: &[Move]) -> i32 {
        // One frame per move keeps each move's delta for its undo without allocating: the
        // learner calls this once per record.
        fn walk(t: &mut SearchThread, line: &[Move]) -> i32 {
            match line.split_first() {
                None => t.evaluator.evaluate(&mut t.estate, &t.pos).eval,
                Some((&m, rest)) => {
                    let d = t.do_move(m);
                    let v = walk(t, rest);
                    t.undo_move(&d);
                    v
                }
            }
        }
        walk(&mut self.threads[0], line)
    }

    /// Iterative deepening within `limits`; `on_iteration` sees each finished depth.
    pub fn go(&mut self, limits: Limits, mut on_iteration: impl FnMut(&Info)) -> SearchResult {
        let start = Instant::now();
        self.stop.store(false, Ordering::Relaxed);
        self.tt.new_search();
        let time = TimeManager::new(start, limits);
        for t in &mut self.threads {
            t.set_options(self.options);
            t.limits = limits;
            t.time = time;
            t.nodes = 0;
            t.shared.nodes[t.id].store(0, Ordering::Relaxed);
        }
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
        let pos = self.threads[0].pos;
        if self.options.declaration && can_declare_win(&pos) {
            result.declare_win = true;
            result.score = MATE;
            return result;
        }
        if !pos.has_legal_move() {
            return result;
        }
        if self.options.root_mate_nodes > 0 && !pos.in_check() {
            let mut dfpn = DfPn::new(self.options.root_mate_nodes, 31);
            let outcome = dfpn.search(&pos);
            self.threads[0].nodes += dfpn.nodes();
            if let MateResult::Mate(line) = outcome {
                result.best_move = line[0];
                result.score = MATE - line.len() as i32;
                result.depth = line.len() as i32;
                result.pv = line;
                result.nodes = self.threads[0].nodes;
                result.elapsed = start.elapsed();
                self.last_nodes = result.nodes;
                on_iteration(&Info {
                    depth: result.depth,
                    seldepth: result.depth,
                    score: result.score,
                    nodes: result.nodes,
                    elapsed: result.elapsed,
                    hashfull: self.tt.hashfull(),
                    pv: result.pv.clone(),
                    multipv: None,
                });
                return result;
            }
        }
        let tt_first = self.tt.probe(pos.key()).and_then(|e| tt_move(&pos, e.move16));
        self.threads[0].init_root_moves(tt_first);
        let (main, helpers) = self.threads.split_at_mut(1);
        let main = &mut main[0];
        for h in helpers.iter_mut() {
            h.copy_position(main);
            h.root_moves.clone_from(&main.root_moves);
        }
        let tt = self.tt.clone();
        let stop = self.stop.clone();
        std::thread::scope(|scope| {
            for h in helpers.iter_mut() {
                std::thread::Builder::new()
                    .name(format!("search-{}", h.id))
                    .stack_size(THREAD_STACK)
                    .spawn_scoped(scope, move || h.iterate(|_, _| {}))
                    .expect("spawn a search thread");
            }
            main.iterate(|t, it| {
                on_iteration(&Info {
                    depth: it.depth,
                    seldepth: it.seldepth.max(it.depth),
                    score: it.score,
                    nodes: t.total_nodes(),
                    elapsed: start.elapsed(),
                    hashfull: tt.hashfull(),
                    pv: it.pv.clone(),
                    multipv: it.multipv,
                })
            });
            // The main thread is done (depth reached, time used or stopped): end the helpers.
            stop.store(true, Ordering::Relaxed);
        });
        // With several lines the main thread's are the ones reported: its best is the answer.
        let best = if self.options.multi_pv > 1 { 0 } else { best_thread(&self.threads) };
        let t = &self.threads[best];
        let rm = &t.root_moves[0];
        result.best_move = rm.mv;
        result.score = if rm.score == -INFINITE { rm.prev_score.max(-MATE) } else { rm.score };
        result.depth = t.completed_depth;
        result.seldepth = rm.sel_depth.max(t.completed_depth);
        result.pv = rm.pv.clone();
        result.nodes = self.threads.iter().map(|t| t.nodes).sum();
        result.elapsed = start.elapsed();
        self.last_nodes = result.nodes;
        result
    }
}

/// The thread whose answer to play: votes for each thread's best move weighted by how
/// deep it searched and how good it found it; a proven mate wins. Only helpers that
/// completed at least the main thread's depth take part, so the answer (and the depth it
/// reports) is never shallower than what the search as a whole completed.
fn best_thread(threads: &[SearchThread]) -> usize {
    let main_depth = threads[0].completed_depth;
    let finished: Vec<usize> = (0..threads.len())
        .filter(|&i| threads[i].completed_depth > 0 && threads[i].completed_depth >= main_depth)
        .collect();
    if threads.len() == 1 || finished.len() <= 1 || threads[0].completed_depth == 0 {
        return 0;
    }
    let score = |i: usize| threads[i].root_moves[0].score;
    let min_score = finished.iter().map(|&i| score(i)).min().unwrap_or(0);
    let mut votes: HashMap<Move, i64> = HashMap::new();
    for &i in &finished {
        *votes.entry(threads[i].root_moves[0].mv).or_default() +=
            (score(i) - min_score + 14) as i64 * threads[i].completed_depth as i64;
    }
    let mut best = 0;
    for &i in &finished[1..] {
        let (b, s) = (score(best), score(i));
        let mv = |k: usize| threads[k].root_moves[0].mv;
        if b.abs() >= MATE_IN_MAX_PLY {
            if s > b {
                best = i;
            }
        } else if s >= MATE_IN_MAX_PLY || (s > -MATE_IN_MAX_PLY && votes[&mv(i)] > votes[&mv(best)]) {
            best = i;
        }
    }
    best
}
