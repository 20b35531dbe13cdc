//! CSA standard record format, versions 2.1, 2.2 and 3.0.
//!
//! A file may hold several games separated by lines holding only `/`. Each line holds one
//! or more statements separated by `,` (so `+7776FU,T12` works); lines starting with `'`
//! are comments and are never split. Recognised statements:
//! `V2`/`V2.1`/`V2.2`/`V3.0`, `N+name`/`N-name`, `$KEY:value`, `PI` with removals
//! (`PI82HI22KA`), `P1`..`P9` rows, `P+`/`P-` piece lists (with `00` = hand and `00AL` =
//! every remaining piece except kings), the side to move `+`/`-`, moves `+7776FU` (the
//! piece named is the piece AFTER the move; origin `00` is a drop), `T<seconds>`, and end
//! markers `%...`. Comments: `'**` stores the first integer after it as the score of the
//! previous move; `'black_rate:NAME:RATE` / `'white_rate:NAME:RATE` give ratings;
//! `'summary:REASON:NAME1 RES1:NAME2 RES2` (floodgate) refines the result; other
//! comments after a move are kept as that move's comment.
//!
//! End markers and the result they give, `S` being the side to move when the marker is
//! read (CSA standard record format, section on special moves):
//! - `%TORYO`: S resigned → S loses (Resign).
//! - `%TSUMI`: S is checkmated (written after the mating move) → S loses (Checkmate).
//! - `%KACHI`: S declared an entering-king win → S wins (Declaration).
//! - `%TIME_UP`: S ran out of time → S loses (TimeUp).
//! - `%ILLEGAL_MOVE`: S tried an illegal move (the move itself is not recorded) → S loses
//!   (IllegalMove).
//! - `%+ILLEGAL_ACTION` / `%-ILLEGAL_ACTION`: Black / White acted illegally → that side
//!   loses, whoever is to move (IllegalMove).
//! - `%SENNICHITE`: draw by repetition (Repetition), unless a floodgate `'summary:` line
//!   says `oute_sennichite`, which is a perpetual-check loss (PerpetualCheck, winner from
//!   the summary).
//! - `%JISHOGI`: 持将棋, draw (Impasse). `%HIKIWAKE`: draw (Draw). `%MAX_MOVES`: draw by
//!   the move limit (MaxMoves).
//! - `%CHUDAN`: aborted, Unknown (Abort). `%FUZUMI` (no mate), `%ERROR`, `%MATTA` and
//!   unknown markers: Unknown with `Other("FUZUMI")` etc.
//! - no end marker: Unknown (NoEndMarker), never a draw.
//!
//! A floodgate `'summary:` line with `win`/`lose` for the players overrides the winner
//! only when the end marker left it Unknown or it is `%SENNICHITE`/`%ILLEGAL_MOVE`.

use super::record::{BoardSetup, GameRecord, GameResult, Outcome, RecordError, RecordMove, ResultReason};
use crate::rules::{Color, Move, Piece, PieceType, Position, Square};

/// Parses every game in a CSA text.
pub fn parse_csa(text: &str, file: &str) -> Result<Vec<GameRecord>, RecordError> {
    let mut games = Vec::new();
    let mut chunk: Vec<(usize, &str)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches(['\r', '\u{feff}']);
        let line = if i == 0 { line.trim_start_matches('\u{feff}') } else { line };
        if line.trim() == "/" {
            games.push(parse_game(&chunk, file)?);
            chunk.clear();
        } else {
            chunk.push((i + 1, line));
        }
    }
    // A trailing chunk with nothing but blank lines or comments after a separator is no game.
    let has_content = chunk.iter().any(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('\''));
    if has_content || games.is_empty() {
        games.push(parse_game(&chunk, file)?);
    }
    Ok(games)
}

/// The CSA name of a piece kind (`FU`, ..., `RY`), as the reader and the writer use it.
pub fn csa_piece(pt: PieceType) -> &'static str {
    match pt {
        PieceType::Pawn => "FU",
        PieceType::Lance => "KY",
        PieceType::Knight => "KE",
        PieceType::Silver => "GI",
        PieceType::Gold => "KI",
        PieceType::Bishop => "KA",
        PieceType::Rook => "HI",
        PieceType::King => "OU",
        PieceType::ProPawn => "TO",
        PieceType::ProLance => "NY",
        PieceType::ProKnight => "NK",
        PieceType::ProSilver => "NG",
        PieceType::Horse => "UM",
        PieceType::Dragon => "RY",
    }
}

