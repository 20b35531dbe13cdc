//! Attack tables: step pieces by lookup, sliders by line occupancy index.
//!
//! Each sliding line (file, rank, two diagonals) has at most 7 inner squares. Their
//! occupancy is gathered into a 7-bit index: a file's squares are contiguous bits, and
//! the other lines are evenly spaced bits (stride 9, 10 or 8) that one multiplication
//! moves to the top 7 bits without carries (all partial products land on distinct bits).
//! Each index selects a precomputed attack set, so a slider costs a shift, an AND, a
//! multiply and a load — no magic numbers to search for.
//!
//! The tables are computed at compile time into one `static`, so a lookup is a load from
//! a fixed address: no initialisation check and no pointer to follow on the hot path.

use super::bitboard::Bitboard;
use super::types::{Color, Piece, PieceType, Square};

const RANK_GATHER: u64 = spaced_bits(9, 7);
const DIAG_GATHER_MUL: u64 = gather_mul(10);
const ANTI_GATHER_MUL: u64 = gather_mul(8);
const RANK_GATHER_MUL: u64 = gather_mul(9);

/// Bits 0, s, 2s, ... (count of them).
const fn spaced_bits(stride: u32, count: u32) -> u64 {
    let mut m = 0u64;
    let mut k = 0;
    while k < count {
        m |= 1u64 << (stride * k);
        k += 1;
    }
    m
}

/// Multiplier moving bit `stride*k` to bit `57 + k` for k in 0..7.
const fn gather_mul(stride: u32) -> u64 {
    let mut m = 0u64;
    let mut k = 0;
    while k < 7 {
        m |= 1u64 << (57 + k - stride * k);
        k += 1;
    }
    m
}

/// Attack sets of one kind of line, by square and 7-bit occupancy index.
type LineTable = [[Bitboard; 128]; 81];

struct AttackTables {
    /// [color][piece type][square] for pawn, knight, silver, gold, king (other entries empty).
    step: [[[Bitboard; 81]; 16]; 2],
    file: LineTable,
    rank: LineTable,
    diag: LineTable,
    anti: LineTable,
    diag_shift: [u32; 81],
    diag_mask: [u64; 81],
    anti_shift: [u32; 81],
    anti_mask: [u64; 81],
    /// Squares in front of a square from `color`'s view, to the board edge.
    forward: [[Bitboard; 81]; 2],
    between: [[Bitboard; 81]; 81],
    line: [[Bitboard; 81]; 81],
    /// Rook and bishop attacks on an empty board: a quick "could a slider matter?" test.
    rook_empty: [Bitboard; 81],
    bishop_empty: [Bitboard; 81],
}

static TABLES: AttackTables = build_tables();

const fn on_board(f: i32, r: i32) -> bool {
    0 <= f && f < 9 && 0 <= r && r < 9
}

const fn square_bit(f: i32, r: i32) -> u128 {
    1u128 << (f * 9 + r)
}

const fn file_rank(sq: usize) -> (i32, i32) {
    ((sq / 9) as i32, (sq % 9) as i32)
}

/// Targets of a step piece; deltas are from Black's view (rank -1 is forward) and
/// `forward_sign` -1 turns them round for White.
const fn step_targets(sq: usize, deltas: &[(i32, i32)], forward_sign: i32) -> Bitboard {
    let (f0, r0) = file_rank(sq);
    let mut b = 0u128;
    let mut k = 0;
    while k < deltas.len() {
        let (f, r) = (f0 + deltas[k].0, r0 + deltas[k].1 * forward_sign);
        if on_board(f, r) {
            b |= square_bit(f, r);
        }
        k += 1;
    }
    Bitboard(b)
}

/// Squares from `sq` towards (df, dr), up to and including the first occupied one.
const fn ray(sq: usize, df: i32, dr: i32, occ: u128) -> u128 {
    let (f0, r0) = file_rank(sq);
    let (mut f, mut r) = (f0 + df, r0 + dr);
    let mut b = 0u128;
    while on_board(f, r) {
        let bit = square_bit(f, r);
        b |= bit;
        if occ & bit != 0 {
            break;
        }
        f += df;
        r += dr;
    }
    b
}

