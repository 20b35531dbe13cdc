//! The position: board, bitboards, hands, side to move, ply and Zobrist key, with do/undo.
//!
//! A `Position` is plain data (`Copy`, about 400 bytes) with no history; repetition
//! needs the game's key history and lives in `game.rs`. `do_move` returns a `MoveDelta`
//! that both undoes the move and tells a differential evaluation what changed.
//! `startpos`, SFEN/USI in and out, and `Debug` (the SFEN) are in `sfen.rs`.

use super::attacks::*;
use super::bitboard::Bitboard;
use super::types::{Color, Hand, Move, Piece, PieceType, Square};
use super::zobrist;

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Position {
    board: [Piece; 81],
    by_type: [Bitboard; 15],
    by_color: [Bitboard; 2],
    hands: [Hand; 2],
    side: Color,
    /// Move number as in SFEN: 1 at the start of a game, +1 per move.
    ply: u32,
    key: u64,
    /// `key` without the hands' part (see `board_key`).
    board_key: u64,
    king: [Option<Square>; 2],
    checkers: Bitboard,
}

/// What a move changed; returned by `do_move`, consumed by `undo_move`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveDelta {
    pub mv: Move,
    /// The moving piece before the move (for a drop: the dropped piece).
    pub moved: Piece,
    /// The piece on `to` after the move (differs from `moved` after a promotion).
    pub placed: Piece,
    /// `None` for a drop.
    pub from: Option<Square>,
    pub to: Square,
    /// The captured piece as it stood on the board (possibly promoted), or `EMPTY`.
    pub captured: Piece,
    pub promoted: bool,
    prev_key: u64,
    prev_board_key: u64,
    prev_checkers: Bitboard,
}

impl MoveDelta {
    #[inline]
    pub fn is_drop(&self) -> bool {
        self.from.is_none()
    }

    #[inline]
    pub fn is_capture(&self) -> bool {
        !self.captured.is_empty()
    }
}

impl Position {
    /// An empty board, Black to move, move number 1.
    pub fn empty() -> Position {
        Position {
            board: [Piece::EMPTY; 81],
            by_type: [Bitboard::EMPTY; 15],
            by_color: [Bitboard::EMPTY; 2],
            hands: [Hand::EMPTY; 2],
            side: Color::Black,
            ply: 1,
            key: 0,
            board_key: 0,
            king: [None; 2],
            checkers: Bitboard::EMPTY,
        }
    }

    // ----- construction (used by parsers; call `finish_setup` at the end) -----

    /// Puts a piece on an empty square while setting up a position.
    pub(crate) fn put_piece(&mut self, sq: Square, piece: Piece) {
        debug_assert!(self.board[sq.index()].is_empty());
        self.board[sq.index()] = piece;
        self.by_type[piece.piece_type().index()].set(sq);
        self.by_color[piece.color().index()].set(sq);
        if piece.piece_type() == PieceType::King {
            self.king[piece.color().index()] = Some(sq);
        }
    }

    pub(crate) fn set_hand(&mut self, color: Color, hand: Hand) {
        self.hands[color.index()] = hand;
    }

    pub(crate) fn set_side_to_move(&mut self, color: Color) {
        self.side = color;
    }

    pub(crate) fn set_ply(&mut self, ply: u32) {
        self.ply = ply;
    }

    /// Recomputes the key and checkers after setup.
    pub(crate) fn finish_setup(&mut self) {
        self.key = self.compute_key();
        self.board_key = self.key ^ self.hands_key();
        self.checkers = self.compute_checkers();
    }

    fn compute_key(&self) -> u64 {
        let mut key = 0u64;
        for sq in Square::all() {
            let p = self.board[sq.index()];
            if !p.is_empty() {
                key ^= zobrist::board_key(p, sq);
            }
        }
        key ^= self.hands_key();
        if self.side == Color::White {
            key ^= zobrist::side_key();
        }
        key
    }

    fn compute_checkers(&self) -> Bitboard {
        match self.king[self.side.index()] {
            Some(ksq) => self.attackers_to(self.side.opponent(), ksq, self.occupied()),
            None => Bitboard::EMPTY,
        }
    }

    // ----- accessors -----

    #[inline]
    pub fn piece_on(&self, sq: Square) -> Piece {
        self.board[sq.index()]
    }

