//! PackedSfen: a position in exactly 256 bits, bit-compatible with the ecosystem's format
//! (shared/spec/formats.md, "PackedSfen").
//!
//! Layout, LSB-first bit stream (bit k is bit `k % 8` of byte `k / 8`):
//! 1. side to move (1 bit, 0 = Black);
//! 2. Black king square, White king square (7 bits each);
//! 3. squares 0..80 except the two king squares, each a Huffman code (+ promotion bit unless
//!    gold, + colour bit when not empty);
//! 4. Black's hand then White's hand, order P L N S G B R, one hand code per piece;
//! 5. the piece box (pieces neither on board nor in hand): hand code with promotion bit 1
//!    and colour bit 0; a gold in the box is written as `0x1b` in 5 bits (the silver hand
//!    code with promotion bit 1 and colour bit 1).
//!
//! Every piece of a full set costs the same number of bits wherever it is (board, hand or
//! box), which is why the 256 bits are exactly filled when both kings are on the board.
//!
//! Kings: a king square of 81 means "no king" in the ecosystem, but a position without a
//! king cannot fill the 256 bits with a full set (it has one more square to encode), so
//! neither `pack` nor `unpack` accepts it: the learner needs both kings anyway.
//!
//! Decoding is strict: exactly 256 bits consumed, every piece kind present exactly as
//! often as in one full set (board + hands + box), valid box codes, and
//! `Position::validate()` (no nifu, no piece on a dead rank, side not to move not in check).
//! Hand and box pieces are accepted in any order (as the ecosystem's decoders do); `pack`
//! always writes the canonical order, so `pack(unpack(p))` equals `p` for canonical input.

use crate::rules::{Color, Hand, Piece, PieceType, Position, Square};
use thiserror::Error;

/// A packed position: 32 bytes = 256 bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PackedSfen(pub [u8; 32]);

impl std::fmt::Debug for PackedSfen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedSfen(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// Why a PackedSfen could not be decoded (or a position could not be encoded).
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PackError {
    #[error(
        "PackedSfen: no {0:?} king (king square 81); Keima needs both kings on the board, \
         so this record cannot be used: skip it"
    )]
    MissingKing(Color),
    #[error(
        "PackedSfen: {color:?} king square field is {value} (valid: 0..=80, 81 = no king); \
         the record is corrupt: skip it"
    )]
    KingSquare { color: Color, value: u8 },
    #[error("PackedSfen: both kings on square {0}; the record is corrupt: skip it")]
    SameKingSquare(u8),
    #[error(
        "PackedSfen: the 256 bits ran out while reading {field}; the record is corrupt or \
         not a PackedSfen: skip it"
    )]
    OutOfBits { field: &'static str },
    #[error(
        "PackedSfen: invalid piece-box code ({kind} with promotion bit 1 and colour bit 1; \
         only the silver code may be used that way, meaning a gold); the record is corrupt: skip it"
    )]
    BadBoxCode { kind: char },
    #[error(
        "PackedSfen: {found} pieces of kind {kind} on board, in hands and in the piece box \
         (a full set has exactly {expected}); the record is corrupt: skip it"
    )]
    PieceCount { kind: char, found: u32, expected: u32 },
    #[error("PackedSfen decodes to an illegal position ({0}); skip the record")]
    IllegalPosition(String),
    #[error(
        "cannot pack this position: {0}; PackedSfen needs both kings and at most one full \
         set of pieces"
    )]
    Unpackable(String),
}

/// (code, bit count) of a board square for an unpromoted kind, written LSB-first.
const fn board_code(pt: PieceType) -> (u32, u32) {
    match pt {
        PieceType::Pawn => (0x01, 2),
        PieceType::Lance => (0x03, 4),
        PieceType::Knight => (0x0b, 4),
        PieceType::Silver => (0x07, 4),
        PieceType::Bishop => (0x1f, 6),
        PieceType::Rook => (0x3f, 6),
        PieceType::Gold => (0x0f, 5),
        _ => (0, 1),
    }
}

/// (code, bit count) of a hand piece (the board code without its lowest bit).
const fn hand_code(pt: PieceType) -> (u32, u32) {
    let (c, n) = board_code(pt);
    (c >> 1, n - 1)
}

/// The seven kinds that have codes, in the PackedSfen hand order.
const KINDS: [PieceType; 7] = PieceType::HAND;

struct BitWriter {
    data: [u8; 32],
    pos: usize,
}