/// The piece kind a CSA name stands for (`GY`, written by some tools, is a king too).
fn piece_from_code(code: &str) -> Option<PieceType> {
    if code == "GY" {
        return Some(PieceType::King);
    }
    PieceType::ALL.into_iter().find(|&pt| csa_piece(pt) == code)
}

/// CSA square "77" → Square; `None` for "00" or anything malformed.
fn csa_square(file: char, rank: char) -> Option<Square> {
    let f = file.to_digit(10)?;
    let r = rank.to_digit(10)?;
    ((1..=9).contains(&f) && (1..=9).contains(&r)).then(|| Square::new(f as u8 - 1, r as u8 - 1))
}

struct GameParser<'a> {
    file: &'a str,
    rec: GameRecord,
    setup: BoardSetup,
    /// `P` lines seen (a board was given explicitly).
    board_given: bool,
    /// `00AL` pending for this colour.
    all_to: Option<Color>,
    pos: Option<Position>,
    ended: bool,
    summary: Option<String>,
    line: usize,
}

fn parse_game(lines: &[(usize, &str)], file: &str) -> Result<GameRecord, RecordError> {
    let mut p = GameParser {
        file,
        rec: GameRecord::new(Position::empty()),
        setup: BoardSetup::empty(),
        board_given: false,
        all_to: None,
        pos: None,
        ended: false,
        summary: None,
        line: lines.first().map_or(1, |l| l.0),
    };
    for &(n, line) in lines {
        p.line = n;
        if line.starts_with('\'') {
            p.comment(line)?;
            continue;
        }
        for stmt in line.split(',') {
            p.statement(stmt)?;
        }
    }
    p.finish()
}

