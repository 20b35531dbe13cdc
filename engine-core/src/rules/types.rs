//! Basic value types: colours, squares, piece types, pieces, hands and moves.
//!
//! Numbering follows the ecosystem (see `shared/spec/formats.md`) so that conversions to
//! PackedSfen, Move16 and BonaPiece are plain arithmetic.

use std::fmt;

/// Side: Black (sente) moves first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Color {
    Black = 0,
    White = 1,
}

impl Color {
    pub const ALL: [Color; 2] = [Color::Black, Color::White];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub const fn opponent(self) -> Color {
        match self {
            Color::Black => Color::White,
            Color::White => Color::Black,
        }
    }

    #[inline]
    pub const fn from_index(i: usize) -> Color {
        if i == 0 { Color::Black } else { Color::White }
    }
}

impl std::ops::Not for Color {
    type Output = Color;
    #[inline]
    fn not(self) -> Color {
        self.opponent()
    }
}

/// A square, `index = (file - 1) * 9 + (rank - 1)`: USI "1a" = 0, "9i" = 80.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

impl Square {
    pub const NUM: usize = 81;

    /// `file` and `rank` are 0-based (file 0 is USI file '1', rank 0 is 'a').
    #[inline]
    pub const fn new(file: u8, rank: u8) -> Square {
        debug_assert!(file < 9 && rank < 9);
        Square(file * 9 + rank)
    }

    #[inline]
    pub const fn from_index(index: usize) -> Square {
        debug_assert!(index < 81);
        Square(index as u8)
    }

    /// Checked constructor for untrusted input.
    #[inline]
    pub const fn try_from_index(index: usize) -> Option<Square> {
        if index < 81 { Some(Square(index as u8)) } else { None }
    }

    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// 0-based file (0 = USI file '1').
    #[inline]
    pub const fn file(self) -> u8 {
        self.0 / 9
    }

    /// 0-based rank (0 = USI rank 'a', Black's far side).
    #[inline]
    pub const fn rank(self) -> u8 {
        self.0 % 9
    }

    /// 180-degree rotation.
    #[inline]
    pub const fn inverse(self) -> Square {
        Square(80 - self.0)
    }

    /// Rank seen from `color`'s side: 0 is the rank farthest from `color`.
    #[inline]
    pub const fn relative_rank(self, color: Color) -> u8 {
        match color {
            Color::Black => self.rank(),
            Color::White => 8 - self.rank(),
        }
    }

    pub fn all() -> impl Iterator<Item = Square> {
        (0..81u8).map(Square)
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.file() + 1, (b'a' + self.rank()) as char)
    }
}

/// Piece kinds with the ecosystem's numbering (PAWN = 1 ... KING = 8, promoted = base + 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum PieceType {
    Pawn = 1,
    Lance = 2,
    Knight = 3,
    Silver = 4,
    Bishop = 5,
    Rook = 6,
    Gold = 7,
    King = 8,
    ProPawn = 9,
    ProLance = 10,
    ProKnight = 11,
    ProSilver = 12,
    Horse = 13,
    Dragon = 14,
}

impl PieceType {
    pub const ALL: [PieceType; 14] = [
        PieceType::Pawn,
        PieceType::Lance,
        PieceType::Knight,
        PieceType::Silver,
        PieceType::Bishop,
        PieceType::Rook,
        PieceType::Gold,
        PieceType::King,
        PieceType::ProPawn,
        PieceType::ProLance,
        PieceType::ProKnight,
        PieceType::ProSilver,
        PieceType::Horse,
        PieceType::Dragon,
    ];

    /// Kinds that can be held in hand, in the ecosystem's hand order (P, L, N, S, G, B, R).
    pub const HAND: [PieceType; 7] = [
        PieceType::Pawn,
        PieceType::Lance,
        PieceType::Knight,
        PieceType::Silver,
        PieceType::Gold,
        PieceType::Bishop,
        PieceType::Rook,
    ];

    #[inline]
    pub const fn from_u8(v: u8) -> Option<PieceType> {
        if v >= 1 && v <= 14 {
            // SAFETY: repr(u8) enum with contiguous discriminants 1..=14, checked above.
            Some(unsafe { std::mem::transmute::<u8, PieceType>(v) })
        } else {
            None
        }
    }

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub const fn is_promoted(self) -> bool {
        self as u8 >= 9
    }

    #[inline]
    pub const fn can_promote(self) -> bool {
        matches!(
            self,
            PieceType::Pawn
                | PieceType::Lance
                | PieceType::Knight
                | PieceType::Silver
                | PieceType::Bishop
                | PieceType::Rook
        )
    }

