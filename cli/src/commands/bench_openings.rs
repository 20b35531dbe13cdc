//! The openings the benchmarks start from (shared by `bench eval` and `bench learn`).

use engine_core::teacher::{Opening, load_openings};
use std::path::Path;

/// The openings file the benchmarks start from, relative to the project root (where
/// BENCHMARKS.md's figures were taken).
pub(super) const SHARED_OPENINGS: &str = "../shared/data/openings/records2016_10818.sfen";

/// The shared openings, or `None` when the file is not there (the benchmarks then use
/// random games); a file that is there but does not load is an error.
pub(super) fn shared_openings() -> Result<Option<Vec<Opening>>, String> {
    let path = Path::new(SHARED_OPENINGS);
    if !path.exists() {
        return Ok(None);
    }
    load_openings(path).map(Some).map_err(|e| e.to_string())
}
