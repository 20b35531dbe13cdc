//! `keima consult-stats`: diversity of consulting players on held-out game records (see
//! `engine_core::play::consult_stats`): move agreement with the record (of the
//! consultation and of the players), mean number of distinct candidate moves, and
//! GogiScat(C). Every position of the records from `--min-ply` on is searched by every
//! player, as a move in a game would be (`--nodes` or `--depth` per player).

use super::CommandResult;
use clap::{Args, ValueEnum};
use engine_core::eval::Evaluator;
use engine_core::eval::kppt_file::load_kppt_dir;
use engine_core::play::consult::{self, ConsultOptions, Mode, Vote};
use engine_core::play::consult_stats::{DiversityStats, HeldOut, measure};
use engine_core::records::{load_file, record_files};
use engine_core::rules::{Move, Position};
use engine_core::search::Limits;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Clone, Copy, ValueEnum)]
pub enum ConsultKind {
    /// One evaluation, Gaussian noise N(0, noise²) per player.
    Random,
    /// One evaluation directory per player (`--eval-dir`, repeated).
    Evals,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum VoteArg {
    Majority,
    MaxEval,
}

#[derive(Args)]
pub struct ConsultStatsArgs {
    /// Held-out game records: files or directories (CSA, KIF, KI2, USI lines).
    #[arg(long, required = true, num_args = 1..)]
    records: Vec<PathBuf>,
    /// How the players differ.
    #[arg(long, value_enum, default_value = "random")]
    consultation: ConsultKind,
    /// Players (`random`).
    #[arg(long, default_value_t = 10)]
    players: usize,
    /// Standard deviation of each player's noise, eval units (`random`).
    #[arg(long, default_value_t = 175)]
    noise: i32,
    /// KPPT directory of the one evaluation (`random`); material only without it.
    #[arg(long)]
    eval: Option<PathBuf>,
    /// KPPT directory of one player (`evals`; repeat once per player).
    #[arg(long = "eval-dir")]
    eval_dirs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "majority")]
    vote: VoteArg,
    /// Seeds the players' noise.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Nodes per player and position.
    #[arg(long, default_value_t = 2000, conflicts_with = "depth")]
    nodes: u64,
    /// Depth per player and position instead of nodes.
    #[arg(long)]
    depth: Option<i32>,
    /// Positions before this move number (1 = the start) are left out (book moves).
    #[arg(long, default_value_t = 1)]
    min_ply: usize,
    /// At most this many positions (0 = all), taken in file order.
    #[arg(long, default_value_t = 0)]
    max_positions: usize,
    /// GogiScat(C) is printed for C = 1 … this.
    #[arg(long, default_value_t = 3)]
    max_c: usize,
    /// Players searching at the same time (each on one thread).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Hash table MiB shared out among the players.
    #[arg(long, default_value_t = 64)]
    hash: usize,
    /// Print a JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

fn kppt_evaluator(dir: &Path, flag: &str) -> Result<Arc<Evaluator>, String> {
    let tables = load_kppt_dir(dir).map_err(|e| format!("{flag} {}: {e}", dir.display()))?;
    Ok(Arc::new(Evaluator::with_kppt(Arc::new(tables))))
}

/// The games of the records: start position and main line.
fn games(paths: &[PathBuf]) -> Result<Vec<(Position, Vec<Move>)>, String> {
    let mut out = Vec::new();
    for file in record_files(paths).map_err(|e| e.to_string())? {
        for g in load_file(&file).map_err(|e| format!("{}: {e}", file.display()))? {
            out.push((g.start, g.main_line()));
        }
    }
    Ok(out)
}

pub fn run(a: ConsultStatsArgs) -> CommandResult {
    if a.max_c == 0 {
        return Err("--max-c must be at least 1".into());
    }
    let (opts, evaluators) = match a.consultation {
        ConsultKind::Random => {
            if a.players == 0 {
                return Err("--players must be at least 1".into());
            }
            if a.noise < 0 {
                return Err(format!("--noise {} is negative: give a standard deviation >= 0", a.noise));
            }
            let ev = match &a.eval {
                Some(dir) => kppt_evaluator(dir, "--eval")?,
                None => Arc::new(Evaluator::material_only()),
            };
            let opts = ConsultOptions {
                mode: Mode::Random,
                players: a.players,
                noise: a.noise,
                seed: a.seed,
                ..ConsultOptions::default()
            };
            (opts, vec![ev])
        }
        ConsultKind::Evals => {
            if a.eval_dirs.is_empty() {
                return Err("--consultation evals needs one --eval-dir per player".into());
            }
            let evs =
                a.eval_dirs.iter().map(|d| kppt_evaluator(d, "--eval-dir")).collect::<Result<Vec<_>, _>>()?;
            let dirs = a.eval_dirs.iter().map(|d| d.display().to_string()).collect();
            (ConsultOptions { mode: Mode::Evals, eval_dirs: dirs, ..ConsultOptions::default() }, evs)
        }
    };
    let vote = match a.vote {
        VoteArg::Majority => Vote::Majority,
        VoteArg::MaxEval => Vote::MaxEval,
    };
    let limits = match a.depth {
        Some(d) => Limits::depth(d),
        None => Limits::nodes(a.nodes.max(1)),
    };
    let games = games(&a.records)?;
    let mut positions: Vec<HeldOut> = Vec::new();
    for (start, line) in &games {
        for ply in a.min_ply.max(1) - 1..line.len() {
            positions.push(HeldOut { start, moves: &line[..ply], record: line[ply] });
        }
    }
    if a.max_positions > 0 {
        positions.truncate(a.max_positions);
    }
    if positions.is_empty() {
        return Err("no position to measure: the records have no move at or after --min-ply".into());
    }
    let total = positions.len() as u64;
    let mut players = consult::make_players(&opts, &evaluators, a.hash);
    let bar = if a.json { ProgressBar::hidden() } else { ProgressBar::new(total) };
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} positions  {msg}  ETA {eta}")
            .expect("a valid template"),
    );
    let stats = measure(&mut players, positions, limits, a.threads, vote, a.max_c, |s| {
        bar.inc(1);
        bar.set_message(format!("agreement {:.1}%", 100.0 * s.consult_agreement()));
    });
    bar.finish_and_clear();
    print_stats(&a, &opts, &stats, games.len());
    Ok(ExitCode::SUCCESS)
}

fn print_stats(a: &ConsultStatsArgs, opts: &ConsultOptions, s: &DiversityStats, games: usize) {
    let gogi: Vec<f64> = (1..=a.max_c).map(|c| s.gogi_scat(c)).collect();
    if a.json {
        let line = serde_json::json!({
            "games": games,
            "positions": s.positions,
            "players": opts.player_count(),
            "noise": (opts.mode == Mode::Random).then_some(opts.noise),
            "consult_agreement": s.consult_agreement(),
            "player_agreement": s.player_agreement(),
            "mean_distinct_moves": s.mean_distinct(),
            "gogi_scat": gogi,
        });
        println!("{line}");
        return;
    }
    println!("positions            {} (from {games} games)", s.positions);
    println!("players              {}", opts.player_count());
    println!("consult agreement    {:.1}%  (the chosen move is the record's)", 100.0 * s.consult_agreement());
    println!("player agreement     {:.1}%  (mean over players)", 100.0 * s.player_agreement());
    println!("distinct moves       {:.2}  (mean per position)", s.mean_distinct());
    for (c, g) in gogi.iter().enumerate() {
        println!("GogiScat({})          {g:.2}", c + 1);
    }
}
