//! KPPT eval files: save → load (memory-mapped) → save gives identical bytes; wrong sizes
//! and missing files are clear errors; the evaluation formula on hand-set entries.

use engine_core::eval::bona_piece::{board_piece, hand_piece};
use engine_core::eval::kppt::{KK_LEN, KKP_LEN};
use engine_core::eval::kppt_file::{
    EvalFileError, KK_FILE, KKP_FILE, KPP_FILE, load_kppt_dir, read_kppt_dir, save_kppt_dir,
};
use engine_core::eval::{Evaluator, KpptTables};
use engine_core::rules::{Color, PieceType, Position, Square};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

fn files_equal(a: &Path, b: &Path) -> bool {
    let (mut fa, mut fb) = (std::fs::File::open(a).unwrap(), std::fs::File::open(b).unwrap());
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let na = fa.read(&mut ba).unwrap();
        let mut filled = 0;
        while filled < na {
            let n = fb.read(&mut bb[filled..na]).unwrap();
            if n == 0 {
                return false;
            }
            filled += n;
        }
        if ba[..na] != bb[..na] {
            return false;
        }
        if na == 0 {
            return fb.read(&mut bb).unwrap() == 0;
        }
    }
}

#[test]
fn save_load_save_is_byte_identical_and_evaluates_the_same() {
    let tmp = tempfile::Builder::new().prefix("keima-evalfiles-").tempdir_in(std::env::temp_dir()).unwrap();
    let dir = tmp.path();
    let (first, second) = (dir.join("a"), dir.join("b"));
    let tables = KpptTables::random(99, 500);
    save_kppt_dir(&tables, &first).unwrap();
    let loaded = load_kppt_dir(&first).unwrap();
    assert!(matches!(loaded.kpp, engine_core::eval::kppt::Table::Mapped { .. }), "KPP must be memory-mapped");
    save_kppt_dir(&loaded, &second).unwrap();
    for f in [KK_FILE, KKP_FILE, KPP_FILE] {
        assert!(files_equal(&first.join(f), &second.join(f)), "{f} differs after load+save");
    }
    let pos =
        Position::from_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1").unwrap();
    let a = Evaluator::with_kppt(Arc::new(tables)).evaluate_full(&pos);
    // The tables a search reads (owned, on huge pages) hold the same values as the map.
    let owned = read_kppt_dir(&first).unwrap();
    assert!(matches!(owned.kpp, engine_core::eval::kppt::Table::Owned(_)), "KPP must be read into memory");
    assert!(owned.kpp.as_slice() == loaded.kpp.as_slice() && owned.kkp.as_slice() == loaded.kkp.as_slice());
    assert!(owned.kk.as_slice() == loaded.kk.as_slice());
    let b = Evaluator::with_kppt(Arc::new(loaded)).evaluate_full(&pos);
    let c = Evaluator::with_kppt(Arc::new(owned)).evaluate_full(&pos);
    assert_eq!((a, a), (b, c));
    // A truncated file and a missing file are errors that name the file.
    let kk = first.join(KK_FILE);
    std::fs::write(&kk, vec![0u8; KK_LEN * 8 - 1]).unwrap();
    for result in [load_kppt_dir(&first), read_kppt_dir(&first)] {
        match result {
            Err(EvalFileError::WrongSize { path, expected, .. }) => {
                assert_eq!(path, kk);
                assert_eq!(expected, 52_488);
            }
            other => panic!("expected WrongSize, got {:?}", other.err()),
        }
    }
    std::fs::remove_file(first.join(KKP_FILE)).unwrap();
    std::fs::write(&kk, vec![0u8; KK_LEN * 8]).unwrap();
    for result in [load_kppt_dir(&first), read_kppt_dir(&first)] {
        let err = result.err().expect("missing KKP");
        assert!(matches!(err, EvalFileError::Missing { .. }));
        assert!(err.to_string().contains(KKP_FILE), "{err}");
    }
    assert_eq!(KKP_LEN * 8, 81_251_424);
}

/// The formula of formats.md on tables with a few hand-set entries.
#[test]
fn formula_on_hand_set_entries() {
    // Kings on 5i (Black) and 5a (White), one Black pawn on 5g and one White pawn in hand.
    let pos = Position::from_sfen("4k4/9/9/9/9/9/4P4/9/4K4 b p 1").unwrap();
    let bk = Square::new(4, 8);
    let wk = Square::new(4, 0);
    let (pawn_b, pawn_w) = board_piece(Color::Black, PieceType::Pawn, Square::new(4, 6));
    let (hand_b, hand_w) = hand_piece(Color::White, PieceType::Pawn, 0);
    let mut t = KpptTables::zeros();
    t.kk.make_mut()[bk.index() * 81 + wk.index()] = [320, 64];
    let kkp_index = |p: u16| (bk.index() * 81 + wk.index()) * 1548 + p as usize;
    t.kkp.make_mut()[kkp_index(pawn_b)] = [32 * 7, 0];
    let kpp = t.kpp.make_mut();
    let at = |k: Square, a: u16, b: u16| (k.index() * 1548 + a as usize) * 1548 + b as usize;
    // Black's half: pair (pawn, hand pawn) seen from Black's king.
    kpp[at(bk, pawn_b, hand_b)] = [32 * 3, 32];
    kpp[at(bk, hand_b, pawn_b)] = [32 * 3, 32];
    // White's half: the same pair seen from White's inverted king.
    kpp[at(wk.inverse(), pawn_w, hand_w)] = [32 * 5, 32 * 2];
    kpp[at(wk.inverse(), hand_w, pawn_w)] = [32 * 5, 32 * 2];
    let eval = Evaluator::with_kppt(Arc::new(t));
    // board = 96 - 160 + 320 + 224 + material (90 - 90 = 0) * 32 = 480; turn = 32 + 64 + 64 = 160.
    let black = eval.evaluate_full(&pos);
    assert_eq!(black.eval, (480 + 160) / 32);
    assert_eq!(black.material, 0);
    let white_to_move = Position::from_sfen("4k4/9/9/9/9/9/4P4/9/4K4 w p 1").unwrap();
    assert_eq!(eval.evaluate_full(&white_to_move).eval, (-480 + 160) / 32);
    // Material only: a Black rook up is +990 for Black to move, -990 for White to move.
    let up = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 b R 1").unwrap();
    assert_eq!(Evaluator::material_only().evaluate_full(&up).eval, 990);
    let up_w = Position::from_sfen("4k4/9/9/9/9/9/9/9/4K4 w R 1").unwrap();
    assert_eq!(Evaluator::material_only().evaluate_full(&up_w).eval, -990);
}
