//! `keima match`: two USI engines play each other from a list of openings, each opening
//! twice with colours swapped; every game is written as a CSA file and the result is
//! reported as W/D/L and an Elo difference with a 95% interval (engine1's view), plus the
//! same from game pairs (pentanomial), time losses and illegal moves per engine, and
//! optionally an SPRT that stops the match once it decides.
//!
//! Clocks (`--tc`, `--byoyomi`): the match keeps each engine's remaining main time, sends it
//! with every `go`, and measures each move's wall time from `go` to `bestmove`. The
//! increment is credited when a move starts, so a move may use remaining + increment +
//! byoyomi (what `keima usi`'s time manager assumes); past that plus `--time-margin` it
//! loses on time. Afterwards remaining = max(0, remaining + increment - used): byoyomi is
//! use-it-or-lose-it.

use super::CommandResult;
use crate::usi_client::{BestMove, ClientError, UsiClient, engine_argv};
use clap::{ArgGroup, Args};
use engine_core::play::match_stats::{CsaEnd, CsaRecord, MatchStats, csa_time, format_elo};
use engine_core::play::sprt::{Pentanomial, Sprt, SprtStatus};
use engine_core::rules::game::{GameRules, can_declare_win};
use engine_core::rules::{Color, Game, GameEnd, Move, Position, UsiPosition};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

#[derive(Args)]
#[command(group(
    ArgGroup::new("limit").required(true).multiple(true).args(["nodes", "movetime", "byoyomi", "tc"])
))]
pub struct MatchArgs {
    /// First engine: a command line (split on whitespace), or `self` for `keima usi`.
    #[arg(long)]
    engine1: String,
    /// Second engine, as --engine1.
    #[arg(long)]
    engine2: String,
    /// A USI option for engine1, `NAME=VALUE` (repeatable), e.g. `UCI_Variant=shogi`.
    #[arg(long = "option1", value_name = "NAME=VALUE")]
    option1: Vec<String>,
    /// A USI option for engine2 (repeatable).
    #[arg(long = "option2", value_name = "NAME=VALUE")]
    option2: Vec<String>,
    /// Number of games (engine1 is Black in even-numbered games, counting from 0). With
    /// --sprt it is the most games played: the match stops starting pairs once the test
    /// decides.
    #[arg(long, default_value_t = 2)]
    games: usize,
    /// Openings, one USI position a line (`startpos moves ...` or `sfen ... moves ...`);
    /// without it every game starts from the initial position.
    #[arg(long)]
    openings: Option<PathBuf>,
    /// Index (from 0) of the first opening used; later games take the following ones and
    /// wrap around at the end of the file.
    #[arg(long, default_value_t = 0)]
    opening_start: usize,
    /// Shuffle the openings with this seed before picking them sequentially.
    #[arg(long)]
    seed: Option<u64>,
    /// Nodes per move (`go nodes N`).
    #[arg(long, conflicts_with_all = ["movetime", "byoyomi", "tc"])]
    nodes: Option<u64>,
    /// Milliseconds per move (`go movetime MS`).
    #[arg(long, conflicts_with_all = ["byoyomi", "tc"])]
    movetime: Option<u64>,
    /// Byoyomi per move in milliseconds: alone, no main time (`go btime 0 wtime 0 byoyomi
    /// MS`); with --tc, per move once the main time is used up.
    #[arg(long)]
    byoyomi: Option<u64>,
    /// Clock per engine and game: main time T and increment I in seconds, `T+I` (decimals
    /// allowed: `10+0.1`, `60+0`). Sent as `go btime B wtime W [binc I winc I] [byoyomi MS]`
    /// with the real remaining times; may be combined with --byoyomi.
    #[arg(long, value_name = "T+I", value_parser = parse_tc, allow_hyphen_values = true)]
    tc: Option<(u64, u64)>,
    /// Sequential probability ratio test over game pairs: H0 "engine1 is ELO0 stronger"
    /// against H1 "ELO1 stronger" (logistic Elo, ELO0 < ELO1), false-positive rate ALPHA and
    /// false-negative rate BETA (both 0.05 by default). The match stops starting pairs when
    /// the LLR leaves its bounds (never before 20 pairs); games already running finish and
    /// are counted.
    #[arg(long, value_name = "ELO0,ELO1[,ALPHA,BETA]", value_parser = Sprt::parse, allow_hyphen_values = true)]
    sprt: Option<Sprt>,
    /// A game reaching this many plies (opening moves included) is a draw.
    #[arg(long, default_value_t = 256)]
    max_plies: u32,
    /// Games played at the same time (each thread has its own engine processes).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Directory for the CSA files (`game_0001.csa`, ...).
    #[arg(long)]
    out: PathBuf,
    /// Milliseconds past the time a move may use (--movetime, or remaining + increment +
    /// byoyomi) after which it loses on time.
    #[arg(long, default_value_t = 1000)]
    time_margin: u64,
    /// Seconds to wait for usiok / readyok, and for a move under --nodes.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Print a JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

struct Opening {
    index: usize,
    /// `startpos` or `sfen <sfen>`.
    root_cmd: String,
    root: Position,
    moves: Vec<Move>,
}

struct EngineSpec {
    argv: Vec<String>,
    options: Vec<(String, String)>,
}

/// What bounds each move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limit {
    Nodes(u64),
    MoveTime(u64),
    /// A clock per engine, in milliseconds (see the module documentation).
    Clock {
        main_ms: u64,
        inc_ms: u64,
        byoyomi_ms: u64,
    },
}

