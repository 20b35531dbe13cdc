//! Dobutsu shogi rules: notation round trips, rule cases (try, drops, promotion, lion
//! capture, repetition), and perft computed two ways — by the move generator and by a
//! slow reference mover written independently here (string board, its own step tables).

use keima_dobutsu::game::{Game, Outcome};
use keima_dobutsu::movegen::{MoveList, legal_moves, perft};
use keima_dobutsu::rules::{Color, Move, Position, Status};

// ---- slow reference mover -------------------------------------------------------------

/// Board as 4 strings of 3 chars ('.' empty, upper case Black), hands as strings.
#[derive(Clone)]
struct RefPos {
    rows: Vec<Vec<char>>,
    hand_b: Vec<char>,
    hand_w: Vec<char>,
    black: bool,
}

fn ref_from(p: &Position) -> RefPos {
    let sfen = p.to_sfen();
    let f: Vec<&str> = sfen.split(' ').collect();
    let mut rows = vec![];
    for r in f[0].split('/') {
        let mut row = vec![];
        for ch in r.chars() {
            if let Some(d) = ch.to_digit(10) {
                row.extend(std::iter::repeat_n('.', d as usize));
            } else {
                row.push(ch);
            }
        }
        rows.push(row);
    }
    let (mut hand_b, mut hand_w) = (vec![], vec![]);
    let mut n = 1;
    for ch in f[2].chars() {
        if ch == '-' {
            continue;
        }
        if let Some(d) = ch.to_digit(10) {
            n = d;
            continue;
        }
        for _ in 0..n {
            if ch.is_ascii_uppercase() { hand_b.push(ch) } else { hand_w.push(ch.to_ascii_uppercase()) }
        }
        n = 1;
    }
    RefPos { rows, hand_b, hand_w, black: f[1] == "b" }
}

/// Directions as (dx, dy) with dy = +1 meaning "towards the opponent".
fn ref_dirs(piece: char) -> Vec<(i32, i32)> {
    match piece.to_ascii_uppercase() {
        'L' => vec![(-1, 1), (0, 1), (1, 1), (-1, 0), (1, 0), (-1, -1), (0, -1), (1, -1)],
        'G' => vec![(0, 1), (0, -1), (1, 0), (-1, 0)],
        'E' => vec![(1, 1), (-1, 1), (1, -1), (-1, -1)],
        'C' => vec![(0, 1)],
        'H' => vec![(0, 1), (1, 1), (-1, 1), (1, 0), (-1, 0), (0, -1)],
        _ => unreachable!(),
    }
}

fn mine(ch: char, black: bool) -> bool {
    ch != '.' && ch.is_ascii_uppercase() == black
}

fn ref_game_over(p: &RefPos) -> bool {
    let my_lion = if p.black { 'L' } else { 'l' };
    let their_lion = if p.black { 'l' } else { 'L' };
    if !p.rows.iter().flatten().any(|&c| c == my_lion) {
        return true;
    }
    // their lion on my home row and not capturable by me
    let home = if p.black { 3 } else { 0 };
    if let Some(x) = p.rows[home].iter().position(|&c| c == their_lion) {
        let targets = ref_moves_raw(p);
        let sq = format!("{}{}", (b'a' + x as u8) as char, home + 1);
        return !targets.iter().any(|m| m.len() == 4 && !m.contains('*') && m[2..] == sq);
    }
    false
}

fn ref_moves_raw(p: &RefPos) -> Vec<String> {
    let mut out = vec![];
    let fwd: i32 = if p.black { -1 } else { 1 };
    for r in 0..4i32 {
        for f in 0..3i32 {
            let ch = p.rows[r as usize][f as usize];
            if !mine(ch, p.black) {
                continue;
            }
            for (dx, dy) in ref_dirs(ch) {
                let (nf, nr) = (f + dx, r + dy * fwd);
                if !(0..3).contains(&nf) || !(0..4).contains(&nr) {
                    continue;
                }
                if mine(p.rows[nr as usize][nf as usize], p.black) {
                    continue;
                }
                out.push(format!(
                    "{}{}{}{}",
                    (b'a' + f as u8) as char,
                    r + 1,
                    (b'a' + nf as u8) as char,
                    nr + 1
                ));
            }
        }
    }
    let mut hand = if p.black { p.hand_b.clone() } else { p.hand_w.clone() };
    hand.sort();
    hand.dedup();
    for h in hand {
        for r in 0..4 {
            for f in 0..3 {
                if p.rows[r][f] == '.' {
                    out.push(format!("{h}*{}{}", (b'a' + f as u8) as char, r + 1));
                }
            }
        }
    }
    out
}

fn ref_moves(p: &RefPos) -> Vec<String> {
    if ref_game_over(p) { vec![] } else { ref_moves_raw(p) }
}

