//! What a shard asks a worker to do ([`ShardSpec`]: the coordinator queues it and keeps it in
//! checkpoints, the worker runs it), in engine-core's settings types, and the one
//! conversion to and from the wire: [`ShardSpec`] ↔ `v1::lease::Kind`, `LossConfig` ↔
//! `v1::LossSpec`. What comes off the wire is checked as a config file is.

use crate::usi_engine_name::{self, EngineNameError};
use crate::v1;
use engine_core::config::ConfigError;
use engine_core::learn::config::LossConfig;
use engine_core::teacher::config::{SearchLimit, SelfPlayGames, TeacherSearch, UnknownResult};
use serde::{Deserialize, Serialize};

/// A shard's work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardSpec {
    /// Play `games` games with the current weights, each from an opening drawn from
    /// `openings` (USI lines; empty: the start position): `GensfenConfig::selfplay`.
    SelfPlay { seed: u64, games: u32, openings: Vec<String>, search: TeacherSearch, play: SelfPlayGames },
    /// Records `start..start + count` of an existing teacher shard: gradients only.
    Teacher { path: String, start: u64, count: u64 },
    /// Replay game record files and search every position: `GensfenConfig::records`.
    Records { paths: Vec<String>, search: TeacherSearch, unknown_result: UnknownResult },
    /// Games between checkpoint `version`'s exported weights (`eval_dir`) and a baseline
    /// (`baseline_dir`, `None`: material only) at `nodes` per move, each of `openings`
    /// played twice with colours swapped: `engine_core::play::engine_match`. With `usi`
    /// the baseline is instead an external USI engine the worker declared, and both sides
    /// play as USI processes under its clock (`nodes` unused).
    Match {
        version: u64,
        eval_dir: String,
        baseline_dir: Option<String>,
        nodes: u64,
        max_ply: u32,
        openings: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usi: Option<UsiBaseline>,
    },
}

/// A match shard's external USI engine, by the name a worker declared it under, and the
/// clock of both sides per game (milliseconds).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsiBaseline {
    pub engine: String,
    pub byoyomi_ms: u64,
    pub time_ms: u64,
    pub increment_ms: u64,
}

/// Longest clock setting a match shard may carry (an hour): a bound on what the wire asks.
pub const MAX_CLOCK_MS: u64 = 3_600_000;

impl UsiBaseline {
    /// A valid engine name and a clock that gives some time, none of it over an hour.
    pub fn check(&self) -> Result<(), SpecError> {
        usi_engine_name::check(&self.engine)?;
        let clock = [self.byoyomi_ms, self.time_ms, self.increment_ms];
        if clock.iter().all(|&ms| ms == 0) {
            return Err(SpecError::Match("a USI baseline's clock gives no time"));
        }
        if clock.iter().any(|&ms| ms > MAX_CLOCK_MS) {
            return Err(SpecError::Match("a USI baseline's clock is over an hour"));
        }
        Ok(())
    }
}

impl ShardSpec {
    /// A match shard (nothing learned from it), not a training shard.
    pub fn is_match(&self) -> bool {
        matches!(self, ShardSpec::Match { .. })
    }

    /// The external USI engine a worker must have to run this shard.
    pub fn usi_engine(&self) -> Option<&str> {
        match self {
            ShardSpec::Match { usi: Some(u), .. } => Some(&u.engine),
            _ => None,
        }
    }
}

