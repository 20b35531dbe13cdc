//! Incremental evaluation equals full recomputation after every move and every undo,
//! over 1,000 random games with random (invariant-respecting) KPPT tables, on both pattern
//! update paths; and a set pruned of its zero weights evaluates exactly as the full set.

use engine_core::eval::patterns::{Band, ExtractConfig, Pattern, PatternCounter, PatternSet, Triple};
use engine_core::eval::{Evaluator, KpptTables};
use engine_core::rules::{HANDICAPS, PieceType, Position, Square};
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

/// Patterns over a pool of 30 triples (60 with the side-relative ones' flipped twins), so
/// that the set takes the at-most-64-triples fast path; triples seen in random games, so
/// that many patterns are active.
fn small_vocabulary_set(seed: u64) -> PatternSet {
    let mut rng = Rng(seed);
    let mut pool: Vec<Triple> = Vec::new();
    let mut pos = Position::startpos();
    while pool.len() < 30 {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            pos = Position::startpos();
            continue;
        }
        pos.do_move(moves[(rng.next() % moves.len() as u64) as usize]);
        let sq = Square::from_index((rng.next() % 81) as usize);
        let p = pos.piece_on(sq);
        if !p.is_empty() && !pool.iter().any(|t| t.square == sq) {
            pool.push(Triple { color: p.color(), piece_type: p.piece_type(), square: sq });
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut patterns = Vec::new();
    while patterns.len() < 3000 {
        let size = 2 + (rng.next() % 3) as usize;
        let mut triples: Vec<Triple> = Vec::new();
        while triples.len() < size {
            let t = pool[(rng.next() % pool.len() as u64) as usize];
            if !triples.contains(&t) {
                triples.push(t);
            }
        }
        let p = Pattern::new(triples, rng.next().is_multiple_of(2)).unwrap();
        if seen.insert(p.clone()) {
            patterns.push(p);
        }
    }
    let weights = patterns.iter().map(|_| (rng.next() % 2001) as i32 - 1000).collect();
    PatternSet::new(patterns, weights)
}

/// Plays random games (captures preferred half of the time, so hands fill and promoted
/// pieces appear) from the start position, the handicaps and a middle-game position; after
/// every move and every undo of the game's second half, the incremental value of `eval`
/// must equal the full recomputation, and `also` (an evaluator meant to be equivalent) must
/// give the same value. Returns (positions, king moves, captures, non-zero pattern values).
fn check_random_games(eval: &Evaluator, also: Option<&Evaluator>, games: usize, seed: u64) -> [u64; 4] {
    let mut rng = Rng(seed);
    let mut starts: Vec<Position> = vec![Position::startpos()];
    starts.extend(HANDICAPS.iter().map(|(_, s)| Position::from_sfen(s).unwrap()));
    starts.push(
        Position::from_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1").unwrap(),
    );
    let mut stats = [0u64; 4];
    for game in 0..games {
        let mut pos = starts[game % starts.len()];
        let mut state = eval.new_state(&pos);
        let mut other = also.map(|e| e.new_state(&pos));
        let mut history = Vec::new();
        for _ in 0..160 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let caps: Vec<_> =
                moves.iter().copied().filter(|m| !m.is_drop() && !pos.piece_on(m.to()).is_empty()).collect();
            let m = if !caps.is_empty() && rng.next().is_multiple_of(2) {
                caps[(rng.next() % caps.len() as u64) as usize]
            } else {
                moves[(rng.next() % moves.len() as u64) as usize]
            };
            let d = pos.do_move(m);
            eval.do_move(&mut state, &d, &pos);
            stats[1] += (d.moved.piece_type() == PieceType::King) as u64;
            stats[2] += d.is_capture() as u64;
            let incremental = eval.evaluate(&mut state, &pos);
            assert_eq!(incremental, eval.evaluate_full(&pos), "game {game} after {m} at {}", pos.to_sfen());
            if let (Some(e), Some(s)) = (also, other.as_mut()) {
                e.do_move(s, &d, &pos);
                assert_eq!(
                    e.evaluate(s, &pos),
                    incremental,
                    "equivalent evaluator differs at {}",
                    pos.to_sfen()
                );
            }
            stats[3] += (incremental.patterns != 0) as u64;
            stats[0] += 1;
            history.push(d);
        }
        // Unwind half the game and check again on the way back.
        for _ in 0..history.len() / 2 {
            let d = history.pop().unwrap();
            eval.undo_move(&mut state, &d);
            if let (Some(e), Some(s)) = (also, other.as_mut()) {
                e.undo_move(s, &d);
            }
            pos.undo_move(&d);
            let v = eval.evaluate(&mut state, &pos);
            assert_eq!(v, eval.evaluate_full(&pos), "game {game} after undo");
            if let (Some(e), Some(s)) = (also, other.as_mut()) {
                assert_eq!(e.evaluate(s, &pos), v, "equivalent evaluator differs after undo");
            }
        }
    }
    stats
}

