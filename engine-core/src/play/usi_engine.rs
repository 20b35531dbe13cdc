//! The USI engine protocol as a state machine: feed it command lines with
//! [`UsiEngine::handle_line`] (or a whole reader with [`UsiEngine::run`]); it writes its
//! answers to any `Write`. The search runs on a background thread so that `stop`, `quit`,
//! `isready` and `ponderhit` are answered while it thinks.
//!
//! Time management ([`time_limits`]): the time this move may use without losing is
//! `remaining + increment + byoyomi`; a safety margin (`NetworkDelay`, default 120 ms, but
//! never more than half of that total) is kept back. The hard limit (the search stops) is
//! `min(total - margin, remaining / 8 + increment + byoyomi - margin)`; the soft limit (no
//! new iteration starts once it is used, scaled by how settled the search is) is
//! `min(hard, remaining / 40 + increment + byoyomi - margin)`. Byoyomi is use-it-or-lose-it:
//! the search never stops before `byoyomi - margin` (the free time), and in pure byoyomi
//! soft = hard. `movetime T` is treated as a byoyomi of `T`.

use crate::eval::Evaluator;
use crate::eval::kppt_file::load_kppt_dir;
use crate::eval::patterns::file as pattern_file;
use crate::rules::{Color, Move, Position, UsiPosition};
use crate::search::{Info, Limits, SearchResult, Searcher, TranspositionTable};
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

/// The arguments of a `go` command. Times are in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GoParams {
    pub depth: Option<i32>,
    pub nodes: Option<u64>,
    pub btime: Option<u64>,
    pub wtime: Option<u64>,
    pub binc: Option<u64>,
    pub winc: Option<u64>,
    pub byoyomi: Option<u64>,
    pub movetime: Option<u64>,
    pub infinite: bool,
    pub ponder: bool,
}

impl GoParams {
    /// Parses the words after `go`. Unknown words are errors; `mate` is not supported.
    pub fn parse(args: &str) -> Result<GoParams, String> {
        let mut p = GoParams::default();
        let mut words = args.split_whitespace();
        while let Some(w) = words.next() {
            let mut num = |name: &str| -> Result<u64, String> {
                let v = words.next().ok_or_else(|| format!("go {name}: missing value"))?;
                // Some GUIs send negative remaining times; treat them as 0.
                match v.parse::<i64>() {
                    Ok(n) => Ok(n.max(0) as u64),
                    Err(_) => Err(format!("go {name}: bad number {v:?}")),
                }
            };
            match w {
                "depth" => p.depth = Some(num(w)?.min(1000) as i32),
                "nodes" => p.nodes = Some(num(w)?),
                "btime" => p.btime = Some(num(w)?),
                "wtime" => p.wtime = Some(num(w)?),
                "binc" => p.binc = Some(num(w)?),
                "winc" => p.winc = Some(num(w)?),
                "byoyomi" => p.byoyomi = Some(num(w)?),
                "movetime" => p.movetime = Some(num(w)?),
                "infinite" => p.infinite = true,
                "ponder" => p.ponder = true,
                other => return Err(format!("go: unsupported argument {other:?}")),
            }
        }
        Ok(p)
    }

    fn has_clock(&self) -> bool {
        self.btime.is_some()
            || self.wtime.is_some()
            || self.byoyomi.is_some()
            || self.binc.is_some()
            || self.winc.is_some()
            || self.movetime.is_some()
    }

    /// Nothing bounds the search: it runs until `stop`.
    fn unbounded(&self) -> bool {
        self.infinite || self.ponder || (!self.has_clock() && self.depth.is_none() && self.nodes.is_none())
    }
}

/// The time limits of one move (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// The search stops here.
    pub hard: Duration,
    /// Planned use, scaled by the search's stability.
    pub soft: Duration,
    /// Lost if not used: never stop before it.
    pub free: Duration,
}

/// The time limits for `side`'s move, or `None` when the command gives no clock. See the
/// module documentation for the rule.
pub fn time_limits(go: &GoParams, side: Color, network_delay_ms: u64) -> Option<Clock> {
    let ms = Duration::from_millis;
    if let Some(total) = go.movetime {
        let hard = ms(total - network_delay_ms.min(total / 2));
        return Some(Clock { hard, soft: hard, free: hard });
    }
    if !go.has_clock() {
        return None;
    }
    let (remaining, inc) = match side {
        Color::Black => (go.btime.unwrap_or(0), go.binc.unwrap_or(0)),
        Color::White => (go.wtime.unwrap_or(0), go.winc.unwrap_or(0)),
    };
    let byoyomi = go.byoyomi.unwrap_or(0);
    let total = remaining + inc + byoyomi;
    let margin = network_delay_ms.min(total / 2);
    let ceiling = total - margin;
    let hard = ceiling.min((remaining / 8 + inc + byoyomi).saturating_sub(margin));
    let soft = hard.min((remaining / 40 + inc + byoyomi).saturating_sub(margin));
    let free = hard.min(byoyomi.saturating_sub(margin));
    Some(Clock { hard: ms(hard), soft: ms(soft), free: ms(free) })
}

