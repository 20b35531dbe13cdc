//! Gradient of teacher records: quiescence search with the current (quantized) evaluator,
//! the PV played to the leaf, q = σ(v/600) with v the leaf's value from the root side's
//! view, target = (1 − λ)·t + λ·σ(score/600), and (q − target)·sign on every feature
//! active at the leaf (`features::active_features`).
//!
//! The gradient of a weight w is reported in the ecosystem's convention, `(q − target) ·
//! sign`; the exact derivative of the cross-entropy w.r.t. a raw (FV_SCALE-unit) weight
//! is that divided by 600 · 32 (`LOSS_SCALE`). AdaGrad is insensitive to the constant.
//!
//! Records are processed in fixed chunks of `CHUNK` in parallel; the entries of each
//! feature are summed in record order (see `batch_gradient`), so the result is
//! bit-identical for any number of threads.

pub use super::config::LossConfig;
use super::features::{Active, active_features};
use crate::eval::Evaluator;
use crate::rules::Position;
use crate::search::{MATE_IN_MAX_PLY, Searcher, TranspositionTable};
use crate::teacher::TeacherRecord;
use rayon::prelude::*;
use std::sync::Arc;

/// d(loss)/d(raw weight) = gradient / LOSS_SCALE.
pub const LOSS_SCALE: f64 = 600.0 * 32.0;
/// Records per parallel work unit (fixed, so results do not depend on the thread count).
pub const CHUNK: usize = 64;

#[inline]
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Win probability of an evaluation.
#[inline]
pub fn win_prob(v: f64) -> f64 {
    sigmoid(v / 600.0)
}

/// Cross-entropy of prediction q against target p (natural log), clamped away from 0/1.
pub fn cross_entropy(q: f64, p: f64) -> f64 {
    let q = q.clamp(1e-12, 1.0 - 1e-12);
    -(p * q.ln() + (1.0 - p) * (1.0 - q).ln())
}

/// The target of a record, or `None` if the record is skipped.
pub fn target(rec: &TeacherRecord, cfg: &LossConfig) -> Option<f64> {
    let score = rec.psv.score as i32;
    if score.abs() > cfg.eval_limit || (cfg.skip_draws && rec.psv.game_result == 0) {
        return None;
    }
    let t = (rec.psv.game_result as f64 + 1.0) / 2.0;
    Some((1.0 - cfg.lambda) * t + cfg.lambda * win_prob(score as f64))
}

/// The leaf of the quiescence search from `pos` and its value from `pos`'s side to move's
/// view (with the searcher's evaluator). `None` when the qsearch found a mate.
pub fn qsearch_leaf(searcher: &mut Searcher, pos: &Position) -> Option<(Position, i32)> {
    searcher.set_position(pos, &[]);
    let (score, pv) = searcher.qsearch_root();
    if score.abs() >= MATE_IN_MAX_PLY {
        return None;
    }
    let mut leaf = *pos;
    for &m in &pv {
        leaf.do_move(m);
    }
    let v = searcher.evaluate_after(&pv);
    let v = if leaf.side_to_move() == pos.side_to_move() { v } else { -v };
    Some((leaf, v))
}

/// One record's outcome.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    pub q: f64,
    pub target: f64,
    pub loss: f64,
    /// Leaf value from the root side's view.
    pub leaf_eval: i32,
}

/// Scratch buffers for `record_gradient`.
#[derive(Default)]
pub struct Scratch {
    pub active: Vec<Active>,
    pub patterns: Vec<u32>,
}

/// Computes one record's sample and appends `(index, gradient)` entries to `out`.
pub fn record_gradient(
    searcher: &mut Searcher,
    rec: &TeacherRecord,
    cfg: &LossConfig,
    scratch: &mut Scratch,
    out: &mut Vec<(u32, [f32; 2])>,
) -> Option<Sample> {
    let target = target(rec, cfg)?;
    let (leaf, v) = qsearch_leaf(searcher, &rec.pos)?;
    let q = win_prob(v as f64);
    let g = (q - target) as f32;
    scratch.active.clear();
    let patterns = searcher.evaluator().patterns.clone();
    active_features(
        &leaf,
        rec.pos.side_to_move(),
        patterns.as_deref(),
        &mut scratch.patterns,
        &mut scratch.active,
    );
    out.extend(scratch.active.iter().map(|a| (a.index, [g * a.sign[0], g * a.sign[1]])));
    Some(Sample { q, target, loss: cross_entropy(q, target), leaf_eval: v })
}

