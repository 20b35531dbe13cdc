//! Legal move generation (all moves, captures, checks) and the legality test for moves
//! from outside (tables, records, the network).
//!
//! Generation is legal by construction: pinned pieces are kept on their pin line, king
//! moves are tested against attacks with the king lifted off the board, evasions only
//! capture or block a single checker, and a pawn drop that checks is played out to rule
//! out pawn-drop mate.

use super::attacks::*;
use super::bitboard::Bitboard;
use super::position::Position;
use super::types::{Color, Move, Piece, PieceType, Square};
use std::mem::MaybeUninit;

/// More than the most legal moves any shogi position has (593).
pub const MAX_MOVES: usize = 600;

pub struct MoveList {
    len: usize,
    moves: [MaybeUninit<Move>; MAX_MOVES],
}

impl Default for MoveList {
    fn default() -> Self {
        Self::new()
    }
}

impl MoveList {
    #[inline]
    pub fn new() -> MoveList {
        // Not zeroed on purpose: a list is created at every search node, and only the
        // first `len` entries are ever read.
        MoveList { len: 0, moves: [MaybeUninit::uninit(); MAX_MOVES] }
    }

    #[inline]
    pub fn push(&mut self, m: Move) {
        self.moves[self.len] = MaybeUninit::new(m);
        self.len += 1;
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `len` moves (no effect if there are fewer).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    #[inline]
    pub fn as_slice(&self) -> &[Move] {
        // SAFETY: entries 0..len were written by `push` (and `retain` only moves written
        // entries down); MaybeUninit<Move> has the same layout as Move.
        unsafe { std::slice::from_raw_parts(self.moves.as_ptr() as *const Move, self.len) }
    }

    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Move] {
        // SAFETY: as in `as_slice`.
        unsafe { std::slice::from_raw_parts_mut(self.moves.as_mut_ptr() as *mut Move, self.len) }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Move> {
        self.as_slice().iter()
    }

    pub fn contains(&self, m: Move) -> bool {
        self.as_slice().contains(&m)
    }

    /// Keeps the moves for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(Move) -> bool) {
        let mut w = 0;
        for r in 0..self.len {
            // SAFETY: r < len, so the entry was written.
            let m = unsafe { self.moves[r].assume_init() };
            if keep(m) {
                self.moves[w] = MaybeUninit::new(m);
                w += 1;
            }
        }
        self.len = w;
    }
}

/// Where the generators put their moves: a `MoveList`, or a search's own buffer.
pub trait MoveSink {
    /// False for a search, which never plays a pawn, bishop or rook unpromoted where it
    /// could promote: the generators then leave those moves out.
    const INFERIOR_NON_PROMOTIONS: bool = true;
    fn push(&mut self, m: Move);
}

impl MoveSink for MoveList {
    #[inline]
    fn push(&mut self, m: Move) {
        MoveList::push(self, m);
    }
}

/// Passes on only the moves that give check (in order).
struct ChecksOnly<'a, S: MoveSink> {
    inner: &'a mut S,
    checks: &'a CheckInfo,
}

impl<S: MoveSink> MoveSink for ChecksOnly<'_, S> {
    const INFERIOR_NON_PROMOTIONS: bool = S::INFERIOR_NON_PROMOTIONS;
    #[inline]
    fn push(&mut self, m: Move) {
        if self.checks.gives_check(m) {
            self.inner.push(m);
        }
    }
}

impl<'a> IntoIterator for &'a MoveList {
    type Item = &'a Move;
    type IntoIter = std::slice::Iter<'a, Move>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::ops::Index<usize> for MoveList {
    type Output = Move;
    fn index(&self, i: usize) -> &Move {
        &self.as_slice()[i]
    }
}

/// Ranks where an unpromoted `pt` of `us` could never move again (no drop or
/// non-promotion may end there).
#[inline]
fn unmovable_ranks(us: Color, pt: PieceType) -> Bitboard {
    match pt {
        PieceType::Pawn | PieceType::Lance => Bitboard::dead_ranks(us, 1),
        PieceType::Knight => Bitboard::dead_ranks(us, 2),
        _ => Bitboard::EMPTY,
    }
}

