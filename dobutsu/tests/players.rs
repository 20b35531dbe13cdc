//! The solved-table file (round trip through the memory map), the Monte Carlo feature
//! tables (learned, saved, loaded), and the players on positions with a known answer.

use keima_dobutsu::mc_player::{FeatureTables, McKind, alpha_for, choose};
use keima_dobutsu::movegen::{MoveList, legal_moves};
use keima_dobutsu::players::{Player, best_moves, play_game};
use keima_dobutsu::playout::{AttackInfo, DEP_SIZE, IND_SIZE, Rng, features};
use keima_dobutsu::rules::{Move, Position};
use keima_dobutsu::solver::{Value, enumerate, move_values, retrograde, table_key};
use keima_dobutsu::table_file::{Table, write_table};

/// A path named `name` in a fresh directory; the directory (and the file) is removed when
/// the returned guard drops.
fn tmp(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("keima-dobutsu-{name}-"))
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

#[test]
fn table_file_round_trips_and_rejects_damage() {
    let start = Position::from_sfen("1l1/3/3/1L1 b Cc 1").unwrap();
    let (keys, _) = enumerate(&start, 1 << 18, &|_| {}).unwrap();
    let (values, st) = retrograde(&keys, &|_| {}).unwrap();
    let (_tmp, path) = tmp("small.dtb");
    write_table(&path, &keys, &values, st.max_distance).unwrap();
    let t = Table::open(&path).unwrap();
    assert_eq!(t.len(), keys.len());
    assert_eq!(t.max_distance, st.max_distance);
    for (i, &k) in keys.iter().enumerate().step_by(7) {
        assert_eq!(t.lookup(k), Some(values[i]));
    }
    assert_eq!(t.lookup(1), None);
    // A truncated file is refused with a message naming the problem.
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let err = Table::open(&path).err().expect("truncated table must be refused");
    assert!(err.contains("truncated"), "{err}");
    std::fs::write(&path, b"not a table at all, clearly").unwrap();
    assert!(Table::open(&path).is_err());
}

#[test]
fn perfect_player_wins_every_won_position_against_mc() {
    let start = Position::from_sfen("1l1/3/3/1L1 b Cc 1").unwrap();
    let (keys, _) = enumerate(&start, 1 << 18, &|_| {}).unwrap();
    let (values, st) = retrograde(&keys, &|_| {}).unwrap();
    let (_tmp, path) = tmp("perfect.dtb");
    write_table(&path, &keys, &values, st.max_distance).unwrap();
    let t = Table::open(&path).unwrap();
    let perfect = Player::Perfect { table: &t };
    let mc = Player::Primitive { playouts: 200 };
    let mut rng = Rng::new(5);
    let mut played = 0;
    for _ in 0..2000 {
        let i = rng.below(keys.len());
        let p = Position::from_key(keys[i]);
        let Value::Win(d) = Value::from_byte(values[i]) else { continue };
        if d < 5 {
            continue;
        }
        // Best moves keep the win and shorten it by one ply.
        for m in best_moves(&p, &t) {
            let mv = move_values(&p, &|k| t.lookup(k));
            let v = mv.iter().find(|x| x.0 == m).unwrap().1;
            assert_eq!(v, Some(Value::Win(d)));
        }
        let (o, plies) = play_game(&p, &perfect, &mc, 9, 400);
        assert_eq!(o, keima_dobutsu::game::Outcome::Win(p.side), "{}", p.to_sfen());
        assert!(plies as u32 <= d, "won in {plies} plies, the table promised at most {d}");
        played += 1;
        if played == 10 {
            break;
        }
    }
    assert_eq!(played, 10);
}

#[test]
fn feature_indices_stay_in_range_and_tables_round_trip() {
    let mut p = Position::startpos();
    let mut rng = Rng::new(3);
    let mut list = MoveList::new();
    for _ in 0..2000 {
        legal_moves(&p, &mut list);
        if list.is_empty() {
            p = Position::startpos();
            continue;
        }
        let ai = AttackInfo::new(&p);
        for &m in list.as_slice() {
            let (i, d) = features(&p, &ai, m);
            assert!(i < IND_SIZE && d < DEP_SIZE);
        }
        p.do_move(list.as_slice()[rng.below(list.len())]);
    }
    let t = FeatureTables::learn(&Position::startpos(), 3000, 11, None);
    let t2 = FeatureTables::learn(&Position::startpos(), 3000, 11, None);
    assert_eq!(t, t2, "learning is deterministic per seed");
    // Capturing the lion ends the playout with a win: its feature rates near 1.
    let lion_caps: (f32, f32) = (0..5 * 6 * 5 * 4)
        .filter(|i| (i / 20) % 6 == 5)
        .map(|i| t.ind[i])
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert!(lion_caps.1 > 100.0 && lion_caps.0 == lion_caps.1, "{lion_caps:?}");
    let (_tmp, path) = tmp("mc.tables");
    t.save(&path).unwrap();
    assert_eq!(FeatureTables::load(&path).unwrap(), t);
    std::fs::write(&path, b"KEIMADMCxx").unwrap();
    assert!(FeatureTables::load(&path).is_err());
}

