//! Bagging (research.md §3): P players learned from one data set for consultation. The
//! research draws M games with replacement from N; all players learn K of the draws in
//! common, then each learns its own (M − K)/P.
//!
//! Drawing with replacement is done record by record as it streams: record r is drawn
//! Poisson(rate) times, the count fixed by hashing the record's bytes with the run seed and
//! the phase, so a phase sees the same sample in every epoch, on resume, and whatever the
//! shuffle order. For large N this is the bootstrap (a record's count under M draws of N is
//! Binomial(M, 1/N) → Poisson(M/N)). `draws` = M/N and `common` = K/N are given as
//! multiples of the data; the common phase's rate is `common`, each player's
//! `(draws − common) / players`. Records are drawn, not games (a teacher shard does not
//! mark game boundaries).
//!
//! MNCL (model-based negative correlation learning): with `ncl_lambda` > 0, player i ≥ 2
//! minimises its loss − (λ / 2(i−1)) Σ_{j<i} ‖v_i − v_j‖² + (C/2)‖v_i‖², so its gradient
//! gains −λ(v_i − v̄) + C·v_i per example, v̄ being the mean of the earlier players' final
//! weights (read from their memory-mapped files). The players run in order, so v̄ is fixed
//! while player i learns. The term is added only at the weights the batch's gradient
//! touches, times the batch's examples: a weight no example of player i activates is not
//! pulled (no lazy correction), which keeps an update sparse and as cheap as without it.
//! Not with dimension reduction (the term is on raw weights).
//!
//! A run is a sequence of ordinary `keima learn` phases in `out_dir`: `common/`, then
//! `player-01/` … each starting from the common weights (copied, AdaGrad state kept). A
//! phase that finished is marked by a `done` file; run the same config again to continue
//! an interrupted run (an unfinished phase resumes from its newest checkpoint, exactly).

use super::config::LearnConfig;
use super::files::{CHECKPOINTS_DIR, WEIGHTS_FILE};
use super::trainer::{Progress, Trainer};
use super::validation::ValidationMetrics;
use super::weights::{Record, WeightFile};
use crate::config::ConfigError;
use crate::rng::mix64;
use crate::teacher::TeacherRecord;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `[bagging]` of `keima learn`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BaggingConfig {
    /// Players P (0 = no bagging: one ordinary run).
    pub players: usize,
    /// Draws M as a multiple of the records N (research: 40,000 of 20,000 games = 2.0).
    pub draws: f64,
    /// Draws K learned by every player, as a multiple of N (research: 25,000 / 20,000).
    pub common: f64,
    /// MNCL's λ (0 = plain bagging). The research: 1e-6 helped, 1e-4 diverged (its scale).
    pub ncl_lambda: f64,
    /// MNCL's C: a pull of every touched weight toward 0 against divergence.
    pub ncl_c: f64,
    /// Set by the bagging run for each phase's trainer (stored in its checkpoints); not
    /// for config files.
    pub phase: Option<BagPhase>,
}

impl Default for BaggingConfig {
    fn default() -> Self {
        BaggingConfig { players: 0, draws: 2.0, common: 1.25, ncl_lambda: 0.0, ncl_c: 0.0, phase: None }
    }
}

/// Which sample a trainer learns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BagPhase {
    Common,
    /// Player 1 … P.
    Player(usize),
}

impl BagPhase {
    /// The phase's directory under the run's `out_dir`.
    pub fn dir_name(self) -> String {
        match self {
            BagPhase::Common => "common".into(),
            BagPhase::Player(p) => format!("player-{p:02}"),
        }
    }

    fn salt(self) -> u64 {
        match self {
            BagPhase::Common => 0,
            BagPhase::Player(p) => p as u64,
        }
    }
}

impl BaggingConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        let finite = self.draws.is_finite() && self.common.is_finite();
        if self.players > 0
            && !(finite && self.common >= 0.0 && self.draws > self.common && self.draws <= 100.0)
        {
            return Err(ConfigError::invalid(
                "[bagging] draws, common",
                format!(
                    "need 0 <= common < draws <= 100, got common {} and draws {}",
                    self.common, self.draws
                ),
            ));
        }
        let ncl = [self.ncl_lambda, self.ncl_c];
        if ncl.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(ConfigError::invalid("[bagging] ncl_lambda, ncl_c", "must be finite and >= 0"));
        }
        Ok(())
    }

    /// Whether MNCL's term is on.
    pub fn ncl(&self) -> bool {
        self.players > 0 && (self.ncl_lambda > 0.0 || self.ncl_c > 0.0)
    }

    /// The mean number of times a record is drawn in `phase`.
    pub fn rate(&self, phase: BagPhase) -> f64 {
        match phase {
            BagPhase::Common => self.common,
            BagPhase::Player(_) => (self.draws - self.common) / self.players.max(1) as f64,
        }
    }
}