/// Pushes a board move with every promotion choice the rules allow (but the inferior
/// non-promotions, for a sink that does not want them).
#[inline(always)]
fn push_board_move<S: MoveSink>(list: &mut S, us: Color, piece: Piece, from: Square, to: Square) {
    let zone = Bitboard::promotion_zone(us);
    match piece.piece_type() {
        // Forward-only pieces must promote where they could never move again; a pawn or a
        // lance can only enter the zone, so the zone test is on `to`.
        pt @ (PieceType::Pawn | PieceType::Lance | PieceType::Knight) => {
            let dead_depth = if pt == PieceType::Knight { 2 } else { 1 };
            let promote_only = Bitboard::dead_ranks(us, dead_depth).contains(to);
            let may_promote = promote_only || zone.contains(to);
            if may_promote {
                list.push(Move::new_board(from, to, true, piece));
            }
            let inferior = pt == PieceType::Pawn && may_promote;
            if !promote_only && (S::INFERIOR_NON_PROMOTIONS || !inferior) {
                list.push(Move::new_board(from, to, false, piece));
            }
        }
        pt @ (PieceType::Silver | PieceType::Bishop | PieceType::Rook) => {
            let may_promote = zone.contains(to) || zone.contains(from);
            if may_promote {
                list.push(Move::new_board(from, to, true, piece));
            }
            if S::INFERIOR_NON_PROMOTIONS || !may_promote || pt == PieceType::Silver {
                list.push(Move::new_board(from, to, false, piece));
            }
        }
        _ => list.push(Move::new_board(from, to, false, piece)),
    }
}

/// Per-position data for fast check detection: the pieces that may uncover a check, and
/// for each piece kind the squares from which it would attack the opponent's king.
#[derive(Clone, Copy, Debug)]
pub struct CheckInfo {
    pub discoverers: Bitboard,
    /// By piece kind (its code; 16 entries so that any 4-bit code indexes it).
    squares: [Bitboard; 16],
    their_king: Option<Square>,
}

impl CheckInfo {
    /// Squares from which a piece of kind `pt`, as it is or promoted, attacks the king.
    #[inline]
    fn may_check_from(&self, pt: PieceType) -> Bitboard {
        let promoted = if pt.can_promote() { self.squares[pt.promote().index()] } else { Bitboard::EMPTY };
        self.squares[pt.index()] | promoted
    }

    /// Does the legal move `m` give check? (Same answer as `Position::gives_check`.)
    #[inline]
    pub fn gives_check(&self, m: Move) -> bool {
        let Some(k) = self.their_king else {
            return false;
        };
        if self.squares[m.moved_piece_after().code() & 15].contains(m.to()) {
            return true;
        }
        !m.is_drop() && self.discoverers.contains(m.from()) && !line_through(k, m.from()).contains(m.to())
    }
}

impl Position {
    /// All legal moves.
    pub fn legal_moves(&self) -> MoveList {
        let mut list = MoveList::new();
        self.generate_legal(&mut list);
        list
    }

    pub fn generate_legal<S: MoveSink>(&self, list: &mut S) {
        self.generate(list, Bitboard::ALL, true);
    }

    /// Legal captures, with every promotion choice (for quiescence search).
    pub fn generate_captures<S: MoveSink>(&self, list: &mut S) {
        self.generate(list, self.pieces_of(self.side_to_move().opponent()), false);
    }

    /// Legal moves that capture nothing (drops included): with `generate_captures`,
    /// exactly the legal moves.
    pub fn generate_quiets<S: MoveSink>(&self, list: &mut S) {
        self.generate(list, !self.occupied(), true);
    }

