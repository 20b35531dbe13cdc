//! `keima dobutsu`: dobutsu shogi — perft, the exact solution (build / query), feature
//! tables for the improved Monte Carlo player, matches, teacher quality, benchmarks.
//! The logic is the `keima-dobutsu` crate (`dobutsu/`).

use super::CommandResult;
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use keima_dobutsu::game::Outcome;
use keima_dobutsu::mc_player::{FeatureTables, McKind, alpha_for, evaluate_moves};
use keima_dobutsu::movegen::{MoveList, legal_moves, perft};
use keima_dobutsu::players::{Player, best_moves, play_game};
use keima_dobutsu::playout::{Rng, uniform_playout};
use keima_dobutsu::rules::{Color, Move, Position};
use keima_dobutsu::solver::{Value, enumerate, move_values, retrograde, table_key};
use keima_dobutsu::table_file::{Table, write_table};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Published facts the full solve is checked against. Tanaka (2009, "「どうぶつしょうぎ」の
/// 完全解析", www.tanaka.ecc.u-tokyo.ac.jp/ktanaka/dobutsushogi/) counts the positions
/// reachable from the start "with the condition that the lion is always taken when it can
/// be", mirror images as one: 246,803,167, of which 140,298,614 can take the lion,
/// 7,018,985 are lost to a try and 99,485,568 are not terminal (the breakdown as given by
/// public reproductions of the analysis).
const PUBLISHED_REACHABLE: u64 = 246_803_167;
const PUBLISHED_CATCH: u64 = 140_298_614;
const PUBLISHED_TRY_LOSSES: u64 = 7_018_985;
const PUBLISHED_START_LOSS: u32 = 78;
const PUBLISHED_AFTER_CHICK_TAKES_CHICK: u32 = 76;

#[derive(Subcommand)]
pub enum DobutsuCommand {
    /// Leaves of the legal-move tree (game-over positions have no moves).
    Perft {
        #[arg(long, default_value = "startpos")]
        sfen: String,
        #[arg(long)]
        depth: u32,
        #[arg(long)]
        divide: bool,
    },
    /// Build the exact solution (`--build --out FILE`, checked against the published
    /// result) or query it (`--table FILE --position SFEN`).
    Solve(SolveArgs),
    /// Learn the improved player's feature tables from self-play playouts.
    Learn {
        #[arg(long)]
        out: PathBuf,
        /// Playouts per generation.
        #[arg(long, default_value_t = 4_000_000)]
        games: usize,
        /// Generations: the first uses uniform playouts, later ones the previous tables.
        /// Two generations of 10⁶ left the improved player weak as second player (45 of
        /// 100 against primitive at 10⁴ playouts); ten of 4·10⁶ (about 2 minutes) gave 77.
        #[arg(long, default_value_t = 10)]
        generations: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Play games between two players; prints wins by colour.
    Match(MatchArgs),
    /// Compare teacher values (MC win rates, alpha-beta scores) with exact values.
    TeacherQuality(TeacherArgs),
    /// Playouts per second per thread (uniform and improved).
    Bench {
        #[arg(long, default_value_t = 200_000)]
        playouts: u64,
        /// Feature tables for the improved playouts (learned quickly if absent).
        #[arg(long)]
        tables: Option<PathBuf>,
    },
}

#[derive(Args)]
pub struct SolveArgs {
    /// Enumerate and solve every position reachable from the start (minutes, ~3 GB).
    #[arg(long, requires = "out")]
    build: bool,
    #[arg(long)]
    out: Option<PathBuf>,
    /// Solve the positions reachable from this position instead of the start (an endgame
    /// set, for checks; the published-result checks apply only to the start).
    #[arg(long, default_value = "startpos")]
    start: String,
    /// Hash capacity while enumerating (positions; 8 bytes each).
    #[arg(long, default_value_t = 360_000_000)]
    capacity: usize,
    /// A solved table to query.
    #[arg(long)]
    table: Option<PathBuf>,
    /// A position (SFEN-like, or `startpos`) to look up in `--table`.
    #[arg(long)]
    position: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum PlayerKind {
    Primitive,
    Improved,
    Alphabeta,
    Perfect,
}

#[derive(Args)]
pub struct MatchArgs {
    /// The player that moves first in the first set of games.
    #[arg(long, value_enum)]
    first: PlayerKind,
    #[arg(long, value_enum)]
    second: PlayerKind,
    /// Games per colour assignment.
    #[arg(long, default_value_t = 100)]
    games: usize,
    /// Also play `--games` games with the colours swapped.
    #[arg(long)]
    swap: bool,
    /// Playouts per move decision (all legal moves together) for the MC players.
    #[arg(long, default_value_t = 1000)]
    playouts: u64,
    /// Playouts for the second player if different.
    #[arg(long)]
    playouts2: Option<u64>,
    #[arg(long, default_value_t = 4)]
    depth: u32,
    /// Feature tables (from `keima dobutsu learn`) for the improved player.
    #[arg(long)]
    tables: Option<PathBuf>,
    /// The improved player's sharpening α in [0, 1) (default: the schedule by playouts).
    #[arg(long, value_parser = parse_alpha)]
    alpha: Option<f32>,
    /// Solved table (from `keima dobutsu solve --build`) for the perfect player.
    #[arg(long)]
    table: Option<PathBuf>,
    #[arg(long, default_value_t = 400)]
    max_plies: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct TeacherArgs {
    #[arg(long)]
    table: PathBuf,
    #[arg(long)]
    tables: Option<PathBuf>,
    /// Positions sampled from random games (uniform random moves).
    #[arg(long, default_value_t = 300)]
    positions: usize,
    /// MC playout budgets to score.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    playouts: Vec<u64>,
    /// Alpha-beta depths to score.
    #[arg(long, value_delimiter = ',', default_value = "2,4,6")]
    depths: Vec<u32>,
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

pub fn run(cmd: DobutsuCommand) -> CommandResult {
    match cmd {
        DobutsuCommand::Perft { sfen, depth, divide } => {
            let mut pos = Position::from_sfen(&sfen).map_err(|e| format!("--sfen {sfen:?}: {e}"))?;
            let t = Instant::now();
            let nodes = if divide {
                let mut list = MoveList::new();
                legal_moves(&pos, &mut list);
                let mut n = 0;
                for &m in list.as_slice() {
                    let u = pos.do_move(m);
                    let k = perft(&mut pos, depth.saturating_sub(1));
                    pos.undo_move(m, u);
                    println!("{}: {k}", m.to_text());
                    n += k;
                }
                n
            } else {
                perft(&mut pos, depth)
            };
            println!("depth {depth}: {nodes} leaves ({:.3} s)", t.elapsed().as_secs_f64());
            Ok(ExitCode::SUCCESS)
        }
        DobutsuCommand::Solve(a) => solve(a),
        DobutsuCommand::Learn { out, games, generations, seed } => {
            let start = Position::startpos();
            let mut tables: Option<FeatureTables> = None;
            for g in 0..generations.max(1) {
                let t = Instant::now();
                let alpha = alpha_for(1000);
                let next = FeatureTables::learn(
                    &start,
                    games,
                    seed.wrapping_add(g as u64),
                    tables.as_ref().map(|t| (t, alpha)),
                );
                tracing::info!(
                    "generation {}: {games} playouts in {:.1} s",
                    g + 1,
                    t.elapsed().as_secs_f64()
                );
                tables = Some(next);
            }
            let t = tables.unwrap_or_default();
            t.save(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            println!(
                "feature tables from {} generations of {games} playouts written to {}",
                generations.max(1),
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        DobutsuCommand::Match(a) => run_match(a),
        DobutsuCommand::TeacherQuality(a) => teacher_quality(a),
        DobutsuCommand::Bench { playouts, tables } => bench(playouts, tables),
    }
}

fn load_tables(path: &Option<PathBuf>) -> Result<FeatureTables, String> {
    match path {
        Some(p) => FeatureTables::load(p),
        None => {
            Err("the improved player needs --tables FILE (make one with `keima dobutsu learn --out FILE`)"
                .into())
        }
    }
}

fn open_table(path: &Option<PathBuf>) -> Result<Table, String> {
    match path {
        Some(p) => Table::open(p),
        None => Err(
            "the perfect player needs --table FILE (build one with `keima dobutsu solve --build --out FILE`)"
                .into(),
        ),
    }
}

fn solve(a: SolveArgs) -> CommandResult {
    if a.build {
        let out = a.out.clone().ok_or("--build needs --out FILE")?;
        let start = Position::from_sfen(&a.start).map_err(|e| format!("--start {:?}: {e}", a.start))?;
        return build(&out, &start, a.capacity);
    }
    let table = open_table(&a.table).map_err(|e| format!("{e} (or give --build --out FILE)"))?;
    let sfen = a.position.as_deref().unwrap_or("startpos");
    let pos = Position::from_sfen(sfen).map_err(|e| format!("--position {sfen:?}: {e}"))?;
    let value = match keima_dobutsu::solver::terminal_value(&pos) {
        Some(v) => Some(v),
        None => table.value(table_key(&pos)),
    };
    let Some(value) = value else {
        return Err(format!(
            "--position {sfen:?} is not reachable from the start, so it is not in the table"
        ));
    };
    let mv = move_values(&pos, &|k| table.lookup(k));
    let best: Vec<String> = best_moves(&pos, &table).iter().map(|m| m.to_text()).collect();
    if a.json {
        let moves: serde_json::Map<String, serde_json::Value> = mv
            .iter()
            .map(|(m, v)| (m.to_text(), v.map(|v| v.to_string()).unwrap_or("?".into()).into()))
            .collect();
        println!(
            "{}",
            serde_json::json!({"position": pos.to_sfen(), "value": value.to_string(), "best": best, "moves": moves})
        );
    } else {
        println!("{}: {value} for the side to move ({:?})", pos.to_sfen(), pos.side);
        println!("best: {}", best.join(" "));
        for (m, v) in mv {
            println!("  {}: {}", m.to_text(), v.map(|v| v.to_string()).unwrap_or("not in table".into()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn build(out: &std::path::Path, start: &Position, capacity: usize) -> CommandResult {
    let t0 = Instant::now();
    let start = *start;
    let bar = ProgressBar::new_spinner();
    let log = |m: &str| {
        bar.set_message(m.to_string());
        tracing::info!("{m}");
    };
    let (keys, es) = enumerate(&start, capacity, &log)?;
    let t_enum = t0.elapsed().as_secs_f64();
    tracing::info!("enumerated {} positions in {:.1} s", es.positions, t_enum);
    let (values, ss) = retrograde(&keys, &log)?;
    let t_solve = t0.elapsed().as_secs_f64() - t_enum;
    bar.finish_and_clear();
    write_table(out, &keys, &values, ss.max_distance).map_err(|e| format!("{}: {e}", out.display()))?;
    drop(keys);
    drop(values);
    let table = Table::open(out)?;
    let start_v = table.value(table_key(&start)).ok_or("start missing from its own table")?;
    let first: Vec<(Move, Option<Value>)> = move_values(&start, &|k| table.lookup(k));
    let reachable = es.positions + es.catch_positions;
    println!("reachable positions (mirror images as one): {reachable} (published {PUBLISHED_REACHABLE})");
    println!(
        "  {} whose side to move can take the lion (wins in 1: counted, not stored; reached by {} moves)",
        es.catch_positions, es.capture_win_edges
    );
    println!(
        "  {} stored: {} lost to a try (terminal), {} not terminal; BFS depth {}",
        es.positions,
        es.try_losses,
        es.positions - es.try_losses,
        es.layers
    );
    println!(
        "  values: {} wins, {} losses, {} draws (side to move); longest distance {} plies; {} without moves",
        ss.wins, ss.losses, ss.draws, ss.max_distance, ss.no_move
    );
    println!("start: {start_v} for the first player");

    for (m, v) in &first {
        println!(
            "  1. {}: {} for the first player",
            m.to_text(),
            v.map(|v| v.to_string()).unwrap_or("?".into())
        );
    }
    println!(
        "time: enumerate {t_enum:.1} s, solve {t_solve:.1} s, total {:.1} s; table {} ({} bytes)",
        t0.elapsed().as_secs_f64(),
        out.display(),
        std::fs::metadata(out).map(|m| m.len()).unwrap_or(0)
    );
    if start != Position::startpos() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut ok = true;
    let mut check = |what: &str, good: bool| {
        println!("check {what}: {}", if good { "ok" } else { "MISMATCH" });
        ok &= good;
    };
    check("reachable count = 246,803,167", reachable == PUBLISHED_REACHABLE);
    check("positions that can take the lion = 140,298,614", es.catch_positions == PUBLISHED_CATCH);
    check("positions lost to a try = 7,018,985", es.try_losses == PUBLISHED_TRY_LOSSES);
    check("start = loss in 78 for the first player", start_v == Value::Loss(PUBLISHED_START_LOSS));
    for (m, v) in &first {
        let want =
            if m.to_text() == "b3b2" { PUBLISHED_AFTER_CHICK_TAKES_CHICK } else { PUBLISHED_START_LOSS };
        check(&format!("1. {} loses in {want}", m.to_text()), *v == Some(Value::Loss(want)));
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn parse_alpha(s: &str) -> Result<f32, String> {
    match s.parse::<f32>() {
        Ok(a) if (0.0..1.0).contains(&a) => Ok(a),
        _ => Err(format!("{s:?}: α must be a number in [0, 1)")),
    }
}

fn make_player<'a>(
    kind: PlayerKind,
    playouts: u64,
    a: &MatchArgs,
    tables: &'a Option<FeatureTables>,
    table: &'a Option<Table>,
) -> Result<Player<'a>, String> {
    Ok(match kind {
        PlayerKind::Primitive => Player::Primitive { playouts },
        PlayerKind::Improved => Player::Improved {
            playouts,
            tables: tables.as_ref().ok_or("improved needs --tables")?,
            alpha: a.alpha,
        },
        PlayerKind::Alphabeta => Player::AlphaBeta { depth: a.depth },
        PlayerKind::Perfect => Player::Perfect { table: table.as_ref().ok_or("perfect needs --table")? },
    })
}

fn run_match(a: MatchArgs) -> CommandResult {
    let uses = |k| a.first == k || a.second == k;
    let tables = if uses(PlayerKind::Improved) { Some(load_tables(&a.tables)?) } else { None };
    let table = if uses(PlayerKind::Perfect) { Some(open_table(&a.table)?) } else { None };
    let p1 = make_player(a.first, a.playouts, &a, &tables, &table)?;
    let p2 = make_player(a.second, a.playouts2.unwrap_or(a.playouts), &a, &tables, &table)?;
    let rounds: Vec<bool> = if a.swap { vec![false, true] } else { vec![false] };
    let bar = ProgressBar::new((a.games * rounds.len()) as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} games {elapsed_precise} {msg}")
            .expect("valid template"),
    );
    let mut results = vec![];
    let t0 = Instant::now();
    for &swapped in &rounds {
        let (black, white) = if swapped { (&p2, &p1) } else { (&p1, &p2) };
        let (mut bw, mut ww, mut dr, mut plies) = (0, 0, 0, 0);
        for g in 0..a.games {
            let seed = a.seed ^ ((g as u64) << 20) ^ (swapped as u64) << 50;
            let (o, n) = play_game(&Position::startpos(), black, white, seed, a.max_plies);
            plies += n;
            match o {
                Outcome::Win(Color::Black) => bw += 1,
                Outcome::Win(Color::White) => ww += 1,
                Outcome::Draw => dr += 1,
            }
            bar.inc(1);
            bar.set_message(format!("{} (B) vs {} (W): {bw}-{ww}-{dr}", black.name(), white.name()));
        }
        results.push((black.name(), white.name(), bw, ww, dr, plies as f64 / a.games.max(1) as f64));
    }
    bar.finish_and_clear();
    for (b, w, bw, ww, dr, avg) in &results {
        if a.json {
            println!(
                "{}",
                serde_json::json!({"black": b, "white": w, "black_wins": bw, "white_wins": ww, "draws": dr, "avg_plies": avg})
            );
        } else {
            println!(
                "{b} (first) vs {w} (second): first wins {bw}, second wins {ww}, draws {dr}; {avg:.1} plies/game"
            );
        }
    }
    println!("{} games in {:.1} s", a.games * rounds.len(), t0.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

fn teacher_quality(a: TeacherArgs) -> CommandResult {
    use keima_dobutsu::alphabeta;
    use keima_dobutsu::teacher_quality::{sample_positions, score};
    let table = Table::open(&a.table)?;
    let tables = match &a.tables {
        Some(p) => Some(FeatureTables::load(p)?),
        None => None,
    };
    let samples = sample_positions(a.positions, a.seed, &|k| table.lookup(k));
    let decided = samples.iter().filter(|s| s.1 != Value::Draw).count();
    println!(
        "{} positions from random games (plies 2..40), {decided} decided, {} draws",
        samples.len(),
        samples.len() - decided
    );
    println!("| teacher | winner accuracy (decided) | Brier | calibration error | ms/position |");
    println!("|---|---|---|---|---|");
    type Teacher = Box<dyn Fn(&Position, u64) -> f64>;
    let mut teachers: Vec<(String, Teacher)> = vec![];
    for &n in &a.playouts {
        teachers.push((
            format!("primitive MC {n}"),
            Box::new(move |p: &Position, s| choose_rate(p, McKind::Primitive, n, s)),
        ));
        if let Some(t) = &tables {
            let t = t.clone();
            teachers.push((
                format!("improved MC {n}"),
                Box::new(move |p: &Position, s| {
                    choose_rate(p, McKind::Improved { tables: &t, alpha: alpha_for(n) }, n, s)
                }),
            ));
        }
    }
    for &d in &a.depths {
        teachers.push((
            format!("alpha-beta depth {d}"),
            Box::new(move |p: &Position, s| alphabeta::win_probability(alphabeta::search(p, d, s).score)),
        ));
    }
    for (name, f) in &teachers {
        let t0 = Instant::now();
        let preds: Vec<f64> = samples.iter().enumerate().map(|(i, (p, _))| f(p, a.seed ^ i as u64)).collect();
        let ms = t0.elapsed().as_secs_f64() * 1000.0 / samples.len().max(1) as f64;
        let r = score(&samples, &preds);
        println!(
            "| {name} | {:.1}% | {:.3} | {:.3} | {ms:.1} |",
            100.0 * r.accuracy(),
            r.brier,
            r.calibration_error()
        );
        let bins: Vec<String> = r
            .bins
            .iter()
            .enumerate()
            .filter(|b| b.1.0 > 0)
            .map(|(i, b)| {
                format!(
                    "[{:.1},{:.1}): n={} pred {:.2} actual {:.2}",
                    i as f64 / 10.0,
                    (i + 1) as f64 / 10.0,
                    b.0,
                    b.1,
                    b.2
                )
            })
            .collect();
        tracing::info!("{name} calibration: {}", bins.join("; "));
    }
    Ok(ExitCode::SUCCESS)
}

fn choose_rate(p: &Position, kind: McKind, playouts: u64, seed: u64) -> f64 {
    evaluate_moves(p, kind, playouts, seed).first().map_or(0.0, |x| x.1)
}

fn bench(playouts: u64, tables: Option<PathBuf>) -> CommandResult {
    let start = Position::startpos();
    let t = match &tables {
        Some(p) => FeatureTables::load(p)?,
        None => FeatureTables::learn(&start, 200_000, 1, None),
    };
    let mut rng = Rng::new(42);
    let t0 = Instant::now();
    let mut decided = 0u64;
    for _ in 0..playouts {
        decided += uniform_playout(&start, &mut rng).is_some() as u64;
    }
    let s_uni = t0.elapsed().as_secs_f64();
    let n_imp = playouts / 10;
    let t1 = Instant::now();
    for _ in 0..n_imp {
        let w = keima_dobutsu::mc_player::improved_playout(&start, &t, alpha_for(1000), &mut rng);
        decided += w.is_some() as u64;
    }
    let s_imp = t1.elapsed().as_secs_f64();
    println!(
        "uniform playouts: {playouts} in {s_uni:.3} s = {:.0} playouts/s (one thread)",
        playouts as f64 / s_uni
    );
    println!(
        "improved playouts: {n_imp} in {s_imp:.3} s = {:.0} playouts/s (one thread)",
        n_imp as f64 / s_imp
    );
    let t2 = Instant::now();
    let _ = evaluate_moves(&start, McKind::Primitive, playouts, 3);
    let s_par = t2.elapsed().as_secs_f64();
    println!(
        "parallel (rayon, {} threads): {playouts} uniform playouts in {s_par:.3} s = {:.0} playouts/s ({decided} of the one-thread uniform + improved playouts ended before the 200-ply limit)",
        rayon::current_num_threads(),
        playouts as f64 / s_par
    );
    Ok(ExitCode::SUCCESS)
}
