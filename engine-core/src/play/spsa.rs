//! SPSA (simultaneous perturbation stochastic approximation) over game pairs, the way
//! distributed engine testing tunes a search's numbers: every iteration moves all
//! parameters at once by ±c (random signs), plays one game pair between θ + cδ and θ − cδ
//! (colours swapped), and steps θ along δ by how much the plus side won.
//!
//! Schedules as in Spall's paper and fishtest: c_k = c_end·(N/(k+1))^γ shrinks to `c_end`
//! at the last iteration; a_k = a/(A + k + 1)^α with A = N/10 and a set so that
//! a_N = r_end·c_end², so that the step per won pair, a_k/c_k, ends at r_end·c_end.
//! Iterations may run at the same time: each perturbs the θ of its start and steps the θ
//! of its end (asynchronous, as fishtest's workers do).
//!
//! The state is plain data, saved as JSON after every pair, so a tune resumes where it
//! stopped.

use crate::rng::Xoshiro256;
use crate::search::params::ParamSpec;
use serde::{Deserialize, Serialize};
use thiserror::Error;

pub const STATE_VERSION: u32 = 1;
const ALPHA: f64 = 0.602;
const GAMMA: f64 = 0.101;

/// One parameter being tuned: its current (real-valued) estimate and schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunedParam {
    pub name: String,
    pub value: f64,
    pub start: f64,
    pub min: f64,
    pub max: f64,
    /// The perturbation at the last iteration.
    pub c_end: f64,
    /// The step per won pair at the last iteration, as a fraction of `c_end`.
    pub r_end: f64,
}

/// A tune in progress (what `keima tune` saves and resumes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpsaState {
    pub version: u32,
    /// Planned iterations (game pairs), N of the schedules.
    pub iterations: u64,
    /// Iterations handed out so far; the next one is number `started`.
    pub started: u64,
    /// Iterations whose result has been applied.
    pub done: u64,
    pub seed: u64,
    pub params: Vec<TunedParam>,
    /// Pair results seen, by the plus side's wins − losses: −2, −1, 0, +1, +2.
    pub outcomes: [u64; 5],
    /// The estimate after every [`SpsaState::trace_every`] pairs (fishtest's parameter
    /// graph): what shows whether a tune has settled or is still drifting. States written
    /// before it was kept have none.
    #[serde(default)]
    pub trace: Vec<TracePoint>,
}

/// The estimate of every parameter (in `params` order) once `done` pairs were applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracePoint {
    pub done: u64,
    pub values: Vec<f64>,
}

/// One iteration's two parameter sets: `plus` = θ + c_kδ, `minus` = θ − c_kδ, rounded and
/// kept in range.
#[derive(Clone, Debug, PartialEq)]
pub struct Perturbation {
    pub k: u64,
    pub signs: Vec<i8>,
    pub c: Vec<f64>,
    pub plus: Vec<i32>,
    pub minus: Vec<i32>,
}

#[derive(Debug, Error, PartialEq)]
pub enum SpsaError {
    #[error("tune state version {0}, this build reads version {STATE_VERSION}")]
    Version(u32),
    #[error("tune state: parameter {name}: {what}")]
    Param { name: String, what: String },
    #[error("tune state: {0}")]
    Invalid(String),
}

impl SpsaState {
    /// A new tune of `specs` from their defaults over `iterations` pairs.
    pub fn new(specs: &[&ParamSpec], iterations: u64, r_end: f64, seed: u64) -> SpsaState {
        SpsaState {
            version: STATE_VERSION,
            iterations,
            started: 0,
            done: 0,
            seed,
            params: specs
                .iter()
                .map(|s| TunedParam {
                    name: s.name.to_string(),
                    value: s.default as f64,
                    start: s.default as f64,
                    min: s.min as f64,
                    max: s.max as f64,
                    c_end: s.step as f64,
                    r_end,
                })
                .collect(),
            outcomes: [0; 5],
            trace: Vec::new(),
        }
    }

    /// Pairs between two points of the trace: a hundredth of the tune.
    pub fn trace_every(&self) -> u64 {
        (self.iterations / 100).max(1)
    }