    #[inline]
    pub fn side_to_move(&self) -> Color {
        self.side
    }

    /// SFEN move number (1 for a game's first position).
    #[inline]
    pub fn ply(&self) -> u32 {
        self.ply
    }

    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The key of the board and side to move alone: equal for positions that differ only
    /// in the hands (superior and inferior positions). Kept up to date by `do_move`.
    #[inline]
    pub fn board_key(&self) -> u64 {
        self.board_key
    }

    /// The part of `key` that the hands make, computed from the hands (`key ^ hands_key`
    /// is `board_key`).
    pub fn hands_key(&self) -> u64 {
        let mut key = 0u64;
        for color in Color::ALL {
            for pt in PieceType::HAND {
                key ^= zobrist::hand_key(color, pt, self.hands[color.index()].count(pt));
            }
        }
        key
    }

    #[inline]
    pub fn hand(&self, color: Color) -> Hand {
        self.hands[color.index()]
    }

    #[inline]
    pub fn king_square(&self, color: Color) -> Option<Square> {
        self.king[color.index()]
    }

    #[inline]
    pub fn occupied(&self) -> Bitboard {
        self.by_color[0] | self.by_color[1]
    }

    #[inline]
    pub fn pieces_of(&self, color: Color) -> Bitboard {
        self.by_color[color.index()]
    }

    /// Pieces of a kind, both colours.
    #[inline]
    pub fn pieces_of_type(&self, pt: PieceType) -> Bitboard {
        self.by_type[pt.index()]
    }

    #[inline]
    pub fn pieces(&self, color: Color, pt: PieceType) -> Bitboard {
        self.by_type[pt.index()] & self.by_color[color.index()]
    }

    /// Gold and the four pieces that move like it, both colours.
    #[inline]
    pub fn gold_movers(&self) -> Bitboard {
        self.by_type[PieceType::Gold.index()]
            | self.by_type[PieceType::ProPawn.index()]
            | self.by_type[PieceType::ProLance.index()]
            | self.by_type[PieceType::ProKnight.index()]
            | self.by_type[PieceType::ProSilver.index()]
    }

    #[inline]
    pub fn checkers(&self) -> Bitboard {
        self.checkers
    }

    #[inline]
    pub fn in_check(&self) -> bool {
        self.checkers.any()
    }

    /// Pieces of either colour placed to attack `sq` by one step (or a knight's jump) as
    /// `by`'s pieces would: mask with `by`'s pieces for its step attackers.
    #[inline]
    fn step_attackers(&self, by: Color, sq: Square) -> Bitboard {
        let defender = by.opponent();
        let t = &self.by_type;
        (pawn_attacks(defender, sq) & t[PieceType::Pawn.index()])
            | (knight_attacks(defender, sq) & t[PieceType::Knight.index()])
            | (silver_attacks(defender, sq) & t[PieceType::Silver.index()])
            | (gold_attacks(defender, sq) & self.gold_movers())
            | (king_attacks(sq)
                & (t[PieceType::King.index()] | t[PieceType::Horse.index()] | t[PieceType::Dragon.index()]))
    }

    /// Pieces of `by` attacking `sq`, given an occupancy.
    #[inline]
    pub fn attackers_to(&self, by: Color, sq: Square, occ: Bitboard) -> Bitboard {
        let them = self.by_color[by.index()];
        let defender = by.opponent();
        let t = &self.by_type;
        let mut attackers = self.step_attackers(by, sq) & them;
        // Each slider's attacks are looked up only when one of `by`'s stands on its empty-board
        // line through `sq` (most squares have no bishop on theirs): the result is the same.
        let lances = t[PieceType::Lance.index()] & them;
        if (forward_ray(defender, sq) & lances).any() {
            attackers |= lance_attacks(defender, sq, occ) & lances;
        }
        let bishop_like = (t[PieceType::Bishop.index()] | t[PieceType::Horse.index()]) & them;
        if (bishop_empty_attacks(sq) & bishop_like).any() {
            attackers |= bishop_attacks(sq, occ) & bishop_like;
        }
        let rook_like = (t[PieceType::Rook.index()] | t[PieceType::Dragon.index()]) & them;
        if (rook_empty_attacks(sq) & rook_like).any() {
            attackers |= rook_attacks(sq, occ) & rook_like;
        }
        attackers
    }

