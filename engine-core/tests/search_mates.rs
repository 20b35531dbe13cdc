//! The searcher and the df-pn mate search find known mates, and agree with each other.

use engine_core::eval::Evaluator;
use engine_core::rules::Position;
use engine_core::search::mate::{DfPn, MateResult, mate_in_one};
use engine_core::search::{Limits, MATE, Searcher, TranspositionTable};
use std::sync::Arc;

fn searcher() -> Searcher {
    Searcher::new(Arc::new(Evaluator::material_only()), Arc::new(TranspositionTable::new(16)))
}

fn mate_distance(sfen: &str, depth: i32) -> (Option<i32>, Vec<String>) {
    let pos = Position::from_sfen(sfen).unwrap();
    let mut s = searcher();
    s.set_position(&pos, &[]);
    let r = s.go(Limits::depth(depth), |_| {});
    let d = (r.score >= MATE - 100).then_some(MATE - r.score);
    (d, r.pv.iter().map(|m| m.to_usi()).collect())
}

#[test]
fn mate_in_one_is_found_statically_and_by_search() {
    let sfen = "8k/9/8P/9/9/9/9/9/K8 b G 1";
    let pos = Position::from_sfen(sfen).unwrap();
    assert_eq!(mate_in_one(&pos).map(|m| m.to_usi()), Some("G*1b".to_string()));
    let (d, pv) = mate_distance(sfen, 3);
    assert_eq!(d, Some(1), "{pv:?}");
    assert_eq!(pv[0], "G*1b");
}

/// Exact mate distance by plain alpha-beta (no null move, reductions or forward pruning): the shortest
/// mate within `depth` plies, as minimax defines it.
fn exact_mate_distance(sfen: &str, depth: i32) -> Option<i32> {
    let pos = Position::from_sfen(sfen).unwrap();
    let mut s = searcher();
    s.options.null_move = false;
    s.options.lmr = false;
    s.options.pruning = false;
    s.options.mate1 = false;
    s.set_position(&pos, &[]);
    let r = s.go(Limits::depth(depth), |_| {});
    (r.score >= MATE - 100).then_some(MATE - r.score)
}

/// Replays a mating line: every attacker move checks, and the last position is mate.
fn assert_mating_line(sfen: &str, line: &[engine_core::rules::Move]) {
    let mut pos = Position::from_sfen(sfen).unwrap();
    for (i, &m) in line.iter().enumerate() {
        assert!(pos.is_legal(m), "move {i} {m} illegal");
        pos.do_move(m);
        if i % 2 == 0 {
            assert!(pos.in_check(), "attacker move {i} {m} does not check");
        }
    }
    assert!(!pos.has_legal_move(), "line does not end in mate");
}

/// Positions from random games, mate in 3 and mate in 5 for the side to move (White).
const MATE3: &str = "ln2kgsn1/5gr2/pp2sp2l/g2pl3p/2p3Bp1/PP1P2p2/5P2P/6PPL/5K1N1 w Rbg2sn3p 88";
const MATE5: &str = "7p1/P2k3+P1/+LGP3s2/4p4/1R7/1r1PP3l/5P1l1/2K1Gs3/6+n2 w G5P2bg2s3nl5p 102";

#[test]
fn mates_in_three_and_five() {
    for (sfen, n) in [(MATE3, 3), (MATE5, 5)] {
        assert_eq!(exact_mate_distance(sfen, n + 2), Some(n), "{sfen}");
        // A deeper search would see a shorter mate if there were one.
        assert_eq!(exact_mate_distance(sfen, n + 4), Some(n), "{sfen}");
        // The default searcher (with pruning) finds a mate too, and so does df-pn.
        let (d, pv) = mate_distance(sfen, n + 2);
        assert!(d.is_some_and(|d| d <= n + 2), "{sfen}: {d:?} {pv:?}");
        match DfPn::new(200_000, 15).search(&Position::from_sfen(sfen).unwrap()) {
            MateResult::Mate(line) => {
                assert!(line.len() >= n as usize);
                assert_mating_line(sfen, &line);
            }
            other => panic!("df-pn on {sfen}: {other:?}"),
        }
    }
}

/// The CSA fixture `tsumeshogi.csa` is published as a mate-in-3 problem. Not checked
/// here whether the transcription keeps it a mate in 3 (the king can also answer 6d5d);
/// both engines must find a mate and agree that it is one.
const KANJU: &str = "9/9/3pp4/+r2k1p3/2L1+p4/2+R6/B8/B8/9 b 4g4s4n3l14p 1";

#[test]
fn fixture_problem_is_a_mate() {
    let mut dfpn = DfPn::new(500_000, 21);
    match dfpn.search(&Position::from_sfen(KANJU).unwrap()) {
        MateResult::Mate(line) => assert_mating_line(KANJU, &line),
        other => panic!("df-pn: {other:?}"),
    }
    // A mate in 9 plies that starts with sacrifices: the default search prunes checks
    // that lose material at shallow depth, and sees this mate by depth 19 (at depth 18 it
    // does not). By depth 17 before the cutoff count and the threat order, which reach
    // more depth per node: in `keima usi` both searches first report it after about
    // 3.8 M nodes. By depth 13 before ProbCut was removed.
    let (d, _) = mate_distance(KANJU, 19);
    assert_eq!(d, Some(9));
}

#[test]
fn no_mate_is_proven_when_there_are_no_checks() {
    let pos = Position::startpos();
    assert_eq!(DfPn::new(10_000, 15).search(&pos), MateResult::NoMate);
    assert_eq!(mate_in_one(&pos), None);
}

/// `mate_in_one` (which tries only the moves of `generate_checks`) finds a mate exactly where
/// trying every legal move finds one, and its move mates. Positions of capture-heavy random
/// games (many pieces in hand, so many drop mates), in and out of check.
#[test]
fn mate_in_one_agrees_with_trying_every_legal_move() {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut below = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let (mut positions, mut mates, mut in_check) = (0, 0, 0);
    for _ in 0..300 {
        let mut pos = Position::startpos();
        for _ in 0..160 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let reference = moves.iter().copied().find(|&m| {
                let mut after = pos;
                after.do_move(m);
                after.in_check() && !after.has_legal_move()
            });
            let found = mate_in_one(&pos);
            assert_eq!(found.is_some(), reference.is_some(), "{}", pos.to_sfen());
            if let Some(m) = found {
                assert!(moves.contains(m));
                let mut after = pos;
                after.do_move(m);
                assert!(after.in_check() && !after.has_legal_move(), "{} {}", pos.to_sfen(), m.to_usi());
                mates += 1;
            }
            positions += 1;
            in_check += pos.in_check() as usize;
            let list = moves.as_slice();
            let captures: Vec<_> =
                list.iter().copied().filter(|m| !pos.piece_on(m.to()).is_empty()).collect();
            let m = if !captures.is_empty() && below(10) < 8 {
                captures[below(captures.len())]
            } else {
                list[below(list.len())]
            };
            pos.do_move(m);
        }
    }
    assert!(
        positions > 20_000 && mates >= 50 && in_check >= 500,
        "{positions} positions, {mates} mates, {in_check} in check"
    );
}
