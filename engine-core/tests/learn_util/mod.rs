//! Shared helpers of the learner tests: small teacher shards from searched random games.
#![allow(dead_code)]

use engine_core::eval::Evaluator;
use engine_core::eval::material::material;
use engine_core::rules::{Color, Move, Position};
use engine_core::search::{Limits, Searcher, TranspositionTable};
use engine_core::teacher::{PackedSfenValue, ShardSettings, ShardWriter, TeacherRecord};
use std::path::Path;
use std::sync::Arc;

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A test directory, removed when the guard drops (weight files are 1.7 GB sparse).
pub fn tmp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("learn_{name}_"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Positions of games mixing random moves and depth-1 searched moves (material-only),
/// each with the search's score and move and a result from the final material balance.
pub fn game_records(games: usize, plies: usize, seed: u64) -> Vec<PackedSfenValue> {
    let mut rng = Rng(seed | 1);
    let ev = Arc::new(Evaluator::material_only());
    let mut s = Searcher::new(ev, Arc::new(TranspositionTable::new(1)));
    let mut out = Vec::new();
    for _ in 0..games {
        let mut pos = Position::startpos();
        let mut game = Vec::new();
        for _ in 0..plies {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            s.set_position(&pos, &[]);
            let r = s.go(Limits::depth(1), |_| {});
            let score = r.score.clamp(-3000, 3000) as i16;
            game.push((pos, r.best_move, score));
            let m = if rng.below(2) == 0 && r.best_move != Move::NONE {
                r.best_move
            } else {
                moves[rng.below(moves.len())]
            };
            pos.do_move(m);
        }
        let m = material(&pos);
        for (p, mv, score) in game {
            let black_result = if m >= 300 {
                1
            } else if m <= -300 {
                -1
            } else {
                0
            };
            let r = if p.side_to_move() == Color::Black { black_result } else { -black_result };
            out.push(PackedSfenValue::new(&p, Some(mv), score, r as i8).unwrap());
        }
    }
    out
}

pub fn write_shard(path: &Path, recs: &[PackedSfenValue]) {
    let mut w = ShardWriter::create(path, ShardSettings::default()).unwrap();
    for r in recs {
        assert!(w.write(r).unwrap());
    }
    w.finish().unwrap();
}

pub fn to_records(recs: &[PackedSfenValue]) -> Vec<TeacherRecord> {
    recs.iter()
        .enumerate()
        .map(|(i, psv)| {
            let (pos, mv) = psv.validate().unwrap();
            TeacherRecord { index: i as u64, psv: *psv, pos, mv }
        })
        .collect()
}
