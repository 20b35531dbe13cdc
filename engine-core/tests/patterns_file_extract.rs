//! Pattern extraction is reproducible from a seed and keeps its band; pattern files round
//! trip bit-exactly and reject bad input with errors naming the file.

use engine_core::eval::patterns::file::{PatternFileError, from_bytes, load, save, to_bytes};
use engine_core::eval::patterns::{Band, ExtractConfig, Extraction, PatternCounter, PatternSet};
use engine_core::records::load_file;
use std::path::{Path, PathBuf};

fn openings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/openings/records2016_10818.sfen")
}

fn extract(seed: u64, relative: bool) -> Extraction {
    let games = load_file(&openings()).expect("openings file parses");
    let mut counter = PatternCounter::new(ExtractConfig { size: 3, relative, samples_per_position: 4, seed });
    for g in games.iter().take(2000) {
        let mut pos = g.start;
        for m in &g.moves {
            pos.do_move(m.mv);
            counter.observe(&pos);
        }
    }
    counter.finish(Band { max_share: 0.5, drop_top: 50, min_count: 3, keep: 500 })
}

#[test]
fn extraction_is_reproducible_and_respects_the_band() {
    let a = extract(7, false);
    let b = extract(7, false);
    assert_eq!(a.kept, b.kept, "same seed, same patterns and counts");
    let c = extract(8, false);
    assert_ne!(a.kept, c.kept, "another seed samples other combinations");
    assert_eq!(a.kept.len(), 500);
    assert_eq!(a.dropped_frequent, 50);
    assert!(a.kept.windows(2).all(|w| w[0].1 >= w[1].1), "most frequent first");
    assert!(a.kept.iter().all(|(_, c)| *c >= 3 && *c <= a.upper));
    assert_eq!(a.positions, 2000 * 24);
    let rel = extract(7, true);
    assert!(rel.kept.iter().all(|(p, _)| p.is_relative()));
}

#[test]
fn pattern_file_round_trip_and_errors() {
    let ex = extract(3, true);
    let n = ex.kept.len();
    let set = PatternSet::new(
        ex.kept.into_iter().map(|(p, _)| p).collect(),
        (0..n as i32).map(|i| i * 7 - 900).collect(),
    );
    let tmp = tempfile::Builder::new().prefix("keima-patterns-").tempdir_in(std::env::temp_dir()).unwrap();
    let dir = tmp.path();
    let path = dir.join("set.kpat");
    save(&set, &path).unwrap();
    let loaded = load(&path).unwrap();
    assert_eq!(loaded.patterns(), set.patterns());
    assert_eq!(loaded.weights(), set.weights());
    assert_eq!(to_bytes(&loaded), std::fs::read(&path).unwrap(), "load + save is byte-identical");
    let bytes = to_bytes(&set);
    let name = Path::new("x.kpat");
    assert!(matches!(from_bytes(&bytes[..bytes.len() - 1], name), Err(PatternFileError::Size { .. })));
    let mut flipped = bytes.clone();
    flipped[30] ^= 1;
    assert!(matches!(from_bytes(&flipped, name), Err(PatternFileError::Checksum { .. })));
    let mut version = bytes.clone();
    version[8] = 9;
    let err = from_bytes(&version, name).unwrap_err();
    assert!(matches!(err, PatternFileError::Version { found: 9, .. }));
    assert!(err.to_string().contains("x.kpat"));
    assert!(matches!(from_bytes(b"garbage", name), Err(PatternFileError::Magic { .. })));
    // Random bytes never panic.
    let mut x = 1u64;
    for len in 0..300 {
        let junk: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = from_bytes(&junk, name);
        let mut mutated = bytes.clone();
        mutated[(x as usize) % bytes.len()] ^= 1 << (x % 8);
        let _ = from_bytes(&mutated, name);
    }
}
