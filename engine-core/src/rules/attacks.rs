//! Attack tables: step pieces by lookup, sliders by line occupancy index.
//!
//! Each sliding line (file, rank, two diagonals) has at most 7 inner squares. Their
//! occupancy is gathered into a 7-bit index: a file's squares are contiguous bits, and
//! the other lines are evenly spaced bits (stride 9, 10 or 8) that one multiplication
//! moves to the top 7 bits without carries (all partial products land on distinct bits).
//! Each index selects a precomputed attack set, so a slider costs a shift, an AND, a
//! multiply and a load — no magic numbers to search for.

use super::bitboard::Bitboard;
use super::types::{Color, Piece, PieceType, Square};
use std::sync::LazyLock;

const RANK_GATHER: u64 = gather_mask(9);
const DIAG_GATHER_MUL: u64 = gather_mul(10);
const ANTI_GATHER_MUL: u64 = gather_mul(8);
const RANK_GATHER_MUL: u64 = gather_mul(9);

/// Bits 0, s, 2s, ... 6s.
const fn gather_mask(stride: u32) -> u64 {
    let mut m = 0u64;
    let mut k = 0;
    while k < 7 {
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

pub struct AttackTables {
    /// [color][piece type][square] for pawn, knight, silver, gold, king (other entries empty).
    step: [[[Bitboard; 81]; 16]; 2],
    file: Vec<[Bitboard; 128]>,
    rank: Vec<[Bitboard; 128]>,
    diag: Vec<[Bitboard; 128]>,
    anti: Vec<[Bitboard; 128]>,
    diag_shift: [u32; 81],
    diag_mask: [u64; 81],
    anti_shift: [u32; 81],
    anti_mask: [u64; 81],
    /// Squares in front of a square from `color`'s view, to the board edge.
    forward: [[Bitboard; 81]; 2],
    between: Vec<[Bitboard; 81]>,
    line: Vec<[Bitboard; 81]>,
    /// Rook and bishop attacks on an empty board: a quick "could a slider matter?" test.
    rook_empty: [Bitboard; 81],
    bishop_empty: [Bitboard; 81],
}

static TABLES: LazyLock<Box<AttackTables>> = LazyLock::new(build_tables);

#[inline]
fn tables() -> &'static AttackTables {
    &TABLES
}

/// Forces table construction (useful before timing).
pub fn init() {
    let _ = tables();
}

fn on_board(f: i32, r: i32) -> bool {
    (0..9).contains(&f) && (0..9).contains(&r)
}

fn step_targets(sq: Square, deltas: &[(i32, i32)], color: Color) -> Bitboard {
    let mut b = Bitboard::EMPTY;
    let sign = if color == Color::Black { 1 } else { -1 };
    for &(df, dr) in deltas {
        let f = sq.file() as i32 + df;
        let r = sq.rank() as i32 + dr * sign;
        if on_board(f, r) {
            b.set(Square::new(f as u8, r as u8));
        }
    }
    b
}

fn ray(sq: Square, df: i32, dr: i32, occ: Bitboard) -> Bitboard {
    let mut b = Bitboard::EMPTY;
    let (mut f, mut r) = (sq.file() as i32 + df, sq.rank() as i32 + dr);
    while on_board(f, r) {
        let s = Square::new(f as u8, r as u8);
        b.set(s);
        if occ.contains(s) {
            break;
        }
        f += df;
        r += dr;
    }
    b
}

fn slider_rays(sq: Square, dirs: &[(i32, i32)]) -> Bitboard {
    dirs.iter().fold(Bitboard::EMPTY, |acc, &(df, dr)| acc | ray(sq, df, dr, Bitboard::EMPTY))
}

/// Squares of the line through `sq` in direction (df, dr), both ways, excluding `sq`.
fn line_squares(sq: Square, df: i32, dr: i32) -> Vec<Square> {
    let mut v = Vec::new();
    for sign in [-1, 1] {
        let (mut f, mut r) = (sq.file() as i32 + df * sign, sq.rank() as i32 + dr * sign);
        while on_board(f, r) {
            v.push(Square::new(f as u8, r as u8));
            f += df * sign;
            r += dr * sign;
        }
    }
    v
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
fn diag_index(t: &AttackTables, sq: Square, occ: Bitboard) -> usize {
    let i = sq.index();
    let gathered = ((occ.0 >> t.diag_shift[i]) as u64) & t.diag_mask[i];
    (gathered.wrapping_mul(DIAG_GATHER_MUL) >> 57) as usize
}

#[inline]
fn anti_index(t: &AttackTables, sq: Square, occ: Bitboard) -> usize {
    let i = sq.index();
    let gathered = ((occ.0 >> t.anti_shift[i]) as u64) & t.anti_mask[i];
    (gathered.wrapping_mul(ANTI_GATHER_MUL) >> 57) as usize
}

/// Fills one slider table by enumerating every occupancy of the line's squares; panics if
/// two occupancies with different attacks share an index (the gather would be wrong).
fn fill_line_table(
    table: &mut [[Bitboard; 128]],
    line: impl Fn(Square) -> (Vec<Square>, (i32, i32)),
    index: impl Fn(Square, Bitboard) -> usize,
) {
    for sq in Square::all() {
        let (mut squares, (df, dr)) = line(sq);
        // The slider's own square may or may not be occupied in a query (attacks *to* an
        // empty square use the same tables), and it must not change the result.
        squares.push(sq);
        let mut seen = [None::<Bitboard>; 128];
        debug_assert!(squares.len() <= 9);
        for subset in 0u32..(1 << squares.len()) {
            let mut occ = Bitboard::EMPTY;
            for (k, s) in squares.iter().enumerate() {
                if subset >> k & 1 != 0 {
                    occ.set(*s);
                }
            }
            let att = ray(sq, df, dr, occ) | ray(sq, -df, -dr, occ);
            let idx = index(sq, occ);
            if let Some(prev) = seen[idx] {
                assert_eq!(prev, att, "slider index collision at {sq}");
            }
            seen[idx] = Some(att);
            table[sq.index()][idx] = att;
        }
    }
}

fn build_tables() -> Box<AttackTables> {
    let mut t = Box::new(AttackTables {
        step: [[[Bitboard::EMPTY; 81]; 16]; 2],
        file: vec![[Bitboard::EMPTY; 128]; 81],
        rank: vec![[Bitboard::EMPTY; 128]; 81],
        diag: vec![[Bitboard::EMPTY; 128]; 81],
        anti: vec![[Bitboard::EMPTY; 128]; 81],
        diag_shift: [0; 81],
        diag_mask: [0; 81],
        anti_shift: [0; 81],
        anti_mask: [0; 81],
        forward: [[Bitboard::EMPTY; 81]; 2],
        between: vec![[Bitboard::EMPTY; 81]; 81],
        line: vec![[Bitboard::EMPTY; 81]; 81],
        rook_empty: [Bitboard::EMPTY; 81],
        bishop_empty: [Bitboard::EMPTY; 81],
    });
    // Deltas from Black's view: rank -1 is forward.
    let pawn = [(0, -1)];
    let knight = [(-1, -2), (1, -2)];
    let silver = [(0, -1), (-1, -1), (1, -1), (-1, 1), (1, 1)];
    let gold = [(0, -1), (-1, -1), (1, -1), (-1, 0), (1, 0), (0, 1)];
    let king = [(0, -1), (-1, -1), (1, -1), (-1, 0), (1, 0), (0, 1), (-1, 1), (1, 1)];
    for color in Color::ALL {
        for sq in Square::all() {
            let c = color.index();
            let i = sq.index();
            t.step[c][PieceType::Pawn.index()][i] = step_targets(sq, &pawn, color);
            t.step[c][PieceType::Knight.index()][i] = step_targets(sq, &knight, color);
            t.step[c][PieceType::Silver.index()][i] = step_targets(sq, &silver, color);
            t.step[c][PieceType::Gold.index()][i] = step_targets(sq, &gold, color);
            t.step[c][PieceType::King.index()][i] = step_targets(sq, &king, color);
            let dr = if color == Color::Black { -1 } else { 1 };
            t.forward[c][i] = ray(sq, 0, dr, Bitboard::EMPTY);
        }
    }
    for sq in Square::all() {
        let (f, r) = (sq.file() as u32, sq.rank() as u32);
        let i = sq.index();
        // Diagonal (file+1, rank+1): index stride 10.
        let m = f.min(r);
        let start = i as u32 - 10 * m;
        let len = 9 - f.abs_diff(r);
        t.diag_shift[i] = start + 10;
        t.diag_mask[i] = if len >= 3 { gather_mask(10) & ((1u64 << (10 * (len - 3) + 1)) - 1) } else { 0 };
        // Anti-diagonal (file+1, rank-1): index stride 8.
        let m = f.min(8 - r);
        let start = i as u32 - 8 * m;
        let (fs, rs) = (f - m, r + m);
        let len = (9 - fs).min(rs + 1);
        t.anti_shift[i] = start + 8;
        t.anti_mask[i] = if len >= 3 { gather_mask(8) & ((1u64 << (8 * (len - 3) + 1)) - 1) } else { 0 };
    }
    let mut file = std::mem::take(&mut t.file);
    fill_line_table(&mut file, |sq| (line_squares(sq, 0, 1), (0, 1)), file_index);
    t.file = file;
    let mut rank = std::mem::take(&mut t.rank);
    fill_line_table(&mut rank, |sq| (line_squares(sq, 1, 0), (1, 0)), rank_index);
    t.rank = rank;
    let mut diag = std::mem::take(&mut t.diag);
    fill_line_table(&mut diag, |sq| (line_squares(sq, 1, 1), (1, 1)), |sq, o| diag_index(&t, sq, o));
    t.diag = diag;
    let mut anti = std::mem::take(&mut t.anti);
    fill_line_table(&mut anti, |sq| (line_squares(sq, 1, -1), (1, -1)), |sq, o| anti_index(&t, sq, o));
    t.anti = anti;
    for sq in Square::all() {
        t.rook_empty[sq.index()] = slider_rays(sq, &[(0, 1), (0, -1), (1, 0), (-1, 0)]);
        t.bishop_empty[sq.index()] = slider_rays(sq, &[(1, 1), (-1, -1), (1, -1), (-1, 1)]);
    }
    for a in Square::all() {
        for (df, dr) in [(0, 1), (1, 0), (1, 1), (1, -1)] {
            let full = line_squares(a, df, dr);
            for sign in [-1, 1] {
                let (mut f, mut r) = (a.file() as i32 + df * sign, a.rank() as i32 + dr * sign);
                let mut between = Bitboard::EMPTY;
                while on_board(f, r) {
                    let b = Square::new(f as u8, r as u8);
                    t.between[a.index()][b.index()] = between;
                    let mut l = Bitboard::from_square(a);
                    for s in &full {
                        l.set(*s);
                    }
                    t.line[a.index()][b.index()] = l;
                    between.set(b);
                    f += df * sign;
                    r += dr * sign;
                }
            }
        }
    }
    t
}

/// Attacks of a step piece (pawn, knight, silver, gold, king) of `color` from `sq`.
#[inline]
pub fn step_attacks(color: Color, pt: PieceType, sq: Square) -> Bitboard {
    tables().step[color.index()][pt.index()][sq.index()]
}

#[inline]
pub fn pawn_attacks(color: Color, sq: Square) -> Bitboard {
    tables().step[color.index()][PieceType::Pawn.index()][sq.index()]
}

#[inline]
pub fn knight_attacks(color: Color, sq: Square) -> Bitboard {
    tables().step[color.index()][PieceType::Knight.index()][sq.index()]
}

#[inline]
pub fn silver_attacks(color: Color, sq: Square) -> Bitboard {
    tables().step[color.index()][PieceType::Silver.index()][sq.index()]
}

#[inline]
pub fn gold_attacks(color: Color, sq: Square) -> Bitboard {
    tables().step[color.index()][PieceType::Gold.index()][sq.index()]
}

#[inline]
pub fn king_attacks(sq: Square) -> Bitboard {
    tables().step[0][PieceType::King.index()][sq.index()]
}

#[inline]
pub fn file_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    tables().file[sq.index()][file_index(sq, occ)]
}

#[inline]
pub fn lance_attacks(color: Color, sq: Square, occ: Bitboard) -> Bitboard {
    let t = tables();
    t.file[sq.index()][file_index(sq, occ)] & t.forward[color.index()][sq.index()]
}

#[inline]
pub fn rook_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    let t = tables();
    t.file[sq.index()][file_index(sq, occ)] | t.rank[sq.index()][rank_index(sq, occ)]
}