/// One `info` line for a finished iteration.
pub fn info_line(info: &Info) -> String {
    let score = match info.mate_in() {
        Some(n) => format!("mate {n}"),
        None => format!("cp {}", info.score),
    };
    let mut line = format!(
        "info depth {} seldepth {} score {score} nodes {} nps {} hashfull {} time {}",
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

struct Running {
    handle: JoinHandle<Searcher>,
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
    loaded: Option<(String, String)>,
    evaluator: Option<Arc<Evaluator>>,
    tt: Option<(usize, Arc<TranspositionTable>)>,
    searcher: Option<Searcher>,
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
            loaded: None,
            evaluator: None,
            tt: None,
            searcher: None,
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
            }
            "position" => match UsiPosition::parse(args) {
                Ok(UsiPosition { start, moves }) => {
                    self.start = start;
                    self.moves = moves;
                }
                Err(e) => self.error(&format!("position rejected, keeping the previous one: {e}")),
            },
            "go" => match GoParams::parse(args) {
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
                match load_kppt_dir(Path::new(&want.0)) {
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
    }

    fn go(&mut self, params: GoParams) {
        self.finish_search();
        self.ensure_ready();
        let mut searcher = self.searcher.take().expect("searcher ready");
        searcher.set_position(&self.start, &self.moves);
        let side = searcher.position().side_to_move();
        let clock = time_limits(&params, side, self.network_delay_ms);
        let unbounded = params.unbounded();
        let mut limits = Limits { depth: params.depth, nodes: params.nodes, ..Limits::default() };
        if !unbounded && let Some(c) = clock {
            limits.time = Some(c.hard);
            limits.soft_time = Some(c.soft);
            limits.free_time = Some(c.free);
        }
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
                searcher
            })
            .expect("spawn the search thread");
        self.running = Some(Running { handle, stop, release, ponder: params.ponder, limits: clock });
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
            Ok(searcher) => self.searcher = Some(searcher),
            Err(_) => self.error("the search thread panicked"),
        }
    }

    /// Waits for a bounded search (`go depth`, `nodes`, clock) to finish by itself.
    pub fn wait_search(&mut self) {
        if let Some(run) = self.running.take() {
            let joined = run.handle.join();
            self.generation.fetch_add(1, Ordering::SeqCst);
            match joined {
                Ok(searcher) => self.searcher = Some(searcher),
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

    #[test]
    fn go_arguments_parse() {
        let p = GoParams::parse("btime 1000 wtime -5 byoyomi 100").unwrap();
        assert_eq!(p.btime, Some(1000));
        assert_eq!(p.wtime, Some(0));
        assert_eq!(p.byoyomi, Some(100));
        assert!(!p.unbounded());
        assert!(GoParams::parse("").unwrap().unbounded());
        assert!(GoParams::parse("ponder btime 0 wtime 0 byoyomi 1000").unwrap().unbounded());
        assert!(GoParams::parse("depth x").is_err());
        assert!(GoParams::parse("mate 5").is_err());
    }

    #[test]
    fn time_rule() {
        let go = |s: &str| GoParams::parse(s).unwrap();
        // 100 ms byoyomi: the margin is capped at half of it.
        let c = |hard, soft, free| Some(Clock { hard: ms(hard), soft: ms(soft), free: ms(free) });
        assert_eq!(time_limits(&go("btime 0 wtime 0 byoyomi 100"), Color::Black, 120), c(50, 50, 50));
        // 10 s byoyomi: all of it but the network delay.
        assert_eq!(time_limits(&go("btime 0 wtime 0 byoyomi 10000"), Color::White, 120), c(9880, 9880, 9880));
        // Main time and byoyomi: the byoyomi is used whatever the search thinks.
        assert_eq!(
            time_limits(&go("btime 60000 wtime 60000 byoyomi 1000"), Color::White, 120),
            c(8380, 2380, 880)
        );
        // 80 s left, no byoyomi: 10 s hard, 2 s soft, minus the margin.
        assert_eq!(time_limits(&go("btime 80000 wtime 1000"), Color::Black, 120), c(9880, 1880, 0));
        // The side to move's clock is the one used; nearly out of time: never past the flag.
        assert_eq!(time_limits(&go("btime 80000 wtime 100"), Color::White, 120), c(0, 0, 0));
        // Fischer: the increment is added.
        assert_eq!(
            time_limits(&go("btime 40000 wtime 40000 binc 2000 winc 2000"), Color::Black, 100),
            c(6900, 2900, 0)
        );
        assert_eq!(time_limits(&go("movetime 1000"), Color::Black, 120), c(880, 880, 880));
        assert_eq!(time_limits(&go("depth 5"), Color::Black, 120), None);
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
}
