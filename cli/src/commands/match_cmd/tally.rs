//! Counting a match as its games finish: W/D/L, game pairs (pentanomial), faults per engine,
//! and the SPRT's first decision.

use engine_core::play::MatchStats;
use engine_core::play::sprt::{Pentanomial, Sprt, SprtStatus};
use keima_worker::usi::game::{Fault, ThinkTimes};
use std::collections::HashMap;
use std::fmt::Write as _;

/// The first time the LLR left its bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Decision {
    pub(super) status: SprtStatus,
    pub(super) pairs: u64,
    pub(super) llr: f64,
}

/// Everything counted over the games, updated as each game finishes.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) stats: MatchStats,
    pub(super) penta: Pentanomial,
    /// Finished games whose partner (same opening, colours swapped) has not finished, by
    /// pair index: engine1's result.
    unpaired: HashMap<usize, Option<bool>>,
    pub(super) time_losses: [u32; 2],
    pub(super) illegal_moves: [u32; 2],
    pub(super) crashes: [u32; 2],
    /// Each engine's time to answer `go`, over all games.
    pub(super) think: [ThinkTimes; 2],
    pub(super) decision: Option<Decision>,
}

impl Tally {
    /// Counts a game; completes its pair when the partner is in, and then checks the test.
    /// Returns true when this game made the test decide.
    pub(super) fn add(
        &mut self,
        game: usize,
        engine1_won: Option<bool>,
        fault: Option<(usize, Fault)>,
        sprt: Option<&Sprt>,
    ) -> bool {
        self.stats.add(engine1_won);
        if let Some((who, fault)) = fault {
            let counter = match fault {
                Fault::TimeLoss => &mut self.time_losses,
                Fault::IllegalMove => &mut self.illegal_moves,
                Fault::Crash => &mut self.crashes,
            };
            counter[who] += 1;
        }
        let Some(partner) = self.unpaired.remove(&(game / 2)) else {
            self.unpaired.insert(game / 2, engine1_won);
            return false;
        };
        self.penta.add_pair(partner, engine1_won);
        let Some(test) = sprt else { return false };
        if self.decision.is_some() {
            return false;
        }
        match test.status(&self.penta) {
            SprtStatus::Continue => false,
            status => {
                self.decision =
                    Some(Decision { status, pairs: self.penta.pairs(), llr: test.llr(&self.penta) });
                true
            }
        }
    }

    /// Adds one game's time to answer `go`, per engine.
    pub(super) fn add_think_times(&mut self, game: &[ThinkTimes; 2]) {
        for (total, g) in self.think.iter_mut().zip(game) {
            total.merge(g);
        }
    }

    pub(super) fn progress(&self, sprt: Option<&Sprt>) -> String {
        let s = &self.stats;
        let mut m = format!("W-D-L {}-{}-{}", s.wins, s.draws, s.losses);
        if let Some(t) = sprt {
            let _ =
                write!(m, "  LLR {:.2} [{:.2}, {:.2}]", t.llr(&self.penta), t.lower_bound(), t.upper_bound());
        }
        m
    }
}

/// The SPRT's verdict: the decision when the LLR first left its bounds (the games still
/// running then are counted in the LLR but do not undo it), else inconclusive.
pub(super) fn sprt_result(decision: Option<Decision>) -> &'static str {
    match decision.map(|d| d.status) {
        Some(SprtStatus::AcceptH1) => "H1 accepted",
        Some(SprtStatus::AcceptH0) => "H0 accepted",
        _ => "inconclusive",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_pairs_games_and_decides_once() {
        // A test that may decide from the first pair, to keep the example small.
        let test = Sprt { min_pairs: 1, ..Sprt::new(0.0, 5.0, 0.05, 0.05).unwrap() };
        let mut t = Tally::default();
        // Games finish out of order; a pair counts when both of its games are in.
        assert!(!t.add(1, Some(true), None, Some(&test)));
        assert!(!t.add(2, None, Some((1, Fault::TimeLoss)), Some(&test)));
        assert_eq!(t.penta.pairs(), 0);
        // Pair 0 (games 0, 1): 2-0. LLR 1.92 (see engine_core::play::sprt): continue.
        assert!(!t.add(0, Some(true), Some((1, Fault::IllegalMove)), Some(&test)));
        assert_eq!(t.penta.counts, [0, 0, 0, 0, 1]);
        assert_eq!(t.decision, None);
        // Pair 2 (games 4, 5): 2-0, LLR 7.65 ≥ 2.94: H1, decided here and only here.
        assert!(!t.add(4, Some(true), None, Some(&test)));
        assert!(t.add(5, Some(true), None, Some(&test)));
        let d = t.decision.unwrap();
        assert_eq!((d.status, d.pairs), (SprtStatus::AcceptH1, 2));
        assert!((d.llr - 7.651_163_918_675_739).abs() < 1e-9, "{}", d.llr);
        // Pair 1 (games 2, 3) finishes afterwards: counted, the decision stays.
        assert!(!t.add(3, Some(false), Some((0, Fault::Crash)), Some(&test)));
        assert_eq!(t.penta.counts, [0, 1, 0, 0, 2]);
        assert_eq!(t.decision, Some(d));
        assert_eq!(sprt_result(t.decision), "H1 accepted");
        assert_eq!((t.stats.wins, t.stats.draws, t.stats.losses), (4, 1, 1));
        assert_eq!((t.time_losses, t.illegal_moves, t.crashes), ([0, 1], [0, 1], [1, 0]));
        let progress = t.progress(Some(&test));
        assert!(
            progress.starts_with("W-D-L 4-1-1  LLR ") && progress.ends_with(" [-2.94, 2.94]"),
            "{progress}"
        );
        assert_eq!(t.progress(None), "W-D-L 4-1-1");
    }
}