    /// The estimate at the last trace point at or before `done` pairs (the start at 0);
    /// `None` when the trace has no such point (a state from before the trace was kept).
    pub fn values_at(&self, done: u64) -> Option<Vec<f64>> {
        match self.trace.iter().rev().find(|t| t.done <= done) {
            Some(t) => Some(t.values.clone()),
            None if done == 0 || self.trace.first().is_some_and(|t| t.done == self.trace_every()) => {
                Some(self.params.iter().map(|p| p.start).collect())
            }
            None => None,
        }
    }

    /// Checks a state read from a file: nothing in it may make the schedules or the values
    /// meaningless.
    pub fn validate(&self) -> Result<(), SpsaError> {
        if self.version != STATE_VERSION {
            return Err(SpsaError::Version(self.version));
        }
        if self.iterations == 0 || self.done > self.started || self.params.is_empty() {
            return Err(SpsaError::Invalid(format!(
                "iterations {}, started {}, done {}, {} parameters",
                self.iterations,
                self.started,
                self.done,
                self.params.len()
            )));
        }
        for p in &self.params {
            let bad = |what: &str| Err(SpsaError::Param { name: p.name.clone(), what: what.to_string() });
            let all = [p.value, p.start, p.min, p.max, p.c_end, p.r_end];
            if all.iter().any(|v| !v.is_finite()) {
                return bad("a value is not finite");
            }
            if p.min > p.max || p.value < p.min || p.value > p.max {
                return bad("value outside min..=max");
            }
            if p.c_end <= 0.0 || p.r_end <= 0.0 {
                return bad("c_end and r_end must be positive");
            }
        }
        let mut last = 0;
        for t in &self.trace {
            if t.done < last || t.done > self.done {
                return Err(SpsaError::Invalid(format!(
                    "trace point at {} pairs (after one at {last}, with {} done)",
                    t.done, self.done
                )));
            }
            if t.values.len() != self.params.len() || t.values.iter().any(|v| !v.is_finite()) {
                return Err(SpsaError::Invalid(format!(
                    "trace point at {} pairs: {} values, {} parameters, all finite expected",
                    t.done,
                    t.values.len(),
                    self.params.len()
                )));
            }
            last = t.done;
        }
        Ok(())
    }

    fn c_k(&self, p: &TunedParam, k: u64) -> f64 {
        let n = self.iterations as f64;
        p.c_end * (n / (k as f64 + 1.0)).powf(GAMMA)
    }

    fn a_k(&self, p: &TunedParam, k: u64) -> f64 {
        let n = self.iterations as f64;
        let big_a = n / 10.0;
        let a_end = p.r_end * p.c_end * p.c_end;
        a_end * ((big_a + n) / (big_a + k as f64 + 1.0)).powf(ALPHA)
    }

