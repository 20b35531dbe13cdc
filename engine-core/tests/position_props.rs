//! Property tests of the position code along deterministic random games:
//!   (a) after every `do_move` the position is consistent and its incremental key equals the
//!       key of the same position read back from SFEN; `undo_move` restores it exactly;
//!   (b) `from_sfen(to_sfen(p)) == p`;
//!   (c) `generate_captures` / `generate_checks` / `gives_check` agree with the legal moves
//!       filtered by playing them out;
//!   (d) `move_from_move16` accepts exactly the Move16 values of the legal moves;
//!   (e) parsers never panic (random and mutated input), and what they accept is valid and
//!       round-trips.
//!
//! Run in release mode.

use engine_core::rules::{HANDICAPS, Move, MoveList, Position};
use proptest::prelude::*;
use std::collections::BTreeSet;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
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
}

const STARTS: &[&str] = &[
    "startpos",
    "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1",
    "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1",
    "7lk/9/8S/9/9/9/9/7L1/8K b P 1",
    "7nl/7k1/9/7pp/9/9/9/9/9 b GS2r2b3g3s3n3l16p 1",
];

fn starts() -> Vec<&'static str> {
    let mut v = STARTS.to_vec();
    v.extend(HANDICAPS.iter().map(|(_, s)| *s));
    v
}

/// A random move, captures preferred half of the time so that hands fill up.
fn pick(pos: &Position, rng: &mut Rng) -> Option<Move> {
    let list = pos.legal_moves();
    if list.is_empty() {
        return None;
    }
    if rng.below(2) == 0 {
        let mut caps = MoveList::new();
        pos.generate_captures(&mut caps);
        if !caps.is_empty() {
            return Some(caps[rng.below(caps.len())]);
        }
    }
    Some(list[rng.below(list.len())])
}

/// Calls `f` on every position of `games` random games of up to `max_plies` plies.
fn for_random_positions(seed: u64, games: usize, max_plies: usize, mut f: impl FnMut(&Position)) {
    let mut rng = Rng(seed);
    let starts = starts();
    for g in 0..games {
        let mut pos = Position::from_sfen(starts[g % starts.len()]).unwrap();
        for _ in 0..max_plies {
            f(&pos);
            let Some(m) = pick(&pos, &mut rng) else { break };
            pos.do_move(m);
        }
        f(&pos);
    }
}

fn usi_set(moves: impl IntoIterator<Item = Move>) -> BTreeSet<String> {
    moves.into_iter().map(|m| m.to_usi()).collect()
}

#[test]
fn do_undo_keys_and_sfen_round_trip() {
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let starts = starts();
    let (mut moves, mut undos) = (0u64, 0u64);
    for g in 0..400 {
        let start = starts[g % starts.len()];
        let mut pos = Position::from_sfen(start).unwrap();
        let mut history = Vec::new();
        for _ in 0..150 {
            let Some(m) = pick(&pos, &mut rng) else { break };
            let before = pos;
            let delta = pos.do_move(m);
            moves += 1;
            let sfen = pos.to_sfen();
            assert!(pos.is_consistent(), "inconsistent after {m} from {}", before.to_sfen());
            let reread = Position::from_sfen(&sfen).unwrap_or_else(|e| panic!("{sfen}: {e}"));
            assert_eq!(reread.key(), pos.key(), "incremental key after {m} from {}", before.to_sfen());
            assert_eq!(reread, pos, "SFEN round trip of {sfen}");
            assert_eq!(reread.to_sfen(), sfen);
            assert_ne!(pos.key(), before.key());
            // Undo now and then immediately; otherwise unwind the whole game at the end.
            if rng.below(4) == 0 {
                let mut back = pos;
                back.undo_move(&delta);
                undos += 1;
                assert_eq!(back, before, "undo of {m} in {}", before.to_sfen());
                assert_eq!(back.key(), before.key());
            }
            history.push((before, delta));
        }
        while let Some((before, delta)) = history.pop() {
            pos.undo_move(&delta);
            undos += 1;
            assert_eq!(pos, before, "undo of {} while unwinding", delta.mv);
            assert_eq!(pos.key(), before.key());
            assert!(pos.is_consistent());
        }
        assert_eq!(pos, Position::from_sfen(start).unwrap());
    }
    println!("do/undo: {moves} moves played, {undos} undone");
    assert!(moves > 20_000);
}

