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
//!
//! Here: the arguments, the openings and the run; `limit` is what bounds a move, `game`
//! plays the games, `tally` counts them (and runs the SPRT), `report` prints the summary.

mod game;
mod limit;
mod report;
mod tally;

use super::CommandResult;
use clap::{ArgGroup, Args};
use engine_core::play::sprt::Sprt;
use engine_core::rng::SplitMix64;
use engine_core::rules::{Position, UsiPosition};
use engine_core::teacher::load_openings;
use game::worker;
use indicatif::{ProgressBar, ProgressStyle};
use keima_worker::usi::client::engine_argv;
use keima_worker::usi::game::{GameSettings, UsiOpening};
use limit::{limit_from_args, parse_tc};
use report::{print_table, summary_json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tally::Tally;

/// The summary `keima match` writes into its `--out` directory (the `--json` object).
pub const SUMMARY_FILE: &str = "summary.json";

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
    /// Openings, one position a line as the USI `position` command takes it (`startpos
    /// moves ...`, `sfen ... moves ...`, a bare SFEN), or a CSA/KIF/KI2 record file; without
    /// it every game starts from the initial position.
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
    /// Nodes per move of engine2 when it differs from --nodes (e.g. one player given the
    /// total nodes of a consultation's players).
    #[arg(long, requires = "nodes")]
    nodes2: Option<u64>,
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

/// How to start an engine: its command line and the USI options to set.
struct EngineSpec {
    argv: Vec<String>,
    options: Vec<(String, String)>,
}

/// What every game thread shares.
struct Ctx<'a> {
    args: &'a MatchArgs,
    engines: [EngineSpec; 2],
    /// One per game pair: its number in the (shuffled) file, and where it starts.
    openings: Vec<UsiOpening>,
    settings: GameSettings,
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

/// Keima given an `EvalDir` it cannot load plays with material only and says so only in an
/// `info string`, so the match would measure the wrong evaluation: refuse it before any game.
fn check_own_eval_dir(engine: &str, options: &[(String, String)], flag: &str) -> Result<(), String> {
    if engine != "self" {
        return Ok(());
    }
    for (name, value) in options {
        if name.eq_ignore_ascii_case("EvalDir") && !value.is_empty() {
            engine_core::eval::kppt_file::load_kppt_dir(std::path::Path::new(value)).map_err(|e| {
                format!("{flag} EvalDir={value}: {e}; the engine would play with material only (export an eval there first, e.g. `keima export`)")
            })?;
        }
    }
    Ok(())
}

/// The openings of the games, one per pair: `--openings` (shuffled with `--seed`), taken
/// in order from `--opening-start` and wrapping around; without it the initial position.
fn pick_openings(args: &MatchArgs) -> Result<Vec<UsiOpening>, String> {
    let needed = args.games.div_ceil(2);
    let Some(path) = &args.openings else {
        let root = Position::startpos();
        return Ok((0..needed)
            .map(|i| UsiOpening { index: i, root_cmd: "startpos".to_string(), root, moves: Vec::new() })
            .collect());
    };
    let mut openings = load_openings(path).map_err(|e| format!("--openings {e}"))?;
    if let Some(seed) = args.seed {
        let mut rng = SplitMix64::new(seed);
        for i in (1..openings.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            openings.swap(i, j);
        }
    }
    Ok((0..needed)
        .map(|k| {
            let o = &openings[(args.opening_start + k) % openings.len()];
            UsiOpening {
                index: args.opening_start + k,
                root_cmd: UsiPosition::format(&o.start, []),
                root: o.start,
                moves: o.moves.clone(),
            }
        })
        .collect())
}

/// Writes the summary beside the records, for scripts and for `keima match-stats`, which
/// adds up batches. It is written after every game too (without the list of games), so a
/// match stopped by hand or killed leaves its counts so far.
fn write_summary(args: &MatchArgs, text: &str) -> Result<(), String> {
    engine_core::fsutil::write_atomic(&args.out.join(SUMMARY_FILE), text.as_bytes())
        .map_err(|e| format!("{e} (the games are in {}; only the summary was lost)", args.out.display()))
}

/// The counts so far, as the summary of a match still playing (see [`write_summary`]).
fn write_partial_summary(ctx: &Ctx, tally: &Tally, names: &[Option<String>; 2]) -> Result<(), String> {
    let summary = summary_json(ctx.args, ctx.settings.limit, tally, None, engine_names(ctx, names));
    write_summary(ctx.args, &serde_json::to_string_pretty(&summary).expect("json"))
}

/// Each engine's `id name`, or its command line if it never answered with one.
fn engine_names(ctx: &Ctx, names: &[Option<String>; 2]) -> [String; 2] {
    [0, 1].map(|i| names[i].clone().unwrap_or_else(|| ctx.engines[i].argv.join(" ")))
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
    let limit = limit_from_args(&args)?;
    let engines = [
        EngineSpec { argv: engine_argv(&args.engine1)?, options: parse_options(&args.option1, "--option1")? },
        EngineSpec { argv: engine_argv(&args.engine2)?, options: parse_options(&args.option2, "--option2")? },
    ];
    check_own_eval_dir(&args.engine1, &engines[0].options, "--option1")?;
    check_own_eval_dir(&args.engine2, &engines[1].options, "--option2")?;
    let openings = pick_openings(&args)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let ctx = Ctx {
        args: &args,
        engines,
        openings,
        settings: GameSettings {
            limit,
            max_plies: args.max_plies,
            time_margin: Duration::from_millis(args.time_margin),
            timeout: Duration::from_secs(args.timeout),
            event: "keima match".to_string(),
        },
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
    let names = engine_names(&ctx, &names);
    let summary =
        serde_json::to_string_pretty(&summary_json(&args, limit, &tally, Some(&reports), names.clone()))
            .expect("json");
    write_summary(&args, &summary)?;
    if args.json {
        println!("{summary}");
    } else {
        print_table(&args, limit, &tally, names);
    }
    Ok(ExitCode::SUCCESS)
}
