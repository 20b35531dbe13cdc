//! The coordinator's state and its operations, without networking: build the shard queue
//! from the config and resume (`open`), lease, heartbeat, give back, merge a push exactly
//! once, journal first (`merge`), end a generation (`generation_end`: newbob, rollback),
//! checkpoint (`checkpoints`), match shards and their Elo (`matches`), metrics lines, export. The gRPC service (`service.rs`) is a
//! thin layer over this; the state is reached only through these methods.

mod checkpoints;
mod generation_end;
mod matches;
mod merge;
mod open;

pub use merge::ReceivedPush;

use crate::checkpoint::Totals;
use crate::config::TrainConfig;
use crate::elo::EloState;
use crate::error::PushError;
use crate::fault::Faults;
use crate::generations::{self, GenerationState};
use crate::queue::{LeaseDecision, LeaseProblem, Queue, QueueCounts, ShardSpec};
use crate::weights_state::{SyncSpan, WeightState};
use crate::weights_sync::{self, EncodedChunk, SyncCache};
use engine_core::eval::patterns::PatternSet;
use engine_core::learn::files::METRICS_FILE;
use engine_core::learn::validation::{self, ValidationMetrics};
use engine_core::teacher::TeacherRecord;
use keima_proto::v1;
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Positions one shard may claim when nothing tighter is known (its records are not sent
/// back): far above any real shard, and low enough that no sum of them overflows.
pub const MAX_SHARD_POSITIONS: u64 = 1 << 32;

/// CPU seconds one shard may claim: a year of one core, far above any real shard (a
/// claim beyond it is a broken or hostile worker, and would swamp the run's total).
pub const MAX_SHARD_CPU_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

#[derive(Clone, Debug)]
pub struct WorkerInfo {
    pub name: String,
    pub threads: u32,
    pub last_seen_ms: u64,
    /// The external USI engines it declared (checked names).
    pub usi_engines: Vec<String>,
}

/// What a worker pulls: the current weights as a delta since the version it has, or
/// (`full`) every entry.
pub struct WeightsUpdate {
    pub version: u64,
    pub full: bool,
    pub entries: Vec<(u32, [i32; 2])>,
}

/// A [`WeightsUpdate`] as sent: its entries encoded and compressed in chunks (shared with
/// the other workers that pull the same versions).
pub struct WeightsSync {
    pub version: u64,
    pub full: bool,
    pub chunks: Arc<Vec<EncodedChunk>>,
}

/// Bytes of encoded syncs kept for the next worker (a few folds of the factored recipe, or
/// one full copy of a trained KPPT set).
const SYNC_CACHE_BYTES: usize = 256 << 20;

pub struct Core {
    cfg: TrainConfig,
    run_dir: PathBuf,
    run_id: String,
    layout: v1::Layout,
    pattern_file: Vec<u8>,
    queue: Mutex<Queue>,
    /// Held for a whole merge, so merges happen one at a time.
    weights: Mutex<WeightState>,
    /// The newest weight syncs as sent (taken after `weights` when both are held).
    sync_cache: Mutex<SyncCache>,
    totals: Mutex<Totals>,
    /// Newbob's state and the best weights' version (changed only at a generation's end).
    generations: Mutex<GenerationState>,
    /// A generation ended but the checkpoint of its end is not written yet: leases wait
    /// (nothing of the next generation is computed before its start is durable).
    generation_checkpoint_pending: AtomicBool,
    workers: Mutex<HashMap<String, WorkerInfo>>,
    /// External USI engines already logged as declared by no worker (logged once each).
    usi_engines_warned: Mutex<BTreeSet<String>>,
    /// The weights' version, readable without waiting for a merge.
    version: AtomicU64,
    started: Instant,
    /// A stop was asked for: leases are answered WAIT.
    stop_requested: AtomicBool,
    next_worker: AtomicU64,
    validation: Vec<TeacherRecord>,
    /// One thread for validation searches (built once, not per metrics line).
    validation_pool: rayon::ThreadPool,
    /// What the newest checkpoint written by this process holds (version, queue without
    /// leases, totals, generation state): an unchanged state is not written again.
    last_checkpoint: Mutex<Option<(u64, Queue, Totals, GenerationState)>>,
    /// Loss and positions since the last metrics line.
    interval: Mutex<(f64, u64)>,
    /// Crash points armed by tests (nothing in a build without `fault-injection`).
    faults: Faults,
    /// The coordinator's CPU seconds before this process (from the checkpoint) ...
    cpu_base: f64,
    /// ... and this process's CPU seconds when it opened the run.
    cpu_at_open: f64,
    /// Matches queued and Elo measured (`[elo]`; saved in checkpoints).
    elo: Mutex<EloState>,
    /// `[elo] openings` as USI lines (empty without `[elo]`).
    elo_openings: Vec<String>,
    /// With `[elo]`: the checkpoint at the end of training is written (its match shards,
    /// if due, are queued). Until then no worker is told the run is finished.
    end_of_training_checkpointed: AtomicBool,
}

impl Core {
    pub fn config(&self) -> &TrainConfig {
        &self.cfg
    }

    /// Overrides `[coordinator] metrics_listen` of a resumed run (`keima train --resume
    /// --metrics-listen`); checkpoints from now on keep it.
    pub fn set_metrics_listen(&mut self, address: String) {
        self.cfg.coordinator.metrics_listen = address;
    }

    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The feature layout workers must compute with.
    pub fn layout(&self) -> v1::Layout {
        self.layout
    }

    /// A warning when `[adagrad] eta_factors` has nothing to scale (see
    /// `AdaGradConfig::eta_factors_unused`).
    pub fn eta_factors_warning(&self) -> Option<String> {
        let factors = self.weights.lock().unwrap().file.header.factors;
        self.cfg.learn.adagrad.eta_factors_unused(&factors)
    }

    /// The run's pattern definitions as a file's bytes (empty: none).
    pub fn pattern_file(&self) -> &[u8] {
        &self.pattern_file
    }

    /// The weights' version: the number of merges applied.
    pub fn weights_version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    /// Time since this process opened the run.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn shard_counts(&self) -> QueueCounts {
        self.queue.lock().unwrap().counts()
    }

    /// A copy of the shard queue (leases included).
    pub fn queue_snapshot(&self) -> Queue {
        self.queue.lock().unwrap().clone()
    }

    /// The run's totals, the coordinator's CPU time up to now included.
    pub fn totals(&self) -> Totals {
        let mut t = self.totals.lock().unwrap().clone();
        t.coordinator_cpu_seconds = self.coordinator_cpu_seconds();
        t
    }

    /// The coordinator processes' CPU seconds: the checkpoint's plus this process's since
    /// it opened the run.
    fn coordinator_cpu_seconds(&self) -> f64 {
        let now = engine_core::cpu_time::process_cpu_seconds();
        let own = if now.is_finite() && self.cpu_at_open.is_finite() { now - self.cpu_at_open } else { 0.0 };
        self.cpu_base + own.max(0.0)
    }

    /// Newbob's state and the best weights' version.
    pub fn generation_state(&self) -> GenerationState {
        self.generations.lock().unwrap().clone()
    }

    /// The generation being trained (the last one once the schedule is done).
    pub fn generation(&self) -> u32 {
        let q = self.queue.lock().unwrap();
        q.open_generation.min(q.generations().saturating_sub(1))
    }

    /// The AdaGrad settings of generation `g`'s merges now (newbob's decay included).
    pub fn step_sizes(&self, g: u32) -> engine_core::learn::config::AdaGradConfig {
        generations::adagrad(&self.cfg, g, self.generations.lock().unwrap().newbob.eta_scale)
    }

    /// Counts weight bytes sent to workers.
    pub fn count_bytes_out(&self, bytes: u64) {
        self.totals.lock().unwrap().bytes_out += bytes;
    }

    /// Counts a push that was not merged: a server fault or a rejected push (`PushError`).
    pub fn count_failed_push(&self, e: &PushError) {
        if matches!(e, PushError::Stopping) {
            return; // neither the worker's fault nor the coordinator's
        }
        let mut t = self.totals.lock().unwrap();
        if e.is_server_fault() {
            t.server_faults += 1;
        } else {
            t.rejected_pushes += 1;
        }
    }

    /// The run is stopping: from now on leases are answered WAIT and pushes are refused
    /// unmerged (`PushError::Stopping`), so the checkpoint written next holds every merge.
    /// A merge already holding the weights lock completes first.
    pub fn stop(&self) {
        self.stop_requested.store(true, Ordering::SeqCst);
    }

    fn stopping(&self) -> bool {
        self.stop_requested.load(Ordering::SeqCst)
    }

    /// The crash points tests arm.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// What a worker that has weights version `have_version` (ignored if `full`) pulls, as
    /// entries (pulls themselves are served encoded by [`Core::weights_sync`]; tests and
    /// checks read the weights through this).
    pub fn weights_update(&self, have_version: u64, full: bool) -> WeightsUpdate {
        let w = self.weights.lock().unwrap();
        let span = w.sync_span(have_version, full);
        WeightsUpdate {
            version: w.version(),
            full: matches!(span, SyncSpan::Full { .. }),
            entries: w.sync_entries(span),
        }
    }

    /// The same update encoded for the wire. The entries are gathered under the weights'
    /// lock, encoded and compressed outside it, and kept: the other workers that need the
    /// same span get the same bytes without that work (waiting if it is under way: with the
    /// factored recipe the workers often pull a fold's changes at the same moment).
    pub fn weights_sync(&self, have_version: u64, full: bool) -> WeightsSync {
        loop {
            let w = self.weights.lock().unwrap();
            let span = w.sync_span(have_version, full);
            let version = w.version();
            let is_full = matches!(span, SyncSpan::Full { .. });
            if span == SyncSpan::Empty {
                return WeightsSync { version, full: is_full, chunks: Arc::new(weights_sync::encode(&[])) };
            }
            let (slot, new) = self.sync_cache.lock().unwrap().slot(span);
            if new {
                // Locked before the weights are let go: whoever finds the slot waits for it.
                let mut filled = slot.lock().unwrap();
                let entries = w.sync_entries(span);
                drop(w);
                let chunks = Arc::new(weights_sync::encode(&entries));
                *filled = Some(chunks.clone());
                return WeightsSync { version, full: is_full, chunks };
            }
            drop(w);
            if let Ok(filled) = slot.lock()
                && let Some(chunks) = filled.clone()
            {
                tracing::debug!(?span, have_version, version, "weight sync: encoded bytes reused");
                return WeightsSync { version, full: is_full, chunks };
            }
            // Its encoder panicked: encode it afresh.
            self.sync_cache.lock().unwrap().forget(span);
        }
    }

    pub fn lease_ms(&self) -> u64 {
        self.cfg.coordinator.lease_seconds * 1000
    }

    pub fn register(&self, name: &str, threads: u32) -> String {
        self.register_with_engines(name, threads, Vec::new())
    }

    /// Registers a worker that has the external USI engines `usi_engines` (names already
    /// checked by the caller: `keima_proto::usi_engine_name`).
    pub fn register_with_engines(&self, name: &str, threads: u32, usi_engines: Vec<String>) -> String {
        let n = self.next_worker.fetch_add(1, Ordering::SeqCst);
        let clean: String =
            name.chars().filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c)).take(64).collect();
        let id = format!("w{n}-{clean}");
        let info = WorkerInfo { name: name.to_string(), threads, last_seen_ms: now_ms(), usi_engines };
        self.workers.lock().unwrap().insert(id.clone(), info);
        id
    }

    /// Logs, once per engine, that match shards wait for an external USI engine no
    /// registered worker has.
    fn warn_of_missing_usi_engines(&self, q: &Queue) {
        let waited = q.usi_engines_waited_for();
        if waited.is_empty() {
            return;
        }
        let workers = self.workers.lock().unwrap();
        let mut warned = self.usi_engines_warned.lock().unwrap();
        for engine in waited {
            let someone_has = workers.values().any(|w| w.usi_engines.iter().any(|e| e == engine));
            if !someone_has && warned.insert(engine.to_string()) {
                tracing::warn!(
                    engine,
                    "match shards wait for the USI engine {engine:?}, which no registered worker declared \
                     (keima worker --usi-engine {engine}=COMMAND, or [local_workers.usi_engines.{engine}])"
                );
            }
        }
    }

    /// The external USI engines that pending match shards wait for and that no live
    /// worker declared, sorted: those shards cannot start until such a worker registers.
    pub fn usi_engines_missing(&self) -> Vec<String> {
        let waited: Vec<String> =
            self.queue.lock().unwrap().usi_engines_waited_for().into_iter().map(str::to_string).collect();
        if waited.is_empty() {
            return waited;
        }
        let limit = self.alive_since_ms();
        let workers = self.workers.lock().unwrap();
        waited
            .into_iter()
            .filter(|engine| {
                !workers
                    .values()
                    .any(|w| w.last_seen_ms >= limit && w.usi_engines.iter().any(|e| e == engine))
            })
            .collect()
    }

    /// Marks a worker as seen; false if the id is unknown (not registered with this run).
    pub fn touch(&self, worker_id: &str) -> bool {
        match self.workers.lock().unwrap().get_mut(worker_id) {
            Some(w) => {
                w.last_seen_ms = now_ms();
                true
            }
            None => false,
        }
    }

    /// Workers registered with this process, alive or not.
    pub fn workers_registered(&self) -> usize {
        self.workers.lock().unwrap().len()
    }

    /// Workers seen at or after this time (ms) count as alive.
    fn alive_since_ms(&self) -> u64 {
        now_ms().saturating_sub(self.lease_ms().max(3 * self.cfg.coordinator.heartbeat_ms as u64))
    }

    pub fn workers_alive(&self) -> u64 {
        let limit = self.alive_since_ms();
        self.workers.lock().unwrap().values().filter(|w| w.last_seen_ms >= limit).count() as u64
    }

    /// Whether the run's CPU time (its training shards, the coordinator, its match shards)
    /// has reached the budget `cpu_hours`. The first time it has, training stops: no new
    /// training shard is leased, those leased are still merged, and the run ends as when
    /// its shards are done (final checkpoint, its matches, the export).
    pub fn stop_training_if_budget_spent(&self) -> bool {
        let Some(hours) = self.cfg.cpu_hours else { return false };
        if self.queue.lock().unwrap().training_stopped {
            return true;
        }
        let t = self.totals();
        let spent = t.training_cpu_seconds() + t.match_cpu_seconds;
        if spent < hours * 3600.0 {
            return false;
        }
        let mut q = self.queue.lock().unwrap();
        if !q.training_stopped {
            q.stop_training();
            let pending = q.unstarted_training_shards();
            tracing::info!(
                "CPU budget reached: {:.3} of cpu_hours = {hours} spent; {pending} training shards not started \
                 stay pending; finishing the shards in flight",
                spent / 3600.0
            );
        }
        true
    }

    /// Training was stopped by the CPU budget with training shards left unplayed (not
    /// merely reached during the final matches of a run whose shards were all done).
    pub fn stopped_at_budget(&self) -> bool {
        let q = self.queue.lock().unwrap();
        q.training_stopped && q.unstarted_training_shards() > 0
    }

    /// Overrides the CPU budget (`keima train --resume --cpu-hours`): a larger one lets a
    /// stopped run train on.
    pub fn set_cpu_hours(&mut self, hours: Option<f64>) -> Result<(), String> {
        let mut cfg = self.cfg.clone();
        cfg.cpu_hours = hours;
        cfg.check().map_err(|e| e.to_string())?;
        self.cfg = cfg;
        Ok(())
    }

    /// A lease for `worker_id`, as the wire message.
    pub fn lease(&self, worker_id: &str) -> v1::LeaseReply {
        self.stop_training_if_budget_spent();
        if self.stopping() || self.generation_checkpoint_pending.load(Ordering::SeqCst) {
            return v1::LeaseReply {
                state: v1::lease_reply::State::Wait as i32,
                lease: None,
                retry_ms: 1000,
            };
        }
        let engines =
            self.workers.lock().unwrap().get(worker_id).map(|w| w.usi_engines.clone()).unwrap_or_default();
        let mut q = self.queue.lock().unwrap();
        self.warn_of_missing_usi_engines(&q);
        match q.lease(worker_id, &engines, now_ms(), self.lease_ms()) {
            LeaseDecision::Leased { shard, attempt, deadline_ms } => {
                let s = q.get(shard).expect("leased shard exists");
                let (spec, generation) = (s.spec.clone(), s.generation);
                drop(q);
                v1::LeaseReply {
                    state: v1::lease_reply::State::Leased as i32,
                    lease: Some(self.lease_message(shard, attempt, deadline_ms, spec, generation)),
                    retry_ms: 0,
                }
            }
            LeaseDecision::Wait => {
                v1::LeaseReply { state: v1::lease_reply::State::Wait as i32, lease: None, retry_ms: 500 }
            }
            LeaseDecision::Finished if !self.matches_settled() => {
                v1::LeaseReply { state: v1::lease_reply::State::Wait as i32, lease: None, retry_ms: 500 }
            }
            LeaseDecision::Finished => {
                v1::LeaseReply { state: v1::lease_reply::State::Finished as i32, lease: None, retry_ms: 0 }
            }
        }
    }

    /// The lease of `shard`, with its generation's loss settings.
    fn lease_message(
        &self,
        shard: u64,
        attempt: u32,
        deadline_ms: u64,
        spec: ShardSpec,
        generation: u32,
    ) -> v1::Lease {
        v1::Lease {
            shard_id: shard,
            attempt,
            deadline_unix_ms: deadline_ms,
            weights_version: self.version.load(Ordering::SeqCst),
            kind: Some(spec.into()),
            loss: Some(generations::loss(&self.cfg, generation).into()),
            return_records: self.cfg.coordinator.keep_teacher_records,
            batch_pool_records: if self.cfg.deterministic {
                0
            } else {
                self.cfg.coordinator.batch_pool_records
            },
            batch_pool_draws: self.cfg.coordinator.batch_pool_draws,
        }
    }

    pub fn heartbeat(&self, worker_id: &str, shard: u64, attempt: u32) -> v1::HeartbeatReply {
        let d = self.queue.lock().unwrap().heartbeat(shard, attempt, worker_id, now_ms(), self.lease_ms());
        v1::HeartbeatReply {
            lease_valid: d.is_some(),
            deadline_unix_ms: d.unwrap_or(0),
            weights_version: self.version.load(Ordering::SeqCst),
        }
    }

    /// `worker_id` ends its lease without a result. Refused unless it holds that lease.
    pub fn give_back(
        &self,
        worker_id: &str,
        shard: u64,
        attempt: u32,
        failed: bool,
        error: &str,
    ) -> Result<(), LeaseProblem> {
        let r = self.queue.lock().unwrap().give_back(shard, attempt, worker_id, failed, error);
        match &r {
            Ok(()) if failed => {
                tracing::warn!(shard, attempt, worker = %worker_id, "worker failed on the shard: {}", error.escape_debug())
            }
            Ok(()) => {}
            Err(problem) => tracing::warn!(
                shard,
                attempt,
                worker = %worker_id,
                failed,
                "return of a lease refused: {problem}"
            ),
        }
        r
    }

    /// The held-out metrics of the current weights (none without a validation shard), under
    /// `[loss]` (not a generation's λ, so that generations compare).
    fn validation_metrics(&self, w: &WeightState) -> Option<ValidationMetrics> {
        (!self.validation.is_empty()).then(|| {
            validation::validate(
                &w.evaluator,
                &self.validation,
                &self.cfg.learn.loss,
                self.cfg.learn.validation.depth,
                &self.validation_pool,
            )
        })
    }

    pub(super) fn metrics_line_locked(&self, w: &WeightState) -> Result<(), String> {
        let v = self.validation_metrics(w);
        self.write_metrics_line(w, v, serde_json::Map::new())
    }

    /// Appends a metrics line: the counters, the train loss since the last line, the
    /// generation and its η, `v`, and the fields of `extra`.
    fn write_metrics_line(
        &self,
        w: &WeightState,
        v: Option<ValidationMetrics>,
        extra: serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), String> {
        let (loss_sum, used) = std::mem::take(&mut *self.interval.lock().unwrap());
        let t = self.totals();
        let generation = self.generation();
        let mut line = serde_json::json!({
            "updates": w.version(),
            "positions": t.positions_merged,
            "train_loss": if used > 0 { Some(loss_sum / used as f64) } else { None },
            "test_records": v.map(|v| v.records),
            "test_loss": v.map(|v| v.test_loss),
            "move_agreement": v.filter(|v| v.moves_compared > 0).map(|v| v.move_agreement),
            "mean_abs_eval_diff": v.map(|v| v.mean_abs_eval_diff),
            "generation": generation,
            "eta": self.step_sizes(generation).eta,
            "elapsed_s": self.started.elapsed().as_secs_f64(),
            "cpu_hours": t.training_cpu_seconds() / 3600.0,
            "match_cpu_hours": t.match_cpu_seconds / 3600.0,
        });
        line.as_object_mut().expect("a JSON object").extend(extra);
        self.append_metrics_line(&line)
    }

    /// Appends one JSON line to `metrics.jsonl`.
    fn append_metrics_line(&self, line: &serde_json::Value) -> Result<(), String> {
        let path = self.run_dir.join(METRICS_FILE);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(f, "{line}").map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(())
    }

    /// A metrics line now (start and end of a run).
    pub fn metrics_line(&self) -> Result<(), String> {
        let w = self.weights.lock().unwrap();
        self.metrics_line_locked(&w)
    }

    /// Every training shard is merged or given up (or newbob converged) and the last
    /// generation's end step is done; match shards may still be open.
    pub fn training_done(&self) -> bool {
        let q = self.queue.lock().unwrap();
        (q.closed || !q.shards.iter().any(|s| !s.spec.is_match() && q.outstanding(s)))
            && !q.generation_due()
            && !self.generation_checkpoint_pending.load(Ordering::SeqCst)
    }

    /// Without `[elo]` always; with it, once the checkpoint at the end of training (which
    /// may queue the last match shards) is written.
    fn matches_settled(&self) -> bool {
        self.cfg.elo.is_none() || self.end_of_training_checkpointed.load(Ordering::SeqCst)
    }

    /// Whether the run loop still has to write the checkpoint at the end of training.
    pub fn end_of_training_checkpoint_due(&self) -> bool {
        !self.matches_settled() && self.training_done()
    }

    /// Writes the checkpoint at the end of training (queueing its match shards if `[elo]`
    /// makes it due); from then on workers may be told the run is finished.
    pub fn checkpoint_end_of_training(&self) -> Result<PathBuf, crate::checkpoint::CheckpointError> {
        let dir = self.checkpoint()?;
        self.end_of_training_checkpointed.store(true, Ordering::SeqCst);
        Ok(dir)
    }

    /// Every shard (match shards too) is merged or given up (or newbob converged), and the
    /// last generation's end step is done (and, with `[elo]`, the matches of the checkpoint
    /// at the end of training are queued).
    pub fn finished(&self) -> bool {
        if !self.matches_settled() {
            return false;
        }
        let q = self.queue.lock().unwrap();
        q.finished() && !q.generation_due() && !self.generation_checkpoint_pending.load(Ordering::SeqCst)
    }

    /// Exports the current weights as KPPT files (and the pattern file) to `<run_dir>/eval`.
    pub fn export(&self) -> Result<(PathBuf, u64), String> {
        let w = self.weights.lock().unwrap();
        let dir = self.run_dir.join("eval");
        let set = self.pattern_set()?;
        let pat_out = dir.join("patterns.kpat");
        let c = engine_core::learn::export::export_kppt(
            &w.file,
            &dir,
            set.as_ref().map(|s| (s, pat_out.as_path())),
        )?;
        Ok((dir, c.total()))
    }

    fn pattern_set(&self) -> Result<Option<PatternSet>, String> {
        match &self.cfg.learn.init.patterns {
            Some(p) => Ok(Some(engine_core::eval::patterns::file::load(p).map_err(|e| e.to_string())?)),
            None => Ok(None),
        }
    }

    pub fn flush(&self) -> Result<(), String> {
        self.weights.lock().unwrap().file.flush().map_err(|e| e.to_string())
    }
}
