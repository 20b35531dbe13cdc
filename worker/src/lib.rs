//! Keima's worker: leases shards from a coordinator, generates teacher positions by deep
//! search (or reads them), computes the learner's sparse gradient, and pushes it back.
//! Data flow: `run` (the loop, network) → `local_weights` (the synced evaluator) →
//! `shard_job` (teacher → gradient, all in engine-core).

pub mod local_weights;
pub mod run;
pub mod shard_job;
pub mod simulate;

pub use run::{WorkerOptions, WorkerSummary, fetch_status, run};
