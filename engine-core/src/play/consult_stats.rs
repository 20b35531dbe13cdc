//! Diversity of consulting players on held-out records (research.md §3): how often the
//! consultation's move and each player's move agree with the record, how many distinct
//! moves the players propose, and GogiScat(C) = (1/N) Σ_i Σ_{j≤C} (P/C − p_ij)², where
//! p_ij is the number of the P players backing position i's j-th most backed move (0 when
//! there are fewer than j candidates). GogiScat(C) is 0 when the votes split evenly over
//! exactly C moves and grows as they concentrate on fewer (or spread over more).

use super::consult::{self, Vote};
use crate::rules::{Move, Position};
use crate::search::{Limits, Searcher};
use std::sync::atomic::AtomicBool;

/// Sums over the positions measured so far.
#[derive(Clone, Debug, PartialEq)]
pub struct DiversityStats {
    pub positions: u64,
    /// Positions where the consultation's move is the record's.
    pub consult_agree: u64,
    /// Σ over positions of the players whose move is the record's.
    pub player_agree: u64,
    /// Σ over positions of the number of players.
    pub player_moves: u64,
    /// Σ over positions of the number of distinct moves among the players.
    pub distinct: u64,
    /// `gogi_scat[c - 1]`: Σ over positions of Σ_{j≤c} (P/c − p_j)².
    pub gogi_scat: Vec<f64>,
}

impl DiversityStats {
    /// Sums for GogiScat(1) … GogiScat(`max_c`).
    pub fn new(max_c: usize) -> DiversityStats {
        DiversityStats {
            positions: 0,
            consult_agree: 0,
            player_agree: 0,
            player_moves: 0,
            distinct: 0,
            gogi_scat: vec![0.0; max_c],
        }
    }

    /// Adds one position: the record's move, each player's move and the move chosen.
    pub fn add(&mut self, record: Move, players: &[Move], chosen: Move) {
        let backers = backers(players);
        self.positions += 1;
        self.consult_agree += (chosen == record) as u64;
        self.player_agree += players.iter().filter(|&&m| m == record).count() as u64;
        self.player_moves += players.len() as u64;
        self.distinct += backers.len() as u64;
        for (i, sum) in self.gogi_scat.iter_mut().enumerate() {
            *sum += gogi_scat(&backers, players.len(), i + 1);
        }
    }

    /// Share of positions where the consultation played the record's move.
    pub fn consult_agreement(&self) -> f64 {
        self.consult_agree as f64 / self.positions.max(1) as f64
    }

    /// Mean share of players whose move is the record's.
    pub fn player_agreement(&self) -> f64 {
        self.player_agree as f64 / self.player_moves.max(1) as f64
    }

    /// Mean number of distinct moves among the players.
    pub fn mean_distinct(&self) -> f64 {
        self.distinct as f64 / self.positions.max(1) as f64
    }

    /// GogiScat(c), `1 ≤ c ≤ max_c`.
    pub fn gogi_scat(&self, c: usize) -> f64 {
        self.gogi_scat[c - 1] / self.positions.max(1) as f64
    }
}

/// The number of players backing each distinct move, most backed first.
pub fn backers(players: &[Move]) -> Vec<usize> {
    let mut tally: Vec<(Move, usize)> = Vec::new();
    for &m in players {
        match tally.iter_mut().find(|t| t.0 == m) {
            Some(t) => t.1 += 1,
            None => tally.push((m, 1)),
        }
    }
    let mut counts: Vec<usize> = tally.into_iter().map(|t| t.1).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    counts
}

/// Σ_{j≤c} (P/c − p_j)² for one position (`backers` most backed first, `players` = P).
pub fn gogi_scat(backers: &[usize], players: usize, c: usize) -> f64 {
    let even = players as f64 / c as f64;
    (0..c).map(|j| (even - backers.get(j).copied().unwrap_or(0) as f64).powi(2)).sum()
}

/// One held-out position: where the game started, the moves to it, the move played next.
pub struct HeldOut<'a> {
    pub start: &'a Position,
    pub moves: &'a [Move],
    pub record: Move,
}

/// Searches every position with every player (`threads` at a time, `limits` each) and
/// sums the measures; `progress` is called after each position.
pub fn measure<'a>(
    players: &mut [Searcher],
    positions: impl IntoIterator<Item = HeldOut<'a>>,
    limits: Limits,
    threads: usize,
    vote: Vote,
    max_c: usize,
    mut progress: impl FnMut(&DiversityStats),
) -> DiversityStats {
    let mut stats = DiversityStats::new(max_c);
    let never = AtomicBool::new(false);
    for p in positions {
        let results = consult::search(players, p.start, p.moves, limits, threads, &never);
        let chosen = results[consult::choose(&results, vote)].best_move;
        let moves: Vec<Move> = results.iter().map(|r| r.best_move).collect();
        stats.add(p.record, &moves, chosen);
        progress(&stats);
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::UsiPosition;

    fn mv(usi: &str) -> Move {
        UsiPosition::parse(&format!("startpos moves {usi}")).expect("legal test move").moves[0]
    }

    #[test]
    fn gogi_scat_known_answers() {
        // Ten players on one move: even over one candidate, far from even over two.
        assert_eq!(gogi_scat(&[10], 10, 1), 0.0);
        assert_eq!(gogi_scat(&[10], 10, 2), 25.0 + 25.0);
        // Five and five: even over two candidates.
        assert_eq!(gogi_scat(&[5, 5], 10, 2), 0.0);
        assert_eq!(gogi_scat(&[5, 5], 10, 1), 25.0);
        // 6, 3, 1 over three: (10/3 − 6)² + (10/3 − 3)² + (10/3 − 1)².
        let want =
            (10.0f64 / 3.0 - 6.0).powi(2) + (10.0f64 / 3.0 - 3.0).powi(2) + (10.0f64 / 3.0 - 1.0).powi(2);
        assert!((gogi_scat(&[6, 3, 1], 10, 3) - want).abs() < 1e-12);
    }

    #[test]
    fn backers_count_and_sort() {
        let (a, b, c) = (mv("7g7f"), mv("2g2f"), mv("5g5f"));
        assert_eq!(backers(&[a, b, a, c, a, b]), vec![3, 2, 1]);
        assert_eq!(backers(&[]), Vec::<usize>::new());
    }

    #[test]
    fn sums_over_positions() {
        let (a, b) = (mv("7g7f"), mv("2g2f"));
        let mut s = DiversityStats::new(2);
        // Record a; players a, a, b, b; the consultation chose b.
        s.add(a, &[a, a, b, b], b);
        // Record b; players b, b, b, b; chose b.
        s.add(b, &[b, b, b, b], b);
        assert_eq!(s.positions, 2);
        assert_eq!(s.consult_agreement(), 0.5);
        assert_eq!(s.player_agreement(), 6.0 / 8.0);
        assert_eq!(s.mean_distinct(), 1.5);
        // GogiScat(1): (4 − 2)² and (4 − 4)²; GogiScat(2): 0 and (2 − 4)² + (2 − 0)².
        assert_eq!(s.gogi_scat(1), 2.0);
        assert_eq!(s.gogi_scat(2), 4.0);
    }
}
