//! Differential test of Keima's move generator and legality test against the independent
//! crate `shogi_legality_lite` (with `shogi_core` and `shogi_usi_parser`).
//!
//! Positions come from deterministic random play (xorshift) biased towards captures (so
//! hands fill up) and checks (so evasions get exercised), starting from the even start
//! position, positions with many pieces in hand, all handicap starts, a kingless tsume
//! position and a few positions next to a pawn-drop mate. In every position:
//!   * the legal-move sets must be identical (compared as sorted USI strings);
//!   * `is_legal` must agree with the oracle on every from->to move of every own piece to
//!     every square, with and without promotion, and on drops of every hand kind (held or
//!     not) on every square;
//!   * the SFEN written by Keima must be read back by the oracle's parser and written out
//!     identically.
//!
//! Run in release mode: the oracle plays every candidate move out on a copy.
//!
//! Known oracle deviation (documented by `oracle_quirk_non_checking_pawn_drop_stalemate`):
//! `shogi_legality_lite` 0.1.3 treats *any* pawn drop after which the opponent has no legal
//! move as a pawn-drop mate, even when the drop does not give check. The rule (uchifuzume)
//! only forbids a pawn drop that gives checkmate; such a "stalemating" drop is legal.
//! The random corpus is checked for this situation and it is reported, not hidden.

use engine_core::rules::{Color, HANDICAPS, Move, Piece, PieceType, Position, Square};
use shogi_core::{
    Color as OColor, IllegalMoveKind, Move as OMove, PartialPosition, Piece as OPiece, PieceKind,
    Square as OSquare, ToUsi,
};
use shogi_usi_parser::FromUsi;
use std::collections::BTreeSet;
use std::time::Instant;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn oracle_position(pos: &Position) -> PartialPosition {
    let sfen = pos.to_sfen();
    PartialPosition::from_usi(&format!("sfen {sfen}"))
        .unwrap_or_else(|e| panic!("the oracle cannot parse Keima's SFEN {sfen:?}: {e:?}"))
}

fn osq(sq: Square) -> OSquare {
    OSquare::new(sq.file() + 1, sq.rank() + 1).expect("square on the board")
}

fn ocolor(c: Color) -> OColor {
    match c {
        Color::Black => OColor::Black,
        Color::White => OColor::White,
    }
}

fn okind(pt: PieceType) -> PieceKind {
    match pt {
        PieceType::Pawn => PieceKind::Pawn,
        PieceType::Lance => PieceKind::Lance,
        PieceType::Knight => PieceKind::Knight,
        PieceType::Silver => PieceKind::Silver,
        PieceType::Gold => PieceKind::Gold,
        PieceType::Bishop => PieceKind::Bishop,
        PieceType::Rook => PieceKind::Rook,
        PieceType::King => PieceKind::King,
        PieceType::ProPawn => PieceKind::ProPawn,
        PieceType::ProLance => PieceKind::ProLance,
        PieceType::ProKnight => PieceKind::ProKnight,
        PieceType::ProSilver => PieceKind::ProSilver,
        PieceType::Horse => PieceKind::ProBishop,
        PieceType::Dragon => PieceKind::ProRook,
    }
}

fn keima_moves(pos: &Position) -> BTreeSet<String> {
    let list = pos.legal_moves();
    let set: BTreeSet<String> = list.iter().map(|m| m.to_usi()).collect();
    assert_eq!(set.len(), list.len(), "duplicate moves generated in {}", pos.to_sfen());
    set
}

fn oracle_moves(opos: &PartialPosition) -> BTreeSet<String> {
    let v = shogi_legality_lite::all_legal_moves_partial(opos);
    let set: BTreeSet<String> = v.iter().map(|m| m.to_usi_owned()).collect();
    assert_eq!(set.len(), v.len());
    set
}

#[derive(Default, Debug)]
struct Stats {
    positions: u64,
    in_check: u64,
    double_check: u64,
    no_legal_move: u64,
    kingless: u64,
    legal_moves: u64,
    candidates: u64,
    candidates_legal: u64,
    pawn_drop_mates: u64,
    quirk_stalemate_drops: u64,
    max_moves: usize,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.positions += o.positions;
        self.in_check += o.in_check;
        self.double_check += o.double_check;
        self.no_legal_move += o.no_legal_move;
        self.kingless += o.kingless;
        self.legal_moves += o.legal_moves;
        self.candidates += o.candidates;
        self.candidates_legal += o.candidates_legal;
        self.pawn_drop_mates += o.pawn_drop_mates;
        self.quirk_stalemate_drops += o.quirk_stalemate_drops;
        self.max_moves = self.max_moves.max(o.max_moves);
    }
}

