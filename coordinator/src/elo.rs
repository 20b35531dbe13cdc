//! Elo tracked by the cluster, as plain data: a match shard's result (`MatchTally`, checked
//! against its shard), the matches queued per checkpoint and the points measured
//! (`EloState`, kept in checkpoints), the Elo of a checkpoint's summed results
//! (`EloPoint`), and the result files that make a recorded result survive a crash before
//! the next checkpoint (`elo/results/shard-<id>.json`, written atomically before the push
//! is acknowledged; a resume applies those its checkpoint does not hold).

use crate::fsutil::{IoError, write_atomic};
use engine_core::play::{MatchStats, Pentanomial};
use keima_proto::v1;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A match shard's games from the tested weights' view, and the worker CPU they took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MatchTally {
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    /// Game pairs scoring 0, ½, 1, 1½, 2 points.
    pub pentanomial: [u32; 5],
    pub cpu_seconds: f64,
    /// Games the tested side, and the baseline, lost on time (USI baselines; 0 in-process).
    #[serde(default)]
    pub time_losses: u32,
    #[serde(default)]
    pub baseline_time_losses: u32,
}

impl MatchTally {
    /// A pushed result, checked against a shard of `pairs` openings (each a game pair):
    /// every game counted once, the pairs adding up to the same points.
    pub fn from_wire(r: &v1::MatchResult, pairs: usize, cpu_seconds: f64) -> Result<MatchTally, String> {
        let pentanomial: [u32; 5] = r.pentanomial.as_slice().try_into().map_err(|_| {
            format!("a match result needs 5 pentanomial cells, the push has {}", r.pentanomial.len())
        })?;
        let games = u64::from(r.wins) + u64::from(r.draws) + u64::from(r.losses);
        if games != 2 * pairs as u64 {
            return Err(format!("a match result of {games} games for a shard of {} games", 2 * pairs));
        }
        if pentanomial.iter().map(|&c| u64::from(c)).sum::<u64>() != pairs as u64 {
            return Err(format!("the pentanomial counts do not add up to the shard's {pairs} game pairs"));
        }
        let half_points: u64 = pentanomial.iter().enumerate().map(|(k, &c)| k as u64 * u64::from(c)).sum();
        if half_points != 2 * u64::from(r.wins) + u64::from(r.draws) {
            return Err("the pentanomial counts and W/D/L score different points".into());
        }
        if u64::from(r.time_losses) > u64::from(r.losses)
            || u64::from(r.baseline_time_losses) > u64::from(r.wins)
        {
            return Err("more time losses than games lost".into());
        }
        Ok(MatchTally {
            wins: r.wins,
            draws: r.draws,
            losses: r.losses,
            pentanomial,
            cpu_seconds,
            time_losses: r.time_losses,
            baseline_time_losses: r.baseline_time_losses,
        })
    }

    pub fn add(&mut self, o: &MatchTally) {
        self.wins += o.wins;
        self.draws += o.draws;
        self.losses += o.losses;
        for (a, b) in self.pentanomial.iter_mut().zip(o.pentanomial) {
            *a += b;
        }
        self.cpu_seconds += o.cpu_seconds;
        self.time_losses += o.time_losses;
        self.baseline_time_losses += o.baseline_time_losses;
    }

    pub fn stats(&self) -> MatchStats {
        MatchStats { wins: self.wins, draws: self.draws, losses: self.losses }
    }

    pub fn pairs(&self) -> Pentanomial {
        Pentanomial { counts: self.pentanomial }
    }
}

/// A checkpoint whose match shards are queued and not all in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingMatch {
    /// "material", the version of the previous matched checkpoint ("v<version>"), or an
    /// external USI engine ("usi:<name>").
    pub baseline: String,
    /// Training CPU hours when the checkpoint was written.
    pub cpu_hours: f64,
}

/// One checkpoint's measured strength against its baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EloPoint {
    pub version: u64,
    pub baseline: String,
    pub games: u32,
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
    pub pentanomial: [u32; 5],
    /// Logistic Elo from W/D/L with its 95% interval (`play::match_stats`); `None` where
    /// infinite (a score of 0% or 100%, or a bound beyond them).
    pub elo: Option<f64>,
    pub elo_lower: Option<f64>,
    pub elo_upper: Option<f64>,
    pub cpu_hours: f64,
    pub match_cpu_hours: f64,
    /// Games the tested side, and the baseline, lost on time (a USI baseline's clock).
    #[serde(default)]
    pub time_losses: u32,
    #[serde(default)]
    pub baseline_time_losses: u32,
}

impl EloPoint {
    pub fn new(version: u64, pending: &PendingMatch, t: &MatchTally) -> EloPoint {
        let e = t.stats().elo();
        let finite = |v: f64| v.is_finite().then_some(v);
        EloPoint {
            version,
            baseline: pending.baseline.clone(),
            games: t.stats().games(),
            wins: t.wins,
            draws: t.draws,
            losses: t.losses,
            pentanomial: t.pentanomial,
            elo: e.and_then(|e| finite(e.elo)),
            elo_lower: e.and_then(|e| finite(e.lower)),
            elo_upper: e.and_then(|e| finite(e.upper)),
            cpu_hours: pending.cpu_hours,
            match_cpu_hours: t.cpu_seconds / 3600.0,
            time_losses: t.time_losses,
            baseline_time_losses: t.baseline_time_losses,
        }
    }
}

