//! Known perft counts (shared/spec/perft.md). Run in release mode: these visit ~25M nodes.

use engine_core::rules::Position;
use engine_core::rules::perft::{perft, perft_divide};

fn check(sfen: &str, expected: &[u64]) {
    let mut pos = Position::from_sfen(sfen).unwrap();
    let before = pos;
    for (i, &want) in expected.iter().enumerate() {
        let depth = i as u32 + 1;
        assert_eq!(perft(&mut pos, depth), want, "perft {depth} of {sfen}");
    }
    assert_eq!(pos, before, "perft must leave the position unchanged");
}

#[test]
fn startpos_depth_1_to_5() {
    check("startpos", &[30, 900, 25_470, 719_731, 19_861_490]);
}

#[test]
fn matsuri_depth_1_to_3() {
    check("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1", &[207, 28_684, 4_809_015]);
}

#[test]
fn max_legal_moves_depth_1_to_2() {
    check("R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1", &[593, 105_677]);
}

#[test]
fn knight_promotions_depth_1_to_3() {
    check("7k1/9/9/9/l2s5/6snb/9/9/8K b 2G 1", &[76, 2_606, 201_658]);
}

#[test]
fn pawn_drop_mate_depth_1_to_3() {
    check("7lk/9/8S/9/9/9/9/7L1/8K b P 1", &[85, 639, 10_786]);
}

#[test]
fn middle_game_depth_1_to_3() {
    check(
        "ln1g5/1r2k2g1/p2ppp3/3s1+bpP1/9/P1pS1P1p1/1PGPP1P2/3K2S1R/L4G1N1 b SN2L4Pbn 73",
        &[187, 24_210, 3_794_957],
    );
}

#[test]
fn divide_sums_to_perft() {
    let mut pos =
        Position::from_sfen("lnsgkgsnl/1r7/p1ppp1bpp/1p3pp2/7P1/2P6/PP1PPPP1P/1B3S1R1/LNSGKG1NL b - 9")
            .unwrap();
    let parts = perft_divide(&mut pos, 3);
    assert_eq!(parts.len(), pos.legal_moves().len());
    let total: u64 = parts.iter().map(|(_, n)| n).sum();
    assert_eq!(total, perft(&mut pos, 3));
}