impl BitWriter {
    fn write(&mut self, value: u32, bits: u32) -> Result<(), PackError> {
        for i in 0..bits {
            if self.pos >= 256 {
                return Err(PackError::Unpackable("more than 256 bits needed".into()));
            }
            if (value >> i) & 1 != 0 {
                self.data[self.pos / 8] |= 1 << (self.pos % 8);
            }
            self.pos += 1;
        }
        Ok(())
    }
}

struct BitReader<'a> {
    data: &'a [u8; 32],
    pos: usize,
}

impl BitReader<'_> {
    fn bit(&mut self, field: &'static str) -> Result<u32, PackError> {
        if self.pos >= 256 {
            return Err(PackError::OutOfBits { field });
        }
        let b = (self.data[self.pos / 8] >> (self.pos % 8)) & 1;
        self.pos += 1;
        Ok(b as u32)
    }

    fn bits(&mut self, n: u32, field: &'static str) -> Result<u32, PackError> {
        let mut v = 0;
        for i in 0..n {
            v |= self.bit(field)? << i;
        }
        Ok(v)
    }

    /// Reads a Huffman code: `None` = empty square (board only), else the kind.
    fn code(&mut self, hand: bool, field: &'static str) -> Result<Option<PieceType>, PackError> {
        if !hand && self.bit(field)? == 0 {
            return Ok(None);
        }
        // Both code trees are complete, so some kind always matches within 6 bits.
        let (mut code, mut n) = if hand { (0, 0) } else { (1, 1) };
        loop {
            code |= self.bit(field)? << n;
            n += 1;
            for pt in KINDS {
                let (c, b) = if hand { hand_code(pt) } else { board_code(pt) };
                if c == code && b == n {
                    return Ok(Some(pt));
                }
            }
            debug_assert!(n < 6);
        }
    }
}

/// Packs a position with both kings; see [`try_pack`] for positions that may lack one.
///
/// # Panics
/// When the position has no king of either colour or more pieces than one full set:
/// such positions have no PackedSfen encoding.
pub fn pack(pos: &Position) -> PackedSfen {
    match try_pack(pos) {
        Ok(p) => p,
        Err(e) => panic!("{e} ({})", pos.to_sfen()),
    }
}

/// Packs a position; fails when a king is missing or a kind exceeds a full set.
pub fn try_pack(pos: &Position) -> Result<PackedSfen, PackError> {
    let mut w = BitWriter { data: [0; 32], pos: 0 };
    let kings = [pos.king_square(Color::Black), pos.king_square(Color::White)];
    let (Some(bk), Some(wk)) = (kings[0], kings[1]) else {
        return Err(PackError::Unpackable("a king is missing".into()));
    };
    let counts = pos.piece_counts();
    for pt in KINDS {
        if counts[pt.index()] > pt.max_count() as u32 {
            return Err(PackError::Unpackable(format!("too many pieces of kind {}", pt.sfen_char())));
        }
    }
    w.write(pos.side_to_move() as u32, 1)?;
    w.write(bk.index() as u32, 7)?;
    w.write(wk.index() as u32, 7)?;
    for sq in Square::all() {
        if sq == bk || sq == wk {
            continue;
        }
        let p = pos.piece_on(sq);
        if p.is_empty() {
            w.write(0, 1)?;
            continue;
        }
        let pt = p.piece_type();
        if pt == PieceType::King {
            return Err(PackError::Unpackable("more than one king of a colour".into()));
        }
        let base = pt.unpromote();
        let (c, n) = board_code(base);
        w.write(c, n)?;
        if base != PieceType::Gold {
            w.write(pt.is_promoted() as u32, 1)?;
        }
        w.write(p.color() as u32, 1)?;
    }
    for color in Color::ALL {
        let hand = pos.hand(color);
        for pt in KINDS {
            let (c, n) = hand_code(pt);
            for _ in 0..hand.count(pt) {
                w.write(c, n)?;
                if pt != PieceType::Gold {
                    w.write(0, 1)?;
                }
                w.write(color as u32, 1)?;
            }
        }
    }
    for pt in KINDS {
        for _ in counts[pt.index()]..pt.max_count() as u32 {
            if pt == PieceType::Gold {
                w.write(0x1b, 5)?;
            } else {
                let (c, n) = hand_code(pt);
                w.write(c, n)?;
                w.write(1, 1)?;
                w.write(0, 1)?;
            }
        }
    }
    if w.pos != 256 {
        return Err(PackError::Unpackable(format!("encoding used {} bits instead of 256", w.pos)));
    }
    Ok(PackedSfen(w.data))
}

/// Unpacks with move number 1 (the move number is not stored in a PackedSfen).
pub fn unpack(p: &PackedSfen) -> Result<Position, PackError> {
    unpack_with_ply(p, 1)
}