/// Sums entries with equal indices; the input is stably sorted first, so the summation
/// order is the input order.
pub fn sort_and_sum(entries: &mut Vec<(u32, [f32; 2])>, parallel: bool) {
    if parallel {
        entries.par_sort_by_key(|e| e.0);
    } else {
        entries.sort_by_key(|e| e.0);
    }
    let mut w = 0usize;
    for r in 0..entries.len() {
        if w > 0 && entries[w - 1].0 == entries[r].0 {
            let g = entries[r].1;
            entries[w - 1].1[0] += g[0];
            entries[w - 1].1[1] += g[1];
        } else {
            entries[w] = entries[r];
            w += 1;
        }
    }
    entries.truncate(w);
}

/// Statistics of a mini-batch.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchStats {
    pub records: u64,
    pub used: u64,
    pub skipped: u64,
    pub loss_sum: f64,
}

impl BatchStats {
    fn add(&mut self, o: &BatchStats) {
        self.records += o.records;
        self.used += o.used;
        self.skipped += o.skipped;
        self.loss_sum += o.loss_sum;
    }

    pub fn mean_loss(&self) -> f64 {
        if self.used == 0 { 0.0 } else { self.loss_sum / self.used as f64 }
    }
}

/// The summed sparse gradient of a mini-batch, sorted by feature index.
pub struct BatchGradient {
    pub entries: Vec<(u32, [f32; 2])>,
    pub stats: BatchStats,
}

fn new_searcher(evaluator: &Arc<Evaluator>) -> Searcher {
    Searcher::new(evaluator.clone(), Arc::new(TranspositionTable::new(1)))
}

/// Feature indices per bucket of the merge (`1 << BUCKET_SHIFT`): a bucket's dense
/// accumulator (128 KiB) stays in the L2 cache.
pub const BUCKET_SHIFT: u32 = 14;

/// One chunk's raw entries, grouped by bucket (stably: within a bucket, in record order).
struct ChunkEntries {
    entries: Vec<(u32, [f32; 2])>,
    /// `entries[starts[b]..starts[b + 1]]` lies in bucket `b`.
    starts: Vec<u32>,
    stats: BatchStats,
}

/// Per-thread state of the gradient phase (reused across chunks: the quiescence search
/// keeps no state between positions, so reuse does not change any result).
struct Worker {
    searcher: Searcher,
    scratch: Scratch,
    raw: Vec<(u32, [f32; 2])>,
    counts: Vec<u32>,
}

impl Worker {
    fn new(evaluator: &Arc<Evaluator>) -> Worker {
        Worker {
            searcher: new_searcher(evaluator),
            scratch: Scratch::default(),
            raw: Vec::new(),
            counts: Vec::new(),
        }
    }
}

fn chunk_entries(w: &mut Worker, recs: &[TeacherRecord], cfg: &LossConfig, buckets: usize) -> ChunkEntries {
    let mut stats = BatchStats::default();
    w.raw.clear();
    for rec in recs {
        stats.records += 1;
        match record_gradient(&mut w.searcher, rec, cfg, &mut w.scratch, &mut w.raw) {
            Some(s) => {
                stats.used += 1;
                stats.loss_sum += s.loss;
            }
            None => stats.skipped += 1,
        }
    }
    // Counting sort by bucket (stable).
    w.counts.clear();
    w.counts.resize(buckets + 1, 0);
    for e in &w.raw {
        w.counts[(e.0 >> BUCKET_SHIFT) as usize + 1] += 1;
    }
    for b in 0..buckets {
        w.counts[b + 1] += w.counts[b];
    }
    let starts = w.counts.clone();
    let mut entries = vec![(0u32, [0f32; 2]); w.raw.len()];
    for e in &w.raw {
        let b = (e.0 >> BUCKET_SHIFT) as usize;
        entries[w.counts[b] as usize] = *e;
        w.counts[b] += 1;
    }
    ChunkEntries { entries, starts, stats }
}

