//! Monte Carlo players (research §4). Primitive: for each legal move, uniform random
//! playouts; play the move with the best win rate. Improved: the playouts choose moves by
//! learned feature win rates — a ply-dependent table blended linearly with the 600-entry
//! ply-independent one (the ply-dependent weight is high early and shrinks with the ply
//! and with few samples) — sharpened by score' = (score − α·maxScore)/(1 − α), α growing
//! with the number of playouts.
//!
//! The tables are learned, never hand-set: `FeatureTables::learn` plays self-play
//! playouts (uniform, or biased by an earlier generation of tables) from the start and
//! counts, for every move played, whether its mover went on to win.

use super::movegen::{MoveList, pseudo_moves};
use super::playout::{
    AttackInfo, DEP_SIZE, IND_SIZE, PLAYOUT_MAX_PLIES, Rng, features, playout_with, score_for,
    uniform_playout,
};
use super::rules::{Color, EMPTY, LION, Move, Position, Status, kind_of};
use rayon::prelude::*;
use std::io::{Read, Write};
use std::path::Path;

/// Plies with their own ply-dependent table (later plies share the last one).
pub const TABLE_PLIES: usize = 64;

/// Learned win rates: counts of (wins, games) per feature.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureTables {
    /// `dep[ply * DEP_SIZE + i]` = (wins, count).
    pub dep: Vec<(f32, f32)>,
    pub ind: Vec<(f32, f32)>,
}

impl Default for FeatureTables {
    fn default() -> Self {
        FeatureTables { dep: vec![(0.0, 0.0); TABLE_PLIES * DEP_SIZE], ind: vec![(0.0, 0.0); IND_SIZE] }
    }
}

fn rate((w, n): (f32, f32)) -> f32 {
    (w + 1.0) / (n + 2.0)
}

const MAGIC: &[u8; 8] = b"KEIMADMC";

impl FeatureTables {
    /// The blended score of a move feature pair at `ply`.
    pub fn score(&self, ply: usize, ind: usize, dep: usize) -> f32 {
        let p = ply.min(TABLE_PLIES - 1);
        let d = self.dep[p * DEP_SIZE + dep];
        let early = (1.0 - ply as f32 / TABLE_PLIES as f32).max(0.0);
        let lambda = early * d.1 / (d.1 + 16.0);
        lambda * rate(d) + (1.0 - lambda) * rate(self.ind[ind])
    }

    fn add(&mut self, other: &FeatureTables) {
        for (a, b) in self.dep.iter_mut().zip(&other.dep) {
            a.0 += b.0;
            a.1 += b.1;
        }
        for (a, b) in self.ind.iter_mut().zip(&other.ind) {
            a.0 += b.0;
            a.1 += b.1;
        }
    }

    /// Learns tables from `games` self-play playouts from `start` (uniform if `policy` is
    /// None, else biased by `policy` with sharpening `alpha`). Deterministic per seed.
    pub fn learn(
        start: &Position,
        games: usize,
        seed: u64,
        policy: Option<(&FeatureTables, f32)>,
    ) -> FeatureTables {
        let chunks = games.div_ceil(256);
        (0..chunks)
            .into_par_iter()
            .map(|c| {
                let mut t = FeatureTables::default();
                let mut rng = Rng::new(seed ^ (c as u64).wrapping_mul(0x9E37_79B9));
                let mut rec = [(0u16, 0u16, 0u8, 0u8); PLAYOUT_MAX_PLIES as usize];
                let n = 256.min(games - c * 256);
                for _ in 0..n {
                    let (len, winner) = record_playout(start, &mut rng, policy, &mut rec);
                    for &(ind, dep, ply, side) in &rec[..len] {
                        let s = if side == 0 { Color::Black } else { Color::White };
                        let r = score_for(winner, s) as f32;
                        let e = &mut t.dep[(ply as usize) * DEP_SIZE + dep as usize];
                        e.0 += r;
                        e.1 += 1.0;
                        let e = &mut t.ind[ind as usize];
                        e.0 += r;
                        e.1 += 1.0;
                    }
                }
                t
            })
            .reduce(FeatureTables::default, |mut a, b| {
                a.add(&b);
                a
            })
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("tmp");
        {
            let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
            f.write_all(MAGIC)?;
            f.write_all(&(TABLE_PLIES as u32).to_le_bytes())?;
            f.write_all(&(DEP_SIZE as u32).to_le_bytes())?;
            f.write_all(&(IND_SIZE as u32).to_le_bytes())?;
            for &(w, n) in self.dep.iter().chain(&self.ind) {
                f.write_all(&w.to_le_bytes())?;
                f.write_all(&n.to_le_bytes())?;
            }
            f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        }
        std::fs::rename(tmp, path)
    }

