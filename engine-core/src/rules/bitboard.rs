//! 81-square bitboards in one `u128`: bit `sq.index()`, so each file is 9 contiguous bits.

use super::types::{Color, Square};
use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, BitXor, BitXorAssign, Not};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Bitboard(pub u128);

const ALL_BITS: u128 = (1u128 << 81) - 1;

/// `1 << i` for every index a square's 7 bits can hold: one load, where a variable
/// 128-bit shift takes five or six instructions.
const SQUARE_BITS: [u128; 128] = {
    let mut t = [0u128; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = 1 << i;
        i += 1;
    }
    t
};

#[inline]
const fn square_bit(sq: Square) -> u128 {
    SQUARE_BITS[sq.index() & 127]
}

impl Bitboard {
    pub const EMPTY: Bitboard = Bitboard(0);
    pub const ALL: Bitboard = Bitboard(ALL_BITS);

    #[inline]
    pub const fn from_square(sq: Square) -> Bitboard {
        Bitboard(square_bit(sq))
    }

    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    #[inline]
    pub const fn any(self) -> bool {
        self.0 != 0
    }

    /// Whether `sq` is set. It shifts one 64-bit half, not the whole `u128`: a variable
    /// 128-bit shift takes about twice the instructions, and this test is in every hot loop.
    #[inline]
    pub const fn contains(self, sq: Square) -> bool {
        let i = sq.index();
        let half = if i < 64 { self.0 as u64 } else { (self.0 >> 64) as u64 };
        (half >> (i & 63)) & 1 != 0
    }

    #[inline]
    pub const fn count(self) -> u32 {
        self.0.count_ones()
    }

    #[inline]
    pub fn set(&mut self, sq: Square) {
        self.0 |= square_bit(sq);
    }

    #[inline]
    pub fn clear(&mut self, sq: Square) {
        self.0 &= !square_bit(sq);
    }

    #[inline]
    pub fn toggle(&mut self, sq: Square) {
        self.0 ^= square_bit(sq);
    }

    /// Lowest square; the board must not be empty.
    #[inline]
    pub fn lsb(self) -> Square {
        debug_assert!(self.0 != 0);
        Square::from_index(self.0.trailing_zeros() as usize)
    }

    #[inline]
    pub fn pop(&mut self) -> Square {
        let sq = self.lsb();
        self.0 &= self.0 - 1;
        sq
    }

    /// More than one square set.
    #[inline]
    pub const fn more_than_one(self) -> bool {
        self.0 & self.0.wrapping_sub(1) != 0
    }

    #[inline]
    pub const fn and_not(self, other: Bitboard) -> Bitboard {
        Bitboard(self.0 & !other.0)
    }

    /// All squares of file `file` (0-based).
    #[inline]
    pub const fn file_mask(file: u8) -> Bitboard {
        Bitboard(0x1ffu128 << (file as u32 * 9))
    }

    /// All squares of rank `rank` (0-based).
    pub const fn rank_mask(rank: u8) -> Bitboard {
        let mut bits = 0u128;
        let mut f = 0;
        while f < 9 {
            bits |= 1u128 << (f * 9 + rank as u32);
            f += 1;
        }
        Bitboard(bits)
    }

    /// The three ranks where `color` promotes (the opponent's camp).
    #[inline]
    pub const fn promotion_zone(color: Color) -> Bitboard {
        match color {
            Color::Black => Bitboard(RANKS_ABC),
            Color::White => Bitboard(RANKS_GHI),
        }
    }

    /// Ranks from which a `color` piece whose step reaches `depth` ranks forward can never
    /// move again: depth 1 = last rank (pawn, lance), 2 = last two (knight).
    #[inline]
    pub const fn dead_ranks(color: Color, depth: u8) -> Bitboard {
        match (color, depth) {
            (Color::Black, 1) => Bitboard(RANK_A),
            (Color::Black, _) => Bitboard(RANK_A | RANK_B),
            (Color::White, 1) => Bitboard(RANK_I),
            (Color::White, _) => Bitboard(RANK_I | RANK_H),
        }
    }

    pub fn iter(self) -> BitboardIter {
        BitboardIter(self.0)
    }
}

const RANK_A: u128 = Bitboard::rank_mask(0).0;
const RANK_B: u128 = Bitboard::rank_mask(1).0;
const RANK_H: u128 = Bitboard::rank_mask(7).0;
const RANK_I: u128 = Bitboard::rank_mask(8).0;
const RANKS_ABC: u128 = RANK_A | RANK_B | Bitboard::rank_mask(2).0;
const RANKS_GHI: u128 = Bitboard::rank_mask(6).0 | RANK_H | RANK_I;