fn ref_play(p: &RefPos, m: &str) -> RefPos {
    let mut q = p.clone();
    let b = m.as_bytes();
    let to_f = (b[2] - b'a') as usize;
    let to_r = (b[3] - b'1') as usize;
    let hand = if p.black { &mut q.hand_b } else { &mut q.hand_w };
    if b[1] == b'*' {
        let i = hand.iter().position(|&c| c == b[0] as char).unwrap();
        hand.remove(i);
        let c = b[0] as char;
        q.rows[to_r][to_f] = if p.black { c } else { c.to_ascii_lowercase() };
    } else {
        let (ff, fr) = ((b[0] - b'a') as usize, (b[1] - b'1') as usize);
        let target = q.rows[to_r][to_f];
        if target != '.' {
            let mut t = target.to_ascii_uppercase();
            if t == 'H' {
                t = 'C';
            }
            if t != 'L' {
                hand.push(t);
            }
        }
        let mut piece = q.rows[fr][ff];
        q.rows[fr][ff] = '.';
        let last = if p.black { 0 } else { 3 };
        if piece.eq_ignore_ascii_case(&'C') && to_r == last {
            piece = if p.black { 'H' } else { 'h' };
        }
        q.rows[to_r][to_f] = piece;
    }
    q.black = !p.black;
    q
}

fn ref_perft(p: &RefPos, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    ref_moves(p).iter().map(|m| ref_perft(&ref_play(p, m), depth - 1)).sum()
}

// ---- tests ------------------------------------------------------------------------------

const POSITIONS: [&str; 5] = [
    "gle/1c1/1C1/ELG b - 1",
    "g1e/1l1/1H1/ELG w c 10",
    "l2/3/1C1/2L b Ge 5",
    "1l1/3/3/1L1 b 2C2E2G 3",
    "1L1/3/e2/l2 w Gc 7",
];

#[test]
fn start_position_matches_the_official_setup() {
    let p = Position::from_sfen("startpos").unwrap();
    assert_eq!(p, Position::startpos());
    assert_eq!(p.to_sfen(), "gle/1c1/1C1/ELG b - 1");
    let mut l = MoveList::new();
    legal_moves(&p, &mut l);
    let mut names: Vec<String> = l.as_slice().iter().map(|m| m.to_text()).collect();
    names.sort();
    // The four first moves: chick takes chick, giraffe up, lion left/right up.
    assert_eq!(names, vec!["b3b2", "b4a3", "b4c3", "c4c3"]);
}

#[test]
fn sfen_and_move_text_round_trip() {
    for s in POSITIONS {
        let p = Position::from_sfen(s).unwrap();
        assert_eq!(p.to_sfen(), s);
        let mut l = MoveList::new();
        legal_moves(&p, &mut l);
        for &m in l.as_slice() {
            assert_eq!(Move::from_text(&m.to_text()).unwrap(), m);
        }
    }
    for bad in [
        "",
        "gle/1c1/1C1 b - 1",
        "gle/1c1/1C1/ELX b - 1",
        "gle/1c1/1C1/ELG x - 1",
        "gle/1c1/1C1/ELG b 3C 1",
        "glee/1c1/1C1/ELG b - 1",
        "gge/1c1/1C1/ELG b - 1",
        "gle/1c1/1C1/ELG b L 1",
        "gle/1c1/1C1/ELG b - 0",
    ] {
        assert!(Position::from_sfen(bad).is_err(), "{bad:?} should be rejected");
    }
}

#[test]
fn key_round_trips_and_is_colour_normalised() {
    for s in POSITIONS {
        let p = Position::from_sfen(s).unwrap();
        let k = p.key();
        let q = Position::from_key(k);
        assert_eq!(q.key(), k);
        if p.side == Color::Black {
            assert_eq!(q.board, p.board);
            assert_eq!(q.hands, p.hands);
        } else {
            assert_eq!(q, Position { ply: 1, ..p.flipped() });
        }
        assert_eq!(p.flipped().key(), k, "a position and its colour-flip share a key");
    }
}

#[test]
fn do_undo_restores_every_position_of_a_perft_tree() {
    fn walk(p: &mut Position, d: u32) {
        if d == 0 {
            return;
        }
        let mut l = MoveList::new();
        legal_moves(p, &mut l);
        for &m in l.as_slice() {
            let before = *p;
            let u = p.do_move(m);
            walk(p, d - 1);
            p.undo_move(m, u);
            assert_eq!(*p, before);
        }
    }
    for s in POSITIONS {
        walk(&mut Position::from_sfen(s).unwrap(), 4);
    }
}

#[test]
fn perft_by_generator_equals_reference_mover() {
    let depths = [7, 5, 5, 4, 5];
    for (s, d) in POSITIONS.iter().zip(depths) {
        let mut p = Position::from_sfen(s).unwrap();
        let r = ref_from(&p);
        for depth in 1..=d {
            assert_eq!(perft(&mut p, depth), ref_perft(&r, depth), "{s} depth {depth}");
        }
    }
}

