//! The single-process training loop: config, weight initialisation, mini-batches
//! (gradient → sparse AdaGrad → quantized tables), validation metrics (JSONL),
//! checkpoints and exact resume.
//!
//! Exactness: the data order is a function of (seed, epoch) only (`data::ShuffleStream`),
//! the batch gradient does not depend on the thread count (`gradient`), the quantized
//! tables are a function of the f32 weights, and a checkpoint stores the weights,
//! accumulators, counters and the position in the epoch. Resuming replays the epoch's
//! shuffle up to that position, so an interrupted and resumed run ends with the same bytes
//! as an uninterrupted one.

use super::adagrad::{self, AdaGradConfig, Quantized};
use super::checkpoint;
use super::data::{Rng, ShuffleStream, manifest_records, resolve_shards};
use super::export::{patterns_with_weights, quantize_tables_factored};
use super::factors::{self, Factorization};
use super::gradient::{self, BatchStats, LossConfig, cross_entropy, target, win_prob};
use super::weights::{KKP_BASE, KPP_BASE, KPP_TRI, PATTERN_BASE, WeightFile, kk_index};
use crate::eval::Evaluator;
use crate::eval::bona_piece::FE_END;
use crate::eval::kppt::KpptTables;
use crate::eval::patterns::PatternSet;
use crate::search::{Limits, Searcher, TranspositionTable};
use crate::teacher::{ShardReader, TeacherRecord};
use rayon::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// `keima learn` configuration (TOML). Paths are relative to the working directory.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnConfig {
    /// Teacher shards: files or patterns with `*`/`?` in the file name.
    pub shards: Vec<String>,
    /// Held-out shard for validation metrics (optional).
    pub validation: Option<String>,
    /// At most this many validation records are used.
    pub validation_max: usize,
    /// Depth of the search whose best move is compared with the recorded move (0 = off).
    pub validation_depth: i32,
    /// Run directory: weights.kw, metrics.jsonl, checkpoints/.
    pub out_dir: PathBuf,
    /// Start from this weight file (copied) instead of material-only.
    pub init_weights: Option<PathBuf>,
    /// Start from these KPPT files instead of material-only.
    pub init_kppt: Option<PathBuf>,
    /// Pattern file (definitions and initial weights) to train with.
    pub patterns: Option<PathBuf>,
    pub batch_size: usize,
    pub eta: f64,
    pub eta_turn: f64,
    pub epsilon: f64,
    pub eta_decay: f64,
    pub lambda: f64,
    pub eval_limit: i32,
    pub skip_draws: bool,
    pub epochs: u64,
    /// Stop after this many updates in total (0 = no limit).
    pub max_updates: u64,
    /// Records held in the shuffle buffer.
    pub shuffle_buffer: usize,
    /// Validation every N updates (0 = only at the end).
    pub eval_every: u64,
    /// Checkpoint every N updates (0 = only at the end).
    pub checkpoint_every: u64,
    /// Checkpoints kept (0 = all).
    pub keep_checkpoints: usize,
    pub seed: u64,
    /// Train the KPP weights (false: only KK and KKP — ~10^7 weights that each see far more
    /// positions, for small data sets; patterns are trained either way).
    pub train_kpp: bool,
    /// Worker threads (0 = all cores).
    pub threads: usize,
    /// One thread, sequential code paths (results are identical anyway; for tests).
    pub deterministic: bool,
    /// Reserve the weight file's disk space before training (see `WeightFile::check_disk_space`):
    /// a full disk is then a clear error at the start instead of a crash mid-run. Off only
    /// for tests that touch a few pages of many files.
    pub check_disk_space: bool,
    /// Dimension reduction (`factors`): `factors = { mirror = true, kp = true }`. Fixed
    /// when the weight file is created; a resumed run keeps the file's.
    pub factors: Factorization,
}

