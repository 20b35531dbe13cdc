//! Bagging's sample and MNCL's term, used inside the training loop (see `bagging` for the
//! method): how many times a record is drawn in a phase, and the negative-correlation
//! gradient of a later player against the earlier players' weights.

use super::config::{BagPhase, BaggingConfig, LearnConfig};
use super::files::WEIGHTS_FILE;
use super::weights::{Record, WeightFile};
use crate::rng::mix64;
use crate::teacher::TeacherRecord;

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
    fn ncl_gradient_is_the_objectives() {
        // v = 3, mean 1: the λ term pushes away from the mean (gradient −λ·2 per example),
        // the C term toward 0 (C·3); 10 examples.
        assert!((ncl_gradient(3.0, 1.0, 0.5, 0.0, 10.0) - -10.0).abs() < 1e-6);
        assert!((ncl_gradient(3.0, 1.0, 0.0, 0.25, 10.0) - 7.5).abs() < 1e-6);
        assert_eq!(ncl_gradient(2.0, 2.0, 1.0, 0.0, 5.0), 0.0);
    }
}
