//! `keima bench eval`: the cost of the evaluation's differential update and full
//! recomputation, with and without pattern features.

use super::CommandResult;
use super::bench_openings::{SHARED_OPENINGS, shared_openings};
use engine_core::eval::patterns::{Band, ExtractConfig, PatternCounter, PatternSet, file as pattern_file};
use engine_core::eval::{Evaluator, KpptTables};
use engine_core::rules::{Move, Position};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

const RESEARCH_PATTERN_COUNT: usize = 10_924;

fn random_games(count: usize, plies: usize) -> Vec<Vec<Move>> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut games = Vec::with_capacity(count);
    for _ in 0..count {
        let mut pos = Position::startpos();
        let mut moves = Vec::with_capacity(plies);
        for _ in 0..plies {
            let list = pos.legal_moves();
            if list.is_empty() {
                break;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let m = list[(x % list.len() as u64) as usize];
            pos.do_move(m);
            moves.push(m);
        }
        games.push(moves);
    }
    games
}

fn default_patterns(games: &[Vec<Move>]) -> Result<(PatternSet, String), String> {
    let mut counter =
        PatternCounter::new(ExtractConfig { size: 3, relative: false, samples_per_position: 16, seed: 1 });
    let mut observe_line = |start: Position, moves: &[Move]| {
        let mut pos = start;
        for &m in moves {
            pos.do_move(m);
            counter.observe(&pos);
        }
    };
    let source = match shared_openings()? {
        Some(openings) => {
            for o in &openings {
                observe_line(o.start, &o.moves);
            }
            format!("extracted from {SHARED_OPENINGS}")
        }
        None => {
            for g in games {
                observe_line(Position::startpos(), g);
            }
            "extracted from the random games".to_string()
        }
    };
    let ex =
        counter.finish(Band { max_share: 0.05, drop_top: 1000, min_count: 2, keep: RESEARCH_PATTERN_COUNT });
    let n = ex.kept.len();
    // Non-zero weights so that no work can be skipped.
    let weights = (0..n).map(|i| (i as i32 % 61) - 30).collect();
    Ok((PatternSet::new(ex.kept.into_iter().map(|(p, _)| p).collect(), weights), source))
}

/// Replays every game forward (do_move + evaluate); returns (moves, seconds per game,
/// checksum). Building each game's initial state is not timed.
fn time_updates(eval: &Evaluator, games: &[Vec<Move>]) -> (u64, Vec<f64>, i64) {
    let mut checksum = 0i64;
    let mut moves = 0u64;
    let mut secs = Vec::with_capacity(games.len());
    for g in games {
        let mut pos = Position::startpos();
        let mut state = eval.new_state(&pos);
        let start = Instant::now();
        for &m in g {
            let d = pos.do_move(m);
            eval.do_move(&mut state, &d, &pos);
            checksum += eval.evaluate(&mut state, &pos).eval as i64;
            moves += 1;
        }
        secs.push(start.elapsed().as_secs_f64());
    }
    (moves, secs, checksum)
}

/// Element-wise minimum: the best of several runs, per game or per search, so that a
/// moment when another process had the core counts against neither configuration.
fn keep_best(best: &mut Vec<f64>, run: Vec<f64>) {
    if best.is_empty() {
        *best = run;
    } else {
        best.iter_mut().zip(run).for_each(|(b, r)| *b = b.min(r));
    }
}

/// Positions for the search figure: after 30 plies of the first 30 games.
fn search_positions(games: &[Vec<Move>]) -> Vec<Position> {
    games
        .iter()
        .take(30)
        .map(|g| {
            let mut pos = Position::startpos();
            for &m in g.iter().take(30) {
                pos.do_move(m);
            }
            pos
        })
        .collect()
}

