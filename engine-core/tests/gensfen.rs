//! Teacher generation: self-play and record replay write valid, reproducible shards.

use engine_core::eval::Evaluator;
use engine_core::records::{GameRecord, Outcome, load_file};
use engine_core::rules::{Color, Position};
use engine_core::teacher::gensfen::{
    GensfenConfig, GensfenStats, Opening, SearchLimit, SelfPlayGames, TeacherSearch, UnknownResult, Worker,
    run_records, run_selfplay,
};
use engine_core::teacher::{PackedSfenValue, ShardReader, ShardSettings, ShardWriter, TeacherRecord};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn workers(n: usize) -> Vec<Worker> {
    let eval = Arc::new(Evaluator::material_only());
    (0..n).map(|_| Worker::new(eval.clone(), 1)).collect()
}

/// A fresh directory, removed when the returned guard drops.
fn tmp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("keima-gensfen-test-{name}-"))
        .tempdir_in(std::env::temp_dir())
        .unwrap()
}

fn small_config(seed: u64) -> GensfenConfig {
    GensfenConfig {
        search: TeacherSearch {
            limit: SearchLimit::Depth(2),
            eval_limit: 3000,
            write_minply: 8,
            ..TeacherSearch::default()
        },
        play: SelfPlayGames { max_ply: 60, random_moves: 4, random_min_ply: 1, random_max_ply: 12 },
        seed,
        ..GensfenConfig::default()
    }
}

fn selfplay_shard(
    path: &Path,
    cfg: &GensfenConfig,
    openings: &[Opening],
    games: u64,
    threads: usize,
) -> GensfenStats {
    let writer =
        ShardWriter::create(path, ShardSettings { eval_id: "material".into(), ..Default::default() })
            .unwrap();
    let (writer, stats) = run_selfplay(&mut workers(threads), cfg, openings, games, writer, |_| {}).unwrap();
    let manifest = writer.finish().unwrap();
    assert_eq!(manifest.records, stats.positions_written);
    assert_eq!(manifest.rejects.total(), 0);
    stats
}

fn read_back(path: &Path) -> Vec<TeacherRecord> {
    let (records, rejects) = ShardReader::read_all(path).unwrap();
    assert_eq!(rejects.total(), 0, "{rejects}");
    records
}

/// Splits records into games: a game's records have increasing plies.
fn split_games(records: &[TeacherRecord]) -> Vec<&[TeacherRecord]> {
    let mut games = Vec::new();
    let mut start = 0;
    for i in 1..=records.len() {
        if i == records.len() || records[i].psv.game_ply <= records[i - 1].psv.game_ply {
            games.push(&records[start..i]);
            start = i;
        }
    }
    games
}

/// The result as seen by Black (+1 Black won).
fn black_result(r: &TeacherRecord) -> i8 {
    if r.pos.side_to_move() == Color::Black { r.psv.game_result } else { -r.psv.game_result }
}

fn check_records(records: &[TeacherRecord], write_minply: u32, eval_limit: i16) {
    for r in records {
        let mv = r.mv.expect("self-play records have a move");
        assert!(r.pos.is_legal(mv), "{} {}", r.pos.to_sfen(), mv);
        assert!(!r.pos.in_check(), "{}", r.pos.to_sfen());
        assert!(r.psv.game_ply as u32 >= write_minply);
        assert_eq!(r.psv.game_ply as u32, r.pos.ply());
        assert!(r.psv.score.abs() <= eval_limit);
    }
}

