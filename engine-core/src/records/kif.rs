//! KIF/KIFU (Kakinoki format) and, through the same reader, KI2/KI2U.
//!
//! Lines understood (after removing a BOM, `\r` and surrounding whitespace):
//! - `key：value` headers. 先手/下手 and 後手/上手 give the names, 手合割 the handicap
//!   (平手, 香落ち, 右香落ち, 角落ち, 飛車落ち, 飛香落ち, 二枚落ち, 三枚落ち, 四枚落ち,
//!   五枚落ち/左五枚落ち, 右五枚落ち, 六枚落ち, 左七枚落ち, 七枚落ち/右七枚落ち,
//!   八枚落ち, 十枚落ち), 先手の持駒/後手の持駒 (also 下手/上手) the hands of a board
//!   diagram; every other header is kept in `headers`.
//! - A board diagram (BOD): `|v香v桂 ・ ...|一` rows, border and file-number lines, and
//!   `先手番`/`後手番`. A diagram overrides 手合割.
//! - KIF move lines `  12 ７七角成(22)  ( 0:16/00:00:16)+`: the number, the move, the
//!   time (its first part is this move's time), a trailing `+` marking a fork (ignored:
//!   forks are found from the `変化` lines). Special moves in place of a move: 投了 中断
//!   千日手 詰み 持将棋 切れ負け/時間切れ/Time-up 反則勝ち 反則負け 入玉勝ち/宣言勝ち
//!   不戦勝 不戦敗 不詰 封じ手.
//! - KI2 move lines: `▲７六歩 △３四歩 ...` (also ☗ ☖ ▽), no numbers or origins.
//! - `*` comments (kept on the preceding main-line move), `&` and `#` lines (ignored).
//! - `まで77手で先手の勝ち` summaries (give or refine the main line's result).
//! - `変化：N手`: a variation replacing move N of the line it forks from. As in
//!   Kakinoki's writer, variations are listed depth first: the parent is the nearest
//!   line on the path from the latest variation back to the main line that contains
//!   move N (after its own first move).
//!
//! Result of a special move, `S` being the side to move at that point: 投了, 詰み,
//! 切れ負け, 反則負け, 不戦敗 → S loses; 反則勝ち (the previous move was illegal),
//! 入玉勝ち, 不戦勝 → S wins; 千日手 and 持将棋 → draw; 中断, 不詰, 封じ手 → unknown.

use super::ja_notation::{board_piece_char, parse_ja_move, resolve};
pub use super::kif_fields::handicap_position;
use super::kif_fields::{Special, move_seconds, parse_hand, special_move, summary_result};
use super::record::{
    BoardSetup, Branch, GameRecord, GameResult, Outcome, RecordError, RecordMove, ResultReason, replay,
};
use crate::rules::{Color, Move, Piece, Position, Square};

/// Parses a KIF/KIFU text (one game).
pub fn parse_kif(text: &str, file: &str) -> Result<Vec<GameRecord>, RecordError> {
    parse_kif_like(text, file, false)
}

/// A line of play: the main line (index 0) or a variation.
struct Line {
    /// 1-based index (from the start position) of the first move.
    start_ply: usize,
    parent: Option<usize>,
    moves: Vec<Move>,
    /// Ended by a special move (投了, 詰み, ...): no more moves may follow.
    ended: bool,
}

impl Line {
    /// Last ply that a variation may replace: its moves, plus the special move ending it.
    fn last_forkable(&self) -> usize {
        self.start_ply + self.moves.len() + usize::from(self.ended) - 1
    }
}

