//! Coordinator checkpoints: `checkpoints/ckpt-<version, 12 digits>/` holding `weights.kw`
//! (weights, AdaGrad accumulators, counters; its header records a data checksum) and
//! `state.json` (queue, counters, config, run id). Written as `….tmp`, fsynced, renamed, so a
//! crash leaves the old set or the new one; the newest `keep` are kept. Merges after the
//! checkpoint live in the journal (`journal.rs`).

use crate::config::TrainConfig;
use crate::queue::Queue;
use engine_core::learn::weights::WeightFile;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const STATE_FILE: &str = "state.json";
pub const WEIGHTS_FILE: &str = "weights.kw";
pub const FORMAT: u32 = 1;

/// Run totals that survive restarts.
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
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckpointState {
    pub format: u32,
    pub run_id: String,
    pub weights_version: u64,
    pub weights_checksum: u64,
    pub queue: Queue,
    pub totals: Totals,
    pub config: TrainConfig,
    pub created_unix: u64,
}

pub fn root(run_dir: &Path) -> PathBuf {
    engine_core::learn::checkpoint::checkpoints_root(run_dir)
}

/// Writes a checkpoint of `weights` and `state`; prunes to the newest `keep` (0 = all).
pub fn write(
    run_dir: &Path,
    weights: &mut WeightFile,
    mut state: CheckpointState,
    keep: usize,
) -> Result<PathBuf, String> {
    let version = state.weights_version;
    engine_core::learn::checkpoint::write_dir(run_dir, version, weights, keep, |checksum| {
        state.weights_checksum = checksum;
        state.format = FORMAT;
        serde_json::to_vec_pretty(&state).map_err(|e| e.to_string())
    })
}

/// Checkpoint directories, oldest first.
pub use engine_core::learn::checkpoint::list;

/// Loads and checks one checkpoint (state parses, weights open with a matching checksum).
pub fn load(dir: &Path) -> Result<(CheckpointState, WeightFile), String> {
    let sp = dir.join(STATE_FILE);
    let text = std::fs::read_to_string(&sp).map_err(|e| format!("{}: {e}", sp.display()))?;
    let state: CheckpointState = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", sp.display()))?;
    if state.format != FORMAT {
        return Err(format!(
            "{}: checkpoint format {} (this build reads {FORMAT})",
            sp.display(),
            state.format
        ));
    }
    let w = WeightFile::open(&dir.join(WEIGHTS_FILE), true).map_err(|e| e.to_string())?;
    if w.header.data_checksum != state.weights_checksum || w.header.updates != state.weights_version {
        return Err(format!("{}: weights do not match state.json", dir.display()));
    }
    Ok((state, w))
}

/// The newest checkpoint that loads, from a run directory or a checkpoint directory.
/// Returns warnings for newer ones that did not load.
pub fn load_newest(path: &Path) -> Result<(PathBuf, CheckpointState, WeightFile, Vec<String>), String> {
    if path.join(STATE_FILE).is_file() {
        let (s, w) = load(path)?;
        return Ok((path.to_path_buf(), s, w, Vec::new()));
    }
    let mut warnings = Vec::new();
    for dir in list(path).into_iter().rev() {
        match load(&dir) {
            Ok((s, w)) => return Ok((dir, s, w, warnings)),
            Err(e) => warnings.push(format!("skipping checkpoint: {e}")),
        }
    }
    Err(format!(
        "{}: no valid checkpoint under {} ({} rejected); start a new run with `keima train --config`",
        path.display(),
        root(path).display(),
        warnings.len()
    ))
}
