//! PackedSfenValue encode → decode on every position of every game in
//! ../shared/data/records (positions without both kings, i.e. mate problems, cannot be
//! packed and are counted).

use engine_core::records::load_file;
use engine_core::teacher::PackedSfenValue;
use std::path::{Path, PathBuf};

fn record_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            record_files(&p, out);
        } else if p.extension().is_none_or(|e| e != "json") {
            out.push(p);
        }
    }
}

#[test]
fn every_record_position_round_trips_through_psv() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/records");
    let mut files = Vec::new();
    record_files(&root, &mut files);
    assert!(files.len() > 80, "shared records found: {}", files.len());
    let (mut positions, mut kingless) = (0u64, 0u64);
    for file in &files {
        let games = load_file(file).unwrap_or_else(|e| panic!("{e}"));
        for game in games {
            let mut pos = game.start;
            let mut moves = game.moves.iter().map(|m| Some(m.mv)).chain([None]);
            for (i, mv) in moves.by_ref().enumerate() {
                let result = (i % 3) as i8 - 1;
                match PackedSfenValue::new(&pos, mv, (i as i16) * 7 - 300, result) {
                    Ok(psv) => {
                        let back = PackedSfenValue::from_bytes(&psv.to_bytes());
                        assert_eq!(back, psv);
                        let (decoded, decoded_move) = back.validate().unwrap_or_else(|e| {
                            panic!("{}: move {i}: {e:?} for {}", file.display(), pos.to_sfen())
                        });
                        assert_eq!(decoded.to_sfen(), pos.to_sfen(), "{}: move {i}", file.display());
                        assert_eq!(decoded_move, mv, "{}: move {i}", file.display());
                        assert_eq!((back.score, back.game_result), ((i as i16) * 7 - 300, result));
                        positions += 1;
                    }
                    Err(_) => kingless += 1,
                }
                if let Some(m) = mv {
                    pos.do_move(m);
                }
            }
        }
    }
    println!("{positions} positions round-tripped, {kingless} without both kings");
    assert!(positions > 4000);
}