    pub fn load(path: &Path) -> Result<FeatureTables, String> {
        let mut b = Vec::new();
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut b))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let sizes = [TABLE_PLIES as u32, DEP_SIZE as u32, IND_SIZE as u32];
        let want = 20 + 8 * (TABLE_PLIES * DEP_SIZE + IND_SIZE);
        if b.len() < 20 || &b[..8] != MAGIC {
            return Err(format!("{}: not a Keima MC table file (bad magic)", path.display()));
        }
        for (i, &s) in sizes.iter().enumerate() {
            let got = u32::from_le_bytes(b[8 + 4 * i..12 + 4 * i].try_into().unwrap_or_default());
            if got != s {
                return Err(format!("{}: header field {i} is {got}, expected {s}", path.display()));
            }
        }
        if b.len() != want {
            return Err(format!("{}: {} bytes, expected {want} (truncated?)", path.display(), b.len()));
        }
        let f = |o: usize| f32::from_le_bytes(b[o..o + 4].try_into().unwrap_or_default());
        let pairs: Vec<(f32, f32)> =
            (0..TABLE_PLIES * DEP_SIZE + IND_SIZE).map(|i| (f(20 + 8 * i), f(24 + 8 * i))).collect();
        let ind = pairs[TABLE_PLIES * DEP_SIZE..].to_vec();
        let mut dep = pairs;
        dep.truncate(TABLE_PLIES * DEP_SIZE);
        Ok(FeatureTables { dep, ind })
    }
}

/// Picks a playout move by sharpened feature scores; returns its features too.
fn biased_move(
    p: &Position,
    list: &MoveList,
    t: &FeatureTables,
    alpha: f32,
    rng: &mut Rng,
) -> (Move, usize, usize) {
    let ai = AttackInfo::new(p);
    let ply = (p.ply as usize).saturating_sub(1);
    let mut scores = [0f32; super::movegen::MAX_MOVES];
    let mut feats = [(0usize, 0usize); super::movegen::MAX_MOVES];
    let mut max = 0f32;
    for (i, &m) in list.as_slice().iter().enumerate() {
        let (ind, dep) = features(p, &ai, m);
        feats[i] = (ind, dep);
        scores[i] = t.score(ply, ind, dep);
        max = max.max(scores[i]);
    }
    let mut total = 0f32;
    for s in scores[..list.len()].iter_mut() {
        *s = ((*s - alpha * max) / (1.0 - alpha)).max(1e-4);
        total += *s;
    }
    let mut x = rng.unit() as f32 * total;
    for i in 0..list.len() {
        x -= scores[i];
        if x <= 0.0 {
            return (list.as_slice()[i], feats[i].0, feats[i].1);
        }
    }
    let i = list.len() - 1;
    (list.as_slice()[i], feats[i].0, feats[i].1)
}