impl Default for LearnConfig {
    fn default() -> Self {
        let ada = AdaGradConfig::default();
        let loss = LossConfig::default();
        LearnConfig {
            shards: Vec::new(),
            validation: None,
            validation_max: 2000,
            validation_depth: 1,
            out_dir: PathBuf::from("runs/learn"),
            init_weights: None,
            init_kppt: None,
            patterns: None,
            batch_size: 10_000,
            eta: ada.eta,
            eta_turn: ada.eta_turn,
            epsilon: ada.epsilon,
            eta_decay: ada.eta_decay,
            lambda: loss.lambda,
            eval_limit: loss.eval_limit,
            skip_draws: loss.skip_draws,
            epochs: 1,
            max_updates: 0,
            shuffle_buffer: 200_000,
            eval_every: 100,
            checkpoint_every: 1000,
            keep_checkpoints: 3,
            seed: 1,
            train_kpp: true,
            threads: 0,
            deterministic: false,
            check_disk_space: true,
            factors: Factorization::NONE,
        }
    }
}

impl LearnConfig {
    pub fn from_toml(text: &str) -> Result<LearnConfig, String> {
        let c: LearnConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check()?;
        Ok(c)
    }

    pub fn check(&self) -> Result<(), String> {
        if self.shards.is_empty() {
            return Err("config: `shards` is empty: list teacher shard files or patterns".into());
        }
        if self.batch_size == 0 {
            return Err("config: batch_size must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.lambda) {
            return Err("config: lambda must be in [0, 1]".into());
        }
        if self.eta <= 0.0 || self.eta_turn < 0.0 {
            return Err("config: eta must be > 0 and eta_turn >= 0".into());
        }
        if self.init_kppt.is_some() && self.init_weights.is_some() {
            return Err("config: give init_kppt or init_weights, not both".into());
        }
        Ok(())
    }

    pub fn loss(&self) -> LossConfig {
        LossConfig { lambda: self.lambda, eval_limit: self.eval_limit, skip_draws: self.skip_draws }
    }

    pub fn adagrad(&self) -> AdaGradConfig {
        AdaGradConfig {
            eta: self.eta,
            eta_turn: self.eta_turn,
            epsilon: self.epsilon,
            eta_decay: self.eta_decay,
        }
    }
}

/// Counters and the data cursor (saved in checkpoints).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TrainState {
    pub updates: u64,
    /// Records trained on (skipped ones excluded).
    pub examples: u64,
    pub skipped: u64,
    pub epoch: u64,
    /// Records of the current epoch already consumed.
    pub emitted: u64,
    /// The shuffle RNG state at the cursor (informational: resume replays the epoch).
    pub rng: u64,
    /// Training loss since the last metrics line.
    pub interval_loss_sum: f64,
    pub interval_used: u64,
}

/// Held-out metrics.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct ValidationMetrics {
    pub records: u64,
    pub test_loss: f64,
    pub move_agreement: f64,
    pub moves_compared: u64,
    pub mean_abs_eval_diff: f64,
}

/// What the progress callback sees after each update.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub updates: u64,
    pub epoch: u64,
    /// Records consumed in this run (all epochs, this process).
    pub records_done: u64,
    /// Records of the whole run if the manifests tell (epochs included), from the start.
    pub records_total: Option<u64>,
    /// Records consumed before this process started (resume).
    pub records_before: u64,
    pub positions_per_s: f64,
    pub batch_loss: f64,
}

/// FNV-1a 64 of the pattern definitions (weights excluded).
pub fn pattern_hash(set: &PatternSet) -> u64 {
    let zero = PatternSet::new(set.patterns().to_vec(), vec![0; set.len()]);
    crate::eval::patterns::file::fnv1a64(&crate::eval::patterns::file::to_bytes(&zero))
}