#[test]
fn mc_players_take_a_lion_and_a_safe_try() {
    let t = FeatureTables::learn(&Position::startpos(), 3000, 1, None);
    // Black can capture the lion with the giraffe.
    let cap = Position::from_sfen("3/1l1/1G1/1L1 b - 1").unwrap();
    // Black's lion can make a safe try (a2a1; White's lion is far away).
    let tri = Position::from_sfen("3/L2/2l/3 b - 1").unwrap();
    for (p, want) in [(cap, "b3b2"), (tri, "a2a1")] {
        for kind in [McKind::Primitive, McKind::Improved { tables: &t, alpha: alpha_for(300) }] {
            let (m, r) = choose(&p, kind, 300, 1).unwrap();
            assert_eq!(m, Move::from_text(want).unwrap());
            assert_eq!(r, 1.0);
        }
    }
}

#[test]
fn teacher_scores_are_exact_for_a_perfect_and_an_inverted_teacher() {
    use keima_dobutsu::teacher_quality::{sample_positions, score};
    let start = Position::from_sfen("gl1/3/1C1/1LG b - 1").unwrap();
    let (keys, _) = enumerate(&start, 1 << 20, &|_| {}).unwrap();
    let (values, _) = retrograde(&keys, &|_| {}).unwrap();
    let lookup = |k: u64| keys.binary_search(&k).ok().map(|i| values[i]);
    // Random positions of this endgame (the sampler starts from the full start, so build
    // the samples directly from the table here).
    let mut rng = Rng::new(17);
    let samples: Vec<(Position, Value)> = (0..500)
        .map(|_| {
            let i = rng.below(keys.len());
            (Position::from_key(keys[i]), Value::from_byte(values[i]))
        })
        .collect();
    let truth = |v: &Value| match v {
        Value::Win(_) => 1.0,
        Value::Loss(_) => 0.0,
        Value::Draw => 0.5,
    };
    let perfect: Vec<f64> = samples.iter().map(|s| truth(&s.1)).collect();
    let r = score(&samples, &perfect);
    assert_eq!(r.correct, r.decided);
    assert!(r.brier.abs() < 1e-12 && r.calibration_error() < 1e-12);
    let inverted: Vec<f64> = perfect.iter().map(|p| 1.0 - p).collect();
    let r = score(&samples, &inverted);
    assert_eq!(r.correct, 0);
    let decided = r.decided as f64 / r.positions as f64;
    assert!((r.brier - decided).abs() < 1e-12, "Brier of a fully wrong teacher = share decided");
    // The sampler only returns positions the lookup knows, with their exact values.
    let full = sample_positions(50, 3, &lookup);
    for (p, v) in &full {
        assert_eq!(Some(v.to_byte()), lookup(table_key(p)));
    }
}

#[test]
fn alphabeta_finds_every_short_win_the_table_knows() {
    use keima_dobutsu::alphabeta::{WIN, search};
    let start = Position::from_sfen("gl1/3/1C1/1LG b - 1").unwrap();
    let (keys, _) = enumerate(&start, 1 << 20, &|_| {}).unwrap();
    let (values, _) = retrograde(&keys, &|_| {}).unwrap();
    let lookup = |k: u64| keys.binary_search(&k).ok().map(|i| values[i]);
    let mut rng = Rng::new(23);
    let mut checked = 0;
    for _ in 0..5000 {
        let i = rng.below(keys.len());
        let Value::Win(d) = Value::from_byte(values[i]) else { continue };
        if d > 5 {
            continue;
        }
        let p = Position::from_key(keys[i]);
        let r = search(&p, d, 1);
        assert!(r.score >= WIN - d as i32 - 1, "{}: win in {d} not found (score {})", p.to_sfen(), r.score);
        let mv = move_values(&p, &lookup);
        let best = r.best.unwrap();
        assert!(matches!(mv.iter().find(|x| x.0 == best).unwrap().1, Some(Value::Win(_))), "{}", p.to_sfen());
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
}