impl GameParser<'_> {
    fn err(&self, move_number: Option<usize>, reason: impl Into<String>) -> RecordError {
        RecordError::new(self.file, self.line, move_number, reason)
    }

    fn next_move_number(&self) -> usize {
        self.rec.moves.len() + 1
    }

    fn comment(&mut self, line: &str) -> Result<(), RecordError> {
        let body = &line[1..];
        if let Some(rest) = body.strip_prefix("**") {
            if let Some(score) = first_integer(rest)
                && let Some(last) = self.rec.moves.last_mut()
            {
                last.score = Some(score);
            }
            return Ok(());
        }
        for (prefix, black) in [("black_rate:", true), ("white_rate:", false)] {
            if let Some(rest) = body.strip_prefix(prefix) {
                let rate = rest.rsplit(':').next().and_then(|r| r.trim().parse::<f64>().ok());
                if let Some(r) = rate.filter(|r| r.is_finite()) {
                    if black {
                        self.rec.black_rating = Some(r);
                    } else {
                        self.rec.white_rating = Some(r);
                    }
                }
                return Ok(());
            }
        }
        if let Some(rest) = body.strip_prefix("summary:") {
            self.summary = Some(rest.to_string());
            self.rec.headers.push(("summary".to_string(), rest.to_string()));
            return Ok(());
        }
        if let Some(last) = self.rec.moves.last_mut()
            && !self.ended
        {
            last.push_comment(body);
        }
        Ok(())
    }

    fn statement(&mut self, stmt: &str) -> Result<(), RecordError> {
        let s = stmt.trim_end();
        let trimmed = s.trim();
        if trimmed.is_empty() {
            return Ok(());
        }
        let Some(first) = trimmed.chars().next() else { return Ok(()) };
        match first {
            'V' => {
                self.rec.headers.push(("version".to_string(), trimmed[1..].to_string()));
                Ok(())
            }
            'N' => {
                let rest = &trimmed[1..];
                let name = |n: &str| (!n.trim().is_empty()).then(|| n.to_string());
                if let Some(n) = rest.strip_prefix('+') {
                    self.rec.black_name = name(n);
                } else if let Some(n) = rest.strip_prefix('-') {
                    self.rec.white_name = name(n);
                } else {
                    return Err(self.err(None, format!("bad name line {trimmed:?}")));
                }
                Ok(())
            }
            '$' => {
                let rest = &trimmed[1..];
                let (k, v) = rest.split_once(':').unwrap_or((rest, ""));
                self.rec.headers.push((k.to_string(), v.to_string()));
                Ok(())
            }
            'P' => {
                if self.pos.is_some() {
                    return Err(self.err(None, "position line after the moves started"));
                }
                self.position_line(s.trim_start())
            }
            'T' => {
                let secs = trimmed[1..].trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
                let Some(secs) = secs else {
                    return Err(self.err(None, format!("bad time {trimmed:?}")));
                };
                if !self.ended
                    && let Some(last) = self.rec.moves.last_mut()
                {
                    last.seconds = Some(secs);
                }
                Ok(())
            }
            '%' => self.end_marker(trimmed),
            '+' | '-' if trimmed.len() == 1 => {
                if self.pos.is_some() {
                    return Err(self.err(None, "side-to-move line after the moves started"));
                }
                self.setup.side = if first == '+' { Color::Black } else { Color::White };
                self.establish()?;
                Ok(())
            }
            '+' | '-' => self.csa_move(trimmed),
            _ => Err(self.err(None, format!("unknown statement {trimmed:?}"))),
        }
    }

    fn position_line(&mut self, s: &str) -> Result<(), RecordError> {
        let chars: Vec<char> = s.chars().collect();
        let Some(&kind) = chars.get(1) else {
            return Err(self.err(None, "empty P line"));
        };
        match kind {
            'I' => {
                // Even-game setup, then removals given as groups of four: square + piece.
                let start = BoardSetup::from_position(&Position::startpos());
                self.setup.board = start.board;
                self.board_given = true;
                for g in chars[2..].chunks(4) {
                    if g.iter().all(|c| c.is_whitespace()) {
                        continue;
                    }
                    let sq = (g.len() == 4).then(|| csa_square(g[0], g[1])).flatten();
                    let code: String = g.iter().skip(2).collect();
                    let pt = piece_from_code(&code);
                    match (sq, pt) {
                        (Some(sq), Some(pt))
                            if self.setup.board[sq.index()].is_some_and(|p| p.piece_type() == pt) =>
                        {
                            self.setup.board[sq.index()] = None;
                        }
                        _ => {
                            let g: String = g.iter().collect();
                            return Err(self.err(None, format!("PI: cannot remove {g:?}")));
                        }
                    }
                }
                Ok(())
            }
            '1'..='9' => {
                let rank = kind as u8 - b'1';
                self.board_given = true;
                let mut cells: Vec<char> = chars[2..].to_vec();
                if cells.len() > 27 && cells[27..].iter().any(|c| !c.is_whitespace()) {
                    return Err(self.err(None, format!("P{}: more than 9 squares", rank + 1)));
                }
                cells.resize(27, ' ');
                for (i, cell) in cells.chunks(3).enumerate() {
                    let sq = Square::new(8 - i as u8, rank);
                    let piece = match cell[0] {
                        '+' | '-' => {
                            let code: String = cell[1..].iter().collect();
                            let pt = piece_from_code(&code)
                                .ok_or_else(|| self.err(None, format!("unknown piece {code:?}")))?;
                            let color = if cell[0] == '+' { Color::Black } else { Color::White };
                            Some(Piece::new(color, pt))
                        }
                        _ if cell[1] == '*' || cell.iter().all(|c| c.is_whitespace()) => None,
                        _ => {
                            let c: String = cell.iter().collect();
                            return Err(self.err(None, format!("P{}: bad square {c:?}", rank + 1)));
                        }
                    };
                    self.setup.board[sq.index()] = piece;
                }
                Ok(())
            }
            '+' | '-' => {
                let color = if kind == '+' { Color::Black } else { Color::White };
                self.board_given = true;
                for g in chars[2..].chunks(4) {
                    if g.iter().all(|c| c.is_whitespace()) {
                        continue;
                    }
                    let gs: String = g.iter().collect();
                    if g.len() != 4 {
                        return Err(self.err(None, format!("bad piece entry {gs:?}")));
                    }
                    let code: String = g[2..].iter().collect();
                    if g[0] == '0' && g[1] == '0' {
                        if code == "AL" {
                            self.all_to = Some(color);
                            continue;
                        }
                        let pt = piece_from_code(&code)
                            .filter(|pt| pt.hand_index().is_some())
                            .ok_or_else(|| self.err(None, format!("bad hand piece {gs:?}")))?;
                        let n = &mut self.setup.hands[color.index()][pt.index()];
                        if *n >= pt.max_count() as u32 {
                            return Err(self.err(None, format!("too many {code} in hand")));
                        }
                        *n += 1;
                    } else {
                        let sq = csa_square(g[0], g[1])
                            .ok_or_else(|| self.err(None, format!("bad square in {gs:?}")))?;
                        let pt = piece_from_code(&code)
                            .ok_or_else(|| self.err(None, format!("unknown piece {gs:?}")))?;
                        self.setup.board[sq.index()] = Some(Piece::new(color, pt));
                    }
                }
                Ok(())
            }
            _ => Err(self.err(None, format!("unknown position line {s:?}"))),
        }
    }

    /// Turns the setup into the start position (at the side line or the first move).
    fn establish(&mut self) -> Result<(), RecordError> {
        if self.pos.is_some() {
            return Ok(());
        }
        if !self.board_given {
            // No board at all: the even-game start (with the given side).
            let side = self.setup.side;
            self.setup = BoardSetup::from_position(&Position::startpos());
            self.setup.side = side;
        }
        if let Some(color) = self.all_to {
            let counts = self.setup.counts();
            for pt in PieceType::HAND {
                let rest = (pt.max_count() as u32).saturating_sub(counts[pt.index()]);
                self.setup.hands[color.index()][pt.index()] += rest;
            }
        }
        let pos = self.setup.to_position().map_err(|e| self.err(None, format!("start position: {e}")))?;
        self.rec.start = pos;
        self.pos = Some(pos);
        Ok(())
    }

    fn csa_move(&mut self, s: &str) -> Result<(), RecordError> {
        let n = self.next_move_number();
        if self.pos.is_none() {
            // No side line: the first move says who moves.
            self.setup.side = if s.starts_with('+') { Color::Black } else { Color::White };
            self.establish()?;
        }
        if self.ended {
            return Err(self.err(Some(n), format!("move {s:?} after the end marker")));
        }
        let Some(mut pos) = self.pos else { return Err(self.err(Some(n), "no position")) };
        let c: Vec<char> = s.chars().collect();
        if c.len() != 7 {
            return Err(self.err(Some(n), format!("malformed move {s:?}")));
        }
        let color = if c[0] == '+' { Color::Black } else { Color::White };
        if color != pos.side_to_move() {
            return Err(self.err(Some(n), format!("{s:?}: not this side's turn")));
        }
        let code: String = c[5..7].iter().collect();
        let after =
            piece_from_code(&code).ok_or_else(|| self.err(Some(n), format!("{s:?}: unknown piece")))?;
        let to = csa_square(c[3], c[4]).ok_or_else(|| self.err(Some(n), format!("{s:?}: bad square")))?;
        let m = if c[1] == '0' && c[2] == '0' {
            if after.hand_index().is_none() {
                return Err(self.err(Some(n), format!("{s:?}: cannot drop that piece")));
            }
            Move::new_drop(after, to, color)
        } else {
            let from =
                csa_square(c[1], c[2]).ok_or_else(|| self.err(Some(n), format!("{s:?}: bad square")))?;
            let piece = pos.piece_on(from);
            if piece.is_empty() || piece.color() != color {
                return Err(self.err(Some(n), format!("{s:?}: no own piece on the origin")));
            }
            let before = piece.piece_type();
            let promote = if before == after {
                false
            } else if before.can_promote() && before.promote() == after {
                true
            } else {
                return Err(self.err(Some(n), format!("{s:?}: the piece on the origin is not {code}")));
            };
            Move::new_board(from, to, promote, piece)
        };
        if !pos.is_legal(m) {
            return Err(self.err(Some(n), format!("illegal move {s:?}")));
        }
        pos.do_move(m);
        self.pos = Some(pos);
        self.rec.moves.push(RecordMove::new(m, self.line));
        Ok(())
    }

    fn end_marker(&mut self, s: &str) -> Result<(), RecordError> {
        if self.ended {
            return Ok(());
        }
        self.establish()?;
        let side = self.pos.map_or(Color::Black, |p| p.side_to_move());
        use Outcome::*;
        use ResultReason as R;
        let (outcome, reason) = match s {
            "%TORYO" => (Outcome::loss_for(side), R::Resign),
            "%TSUMI" => (Outcome::loss_for(side), R::Checkmate),
            "%KACHI" => (Outcome::win_for(side), R::Declaration),
            "%TIME_UP" => (Outcome::loss_for(side), R::TimeUp),
            "%ILLEGAL_MOVE" => (Outcome::loss_for(side), R::IllegalMove),
            "%+ILLEGAL_ACTION" => (WhiteWin, R::IllegalMove),
            "%-ILLEGAL_ACTION" => (BlackWin, R::IllegalMove),
            "%SENNICHITE" => (Draw, R::Repetition),
            "%JISHOGI" => (Draw, R::Impasse),
            "%HIKIWAKE" => (Draw, R::Draw),
            "%MAX_MOVES" => (Draw, R::MaxMoves),
            "%CHUDAN" => (Unknown, R::Abort),
            other => (Unknown, R::Other(other.trim_start_matches('%').to_string())),
        };
        self.rec.result = GameResult::new(outcome, reason);
        self.ended = true;
        Ok(())
    }

    fn finish(mut self) -> Result<GameRecord, RecordError> {
        self.establish()?;
        if let Some(summary) = self.summary.take() {
            self.apply_summary(&summary);
        }
        Ok(self.rec)
    }

    /// floodgate: `'summary:toryo:NAME1 win:NAME2 lose` (also `draw`, `sennichite`...).
    fn apply_summary(&mut self, summary: &str) {
        let mut parts = summary.split(':');
        let reason = parts.next().unwrap_or("");
        let mut winner = None;
        for part in parts {
            let Some((name, res)) = part.rsplit_once(' ') else { continue };
            let color = if self.rec.black_name.as_deref() == Some(name) {
                Color::Black
            } else if self.rec.white_name.as_deref() == Some(name) {
                Color::White
            } else {
                continue;
            };
            match res {
                "win" => winner = Some(color),
                "lose" => winner = Some(color.opponent()),
                _ => {}
            }
        }
        let r = &mut self.rec.result;
        if reason == "oute_sennichite" && r.reason == ResultReason::Repetition {
            r.reason = ResultReason::PerpetualCheck;
        }
        let refinable = r.outcome == Outcome::Unknown
            || matches!(r.reason, ResultReason::PerpetualCheck | ResultReason::IllegalMove);
        if let Some(w) = winner
            && refinable
            && r.reason != ResultReason::Abort
        {
            r.outcome = Outcome::win_for(w);
        }
    }
}

