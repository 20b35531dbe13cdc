//! Teacher-generation settings, one type per concern, shared by `keima gensfen` (its
//! flags), `keima train`'s `[selfplay]` and `[records]` tables (flattened into them), the
//! wire's shard specs and the worker that runs them:
//!
//! - [`TeacherSearch`]: how every position is searched and which are written (self-play
//!   and record replay alike);
//! - [`SelfPlayGames`]: how self-play games are played;
//! - [`UnknownResult`]: what record replay does with a game without a result;
//! - [`GensfenConfig`]: all of them and the run's seed, what `gensfen` runs with.
//!
//! The defaults are those of a training run (`keima train`); `keima gensfen` states its
//! own in its flags (no search limit, no random moves).

use super::openings::Opening;
use crate::config::ConfigError;
use crate::search::Limits;
use serde::{Deserialize, Serialize};

/// How far each position is searched: `{ depth = 6 }` or `{ nodes = 1500 }` in TOML.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchLimit {
    Depth(i32),
    Nodes(u64),
}

impl SearchLimit {
    pub fn limits(self) -> Limits {
        match self {
            SearchLimit::Depth(d) => Limits::depth(d),
            SearchLimit::Nodes(n) => Limits::nodes(n),
        }
    }

    /// A depth or node count of at least 1.
    pub fn check(self, key: &str) -> Result<(), ConfigError> {
        match self {
            SearchLimit::Depth(d) if d < 1 => {
                Err(ConfigError::invalid(key, format!("depth {d}: give at least 1")))
            }
            SearchLimit::Nodes(0) => Err(ConfigError::invalid(key, "nodes 0: give at least 1")),
            _ => Ok(()),
        }
    }
}

/// What to do with a record whose result is unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownResult {
    /// Skip the whole game (counted in `GensfenStats::skipped_unknown_result_games`).
    #[default]
    Skip,
    /// Write its positions with game result 0.
    Draw,
    /// Assume the side that made the last move won (records of human games usually end
    /// with the loser resigning instead of moving); a game without moves is skipped.
    LastMoverWins,
}

/// How every teacher position is searched, and which are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TeacherSearch {
    pub limit: SearchLimit,
    /// Scores are clamped to ±eval_limit; in self-play, `|score| >= eval_limit` ends the game.
    pub eval_limit: i32,
    /// Positions with `ply() < write_minply` (SFEN move number) are not written.
    pub write_minply: u32,
    /// log2 of the number of slots of the duplicate filter (see `gensfen::KeyFilter`).
    pub dedupe_bits: u32,
}

impl Default for TeacherSearch {
    fn default() -> Self {
        TeacherSearch { limit: SearchLimit::Nodes(2000), eval_limit: 3000, write_minply: 16, dedupe_bits: 22 }
    }
}

impl TeacherSearch {
    /// `table` names the keys in errors (`[selfplay]`, or "" for flags).
    pub fn check(&self, table: &str) -> Result<(), ConfigError> {
        self.limit.check(&format!("{table}limit"))?;
        if self.eval_limit < 1 {
            return Err(ConfigError::invalid(
                format!("{table}eval_limit"),
                format!("{}: give a positive limit (e.g. 3000)", self.eval_limit),
            ));
        }
        Ok(())
    }
}

/// How self-play games are played.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfPlayGames {
    /// A game reaching this many moves from its start position is a draw.
    pub max_ply: u32,
    /// How many uniformly random legal moves to play per game ...
    pub random_moves: u32,
    /// ... at distinct plies (SFEN move numbers) drawn from `random_min_ply..=random_max_ply`;
    /// plies an opening has already played are never reached (`check_openings`).
    pub random_min_ply: u32,
    pub random_max_ply: u32,
}

impl Default for SelfPlayGames {
    fn default() -> Self {
        SelfPlayGames { max_ply: 256, random_moves: 8, random_min_ply: 1, random_max_ply: 24 }
    }
}

impl SelfPlayGames {
    /// Plies beyond any game; `random_plies` lists the range, so it must stay small.
    pub const MAX_RANDOM_PLY: u32 = 100_000;

    pub fn check(&self, table: &str) -> Result<(), ConfigError> {
        if self.random_max_ply > Self::MAX_RANDOM_PLY {
            return Err(ConfigError::invalid(
                format!("{table}random_max_ply"),
                format!("{} is beyond any game: at most {}", self.random_max_ply, Self::MAX_RANDOM_PLY),
            ));
        }
        if self.random_moves > 0 && self.random_min_ply > self.random_max_ply {
            return Err(ConfigError::invalid(
                format!("{table}random_min_ply"),
                format!("{} is above random_max_ply {}", self.random_min_ply, self.random_max_ply),
            ));
        }
        Ok(())
    }

