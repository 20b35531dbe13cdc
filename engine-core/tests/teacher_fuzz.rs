//! Untrusted bytes into PackedSfen / PackedSfenValue / shard decoding must never panic:
//! seeded random loops (a few seconds in release).

use engine_core::rules::Position;
use engine_core::teacher::{PackedSfen, PackedSfenValue, ShardReader, pack, try_pack, unpack};

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

    fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// When a PackedSfen decodes, the result must be a packable, valid position.
fn check_decoded(p: &PackedSfen) -> bool {
    match unpack(p) {
        Ok(pos) => {
            assert!(pos.validate().is_ok());
            assert!(pos.king_square(engine_core::rules::Color::Black).is_some());
            let again = try_pack(&pos).expect("a decoded position packs again");
            assert_eq!(unpack(&again).unwrap(), pos);
            true
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

fn sample_positions(rng: &mut Rng) -> Vec<Position> {
    let mut out = Vec::new();
    for _ in 0..20 {
        let mut pos = Position::startpos();
        for _ in 0..rng.below(160) {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.do_move(moves.as_slice()[rng.below(moves.len())]);
        }
        out.push(pos);
    }
    out
}

#[test]
fn random_bytes_into_unpack() {
    let mut rng = Rng(0xdead_beef);
    let mut ok = 0;
    for _ in 0..300_000 {
        let mut b = [0u8; 32];
        rng.fill(&mut b);
        // Half of the time make the king fields plausible so decoding goes deeper.
        if rng.below(2) == 0 {
            let bk = rng.below(81) as u16;
            let wk = rng.below(81) as u16;
            let head = (b[0] as u16 & 1) | bk << 1 | wk << 8;
            b[0] = head as u8;
            b[1] = (b[1] & 0x80) | (head >> 8) as u8;
        }
        ok += check_decoded(&PackedSfen(b)) as u32;
    }
    // Random bits essentially never give exactly one full set.
    assert!(ok < 100, "{ok}");
}

#[test]
fn bit_flipped_packed_sfens() {
    let mut rng = Rng(99);
    let (mut ok, mut total) = (0, 0);
    for pos in sample_positions(&mut rng) {
        let p = pack(&pos);
        for bit in 0..256 {
            let mut q = p;
            q.0[bit / 8] ^= 1 << (bit % 8);
            ok += check_decoded(&q) as u32;
            total += 1;
        }
        for _ in 0..2000 {
            let mut q = p;
            for _ in 0..1 + rng.below(6) {
                let bit = rng.below(256);
                q.0[bit / 8] ^= 1 << (bit % 8);
            }
            ok += check_decoded(&q) as u32;
            total += 1;
        }
        // Swapped or shifted byte ranges.
        for _ in 0..200 {
            let mut q = p;
            let (i, j) = (rng.below(32), rng.below(32));
            q.0.swap(i, j);
            check_decoded(&q);
        }
    }
    // Some flips (colour bits, side to move) legitimately give another valid position.
    assert!(ok > 0 && ok < total, "{ok}/{total}");
}

#[test]
fn random_records_into_validation() {
    let mut rng = Rng(2024);
    let positions = sample_positions(&mut rng);
    for i in 0..200_000 {
        let mut b = [0u8; 40];
        rng.fill(&mut b);
        if i % 2 == 0 {
            // A valid position with random other fields: exercises move decoding.
            let pos = &positions[rng.below(positions.len())];
            b[..32].copy_from_slice(&pack(pos).0);
        }
        let psv = PackedSfenValue::from_bytes(&b);
        assert_eq!(psv.to_bytes(), b);
        if let Ok((pos, mv)) = psv.validate() {
            assert!((-1..=1).contains(&psv.game_result));
            match mv {
                None => assert_eq!(psv.mv, 0),
                Some(m) => {
                    assert!(pos.is_legal(m));
                    assert_eq!(m.to_move16(), psv.mv);
                }
            }
        }
    }
    // Every Move16 value against a few positions.
    for pos in positions.iter().take(3) {
        let legal = pos.legal_moves().len();
        let mut accepted = 0;
        for mv in 0..=u16::MAX {
            let psv = PackedSfenValue { sfen: pack(pos), mv, ..Default::default() };
            if let Ok((_, Some(_))) = psv.validate() {
                accepted += 1;
            }
        }
        assert_eq!(accepted, legal);
    }
}

#[test]
fn random_files_into_shard_reader() {
    let tmp =
        tempfile::Builder::new().prefix("teacher_fuzz_").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = tmp.path();
    let mut rng = Rng(31337);
    let valid = pack(&Position::startpos());
    for i in 0..200 {
        let len = rng.below(2000);
        let mut data = vec![0u8; len];
        rng.fill(&mut data);
        if i % 3 == 0 && len >= 4 {
            data[..4].copy_from_slice(&[0x28, 0xb5, 0x2f, 0xfd]);
        }
        if i % 3 == 1 {
            for chunk in data.chunks_mut(40) {
                let n = chunk.len().min(32);
                chunk[..n].copy_from_slice(&valid.0[..n]);
            }
        }
        let path = dir.join(format!("f{i}.bin"));
        std::fs::write(&path, &data).unwrap();
        match ShardReader::read_all(&path) {
            Ok((recs, rejects)) => {
                assert_eq!(len % 40, 0);
                assert_eq!(recs.len() as u64 + rejects.total(), (len / 40) as u64);
            }
            Err(e) => assert!(e.to_string().contains(&format!("f{i}.bin")), "{e}"),
        }
    }
}