/// What a run knows about its matches (saved in checkpoints).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EloState {
    /// Checkpoint versions whose match shards are queued, not all in yet.
    pub pending: BTreeMap<u64, PendingMatch>,
    /// Measured checkpoints, oldest first.
    pub points: Vec<EloPoint>,
    /// The newest matched checkpoint's eval directory and version (`baseline = "previous"`).
    pub previous: Option<(String, u64)>,
}

impl EloState {
    /// Whether checkpoint `version` has been matched or its matches are queued.
    pub fn knows(&self, version: u64) -> bool {
        self.pending.contains_key(&version) || self.points.iter().any(|p| p.version == version)
    }
}

/// `<run_dir>/elo`: exported checkpoints (`v<version>/`) and result files.
pub fn root(run_dir: &Path) -> PathBuf {
    run_dir.join("elo")
}

/// Where checkpoint `version`'s weights are exported for its matches.
pub fn eval_dir(run_dir: &Path, version: u64) -> PathBuf {
    root(run_dir).join(format!("v{version:012}"))
}

fn results_dir(run_dir: &Path) -> PathBuf {
    root(run_dir).join("results")
}

/// A recorded result on disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultFile {
    pub shard_id: u64,
    /// The checkpoint version its shard matched (a resume applies it only to that shard).
    pub version: u64,
    pub tally: MatchTally,
}

/// Writes a result durably (before the push is acknowledged).
pub fn write_result(run_dir: &Path, r: &ResultFile) -> Result<(), IoError> {
    let path = results_dir(run_dir).join(format!("shard-{:012}.json", r.shard_id));
    let json = serde_json::to_vec(r).expect("a result file serializes (plain numbers)");
    write_atomic(&path, &json)
}

/// Every result file, in shard order.
pub fn read_results(run_dir: &Path) -> Result<Vec<ResultFile>, String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(results_dir(run_dir)).into_iter().flatten().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") {
            let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            out.push(serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", p.display()))?);
        }
    }
    out.sort_by_key(|r: &ResultFile| r.shard_id);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(wins: u32, draws: u32, losses: u32, pentanomial: Vec<u32>) -> v1::MatchResult {
        v1::MatchResult { wins, draws, losses, pentanomial, time_losses: 0, baseline_time_losses: 0 }
    }

    #[test]
    fn a_result_must_fit_its_shard() {
        let ok = MatchTally::from_wire(&wire(2, 1, 1, vec![0, 0, 1, 1, 0]), 2, 3.0).unwrap();
        assert_eq!((ok.wins, ok.draws, ok.losses, ok.pentanomial), (2, 1, 1, [0, 0, 1, 1, 0]));
        let timed =
            v1::MatchResult { time_losses: 1, baseline_time_losses: 2, ..wire(2, 1, 1, vec![0, 0, 1, 1, 0]) };
        let t = MatchTally::from_wire(&timed, 2, 0.0).unwrap();
        assert_eq!((t.time_losses, t.baseline_time_losses), (1, 2));
        for (bad, why) in [
            (wire(2, 1, 0, vec![0, 0, 1, 1, 0]), "3 games"),
            (wire(2, 1, 1, vec![0, 0, 1, 1]), "5 pentanomial cells"),
            (wire(2, 1, 1, vec![0, 0, 2, 1, 0]), "game pairs"),
            (wire(2, 1, 1, vec![0, 1, 0, 1, 0]), "different points"),
            (v1::MatchResult { time_losses: 2, ..wire(2, 1, 1, vec![0, 0, 1, 1, 0]) }, "time losses"),
            (
                v1::MatchResult { baseline_time_losses: 3, ..wire(2, 1, 1, vec![0, 0, 1, 1, 0]) },
                "time losses",
            ),
        ] {
            let e = MatchTally::from_wire(&bad, 2, 0.0).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn the_elo_point_of_a_known_result() {
        // W6 D2 L2: s = 0.7, +147.2 [-33.4, +504.0] (play::match_stats' known answer).
        let t = MatchTally {
            wins: 6,
            draws: 2,
            losses: 2,
            pentanomial: [0, 1, 1, 1, 2],
            cpu_seconds: 7200.0,
            time_losses: 1,
            baseline_time_losses: 0,
        };
        let pending = PendingMatch { baseline: "material".into(), cpu_hours: 1.5 };
        let p = EloPoint::new(40, &pending, &t);
        assert_eq!((p.version, p.games, p.wins, p.draws, p.losses), (40, 10, 6, 2, 2));
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-6;
        assert!(close(p.elo, 147.190_714_117_837_76), "{:?}", p.elo);
        assert!(close(p.elo_lower, -33.399_350_001_688_85), "{:?}", p.elo_lower);
        assert!(close(p.elo_upper, 504.033_292_244_989_87), "{:?}", p.elo_upper);
        assert_eq!((p.cpu_hours, p.match_cpu_hours), (1.5, 2.0));
        assert_eq!((p.time_losses, p.baseline_time_losses), (1, 0));
        // All won: infinite, written as null.
        let all = MatchTally { wins: 4, pentanomial: [0, 0, 0, 0, 2], ..MatchTally::default() };
        let p = EloPoint::new(41, &pending, &all);
        assert_eq!((p.elo, p.elo_lower, p.elo_upper), (None, None, None));
    }
}