/// The first (optionally signed) integer in `s`.
fn first_integer(s: &str) -> Option<i32> {
    let t = s.trim_start();
    let mut end = 0;
    for (i, c) in t.char_indices() {
        if c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+')) {
            end = i + c.len_utf8();
        } else {
            break;
        }
    }
    t[..end].parse::<i64>().ok().map(|v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> GameRecord {
        let mut g = parse_csa(text, "t.csa").unwrap();
        assert_eq!(g.len(), 1);
        g.pop().unwrap()
    }

    #[test]
    fn moves_times_scores_and_result() {
        let g = one("V2.2\nN+a\nN-b\nPI\n+\n+7776FU,T12\n'** 30 -3334FU\n-3334FU\nT5\n'** -40\n%TORYO\n");
        assert_eq!(g.moves.len(), 2);
        assert_eq!(g.moves[0].seconds, Some(12.0));
        assert_eq!(g.moves[0].score, Some(30));
        assert_eq!(g.moves[1].score, Some(-40));
        assert_eq!(g.moves[1].seconds, Some(5.0));
        assert_eq!(g.result, GameResult::new(Outcome::WhiteWin, ResultReason::Resign));
        assert_eq!(g.black_name.as_deref(), Some("a"));
        assert_eq!(g.to_usi_line(), "startpos moves 7g7f 3c3d");
    }

    #[test]
    fn no_marker_is_unknown() {
        let g = one("PI\n+\n+7776FU\n");
        assert_eq!(g.result, GameResult::unknown());
    }

    #[test]
    fn handicap_and_hands() {
        let g = one("PI82HI22KA\n-\n-5142OU\n%KACHI\n");
        assert_eq!(g.start.to_sfen(), "lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1");
        assert_eq!(g.result.outcome, Outcome::BlackWin);
        let g = one("P1 *  *  *  *  *  *  *  * -OU\nP+00KI\nP-00AL\n+\n+0012KI\n%TSUMI\n");
        assert_eq!(g.result, GameResult::new(Outcome::BlackWin, ResultReason::Checkmate));
        assert_eq!(g.start.hand(Color::White).count(PieceType::Pawn), 18);
        assert_eq!(g.start.hand(Color::White).count(PieceType::Gold), 3);
    }

    #[test]
    fn several_games_and_errors() {
        let gs = parse_csa("PI\n+\n+7776FU\n/\nPI\n+\n+2726FU\n%CHUDAN\n", "x.csa").unwrap();
        assert_eq!(gs.len(), 2);
        let e = parse_csa("PI\n+\n+7776FU\n-3334FU\n+7674FU\n", "x.csa").unwrap_err();
        assert_eq!(e.to_string(), "x.csa:5: move 3: illegal move \"+7674FU\"");
        assert!(parse_csa("PI\n+\n+7776KA\n", "x").is_err());
        assert!(parse_csa("PI\n+\n-3334FU\n", "x").is_err());
    }

    #[test]
    fn promotion_is_read_from_the_piece_after() {
        let g = one("PI\n+\n+7776FU\n-3334FU\n+8822UM\n");
        assert!(g.moves[2].mv.is_promotion());
    }
}
