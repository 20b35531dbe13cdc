//! Held-out metrics of a teacher shard: cross-entropy of the qsearch-leaf prediction, mean
//! |eval − teacher|, and agreement of a shallow search with the recorded move.

use super::config::{LossConfig, ValidationConfig};
use super::gradient::{self, cross_entropy, target, win_prob};
use crate::eval::Evaluator;
use crate::search::{Limits, Searcher, TranspositionTable};
use crate::teacher::{ShardReader, TeacherRecord};
use rayon::prelude::*;
use std::sync::Arc;

/// Held-out metrics.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct ValidationMetrics {
    pub records: u64,
    pub test_loss: f64,
    pub move_agreement: f64,
    pub moves_compared: u64,
    pub mean_abs_eval_diff: f64,
}

/// The first `max_records` records of the `[validation]` shard (none without a shard).
pub fn load_records(cfg: &ValidationConfig) -> Result<Vec<TeacherRecord>, String> {
    let mut records = Vec::new();
    if let Some(v) = &cfg.shard {
        let mut r = ShardReader::open(v).map_err(|e| e.to_string())?;
        while records.len() < cfg.max_records {
            match r.next_record().map_err(|e| e.to_string())? {
                Some(rec) => records.push(rec),
                None => break,
            }
        }
    }
    Ok(records)
}

/// Node cap of each move-agreement search. The search extends every check by a ply, so in
/// shogi (drops keep checks coming) a shallow search can occasionally explode for minutes
/// and stall training; the cap bounds it deterministically (a node count, not a time).
pub const VALIDATION_NODE_CAP: u64 = 200_000;

/// Held-out metrics: cross-entropy of the qsearch-leaf prediction against the target,
/// agreement of a fixed-depth search with the recorded move, and mean |qsearch value −
/// teacher score| (side to move's view).
pub fn validate(
    evaluator: &Arc<Evaluator>,
    records: &[TeacherRecord],
    loss: &LossConfig,
    depth: i32,
    pool: &rayon::ThreadPool,
) -> ValidationMetrics {
    #[derive(Default, Clone, Copy)]
    struct Acc {
        n: u64,
        loss: f64,
        moves: u64,
        agree: u64,
        diff: f64,
        diff_n: u64,
    }
    let accs: Vec<Acc> = pool.install(|| {
        records
            .par_chunks(gradient::CHUNK)
            .map(|chunk| {
                let tt = Arc::new(TranspositionTable::new(1));
                let mut s = Searcher::new(evaluator.clone(), tt.clone());
                s.options.root_mate_nodes = 0;
                let mut a = Acc::default();
                for rec in chunk {
                    if let Some((_, v)) = gradient::qsearch_leaf(&mut s, &rec.pos) {
                        if let Some(t) = target(rec, loss) {
                            a.n += 1;
                            a.loss += cross_entropy(win_prob(v as f64), t);
                        }
                        a.diff += (v - rec.psv.score as i32).abs() as f64;
                        a.diff_n += 1;
                    }
                    if depth > 0
                        && let Some(mv) = rec.mv
                    {
                        tt.clear();
                        s.clear_heuristics();
                        s.set_position(&rec.pos, &[]);
                        let limits = Limits { nodes: Some(VALIDATION_NODE_CAP), ..Limits::depth(depth) };
                        let r = s.go(limits, |_| {});
                        a.moves += 1;
                        a.agree += (r.best_move == mv) as u64;
                    }
                }
                a
            })
            .collect()
    });
    let t = accs.iter().fold(Acc::default(), |mut t, a| {
        t.n += a.n;
        t.loss += a.loss;
        t.moves += a.moves;
        t.agree += a.agree;
        t.diff += a.diff;
        t.diff_n += a.diff_n;
        t
    });
    ValidationMetrics {
        records: t.n,
        test_loss: if t.n > 0 { t.loss / t.n as f64 } else { 0.0 },
        move_agreement: if t.moves > 0 { t.agree as f64 / t.moves as f64 } else { 0.0 },
        moves_compared: t.moves,
        mean_abs_eval_diff: if t.diff_n > 0 { t.diff / t.diff_n as f64 } else { 0.0 },
    }
}
