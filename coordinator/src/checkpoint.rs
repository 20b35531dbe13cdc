//! Coordinator checkpoints: engine-core's checkpoint directories
//! (`checkpoints/ckpt-<version, 12 digits>/`: `weights.kw` and `state.json`, written so that
//! a crash at any moment leaves a complete one, see `engine_core::learn::checkpoint`) with
//! the coordinator's state (queue, counters, config, run id). Merges after the checkpoint
//! live in the journal (`journal.rs`).

use crate::config::TrainConfig;
use crate::elo::EloState;
use crate::fault::{FaultPoint, Faults, Injected};
use crate::fsutil::IoError;
use crate::generations::GenerationState;
use crate::journal::JournalMeta;
use crate::queue::Queue;
use engine_core::learn::checkpoint::{self as ckpt, StateError, Step};
use engine_core::learn::weights::WeightFile;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use engine_core::learn::checkpoint::{dir, find, list, recover, root, version_of};

/// The format of [`CheckpointState`] this build writes. It reads 1 (protocol 2's shard
/// specs and config keys, migrated by `legacy.rs`) and 2 (before generations: one
/// generation, no newbob) as well.
pub const FORMAT: u32 = 3;

/// Run totals that survive restarts. The merge counters (`merges` to `staleness_sum`,
/// `teacher_records_kept`, and the merged shards' share of `train_cpu_seconds`) are
/// restored exactly by journal replay; the traffic counters (`duplicate_pushes`,
/// `stale_pushes`, `rejected_pushes`, `bytes_in`, `bytes_out`, `server_faults`, the stale
/// pushes' share of `train_cpu_seconds`, `coordinator_cpu_seconds`) count what the
/// processes saw up to their last checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub merges: u64,
    pub positions_merged: u64,
    pub positions_used: u64,
    pub gradient_entries_merged: u64,
    pub loss_sum: f64,
    pub duplicate_pushes: u64,
    pub stale_pushes: u64,
    pub rejected_pushes: u64,
    pub staleness_sum: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub teacher_records_kept: u64,
    /// Coordinator-side failures (disk, internal) while handling pushes or checkpointing.
    #[serde(default)]
    pub server_faults: u64,
    /// Workers' CPU time on training shards: merged ones and those answered stale (that
    /// CPU was spent), never a duplicate.
    #[serde(default)]
    pub train_cpu_seconds: f64,
    /// The coordinator processes' own CPU time, up to the checkpoint (`Core::totals` adds
    /// the running process's since).
    #[serde(default)]
    pub coordinator_cpu_seconds: f64,
    /// Workers' CPU time on match shards (recorded results only).
    #[serde(default)]
    pub match_cpu_seconds: f64,
}

impl Totals {
    /// Adds one merge's counters. The live merge and journal replay both go through here,
    /// so a resumed run's totals equal those of a run without a crash.
    pub fn add_merge(&mut self, m: &JournalMeta) {
        self.merges += 1;
        self.positions_merged += m.positions;
        self.positions_used += m.used;
        self.gradient_entries_merged += m.entries;
        self.loss_sum += m.loss_sum;
        // The version before the merge minus the version the gradient was computed with.
        self.staleness_sum += (m.seq - 1).saturating_sub(m.computed_on);
        self.teacher_records_kept += m.records_kept;
        self.train_cpu_seconds += m.cpu_seconds;
    }

    /// CPU seconds of training: the workers' on training shards plus the coordinator's.
    pub fn training_cpu_seconds(&self) -> f64 {
        self.train_cpu_seconds + self.coordinator_cpu_seconds
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointState {
    pub format: u32,
    pub run_id: String,
    pub weights_version: u64,
    pub weights_checksum: u64,
    pub queue: Queue,
    pub totals: Totals,
    /// Newbob's state and the best weights' version (format 3).
    #[serde(default)]
    pub generations: GenerationState,
    /// Matches queued and Elo measured (`[elo]`).
    #[serde(default)]
    pub elo: EloState,
    #[serde(deserialize_with = "stored_config")]
    pub config: TrainConfig,
    pub created_unix: u64,
}

fn stored_config<'de, D: serde::Deserializer<'de>>(d: D) -> Result<TrainConfig, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    TrainConfig::from_stored(v).map_err(serde::de::Error::custom)
}

impl ckpt::CheckpointState for CheckpointState {
    fn from_json(bytes: &[u8]) -> Result<Self, StateError> {
        let mut v: serde_json::Value = serde_json::from_slice(bytes)?;
        match v.get("format").and_then(serde_json::Value::as_u64) {
            Some(1) => {
                let shards = v.pointer_mut("/queue/shards").and_then(serde_json::Value::as_array_mut);
                for shard in shards.into_iter().flatten() {
                    if let Some(spec) = shard.get_mut("spec") {
                        crate::legacy::migrate_spec(spec);
                    }
                }
            }
            Some(2 | 3) => {}
            found => return Err(StateError::Format { found: found.unwrap_or(0), readable: "1 to 3" }),
        }
        Ok(serde_json::from_value(v)?)
    }

    fn number(&self) -> u64 {
        self.weights_version
    }

    fn weights_checksum(&self) -> u64 {
        self.weights_checksum
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Write(#[from] ckpt::CheckpointError),
    #[error("checkpoint: {0}")]
    Io(#[from] IoError),
    #[error(transparent)]
    Injected(#[from] Injected),
    /// Exporting a checkpoint for its matches, or queueing them.
    #[error("[elo] matches of the checkpoint: {0}")]
    Elo(String),
}

/// Writes a checkpoint of `weights` and `state` (engine-core's `write_dir`, then pruning to
/// the newest `keep`, 0 = all). `faults` may stop it at each step (tests).
pub fn write(
    run_dir: &Path,
    weights: &mut WeightFile,
    mut state: CheckpointState,
    keep: usize,
    faults: &Faults,
) -> Result<PathBuf, CheckpointError> {
    let version = state.weights_version;
    state.format = FORMAT;
    let dir = ckpt::write_dir(
        run_dir,
        version,
        weights,
        |checksum| {
            state.weights_checksum = checksum;
            serde_json::to_vec_pretty(&state)
        },
        |step| {
            let point = match step {
                Step::WeightsCopied => FaultPoint::CheckpointWeightsCopied,
                Step::StateWritten => FaultPoint::CheckpointStateWritten,
                Step::OldMovedAside => FaultPoint::CheckpointOldMovedAside,
                Step::Renamed => FaultPoint::CheckpointRenamed,
            };
            faults.hit(point, version).map_err(CheckpointError::from)
        },
    )?;
    ckpt::prune(run_dir, keep)?;
    faults.hit(FaultPoint::CheckpointPruned, version)?;
    Ok(dir)
}
