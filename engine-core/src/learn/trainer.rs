//! The single-process training loop (`keima learn`): mini-batches (gradient → sparse
//! AdaGrad → quantized tables), metrics lines (JSONL), checkpoints and exact resume. The
//! config is `config::LearnConfig`, the weights' set-up `init`, the metrics `validation`.
//!
//! Exactness: the data order is a function of (seed, epoch) only (`data::ShuffleStream`),
//! the batch gradient does not depend on the thread count (`gradient`), the quantized
//! tables are a function of the f32 weights, and a checkpoint stores the weights,
//! accumulators, counters and the position in the epoch. Resuming replays the epoch's
//! shuffle up to that position, so an interrupted and resumed run ends with the same bytes
//! as an uninterrupted one.

use super::adagrad::{self, Quantized};
use super::bag_sample::{self, NclPeers};
use super::checkpoint::{self, CheckpointError, CheckpointState, StateError};
use super::config::LearnConfig;
use super::data::{ShuffleStream, epoch_rng, manifest_records, resolve_shards};
use super::factors::{self, Factorization};
use super::files::{METRICS_FILE, WEIGHTS_FILE};
use super::gradient::{self, BatchStats};
use super::init::{evaluator_from_weights, load_patterns, new_run_weights_path, start_weights};
use super::validation::{self, ValidationMetrics};
use super::weights::{KPP_BASE, PATTERN_BASE, WeightFile};
use crate::eval::Evaluator;
use crate::eval::patterns::PatternSet;
use crate::teacher::TeacherRecord;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

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

/// The `state.json` of a `keima learn` checkpoint. Format 1 (an older keima's flat
/// config keys) is read too.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LearnCheckpoint {
    pub version: u32,
    pub state: TrainState,
    #[serde(deserialize_with = "stored_config")]
    pub config: LearnConfig,
    /// The data checksum of `weights.kw` (also in its header).
    pub weights_checksum: u64,
    pub created_unix: u64,
}

/// The format of [`LearnCheckpoint`] this build writes; it reads 1 as well.
pub const STATE_VERSION: u32 = 2;

fn stored_config<'de, D: serde::Deserializer<'de>>(d: D) -> Result<LearnConfig, D::Error> {
    let v = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
    LearnConfig::from_stored(v).map_err(serde::de::Error::custom)
}

impl CheckpointState for LearnCheckpoint {
    fn from_json(bytes: &[u8]) -> Result<Self, StateError> {
        #[derive(serde::Deserialize)]
        struct Version {
            version: u64,
        }
        let found = serde_json::from_slice::<Version>(bytes)?.version;
        if !(1..=STATE_VERSION as u64).contains(&found) {
            return Err(StateError::Format { found, readable: "1 and 2" });
        }
        Ok(serde_json::from_slice(bytes)?)
    }

    fn number(&self) -> u64 {
        self.state.updates
    }

    fn weights_checksum(&self) -> u64 {
        self.weights_checksum
    }
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
    /// MNCL: the earlier players of a bagging run (`bag_sample::NclPeers`).
    ncl: Option<NclPeers>,
}

impl Trainer {
    /// A fresh run. Refuses an out_dir that already holds weights (use resume).
    pub fn new(cfg: LearnConfig) -> Result<Trainer, String> {
        cfg.check().map_err(|e| e.to_string())?;
        let wpath = new_run_weights_path(&cfg.out_dir, "keima learn --resume", "out_dir")?;
        let patterns = load_patterns(&cfg.learn.init)?;
        let weights = start_weights(&wpath, &cfg.learn.init, patterns.as_ref())?;
        if cfg.learn.check_disk_space
            && let Err(e) = weights.check_disk_space()
        {
            // Leave no half-made run behind: a retry must not be told to resume.
            drop(weights);
            let _ = std::fs::remove_file(&wpath);
            return Err(e.to_string());
        }
        // A run that cannot start (a shard pattern matching nothing, a missing validation
        // shard) leaves no weight file behind, or the corrected retry would be told to resume.
        Self::build(cfg, weights, patterns, TrainState::default()).inspect_err(|_| {
            let _ = std::fs::remove_file(&wpath);
        })
    }

    /// Continues from a checkpoint (or the newest valid one of a run directory), writing to
    /// `out_dir` (default: the config's). `max_updates` overrides the config's limit.
    pub fn resume(
        path: &Path,
        out_dir: Option<PathBuf>,
        max_updates: Option<u64>,
    ) -> Result<(Trainer, Vec<String>), String> {
        let found = checkpoint::find::<LearnCheckpoint>(path).map_err(|e| e.to_string())?;
        let (cs, mut ckw) = (found.state, found.weights);
        let mut cfg = cs.config;
        if let Some(o) = out_dir {
            cfg.out_dir = o;
        }
        if let Some(m) = max_updates {
            cfg.max_updates = m;
        }
        std::fs::create_dir_all(&cfg.out_dir).map_err(|e| format!("{}: {e}", cfg.out_dir.display()))?;
        let wpath = cfg.out_dir.join(WEIGHTS_FILE);
        ckw.copy_sparse(&wpath).map_err(|e| e.to_string())?;
        let weights = WeightFile::open(&wpath, false).map_err(|e| e.to_string())?;
        if cfg.learn.check_disk_space {
            weights.check_disk_space().map_err(|e| e.to_string())?;
        }
        let patterns = load_patterns(&cfg.learn.init)?;
        let mut t = Self::build(cfg, weights, patterns, cs.state)?;
        t.last_checkpoint_at = Some(t.state.updates);
        Ok((t, found.skipped.into_iter().map(|s| format!("skipping invalid checkpoint: {s}")).collect()))
    }