/// Fills one slider table. Bit k of a square's occupancy index stands for the board bit
/// `first + stride * k` (the line's inner squares; `count` of them), so every index can
/// be turned back into the occupancy it stands for. Indexes past `count` bits are never
/// formed (the gather masks them out) and stay empty.
const fn fill_line(
    table: &mut LineTable,
    sq: usize,
    (df, dr): (i32, i32),
    (first, stride, count): (u32, u32, u32),
) {
    let mut index = 0usize;
    while index < (1 << count) {
        let mut occ = 0u128;
        let mut k = 0;
        while k < count {
            if index >> k & 1 != 0 {
                occ |= 1u128 << (first + stride * k);
            }
            k += 1;
        }
        table[sq][index] = Bitboard(ray(sq, df, dr, occ) | ray(sq, -df, -dr, occ));
        index += 1;
    }
}

const fn build_tables() -> AttackTables {
    let mut t = AttackTables {
        step: [[[Bitboard::EMPTY; 81]; 16]; 2],
        file: [[Bitboard::EMPTY; 128]; 81],
        rank: [[Bitboard::EMPTY; 128]; 81],
        diag: [[Bitboard::EMPTY; 128]; 81],
        anti: [[Bitboard::EMPTY; 128]; 81],
        diag_shift: [0; 81],
        diag_mask: [0; 81],
        anti_shift: [0; 81],
        anti_mask: [0; 81],
        forward: [[Bitboard::EMPTY; 81]; 2],
        between: [[Bitboard::EMPTY; 81]; 81],
        line: [[Bitboard::EMPTY; 81]; 81],
        rook_empty: [Bitboard::EMPTY; 81],
        bishop_empty: [Bitboard::EMPTY; 81],
    };
    // Deltas from Black's view: rank -1 is forward.
    const PAWN: [(i32, i32); 1] = [(0, -1)];
    const KNIGHT: [(i32, i32); 2] = [(-1, -2), (1, -2)];
    const SILVER: [(i32, i32); 5] = [(0, -1), (-1, -1), (1, -1), (-1, 1), (1, 1)];
    const GOLD: [(i32, i32); 6] = [(0, -1), (-1, -1), (1, -1), (-1, 0), (1, 0), (0, 1)];
    const KING: [(i32, i32); 8] = [(0, -1), (-1, -1), (1, -1), (-1, 0), (1, 0), (0, 1), (-1, 1), (1, 1)];
    let mut i = 0;
    while i < 81 {
        let mut c = 0;
        while c < 2 {
            let sign = if c == Color::Black.index() { 1 } else { -1 };
            t.step[c][PieceType::Pawn.index()][i] = step_targets(i, &PAWN, sign);
            t.step[c][PieceType::Knight.index()][i] = step_targets(i, &KNIGHT, sign);
            t.step[c][PieceType::Silver.index()][i] = step_targets(i, &SILVER, sign);
            t.step[c][PieceType::Gold.index()][i] = step_targets(i, &GOLD, sign);
            t.step[c][PieceType::King.index()][i] = step_targets(i, &KING, sign);
            t.forward[c][i] = Bitboard(ray(i, 0, -sign, 0));
            c += 1;
        }
        let (f, r) = (i as u32 / 9, i as u32 % 9);
        // Diagonal (file+1, rank+1): index stride 10, from the square after the line's first.
        let m = if f < r { f } else { r };
        let len = 9 - f.abs_diff(r);
        let inner = if len >= 3 { len - 2 } else { 0 };
        t.diag_shift[i] = i as u32 - 10 * m + 10;
        t.diag_mask[i] = spaced_bits(10, inner);
        fill_line(&mut t.diag, i, (1, 1), (t.diag_shift[i], 10, inner));
        // Anti-diagonal (file+1, rank-1): index stride 8.
        let m = if f < 8 - r { f } else { 8 - r };
        let (fs, rs) = (f - m, r + m);
        let len = if 9 - fs < rs + 1 { 9 - fs } else { rs + 1 };
        let inner = if len >= 3 { len - 2 } else { 0 };
        t.anti_shift[i] = i as u32 - 8 * m + 8;
        t.anti_mask[i] = spaced_bits(8, inner);
        fill_line(&mut t.anti, i, (1, -1), (t.anti_shift[i], 8, inner));
        fill_line(&mut t.file, i, (0, 1), (f * 9 + 1, 1, 7));
        fill_line(&mut t.rank, i, (1, 0), (r + 9, 9, 7));
        t.rook_empty[i] = Bitboard(ray(i, 0, 1, 0) | ray(i, 0, -1, 0) | ray(i, 1, 0, 0) | ray(i, -1, 0, 0));
        t.bishop_empty[i] =
            Bitboard(ray(i, 1, 1, 0) | ray(i, -1, -1, 0) | ray(i, 1, -1, 0) | ray(i, -1, 1, 0));
        i += 1;
    }
    fill_between_and_line(&mut t);
    t
}

