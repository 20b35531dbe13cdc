//! Search: what bounds it, the transposition table, static exchange evaluation, move
//! ordering (history statistics, staged move picker), the static evaluation's correction
//! history, the alpha-beta search and its quiescence, time management, the threads of a
//! search (Lazy SMP), its tunable numbers and the searcher that runs them; mate knowledge (df-pn); the
//! learner's leaf quiescence.

pub mod alphabeta;
pub mod bench;
pub mod correction;
pub mod history;
pub mod leaf_qsearch;
pub mod limits;
pub mod mate;
pub mod movepick;
pub mod params;
pub mod qsearch;
pub mod score;
pub mod searcher;
pub mod see;
pub mod thread;
pub mod time;
pub mod tt;

pub use limits::{Limits, SearchOptions};
pub use params::SearchParams;
pub use score::{MATE, MATE_IN_MAX_PLY, PERPETUAL_WIN, SUPERIOR_REPETITION};
pub use searcher::{Info, SearchResult, Searcher};
pub use tt::TranspositionTable;
