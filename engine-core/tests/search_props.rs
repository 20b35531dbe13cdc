//! Search soundness: only legal moves over thousands of random positions at several
//! depths, determinism, repetition and perpetual check.

use engine_core::eval::Evaluator;
use engine_core::rules::{Move, Position};
use engine_core::search::{Limits, Searcher, TranspositionTable};
use engine_core::search::{PERPETUAL_WIN, SUPERIOR_REPETITION};
use std::sync::Arc;

fn searcher() -> Searcher {
    Searcher::new(Arc::new(Evaluator::material_only()), Arc::new(TranspositionTable::new(8)))
}

fn play(pos: &Position, moves: &str) -> Vec<Move> {
    let mut p = *pos;
    moves
        .split_whitespace()
        .map(|u| {
            let m = p.parse_usi_move(u).unwrap();
            p.do_move(m);
            m
        })
        .collect()
}

#[test]
fn best_moves_are_legal_in_random_positions() {
    let mut x = 0xC0FFEEu64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut s = searcher();
    let (mut searched, mut in_check, mut no_move) = (0, 0, 0);
    for game in 0..300 {
        let mut pos = Position::startpos();
        for ply in 0..(20 + next() % 100) {
            let l = pos.legal_moves();
            if l.is_empty() {
                break;
            }
            pos.do_move(l[(next() % l.len() as u64) as usize]);
            if ply % 4 != 0 {
                continue;
            }
            let limits = match searched % 4 {
                0 => Limits::depth(1),
                1 => Limits::depth(2),
                2 => Limits::depth(3),
                _ => Limits::nodes(1500),
            };
            s.set_position(&pos, &[]);
            let r = s.go(limits, |_| {});
            searched += 1;
            in_check += pos.in_check() as u32;
            if pos.legal_moves().is_empty() {
                no_move += 1;
                assert!(r.best_move.is_none());
            } else if !r.declare_win {
                assert!(
                    pos.is_legal(r.best_move),
                    "game {game}: {} illegal in {}",
                    r.best_move,
                    pos.to_sfen()
                );
                for (i, &m) in r.pv.iter().enumerate() {
                    assert!(pos.is_legal(m) || i > 0, "pv head illegal");
                }
            }
        }
    }
    println!("{searched} searches, {in_check} in check, {no_move} without moves");
    assert!(searched > 5000 && in_check > 50);
}

#[test]
fn fixed_depth_and_node_searches_are_deterministic() {
    let pos =
        Position::from_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1").unwrap();
    for limits in [Limits::depth(4), Limits::nodes(20_000)] {
        let run = || {
            let mut s = searcher();
            s.set_position(&pos, &[]);
            let r = s.go(limits, |_| {});
            (r.best_move, r.score, r.nodes, r.pv)
        };
        assert_eq!(run(), run());
    }
}

#[test]
fn repetition_is_a_draw_for_the_side_that_is_behind() {
    // Black is far behind; repeating the position is its best result.
    let start = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b 2r2b4g 1").unwrap();
    let history = play(&start, "5i5h 5a5b 5h5i 5b5a");
    let mut s = searcher();
    s.set_position(&start, &history);
    let r = s.go(Limits::depth(3), |_| {});
    assert_eq!(r.best_move.to_usi(), "5i5h", "score {} pv {:?}", r.score, r.pv);
    assert_eq!(r.score, 0);
}

#[test]
fn contempt_prices_a_repetition_from_the_root_side() {
    // The position above, where repeating is Black's best result: it still repeats, and
    // the draw now costs it the contempt.
    let start = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b 2r2b4g 1").unwrap();
    let history = play(&start, "5i5h 5a5b 5h5i 5b5a");
    let mut s = searcher();
    s.options.contempt = 30;
    s.set_position(&start, &history);
    let r = s.go(Limits::depth(3), |_| {});
    assert_eq!(r.best_move.to_usi(), "5i5h", "score {} pv {:?}", r.score, r.pv);
    assert_eq!(r.score, -30);

    // Kings only: every position is level, and 5i4h, the first move of the list, repeats
    // the position. Without contempt that draw is as good as any move and is played; with
    // it, Black keeps the game going (the opponent cannot force the draw: the score stays 0).
    let start = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b - 1").unwrap();
    let history = play(&start, "5i4h 5a5b 4h5i 5b5a");
    for (contempt, repeats) in [(0, true), (30, false), (-30, true)] {
        for depth in [1, 2, 3, 4] {
            let mut s = searcher();
            s.options.contempt = contempt;
            s.set_position(&start, &history);
            let r = s.go(Limits::depth(depth), |_| {});
            let what = format!(
                "contempt {contempt}, depth {depth}: {} {} pv {:?}",
                r.best_move.to_usi(),
                r.score,
                r.pv
            );
            assert_eq!(r.best_move.to_usi() == "5i4h", repeats, "{what}");
            assert_eq!(r.score, (-contempt).max(0), "{what}");
        }
    }
}

