//! The shard queue's work, built from the config generation by generation
//! (`generations.rs`): `[teacher]` record ranges, `[records]` file groups and `[selfplay]`
//! shards, each carrying its generation's teacher settings.

use crate::config::{SelfPlaySection, TrainConfig};
use crate::generations;
use crate::queue::ShardSpec;
use engine_core::teacher::config::TeacherSearch;
use engine_core::teacher::{Opening, ShardReader};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The openings of a file as the USI lines the shards carry.
pub fn load_openings(path: &Path) -> Result<Vec<String>, String> {
    let openings = engine_core::teacher::load_openings(path).map_err(|e| format!("openings {e}"))?;
    Ok(openings.iter().map(Opening::to_usi_line).collect())
}

/// `[selfplay] openings` as USI lines, once its random moves are checked against them
/// (a ply range inside every opening would play none).
fn load_selfplay_openings(s: &SelfPlaySection, path: &Path) -> Result<Vec<String>, String> {
    let openings = engine_core::teacher::load_openings(path).map_err(|e| format!("openings {e}"))?;
    let per_game = s.play.check_openings("[selfplay] ", &openings).map_err(|e| e.to_string())?;
    if let Some(warning) = s.play.lost_random_moves("[selfplay] random_moves = ", per_game) {
        tracing::warn!("{warning}");
    }
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

/// What the specs read from disk: the `[selfplay]` openings, the `[records]` file groups
/// and the `[teacher]` record ranges.
pub struct Sources {
    pub openings: Vec<String>,
    pub record_groups: Vec<Vec<String>>,
    pub teacher: Vec<ShardSpec>,
}

/// Reads the sources of a config's shards.
pub fn load_sources(cfg: &TrainConfig) -> Result<Sources, String> {
    let mut teacher = Vec::new();
    if let Some(t) = &cfg.teacher {
        for path in engine_core::learn::data::resolve_shards(&t.paths)? {
            let n = count_records(&path)?;
            let mut start = 0;
            while start < n {
                let count = t.records_per_shard.min(n - start);
                teacher.push(ShardSpec::Teacher { path: path.to_string_lossy().to_string(), start, count });
                start += count;
            }
        }
    }
    let record_groups = match &cfg.records {
        Some(r) => record_files(&r.paths)?.chunks(r.files_per_shard).map(<[String]>::to_vec).collect(),
        None => Vec::new(),
    };
    let openings = match cfg.selfplay.as_ref().and_then(|s| s.openings.as_ref().map(|p| (s, p))) {
        Some((s, p)) => load_selfplay_openings(s, p)?,
        None => Vec::new(),
    };
    Ok(Sources { openings, record_groups, teacher })
}

/// Generation `g`'s shard specs, in queue order: the teacher shards (all in the first
/// generation), then its record shards, then its self-play shards, each with the
/// generation's teacher settings.
pub fn generation_specs<'a>(
    cfg: &'a TrainConfig,
    src: &'a Sources,
    g: u32,
) -> impl Iterator<Item = ShardSpec> + 'a {
    let teacher = if g == 0 { &src.teacher[..] } else { &[] };
    let groups = src.record_groups.len() as u64;
    let records = cfg.records.iter().zip(generations::records_search(cfg, g)).flat_map(move |(r, search)| {
        let shards = if groups == 0 { 0..0 } else { generations::record_shards(cfg, g, groups) };
        shards.map(move |i| ShardSpec::Records {
            paths: src.record_groups[(i % groups) as usize].clone(),
            search,
            unknown_result: r.unknown_result,
        })
    });
    let selfplay =
        cfg.selfplay.iter().zip(generations::selfplay_search(cfg, g)).flat_map(move |(s, search)| {
            selfplay_specs(cfg.seed, s, generations::selfplay_shards(cfg, g), search, &src.openings)
        });
    teacher.iter().cloned().chain(records).chain(selfplay)
}

/// The shard specs of a config with their generations, in queue order (generation by
/// generation).
pub fn build_specs(cfg: &TrainConfig) -> Result<Vec<(u32, ShardSpec)>, String> {
    let src = load_sources(cfg)?;
    let specs: Vec<(u32, ShardSpec)> = (0..generations::count(cfg))
        .flat_map(|g| generation_specs(cfg, &src, g).map(move |spec| (g, spec)))
        .collect();
    if specs.is_empty() {
        return Err("config: the work sources hold no work (empty teacher shards or no record files)".into());
    }
    Ok(specs)
}

/// Self-play shards `shards` (numbered across the run; each seeded from the run's `seed`
/// and its number) of `[selfplay]`, searched with `search`, each with `openings_per_shard`
/// lines drawn from `openings`.
pub fn selfplay_specs<'a>(
    seed: u64,
    s: &'a SelfPlaySection,
    shards: Range<u64>,
    search: TeacherSearch,
    openings: &'a [String],
) -> impl Iterator<Item = ShardSpec> + 'a {
    shards.map(move |i| {
        let seed = engine_core::teacher::gensfen::game_seed(seed, 1_000_000 + i);
        let mut rng = engine_core::rng::Xoshiro256::new(seed);
        let picked = if openings.is_empty() {
            Vec::new()
        } else {
            let k = s.openings_per_shard.max(1);
            rng.distinct_indices(openings.len(), k).into_iter().map(|j| openings[j].clone()).collect()
        };
        ShardSpec::SelfPlay { seed, games: s.games_per_shard, openings: picked, search, play: s.play }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine_core::teacher::config::SearchLimit;

    #[test]
    fn a_schedules_record_shards_are_taken_in_order_and_start_over_with_its_limits() {
        let tmp = tempfile::Builder::new().prefix("keima-specs-").tempdir_in(std::env::temp_dir()).unwrap();
        let dir = tmp.path();
        for name in ["a", "b", "c"] {
            std::fs::write(dir.join(format!("{name}.usi")), "startpos moves 7g7f\n").unwrap();
        }
        let cfg = TrainConfig::from_toml(&format!(
            "seed = 9\n[records]\npaths = [{dir:?}]\nfiles_per_shard = 1\nlimit = {{ nodes = 100 }}\n\
             [selfplay]\nshards = 1\nlimit = {{ nodes = 50 }}\n\
             [[generation]]\nshards = 0\nrecord_shards = 2\n[[generation]]\nrecord_shards = 2\nlimit = {{ depth = 4 }}\n"
        ))
        .unwrap();
        let got: Vec<(u32, String, SearchLimit)> = build_specs(&cfg)
            .unwrap()
            .into_iter()
            .map(|(g, spec)| match spec {
                ShardSpec::Records { paths, search, .. } => {
                    (g, Path::new(&paths[0]).file_name().unwrap().to_string_lossy().into(), search.limit)
                }
                ShardSpec::SelfPlay { seed, search, .. } => {
                    assert_eq!(
                        seed,
                        engine_core::teacher::gensfen::game_seed(9, 1_000_000),
                        "the run's first"
                    );
                    (g, "selfplay".into(), search.limit)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        let (nodes, depth) = (SearchLimit::Nodes(100), SearchLimit::Depth(4));
        let expected = [
            (0, "a.usi", nodes),
            (0, "b.usi", nodes),
            (1, "c.usi", depth),
            (1, "a.usi", depth),
            (1, "selfplay", depth),
        ];
        assert_eq!(got, expected.map(|(g, f, l)| (g, f.to_string(), l)));
    }
}