/// Creates a weight file: material-only (all zero), or from KPPT tables, with the pattern
/// weights of `patterns`.
pub fn init_weights(
    path: &Path,
    kppt: Option<&KpptTables>,
    patterns: Option<&PatternSet>,
    factors: Factorization,
) -> Result<WeightFile, String> {
    let n = patterns.map_or(0, |p| p.len() as u64);
    let mut w = WeightFile::create_factored(path, n, patterns.map_or(0, pattern_hash), factors)
        .map_err(|e| e.to_string())?;
    if kppt.is_some() {
        // Filling the tables writes most pages: a small disk is an error here, not SIGBUS.
        w.check_disk_space().map_err(|e| e.to_string())?;
    }
    let recs = w.records_mut();
    if let Some(t) = kppt {
        for (i, v) in t.kk.as_slice().iter().enumerate() {
            recs[kk_index(0, 0) + i][..2].copy_from_slice(&[v[0] as f32, v[1] as f32]);
        }
        for (i, v) in t.kkp.as_slice().iter().enumerate() {
            if i % FE_END != 0 && *v != [0, 0] {
                recs[KKP_BASE + i][..2].copy_from_slice(&[v[0] as f32, v[1] as f32]);
            }
        }
        let kpp = t.kpp.as_slice();
        recs[KPP_BASE..KPP_BASE + 81 * KPP_TRI].par_chunks_mut(KPP_TRI).enumerate().for_each(|(k, rk)| {
            let mut i = 0;
            for a in 2..FE_END {
                for b in 1..a {
                    let v = kpp[(k * FE_END + a) * FE_END + b];
                    if v != [0, 0] {
                        rk[i][0] = v[0] as f32;
                        rk[i][1] = v[1] as f32;
                    }
                    i += 1;
                }
            }
        });
    }
    if kppt.is_some() && factors.mirror {
        // One parameter per mirror pair: the mean of the two table entries.
        crate::learn::factors::share_mirror_pairs(recs);
    }
    if let Some(p) = patterns {
        for (i, &v) in p.weights().iter().enumerate() {
            recs[PATTERN_BASE + i][0] = v as f32;
        }
    }
    w.flush().map_err(|e| e.to_string())?;
    Ok(w)
}

/// The weight file a new run starts from, written to `path`: a copy of `from_weights`
/// (counters reset), or KPPT files `init_kppt`, or material only; with the pattern weights
/// of `patterns`.
pub fn start_weights(
    path: &Path,
    from_weights: Option<&Path>,
    init_kppt: Option<&Path>,
    patterns: Option<&PatternSet>,
    factors: Factorization,
) -> Result<WeightFile, String> {
    if let Some(src) = from_weights {
        let mut w = WeightFile::open(src, true).map_err(|e| e.to_string())?;
        w.copy_sparse(path).map_err(|e| e.to_string())?;
        let mut w = WeightFile::open(path, false).map_err(|e| e.to_string())?;
        w.header.updates = 0;
        w.header.examples = 0;
        w.write_header();
        return Ok(w);
    }
    let kppt = match init_kppt {
        Some(dir) => Some(crate::eval::kppt_file::load_kppt_dir(dir).map_err(|e| e.to_string())?),
        None => None,
    };
    init_weights(path, kppt.as_ref(), patterns, factors)
}

/// The quantized evaluator of a weight file (what training searches with and export writes).
pub fn evaluator_from_weights(w: &WeightFile, patterns: Option<&PatternSet>) -> Result<Evaluator, String> {
    let (tables, _) = quantize_tables_factored(&w.header.param_layout(), w.records());
    let patterns = match patterns {
        Some(set) => {
            if set.len() as u64 != w.header.patterns {
                return Err(format!(
                    "the pattern file has {} patterns but the weight file has {}",
                    set.len(),
                    w.header.patterns
                ));
            }
            if w.header.pattern_hash != 0 && pattern_hash(set) != w.header.pattern_hash {
                return Err(
                    "the pattern file's definitions differ from those the weights were made with".into()
                );
            }
            let mut c = 0;
            Some(Arc::new(patterns_with_weights(set, w.records(), &mut c)))
        }
        None if w.header.patterns > 0 => {
            return Err(format!(
                "the weight file has {} pattern weights: give the pattern file",
                w.header.patterns
            ));
        }
        None => None,
    };
    Ok(Evaluator { use_material: true, kppt: Some(Arc::new(tables)), patterns })
}