impl Limit {
    fn from_args(args: &MatchArgs) -> Result<Limit, String> {
        match (args.nodes, args.movetime, args.tc, args.byoyomi) {
            (Some(n), ..) => Ok(Limit::Nodes(n)),
            (_, Some(t), ..) => Ok(Limit::MoveTime(t)),
            (_, _, tc, byoyomi) => {
                let (main_ms, inc_ms) = tc.unwrap_or((0, 0));
                let byoyomi_ms = byoyomi.unwrap_or(0);
                if main_ms == 0 && inc_ms == 0 && byoyomi_ms == 0 {
                    return Err("--tc / --byoyomi: the clock gives no time at all; use e.g. --tc 10+0.1 or \
                                --byoyomi 1000"
                        .to_string());
                }
                Ok(Limit::Clock { main_ms, inc_ms, byoyomi_ms })
            }
        }
    }

    /// For the summary and the records: `nodes 300`, `10+0.1 s`, `60+0 s, byoyomi 1000 ms`.
    fn describe(self) -> String {
        match self {
            Limit::Nodes(n) => format!("nodes {n}"),
            Limit::MoveTime(t) => format!("movetime {t} ms"),
            Limit::Clock { main_ms: 0, inc_ms: 0, byoyomi_ms } => format!("byoyomi {byoyomi_ms} ms"),
            Limit::Clock { main_ms, inc_ms, byoyomi_ms } => {
                let secs = |ms: u64| ms as f64 / 1000.0;
                let mut d = format!("{}+{} s", secs(main_ms), secs(inc_ms));
                if byoyomi_ms > 0 {
                    let _ = write!(d, ", byoyomi {byoyomi_ms} ms");
                }
                d
            }
        }
    }
}

/// Parses `--tc T+I` (seconds, decimals allowed) into milliseconds.
fn parse_tc(text: &str) -> Result<(u64, u64), String> {
    const MAX_SECONDS: f64 = 1e6;
    let (t, i) = text
        .split_once('+')
        .ok_or_else(|| "expected T+I: main time and increment in seconds, e.g. 10+0.1 or 60+0".to_string())?;
    let seconds = |part: &str, name: &str| -> Result<u64, String> {
        let v: f64 =
            part.trim().parse().map_err(|_| format!("{name} {part:?} is not a number of seconds"))?;
        if !v.is_finite() || !(0.0..=MAX_SECONDS).contains(&v) {
            return Err(format!("{name} must be between 0 and {MAX_SECONDS} seconds, got {part}"));
        }
        Ok((v * 1000.0).round() as u64)
    };
    Ok((seconds(t, "main time")?, seconds(i, "increment")?))
}

/// Why a game was lost by an engine's fault rather than on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Took longer than allowed (or gave no `bestmove` in time).
    TimeLoss,
    /// Played an illegal move or declared a win without the conditions.
    IllegalMove,
    /// The process exited or closed its pipes.
    Crash,
}

struct GameReport {
    game: usize,
    opening: usize,
    engine1_black: bool,
    /// Engine1's result: Some(true) won, Some(false) lost, None drawn.
    engine1_won: Option<bool>,
    end: CsaEnd,
    plies: usize,
    file: PathBuf,
    note: Option<String>,
    /// The engine (0 or 1) whose fault ended the game.
    fault: Option<(usize, Fault)>,
    /// Each engine's remaining main time at the end, under a clock.
    clock_ms: Option<[u64; 2]>,
}

