//! The shard queue's work, built from the config: `[teacher]` record ranges, `[records]`
//! file groups and `[selfplay]` shards, each carrying its table's teacher settings.

use crate::config::{SelfPlaySection, TrainConfig};
use crate::queue::ShardSpec;
use engine_core::teacher::{Opening, ShardReader};
use std::path::{Path, PathBuf};

/// The openings of `[selfplay] openings` as the USI lines the shards carry.
pub fn load_openings(path: &Path) -> Result<Vec<String>, String> {
    let openings = engine_core::teacher::load_openings(path).map_err(|e| format!("openings {e}"))?;
    Ok(openings.iter().map(Opening::to_usi_line).collect())
}

/// Records readable from a teacher shard (valid ones, as a worker's reader counts them).
fn count_records(path: &Path) -> Result<u64, String> {
    let mut r = ShardReader::open(path).map_err(|e| e.to_string())?;
    let mut n = 0;
    while r.next_record().map_err(|e| e.to_string())?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// The `[records]` files, sorted by their path text (the shards' file groups follow it).
fn record_files(paths: &[PathBuf]) -> Result<Vec<String>, String> {
    let files = engine_core::records::record_files(paths).map_err(|e| format!("[records] {e}"))?;
    let mut out: Vec<String> = files.iter().map(|p| p.to_string_lossy().to_string()).collect();
    out.sort();
    Ok(out)
}

/// The shard specs of a config, in queue order: teacher shards, then record shards, then
/// self-play shards.
pub fn build_specs(cfg: &TrainConfig) -> Result<Vec<ShardSpec>, String> {
    let mut specs = Vec::new();
    if let Some(t) = &cfg.teacher {
        for path in engine_core::learn::data::resolve_shards(&t.paths)? {
            let n = count_records(&path)?;
            let mut start = 0;
            while start < n {
                let count = t.records_per_shard.min(n - start);
                specs.push(ShardSpec::Teacher { path: path.to_string_lossy().to_string(), start, count });
                start += count;
            }
        }
    }
    if let Some(r) = &cfg.records {
        let files = record_files(&r.paths)?;
        for chunk in files.chunks(r.files_per_shard) {
            specs.push(ShardSpec::Records {
                paths: chunk.to_vec(),
                search: r.search,
                unknown_result: r.unknown_result,
            });
        }
    }
    if let Some(s) = &cfg.selfplay {
        let openings = match &s.openings {
            Some(p) => load_openings(p)?,
            None => Vec::new(),
        };
        specs.extend(selfplay_specs(cfg.seed, s, &openings));
    }
    if specs.is_empty() {
        return Err("config: the work sources hold no work (empty teacher shards or no record files)".into());
    }
    Ok(specs)
}

/// The self-play shards of `[selfplay]` (seeded from the run's `seed`), each with
/// `openings_per_shard` lines drawn from `openings`.
pub fn selfplay_specs<'a>(
    seed: u64,
    s: &'a SelfPlaySection,
    openings: &'a [String],
) -> impl Iterator<Item = ShardSpec> + 'a {
    (0..s.shards).map(move |i| {
        let seed = engine_core::teacher::gensfen::game_seed(seed, 1_000_000 + i);
        let mut rng = engine_core::rng::Xoshiro256::new(seed);
        let picked = if openings.is_empty() {
            Vec::new()
        } else {
            (0..s.openings_per_shard.max(1)).map(|_| openings[rng.below(openings.len())].clone()).collect()
        };
        ShardSpec::SelfPlay {
            seed,
            games: s.games_per_shard,
            openings: picked,
            search: s.search,
            play: s.play,
        }
    })
}