struct KifParser<'a> {
    file: &'a str,
    ki2: bool,
    rec: GameRecord,
    handicap: Option<Position>,
    handicap_name: Option<String>,
    bod: BoardSetup,
    bod_rows: usize,
    bod_side: Option<Color>,
    start: Option<Position>,
    lines: Vec<Line>,
    cur: usize,
    pos: Position,
    last_to: Option<Square>,
    /// Written number of the main line's first move, minus one.
    offset: Option<usize>,
    summary: Option<String>,
    line_no: usize,
    /// An illegal last main-line move, accepted only if the record says that the game
    /// ended by that illegal move (反則勝ち/反則負け next, or a comment or summary
    /// mentioning 反則): the error, the move's text and number, and whether confirmed.
    pending_illegal: Option<PendingIllegal>,
}

struct PendingIllegal {
    error: RecordError,
    text: String,
    number: usize,
    confirmed: bool,
}

pub(crate) fn parse_kif_like(text: &str, file: &str, ki2: bool) -> Result<Vec<GameRecord>, RecordError> {
    let mut p = KifParser {
        file,
        ki2,
        rec: GameRecord::new(Position::startpos()),
        handicap: None,
        handicap_name: None,
        bod: BoardSetup::empty(),
        bod_rows: 0,
        bod_side: None,
        start: None,
        lines: vec![Line { start_ply: 1, parent: None, moves: Vec::new(), ended: false }],
        cur: 0,
        pos: Position::startpos(),
        last_to: None,
        offset: None,
        summary: None,
        line_no: 0,
        pending_illegal: None,
    };
    for (i, raw) in text.lines().enumerate() {
        p.line_no = i + 1;
        let line = raw.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        p.line(line)?;
    }
    p.finish().map(|g| vec![g])
}