/// The first time the LLR left its bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Decision {
    status: SprtStatus,
    pairs: u64,
    llr: f64,
}

/// Everything counted over the games, updated as each game finishes.
#[derive(Default)]
struct Tally {
    stats: MatchStats,
    penta: Pentanomial,
    /// Finished games whose partner (same opening, colours swapped) has not finished, by
    /// pair index: engine1's result.
    unpaired: HashMap<usize, Option<bool>>,
    time_losses: [u32; 2],
    illegal_moves: [u32; 2],
    crashes: [u32; 2],
    decision: Option<Decision>,
}

impl Tally {
    /// Counts a game; completes its pair when the partner is in, and then checks the test.
    /// Returns true when this game made the test decide.
    fn add(
        &mut self,
        game: usize,
        engine1_won: Option<bool>,
        fault: Option<(usize, Fault)>,
        sprt: Option<&Sprt>,
    ) -> bool {
        self.stats.add(engine1_won);
        if let Some((who, fault)) = fault {
            let counter = match fault {
                Fault::TimeLoss => &mut self.time_losses,
                Fault::IllegalMove => &mut self.illegal_moves,
                Fault::Crash => &mut self.crashes,
            };
            counter[who] += 1;
        }
        let Some(partner) = self.unpaired.remove(&(game / 2)) else {
            self.unpaired.insert(game / 2, engine1_won);
            return false;
        };
        self.penta.add_pair(partner, engine1_won);
        let Some(test) = sprt else { return false };
        if self.decision.is_some() {
            return false;
        }
        match test.status(&self.penta) {
            SprtStatus::Continue => false,
            status => {
                self.decision =
                    Some(Decision { status, pairs: self.penta.pairs(), llr: test.llr(&self.penta) });
                true
            }
        }
    }

    fn progress(&self, sprt: Option<&Sprt>) -> String {
        let s = &self.stats;
        let mut m = format!("W-D-L {}-{}-{}", s.wins, s.draws, s.losses);
        if let Some(t) = sprt {
            let _ =
                write!(m, "  LLR {:.2} [{:.2}, {:.2}]", t.llr(&self.penta), t.lower_bound(), t.upper_bound());
        }
        m
    }
}

/// The SPRT's verdict: the decision when the LLR first left its bounds (the games still
/// running then are counted in the LLR but do not undo it), else inconclusive.
fn sprt_result(decision: Option<Decision>) -> &'static str {
    match decision.map(|d| d.status) {
        Some(SprtStatus::AcceptH1) => "H1 accepted",
        Some(SprtStatus::AcceptH0) => "H0 accepted",
        _ => "inconclusive",
    }
}

/// Hands out the next game number, or `None` when there is none left. Once `stop` is set
/// only the partner of a game already handed out is given, so every started pair completes.
fn claim(next: &AtomicUsize, games: usize, stop: &AtomicBool) -> Option<usize> {
    let mut g = next.load(Ordering::SeqCst);
    loop {
        if g >= games || (g.is_multiple_of(2) && stop.load(Ordering::SeqCst)) {
            return None;
        }
        match next.compare_exchange(g, g + 1, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return Some(g),
            Err(current) => g = current,
        }
    }
}

struct Ctx<'a> {
    args: &'a MatchArgs,
    engines: [EngineSpec; 2],
    openings: Vec<Opening>,
    limit: Limit,
    /// An engine could not be started or a record not written: stop everything.
    abort: AtomicBool,
    /// The SPRT decided: start no new pair.
    stop: AtomicBool,
}

