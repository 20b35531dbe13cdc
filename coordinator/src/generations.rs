//! Generations: a schedule of `[[generation]]` tables, each a batch of shards whose teacher
//! searches as deep as the generation says, merged with its own η and λ. Generation g + 1's
//! shards are leased only once every shard of generation g is merged and g's end step
//! (newbob, checkpoint: `core/generation_end.rs`) is done, so its self-play plays with the
//! newest weights. Without a schedule the run is one generation built from `[selfplay]`,
//! `[records]` and `[teacher]` as they are.
//!
//! This file: each generation's settings resolved against the base tables (a key a
//! `[[generation]]` table leaves out keeps the base table's value; the table and its checks
//! are in `config.rs`), and the run's progress through the schedule that checkpoints keep.

use crate::config::{Generation, TrainConfig};
use engine_core::learn::config::{AdaGradConfig, LossConfig};
use engine_core::learn::newbob::NewbobState;
use engine_core::teacher::config::TeacherSearch;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// The run's progress through its generations that the queue does not hold (kept in
/// checkpoints; an older checkpoint reads as the start).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenerationState {
    pub newbob: NewbobState,
    /// The version of the best weights, kept under `<run_dir>/best/` (`None` until newbob
    /// has accepted a generation).
    pub best_version: Option<u64>,
    /// The version a rollback made (0: none yet). A gradient computed before it was computed
    /// on weights that were rolled back: it is answered stale and its shard done again.
    pub rolled_back_at: u64,
}

/// Generations in the run (1 without a schedule).
pub fn count(cfg: &TrainConfig) -> u32 {
    cfg.generation.len().max(1) as u32
}

fn table(cfg: &TrainConfig, g: u32) -> Generation {
    cfg.generation.get(g as usize).copied().unwrap_or_default()
}

fn selfplay_count(cfg: &TrainConfig, g: u32) -> u64 {
    table(cfg, g).selfplay_shards(cfg.selfplay.as_ref())
}

/// The self-play shards of generation `g`, numbered across the run (a shard's seed derives
/// from its number, so every generation plays other games).
pub fn selfplay_shards(cfg: &TrainConfig, g: u32) -> Range<u64> {
    let start: u64 = (0..g).map(|h| selfplay_count(cfg, h)).sum();
    start..start + selfplay_count(cfg, g)
}

/// The record shards of generation `g`, numbered across the run: shard `i` is the `[records]`
/// file group `i mod groups`. Without a schedule: every group, once.
pub fn record_shards(cfg: &TrainConfig, g: u32, groups: u64) -> Range<u64> {
    if cfg.generation.is_empty() {
        return 0..groups;
    }
    let start: u64 = cfg.generation[..g as usize].iter().map(|x| x.record_shards).sum();
    start..start + table(cfg, g).record_shards
}

fn with_limit(search: TeacherSearch, cfg: &TrainConfig, g: u32) -> TeacherSearch {
    TeacherSearch { limit: table(cfg, g).limit.unwrap_or(search.limit), ..search }
}

/// The teacher settings of generation `g`'s self-play shards.
pub fn selfplay_search(cfg: &TrainConfig, g: u32) -> Option<TeacherSearch> {
    cfg.selfplay.as_ref().map(|s| with_limit(s.search, cfg, g))
}

/// The teacher settings of generation `g`'s record shards.
pub fn records_search(cfg: &TrainConfig, g: u32) -> Option<TeacherSearch> {
    cfg.records.as_ref().map(|r| with_limit(r.search, cfg, g))
}

/// The loss settings workers compute generation `g`'s gradients with.
pub fn loss(cfg: &TrainConfig, g: u32) -> LossConfig {
    let base = cfg.learn.loss;
    LossConfig { lambda: table(cfg, g).lambda.unwrap_or(base.lambda), ..base }
}

/// The AdaGrad settings generation `g`'s merges use, η scaled by newbob's `eta_scale`.
/// Without a schedule and without a decay these are `[adagrad]`'s exactly.
pub fn adagrad(cfg: &TrainConfig, g: u32, eta_scale: f64) -> AdaGradConfig {
    let base = cfg.learn.adagrad;
    let eta = table(cfg, g).eta.unwrap_or(base.eta);
    AdaGradConfig { eta: eta * eta_scale, eta_turn: base.eta_turn * (eta / base.eta) * eta_scale, ..base }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine_core::teacher::config::SearchLimit;

    const BASE: &str = "[adagrad]\neta = 2.0\neta_turn = 0.5\n[loss]\nlambda = 0.3\n\
                        [selfplay]\nshards = 4\nlimit = { nodes = 100 }\n\
                        [records]\npaths = [\"r\"]\nlimit = { depth = 2 }\n";

    fn parse(text: &str) -> TrainConfig {
        TrainConfig::from_toml(&format!("{BASE}{text}")).unwrap()
    }

    #[test]
    fn each_generation_overrides_the_base_tables_and_keeps_the_rest() {
        let c = parse(
            "[[generation]]\nrecord_shards = 3\n\
             [[generation]]\nshards = 10\nlimit = { depth = 6 }\neta = 4.0\nlambda = 0.5\nrecord_shards = 2\n",
        );
        assert_eq!(count(&c), 2);
        // Generation 0 keeps [selfplay] shards and the base limits, η and λ.
        assert_eq!((selfplay_shards(&c, 0), record_shards(&c, 0, 7)), (0..4, 0..3));
        assert_eq!(selfplay_search(&c, 0).unwrap().limit, SearchLimit::Nodes(100));
        assert_eq!(records_search(&c, 0).unwrap().limit, SearchLimit::Depth(2));
        assert_eq!((loss(&c, 0).lambda, adagrad(&c, 0, 1.0)), (0.3, c.learn.adagrad));
        // Generation 1: its own, numbered after generation 0's.
        assert_eq!((selfplay_shards(&c, 1), record_shards(&c, 1, 7)), (4..14, 3..5));
        assert_eq!(selfplay_search(&c, 1).unwrap().limit, SearchLimit::Depth(6));
        assert_eq!(records_search(&c, 1).unwrap().limit, SearchLimit::Depth(6));
        assert_eq!(loss(&c, 1), LossConfig { lambda: 0.5, ..c.learn.loss });
        let a = adagrad(&c, 1, 0.25);
        assert_eq!((a.eta, a.eta_turn, a.epsilon), (1.0, 0.25, c.learn.adagrad.epsilon));
    }

    #[test]
    fn without_a_schedule_the_run_is_one_generation_of_the_base_tables() {
        let c = parse("");
        assert_eq!(count(&c), 1);
        assert_eq!((selfplay_shards(&c, 0), record_shards(&c, 0, 7)), (0..4, 0..7));
        assert_eq!(adagrad(&c, 0, 1.0), c.learn.adagrad);
        assert_eq!(loss(&c, 0), c.learn.loss);
    }
}