    /// Is `sq` attacked by `by`? Cheaper than `attackers_to(..).any()`: step pieces first,
    /// and sliders only when one stands on a line through `sq`.
    #[inline]
    pub fn is_attacked(&self, by: Color, sq: Square, occ: Bitboard) -> bool {
        let them = self.by_color[by.index()];
        let defender = by.opponent();
        let t = &self.by_type;
        if (self.step_attackers(by, sq) & them).any() {
            return true;
        }
        let rook_like = (t[PieceType::Rook.index()] | t[PieceType::Dragon.index()]) & them;
        if (rook_empty_attacks(sq) & rook_like).any() && (rook_attacks(sq, occ) & rook_like).any() {
            return true;
        }
        let bishop_like = (t[PieceType::Bishop.index()] | t[PieceType::Horse.index()]) & them;
        if (bishop_empty_attacks(sq) & bishop_like).any() && (bishop_attacks(sq, occ) & bishop_like).any() {
            return true;
        }
        let lances = t[PieceType::Lance.index()] & them;
        (forward_ray(defender, sq) & lances).any() && (lance_attacks(defender, sq, occ) & lances).any()
    }

    /// Pieces (of either colour) that alone stand between `king_of`'s king and a slider of
    /// `slider_color` aimed at it. With `slider_color` = the king's opponent these are
    /// pins (when the blocker is the king's own) or discovered-check candidates.
    pub fn blockers(&self, king_of: Color, slider_color: Color) -> Bitboard {
        let Some(ksq) = self.king[king_of.index()] else {
            return Bitboard::EMPTY;
        };
        let t = &self.by_type;
        let sliders = self.by_color[slider_color.index()];
        let snipers = ((rook_attacks(ksq, Bitboard::EMPTY)
            & (t[PieceType::Rook.index()] | t[PieceType::Dragon.index()]))
            | (bishop_attacks(ksq, Bitboard::EMPTY)
                & (t[PieceType::Bishop.index()] | t[PieceType::Horse.index()]))
            | (forward_ray(king_of, ksq) & t[PieceType::Lance.index()]))
            & sliders;
        let occ = self.occupied();
        let mut result = Bitboard::EMPTY;
        for s in snipers {
            let b = between(ksq, s) & occ;
            if b.any() && !b.more_than_one() {
                result |= b;
            }
        }
        result
    }

    /// Own pieces pinned to the side to move's king.
    #[inline]
    pub fn pinned(&self) -> Bitboard {
        self.blockers(self.side, self.side.opponent()) & self.by_color[self.side.index()]
    }

    // ----- making moves -----

    /// Plays a legal move (checked only by debug assertions; use `is_legal` for untrusted
    /// moves) and returns what changed.
    pub fn do_move(&mut self, mv: Move) -> MoveDelta {
        let us = self.side;
        let them = us.opponent();
        let to = mv.to();
        let moved = mv.moved_piece();
        debug_assert_eq!(moved.color(), us, "{mv:?} moves the wrong colour");
        let mut delta = MoveDelta {
            mv,
            moved,
            placed: moved,
            from: None,
            to,
            captured: Piece::EMPTY,
            promoted: false,
            prev_key: self.key,
            prev_board_key: self.board_key,
            prev_checkers: self.checkers,
        };
        let mut key = self.key ^ zobrist::side_key();
        // What the hands change of the key, which the board key leaves out.
        let mut hands_change = 0u64;
        if mv.is_drop() {
            let pt = moved.piece_type();
            let hand = &mut self.hands[us.index()];
            let n = hand.count(pt);
            debug_assert!(n > 0 && self.board[to.index()].is_empty());
            hands_change = zobrist::hand_key(us, pt, n) ^ zobrist::hand_key(us, pt, n - 1);
            hand.remove(pt);
            self.board[to.index()] = moved;
            self.by_type[pt.index()].set(to);
            self.by_color[us.index()].set(to);
            key ^= zobrist::board_key(moved, to);
        } else {
            let from = mv.from();
            debug_assert_eq!(self.board[from.index()], moved, "{mv:?}: piece on from differs");
            delta.from = Some(from);
            let captured = self.board[to.index()];
            if !captured.is_empty() {
                debug_assert_eq!(captured.color(), them);
                debug_assert!(captured.piece_type() != PieceType::King, "{mv:?} captures a king");
                delta.captured = captured;
                let cpt = captured.piece_type();
                self.by_type[cpt.index()].clear(to);
                self.by_color[them.index()].clear(to);
                key ^= zobrist::board_key(captured, to);
                let base = cpt.unpromote();
                let hand = &mut self.hands[us.index()];
                let n = hand.count(base);
                hands_change = zobrist::hand_key(us, base, n) ^ zobrist::hand_key(us, base, n + 1);
                hand.add(base);
            }
            let placed = mv.moved_piece_after();
            delta.placed = placed;
            delta.promoted = mv.is_promotion();
            self.board[from.index()] = Piece::EMPTY;
            self.board[to.index()] = placed;
            self.by_type[moved.piece_type().index()].clear(from);
            self.by_type[placed.piece_type().index()].set(to);
            let mc = &mut self.by_color[us.index()];
            mc.clear(from);
            mc.set(to);
            key ^= zobrist::board_key(moved, from) ^ zobrist::board_key(placed, to);
            if moved.piece_type() == PieceType::King {
                self.king[us.index()] = Some(to);
            }
        }
        self.board_key ^= key ^ self.key;
        self.key = key ^ hands_change;
        self.side = them;
        self.ply += 1;
        self.checkers = match self.king[them.index()] {
            Some(ksq) => self.checkers_after(&delta, ksq),
            None => Bitboard::EMPTY,
        };
        delta
    }

