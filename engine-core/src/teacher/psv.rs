//! PackedSfenValue: the ecosystem's 40-byte teacher record (shared/spec/formats.md).
//!
//! | bytes | field |
//! |---|---|
//! | 0-31 | `sfen` (PackedSfen) |
//! | 32-33 | `score: i16` (side to move's view) |
//! | 34-35 | `mv: u16` (Move16; 0 = no move) |
//! | 36-37 | `game_ply: u16` |
//! | 38 | `game_result: i8` (+1 side to move won, -1 lost, 0 draw) |
//! | 39 | `padding: u8` |
//!
//! All little-endian; `to_bytes`/`from_bytes` write the fields explicitly.
//!
//! `game_ply` is taken as the SFEN move number of the position (the ecosystem's generators
//! store their `game_ply()`, which is 1 at the start position); 0 is read as 1.
//!
//! Validation ([`PackedSfenValue::validate`]) rejects a record whose PackedSfen does not
//! decode (see `packed_sfen`), whose move is neither 0 nor legal, or whose game result is
//! not -1/0/+1. A non-zero padding byte does not change the meaning of a record, so it is
//! *not* a reject: readers count it as a warning ([`RejectCounts::nonzero_padding`]).

use super::packed_sfen::{PackError, PackedSfen, try_pack, unpack_with_ply};
use crate::rules::{Move, Position};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One teacher record, layout-compatible with the ecosystem's `PackedSfenValue`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PackedSfenValue {
    pub sfen: PackedSfen,
    pub score: i16,
    pub mv: u16,
    pub game_ply: u16,
    pub game_result: i8,
    pub padding: u8,
}

const _: () = assert!(std::mem::size_of::<PackedSfenValue>() == PackedSfenValue::SIZE);

/// Why a record was rejected.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum RejectReason {
    #[error("record field sfen: {0}")]
    Sfen(#[from] PackError),
    #[error(
        "record field move: Move16 {0:#06x} is not a legal move in the record's position; \
         the record is corrupt or belongs to another rule set: skip it"
    )]
    IllegalMove(u16),
    #[error("record field game_result: {0} (expected -1, 0 or 1); the record is corrupt: skip it")]
    GameResult(i8),
}

/// Stable categories of [`RejectReason`], used for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectKind {
    /// King square 81 (no king) or both kings on one square, or an out-of-range king field.
    MissingKing,
    /// Bits that do not decode: ran out of bits, invalid piece-box code.
    BadEncoding,
    /// Some kind not present exactly as often as in a full set.
    PieceCount,
    /// Decodes, but `Position::validate` fails (nifu, dead rank, side not to move in check).
    IllegalPosition,
    /// Move16 neither 0 nor legal.
    IllegalMove,
    /// game_result outside -1..=1.
    BadGameResult,
}

impl RejectReason {
    pub fn kind(&self) -> RejectKind {
        match self {
            RejectReason::Sfen(e) => match e {
                PackError::MissingKing(_) | PackError::KingSquare { .. } | PackError::SameKingSquare(_) => {
                    RejectKind::MissingKing
                }
                PackError::OutOfBits { .. } | PackError::BadBoxCode { .. } | PackError::Unpackable(_) => {
                    RejectKind::BadEncoding
                }
                PackError::PieceCount { .. } => RejectKind::PieceCount,
                PackError::IllegalPosition(_) => RejectKind::IllegalPosition,
            },
            RejectReason::IllegalMove(_) => RejectKind::IllegalMove,
            RejectReason::GameResult(_) => RejectKind::BadGameResult,
        }
    }
}

/// Counts of rejected records by reason, plus warnings that did not cause a reject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RejectCounts {
    pub missing_king: u64,
    pub bad_encoding: u64,
    pub piece_count: u64,
    pub illegal_position: u64,
    pub illegal_move: u64,
    pub bad_game_result: u64,
    /// Warning only: records with a non-zero padding byte (they are still used).
    pub nonzero_padding: u64,
}

impl RejectCounts {
    pub fn add(&mut self, reason: &RejectReason) {
        match reason.kind() {
            RejectKind::MissingKing => self.missing_king += 1,
            RejectKind::BadEncoding => self.bad_encoding += 1,
            RejectKind::PieceCount => self.piece_count += 1,
            RejectKind::IllegalPosition => self.illegal_position += 1,
            RejectKind::IllegalMove => self.illegal_move += 1,
            RejectKind::BadGameResult => self.bad_game_result += 1,
        }
    }

    /// Number of rejected records (warnings not included).
    pub fn total(&self) -> u64 {
        self.missing_king
            + self.bad_encoding
            + self.piece_count
            + self.illegal_position
            + self.illegal_move
            + self.bad_game_result
    }