#[test]
fn incremental_equals_full_over_random_games() {
    let tables = Arc::new(KpptTables::random(7, 3000));
    assert_eq!(tables.kpp_invariant_violation(), None);
    let mut eval = Evaluator::with_kppt(tables);
    let patterns = random_pattern_set(42);
    assert!(patterns.len() >= 3000, "{} patterns", patterns.len());
    assert!(!patterns.uses_vocabulary(), "this set must exercise the general (board) path");
    eval.patterns = Some(Arc::new(patterns));
    let [positions, king_moves, captures, nonzero_pattern_values] =
        check_random_games(&eval, None, 1000, 0x1234_5678_9abc_def1);
    println!(
        "{positions} positions, {king_moves} king moves, {captures} captures, \
         {nonzero_pattern_values} with a non-zero pattern value checked"
    );
    assert!(positions > 100_000 && king_moves > 1_000 && captures > 10_000);
    assert!(nonzero_pattern_values > positions / 2, "patterns must be active in most positions");
}

#[test]
fn incremental_equals_full_on_the_small_vocabulary_path() {
    let mut eval = Evaluator::material_only();
    let patterns = small_vocabulary_set(9);
    assert!(patterns.uses_vocabulary(), "60 distinct triples must take the fast path");
    assert!(
        patterns.patterns().iter().any(|p| p.is_relative())
            && patterns.patterns().iter().any(|p| !p.is_relative())
    );
    eval.patterns = Some(Arc::new(patterns));
    let [positions, _, captures, nonzero] = check_random_games(&eval, None, 1000, 0x0fed_cba9_8765_4321);
    println!("{positions} positions, {captures} captures, {nonzero} with a non-zero pattern value");
    assert!(positions > 100_000 && captures > 10_000);
    assert!(nonzero > positions / 4, "patterns must often be active: {nonzero} of {positions}");
}

#[test]
fn pruning_zero_weights_changes_no_value() {
    for (name, mut set) in [("general", random_pattern_set(5)), ("small vocabulary", small_vocabulary_set(6))]
    {
        // Zero about half of the weights, as training leaves many near zero.
        let n = set.len();
        for i in (0..n).filter(|i| i % 2 == 0 || i % 7 == 0) {
            set.set_weight(i, 0);
        }
        let (pruned, kept) = set.without_zero_weights();
        assert!(pruned.len() < n / 2 && !pruned.is_empty(), "{name}: {} of {n} kept", pruned.len());
        assert!(pruned.index_len() < set.index_len());
        for (j, &i) in kept.iter().enumerate() {
            assert_eq!(pruned.patterns()[j], set.patterns()[i as usize]);
            assert_eq!(pruned.weights()[j], set.weights()[i as usize]);
            assert_ne!(pruned.weights()[j], 0);
        }
        let mut full = Evaluator::material_only();
        full.patterns = Some(Arc::new(set));
        let mut small = Evaluator::material_only();
        small.patterns = Some(Arc::new(pruned));
        let [positions, ..] = check_random_games(&full, Some(&small), 150, 77);
        assert!(positions > 15_000, "{name}");
    }
}

/// The KPPT sums are computed lazily: a position evaluated only now and then, after
/// moves made from positions never evaluated and undone again (as a search does),
/// still has the value of a full recomputation.
#[test]
fn lazy_evaluation_with_skipped_positions_equals_full() {
    let tables = Arc::new(KpptTables::random(11, 3000));
    let eval = Evaluator::with_kppt(tables);
    let mut rng = Rng(99);
    let (mut checked, mut skipped) = (0u32, 0u32);
    for game in 0..60 {
        let mut pos = Position::startpos();
        let mut state = eval.new_state(&pos);
        for ply in 0..140 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            // A small "search": try a few moves and undo them, evaluating some of the
            // positions reached (one in three), before playing on.
            for _ in 0..(rng.next() % 4) {
                let m = moves[(rng.next() % moves.len() as u64) as usize];
                let d = pos.do_move(m);
                eval.do_move(&mut state, &d, &pos);
                // As the search does: start loading the rows the update will read.
                eval.prefetch(&mut state);
                if rng.next().is_multiple_of(3) {
                    assert_eq!(
                        eval.evaluate(&mut state, &pos),
                        eval.evaluate_full(&pos),
                        "game {game} ply {ply} try {m}"
                    );
                    checked += 1;
                }
                eval.undo_move(&mut state, &d);
                pos.undo_move(&d);
            }
            let m = moves[(rng.next() % moves.len() as u64) as usize];
            let d = pos.do_move(m);
            eval.do_move(&mut state, &d, &pos);
            if rng.next().is_multiple_of(4) {
                assert_eq!(
                    eval.evaluate(&mut state, &pos),
                    eval.evaluate_full(&pos),
                    "game {game} after {m}"
                );
                checked += 1;
            } else {
                skipped += 1;
            }
        }
    }
    assert!(checked > 3000 && skipped > 3000, "{checked} checked, {skipped} skipped");
}

