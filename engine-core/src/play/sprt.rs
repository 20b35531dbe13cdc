//! A sequential probability ratio test over game pairs, with no I/O.
//!
//! Pairs: a match plays every opening twice with colours swapped. The two games are
//! correlated (an opening that favours one colour tends to give each engine one win), so
//! the pair, not the game, is the independent unit. [`Pentanomial`] counts pairs by
//! engine1's total score (0, ½, 1, 1½, 2); the per-pair value `x = score / 2` takes the
//! values 0, ¼, ½, ¾, 1 and has the same mean as the per-game score, but its variance
//! reflects the correlation, which makes both the Elo interval and the test tighter than
//! per-game (W/D/L) statistics when openings are unbalanced.
//!
//! Elo ([`Pentanomial::elo`]): the mean `μ` and the variance `σ² = Σ (x - μ)² / N` of the
//! per-pair values over `N` pairs; standard error `σ / √N`; the logistic Elo
//! `-400 log10(1/μ - 1)` with the 95% interval `μ ± 1.96 σ/√N` mapped the same way, as in
//! [`super::match_stats`] (infinite bounds at 0% and 100%, never NaN).
//!
//! Test ([`Sprt`]): H0 says the true Elo difference is `elo0`, H1 says `elo1` (logistic
//! Elo). Under hypothesis `j` a pair's value is taken as normal with mean
//! `s_j = 1 / (1 + 10^(-elo_j/400))` and the observed variance `σ²` (the generalised SPRT:
//! the variance is estimated from the data). The log-likelihood ratio of the `N` pairs is
//! `Σ ((x - s0)² - (x - s1)²) / (2σ²) = N (s1 - s0)(2μ - s0 - s1) / (2σ²)`. Wald's bounds:
//! accept H0 when the LLR falls to `ln(β / (1 - α))`, accept H1 when it reaches
//! `ln((1 - β) / α)`, otherwise continue.
//!
//! Two properties of this statistic that surprise: it is not monotone in wins (adding a
//! win pair to a sample of mostly 1½-pairs raises σ² more than the mean and lowers the
//! LLR; it is monotone while the LLR is on the losing side, see the tests), and with a
//! handful of identical pairs σ² comes mostly from the pseudo-counts below, so the LLR
//! can leave the bounds after two or three pairs (two 2-0 pairs accept H1 for `[0, 5]`).
//! The normal approximation is meant for tens of pairs and more.

use super::match_stats::{EloEstimate, Z95, elo_from_score};

/// Pseudo-count added to every pentanomial cell before the LLR's mean and variance: with
/// fewer than two distinct pair outcomes the sample variance is 0 and the LLR would be
/// infinite or NaN. 1e-3 of a pair per cell changes a real sample's LLR negligibly.
pub const PSEUDO_COUNT: f64 = 1e-3;

/// The largest |Elo| accepted for the hypotheses: beyond it the expected scores round
/// towards 0 or 1 and a test says nothing useful.
pub const MAX_HYPOTHESIS_ELO: f64 = 1000.0;

/// Game pairs counted by engine1's total score: `counts[k]` pairs scored `k / 2`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pentanomial {
    pub counts: [u32; 5],
}

/// The per-pair value (pair score / 2) of each cell.
const PAIR_VALUE: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