    /// The promoted form; only meaningful when `can_promote()`.
    #[inline]
    pub const fn promote(self) -> PieceType {
        match self {
            PieceType::Pawn => PieceType::ProPawn,
            PieceType::Lance => PieceType::ProLance,
            PieceType::Knight => PieceType::ProKnight,
            PieceType::Silver => PieceType::ProSilver,
            PieceType::Bishop => PieceType::Horse,
            PieceType::Rook => PieceType::Dragon,
            other => other,
        }
    }

    /// The unpromoted form (what a captured piece becomes in hand).
    #[inline]
    pub const fn unpromote(self) -> PieceType {
        match self {
            PieceType::ProPawn => PieceType::Pawn,
            PieceType::ProLance => PieceType::Lance,
            PieceType::ProKnight => PieceType::Knight,
            PieceType::ProSilver => PieceType::Silver,
            PieceType::Horse => PieceType::Bishop,
            PieceType::Dragon => PieceType::Rook,
            other => other,
        }
    }

    /// Index 0..7 into a hand (P, L, N, S, G, B, R) for an unpromoted non-king kind.
    #[inline]
    pub const fn hand_index(self) -> Option<usize> {
        match self {
            PieceType::Pawn => Some(0),
            PieceType::Lance => Some(1),
            PieceType::Knight => Some(2),
            PieceType::Silver => Some(3),
            PieceType::Gold => Some(4),
            PieceType::Bishop => Some(5),
            PieceType::Rook => Some(6),
            _ => None,
        }
    }

    /// How many of this (unpromoted) kind a full set has.
    pub const fn max_count(self) -> u8 {
        match self.unpromote() {
            PieceType::Pawn => 18,
            PieceType::Lance | PieceType::Knight | PieceType::Silver | PieceType::Gold => 4,
            PieceType::Bishop | PieceType::Rook | PieceType::King => 2,
            _ => 0,
        }
    }

    /// SFEN letter (uppercase, unpromoted base letter).
    pub const fn sfen_char(self) -> char {
        match self.unpromote() {
            PieceType::Pawn => 'P',
            PieceType::Lance => 'L',
            PieceType::Knight => 'N',
            PieceType::Silver => 'S',
            PieceType::Gold => 'G',
            PieceType::Bishop => 'B',
            PieceType::Rook => 'R',
            _ => 'K',
        }
    }

    pub fn from_sfen_char(c: char) -> Option<PieceType> {
        Some(match c.to_ascii_uppercase() {
            'P' => PieceType::Pawn,
            'L' => PieceType::Lance,
            'N' => PieceType::Knight,
            'S' => PieceType::Silver,
            'G' => PieceType::Gold,
            'B' => PieceType::Bishop,
            'R' => PieceType::Rook,
            'K' => PieceType::King,
            _ => return None,
        })
    }
}

/// A coloured piece: `piece_type | color << 4`; 0 is an empty square.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Piece(u8);

impl Piece {
    pub const EMPTY: Piece = Piece(0);

    #[inline]
    pub const fn new(color: Color, pt: PieceType) -> Piece {
        Piece(pt as u8 | ((color as u8) << 4))
    }

    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Raw code 0..=30; used as a table index.
    #[inline]
    pub const fn code(self) -> usize {
        self.0 as usize
    }

    #[inline]
    pub const fn from_code(code: u8) -> Option<Piece> {
        if code == 0 {
            return Some(Piece::EMPTY);
        }
        if code & 0x0f == 0 || code & 0x0f > 14 || code > 0x1e {
            return None;
        }
        Some(Piece(code))
    }

    /// Panics in debug builds when called on an empty square.
    #[inline]
    pub const fn piece_type(self) -> PieceType {
        match PieceType::from_u8(self.0 & 0x0f) {
            Some(pt) => pt,
            None => panic!("piece_type of an empty square"),
        }
    }

    #[inline]
    pub const fn color(self) -> Color {
        if self.0 & 0x10 != 0 { Color::White } else { Color::Black }
    }

    pub fn to_sfen(self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let pt = self.piece_type();
        let mut s = String::new();
        if pt.is_promoted() {
            s.push('+');
        }
        let c = pt.sfen_char();
        s.push(if self.color() == Color::Black { c } else { c.to_ascii_lowercase() });
        s
    }
}

/// Pieces in one side's hand, packed counts (pawn 5 bits, others 3 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Hand(u32);

const HAND_SHIFT: [u32; 7] = [0, 6, 10, 14, 18, 22, 26];
const HAND_MASK: [u32; 7] = [0x1f, 0x7, 0x7, 0x7, 0x7, 0x3, 0x3];

