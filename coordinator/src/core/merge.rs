//! Merging a push exactly once, in four steps under the weights lock (which makes merges
//! one at a time): decide (is it the live lease's push, a duplicate, stale; do its counts
//! fit the shard), journal (the kept teacher records, then the journal entry, fsynced: from
//! here the merge counts even after a crash), apply (weights, queue, totals, version: the
//! one step journal replay shares), and after the merge (the generation's end if this merge
//! completed it, the checkpoint and metrics line due; their failures are the coordinator's
//! own, not the worker's).

use super::{Core, MAX_SHARD_POSITIONS};
use crate::config::StalePolicy;
use crate::error::PushError;
use crate::fault::FaultPoint;
use crate::fsutil::IoError;
use crate::journal::{self, JournalMeta};
use crate::queue::{PushDecision, ShardSpec};
use crate::weights_state::WeightState;
use engine_core::teacher::{PackedSfenValue, ShardSettings, ShardWriter};
use keima_proto::v1;
use keima_proto::v1::push_reply::Outcome;
use std::time::Instant;

/// A verified upload (checksum, structure, values), ready to be checked against its lease
/// and merged.
pub struct ReceivedPush {
    pub worker_id: String,
    pub shard_id: u64,
    pub attempt: u32,
    pub computed_on: u64,
    pub gradient: Vec<(u32, [f32; 2])>,
    /// Raw PackedSfenValue records (`PackedSfenValue::SIZE` bytes each).
    pub records: Vec<u8>,
    pub stats: v1::ShardStats,
    /// A match shard's result (`None` for training shards).
    pub result: Option<v1::MatchResult>,
    pub wire_bytes: u64,
    /// When the upload was complete: the lease must have been live then.
    pub received_ms: u64,
}

/// What the decision step makes of a push.
enum Decision {
    /// Merge it as version `seq`, its gradient scaled by `factor` (1 unless down-weighted).
    Merge { seq: u64, staleness: u64, factor: f64 },
    /// Answer without merging: a duplicate, or a stale push refused.
    Answer(v1::PushReply),
    /// A match shard's result from its live lease: record it (`matches.rs`).
    Match(ShardSpec),
}

fn unmerged(outcome: Outcome, weights_version: u64) -> v1::PushReply {
    v1::PushReply { outcome: outcome as i32, weights_version, merge_seq: 0, weight_factor: 0.0 }
}

impl Core {
    /// Merges a verified push exactly once, if it comes from the worker holding the
    /// shard's live lease and its counts fit the shard. Blocking (CPU and disk): call from
    /// a blocking thread.
    ///
    /// Errors before the merge is journaled leave nothing applied. A failure after it was
    /// applied (checkpoint, metrics line) is the coordinator's own: logged and counted as a
    /// server fault, and the push is still answered `MERGED`.
    pub fn merge_push(&self, mut p: ReceivedPush) -> Result<v1::PushReply, PushError> {
        let started = Instant::now();
        let mut w = self.weights.lock().unwrap();
        let lock_wait_ms = started.elapsed().as_secs_f64() * 1e3;
        if self.stopping() {
            // Checked under the weights lock, which the stop's checkpoint takes too: a merge
            // after that checkpoint would be journaled but not in it.
            return Err(PushError::Stopping);
        }
        self.totals.lock().unwrap().bytes_in += p.wire_bytes;
        let (seq, staleness, factor) = match self.decide_merge(&w, &mut p)? {
            Decision::Merge { seq, staleness, factor } => (seq, staleness, factor),
            Decision::Answer(reply) => return Ok(reply),
            Decision::Match(spec) => return self.record_match(&w, &p, &spec),
        };
        let t_journal = Instant::now();
        let meta = self.journal_merge(seq, factor, &p)?;
        let journal_ms = t_journal.elapsed().as_secs_f64() * 1e3;
        self.apply_merge(&mut w, &meta, &p.gradient);
        let merge_ms = t_journal.elapsed().as_secs_f64() * 1e3 - journal_ms;
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
        self.after_merge(&mut w, seq, &p.stats);
        Ok(v1::PushReply {
            outcome: Outcome::Merged as i32,
            weights_version: seq,
            merge_seq: seq,
            weight_factor: factor,
        })
    }