    /// The moves of `generate_quiets` that give check, in the same order, without
    /// generating the others: quiescence and late-move pruning want only these. `checks`
    /// must be this position's; the side to move must not be in check.
    pub fn generate_quiet_checks<S: MoveSink>(&self, list: &mut S, checks: &CheckInfo) {
        debug_assert!(!self.in_check(), "quiet checks are generated only out of check");
        let targets = !self.occupied();
        let king = self.king_square(self.side_to_move());
        let mut list = ChecksOnly { inner: list, checks };
        if let Some(ksq) = king
            && checks.discoverers.contains(ksq)
        {
            self.push_king_moves(&mut list, ksq, targets);
        }
        self.push_non_king_moves(&mut list, targets, king, Some(checks));
        self.push_drops(&mut list, targets, Some(checks));
    }

    /// Legal moves that give check.
    pub fn generate_checks(&self, list: &mut MoveList) {
        if self.in_check() {
            self.generate_legal(list);
            let discoverers = self.discovered_check_candidates();
            list.retain(|m| self.gives_check_with(m, discoverers));
            return;
        }
        // Out of check, without generating every legal move first: the captures that
        // check, then the quiet checks (whose generation keeps only checks in the list).
        let info = self.check_info();
        self.generate_captures(list);
        list.retain(|m| info.gives_check(m));
        self.generate_quiet_checks(list, &info);
    }

    /// True when the side to move has at least one legal move.
    pub fn has_legal_move(&self) -> bool {
        // A king step is the usual answer and cheap to find; generate everything otherwise.
        let us = self.side_to_move();
        if let Some(ksq) = self.king_square(us) {
            let occ_without_king = self.occupied() ^ Bitboard::from_square(ksq);
            let steps = king_attacks(ksq).and_not(self.pieces_of(us));
            if steps.iter().any(|to| !self.is_attacked(us.opponent(), to, occ_without_king)) {
                return true;
            }
        }
        let mut list = MoveList::new();
        self.generate_legal(&mut list);
        !list.is_empty()
    }

    fn generate<S: MoveSink>(&self, list: &mut S, target_mask: Bitboard, with_drops: bool) {
        let us = self.side_to_move();
        let ours = self.pieces_of(us);
        let occ = self.occupied();
        let king = self.king_square(us);
        let (board_targets, drop_targets) = if self.in_check() {
            let ksq = king.expect("in check implies a king");
            self.push_king_moves(list, ksq, !ours & target_mask);
            let checkers = self.checkers();
            if checkers.more_than_one() {
                return;
            }
            let block = between(ksq, checkers.lsb());
            ((block | checkers) & target_mask, block)
        } else {
            let targets = !ours & target_mask;
            if let Some(ksq) = king {
                self.push_king_moves(list, ksq, targets);
            }
            (targets, !occ)
        };
        self.push_non_king_moves(list, board_targets, king, None);
        if with_drops && drop_targets.any() {
            self.push_drops(list, drop_targets, None);
        }
    }

    #[inline]
    fn push_king_moves<S: MoveSink>(&self, list: &mut S, ksq: Square, targets: Bitboard) {
        let us = self.side_to_move();
        let occ_without_king = self.occupied() ^ Bitboard::from_square(ksq);
        let king = Piece::new(us, PieceType::King);
        for to in king_attacks(ksq) & targets {
            if !self.is_attacked(us.opponent(), to, occ_without_king) {
                list.push(Move::new_board(ksq, to, false, king));
            }
        }
    }