#[test]
fn chick_promotes_on_the_far_rank_and_a_captured_hen_becomes_a_chick() {
    let mut p = Position::from_sfen("1l1/C2/3/1L1 b - 1").unwrap();
    p.do_move(Move::from_text("a2a1").unwrap());
    assert_eq!(p.to_sfen(), "Hl1/3/3/1L1 w - 2");
    p.do_move(Move::from_text("b1a1").unwrap());
    assert_eq!(p.to_sfen(), "l2/3/3/1L1 b c 3");
    // A dropped chick on the far rank does not promote and cannot move.
    let mut q = Position::from_sfen("2l/3/3/1L1 b C 1").unwrap();
    q.do_move(Move::from_text("C*a1").unwrap());
    assert_eq!(q.to_sfen(), "C1l/3/3/1L1 w - 2");
    q.side = Color::Black;
    let mut l = MoveList::new();
    legal_moves(&q, &mut l);
    assert!(!l.as_slice().iter().any(|m| m.from() == 0 && !m.is_drop()));
}

#[test]
fn drops_go_to_every_empty_square_including_the_far_rank() {
    let p = Position::from_sfen("1l1/3/3/1L1 b CEG 1").unwrap();
    let mut l = MoveList::new();
    legal_moves(&p, &mut l);
    let drops = l.as_slice().iter().filter(|m| m.is_drop()).count();
    assert_eq!(drops, 3 * 10);
    // Two chicks on one file are allowed (no nifu in dobutsu shogi).
    let q = Position::from_sfen("1l1/3/1C1/1L1 b C 1").unwrap();
    let mut l = MoveList::new();
    legal_moves(&q, &mut l);
    assert!(l.as_slice().contains(&Move::from_text("C*b2").unwrap()));
}

#[test]
fn try_wins_only_if_the_lion_cannot_be_captured() {
    // Black's lion reached rank 1; White cannot capture it → White has lost.
    let safe = Position::from_sfen("L2/3/3/2l w - 9").unwrap();
    assert_eq!(safe.status(), Status::Lost);
    let mut l = MoveList::new();
    legal_moves(&safe, &mut l);
    assert!(l.is_empty());
    // Same but White's giraffe guards a1: the game goes on (White captures the lion).
    let guarded = Position::from_sfen("Lg1/3/3/2l w - 9").unwrap();
    assert_eq!(guarded.status(), Status::Ongoing);
    let mut g = Game::new(guarded);
    g.play(Move::from_text("b1a1").unwrap()).unwrap();
    assert_eq!(g.outcome(), Some(Outcome::Win(Color::White)));
    // The try itself, played in a game.
    let mut g = Game::new(Position::from_sfen("3/L2/2l/3 b - 1").unwrap());
    g.play(Move::from_text("a2a1").unwrap()).unwrap();
    assert_eq!(g.outcome(), Some(Outcome::Win(Color::Black)));
    let mut g = Game::new(Position::from_sfen("3/L1g/2l/3 b - 1").unwrap());
    g.play(Move::from_text("a2b1").unwrap()).unwrap(); // the giraffe on c2 does not reach b1
    assert_eq!(g.outcome(), Some(Outcome::Win(Color::Black)));
    let mut g = Game::new(Position::from_sfen("3/Lg1/2l/3 b - 1").unwrap());
    g.play(Move::from_text("a2a1").unwrap()).unwrap(); // the giraffe on b2 does not reach a1
    assert_eq!(g.outcome(), Some(Outcome::Win(Color::Black)));
    let mut g = Game::new(Position::from_sfen("3/L1g/2l/3 b - 1").unwrap());
    g.play(Move::from_text("a2b2").unwrap()).unwrap(); // not the far rank: no try
    assert_eq!(g.outcome(), None);
}

#[test]
fn capturing_the_lion_wins() {
    let mut g = Game::new(Position::from_sfen("3/1l1/1G1/1L1 b - 1").unwrap());
    g.play(Move::from_text("b3b2").unwrap()).unwrap();
    assert_eq!(g.outcome(), Some(Outcome::Win(Color::Black)));
    assert!(g.play(Move::from_text("b4b3").unwrap()).is_err(), "no moves after the end");
}

#[test]
fn third_repetition_is_a_draw() {
    let mut g = Game::new(Position::from_sfen("l2/3/3/2L b - 1").unwrap());
    let cycle = ["c4c3", "a1a2", "c3c4", "a2a1"];
    let mut n = 0;
    'outer: for _ in 0..3 {
        for m in cycle {
            g.play(Move::from_text(m).unwrap()).unwrap();
            n += 1;
            if g.outcome().is_some() {
                break 'outer;
            }
        }
    }
    // The start position occurs after plies 0, 4 and 8: the third occurrence ends it.
    assert_eq!(n, 8);
    assert_eq!(g.outcome(), Some(Outcome::Draw));
}
