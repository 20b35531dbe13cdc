//! Checkpoints of a run directory, for `keima learn` and `keima train` alike: a directory
//! `checkpoints/ckpt-<number, 12 digits>` holding `weights.kw` (weights, accumulators and
//! counters; its header records a data checksum) and `state.json` (what the caller stores:
//! a [`CheckpointState`]).
//!
//! Writing never removes the last complete checkpoint before its replacement is in place:
//! the new one is written as `ckpt-N.tmp`, every file fsynced; a checkpoint of the same
//! number already on disk is renamed to `ckpt-N.old` (not deleted); `ckpt-N.tmp` is renamed
//! to `ckpt-N` and the directory fsynced; only then is `ckpt-N.old` removed, and [`prune`]
//! removes the checkpoints beyond the newest `keep`. [`recover`] (before looking for a
//! checkpoint) finishes or undoes what a crash interrupted: it puts a `ckpt-N.old` back
//! when `ckpt-N` is missing and removes `*.tmp` and surplus `*.old`.

use super::files::{CHECKPOINTS_DIR, STATE_FILE, WEIGHTS_FILE};
use super::weights::{WeightFile, WeightsError};
use crate::fsutil::{IoError, fsync_dir};
use std::path::{Path, PathBuf};

const PREFIX: &str = "ckpt-";
const TMP_SUFFIX: &str = ".tmp";
/// A checkpoint being replaced by one of the same number waits under this suffix.
const OLD_SUFFIX: &str = ".old";

/// What a checkpoint's `state.json` holds for this module: the weights it belongs to.
pub trait CheckpointState: Sized {
    /// Reads `state.json` (an older format too, migrated, or an error naming the format).
    fn from_json(bytes: &[u8]) -> Result<Self, StateError>;
    /// The checkpoint's number: the weights' update counter when it was written.
    fn number(&self) -> u64;
    /// The data checksum of the weights it was written with.
    fn weights_checksum(&self) -> u64;
}

/// Why a `state.json` does not read.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Not JSON, or not a state of this kind (its config included).
    #[error("corrupt state file: {0}")]
    Json(#[from] serde_json::Error),
    #[error("state format {found} (this build reads {readable})")]
    Format { found: u64, readable: &'static str },
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("checkpoint: {0}")]
    Io(#[from] IoError),
    #[error("checkpoint {}: {source}", dir.display())]
    Weights { dir: PathBuf, source: WeightsError },
    #[error("checkpoint {}: {source}", dir.display())]
    State { dir: PathBuf, source: StateError },
    #[error("checkpoint {}: the weights do not belong to its state file", dir.display())]
    Mismatch { dir: PathBuf },
    #[error("checkpoint state: {0}")]
    Encode(serde_json::Error),
    #[error("{}: neither a checkpoint nor a run directory with checkpoints", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: no valid checkpoint ({}): {}", path.display(), skipped.len(), skipped.join("; "))]
    NoneValid { path: PathBuf, skipped: Vec<String> },
}

/// The steps of [`write_dir`], each reported to its caller when done (crash tests stop
/// there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `ckpt-N.tmp/weights.kw` is written.
    WeightsCopied,
    /// `ckpt-N.tmp/state.json` is written and the directory fsynced.
    StateWritten,
    /// A complete `ckpt-N` of the same number was renamed to `ckpt-N.old`.
    OldMovedAside,
    /// `ckpt-N.tmp` is `ckpt-N` (the parent fsynced); `ckpt-N.old` not yet removed.
    Renamed,
}

/// `<run_dir>/checkpoints`.
pub fn root(run_dir: &Path) -> PathBuf {
    run_dir.join(CHECKPOINTS_DIR)
}

fn dir_name(number: u64) -> String {
    format!("{PREFIX}{number:012}")
}

/// The directory of checkpoint `number` of `run_dir` (whether or not it exists).
pub fn dir(run_dir: &Path, number: u64) -> PathBuf {
    root(run_dir).join(dir_name(number))
}

/// The number of a complete checkpoint directory's name (`ckpt-` and 12 digits, nothing
/// else: not `.tmp`, not `.old`).
pub fn version_of(dir: &Path) -> Option<u64> {
    let digits = dir.file_name()?.to_str()?.strip_prefix(PREFIX)?;
    if digits.len() == 12 && digits.bytes().all(|b| b.is_ascii_digit()) { digits.parse().ok() } else { None }
}

