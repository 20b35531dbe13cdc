//! Keima's coordinator: it owns the weights, hands out shards of work to workers, merges
//! their gradients exactly once with the learner's sparse AdaGrad, checkpoints, and exports.
//! Data flow: `config` → `specs` → `queue` (shards, leases) → `service` (gRPC) → `core`
//! (merge: `journal` first, then `weights_state`; pulls: `weights_sync`) → `checkpoint`; `generations` is the
//! schedule the specs and merges follow; `elo` and `elo_config` are the match shards that
//! measure checkpoints (`usi_engines_config`: the external engines local workers declare);
//! `metrics` serves counters; `legacy` reads what an older keima wrote.

pub mod checkpoint;
pub mod config;
pub mod core;
pub mod elo;
pub mod elo_config;
pub mod error;
pub mod fault;
pub mod fsutil;
pub mod generations;
pub mod journal;
pub mod legacy;
pub mod metrics;
pub mod queue;
pub mod run;
pub mod service;
pub mod specs;
pub mod usi_engines_config;
pub mod weights_state;
pub mod weights_sync;

pub use config::TrainConfig;