/// The free bit just above each count's field: subtracting a hand with a larger count in
/// some field borrows into that field's bit (`Hand::covers`).
const HAND_BORROWS: u32 = {
    let (mut bits, mut fields, mut i) = (0u32, 0u32, 0);
    while i < 7 {
        bits |= (HAND_MASK[i] + 1) << HAND_SHIFT[i];
        fields |= HAND_MASK[i] << HAND_SHIFT[i];
        i += 1;
    }
    assert!(bits & fields == 0, "every count needs a free bit above its field");
    bits
};

impl Hand {
    pub const EMPTY: Hand = Hand(0);

    #[inline]
    pub const fn count_at(self, hand_index: usize) -> u32 {
        (self.0 >> HAND_SHIFT[hand_index]) & HAND_MASK[hand_index]
    }

    /// Count of an unpromoted kind; 0 for kinds that cannot be in hand.
    #[inline]
    pub const fn count(self, pt: PieceType) -> u32 {
        match pt.hand_index() {
            Some(i) => self.count_at(i),
            None => 0,
        }
    }

    #[inline]
    pub fn add(&mut self, pt: PieceType) {
        let i = pt.hand_index().expect("only unpromoted non-king pieces go in hand");
        debug_assert!(self.count_at(i) < HAND_MASK[i]);
        self.0 += 1 << HAND_SHIFT[i];
    }

    #[inline]
    pub fn remove(&mut self, pt: PieceType) {
        let i = pt.hand_index().expect("only unpromoted non-king pieces go in hand");
        debug_assert!(self.count_at(i) > 0);
        self.0 -= 1 << HAND_SHIFT[i];
    }

    /// Sets a count; `None` when it exceeds what a full set holds.
    pub fn set(&mut self, pt: PieceType, count: u32) -> Option<()> {
        let i = pt.hand_index()?;
        if count > pt.max_count() as u32 {
            return None;
        }
        self.0 = (self.0 & !(HAND_MASK[i] << HAND_SHIFT[i])) | (count << HAND_SHIFT[i]);
        Some(())
    }

    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Total number of pieces in hand.
    pub fn total(self) -> u32 {
        (0..7).map(|i| self.count_at(i)).sum()
    }

    /// Raw packed value (stable within a process; used for hashing tables).
    #[inline]
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// At least as many of every kind as `other` has.
    #[inline]
    pub fn covers(self, other: Hand) -> bool {
        self.0.wrapping_sub(other.0) & HAND_BORROWS == 0
    }
}

/// A move. Bits 0-15 are exactly YaneuraOu's Move16 (to, from or dropped piece type, drop
/// flag, promotion flag); bits 16-20 hold the moving piece so that do_move needs no lookup.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Move(u32);

impl Move {
    pub const NONE: Move = Move(0);
    const DROP_FLAG: u32 = 1 << 14;
    const PROMOTE_FLAG: u32 = 1 << 15;

    #[inline]
    pub const fn new_board(from: Square, to: Square, promote: bool, moved: Piece) -> Move {
        Move(
            to.0 as u32
                | (from.0 as u32) << 7
                | if promote { Self::PROMOTE_FLAG } else { 0 }
                | (moved.0 as u32) << 16,
        )
    }

    #[inline]
    pub const fn new_drop(pt: PieceType, to: Square, color: Color) -> Move {
        Move(to.0 as u32 | (pt as u32) << 7 | Self::DROP_FLAG | (Piece::new(color, pt).0 as u32) << 16)
    }

    #[inline]
    pub const fn is_none(self) -> bool {
        self.0 & 0xffff == 0
    }

    #[inline]
    pub const fn to(self) -> Square {
        Square((self.0 & 0x7f) as u8)
    }

    /// Origin square; meaningless for drops.
    #[inline]
    pub const fn from(self) -> Square {
        Square(((self.0 >> 7) & 0x7f) as u8)
    }

    #[inline]
    pub const fn is_drop(self) -> bool {
        self.0 & Self::DROP_FLAG != 0
    }

    #[inline]
    pub const fn is_promotion(self) -> bool {
        self.0 & Self::PROMOTE_FLAG != 0
    }

    /// Piece type dropped; meaningful only for drops.
    #[inline]
    pub fn drop_piece_type(self) -> PieceType {
        PieceType::from_u8(((self.0 >> 7) & 0x7f) as u8).unwrap_or(PieceType::Pawn)
    }

    /// The moving piece before any promotion.
    #[inline]
    pub const fn moved_piece(self) -> Piece {
        Piece(((self.0 >> 16) & 0x1f) as u8)
    }