fn parse_options(list: &[String], flag: &str) -> Result<Vec<(String, String)>, String> {
    list.iter()
        .map(|o| {
            o.split_once('=')
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
                .filter(|(n, _)| !n.is_empty())
                .ok_or_else(|| format!("{flag} {o:?}: expected NAME=VALUE"))
        })
        .collect()
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn load_openings(args: &MatchArgs) -> Result<Vec<Opening>, String> {
    let needed = args.games.div_ceil(2);
    let Some(path) = &args.openings else {
        let root = Position::startpos();
        return Ok((0..needed)
            .map(|i| Opening { index: i, root_cmd: "startpos".to_string(), root, moves: Vec::new() })
            .collect());
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("--openings {}: {e}", path.display()))?;
    let mut lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if lines.is_empty() {
        return Err(format!("--openings {}: no positions", path.display()));
    }
    if let Some(seed) = args.seed {
        let mut state = seed;
        for i in (1..lines.len()).rev() {
            let j = (splitmix(&mut state) % (i as u64 + 1)) as usize;
            lines.swap(i, j);
        }
    }
    (0..needed)
        .map(|k| {
            let (line_no, line) = lines[(args.opening_start + k) % lines.len()];
            let line = line.strip_prefix("position ").unwrap_or(line);
            let UsiPosition { start: root, moves } = UsiPosition::parse(line)
                .map_err(|e| format!("--openings {} line {}: {e}", path.display(), line_no + 1))?;
            let root_cmd = match line.split_whitespace().next() {
                Some("startpos") => "startpos".to_string(),
                _ => format!("sfen {}", root.to_sfen()),
            };
            Ok(Opening { index: args.opening_start + k, root_cmd, root, moves })
        })
        .collect()
}

pub fn run(args: MatchArgs) -> CommandResult {
    if args.games == 0 {
        return Err("--games must be at least 1".to_string());
    }
    if args.sprt.is_some() && !args.games.is_multiple_of(2) {
        return Err(format!(
            "--games {}: --sprt counts game pairs, so give an even maximum (e.g. {})",
            args.games,
            args.games + 1
        ));
    }
    let limit = Limit::from_args(&args)?;
    let engines = [
        EngineSpec { argv: engine_argv(&args.engine1)?, options: parse_options(&args.option1, "--option1")? },
        EngineSpec { argv: engine_argv(&args.engine2)?, options: parse_options(&args.option2, "--option2")? },
    ];
    let openings = load_openings(&args)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let ctx = Ctx {
        args: &args,
        engines,
        openings,
        limit,
        abort: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    };

    let pb = ProgressBar::new(args.games as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} games {elapsed_precise}  {msg}")
            .expect("valid template"),
    );
    let tally = Mutex::new(Tally::default());
    pb.set_message(Tally::default().progress(args.sprt.as_ref()));
    let next = AtomicUsize::new(0);
    let reports = Mutex::new(Vec::new());
    let names = Mutex::new([None::<String>, None::<String>]);
    let errors = Mutex::new(Vec::<String>::new());
    let threads = args.concurrency.clamp(1, args.games);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                if let Err(e) = worker(&ctx, &next, &tally, &reports, &names, &pb) {
                    ctx.abort.store(true, Ordering::SeqCst);
                    errors.lock().unwrap_or_else(PoisonError::into_inner).push(e);
                }
            });
        }
    });
    pb.finish_and_clear();
    let errors = errors.into_inner().unwrap_or_else(PoisonError::into_inner);
    if let Some(e) = errors.first() {
        return Err(e.clone());
    }
    let tally = tally.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut reports = reports.into_inner().unwrap_or_else(PoisonError::into_inner);
    reports.sort_by_key(|r| r.game);
    let names = names.into_inner().unwrap_or_else(PoisonError::into_inner);
    let name = |i: usize| names[i].clone().unwrap_or_else(|| ctx.engines[i].argv.join(" "));
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary_json(&args, limit, &tally, &reports, [name(0), name(1)]))
                .expect("json")
        );
    } else {
        print_table(&args, limit, &tally, [name(0), name(1)]);
    }
    Ok(ExitCode::SUCCESS)
}

fn elo_json(v: f64) -> serde_json::Value {
    if v.is_finite() { json!((v * 10.0).round() / 10.0 + 0.0) } else { json!(format_elo(v)) }
}

fn per_engine_json(counts: [u32; 2]) -> serde_json::Value {
    json!({ "engine1": counts[0], "engine2": counts[1] })
}

