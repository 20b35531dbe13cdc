//! Material values used with KPPT files (the ecosystem's), in evaluation units.

use crate::rules::{Color, MoveDelta, PieceType, Position, Square};

/// Value of a piece kind; a piece in hand counts as its unpromoted kind.
pub const fn piece_value(pt: PieceType) -> i32 {
    match pt {
        PieceType::Pawn => 90,
        PieceType::Lance => 315,
        PieceType::Knight => 405,
        PieceType::Silver => 495,
        PieceType::Gold => 540,
        PieceType::Bishop => 855,
        PieceType::Rook => 990,
        PieceType::ProPawn | PieceType::ProLance | PieceType::ProKnight | PieceType::ProSilver => 540,
        PieceType::Horse => 945,
        PieceType::Dragon => 1395,
        PieceType::King => 0,
    }
}

/// Material balance from Black's view.
pub fn material(pos: &Position) -> i32 {
    let mut sum = 0;
    for sq in Square::all() {
        let p = pos.piece_on(sq);
        if !p.is_empty() {
            let v = piece_value(p.piece_type());
            sum += if p.color() == Color::Black { v } else { -v };
        }
    }
    for color in Color::ALL {
        let sign = if color == Color::Black { 1 } else { -1 };
        for pt in PieceType::HAND {
            sum += sign * piece_value(pt) * pos.hand(color).count(pt) as i32;
        }
    }
    sum
}

/// Change of `material` (Black's view) made by a move.
#[inline]
pub fn material_delta(delta: &MoveDelta) -> i32 {
    let mut gain = 0;
    if delta.is_capture() {
        let c = delta.captured.piece_type();
        gain += piece_value(c) + piece_value(c.unpromote());
    }
    if delta.promoted {
        gain += piece_value(delta.placed.piece_type()) - piece_value(delta.moved.piece_type());
    }
    if delta.moved.color() == Color::Black { gain } else { -gain }
}
