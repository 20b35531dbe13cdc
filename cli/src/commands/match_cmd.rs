//! `keima match`: two USI engines play each other from a list of openings, each opening
//! twice with colours swapped; every game is written as a CSA file and the result is
//! reported as W/D/L and an Elo difference with a 95% interval (engine1's view).

use super::CommandResult;
use crate::usi_client::{BestMove, UsiClient, engine_argv};
use clap::{ArgGroup, Args};
use engine_core::play::match_stats::{CsaEnd, CsaRecord, EloEstimate, MatchStats, csa_time, format_elo};
use engine_core::play::usi_engine::parse_position_command;
use engine_core::rules::game::{GameRules, can_declare_win};
use engine_core::rules::{Color, Game, GameEnd, Move, Position};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

#[derive(Args)]
#[command(group(ArgGroup::new("limit").required(true).args(["nodes", "movetime", "byoyomi"])))]
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
    /// Number of games (engine1 is Black in even-numbered games, counting from 0).
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
    #[arg(long)]
    nodes: Option<u64>,
    /// Milliseconds per move (`go movetime MS`).
    #[arg(long)]
    movetime: Option<u64>,
    /// Byoyomi per move in milliseconds (`go btime 0 wtime 0 byoyomi MS`).
    #[arg(long)]
    byoyomi: Option<u64>,
    /// A game reaching this many plies (opening moves included) is a draw.
    #[arg(long, default_value_t = 256)]
    max_plies: u32,
    /// Games played at the same time (each thread has its own engine processes).
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// Directory for the CSA files (`game_0001.csa`, ...).
    #[arg(long)]
    out: PathBuf,
    /// Milliseconds past --movetime / --byoyomi after which a move loses on time.
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
}

struct Ctx<'a> {
    args: &'a MatchArgs,
    engines: [EngineSpec; 2],
    openings: Vec<Opening>,
    abort: AtomicBool,
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
            let (root, moves) = parse_position_command(line)
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
    let engines = [
        EngineSpec { argv: engine_argv(&args.engine1)?, options: parse_options(&args.option1, "--option1")? },
        EngineSpec { argv: engine_argv(&args.engine2)?, options: parse_options(&args.option2, "--option2")? },
    ];
    let openings = load_openings(&args)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let ctx = Ctx { args: &args, engines, openings, abort: AtomicBool::new(false) };

    let pb = ProgressBar::new(args.games as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} games {elapsed_precise}  {msg}")
            .expect("valid template"),
    );
    pb.set_message("W-D-L 0-0-0");
    let next = AtomicUsize::new(0);
    let stats = Mutex::new(MatchStats::default());
    let reports = Mutex::new(Vec::new());
    let names = Mutex::new([None::<String>, None::<String>]);
    let errors = Mutex::new(Vec::<String>::new());
    let threads = args.concurrency.clamp(1, args.games);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                if let Err(e) = worker(&ctx, &next, &stats, &reports, &names, &pb) {
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
    let stats = stats.into_inner().unwrap_or_else(PoisonError::into_inner);
    let mut reports = reports.into_inner().unwrap_or_else(PoisonError::into_inner);
    reports.sort_by_key(|r| r.game);
    let names = names.into_inner().unwrap_or_else(PoisonError::into_inner);
    let name = |i: usize| names[i].clone().unwrap_or_else(|| ctx.engines[i].argv.join(" "));
    let elo = stats.elo().expect("at least one game");
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary_json(&args, &stats, &elo, &reports, [name(0), name(1)]))
                .expect("json")
        );
    } else {
        print_table(&args, &stats, &elo, [name(0), name(1)]);
    }
    Ok(ExitCode::SUCCESS)
}

fn elo_json(v: f64) -> serde_json::Value {
    if v.is_finite() { json!((v * 10.0).round() / 10.0 + 0.0) } else { json!(format_elo(v)) }
}

fn summary_json(
    args: &MatchArgs,
    stats: &MatchStats,
    elo: &EloEstimate,
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
            })
        })
        .collect();
    json!({
        "engine1": names[0],
        "engine2": names[1],
        "games": stats.games(),
        "wins": stats.wins,
        "draws": stats.draws,
        "losses": stats.losses,
        "score": elo.score,
        "elo": elo_json(elo.elo),
        "elo_lower": elo_json(elo.lower),
        "elo_upper": elo_json(elo.upper),
        "out": args.out.display().to_string(),
        "results": games,
    })
}

fn print_table(args: &MatchArgs, stats: &MatchStats, elo: &EloEstimate, names: [String; 2]) {
    println!("engine1  {}  ({})", names[0], args.engine1);
    println!("engine2  {}  ({})", names[1], args.engine2);
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
    stats: &Mutex<MatchStats>,
    reports: &Mutex<Vec<GameReport>>,
    names: &Mutex<[Option<String>; 2]>,
    pb: &ProgressBar,
) -> Result<(), String> {
    let mut engines: [Option<UsiClient>; 2] = [None, None];
    loop {
        if ctx.abort.load(Ordering::SeqCst) {
            break;
        }
        let g = next.fetch_add(1, Ordering::SeqCst);
        if g >= ctx.args.games {
            break;
        }
        for (i, slot) in engines.iter_mut().enumerate() {
            if slot.is_none() {
                let c = start_engine(ctx, i)?;
                names.lock().unwrap_or_else(PoisonError::into_inner)[i].get_or_insert_with(|| c.name.clone());
                *slot = Some(c);
            }
        }
        let report = play_game(ctx, g, &mut engines)?;
        let snapshot = {
            let mut s = stats.lock().unwrap_or_else(PoisonError::into_inner);
            s.add(report.engine1_won);
            *s
        };
        reports.lock().unwrap_or_else(PoisonError::into_inner).push(report);
        pb.set_message(format!("W-D-L {}-{}-{}", snapshot.wins, snapshot.draws, snapshot.losses));
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
    let (go_cmd, move_timeout) = match (args.nodes, args.movetime, args.byoyomi) {
        (Some(n), _, _) => (format!("go nodes {n}"), timeout),
        (_, Some(t), _) => (format!("go movetime {t}"), Duration::from_millis(t + args.time_margin)),
        (_, _, Some(b)) => {
            (format!("go btime 0 wtime 0 byoyomi {b}"), Duration::from_millis(b + args.time_margin))
        }
        _ => unreachable!("clap requires a limit"),
    };
    let mut note = None;
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
        let client = engines[who].as_mut().expect("started");
        let t0 = Instant::now();
        match client.go(&position, &go_cmd, move_timeout) {
            Ok((_, elapsed)) if args.nodes.is_none() && elapsed > move_timeout => {
                note = Some(format!("engine{} used {} ms", who + 1, elapsed.as_millis()));
                break CsaEnd::TimeUp;
            }
            Ok((BestMove::Resign, _)) => break CsaEnd::Toryo,
            Ok((BestMove::Win, _)) => {
                if can_declare_win(game.position()) {
                    break CsaEnd::Kachi;
                }
                note = Some(format!("engine{} declared a win without the conditions", who + 1));
                break CsaEnd::IllegalMove;
            }
            Ok((BestMove::Move(text), _)) => match game.position().parse_usi_move(&text) {
                Ok(m) => {
                    game.play(m);
                    usi.push(text);
                    record.times_ms.push(Some(t0.elapsed().as_millis() as u64));
                }
                Err(e) => {
                    note = Some(format!("engine{} played {text:?}: {e}", who + 1));
                    break CsaEnd::IllegalMove;
                }
            },
            Err(e) => {
                note = Some(format!("engine{}: {e}", who + 1));
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
    })
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}
