//! Search: transposition table, limits and options, mate knowledge, and the alpha-beta
//! searcher that teacher generation, play and the learner's quiescence use.

pub mod limits;
pub mod mate;
#[allow(clippy::module_inception)]
pub mod search;
pub mod tt;

pub use limits::{Limits, SearchOptions};
pub use search::{Info, MATE, MATE_IN_MAX_PLY, SearchResult, Searcher};
pub use tt::TranspositionTable;