/// Writes the checkpoint `number` of `run_dir`: `weights.kw` (sealed, copied sparsely) and
/// `state.json` from `state_json(data checksum of the weights)`, in the order of the module
/// doc. `after` sees each [`Step`] once it is done and may stop the write there. Returns
/// the directory. Pruning is the caller's ([`prune`]).
pub fn write_dir<E: From<CheckpointError>>(
    run_dir: &Path,
    number: u64,
    weights: &mut WeightFile,
    state_json: impl FnOnce(u64) -> Result<Vec<u8>, serde_json::Error>,
    mut after: impl FnMut(Step) -> Result<(), E>,
) -> Result<PathBuf, E> {
    let io = |e: IoError| E::from(CheckpointError::Io(e));
    let root = root(run_dir);
    std::fs::create_dir_all(&root).map_err(IoError::at("create directory", &root)).map_err(io)?;
    let name = dir_name(number);
    let dir = root.join(&name);
    let tmp = root.join(format!("{name}{TMP_SUFFIX}"));
    let old = root.join(format!("{name}{OLD_SUFFIX}"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)
            .map_err(IoError::at("remove unfinished checkpoint", &tmp))
            .map_err(io)?;
    }
    std::fs::create_dir_all(&tmp).map_err(IoError::at("create directory", &tmp)).map_err(io)?;
    let weights_error = |source| E::from(CheckpointError::Weights { dir: tmp.clone(), source });
    weights.seal().map_err(weights_error)?;
    weights.copy_sparse(&tmp.join(WEIGHTS_FILE)).map_err(weights_error)?;
    after(Step::WeightsCopied)?;
    let json = state_json(weights.header.data_checksum).map_err(|e| E::from(CheckpointError::Encode(e)))?;
    {
        use std::io::Write;
        let p = tmp.join(STATE_FILE);
        let mut f = std::fs::File::create(&p).map_err(IoError::at("create", &p)).map_err(io)?;
        f.write_all(&json).and_then(|_| f.sync_all()).map_err(IoError::at("write", &p)).map_err(io)?;
    }
    fsync_dir(&tmp).map_err(io)?;
    after(Step::StateWritten)?;
    if dir.exists() {
        // The same number again (e.g. the final checkpoint after a resume): keep the
        // complete one until the new one has its name.
        if old.exists() {
            std::fs::remove_dir_all(&old)
                .map_err(IoError::at("remove replaced checkpoint", &old))
                .map_err(io)?;
        }
        std::fs::rename(&dir, &old).map_err(IoError::at("move aside", &dir)).map_err(io)?;
        fsync_dir(&root).map_err(io)?;
        after(Step::OldMovedAside)?;
    }
    std::fs::rename(&tmp, &dir).map_err(IoError::at("rename into place", &dir)).map_err(io)?;
    fsync_dir(&root).map_err(io)?;
    after(Step::Renamed)?;
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(IoError::at("remove replaced checkpoint", &old)).map_err(io)?;
    }
    Ok(dir)
}

/// Removes the complete checkpoints beyond the newest `keep` (0 = keep all). Tries every
/// one; returns the first failure.
pub fn prune(run_dir: &Path, keep: usize) -> Result<(), IoError> {
    if keep == 0 {
        return Ok(());
    }
    let all = list(run_dir);
    let mut result = Ok(());
    for stale in all.iter().take(all.len().saturating_sub(keep)) {
        if let Err(e) = std::fs::remove_dir_all(stale).map_err(IoError::at("remove old checkpoint", stale)) {
            result = result.and(Err(e));
        }
    }
    result
}

/// Complete checkpoint directories of a run, oldest first.
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

/// Repairs what a crash in [`write_dir`] left: `ckpt-N.old` goes back to `ckpt-N` when that
/// is missing (it was complete), otherwise it and every `*.tmp` are removed. Returns what
/// it did, for the log.
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

/// Reads and verifies a checkpoint directory: the state reads, the weights open with their
/// data checksum, and both belong together.
pub fn load<S: CheckpointState>(dir: &Path) -> Result<(S, WeightFile), CheckpointError> {
    let sp = dir.join(STATE_FILE);
    let bytes = std::fs::read(&sp).map_err(IoError::at("read", &sp))?;
    let state =
        S::from_json(&bytes).map_err(|source| CheckpointError::State { dir: dir.to_path_buf(), source })?;
    let w = WeightFile::open(&dir.join(WEIGHTS_FILE), true)
        .map_err(|source| CheckpointError::Weights { dir: dir.to_path_buf(), source })?;
    if w.header.data_checksum != state.weights_checksum() || w.header.updates != state.number() {
        return Err(CheckpointError::Mismatch { dir: dir.to_path_buf() });
    }
    Ok((state, w))
}

/// A checkpoint found by [`find`].
pub struct Found<S> {
    pub dir: PathBuf,
    pub state: S,
    pub weights: WeightFile,
    /// What [`recover`] repaired first.
    pub repairs: Vec<String>,
    /// Newer checkpoints that did not load, why.
    pub skipped: Vec<String>,
}

/// Resolves `--resume PATH`: a checkpoint directory, or a run directory (repaired with
/// [`recover`], then its newest checkpoint that loads; newer ones that do not are listed in
/// `skipped`).
pub fn find<S: CheckpointState>(path: &Path) -> Result<Found<S>, CheckpointError> {
    if path.join(STATE_FILE).is_file() {
        let (state, weights) = load(path)?;
        return Ok(Found {
            dir: path.to_path_buf(),
            state,
            weights,
            repairs: Vec::new(),
            skipped: Vec::new(),
        });
    }
    let repairs = recover(path)?;
    let all = list(path);
    if all.is_empty() {
        return Err(CheckpointError::NotFound { path: path.to_path_buf() });
    }
    let mut skipped = Vec::new();
    for dir in all.into_iter().rev() {
        match load(&dir) {
            Ok((state, weights)) => return Ok(Found { dir, state, weights, repairs, skipped }),
            Err(e) => skipped.push(e.to_string()),
        }
    }
    Err(CheckpointError::NoneValid { path: path.to_path_buf(), skipped })
}

/// Seconds since the Unix epoch (a checkpoint's `created_unix`).
pub fn now_unix() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
