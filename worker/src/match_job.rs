//! Running a match shard: load the tested checkpoint's KPPT directory and the baseline's
//! (or material only), play every opening twice with colours swapped at the shard's node
//! budget (`engine_core::play::engine_match`), and report W/D/L and the game pairs.

use engine_core::eval::Evaluator;
use engine_core::eval::kppt_file::load_kppt_dir;
use engine_core::play::engine_match::{MatchSettings, play_pairs};
use engine_core::teacher::Opening;
use keima_proto::spec::ShardSpec;
use keima_proto::v1;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// The pattern file an export writes next to the KPPT files, if the run has patterns.
const PATTERN_FILE: &str = "patterns.kpat";

/// The evaluation in an exported directory: its KPPT tables, and its patterns if any.
fn load_eval(dir: &str) -> Result<Evaluator, String> {
    let dir = Path::new(dir);
    let mut ev = Evaluator::material_only();
    // Mapped, not read onto huge pages: the read (about 2 s) costs a 20-game shard at
    // a few thousand nodes a move more than the ~5% faster nodes give back.
    ev.kppt = Some(Arc::new(load_kppt_dir(dir).map_err(|e| format!("eval {}: {e}", dir.display()))?));
    let patterns = dir.join(PATTERN_FILE);
    if patterns.is_file() {
        let set = engine_core::eval::patterns::file::load(&patterns)
            .map_err(|e| format!("{}: {e}", patterns.display()))?;
        ev.patterns = Some(Arc::new(set));
    }
    Ok(ev)
}

/// Plays a match shard on `threads` threads; `progress` counts finished games.
pub fn run(
    spec: &ShardSpec,
    threads: usize,
    progress: &AtomicU64,
) -> Result<(v1::MatchResult, v1::ShardStats), String> {
    let ShardSpec::Match { eval_dir, baseline_dir, nodes, max_ply, openings, .. } = spec else {
        return Err("not a match shard".into());
    };
    let tested = Arc::new(load_eval(eval_dir)?);
    let baseline = Arc::new(match baseline_dir {
        Some(dir) => load_eval(dir)?,
        None => Evaluator::material_only(),
    });
    let openings = openings
        .iter()
        .map(|l| Opening::parse_usi(l).map_err(|e| format!("opening {l:?}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let settings = MatchSettings { nodes: *nodes, max_ply: *max_ply };
    let r = play_pairs(&tested, &baseline, &openings, settings, threads, progress);
    let result = v1::MatchResult {
        wins: r.stats.wins,
        draws: r.stats.draws,
        losses: r.stats.losses,
        pentanomial: r.pairs.counts.to_vec(),
        // Node budgets, no clock: nobody loses on time.
        time_losses: 0,
        baseline_time_losses: 0,
    };
    let stats = v1::ShardStats { games: r.stats.games() as u64, search_nodes: r.nodes, ..Default::default() };
    Ok((result, stats))
}