fn summary_json(
    args: &MatchArgs,
    limit: Limit,
    tally: &Tally,
    reports: &[GameReport],
    names: [String; 2],
) -> serde_json::Value {
    let games: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            json!({
                "game": r.game + 1,
                "opening": r.opening,
                "engine1_color": if r.engine1_black { "black" } else { "white" },
                "result": match r.engine1_won { Some(true) => "win", Some(false) => "loss", None => "draw" },
                "end": r.end.keyword(),
                "plies": r.plies,
                "file": r.file.display().to_string(),
                "note": r.note,
                "clock_ms": r.clock_ms.map(|c| json!({ "engine1": c[0], "engine2": c[1] })),
            })
        })
        .collect();
    let stats = &tally.stats;
    let elo = stats.elo().expect("at least one game");
    let pair_elo = tally.penta.elo();
    let sprt = args.sprt.map(|t| {
        json!({
            "elo0": t.elo0,
            "elo1": t.elo1,
            "alpha": t.alpha,
            "beta": t.beta,
            "llr": t.llr(&tally.penta),
            "lower_bound": t.lower_bound(),
            "upper_bound": t.upper_bound(),
            "result": sprt_result(tally.decision),
            "decided_after_pairs": tally.decision.map(|d| d.pairs),
            "llr_at_decision": tally.decision.map(|d| d.llr),
        })
    });
    json!({
        "engine1": names[0],
        "engine2": names[1],
        "limit": limit.describe(),
        "games": stats.games(),
        "wins": stats.wins,
        "draws": stats.draws,
        "losses": stats.losses,
        "score": elo.score,
        "elo": elo_json(elo.elo),
        "elo_lower": elo_json(elo.lower),
        "elo_upper": elo_json(elo.upper),
        "pairs": tally.penta.pairs(),
        "pentanomial": tally.penta.counts,
        "pair_elo": pair_elo.map(|e| elo_json(e.elo)),
        "pair_elo_lower": pair_elo.map(|e| elo_json(e.lower)),
        "pair_elo_upper": pair_elo.map(|e| elo_json(e.upper)),
        "sprt": sprt,
        "time_losses": per_engine_json(tally.time_losses),
        "illegal_moves": per_engine_json(tally.illegal_moves),
        "crashes": per_engine_json(tally.crashes),
        "out": args.out.display().to_string(),
        "results": games,
    })
}

fn print_table(args: &MatchArgs, limit: Limit, tally: &Tally, names: [String; 2]) {
    let stats = &tally.stats;
    let elo = stats.elo().expect("at least one game");
    println!("engine1  {}  ({})", names[0], args.engine1);
    println!("engine2  {}  ({})", names[1], args.engine2);
    println!("limit    {}", limit.describe());
    println!(
        "{:>6} {:>5} {:>5} {:>6} {:>7} {:>8}  95% interval",
        "games", "wins", "draws", "losses", "score", "elo"
    );
    println!(
        "{:>6} {:>5} {:>5} {:>6} {:>6.1}% {:>8}  [{}, {}]",
        stats.games(),
        stats.wins,
        stats.draws,
        stats.losses,
        elo.score * 100.0,
        format_elo(elo.elo),
        format_elo(elo.lower),
        format_elo(elo.upper)
    );
    let [c0, c1, c2, c3, c4] = tally.penta.counts;
    let pairs = tally.penta.pairs();
    println!(
        "pentanomial  {c0} {c1} {c2} {c3} {c4}  (pairs scoring 0, 0.5, 1, 1.5, 2; {pairs} pair{})",
        if pairs == 1 { "" } else { "s" }
    );
    if let Some(e) = tally.penta.elo() {
        println!(
            "pair elo     {} [{}, {}]  (95%, from the pairs)",
            format_elo(e.elo),
            format_elo(e.lower),
            format_elo(e.upper)
        );
    }
    if let Some(t) = &args.sprt {
        let mut line = format!(
            "SPRT [{}, {}] α {} β {}: LLR {:.2} [{:.2}, {:.2}] → {}",
            t.elo0,
            t.elo1,
            t.alpha,
            t.beta,
            t.llr(&tally.penta),
            t.lower_bound(),
            t.upper_bound(),
            sprt_result(tally.decision)
        );
        if let Some(d) = tally.decision.filter(|d| d.pairs < tally.penta.pairs()) {
            let _ = write!(line, " (bound crossed after {} pairs at LLR {:.2})", d.pairs, d.llr);
        }
        println!("{line}");
    }
    println!("time losses: engine1 {}, engine2 {}", tally.time_losses[0], tally.time_losses[1]);
    println!("illegal moves: engine1 {}, engine2 {}", tally.illegal_moves[0], tally.illegal_moves[1]);
    if tally.crashes != [0, 0] {
        println!("crashes: engine1 {}, engine2 {}", tally.crashes[0], tally.crashes[1]);
    }
    println!("records in {}", args.out.display());
}

