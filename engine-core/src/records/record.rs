//! The parsed game record shared by every format, its result, and the parse error.

use crate::rules::{Color, Hand, Move, Piece, PieceType, Position, Square, UsiPosition};
use std::fmt;

/// One game: where it started, the checked main line, the result and the header fields.
#[derive(Clone, Debug, PartialEq)]
pub struct GameRecord {
    /// Start position (even game, handicap, board diagram or CSA `P` lines).
    pub start: Position,
    /// Main line only; every move was checked legal while parsing.
    pub moves: Vec<RecordMove>,
    pub result: GameResult,
    pub black_name: Option<String>,
    pub white_name: Option<String>,
    pub black_rating: Option<f64>,
    pub white_rating: Option<f64>,
    /// Other header fields, in file order, as given (`$EVENT:...` → `("EVENT", "...")`,
    /// `棋戦：...` → `("棋戦", "...")`).
    pub headers: Vec<(String, String)>,
    /// KIF/KI2 variations (`変化：N手`), kept out of the main line.
    pub branches: Vec<Branch>,
}

/// A main-line move with what the record said about it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordMove {
    pub mv: Move,
    /// 1-based line in the file where the move was read.
    pub line: usize,
    /// CSA `'**` comment score after this move, as written (floodgate: Black's view).
    pub score: Option<i32>,
    /// Time spent on this move in seconds (CSA `T`, KIF `( m:ss/...)`).
    pub seconds: Option<f64>,
    /// Other comments following the move, joined with newlines.
    pub comment: Option<String>,
}

impl RecordMove {
    pub fn new(mv: Move, line: usize) -> RecordMove {
        RecordMove { mv, line, score: None, seconds: None, comment: None }
    }

    pub(crate) fn push_comment(&mut self, text: &str) {
        match &mut self.comment {
            Some(c) => {
                c.push('\n');
                c.push_str(text);
            }
            None => self.comment = Some(text.to_string()),
        }
    }
}

/// A variation. Its first move replaces main-line (or parent-branch) move number `ply`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    /// 1-based move number (counted from the record's start position) of the first move.
    pub ply: usize,
    /// Index into `GameRecord::branches` of the line it forks from; `None` = main line.
    pub parent: Option<usize>,
    pub moves: Vec<Move>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    BlackWin,
    WhiteWin,
    Draw,
    Unknown,
}

impl Outcome {
    /// The win of `color`.
    pub fn win_for(color: Color) -> Outcome {
        match color {
            Color::Black => Outcome::BlackWin,
            Color::White => Outcome::WhiteWin,
        }
    }