impl KifParser<'_> {
    fn err(&self, move_number: Option<usize>, reason: impl Into<String>) -> RecordError {
        RecordError::new(self.file, self.line_no, move_number, reason)
    }

    fn line(&mut self, t: &str) -> Result<(), RecordError> {
        if t.is_empty() || t.starts_with('#') || t.starts_with('&') {
            return Ok(());
        }
        if let Some(c) = t.strip_prefix('*') {
            if let Some(p) = &mut self.pending_illegal
                && c.contains("反則")
            {
                p.confirmed = true;
            }
            if self.cur == 0
                && let Some(m) = self.rec.moves.last_mut()
            {
                m.push_comment(c);
            }
            return Ok(());
        }
        if let Some(rest) = t.strip_prefix("変化") {
            return self.variation(rest);
        }
        if t.starts_with("まで") {
            if let Some(p) = &mut self.pending_illegal
                && t.contains("反則")
            {
                p.confirmed = true;
            }
            if self.cur == 0 {
                self.summary = Some(t.to_string());
            }
            return Ok(());
        }
        if t.starts_with('|') {
            return self.bod_row(t);
        }
        if t.starts_with("+-") || t.starts_with("+=") || t.starts_with('９') || t.starts_with("手数") {
            return Ok(());
        }
        match t {
            "先手番" | "下手番" => {
                self.bod_side = Some(Color::Black);
                return Ok(());
            }
            "後手番" | "上手番" => {
                self.bod_side = Some(Color::White);
                return Ok(());
            }
            _ => {}
        }
        if !self.ki2 && t.starts_with(|c: char| c.is_ascii_digit()) {
            return self.kif_move_line(t);
        }
        if self.ki2 && t.starts_with(['▲', '△', '☗', '☖', '▽']) {
            return self.ki2_move_line(t);
        }
        if let Some((k, v)) = t.split_once('：') {
            return self.header(k.trim(), v.trim());
        }
        // Anything else (free text, unknown decorations) carries no game data.
        Ok(())
    }

    fn header(&mut self, k: &str, v: &str) -> Result<(), RecordError> {
        if self.start.is_some() && !matches!(k, "先手" | "後手" | "下手" | "上手") {
            // A header after the moves started (e.g. trailing info): keep it as text.
            self.rec.headers.push((k.to_string(), v.to_string()));
            return Ok(());
        }
        let name = (!v.is_empty()).then(|| v.to_string());
        match k {
            "先手" | "下手" => self.rec.black_name = name,
            "後手" | "上手" => self.rec.white_name = name,
            "手合割" => {
                self.handicap = handicap_position(v);
                self.handicap_name = Some(v.to_string());
                self.rec.headers.push((k.to_string(), v.to_string()));
            }
            "先手の持駒" | "下手の持駒" | "後手の持駒" | "上手の持駒" => {
                let hand = parse_hand(v).map_err(|e| self.err(None, e))?;
                let c =
                    if k.starts_with('先') || k.starts_with('下') { Color::Black } else { Color::White };
                self.bod.hands[c.index()] = hand;
            }
            _ => self.rec.headers.push((k.to_string(), v.to_string())),
        }
        Ok(())
    }

    fn bod_row(&mut self, t: &str) -> Result<(), RecordError> {
        if self.start.is_some() {
            return Err(self.err(None, "board diagram after the moves started"));
        }
        let inner: Vec<char> = t.chars().skip(1).take_while(|&c| c != '|').collect();
        if inner.len() != 18 {
            return Err(self.err(None, format!("board row {t:?} does not have 9 squares")));
        }
        if self.bod_rows >= 9 {
            return Err(self.err(None, "board diagram with more than 9 rows"));
        }
        let rank = self.bod_rows as u8;
        for (i, cell) in inner.chunks(2).enumerate() {
            let sq = Square::new(8 - i as u8, rank);
            let piece = if cell[1] == '・' {
                None
            } else {
                let pt = board_piece_char(cell[1])
                    .ok_or_else(|| self.err(None, format!("unknown piece {:?} in board row", cell[1])))?;
                let color = if cell[0] == 'v' || cell[0] == 'V' { Color::White } else { Color::Black };
                Some(Piece::new(color, pt))
            };
            self.bod.board[sq.index()] = piece;
        }
        self.bod_rows += 1;
        Ok(())
    }

    /// Fixes the start position (at the first move, variation or the end of the file).
    fn establish(&mut self) -> Result<(), RecordError> {
        if self.start.is_some() {
            return Ok(());
        }
        let pos = if self.bod_rows > 0 {
            if self.bod_rows != 9 {
                return Err(self.err(None, "board diagram with fewer than 9 rows"));
            }
            self.bod.side = self.bod_side.unwrap_or(Color::Black);
            self.bod.to_position().map_err(|e| self.err(None, format!("board diagram: {e}")))?
        } else if let Some(h) = self.handicap {
            h
        } else if let Some(name) = &self.handicap_name {
            return Err(
                self.err(None, format!("手合割 {name:?} has no standard position and no board diagram"))
            );
        } else {
            Position::startpos()
        };
        self.start = Some(pos);
        self.rec.start = pos;
        self.pos = pos;
        Ok(())
    }

    fn kif_move_line(&mut self, t: &str) -> Result<(), RecordError> {
        let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
        let rest = t[digits.len()..].trim_start();
        let number: usize =
            digits.parse().ok().filter(|&n| n < 100_000).ok_or_else(|| self.err(None, "bad move number"))?;
        let rest = rest.trim_start_matches(['▲', '△', '☗', '☖', '▽']);
        self.establish()?;
        let l = &self.lines[self.cur];
        if l.ended && special_move(rest).is_some() {
            // A second special move (e.g. 投了 then 中断): the first one stands.
            return Ok(());
        }
        let ply = l.start_ply + l.moves.len();
        if self.cur == 0 && self.offset.is_none() {
            self.offset = Some(number.saturating_sub(1));
        }
        let expected = ply + self.offset.unwrap_or(0) + usize::from(self.pending_illegal.is_some());
        if number != expected {
            return Err(self.err(Some(number), format!("expected move number {expected}")));
        }
        self.play_text(rest, number, None)
    }

    fn ki2_move_line(&mut self, t: &str) -> Result<(), RecordError> {
        self.establish()?;
        let mut tokens: Vec<(Color, String)> = Vec::new();
        for c in t.chars() {
            match c {
                '▲' | '☗' => tokens.push((Color::Black, String::new())),
                '△' | '☖' | '▽' => tokens.push((Color::White, String::new())),
                _ => {
                    if let Some(tok) = tokens.last_mut() {
                        tok.1.push(c);
                    }
                }
            }
        }
        for (color, text) in tokens {
            let l = &self.lines[self.cur];
            let number = l.start_ply + l.moves.len() + self.offset.unwrap_or(0);
            let text = text.trim();
            self.play_text(text, number, Some(color))?;
        }
        Ok(())
    }

    /// Plays one written move (or special move) on the current line.
    fn play_text(&mut self, text: &str, number: usize, color: Option<Color>) -> Result<(), RecordError> {
        let n = Some(number);
        let special = special_move(text);
        if let Some(p) = self.pending_illegal.take() {
            // Only "the previous move was illegal" may follow an illegal move.
            let ends_by_foul = matches!(
                &special,
                Some(
                    Special::SideWins(ResultReason::IllegalMove)
                        | Special::SideLoses(ResultReason::IllegalMove)
                )
            );
            if !ends_by_foul {
                return Err(p.error);
            }
            self.accept_illegal(p);
            return Ok(());
        }
        if self.lines[self.cur].ended {
            if special.is_some() {
                // A second special move (e.g. 投了 then 中断): the first one stands.
                return Ok(());
            }
            return Err(self.err(n, format!("move {text:?} after the end of the game")));
        }
        let side = self.pos.side_to_move();
        if let Some(special) = special {
            self.lines[self.cur].ended = true;
            if self.cur == 0 {
                let (outcome, reason) = match special {
                    Special::SideLoses(r) => (Outcome::loss_for(side), r),
                    Special::SideWins(r) => (Outcome::win_for(side), r),
                    Special::Fixed(o, r) => (o, r),
                };
                self.rec.result = GameResult::new(outcome, reason);
            }
            return Ok(());
        }
        if color.is_some_and(|c| c != side) {
            return Err(self.err(n, format!("{text:?}: not this side's turn")));
        }
        let (jm, rest) = parse_ja_move(text, self.last_to).map_err(|e| self.err(n, e))?;
        let mv = match resolve(&self.pos, &jm) {
            Ok(mv) => mv,
            Err(e) => {
                let error = self.err(n, format!("{text:?}: {e}"));
                if self.cur != 0 {
                    return Err(error);
                }
                self.pending_illegal = Some(PendingIllegal {
                    error,
                    text: text.split_whitespace().next().unwrap_or("").to_string(),
                    number,
                    confirmed: false,
                });
                return Ok(());
            }
        };
        self.pos.do_move(mv);
        self.last_to = Some(mv.to());
        self.lines[self.cur].moves.push(mv);
        if self.cur == 0 {
            let mut rm = RecordMove::new(mv, self.line_no);
            rm.seconds = move_seconds(&rest);
            self.rec.moves.push(rm);
        }
        Ok(())
    }

    /// Ends the main line with a loss for the side that played the illegal move `p`
    /// (which is left out of the main line and noted in the headers).
    fn accept_illegal(&mut self, p: PendingIllegal) {
        let mover = self.pos.side_to_move();
        self.rec.result = GameResult::new(Outcome::loss_for(mover), ResultReason::IllegalMove);
        self.rec.headers.push(("illegal_move".to_string(), format!("{} {}", p.number, p.text)));
        self.lines[0].ended = true;
    }

    /// Resolves a pending illegal move at a 変化 line or the end of the file.
    fn settle_illegal(&mut self) -> Result<(), RecordError> {
        match self.pending_illegal.take() {
            Some(p) if p.confirmed => {
                self.accept_illegal(p);
                Ok(())
            }
            Some(p) => Err(p.error),
            None => Ok(()),
        }
    }

    fn variation(&mut self, rest: &str) -> Result<(), RecordError> {
        self.settle_illegal()?;
        self.establish()?;
        let digits: String = rest
            .chars()
            .skip_while(|c| !c.is_ascii_digit() && !matches!(c, '０'..='９'))
            .take_while(|c| c.is_ascii_digit() || matches!(c, '０'..='９'))
            .map(|c| if c.is_ascii_digit() { c } else { char::from(b'0' + (c as u32 - '０' as u32) as u8) })
            .collect();
        let number: usize =
            digits.parse().ok().filter(|&n| n < 100_000).ok_or_else(|| self.err(None, "bad 変化 line"))?;
        let ply = number.checked_sub(self.offset.unwrap_or(0)).filter(|&p| p >= 1);
        let Some(ply) = ply else {
            return Err(self.err(Some(number), "変化 before the first move"));
        };
        // Walk from the latest line back to the main line.
        let mut idx = Some(self.cur);
        let mut parent = None;
        while let Some(i) = idx {
            let l = &self.lines[i];
            let first = if i == 0 { 1 } else { l.start_ply + 1 };
            if first <= ply && ply <= l.last_forkable() {
                parent = Some(i);
                break;
            }
            idx = l.parent;
        }
        let Some(parent) = parent else {
            return Err(self.err(Some(number), "変化 does not match any line"));
        };
        let prefix = self.prefix(parent, ply - 1);
        let start = self.start.unwrap_or_else(Position::startpos);
        self.pos = replay(&start, &prefix);
        self.last_to = prefix.last().map(|m| m.to());
        self.lines.push(Line { start_ply: ply, parent: Some(parent), moves: Vec::new(), ended: false });
        self.cur = self.lines.len() - 1;
        Ok(())
    }

    /// The first `n` moves of line `i` from the start position (iterative: variations
    /// may nest arbitrarily deep in hostile input).
    fn prefix(&self, i: usize, n: usize) -> Vec<Move> {
        // Collect (line, how many of its own moves) from line `i` up to the main line.
        let mut segments = Vec::new();
        let (mut idx, mut upto) = (Some(i), n);
        while let Some(k) = idx {
            let l = &self.lines[k];
            let own = upto.saturating_sub(l.start_ply - 1).min(l.moves.len());
            segments.push((k, own));
            upto = l.start_ply - 1;
            idx = l.parent;
        }
        let mut v = Vec::new();
        for &(k, own) in segments.iter().rev() {
            v.extend_from_slice(&self.lines[k].moves[..own]);
        }
        v
    }

    fn finish(mut self) -> Result<GameRecord, RecordError> {
        self.settle_illegal()?;
        self.establish()?;
        if let Some(s) = self.summary.take() {
            let main = &self.lines[0];
            let end_side = replay(&self.rec.start, &main.moves).side_to_move();
            if let Some(r) = summary_result(&s, end_side) {
                let cur = &mut self.rec.result;
                if cur.reason == ResultReason::NoEndMarker {
                    *cur = r;
                } else if cur.outcome == Outcome::Unknown && r.outcome != Outcome::Unknown {
                    cur.outcome = r.outcome;
                }
            }
        }
        for (i, l) in self.lines.iter().enumerate().skip(1) {
            self.rec.branches.push(Branch {
                ply: l.start_ply,
                parent: l.parent.and_then(|p| p.checked_sub(1)),
                moves: l.moves.clone(),
            });
            debug_assert!(l.parent.is_some_and(|p| p < i));
        }
        Ok(self.rec)
    }
}