/// For each pair of squares on a common line: the squares strictly between them, and the
/// whole line through both.
const fn fill_between_and_line(t: &mut AttackTables) {
    const DIRECTIONS: [(i32, i32); 4] = [(0, 1), (1, 0), (1, 1), (1, -1)];
    let mut a = 0;
    while a < 81 {
        let (fa, ra) = file_rank(a);
        let mut d = 0;
        while d < 4 {
            let (df, dr) = DIRECTIONS[d];
            let whole = (1u128 << a) | ray(a, df, dr, 0) | ray(a, -df, -dr, 0);
            let mut sign = -1;
            while sign <= 1 {
                let (mut f, mut r) = (fa + df * sign, ra + dr * sign);
                let mut between = 0u128;
                while on_board(f, r) {
                    let b = (f * 9 + r) as usize;
                    t.between[a][b] = Bitboard(between);
                    t.line[a][b] = Bitboard(whole);
                    between |= square_bit(f, r);
                    f += df * sign;
                    r += dr * sign;
                }
                sign += 2;
            }
            d += 1;
        }
        a += 1;
    }
}

#[inline]
fn file_index(sq: Square, occ: Bitboard) -> usize {
    ((occ.0 >> (sq.file() as u32 * 9 + 1)) & 0x7f) as usize
}

#[inline]
fn rank_index(sq: Square, occ: Bitboard) -> usize {
    let gathered = ((occ.0 >> (sq.rank() as u32 + 9)) as u64) & RANK_GATHER;
    (gathered.wrapping_mul(RANK_GATHER_MUL) >> 57) as usize
}

#[inline]
fn diag_index(sq: Square, occ: Bitboard) -> usize {
    let i = sq.index();
    let gathered = ((occ.0 >> TABLES.diag_shift[i]) as u64) & TABLES.diag_mask[i];
    (gathered.wrapping_mul(DIAG_GATHER_MUL) >> 57) as usize
}

#[inline]
fn anti_index(sq: Square, occ: Bitboard) -> usize {
    let i = sq.index();
    let gathered = ((occ.0 >> TABLES.anti_shift[i]) as u64) & TABLES.anti_mask[i];
    (gathered.wrapping_mul(ANTI_GATHER_MUL) >> 57) as usize
}

/// Attacks of a step piece (pawn, knight, silver, gold, king) of `color` from `sq`.
#[inline]
pub fn step_attacks(color: Color, pt: PieceType, sq: Square) -> Bitboard {
    TABLES.step[color.index()][pt.index()][sq.index()]
}

#[inline]
pub fn pawn_attacks(color: Color, sq: Square) -> Bitboard {
    TABLES.step[color.index()][PieceType::Pawn.index()][sq.index()]
}

/// Every square that some pawn of `pawns` (all of `color`) attacks: one shift, since a
/// pawn attacks the next square of its file and a file's squares are contiguous bits.
/// Pawns on their last rank (never legal) are masked so that none wraps into another file.
#[inline]
pub fn pawns_attacks(color: Color, pawns: Bitboard) -> Bitboard {
    let movable = pawns.and_not(Bitboard::dead_ranks(color, 1));
    match color {
        Color::Black => Bitboard(movable.0 >> 1),
        Color::White => Bitboard(movable.0 << 1),
    }
}

#[inline]
pub fn knight_attacks(color: Color, sq: Square) -> Bitboard {
    TABLES.step[color.index()][PieceType::Knight.index()][sq.index()]
}

#[inline]
pub fn silver_attacks(color: Color, sq: Square) -> Bitboard {
    TABLES.step[color.index()][PieceType::Silver.index()][sq.index()]
}

#[inline]
pub fn gold_attacks(color: Color, sq: Square) -> Bitboard {
    TABLES.step[color.index()][PieceType::Gold.index()][sq.index()]
}

#[inline]
pub fn king_attacks(sq: Square) -> Bitboard {
    TABLES.step[0][PieceType::King.index()][sq.index()]
}

#[inline]
pub fn file_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    TABLES.file[sq.index()][file_index(sq, occ)]
}

#[inline]
pub fn lance_attacks(color: Color, sq: Square, occ: Bitboard) -> Bitboard {
    TABLES.file[sq.index()][file_index(sq, occ)] & TABLES.forward[color.index()][sq.index()]
}

#[inline]
pub fn rook_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    TABLES.file[sq.index()][file_index(sq, occ)] | TABLES.rank[sq.index()][rank_index(sq, occ)]
}

