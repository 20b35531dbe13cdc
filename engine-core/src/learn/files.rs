//! The names of the files of a run directory (`keima learn`'s `out_dir`, `keima train`'s
//! `run_dir`) and of a checkpoint, defined once.

/// The memory-mapped weight file (weights, AdaGrad accumulators, counters), in the run
/// directory and in every checkpoint.
pub const WEIGHTS_FILE: &str = "weights.kw";
/// Metrics, one JSON line per validation.
pub const METRICS_FILE: &str = "metrics.jsonl";
/// The checkpoints' directory in the run directory.
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// A checkpoint's counters, cursor and config.
pub const STATE_FILE: &str = "state.json";
