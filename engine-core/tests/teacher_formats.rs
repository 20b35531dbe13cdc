//! PackedSfen, PackedSfenValue and teacher shards: known answers (shared/spec/formats.md),
//! round trips over random play, handicaps and a real openings file, shard integrity.

use engine_core::rules::{Color, HANDICAPS, Move, PieceType, Position, Square};
use engine_core::teacher::{
    PackedSfen, PackedSfenValue, RejectCounts, ShardError, ShardReader, ShardSettings, ShardWriter,
    manifest_path, pack, try_pack, unpack, unpack_with_ply,
};
use std::path::Path;

const VECTORS: &[(&str, [u8; 32])] = &[
    (
        "lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w -",
        [
            89, 164, 81, 34, 12, 171, 68, 252, 44, 167, 68, 56, 94, 137, 240, 72, 132, 87, 34, 60, 167, 68,
            56, 86, 137, 248, 88, 70, 137, 48, 188, 126,
        ],
    ),
    (
        "lns1kgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w -",
        [
            89, 164, 81, 34, 12, 171, 68, 252, 44, 167, 68, 56, 94, 137, 240, 72, 4, 18, 225, 57, 37, 194,
            177, 74, 196, 199, 50, 74, 132, 97, 191, 126,
        ],
    ),
    (
        "lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGK4 w -",
        [
            89, 164, 81, 34, 88, 37, 226, 199, 41, 17, 188, 18, 129, 68, 120, 37, 194, 115, 74, 132, 99, 149,
            136, 143, 101, 148, 8, 67, 106, 107, 191, 126,
        ],
    ),
    (
        "lnsgk4/9/ppppppppp/9/9/9/PPPPPPPPP/9/LNSGK4 w GBRgbr",
        [
            89, 36, 18, 1, 137, 128, 68, 64, 34, 144, 8, 175, 68, 120, 78, 137, 112, 172, 18, 97, 25, 37,
            194, 112, 30, 159, 251, 252, 166, 212, 218, 90,
        ],
    ),
];

/// Small deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A fresh directory, removed when the returned guard drops.
fn tmp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("teacher_formats_{name}_"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn sfen_without_ply(pos: &Position) -> String {
    let s = pos.to_sfen();
    s.rsplit_once(' ').unwrap().0.to_string()
}

#[test]
fn formats_md_vectors() {
    for (sfen, bytes) in VECTORS {
        let pos = Position::from_sfen(sfen).unwrap();
        let packed = pack(&pos);
        assert_eq!(packed.0, *bytes, "pack({sfen})");
        let back = unpack(&PackedSfen(*bytes)).unwrap();
        assert_eq!(back, pos);
        assert_eq!(sfen_without_ply(&back), sfen_without_ply(&pos));
        assert_eq!(back.ply(), 1);
        assert_eq!(unpack_with_ply(&PackedSfen(*bytes), 77).unwrap().ply(), 77);
    }
}

/// Random games, biased towards captures and promotions so that hands fill up.
fn random_positions(start: &Position, games: usize, max_plies: usize, rng: &mut Rng) -> Vec<Position> {
    let mut out = Vec::new();
    for _ in 0..games {
        let mut pos = *start;
        out.push(pos);
        for _ in 0..max_plies {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let list = moves.as_slice();
            let captures: Vec<Move> = list
                .iter()
                .copied()
                .filter(|m| !pos.piece_on(m.to()).is_empty() || m.is_promotion())
                .collect();
            let m = if !captures.is_empty() && rng.below(10) < 8 {
                captures[rng.below(captures.len())]
            } else {
                list[rng.below(list.len())]
            };
            pos.do_move(m);
            out.push(pos);
        }
    }
    out
}

fn check_round_trip(pos: &Position) {
    let p = try_pack(pos).unwrap_or_else(|e| panic!("{e}: {}", pos.to_sfen()));
    let back = unpack_with_ply(&p, pos.ply()).unwrap_or_else(|e| panic!("{e}: {}", pos.to_sfen()));
    assert_eq!(back, *pos);
    assert_eq!(back.to_sfen(), pos.to_sfen());
    assert_eq!(pack(&back), p);
}

#[test]
fn round_trip_random_play() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let positions = random_positions(&Position::startpos(), 60, 250, &mut rng);
    let (mut max_hand, mut promoted, mut white_to_move) = (0, 0, 0);
    for pos in &positions {
        check_round_trip(pos);
        let hand = pos.hand(Color::Black).total() + pos.hand(Color::White).total();
        max_hand = max_hand.max(hand);
        promoted += Square::all()
            .filter(|&s| !pos.piece_on(s).is_empty() && pos.piece_on(s).piece_type().is_promoted())
            .count();
        white_to_move += (pos.side_to_move() == Color::White) as usize;
    }
    assert!(positions.len() > 5000, "{}", positions.len());
    assert!(max_hand >= 15, "positions with many pieces in hand were generated (max {max_hand})");
    assert!(promoted > 1000, "promoted pieces were generated ({promoted})");
    assert!(white_to_move > 1000);
}