    /// With `checks`, only moves that may give check are pushed (a superset, in the same
    /// order): those of discovered-check candidates, and those landing where the piece,
    /// promoted or not, would attack the enemy king.
    #[inline]
    fn push_non_king_moves<S: MoveSink>(
        &self,
        list: &mut S,
        targets: Bitboard,
        king: Option<Square>,
        checks: Option<&CheckInfo>,
    ) {
        let us = self.side_to_move();
        let ours = self.pieces_of(us);
        let occ = self.occupied();
        let pinned = match king {
            Some(_) => self.pinned(),
            None => Bitboard::EMPTY,
        };
        let pawns = self.pieces(us, PieceType::Pawn);
        // Pawns all at once: one square forward is one bit down (Black) or up (White).
        let pawn_tos = Bitboard(match us {
            Color::Black => pawns.0 >> 1,
            Color::White => pawns.0 << 1,
        }) & targets;
        let pawn = Piece::new(us, PieceType::Pawn);
        for to in pawn_tos {
            let from = match us {
                Color::Black => Square::from_index(to.index() + 1),
                Color::White => Square::from_index(to.index() - 1),
            };
            if pinned.any() && pinned.contains(from) && !line_through(king.unwrap(), from).contains(to) {
                continue;
            }
            if let Some(ci) = checks
                && !ci.discoverers.contains(from)
                && !ci.may_check_from(PieceType::Pawn).contains(to)
            {
                continue;
            }
            push_board_move(list, us, pawn, from, to);
        }
        let others = ours.and_not(pawns | self.pieces_of_type(PieceType::King));
        for from in others {
            let piece = self.piece_on(from);
            let mut tos = attacks_from(piece, from, occ) & targets;
            // (Most positions pin nothing: one test for all pieces.)
            if pinned.any() && pinned.contains(from) {
                tos &= line_through(king.unwrap(), from);
            }
            if let Some(ci) = checks
                && !ci.discoverers.contains(from)
            {
                tos &= ci.may_check_from(piece.piece_type());
            }
            for to in tos {
                push_board_move(list, us, piece, from, to);
            }
        }
    }

    /// With `checks`, only drops that give check.
    fn push_drops<S: MoveSink>(&self, list: &mut S, targets: Bitboard, checks: Option<&CheckInfo>) {
        let us = self.side_to_move();
        let hand = self.hand(us);
        if hand.is_empty() {
            return;
        }
        for pt in PieceType::HAND {
            if hand.count(pt) == 0 {
                continue;
            }
            let tos = match pt {
                PieceType::Pawn => {
                    let mut pawn_files = Bitboard::EMPTY;
                    for sq in self.pieces(us, PieceType::Pawn) {
                        pawn_files |= Bitboard::file_mask(sq.file());
                    }
                    targets.and_not(Bitboard::dead_ranks(us, 1) | pawn_files)
                }
                PieceType::Lance => targets.and_not(Bitboard::dead_ranks(us, 1)),
                PieceType::Knight => targets.and_not(Bitboard::dead_ranks(us, 2)),
                _ => targets,
            };
            let tos = match checks {
                Some(ci) => tos & ci.squares[pt.index()],
                None => tos,
            };
            if pt == PieceType::Pawn {
                let mate_sq = match self.king_square(us.opponent()) {
                    Some(k) => pawn_attacks(us.opponent(), k),
                    None => Bitboard::EMPTY,
                };
                for to in tos {
                    if mate_sq.contains(to) && self.is_pawn_drop_mate(to) {
                        continue;
                    }
                    list.push(Move::new_drop(pt, to, us));
                }
            } else {
                for to in tos {
                    list.push(Move::new_drop(pt, to, us));
                }
            }
        }
    }

    /// Would dropping a pawn on `to` (checking the enemy king) leave it without a legal
    /// reply? Rare, so it simply plays the drop on a copy.
    fn is_pawn_drop_mate(&self, to: Square) -> bool {
        let mut after = *self;
        after.do_move(Move::new_drop(PieceType::Pawn, to, self.side_to_move()));
        !after.has_legal_move()
    }

    /// Does a legal move give check?
    pub fn gives_check(&self, m: Move) -> bool {
        self.gives_check_with(m, self.discovered_check_candidates())
    }

    /// Pieces whose moving off the line may uncover a check on the opponent's king;
    /// computed once per node for [`Position::gives_check_with`].
    #[inline]
    pub fn discovered_check_candidates(&self) -> Bitboard {
        self.blockers(self.side_to_move().opponent(), self.side_to_move())
    }

    /// `gives_check` with the discovered-check candidates computed beforehand.
    #[inline]
    pub fn gives_check_with(&self, m: Move, discoverers: Bitboard) -> bool {
        let Some(their_king) = self.king_square(self.side_to_move().opponent()) else {
            return false;
        };
        let to = m.to();
        let mut occ = self.occupied() | Bitboard::from_square(to);
        if !m.is_drop() {
            let from = m.from();
            occ.clear(from);
            if discoverers.contains(from) && !line_through(their_king, from).contains(to) {
                return true;
            }
        }
        attacks_from(m.moved_piece_after(), to, occ).contains(their_king)
    }