#[test]
fn selfplay_writes_valid_consistent_records() {
    let tmp = tmp_dir("valid");
    let dir = tmp.path();
    let path = dir.join("a.psv.zst");
    let cfg = small_config(42);
    let stats = selfplay_shard(&path, &cfg, &[], 4, 1);
    assert_eq!(stats.games, 4);
    assert_eq!(stats.black_wins + stats.white_wins + stats.draws, 4);
    assert!(stats.positions_written > 20, "{stats}");
    assert!(stats.skipped_min_ply > 0 && stats.skipped_random_move > 0, "{stats}");
    assert!(stats.nodes > 0);
    assert!(stats.average_plies() > 8.0 && stats.average_plies() <= 60.0, "{stats}");
    let records = read_back(&path);
    assert_eq!(records.len() as u64, stats.positions_written);
    check_records(&records, cfg.search.write_minply, cfg.search.eval_limit as i16);
    let games = split_games(&records);
    assert!(games.len() <= 4 && !games.is_empty());
    for game in games {
        let first = black_result(&game[0]);
        for r in game {
            assert_eq!(black_result(r), first, "one result per game, signed by side to move");
        }
        if first != 0 {
            // Decisive: the sign alternates with the side to move.
            for w in game.windows(2) {
                let same_side = w[0].pos.side_to_move() == w[1].pos.side_to_move();
                assert_eq!(w[0].psv.game_result == w[1].psv.game_result, same_side);
            }
        }
    }
}

#[test]
fn same_seed_same_bytes_any_thread_count() {
    let tmp = tmp_dir("determinism");
    let dir = tmp.path();
    let (a, b, c, d) =
        (dir.join("a.psv.zst"), dir.join("b.psv.zst"), dir.join("c.psv.zst"), dir.join("d.psv.zst"));
    let mut cfg = small_config(7);
    cfg.search.limit = SearchLimit::Nodes(300);
    let sa = selfplay_shard(&a, &cfg, &[], 4, 1);
    let sb = selfplay_shard(&b, &cfg, &[], 4, 1);
    let sc = selfplay_shard(&c, &cfg, &[], 4, 2);
    selfplay_shard(&d, &GensfenConfig { seed: 8, ..cfg.clone() }, &[], 4, 1);
    let bytes = |p: &Path| std::fs::read(p).unwrap();
    assert_eq!(bytes(&a), bytes(&b), "same seed, same bytes");
    assert_eq!(bytes(&a), bytes(&c), "thread count does not change the output");
    assert_eq!(sa, sb);
    assert_eq!(sa, sc);
    assert_ne!(bytes(&a), bytes(&d), "another seed, another shard");
}

#[test]
fn duplicate_openings_are_deduplicated() {
    let line = "startpos moves 7g7f 3c3d 2g2f 4c4d 2f2e 2b3c 3i4h 3a3b";
    let opening = Opening::parse_usi(line).unwrap();
    // No random moves and a fixed depth: every game is the same game.
    let mut cfg = small_config(3);
    cfg.play.random_moves = 0;
    let mut one: Vec<PackedSfenValue> = Vec::new();
    let (_, single) =
        run_selfplay(&mut workers(1), &cfg, std::slice::from_ref(&opening), 1, &mut one, |_| {}).unwrap();
    let candidates = single.positions_written + single.duplicates;
    assert!(single.positions_written > 0);
    let openings = vec![opening.clone(), opening];
    let mut out: Vec<PackedSfenValue> = Vec::new();
    let (_, stats) = run_selfplay(&mut workers(1), &cfg, &openings, 3, &mut out, |_| {}).unwrap();
    assert_eq!(stats.games, 3);
    assert_eq!(stats.positions_written, single.positions_written, "{stats}");
    assert_eq!(stats.duplicates, 3 * candidates - single.positions_written, "{stats}");
    assert_eq!(out, one);
    let mut keys: Vec<_> = out.iter().map(|p| p.validate().unwrap().0.key()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), out.len());
}

