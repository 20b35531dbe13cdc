//! Incremental evaluation equals full recomputation after every move and every undo,
//! over 1,000 random games with random (invariant-respecting) KPPT tables.

use engine_core::eval::patterns::{Band, ExtractConfig, PatternCounter, PatternSet};
use engine_core::eval::{Evaluator, KpptTables};
use engine_core::rules::{HANDICAPS, Position};
use std::sync::Arc;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Patterns drawn from positions of random games (so that many are active), of sizes 2-4,
/// absolute and side-relative, with random weights.
fn random_pattern_set(seed: u64) -> PatternSet {
    let mut rng = Rng(seed);
    let mut patterns = Vec::new();
    for (size, relative) in [(2, false), (3, true), (4, false), (2, true), (3, false)] {
        let mut counter =
            PatternCounter::new(ExtractConfig { size, relative, samples_per_position: 4, seed });
        for _ in 0..40 {
            let mut pos = Position::startpos();
            for _ in 0..60 {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                pos.do_move(moves[(rng.next() % moves.len() as u64) as usize]);
                counter.observe(&pos);
            }
        }
        let ex = counter.finish(Band { max_share: 0.9, drop_top: 0, min_count: 1, keep: 800 });
        patterns.extend(ex.kept.into_iter().map(|(p, _)| p));
    }
    let weights = patterns.iter().map(|_| (rng.next() % 2001) as i32 - 1000).collect();
    PatternSet::new(patterns, weights)
}

#[test]
fn incremental_equals_full_over_random_games() {
    let tables = Arc::new(KpptTables::random(7, 3000));
    assert_eq!(tables.kpp_invariant_violation(), None);
    let mut eval = Evaluator::with_kppt(tables);
    let patterns = random_pattern_set(42);
    assert!(patterns.len() >= 3000, "{} patterns", patterns.len());
    eval.patterns = Some(Arc::new(patterns));
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut nonzero_pattern_values = 0u64;
    let mut starts: Vec<Position> = vec![Position::startpos()];
    starts.extend(HANDICAPS.iter().map(|(_, s)| Position::from_sfen(s).unwrap()));
    starts.push(
        Position::from_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1").unwrap(),
    );
    let (mut positions, mut king_moves, mut captures) = (0u64, 0u64, 0u64);
    for game in 0..1000 {
        let mut pos = starts[game % starts.len()];
        let mut state = eval.new_state(&pos);
        let mut history = Vec::new();
        for _ in 0..160 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            // Prefer captures half of the time so hands fill and promoted pieces appear.
            let caps: Vec<_> =
                moves.iter().copied().filter(|m| !m.is_drop() && !pos.piece_on(m.to()).is_empty()).collect();
            let m = if !caps.is_empty() && rng.next().is_multiple_of(2) {
                caps[(rng.next() % caps.len() as u64) as usize]
            } else {
                moves[(rng.next() % moves.len() as u64) as usize]
            };
            let d = pos.do_move(m);
            eval.do_move(&mut state, &d, &pos);
            king_moves += (d.moved.piece_type() == engine_core::rules::PieceType::King) as u64;
            captures += d.is_capture() as u64;
            let incremental = eval.evaluate(&state, &pos);
            assert_eq!(incremental, eval.evaluate_full(&pos), "game {game} after {m} at {}", pos.to_sfen());
            nonzero_pattern_values += (incremental.patterns != 0) as u64;
            positions += 1;
            history.push(d);
        }
        // Unwind half the game and check again on the way back.
        for _ in 0..history.len() / 2 {
            let d = history.pop().unwrap();
            eval.undo_move(&mut state, &d);
            pos.undo_move(&d);
            assert_eq!(eval.evaluate(&state, &pos), eval.evaluate_full(&pos), "game {game} after undo");
        }
    }
    println!(
        "{positions} positions, {king_moves} king moves, {captures} captures, \
         {nonzero_pattern_values} with a non-zero pattern value checked"
    );
    assert!(positions > 100_000 && king_moves > 1_000 && captures > 10_000);
    assert!(nonzero_pattern_values > positions / 2, "patterns must be active in most positions");
}