/// The smallest k with P(X ≤ k) ≥ u for X ~ Poisson(rate) (inverse transform).
pub fn poisson_quantile(rate: f64, u: f64) -> u32 {
    let mut p = (-rate).exp();
    let mut cdf = p;
    let mut k = 0u32;
    // The cap only guards against u rounding to 1; P(X > rate + 60) is negligible here.
    while u > cdf && (k as f64) < rate + 60.0 {
        k += 1;
        p *= rate / k as f64;
        cdf += p;
    }
    k
}

/// A uniform number in [0, 1) from the record's bytes, the seed and the phase.
fn record_uniform(seed: u64, phase: BagPhase, record: &TeacherRecord) -> f64 {
    let mut h = seed ^ phase.salt().wrapping_mul(0xd1b5_4a32_d192_ed03);
    for chunk in record.psv.to_bytes().chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = mix64(h ^ u64::from_le_bytes(w));
    }
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// How many times `record` is drawn in `phase` of a run seeded `seed`.
pub fn draw_count(cfg: &BaggingConfig, seed: u64, phase: BagPhase, record: &TeacherRecord) -> u32 {
    poisson_quantile(cfg.rate(phase), record_uniform(seed, phase, record))
}

/// MNCL's gradient at one weight: `examples` × (−λ(v − mean) + C·v).
pub fn ncl_gradient(v: f32, mean: f32, lambda: f64, c: f64, examples: f64) -> f32 {
    (examples * (-lambda * (v as f64 - mean as f64) + c * v as f64)) as f32
}

/// The earlier players' weight files of an MNCL player phase.
pub struct NclPeers {
    peers: Vec<WeightFile>,
    lambda: f64,
    c: f64,
}

