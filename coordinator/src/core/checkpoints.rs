//! Checkpoints of the run: the weights, queue, totals and generation state written together
//! (`checkpoint.rs` does the writing), the journal pruned to what every kept checkpoint
//! covers.

use super::{Core, now_ms};
use crate::checkpoint::{self, CheckpointError, CheckpointState};
use crate::fault::FaultPoint;
use crate::journal;
use crate::weights_state::WeightState;
use std::path::PathBuf;

impl Core {
    pub(super) fn checkpoint_state(&self, w: &WeightState) -> CheckpointState {
        CheckpointState {
            format: checkpoint::FORMAT,
            run_id: self.run_id.clone(),
            weights_version: w.version(),
            weights_checksum: 0,
            queue: self.queue.lock().unwrap().clone(),
            totals: self.totals(),
            generations: self.generations.lock().unwrap().clone(),
            elo: self.elo.lock().unwrap().clone(),
            config: self.cfg.clone(),
            created_unix: now_ms() / 1000,
        }
    }

    pub(super) fn checkpoint_locked(&self, w: &mut WeightState) -> Result<PathBuf, CheckpointError> {
        // A checkpoint `[elo]` matches holds its match shards.
        self.queue_matches_if_due(w)?;
        let version = w.version();
        let name = checkpoint::dir(&self.run_dir, version);
        let mut queue = self.queue.lock().unwrap().clone();
        queue.release_all_leases();
        let totals = self.totals.lock().unwrap().clone();
        let generations = self.generations.lock().unwrap().clone();
        let unchanged = (version, queue, totals, generations);
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
}