#[test]
fn eval_limit_adjudicates() {
    // Black is a rook and a bishop up: with a low eval limit the first search ends the game.
    let start = Position::from_sfen("lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/9/LNSGKGSNL b RB 1").unwrap();
    let opening = Opening { start, moves: Vec::new() };
    let mut cfg = small_config(1);
    (cfg.play.random_moves, cfg.search.write_minply, cfg.search.eval_limit) = (0, 1, 500);
    let mut out: Vec<PackedSfenValue> = Vec::new();
    let (_, stats) = run_selfplay(&mut workers(1), &cfg, &[opening], 1, &mut out, |_| {}).unwrap();
    assert_eq!(stats.end_eval_limit, 1, "{stats}");
    assert_eq!(stats.black_wins, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].score, 500);
    assert_eq!(out[0].game_result, 1);
}

fn pro_records(n: usize) -> Vec<GameRecord> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/records/pro");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "csa"))
        .collect();
    files.sort();
    files.truncate(n);
    files.iter().flat_map(|f| load_file(f).unwrap()).collect()
}

/// Positions of a record that replay should search: ply >= 16, not in check, and the
/// final position when the game is not over there.
fn replay_candidates(r: &GameRecord, write_minply: u32) -> u64 {
    let mut pos = r.start;
    let mut n = 0;
    for m in r.main_line() {
        if pos.ply() >= write_minply && !pos.in_check() {
            n += 1;
        }
        pos.do_move(m);
    }
    if pos.ply() >= write_minply && !pos.in_check() && pos.has_legal_move() {
        n += 1;
    }
    n
}

#[test]
fn record_replay_keeps_the_game_result() {
    // The shared pro records carry no result line: give them one.
    let mut records = pro_records(2);
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.result.outcome == Outcome::Unknown));
    records[0].result.outcome = Outcome::BlackWin;
    records[1].result.outcome = Outcome::Draw;
    // A third game with an unknown result: skipped by default.
    let mut unknown = records[0].clone();
    unknown.result.outcome = Outcome::Unknown;
    records.push(unknown);
    let search = TeacherSearch { limit: SearchLimit::Depth(1), write_minply: 16, ..TeacherSearch::default() };
    let cfg = GensfenConfig { search, ..GensfenConfig::default() };
    let tmp = tmp_dir("records");
    let dir = tmp.path();
    let path = dir.join("r.psv.zst");
    let writer = ShardWriter::create(&path, ShardSettings::default()).unwrap();
    let (writer, stats) = run_records(&mut workers(2), &cfg, &records, writer, |_| {}).unwrap();
    assert_eq!(writer.finish().unwrap().records, stats.positions_written);
    assert_eq!(stats.games, 2);
    assert_eq!(stats.skipped_unknown_result_games, 1);
    assert_eq!((stats.black_wins, stats.white_wins, stats.draws), (1, 0, 1));
    let out = read_back(&path);
    assert_eq!(out.len() as u64, stats.positions_written);
    let expected: u64 = records[..2].iter().map(|r| replay_candidates(r, 16)).sum();
    assert_eq!(stats.positions_written + stats.duplicates, expected, "{stats}");
    assert_eq!(stats.positions_searched, expected);
    for r in &out {
        assert!(!r.pos.in_check() && r.psv.game_ply >= 16);
        assert!(r.mv.is_none_or(|m| r.pos.is_legal(m)));
    }
    let games = split_games(&out);
    assert_eq!(games.len(), 2);
    for (game, black) in games.iter().zip([1, 0]) {
        assert!(game.iter().all(|r| black_result(r) == black));
    }

    // Unknown result written as a draw: the third game repeats the first, so all of its
    // positions are duplicates.
    let draw_cfg = GensfenConfig { unknown_result: UnknownResult::Draw, ..cfg.clone() };
    let mut out2: Vec<PackedSfenValue> = Vec::new();
    let (_, stats2) = run_records(&mut workers(1), &draw_cfg, &records, &mut out2, |_| {}).unwrap();
    assert_eq!(stats2.games, 3);
    assert_eq!(stats2.skipped_unknown_result_games, 0);
    assert_eq!(stats2.positions_written, stats.positions_written);
    assert_eq!(stats2.draws, 2);
}