impl NclPeers {
    /// `Some` for player i ≥ 2 of a run with MNCL on (player 1 has no earlier player).
    pub fn open(cfg: &LearnConfig) -> Result<Option<NclPeers>, String> {
        let Some(BagPhase::Player(i)) = cfg.bagging.phase else { return Ok(None) };
        if !cfg.bagging.ncl() || i < 2 {
            return Ok(None);
        }
        let run = cfg.out_dir.parent().ok_or("a bagging phase's out_dir has a parent")?;
        let peers = (1..i)
            .map(|j| {
                let path = run.join(BagPhase::Player(j).dir_name()).join(WEIGHTS_FILE);
                WeightFile::open(&path, false).map_err(|e| format!("MNCL peer {}: {e}", path.display()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(NclPeers { peers, lambda: cfg.bagging.ncl_lambda, c: cfg.bagging.ncl_c }))
    }

    /// Adds the term to every entry of a batch gradient (`own`: this player's weights).
    pub fn add_to(&self, own: &[Record], entries: &mut [(u32, [f32; 2])], examples: u64) {
        let n = self.peers.len() as f32;
        for (i, g) in entries.iter_mut() {
            let i = *i as usize;
            for part in 0..2 {
                let mean = self.peers.iter().map(|p| p.records()[i][part]).sum::<f32>() / n;
                g[part] += ncl_gradient(own[i][part], mean, self.lambda, self.c, examples as f64);
            }
        }
    }
}

/// Where a finished phase leaves its mark.
const DONE_FILE: &str = "done";

/// The config of one phase: its directory, its sample, and (players) the common weights
/// as the start.
pub fn phase_config(cfg: &LearnConfig, phase: BagPhase) -> LearnConfig {
    let mut c = cfg.clone();
    c.out_dir = cfg.out_dir.join(phase.dir_name());
    c.bagging.phase = Some(phase);
    if let BagPhase::Player(_) = phase {
        c.learn.init.kppt = None;
        c.learn.init.weights = Some(cfg.out_dir.join(BagPhase::Common.dir_name()).join(WEIGHTS_FILE));
    }
    c
}

/// The phase's trainer: a new one, or resumed from the phase's newest checkpoint. A
/// weight file without any checkpoint holds nothing committed (the phase died while
/// starting) and is started again.
fn phase_trainer(cfg: LearnConfig, dir: &Path) -> Result<Trainer, String> {
    if dir.join(CHECKPOINTS_DIR).is_dir() {
        return Trainer::resume(dir, None, Some(cfg.max_updates)).map(|(t, _)| t);
    }
    let weights = dir.join(WEIGHTS_FILE);
    if weights.exists() {
        std::fs::remove_file(&weights).map_err(|e| format!("{}: {e}", weights.display()))?;
    }
    Trainer::new(cfg)
}

/// Runs (or continues) every phase; returns each finished phase's directory (common first)
/// and the last phase's validation metrics.
pub fn run(
    cfg: &LearnConfig,
    progress: &mut dyn FnMut(BagPhase, &Progress),
) -> Result<(Vec<PathBuf>, Option<ValidationMetrics>), String> {
    cfg.check().map_err(|e| e.to_string())?;
    let phases = std::iter::once(BagPhase::Common).chain((1..=cfg.bagging.players).map(BagPhase::Player));
    let (mut dirs, mut last) = (Vec::new(), None);
    for phase in phases {
        let pc = phase_config(cfg, phase);
        let dir = pc.out_dir.clone();
        if !dir.join(DONE_FILE).exists() {
            let mut t = phase_trainer(pc, &dir)?;
            last = Some(t.run(&mut |p| progress(phase, p))?);
            crate::fsutil::write_atomic(&dir.join(DONE_FILE), format!("{}\n", t.state.updates).as_bytes())
                .map_err(|e| e.to_string())?;
        }
        dirs.push(dir);
    }
    Ok((dirs, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_quantile_matches_the_distribution() {
        // P(X = 0) = e^-rate: u just below it gives 0, just above gives 1.
        let rate = 0.75f64;
        let p0 = (-rate).exp();
        assert_eq!(poisson_quantile(rate, p0 - 1e-9), 0);
        assert_eq!(poisson_quantile(rate, p0 + 1e-9), 1);
        assert_eq!(poisson_quantile(rate, p0 + rate * p0 + 1e-9), 2);
        assert_eq!(poisson_quantile(0.0, 0.999), 0);
        // The mean and variance over a fine grid of u are the rate's.
        let n = 200_000;
        let (mut sum, mut sq) = (0.0, 0.0);
        for i in 0..n {
            let k = poisson_quantile(2.5, (i as f64 + 0.5) / n as f64) as f64;
            sum += k;
            sq += k * k;
        }
        let mean = sum / n as f64;
        assert!((mean - 2.5).abs() < 0.01, "{mean}");
        assert!((sq / n as f64 - mean * mean - 2.5).abs() < 0.02);
    }

    #[test]
    fn rates_and_checks() {
        let c = BaggingConfig { players: 10, draws: 2.0, common: 1.25, ..BaggingConfig::default() };
        assert_eq!(c.rate(BagPhase::Common), 1.25);
        assert!((c.rate(BagPhase::Player(3)) - 0.075).abs() < 1e-12);
        assert!(c.check().is_ok());
        assert!(BaggingConfig { common: 2.0, ..c }.check().is_err());
        assert!(BaggingConfig { draws: f64::NAN, ..c }.check().is_err());
        // Off: nothing is checked.
        assert!(BaggingConfig { players: 0, draws: -1.0, ..c }.check().is_ok());
        assert_eq!(BagPhase::Player(7).dir_name(), "player-07");
        assert!(BaggingConfig { ncl_lambda: -1.0, ..c }.check().is_err());
        assert!(!c.ncl() && BaggingConfig { ncl_c: 0.1, ..c }.ncl());
    }

    #[test]
    fn ncl_gradient_is_the_objectives() {
        // v = 3, mean 1: the λ term pushes away from the mean (gradient −λ·2 per example),
        // the C term toward 0 (C·3); 10 examples.
        assert!((ncl_gradient(3.0, 1.0, 0.5, 0.0, 10.0) - -10.0).abs() < 1e-6);
        assert!((ncl_gradient(3.0, 1.0, 0.0, 0.25, 10.0) - 7.5).abs() < 1e-6);
        assert_eq!(ncl_gradient(2.0, 2.0, 1.0, 0.0, 5.0), 0.0);
    }
}