impl Pentanomial {
    /// Number of pairs.
    pub fn pairs(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// Adds the pair of games `first` and `second`, each engine1's result as
    /// [`super::MatchStats::add`] takes it: `Some(true)` won, `Some(false)` lost, `None` drawn.
    pub fn add_pair(&mut self, first: Option<bool>, second: Option<bool>) {
        let half_points = |r: Option<bool>| match r {
            Some(true) => 2,
            None => 1,
            Some(false) => 0,
        };
        self.counts[half_points(first) + half_points(second)] += 1;
    }

    /// `(total weight, mean, variance)` of the per-pair values with `pseudo` added to
    /// every cell. The variance is a sum of squares, so it is never negative.
    fn moments(&self, pseudo: f64) -> (f64, f64, f64) {
        let w = self.counts.map(|c| f64::from(c) + pseudo);
        let total: f64 = w.iter().sum();
        let mean = w.iter().zip(PAIR_VALUE).map(|(w, x)| w * x).sum::<f64>() / total;
        let var = w.iter().zip(PAIR_VALUE).map(|(w, x)| w * (x - mean).powi(2)).sum::<f64>() / total;
        (total, mean, var)
    }

    /// The Elo difference from the pair statistics with its 95% interval (see the module
    /// documentation); `None` before the first pair. `score_stderr` is the standard error
    /// of the mean per-pair value.
    pub fn elo(&self) -> Option<EloEstimate> {
        let n = self.pairs();
        if n == 0 {
            return None;
        }
        let (_, mu, var) = self.moments(0.0);
        let se = (var / n as f64).sqrt();
        let (lower, upper) = if mu <= 0.0 || mu >= 1.0 {
            (f64::NEG_INFINITY, f64::INFINITY)
        } else {
            (elo_from_score(mu - Z95 * se), elo_from_score(mu + Z95 * se))
        };
        Some(EloEstimate { score: mu, score_stderr: se, elo: elo_from_score(mu), lower, upper })
    }
}

/// What the test says after the pairs seen so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SprtStatus {
    Continue,
    AcceptH0,
    AcceptH1,
}

/// A sequential test of H0 "the Elo difference is `elo0`" against H1 "it is `elo1`",
/// with false-positive rate `alpha` and false-negative rate `beta`. Build it with
/// [`Sprt::new`] or [`Sprt::parse`], which reject values that would make the bounds or the
/// LLR meaningless.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sprt {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
    /// No decision before this many pairs (see [`MIN_PAIRS`]).
    pub min_pairs: u32,
}

/// The normal approximation needs tens of pairs: with a few identical pairs the variance
/// is all pseudo-count and the LLR leaves its bounds after two or three pairs. So the test
/// decides nothing before 20 pairs (40 games).
pub const MIN_PAIRS: u32 = 20;