    /// What `gives_check` needs, computed once for all the moves of a position.
    pub fn check_info(&self) -> CheckInfo {
        let us = self.side_to_move();
        let mut squares = [Bitboard::EMPTY; 16];
        if let Some(k) = self.king_square(us.opponent()) {
            let occ = self.occupied();
            let them = us.opponent();
            // A piece of ours on square s attacks k exactly when the same kind of the
            // opponent's on k would attack s (the step sets are mirror images). Each way of
            // moving is computed once: golds and the promoted small pieces share one set,
            // horses and dragons add the king's steps to the bishop's and rook's.
            let gold = gold_attacks(them, k);
            let bishop = bishop_attacks(k, occ);
            let rook = rook_attacks(k, occ);
            let king = king_attacks(k);
            squares[PieceType::Pawn.index()] = pawn_attacks(them, k);
            squares[PieceType::Lance.index()] = lance_attacks(them, k, occ);
            squares[PieceType::Knight.index()] = knight_attacks(them, k);
            squares[PieceType::Silver.index()] = silver_attacks(them, k);
            squares[PieceType::Bishop.index()] = bishop;
            squares[PieceType::Rook.index()] = rook;
            for pt in [
                PieceType::Gold,
                PieceType::ProPawn,
                PieceType::ProLance,
                PieceType::ProKnight,
                PieceType::ProSilver,
            ] {
                squares[pt.index()] = gold;
            }
            squares[PieceType::Horse.index()] = bishop | king;
            squares[PieceType::Dragon.index()] = rook | king;
        }
        CheckInfo {
            discoverers: self.discovered_check_candidates(),
            squares,
            their_king: self.king_square(us.opponent()),
        }
    }

    /// Full legality test for a move from outside: any 32-bit value is accepted and
    /// judged, including a wrong moving piece, squares off the board and bad flags.
    pub fn is_legal(&self, m: Move) -> bool {
        if m.is_none() || m.to().index() >= 81 {
            return false;
        }
        let us = self.side_to_move();
        let to = m.to();
        let moved = m.moved_piece();
        if moved.is_empty() || moved.color() != us {
            return false;
        }
        if m.is_drop() {
            let raw_pt = (m.raw() >> 7) & 0x7f;
            let Some(pt) = PieceType::from_u8(raw_pt as u8) else {
                return false;
            };
            if m.is_promotion() || pt.hand_index().is_none() || moved != Piece::new(us, pt) {
                return false;
            }
            return self.is_legal_drop(pt, to);
        }
        let from = m.from();
        if from.index() >= 81 || self.piece_on(from) != moved {
            return false;
        }
        let target = self.piece_on(to);
        if !target.is_empty() && target.color() == us {
            return false;
        }
        if !attacks_from(moved, from, self.occupied()).contains(to) {
            return false;
        }
        let pt = moved.piece_type();
        let zone = Bitboard::promotion_zone(us);
        if m.is_promotion() {
            if !pt.can_promote() || !(zone.contains(from) || zone.contains(to)) {
                return false;
            }
        } else {
            if unmovable_ranks(us, pt).contains(to) {
                return false;
            }
        }
        self.board_move_keeps_king_safe(from, to, pt)
    }

    fn board_move_keeps_king_safe(&self, from: Square, to: Square, pt: PieceType) -> bool {
        let us = self.side_to_move();
        let Some(ksq) = self.king_square(us) else {
            return true;
        };
        if pt == PieceType::King {
            let occ = self.occupied() ^ Bitboard::from_square(from);
            return !self.is_attacked(us.opponent(), to, occ);
        }
        let checkers = self.checkers();
        if checkers.any() {
            if checkers.more_than_one() {
                return false;
            }
            let c = checkers.lsb();
            if to != c && !between(ksq, c).contains(to) {
                return false;
            }
        }
        !self.pinned().contains(from) || line_through(ksq, from).contains(to)
    }

