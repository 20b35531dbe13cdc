//! SFEN, USI-move and USI-position parsers never panic: random strings, token soups and
//! mutated valid inputs give Ok or Err; anything accepted is a valid position that
//! round-trips.

use engine_core::rules::{Position, UsiPosition};
use proptest::prelude::*;

const SFENS: &[&str] = &[
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",
    "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1",
    "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1",
    "7lk/9/8S/9/9/9/9/7L1/8K b P 1",
];

fn check_sfen(text: &str) {
    if let Ok(pos) = Position::from_sfen(text) {
        assert!(pos.validate().is_ok(), "{text}");
        assert_eq!(Position::from_sfen(&pos.to_sfen()).unwrap(), pos, "{text}");
    }
}

fn check_usi_position(text: &str) {
    if let Ok(u) = UsiPosition::parse(text) {
        let mut pos = u.start;
        for &m in &u.moves {
            assert!(pos.is_legal(m), "{text}");
            pos.do_move(m);
        }
        assert!(pos.validate().is_ok(), "{text}");
    }
}

fn check_usi(text: &str) {
    for sfen in SFENS {
        let pos = Position::from_sfen(sfen).unwrap();
        if let Ok(m) = pos.parse_usi_move(text) {
            assert!(pos.is_legal(m));
            assert_eq!(m.to_usi(), text);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_strings(s in "\\PC{0,120}") {
        check_sfen(&s);
        check_usi(&s);
        check_usi_position(&s);
    }

    #[test]
    fn usi_position_soup(
        setup in prop::sample::select(vec!["startpos", "position startpos", "sfen 7lk/9/8S/9/9/9/9/7L1/8K b P 1", "moves", ""]),
        moves in prop::collection::vec("[1-9a-iPLNSGBRK*+]{1,5}|7g7f|3c3d|2g2f|8c8d|moves", 0..12),
    ) {
        check_usi_position(&format!("{setup} moves {}", moves.join(" ")));
    }

    #[test]
    fn sfen_alphabet_soup(s in "[lnsgkbrpLNSGKBRP+/1-9 bw-]{0,100}") {
        check_sfen(&s);
    }

    #[test]
    fn usi_alphabet_soup(s in "[1-9a-iPLNSGBRK*+]{0,6}") {
        check_usi(&s);
    }

    #[test]
    fn mutated_sfens(which in 0..SFENS.len(), pos in 0usize..120, byte in any::<u8>(), cut in 0usize..120) {
        let mut bytes = SFENS[which].as_bytes().to_vec();
        let i = pos % bytes.len();
        bytes[i] = byte;
        bytes.truncate(cut.max(1).min(bytes.len()));
        check_sfen(&String::from_utf8_lossy(&bytes));
    }
}