    /// Checkers of the side now to move, whose king is on `ksq`, after the move in
    /// `delta`: the moved piece itself, or a slider uncovered by leaving `from`.
    #[inline]
    fn checkers_after(&self, delta: &MoveDelta, ksq: Square) -> Bitboard {
        let occ = self.occupied();
        let mut checkers = Bitboard::EMPTY;
        if attacks_from(delta.placed, delta.to, occ).contains(ksq) {
            checkers.set(delta.to);
        }
        if let Some(from) = delta.from
            && line_through(ksq, from).any()
        {
            let us = delta.moved.color();
            let t = &self.by_type;
            let ours = self.by_color[us.index()];
            let sliders = ((rook_attacks(ksq, occ)
                & (t[PieceType::Rook.index()] | t[PieceType::Dragon.index()]))
                | (bishop_attacks(ksq, occ) & (t[PieceType::Bishop.index()] | t[PieceType::Horse.index()]))
                | (lance_attacks(us.opponent(), ksq, occ) & t[PieceType::Lance.index()]))
                & ours;
            checkers |= sliders;
        }
        checkers
    }

    /// Takes back the move that produced `delta` (must be the last move made).
    pub fn undo_move(&mut self, delta: &MoveDelta) {
        let them = self.side;
        let us = them.opponent();
        let to = delta.to;
        match delta.from {
            None => {
                let pt = delta.moved.piece_type();
                self.board[to.index()] = Piece::EMPTY;
                self.by_type[pt.index()].clear(to);
                self.by_color[us.index()].clear(to);
                self.hands[us.index()].add(pt);
            }
            Some(from) => {
                self.by_type[delta.placed.piece_type().index()].clear(to);
                self.by_type[delta.moved.piece_type().index()].set(from);
                let mc = &mut self.by_color[us.index()];
                mc.clear(to);
                mc.set(from);
                self.board[from.index()] = delta.moved;
                self.board[to.index()] = delta.captured;
                if !delta.captured.is_empty() {
                    self.by_type[delta.captured.piece_type().index()].set(to);
                    self.by_color[them.index()].set(to);
                    self.hands[us.index()].remove(delta.captured.piece_type().unpromote());
                }
                if delta.moved.piece_type() == PieceType::King {
                    self.king[us.index()] = Some(from);
                }
            }
        }
        self.side = us;
        self.ply -= 1;
        self.key = delta.prev_key;
        self.board_key = delta.prev_board_key;
        self.checkers = delta.prev_checkers;
    }

    /// Passes the turn (for null-move search). Only valid when not in check.
    pub fn do_null_move(&mut self) -> MoveDelta {
        debug_assert!(!self.in_check());
        let delta = MoveDelta {
            mv: Move::NONE,
            moved: Piece::EMPTY,
            placed: Piece::EMPTY,
            from: None,
            to: Square::from_index(0),
            captured: Piece::EMPTY,
            promoted: false,
            prev_key: self.key,
            prev_board_key: self.board_key,
            prev_checkers: self.checkers,
        };
        self.key ^= zobrist::side_key();
        self.board_key ^= zobrist::side_key();
        self.side = self.side.opponent();
        self.checkers = self.compute_checkers();
        delta
    }