#[test]
fn round_trip_handicaps_and_special_positions() {
    let mut rng = Rng(12345);
    for (name, sfen) in HANDICAPS {
        let start = Position::from_sfen(sfen).unwrap();
        for pos in random_positions(&start, 5, 200, &mut rng) {
            check_round_trip(&pos);
            let _ = name;
        }
    }
    for sfen in [
        // Everything in hand.
        "4k4/9/9/9/9/9/9/9/4K4 b RB2G2S2N2L9Prb2g2s2n2l9p 1",
        "4k4/9/9/9/9/9/9/9/4K4 w 2R2B4G4S4N4L18P 1",
        // Only kings: everything else in the piece box.
        "4k4/9/9/9/9/9/9/9/4K4 b - 1",
        // Promoted pieces of both colours.
        "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1",
        "+B+R+P+L+N+S2k/9/9/9/9/9/9/9/K3+b+r+p+l+n b - 1",
        "8k/9/9/9/9/9/9/9/K8 b - 1",
        "k8/9/9/9/9/9/9/9/8K w - 1",
    ] {
        let pos = Position::from_sfen(sfen).unwrap();
        check_round_trip(&pos);
    }
}

#[test]
fn positions_without_a_king_cannot_be_packed() {
    let pos = Position::from_sfen("4k4/9/9/9/9/9/9/9/9 b - 1").unwrap();
    assert!(try_pack(&pos).is_err());
}

fn random_record(rng: &mut Rng, pos: &Position) -> PackedSfenValue {
    let moves = pos.legal_moves();
    let mv = if moves.is_empty() || rng.below(10) == 0 {
        None
    } else {
        Some(moves.as_slice()[rng.below(moves.len())])
    };
    let mut psv =
        PackedSfenValue::new(pos, mv, rng.next() as i16, (rng.below(3) as i8) - 1).expect("position packs");
    psv.game_ply = rng.next() as u16;
    psv
}

#[test]
fn psv_bytes_round_trip() {
    let mut rng = Rng(777);
    for pos in random_positions(&Position::startpos(), 10, 150, &mut rng) {
        let psv = random_record(&mut rng, &pos);
        let bytes = psv.to_bytes();
        assert_eq!(bytes[..32], psv.sfen.0);
        assert_eq!(PackedSfenValue::from_bytes(&bytes), psv);
        let (back, mv) = psv.validate().unwrap();
        assert_eq!(back.to_sfen(), {
            let mut p = pos;
            p = Position::from_sfen(&format!("{} {}", sfen_without_ply(&p), psv.game_ply.max(1))).unwrap();
            p.to_sfen()
        });
        assert_eq!(mv.map_or(0, |m| m.to_move16()), psv.mv);
    }
}

/// Some valid records, and corrupt ones with the reject counts they should produce.
fn shard_fixture() -> (Vec<PackedSfenValue>, Vec<[u8; 40]>, RejectCounts) {
    let mut rng = Rng(4242);
    let valid: Vec<PackedSfenValue> = random_positions(&Position::startpos(), 8, 120, &mut rng)
        .iter()
        .map(|p| random_record(&mut rng, p))
        .collect();
    let mut corrupt = Vec::new();
    let mut want = RejectCounts::default();
    // All zeros: both kings on square 0.
    corrupt.push([0u8; 40]);
    want.missing_king += 1;
    // A king square of 81.
    let mut b = valid[0].to_bytes();
    b[1] = (b[1] & 0x80) | 81;
    corrupt.push(b);
    want.missing_king += 1;
    // Illegal move (a pawn drop onto 1a, square 0: no pawn in hand, square occupied).
    let mut psv = valid[0];
    psv.mv = (1 << 14) | (PieceType::Pawn as u16) << 7;
    corrupt.push(psv.to_bytes());
    want.illegal_move += 1;
    // Bad game result.
    let mut psv = valid[1];
    psv.game_result = 5;
    corrupt.push(psv.to_bytes());
    want.bad_game_result += 1;
    // All ones: decodes to too many rooks / runs out of bits, whatever: a bad record.
    corrupt.push([0xff; 40]);
    want.missing_king += 1;
    // Early position, no hands: the last bit is the colour of the lance on 9i; a White
    // lance on its last rank is an illegal position.
    let mut b = valid[2].to_bytes();
    b[31] ^= 0x80;
    corrupt.push(b);
    want.illegal_position += 1;
    (valid, corrupt, want)
}

