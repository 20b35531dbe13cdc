//! Checkpoints: a directory `ckpt-<updates, 12 digits>` under `<out>/checkpoints` holding
//! `weights.kw` (weights, accumulators and counters; the header records a data checksum)
//! and `state.json` (counters, data cursor, RNG, loss accumulators, the config). It is
//! written as `ckpt-….tmp`, every file fsynced, then renamed and the parent fsynced, so a
//! crash leaves either the old set or the new one (a checkpoint of the same number is
//! moved aside first, never deleted before its replacement is in place). The last K are
//! kept.

use super::trainer::{LearnConfig, TrainState};
use super::weights::WeightFile;
use std::fs::File;
use std::path::{Path, PathBuf};

pub const STATE_FILE: &str = "state.json";
pub const WEIGHTS_FILE: &str = "weights.kw";
pub const STATE_VERSION: u32 = 1;
/// A checkpoint being replaced by one of the same number waits under this suffix.
const OLD_SUFFIX: &str = ".old";

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CheckpointState {
    pub version: u32,
    pub state: TrainState,
    pub config: LearnConfig,
    /// The data checksum of `weights.kw` (also in its header).
    pub weights_checksum: u64,
    pub created_unix: u64,
}

fn fsync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir).and_then(|f| f.sync_all()).map_err(|e| format!("fsync {}: {e}", dir.display()))
}

pub fn checkpoints_root(out_dir: &Path) -> PathBuf {
    out_dir.join("checkpoints")
}