#[test]
fn captures_checks_and_gives_check_agree_with_play() {
    let (mut positions, mut captures, mut checks) = (0u64, 0u64, 0u64);
    for_random_positions(0xC0FF_EE00_1234_5678, 300, 100, |pos| {
        positions += 1;
        let legal = pos.legal_moves();
        let them = pos.side_to_move().opponent();
        let want_caps = usi_set(legal.iter().copied().filter(|m| {
            !m.is_drop() && !pos.piece_on(m.to()).is_empty() && pos.piece_on(m.to()).color() == them
        }));
        let mut caps = MoveList::new();
        pos.generate_captures(&mut caps);
        assert_eq!(usi_set(caps.iter().copied()), want_caps, "captures in {}", pos.to_sfen());
        assert_eq!(caps.len(), want_caps.len(), "duplicate captures in {}", pos.to_sfen());
        captures += caps.len() as u64;

        let mut want_checks = BTreeSet::new();
        for &m in legal.iter() {
            let mut after = *pos;
            after.do_move(m);
            let checking = after.in_check();
            assert_eq!(pos.gives_check(m), checking, "gives_check({m}) in {}", pos.to_sfen());
            if checking {
                want_checks.insert(m.to_usi());
            }
        }
        let mut chk = MoveList::new();
        pos.generate_checks(&mut chk);
        assert_eq!(usi_set(chk.iter().copied()), want_checks, "checks in {}", pos.to_sfen());
        assert_eq!(chk.len(), want_checks.len());
        checks += chk.len() as u64;
    });
    println!("captures/checks: {positions} positions, {captures} captures, {checks} checks");
    assert!(positions > 10_000 && captures > 10_000 && checks > 5_000);
}

#[test]
fn move16_accepts_exactly_the_legal_moves() {
    let mut positions = 0u64;
    let mut accepted_total = 0u64;
    for_random_positions(0xDEAD_BEEF_F00D_0001, 10, 40, |pos| {
        positions += 1;
        let legal = pos.legal_moves();
        let mut accepted = 0usize;
        for raw in 0..=u16::MAX {
            if let Some(m) = pos.move_from_move16(raw) {
                assert_eq!(m.to_move16(), raw, "{m} in {}", pos.to_sfen());
                assert!(legal.contains(m), "{m} ({raw:#06x}) accepted, not generated, in {}", pos.to_sfen());
                accepted += 1;
            }
        }
        for &m in legal.iter() {
            assert_eq!(pos.move_from_move16(m.to_move16()), Some(m), "{m} in {}", pos.to_sfen());
        }
        assert_eq!(accepted, legal.len(), "in {}", pos.to_sfen());
        accepted_total += accepted as u64;
    });
    println!("move16: {positions} positions x 65536 values, {accepted_total} accepted");
    assert!(positions >= 300);
}

/// Reachable positions' SFENs, to mutate.
fn corpus() -> Vec<String> {
    let mut v = Vec::new();
    for_random_positions(0x5EED, 30, 60, |pos| v.push(pos.to_sfen()));
    v
}

fn check_sfen(text: &str) {
    if let Ok(pos) = Position::from_sfen(text) {
        assert!(pos.validate().is_ok(), "{text:?} accepted but invalid");
        let again = Position::from_sfen(&pos.to_sfen()).expect("re-read");
        assert_eq!(again, pos, "{text:?}");
        assert!(pos.is_consistent());
        // Whatever was accepted must be playable without panicking.
        let list = pos.legal_moves();
        for &m in list.iter() {
            assert!(pos.is_legal(m));
            let mut after = pos;
            let d = after.do_move(m);
            assert!(after.is_consistent(), "{m} in {text:?}");
            after.undo_move(&d);
            assert_eq!(after, pos);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn sfen_parser_never_panics_on_random_text(s in "\\PC{0,100}") {
        check_sfen(&s);
    }

    #[test]
    fn sfen_parser_never_panics_on_mutations(
        which in 0usize..1000,
        edits in prop::collection::vec((0usize..200, 0u8..4, prop::sample::select(
            b"0123456789/+-bwkKpPlLnNsSgGrRbB \x00\xff".to_vec())), 1..4),
    ) {
        thread_local!(static CORPUS: Vec<String> = corpus());
        let base = CORPUS.with(|c| c[which % c.len()].clone());
        let mut bytes = base.into_bytes();
        for (at, kind, b) in edits {
            let i = at % (bytes.len() + 1);
            match kind {
                0 if i < bytes.len() => bytes[i] = b,
                1 => bytes.insert(i, b),
                2 if i < bytes.len() => { bytes.remove(i); }
                _ => bytes.truncate(i.max(1)),
            }
        }
        check_sfen(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn usi_move_parser_never_panics(s in "\\PC{0,8}|[1-9a-iPLNSGBRKplnsgbrk*+]{0,6}") {
        for sfen in STARTS {
            let pos = Position::from_sfen(sfen).unwrap();
            if let Ok(m) = pos.parse_usi_move(&s) {
                prop_assert!(pos.legal_moves().contains(m));
                prop_assert_eq!(m.to_usi(), s.clone());
            }
        }
    }
}
