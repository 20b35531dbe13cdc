//! A searcher given the next position of the same game advances its evaluation by the new
//! moves instead of computing it from scratch (`Searcher::set_position`), and evaluates the
//! end of a line incrementally (`Searcher::evaluate_after`). Both must give exactly what a
//! full computation gives: checked along random games with random KPPT tables (king moves
//! included, which go through the king-square cache), with searches in between, and when
//! the game set next is not a continuation (taken back, or another line).

use engine_core::eval::{Evaluator, KpptTables};
use engine_core::rules::{Move, Position};
use engine_core::search::{Limits, Searcher, TranspositionTable};
use std::sync::Arc;

mod learn_util;
use learn_util::Rng;

/// Legal random moves from `pos`, at most `plies`, stopping where no move is legal.
fn random_line(pos: &Position, plies: usize, rng: &mut Rng) -> Vec<Move> {
    let mut p = *pos;
    let mut line = Vec::new();
    for _ in 0..plies {
        let moves = p.legal_moves();
        if moves.is_empty() {
            break;
        }
        let m = moves[rng.below(moves.len())];
        p.do_move(m);
        line.push(m);
    }
    line
}

fn replay(start: &Position, moves: &[Move]) -> Position {
    let mut p = *start;
    for &m in moves {
        p.do_move(m);
    }
    p
}

#[test]
fn a_game_that_goes_on_is_evaluated_as_from_scratch() {
    let evaluator = Arc::new(Evaluator::with_kppt(Arc::new(KpptTables::random(23, 3000))));
    let mut searcher = Searcher::new(evaluator.clone(), Arc::new(TranspositionTable::new(4)));
    let mut rng = Rng(0x5EED_1234);
    let start = Position::startpos();
    let mut checked = 0;
    for game in 0..12 {
        let moves = random_line(&start, 160, &mut rng);
        let mut i = 0;
        while i <= moves.len() {
            searcher.set_position(&start, &moves[..i]);
            let pos = replay(&start, &moves[..i]);
            assert!(*searcher.position() == pos, "game {game} ply {i}: wrong position");
            let full = evaluator.evaluate_full(&pos).eval;
            assert_eq!(searcher.evaluate_after(&[]), full, "game {game} ply {i}: root evaluation");
            let line = random_line(&pos, 1 + rng.below(4), &mut rng);
            let end = replay(&pos, &line);
            assert_eq!(
                searcher.evaluate_after(&line),
                evaluator.evaluate_full(&end).eval,
                "game {game} ply {i}: evaluation after {} moves",
                line.len()
            );
            // The searcher is where it was after looking down the line.
            assert_eq!(searcher.evaluate_after(&[]), full, "game {game} ply {i}: root after the line");
            if i % 7 == 3 {
                searcher.go(Limits::depth(2), |_| {});
                assert_eq!(searcher.evaluate_after(&[]), full, "game {game} ply {i}: root after a search");
            }
            checked += 1;
            // Mostly one or two moves on, as a game's searches go; now and then back a few
            // moves (not a continuation: evaluated from scratch again).
            i = match rng.below(10) {
                0 if i >= 4 => i - 3,
                1..=3 => i + 2,
                _ => i + 1,
            };
        }
        // Another game from the same start after this one: from scratch.
        let other = random_line(&start, 6, &mut rng);
        searcher.set_position(&start, &other);
        assert_eq!(searcher.evaluate_after(&[]), evaluator.evaluate_full(&replay(&start, &other)).eval);
    }
    assert!(checked > 1000, "only {checked} positions checked");
}

#[test]
fn another_start_is_not_taken_for_a_continuation() {
    let evaluator = Arc::new(Evaluator::with_kppt(Arc::new(KpptTables::random(29, 3000))));
    let mut searcher = Searcher::new(evaluator.clone(), Arc::new(TranspositionTable::new(4)));
    let mut rng = Rng(77);
    let start = Position::startpos();
    let opening = random_line(&start, 10, &mut rng);
    let other_start = replay(&start, &opening[..4]);
    // The same moves from another start position are a different game.
    searcher.set_position(&start, &opening[4..4]);
    searcher.set_position(&other_start, &opening[4..]);
    let pos = replay(&other_start, &opening[4..]);
    assert!(*searcher.position() == pos);
    assert_eq!(searcher.evaluate_after(&[]), evaluator.evaluate_full(&pos).eval);
    // And the game from the real start is rebuilt, not advanced from the other one.
    searcher.set_position(&start, &opening);
    assert!(*searcher.position() == replay(&start, &opening));
    assert_eq!(searcher.evaluate_after(&[]), evaluator.evaluate_full(&pos).eval);
}
