//! Writing CSA standard V2.2 records (`V2.2`, `N+`/`N-`, `$EVENT`, `$START_TIME`, `PI` or
//! `P1`..`P9` with `P+`/`P-` hands, the side to move, moves such as `+7776FU` naming the
//! piece after the move, `T` seconds, and an end such as `%TORYO`); [`super::csa`] reads
//! them back.

use super::csa::csa_piece;
use crate::rules::{Color, Move, PieceType, Position, Square};
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// How a CSA record ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CsaEnd {
    /// The side to move resigned.
    Toryo,
    /// Repetition: a draw.
    Sennichite,
    /// The side to move declared an entering-king win.
    Kachi,
    /// The side to move is checkmated.
    Tsumi,
    /// The move limit was reached: a draw.
    MaxMoves,
    /// The side to move ran out of time (or stopped answering).
    TimeUp,
    /// The side to move made an illegal move (not recorded) or a false declaration.
    IllegalMove,
    /// Perpetual check or another foul by the given side, which loses (`%+ILLEGAL_ACTION`,
    /// `%-ILLEGAL_ACTION`; from CSA V3.0, also written by shogi-server).
    IllegalAction(Color),
    /// The game was stopped without a result.
    Chudan,
}

impl CsaEnd {
    pub fn keyword(self) -> &'static str {
        match self {
            CsaEnd::Toryo => "%TORYO",
            CsaEnd::Sennichite => "%SENNICHITE",
            CsaEnd::Kachi => "%KACHI",
            CsaEnd::Tsumi => "%TSUMI",
            CsaEnd::MaxMoves => "%MAX_MOVES",
            CsaEnd::TimeUp => "%TIME_UP",
            CsaEnd::IllegalMove => "%ILLEGAL_MOVE",
            CsaEnd::IllegalAction(Color::Black) => "%+ILLEGAL_ACTION",
            CsaEnd::IllegalAction(Color::White) => "%-ILLEGAL_ACTION",
            CsaEnd::Chudan => "%CHUDAN",
        }
    }

    /// The winner given the side to move at the end; `None` for a draw or no result.
    pub fn winner(self, side_to_move: Color) -> Option<Color> {
        match self {
            CsaEnd::Toryo | CsaEnd::Tsumi | CsaEnd::TimeUp | CsaEnd::IllegalMove => {
                Some(side_to_move.opponent())
            }
            CsaEnd::Kachi => Some(side_to_move),
            CsaEnd::IllegalAction(loser) => Some(loser.opponent()),
            CsaEnd::Sennichite | CsaEnd::MaxMoves | CsaEnd::Chudan => None,
        }
    }
}

/// A game to be written as CSA.
#[derive(Clone)]
pub struct CsaRecord {
    pub black: String,
    pub white: String,
    pub event: Option<String>,
    /// `YYYY/MM/DD HH:MM:SS` (see [`csa_time`]).
    pub start_time: Option<String>,
    pub start: Position,
    pub moves: Vec<Move>,
    /// Milliseconds used for each move (`None`: no `T` line); may be shorter than `moves`.
    pub times_ms: Vec<Option<u64>>,
    pub end: Option<CsaEnd>,
    /// Comment lines (without the leading `'`) written after the end.
    pub comments: Vec<String>,
}

impl CsaRecord {
    pub fn new(black: &str, white: &str, start: Position) -> CsaRecord {
        CsaRecord {
            black: black.to_string(),
            white: white.to_string(),
            event: None,
            start_time: None,
            start,
            moves: Vec::new(),
            times_ms: Vec::new(),
            end: None,
            comments: Vec::new(),
        }
    }

    pub fn to_csa(&self) -> String {
        let mut s = String::from("V2.2\n");
        let one_line = |t: &str| t.replace(['\r', '\n'], " ");
        let _ = writeln!(s, "N+{}", one_line(&self.black));
        let _ = writeln!(s, "N-{}", one_line(&self.white));
        if let Some(e) = &self.event {
            let _ = writeln!(s, "$EVENT:{}", one_line(e));
        }
        if let Some(t) = &self.start_time {
            let _ = writeln!(s, "$START_TIME:{t}");
        }
        s.push_str(&csa_position(&self.start));
        let mut pos = self.start;
        for (i, &m) in self.moves.iter().enumerate() {
            s.push_str(&csa_move(m, pos.side_to_move()));
            s.push('\n');
            if let Some(Some(t)) = self.times_ms.get(i) {
                let _ = writeln!(s, "T{}", t / 1000);
            }
            pos.do_move(m);
        }
        if let Some(end) = self.end {
            s.push_str(end.keyword());
            s.push('\n');
        }
        for c in &self.comments {
            let _ = writeln!(s, "'{}", one_line(c));
        }
        s
    }
}

fn sign(c: Color) -> char {
    if c == Color::Black { '+' } else { '-' }
}

fn csa_square(sq: Square) -> String {
    format!("{}{}", sq.file() + 1, sq.rank() + 1)
}

/// A move in CSA (`+7776FU`, `-0055KA`); the piece is the one standing on the target.
pub fn csa_move(m: Move, side: Color) -> String {
    let from = if m.is_drop() { "00".to_string() } else { csa_square(m.from()) };
    let piece = if m.is_drop() { m.drop_piece_type() } else { m.moved_piece_after().piece_type() };
    format!("{}{from}{}{}", sign(side), csa_square(m.to()), csa_piece(piece))
}