/// Unpacks and sets the SFEN move number to `ply` (clamped to at least 1).
pub fn unpack_with_ply(p: &PackedSfen, ply: u32) -> Result<Position, PackError> {
    let mut r = BitReader { data: &p.0, pos: 0 };
    let mut pos = Position::empty();
    let side = if r.bit("side to move")? == 0 { Color::Black } else { Color::White };
    pos.set_side_to_move(side);
    let mut kings = [0u8; 2];
    for color in Color::ALL {
        let v = r.bits(7, "king square")? as u8;
        match v {
            0..=80 => kings[color.index()] = v,
            81 => return Err(PackError::MissingKing(color)),
            _ => return Err(PackError::KingSquare { color, value: v }),
        }
    }
    if kings[0] == kings[1] {
        return Err(PackError::SameKingSquare(kings[0]));
    }
    for color in Color::ALL {
        pos.put_piece(Square::from_index(kings[color.index()] as usize), Piece::new(color, PieceType::King));
    }
    // counts[kind index in KINDS]: board + hands + box.
    let mut counts = [0u32; 7];
    for i in 0..81u8 {
        if i == kings[0] || i == kings[1] {
            continue;
        }
        let Some(base) = r.code(false, "board squares")? else { continue };
        let promoted = base != PieceType::Gold && r.bit("board squares")? == 1;
        let color = Color::from_index(r.bit("board squares")? as usize);
        let pt = if promoted { base.promote() } else { base };
        pos.put_piece(Square::from_index(i as usize), Piece::new(color, pt));
        counts[base.hand_index().unwrap_or(0)] += 1;
    }
    let mut hands = [[0u32; 7]; 2];
    while r.pos < 256 {
        let base = r.code(true, "hands and piece box")?.unwrap_or(PieceType::Pawn);
        let hi = base.hand_index().unwrap_or(0);
        if base == PieceType::Gold {
            let color = r.bit("hands and piece box")? as usize;
            hands[color][hi] += 1;
            counts[hi] += 1;
            continue;
        }
        let in_box = r.bit("hands and piece box")? == 1;
        let color = r.bit("hands and piece box")? as usize;
        match (in_box, color) {
            (false, c) => hands[c][hi] += 1,
            (true, 0) => {}
            (true, _) if base == PieceType::Silver => {
                counts[PieceType::Gold.hand_index().unwrap_or(0)] += 1;
                continue;
            }
            (true, _) => return Err(PackError::BadBoxCode { kind: base.sfen_char() }),
        }
        counts[hi] += 1;
    }
    for (i, pt) in KINDS.iter().enumerate() {
        let expected = pt.max_count() as u32;
        if counts[i] != expected {
            return Err(PackError::PieceCount { kind: pt.sfen_char(), found: counts[i], expected });
        }
    }
    for color in Color::ALL {
        let mut hand = Hand::EMPTY;
        for (i, pt) in KINDS.iter().enumerate() {
            // Cannot fail: counts were checked against the full set above.
            hand.set(*pt, hands[color.index()][i]).ok_or_else(|| PackError::PieceCount {
                kind: pt.sfen_char(),
                found: hands[color.index()][i],
                expected: pt.max_count() as u32,
            })?;
        }
        pos.set_hand(color, hand);
    }
    pos.set_ply(ply.max(1));
    pos.finish_setup();
    pos.validate().map_err(PackError::IllegalPosition)?;
    Ok(pos)
}

impl PackedSfen {
    /// See [`pack`].
    pub fn from_position(pos: &Position) -> Result<PackedSfen, PackError> {
        try_pack(pos)
    }

    /// See [`unpack`].
    pub fn to_position(&self) -> Result<Position, PackError> {
        unpack(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startpos_round_trip() {
        let pos = Position::startpos();
        let p = pack(&pos);
        assert_eq!(unpack(&p).unwrap(), pos);
    }

    #[test]
    fn box_gold_code() {
        let pos = Position::from_sfen("lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGK4 w - 1").unwrap();
        let p = pack(&pos);
        assert_eq!(unpack(&p).unwrap(), pos);
    }

    #[test]
    fn missing_king_is_unpackable() {
        let pos = Position::from_sfen("4k4/9/9/9/9/9/9/9/9 b - 1").unwrap();
        assert!(try_pack(&pos).is_err());
    }

    #[test]
    fn king_81_is_rejected() {
        let mut p = pack(&Position::startpos());
        // The White king field is bits 8..14 = bits 0..6 of byte 1.
        p.0[1] = (p.0[1] & 0x80) | 81;
        assert_eq!(unpack(&p), Err(PackError::MissingKing(Color::White)));
    }
}
