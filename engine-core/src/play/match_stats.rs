//! Match statistics, with no I/O.
//!
//! Elo: the logistic model of the Elo system, where a rating difference `d` gives the
//! expected score `E = 1 / (1 + 10^(-d/400))`; inverted, `d = -400 log10(1/s - 1)` for the
//! observed score `s = (W + D/2) / N`. The 95% interval applies the normal approximation to
//! the mean per-game score: the per-game results (1, 1/2, 0) have sample variance
//! `σ² = (W (1-s)² + D (1/2-s)² + L s²) / N`, the mean has standard error `σ / √N`, and
//! `s ± 1.96 σ/√N` is mapped through the same inverse. A bound at or beyond 0% or 100% is
//! infinite. At a score of exactly 0% or 100% the approximation says nothing (σ = 0): the
//! estimate is `∓∞`/`±∞` and both bounds are infinite (`-∞ .. +∞`), never NaN.

/// The two-sided 95% quantile of the standard normal distribution.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Games won, drawn and lost, from one player's view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MatchStats {
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
}

/// An Elo difference with its 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloEstimate {
    /// Observed score in [0, 1].
    pub score: f64,
    /// Standard error of the score.
    pub score_stderr: f64,
    pub elo: f64,
    pub lower: f64,
    pub upper: f64,
}

impl MatchStats {
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// Adds one game: `Some(true)` a win, `Some(false)` a loss, `None` a draw.
    pub fn add(&mut self, won: Option<bool>) {
        match won {
            Some(true) => self.wins += 1,
            Some(false) => self.losses += 1,
            None => self.draws += 1,
        }
    }

    /// `(W + D/2) / N`, `None` before the first game.
    pub fn score(&self) -> Option<f64> {
        let n = self.games();
        (n > 0).then(|| (self.wins as f64 + self.draws as f64 / 2.0) / n as f64)
    }

    /// The Elo difference and its 95% interval; `None` before the first game.
    pub fn elo(&self) -> Option<EloEstimate> {
        let s = self.score()?;
        let n = self.games() as f64;
        let var = (self.wins as f64 * (1.0 - s).powi(2)
            + self.draws as f64 * (0.5 - s).powi(2)
            + self.losses as f64 * s.powi(2))
            / n;
        let se = (var / n).sqrt();
        let elo = elo_from_score(s);
        let (lower, upper) = if s <= 0.0 || s >= 1.0 {
            (f64::NEG_INFINITY, f64::INFINITY)
        } else {
            (elo_from_score(s - Z95 * se), elo_from_score(s + Z95 * se))
        };
        Some(EloEstimate { score: s, score_stderr: se, elo, lower, upper })
    }
}

/// The rating difference whose expected score is `s` (infinite at 0 and 1 and beyond).
pub fn elo_from_score(s: f64) -> f64 {
    if s <= 0.0 {
        f64::NEG_INFINITY
    } else if s >= 1.0 {
        f64::INFINITY
    } else {
        -400.0 * (1.0 / s - 1.0).log10()
    }
}

/// Formats an Elo figure: `+147.2`, `-inf`, `+inf`.
pub fn format_elo(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+inf".to_string() } else { "-inf".to_string() }
    } else if v.abs() < 0.05 {
        "0.0".to_string()
    } else {
        format!("{v:+.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    fn stats(wins: u32, draws: u32, losses: u32) -> MatchStats {
        MatchStats { wins, draws, losses }
    }

    #[test]
    fn elo_matches_hand_computed_values() {
        // W6 D2 L2: s = 0.7, σ² = (6·0.09 + 2·0.04 + 2·0.49)/10 = 0.16, se = 0.4/√10.
        let e = stats(6, 2, 2).elo().unwrap();
        assert!(close(e.score, 0.7));
        assert!(close(e.score_stderr, 0.4 / 10f64.sqrt()));
        assert!(close(e.elo, 147.190_714_117_837_76), "{}", e.elo);
        assert!(close(e.lower, -33.399_350_001_688_85), "{}", e.lower);
        assert!(close(e.upper, 504.033_292_244_989_87), "{}", e.upper);
        // Even: symmetric interval, se = 0.5/√10.
        let e = stats(5, 0, 5).elo().unwrap();
        assert!(close(e.elo, 0.0));
        assert!(close(e.upper, 251.776_910_288_854_65) && close(e.lower, -e.upper));
        let e = stats(30, 40, 30).elo().unwrap();
        assert!(close(e.upper, 53.157_979_780_053_27), "{}", e.upper);
        // The upper bound passes 100%: infinite.
        let e = stats(9, 0, 1).elo().unwrap();
        assert!(close(e.elo, 381.697_003_775_729_85) && close(e.lower, 158.985_185_072_510_32));
        assert_eq!(e.upper, f64::INFINITY);
    }

    #[test]
    fn elo_extremes_are_infinite_not_nan() {
        assert_eq!(stats(0, 0, 0).elo(), None);
        let all = stats(4, 0, 0).elo().unwrap();
        assert_eq!((all.elo, all.lower, all.upper), (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY));
        let none = stats(0, 0, 7).elo().unwrap();
        assert_eq!(none.elo, f64::NEG_INFINITY);
        assert!(none.lower.is_infinite() && none.upper.is_infinite());
        let draws = stats(0, 3, 0).elo().unwrap();
        assert_eq!((draws.elo, draws.lower, draws.upper), (0.0, 0.0, 0.0));
        assert_eq!(format_elo(f64::INFINITY), "+inf");
        assert_eq!(format_elo(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_elo(147.19), "+147.2");
    }
}