/// A playout that records (ind, dep, ply, side) of each move; returns (moves, winner).
fn record_playout(
    start: &Position,
    rng: &mut Rng,
    policy: Option<(&FeatureTables, f32)>,
    rec: &mut [(u16, u16, u8, u8); PLAYOUT_MAX_PLIES as usize],
) -> (usize, Option<Color>) {
    let mut p = *start;
    let mut list = MoveList::new();
    for i in 0..PLAYOUT_MAX_PLIES as usize {
        if p.status() == Status::Lost {
            return (i, Some(p.side.flip()));
        }
        pseudo_moves(&p, &mut list);
        if list.is_empty() {
            return (i, Some(p.side.flip()));
        }
        let (m, ind, dep) = match policy {
            Some((t, a)) => biased_move(&p, &list, t, a, rng),
            None => {
                let m = list.as_slice()[rng.below(list.len())];
                let (ind, dep) = features(&p, &AttackInfo::new(&p), m);
                (m, ind, dep)
            }
        };
        let ply = ((p.ply as usize).saturating_sub(1)).min(TABLE_PLIES - 1);
        rec[i] = (ind as u16, dep as u16, ply as u8, p.side as u8);
        let x = p.board[m.to()];
        if x != EMPTY && kind_of(x) == LION {
            return (i + 1, Some(p.side));
        }
        p.do_move(m);
    }
    (PLAYOUT_MAX_PLIES as usize, None)
}

/// A playout guided by the tables. Returns the winner (None = draw by the ply limit).
pub fn improved_playout(pos: &Position, t: &FeatureTables, alpha: f32, rng: &mut Rng) -> Option<Color> {
    playout_with(pos, rng, |p, list, rng| biased_move(p, list, t, alpha, rng).0)
}

/// The sharpening α for a playout budget: 0.4 at 10² playouts, +0.1 per factor of ten,
/// within 0.2..=0.8 (so 0.4, 0.5, 0.6, 0.7 at 10², 10³, 10⁴, 10⁵).
pub fn alpha_for(playouts: u64) -> f32 {
    (0.2 + 0.1 * (playouts.max(1) as f32).log10()).clamp(0.2, 0.8)
}

/// Which Monte Carlo player.
#[derive(Clone, Copy, Debug)]
pub enum McKind<'a> {
    Primitive,
    /// Playouts biased by `tables`, sharpened by `alpha` (`alpha_for` gives the default).
    Improved {
        tables: &'a FeatureTables,
        alpha: f32,
    },
}

/// Runs about `playouts` playouts in all (spread evenly over the legal moves, in parallel)
/// and returns each move with its win rate for the side to move, best first.
pub fn evaluate_moves(pos: &Position, kind: McKind, playouts: u64, seed: u64) -> Vec<(Move, f64)> {
    let mut list = MoveList::new();
    super::movegen::legal_moves(pos, &mut list);
    if list.is_empty() {
        return vec![];
    }
    let per_move = (playouts / list.len() as u64).max(1);
    let chunk = 32u64;
    let tasks: Vec<(usize, u64)> =
        (0..list.len()).flat_map(|i| (0..per_move.div_ceil(chunk)).map(move |c| (i, c))).collect();
    let root = pos.side;
    let sums: Vec<(usize, f64)> = tasks
        .par_iter()
        .map(|&(i, c)| {
            let m = list.as_slice()[i];
            let mut child = *pos;
            child.do_move(m);
            let mut rng = Rng::new(seed ^ ((i as u64) << 40) ^ c.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let n = chunk.min(per_move - c * chunk);
            let mut s = 0.0;
            for _ in 0..n {
                let w = match kind {
                    McKind::Primitive => uniform_playout(&child, &mut rng),
                    McKind::Improved { tables, alpha } => improved_playout(&child, tables, alpha, &mut rng),
                };
                s += score_for(w, root);
            }
            (i, s)
        })
        .collect();
    let mut total = vec![0.0; list.len()];
    for (i, s) in sums {
        total[i] += s;
    }
    let mut out: Vec<(Move, f64)> =
        list.as_slice().iter().zip(total).map(|(&m, s)| (m, s / per_move as f64)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// The win rate of the position for the side to move (best move's rate) and the move.
pub fn choose(pos: &Position, kind: McKind, playouts: u64, seed: u64) -> Option<(Move, f64)> {
    evaluate_moves(pos, kind, playouts, seed).first().copied()
}