/// The position block: `PI` and `+` for the standard start, else `P1`..`P9`, hands, side.
pub fn csa_position(pos: &Position) -> String {
    let mut s = String::new();
    let standard = Position::startpos();
    if pos.to_sfen().rsplit_once(' ').map(|x| x.0) == standard.to_sfen().rsplit_once(' ').map(|x| x.0) {
        s.push_str("PI\n+\n");
        return s;
    }
    for rank in 0..9u8 {
        let _ = write!(s, "P{}", rank + 1);
        for file in (0..9u8).rev() {
            let p = pos.piece_on(Square::new(file, rank));
            if p.is_empty() {
                s.push_str(" * ");
            } else {
                s.push(sign(p.color()));
                s.push_str(csa_piece(p.piece_type()));
            }
        }
        s.push('\n');
    }
    for color in Color::ALL {
        let hand = pos.hand(color);
        if hand.is_empty() {
            continue;
        }
        s.push('P');
        s.push(sign(color));
        for pt in PieceType::HAND {
            for _ in 0..hand.count(pt) {
                s.push_str("00");
                s.push_str(csa_piece(pt));
            }
        }
        s.push('\n');
    }
    s.push(sign(pos.side_to_move()));
    s.push('\n');
    s
}

/// A time as CSA writes it (`YYYY/MM/DD HH:MM:SS`, UTC).
pub fn csa_time(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}/{m:02}/{d:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (the well-known era algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn csa_from_startpos() {
        let mut rec = CsaRecord::new("keima", "other", Position::startpos());
        rec.start_time = Some(csa_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
        let mut pos = Position::startpos();
        for text in ["7g7f", "3c3d", "8h2b+", "3a2b", "B*4e"] {
            let m = pos.parse_usi_move(text).unwrap();
            pos.do_move(m);
            rec.moves.push(m);
        }
        rec.times_ms = vec![Some(1500), Some(0), None, Some(999), Some(12_000)];
        rec.end = Some(CsaEnd::Toryo);
        let expected = "V2.2\nN+keima\nN-other\n$START_TIME:2023/11/14 22:13:20\nPI\n+\n\
                        +7776FU\nT1\n-3334FU\nT0\n+8822UM\n-3122GI\nT0\n+0045KA\nT12\n%TORYO\n";
        assert_eq!(rec.to_csa(), expected);
    }

    #[test]
    fn csa_from_other_position() {
        let pos = Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b GN2Pr 1").unwrap();
        let mut rec = CsaRecord::new("a", "b", pos);
        rec.moves.push(pos.parse_usi_move("G*5b").unwrap());
        rec.end = Some(CsaEnd::Tsumi);
        rec.comments.push("mate".to_string());
        let expected = "V2.2\nN+a\nN-b\n\
            P1 *  *  *  * -OU *  *  *  * \n\
            P2 *  *  *  *  *  *  *  *  * \n\
            P3 *  *  *  * +FU *  *  *  * \n\
            P4 *  *  *  *  *  *  *  *  * \n\
            P5 *  *  *  *  *  *  *  *  * \n\
            P6 *  *  *  *  *  *  *  *  * \n\
            P7 *  *  *  *  *  *  *  *  * \n\
            P8 *  *  *  *  *  *  *  *  * \n\
            P9 *  *  *  * +OU *  *  *  * \n\
            P+00FU00FU00KE00KI\nP-00HI\n+\n+0052KI\n%TSUMI\n'mate\n";
        assert_eq!(rec.to_csa(), expected);
        assert_eq!(CsaEnd::Tsumi.winner(Color::White), Some(Color::Black));
        assert_eq!(CsaEnd::Kachi.winner(Color::White), Some(Color::White));
        assert_eq!(CsaEnd::IllegalAction(Color::Black).winner(Color::White), Some(Color::White));
        assert_eq!(CsaEnd::IllegalAction(Color::Black).keyword(), "%+ILLEGAL_ACTION");
    }

    #[test]
    fn csa_dates() {
        assert_eq!(csa_time(UNIX_EPOCH), "1970/01/01 00:00:00");
        assert_eq!(csa_time(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000/02/29 00:00:00");
    }

    /// What the writer writes, the reader reads back: start, moves and result, from the
    /// standard start and from a set-up position with pieces in hand.
    #[test]
    fn written_records_read_back() {
        use crate::records::{Outcome, parse_csa};
        let cases = [
            (Position::startpos(), "7g7f 3c3d 8h2b+ 3a2b B*4e", CsaEnd::Toryo, Outcome::BlackWin),
            (
                Position::from_sfen("4k4/9/4P4/9/9/9/9/9/4K4 b GN2Pr 1").unwrap(),
                "G*5b",
                CsaEnd::Tsumi,
                Outcome::BlackWin,
            ),
            (Position::startpos(), "2g2f 8c8d", CsaEnd::Sennichite, Outcome::Draw),
        ];
        for (start, moves, end, outcome) in cases {
            let mut rec = CsaRecord::new("black name", "white name", start);
            rec.event = Some("round trip".to_string());
            rec.start_time = Some(csa_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
            let mut pos = start;
            for text in moves.split_whitespace() {
                let m = pos.parse_usi_move(text).unwrap();
                pos.do_move(m);
                rec.moves.push(m);
                rec.times_ms.push(Some(2500));
            }
            rec.end = Some(end);
            rec.comments.push("a comment".to_string());
            let text = rec.to_csa();
            let games = parse_csa(&text, "written").unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(games.len(), 1, "{text}");
            let g = &games[0];
            assert_eq!(g.start, start, "{text}");
            assert_eq!(g.main_line(), rec.moves, "{text}");
            assert_eq!(g.result.outcome, outcome, "{text}");
            let winner = match outcome {
                Outcome::BlackWin => Some(Color::Black),
                Outcome::WhiteWin => Some(Color::White),
                _ => None,
            };
            assert_eq!(end.winner(pos.side_to_move()), winner, "the writer's and the reader's results agree");
            assert_eq!(
                (g.black_name.as_deref(), g.white_name.as_deref()),
                (Some("black name"), Some("white name"))
            );
        }
    }
}