#[inline]
pub fn bishop_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    TABLES.diag[sq.index()][diag_index(sq, occ)] | TABLES.anti[sq.index()][anti_index(sq, occ)]
}

#[inline]
pub fn horse_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    bishop_attacks(sq, occ) | king_attacks(sq)
}

#[inline]
pub fn dragon_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    rook_attacks(sq, occ) | king_attacks(sq)
}

/// Rook attacks on an empty board.
#[inline]
pub fn rook_empty_attacks(sq: Square) -> Bitboard {
    TABLES.rook_empty[sq.index()]
}

/// Bishop attacks on an empty board.
#[inline]
pub fn bishop_empty_attacks(sq: Square) -> Bitboard {
    TABLES.bishop_empty[sq.index()]
}

/// Squares a lance of `color` on `sq` could reach on an empty board.
#[inline]
pub fn forward_ray(color: Color, sq: Square) -> Bitboard {
    TABLES.forward[color.index()][sq.index()]
}

/// Squares strictly between two squares on a common line; empty if not aligned.
#[inline]
pub fn between(a: Square, b: Square) -> Bitboard {
    TABLES.between[a.index()][b.index()]
}

/// The whole line through two aligned squares (both included); empty if not aligned.
#[inline]
pub fn line_through(a: Square, b: Square) -> Bitboard {
    TABLES.line[a.index()][b.index()]
}

