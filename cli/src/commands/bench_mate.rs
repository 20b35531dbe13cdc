//! `keima bench mate`: what fast mate knowledge saves (research §5), on a fixed suite of
//! mating positions: nodes and time to find the mate with and without mate-in-1 at nodes,
//! and with a df-pn search at the root, as ratios.

use super::CommandResult;
use engine_core::eval::Evaluator;
use engine_core::rules::Position;
use engine_core::rules::random_walk::{capture_heavy_position, xorshift};
use engine_core::search::mate::{DfPn, MateResult};
use engine_core::search::{Limits, MATE, MATE_IN_MAX_PLY, SearchOptions, Searcher, TranspositionTable};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Positions from capture-heavy random games where df-pn proves a mate within 11 plies;
/// the same seed gives the same suite.
pub fn generate_suite(count: usize, seed: u64) -> Vec<Position> {
    let mut next = xorshift(seed);
    let mut suite = Vec::new();
    while suite.len() < count {
        let pos = capture_heavy_position(&mut next);
        if pos.in_check() || !pos.has_legal_move() {
            continue;
        }
        if let MateResult::Mate(line) = DfPn::new(20_000, 11).search(&pos)
            && line.len() >= 3
        {
            suite.push(pos);
        }
    }
    suite
}

struct Run {
    nodes: u64,
    time: Duration,
    found: bool,
}

fn solve(pos: &Position, options: SearchOptions, max_nodes: u64) -> Run {
    let mut s = Searcher::new(Arc::new(Evaluator::material_only()), Arc::new(TranspositionTable::new(16)));
    s.options = options;
    s.set_position(pos, &[]);
    let start = Instant::now();
    let r = s.go(Limits { depth: Some(15), nodes: Some(max_nodes), ..Limits::default() }, |_| {});
    Run { nodes: r.nodes, time: start.elapsed(), found: r.score >= MATE_IN_MAX_PLY && r.score <= MATE }
}

pub fn run(positions: usize, max_nodes: u64, json: bool) -> CommandResult {
    let suite = generate_suite(positions, 0x4D41_5445);
    let plain = SearchOptions { mate1: false, root_mate_nodes: 0, ..SearchOptions::default() };
    let configs = [
        ("plain alpha-beta", plain),
        ("+ mate-in-1 at nodes", SearchOptions { mate1: true, ..plain }),
        ("+ df-pn at the root", SearchOptions { root_mate_nodes: 200_000, ..plain }),
        ("+ both", SearchOptions { mate1: true, root_mate_nodes: 200_000, ..plain }),
    ];
    let mut rows = Vec::new();
    for (name, options) in configs {
        let runs: Vec<Run> = suite.iter().map(|p| solve(p, options, max_nodes)).collect();
        rows.push((name, runs));
    }
    let base = &rows[0].1;
    let mut out = Vec::new();
    for (name, runs) in &rows {
        let found = runs.iter().filter(|r| r.found).count();
        let nodes: u64 = runs.iter().map(|r| r.nodes).sum();
        let secs: f64 = runs.iter().map(|r| r.time.as_secs_f64()).sum();
        // Per-position ratios against the plain search, over positions both solved.
        let both: Vec<(&Run, &Run)> = base.iter().zip(runs).filter(|(b, r)| b.found && r.found).collect();
        let mean = |f: &dyn Fn(&Run, &Run) -> f64| {
            both.iter().map(|(b, r)| f(b, r)).sum::<f64>() / both.len().max(1) as f64
        };
        let node_ratio = mean(&|b, r| b.nodes as f64 / r.nodes.max(1) as f64);
        let time_ratio = mean(&|b, r| b.time.as_secs_f64() / r.time.as_secs_f64().max(1e-9));
        let per_node = (secs / nodes.max(1) as f64)
            / (base.iter().map(|r| r.time.as_secs_f64()).sum::<f64>()
                / base.iter().map(|r| r.nodes).sum::<u64>().max(1) as f64);
        out.push(serde_json::json!({
            "config": name, "solved": found, "positions": runs.len(), "nodes": nodes, "seconds": secs,
            "mean_node_ratio": node_ratio, "mean_time_ratio": time_ratio, "time_per_node_ratio": per_node,
        }));
        if !json {
            println!(
                "{name:<22} solved {found:>3}/{:<3} nodes {nodes:>10} time {secs:>7.2} s  nodes saved {node_ratio:>6.1}x  time saved {time_ratio:>6.1}x  time/node {per_node:>5.2}x",
                runs.len()
            );
        }
    }
    if json {
        println!("{}", serde_json::json!({"bench": "mate", "max_nodes": max_nodes, "rows": out}));
    }
    Ok(ExitCode::SUCCESS)
}