    /// How many random moves a game from `opening` can play: its plies are drawn from the
    /// whole range, and those the opening has already played are never reached.
    pub fn random_moves_after(&self, opening: &Opening) -> f64 {
        // In u64: any u32 range from a config is counted without overflow.
        let (lo, hi) = (u64::from(self.random_min_ply), u64::from(self.random_max_ply));
        if self.random_moves == 0 || hi < lo {
            return 0.0;
        }
        let range = (hi - lo + 1) as f64;
        let drawn = f64::from(self.random_moves).min(range);
        // The first position a game searches (SFEN move number).
        let first = u64::from(opening.start.ply()) + opening.moves.len() as u64;
        let reachable = (hi + 1).saturating_sub(lo.max(first)) as f64;
        drawn * reachable / range
    }

    /// Checks the random moves against the openings the games start from, and returns how
    /// many a game plays on average. A range that lies inside every opening is an error:
    /// it would silently play none (24-move openings with the default plies 1..=24 did).
    pub fn check_openings(&self, table: &str, openings: &[Opening]) -> Result<f64, ConfigError> {
        if self.random_moves == 0 || openings.is_empty() {
            return Ok(0.0);
        }
        let mean = openings.iter().map(|o| self.random_moves_after(o)).sum::<f64>() / openings.len() as f64;
        if mean == 0.0 {
            let shortest = openings.iter().map(|o| o.start.ply() as usize + o.moves.len()).min().unwrap_or(1);
            return Err(ConfigError::invalid(
                format!("{table}random_max_ply"),
                format!(
                    "{}: every opening has been played to move {} or later, so none of the {} random \
                     moves would ever be played. Draw them after the openings (e.g. random_min_ply = \
                     {shortest}, random_max_ply = {}) or set random_moves = 0",
                    self.random_max_ply,
                    shortest.saturating_sub(1).max(1),
                    self.random_moves,
                    shortest + 31,
                ),
            ));
        }
        Ok(mean)
    }

    /// What to warn about when the openings leave a game fewer random moves than asked
    /// (`per_game` as `check_openings` returns it); `key` names the setting, e.g.
    /// `"[selfplay] random_moves = "`.
    pub fn lost_random_moves(&self, key: &str, per_game: f64) -> Option<String> {
        (per_game + 1e-9 < f64::from(self.random_moves)).then(|| {
            format!(
                "{key}{}: {per_game:.2} a game on average, since the openings already played part of plies {}..={}",
                self.random_moves, self.random_min_ply, self.random_max_ply
            )
        })
    }
}

/// Everything a teacher-generation run uses (its JSON is the `config` of a shard's
/// manifest: the parts are flattened, so the keys are those of the parts).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GensfenConfig {
    #[serde(flatten)]
    pub search: TeacherSearch,
    #[serde(flatten)]
    pub play: SelfPlayGames,
    /// Record replay: what to do with games whose result is unknown.
    pub unknown_result: UnknownResult,
    /// Game `i` of a self-play run is seeded from `(seed, i)`.
    pub seed: u64,
}

impl GensfenConfig {
    /// A self-play run.
    pub fn selfplay(search: TeacherSearch, play: SelfPlayGames, seed: u64) -> GensfenConfig {
        GensfenConfig { search, play, seed, ..GensfenConfig::default() }
    }

    /// A record replay.
    pub fn records(search: TeacherSearch, unknown_result: UnknownResult) -> GensfenConfig {
        GensfenConfig { search, unknown_result, ..GensfenConfig::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_as_tables_and_refuse_zero() {
        #[derive(Debug, Deserialize)]
        struct T {
            limit: SearchLimit,
        }
        let t: T = toml::from_str("limit = { nodes = 1500 }").unwrap();
        assert_eq!(t.limit, SearchLimit::Nodes(1500));
        let t: T = toml::from_str("limit = { depth = 6 }").unwrap();
        assert_eq!(t.limit, SearchLimit::Depth(6));
        assert!(toml::from_str::<T>("limit = { dpth = 6 }").unwrap_err().to_string().contains("dpth"));
        assert!(SearchLimit::Depth(0).check("limit").is_err());
        assert!(SearchLimit::Nodes(0).check("limit").is_err());
        let search = TeacherSearch { eval_limit: 0, ..TeacherSearch::default() };
        assert!(
            matches!(search.check("[selfplay] "), Err(ConfigError::Invalid { key, .. }) if key == "[selfplay] eval_limit")
        );
    }

    #[test]
    fn the_manifest_json_keeps_the_flat_keys() {
        let c = GensfenConfig::selfplay(TeacherSearch::default(), SelfPlayGames::default(), 5);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["limit"]["nodes"], 2000);
        assert_eq!(v["random_max_ply"], 24);
        assert_eq!(v["seed"], 5);
        assert_eq!(v["unknown_result"], "skip");
        assert_eq!(serde_json::from_value::<GensfenConfig>(v).unwrap(), c);
    }
}