/// Attacks of any piece from `sq` with the given occupancy.
#[inline]
pub fn attacks_from(piece: Piece, sq: Square, occ: Bitboard) -> Bitboard {
    let color = piece.color();
    match piece.piece_type() {
        PieceType::Pawn => pawn_attacks(color, sq),
        PieceType::Lance => lance_attacks(color, sq, occ),
        PieceType::Knight => knight_attacks(color, sq),
        PieceType::Silver => silver_attacks(color, sq),
        PieceType::Gold
        | PieceType::ProPawn
        | PieceType::ProLance
        | PieceType::ProKnight
        | PieceType::ProSilver => gold_attacks(color, sq),
        PieceType::King => king_attacks(sq),
        PieceType::Bishop => bishop_attacks(sq, occ),
        PieceType::Rook => rook_attacks(sq, occ),
        PieceType::Horse => horse_attacks(sq, occ),
        PieceType::Dragon => dragon_attacks(sq, occ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_slider(sq: Square, occ: Bitboard, dirs: &[(i32, i32)]) -> Bitboard {
        dirs.iter().fold(Bitboard::EMPTY, |acc, &(df, dr)| acc | Bitboard(ray(sq.index(), df, dr, occ.0)))
    }

    /// The one-shift form agrees with the per-square table for single pawns on every square
    /// (none on the last rank, which a pawn never reaches) and for scattered pawn sets.
    #[test]
    fn pawns_attacks_is_the_union_of_pawn_attacks() {
        for color in [Color::Black, Color::White] {
            let dead = Bitboard::dead_ranks(color, 1);
            for sq in Square::all() {
                let expected = if dead.contains(sq) { Bitboard::EMPTY } else { pawn_attacks(color, sq) };
                assert_eq!(pawns_attacks(color, Bitboard::from_square(sq)), expected, "{color:?} {sq:?}");
            }
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..1000 {
                let mut pawns = Bitboard::EMPTY;
                for sq in Square::all() {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    if state >> 61 == 0 {
                        pawns.set(sq);
                    }
                }
                let union = pawns
                    .iter()
                    .filter(|&sq| !dead.contains(sq))
                    .fold(Bitboard::EMPTY, |acc, sq| acc | pawn_attacks(color, sq));
                assert_eq!(pawns_attacks(color, pawns), union);
            }
        }
    }

    /// Every occupancy of every line through every square, the slider's own square
    /// occupied or not: the compile-time tables and the gather indexes agree with a walk.
    #[test]
    fn sliders_match_ray_walk_on_every_line_occupancy() {
        for sq in Square::all() {
            for (df, dr) in [(0, 1), (1, 0), (1, 1), (1, -1)] {
                let dirs = [(df, dr), (-df, -dr)];
                let whole = Bitboard(ray(sq.index(), df, dr, 0) | ray(sq.index(), -df, -dr, 0))
                    | Bitboard::from_square(sq);
                let squares: Vec<Square> = whole.into_iter().collect();
                for subset in 0u32..1 << squares.len() {
                    let mut occ = Bitboard::EMPTY;
                    for (k, s) in squares.iter().enumerate() {
                        if subset >> k & 1 != 0 {
                            occ.set(*s);
                        }
                    }
                    // Pieces off the line must not matter either.
                    let noisy = occ | (Bitboard(0x5555_5555_5555_5555_5555) & Bitboard::ALL).and_not(whole);
                    let slow = slow_slider(sq, occ, &dirs);
                    let fast = match (df, dr) {
                        (0, 1) => file_attacks(sq, noisy),
                        (1, 0) => rook_attacks(sq, noisy) & !file_attacks(sq, noisy),
                        _ => bishop_attacks(sq, noisy) & whole,
                    };
                    assert_eq!(fast, slow, "{sq} line ({df}, {dr}) occupancy {:#x}", occ.0);
                }
            }
        }
    }

    #[test]
    fn sliders_match_ray_walk_on_random_occupancies() {
        let mut x = 0x9E3779B97F4A7C15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let y = x.wrapping_mul(0x2545F4914F6CDD1D);
            let occ =
                Bitboard(((x as u128) << 64 | y as u128) & ((x as u128) << 17 | y as u128)) & Bitboard::ALL;
            let sq = Square::from_index((x % 81) as usize);
            assert_eq!(rook_attacks(sq, occ), slow_slider(sq, occ, &ORTHOGONALS));
            assert_eq!(bishop_attacks(sq, occ), slow_slider(sq, occ, &DIAGONALS));
            assert_eq!(lance_attacks(Color::Black, sq, occ), slow_slider(sq, occ, &[(0, -1)]));
            assert_eq!(lance_attacks(Color::White, sq, occ), slow_slider(sq, occ, &[(0, 1)]));
        }
    }

    const DIAGONALS: [(i32, i32); 4] = [(1, 1), (-1, -1), (1, -1), (-1, 1)];
    const ORTHOGONALS: [(i32, i32); 4] = [(0, 1), (0, -1), (1, 0), (-1, 0)];

    /// `attacks_from` gives each kind's moves as its own attack functions compose them, for
    /// both colours, on every square.
    #[test]
    fn attacks_from_matches_each_kinds_own_attacks() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let y = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let occ =
                Bitboard(((x as u128) << 64 | y as u128) & ((y as u128) << 23 | x as u128)) & Bitboard::ALL;
            for color in [Color::Black, Color::White] {
                for pt in PieceType::ALL {
                    for sq in Square::all() {
                        // Sliders by walking their rays; the rest move like a pawn, knight,
                        // silver, gold or king.
                        let forward = if color == Color::Black { -1 } else { 1 };
                        let expected = match pt {
                            PieceType::Lance => slow_slider(sq, occ, &[(0, forward)]),
                            PieceType::Bishop => slow_slider(sq, occ, &DIAGONALS),
                            PieceType::Rook => slow_slider(sq, occ, &ORTHOGONALS),
                            PieceType::Horse => slow_slider(sq, occ, &DIAGONALS) | king_attacks(sq),
                            PieceType::Dragon => slow_slider(sq, occ, &ORTHOGONALS) | king_attacks(sq),
                            PieceType::ProPawn
                            | PieceType::ProLance
                            | PieceType::ProKnight
                            | PieceType::ProSilver => gold_attacks(color, sq),
                            _ => step_attacks(color, pt, sq),
                        };
                        assert_eq!(
                            attacks_from(Piece::new(color, pt), sq, occ),
                            expected,
                            "{color:?} {pt:?} {sq:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn step_attacks_counts() {
        let center = Square::new(4, 4);
        assert_eq!(king_attacks(center).count(), 8);
        assert_eq!(gold_attacks(Color::Black, center).count(), 6);
        assert_eq!(silver_attacks(Color::Black, center).count(), 5);
        assert_eq!(knight_attacks(Color::Black, center).count(), 2);
        assert!(pawn_attacks(Color::Black, center).contains(Square::new(4, 3)));
        assert!(pawn_attacks(Color::White, center).contains(Square::new(4, 5)));
        assert!(knight_attacks(Color::Black, Square::new(4, 1)).is_empty());
    }

    #[test]
    fn between_and_line() {
        let a = Square::new(0, 0);
        let b = Square::new(4, 4);
        assert_eq!(between(a, b).count(), 3);
        assert_eq!(line_through(a, b).count(), 9);
        assert!(between(a, Square::new(1, 2)).is_empty());
        assert!(line_through(a, Square::new(1, 2)).is_empty());
        assert_eq!(between(Square::new(2, 5), Square::new(7, 5)).count(), 4);
    }
}
