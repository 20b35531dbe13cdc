//! `[elo]`: Elo tracked by the cluster. For every checkpoint whose version is a multiple of
//! `every`, and for the checkpoint at the end of training, the coordinator exports the
//! weights and queues match shards of `games_per_shard` games (game pairs: each opening
//! twice, colours swapped) against the baseline, `games` in all, at `nodes` per move;
//! openings are drawn from `openings` with `seed` and the checkpoint's version. Without the
//! table nothing of this happens.
//!
//! `baseline = { usi = "NAME" }` plays an external USI engine that workers declare under
//! NAME (`keima worker --usi-engine NAME=COMMAND`, or `[local_workers.usi_engines.NAME]`):
//! both sides then play as USI processes under a clock (`byoyomi_ms`, and/or `time_ms` +
//! `increment_ms`, one of them required), not at `nodes`.

use engine_core::config::ConfigError;
use keima_proto::spec::MAX_CLOCK_MS;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a checkpoint plays against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// Material-only evaluation.
    Material,
    /// The previous matched checkpoint (material for the first).
    Previous,
    /// An external USI engine, by the name workers declare it under.
    Usi(String),
}

impl Baseline {
    /// How the Elo line names it (`material`, `usi:gps`; `previous` names a version).
    pub fn usi_label(name: &str) -> String {
        format!("usi:{name}")
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EloSection {
    /// Match checkpoints whose version is a multiple of this (only versions a checkpoint is
    /// written at: make it a multiple of `[coordinator] checkpoint_every`). The checkpoint at
    /// the end of training is matched wherever it falls.
    pub every: u64,
    pub baseline: Baseline,
    /// Games per matched checkpoint (even).
    pub games: u32,
    /// Games per match shard (even: whole game pairs).
    pub games_per_shard: u32,
    /// Nodes per move, both sides (one search thread: reproducible). Not used against a
    /// USI baseline.
    pub nodes: u64,
    /// Against a USI baseline: byoyomi per move, ms (GPS Shogi budgets whole seconds:
    /// give it at least 1000).
    pub byoyomi_ms: u64,
    /// Against a USI baseline: main time per side and game, ms.
    pub time_ms: u64,
    /// Against a USI baseline: increment per move, ms.
    pub increment_ms: u64,
    /// A game reaching this many moves is a draw.
    pub max_ply: u32,
    /// USI opening lines, one per line (required).
    pub openings: PathBuf,
    pub seed: u64,
}

impl Default for EloSection {
    fn default() -> Self {
        EloSection {
            every: 100,
            baseline: Baseline::Material,
            games: 400,
            games_per_shard: 20,
            nodes: 5000,
            byoyomi_ms: 0,
            time_ms: 0,
            increment_ms: 0,
            max_ply: 320,
            openings: PathBuf::new(),
            seed: 7,
        }
    }
}

impl EloSection {
    pub fn check(&self) -> Result<(), ConfigError> {
        let positive = [
            ("[elo] every", self.every),
            ("[elo] games", u64::from(self.games)),
            ("[elo] games_per_shard", u64::from(self.games_per_shard)),
            ("[elo] nodes", self.nodes),
            ("[elo] max_ply", u64::from(self.max_ply)),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(ConfigError::invalid(key, "must be at least 1"));
            }
        }
        for (key, value) in [("[elo] games", self.games), ("[elo] games_per_shard", self.games_per_shard)] {
            if value % 2 != 0 {
                return Err(ConfigError::invalid(
                    key,
                    format!("{value} is odd: games are played in pairs (each opening with colours swapped)"),
                ));
            }
        }
        let clock = [self.byoyomi_ms, self.time_ms, self.increment_ms];
        match &self.baseline {
            Baseline::Usi(name) => {
                keima_proto::usi_engine_name::check(name)
                    .map_err(|e| ConfigError::invalid("[elo] baseline", e.to_string()))?;
                if clock.iter().all(|&ms| ms == 0) {
                    return Err(ConfigError::invalid(
                        "[elo] byoyomi_ms",
                        "required with a USI baseline (or time_ms / increment_ms): an external engine \
                         cannot be held to a node budget; e.g. byoyomi_ms = 1000 (GPS Shogi needs at \
                         least 1000: it budgets whole seconds)",
                    ));
                }
                for (key, ms) in [
                    ("[elo] byoyomi_ms", self.byoyomi_ms),
                    ("[elo] time_ms", self.time_ms),
                    ("[elo] increment_ms", self.increment_ms),
                ] {
                    if ms > MAX_CLOCK_MS {
                        return Err(ConfigError::invalid(key, format!("{ms} is over an hour")));
                    }
                }
            }
            Baseline::Material | Baseline::Previous => {
                if clock.iter().any(|&ms| ms > 0) {
                    return Err(ConfigError::invalid(
                        "[elo] byoyomi_ms",
                        "byoyomi_ms, time_ms and increment_ms apply only to a USI baseline \
                         (baseline = { usi = \"NAME\" }); Keima's in-process matches play at `nodes`",
                    ));
                }
            }
        }
        if self.openings.as_os_str().is_empty() {
            return Err(ConfigError::invalid("[elo] openings", "required: a file of USI opening lines"));
        }
        Ok(())
    }

    /// The warning a run starts with when `every` is not a multiple of the checkpoint
    /// interval: only versions that are multiples of both are checkpointed and matched, so
    /// a run would get fewer Elo points than `every` suggests (and no error says so).
    pub fn sparse_points_warning(&self, checkpoint_every: u64) -> Option<String> {
        if checkpoint_every == 0 || self.every.is_multiple_of(checkpoint_every) {
            return None;
        }
        let (mut a, mut b) = (self.every, checkpoint_every);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let matched = self.every / a * checkpoint_every;
        Some(format!(
            "[elo] every = {} is not a multiple of [coordinator] checkpoint_every = {checkpoint_every}: only \
             checkpoints are matched, so Elo points come every {matched} merges (and at the final \
             checkpoint); set every to a multiple of {checkpoint_every} to match every {} merges",
            self.every, self.every
        ))
    }

    /// Whether checkpoint `version` is matched.
    pub fn due(&self, version: u64) -> bool {
        version > 0 && version.is_multiple_of(self.every)
    }

    /// The games of each match shard of one checkpoint.
    pub fn shard_games(&self) -> Vec<u32> {
        let mut left = self.games;
        let mut out = Vec::new();
        while left > 0 {
            let n = left.min(self.games_per_shard);
            out.push(n);
            left -= n;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::config::TrainConfig;
    use crate::elo_config::Baseline;
    use engine_core::config::ConfigError;

    const BASE: &str = "[selfplay]\nshards = 4\n";

    fn parse(elo: &str) -> Result<TrainConfig, ConfigError> {
        TrainConfig::from_toml(&format!("{BASE}[elo]\nopenings = \"o.sfen\"\n{elo}"))
    }

    #[test]
    fn an_every_off_the_checkpoint_grid_is_warned_about() {
        let every = |n: u64| {
            let mut e = parse("").unwrap().elo.unwrap();
            e.every = n;
            e
        };
        assert_eq!(every(200).sparse_points_warning(100), None);
        assert_eq!(every(2).sparse_points_warning(1), None);
        assert_eq!(every(250).sparse_points_warning(0), None);
        let w = every(250).sparse_points_warning(100).expect("250 is off a grid of 100");
        assert!(w.contains("come every 500 merges"), "{w}");
        let w = every(30).sparse_points_warning(20).expect("30 is off a grid of 20");
        assert!(w.contains("come every 60 merges"), "{w}");
    }

    #[test]
    fn an_elo_table_parses_with_its_defaults_and_every_key() {
        let c = parse("").unwrap().elo.unwrap();
        assert_eq!((c.every, c.games, c.games_per_shard, c.nodes), (100, 400, 20, 5000));
        assert_eq!(c.baseline, Baseline::Material);
        let c = parse(
            "every = 40\nbaseline = \"previous\"\ngames = 10\ngames_per_shard = 4\nnodes = 300\nmax_ply = 90\nseed = 5\n",
        )
        .unwrap()
        .elo
        .unwrap();
        assert_eq!((c.every, &c.baseline, c.games, c.games_per_shard), (40, &Baseline::Previous, 10, 4));
        assert_eq!((c.nodes, c.max_ply, c.seed), (300, 90, 5));
        assert_eq!(c.shard_games(), vec![4, 4, 2], "the last shard holds the games left");
        assert!(c.due(80) && !c.due(0) && !c.due(60));
        assert_eq!(TrainConfig::from_toml(BASE).unwrap().elo, None, "no [elo]: no matches");
        let c =
            parse("baseline = { usi = \"gps\" }\nbyoyomi_ms = 1000\ntime_ms = 5000\nincrement_ms = 100\n")
                .unwrap()
                .elo
                .unwrap();
        assert_eq!(c.baseline, Baseline::Usi("gps".into()));
        assert_eq!((c.byoyomi_ms, c.time_ms, c.increment_ms), (1000, 5000, 100));
    }

    #[test]
    fn bad_elo_keys_are_refused_by_name() {
        for (text, key) in [
            ("games_per_shard = 3\n", "[elo] games_per_shard"),
            ("games = 7\n", "[elo] games"),
            ("every = 0\n", "[elo] every"),
            ("nodes = 0\n", "[elo] nodes"),
            ("max_ply = 0\n", "[elo] max_ply"),
        ] {
            match parse(text) {
                Err(ConfigError::Invalid { key: k, problem }) => {
                    assert_eq!(k, key, "{text}");
                    if text.contains("3\n") {
                        assert!(problem.contains("odd"), "{problem}");
                    }
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let no_openings = TrainConfig::from_toml(&format!("{BASE}[elo]\nevery = 2\n"));
        assert!(
            matches!(no_openings, Err(ConfigError::Invalid { ref key, .. }) if key == "[elo] openings"),
            "{no_openings:?}"
        );
        for (text, key, needle) in [
            ("baseline = { usi = \"gps\" }\n", "[elo] byoyomi_ms", "required with a USI baseline"),
            (
                "baseline = { usi = \"/usr/games/gpsusi\" }\nbyoyomi_ms = 1000\n",
                "[elo] baseline",
                "only ASCII",
            ),
            ("baseline = { usi = \"\" }\nbyoyomi_ms = 1000\n", "[elo] baseline", "empty"),
            ("baseline = { usi = \"gps\" }\nbyoyomi_ms = 3600001\n", "[elo] byoyomi_ms", "over an hour"),
            ("byoyomi_ms = 1000\n", "[elo] byoyomi_ms", "only to a USI baseline"),
        ] {
            match parse(text) {
                Err(ConfigError::Invalid { key: k, problem }) => {
                    assert_eq!(k, key, "{text}");
                    assert!(problem.contains(needle), "{text}: {problem}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        for (text, unknown) in [("evry = 2\n", "evry"), ("baseline = \"best\"\n", "best")] {
            let e = parse(text).unwrap_err();
            assert!(matches!(e, ConfigError::Toml(_)) && e.to_string().contains(unknown), "{e}");
        }
    }
}