    /// The loss of `color`.
    pub fn loss_for(color: Color) -> Outcome {
        Outcome::win_for(color.opponent())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ResultReason {
    Resign,
    Checkmate,
    Repetition,
    PerpetualCheck,
    Declaration,
    /// 持将棋 (CSA `%JISHOGI`).
    Impasse,
    TimeUp,
    IllegalMove,
    /// 引き分け (CSA `%HIKIWAKE`).
    Draw,
    MaxMoves,
    /// 中断 (CSA `%CHUDAN`).
    Abort,
    /// The record ends without any result: the result is unknown (never a draw).
    NoEndMarker,
    Other(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GameResult {
    pub outcome: Outcome,
    pub reason: ResultReason,
}

impl GameResult {
    pub fn new(outcome: Outcome, reason: ResultReason) -> GameResult {
        GameResult { outcome, reason }
    }

    pub fn unknown() -> GameResult {
        GameResult { outcome: Outcome::Unknown, reason: ResultReason::NoEndMarker }
    }
}

/// Record formats understood by `parse_text`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordFormat {
    Csa,
    Kif,
    Ki2,
    UsiLines,
}

/// A parse error with where it happened. Display: `FILE:LINE: move N: REASON` (the move
/// part is left out when the error is not about a move).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    pub file: String,
    pub line: usize,
    pub move_number: Option<usize>,
    pub reason: String,
}

impl RecordError {
    pub fn new(
        file: &str,
        line: usize,
        move_number: Option<usize>,
        reason: impl Into<String>,
    ) -> RecordError {
        RecordError { file: file.to_string(), line, move_number, reason: reason.into() }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.move_number {
            Some(n) => write!(f, "{}:{}: move {}: {}", self.file, self.line, n, self.reason),
            None => write!(f, "{}:{}: {}", self.file, self.line, self.reason),
        }
    }
}

impl std::error::Error for RecordError {}

impl GameRecord {
    /// An empty record starting at `start` with an unknown result.
    pub fn new(start: Position) -> GameRecord {
        GameRecord {
            start,
            moves: Vec::new(),
            result: GameResult::unknown(),
            black_name: None,
            white_name: None,
            black_rating: None,
            white_rating: None,
            headers: Vec::new(),
            branches: Vec::new(),
        }
    }

    /// The main-line moves without annotations.
    pub fn main_line(&self) -> Vec<Move> {
        self.moves.iter().map(|m| m.mv).collect()
    }

    /// The position after the whole main line.
    pub fn final_position(&self) -> Position {
        let mut pos = self.start;
        for m in &self.moves {
            pos.do_move(m.mv);
        }
        pos
    }

    /// The moves of branch `index` from the start position: the parent line's moves before
    /// the fork followed by the branch's own moves. `None` for a bad index or a parent
    /// that does not come before its child.
    pub fn branch_line(&self, index: usize) -> Option<Vec<Move>> {
        // Walk up to the main line, remembering each line and where its child forks.
        let mut chain = Vec::new();
        let mut idx = index;
        loop {
            let b = self.branches.get(idx)?;
            chain.push(idx);
            match b.parent {
                None => break,
                Some(p) if p < idx => idx = p,
                Some(_) => return None,
            }
        }
        let mut line = self.main_line();
        for &k in chain.iter().rev() {
            let b = &self.branches[k];
            line.truncate(b.ply.saturating_sub(1));
            line.extend_from_slice(&b.moves);
        }
        Some(line)
    }

    /// `startpos moves ...` for an even-game start at move 1, else `sfen <SFEN> moves ...`
    /// (` moves` is left out when there are none).
    pub fn to_usi_line(&self) -> String {
        UsiPosition::format(&self.start, self.moves.iter().map(|m| m.mv))
    }
}

/// A board being set up from text, checked and turned into a `Position` at the end.
/// Unlike `Position::put_piece` it never asserts: bad input becomes an error message.
#[derive(Clone, Debug)]
pub(crate) struct BoardSetup {
    pub board: [Option<Piece>; 81],
    pub hands: [[u32; 8]; 2],
    pub side: Color,
}

impl BoardSetup {
    pub fn empty() -> BoardSetup {
        BoardSetup { board: [None; 81], hands: [[0; 8]; 2], side: Color::Black }
    }

    pub fn from_position(pos: &Position) -> BoardSetup {
        let mut s = BoardSetup::empty();
        for sq in Square::all() {
            let p = pos.piece_on(sq);
            if !p.is_empty() {
                s.board[sq.index()] = Some(p);
            }
        }
        for c in Color::ALL {
            for pt in PieceType::HAND {
                s.hands[c.index()][pt.index()] = pos.hand(c).count(pt);
            }
        }
        s.side = pos.side_to_move();
        s
    }

    /// How many of each unpromoted kind are on the board or in a hand.
    pub fn counts(&self) -> [u32; 9] {
        let mut counts = [0u32; 9];
        for p in self.board.iter().flatten() {
            counts[p.piece_type().unpromote().index()] += 1;
        }
        for h in &self.hands {
            for (i, n) in h.iter().enumerate() {
                counts[i] += n;
            }
        }
        counts
    }

    pub fn to_position(&self) -> Result<Position, String> {
        let counts = self.counts();
        for pt in PieceType::HAND.iter().copied().chain([PieceType::King]) {
            if counts[pt.index()] > pt.max_count() as u32 {
                return Err(format!("too many pieces of kind {}", pt.sfen_char()));
            }
        }
        let mut pos = Position::empty();
        for sq in Square::all() {
            if let Some(p) = self.board[sq.index()] {
                pos.put_piece(sq, p);
            }
        }
        for c in Color::ALL {
            let mut hand = Hand::EMPTY;
            for pt in PieceType::HAND {
                hand.set(pt, self.hands[c.index()][pt.index()]).ok_or("too many pieces in hand")?;
            }
            pos.set_hand(c, hand);
        }
        pos.set_side_to_move(self.side);
        pos.finish_setup();
        pos.validate()?;
        Ok(pos)
    }
}

/// Plays `moves` (already checked legal) from `start`.
pub(crate) fn replay(start: &Position, moves: &[Move]) -> Position {
    let mut pos = *start;
    for &m in moves {
        pos.do_move(m);
    }
    pos
}
