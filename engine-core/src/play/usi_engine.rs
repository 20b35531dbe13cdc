//! The USI engine protocol as a state machine: feed it command lines with
//! [`UsiEngine::handle_line`] (or a whole reader with [`UsiEngine::run`]); it writes its
//! answers to any `Write`. The search runs on a background thread so that `stop`, `quit`,
//! `isready` and `ponderhit` are answered while it thinks.

//!
//! Time management is in `usi_time`.

use super::consult::{self, ConsultOptions};
pub use super::usi_time::{Clock, GoParams, MateLimit, search_limits, time_limits};
use crate::eval::Evaluator;
use crate::eval::kppt_file::{load_kppt_dir, read_kppt_dir};
use crate::eval::patterns::file as pattern_file;
use crate::rules::{Color, Move, Position, UsiPosition};
use crate::search::mate::{DfPn, MateResult};
use crate::search::{Info, SearchOptions, SearchParams, SearchResult, Searcher, TranspositionTable};
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

pub const ENGINE_NAME: &str = concat!("Keima ", env!("CARGO_PKG_VERSION"));
pub const ENGINE_AUTHOR: &str = "the Keima authors";
pub const DEFAULT_HASH_MIB: usize = 64;
pub const DEFAULT_NETWORK_DELAY_MS: u64 = 120;
/// Bound of the `Contempt` option (eval units; a pawn is about 90).
pub const MAX_CONTEMPT: i32 = 1000;
/// Most lines the `MultiPV` option asks for (a position has at most 593 legal moves).
pub const MAX_MULTI_PV: usize = 800;

/// One `info` line for a finished iteration.
pub fn info_line(info: &Info) -> String {
    let score = match info.mate_in() {
        Some(n) => format!("mate {n}"),
        None => format!("cp {}", info.score),
    };
    let multipv = info.multipv.map_or(String::new(), |k| format!(" multipv {k}"));
    let mut line = format!(
        "info depth {} seldepth {}{multipv} score {score} nodes {} nps {} hashfull {} time {}",
        info.depth,
        info.seldepth.max(info.depth),
        info.nodes,
        info.nps(),
        info.hashfull,
        info.elapsed.as_millis()
    );
    if !info.pv.is_empty() {
        line.push_str(" pv");
        for m in &info.pv {
            line.push(' ');
            line.push_str(&m.to_usi());
        }
    }
    line
}

/// The longest mating line `go mate` looks for, in plies.
pub const MATE_MAX_PLY: usize = 255;

/// The answer to `go mate`. A mate is given only when its line replays as one: every
/// attacking move checks and the last position has no legal move.
pub fn checkmate_line(pos: &Position, result: &MateResult) -> String {
    match result {
        MateResult::Mate(line) => {
            let mut p = *pos;
            let replays = line.iter().enumerate().all(|(i, &m)| {
                let ok = p.is_legal(m);
                if ok {
                    p.do_move(m);
                }
                ok && (i % 2 == 1 || p.in_check())
            });
            if replays && line.len() % 2 == 1 && !p.has_legal_move() {
                let moves: Vec<String> = line.iter().map(|m| m.to_usi()).collect();
                format!("checkmate {}", moves.join(" "))
            } else {
                "checkmate timeout".to_string()
            }
        }
        MateResult::NoMate => "checkmate nomate".to_string(),
        MateResult::Unknown => "checkmate timeout".to_string(),
    }
}

/// The `bestmove` line for a search result.
pub fn bestmove_line(result: &SearchResult) -> String {
    if result.declare_win {
        "bestmove win".to_string()
    } else if result.best_move.is_none() {
        "bestmove resign".to_string()
    } else {
        format!("bestmove {}", result.best_move.to_usi())
    }
}

fn say<W: Write>(out: &Mutex<W>, line: &str) {
    let mut w = out.lock().unwrap_or_else(|e| e.into_inner());
    // A closed output (the GUI went away) is not our problem to report.
    let _ = writeln!(w, "{line}");
    let _ = w.flush();
}

/// What a search thread holds and gives back.
enum Engines {
    Single(Searcher),
    /// The consultation players.
    Consult(Vec<Searcher>),
    /// A mate search (`go mate`) holds no searcher.
    Nothing,
}

struct Running {
    handle: JoinHandle<Engines>,
    stop: Arc<AtomicBool>,
    /// `bestmove` may be sent (false during `go infinite` / `go ponder` until stop/ponderhit).
    release: Arc<AtomicBool>,
    ponder: bool,
    limits: Option<Clock>,
}

