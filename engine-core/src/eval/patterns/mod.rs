//! Learned piece-combination ("pattern") features (research.md §2): definition, a compiled
//! set with differential update, files, and extraction by random counting.

pub mod extract;
pub mod file;
pub mod pattern;
pub mod set;

pub use extract::{Band, ExtractConfig, Extraction, PatternCounter};
pub use pattern::{Pattern, Triple};
pub use set::{MAX_PATTERNS, PatternSet, PatternSums};