pub struct Trainer {
    pub cfg: LearnConfig,
    out_dir: PathBuf,
    weights: WeightFile,
    evaluator: Arc<Evaluator>,
    pub state: TrainState,
    shards: Vec<PathBuf>,
    validation: Vec<TeacherRecord>,
    pool: rayon::ThreadPool,
    metrics_path: PathBuf,
    last_metrics_at: Option<u64>,
    last_checkpoint_at: Option<u64>,
}

pub const WEIGHTS_NAME: &str = "weights.kw";
pub const METRICS_NAME: &str = "metrics.jsonl";

fn load_patterns(cfg: &LearnConfig) -> Result<Option<PatternSet>, String> {
    cfg.patterns.as_ref().map(|p| crate::eval::patterns::file::load(p).map_err(|e| e.to_string())).transpose()
}

impl Trainer {
    /// A fresh run. Refuses an out_dir that already holds weights (use resume).
    pub fn new(cfg: LearnConfig) -> Result<Trainer, String> {
        cfg.check()?;
        let out = cfg.out_dir.clone();
        std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let wpath = out.join(WEIGHTS_NAME);
        if wpath.exists() {
            return Err(format!(
                "{} exists: resume with `keima learn --resume {}` or choose another out_dir",
                wpath.display(),
                out.display()
            ));
        }
        let patterns = load_patterns(&cfg)?;
        let weights = start_weights(
            &wpath,
            cfg.init_weights.as_deref(),
            cfg.init_kppt.as_deref(),
            patterns.as_ref(),
            cfg.factors,
        )?;
        if cfg.check_disk_space
            && let Err(e) = weights.check_disk_space()
        {
            // Leave no half-made run behind: a retry must not be told to resume.
            drop(weights);
            let _ = std::fs::remove_file(&wpath);
            return Err(e.to_string());
        }
        Self::build(cfg, weights, patterns, TrainState::default())
    }

    /// Continues from a checkpoint (or the newest valid one of a run directory), writing to
    /// `out_dir` (default: the config's). `max_updates` overrides the config's limit.
    pub fn resume(
        path: &Path,
        out_dir: Option<PathBuf>,
        max_updates: Option<u64>,
    ) -> Result<(Trainer, Vec<String>), String> {
        let (dir, warnings) = checkpoint::find(path)?;
        let (cs, mut ckw) = checkpoint::load(&dir)?;
        let mut cfg = cs.config;
        if let Some(o) = out_dir {
            cfg.out_dir = o;
        }
        if let Some(m) = max_updates {
            cfg.max_updates = m;
        }
        std::fs::create_dir_all(&cfg.out_dir).map_err(|e| format!("{}: {e}", cfg.out_dir.display()))?;
        let wpath = cfg.out_dir.join(WEIGHTS_NAME);
        ckw.copy_sparse(&wpath).map_err(|e| e.to_string())?;
        let weights = WeightFile::open(&wpath, false).map_err(|e| e.to_string())?;
        if cfg.check_disk_space {
            weights.check_disk_space().map_err(|e| e.to_string())?;
        }
        let patterns = load_patterns(&cfg)?;
        let mut t = Self::build(cfg, weights, patterns, cs.state)?;
        t.last_checkpoint_at = Some(t.state.updates);
        Ok((t, warnings))
    }