#[inline]
pub fn bishop_attacks(sq: Square, occ: Bitboard) -> Bitboard {
    let t = tables();
    t.diag[sq.index()][diag_index(t, sq, occ)] | t.anti[sq.index()][anti_index(t, sq, occ)]
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
    tables().rook_empty[sq.index()]
}

/// Bishop attacks on an empty board.
#[inline]
pub fn bishop_empty_attacks(sq: Square) -> Bitboard {
    tables().bishop_empty[sq.index()]
}

/// Squares a lance of `color` on `sq` could reach on an empty board.
#[inline]
pub fn forward_ray(color: Color, sq: Square) -> Bitboard {
    tables().forward[color.index()][sq.index()]
}

/// Squares strictly between two squares on a common line; empty if not aligned.
#[inline]
pub fn between(a: Square, b: Square) -> Bitboard {
    tables().between[a.index()][b.index()]
}

/// The whole line through two aligned squares (both included); empty if not aligned.
#[inline]
pub fn line_through(a: Square, b: Square) -> Bitboard {
    tables().line[a.index()][b.index()]
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
        dirs.iter().fold(Bitboard::EMPTY, |acc, &(df, dr)| acc | ray(sq, df, dr, occ))
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
            assert_eq!(rook_attacks(sq, occ), slow_slider(sq, occ, &[(0, 1), (0, -1), (1, 0), (-1, 0)]));
            assert_eq!(bishop_attacks(sq, occ), slow_slider(sq, occ, &[(1, 1), (-1, -1), (1, -1), (-1, 1)]));
            assert_eq!(lance_attacks(Color::Black, sq, occ), slow_slider(sq, occ, &[(0, -1)]));
            assert_eq!(lance_attacks(Color::White, sq, occ), slow_slider(sq, occ, &[(0, 1)]));
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