#[test]
fn shard_round_trip_with_rejects() {
    let tmp = tmp_dir("round_trip");
    let dir = tmp.path();
    let path = dir.join("a.psv.zst");
    let (valid, corrupt, want) = shard_fixture();
    let settings = ShardSettings {
        zstd_level: 5,
        eval_id: "test-eval".into(),
        settings: serde_json::json!({"depth": 3, "note": "test"}),
    };
    let mut w = ShardWriter::create(&path, settings).unwrap();
    // Interleave: valid records through the checked path, corrupt ones through the raw path.
    let mut expected = Vec::new();
    let mut ci = corrupt.iter();
    for (i, psv) in valid.iter().enumerate() {
        assert!(w.write(psv).unwrap());
        expected.push(*psv);
        if i % 50 == 0
            && let Some(c) = ci.next()
        {
            w.write_raw(c).unwrap();
        }
    }
    for c in ci {
        w.write_raw(c).unwrap();
    }
    // A padding warning: used, but counted.
    let mut padded = valid[3];
    padded.padding = 7;
    assert!(w.write(&padded).unwrap());
    expected.push(padded);
    // The checked path refuses a corrupt record and counts it in the manifest.
    assert!(!w.write(&PackedSfenValue::default()).unwrap());
    assert!(path.with_extension("zst.tmp").exists());
    let m = w.finish().unwrap();
    assert!(!path.with_extension("zst.tmp").exists());
    assert_eq!(m.records, (valid.len() + corrupt.len() + 1) as u64);
    assert_eq!(m.rejects.missing_king, 1);
    assert_eq!(m.rejects.nonzero_padding, 1);
    assert_eq!(m.eval_id, "test-eval");
    assert_eq!(m.zstd_level, 5);
    assert!(manifest_path(&path).exists());
    let text = std::fs::read_to_string(manifest_path(&path)).unwrap();
    assert!(text.contains("\"keima-teacher-shard\"") && text.contains("\"depth\": 3"), "{text}");

    let mut r = ShardReader::open(&path).unwrap();
    assert!(r.is_compressed());
    assert_eq!(r.manifest().unwrap().records, m.records);
    let mut got = Vec::new();
    for rec in r.by_ref() {
        let rec = rec.unwrap();
        assert_eq!(rec.pos, unpack_with_ply(&rec.psv.sfen, rec.psv.game_ply as u32).unwrap());
        assert_eq!(rec.mv.map_or(0, |m: Move| m.to_move16()), rec.psv.mv);
        got.push(rec.psv);
    }
    assert_eq!(got, expected);
    let rejects = *r.rejects();
    assert_eq!(rejects.total(), corrupt.len() as u64, "{rejects}");
    assert_eq!(rejects.missing_king, want.missing_king, "{rejects}");
    assert_eq!(rejects.illegal_move, want.illegal_move, "{rejects}");
    assert_eq!(rejects.bad_game_result, want.bad_game_result, "{rejects}");
    assert_eq!(rejects.illegal_position, want.illegal_position, "{rejects}");
    assert_eq!(rejects.nonzero_padding, 1);
    assert_eq!(r.records_read(), m.records);

    // zstd -d gives exactly N*40 bytes: the plain .bin, readable the same way.
    let raw = zstd::decode_all(std::fs::File::open(&path).unwrap()).unwrap();
    assert_eq!(raw.len() as u64, m.records * 40);
    let bin = dir.join("a.bin");
    std::fs::write(&bin, &raw).unwrap();
    let (recs, rej) = ShardReader::read_all(&bin).unwrap();
    assert_eq!(recs.iter().map(|r| r.psv).collect::<Vec<_>>(), expected);
    assert_eq!(rej, rejects);
}

fn write_small_shard(path: &Path) -> Vec<PackedSfenValue> {
    let (valid, _, _) = shard_fixture();
    let mut w = ShardWriter::create(path, ShardSettings::default()).unwrap();
    for psv in &valid {
        assert!(w.write(psv).unwrap());
    }
    w.finish().unwrap();
    valid
}

fn read_err(path: &Path) -> ShardError {
    match ShardReader::read_all(path) {
        Ok((recs, _)) => panic!("read {} records from a damaged file", recs.len()),
        Err(e) => e,
    }
}

