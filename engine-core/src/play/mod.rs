//! Playing games: the USI engine protocol as a reusable state machine; match statistics
//! (W/D/L, Elo with a confidence interval); an SPRT over game pairs; SPSA tuning over game pairs; matches between two
//! evaluations in-process (`engine_match`); consultation (several
//! players voting) and its diversity measures. The CSA writer for match games is
//! `records::csa_write`.

pub mod consult;
pub mod consult_stats;
pub mod engine_match;
pub mod match_stats;
pub mod sprt;
pub mod spsa;
pub mod usi_engine;
pub mod usi_time;

pub use match_stats::{EloEstimate, MatchStats};
pub use sprt::{Pentanomial, Sprt, SprtStatus};
pub use usi_engine::{GoParams, UsiEngine, time_limits};