    pub fn undo_null_move(&mut self, delta: &MoveDelta) {
        self.side = self.side.opponent();
        self.key = delta.prev_key;
        self.board_key = delta.prev_board_key;
        self.checkers = delta.prev_checkers;
    }

    /// Recomputes everything derived from the board and compares: a debugging aid used by
    /// tests after long random games.
    pub fn is_consistent(&self) -> bool {
        let mut fresh = Position::empty();
        for sq in Square::all() {
            let p = self.board[sq.index()];
            if !p.is_empty() {
                fresh.put_piece(sq, p);
            }
        }
        fresh.hands = self.hands;
        fresh.side = self.side;
        fresh.ply = self.ply;
        fresh.finish_setup();
        fresh == *self
    }

    /// Counts of each unpromoted kind on the board and in both hands (kings included).
    pub fn piece_counts(&self) -> [u32; 15] {
        let mut counts = [0u32; 15];
        for sq in Square::all() {
            let p = self.board[sq.index()];
            if !p.is_empty() {
                counts[p.piece_type().unpromote().index()] += 1;
            }
        }
        for c in Color::ALL {
            for pt in PieceType::HAND {
                counts[pt.index()] += self.hands[c.index()].count(pt);
            }
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn do_undo_restores_everything() {
        let mut pos = Position::startpos();
        let before = pos;
        let mv = pos.parse_usi_move("7g7f").unwrap();
        let d = pos.do_move(mv);
        assert_ne!(pos.key(), before.key());
        assert_eq!(d.from, Some(Square::new(6, 6)));
        assert!(pos.is_consistent());
        pos.undo_move(&d);
        assert_eq!(pos, before);
    }

    #[test]
    fn capture_and_promotion_are_reported() {
        let mut pos =
            Position::from_sfen("lnsgkgsnl/1r5b1/pppppp1pp/6p2/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL b - 3")
                .unwrap();
        let mv = pos.parse_usi_move("8h2b+").unwrap();
        let d = pos.do_move(mv);
        assert_eq!(d.captured, Piece::new(Color::White, PieceType::Bishop));
        assert!(d.promoted);
        assert_eq!(d.placed, Piece::new(Color::Black, PieceType::Horse));
        assert_eq!(pos.hand(Color::Black).count(PieceType::Bishop), 1);
        assert!(pos.is_consistent());
    }

    /// `attackers_to` (which skips the sliders not on a line through the square) is the
    /// set of the side's pieces whose attacks reach the square, piece by piece, with the
    /// board's occupancy and with pieces taken off it (as SEE does, for x-rays).
    #[test]
    fn attackers_to_matches_each_pieces_attacks() {
        let suite = crate::rules::random_walk::capture_heavy_suite(60, 23);
        let mut slider_attacks = 0;
        for pos in &suite {
            let mut occ = pos.occupied();
            for removed in 0..3 {
                if removed > 0 {
                    // Take off the lowest remaining piece that is not a king.
                    let kings = pos.pieces_of_type(PieceType::King);
                    if let Some(sq) = (occ.and_not(kings)).iter().next() {
                        occ.clear(sq);
                    }
                }
                for by in [Color::Black, Color::White] {
                    for sq in Square::all() {
                        let mut expected = Bitboard::EMPTY;
                        for from in (pos.pieces_of(by) & occ).iter() {
                            if attacks_from(pos.piece_on(from), from, occ).contains(sq) {
                                expected.set(from);
                                let pt = pos.piece_on(from).piece_type();
                                slider_attacks += matches!(
                                    pt,
                                    PieceType::Lance
                                        | PieceType::Bishop
                                        | PieceType::Rook
                                        | PieceType::Horse
                                        | PieceType::Dragon
                                ) as usize;
                            }
                        }
                        assert_eq!(pos.attackers_to(by, sq, occ) & occ, expected, "{} {sq:?}", pos.to_sfen());
                    }
                }
            }
        }
        assert!(slider_attacks > 1000, "the suite exercises the sliders: {slider_attacks}");
    }
}
