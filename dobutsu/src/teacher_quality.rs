//! How good is a teacher? On sampled positions with exact values, score a teacher's win
//! probability for the side to move: accuracy of the predicted winner on decided
//! positions, Brier score (draws count as 0.5), and calibration by probability bins.

use super::movegen::{MoveList, legal_moves};
use super::playout::Rng;
use super::rules::Position;
use super::solver::{Value, terminal_value};

/// Positions from uniform random games from the start (plies 2..=40, non-terminal), with
/// their exact values from `lookup` (positions missing from it are skipped).
pub fn sample_positions(n: usize, seed: u64, lookup: &dyn Fn(u64) -> Option<u8>) -> Vec<(Position, Value)> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(n);
    let mut list = MoveList::new();
    let mut guard = 0;
    while out.len() < n && guard < n * 100 {
        guard += 1;
        let mut p = Position::startpos();
        let plies = 2 + rng.below(39);
        let mut ok = true;
        for _ in 0..plies {
            legal_moves(&p, &mut list);
            if list.is_empty() || p.can_capture_lion() {
                ok = false;
                break;
            }
            p.do_move(list.as_slice()[rng.below(list.len())]);
        }
        if !ok || terminal_value(&p).is_some() {
            continue;
        }
        if let Some(b) = lookup(super::solver::table_key(&p)) {
            out.push((p, Value::from_byte(b)));
        }
    }
    out
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub positions: usize,
    pub decided: usize,
    /// Decided positions where (probability > 0.5) agrees with the exact winner.
    pub correct: usize,
    pub brier: f64,
    /// Per probability decile: (positions, mean predicted, mean actual score).
    pub bins: Vec<(usize, f64, f64)>,
}

impl Report {
    pub fn accuracy(&self) -> f64 {
        self.correct as f64 / self.decided.max(1) as f64
    }
    /// Expected calibration error: bin-size-weighted |predicted − actual|.
    pub fn calibration_error(&self) -> f64 {
        let n: usize = self.bins.iter().map(|b| b.0).sum();
        self.bins.iter().map(|b| b.0 as f64 * (b.1 - b.2).abs()).sum::<f64>() / n.max(1) as f64
    }
}

/// Scores teacher probabilities `preds[i]` (side to move wins) against `samples[i]`.
pub fn score(samples: &[(Position, Value)], preds: &[f64]) -> Report {
    let mut r = Report { positions: samples.len(), bins: vec![(0, 0.0, 0.0); 10], ..Default::default() };
    for ((_, v), &p) in samples.iter().zip(preds) {
        let actual = match v {
            Value::Win(_) => 1.0,
            Value::Loss(_) => 0.0,
            Value::Draw => 0.5,
        };
        if *v != Value::Draw {
            r.decided += 1;
            if (p > 0.5) == (actual > 0.5) && p != 0.5 {
                r.correct += 1;
            }
        }
        r.brier += (p - actual) * (p - actual);
        let b = ((p * 10.0) as usize).min(9);
        r.bins[b].0 += 1;
        r.bins[b].1 += p;
        r.bins[b].2 += actual;
    }
    r.brier /= samples.len().max(1) as f64;
    for b in r.bins.iter_mut() {
        if b.0 > 0 {
            b.1 /= b.0 as f64;
            b.2 /= b.0 as f64;
        }
    }
    r
}
