//! `keima bench depth`: how deep the search gets in a fixed time per move on middle-game
//! positions (plies 40, 50, ..., 90 of every game of at least 100 moves in the records
//! given), each searched once with a fresh table, like a move in a game at that time
//! control. Prints the mean completed depth, the mean selective depth and nodes/s.
//!
//! With `--nodes` each search gets a node budget instead: the depth then depends only on
//! the search, not on the machine or its load (one thread: deterministic), so two
//! searches can be compared on a busy machine; depth at a time is that at nodes/s × time.

use super::CommandResult;
use engine_core::eval::Evaluator;
use engine_core::eval::kppt_file::read_kppt_dir;
use engine_core::records::{load_file, record_files};
use engine_core::rules::{Move, Position};
use engine_core::search::{Limits, SearchOptions, SearchParams, Searcher, TranspositionTable};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// Plies whose positions are searched.
const PLIES: [usize; 6] = [40, 50, 60, 70, 80, 90];
/// Games shorter than this are left out (their late positions are endgames or mates).
const MIN_GAME_MOVES: usize = 100;

/// The positions of the suite, each with the moves that led to it (for repetitions).
fn suite(records: &Path) -> Result<Vec<(Position, Vec<Move>)>, String> {
    let mut out = Vec::new();
    for file in record_files(&[records.to_path_buf()]).map_err(|e| e.to_string())? {
        let games = load_file(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        for g in games {
            let line = g.main_line();
            if line.len() < MIN_GAME_MOVES {
                continue;
            }
            for &ply in &PLIES {
                out.push((g.start, line[..ply].to_vec()));
            }
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{}: no game of at least {MIN_GAME_MOVES} moves; give --records a directory of records",
            records.display()
        ));
    }
    Ok(out)
}

/// Prints the suite as USI `position` arguments (`sfen ... moves ...`), one a line.
pub fn print_usi(records: &Path) -> CommandResult {
    for (start, moves) in suite(records)? {
        let moves: Vec<String> = moves.iter().map(|m| m.to_string()).collect();
        println!("sfen {} moves {}", start.to_sfen(), moves.join(" "));
    }
    Ok(ExitCode::SUCCESS)
}

/// What each position's search is given.
pub struct Budget {
    pub movetime: u64,
    /// Nodes per position instead of the time.
    pub nodes: Option<u64>,
    pub hash: usize,
    pub threads: usize,
}

pub fn run(
    records: &Path,
    budget: Budget,
    eval: Option<&Path>,
    params: SearchParams,
    json: bool,
) -> CommandResult {
    let Budget { movetime, nodes: node_budget, hash, threads } = budget;
    if movetime == 0 {
        return Err("--movetime must be at least 1 ms".into());
    }
    if node_budget == Some(0) {
        return Err("--nodes must be at least 1".into());
    }
    let positions = suite(records)?;
    let evaluator = Arc::new(match eval {
        Some(dir) => Evaluator::with_kppt(Arc::new(
            read_kppt_dir(dir).map_err(|e| format!("--eval {}: {e}", dir.display()))?,
        )),
        None => Evaluator::material_only(),
    });
    let time = Duration::from_millis(movetime);
    let limits = match node_budget {
        Some(n) => Limits::nodes(n),
        None => Limits { time: Some(time), soft_time: Some(time), ..Limits::default() },
    };
    let budget = match node_budget {
        Some(n) => format!("{n} nodes"),
        None => format!("{movetime} ms"),
    };
    let (mut depth_sum, mut seldepth_sum, mut nodes, mut secs) = (0i64, 0i64, 0u64, 0f64);
    let mut depths = Vec::with_capacity(positions.len());
    for (start, moves) in &positions {
        let mut s = Searcher::new(evaluator.clone(), Arc::new(TranspositionTable::new(hash)));
        s.options = SearchOptions { params, ..SearchOptions::for_play(&evaluator) };
        s.set_threads(threads);
        s.set_position(start, moves);
        let r = s.go(limits, |_| {});
        depth_sum += r.depth as i64;
        seldepth_sum += r.seldepth as i64;
        nodes += r.nodes;
        secs += r.elapsed.as_secs_f64();
        depths.push(r.depth);
    }
    let n = positions.len() as f64;
    let (mean_depth, mean_seldepth, nps) =
        (depth_sum as f64 / n, seldepth_sum as f64 / n, nodes as f64 / secs);
    depths.sort_unstable();
    if json {
        println!(
            "{}",
            serde_json::json!({"bench": "depth", "positions": positions.len(), "movetime_ms": movetime,
                "nodes_budget": node_budget, "total_nodes": nodes,
                "threads": threads, "mean_depth": mean_depth, "mean_seldepth": mean_seldepth,
                "min_depth": depths[0], "max_depth": depths[depths.len() - 1], "nodes_per_second": nps as u64})
        );
    } else {
        println!(
            "{} positions, {budget} each, {threads} thread(s), {} eval: mean depth {mean_depth:.1} (min {}, max {}), mean seldepth {mean_seldepth:.1}, {nodes} nodes, {:.0} nodes/s",
            positions.len(),
            if eval.is_some() { "KPPT" } else { "material" },
            depths[0],
            depths[depths.len() - 1],
            nps
        );
    }
    Ok(ExitCode::SUCCESS)
}