#[test]
fn manifest_detects_modification() {
    let tmp = tmp_dir("modified");
    let dir = tmp.path();
    let path = dir.join("m.psv.zst");
    let valid = write_small_shard(&path);
    assert_eq!(ShardReader::read_all(&path).unwrap().0.len(), valid.len());

    // Change one score (the record stays valid): the checksum must catch it.
    let mut raw = zstd::decode_all(std::fs::File::open(&path).unwrap()).unwrap();
    raw[40 * 7 + 32] ^= 1;
    std::fs::write(&path, zstd::encode_all(&raw[..], 3).unwrap()).unwrap();
    let e = read_err(&path);
    assert!(matches!(e, ShardError::ChecksumMismatch { .. }), "{e}");
    assert!(e.to_string().contains("m.psv.zst"), "{e}");

    // One record more: the count must catch it.
    raw[40 * 7 + 32] ^= 1;
    raw.extend_from_slice(&valid[0].to_bytes());
    std::fs::write(&path, zstd::encode_all(&raw[..], 3).unwrap()).unwrap();
    let e = read_err(&path);
    assert!(matches!(e, ShardError::CountMismatch { .. }), "{e}");

    // A broken manifest is an error naming it.
    std::fs::write(manifest_path(&path), b"{ not json").unwrap();
    let e = ShardReader::open(&path).err().unwrap();
    assert!(matches!(e, ShardError::Manifest { .. }) && e.to_string().contains("manifest.json"), "{e}");
}

#[test]
fn truncated_files_give_clear_errors() {
    let tmp = tmp_dir("truncated");
    let dir = tmp.path();
    let path = dir.join("t.psv.zst");
    write_small_shard(&path);
    let full = std::fs::read(&path).unwrap();

    // Compressed stream cut short, with and without the manifest.
    std::fs::write(&path, &full[..full.len() / 2]).unwrap();
    let e = read_err(&path);
    eprintln!("{e}");
    assert!(e.to_string().contains("t.psv.zst"), "{e}");
    assert!(matches!(e, ShardError::Decompress { .. } | ShardError::Truncated { .. }), "{e}");
    std::fs::remove_file(manifest_path(&path)).unwrap();
    let e = read_err(&path);
    assert!(matches!(e, ShardError::Decompress { .. } | ShardError::Truncated { .. }), "{e}");

    // Plain .bin whose length is not a multiple of 40: names the record index.
    let raw = zstd::decode_all(&full[..]).unwrap();
    let bin = dir.join("t.bin");
    std::fs::write(&bin, &raw[..40 * 10 + 17]).unwrap();
    let e = read_err(&bin);
    eprintln!("{e}");
    match &e {
        ShardError::Truncated { record, bytes, .. } => assert_eq!((*record, *bytes), (10, 17)),
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("t.bin") && e.to_string().contains("record 10"), "{e}");

    // A missing file.
    let e = ShardReader::open(dir.join("nope.bin")).err().unwrap();
    assert!(e.to_string().contains("nope.bin"), "{e}");
}

#[test]
fn abandoned_writer_leaves_nothing() {
    let tmp = tmp_dir("abandoned");
    let dir = tmp.path();
    let path = dir.join("x.psv.zst");
    {
        let mut w = ShardWriter::create(&path, ShardSettings::default()).unwrap();
        w.write(&PackedSfenValue::new(&Position::startpos(), None, 0, 0).unwrap()).unwrap();
    }
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);
}

#[test]
fn openings_file_psv_round_trip() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/openings/records2016_10818.sfen");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut lines, mut positions) = (0, 0);
    for (ln, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let rest = line.strip_prefix("startpos").unwrap_or_else(|| panic!("line {}: {line}", ln + 1));
        let moves: Vec<&str> = rest.trim().strip_prefix("moves").unwrap_or("").split_whitespace().collect();
        let mut pos = Position::startpos();
        for i in 0..=moves.len() {
            let next = moves.get(i).map(|t| {
                pos.parse_usi_move(t).unwrap_or_else(|e| panic!("line {} move {}: {e}", ln + 1, i + 1))
            });
            let psv = PackedSfenValue::new(&pos, next, (i as i16) * 10 - 100, 0).unwrap();
            let decoded = PackedSfenValue::from_bytes(&psv.to_bytes());
            let (back, mv) =
                decoded.validate().unwrap_or_else(|e| panic!("line {} ply {}: {e}", ln + 1, i + 1));
            assert_eq!(back.to_sfen(), pos.to_sfen(), "line {} ply {}", ln + 1, i + 1);
            assert_eq!(mv, next, "line {} ply {}", ln + 1, i + 1);
            positions += 1;
            if let Some(m) = next {
                pos.do_move(m);
            }
        }
        lines += 1;
    }
    assert!(lines >= 10_000, "{lines}");
    assert!(positions > 200_000, "{positions}");
}