    fn is_legal_drop(&self, pt: PieceType, to: Square) -> bool {
        let us = self.side_to_move();
        if self.hand(us).count(pt) == 0 || !self.piece_on(to).is_empty() {
            return false;
        }
        if unmovable_ranks(us, pt).contains(to) {
            return false;
        }
        if pt == PieceType::Pawn && (self.pieces(us, PieceType::Pawn) & Bitboard::file_mask(to.file())).any()
        {
            return false;
        }
        let checkers = self.checkers();
        if checkers.any() {
            let ksq = self.king_square(us).expect("in check implies a king");
            if checkers.more_than_one() || !between(ksq, checkers.lsb()).contains(to) {
                return false;
            }
        }
        if pt == PieceType::Pawn
            && let Some(k) = self.king_square(us.opponent())
            && pawn_attacks(us.opponent(), k).contains(to)
            && self.is_pawn_drop_mate(to)
        {
            return false;
        }
        true
    }

    /// Turns a Move16 (PackedSfenValue, tables) into a full legal move of this position.
    pub fn move_from_move16(&self, m16: u16) -> Option<Move> {
        let to = Square::try_from_index((m16 & 0x7f) as usize)?;
        let from_or_piece = ((m16 >> 7) & 0x7f) as usize;
        let promote = m16 & (1 << 15) != 0;
        let m = if m16 & (1 << 14) != 0 {
            let pt = PieceType::from_u8(from_or_piece as u8)?;
            pt.hand_index()?;
            if promote {
                return None;
            }
            Move::new_drop(pt, to, self.side_to_move())
        } else {
            let from = Square::try_from_index(from_or_piece)?;
            let piece = self.piece_on(from);
            if piece.is_empty() {
                return None;
            }
            Move::new_board(from, to, promote, piece)
        };
        self.is_legal(m).then_some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startpos_has_30_moves() {
        let pos = Position::startpos();
        assert_eq!(pos.legal_moves().len(), 30);
    }

    #[test]
    fn generated_moves_pass_is_legal_and_others_fail() {
        let pos =
            Position::from_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1")
                .unwrap();
        let list = pos.legal_moves();
        assert_eq!(list.len(), 207);
        for &m in &list {
            assert!(pos.is_legal(m), "{m}");
            assert_eq!(pos.move_from_move16(m.to_move16()), Some(m));
        }
        // Every Move16 value that is not generated must be rejected.
        let mut accepted = 0;
        for raw in 0..=u16::MAX {
            if let Some(m) = pos.move_from_move16(raw) {
                assert!(list.contains(m), "{m} accepted but not generated");
                accepted += 1;
            }
        }
        assert_eq!(accepted, 207);
    }

    #[test]
    fn check_info_squares_are_each_kinds_attacks_from_the_king() {
        let suite = crate::rules::random_walk::capture_heavy_suite(200, 21);
        for pos in &suite {
            let info = pos.check_info();
            let them = pos.side_to_move().opponent();
            let Some(k) = pos.king_square(them) else { continue };
            for pt in PieceType::ALL {
                let want = if pt == PieceType::King {
                    Bitboard::EMPTY
                } else {
                    attacks_from(Piece::new(them, pt), k, pos.occupied())
                };
                assert_eq!(info.squares[pt.index()], want, "{pt:?} in {}", pos.to_sfen());
            }
        }
    }

    #[test]
    fn check_info_agrees_with_gives_check() {
        let suite = crate::rules::random_walk::capture_heavy_suite(200, 21);
        let mut checks = 0;
        for pos in &suite {
            let info = pos.check_info();
            for &m in pos.legal_moves().iter() {
                let want = pos.gives_check(m);
                assert_eq!(info.gives_check(m), want, "{m} in {}", pos.to_sfen());
                let mut after = *pos;
                after.do_move(m);
                assert_eq!(after.in_check(), want, "{m} in {}", pos.to_sfen());
                checks += want as u32;
            }
        }
        assert!(checks > 500, "{checks} checking moves");
    }

    /// The quiet-check generator yields exactly the checking moves of `generate_quiets`,
    /// in the same order (the search's move order, and so its node counts, depend on it),
    /// including discovered checks, checks by promotion and drops.
    /// A search's sink: collects moves, and asks for no inferior non-promotions.
    struct SearchSink(Vec<Move>);

    impl MoveSink for SearchSink {
        const INFERIOR_NON_PROMOTIONS: bool = false;
        fn push(&mut self, m: Move) {
            self.0.push(m);
        }
    }

    /// The rule, written out: a pawn that could promote on its destination, or a bishop
    /// or rook that could promote on its move, not promoting.
    fn inferior(m: Move) -> bool {
        let zone = Bitboard::promotion_zone(m.moved_piece().color());
        !m.is_drop()
            && !m.is_promotion()
            && match m.moved_piece().piece_type() {
                PieceType::Pawn => zone.contains(m.to()),
                PieceType::Bishop | PieceType::Rook => zone.contains(m.to()) || zone.contains(m.from()),
                _ => false,
            }
    }

    /// Generator number `kind` (legal, captures, quiets, quiet checks) into `sink`.
    fn generate_into<S: MoveSink>(pos: &Position, kind: usize, checks: &CheckInfo, sink: &mut S) {
        match kind {
            0 => pos.generate_legal(sink),
            1 => pos.generate_captures(sink),
            2 => pos.generate_quiets(sink),
            _ if !pos.in_check() => pos.generate_quiet_checks(sink, checks),
            _ => {}
        }
    }

    /// For a sink that does not want them, every generator leaves out exactly the
    /// inferior non-promotions and keeps the order of the rest.
    #[test]
    fn search_sinks_get_the_moves_less_inferior_non_promotions_in_order() {
        let suite = crate::rules::random_walk::capture_heavy_suite(400, 29);
        let mut left_out = 0;
        for pos in &suite {
            let info = pos.check_info();
            for (kind, name) in ["legal", "captures", "quiets", "quiet checks"].into_iter().enumerate() {
                let mut all = MoveList::new();
                generate_into(pos, kind, &info, &mut all);
                let mut search = SearchSink(Vec::new());
                generate_into(pos, kind, &info, &mut search);
                let want: Vec<Move> = all.iter().copied().filter(|&m| !inferior(m)).collect();
                assert_eq!(search.0, want, "{name} in {}", pos.to_sfen());
                left_out += all.len() - want.len();
            }
        }
        assert!(left_out > 300, "{left_out} inferior non-promotions left out");
    }

    #[test]
    fn quiet_checks_are_the_checking_quiets_in_order() {
        let mut suite = crate::rules::random_walk::capture_heavy_suite(600, 23);
        suite.push(
            Position::from_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1")
                .unwrap(),
        );
        let (mut checks, mut discovered, mut promoting, mut drops) = (0, 0, 0, 0);
        for pos in suite.iter().filter(|p| !p.in_check()) {
            let info = pos.check_info();
            let mut want = MoveList::new();
            pos.generate_quiets(&mut want);
            want.retain(|m| info.gives_check(m));
            let mut got = MoveList::new();
            pos.generate_quiet_checks(&mut got, &info);
            let (want, got): (Vec<Move>, Vec<Move>) =
                (want.iter().copied().collect(), got.iter().copied().collect());
            assert_eq!(got, want, "in {}", pos.to_sfen());
            for m in want {
                checks += 1;
                discovered += (!m.is_drop() && info.discoverers.contains(m.from())) as u32;
                promoting += m.is_promotion() as u32;
                drops += m.is_drop() as u32;
            }
        }
        assert!(
            checks > 2000 && discovered > 20 && promoting > 50 && drops > 500,
            "{checks} quiet checks: {discovered} discovered, {promoting} promoting, {drops} drops"
        );
    }

    #[test]
    fn pawn_drop_mate_is_excluded() {
        let pos = Position::from_sfen("7lk/9/8S/9/9/9/9/7L1/8K b P 1").unwrap();
        let list = pos.legal_moves();
        assert_eq!(list.len(), 85);
        let drop = Move::new_drop(PieceType::Pawn, Square::new(0, 1), Color::Black);
        assert!(!list.contains(drop));
        assert!(!pos.is_legal(drop));
    }
}
