//! One pattern: 2 to 4 (colour, piece, square) triples that must all stand on the board.
//!
//! A side-relative pattern names colours as "own"/"opponent" and squares from the side to
//! move's view; it is matched for the side to move and counts from its view. An absolute
//! pattern names Black/White and counts from Black's view, like the KPPT board terms.

use crate::rules::{Color, Piece, PieceType, Square};
use std::fmt;

pub const MAX_PATTERN_SIZE: usize = 4;
pub const MIN_PATTERN_SIZE: usize = 2;

/// A (colour, piece, square) triple. For side-relative patterns `color` Black means "own".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Triple {
    pub color: Color,
    pub piece_type: PieceType,
    pub square: Square,
}

impl Triple {
    pub fn piece(&self) -> Piece {
        Piece::new(self.color, self.piece_type)
    }

    /// The same triple with colours swapped and the board rotated 180 degrees.
    pub fn flipped(&self) -> Triple {
        Triple { color: self.color.opponent(), piece_type: self.piece_type, square: self.square.inverse() }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pattern {
    /// Sorted, distinct squares.
    triples: Vec<Triple>,
    relative: bool,
}

impl Pattern {
    /// Sorts the triples; `None` if the size is outside 2..=4 or two triples share a square.
    pub fn new(mut triples: Vec<Triple>, relative: bool) -> Option<Pattern> {
        if !(MIN_PATTERN_SIZE..=MAX_PATTERN_SIZE).contains(&triples.len()) {
            return None;
        }
        triples.sort_by_key(|t| t.square);
        if triples.windows(2).any(|w| w[0].square == w[1].square) {
            return None;
        }
        Some(Pattern { triples, relative })
    }

    pub fn triples(&self) -> &[Triple] {
        &self.triples
    }

    pub fn is_relative(&self) -> bool {
        self.relative
    }

    /// Colour-swapped, 180-degree-rotated twin (an absolute pattern's mirror image).
    pub fn flipped(&self) -> Pattern {
        Pattern::new(self.triples.iter().map(Triple::flipped).collect(), self.relative)
            .expect("flipping keeps size and distinct squares")
    }

    /// The concrete triples to look for when `stm` is to move (identity for absolute
    /// patterns and for side-relative ones with Black to move).
    pub fn instantiate(&self, stm: Color) -> Vec<Triple> {
        if self.relative && stm == Color::White {
            self.triples.iter().map(Triple::flipped).collect()
        } else {
            self.triples.clone()
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.triples.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            let side = match (self.relative, t.color) {
                (false, Color::Black) => "b",
                (false, Color::White) => "w",
                (true, Color::Black) => "own",
                (true, Color::White) => "opp",
            };
            let mut name = Piece::new(Color::Black, t.piece_type).to_sfen();
            if name.is_empty() {
                name.push('?');
            }
            write!(f, "{side}:{name}{}", t.square)?;
        }
        Ok(())
    }
}