    pub fn merge(&mut self, other: &RejectCounts) {
        self.missing_king += other.missing_king;
        self.bad_encoding += other.bad_encoding;
        self.piece_count += other.piece_count;
        self.illegal_position += other.illegal_position;
        self.illegal_move += other.illegal_move;
        self.bad_game_result += other.bad_game_result;
        self.nonzero_padding += other.nonzero_padding;
    }
}

impl std::fmt::Display for RejectCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rejected (missing king {}, bad encoding {}, piece count {}, illegal position {}, \
             illegal move {}, bad game result {}); {} with non-zero padding (used)",
            self.total(),
            self.missing_king,
            self.bad_encoding,
            self.piece_count,
            self.illegal_position,
            self.illegal_move,
            self.bad_game_result,
            self.nonzero_padding
        )
    }
}

impl PackedSfenValue {
    pub const SIZE: usize = 40;

    /// Builds a record from a position (which must have both kings), a move (`None` or
    /// `Move::NONE` = no move), the score, the game result and the ply; the ply is the
    /// SFEN move number of `pos` clamped to the u16 range.
    pub fn new(
        pos: &Position,
        mv: Option<Move>,
        score: i16,
        game_result: i8,
    ) -> Result<PackedSfenValue, PackError> {
        Ok(PackedSfenValue {
            sfen: try_pack(pos)?,
            score,
            mv: mv.map_or(0, |m| m.to_move16()),
            game_ply: pos.ply().min(u16::MAX as u32) as u16,
            game_result,
            padding: 0,
        })
    }

    pub fn to_bytes(&self) -> [u8; 40] {
        let mut b = [0u8; 40];
        b[..32].copy_from_slice(&self.sfen.0);
        b[32..34].copy_from_slice(&self.score.to_le_bytes());
        b[34..36].copy_from_slice(&self.mv.to_le_bytes());
        b[36..38].copy_from_slice(&self.game_ply.to_le_bytes());
        b[38] = self.game_result as u8;
        b[39] = self.padding;
        b
    }

    pub fn from_bytes(b: &[u8; 40]) -> PackedSfenValue {
        let mut sfen = [0u8; 32];
        sfen.copy_from_slice(&b[..32]);
        PackedSfenValue {
            sfen: PackedSfen(sfen),
            score: i16::from_le_bytes([b[32], b[33]]),
            mv: u16::from_le_bytes([b[34], b[35]]),
            game_ply: u16::from_le_bytes([b[36], b[37]]),
            game_result: b[38] as i8,
            padding: b[39],
        }
    }

    /// Decodes and checks the record: the position (with ply = `game_ply`, at least 1) and
    /// the move (`None` when the record's move is 0).
    pub fn validate(&self) -> Result<(Position, Option<Move>), RejectReason> {
        let pos = unpack_with_ply(&self.sfen, self.game_ply as u32)?;
        let mv = if self.mv == 0 {
            None
        } else {
            Some(pos.move_from_move16(self.mv).ok_or(RejectReason::IllegalMove(self.mv))?)
        };
        if !(-1..=1).contains(&self.game_result) {
            return Err(RejectReason::GameResult(self.game_result));
        }
        Ok((pos, mv))
    }

    /// True when the padding byte is not 0 (a warning, not a reject).
    pub fn has_padding_warning(&self) -> bool {
        self.padding != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_layout() {
        let pos = Position::startpos();
        let mv = pos.parse_usi_move("7g7f").unwrap();
        let psv = PackedSfenValue::new(&pos, Some(mv), -123, -1).unwrap();
        let b = psv.to_bytes();
        assert_eq!(&b[32..34], &(-123i16).to_le_bytes());
        assert_eq!(u16::from_le_bytes([b[34], b[35]]), mv.to_move16());
        assert_eq!(&b[36..38], &[1, 0]);
        assert_eq!(b[38], 0xff);
        assert_eq!(PackedSfenValue::from_bytes(&b), psv);
        let (p2, m2) = psv.validate().unwrap();
        assert_eq!(p2, pos);
        assert_eq!(m2, Some(mv));
    }

    #[test]
    fn rejects() {
        let pos = Position::startpos();
        let mut psv = PackedSfenValue::new(&pos, None, 0, 0).unwrap();
        assert!(psv.validate().unwrap().1.is_none());
        psv.game_result = 2;
        assert_eq!(psv.validate().unwrap_err().kind(), RejectKind::BadGameResult);
        psv.game_result = 1;
        psv.mv = 0x1234;
        assert_eq!(psv.validate().unwrap_err().kind(), RejectKind::IllegalMove);
        let zero = PackedSfenValue::default();
        assert!(zero.validate().is_err());
    }
}