#[test]
fn unknown_results_of_real_records() {
    let records = pro_records(2);
    let search = TeacherSearch { limit: SearchLimit::Depth(1), ..TeacherSearch::default() };
    let cfg = GensfenConfig { search, ..GensfenConfig::default() };
    let mut out: Vec<PackedSfenValue> = Vec::new();
    let (_, stats) = run_records(&mut workers(1), &cfg, &records, &mut out, |_| {}).unwrap();
    assert_eq!((stats.games, stats.skipped_unknown_result_games), (0, 2));
    assert!(out.is_empty());
    let last_mover = GensfenConfig { unknown_result: UnknownResult::LastMoverWins, ..cfg };
    let (_, stats) = run_records(&mut workers(1), &last_mover, &records, &mut out, |_| {}).unwrap();
    assert_eq!(stats.games, 2);
    assert!(!out.is_empty());
    // The winner is the side that moved last: check the first record of each game.
    let firsts = [&out[0], &out[first_game_len(&out)]];
    for (rec, psv) in records.iter().zip(firsts) {
        let winner = rec.final_position().side_to_move().opponent();
        let (pos, _) = psv.validate().unwrap();
        assert_eq!(psv.game_result, if pos.side_to_move() == winner { 1 } else { -1 });
    }
}

/// Records of the first game: plies increase until the next game starts.
fn first_game_len(out: &[PackedSfenValue]) -> usize {
    (1..out.len()).find(|&i| out[i].game_ply <= out[i - 1].game_ply).unwrap_or(out.len())
}

#[test]
fn checkmate_ends_the_game_for_the_mating_side() {
    // Black mates with G*5b; with a high eval limit the game is played out to the mate.
    let start = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b G 1").unwrap();
    let opening = Opening { start, moves: Vec::new() };
    let mut cfg = small_config(1);
    (cfg.play.random_moves, cfg.search.write_minply, cfg.search.eval_limit) = (0, 1, 40_000);
    let mut out: Vec<PackedSfenValue> = Vec::new();
    let (_, stats) = run_selfplay(&mut workers(1), &cfg, &[opening], 1, &mut out, |_| {}).unwrap();
    assert_eq!((stats.end_no_legal_move, stats.black_wins, stats.total_plies), (1, 1, 1), "{stats}");
    assert_eq!(out.len(), 1);
    let (pos, mv) = out[0].validate().unwrap();
    assert_eq!(mv.unwrap().to_usi(), "G*5b");
    assert_eq!(pos.ply(), 1);
    assert!(out[0].score > 30_000, "a mate score: {}", out[0].score);
    assert_eq!(out[0].game_result, 1);
}