/// Writes a checkpoint; returns its directory. Prunes to the newest `keep` (0 = keep all).
pub fn write(
    out_dir: &Path,
    weights: &mut WeightFile,
    state: &TrainState,
    config: &LearnConfig,
    keep: usize,
) -> Result<PathBuf, String> {
    write_dir(out_dir, state.updates, weights, keep, |weights_checksum| {
        let cs = CheckpointState {
            version: STATE_VERSION,
            state: state.clone(),
            config: config.clone(),
            weights_checksum,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        serde_json::to_vec_pretty(&cs).map_err(|e| e.to_string())
    })
}

/// Writes the checkpoint directory `ckpt-<number, 12 digits>` under `<run_dir>/checkpoints`
/// (used by `keima learn`): `weights.kw` (sealed, copied sparsely) and `state.json` from
/// `state_json(data checksum of the weights)`. Written as `….tmp`, every file fsynced,
/// renamed, the parent fsynced; then pruned to the newest `keep` (0 = keep all). A
/// checkpoint of the same number already there is moved aside to `….old` and removed
/// only once the new one is in place ([`recover`] finishes the job after a crash).
/// Returns the directory.
pub fn write_dir(
    run_dir: &Path,
    number: u64,
    weights: &mut WeightFile,
    keep: usize,
    state_json: impl FnOnce(u64) -> Result<Vec<u8>, String>,
) -> Result<PathBuf, String> {
    let root = checkpoints_root(run_dir);
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let name = format!("ckpt-{number:012}");
    let dir = root.join(&name);
    let tmp = root.join(format!("{name}.tmp"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    weights.seal().map_err(|e| e.to_string())?;
    weights.copy_sparse(&tmp.join(WEIGHTS_FILE)).map_err(|e| e.to_string())?;
    let json = state_json(weights.header.data_checksum)?;
    {
        use std::io::Write;
        let p = tmp.join(STATE_FILE);
        let mut f = File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        f.write_all(&json).and_then(|_| f.sync_all()).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    fsync_dir(&tmp)?;
    let aside = root.join(format!("{name}{OLD_SUFFIX}"));
    if dir.exists() {
        // Never delete the complete checkpoint before its replacement is in place.
        if aside.exists() {
            std::fs::remove_dir_all(&aside).map_err(|e| format!("{}: {e}", aside.display()))?;
        }
        std::fs::rename(&dir, &aside).map_err(|e| format!("rename to {}: {e}", aside.display()))?;
        fsync_dir(&root)?;
    }
    std::fs::rename(&tmp, &dir).map_err(|e| format!("rename to {}: {e}", dir.display()))?;
    fsync_dir(&root)?;
    if aside.exists() {
        std::fs::remove_dir_all(&aside).map_err(|e| format!("{}: {e}", aside.display()))?;
    }
    if keep > 0 {
        let all = list(run_dir);
        for old in all.iter().take(all.len().saturating_sub(keep)) {
            let _ = std::fs::remove_dir_all(old);
        }
    }
    Ok(dir)
}

/// Finished checkpoints of a run, oldest first.
pub fn list(out_dir: &Path) -> Vec<PathBuf> {
    let root = checkpoints_root(out_dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.is_dir()
                        && p.file_name().and_then(|f| f.to_str()).is_some_and(|n| {
                            n.starts_with("ckpt-") && !n.ends_with(".tmp") && !n.ends_with(OLD_SUFFIX)
                        })
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Reads and verifies a checkpoint directory (state, weight header, data checksum).
pub fn load(dir: &Path) -> Result<(CheckpointState, WeightFile), String> {
    let sp = dir.join(STATE_FILE);
    let text = std::fs::read_to_string(&sp).map_err(|e| format!("checkpoint {}: {e}", sp.display()))?;
    let cs: CheckpointState = serde_json::from_str(&text)
        .map_err(|e| format!("checkpoint {}: corrupt state file: {e}", sp.display()))?;
    if cs.version != STATE_VERSION {
        return Err(format!(
            "checkpoint {}: state version {} (expected {STATE_VERSION})",
            dir.display(),
            cs.version
        ));
    }
    let w = WeightFile::open(&dir.join(WEIGHTS_FILE), true).map_err(|e| format!("checkpoint: {e}"))?;
    if w.header.data_checksum != cs.weights_checksum || w.header.updates != cs.state.updates {
        return Err(format!("checkpoint {}: weights do not belong to this state file", dir.display()));
    }
    Ok((cs, w))
}

/// Finishes what a crash during [`write_dir`] left: a checkpoint moved aside to `….old`
/// whose replacement never arrived is put back; leftover `….old` and `….tmp` directories
/// are removed.
pub fn recover(out_dir: &Path) -> Result<(), String> {
    let root = checkpoints_root(out_dir);
    let Ok(entries) = std::fs::read_dir(&root) else { return Ok(()) };
    let mut changed = false;
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("ckpt-") {
            continue;
        }
        if let Some(base) = name.strip_suffix(OLD_SUFFIX) {
            let complete = root.join(base);
            if complete.exists() {
                std::fs::remove_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            } else {
                std::fs::rename(&path, &complete)
                    .map_err(|e| format!("restore {}: {e}", complete.display()))?;
            }
            changed = true;
        } else if name.ends_with(".tmp") {
            std::fs::remove_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            changed = true;
        }
    }
    if changed {
        fsync_dir(&root)?;
    }
    Ok(())
}

/// Resolves `--resume PATH`: a checkpoint directory, or a run directory (its newest valid
/// checkpoint; invalid newer ones are reported in the returned warnings and skipped).
pub fn find(path: &Path) -> Result<(PathBuf, Vec<String>), String> {
    if path.join(STATE_FILE).exists() {
        return Ok((path.to_path_buf(), Vec::new()));
    }
    recover(path)?;
    let all = list(path);
    if all.is_empty() {
        return Err(format!("{}: neither a checkpoint nor a run directory with checkpoints", path.display()));
    }
    let mut warnings = Vec::new();
    for c in all.iter().rev() {
        match load(c) {
            Ok(_) => return Ok((c.clone(), warnings)),
            Err(e) => warnings.push(format!("skipping invalid checkpoint: {e}")),
        }
    }
    Err(format!("{}: no valid checkpoint: {}", path.display(), warnings.join("; ")))
}