    /// Decide: refused unless `p` is the live lease's push and its counts fit the shard; a
    /// duplicate or a stale push (under `stale_policy = "reject"`) is answered and counted;
    /// a stale push under `"downweight"` has its gradient scaled here.
    fn decide_merge(&self, w: &WeightState, p: &mut ReceivedPush) -> Result<Decision, PushError> {
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
                    worker: p.worker_id.clone(),
                    problem,
                });
            }
            PushDecision::Duplicate => {
                self.totals.lock().unwrap().duplicate_pushes += 1;
                return Ok(Decision::Answer(unmerged(Outcome::Duplicate, w.version())));
            }
            PushDecision::Merge => {}
        }
        let spec = spec.expect("a leased shard exists");
        if spec.is_match() {
            return Ok(Decision::Match(spec));
        }
        if p.result.is_some() {
            return Err(PushError::Invalid(format!(
                "shard {}: a match result pushed for a training shard",
                p.shard_id
            )));
        }
        self.check_counts(&spec, p)?;
        let version = w.version();
        if p.computed_on > version {
            return Err(PushError::FutureVersion { claimed: p.computed_on, current: version });
        }
        if p.computed_on < self.generations.lock().unwrap().rolled_back_at {
            // Computed on weights a newbob rollback undid: done again on the current ones.
            // The barrier leaves no lease live across a rollback, so only a worker that
            // computed on older weights than its lease named gets here.
            self.queue.lock().unwrap().requeue(p.shard_id, p.attempt);
            self.count_stale(p);
            return Ok(Decision::Answer(unmerged(Outcome::Stale, version)));
        }
        let staleness = version - p.computed_on;
        let c = &self.cfg.coordinator;
        let mut factor = 1.0f64;
        if staleness > c.max_staleness {
            match c.stale_policy {
                StalePolicy::Reject => {
                    self.queue.lock().unwrap().requeue(p.shard_id, p.attempt);
                    self.count_stale(p);
                    return Ok(Decision::Answer(unmerged(Outcome::Stale, version)));
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
        Ok(Decision::Merge { seq: version + 1, staleness, factor })
    }

    /// Counts a push answered stale: its CPU was spent on training, though nothing of it
    /// is merged (the shard is done again, and that attempt's CPU counts too).
    fn count_stale(&self, p: &ReceivedPush) {
        let mut t = self.totals.lock().unwrap();
        t.stale_pushes += 1;
        t.train_cpu_seconds += p.stats.cpu_seconds;
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

    /// Journal: keeps the returned teacher records (if the run keeps them), then writes the
    /// merge to the journal, fsynced. Once it returns, the merge counts: a crash from here
    /// on is repaired by journal replay.
    fn journal_merge(&self, seq: u64, factor: f64, p: &ReceivedPush) -> Result<JournalMeta, PushError> {
        let mut records_kept = 0;
        if self.cfg.coordinator.keep_teacher_records && !p.records.is_empty() {
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
            cpu_seconds: p.stats.cpu_seconds,
        };
        journal::write(&self.run_dir, &meta, &p.gradient)?;
        self.faults.hit(FaultPoint::MergeJournaled, seq)?;
        Ok(meta)
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
            let psv = PackedSfenValue::from_bytes(rec.try_into().expect("chunks of PackedSfenValue::SIZE"));
            wr.write(&psv).map_err(IoError::at("write", &path))?;
        }
        let m = wr.finish().map_err(IoError::at("finish", &path))?;
        Ok(m.records)
    }

    /// Apply: a journaled merge into the weights (with the step sizes of the shard's
    /// generation), queue, totals and version. The live merge and journal replay both go
    /// through here.
    pub(super) fn apply_merge(&self, w: &mut WeightState, meta: &JournalMeta, grads: &[(u32, [f32; 2])]) {
        let generation = self.queue.lock().unwrap().get(meta.shard_id).map_or(0, |s| s.generation);
        w.merge(grads, meta.used, &self.step_sizes(generation));
        self.version.store(w.version(), std::sync::atomic::Ordering::SeqCst);
        self.queue.lock().unwrap().mark_done(meta.shard_id, meta.seq, meta.positions);
        self.totals.lock().unwrap().add_merge(meta);
    }

    /// After the merge (applied and journaled): counts it for the next metrics line, ends
    /// the generation if this merge completed it (which writes a checkpoint and a metrics
    /// line of its own), else writes the checkpoint and metrics line due at `seq`. What
    /// fails here is the coordinator's, not the worker's: logged and counted, the merge
    /// stands (a generation's end is tried again: `Core::end_generation_if_due`).
    fn after_merge(&self, w: &mut WeightState, seq: u64, stats: &v1::ShardStats) {
        {
            let mut i = self.interval.lock().unwrap();
            i.0 += stats.loss_sum;
            i.1 += stats.used;
        }
        match self.end_generation_locked(w) {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => {
                self.server_fault_after_merge(seq, &format!("ending the generation: {e}"));
                return;
            }
        }
        let c = &self.cfg.coordinator;
        if c.checkpoint_every > 0
            && seq.is_multiple_of(c.checkpoint_every)
            && let Err(e) = self.checkpoint_locked(w)
        {
            self.server_fault_after_merge(seq, &e.to_string());
        }
        if c.validate_every > 0
            && seq.is_multiple_of(c.validate_every)
            && let Err(e) = self.metrics_line_locked(w)
        {
            self.server_fault_after_merge(seq, &e);
        }
    }

    pub(super) fn server_fault_after_merge(&self, seq: u64, error: &str) {
        self.totals.lock().unwrap().server_faults += 1;
        tracing::error!(
            seq,
            "coordinator fault after merge {seq} was applied (the merge is journaled and counts; the run goes \
             on, the next checkpoint retries): {error}"
        );
    }
}