/// Random moves are drawn from SFEN move numbers: those the opening has already played are
/// never reached. `SelfPlayGames::random_moves_after` predicts how many a game plays, and
/// a range wholly inside the openings is refused instead of silently playing none.
#[test]
fn random_moves_inside_the_opening_are_not_played_and_are_refused() {
    // Six moves: the first searched position is move 7.
    let opening = Opening::parse_usi("startpos moves 7g7f 3c3d 2g2f 4c4d 2f2e 2b3c").unwrap();
    let openings = std::slice::from_ref(&opening);
    let games = 40;
    let played = |play: SelfPlayGames| {
        let cfg = GensfenConfig { play, ..small_config(9) };
        let (_, stats) =
            run_selfplay(&mut workers(1), &cfg, openings, games, Vec::<PackedSfenValue>::new(), |_| {})
                .unwrap();
        stats.skipped_random_move as f64 / stats.games as f64
    };
    let inside = SelfPlayGames { max_ply: 60, random_moves: 4, random_min_ply: 1, random_max_ply: 6 };
    assert_eq!(inside.random_moves_after(&opening), 0.0);
    assert_eq!(played(inside), 0.0);
    let err = inside.check_openings("[selfplay] ", openings).unwrap_err().to_string();
    assert!(err.contains("[selfplay] random_max_ply") && err.contains("random_min_ply = 7"), "{err}");
    // Plies 1..=10, 8 drawn: only 7..=10 can be reached, 8 * 4 / 10 = 3.2 a game.
    let straddling = SelfPlayGames { max_ply: 60, random_moves: 8, random_min_ply: 1, random_max_ply: 10 };
    assert!((straddling.random_moves_after(&opening) - 3.2).abs() < 1e-9);
    assert!((straddling.check_openings("", openings).unwrap() - 3.2).abs() < 1e-9);
    let warning = straddling.lost_random_moves("random_moves = ", 3.2).unwrap();
    assert!(warning.starts_with("random_moves = 8: 3.20 a game"), "{warning}");
    let mean = played(straddling);
    assert!((mean - 3.2).abs() < 0.5, "{mean} random moves a game");
    // After the opening every drawn ply is played (the games outlast move 14).
    let after = SelfPlayGames { max_ply: 60, random_moves: 3, random_min_ply: 7, random_max_ply: 14 };
    assert_eq!(after.random_moves_after(&opening), 3.0);
    assert_eq!(played(after), 3.0);
    assert_eq!(after.lost_random_moves("", 3.0), None);
    // The whole u32 range counts without overflow: all but the 6 opening plies reachable.
    let huge = SelfPlayGames { max_ply: 60, random_moves: 1, random_min_ply: 0, random_max_ply: u32::MAX };
    let want = (u64::from(u32::MAX) + 1 - 7) as f64 / (u64::from(u32::MAX) + 1) as f64;
    assert!((huge.random_moves_after(&opening) - want).abs() < 1e-12);
    // No openings, or no random moves: nothing to check.
    assert_eq!(inside.check_openings("", &[]).unwrap(), 0.0);
    assert_eq!(SelfPlayGames { random_moves: 0, ..inside }.check_openings("", openings).unwrap(), 0.0);
}

/// A shard's games take its openings without repeats until every one is taken: 8 games
/// from 8 openings play 8 different games; 16 games replay each of them once more (no
/// random moves, so the same game), and every position of the second round is a duplicate.
#[test]
fn games_take_every_opening_once_before_repeating_one() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/openings/records2016_10818.sfen");
    let text = std::fs::read_to_string(path).unwrap();
    let openings: Vec<Opening> = text.lines().take(8).map(|l| Opening::parse_usi(l).unwrap()).collect();
    let mut cfg = small_config(4);
    cfg.play.random_moves = 0;
    let run = |games: u64| {
        let (out, stats) =
            run_selfplay(&mut workers(1), &cfg, &openings, games, Vec::<PackedSfenValue>::new(), |_| {})
                .unwrap();
        // The first searched position of each game is where its opening ended.
        let mut starts: Vec<u64> = out
            .iter()
            .map(|psv| psv.validate().unwrap().0)
            .filter(|pos| pos.ply() == 25)
            .map(|pos| pos.key())
            .collect();
        starts.sort_unstable();
        (stats, starts)
    };
    let mut opening_ends: Vec<u64> = openings
        .iter()
        .map(|o| {
            let mut pos = o.start;
            o.moves.iter().for_each(|&m| {
                pos.do_move(m);
            });
            pos.key()
        })
        .collect();
    opening_ends.sort_unstable();
    // Drawn with replacement, 8 games from 8 openings would miss about 3 of them.
    let (once, starts) = run(8);
    assert_eq!(starts, opening_ends, "every opening played once: {once}");
    let (twice, starts) = run(16);
    assert_eq!(starts, opening_ends, "{twice}");
    assert_eq!(twice.positions_written, once.positions_written, "{twice}");
    assert_eq!(twice.duplicates, once.positions_written + 2 * once.duplicates, "{twice}");
}