/// Runs `compare` on a thread and gives up after a few seconds: the oracle was seen to
/// hang on at least one position (game 177 of the full run), which must not hang the test.
/// Positions it gives up on are listed in `timeouts` (and counted in the summary).
fn compare_bounded(
    pos: &Position,
    stats: &mut Stats,
    discrepancies: &mut Vec<String>,
    judge: bool,
    timeouts: &mut Vec<String>,
) {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = *pos;
    std::thread::spawn(move || {
        let mut st = Stats::default();
        let mut d = Vec::new();
        compare(&p, &mut st, &mut d, judge);
        let _ = tx.send((st, d));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(5)) {
        Ok((st, d)) => {
            stats.add(&st);
            discrepancies.extend(d);
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => timeouts.push(pos.to_sfen()),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("comparison failed in {}", pos.to_sfen())
        }
    }
}

fn to_oracle(m: Move) -> OMove {
    if m.is_drop() {
        OMove::Drop {
            piece: OPiece::new(okind(m.drop_piece_type()), ocolor(m.moved_piece().color())),
            to: osq(m.to()),
        }
    } else {
        OMove::Normal { from: osq(m.from()), to: osq(m.to()), promote: m.is_promotion() }
    }
}

/// A legal pawn drop that gives no check but leaves the opponent without a legal move: legal
/// by the rules, rejected by the oracle (see the module docs).
fn is_stalemating_pawn_drop(pos: &Position, m: Move) -> bool {
    if !(m.is_drop() && m.drop_piece_type() == PieceType::Pawn) || pos.gives_check(m) {
        return false;
    }
    let mut after = *pos;
    after.do_move(m);
    !after.in_check() && after.legal_moves().is_empty()
}

/// Compares one position in every way; returns Keima's legal moves for the caller's play.
/// `judge_candidates`: also compare verdicts on every from→to / drop candidate (slow: the
/// oracle plays each out), done on a sample of positions to keep the test within a minute.
fn compare(pos: &Position, stats: &mut Stats, discrepancies: &mut Vec<String>, judge_candidates: bool) {
    let sfen = pos.to_sfen();
    let opos = oracle_position(pos);
    assert_eq!(opos.to_sfen_owned(), sfen, "SFEN as re-written by the oracle");
    let us = pos.side_to_move();
    assert_eq!(opos.side_to_move(), ocolor(us));

    stats.positions += 1;
    if pos.in_check() {
        stats.in_check += 1;
        if pos.checkers().more_than_one() {
            stats.double_check += 1;
        }
    }
    if pos.king_square(Color::Black).is_none() || pos.king_square(Color::White).is_none() {
        stats.kingless += 1;
    }

    // 1. Legal-move sets.
    let ours = keima_moves(pos);
    let theirs = oracle_moves(&opos);
    stats.legal_moves += ours.len() as u64;
    stats.max_moves = stats.max_moves.max(ours.len());
    if ours.is_empty() {
        stats.no_legal_move += 1;
    }
    if ours != theirs {
        let only_ours: Vec<_> = ours.difference(&theirs).collect();
        let only_theirs: Vec<_> = theirs.difference(&ours).collect();
        // A non-checking pawn drop that leaves the opponent without moves is legal by the
        // rules; the oracle rejects it (see the module docs). Everything else is a failure.
        let quirk = only_theirs.is_empty()
            && only_ours.iter().all(|u| {
                let m = pos.parse_usi_move(u).expect("own move parses");
                is_stalemating_pawn_drop(pos, m)
                    && shogi_legality_lite::prelegality::is_valid_with_error(&opos, to_oracle(m))
                        == Err(IllegalMoveKind::DropPawnMate)
            });
        if quirk {
            stats.quirk_stalemate_drops += only_ours.len() as u64;
        } else {
            discrepancies.push(format!(
                "legal moves differ in {sfen}: only Keima {only_ours:?}, only oracle {only_theirs:?}"
            ));
        }
    }

    if !judge_candidates {
        return;
    }
    // 2. Legality verdicts on candidates, most of them illegal.
    let mut check = |m: Move, om: OMove, stats: &mut Stats| {
        let k = pos.is_legal(m);
        let o = shogi_legality_lite::is_legal_partial_lite(&opos, om);
        stats.candidates += 1;
        if k {
            stats.candidates_legal += 1;
            assert!(ours.contains(&m.to_usi()), "is_legal accepts {m} in {sfen} but it is not generated");
        } else {
            assert!(!ours.contains(&m.to_usi()), "is_legal rejects generated {m} in {sfen}");
        }
        if k != o {
            let quirk = k
                && is_stalemating_pawn_drop(pos, m)
                && shogi_legality_lite::prelegality::is_valid_with_error(&opos, om)
                    == Err(IllegalMoveKind::DropPawnMate);
            if !quirk {
                discrepancies.push(format!(
                    "is_legal({m}) = {k}, oracle {o} ({:?}) in {sfen}",
                    shogi_legality_lite::is_legal_partial(&opos, om)
                ));
            }
        }
    };
    for from in pos.pieces_of(us) {
        let piece = pos.piece_on(from);
        for to in Square::all() {
            for promote in [false, true] {
                let m = Move::new_board(from, to, promote, piece);
                check(m, OMove::Normal { from: osq(from), to: osq(to), promote }, stats);
            }
        }
    }
    let them_king = pos.king_square(us.opponent());
    for pt in PieceType::HAND {
        for to in Square::all() {
            let m = Move::new_drop(pt, to, us);
            let om = OMove::Drop { piece: OPiece::new(okind(pt), ocolor(us)), to: osq(to) };
            check(m, om, stats);
            // Count pawn-drop mates met on the way (the drop checks and is rejected only
            // because of the mate).
            if pt == PieceType::Pawn
                && !pos.is_legal(m)
                && them_king.is_some()
                && pos.hand(us).count(pt) > 0
                && shogi_legality_lite::prelegality::is_valid_with_error(&opos, om)
                    == Err(IllegalMoveKind::DropPawnMate)
                && pos.piece_on(to).is_empty()
            {
                stats.pawn_drop_mates += 1;
            }
        }
    }

    // 3. Keima's own move objects must be rejected with a wrong moving piece.
    if let Some(&m) = pos.legal_moves().iter().next()
        && !m.is_drop()
    {
        let wrong =
            Move::new_board(m.from(), m.to(), m.is_promotion(), Piece::new(us.opponent(), PieceType::Gold));
        assert!(!pos.is_legal(wrong), "{m} with a wrong moving piece accepted in {sfen}");
    }
}

/// Picks a move: captures often (to fill hands), checks sometimes (to reach evasions).
fn pick_move(pos: &Position, rng: &mut Rng) -> Option<Move> {
    let list = pos.legal_moves();
    if list.is_empty() {
        return None;
    }
    if rng.chance(55) {
        let mut caps = engine_core::rules::MoveList::new();
        pos.generate_captures(&mut caps);
        if !caps.is_empty() {
            return Some(caps[rng.below(caps.len())]);
        }
    }
    let mut checks = engine_core::rules::MoveList::new();
    pos.generate_checks(&mut checks);
    if rng.chance(60) {
        // Double checks are rare in random play: take one whenever there is one.
        let doubles: Vec<Move> = checks
            .iter()
            .copied()
            .filter(|&m| {
                let mut after = *pos;
                after.do_move(m);
                after.checkers().more_than_one()
            })
            .collect();
        if !doubles.is_empty() {
            return Some(doubles[rng.below(doubles.len())]);
        }
    }
    if rng.chance(30) && !checks.is_empty() {
        return Some(checks[rng.below(checks.len())]);
    }
    Some(list[rng.below(list.len())])
}

const MANY_IN_HAND: &[&str] = &[
    "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1",
    "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1",
];

/// Positions next to a pawn-drop mate, a kingless tsume position and a few sharp ones.
const SPECIAL: &[&str] = &[
    // Pawn drop on 1b would mate: illegal (uchifuzume).
    "7lk/9/8S/9/9/9/9/7L1/8K b P 1",
    // Same idea for White.
    "8k/7l1/9/9/9/9/8s/9/7LK w p 1",
    // Pawn drop check that is not mate because the king can take the pawn.
    "8k/9/9/9/9/9/9/9/K8 b P 1",
    // Pawn-drop mate candidates with more material around.
    "6snk/6+R2/9/9/9/9/9/9/K8 b P 1",
    "kn7/l1S6/9/9/9/9/9/9/8K b P 1",
    // Kingless attacker (tsume style): Black has no king.
    "7nl/7k1/9/7pp/9/9/9/9/9 b GS2r2b3g3s3n3l16p 1",
    "4k4/9/4P4/9/9/9/9/9/9 b G2r2b3g4s4n4l16p 1",
    // Knight promotions, pins and double checks.
    "7k1/9/9/9/l2s5/6snb/9/9/8K b 2G 1",
    "4k4/9/4r4/9/b3G4/9/4S4/3P5/4K4 b - 1",
    // Discovered double checks available (knight in front of a lance, silver before a bishop).
    "4k4/9/9/9/4N4/9/9/9/4L3K b - 1",
    "k3l4/9/9/9/4n4/9/9/9/4K4 w - 1",
    "4k4/9/9/9/9/9/9/1S7/B7K b G 1",
];

#[test]
fn legal_moves_and_is_legal_match_shogi_legality_lite() {
    let started = Instant::now();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut stats = Stats::default();
    let mut discrepancies = Vec::new();

    let mut starts: Vec<&str> = vec!["startpos"];
    starts.extend(MANY_IN_HAND);
    starts.extend(HANDICAPS.iter().map(|(_, s)| *s));
    starts.extend(SPECIAL);

    // The full run (KEIMA_DIFF_GAMES=330, over 10,000 positions) takes long with this
    // oracle; CI runs a sample.
    let games_to_play: usize =
        std::env::var("KEIMA_DIFF_GAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(260);
    let mut games = 0;
    let mut timeouts: Vec<String> = Vec::new();
    for g in 0..games_to_play {
        let start = starts[g % starts.len()];
        let mut pos = Position::from_sfen(start).unwrap_or_else(|e| panic!("{start}: {e}"));
        let max_plies = 10 + rng.below(90);
        for _ in 0..max_plies {
            if std::env::var_os("KEIMA_DIFF_TRACE").is_some() {
                eprintln!("game {g} {}", pos.to_sfen());
            }
            compare_bounded(&pos, &mut stats, &mut discrepancies, true, &mut timeouts);
            let Some(m) = pick_move(&pos, &mut rng) else { break };
            pos.do_move(m);
        }
        compare_bounded(&pos, &mut stats, &mut discrepancies, true, &mut timeouts);
        games += 1;
        assert!(discrepancies.len() < 20, "too many discrepancies:\n{}", discrepancies.join("\n"));
    }

    println!(
        "differential: {games} games, {} positions ({} in check = {:.1}%, {} double checks, {} without \
         legal moves, {} kingless), {} legal moves compared as sets (max {} in one position), {} \
         candidate moves judged by both ({} legal), {} pawn-drop mates rejected by both, {} \
         non-checking stalemating pawn drops (oracle quirk), {:.1} s",
        stats.positions,
        stats.in_check,
        100.0 * stats.in_check as f64 / stats.positions as f64,
        stats.double_check,
        stats.no_legal_move,
        stats.kingless,
        stats.legal_moves,
        stats.max_moves,
        stats.candidates,
        stats.candidates_legal,
        stats.pawn_drop_mates,
        stats.quirk_stalemate_drops,
        started.elapsed().as_secs_f64()
    );
    println!("oracle gave no answer within 5 s (skipped): {timeouts:?}");
    assert!(timeouts.len() <= 3, "the oracle hung on {} positions", timeouts.len());
    assert!(discrepancies.is_empty(), "discrepancies:\n{}", discrepancies.join("\n"));
    assert!(stats.positions >= 10_000 || games_to_play < 260, "only {} positions", stats.positions);
    assert!(
        stats.in_check * 100 >= stats.positions * 5,
        "only {} of {} positions in check",
        stats.in_check,
        stats.positions
    );
    if games_to_play >= 100 {
        assert!(stats.double_check >= 10, "only {} double checks reached", stats.double_check);
        assert!(stats.pawn_drop_mates > 0, "no pawn-drop mate met");
        assert!(stats.kingless > 0);
    }
}

/// The oracle's pawn-drop-mate test does not require the drop to give check. Here White has
/// a lone king on 1a and nothing in hand; Black's gold on 2c covers 1b and 2b. P*2b gives no
/// check (a Black pawn on 2b attacks 2a only) but takes 2a, and the pawn is protected by the
/// gold, so White has no legal move afterwards. Uchifuzume forbids only a pawn drop that
/// gives checkmate, so the drop is legal (and White, unable to move, loses). Keima accepts
/// it; the oracle rejects it with `DropPawnMate`.
#[test]
fn oracle_quirk_non_checking_pawn_drop_stalemate() {
    let pos = Position::from_sfen("8k/9/7G1/9/9/9/9/9/K8 b P 1").unwrap();
    let drop = pos.parse_usi_move("P*2b").expect("Keima: the drop is legal");
    assert!(!pos.gives_check(drop));
    let mut after = pos;
    after.do_move(drop);
    assert!(!after.in_check());
    assert!(after.legal_moves().is_empty(), "White is stalemated");

    let opos = oracle_position(&pos);
    let om = OMove::Drop { piece: OPiece::new(PieceKind::Pawn, OColor::Black), to: osq(drop.to()) };
    assert_eq!(
        shogi_legality_lite::is_legal_partial(&opos, om),
        Err(IllegalMoveKind::DropPawnMate),
        "oracle behaviour changed; the quirk handling in `compare` may be obsolete"
    );
    // Every other move agrees.
    let mut ours = keima_moves(&pos);
    assert!(ours.remove("P*2b"));
    assert_eq!(ours, oracle_moves(&opos));
}