/// Why a lease's work does not read.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("the lease has no {0} (a newer coordinator?)")]
    Missing(&'static str),
    #[error("the lease's unknown-result policy {0} is not one this worker knows")]
    UnknownResult(i32),
    #[error("the lease's settings: {0}")]
    Invalid(#[from] ConfigError),
    #[error("the match shard: {0}")]
    Match(&'static str),
    #[error("the match shard: {0}")]
    EngineName(#[from] EngineNameError),
}

impl From<ShardSpec> for v1::lease::Kind {
    fn from(spec: ShardSpec) -> Self {
        use v1::lease::Kind;
        match spec {
            ShardSpec::SelfPlay { seed, games, openings, search, play } => Kind::Selfplay(v1::SelfPlaySpec {
                seed,
                games,
                openings,
                search: Some(search_to_wire(search)),
                play: Some(v1::SelfPlayGames {
                    max_ply: play.max_ply,
                    random_moves: play.random_moves,
                    random_min_ply: play.random_min_ply,
                    random_max_ply: play.random_max_ply,
                }),
            }),
            ShardSpec::Teacher { path, start, count } => {
                Kind::Teacher(v1::TeacherSpec { path, start, count })
            }
            ShardSpec::Records { paths, search, unknown_result } => Kind::Records(v1::RecordsSpec {
                paths,
                search: Some(search_to_wire(search)),
                unknown_result: match unknown_result {
                    UnknownResult::Skip => v1::UnknownResult::Skip,
                    UnknownResult::Draw => v1::UnknownResult::Draw,
                    UnknownResult::LastMoverWins => v1::UnknownResult::LastMoverWins,
                } as i32,
            }),
            ShardSpec::Match { version, eval_dir, baseline_dir, nodes, max_ply, openings, usi } => {
                Kind::Match(v1::MatchSpec {
                    version,
                    eval_dir,
                    baseline_eval_dir: baseline_dir.unwrap_or_default(),
                    nodes,
                    max_ply,
                    openings,
                    usi: usi.map(|u| v1::UsiBaseline {
                        engine: u.engine,
                        byoyomi_ms: u.byoyomi_ms,
                        time_ms: u.time_ms,
                        increment_ms: u.increment_ms,
                    }),
                })
            }
        }
    }
}

impl TryFrom<v1::lease::Kind> for ShardSpec {
    type Error = SpecError;

    fn try_from(kind: v1::lease::Kind) -> Result<Self, SpecError> {
        use v1::lease::Kind;
        Ok(match kind {
            Kind::Selfplay(s) => {
                let p = s.play.ok_or(SpecError::Missing("self-play settings"))?;
                let play = SelfPlayGames {
                    max_ply: p.max_ply,
                    random_moves: p.random_moves,
                    random_min_ply: p.random_min_ply,
                    random_max_ply: p.random_max_ply,
                };
                play.check("")?;
                ShardSpec::SelfPlay {
                    seed: s.seed,
                    games: s.games,
                    openings: s.openings,
                    search: search_from_wire(s.search)?,
                    play,
                }
            }
            Kind::Teacher(t) => ShardSpec::Teacher { path: t.path, start: t.start, count: t.count },
            Kind::Records(r) => ShardSpec::Records {
                paths: r.paths,
                search: search_from_wire(r.search)?,
                unknown_result: match v1::UnknownResult::try_from(r.unknown_result) {
                    Ok(v1::UnknownResult::Skip) => UnknownResult::Skip,
                    Ok(v1::UnknownResult::Draw) => UnknownResult::Draw,
                    Ok(v1::UnknownResult::LastMoverWins) => UnknownResult::LastMoverWins,
                    Ok(v1::UnknownResult::Unspecified) | Err(_) => {
                        return Err(SpecError::UnknownResult(r.unknown_result));
                    }
                },
            },
            Kind::Match(m) => {
                if m.eval_dir.is_empty() {
                    return Err(SpecError::Match("no eval directory"));
                }
                let usi = m.usi.map(|u| UsiBaseline {
                    engine: u.engine,
                    byoyomi_ms: u.byoyomi_ms,
                    time_ms: u.time_ms,
                    increment_ms: u.increment_ms,
                });
                match &usi {
                    Some(u) => u.check()?,
                    None if m.nodes == 0 => return Err(SpecError::Match("nodes must be at least 1")),
                    None => {}
                }
                if m.max_ply == 0 {
                    return Err(SpecError::Match("max_ply must be at least 1"));
                }
                ShardSpec::Match {
                    version: m.version,
                    eval_dir: m.eval_dir,
                    baseline_dir: Some(m.baseline_eval_dir).filter(|d| !d.is_empty()),
                    nodes: m.nodes,
                    max_ply: m.max_ply,
                    openings: m.openings,
                    usi,
                }
            }
        })
    }
}

fn search_to_wire(s: TeacherSearch) -> v1::TeacherSearch {
    use v1::teacher_search::Limit;
    v1::TeacherSearch {
        limit: Some(match s.limit {
            SearchLimit::Depth(d) => Limit::Depth(d),
            SearchLimit::Nodes(n) => Limit::Nodes(n),
        }),
        eval_limit: s.eval_limit,
        write_minply: s.write_minply,
        dedupe_bits: s.dedupe_bits,
    }
}

fn search_from_wire(s: Option<v1::TeacherSearch>) -> Result<TeacherSearch, SpecError> {
    use v1::teacher_search::Limit;
    let s = s.ok_or(SpecError::Missing("search settings"))?;
    let search = TeacherSearch {
        limit: match s.limit.ok_or(SpecError::Missing("search limit"))? {
            Limit::Depth(d) => SearchLimit::Depth(d),
            Limit::Nodes(n) => SearchLimit::Nodes(n),
        },
        eval_limit: s.eval_limit,
        write_minply: s.write_minply,
        dedupe_bits: s.dedupe_bits,
    };
    search.check("")?;
    Ok(search)
}

impl From<LossConfig> for v1::LossSpec {
    fn from(l: LossConfig) -> Self {
        v1::LossSpec { lambda: l.lambda, eval_limit: l.eval_limit, skip_draws: l.skip_draws }
    }
}

impl TryFrom<v1::LossSpec> for LossConfig {
    type Error = SpecError;

    fn try_from(l: v1::LossSpec) -> Result<Self, SpecError> {
        let loss = LossConfig { lambda: l.lambda, eval_limit: l.eval_limit, skip_draws: l.skip_draws };
        loss.check()?;
        Ok(loss)
    }
}

/// A lease's work and loss settings, as the worker runs them.
pub fn lease_work(lease: &v1::Lease) -> Result<(ShardSpec, LossConfig), SpecError> {
    let loss = LossConfig::try_from(lease.loss.ok_or(SpecError::Missing("loss settings"))?)?;
    let kind = lease.kind.clone().ok_or(SpecError::Missing("work kind"))?;
    Ok((ShardSpec::try_from(kind)?, loss))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<ShardSpec> {
        let search = TeacherSearch {
            limit: SearchLimit::Depth(7),
            eval_limit: 2500,
            write_minply: 20,
            dedupe_bits: 18,
        };
        let play = SelfPlayGames { max_ply: 300, random_moves: 5, random_min_ply: 3, random_max_ply: 30 };
        vec![
            ShardSpec::SelfPlay {
                seed: 9,
                games: 4,
                openings: vec!["startpos moves 7g7f".into()],
                search,
                play,
            },
            ShardSpec::Teacher { path: "t.psv.zst".into(), start: 10, count: 20 },
            ShardSpec::Records {
                paths: vec!["a.csa".into()],
                search: TeacherSearch { limit: SearchLimit::Nodes(1500), ..search },
                unknown_result: UnknownResult::LastMoverWins,
            },
            ShardSpec::Match {
                version: 40,
                eval_dir: "run/elo/v000000000040".into(),
                baseline_dir: Some("run/elo/v000000000020".into()),
                nodes: 5000,
                max_ply: 256,
                openings: vec!["startpos moves 2g2f".into()],
                usi: None,
            },
            ShardSpec::Match {
                version: 20,
                eval_dir: "run/elo/v000000000020".into(),
                baseline_dir: None,
                nodes: 1,
                max_ply: 1,
                openings: Vec::new(),
                usi: None,
            },
            ShardSpec::Match {
                version: 60,
                eval_dir: "run/elo/v000000000060".into(),
                baseline_dir: None,
                nodes: 0,
                max_ply: 320,
                openings: vec!["startpos".into()],
                usi: Some(UsiBaseline {
                    engine: "gps".into(),
                    byoyomi_ms: 1000,
                    time_ms: 0,
                    increment_ms: 0,
                }),
            },
        ]
    }

    #[test]
    fn every_setting_survives_the_wire() {
        for spec in specs() {
            let back = ShardSpec::try_from(v1::lease::Kind::from(spec.clone())).unwrap();
            assert_eq!(back, spec);
        }
        assert_eq!((specs()[5].usi_engine(), specs()[3].usi_engine()), (Some("gps"), None));
        let loss = LossConfig { lambda: 0.7, eval_limit: 2000, skip_draws: true };
        assert_eq!(LossConfig::try_from(v1::LossSpec::from(loss)).unwrap(), loss);
    }

    #[test]
    fn incomplete_or_invalid_work_is_refused() {
        use v1::lease::Kind;
        let Kind::Records(mut r) = Kind::from(specs().remove(2)) else { unreachable!() };
        r.unknown_result = 0;
        assert!(matches!(ShardSpec::try_from(Kind::Records(r.clone())), Err(SpecError::UnknownResult(0))));
        r.unknown_result = v1::UnknownResult::Skip as i32;
        r.search.as_mut().unwrap().limit = Some(v1::teacher_search::Limit::Nodes(0));
        assert!(matches!(ShardSpec::try_from(Kind::Records(r.clone())), Err(SpecError::Invalid(_))));
        r.search.as_mut().unwrap().limit = None;
        assert!(matches!(ShardSpec::try_from(Kind::Records(r)), Err(SpecError::Missing(_))));
        let Kind::Match(m) = Kind::from(specs().remove(3)) else { unreachable!() };
        for bad in [
            v1::MatchSpec { nodes: 0, ..m.clone() },
            v1::MatchSpec { max_ply: 0, ..m.clone() },
            v1::MatchSpec { eval_dir: String::new(), ..m },
        ] {
            assert!(matches!(ShardSpec::try_from(Kind::Match(bad)), Err(SpecError::Match(_))));
        }
        // Against a USI engine: a plain name and a clock that gives some time, at most an hour.
        let Kind::Match(m) = Kind::from(specs().remove(5)) else { unreachable!() };
        let u = m.usi.clone().unwrap();
        let with = |usi: v1::UsiBaseline| Kind::Match(v1::MatchSpec { usi: Some(usi), ..m.clone() });
        for (bad, expect_name_error) in [
            (v1::UsiBaseline { engine: "/usr/games/gpsusi".into(), ..u.clone() }, true),
            (v1::UsiBaseline { engine: String::new(), ..u.clone() }, true),
            (v1::UsiBaseline { engine: "x".repeat(33), ..u.clone() }, true),
            (v1::UsiBaseline { byoyomi_ms: 0, ..u.clone() }, false),
            (v1::UsiBaseline { time_ms: MAX_CLOCK_MS + 1, ..u.clone() }, false),
        ] {
            match ShardSpec::try_from(with(bad.clone())) {
                Err(SpecError::EngineName(_)) if expect_name_error => {}
                Err(SpecError::Match(_)) if !expect_name_error => {}
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert!(ShardSpec::try_from(with(v1::UsiBaseline { byoyomi_ms: 0, increment_ms: 100, ..u })).is_ok());
        let bad = v1::LossSpec { lambda: 1.5, ..Default::default() };
        assert!(matches!(LossConfig::try_from(bad), Err(SpecError::Invalid(_))));
    }
}
