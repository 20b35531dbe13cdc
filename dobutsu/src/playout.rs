//! Random playouts (allocation-free: a fixed move list on the stack), the move features of
//! the improved player, and a small fast RNG.
//!
//! Feature breakdown (the research gives only the ingredients and the 600-entry size):
//! - ply-independent index (600 = 5 × 6 × 5 × 4): moving piece (lion, giraffe, elephant,
//!   chick, hen) × captured piece (none, giraffe, elephant, chick, hen, lion) × origin
//!   class (4 attack classes of the origin square, or 4 = drop) × destination attack class;
//!   an attack class is 2·(opponent attacks the square) + (another own piece defends it);
//! - ply-dependent index (4,680 = 5 × 13 × 12 × 6 per ply): moving piece × origin square
//!   (12 = drop) × destination square × captured piece, squares from the mover's view.

use super::movegen::{MoveList, pseudo_moves};
use super::rules::{ATTACKS, Color, EMPTY, HEN, LION, Move, Position, SQUARES, Status, color_of, kind_of};

/// xorshift64* — fast, deterministic per seed, good enough for playouts.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Mixed so that nearby seeds give unrelated streams; odd, as xorshift needs a
        // non-zero state.
        Rng(engine_core::rng::mix64(seed) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Plies after which a playout counts as a draw.
pub const PLAYOUT_MAX_PLIES: u32 = 200;

pub const IND_SIZE: usize = 600;
pub const DEP_SIZE: usize = 5 * 13 * 12 * 6;

/// Result of a move for the mover: did it end the game with a win?
pub fn wins_at_once(pos: &Position, m: Move) -> bool {
    let x = pos.board[m.to()];
    if x != EMPTY && kind_of(x) == LION {
        return true;
    }
    // A try: own lion to the far rank where the opponent cannot capture it.
    if !m.is_drop() && kind_of(pos.board[m.from()]) == LION {
        let mut p = *pos;
        p.do_move(m);
        return p.status() == Status::Lost;
    }
    false
}

/// Attack masks of both sides, with "attacked at least twice" for own-defender checks.
#[derive(Clone, Copy)]
pub struct AttackInfo {
    once: [u16; 2],
    twice: [u16; 2],
}

impl AttackInfo {
    pub fn new(pos: &Position) -> AttackInfo {
        let mut once = [0u16; 2];
        let mut twice = [0u16; 2];
        for sq in 0..SQUARES {
            let x = pos.board[sq];
            if x != EMPTY {
                let c = color_of(x).index();
                let a = ATTACKS[x as usize][sq];
                twice[c] |= once[c] & a;
                once[c] |= a;
            }
        }
        AttackInfo { once, twice }
    }
}

fn mover_square(sq: usize, c: Color) -> usize {
    if c == Color::Black { sq } else { SQUARES - 1 - sq }
}

fn kind_index(kind: u8) -> usize {
    match kind {
        LION => 0,
        super::rules::GIRAFFE => 1,
        super::rules::ELEPHANT => 2,
        super::rules::CHICK => 3,
        _ => 4, // HEN
    }
}

fn captured_index(cell: u8) -> usize {
    if cell == EMPTY {
        return 0;
    }
    match kind_of(cell) {
        super::rules::GIRAFFE => 1,
        super::rules::ELEPHANT => 2,
        super::rules::CHICK => 3,
        HEN => 4,
        _ => 5, // LION
    }
}

/// (ply-independent index, ply-dependent index within a ply) of a move.
pub fn features(pos: &Position, ai: &AttackInfo, m: Move) -> (usize, usize) {
    let us = pos.side;
    let (u, t) = (us.index(), us.flip().index());
    let to = m.to();
    let captured = captured_index(pos.board[to]);
    let (mk, origin_class, from_v) = if m.is_drop() {
        let kind = super::rules::HAND_KINDS[m.drop_index()];
        (kind_index(kind), 4, 12)
    } else {
        let f = m.from();
        let bit = 1u16 << f;
        let att = (ai.once[t] & bit != 0) as usize;
        let def = (ai.once[u] & bit != 0) as usize;
        (kind_index(kind_of(pos.board[f])), 2 * att + def, mover_square(f, us))
    };
    let tbit = 1u16 << to;
    let mover_hits_to = !m.is_drop() && ATTACKS[pos.board[m.from()] as usize][m.from()] & tbit != 0;
    let def = if mover_hits_to { ai.twice[u] & tbit != 0 } else { ai.once[u] & tbit != 0 } as usize;
    let att = (ai.once[t] & tbit != 0) as usize;
    let dest_class = 2 * att + def;
    let ind = ((mk * 6 + captured) * 5 + origin_class) * 4 + dest_class;
    let dep = ((mk * 13 + from_v) * 12 + mover_square(to, us)) * 6 + captured;
    (ind, dep)
}

/// Outcome of a finished playout from the view of `root` side: 1 win, 0 loss, 0.5 draw.
pub fn score_for(winner: Option<Color>, root: Color) -> f64 {
    match winner {
        None => 0.5,
        Some(c) if c == root => 1.0,
        Some(_) => 0.0,
    }
}

/// A playout from `pos` to the end (or `PLAYOUT_MAX_PLIES`), each move picked by `choose`
/// from the pseudo-legal moves (never empty). Returns the winner (None = draw by the ply
/// limit). Allocates nothing.
#[inline]
pub fn playout_with(
    pos: &Position,
    rng: &mut Rng,
    mut choose: impl FnMut(&Position, &MoveList, &mut Rng) -> Move,
) -> Option<Color> {
    let mut p = *pos;
    let mut list = MoveList::new();
    for _ in 0..PLAYOUT_MAX_PLIES {
        if p.status() == Status::Lost {
            return Some(p.side.flip());
        }
        pseudo_moves(&p, &mut list);
        if list.is_empty() {
            return Some(p.side.flip());
        }
        let m = choose(&p, &list, rng);
        let x = p.board[m.to()];
        if x != EMPTY && kind_of(x) == LION {
            return Some(p.side);
        }
        p.do_move(m);
    }
    None
}

/// A uniform random playout from `pos` to the end (or `PLAYOUT_MAX_PLIES`). Returns the
/// winner (None = draw by the ply limit).
pub fn uniform_playout(pos: &Position, rng: &mut Rng) -> Option<Color> {
    playout_with(pos, rng, |_, list, rng| list.as_slice()[rng.below(list.len())])
}