    /// The piece standing on `to` after the move.
    #[inline]
    pub const fn moved_piece_after(self) -> Piece {
        let p = self.moved_piece();
        if self.is_promotion() { Piece(p.0 + 8) } else { p }
    }

    /// The 16-bit encoding used by PackedSfenValue.
    #[inline]
    pub const fn to_move16(self) -> u16 {
        (self.0 & 0xffff) as u16
    }

    /// Raw 32-bit value (Move16 in the low half, moving piece above).
    #[inline]
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// USI notation (`7g7f`, `8h2b+`, `P*5e`); `resign` for the null move.
    pub fn to_usi(self) -> String {
        if self.is_none() {
            return "resign".to_string();
        }
        if self.is_drop() {
            format!("{}*{}", self.drop_piece_type().sfen_char(), self.to())
        } else {
            format!("{}{}{}", self.from(), self.to(), if self.is_promotion() { "+" } else { "" })
        }
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Move({})", self.to_usi())
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_usi())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn square_numbering_matches_usi() {
        assert_eq!(Square::new(0, 0).index(), 0);
        assert_eq!(Square::new(0, 0).to_string(), "1a");
        assert_eq!(Square::new(8, 8).index(), 80);
        assert_eq!(Square::new(8, 8).to_string(), "9i");
        assert_eq!(Square::new(6, 6).to_string(), "7g");
        assert_eq!(Square::new(6, 6).inverse(), Square::new(2, 2));
    }

    #[test]
    fn hand_counts_are_independent() {
        let mut h = Hand::EMPTY;
        for _ in 0..18 {
            h.add(PieceType::Pawn);
        }
        h.add(PieceType::Rook);
        h.add(PieceType::Rook);
        h.add(PieceType::Gold);
        assert_eq!(h.count(PieceType::Pawn), 18);
        assert_eq!(h.count(PieceType::Rook), 2);
        assert_eq!(h.count(PieceType::Gold), 1);
        assert_eq!(h.count(PieceType::Bishop), 0);
        h.remove(PieceType::Pawn);
        assert_eq!(h.count(PieceType::Pawn), 17);
        assert_eq!(h.total(), 20);
        assert!(h.set(PieceType::Rook, 3).is_none());
    }

    /// `covers` agrees with comparing every count, over random pairs of hands (many of
    /// them close, where one count decides).
    #[test]
    fn covers_is_every_count_at_least() {
        let mut rng = crate::rules::random_walk::xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = move |bound: u32| (rng() % (bound as u64 + 1)) as u32;
        let (mut covering, mut not) = (0, 0);
        for _ in 0..20_000 {
            let (mut a, mut b) = (Hand::EMPTY, Hand::EMPTY);
            for pt in PieceType::HAND {
                let max = pt.max_count() as u32;
                let n = next(max);
                a.set(pt, n).unwrap();
                // Mostly the same count, sometimes one more or one less, sometimes any.
                let m = match next(3) {
                    0 => next(max),
                    1 => (n + 1).min(max),
                    2 => n.saturating_sub(1),
                    _ => n,
                };
                b.set(pt, m).unwrap();
            }
            let expected = PieceType::HAND.iter().all(|&pt| a.count(pt) >= b.count(pt));
            assert_eq!(a.covers(b), expected, "{:#x} covers {:#x}", a.raw(), b.raw());
            if expected { covering += 1 } else { not += 1 }
        }
        assert!(covering > 1000 && not > 1000, "{covering} covering, {not} not");
    }

    #[test]
    fn move16_layout() {
        let m = Move::new_board(
            Square::new(6, 6),
            Square::new(6, 5),
            false,
            Piece::new(Color::Black, PieceType::Pawn),
        );
        assert_eq!(m.to_usi(), "7g7f");
        assert_eq!(m.to_move16(), (Square::new(6, 5).index() | Square::new(6, 6).index() << 7) as u16);
        let d = Move::new_drop(PieceType::Pawn, Square::new(4, 4), Color::White);
        assert_eq!(d.to_usi(), "P*5e");
        assert_eq!(d.to_move16(), (40 | 1 << 7 | 1 << 14) as u16);
        assert_eq!(d.moved_piece(), Piece::new(Color::White, PieceType::Pawn));
        let p = Move::new_board(
            Square::new(7, 7),
            Square::new(1, 1),
            true,
            Piece::new(Color::Black, PieceType::Bishop),
        );
        assert_eq!(p.to_usi(), "8h2b+");
        assert_eq!(p.moved_piece_after(), Piece::new(Color::Black, PieceType::Horse));
    }
}