#[test]
fn perpetual_check_is_avoided_by_the_checker() {
    // Black, a rook up, has checked with every move since the position after 6i5i; giving
    // the same check again would repeat it and lose.
    let start = Position::from_sfen("3k5/9/9/9/9/9/9/9/R7K b - 1").unwrap();
    let history = play(&start, "9i6i 6a5a 6i5i 5a6a 5i6i 6a5a");
    let mut s = searcher();
    s.set_position(&start, &history);
    let r = s.go(Limits::depth(3), |_| {});
    assert_ne!(r.best_move.to_usi(), "6i5i", "repeating the perpetual check loses");
    assert!(r.score > 0 && r.score < PERPETUAL_WIN);
}

#[test]
fn returning_to_a_board_with_more_in_hand_is_superior() {
    // White dropped a pawn in front of Black's rook, which took it and comes back: 2f2h
    // makes the board of the start again, White to move as then, a pawn poorer. That is
    // inferior for White, so the move scores as a superior position for Black (an
    // ordinary evaluation would give it about a rook and a pawn).
    let start = Position::from_sfen("4k4/9/9/9/9/9/9/7R1/4K4 w p 1").unwrap();
    let history = play(&start, "P*2e 2h2e 5a4a 2e2f 4a5a");
    for depth in [1, 2] {
        let mut s = searcher();
        s.set_position(&start, &history);
        let r = s.go(Limits::depth(depth), |_| {});
        assert_eq!(r.best_move.to_usi(), "2f2h", "depth {depth}: score {} pv {:?}", r.score, r.pv);
        assert_eq!(r.score, SUPERIOR_REPETITION, "depth {depth}");
    }
    // (A plain repetition, same hands, must stay a draw: the tests above.)
}

/// Fixed-depth searches stay bounded where checks and drops abound: the check extension
/// must not keep the depth constant through a string of checks. (Extending both the check
/// and the evasion took 5,000,000+ nodes for a depth-1 search in 2 of these 200 positions.)
#[test]
fn shallow_searches_stay_small_in_check_heavy_positions() {
    let suite = engine_core::rules::random_walk::capture_heavy_suite(200, 0x5345_4152_4348);
    assert!(suite.iter().filter(|p| p.in_check()).count() >= 5, "the suite has checks");
    for (depth, bound) in [(1, 50_000u64), (2, 300_000)] {
        let mut max = 0;
        for pos in &suite {
            let mut s = searcher();
            s.set_position(pos, &[]);
            let r = s.go(Limits { depth: Some(depth), nodes: Some(bound * 4), ..Limits::default() }, |_| {});
            max = max.max(r.nodes);
            assert!(r.nodes <= bound, "depth {depth}: {} nodes for {}", r.nodes, pos.to_sfen());
        }
        eprintln!("depth {depth}: at most {max} nodes");
    }
}

/// Lazy SMP: with two threads every best move and PV head is legal, and a depth-limited
/// search ends by itself having completed its depth.
#[test]
fn two_thread_searches_give_legal_moves() {
    let suite = engine_core::rules::random_walk::capture_heavy_suite(120, 0x534d_5032);
    let mut s = searcher();
    s.set_threads(2);
    let mut completed = 0;
    for (i, pos) in suite.iter().enumerate() {
        s.set_position(pos, &[]);
        let limits = if i % 2 == 0 { Limits::depth(5) } else { Limits::nodes(30_000) };
        let r = s.go(limits, |_| {});
        if !pos.has_legal_move() {
            assert!(r.best_move.is_none());
            continue;
        }
        if r.declare_win {
            continue;
        }
        assert!(pos.is_legal(r.best_move), "{} illegal in {}", r.best_move, pos.to_sfen());
        assert!(r.pv.first().is_none_or(|&m| pos.is_legal(m)));
        if i % 2 == 0 && r.score.abs() < engine_core::search::MATE_IN_MAX_PLY {
            assert_eq!(r.depth, 5, "{}", pos.to_sfen());
            completed += 1;
        }
    }
    assert!(completed > 30, "{completed}");
}
