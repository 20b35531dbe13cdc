//! The end of a generation, once all its shards are merged (or given up): with `[newbob]`,
//! the held-out loss decides whether these weights become the best (kept as a checkpoint
//! under `<run_dir>/best/`) or the run goes back to the best ones with η decayed; then the
//! next generation opens, and a checkpoint records it before any of its shards is leased.
//!
//! Crash safety. Everything the step does follows from the weights and the state at the
//! generation's last merge, and validation is deterministic, so the step is repeated, with
//! the same outcome, whenever a crash came before its checkpoint was complete: a resumed
//! run replays the journal to the generation's last merge and ends the generation again
//! (`open.rs`). Nothing of the next generation is merged before that checkpoint exists
//! (leases wait for it), so the journal never holds a merge made after an end step that a
//! checkpoint does not record, except when that checkpoint is lost; replay then ends the
//! generation again between the entries of the two generations.
//!
//! A rollback copies the best checkpoint's weights file (weights and AdaGrad state) to
//! `weights.kw` and gives it the next version, so that versions only grow: workers see a
//! new version and pull a full copy, the journal's sequence goes on, and a gradient
//! computed before the rollback is known by its version (`merge.rs` answers it stale and
//! the shard is done again).

use super::Core;
use crate::checkpoint::{self, CheckpointState};
use crate::generations::GenerationState;
use crate::weights_state::WeightState;
use engine_core::learn::checkpoint as ckpt;
use engine_core::learn::files::WEIGHTS_FILE;
use engine_core::learn::newbob::{self, Verdict};
use engine_core::learn::weights::WeightFile;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

impl Core {
    /// `<run_dir>/best`: the best weights newbob accepted, as a checkpoint directory tree.
    pub fn best_dir(&self) -> PathBuf {
        self.run_dir.join("best")
    }

    /// Whether a generation's end step waits to be done (or its checkpoint written).
    pub fn generation_end_waiting(&self) -> bool {
        self.generation_checkpoint_pending.load(Ordering::SeqCst)
            || self.queue.lock().unwrap().generation_due()
    }

    /// Ends the open generation if it is complete (or writes its end checkpoint if that
    /// failed before). The run loop calls this to retry an end step that failed.
    pub fn end_generation_if_due(&self) -> Result<bool, String> {
        let mut w = self.weights.lock().unwrap();
        self.end_generation_locked(&mut w)
    }

    /// The end step, under the weights lock. Returns whether a generation of a schedule
    /// ended (a metrics line and a checkpoint were written); without a schedule the one
    /// generation's end only closes the queue's last generation.
    pub(super) fn end_generation_locked(&self, w: &mut WeightState) -> Result<bool, String> {
        if self.generation_checkpoint_pending.load(Ordering::SeqCst) {
            self.checkpoint_locked(w).map_err(|e| e.to_string())?;
            self.generation_checkpoint_pending.store(false, Ordering::SeqCst);
            return Ok(true);
        }
        let g = {
            let q = self.queue.lock().unwrap();
            if !q.generation_due() {
                return Ok(false);
            }
            q.open_generation
        };
        if self.cfg.generation.is_empty() {
            self.queue.lock().unwrap().open_next_generation();
            return Ok(false);
        }
        let eta = self.step_sizes(g).eta;
        let v = self.validation_metrics(w);
        let mut line = Map::new();
        line.insert("generation_end".into(), json!(true));
        line.insert("eta".into(), json!(eta));
        let mut converged = false;
        if let Some(cfg) = &self.cfg.newbob {
            let loss = v.ok_or("newbob without validation records")?.test_loss;
            let before = self.generations.lock().unwrap().clone();
            let d = newbob::decide(cfg, &before.newbob, loss);
            let mut after = GenerationState { newbob: d.state, ..before.clone() };
            match d.verdict {
                Verdict::Accepted => {
                    self.keep_best(w)?;
                    after.best_version = Some(w.version());
                }
                Verdict::RolledBack => {
                    let best = before.best_version.ok_or("newbob rollback without best weights")?;
                    self.roll_back(w, best)?;
                    after.rolled_back_at = w.version();
                }
            }
            converged = d.converged;
            line.extend(newbob_fields(&after, d.verdict, converged));
            *self.generations.lock().unwrap() = after;
            tracing::info!(
                generation = g,
                loss,
                verdict = ?d.verdict,
                eta_scale = d.state.eta_scale,
                converged,
                "generation ended"
            );
        }
        if let Err(e) = self.write_metrics_line(w, v, line) {
            self.server_fault_after_merge(w.version(), &format!("metrics line of generation {g}'s end: {e}"));
        }
        {
            let mut q = self.queue.lock().unwrap();
            q.open_next_generation();
            if converged {
                q.close();
            }
        }
        self.generation_checkpoint_pending.store(true, Ordering::SeqCst);
        self.checkpoint_locked(w).map_err(|e| e.to_string())?;
        self.generation_checkpoint_pending.store(false, Ordering::SeqCst);
        Ok(true)
    }

    /// Keeps the current weights as the best: a checkpoint under `best/` (the previous best
    /// goes once it is complete).
    fn keep_best(&self, w: &mut WeightState) -> Result<(), String> {
        let state = self.checkpoint_state(w);
        checkpoint::write(&self.best_dir(), &mut w.file, state, 1, &self.faults)
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// Replaces the weights (and AdaGrad state) with the best checkpoint's, as the next
    /// version. Everything that can fail comes before the copy is renamed over
    /// `weights.kw`; a crash before the end step's checkpoint leaves nothing that counts (a
    /// resume copies a checkpoint's weights to `weights.kw`).
    fn roll_back(&self, w: &mut WeightState, best_version: u64) -> Result<(), String> {
        let dir = checkpoint::dir(&self.best_dir(), best_version);
        let (_, mut best) = ckpt::load::<CheckpointState>(&dir).map_err(|e| format!("best weights: {e}"))?;
        let tmp = self.run_dir.join(format!("{WEIGHTS_FILE}.rollback"));
        let restored = (|| {
            best.copy_sparse(&tmp).map_err(|e| e.to_string())?;
            let mut file = WeightFile::open(&tmp, false).map_err(|e| e.to_string())?;
            // Versions only grow; the examples seen still count.
            file.header.updates = w.version() + 1;
            file.header.examples = w.file.header.examples;
            file.write_header();
            // Temp file complete on disk before it replaces `weights.kw`.
            file.flush().map_err(|e| e.to_string())?;
            let mut restored = WeightState::new(
                file,
                self.pattern_set()?.as_ref(),
                self.cfg.coordinator.delta_versions,
                self.cfg.fold_every(),
            )?;
            restored.file.rename(&self.run_dir.join(WEIGHTS_FILE)).map_err(|e| e.to_string())?;
            Ok::<_, String>(restored)
        })();
        let restored = restored.inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })?;
        *w = restored;
        self.version.store(w.version(), Ordering::SeqCst);
        tracing::warn!(best_version, version = w.version(), "newbob: weights rolled back to the best");
        Ok(())
    }
}

/// The metrics fields of a newbob decision.
fn newbob_fields(after: &GenerationState, verdict: Verdict, converged: bool) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("newbob".into(), json!(verdict));
    m.insert("rollback".into(), json!(verdict == Verdict::RolledBack));
    m.insert("best_test_loss".into(), json!(after.newbob.best_loss));
    m.insert("best_version".into(), json!(after.best_version));
    m.insert("eta_scale".into(), json!(after.newbob.eta_scale));
    m.insert("decays".into(), json!(after.newbob.decays));
    m.insert("converged".into(), json!(converged));
    m
}