/// A search's walk: a tree of moves made and taken back (drops and captures preferred,
/// so a drop's hand slot is reused by a capture below it), every position evaluated
/// incrementally against the full recomputation, on the way down and after each undo.
#[test]
fn incremental_equals_full_through_a_tree_of_moves_and_undos() {
    use engine_core::rules::random_walk::{TreeStep, capture_heavy_suite, walk_tree, xorshift};
    let eval = Evaluator::with_kppt(Arc::new(KpptTables::random(17, 3000)));
    let mut next = xorshift(0xd40b_5107);
    let mut checked = 0;
    for start in capture_heavy_suite(30, 22) {
        let mut state = eval.new_state(&start);
        checked += walk_tree(&start, 5, 3, &mut next, &mut |step| match step {
            TreeStep::Made(pos, d) => {
                eval.do_move(&mut state, d, pos);
                assert_eq!(
                    eval.evaluate(&mut state, pos),
                    eval.evaluate_full(pos),
                    "after {} at {}",
                    d.mv,
                    pos.to_sfen()
                );
            }
            TreeStep::Undone(pos, d) => {
                eval.undo_move(&mut state, d);
                assert_eq!(eval.evaluate(&mut state, pos), eval.evaluate_full(pos), "after undoing {}", d.mv);
            }
        });
    }
    assert!(checked > 8_000, "{checked} positions checked");
}

/// A lazy update may start several plies back: each position in between is brought up
/// to date in turn on the piece list as it was there (a piece that moved twice, a
/// recapture on the same square, a king move in the chain). With captures preferred and
/// evaluations far apart, every gap from one to eight plies must still give the full
/// recomputation's value.
#[test]
fn lazy_update_across_several_unevaluated_plies_equals_full() {
    let tables = Arc::new(KpptTables::random(13, 3000));
    let eval = Evaluator::with_kppt(tables);
    let mut rng = Rng(2024);
    let mut by_gap = [0u32; 9];
    let (mut with_king_move, mut with_recapture) = (0u32, 0u32);
    for game in 0..300 {
        let mut pos = Position::startpos();
        let mut state = eval.new_state(&pos);
        let mut gap = 0usize;
        let (mut king_in_gap, mut recapture_in_gap) = (false, false);
        let mut last_to = None;
        for ply in 0..150 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let caps: Vec<_> =
                moves.iter().copied().filter(|m| !m.is_drop() && !pos.piece_on(m.to()).is_empty()).collect();
            let m = if !caps.is_empty() && !rng.next().is_multiple_of(3) {
                caps[(rng.next() % caps.len() as u64) as usize]
            } else {
                moves[(rng.next() % moves.len() as u64) as usize]
            };
            let d = pos.do_move(m);
            eval.do_move(&mut state, &d, &pos);
            if rng.next().is_multiple_of(2) {
                eval.prefetch(&mut state);
            }
            gap += 1;
            king_in_gap |= d.moved.piece_type() == PieceType::King;
            recapture_in_gap |= d.is_capture() && last_to == Some(d.to);
            last_to = Some(d.to);
            if rng.next() % 8 < 2 || gap == 8 {
                assert_eq!(
                    eval.evaluate(&mut state, &pos),
                    eval.evaluate_full(&pos),
                    "game {game} ply {ply}: {gap} plies after the last evaluation, at {}",
                    pos.to_sfen()
                );
                by_gap[gap] += 1;
                with_king_move += (king_in_gap && gap > 1) as u32;
                with_recapture += (recapture_in_gap && gap > 1) as u32;
                gap = 0;
                king_in_gap = false;
                recapture_in_gap = false;
            }
        }
    }
    println!(
        "evaluations by gap {by_gap:?}; {with_king_move} with a king move, {with_recapture} with a recapture"
    );
    assert!(by_gap[1..].iter().all(|&n| n >= 50), "every gap 1-8 must be checked: {by_gap:?}");
    assert!(with_king_move >= 100 && with_recapture >= 500, "{with_king_move} / {with_recapture}");
}