    /// The next iteration's parameter sets (its signs are drawn from the seed and `k`, so a
    /// tune is reproducible given the order results arrive in).
    pub fn next_perturbation(&mut self) -> Perturbation {
        let k = self.started;
        self.started += 1;
        let mut rng = Xoshiro256::new(self.seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut out =
            Perturbation { k, signs: Vec::new(), c: Vec::new(), plus: Vec::new(), minus: Vec::new() };
        for p in &self.params {
            let sign: i8 = if rng.next_u64() & 1 == 0 { 1 } else { -1 };
            let c = self.c_k(p, k);
            let at = |v: f64| v.clamp(p.min, p.max).round() as i32;
            out.signs.push(sign);
            out.c.push(c);
            out.plus.push(at(p.value + c * sign as f64));
            out.minus.push(at(p.value - c * sign as f64));
        }
        out
    }

    /// Applies a pair's result: `plus_wins_minus_losses` is the plus side's wins minus its
    /// losses over the two games (−2..=2).
    pub fn apply(&mut self, pert: &Perturbation, plus_wins_minus_losses: i32) {
        let r = plus_wins_minus_losses.clamp(-2, 2);
        self.outcomes[(r + 2) as usize] += 1;
        self.done += 1;
        for (i, p) in self.params.clone().iter().enumerate() {
            // Sides that rounded to the same value measured nothing about this parameter.
            if pert.plus[i] == pert.minus[i] {
                continue;
            }
            let step = self.a_k(p, pert.k) / pert.c[i] * r as f64 * pert.signs[i] as f64;
            let q = &mut self.params[i];
            q.value = (q.value + step).clamp(q.min, q.max);
        }
        if self.done.is_multiple_of(self.trace_every()) {
            let values = self.params.iter().map(|p| p.value).collect();
            self.trace.push(TracePoint { done: self.done, values });
        }
    }

    /// The current estimate, rounded: (name, value) per parameter.
    pub fn values(&self) -> Vec<(String, i32)> {
        self.params.iter().map(|p| (p.name.clone(), p.value.round() as i32)).collect()
    }

    /// The current estimate as `name=value,...` (what `SearchParams::parse` reads).
    pub fn values_text(&self) -> String {
        self.values().iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(",")
    }

    /// A rounded parameter set as `name=value,...`.
    pub fn text_of(&self, values: &[i32]) -> String {
        self.params.iter().zip(values).map(|(p, v)| format!("{}={v}", p.name)).collect::<Vec<_>>().join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &'static str, default: i32, min: i32, max: i32, step: i32) -> ParamSpec {
        ParamSpec { name, default, min, max, step, doc: "" }
    }

    #[test]
    fn schedules_end_at_c_end_and_r_end() {
        let s = spec("x", 100, 0, 400, 10);
        let st = SpsaState::new(&[&s], 1000, 0.002, 1);
        let p = &st.params[0];
        assert!((st.c_k(p, 999) - 10.0).abs() < 1e-9);
        assert!((st.a_k(p, 999) / st.c_k(p, 999) - 0.002 * 10.0).abs() < 1e-9);
        assert!(st.c_k(p, 0) > 19.0 && st.c_k(p, 0) < 21.0, "{}", st.c_k(p, 0));
    }

    #[test]
    fn perturbations_are_symmetric_clamped_and_reproducible() {
        let (a, b) = (spec("a", 100, 0, 400, 10), spec("b", 1, 0, 2, 1));
        let mut st = SpsaState::new(&[&a, &b], 100, 0.002, 7);
        let p = st.next_perturbation();
        assert_eq!(p.k, 0);
        assert_eq!(st.started, 1);
        let c = p.c[0];
        assert_eq!(p.plus[0], (100.0 + c * p.signs[0] as f64).round() as i32);
        assert_eq!(p.minus[0], (100.0 - c * p.signs[0] as f64).round() as i32);
        // b's c_k (about 1.6) goes past its range on one side.
        assert!(p.plus[1] >= 0 && p.plus[1] <= 2 && p.minus[1] >= 0 && p.minus[1] <= 2);
        let mut again = SpsaState::new(&[&a, &b], 100, 0.002, 7);
        assert_eq!(again.next_perturbation(), p);
    }

    #[test]
    fn a_won_pair_steps_towards_the_plus_side() {
        let a = spec("a", 100, 0, 400, 10);
        let mut st = SpsaState::new(&[&a], 100, 0.01, 3);
        let p = st.next_perturbation();
        st.apply(&p, 2);
        let moved = st.params[0].value - 100.0;
        assert_eq!(moved.signum(), p.signs[0] as f64, "moved {moved}");
        let expect = st.a_k(&st.params[0], 0) / p.c[0] * 2.0;
        assert!((moved.abs() - expect).abs() < 1e-9);
        assert_eq!((st.done, st.outcomes), (1, [0, 0, 0, 0, 1]));
        let q = st.next_perturbation();
        st.apply(&q, 0);
        assert!((st.params[0].value - 100.0 - moved).abs() < 1e-12, "a level pair moves nothing");
    }

    /// On a simulated match whose Elo peaks at x = 250 and y = 40, from x = 100 and y = 80,
    /// the tune ends near the peak; with the step's sign reversed it would run to the
    /// ends of the ranges.
    #[test]
    fn a_simulated_tune_finds_the_peak() {
        let (x, y) = (spec("x", 100, 0, 400, 10), spec("y", 80, 0, 200, 5));
        let mut st = SpsaState::new(&[&x, &y], 20_000, 0.01, 11);
        let mut noise = Xoshiro256::new(99);
        let elo = |v: &[i32]| {
            let (dx, dy) = ((v[0] - 250) as f64 / 100.0, (v[1] - 40) as f64 / 50.0);
            -60.0 * (dx * dx + dy * dy)
        };
        for _ in 0..st.iterations {
            let p = st.next_perturbation();
            let diff = elo(&p.plus) - elo(&p.minus);
            let win = 1.0 / (1.0 + 10f64.powf(-diff / 400.0));
            let mut r = 0;
            for _ in 0..2 {
                let u = (noise.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                r += if u < win { 1 } else { -1 };
            }
            st.apply(&p, r);
        }
        let v = st.values();
        assert!((v[0].1 - 250).abs() <= 40, "{v:?}");
        assert!((v[1].1 - 40).abs() <= 20, "{v:?}");
    }

    #[test]
    fn the_trace_keeps_the_estimate_every_hundredth_of_the_tune() {
        let a = spec("a", 100, 0, 400, 10);
        let mut st = SpsaState::new(&[&a], 300, 0.05, 5);
        assert_eq!(st.trace_every(), 3);
        let mut after = Vec::new();
        for k in 0..7 {
            let p = st.next_perturbation();
            st.apply(&p, if k % 2 == 0 { 2 } else { 1 });
            after.push(st.params[0].value);
        }
        let points: Vec<(u64, f64)> = st.trace.iter().map(|t| (t.done, t.values[0])).collect();
        assert_eq!(points, [(3, after[2]), (6, after[5])]);
        assert_eq!(st.values_at(5), Some(vec![after[2]]));
        assert_eq!(st.values_at(2), Some(vec![100.0]), "before the first point: the start");
        assert_eq!(st.validate(), Ok(()));
        let mut bad = st.clone();
        bad.trace[1].values.push(1.0);
        assert!(matches!(bad.validate(), Err(SpsaError::Invalid(_))));
        let mut bad = st.clone();
        bad.trace[1].done = 8;
        assert!(matches!(bad.validate(), Err(SpsaError::Invalid(_))));
        // A state written before the trace was kept reads as one without points.
        let mut json: serde_json::Value = serde_json::to_value(&st).unwrap();
        json.as_object_mut().unwrap().remove("trace");
        let mut old: SpsaState = serde_json::from_value(json).unwrap();
        assert!(old.trace.is_empty() && old.validate().is_ok());
        assert_eq!(old.values_at(4), None, "unknown: no point kept then");
        assert_eq!(old.values_at(0), Some(vec![100.0]));
        // Resumed, it traces from there on; the pairs before stay unknown.
        for _ in 0..2 {
            let p = old.next_perturbation();
            old.apply(&p, 1);
        }
        assert_eq!(old.trace.iter().map(|t| t.done).collect::<Vec<_>>(), [9]);
        assert_eq!(old.values_at(8), None);
        assert_eq!(old.values_at(9), Some(vec![old.params[0].value]));
    }

    #[test]
    fn a_damaged_state_is_refused() {
        let a = spec("a", 100, 0, 400, 10);
        let st = SpsaState::new(&[&a], 100, 0.002, 3);
        assert_eq!(st.validate(), Ok(()));
        let mut bad = st.clone();
        bad.params[0].value = f64::NAN;
        assert!(matches!(bad.validate(), Err(SpsaError::Param { .. })));
        let mut bad = st.clone();
        bad.params[0].value = 401.0;
        assert!(matches!(bad.validate(), Err(SpsaError::Param { .. })));
        let mut bad = st.clone();
        bad.version = 9;
        assert_eq!(bad.validate(), Err(SpsaError::Version(9)));
        let mut bad = st.clone();
        bad.done = 1;
        assert!(matches!(bad.validate(), Err(SpsaError::Invalid(_))));
        let json = serde_json::to_string(&st).unwrap();
        assert_eq!(serde_json::from_str::<SpsaState>(&json).unwrap(), st);
    }
}
