//! Games between two evaluations in one process, each side searching with engine-core's
//! searcher at a fixed node budget on one thread (so every game is reproducible), under the
//! rules of `rules::game` (no legal move, repetition and perpetual check, the entering-king
//! declaration, a move limit that draws). Every opening is played twice with colours
//! swapped; results are from the tested side's view, as W/D/L and pentanomial pair counts.

use super::match_stats::MatchStats;
use super::sprt::Pentanomial;
use crate::eval::Evaluator;
use crate::rules::Color;
use crate::rules::game::{Game, GameRules};
use crate::search::{Limits, SearchOptions};
use crate::teacher::gensfen::Worker;
use crate::teacher::openings::Opening;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Transposition table per side, MiB: plenty for node budgets of a few thousand.
const HASH_MIB: usize = 16;

/// How the games of a match are played.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchSettings {
    /// Nodes per move, both sides.
    pub nodes: u64,
    /// A game reaching this many moves (opening included) is a draw.
    pub max_ply: u32,
}

/// The tested side's results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatchResults {
    pub stats: MatchStats,
    pub pairs: Pentanomial,
    pub nodes: u64,
}

/// Plays one game from `opening`; `players[0]` moves for black. The winner, `None` for a
/// draw, and the nodes searched.
pub fn play_game(
    players: [&mut Worker; 2],
    opening: &Opening,
    settings: MatchSettings,
) -> (Option<Color>, u64) {
    let [black, white] = players;
    black.reset();
    white.reset();
    let mut game = Game::new(opening.start);
    for &m in &opening.moves {
        let legal = game.try_play(m);
        assert!(legal, "opening move {m} is illegal (openings are checked when parsed)");
    }
    let rules = GameRules { declaration: true, max_plies: Some(settings.max_ply) };
    let limits = Limits::nodes(settings.nodes);
    let mut nodes = 0;
    loop {
        if let Some(outcome) = game.outcome(&rules) {
            return (outcome.winner, nodes);
        }
        let stm = game.position().side_to_move();
        let side = if stm == Color::Black { &mut *black } else { &mut *white };
        side.searcher.set_position(game.start(), game.moves());
        let r = side.searcher.go(limits, |_| {});
        nodes += r.nodes;
        if r.declare_win || r.best_move.is_none() {
            // `Game::outcome` above catches both; kept as a safety net.
            return (r.declare_win.then_some(stm).or(Some(stm.opponent())), nodes);
        }
        game.play(r.best_move);
    }
}

/// One opening's two games (the tested side black, then white) and their nodes.
type PairOutcome = (Option<bool>, Option<bool>, u64);

/// The tested side's result of a game it played as `tested`: `Some(true)` won.
fn result_for(winner: Option<Color>, tested: Color) -> Option<bool> {
    winner.map(|w| w == tested)
}

/// A side of a match: searches as `keima usi` plays with its evaluation.
fn player(evaluator: &Arc<Evaluator>) -> Worker {
    let mut w = Worker::new(evaluator.clone(), HASH_MIB);
    w.searcher.options = SearchOptions::for_play(evaluator);
    w
}

/// Plays every opening twice (the tested evaluation black first, then white) on `threads`
/// threads, each game searched on one thread; `progress` counts finished games. The
/// results do not depend on `threads`.
pub fn play_pairs(
    tested: &Arc<Evaluator>,
    baseline: &Arc<Evaluator>,
    openings: &[Opening],
    settings: MatchSettings,
    threads: usize,
    progress: &AtomicU64,
) -> MatchResults {
    let next = AtomicUsize::new(0);
    let pair_results: Mutex<Vec<Option<PairOutcome>>> = Mutex::new(vec![None; openings.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, openings.len().max(1)) {
            scope.spawn(|| {
                let (mut t, mut b) = (player(tested), player(baseline));
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(opening) = openings.get(i) else { break };
                    let (w1, n1) = play_game([&mut t, &mut b], opening, settings);
                    progress.fetch_add(1, Ordering::Relaxed);
                    let (w2, n2) = play_game([&mut b, &mut t], opening, settings);
                    progress.fetch_add(1, Ordering::Relaxed);
                    let pair = (result_for(w1, Color::Black), result_for(w2, Color::White), n1 + n2);
                    pair_results.lock().unwrap()[i] = Some(pair);
                }
            });
        }
    });
    let mut out = MatchResults::default();
    for (first, second, nodes) in pair_results.into_inner().unwrap().into_iter().flatten() {
        out.stats.add(first);
        out.stats.add(second);
        out.pairs.add_pair(first, second);
        out.nodes += nodes;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openings() -> Vec<Opening> {
        ["startpos moves 7g7f 3c3d", "startpos moves 2g2f 8c8d"]
            .iter()
            .map(|l| Opening::parse_usi(l).unwrap())
            .collect()
    }

    #[test]
    fn a_match_of_equal_sides_is_symmetric_and_reproducible() {
        let material = Arc::new(Evaluator::material_only());
        let settings = MatchSettings { nodes: 200, max_ply: 60 };
        let progress = AtomicU64::new(0);
        let one = play_pairs(&material, &material, &openings(), settings, 1, &progress);
        assert_eq!(progress.load(Ordering::Relaxed), 4);
        assert_eq!(one.stats.games(), 4);
        assert_eq!(one.pairs.pairs(), 2);
        // The same evaluation on both sides, one thread each: each pair's two games are
        // the same game with the names swapped, so every pair scores exactly 1 of 2.
        assert_eq!(one.pairs.counts, [0, 0, 2, 0, 0]);
        assert_eq!(one.stats.wins, one.stats.losses);
        let two = play_pairs(&material, &material, &openings(), settings, 2, &progress);
        assert_eq!(two, one, "the thread count changes nothing");
    }

    /// The sides of a match search as `keima usi` would with their evaluations (the
    /// correction history on beyond material); teachers search without it.
    #[test]
    fn match_sides_play_with_corrections_beyond_material_and_teachers_without() {
        let material = Arc::new(Evaluator::material_only());
        let mut patterns = Evaluator::material_only();
        patterns.patterns = Some(Arc::new(crate::eval::patterns::PatternSet::empty()));
        let patterns = Arc::new(patterns);
        assert!(!player(&material).searcher.options.correction_history);
        assert!(player(&patterns).searcher.options.correction_history);
        assert!(!Worker::new(patterns, 1).searcher.options.correction_history);
    }

    #[test]
    fn a_game_ends_by_the_rules_and_the_move_limit_draws() {
        let material = Arc::new(Evaluator::material_only());
        let (mut a, mut b) = (Worker::new(material.clone(), 1), Worker::new(material, 1));
        let opening = Opening::startpos();
        let (winner, nodes) = play_game([&mut a, &mut b], &opening, MatchSettings { nodes: 50, max_ply: 4 });
        assert_eq!(winner, None, "four moves from the start: the move limit draws");
        assert!(nodes >= 4 * 50 / 2, "{nodes}");
        // Black mates in one (G*5b, guarded by the pawn): the game ends with black's win.
        let mate_in_one = Opening::parse_usi("sfen 4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
        let (winner, _) =
            play_game([&mut a, &mut b], &mate_in_one, MatchSettings { nodes: 2000, max_ply: 100 });
        assert_eq!(winner, Some(Color::Black));
    }
}
