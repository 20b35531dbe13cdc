//! `keima bench search`: nodes and time of fixed-depth searches (material-only eval) on
//! positions from capture-heavy random games, where checks and drops abound. A fixed-depth
//! teacher (`gensfen --depth`, validation move agreement) is only usable if its cost is
//! bounded: the maximum and the 99th percentile matter as much as the mean.

use super::CommandResult;
use engine_core::eval::Evaluator;
use engine_core::rules::random_walk::capture_heavy_suite;
use engine_core::search::{Limits, Searcher, TranspositionTable};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// The suite `search_props::shallow_searches_stay_small_in_check_heavy_positions` uses too.
const SUITE_SEED: u64 = 0x5345_4152_4348;

pub fn run(positions: usize, max_depth: i32, max_nodes: u64, json: bool) -> CommandResult {
    if positions == 0 {
        return Err("--positions must be at least 1".into());
    }
    let suite = capture_heavy_suite(positions, SUITE_SEED);
    let in_check = suite.iter().filter(|p| p.in_check()).count();
    if !json {
        println!(
            "{} positions ({in_check} in check), material-only eval, cap {max_nodes} nodes",
            suite.len()
        );
    }
    let eval = Arc::new(Evaluator::material_only());
    for depth in 1..=max_depth {
        let mut nodes = Vec::with_capacity(suite.len());
        let start = Instant::now();
        for pos in &suite {
            let mut s = Searcher::new(eval.clone(), Arc::new(TranspositionTable::new(16)));
            s.set_position(pos, &[]);
            let r = s.go(Limits { depth: Some(depth), nodes: Some(max_nodes), ..Limits::default() }, |_| {});
            nodes.push(r.nodes);
        }
        let secs = start.elapsed().as_secs_f64();
        let capped = nodes.iter().filter(|&&n| n >= max_nodes).count();
        let total: u64 = nodes.iter().sum();
        nodes.sort_unstable();
        let pct = |q: f64| nodes[((nodes.len() - 1) as f64 * q).round() as usize];
        let (mean, p50, p99, max) = (total as f64 / nodes.len() as f64, pct(0.5), pct(0.99), pct(1.0));
        if json {
            println!(
                "{}",
                serde_json::json!({"bench": "search", "depth": depth, "positions": nodes.len(), "capped": capped,
                    "nodes_total": total, "nodes_mean": mean, "nodes_p50": p50, "nodes_p99": p99, "nodes_max": max,
                    "seconds": secs})
            );
        } else {
            println!(
                "depth {depth:>2}: nodes mean {mean:>10.0}  median {p50:>8}  p99 {p99:>9}  max {max:>9}  capped {capped:>3}  {secs:>7.2} s"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