    fn build(
        cfg: LearnConfig,
        weights: WeightFile,
        patterns: Option<PatternSet>,
        state: TrainState,
    ) -> Result<Trainer, String> {
        let shards = resolve_shards(&cfg.shards)?;
        let evaluator = Arc::new(evaluator_from_weights(&weights, patterns.as_ref())?);
        let mut validation = Vec::new();
        if let Some(v) = &cfg.validation {
            let mut r = ShardReader::open(v).map_err(|e| e.to_string())?;
            while validation.len() < cfg.validation_max {
                match r.next_record().map_err(|e| e.to_string())? {
                    Some(rec) => validation.push(rec),
                    None => break,
                }
            }
        }
        let threads = if cfg.deterministic { 1 } else { cfg.threads };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
        let out_dir = cfg.out_dir.clone();
        Ok(Trainer {
            metrics_path: out_dir.join(METRICS_NAME),
            out_dir,
            weights,
            evaluator,
            state,
            shards,
            validation,
            pool,
            cfg,
            last_metrics_at: None,
            last_checkpoint_at: None,
        })
    }

    pub fn evaluator(&self) -> &Arc<Evaluator> {
        &self.evaluator
    }

    pub fn weights(&self) -> &WeightFile {
        &self.weights
    }

    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }

    /// One update from `batch`: gradient, AdaGrad, quantized tables. Returns the batch
    /// statistics and the number of weights changed.
    pub fn train_batch(&mut self, batch: &[TeacherRecord]) -> (BatchStats, usize) {
        let loss = self.cfg.loss();
        let parallel = !self.cfg.deterministic;
        let ev = self.evaluator.clone();
        let g = self.pool.install(|| gradient::batch_gradient(&ev, batch, &loss, parallel));
        drop(ev);
        let touched = if self.cfg.train_kpp {
            self.apply(&g.entries)
        } else {
            let kept: Vec<(u32, [f32; 2])> = g
                .entries
                .iter()
                .copied()
                .filter(|e| !(KPP_BASE..PATTERN_BASE).contains(&(e.0 as usize)))
                .collect();
            self.apply(&kept)
        };
        self.state.updates += 1;
        self.state.examples += g.stats.used;
        self.state.skipped += g.stats.skipped;
        self.state.interval_loss_sum += g.stats.loss_sum;
        self.state.interval_used += g.stats.used;
        self.weights.header.updates = self.state.updates;
        self.weights.header.examples = self.state.examples;
        (g.stats, touched)
    }

    /// Applies a summed sparse gradient (sorted, distinct indices) as one AdaGrad update.
    pub fn apply(&mut self, grads: &[(u32, [f32; 2])]) -> usize {
        let ada = self.cfg.adagrad();
        let ev = Arc::get_mut(&mut self.evaluator).expect("no searcher holds the evaluator between batches");
        let kppt =
            Arc::get_mut(ev.kppt.as_mut().expect("training evaluator has KPPT")).expect("unique tables");
        let patterns = ev.patterns.as_mut().map(|p| Arc::get_mut(p).expect("unique pattern set"));
        let mut q = Quantized { kppt, patterns };
        let layout = self.weights.header.param_layout();
        let (update_no, records) = (self.state.updates, self.weights.records_mut());
        if !layout.factors.is_none() {
            // Bit-identical for any thread count (see `factors`).
            let (touched, _) = self
                .pool
                .install(|| factors::apply_factored(&ada, update_no, &layout, records, grads, Some(&mut q)));
            touched
        } else if self.cfg.deterministic {
            adagrad::apply(&ada, update_no, records, grads, Some(&mut q))
        } else {
            // Bit-identical to `apply` (disjoint weight ranges in parallel).
            self.pool.install(|| adagrad::apply_parallel(&ada, update_no, records, grads, Some(&mut q)))
        }
    }

    /// Held-out metrics with the current evaluator.
    pub fn validate(&self) -> ValidationMetrics {
        validate(&self.evaluator, &self.validation, &self.cfg.loss(), self.cfg.validation_depth, &self.pool)
    }

    fn write_metrics(&mut self, start: Instant, records_done: u64) -> Result<(), String> {
        let v = self.validate();
        let elapsed = start.elapsed().as_secs_f64();
        let train_loss = if self.state.interval_used > 0 {
            self.state.interval_loss_sum / self.state.interval_used as f64
        } else {
            f64::NAN
        };
        let line = serde_json::json!({
            "updates": self.state.updates,
            "examples": self.state.examples,
            "skipped": self.state.skipped,
            "epoch": self.state.epoch,
            "train_loss": if train_loss.is_finite() { Some(train_loss) } else { None },
            "test_records": v.records,
            "test_loss": v.test_loss,
            "move_agreement": v.move_agreement,
            "moves_compared": v.moves_compared,
            "mean_abs_eval_diff": v.mean_abs_eval_diff,
            "elapsed_s": elapsed,
            "positions_per_s": records_done as f64 / elapsed.max(1e-9),
        });
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.metrics_path)
            .map_err(|e| format!("{}: {e}", self.metrics_path.display()))?;
        writeln!(f, "{line}").map_err(|e| format!("{}: {e}", self.metrics_path.display()))?;
        self.state.interval_loss_sum = 0.0;
        self.state.interval_used = 0;
        self.last_metrics_at = Some(self.state.updates);
        Ok(())
    }

    /// Writes a checkpoint now.
    pub fn checkpoint(&mut self) -> Result<PathBuf, String> {
        let d = checkpoint::write(
            &self.out_dir,
            &mut self.weights,
            &self.state,
            &self.cfg,
            self.cfg.keep_checkpoints,
        )?;
        self.last_checkpoint_at = Some(self.state.updates);
        Ok(d)
    }

    /// Trains until the epochs are done or `max_updates` is reached; writes metrics,
    /// checkpoints, and flushes the weights. Returns the final validation metrics.
    pub fn run(&mut self, progress: &mut dyn FnMut(&Progress)) -> Result<ValidationMetrics, String> {
        let start = Instant::now();
        let total = manifest_records(&self.shards).map(|n| n * self.cfg.epochs);
        let per_epoch = manifest_records(&self.shards).unwrap_or(0);
        let records_before = self.state.epoch * per_epoch + self.state.emitted;
        let mut records_done = 0u64;
        let mut stopped = false;
        if self.state.updates == 0 && self.cfg.eval_every > 0 {
            // The starting point of the curves.
            self.write_metrics(start, 0)?;
        }
        while self.state.epoch < self.cfg.epochs && !stopped {
            let mut stream = ShuffleStream::new(
                self.shards.clone(),
                self.cfg.shuffle_buffer,
                Rng::for_epoch(self.cfg.seed, self.state.epoch),
            );
            stream.skip(self.state.emitted)?;
            loop {
                if self.cfg.max_updates > 0 && self.state.updates >= self.cfg.max_updates {
                    stopped = true;
                    break;
                }
                let batch = stream.next_batch(self.cfg.batch_size)?;
                if batch.is_empty() {
                    break;
                }
                let (stats, _) = self.train_batch(&batch);
                self.state.emitted += batch.len() as u64;
                self.state.rng = stream.rng().0;
                records_done += batch.len() as u64;
                progress(&Progress {
                    updates: self.state.updates,
                    epoch: self.state.epoch,
                    records_done,
                    records_total: total,
                    records_before,
                    positions_per_s: records_done as f64 / start.elapsed().as_secs_f64().max(1e-9),
                    batch_loss: stats.mean_loss(),
                });
                if self.cfg.eval_every > 0 && self.state.updates.is_multiple_of(self.cfg.eval_every) {
                    self.write_metrics(start, records_done)?;
                }
                if self.cfg.checkpoint_every > 0
                    && self.state.updates.is_multiple_of(self.cfg.checkpoint_every)
                {
                    self.checkpoint()?;
                }
            }
            if !stopped {
                self.state.epoch += 1;
                self.state.emitted = 0;
            }
        }
        if self.last_metrics_at != Some(self.state.updates) {
            self.write_metrics(start, records_done)?;
        }
        if self.last_checkpoint_at != Some(self.state.updates) {
            self.checkpoint()?;
        }
        self.weights.flush().map_err(|e| e.to_string())?;
        Ok(self.validate())
    }
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
