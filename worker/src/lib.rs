//! Keima's worker: leases shards from a coordinator, generates teacher positions by deep
//! search (or reads them), computes the learner's sparse gradient, and pushes it back.
//! Data flow: `connection` (address, TLS, token) → `run` (the loop, with `retry`'s one way
//! of retrying a call; `cpu_ledger` charges the loop's own CPU time to training shards) →
//! `local_weights` (the synced evaluator) → `shard_job` (teacher → gradient, all in
//! engine-core; a match shard: `match_job` in-process, `usi_match_job` against an external
//! USI engine). `status_client` is `keima status`'s one call; `usi` plays games between USI
//! engine processes (`keima match`, and match shards against an external engine).

pub mod connection;
pub mod cpu_ledger;
pub mod error;
pub mod local_weights;
pub mod match_job;
pub mod retry;
pub mod run;
pub mod shard_job;
pub mod simulate;
pub mod status_client;
pub mod usi;
pub mod usi_match_job;

pub use connection::Connection;
pub use error::WorkerError;
pub use run::{WorkerOptions, WorkerSummary, run};
pub use status_client::fetch_status;