fn start_engine(ctx: &Ctx, i: usize) -> Result<UsiClient, String> {
    let spec = &ctx.engines[i];
    let timeout = Duration::from_secs(ctx.args.timeout);
    let mut c =
        UsiClient::start(&spec.argv, &spec.options, timeout).map_err(|e| format!("engine{}: {e}", i + 1))?;
    c.isready(timeout).map_err(|e| format!("engine{} ({}): {e}", i + 1, c.label()))?;
    Ok(c)
}

fn worker(
    ctx: &Ctx,
    next: &AtomicUsize,
    tally: &Mutex<Tally>,
    reports: &Mutex<Vec<GameReport>>,
    names: &Mutex<[Option<String>; 2]>,
    pb: &ProgressBar,
) -> Result<(), String> {
    let mut engines: [Option<UsiClient>; 2] = [None, None];
    loop {
        if ctx.abort.load(Ordering::SeqCst) {
            break;
        }
        let Some(g) = claim(next, ctx.args.games, &ctx.stop) else { break };
        for (i, slot) in engines.iter_mut().enumerate() {
            if slot.is_none() {
                let c = start_engine(ctx, i)?;
                names.lock().unwrap_or_else(PoisonError::into_inner)[i].get_or_insert_with(|| c.name.clone());
                *slot = Some(c);
            }
        }
        let report = play_game(ctx, g, &mut engines)?;
        let message = {
            let mut t = tally.lock().unwrap_or_else(PoisonError::into_inner);
            if t.add(report.game, report.engine1_won, report.fault, ctx.args.sprt.as_ref()) {
                ctx.stop.store(true, Ordering::SeqCst);
            }
            t.progress(ctx.args.sprt.as_ref())
        };
        reports.lock().unwrap_or_else(PoisonError::into_inner).push(report);
        pb.set_message(message);
        pb.inc(1);
    }
    for c in engines.into_iter().flatten() {
        c.quit();
    }
    Ok(())
}