#[cfg(test)]
mod tests {
    use super::super::kif_fields::kanji_number;
    use super::*;
    use crate::rules::PieceType;

    fn one(text: &str) -> GameRecord {
        parse_kif(text, "t.kif").unwrap().pop().unwrap()
    }

    #[test]
    fn basic_game_with_times_and_result() {
        let g = one(
            "手合割：平手\n先手：A\n後手：B\n手数----指手---------消費時間--\n   1 ７六歩(77)   ( 0:16/00:00:16)\n   2 ３四歩(33)   ( 1:02/00:01:02)\n   3 ２二角成(88) ( 0:01/00:00:17)\n   4 同　銀(31)\n   5 投了\nまで4手で後手の勝ち\n",
        );
        assert_eq!(g.to_usi_line(), "startpos moves 7g7f 3c3d 8h2b+ 3a2b");
        assert_eq!(g.moves[0].seconds, Some(16.0));
        assert_eq!(g.moves[1].seconds, Some(62.0));
        assert_eq!(g.result, GameResult::new(Outcome::WhiteWin, ResultReason::Resign));
        assert_eq!(g.black_name.as_deref(), Some("A"));
    }

    #[test]
    fn handicap_and_hand_parsing() {
        assert_eq!(kanji_number("十八"), Some(18));
        assert_eq!(kanji_number(""), Some(1));
        assert_eq!(parse_hand("飛　金四　歩十五").unwrap()[PieceType::Pawn.index()], 15);
        let g = one("手合割：香落ち\n1 ３四歩(33)\n");
        assert_eq!(g.start.side_to_move(), Color::White);
        assert!(handicap_position("六枚落ち").is_some());
        assert!(handicap_position("左七枚落ち").is_some());
        assert!(parse_kif("手合割：その他\n1 ７六歩(77)\n", "x").is_err());
    }