/// A USI engine session.
pub struct UsiEngine<W: Write + Send + 'static> {
    out: Arc<Mutex<W>>,
    hash_mib: usize,
    threads: usize,
    eval_dir: String,
    patterns: String,
    network_delay_ms: u64,
    /// `Contempt`: see `SearchOptions::contempt`.
    contempt: i32,
    /// `CorrectionHistory`: see `SearchOptions::correction_history`; `None` is `auto`.
    correction_history: Option<bool>,
    /// `SearchParams`: the search's tunable numbers (`name=value,...`; empty: defaults).
    search_params: SearchParams,
    /// `MultiPV`: see `SearchOptions::multi_pv` (consultation players ignore it).
    multi_pv: usize,
    loaded: Option<(String, String)>,
    evaluator: Option<Arc<Evaluator>>,
    tt: Option<(usize, Arc<TranspositionTable>)>,
    searcher: Option<Searcher>,
    consult: ConsultOptions,
    /// The consultation players and the settings they were made with.
    players: Option<(ConsultOptions, usize, Vec<Searcher>)>,
    /// The settings of the players a running consultation holds.
    players_key: Option<(ConsultOptions, usize)>,
    start: Position,
    moves: Vec<Move>,
    running: Option<Running>,
    generation: Arc<AtomicU64>,
}