fn play_game(ctx: &Ctx, g: usize, engines: &mut [Option<UsiClient>; 2]) -> Result<GameReport, String> {
    let args = ctx.args;
    let opening = &ctx.openings[g / 2];
    let engine1_black = g.is_multiple_of(2);
    let engine_of = |c: Color| if (c == Color::Black) == engine1_black { 0 } else { 1 };
    let timeout = Duration::from_secs(args.timeout);
    for (i, slot) in engines.iter_mut().enumerate() {
        let c = slot.as_mut().expect("started");
        c.send("usinewgame")
            .and_then(|_| c.isready(timeout))
            .map_err(|e| format!("engine{} ({}): {e}", i + 1, c.label()))?;
    }
    let name = |i: usize| engines[i].as_ref().map(|c| c.name.clone()).unwrap_or_default();
    let (black, white) = if engine1_black { (name(0), name(1)) } else { (name(1), name(0)) };
    let mut record = CsaRecord::new(&black, &white, opening.root);
    record.event = Some("keima match".to_string());
    record.start_time = Some(csa_time(SystemTime::now()));

    let mut game = Game::new(opening.root);
    let mut usi: Vec<String> = Vec::new();
    for &m in &opening.moves {
        game.play(m);
        usi.push(m.to_usi());
        record.times_ms.push(None);
    }
    let rules = GameRules { declaration: false, max_plies: Some(args.max_plies) };
    let ms = Duration::from_millis;
    let margin = ms(args.time_margin);
    // Each engine's remaining main time; clocks restart every game.
    let mut clock = match ctx.limit {
        Limit::Clock { main_ms, .. } => [ms(main_ms); 2],
        _ => [Duration::ZERO; 2],
    };
    let mut note = None;
    let mut fault = None;
    let end = loop {
        if let Some(outcome) = game.outcome(&rules) {
            break match outcome.reason {
                GameEnd::NoLegalMove => CsaEnd::Tsumi,
                GameEnd::Repetition => CsaEnd::Sennichite,
                GameEnd::PerpetualCheck => {
                    CsaEnd::IllegalAction(outcome.winner.expect("perpetual check has a winner").opponent())
                }
                GameEnd::Declaration => CsaEnd::Kachi,
                GameEnd::MaxPlies => CsaEnd::MaxMoves,
            };
        }
        let side = game.position().side_to_move();
        let who = engine_of(side);
        let position = if usi.is_empty() {
            format!("position {}", opening.root_cmd)
        } else {
            format!("position {} moves {}", opening.root_cmd, usi.join(" "))
        };
        // The go command and the time this move may use (None: only --timeout bounds it).
        let (go_cmd, allowed) = match ctx.limit {
            Limit::Nodes(n) => (format!("go nodes {n}"), None),
            Limit::MoveTime(t) => (format!("go movetime {t}"), Some(ms(t))),
            Limit::Clock { inc_ms, byoyomi_ms, .. } => {
                let [b, w] = [Color::Black, Color::White].map(|c| clock[engine_of(c)].as_millis());
                let mut cmd = format!("go btime {b} wtime {w}");
                if inc_ms > 0 {
                    let _ = write!(cmd, " binc {inc_ms} winc {inc_ms}");
                }
                if byoyomi_ms > 0 {
                    let _ = write!(cmd, " byoyomi {byoyomi_ms}");
                }
                (cmd, Some(clock[who].saturating_add(ms(inc_ms)).saturating_add(ms(byoyomi_ms))))
            }
        };
        let move_timeout = allowed.map_or(timeout, |a| a.saturating_add(margin));
        let client = engines[who].as_mut().expect("started");
        let answer = client.go(&position, &go_cmd, move_timeout);
        if let (Ok((_, used)), Some(allowed)) = (&answer, allowed) {
            if *used > allowed.saturating_add(margin) {
                note = Some(format!(
                    "engine{} lost on time: {} ms used, {} ms allowed + {} ms margin",
                    who + 1,
                    used.as_millis(),
                    allowed.as_millis(),
                    margin.as_millis()
                ));
                fault = Some((who, Fault::TimeLoss));
                break CsaEnd::TimeUp;
            }
            if let Limit::Clock { inc_ms, .. } = ctx.limit {
                clock[who] = clock[who].saturating_add(ms(inc_ms)).saturating_sub(*used);
            }
        }
        match answer {
            Ok((BestMove::Resign, _)) => break CsaEnd::Toryo,
            Ok((BestMove::Win, _)) => {
                if can_declare_win(game.position()) {
                    break CsaEnd::Kachi;
                }
                note = Some(format!("engine{} declared a win without the conditions", who + 1));
                fault = Some((who, Fault::IllegalMove));
                break CsaEnd::IllegalMove;
            }
            Ok((BestMove::Move(text), used)) => match game.position().parse_usi_move(&text) {
                Ok(m) => {
                    game.play(m);
                    usi.push(text);
                    record.times_ms.push(Some(used.as_millis() as u64));
                }
                Err(e) => {
                    note = Some(format!("engine{} played {text:?}: {e}", who + 1));
                    fault = Some((who, Fault::IllegalMove));
                    break CsaEnd::IllegalMove;
                }
            },
            Err(e) => {
                let kind = if matches!(e, ClientError::Timeout(_)) { Fault::TimeLoss } else { Fault::Crash };
                note = Some(format!("engine{}: {e}", who + 1));
                fault = Some((who, kind));
                // A hung or dead engine is replaced before the next game.
                engines[who] = None;
                break CsaEnd::TimeUp;
            }
        }
    };
    let side = game.position().side_to_move();
    let winner = end.winner(side);
    let engine1_color = if engine1_black { Color::Black } else { Color::White };
    let engine1_won = winner.map(|w| w == engine1_color);
    for (i, slot) in engines.iter_mut().enumerate() {
        if let Some(c) = slot {
            let result = match winner {
                None => "draw",
                Some(w) if engine_of(w) == i => "win",
                Some(_) => "lose",
            };
            let _ = c.send(&format!("gameover {result}"));
        }
    }
    record.moves = game.moves().to_vec();
    record.end = Some(end);
    record.comments.push(format!("opening {} ({} plies)", opening.index, opening.moves.len()));
    let clock_ms = matches!(ctx.limit, Limit::Clock { .. }).then(|| clock.map(|c| c.as_millis() as u64));
    if let Some([c0, c1]) = clock_ms {
        record.comments.push(format!(
            "time control {}; main time left: engine1 {c0} ms, engine2 {c1} ms",
            ctx.limit.describe()
        ));
    }
    if let Some(n) = &note {
        record.comments.push(n.clone());
    }
    let file = args.out.join(format!("game_{:04}.csa", g + 1));
    write_file(&file, &record.to_csa())?;
    Ok(GameReport {
        game: g,
        opening: opening.index,
        engine1_black,
        engine1_won,
        end,
        plies: game.moves().len(),
        file,
        note,
        fault,
        clock_ms,
    })
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_parses_seconds_to_milliseconds() {
        assert_eq!(parse_tc("10+0.1"), Ok((10_000, 100)));
        assert_eq!(parse_tc("60+0"), Ok((60_000, 0)));
        assert_eq!(parse_tc("0.5+0.0125"), Ok((500, 13)));
        for (bad, needle) in [
            ("10", "expected T+I"),
            ("-1+0", "main time must be between 0"),
            ("1+-0.5", "increment must be between 0"),
            ("x+1", "main time \"x\" is not a number"),
            ("nan+0", "main time must be between 0"),
            ("1e7+0", "main time must be between 0"),
        ] {
            let e = parse_tc(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn limits_describe_themselves() {
        let clock = |main_ms, inc_ms, byoyomi_ms| Limit::Clock { main_ms, inc_ms, byoyomi_ms };
        assert_eq!(clock(10_000, 100, 0).describe(), "10+0.1 s");
        assert_eq!(clock(60_000, 0, 1000).describe(), "60+0 s, byoyomi 1000 ms");
        assert_eq!(clock(0, 0, 100).describe(), "byoyomi 100 ms");
        assert_eq!(Limit::Nodes(300).describe(), "nodes 300");
    }

    #[test]
    fn claim_completes_started_pairs_after_stop() {
        let (next, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
        assert_eq!(claim(&next, 6, &stop), Some(0));
        assert_eq!(claim(&next, 6, &stop), Some(1));
        assert_eq!(claim(&next, 6, &stop), Some(2));
        stop.store(true, Ordering::SeqCst);
        // Game 3 is game 2's partner: still played. Game 4 would open a new pair.
        assert_eq!(claim(&next, 6, &stop), Some(3));
        assert_eq!(claim(&next, 6, &stop), None);
        assert_eq!(next.load(Ordering::SeqCst), 4);
        let (next, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
        assert_eq!(
            (0..4).map(|_| claim(&next, 3, &stop)).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(2), None]
        );
    }

    #[test]
    fn tally_pairs_games_and_decides_once() {
        // A test that may decide from the first pair, to keep the example small.
        let test = Sprt { min_pairs: 1, ..Sprt::new(0.0, 5.0, 0.05, 0.05).unwrap() };
        let mut t = Tally::default();
        // Games finish out of order; a pair counts when both of its games are in.
        assert!(!t.add(1, Some(true), None, Some(&test)));
        assert!(!t.add(2, None, Some((1, Fault::TimeLoss)), Some(&test)));
        assert_eq!(t.penta.pairs(), 0);
        // Pair 0 (games 0, 1): 2-0. LLR 1.92 (see engine_core::play::sprt): continue.
        assert!(!t.add(0, Some(true), Some((1, Fault::IllegalMove)), Some(&test)));
        assert_eq!(t.penta.counts, [0, 0, 0, 0, 1]);
        assert_eq!(t.decision, None);
        // Pair 2 (games 4, 5): 2-0, LLR 7.65 ≥ 2.94: H1, decided here and only here.
        assert!(!t.add(4, Some(true), None, Some(&test)));
        assert!(t.add(5, Some(true), None, Some(&test)));
        let d = t.decision.unwrap();
        assert_eq!((d.status, d.pairs), (SprtStatus::AcceptH1, 2));
        assert!((d.llr - 7.651_163_918_675_739).abs() < 1e-9, "{}", d.llr);
        // Pair 1 (games 2, 3) finishes afterwards: counted, the decision stays.
        assert!(!t.add(3, Some(false), Some((0, Fault::Crash)), Some(&test)));
        assert_eq!(t.penta.counts, [0, 1, 0, 0, 2]);
        assert_eq!(t.decision, Some(d));
        assert_eq!(sprt_result(t.decision), "H1 accepted");
        assert_eq!((t.stats.wins, t.stats.draws, t.stats.losses), (4, 1, 1));
        assert_eq!((t.time_losses, t.illegal_moves, t.crashes), ([0, 1], [0, 1], [1, 0]));
        let progress = t.progress(Some(&test));
        assert!(
            progress.starts_with("W-D-L 4-1-1  LLR ") && progress.ends_with(" [-2.94, 2.94]"),
            "{progress}"
        );
        assert_eq!(t.progress(None), "W-D-L 4-1-1");
    }
}