    #[test]
    fn variations_are_kept_apart() {
        let g = one(
            "1 ７六歩(77)\n2 ３四歩(33)\n3 ２六歩(27)\n\n変化：2手\n2 ８四歩(83)\n3 ２六歩(27)\n\n変化：3手\n3 ６八銀(79)\n",
        );
        assert_eq!(g.moves.len(), 3);
        assert_eq!(g.branches.len(), 2);
        assert_eq!(g.branches[0].ply, 2);
        assert_eq!(g.branches[0].parent, None);
        assert_eq!(g.branches[1].parent, Some(0));
        assert_eq!(
            g.branch_line(1).unwrap().iter().map(|m| m.to_usi()).collect::<Vec<_>>(),
            ["7g7f", "8c8d", "7i6h"]
        );
    }

    #[test]
    fn errors_name_the_move() {
        let e = parse_kif("1 ７六歩(77)\n2 ７五歩(76)\n", "f.kif").unwrap_err();
        assert_eq!((e.line, e.move_number), (2, Some(2)));
        let e = parse_kif("1 ７六歩(77)\n3 ３四歩(33)\n", "f.kif").unwrap_err();
        assert_eq!(e.move_number, Some(3));
    }

    #[test]
    fn illegal_last_move_only_with_a_foul_note() {
        // Without a note the illegal move is an error.
        let e = parse_kif("1 ７六歩(77)\n2 ３四歩(33)\n3 ５五飛(28)\n", "f").unwrap_err();
        assert_eq!((e.line, e.move_number), (3, Some(3)));
        // Followed by more moves: still an error.
        assert!(parse_kif("1 ７六歩(77)\n2 ３五歩(33)\n3 反則勝ち\n4 ２六歩(27)\n", "f").is_err());
        assert!(parse_kif("1 ７六歩(77)\n2 ３五歩(33)\n3 投了\n", "f").is_err());
        let g = one("1 ７六歩(77)\n2 ３五歩(33)\n3 反則勝ち\n");
        assert_eq!(g.moves.len(), 1);
        assert_eq!(g.result, GameResult::new(Outcome::BlackWin, ResultReason::IllegalMove));
        let g = one("1 ７六歩(77)\n2 ３四歩(33)\n3 ５五飛(28)\n*反則手にて終局\n");
        assert_eq!(g.moves.len(), 2);
        assert_eq!(g.result, GameResult::new(Outcome::WhiteWin, ResultReason::IllegalMove));
    }
}