/// The expected score of a logistic Elo difference.
fn expected_score(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

impl Sprt {
    /// Checks the parameters: finite Elo bounds within ±[`MAX_HYPOTHESIS_ELO`] with
    /// `elo0 < elo1`, and `alpha`, `beta` in (0, 1) with `alpha + beta < 1` (otherwise the
    /// lower bound is not below the upper one).
    pub fn new(elo0: f64, elo1: f64, alpha: f64, beta: f64) -> Result<Sprt, String> {
        for (name, v) in [("ELO0", elo0), ("ELO1", elo1)] {
            if !v.is_finite() || v.abs() > MAX_HYPOTHESIS_ELO {
                return Err(format!("{name} must be a number between -1000 and 1000, got {v}"));
            }
        }
        if elo0 >= elo1 {
            return Err(format!(
                "ELO0 ({elo0}) must be below ELO1 ({elo1}): H0 is the weaker hypothesis, e.g. 0,5"
            ));
        }
        for (name, v) in [("ALPHA", alpha), ("BETA", beta)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(format!("{name} must be strictly between 0 and 1, got {v}"));
            }
        }
        if alpha + beta >= 1.0 {
            return Err(format!("ALPHA + BETA must be below 1, got {alpha} + {beta}"));
        }
        Ok(Sprt { elo0, elo1, alpha, beta, min_pairs: MIN_PAIRS })
    }

    /// Parses `ELO0,ELO1` or `ELO0,ELO1,ALPHA,BETA` (α = β = 0.05 by default).
    pub fn parse(text: &str) -> Result<Sprt, String> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.len() != 2 && parts.len() != 4 {
            return Err(format!(
                "expected ELO0,ELO1 or ELO0,ELO1,ALPHA,BETA (e.g. 0,5 or 0,5,0.05,0.05), got {} value{}",
                parts.len(),
                if parts.len() == 1 { "" } else { "s" }
            ));
        }
        let mut values = [0.0, 0.0, 0.05, 0.05];
        for (i, (part, name)) in parts.iter().zip(["ELO0", "ELO1", "ALPHA", "BETA"]).enumerate() {
            values[i] = part.parse::<f64>().map_err(|_| format!("{name}: {part:?} is not a number"))?;
        }
        Sprt::new(values[0], values[1], values[2], values[3])
    }

    /// `ln(β / (1 - α))`: at or below it H0 is accepted.
    pub fn lower_bound(&self) -> f64 {
        (self.beta / (1.0 - self.alpha)).ln()
    }

    /// `ln((1 - β) / α)`: at or above it H1 is accepted.
    pub fn upper_bound(&self) -> f64 {
        ((1.0 - self.beta) / self.alpha).ln()
    }

    /// The log-likelihood ratio of the pairs (see the module documentation), computed on
    /// the counts plus [`PSEUDO_COUNT`] per cell so that it is always finite; 0 with no pairs.
    pub fn llr(&self, p: &Pentanomial) -> f64 {
        if p.pairs() == 0 {
            return 0.0;
        }
        let (n, mu, var) = p.moments(PSEUDO_COUNT);
        let (s0, s1) = (expected_score(self.elo0), expected_score(self.elo1));
        n * (s1 - s0) * (2.0 * mu - s0 - s1) / (2.0 * var)
    }

    pub fn status(&self, p: &Pentanomial) -> SprtStatus {
        let llr = self.llr(p);
        if p.pairs() < u64::from(self.min_pairs) {
            SprtStatus::Continue
        } else if llr <= self.lower_bound() {
            SprtStatus::AcceptH0
        } else if llr >= self.upper_bound() {
            SprtStatus::AcceptH1
        } else {
            SprtStatus::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    fn penta(counts: [u32; 5]) -> Pentanomial {
        Pentanomial { counts }
    }

    /// A test that may decide from the first pair (the examples below are small).
    fn sprt(elo0: f64, elo1: f64) -> Sprt {
        Sprt { min_pairs: 1, ..Sprt::new(elo0, elo1, 0.05, 0.05).unwrap() }
    }

    /// The LLR as the sum over the (weighted) pairs of the per-observation normal log
    /// ratio `((x - s0)² - (x - s1)²) / (2σ²)`, with σ² from `E[x²] - E[x]²`: the same
    /// quantity as [`Sprt::llr`] by a different route.
    fn llr_by_sum(counts: [u32; 5], elo0: f64, elo1: f64) -> f64 {
        let s = |e: f64| 1.0 / (1.0 + 10f64.powf(-e / 400.0));
        let (s0, s1) = (s(elo0), s(elo1));
        let w: Vec<f64> = counts.iter().map(|&c| c as f64 + 1e-3).collect();
        let n: f64 = w.iter().sum();
        let x = [0.0, 0.25, 0.5, 0.75, 1.0];
        let ex = (0..5).map(|k| w[k] * x[k]).sum::<f64>() / n;
        let ex2 = (0..5).map(|k| w[k] * x[k] * x[k]).sum::<f64>() / n;
        let var = ex2 - ex * ex;
        (0..5).map(|k| w[k] * ((x[k] - s0).powi(2) - (x[k] - s1).powi(2))).sum::<f64>() / (2.0 * var)
    }

    #[test]
    fn add_pair_counts_half_points() {
        let mut p = Pentanomial::default();
        p.add_pair(Some(true), Some(true));
        p.add_pair(Some(true), Some(false));
        p.add_pair(Some(false), Some(true));
        p.add_pair(None, Some(true));
        p.add_pair(None, None);
        p.add_pair(Some(false), None);
        p.add_pair(Some(false), Some(false));
        assert_eq!(p.counts, [1, 1, 3, 1, 1]);
        assert_eq!(p.pairs(), 7);
    }

    #[test]
    fn bounds_for_common_error_rates() {
        // ln(0.05/0.95) = -ln 19 = -2.944439; ln(0.95/0.05) = ln 19.
        let t = sprt(0.0, 5.0);
        assert!(close(t.lower_bound(), -2.944_438_979_166_44, 1e-12));
        assert!(close(t.upper_bound(), 2.944_438_979_166_44, 1e-12));
        // α = 0.05, β = 0.1: ln(0.1/0.95) = -2.251292, ln(0.9/0.05) = ln 18 = 2.890372.
        let t = Sprt::new(0.0, 5.0, 0.05, 0.1).unwrap();
        assert!(close(t.lower_bound(), -2.251_291_798_606_495, 1e-12));
        assert!(close(t.upper_bound(), 2.890_371_757_896_164_5, 1e-12));
    }

    #[test]
    fn all_drawn_pairs_favour_h0_for_a_positive_test() {
        // Every pair 1-1: μ = 1/2 while the hypotheses' midpoint (s0 + s1)/2 =
        // (0.5 + 0.507196)/2 > 1/2, so the LLR is negative, and it grows like N² because
        // σ² (pseudo-counts only) shrinks like 1/N. By hand for N = 10: W = 10.005, μ = 1/2,
        // σ² = 1e-3 · (1/4 + 1/16 + 1/16 + 1/4) / 10.005 = 6.2469e-5, s1 - s0 = 0.0071955,
        // LLR = 10.005 · 0.0071955 · (1 - 1.0071955) / (2 · 6.2469e-5) = -4.1463; the exact
        // figure -4.145679 was computed independently (Python, the regularised sum).
        let t = sprt(0.0, 5.0);
        for (n, expected) in [(1, -0.041_830_549_630_354_5), (10, -4.145_678_635_441_922)] {
            let llr = t.llr(&penta([0, 0, n, 0, 0]));
            assert!(llr < 0.0);
            assert!(close(llr, expected, 1e-9), "N = {n}: {llr}");
            assert!(close(llr, llr_by_sum([0, 0, n, 0, 0], 0.0, 5.0), 1e-6));
        }
        assert_eq!(t.status(&penta([0, 0, 10, 0, 0])), SprtStatus::AcceptH0);
        assert_eq!(t.status(&penta([0, 0, 5, 0, 0])), SprtStatus::Continue);
        // A symmetric test is indifferent to an even result.
        assert!(sprt(-50.0, 50.0).llr(&penta([0, 0, 20, 0, 0])).abs() < 1e-9);
        assert_eq!(t.llr(&Pentanomial::default()), 0.0);
    }

    #[test]
    fn lopsided_pentanomial_matches_hand_computation() {
        // [1, 4, 10, 12, 3]: N = 30, Σx = 0 + 1 + 5 + 9 + 3 = 18, μ = 0.6;
        // Σx² = 0.25 + 2.5 + 6.75 + 3 = 12.5, σ² = 12.5/30 - 0.36 = 0.056667.
        // [0, 10]: s0 = 0.5, s1 = 1/(1 + 10^-0.025) = 0.514387;
        // LLR = 30 · 0.014387 · (1.2 - 1.014387) / (2 · 0.056667) = 0.70688 without the
        // pseudo-counts, 0.70671 with them.
        let counts = [1, 4, 10, 12, 3];
        let llr = sprt(0.0, 10.0).llr(&penta(counts));
        assert!(close(llr, 0.706_88, 1e-3), "{llr}");
        assert!(close(llr, 0.706_710_780_508_423_5, 1e-9), "{llr}");
        assert!(close(llr, llr_by_sum(counts, 0.0, 10.0), 1e-9), "{llr}");
        assert_eq!(sprt(0.0, 10.0).status(&penta(counts)), SprtStatus::Continue);
    }

    #[test]
    fn identical_win_pairs_decide_after_two_pairs() {
        // Documents the small-sample behaviour (module documentation): with only 2-0
        // pairs the variance is all pseudo-count. One pair: W = 1.005, μ = 0.997512,
        // σ² = 1.859e-3, LLR = 1.005 · 0.0071955 · 0.98783 / 3.718e-3 = 1.9207.
        let t = sprt(0.0, 5.0);
        let one = t.llr(&penta([0, 0, 0, 0, 1]));
        assert!(close(one, 1.920_708_891_903_219_8, 1e-9), "{one}");
        assert_eq!(t.status(&penta([0, 0, 0, 0, 1])), SprtStatus::Continue);
        let two = t.llr(&penta([0, 0, 0, 0, 2]));
        assert!(close(two, 7.651_163_918_675_739, 1e-9), "{two}");
        assert_eq!(t.status(&penta([0, 0, 0, 0, 2])), SprtStatus::AcceptH1);
    }

    #[test]
    fn no_decision_before_the_minimum_number_of_pairs() {
        let t = Sprt::new(0.0, 5.0, 0.05, 0.05).unwrap();
        assert!(t.llr(&penta([0, 0, 0, 0, 2])) > t.upper_bound());
        assert_eq!(t.status(&penta([0, 0, 0, 0, MIN_PAIRS - 1])), SprtStatus::Continue);
        assert_eq!(t.status(&penta([0, 0, 0, 0, MIN_PAIRS])), SprtStatus::AcceptH1);
        assert_eq!(t.status(&penta([MIN_PAIRS, 0, 0, 0, 0])), SprtStatus::AcceptH0);
    }

    #[test]
    fn a_win_pair_can_lower_the_llr() {
        // [0, 0, 1, 5, 0] → add a 2-0 pair: μ 0.708 → 0.75 but σ² 0.0087 → 0.0179.
        // LLR 1.0028 → 0.6903 (computed independently). Why the monotonicity property
        // below is stated only for the losing side.
        let t = sprt(0.0, 5.0);
        let before = t.llr(&penta([0, 0, 1, 5, 0]));
        let after = t.llr(&penta([0, 0, 1, 5, 1]));
        assert!(close(before, 1.002_825_049_460_296_6, 1e-9), "{before}");
        assert!(close(after, 0.690_284_497_337_756_2, 1e-9), "{after}");
    }

    #[test]
    fn pair_elo_matches_hand_computation() {
        // [1, 4, 10, 12, 3]: μ = 0.6, σ² = 0.056667, se = √(0.056667/30) = 0.043461;
        // Elo = -400 log10(1/0.6 - 1) = 70.4365; 0.6 ∓ 1.96·0.043461 = 0.514818, 0.685182
        // → 10.2991, 135.0991.
        let e = penta([1, 4, 10, 12, 3]).elo().unwrap();
        assert!(close(e.score, 0.6, 1e-12));
        assert!(close(e.score_stderr, 0.043_461_349_368_017_66, 1e-9));
        assert!(close(e.elo, 70.436_503_622_272_47, 1e-9), "{}", e.elo);
        assert!(close(e.lower, 10.299_144_511_230_313, 1e-9), "{}", e.lower);
        assert!(close(e.upper, 135.099_103_127_023_28, 1e-9), "{}", e.upper);
        // [2, 0, 3, 0, 5]: μ = (1.5 + 5)/10 = 0.65.
        let e = penta([2, 0, 3, 0, 5]).elo().unwrap();
        assert!(close(e.elo, 107.538_124_917_032_04, 1e-9), "{}", e.elo);
        assert!(close(e.lower, -64.691_730_687_468_2, 1e-9), "{}", e.lower);
        assert!(close(e.upper, 366.844_427_980_340_3, 1e-9), "{}", e.upper);
    }

    #[test]
    fn pair_elo_extremes_are_infinite_not_nan() {
        assert_eq!(Pentanomial::default().elo(), None);
        let e = penta([0, 0, 0, 0, 3]).elo().unwrap();
        assert_eq!((e.elo, e.lower, e.upper), (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY));
        let e = penta([4, 0, 0, 0, 0]).elo().unwrap();
        assert_eq!((e.elo, e.lower, e.upper), (f64::NEG_INFINITY, f64::NEG_INFINITY, f64::INFINITY));
        let e = penta([0, 0, 6, 0, 0]).elo().unwrap();
        assert_eq!((e.elo, e.lower, e.upper), (0.0, 0.0, 0.0));
        // μ = 0.875, bound above 1: +inf.
        let e = penta([0, 0, 0, 1, 1]).elo().unwrap();
        assert!(e.elo.is_finite() && e.lower.is_finite());
        assert_eq!(e.upper, f64::INFINITY);
    }

    #[test]
    fn parse_accepts_and_rejects() {
        assert_eq!(
            Sprt::parse("0,5").unwrap(),
            Sprt { elo0: 0.0, elo1: 5.0, alpha: 0.05, beta: 0.05, min_pairs: MIN_PAIRS }
        );
        assert_eq!(
            Sprt::parse(" -1.5 , 3 ,0.1,0.2").unwrap(),
            Sprt { elo0: -1.5, elo1: 3.0, alpha: 0.1, beta: 0.2, min_pairs: MIN_PAIRS }
        );
        for (bad, needle) in [
            ("5", "ELO0,ELO1"),
            ("0,5,0.05", "got 3 values"),
            ("5,0", "must be below ELO1"),
            ("5,5", "must be below ELO1"),
            ("x,5", "ELO0: \"x\" is not a number"),
            ("nan,5", "ELO0 must be a number"),
            ("0,inf", "ELO1 must be a number"),
            ("0,2000", "between -1000 and 1000"),
            ("0,5,0,0.05", "ALPHA must be strictly between 0 and 1"),
            ("0,5,0.05,1", "BETA must be strictly between 0 and 1"),
            ("0,5,NaN,0.05", "ALPHA must be strictly between 0 and 1"),
            ("0,5,0.6,0.5", "ALPHA + BETA must be below 1"),
        ] {
            let e = Sprt::parse(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    fn elo_pair(max: f64) -> impl Strategy<Value = (f64, f64)> {
        (-max..max, 0.5f64..max)
            .prop_map(move |(a, d)| (a, (a + d).min(max)))
            .prop_filter("ordered", |(a, b)| a < b)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn llr_is_finite_for_any_counts(counts in any::<[u32; 5]>(), (e0, e1) in elo_pair(1000.0)) {
            let t = sprt(e0, e1);
            let p = penta(counts);
            prop_assert!(t.llr(&p).is_finite(), "{counts:?} [{e0}, {e1}]: {}", t.llr(&p));
            let e = p.elo();
            prop_assert!(e.is_none_or(|e| !e.elo.is_nan() && !e.lower.is_nan() && !e.upper.is_nan()));
            prop_assert!(e.is_none_or(|e| e.lower <= e.elo && e.elo <= e.upper));
        }

        /// A 2-0 pair raises the LLR while it is not positive, and a 0-2 pair lowers it
        /// while it is not negative (for hypotheses within ±100 Elo). Not unconditionally:
        /// see `a_win_pair_can_lower_the_llr`.
        #[test]
        fn llr_moves_towards_the_new_pair(counts in proptest::array::uniform5(0u32..100_000), (e0, e1) in elo_pair(100.0)) {
            let t = sprt(e0, e1);
            let llr = t.llr(&penta(counts));
            if llr <= 0.0 {
                let mut more = counts;
                more[4] += 1;
                prop_assert!(t.llr(&penta(more)) > llr, "{counts:?} + win: {llr} → {}", t.llr(&penta(more)));
            }
            if llr >= 0.0 {
                let mut more = counts;
                more[0] += 1;
                prop_assert!(t.llr(&penta(more)) < llr, "{counts:?} + loss: {llr} → {}", t.llr(&penta(more)));
            }
        }

        /// Seen from engine2 (counts reversed, hypotheses negated and swapped) the LLR
        /// changes sign and nothing else.
        #[test]
        fn llr_is_antisymmetric(counts in proptest::array::uniform5(0u32..1_000_000), (e0, e1) in elo_pair(1000.0)) {
            let mut mirrored = counts;
            mirrored.reverse();
            let a = sprt(e0, e1).llr(&penta(counts));
            let b = sprt(-e1, -e0).llr(&penta(mirrored));
            prop_assert!((a + b).abs() <= 1e-9 * a.abs().max(1.0), "{a} vs {b}");
        }
    }
}