impl<W: Write + Send + 'static> UsiEngine<W> {
    pub fn new(out: W) -> UsiEngine<W> {
        UsiEngine {
            out: Arc::new(Mutex::new(out)),
            hash_mib: DEFAULT_HASH_MIB,
            threads: 1,
            eval_dir: String::new(),
            patterns: String::new(),
            network_delay_ms: DEFAULT_NETWORK_DELAY_MS,
            contempt: 0,
            correction_history: None,
            search_params: SearchParams::default(),
            multi_pv: 1,
            loaded: None,
            evaluator: None,
            tt: None,
            searcher: None,
            consult: ConsultOptions::default(),
            players: None,
            players_key: None,
            start: Position::startpos(),
            moves: Vec::new(),
            running: None,
            generation: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The output writer (shared with the search thread).
    pub fn output(&self) -> Arc<Mutex<W>> {
        self.out.clone()
    }

    /// Reads commands until `quit` or end of input; a running search is then stopped.
    pub fn run<R: BufRead>(&mut self, input: R) -> io::Result<()> {
        for line in input.lines() {
            if !self.handle_line(&line?) {
                return Ok(());
            }
        }
        self.finish_search();
        Ok(())
    }

    fn say(&self, line: &str) {
        say(&self.out, line);
    }

    fn error(&self, msg: &str) {
        self.say(&format!("info string error: {msg}"));
    }

    /// Handles one command line; `false` after `quit`.
    pub fn handle_line(&mut self, line: &str) -> bool {
        let line = line.trim();
        let (cmd, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let args = args.trim();
        match cmd {
            "" => {}
            "usi" => {
                self.say(&format!("id name {ENGINE_NAME}"));
                self.say(&format!("id author {ENGINE_AUTHOR}"));
                self.say(&format!("option name Hash type spin default {DEFAULT_HASH_MIB} min 1 max 65536"));
                self.say("option name Threads type spin default 1 min 1 max 1024");
                self.say("option name EvalDir type string default <empty>");
                self.say("option name Patterns type string default <empty>");
                self.say(&format!(
                    "option name NetworkDelay type spin default {DEFAULT_NETWORK_DELAY_MS} min 0 max 60000"
                ));
                self.say("option name USI_Ponder type check default false");
                self.say(&format!(
                    "option name Contempt type spin default 0 min -{MAX_CONTEMPT} max {MAX_CONTEMPT}"
                ));
                self.say("option name CorrectionHistory type combo default auto var auto var true var false");
                self.say("option name SearchParams type string default <empty>");
                self.say(&format!("option name MultiPV type spin default 1 min 1 max {MAX_MULTI_PV}"));
                for line in consult::USI_OPTIONS {
                    self.say(line);
                }
                self.say("usiok");
            }
            "isready" => {
                if self.running.is_none() {
                    self.ensure_ready();
                }
                self.say("readyok");
            }
            "setoption" => self.setoption(args),
            "usinewgame" => {
                self.finish_search();
                self.ensure_ready();
                if let Some((_, tt)) = &self.tt {
                    tt.clear();
                }
                if let Some(s) = &mut self.searcher {
                    s.clear_heuristics();
                }
                self.players = None; // fresh tables for every player
            }
            "position" => match UsiPosition::parse(args) {
                Ok(UsiPosition { start, moves }) => {
                    self.start = start;
                    self.moves = moves;
                }
                Err(e) => self.error(&format!("position rejected, keeping the previous one: {e}")),
            },
            "go" => match GoParams::parse(args) {
                Ok(GoParams { mate: Some(limit), .. }) => self.go_mate(limit),
                Ok(params) => self.go(params),
                Err(e) => {
                    self.error(&e);
                    // The GUI waits for a bestmove; search with what was understood.
                    self.go(GoParams { depth: Some(1), ..GoParams::default() });
                }
            },
            "stop" => self.finish_search(),
            "ponderhit" => self.ponderhit(),
            "gameover" => self.finish_search(),
            "quit" => {
                self.finish_search();
                return false;
            }
            other => self.say(&format!("info string unknown command {other:?}")),
        }
        true
    }

    fn setoption(&mut self, args: &str) {
        let Some(rest) = args.strip_prefix("name") else {
            return self.error("expected `setoption name <name> [value <value>]`");
        };
        let rest = rest.trim();
        let (name, value) = match rest.find(" value") {
            Some(i) => (rest[..i].trim(), rest[i + 6..].trim()),
            None => (rest, ""),
        };
        let value = if value == "<empty>" { "" } else { value };
        if let Some(r) = self.consult.set(name, value) {
            if let Err(e) = r {
                self.error(&e);
            }
            return;
        }
        let number = |v: &str| v.parse::<u64>().map_err(|_| format!("option {name}: bad number {v:?}"));
        let result = match name.to_ascii_lowercase().as_str() {
            "hash" | "usi_hash" => number(value).map(|v| self.hash_mib = v.clamp(1, 65536) as usize),
            "evaldir" => {
                self.eval_dir = value.to_string();
                Ok(())
            }
            "patterns" => {
                self.patterns = value.to_string();
                Ok(())
            }
            "networkdelay" => number(value).map(|v| self.network_delay_ms = v),
            "threads" => number(value).map(|v| self.threads = v.clamp(1, 1024) as usize),
            "contempt" => match value.parse::<i32>() {
                Ok(v) if v.abs() <= MAX_CONTEMPT => {
                    self.contempt = v;
                    Ok(())
                }
                _ => Err(format!(
                    "option Contempt: expected a whole number from -{MAX_CONTEMPT} to {MAX_CONTEMPT}, got {value:?}"
                )),
            },
            "correctionhistory" => match value {
                "auto" => {
                    self.correction_history = None;
                    Ok(())
                }
                "true" | "false" => {
                    self.correction_history = Some(value == "true");
                    Ok(())
                }
                _ => Err(format!("option CorrectionHistory: expected auto, true or false, got {value:?}")),
            },
            // A bad list changes nothing: the engine keeps the parameters it had.
            "searchparams" => SearchParams::parse(value).map(|p| self.search_params = p).map_err(|e| {
                format!("option SearchParams: {e}; keeping {:?}", self.search_params.overrides())
            }),
            "multipv" => match value.parse::<usize>() {
                Ok(v) if (1..=MAX_MULTI_PV).contains(&v) => {
                    self.multi_pv = v;
                    Ok(())
                }
                _ => Err(format!(
                    "option MultiPV: expected a whole number from 1 to {MAX_MULTI_PV}, got {value:?}"
                )),
            },
            "usi_ponder" => Ok(()),
            _ => Err(format!("unknown option {name:?}")),
        };
        if let Err(e) = result {
            self.error(&e);
        }
    }

    /// Loads the evaluation and allocates the hash table if the options changed.
    fn ensure_ready(&mut self) {
        let want = (self.eval_dir.clone(), self.patterns.clone());
        if self.evaluator.is_none() || self.loaded.as_ref() != Some(&want) {
            let mut ev = if want.0.is_empty() {
                Evaluator::material_only()
            } else {
                match read_kppt_dir(Path::new(&want.0)) {
                    Ok(t) => Evaluator::with_kppt(Arc::new(t)),
                    Err(e) => {
                        self.error(&format!("EvalDir {:?}: {e}; using material only", want.0));
                        Evaluator::material_only()
                    }
                }
            };
            if !want.1.is_empty() {
                match pattern_file::load(Path::new(&want.1)) {
                    Ok(p) => ev.patterns = Some(Arc::new(p)),
                    Err(e) => self.error(&format!("Patterns {:?}: {e}; not used", want.1)),
                }
            }
            self.evaluator = Some(Arc::new(ev));
            self.loaded = Some(want);
            self.searcher = None;
        }
        if self.tt.as_ref().is_none_or(|(mib, _)| *mib != self.hash_mib) {
            self.tt = None; // free the old table before allocating the new one
            self.searcher = None;
            self.tt = Some((self.hash_mib, Arc::new(TranspositionTable::new(self.hash_mib))));
        }
        if self.searcher.is_none() {
            let ev = self.evaluator.clone().expect("evaluator loaded above");
            let tt = self.tt.as_ref().expect("table allocated above").1.clone();
            self.searcher = Some(Searcher::new(ev, tt));
        }
        if let Some(s) = &mut self.searcher {
            s.set_threads(self.threads);
        }
        if self.consult.active()
            && self.players.as_ref().is_none_or(|(o, mib, _)| *o != self.consult || *mib != self.hash_mib)
        {
            self.players = None;
            let evaluators = self.consult_evaluators();
            let players = consult::make_players(&self.consult, &evaluators, self.hash_mib);
            self.players = Some((self.consult.clone(), self.hash_mib, players));
        }
    }

    /// The players' evaluations: the engine's own (`random`), or one per directory.
    fn consult_evaluators(&self) -> Vec<Arc<Evaluator>> {
        let own = self.evaluator.clone().expect("evaluator loaded");
        if self.consult.mode != consult::Mode::Evals {
            return vec![own];
        }
        let mut out = Vec::new();
        for dir in &self.consult.eval_dirs {
            match load_kppt_dir(Path::new(dir)) {
                Ok(t) => {
                    // Mapped, not read: ten players would otherwise hold ten ~860 MB copies.
                    let mut ev = Evaluator::with_kppt(Arc::new(t));
                    ev.patterns = own.patterns.clone();
                    out.push(Arc::new(ev));
                }
                Err(e) => {
                    self.error(&format!("ConsultEvalDirs {dir:?}: {e}; this player uses EvalDir"));
                    out.push(own.clone());
                }
            }
        }
        out
    }

    /// Whether a search with `evaluator` corrects its static evaluations. `auto` (the
    /// default) is `SearchOptions::for_play`'s choice: on unless the evaluation is
    /// material only.
    fn correction_history_with(&self, evaluator: &Evaluator) -> bool {
        self.correction_history.unwrap_or_else(|| SearchOptions::for_play(evaluator).correction_history)
    }

    fn go(&mut self, params: GoParams) {
        self.finish_search();
        self.ensure_ready();
        if self.consult.active() {
            return self.go_consult(params);
        }
        let mut searcher = self.searcher.take().expect("searcher ready");
        searcher.options.contempt = self.contempt;
        searcher.options.correction_history = self.correction_history_with(searcher.evaluator());
        searcher.options.params = self.search_params;
        searcher.options.multi_pv = self.multi_pv;
        searcher.set_position(&self.start, &self.moves);
        let side = searcher.position().side_to_move();
        let (limits, clock, unbounded) = search_limits(&params, side, self.network_delay_ms);
        let stop = searcher.stop_flag();
        let release = Arc::new(AtomicBool::new(!unbounded));
        let out = self.out.clone();
        let thread_release = release.clone();
        self.generation.fetch_add(1, Ordering::SeqCst);
        let handle = std::thread::Builder::new()
            .name("usi-search".to_string())
            .stack_size(16 << 20)
            .spawn(move || {
                let result = searcher.go(limits, |info| say(&out, &info_line(info)));
                // `go infinite` and `go ponder` may not answer before `stop` / `ponderhit`.
                while !thread_release.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                say(&out, &bestmove_line(&result));
                Engines::Single(searcher)
            })
            .expect("spawn the search thread");
        self.running = Some(Running { handle, stop, release, ponder: params.ponder, limits: clock });
    }

    /// `go mate`: df-pn on the position as a mate problem (the side to move attacks with
    /// checks). Answers `checkmate <moves>`, `checkmate nomate` (proven: no mate by
    /// checks within the line limit) or `checkmate timeout` (time, `stop`, or the node
    /// budget the `Hash` size allows ran out first).
    fn go_mate(&mut self, limit: MateLimit) {
        self.finish_search();
        let pos = UsiPosition { start: self.start, moves: self.moves.clone() }.current();
        // A df-pn node keeps one table entry of about 32 bytes: the budget is what fits in
        // the Hash size.
        let max_nodes = ((self.hash_mib as u64) << 20) / 32;
        let stop = Arc::new(AtomicBool::new(false));
        let mut dfpn = DfPn::new(max_nodes.max(10_000), MATE_MAX_PLY).with_stop(stop.clone());
        if let MateLimit::Millis(ms) = limit {
            dfpn = dfpn.with_deadline(std::time::Instant::now() + Duration::from_millis(ms));
        }
        let out = self.out.clone();
        self.generation.fetch_add(1, Ordering::SeqCst);
        let handle = std::thread::Builder::new()
            .name("usi-mate".to_string())
            .spawn(move || {
                let start = std::time::Instant::now();
                let result = dfpn.search(&pos);
                let elapsed = start.elapsed().as_millis().max(1) as u64;
                say(
                    &out,
                    &format!(
                        "info nodes {} time {elapsed} nps {}",
                        dfpn.nodes(),
                        dfpn.nodes() * 1000 / elapsed
                    ),
                );
                say(&out, &checkmate_line(&pos, &result));
                Engines::Nothing
            })
            .expect("spawn the mate search thread");
        // The answer goes out when found: nothing waits for `stop` or `ponderhit`.
        let release = Arc::new(AtomicBool::new(true));
        self.running = Some(Running { handle, stop, release, ponder: false, limits: None });
    }

    /// `go` with consultation: every player searches, each result is shown as an info
    /// string, and the chosen player's result is the answer.
    fn go_consult(&mut self, params: GoParams) {
        let (_, _, mut players) = self.players.take().expect("players made by ensure_ready");
        players.iter_mut().for_each(|p| {
            p.options.contempt = self.contempt;
            p.options.correction_history = self.correction_history_with(p.evaluator());
            p.options.params = self.search_params;
        });
        let key = (self.consult.clone(), self.hash_mib);
        let (limits, clock, unbounded) = search_limits(&params, self.start_side(), self.network_delay_ms);
        let stop = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(!unbounded));
        let (out, thread_stop, thread_release) = (self.out.clone(), stop.clone(), release.clone());
        let (start, moves, threads, vote) = (self.start, self.moves.clone(), self.threads, self.consult.vote);
        self.generation.fetch_add(1, Ordering::SeqCst);
        let handle = std::thread::Builder::new()
            .name("usi-consult".to_string())
            .spawn(move || {
                let results = consult::search(&mut players, &start, &moves, limits, threads, &thread_stop);
                for (i, r) in results.iter().enumerate() {
                    say(
                        &out,
                        &format!(
                            "info string player {i} bestmove {} score cp {} depth {} nodes {}",
                            &bestmove_line(r)["bestmove ".len()..],
                            r.score,
                            r.depth,
                            r.nodes
                        ),
                    );
                }
                let chosen = &results[consult::choose(&results, vote)];
                let nodes = results.iter().map(|r| r.nodes).sum();
                say(
                    &out,
                    &info_line(&Info {
                        depth: chosen.depth,
                        seldepth: chosen.seldepth,
                        score: chosen.score,
                        nodes,
                        elapsed: chosen.elapsed,
                        hashfull: 0,
                        pv: chosen.pv.clone(),
                        multipv: None,
                    }),
                );
                while !thread_release.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                say(&out, &bestmove_line(chosen));
                Engines::Consult(players)
            })
            .expect("spawn the consultation thread");
        self.players_key = Some(key);
        self.running = Some(Running { handle, stop, release, ponder: params.ponder, limits: clock });
    }

    /// The side to move in the current `position`.
    fn start_side(&self) -> Color {
        let mut p = self.start;
        for &m in &self.moves {
            p.do_move(m);
        }
        p.side_to_move()
    }

    /// Puts a finished search's engines back.
    fn restore(&mut self, engines: Engines) {
        match engines {
            Engines::Single(s) => self.searcher = Some(s),
            Engines::Consult(players) => {
                if let Some((opts, mib)) = self.players_key.take() {
                    self.players = Some((opts, mib, players));
                }
            }
            Engines::Nothing => {}
        }
    }

    fn ponderhit(&mut self) {
        let Some(run) = &mut self.running else {
            return;
        };
        if !run.ponder {
            return;
        }
        run.ponder = false;
        run.release.store(true, Ordering::SeqCst);
        // The pondering search has no time limit: stop it when this move's time is used.
        if let Some(c) = run.limits {
            let budget = c.hard.min((c.soft * 2).max(c.free));
            let stop = run.stop.clone();
            let generation = self.generation.clone();
            let mine = generation.load(Ordering::SeqCst);
            std::thread::spawn(move || {
                std::thread::sleep(budget);
                if generation.load(Ordering::SeqCst) == mine {
                    stop.store(true, Ordering::SeqCst);
                }
            });
        } else {
            run.stop.store(true, Ordering::SeqCst);
        }
    }

    /// Stops a running search (it answers `bestmove`) and waits for it.
    fn finish_search(&mut self) {
        let Some(run) = self.running.take() else {
            return;
        };
        // The search clears its stop flag when it starts: keep setting it until it ends.
        while !run.handle.is_finished() {
            run.stop.store(true, Ordering::SeqCst);
            run.release.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(1));
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
        match run.handle.join() {
            Ok(engines) => self.restore(engines),
            Err(_) => self.error("the search thread panicked"),
        }
    }

    /// Waits for a bounded search (`go depth`, `nodes`, clock) to finish by itself.
    pub fn wait_search(&mut self) {
        if let Some(run) = self.running.take() {
            let joined = run.handle.join();
            self.generation.fetch_add(1, Ordering::SeqCst);
            match joined {
                Ok(engines) => self.restore(engines),
                Err(_) => self.error("the search thread panicked"),
            }
        }
    }

    /// Whether a search is running.
    pub fn searching(&self) -> bool {
        self.running.is_some()
    }
}

impl<W: Write + Send + 'static> Drop for UsiEngine<W> {
    fn drop(&mut self) {
        self.finish_search();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
        }
    }

    #[test]
    fn transcript() {
        let buf = Shared::default();
        let mut engine = UsiEngine::new(buf.clone());
        assert!(engine.handle_line("usi"));
        let out = buf.take();
        assert!(out.contains("option name Hash type spin"), "{out}");
        assert!(out.ends_with("usiok\n"));
        engine.handle_line("setoption name Hash value 4");
        engine.handle_line("isready");
        assert_eq!(buf.take(), "readyok\n");
        engine.handle_line("position startpos moves 7g7f 3c3d");
        engine.handle_line("go depth 2");
        engine.wait_search();
        let out = buf.take();
        let last = out.lines().last().unwrap();
        let mv = last.strip_prefix("bestmove ").unwrap();
        let pos = UsiPosition::parse("startpos moves 7g7f 3c3d").unwrap().current();
        assert!(pos.parse_usi_move(mv).is_ok(), "{out}");
        assert!(out.lines().any(|l| l.starts_with("info depth 2 ")), "{out}");

        // Two threads (Lazy SMP): still a legal move, and depth 2 is reported.
        engine.handle_line("setoption name Threads value 2");
        engine.handle_line("position startpos moves 7g7f 3c3d");
        engine.handle_line("go depth 6");
        engine.wait_search();
        let out = buf.take();
        let mv = out.lines().last().unwrap().strip_prefix("bestmove ").unwrap();
        assert!(pos.parse_usi_move(mv).is_ok(), "{out}");
        assert!(out.lines().any(|l| l.starts_with("info depth 6 ")), "{out}");
        engine.handle_line("setoption name Threads value 1");

        engine.handle_line("position startpos moves 7g7f 7g7f");
        assert!(buf.take().starts_with("info string error"));
        engine.handle_line("go infinite");
        std::thread::sleep(ms(20));
        assert!(!buf.take().contains("bestmove"));
        engine.handle_line("stop");
        assert!(buf.take().contains("bestmove "));

        // Contempt: a repetition that is Black's best result costs it the contempt.
        engine.handle_line("setoption name Contempt value 40");
        engine.handle_line("position sfen 4k4/9/9/9/9/9/9/9/4K4 b 2r2b4g 1 moves 5i5h 5a5b 5h5i 5b5a");
        engine.handle_line("go depth 3");
        engine.wait_search();
        let out = buf.take();
        assert!(out.contains("info depth 3 ") && out.contains(" score cp -40 "), "{out}");
        assert!(out.ends_with("bestmove 5i5h\n"), "{out}");
        engine.handle_line("setoption name Contempt value 1001");
        assert!(buf.take().starts_with("info string error: option Contempt"));
        engine.handle_line("setoption name Contempt value 0");

        // CorrectionHistory: `auto` (the default) is off with material only; on, the search
        // is another (deterministic) tree.
        let nodes_at_depth_8 = |engine: &mut UsiEngine<Shared>, buf: &Shared| {
            engine.handle_line("usinewgame");
            engine.handle_line(
                "position sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2",
            );
            engine.handle_line("go depth 8");
            engine.wait_search();
            let out = buf.take();
            let line =
                out.lines().find(|l| l.starts_with("info depth 8 ")).expect("depth 8 reached").to_string();
            line.split(" nodes ").nth(1).and_then(|r| r.split(' ').next()).unwrap().parse::<u64>().unwrap()
        };
        let auto = nodes_at_depth_8(&mut engine, &buf);
        engine.handle_line("setoption name CorrectionHistory value false");
        assert_eq!(nodes_at_depth_8(&mut engine, &buf), auto, "auto corrects with material only");
        engine.handle_line("setoption name CorrectionHistory value true");
        let with = nodes_at_depth_8(&mut engine, &buf);
        assert_ne!(with, auto, "the option changed nothing");
        assert_eq!(nodes_at_depth_8(&mut engine, &buf), with, "not deterministic");
        engine.handle_line("setoption name CorrectionHistory value maybe");
        assert!(buf.take().starts_with("info string error: option CorrectionHistory"));
        engine.handle_line("setoption name CorrectionHistory value auto");
        assert_eq!(nodes_at_depth_8(&mut engine, &buf), auto);
        // `auto` corrects any evaluation beyond material.
        let mut patterns_only = Evaluator::material_only();
        patterns_only.patterns = Some(Arc::new(crate::eval::patterns::PatternSet::empty()));
        assert!(engine.correction_history_with(&patterns_only));
        assert!(!engine.correction_history_with(&Evaluator::material_only()));
        engine.handle_line("setoption name CorrectionHistory value false");
        assert!(!engine.correction_history_with(&patterns_only));
        engine.handle_line("setoption name CorrectionHistory value auto");

        // SearchParams: another set is another (deterministic) tree; a bad list is refused
        // by name and changes nothing; the empty value is the defaults again.
        engine.handle_line("setoption name SearchParams value rfp_margin=120,lmr_scale=2400");
        assert_eq!(buf.take(), "");
        let tuned = nodes_at_depth_8(&mut engine, &buf);
        assert_ne!(tuned, auto, "the parameters changed nothing");
        engine.handle_line("setoption name SearchParams value rfp_margin=120,no_such=3");
        let refused = buf.take();
        assert!(
            refused
                .starts_with("info string error: option SearchParams: unknown search parameter \"no_such\"")
        );
        assert!(refused.contains("keeping \"rfp_margin=120,lmr_scale=2400\""), "{refused}");
        assert_eq!(nodes_at_depth_8(&mut engine, &buf), tuned);
        engine.handle_line("setoption name SearchParams value <empty>");
        assert_eq!(nodes_at_depth_8(&mut engine, &buf), auto);

        // MultiPV: each depth reports its lines ranked, the answer is the first line's move;
        // out-of-range values are refused by name and change nothing.
        engine.handle_line("setoption name MultiPV value 3");
        engine.handle_line("position sfen 4k4/9/7r1/6S2/9/2b6/2G6/9/4K4 b - 1");
        engine.handle_line("go depth 3");
        engine.wait_search();
        let out = buf.take();
        let depth3: Vec<&str> = out.lines().filter(|l| l.starts_with("info depth 3 ")).collect();
        assert_eq!(depth3.len(), 3, "{out}");
        for (i, l) in depth3.iter().enumerate() {
            assert!(l.contains(&format!(" multipv {} score ", i + 1)), "{l}");
        }
        let first_move = depth3[0].split(" pv ").nth(1).unwrap().split(' ').next().unwrap();
        assert!(out.ends_with(&format!("bestmove {first_move}\n")), "{out}");
        for bad in ["0", "801", "two"] {
            engine.handle_line(&format!("setoption name MultiPV value {bad}"));
            assert!(buf.take().starts_with("info string error: option MultiPV: expected a whole number"));
        }
        engine.handle_line("go depth 2");
        engine.wait_search();
        assert!(buf.take().contains(" multipv 3 "), "a refused value keeps the lines");
        engine.handle_line("setoption name MultiPV value 1");
        engine.handle_line("go depth 2");
        engine.wait_search();
        assert!(!buf.take().contains("multipv"), "one line carries no rank, as before MultiPV");

        // Declaration and resignation.
        engine.handle_line("position sfen GGSS1SSGG/+R3K3+B/9/9/9/9/9/9/4k4 b 10P 1");
        engine.handle_line("go depth 3");
        engine.wait_search();
        assert!(buf.take().ends_with("bestmove win\n"));
        engine.handle_line("position sfen 4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1");
        engine.handle_line("go btime 0 wtime 0 byoyomi 100");
        engine.wait_search();
        assert!(buf.take().ends_with("bestmove resign\n"));
        assert!(!engine.handle_line("quit"));
    }

    /// `go mate`: a mate problem is answered with a line that mates, a position without
    /// checks with `nomate`, and a search out of time or stopped with `timeout`; each
    /// `go mate` gets exactly one `checkmate` answer.
    #[test]
    fn go_mate_answers_checkmate() {
        let buf = Shared::default();
        let mut engine = UsiEngine::new(buf.clone());
        let checkmate = |buf: &Shared| {
            let out = buf.take();
            let answers: Vec<&str> = out.lines().filter(|l| l.starts_with("checkmate")).collect();
            assert_eq!(answers.len(), 1, "{out}");
            answers[0].to_string()
        };
        // Mate in 3 for White (from a random game).
        let mate3 = "ln2kgsn1/5gr2/pp2sp2l/g2pl3p/2p3Bp1/PP1P2p2/5P2P/6PPL/5K1N1 w Rbg2sn3p 88";
        engine.handle_line(&format!("position sfen {mate3}"));
        engine.handle_line("go mate 10000");
        engine.wait_search();
        let answer = checkmate(&buf);
        let moves: Vec<&str> = answer.strip_prefix("checkmate ").unwrap().split(' ').collect();
        let mut pos = Position::from_sfen(mate3).unwrap();
        for (i, m) in moves.iter().enumerate() {
            let mv = pos.parse_usi_move(m).unwrap_or_else(|e| panic!("{answer}: {m}: {e}"));
            pos.do_move(mv);
            assert!(i % 2 == 1 || pos.in_check(), "{answer}: {m} does not check");
        }
        assert!(moves.len() >= 3 && !pos.has_legal_move(), "{answer} does not mate");

        engine.handle_line("position startpos");
        engine.handle_line("go mate infinite");
        engine.wait_search();
        assert_eq!(checkmate(&buf), "checkmate nomate");

        // A problem that takes thousands of nodes, with no time: out of time at once.
        let kanju = "9/9/3pp4/+r2k1p3/2L1+p4/2+R6/B8/B8/9 b 4g4s4n3l14p 1";
        engine.handle_line(&format!("position sfen {kanju}"));
        engine.handle_line("go mate 0");
        engine.wait_search();
        assert_eq!(checkmate(&buf), "checkmate timeout");
        // Stopped: one answer, whichever came first.
        engine.handle_line("go mate infinite");
        engine.handle_line("stop");
        let answer = checkmate(&buf);
        assert!(answer == "checkmate timeout" || answer.starts_with("checkmate "), "{answer}");
        assert!(GoParams::parse("mate").is_err());

        // A line that does not replay as a mate is never given as one.
        let pos = Position::from_sfen(mate3).unwrap();
        let first = pos.parse_usi_move(moves[0]).unwrap();
        assert_eq!(checkmate_line(&pos, &MateResult::Mate(vec![first])), "checkmate timeout");
        let quiet = pos.parse_usi_move("1d1e").unwrap();
        assert_eq!(checkmate_line(&pos, &MateResult::Mate(vec![quiet])), "checkmate timeout");
    }

    #[test]
    fn ponderhit_releases_the_move() {
        let buf = Shared::default();
        let mut engine = UsiEngine::new(buf.clone());
        engine.handle_line("setoption name Hash value 1");
        engine.handle_line("position startpos");
        engine.handle_line("go ponder btime 0 wtime 0 byoyomi 300");
        std::thread::sleep(ms(20));
        assert!(!buf.take().contains("bestmove"));
        engine.handle_line("ponderhit");
        let t = std::time::Instant::now();
        engine.wait_search();
        assert!(t.elapsed() < ms(1000));
        assert!(buf.take().contains("bestmove "));
    }

    /// Random consultation: every player reports its move, and the move played is the
    /// majority's (ties: the larger summed score); `stop` ends an infinite consultation.
    #[test]
    fn consultation_transcript() {
        let buf = Shared::default();
        let mut engine = UsiEngine::new(buf.clone());
        engine.handle_line("usi");
        assert!(buf.take().contains("option name ConsultPlayers type spin"));
        for line in [
            "setoption name Hash value 8",
            "setoption name Consultation value random",
            "setoption name ConsultPlayers value 5",
            "setoption name ConsultNoise value 300",
            "setoption name Threads value 2",
            "isready",
        ] {
            engine.handle_line(line);
        }
        assert_eq!(buf.take(), "readyok\n");
        engine.handle_line("position startpos moves 7g7f 3c3d 2g2f");
        engine.handle_line("go nodes 3000");
        engine.wait_search();
        let out = buf.take();
        // (move, votes, summed score) from the players' lines.
        let mut votes: Vec<(String, u32, i64)> = Vec::new();
        for line in out.lines().filter(|l| l.starts_with("info string player")) {
            let w: Vec<&str> = line.split_whitespace().collect();
            let (mv, score) = (w[5].to_string(), w[8].parse::<i64>().unwrap());
            match votes.iter_mut().find(|v| v.0 == mv) {
                Some(v) => {
                    v.1 += 1;
                    v.2 += score;
                }
                None => votes.push((mv, 1, score)),
            }
        }
        assert_eq!(votes.iter().map(|v| v.1).sum::<u32>(), 5, "{out}");
        let best =
            out.lines().last().unwrap().strip_prefix("bestmove ").expect("ends with bestmove").to_string();
        let top = votes.iter().max_by_key(|v| (v.1, v.2)).unwrap();
        assert_eq!(best, top.0, "{out}");
        // The noise makes the players differ: not every player agrees on every move.
        let mut distinct = std::collections::HashSet::new();
        for seed in 1..=6 {
            engine.handle_line(&format!("setoption name ConsultSeed value {seed}"));
            engine.handle_line("go nodes 1500");
            engine.wait_search();
            for line in buf.take().lines().filter(|l| l.starts_with("info string player")) {
                distinct.insert(line.split_whitespace().nth(5).unwrap().to_string());
            }
        }
        assert!(distinct.len() >= 2, "{distinct:?}");
        engine.handle_line("go infinite");
        std::thread::sleep(Duration::from_millis(50));
        engine.handle_line("stop");
        assert!(buf.take().lines().last().unwrap().starts_with("bestmove "));
        engine.handle_line("setoption name Consultation value coin");
        assert!(buf.take().contains("error"));
    }
}
