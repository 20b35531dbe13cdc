//! The counters of a teacher-generation run (`gensfen`): games, positions written and why
//! others were not, results and how games ended.

use crate::rules::Color;
use crate::rules::game::GameEnd;
use serde::{Deserialize, Serialize};

/// Counters of a run (or of one game). `merge` adds two of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GensfenStats {
    /// Games played or replayed (skipped games not included).
    pub games: u64,
    /// Records the sink accepted.
    pub positions_written: u64,
    /// Positions searched.
    pub positions_searched: u64,
    pub skipped_min_ply: u64,
    pub skipped_in_check: u64,
    /// Positions where a random move was played instead of a search.
    pub skipped_random_move: u64,
    /// Same key as a record already written in this run.
    pub duplicates: u64,
    /// Records the sink refused (invalid; should stay 0).
    pub rejected: u64,
    /// Record replay: games skipped because their result is unknown.
    pub skipped_unknown_result_games: u64,
    pub black_wins: u64,
    pub white_wins: u64,
    pub draws: u64,
    /// Sum of game lengths in moves from the start position (openings included).
    pub total_plies: u64,
    pub nodes: u64,
    pub end_no_legal_move: u64,
    pub end_repetition: u64,
    pub end_perpetual_check: u64,
    pub end_declaration: u64,
    pub end_max_ply: u64,
    pub end_eval_limit: u64,
}

impl GensfenStats {
    pub fn merge(&mut self, o: &GensfenStats) {
        self.games += o.games;
        self.positions_written += o.positions_written;
        self.positions_searched += o.positions_searched;
        self.skipped_min_ply += o.skipped_min_ply;
        self.skipped_in_check += o.skipped_in_check;
        self.skipped_random_move += o.skipped_random_move;
        self.duplicates += o.duplicates;
        self.rejected += o.rejected;
        self.skipped_unknown_result_games += o.skipped_unknown_result_games;
        self.black_wins += o.black_wins;
        self.white_wins += o.white_wins;
        self.draws += o.draws;
        self.total_plies += o.total_plies;
        self.nodes += o.nodes;
        self.end_no_legal_move += o.end_no_legal_move;
        self.end_repetition += o.end_repetition;
        self.end_perpetual_check += o.end_perpetual_check;
        self.end_declaration += o.end_declaration;
        self.end_max_ply += o.end_max_ply;
        self.end_eval_limit += o.end_eval_limit;
    }

    /// Average game length in moves (0 without games).
    pub fn average_plies(&self) -> f64 {
        if self.games == 0 { 0.0 } else { self.total_plies as f64 / self.games as f64 }
    }

    pub(crate) fn count_winner(&mut self, winner: Option<Color>) {
        match winner {
            Some(Color::Black) => self.black_wins += 1,
            Some(Color::White) => self.white_wins += 1,
            None => self.draws += 1,
        }
    }

    pub(crate) fn count_end(&mut self, end: GameEnd) {
        match end {
            GameEnd::NoLegalMove => self.end_no_legal_move += 1,
            GameEnd::Repetition => self.end_repetition += 1,
            GameEnd::PerpetualCheck => self.end_perpetual_check += 1,
            GameEnd::Declaration => self.end_declaration += 1,
            GameEnd::MaxPlies => self.end_max_ply += 1,
        }
    }
}

impl std::fmt::Display for GensfenStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} games (B {} / W {} / D {}, avg {:.1} plies), {} positions written, {} duplicates, \
             skipped: {} below min ply, {} in check, {} random moves, {} unknown-result games; \
             {} rejected, {} nodes",
            self.games,
            self.black_wins,
            self.white_wins,
            self.draws,
            self.average_plies(),
            self.positions_written,
            self.duplicates,
            self.skipped_min_ply,
            self.skipped_in_check,
            self.skipped_random_move,
            self.skipped_unknown_result_games,
            self.rejected,
            self.nodes
        )
    }
}