    fn build(
        cfg: LearnConfig,
        weights: WeightFile,
        patterns: Option<PatternSet>,
        state: TrainState,
    ) -> Result<Trainer, String> {
        let shards = resolve_shards(&cfg.shards)?;
        let evaluator = Arc::new(evaluator_from_weights(&weights, patterns.as_ref())?);
        let validation = validation::load_records(&cfg.learn.validation)?;
        let threads = if cfg.deterministic { 1 } else { cfg.threads };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
        let out_dir = cfg.out_dir.clone();
        let ncl = NclPeers::open(&cfg)?;
        Ok(Trainer {
            metrics_path: out_dir.join(METRICS_FILE),
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
            ncl,
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
        let loss = self.cfg.learn.loss;
        let parallel = !self.cfg.deterministic;
        let ev = self.evaluator.clone();
        let mut g = self.pool.install(|| gradient::batch_gradient(&ev, batch, &loss, parallel));
        drop(ev);
        if let Some(peers) = &self.ncl {
            peers.add_to(self.weights.records(), &mut g.entries, g.stats.used);
        }
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
        let ada = self.cfg.learn.adagrad;
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

    /// The weights' dimension reduction (fixed when the file was made).
    pub fn factorization(&self) -> Factorization {
        self.weights.header.factors
    }

    /// Held-out metrics with the current evaluator.
    pub fn validate(&self) -> ValidationMetrics {
        let (loss, depth) = (&self.cfg.learn.loss, self.cfg.learn.validation.depth);
        validation::validate(&self.evaluator, &self.validation, loss, depth, &self.pool)
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
        let cs = LearnCheckpoint {
            version: STATE_VERSION,
            state: self.state.clone(),
            config: self.cfg.clone(),
            weights_checksum: 0,
            created_unix: checkpoint::now_unix(),
        };
        let d = checkpoint::write_dir(
            &self.out_dir,
            self.state.updates,
            &mut self.weights,
            |checksum| serde_json::to_vec_pretty(&LearnCheckpoint { weights_checksum: checksum, ..cs }),
            |_| Ok::<(), CheckpointError>(()),
        )
        .map_err(|e| e.to_string())?;
        // Old checkpoints that cannot be removed are left (the new one is in place).
        let _ = checkpoint::prune(&self.out_dir, self.cfg.keep_checkpoints);
        self.last_checkpoint_at = Some(self.state.updates);
        Ok(d)
    }

    /// The next batch and the number of stream records it took. Bagging (`cfg.bagging.phase`)
    /// repeats each record its draw count times (all copies in one batch, so the cursor
    /// stays exact) and fills the batch to `batch_size` draws.
    fn next_batch(&self, stream: &mut ShuffleStream) -> Result<(Vec<TeacherRecord>, u64), String> {
        let Some(phase) = self.cfg.bagging.phase else {
            let batch = stream.next_batch(self.cfg.batch_size)?;
            let n = batch.len() as u64;
            return Ok((batch, n));
        };
        let (mut batch, mut consumed) = (Vec::with_capacity(self.cfg.batch_size), 0);
        while batch.len() < self.cfg.batch_size {
            let Some(r) = stream.next_record()? else { break };
            consumed += 1;
            for _ in 0..bag_sample::draw_count(&self.cfg.bagging, self.cfg.seed, phase, &r) {
                batch.push(r);
            }
        }
        Ok((batch, consumed))
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
                epoch_rng(self.cfg.seed, self.state.epoch),
            );
            stream.skip(self.state.emitted)?;
            loop {
                if self.cfg.max_updates > 0 && self.state.updates >= self.cfg.max_updates {
                    stopped = true;
                    break;
                }
                let (batch, consumed) = self.next_batch(&mut stream)?;
                if consumed == 0 {
                    break;
                }
                self.state.emitted += consumed;
                self.state.rng = stream.rng().0;
                records_done += consumed;
                if batch.is_empty() {
                    continue; // bagging drew none of the last records
                }
                let (stats, _) = self.train_batch(&batch);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_1_state_file_reads_with_its_config_migrated() {
        let old = serde_json::json!({
            "version": 1,
            "state": TrainState { updates: 4, ..TrainState::default() },
            "config": { "shards": ["a"], "eta": 1.5, "validation": "v", "batch_size": 7 },
            "weights_checksum": 9,
            "created_unix": 0,
        });
        let cs = LearnCheckpoint::from_json(old.to_string().as_bytes()).unwrap();
        assert_eq!((cs.number(), cs.weights_checksum(), cs.config.batch_size), (4, 9, 7));
        assert_eq!(cs.config.learn.adagrad.eta, 1.5);
        assert_eq!(cs.config.learn.validation.shard, Some(PathBuf::from("v")));
        let future = LearnCheckpoint::from_json(br#"{"version": 3}"#);
        assert!(matches!(future, Err(StateError::Format { found: 3, .. })));
    }
}
