//! The coordinator's state and its operations, without networking: build the shard queue
//! from the config, lease, heartbeat, give back, merge a push exactly once (journal first),
//! checkpoint, resume, export. The gRPC service (`service.rs`) is a thin layer over this.

use crate::checkpoint::{self, CheckpointError, CheckpointState, Totals};
use crate::config::{StalePolicy, TrainConfig};
use crate::error::PushError;
use crate::fault::{FaultPoint, Faults};
use crate::fsutil::IoError;
use crate::journal::{self, JournalMeta};
use crate::queue::{LeaseDecision, LeaseProblem, PushDecision, Queue, ShardSpec};
use crate::specs::build_specs;
use crate::weights_state::WeightState;
use engine_core::eval::patterns::PatternSet;
use engine_core::learn::checkpoint as ckpt;
use engine_core::learn::files::{METRICS_FILE, WEIGHTS_FILE};
use engine_core::learn::init::{new_run_weights_path, pattern_hash, start_weights};
use engine_core::learn::validation::{self, ValidationMetrics};
use engine_core::learn::weights::{LAYOUT_KPPT_TRIANGLE, WeightFile};
use engine_core::teacher::{PackedSfenValue, ShardSettings, ShardWriter, TeacherRecord};
use keima_proto::v1;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Positions one shard may claim when nothing tighter is known (its records are not sent
/// back): far above any real shard, and low enough that no sum of them overflows.
pub const MAX_SHARD_POSITIONS: u64 = 1 << 32;

/// A verified upload (checksum, structure, values), ready to be checked against its lease
/// and merged.
pub struct ReceivedPush {
    pub worker_id: String,
    pub shard_id: u64,
    pub attempt: u32,
    pub computed_on: u64,
    pub gradient: Vec<(u32, [f32; 2])>,
    /// Raw 40-byte PackedSfenValue records.
    pub records: Vec<u8>,
    pub stats: v1::ShardStats,
    pub wire_bytes: u64,
    /// When the upload was complete: the lease must have been live then.
    pub received_ms: u64,
}

#[derive(Clone, Debug)]
pub struct WorkerInfo {
    pub name: String,
    pub threads: u32,
    pub last_seen_ms: u64,
}

#[derive(Clone, Debug, Default)]
pub struct LatencyLog {
    pub push_ms: Vec<f64>,
}

pub struct Core {
    pub cfg: TrainConfig,
    pub run_dir: PathBuf,
    pub run_id: String,
    pub layout: v1::Layout,
    pub pattern_file: Vec<u8>,
    pub queue: Mutex<Queue>,
    pub weights: Mutex<WeightState>,
    pub totals: Mutex<Totals>,
    pub workers: Mutex<HashMap<String, WorkerInfo>>,
    pub version: AtomicU64,
    pub started: Instant,
    pub stop_requested: AtomicBool,
    next_worker: AtomicU64,
    validation: Vec<TeacherRecord>,
    /// One thread for validation searches (built once, not per metrics line).
    validation_pool: rayon::ThreadPool,
    pub last_validation: Mutex<Option<ValidationMetrics>>,
    /// What the newest checkpoint written by this process holds (version, queue without
    /// leases, totals): an unchanged state is not written again.
    last_checkpoint: Mutex<Option<(u64, Queue, Totals)>>,
    /// Loss and positions since the last metrics line.
    interval: Mutex<(f64, u64)>,
    /// Crash points armed by tests (nothing in a build without `fault-injection`).
    pub faults: Faults,
}

fn pattern_bytes(cfg: &TrainConfig) -> Result<(Option<PatternSet>, Vec<u8>), String> {
    match &cfg.learn.init.patterns {
        None => Ok((None, Vec::new())),
        Some(p) => {
            let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let set = engine_core::eval::patterns::file::load(p).map_err(|e| e.to_string())?;
            Ok((Some(set), bytes))
        }
    }
}

fn new_run_id() -> String {
    format!("{:x}-{:x}", now_ms(), std::process::id())
}

impl Core {
    /// A new run in `cfg.run_dir` (refuses a directory that already holds weights).
    pub fn create(cfg: TrainConfig) -> Result<Core, String> {
        cfg.check().map_err(|e| e.to_string())?;
        let wpath = new_run_weights_path(&cfg.run_dir, "keima train --resume", "run_dir")?;
        let specs = build_specs(&cfg)?;
        let (patterns, pattern_file) = pattern_bytes(&cfg)?;
        let file = start_weights(&wpath, &cfg.learn.init, patterns.as_ref())?;
        let queue = Queue::new(specs, cfg.deterministic, cfg.coordinator.max_attempts);
        let core = Self::assemble(cfg, file, patterns, pattern_file, queue, Totals::default(), new_run_id())
            .inspect_err(|_| {
                // Leave no half-made run behind: a retry must not be told to resume.
                let _ = std::fs::remove_file(&wpath);
            })?;
        std::fs::remove_dir_all(journal::dir(&core.run_dir)).ok();
        checkpoint::recover(&core.run_dir).map_err(|e| e.to_string())?;
        // A checkpoint at version 0, so a crash before the first regular checkpoint can
        // resume from it plus the journal (cheap: the weight file is still mostly holes).
        core.checkpoint().map_err(|e| e.to_string())?;
        Ok(core)
    }

    /// Continues a run from its newest valid checkpoint plus the journal after it.
    /// Returns the core and warnings (skipped checkpoints).
    pub fn resume(path: &Path, listen: Option<String>) -> Result<(Core, Vec<String>), String> {
        // A run directory is repaired first (a checkpoint a crash interrupted is finished
        // or undone), so the newest complete checkpoint is found.
        let found = checkpoint::find::<CheckpointState>(path).map_err(|e| match e {
            ckpt::CheckpointError::NotFound { .. } | ckpt::CheckpointError::NoneValid { .. } => {
                format!("{e}; start a new run with `keima train --config`")
            }
            e => e.to_string(),
        })?;
        let (dir, state, mut ckw) = (found.dir, found.state, found.weights);
        let mut warnings = found.repairs;
        warnings.extend(found.skipped.into_iter().map(|s| format!("skipping checkpoint: {s}")));
        let mut cfg = state.config.clone();
        if let Some(l) = listen {
            cfg.coordinator.listen = l;
        }
        let run_dir = cfg.run_dir.clone();
        let wpath = run_dir.join(WEIGHTS_FILE);
        ckw.copy_sparse(&wpath).map_err(|e| e.to_string())?;
        drop(ckw);
        let file = WeightFile::open(&wpath, false).map_err(|e| e.to_string())?;
        let (patterns, pattern_file) = pattern_bytes(&cfg)?;
        let mut queue = state.queue.clone();
        queue.release_all_leases();
        warnings.extend(checkpoint::recover(&run_dir).map_err(|e| e.to_string())?);
        let unfinished = journal::remove_unfinished(&run_dir).map_err(|e| e.to_string())?;
        if unfinished > 0 {
            warnings.push(format!("removed {unfinished} unfinished journal entries (never acknowledged)"));
        }
        let core =
            Self::assemble(cfg, file, patterns, pattern_file, queue, state.totals.clone(), state.run_id)?;
        let replayed = core.replay_journal()?;
        warnings.push(format!(
            "resumed from {} (version {}), replayed {replayed} journal merges",
            dir.display(),
            state.weights_version
        ));
        Ok((core, warnings))
    }

    fn assemble(
        cfg: TrainConfig,
        file: WeightFile,
        patterns: Option<PatternSet>,
        pattern_file: Vec<u8>,
        queue: Queue,
        totals: Totals,
        run_id: String,
    ) -> Result<Core, String> {
        if cfg.learn.check_disk_space {
            file.check_disk_space().map_err(|e| e.to_string())?;
        }
        let layout = v1::Layout {
            layout_id: LAYOUT_KPPT_TRIANGLE,
            fe_end: engine_core::eval::bona_piece::FE_END as u32,
            // Workers address the raw features; factor parameters stay here.
            features: file.header.param_layout().raw_features() as u64,
            patterns: file.header.patterns,
            pattern_hash: patterns.as_ref().map_or(0, pattern_hash),
        };
        let ws =
            WeightState::new(file, patterns.as_ref(), cfg.learn.adagrad, cfg.coordinator.delta_versions)?;
        let validation = validation::load_records(&cfg.learn.validation)?;
        Ok(Core {
            run_dir: cfg.run_dir.clone(),
            version: AtomicU64::new(ws.version()),
            cfg,
            run_id,
            layout,
            pattern_file,
            queue: Mutex::new(queue),
            weights: Mutex::new(ws),
            totals: Mutex::new(totals),
            workers: Mutex::new(HashMap::new()),
            started: Instant::now(),
            stop_requested: AtomicBool::new(false),
            next_worker: AtomicU64::new(1),
            validation,
            validation_pool: rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .map_err(|e| e.to_string())?,
            last_validation: Mutex::new(None),
            last_checkpoint: Mutex::new(None),
            interval: Mutex::new((0.0, 0)),
            faults: Faults::from_env()?,
        })
    }

    /// Applies journal entries newer than the loaded weights, in order.
    fn replay_journal(&self) -> Result<u64, String> {
        let mut w = self.weights.lock().unwrap();
        let mut n = 0;
        for (seq, path) in journal::list(&self.run_dir) {
            if seq <= w.version() {
                continue;
            }
            if seq != w.version() + 1 {
                return Err(format!(
                    "{}: journal gap: the weights are at version {} but the next entry is {seq}",
                    path.display(),
                    w.version()
                ));
            }
            let (meta, grads) = journal::read(&path, self.layout.features)?;
            self.apply_merge(&mut w, &meta, &grads);
            n += 1;
        }
        Ok(n)
    }

    /// Applies a journaled merge: weights, queue, totals, version. The live merge and
    /// journal replay both go through here.
    fn apply_merge(&self, w: &mut WeightState, meta: &JournalMeta, grads: &[(u32, [f32; 2])]) {
        w.merge(grads, meta.used);
        self.version.store(w.version(), Ordering::SeqCst);
        self.queue.lock().unwrap().mark_done(meta.shard_id, meta.seq, meta.positions);
        self.totals.lock().unwrap().add_merge(meta);
    }

    pub fn lease_ms(&self) -> u64 {
        self.cfg.coordinator.lease_seconds * 1000
    }

    pub fn register(&self, name: &str, threads: u32) -> String {
        let n = self.next_worker.fetch_add(1, Ordering::SeqCst);
        let clean: String =
            name.chars().filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c)).take(64).collect();
        let id = format!("w{n}-{clean}");
        self.workers
            .lock()
            .unwrap()
            .insert(id.clone(), WorkerInfo { name: name.to_string(), threads, last_seen_ms: now_ms() });
        id
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

    pub fn workers_alive(&self) -> u64 {
        let limit =
            now_ms().saturating_sub(self.lease_ms().max(3 * self.cfg.coordinator.heartbeat_ms as u64));
        self.workers.lock().unwrap().values().filter(|w| w.last_seen_ms >= limit).count() as u64
    }

    /// A lease for `worker_id`, as the wire message.
    pub fn lease(&self, worker_id: &str) -> v1::LeaseReply {
        if self.stop_requested.load(Ordering::SeqCst) {
            return v1::LeaseReply {
                state: v1::lease_reply::State::Wait as i32,
                lease: None,
                retry_ms: 1000,
            };
        }
        let mut q = self.queue.lock().unwrap();
        match q.lease(worker_id, now_ms(), self.lease_ms()) {
            LeaseDecision::Leased { shard, attempt, deadline_ms } => {
                let spec = q.get(shard).expect("leased shard exists").spec.clone();
                drop(q);
                v1::LeaseReply {
                    state: v1::lease_reply::State::Leased as i32,
                    lease: Some(self.lease_message(shard, attempt, deadline_ms, spec)),
                    retry_ms: 0,
                }
            }
            LeaseDecision::Wait => {
                v1::LeaseReply { state: v1::lease_reply::State::Wait as i32, lease: None, retry_ms: 500 }
            }
            LeaseDecision::Finished => {
                v1::LeaseReply { state: v1::lease_reply::State::Finished as i32, lease: None, retry_ms: 0 }
            }
        }
    }

    fn lease_message(&self, shard: u64, attempt: u32, deadline_ms: u64, spec: ShardSpec) -> v1::Lease {
        v1::Lease {
            shard_id: shard,
            attempt,
            deadline_unix_ms: deadline_ms,
            weights_version: self.version.load(Ordering::SeqCst),
            kind: Some(spec.into()),
            loss: Some(self.cfg.learn.loss.into()),
            return_records: self.cfg.coordinator.keep_teacher_records,
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

    /// Checks a push's claimed counts against what its shard can yield.
    fn check_counts(&self, spec: &ShardSpec, p: &ReceivedPush) -> Result<(), PushError> {
        let records = (p.records.len() / PackedSfenValue::SIZE) as u64;
        let positions = p.stats.positions;
        let returns_records = self.cfg.coordinator.keep_teacher_records;
        match spec {
            ShardSpec::Teacher { count, .. } => {
                if records > 0 {
                    return Err(PushError::Invalid(format!(
                        "shard {}: {records} teacher records sent back for a shard of existing records",
                        p.shard_id
                    )));
                }
                if positions > *count {
                    return Err(PushError::Invalid(format!(
                        "shard {}: {positions} positions claimed from a shard of {count} records",
                        p.shard_id
                    )));
                }
            }
            _ if !returns_records && records > 0 => {
                return Err(PushError::Invalid(format!(
                    "shard {}: {records} teacher records sent back, the lease asked for none",
                    p.shard_id
                )));
            }
            _ if returns_records && positions > records => {
                return Err(PushError::Invalid(format!(
                    "shard {}: {positions} positions claimed but {records} teacher records sent back",
                    p.shard_id
                )));
            }
            _ => {}
        }
        if positions > MAX_SHARD_POSITIONS {
            return Err(PushError::Invalid(format!(
                "shard {}: {positions} positions claimed, more than any shard holds ({MAX_SHARD_POSITIONS})",
                p.shard_id
            )));
        }
        Ok(())
    }

    /// Merges a verified push exactly once, if it comes from the worker holding the
    /// shard's live lease and its counts fit the shard. Blocking (CPU and disk): call from
    /// a blocking thread.
    ///
    /// Errors before the merge is journaled leave nothing applied. A failure after it was
    /// applied (checkpoint, metrics line) is the coordinator's own: logged and counted as a
    /// server fault, and the push is still answered `MERGED`.
    pub fn merge_push(&self, mut p: ReceivedPush) -> Result<v1::PushReply, PushError> {
        use v1::push_reply::Outcome;
        let started = Instant::now();
        let mut w = self.weights.lock().unwrap();
        let lock_wait_ms = started.elapsed().as_secs_f64() * 1e3;
        self.totals.lock().unwrap().bytes_in += p.wire_bytes;
        let (decision, spec) = {
            let q = self.queue.lock().unwrap();
            let decision = q.push_decision(p.shard_id, p.attempt, &p.worker_id, p.received_ms);
            (decision, q.get(p.shard_id).map(|s| s.spec.clone()))
        };
        match decision {
            PushDecision::Refused(problem) => {
                return Err(PushError::NoLease {
                    shard: p.shard_id,
                    attempt: p.attempt,
                    worker: p.worker_id,
                    problem,
                });
            }
            PushDecision::Duplicate => {
                self.totals.lock().unwrap().duplicate_pushes += 1;
                return Ok(v1::PushReply {
                    outcome: Outcome::Duplicate as i32,
                    weights_version: w.version(),
                    merge_seq: 0,
                    weight_factor: 0.0,
                });
            }
            PushDecision::Merge => {}
        }
        let spec = spec.expect("a leased shard exists");
        self.check_counts(&spec, &p)?;
        let version = w.version();
        if p.computed_on > version {
            return Err(PushError::FutureVersion { claimed: p.computed_on, current: version });
        }
        let staleness = version - p.computed_on;
        let c = &self.cfg.coordinator;
        let mut factor = 1.0f64;
        if staleness > c.max_staleness {
            match c.stale_policy {
                StalePolicy::Reject => {
                    self.queue.lock().unwrap().requeue(p.shard_id, p.attempt);
                    self.totals.lock().unwrap().stale_pushes += 1;
                    return Ok(v1::PushReply {
                        outcome: Outcome::Stale as i32,
                        weights_version: version,
                        merge_seq: 0,
                        weight_factor: 0.0,
                    });
                }
                StalePolicy::Downweight => {
                    factor = 1.0 / (1.0 + (staleness - c.max_staleness) as f64);
                    let f = factor as f32;
                    for g in &mut p.gradient {
                        g.1[0] *= f;
                        g.1[1] *= f;
                    }
                }
            }
        }
        let seq = version + 1;
        let mut records_kept = 0;
        if c.keep_teacher_records && !p.records.is_empty() {
            records_kept = self.keep_records(p.shard_id, &p.records)?;
        }
        let meta = JournalMeta {
            seq,
            shard_id: p.shard_id,
            attempt: p.attempt,
            worker: p.worker_id.clone(),
            computed_on: p.computed_on,
            factor,
            positions: p.stats.positions,
            used: p.stats.used,
            loss_sum: p.stats.loss_sum,
            entries: p.gradient.len() as u64,
            records_kept,
        };
        let t_journal = Instant::now();
        journal::write(&self.run_dir, &meta, &p.gradient)?;
        self.faults.hit(FaultPoint::MergeJournaled, seq)?;
        let journal_ms = t_journal.elapsed().as_secs_f64() * 1e3;
        self.apply_merge(&mut w, &meta, &p.gradient);
        let merge_ms = t_journal.elapsed().as_secs_f64() * 1e3 - journal_ms;
        {
            let mut i = self.interval.lock().unwrap();
            i.0 += p.stats.loss_sum;
            i.1 += p.stats.used;
        }
        tracing::debug!(
            shard = p.shard_id,
            seq,
            staleness,
            lock_wait_ms,
            journal_ms,
            merge_ms,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "merged"
        );
        // The merge is applied and journaled: what fails from here on is the
        // coordinator's, not the worker's.
        if c.checkpoint_every > 0
            && seq.is_multiple_of(c.checkpoint_every)
            && let Err(e) = self.checkpoint_locked(&mut w)
        {
            self.server_fault_after_merge(seq, &e.to_string());
        }
        if c.validate_every > 0
            && seq.is_multiple_of(c.validate_every)
            && let Err(e) = self.metrics_line_locked(&w)
        {
            self.server_fault_after_merge(seq, &e);
        }
        Ok(v1::PushReply {
            outcome: Outcome::Merged as i32,
            weights_version: seq,
            merge_seq: seq,
            weight_factor: factor,
        })
    }

    fn server_fault_after_merge(&self, seq: u64, error: &str) {
        self.totals.lock().unwrap().server_faults += 1;
        tracing::error!(
            seq,
            "coordinator fault after merge {seq} was applied (the merge is journaled and counts; the run goes \
             on, the next checkpoint retries): {error}"
        );
    }

    /// Validates and stores returned teacher records as `teacher/shard-<id>.psv.zst`.
    fn keep_records(&self, shard: u64, raw: &[u8]) -> Result<u64, IoError> {
        let dir = self.run_dir.join("teacher");
        std::fs::create_dir_all(&dir).map_err(IoError::at("create directory", &dir))?;
        let path = dir.join(format!("shard-{shard:08}.psv.zst"));
        let settings = ShardSettings {
            eval_id: format!("keima-train {}", self.run_id),
            settings: serde_json::json!({ "shard": shard }),
            ..ShardSettings::default()
        };
        let mut wr = ShardWriter::create(&path, settings).map_err(IoError::at("create", &path))?;
        for rec in raw.chunks_exact(PackedSfenValue::SIZE) {
            let psv = PackedSfenValue::from_bytes(rec.try_into().expect("chunks of 40"));
            wr.write(&psv).map_err(IoError::at("write", &path))?;
        }
        let m = wr.finish().map_err(IoError::at("finish", &path))?;
        Ok(m.records)
    }

    fn checkpoint_state(&self, w: &WeightState) -> CheckpointState {
        CheckpointState {
            format: checkpoint::FORMAT,
            run_id: self.run_id.clone(),
            weights_version: w.version(),
            weights_checksum: 0,
            queue: self.queue.lock().unwrap().clone(),
            totals: self.totals.lock().unwrap().clone(),
            config: self.cfg.clone(),
            created_unix: now_ms() / 1000,
        }
    }

    fn checkpoint_locked(&self, w: &mut WeightState) -> Result<PathBuf, CheckpointError> {
        let version = w.version();
        let name = checkpoint::dir(&self.run_dir, version);
        let mut queue = self.queue.lock().unwrap().clone();
        queue.release_all_leases();
        let totals = self.totals.lock().unwrap().clone();
        let unchanged = (version, queue, totals);
        if self.last_checkpoint.lock().unwrap().as_ref() == Some(&unchanged) && name.is_dir() {
            // The same state as the last checkpoint (e.g. the final one right after a
            // regular one); leases do not count, a resume releases them.
            return Ok(name);
        }
        let state = self.checkpoint_state(w);
        let keep = self.cfg.coordinator.keep_checkpoints;
        let dir = checkpoint::write(&self.run_dir, &mut w.file, state, keep, &self.faults)?;
        // The journal goes only as far as every checkpoint kept on disk covers, so any of
        // them can resume (with keep_checkpoints = 0 nothing is pruned: all are kept).
        let oldest_kept = checkpoint::list(&self.run_dir).first().and_then(|d| checkpoint::version_of(d));
        if keep > 0
            && let Some(oldest) = oldest_kept
        {
            journal::prune(&self.run_dir, oldest.min(version))?;
        }
        self.faults.hit(FaultPoint::CheckpointJournalPruned, version)?;
        *self.last_checkpoint.lock().unwrap() = Some(unchanged);
        tracing::info!(version, "checkpoint {}", dir.display());
        Ok(dir)
    }

    /// Writes a checkpoint now (end of run, signal).
    pub fn checkpoint(&self) -> Result<PathBuf, CheckpointError> {
        let mut w = self.weights.lock().unwrap();
        self.checkpoint_locked(&mut w)
    }

    fn metrics_line_locked(&self, w: &WeightState) -> Result<(), String> {
        let v = if self.validation.is_empty() {
            None
        } else {
            Some(validation::validate(
                &w.evaluator,
                &self.validation,
                &self.cfg.learn.loss,
                self.cfg.learn.validation.depth,
                &self.validation_pool,
            ))
        };
        let (loss_sum, used) = std::mem::take(&mut *self.interval.lock().unwrap());
        let t = self.totals.lock().unwrap().clone();
        let line = serde_json::json!({
            "updates": w.version(),
            "positions": t.positions_merged,
            "train_loss": if used > 0 { Some(loss_sum / used as f64) } else { None },
            "test_records": v.map(|v| v.records),
            "test_loss": v.map(|v| v.test_loss),
            "move_agreement": v.filter(|v| v.moves_compared > 0).map(|v| v.move_agreement),
            "mean_abs_eval_diff": v.map(|v| v.mean_abs_eval_diff),
            "elapsed_s": self.started.elapsed().as_secs_f64(),
        });
        let path = self.run_dir.join(METRICS_FILE);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        writeln!(f, "{line}").map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(v) = v {
            *self.last_validation.lock().unwrap() = Some(v);
        }
        Ok(())
    }

    /// A metrics line now (start and end of a run).
    pub fn metrics_line(&self) -> Result<(), String> {
        let w = self.weights.lock().unwrap();
        self.metrics_line_locked(&w)
    }

    pub fn finished(&self) -> bool {
        self.queue.lock().unwrap().finished()
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