pub struct BitboardIter(u128);

impl Iterator for BitboardIter {
    type Item = Square;
    #[inline]
    fn next(&mut self) -> Option<Square> {
        if self.0 == 0 {
            return None;
        }
        let sq = Square::from_index(self.0.trailing_zeros() as usize);
        self.0 &= self.0 - 1;
        Some(sq)
    }
}

impl IntoIterator for Bitboard {
    type Item = Square;
    type IntoIter = BitboardIter;
    fn into_iter(self) -> BitboardIter {
        self.iter()
    }
}

impl BitAnd for Bitboard {
    type Output = Bitboard;
    #[inline]
    fn bitand(self, rhs: Bitboard) -> Bitboard {
        Bitboard(self.0 & rhs.0)
    }
}
impl BitOr for Bitboard {
    type Output = Bitboard;
    #[inline]
    fn bitor(self, rhs: Bitboard) -> Bitboard {
        Bitboard(self.0 | rhs.0)
    }
}
impl BitXor for Bitboard {
    type Output = Bitboard;
    #[inline]
    fn bitxor(self, rhs: Bitboard) -> Bitboard {
        Bitboard(self.0 ^ rhs.0)
    }
}
impl Not for Bitboard {
    type Output = Bitboard;
    #[inline]
    fn not(self) -> Bitboard {
        Bitboard(!self.0 & ALL_BITS)
    }
}
impl BitAndAssign for Bitboard {
    #[inline]
    fn bitand_assign(&mut self, rhs: Bitboard) {
        self.0 &= rhs.0;
    }
}
impl BitOrAssign for Bitboard {
    #[inline]
    fn bitor_assign(&mut self, rhs: Bitboard) {
        self.0 |= rhs.0;
    }
}
impl BitXorAssign for Bitboard {
    #[inline]
    fn bitxor_assign(&mut self, rhs: Bitboard) {
        self.0 ^= rhs.0;
    }
}

impl std::fmt::Debug for Bitboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "Bitboard(")?;
        for rank in 0..9 {
            for file in (0..9).rev() {
                let c = if self.contains(Square::new(file, rank)) { '*' } else { '.' };
                write!(f, "{c}")?;
            }
            writeln!(f)?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_have_expected_sizes() {
        assert_eq!(Bitboard::ALL.count(), 81);
        assert_eq!(Bitboard::file_mask(4).count(), 9);
        assert_eq!(Bitboard::rank_mask(8).count(), 9);
        assert_eq!(Bitboard::promotion_zone(Color::White).count(), 27);
        assert!(Bitboard::promotion_zone(Color::Black).contains(Square::new(3, 2)));
        assert!(!Bitboard::promotion_zone(Color::Black).contains(Square::new(3, 3)));
        assert_eq!(Bitboard::dead_ranks(Color::White, 2).count(), 18);
        assert!((!Bitboard::EMPTY) == Bitboard::ALL);
    }

    /// Membership, set, clear and toggle agree with the plain bit arithmetic on every
    /// square, on both sides of the 64-bit halves' boundary.
    #[test]
    fn square_operations_match_bit_arithmetic() {
        let mut x: u128 = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834;
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b = Bitboard(x & ALL_BITS);
            for i in 0..81 {
                let sq = Square::from_index(i);
                assert_eq!(b.contains(sq), (b.0 >> i) & 1 == 1, "{b:?} {i}");
                assert_eq!(Bitboard::from_square(sq).0, 1u128 << i);
                let (mut set, mut cleared, mut toggled) = (b, b, b);
                set.set(sq);
                cleared.clear(sq);
                toggled.toggle(sq);
                assert_eq!(set.0, b.0 | 1u128 << i);
                assert_eq!(cleared.0, b.0 & !(1u128 << i));
                assert_eq!(toggled.0, b.0 ^ 1u128 << i);
            }
        }
    }

    #[test]
    fn pop_iterates_in_square_order() {
        let mut b = Bitboard::from_square(Square::new(8, 8)) | Bitboard::from_square(Square::new(0, 3));
        assert!(b.more_than_one());
        assert_eq!(b.pop(), Square::new(0, 3));
        assert_eq!(b.pop(), Square::new(8, 8));
        assert!(b.is_empty());
    }
}
