//! Incremental evaluation equals full recomputation after every move and every undo,
//! over 1,000 random games with random (invariant-respecting) KPPT tables.

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

#[test]
fn incremental_equals_full_over_random_games() {
    let tables = Arc::new(KpptTables::random(7, 3000));
    assert_eq!(tables.kpp_invariant_violation(), None);
    let eval = Evaluator::with_kppt(tables);
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut starts: Vec<Position> = vec![Position::startpos()];
    starts.extend(
        HANDICAPS
            .iter()
            .map(|(_, s)| Position::from_sfen(s).unwrap()),
    );
    starts.push(
        Position::from_sfen(
            "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1",
        )
        .unwrap(),
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
            let caps: Vec<_> = moves
                .iter()
                .copied()
                .filter(|m| !m.is_drop() && !pos.piece_on(m.to()).is_empty())
                .collect();
            let m = if !caps.is_empty() && rng.next().is_multiple_of(2) {
                caps[(rng.next() % caps.len() as u64) as usize]
            } else {
                moves[(rng.next() % moves.len() as u64) as usize]
            };
            let d = pos.do_move(m);
            eval.do_move(&mut state, &d, &pos);
            king_moves += (d.moved.piece_type() == engine_core::rules::PieceType::King) as u64;
            captures += d.is_capture() as u64;
            assert_eq!(
                eval.evaluate(&state, &pos),
                eval.evaluate_full(&pos),
                "game {game} after {m} at {}",
                pos.to_sfen()
            );
            positions += 1;
            history.push(d);
        }
        // Unwind half the game and check again on the way back.
        for _ in 0..history.len() / 2 {
            let d = history.pop().unwrap();
            eval.undo_move(&mut state, &d);
            pos.undo_move(&d);
            assert_eq!(
                eval.evaluate(&state, &pos),
                eval.evaluate_full(&pos),
                "game {game} after undo"
            );
        }
    }
    println!("{positions} positions, {king_moves} king moves, {captures} captures checked");
    assert!(positions > 100_000 && king_moves > 1_000 && captures > 10_000);
}
