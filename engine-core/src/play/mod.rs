//! Playing games: the USI engine protocol as a reusable state machine, and match
//! statistics (W/D/L, Elo with a confidence interval) with a CSA record writer.

pub mod match_stats;
pub mod usi_engine;

pub use match_stats::{CsaEnd, CsaRecord, EloEstimate, MatchStats};
pub use usi_engine::{GoParams, UsiEngine, time_limits};