/// Dense accumulator of one bucket.
struct Accumulator {
    sum: Vec<[f32; 2]>,
    seen: Vec<bool>,
    touched: Vec<u32>,
}

impl Accumulator {
    fn new() -> Accumulator {
        let n = 1usize << BUCKET_SHIFT;
        Accumulator { sum: vec![[0.0; 2]; n], seen: vec![false; n], touched: Vec::new() }
    }
}

/// Sums bucket `b` over all chunks, in chunk order and within a chunk in record order,
/// and returns its distinct entries sorted by index.
fn merge_bucket(acc: &mut Accumulator, chunks: &[ChunkEntries], b: usize) -> Vec<(u32, [f32; 2])> {
    let base = (b as u32) << BUCKET_SHIFT;
    acc.touched.clear();
    for c in chunks {
        let (lo, hi) = (c.starts[b] as usize, c.starts[b + 1] as usize);
        for &(i, g) in &c.entries[lo..hi] {
            let l = (i - base) as usize;
            if !acc.seen[l] {
                acc.seen[l] = true;
                acc.touched.push(l as u32);
                acc.sum[l] = g;
            } else {
                acc.sum[l][0] += g[0];
                acc.sum[l][1] += g[1];
            }
        }
    }
    acc.touched.sort_unstable();
    acc.touched
        .iter()
        .map(|&l| {
            let l = l as usize;
            acc.seen[l] = false;
            (base + l as u32, acc.sum[l])
        })
        .collect()
}

/// The gradient of a mini-batch. With `parallel` the work runs on the current rayon pool;
/// the result is the same either way, and bit-identical to summing every record's entries
/// in record order (`record_gradient` on each record in turn, then `sort_and_sum`).
///
/// Records are processed in fixed chunks of `CHUNK`; each chunk's raw entries are grouped
/// by index bucket (counting sort, stable), then each bucket is summed over the chunks in
/// order with a dense per-bucket accumulator. Buckets are independent, so they are merged
/// in parallel; no step depends on the thread count.
pub fn batch_gradient(
    evaluator: &Arc<Evaluator>,
    records: &[TeacherRecord],
    cfg: &LossConfig,
    parallel: bool,
) -> BatchGradient {
    let features = super::weights::PATTERN_BASE + evaluator.patterns.as_ref().map_or(0, |p| p.len());
    let buckets = features.div_ceil(1 << BUCKET_SHIFT);
    let chunks: Vec<ChunkEntries> = if parallel {
        records
            .par_chunks(CHUNK)
            .map_init(|| Worker::new(evaluator), |w, c| chunk_entries(w, c, cfg, buckets))
            .collect()
    } else {
        let mut w = Worker::new(evaluator);
        records.chunks(CHUNK).map(|c| chunk_entries(&mut w, c, cfg, buckets)).collect()
    };
    let mut stats = BatchStats::default();
    for c in &chunks {
        stats.add(&c.stats);
    }
    let non_empty: Vec<usize> =
        (0..buckets).filter(|&b| chunks.iter().any(|c| c.starts[b] != c.starts[b + 1])).collect();
    let parts: Vec<Vec<(u32, [f32; 2])>> = if parallel {
        non_empty.par_iter().map_init(Accumulator::new, |acc, &b| merge_bucket(acc, &chunks, b)).collect()
    } else {
        let mut acc = Accumulator::new();
        non_empty.iter().map(|&b| merge_bucket(&mut acc, &chunks, b)).collect()
    };
    drop(chunks);
    let mut entries = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for p in parts {
        entries.extend_from_slice(&p);
    }
    BatchGradient { entries, stats }
}
