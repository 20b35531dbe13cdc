//! Coordinator checkpoints: `checkpoints/ckpt-<version, 12 digits>/` holding `weights.kw`
//! (weights, AdaGrad accumulators, counters; its header records a data checksum) and
//! `state.json` (queue, counters, config, run id). Merges after the checkpoint live in the
//! journal (`journal.rs`).
//!
//! Writing never removes the last complete checkpoint before its replacement is in place:
//! the new one is written as `ckpt-N.tmp` and fsynced; a checkpoint of the same version
//! already on disk is renamed to `ckpt-N.old` (not deleted); `ckpt-N.tmp` is renamed to
//! `ckpt-N` and the directory fsynced; only then are `ckpt-N.old` and the checkpoints beyond
//! the newest `keep` removed. `recover` (at every start) finishes or undoes what a crash
//! interrupted: it puts a `ckpt-N.old` back when `ckpt-N` is missing and removes
//! `*.tmp` and surplus `*.old`.

use crate::config::TrainConfig;
use crate::fault::{FaultPoint, Faults, Injected};
use crate::fsutil::{IoError, fsync_dir};
use crate::journal::JournalMeta;
use crate::queue::Queue;
use engine_core::learn::weights::{WeightFile, WeightsError};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const STATE_FILE: &str = "state.json";
pub const WEIGHTS_FILE: &str = "weights.kw";
pub const FORMAT: u32 = 1;

const PREFIX: &str = "ckpt-";
const TMP_SUFFIX: &str = ".tmp";
const OLD_SUFFIX: &str = ".old";

/// Run totals that survive restarts. The merge counters (`merges` to `staleness_sum`, and
/// `teacher_records_kept`) are restored exactly by journal replay; the traffic counters
/// (`duplicate_pushes`, `stale_pushes`, `rejected_pushes`, `bytes_in`, `bytes_out`,
/// `server_faults`) count what the processes saw up to their last checkpoint.
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
    pub config: TrainConfig,
    pub created_unix: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint: {0}")]
    Io(#[from] IoError),
    #[error("checkpoint weights: {0}")]
    Weights(#[from] WeightsError),
    #[error("checkpoint state: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Injected(#[from] Injected),
}

pub fn root(run_dir: &Path) -> PathBuf {
    engine_core::learn::checkpoint::checkpoints_root(run_dir)
}

fn dir_name(version: u64) -> String {
    format!("{PREFIX}{version:012}")
}

/// The version of a complete checkpoint directory name (`ckpt-` and 12 digits, nothing
/// else: not `.tmp`, not `.old`).
pub fn version_of(dir: &Path) -> Option<u64> {
    let digits = dir.file_name()?.to_str()?.strip_prefix(PREFIX)?;
    if digits.len() == 12 && digits.bytes().all(|b| b.is_ascii_digit()) { digits.parse().ok() } else { None }
}

/// Writes a checkpoint of `weights` and `state` (see the module doc for the order); prunes
/// to the newest `keep` (0 = all). `faults` may stop it at each step (tests).
pub fn write(
    run_dir: &Path,
    weights: &mut WeightFile,
    mut state: CheckpointState,
    keep: usize,
    faults: &Faults,
) -> Result<PathBuf, CheckpointError> {
    let version = state.weights_version;
    let root = root(run_dir);
    std::fs::create_dir_all(&root).map_err(IoError::at("create directory", &root))?;
    let name = dir_name(version);
    let dir = root.join(&name);
    let tmp = root.join(format!("{name}{TMP_SUFFIX}"));
    let old = root.join(format!("{name}{OLD_SUFFIX}"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(IoError::at("remove unfinished checkpoint", &tmp))?;
    }
    std::fs::create_dir_all(&tmp).map_err(IoError::at("create directory", &tmp))?;
    weights.seal()?;
    weights.copy_sparse(&tmp.join(WEIGHTS_FILE))?;
    faults.hit(FaultPoint::CheckpointWeightsCopied, version)?;
    state.weights_checksum = weights.header.data_checksum;
    state.format = FORMAT;
    let json = serde_json::to_vec_pretty(&state)?;
    {
        use std::io::Write;
        let p = tmp.join(STATE_FILE);
        let mut f = std::fs::File::create(&p).map_err(IoError::at("create", &p))?;
        f.write_all(&json).and_then(|_| f.sync_all()).map_err(IoError::at("write", &p))?;
    }
    fsync_dir(&tmp)?;
    faults.hit(FaultPoint::CheckpointStateWritten, version)?;
    if dir.exists() {
        // Same version again (e.g. the final checkpoint after a resume): keep the complete
        // one until the new one has its name.
        if old.exists() {
            std::fs::remove_dir_all(&old).map_err(IoError::at("remove replaced checkpoint", &old))?;
        }
        std::fs::rename(&dir, &old).map_err(IoError::at("move aside", &dir))?;
        fsync_dir(&root)?;
        faults.hit(FaultPoint::CheckpointOldMovedAside, version)?;
    }
    std::fs::rename(&tmp, &dir).map_err(IoError::at("rename into place", &dir))?;
    fsync_dir(&root)?;
    faults.hit(FaultPoint::CheckpointRenamed, version)?;
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(IoError::at("remove replaced checkpoint", &old))?;
    }
    if keep > 0 {
        let all = list(run_dir);
        for stale in all.iter().take(all.len().saturating_sub(keep)) {
            std::fs::remove_dir_all(stale).map_err(IoError::at("remove old checkpoint", stale))?;
        }
    }
    faults.hit(FaultPoint::CheckpointPruned, version)?;
    Ok(dir)
}

/// Repairs what a crash in `write` left: `ckpt-N.old` goes back to `ckpt-N` when that is
/// missing (it was complete), otherwise it and every `*.tmp` are removed. Returns what it
/// did, for the log.
pub fn recover(run_dir: &Path) -> Result<Vec<String>, IoError> {
    let root = root(run_dir);
    let Ok(entries) = std::fs::read_dir(&root) else { return Ok(Vec::new()) };
    let mut names: Vec<String> =
        entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut done = Vec::new();
    for name in names {
        let path = root.join(&name);
        if !name.starts_with(PREFIX) {
            continue;
        }
        if let Some(base) = name.strip_suffix(OLD_SUFFIX) {
            let complete = root.join(base);
            if complete.exists() {
                std::fs::remove_dir_all(&path).map_err(IoError::at("remove replaced checkpoint", &path))?;
                done.push(format!("removed {} (replaced by {base})", path.display()));
            } else {
                std::fs::rename(&path, &complete).map_err(IoError::at("restore checkpoint", &path))?;
                done.push(format!("restored {} from {name} (a rewrite was interrupted)", complete.display()));
            }
        } else if name.ends_with(TMP_SUFFIX) {
            std::fs::remove_dir_all(&path).map_err(IoError::at("remove unfinished checkpoint", &path))?;
            done.push(format!("removed unfinished checkpoint {}", path.display()));
        }
    }
    if !done.is_empty() {
        fsync_dir(&root)?;
    }
    Ok(done)
}

/// Complete checkpoint directories, oldest first.
pub fn list(run_dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root(run_dir))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir() && version_of(p).is_some())
        .collect();
    v.sort();
    v
}

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
