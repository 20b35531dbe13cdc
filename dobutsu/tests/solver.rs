//! The solver on position sets small enough to check independently: unmove generation
//! against forward moves (every edge exactly once), and retrograde analysis against a
//! forward value iteration and against a plain depth-limited minimax.

use keima_dobutsu::movegen::{MoveList, legal_moves, pseudo_moves};
use keima_dobutsu::rules::{Color, Position};
use keima_dobutsu::solver::{
    Index, Value, enumerate, fold_key, forward_solve, mirror_key, predecessors, retrograde, table_key,
    terminal_value,
};

const STARTS: [&str; 3] = [
    // lions and one chick each, in hand
    "1l1/3/3/1L1 b Cc 1",
    // lions, Black's giraffe and White's elephant in hand
    "1l1/3/3/1L1 b Ge 1",
    // lions, a chick on board, an elephant in hand
    "1l1/3/1C1/1L1 b e 1",
];

fn quiet(_: &str) {}

/// Both raw keys of a stored (folded) key: itself and its mirror image (once if symmetric).
fn raw_keys(k: u64) -> Vec<u64> {
    let m = mirror_key(k);
    if m == k { vec![k] } else { vec![k, m] }
}

#[test]
fn unmoves_are_exactly_the_inverse_of_moves() {
    for s in STARTS {
        let (keys, _) = enumerate(&Position::from_sfen(s).unwrap(), 1 << 18, &quiet).unwrap();
        let index = Index::new(&keys);
        // Count each raw (parent, child) edge seen forwards and backwards, over both mirror
        // images of every stored position.
        let mut fwd = std::collections::HashMap::<(u64, u64), u32>::new();
        let mut list = MoveList::new();
        for &k in &keys {
            for raw in raw_keys(k) {
                let mut p = Position::from_key(raw);
                if terminal_value(&p).is_some() {
                    continue;
                }
                pseudo_moves(&p, &mut list);
                for &m in list.as_slice() {
                    let u = p.do_move(m);
                    if !p.can_capture_lion() {
                        assert!(index.find(table_key(&p)).is_some(), "{s}: a child is missing");
                        *fwd.entry((raw, p.key())).or_default() += 1;
                    }
                    p.undo_move(m, u);
                }
            }
        }
        let mut back = std::collections::HashMap::<(u64, u64), u32>::new();
        let mut preds = Vec::new();
        for &k in &keys {
            for raw in raw_keys(k) {
                predecessors(&Position::from_key(raw), &mut preds);
                for &pk in &preds {
                    let Some(j) = index.find(fold_key(pk)) else { continue };
                    if terminal_value(&Position::from_key(keys[j])).is_some() {
                        continue;
                    }
                    *back.entry((pk, raw)).or_default() += 1;
                }
            }
        }
        assert!(fwd.values().all(|&n| n == 1), "{s}: two moves lead to the same child");
        assert_eq!(fwd.len(), back.len(), "{s}: edge counts differ");
        assert_eq!(fwd, back, "{s}: edges differ");
    }
}

#[test]
fn mirror_keys_swap_files_a_and_c() {
    let p = Position::from_sfen("gle/1c1/1C1/ELG b - 1").unwrap();
    let m = Position::from_sfen("elg/1c1/1C1/GLE b - 1").unwrap();
    assert_eq!(mirror_key(p.key()), m.key());
    assert_eq!(mirror_key(mirror_key(p.key())), p.key());
    assert_eq!(table_key(&p), table_key(&m));
    assert_ne!(p.key(), m.key());
    let sym = Position::from_sfen("glg/1c1/1C1/ELE b - 1").unwrap();
    assert_eq!(mirror_key(sym.key()), sym.key());
}

#[test]
fn retrograde_equals_forward_value_iteration() {
    for s in STARTS {
        let (keys, stats) = enumerate(&Position::from_sfen(s).unwrap(), 1 << 18, &quiet).unwrap();
        assert!(stats.positions > 1000, "{s}: only {} positions", stats.positions);
        // The counter bookkeeping for mirror-symmetric positions must be exercised.
        let symmetric = keys.iter().filter(|&&k| mirror_key(k) == k).count();
        assert!(symmetric > 10, "{s}: only {symmetric} symmetric positions");
        let (retro, st) = retrograde(&keys, &quiet).unwrap();
        let fwd = forward_solve(&keys);
        assert_eq!(retro, fwd, "{s}");
        assert!(st.wins > 0 && st.losses > 0, "{s}: {st:?}");
    }
}

/// Plain minimax without tables: Some(distance) if the side to move wins or loses within
/// `depth` plies (exact shortest win / longest loss), None if not decided within `depth`.
fn minimax(p: &mut Position, depth: u32) -> Option<Value> {
    if let Some(v) = terminal_value(p) {
        // A capture of the lion is a move: it needs one ply of depth.
        return if depth == 0 && v == Value::Win(1) { None } else { Some(v) };
    }
    if depth == 0 {
        return None;
    }
    let mut list = MoveList::new();
    legal_moves(p, &mut list);
    let mut best: Option<Value> = None;
    let mut all_lose = true;
    for &m in list.as_slice() {
        let u = p.do_move(m);
        let child = minimax(p, depth - 1);
        p.undo_move(m, u);
        match child {
            Some(Value::Loss(d)) => {
                let v = Value::Win(d + 1);
                if best.is_none_or(|b| v.rank() > b.rank()) {
                    best = Some(v);
                }
                all_lose = false;
            }
            Some(Value::Win(d)) => {
                let v = Value::Loss(d + 1);
                if all_lose && best.is_none_or(|b| v.rank() > b.rank()) {
                    best = Some(v);
                }
            }
            _ => all_lose = false,
        }
    }
    match best {
        Some(Value::Win(d)) => Some(Value::Win(d)),
        Some(Value::Loss(d)) if all_lose => Some(Value::Loss(d)),
        _ if all_lose && list.is_empty() => Some(Value::Loss(0)),
        _ => None,
    }
}

#[test]
fn retrograde_distances_agree_with_plain_minimax() {
    let (keys, _) = enumerate(&Position::from_sfen("gl1/3/1C1/1LG b - 1").unwrap(), 1 << 20, &quiet).unwrap();
    let (values, _) = retrograde(&keys, &quiet).unwrap();
    let mut checked = 0;
    let mut rng = 0x1234_5678_9abc_def0u64;
    for _ in 0..400 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let i = (rng % keys.len() as u64) as usize;
        let v = Value::from_byte(values[i]);
        let mut p = Position::from_key(keys[i]);
        match v {
            Value::Win(d) | Value::Loss(d) if d <= 7 => {
                assert_eq!(minimax(&mut p, d), Some(v), "{}", p.to_sfen());
                if d >= 2 {
                    assert_eq!(minimax(&mut p, d - 1), None, "{} decided too early", p.to_sfen());
                }
                checked += 1;
            }
            Value::Draw => assert_eq!(minimax(&mut p, 5), None, "{}", p.to_sfen()),
            _ => {}
        }
    }
    assert!(checked > 100, "only {checked} positions checked");
    let _ = Color::Black;
}