/// Fixed-node searches (the research's measure: what the evaluation costs inside a real
/// search) with a fresh searcher and table, so every run searches the same trees.
/// Returns (nodes, seconds) per position.
fn time_searches(eval: &Evaluator, positions: &[Position]) -> Vec<(u64, f64)> {
    use engine_core::search::{Limits, Searcher, TranspositionTable};
    let mut searcher = Searcher::new(Arc::new(eval.clone()), Arc::new(TranspositionTable::new(16)));
    positions
        .iter()
        .map(|pos| {
            searcher.set_position(pos, &[]);
            let r = searcher.go(Limits::nodes(100_000), |_| {});
            (r.nodes, r.elapsed.as_secs_f64())
        })
        .collect()
}

fn time_full(eval: &Evaluator, games: &[Vec<Move>]) -> (u64, f64, i64) {
    let mut checksum = 0i64;
    let mut n = 0u64;
    let mut total = 0f64;
    for g in games {
        let mut pos = Position::startpos();
        for &m in g {
            pos.do_move(m);
            let start = Instant::now();
            checksum += eval.evaluate_full(&pos).eval as i64;
            total += start.elapsed().as_secs_f64();
            n += 1;
        }
    }
    (n, total, checksum)
}

pub fn run(patterns: Option<PathBuf>, games: usize, json: bool) -> CommandResult {
    let t = Instant::now();
    let tables = Arc::new(KpptTables::random(1, 600));
    tracing::info!("random KPPT tables built in {:.1} s", t.elapsed().as_secs_f64());
    let games = random_games(games, 150);
    let (set, source) = match patterns {
        Some(path) => {
            (pattern_file::load(&path).map_err(|e| e.to_string())?, format!("loaded from {}", path.display()))
        }
        None => default_patterns(&games)?,
    };
    let mut visited = 0usize;
    let mut moves_seen = 0usize;
    for g in &games {
        let mut pos = Position::startpos();
        for &m in g {
            visited += set.entries_visited(&pos.do_move(m));
            moves_seen += 1;
        }
    }
    let entries_per_move = visited as f64 / moves_seen.max(1) as f64;
    let kppt_only = Evaluator::with_kppt(tables.clone());
    let mut with_patterns = Evaluator::with_kppt(tables);
    let pattern_count = set.len();
    let path = if set.uses_vocabulary() { "small-vocabulary fast path" } else { "general board path" };
    with_patterns.patterns = Some(Arc::new(set));
    // Warm up caches and page in the tables once.
    let _ = time_updates(&kppt_only, &games[..games.len().min(20)]);
    let mut patterns_only = Evaluator::material_only();
    patterns_only.patterns = with_patterns.patterns.clone();
    let material_only = Evaluator::material_only();
    // Alternate the configurations and keep each one's best of three per game, so that
    // neither pays for the other's cache misses nor for moments the machine was busy.
    let (mut best_mat, mut best_pat, mut best0, mut best1) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut n, mut c0, mut c1) = (0, 0, 0);
    for _ in 0..3 {
        keep_best(&mut best_mat, time_updates(&material_only, &games).1);
        keep_best(&mut best_pat, time_updates(&patterns_only, &games).1);
        let (moves, s0, sum0) = time_updates(&kppt_only, &games);
        let (_, s1, sum1) = time_updates(&with_patterns, &games);
        (n, c0, c1) = (moves, sum0, sum1);
        keep_best(&mut best0, s0);
        keep_best(&mut best1, s1);
    }
    let total = |v: &[f64]| v.iter().sum::<f64>();
    let pattern_ns = (total(&best_pat) - total(&best_mat)) * 1e9 / n as f64;
    let (secs0, secs1) = (total(&best0), total(&best1));
    // Search: KPPT alone; with the patterns; with the same patterns' weights all zero
    // (the full update cost, but exactly KPPT's tree, so the ratio is the cost alone);
    // and, if some weights are zero, with those patterns pruned.
    let set = with_patterns.patterns.clone().expect("patterns set above");
    let mut zeroed = with_patterns.clone();
    zeroed.patterns = Some(Arc::new(PatternSet::new(set.patterns().to_vec(), vec![0; set.len()])));
    let mut configs =
        vec![("KPPT", kppt_only.clone()), ("KPPT+patterns", with_patterns.clone()), ("same tree", zeroed)];
    let (pruned_set, _) = set.without_zero_weights();
    let pruned_count = pruned_set.len();
    if pruned_count < set.len() {
        let mut pruned = with_patterns.clone();
        pruned.patterns = Some(Arc::new(pruned_set));
        configs.push(("KPPT+patterns, zero weights pruned", pruned));
    }
    let positions = search_positions(&games);
    let mut best_search = vec![Vec::new(); configs.len()];
    let mut nodes = vec![0u64; configs.len()];
    for _ in 0..3 {
        for (i, (_, eval)) in configs.iter().enumerate() {
            let r = time_searches(eval, &positions);
            nodes[i] = r.iter().map(|r| r.0).sum();
            keep_best(&mut best_search[i], r.iter().map(|r| r.1).collect());
        }
    }
    let nps: Vec<f64> = nodes.iter().zip(&best_search).map(|(&n, b)| n as f64 / total(b)).collect();
    let (nps0, nps1) = (nps[0], nps[1]);
    let (nf, full0, _) = time_full(&kppt_only, &games);
    let (_, full1, _) = time_full(&with_patterns, &games);
    let ns = |s: f64, n: u64| s * 1e9 / n as f64;
    let ratio = secs1 / secs0;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "bench": "eval", "moves": n, "patterns": pattern_count, "pattern_source": source,
                "update_ns_kppt": ns(secs0, n), "update_ns_with_patterns": ns(secs1, n),
                "full_ns_kppt": ns(full0, nf), "full_ns_with_patterns": ns(full1, nf),
                "evals_per_second_kppt": n as f64 / secs0, "evals_per_second_with_patterns": n as f64 / secs1,
                "slowdown_with_patterns": ratio, "search_nps_kppt": nps0, "search_nps_with_patterns": nps1,
                "search_nps_same_tree": nps[2], "search_nps_pruned": nps.get(3), "patterns_with_nonzero_weight": pruned_count, "pattern_entries_per_move": entries_per_move, "pattern_update_path": path, "pattern_update_ns": pattern_ns, "checksums": [c0, c1],
            })
        );
    } else {
        println!(
            "{n} moves along {} random games; {pattern_count} patterns {source}; {entries_per_move:.0} index entries visited per move ({path})",
            games.len()
        );
        println!(
            "search nodes/s (100k-node searches from 30 positions, best of 3 each): KPPT {nps0:.0}   KPPT+patterns {nps1:.0}   slowdown {:.2}x",
            nps0 / nps1
        );
        println!(
            "  same tree (pattern weights zeroed, not pruned; {} nodes vs KPPT's {}): {:.0}   slowdown {:.2}x",
            nodes[2],
            nodes[0],
            nps[2],
            nps0 / nps[2]
        );
        if let Some(p) = nps.get(3) {
            println!(
                "  {pruned_count} patterns with non-zero weight (zero weights pruned): {p:.0}   slowdown {:.2}x",
                nps0 / p
            );
        }
        println!("pattern update alone (patterns - material only): {pattern_ns:.0} ns per move");
        println!(
            "differential update + evaluate: KPPT {:>8.0} ns   KPPT+patterns {:>8.0} ns",
            ns(secs0, n),
            ns(secs1, n)
        );
        println!(
            "full recompute:                 KPPT {:>8.0} ns   KPPT+patterns {:>8.0} ns",
            ns(full0, nf),
            ns(full1, nf)
        );
        println!(
            "evaluations/s along games:      KPPT {:>8.0}      KPPT+patterns {:>8.0}      slowdown {ratio:.2}x",
            n as f64 / secs0,
            n as f64 / secs1
        );
    }
    Ok(ExitCode::SUCCESS)
}
