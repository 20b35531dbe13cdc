//! MultiPV: the search keeps the best `k` root moves with a line each, best first; with
//! one line it is the ordinary search.

use engine_core::eval::Evaluator;
use engine_core::rules::random_walk::capture_heavy_suite;
use engine_core::rules::{Move, Position, Square};
use engine_core::search::{Info, Limits, SearchOptions, Searcher, TranspositionTable};
use std::sync::Arc;

fn searcher(multi_pv: usize) -> Searcher {
    let mut s = Searcher::new(Arc::new(Evaluator::material_only()), Arc::new(TranspositionTable::new(8)));
    s.options = SearchOptions { multi_pv, ..SearchOptions::default() };
    s
}

/// Searches `pos` to `depth` and returns the lines reported at the last depth, in order.
fn lines_at_depth(
    s: &mut Searcher,
    pos: &Position,
    depth: i32,
) -> (Vec<Info>, engine_core::search::SearchResult) {
    s.set_position(pos, &[]);
    let mut infos = Vec::new();
    let r = s.go(Limits::depth(depth), |i| infos.push(i.clone()));
    let last: Vec<Info> = infos.into_iter().filter(|i| i.depth == r.depth).collect();
    (last, r)
}

fn assert_pv_legal(pos: &Position, pv: &[Move]) {
    let mut p = *pos;
    for &m in pv {
        assert!(p.is_legal(m), "{m} illegal in {} (pv {pv:?})", p.to_sfen());
        p.do_move(m);
    }
}

#[test]
fn lines_are_distinct_best_first_and_legal() {
    let mut checked = 0;
    for pos in capture_heavy_suite(24, 77) {
        let legal = pos.legal_moves().len();
        if legal < 2 {
            continue;
        }
        let mut s = searcher(4);
        let (lines, r) = lines_at_depth(&mut s, &pos, 4);
        if r.declare_win {
            continue;
        }
        let want = legal.min(4);
        assert_eq!(lines.len(), want, "{}", pos.to_sfen());
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(line.multipv, Some(i + 1));
            assert_pv_legal(&pos, &line.pv);
        }
        let firsts: Vec<Move> = lines.iter().map(|l| l.pv[0]).collect();
        for (i, m) in firsts.iter().enumerate() {
            assert!(!firsts[..i].contains(m), "{m} twice in {firsts:?}");
        }
        assert!(lines.windows(2).all(|w| w[0].score >= w[1].score), "{:?}", lines.iter().map(|l| l.score));
        assert_eq!(r.best_move, firsts[0]);
        assert_eq!(r.score, lines[0].score);
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} positions checked");
}

#[test]
fn enough_lines_cover_every_root_move() {
    let pos = Position::from_sfen("4k4/9/7r1/6S2/9/2b6/2G6/9/4K4 b - 1").unwrap();
    let legal = pos.legal_moves();
    let mut s = searcher(legal.len() + 5);
    let (lines, _) = lines_at_depth(&mut s, &pos, 3);
    assert_eq!(lines.len(), legal.len());
    let mut firsts: Vec<Move> = lines.iter().map(|l| l.pv[0]).collect();
    let mut all: Vec<Move> = legal.iter().copied().collect();
    firsts.sort_by_key(|m| m.to_usi());
    all.sort_by_key(|m| m.to_usi());
    assert_eq!(firsts, all);
}

#[test]
fn the_second_best_capture_is_the_next_line() {
    // Black's silver can take a rook on 2c (promoting or not), its gold a bishop on 7f;
    // neither can be taken back, and nothing else wins material.
    let pos = Position::from_sfen("4k4/9/7r1/6S2/9/2b6/2G6/9/4K4 b - 1").unwrap();
    let mut s = searcher(4);
    let (lines, r) = lines_at_depth(&mut s, &pos, 4);
    let rook_square = Square::new(1, 2);
    assert_eq!(lines[0].pv[0].to(), rook_square, "{}", lines[0].pv[0]);
    assert_eq!(r.best_move, lines[0].pv[0]);
    let next =
        lines.iter().find(|l| l.pv[0].to() != rook_square).expect("a line that does not take the rook");
    assert_eq!(
        next.pv[0].to_usi(),
        "7g7f",
        "{:?}",
        lines.iter().map(|l| l.pv[0].to_usi()).collect::<Vec<_>>()
    );
    assert!(next.score < lines[0].score);
    assert!(next.score > 0, "a bishop up: {}", next.score);
}

#[test]
fn one_line_reports_no_rank_and_searches_as_before() {
    let pos =
        Position::from_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1").unwrap();
    let run = |s: &mut Searcher| {
        s.set_position(&pos, &[]);
        let mut ranks = Vec::new();
        let r = s.go(Limits::depth(6), |i| ranks.push(i.multipv));
        (r.best_move, r.score, r.nodes, ranks)
    };
    let (m1, s1, n1, ranks) = run(&mut searcher(1));
    assert!(ranks.iter().all(Option::is_none));
    assert_eq!(ranks.len(), 6);
    // Several lines cost more nodes, and the best line agrees with the search's answer.
    let (m3, s3, n3, ranks3) = run(&mut searcher(3));
    assert!(n3 > n1, "{n3} <= {n1}");
    assert_eq!(ranks3.iter().filter(|r| **r == Some(1)).count(), 6);
    assert!(!m1.is_none() && !m3.is_none());
    assert!(s1.abs() < 30_000 && s3.abs() < 30_000);
}

#[test]
fn two_threads_keep_the_main_threads_lines() {
    for pos in capture_heavy_suite(6, 91) {
        if pos.legal_moves().len() < 3 {
            continue;
        }
        let mut s = searcher(3);
        s.set_threads(2);
        let (lines, r) = lines_at_depth(&mut s, &pos, 5);
        if r.declare_win {
            continue;
        }
        assert_eq!(lines.len(), 3);
        for line in &lines {
            assert_pv_legal(&pos, &line.pv);
        }
        assert_eq!(r.best_move, lines[0].pv[0], "the answer is the main thread's first line");
    }
}
