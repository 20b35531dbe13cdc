//! SFEN positions and USI move strings, both ways, with validation of untrusted input.

use super::bitboard::Bitboard;
use super::position::Position;
use super::types::{Color, Hand, Move, Piece, PieceType, Square};
use thiserror::Error;

pub const STARTPOS_SFEN: &str = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1";

/// Standard handicap start positions (the handicapped side is White, and moves first).
pub const HANDICAPS: &[(&str, &str)] = &[
    ("lance", "lnsgkgsn1/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("right-lance", "1nsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("bishop", "lnsgkgsnl/1r7/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("rook", "lnsgkgsnl/7b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("rook-lance", "lnsgkgsn1/7b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("2-piece", "lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("4-piece", "1nsgkgsn1/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("6-piece", "2sgkgs2/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("8-piece", "3gkg3/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
    ("10-piece", "4k4/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"),
];

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SfenError {
    #[error("SFEN has {0} fields; expected board, side, hand and optional move number")]
    FieldCount(usize),
    #[error("SFEN board: {0}")]
    Board(String),
    #[error("SFEN side to move {0:?}: expected 'b' or 'w'")]
    Side(String),
    #[error("SFEN hand {0:?}: {1}")]
    Hand(String, String),
    #[error("SFEN move number {0:?}: expected a positive integer")]
    MoveNumber(String),
    #[error("illegal position: {0}")]
    Illegal(String),
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum UsiMoveError {
    #[error("malformed USI move {0:?}")]
    Syntax(String),
    #[error("illegal move {0:?} in this position")]
    Illegal(String),
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum UsiPositionError {
    #[error("{0}")]
    Sfen(#[from] SfenError),
    #[error("move {number} ({text}): {source}")]
    Move { number: usize, text: String, source: UsiMoveError },
    #[error("expected `startpos`, `sfen <SFEN>` or a bare SFEN, then optionally `moves m1 m2 ...`")]
    Setup,
}

/// A position the way the USI `position` command gives it: where the game started and
/// the moves played since (each checked for legality).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsiPosition {
    pub start: Position,
    pub moves: Vec<Move>,
}

impl UsiPosition {
    /// Parses `[position] startpos|sfen <SFEN>|<SFEN> [moves m1 m2 ...]`.
    pub fn parse(text: &str) -> Result<UsiPosition, UsiPositionError> {
        let text = text.trim();
        let text =
            text.strip_prefix("position").filter(|t| t.is_empty() || t.starts_with(' ')).unwrap_or(text);
        let words: Vec<&str> = text.split_whitespace().collect();
        let moves_at = words.iter().position(|&w| w == "moves").unwrap_or(words.len());
        let (setup, moves) = (&words[..moves_at], &words[(moves_at + 1).min(words.len())..]);
        if setup.is_empty() || setup == ["sfen"] {
            return Err(UsiPositionError::Setup);
        }
        let start = Position::from_sfen(&setup.join(" "))?;
        let mut pos = start;
        let mut list = Vec::with_capacity(moves.len());
        for (i, text) in moves.iter().enumerate() {
            let m = pos.parse_usi_move(text).map_err(|source| UsiPositionError::Move {
                number: i + 1,
                text: text.to_string(),
                source,
            })?;
            pos.do_move(m);
            list.push(m);
        }
        Ok(UsiPosition { start, moves: list })
    }

    /// The text [`UsiPosition::parse`] reads back: `startpos` for the even-game start at
    /// move 1, else `sfen <SFEN>`, then ` moves m1 m2 ...` when there are moves.
    pub fn format(start: &Position, moves: impl IntoIterator<Item = Move>) -> String {
        let mut s = if *start == Position::startpos() {
            "startpos".to_string()
        } else {
            format!("sfen {}", start.to_sfen())
        };
        let mut moves = moves.into_iter().peekable();
        if moves.peek().is_some() {
            s.push_str(" moves");
            for m in moves {
                s.push(' ');
                s.push_str(&m.to_usi());
            }
        }
        s
    }

    /// The position after all the moves.
    pub fn current(&self) -> Position {
        let mut pos = self.start;
        for &m in &self.moves {
            pos.do_move(m);
        }
        pos
    }
}

fn parse_square(file: u8, rank: u8) -> Option<Square> {
    let f = file.checked_sub(b'1')?;
    let r = rank.checked_sub(b'a')?;
    (f < 9 && r < 9).then(|| Square::new(f, r))
}

impl Position {
    /// The even-game start position.
    pub fn startpos() -> Position {
        Position::from_sfen(STARTPOS_SFEN).expect("the start position SFEN is valid")
    }

    /// Parses `startpos`, `sfen <SFEN>` or a bare SFEN (the move number may be omitted).
    pub fn from_sfen(text: &str) -> Result<Position, SfenError> {
        let text = text.trim();
        if text == "startpos" {
            return Position::from_sfen(STARTPOS_SFEN);
        }
        let text = text.strip_prefix("sfen ").unwrap_or(text);
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() < 3 || fields.len() > 4 {
            return Err(SfenError::FieldCount(fields.len()));
        }
        let mut pos = Position::empty();
        parse_board(&mut pos, fields[0])?;
        let side = match fields[1] {
            "b" => Color::Black,
            "w" => Color::White,
            other => return Err(SfenError::Side(other.to_string())),
        };
        pos.set_side_to_move(side);
        parse_hands(&mut pos, fields[2])?;
        if let Some(n) = fields.get(3) {
            match n.parse::<u32>() {
                Ok(v) if (1..1_000_000).contains(&v) => pos.set_ply(v),
                _ => return Err(SfenError::MoveNumber(n.to_string())),
            }
        }
        pos.finish_setup();
        pos.validate().map_err(SfenError::Illegal)?;
        Ok(pos)
    }

    /// Checks what any legal shogi position satisfies: piece counts within one set, at most
    /// one king each, no piece on a rank it can never leave, no two unpromoted pawns of one
    /// side on a file, and the side not to move not in check.
    pub fn validate(&self) -> Result<(), String> {
        let counts = self.piece_counts();
        for pt in PieceType::HAND.iter().copied().chain([PieceType::King]) {
            if counts[pt.index()] > pt.max_count() as u32 {
                return Err(format!(
                    "{} pieces of kind {} (a set has {})",
                    counts[pt.index()],
                    pt.sfen_char(),
                    pt.max_count()
                ));
            }
        }
        for color in Color::ALL {
            if self.pieces(color, PieceType::King).count() > 1 {
                return Err(format!("{color:?} has more than one king"));
            }
            let dead1 = Bitboard::dead_ranks(color, 1);
            let dead2 = Bitboard::dead_ranks(color, 2);
            if ((self.pieces(color, PieceType::Pawn) | self.pieces(color, PieceType::Lance)) & dead1).any()
                || (self.pieces(color, PieceType::Knight) & dead2).any()
            {
                return Err(format!("a {color:?} piece stands where it can never move"));
            }
            for file in 0..9 {
                if (self.pieces(color, PieceType::Pawn) & Bitboard::file_mask(file)).more_than_one() {
                    return Err(format!("{color:?} has two pawns on file {}", file + 1));
                }
            }
        }
        let waiting = self.side_to_move().opponent();
        if let Some(k) = self.king_square(waiting)
            && self.is_attacked(self.side_to_move(), k, self.occupied())
        {
            return Err("the side not to move is in check".to_string());
        }
        Ok(())
    }

    /// SFEN with the move number.
    pub fn to_sfen(&self) -> String {
        let mut s = String::with_capacity(90);
        for rank in 0..9u8 {
            let mut empty = 0;
            for file in (0..9u8).rev() {
                let p = self.piece_on(Square::new(file, rank));
                if p.is_empty() {
                    empty += 1;
                } else {
                    if empty > 0 {
                        s.push_str(&empty.to_string());
                        empty = 0;
                    }
                    s.push_str(&p.to_sfen());
                }
            }
            if empty > 0 {
                s.push_str(&empty.to_string());
            }
            if rank < 8 {
                s.push('/');
            }
        }
        s.push_str(if self.side_to_move() == Color::Black { " b " } else { " w " });
        let mut hand = String::new();
        // SFEN hand order: R B G S N L P, Black first.
        const ORDER: [PieceType; 7] = [
            PieceType::Rook,
            PieceType::Bishop,
            PieceType::Gold,
            PieceType::Silver,
            PieceType::Knight,
            PieceType::Lance,
            PieceType::Pawn,
        ];
        for color in Color::ALL {
            for pt in ORDER {
                let n = self.hand(color).count(pt);
                if n > 1 {
                    hand.push_str(&n.to_string());
                }
                if n > 0 {
                    let c = pt.sfen_char();
                    hand.push(if color == Color::Black { c } else { c.to_ascii_lowercase() });
                }
            }
        }
        if hand.is_empty() {
            hand.push('-');
        }
        s.push_str(&hand);
        s.push(' ');
        s.push_str(&self.ply().to_string());
        s
    }

    /// Parses a USI move (`7g7f`, `8h2b+`, `P*5e`) and checks that it is legal here.
    pub fn parse_usi_move(&self, text: &str) -> Result<Move, UsiMoveError> {
        let syntax = || UsiMoveError::Syntax(text.to_string());
        let b = text.as_bytes();
        let m = match b {
            [p, b'*', f, r] => {
                let pt = PieceType::from_sfen_char(*p as char)
                    .filter(|pt| pt.hand_index().is_some() && p.is_ascii_uppercase())
                    .ok_or_else(syntax)?;
                let to = parse_square(*f, *r).ok_or_else(syntax)?;
                Move::new_drop(pt, to, self.side_to_move())
            }
            [f1, r1, f2, r2, rest @ ..] if rest.is_empty() || rest == b"+" => {
                let from = parse_square(*f1, *r1).ok_or_else(syntax)?;
                let to = parse_square(*f2, *r2).ok_or_else(syntax)?;
                let piece = self.piece_on(from);
                if piece.is_empty() {
                    return Err(UsiMoveError::Illegal(text.to_string()));
                }
                Move::new_board(from, to, !rest.is_empty(), piece)
            }
            _ => return Err(syntax()),
        };
        if self.is_legal(m) { Ok(m) } else { Err(UsiMoveError::Illegal(text.to_string())) }
    }
}

impl std::fmt::Debug for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Position({})", self.to_sfen())
    }
}

fn parse_board(pos: &mut Position, board: &str) -> Result<(), SfenError> {
    let ranks: Vec<&str> = board.split('/').collect();
    if ranks.len() != 9 {
        return Err(SfenError::Board(format!("{} ranks; expected 9", ranks.len())));
    }
    for (rank, row) in ranks.iter().enumerate() {
        let mut file: i32 = 8;
        let mut promoted = false;
        for c in row.chars() {
            if let Some(d) = c.to_digit(10) {
                if promoted || d == 0 {
                    return Err(SfenError::Board(format!("rank {}: bad digit {c:?}", rank + 1)));
                }
                file -= d as i32;
                if file < -1 {
                    return Err(SfenError::Board(format!("rank {} is longer than 9 squares", rank + 1)));
                }
                continue;
            }
            if c == '+' {
                if promoted {
                    return Err(SfenError::Board(format!("rank {}: '++'", rank + 1)));
                }
                promoted = true;
                continue;
            }
            let pt = PieceType::from_sfen_char(c)
                .ok_or_else(|| SfenError::Board(format!("rank {}: unknown piece {c:?}", rank + 1)))?;
            if file < 0 {
                return Err(SfenError::Board(format!("rank {} is longer than 9 squares", rank + 1)));
            }
            let pt = if promoted {
                if !pt.can_promote() {
                    return Err(SfenError::Board(format!("rank {}: {c:?} cannot be promoted", rank + 1)));
                }
                pt.promote()
            } else {
                pt
            };
            promoted = false;
            let color = if c.is_ascii_uppercase() { Color::Black } else { Color::White };
            pos.put_piece(Square::new(file as u8, rank as u8), Piece::new(color, pt));
            file -= 1;
        }
        if promoted || file != -1 {
            return Err(SfenError::Board(format!("rank {} does not have 9 squares", rank + 1)));
        }
    }
    Ok(())
}

fn parse_hands(pos: &mut Position, text: &str) -> Result<(), SfenError> {
    if text == "-" {
        return Ok(());
    }
    let err = |why: &str| SfenError::Hand(text.to_string(), why.to_string());
    let mut hands = [Hand::EMPTY; 2];
    let mut count: u32 = 0;
    let mut any_digit = false;
    for c in text.chars() {
        if let Some(d) = c.to_digit(10) {
            count = count * 10 + d;
            any_digit = true;
            if count > 18 {
                return Err(err("count too large"));
            }
            continue;
        }
        let pt = PieceType::from_sfen_char(c)
            .filter(|pt| pt.hand_index().is_some())
            .ok_or_else(|| err(&format!("unknown hand piece {c:?}")))?;
        let n = if any_digit { count } else { 1 };
        if n == 0 {
            return Err(err("zero count"));
        }
        let color = if c.is_ascii_uppercase() { Color::Black } else { Color::White };
        let h = &mut hands[color.index()];
        let total = h.count(pt) + n;
        h.set(pt, total).ok_or_else(|| err("more pieces than a set has"))?;
        count = 0;
        any_digit = false;
    }
    if any_digit {
        return Err(err("count without a piece"));
    }
    pos.set_hand(Color::Black, hands[0]);
    pos.set_hand(Color::White, hands[1]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every form the USI `position` command accepts, with or without the keyword, gives
    /// the same start and moves; bad input names what is wrong.
    #[test]
    fn usi_positions_in_every_form() {
        let after = {
            let mut p = Position::startpos();
            let m = p.parse_usi_move("7g7f").unwrap();
            p.do_move(m);
            p
        };
        let forms = [
            "startpos moves 7g7f 3c3d",
            "position startpos moves 7g7f 3c3d",
            &format!("sfen {STARTPOS_SFEN} moves 7g7f 3c3d"),
            &format!("{STARTPOS_SFEN} moves 7g7f 3c3d"),
            &format!("position sfen {} moves 3c3d", after.to_sfen()),
        ];
        let want = UsiPosition::parse(forms[0]).unwrap().current();
        for f in forms {
            let u = UsiPosition::parse(f).unwrap_or_else(|e| panic!("{f}: {e}"));
            assert_eq!(u.current().to_sfen(), want.to_sfen(), "{f}");
        }
        assert_eq!(UsiPosition::parse("startpos").unwrap().moves.len(), 0);
        assert_eq!(UsiPosition::parse("startpos moves").unwrap().moves.len(), 0);
        assert!(matches!(
            UsiPosition::parse("startpos moves 7g7f 7g7f"),
            Err(UsiPositionError::Move { number: 2, .. })
        ));
        assert!(matches!(
            UsiPosition::parse("startpos moves 1a1b"),
            Err(UsiPositionError::Move { number: 1, .. })
        ));
        assert!(matches!(UsiPosition::parse("sfen garbage"), Err(UsiPositionError::Sfen(_))));
        assert_eq!(UsiPosition::parse(""), Err(UsiPositionError::Setup));
        assert_eq!(UsiPosition::parse("position"), Err(UsiPositionError::Setup));
        assert_eq!(UsiPosition::parse("moves 7g7f"), Err(UsiPositionError::Setup));
    }

    #[test]
    fn sfen_round_trips() {
        for sfen in [
            STARTPOS_SFEN,
            "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1",
            "R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1",
            "ln1g5/1r2k2g1/p2ppp3/3s1+bpP1/9/P1pS1P1p1/1PGPP1P2/3K2S1R/L4G1N1 b SN2L4Pbn 73",
        ] {
            assert_eq!(Position::from_sfen(sfen).unwrap().to_sfen(), sfen);
        }
        // Hands are written in the canonical order (R B G S N L P, Black first).
        let matsuri =
            Position::from_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w GR5pnsg 1")
                .unwrap();
        assert_eq!(
            matsuri.to_sfen(),
            "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1"
        );
        for (_, sfen) in HANDICAPS {
            assert_eq!(Position::from_sfen(sfen).unwrap().to_sfen(), *sfen);
        }
    }

    #[test]
    fn bad_sfens_are_rejected_with_reasons() {
        assert!(matches!(Position::from_sfen("9/9/9 b - 1"), Err(SfenError::Board(_))));
        assert!(matches!(
            Position::from_sfen("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL x - 1"),
            Err(SfenError::Side(_))
        ));
        assert!(matches!(
            Position::from_sfen("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b 19P 1"),
            Err(SfenError::Hand(..))
        ));
        assert!(matches!(Position::from_sfen("P3k4/9/9/9/9/9/9/9/4K4 b - 1"), Err(SfenError::Illegal(_))));
        assert!(matches!(Position::from_sfen("4k4/9/9/9/4P4/4P4/9/9/4K4 b - 1"), Err(SfenError::Illegal(_))));
        assert!(matches!(Position::from_sfen("4k4/4R4/9/9/9/9/9/9/4K4 b - 1"), Err(SfenError::Illegal(_))));
        assert!(Position::from_sfen("4k4/4R4/9/9/9/9/9/9/4K4 w - 1").is_ok());
    }

    #[test]
    fn usi_moves_parse_and_print() {
        let pos = Position::startpos();
        for m in pos.legal_moves().iter() {
            assert_eq!(pos.parse_usi_move(&m.to_usi()), Ok(*m));
        }
        assert!(matches!(pos.parse_usi_move("7g7e"), Err(UsiMoveError::Illegal(_))));
        assert!(matches!(pos.parse_usi_move("P*5e"), Err(UsiMoveError::Illegal(_))));
        assert!(matches!(pos.parse_usi_move("0a1b"), Err(UsiMoveError::Syntax(_))));
        assert!(matches!(pos.parse_usi_move("K*5e"), Err(UsiMoveError::Syntax(_))));
    }
}
