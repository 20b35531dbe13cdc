//! Match statistics and game records, with no I/O.
//!
//! Elo: the logistic model of the Elo system, where a rating difference `d` gives the
//! expected score `E = 1 / (1 + 10^(-d/400))`; inverted, `d = -400 log10(1/s - 1)` for the
//! observed score `s = (W + D/2) / N`. The 95% interval applies the normal approximation to
//! the mean per-game score: the per-game results (1, 1/2, 0) have sample variance
//! `σ² = (W (1-s)² + D (1/2-s)² + L s²) / N`, the mean has standard error `σ / √N`, and
//! `s ± 1.96 σ/√N` is mapped through the same inverse. A bound at or beyond 0% or 100% is
//! infinite. At a score of exactly 0% or 100% the approximation says nothing (σ = 0): the
//! estimate is `∓∞`/`±∞` and both bounds are infinite (`-∞ .. +∞`), never NaN.
//!
//! CSA: [`CsaRecord::to_csa`] writes CSA standard V2.2 (`V2.2`, `N+`/`N-`, `$EVENT`,
//! `$START_TIME`, `PI` or `P1`..`P9` with `P+`/`P-` hands, the side to move, moves such as
//! `+7776FU` naming the piece after the move, `T` seconds, and an end such as `%TORYO`).

use crate::rules::{Color, Move, PieceType, Position, Square};
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// The two-sided 95% quantile of the standard normal distribution.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Games won, drawn and lost, from one player's view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MatchStats {
    pub wins: u32,
    pub draws: u32,
    pub losses: u32,
}

/// An Elo difference with its 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloEstimate {
    /// Observed score in [0, 1].
    pub score: f64,
    /// Standard error of the score.
    pub score_stderr: f64,
    pub elo: f64,
    pub lower: f64,
    pub upper: f64,
}

impl MatchStats {
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// Adds one game: `Some(true)` a win, `Some(false)` a loss, `None` a draw.
    pub fn add(&mut self, won: Option<bool>) {
        match won {
            Some(true) => self.wins += 1,
            Some(false) => self.losses += 1,
            None => self.draws += 1,
        }
    }

    /// `(W + D/2) / N`, `None` before the first game.
    pub fn score(&self) -> Option<f64> {
        let n = self.games();
        (n > 0).then(|| (self.wins as f64 + self.draws as f64 / 2.0) / n as f64)
    }

    /// The Elo difference and its 95% interval; `None` before the first game.
    pub fn elo(&self) -> Option<EloEstimate> {
        let s = self.score()?;
        let n = self.games() as f64;
        let var = (self.wins as f64 * (1.0 - s).powi(2)
            + self.draws as f64 * (0.5 - s).powi(2)
            + self.losses as f64 * s.powi(2))
            / n;
        let se = (var / n).sqrt();
        let elo = elo_from_score(s);
        let (lower, upper) = if s <= 0.0 || s >= 1.0 {
            (f64::NEG_INFINITY, f64::INFINITY)
        } else {
            (elo_from_score(s - Z95 * se), elo_from_score(s + Z95 * se))
        };
        Some(EloEstimate { score: s, score_stderr: se, elo, lower, upper })
    }
}

/// The rating difference whose expected score is `s` (infinite at 0 and 1 and beyond).
pub fn elo_from_score(s: f64) -> f64 {
    if s <= 0.0 {
        f64::NEG_INFINITY
    } else if s >= 1.0 {
        f64::INFINITY
    } else {
        -400.0 * (1.0 / s - 1.0).log10()
    }
}

/// Formats an Elo figure: `+147.2`, `-inf`, `+inf`.
pub fn format_elo(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+inf".to_string() } else { "-inf".to_string() }
    } else if v.abs() < 0.05 {
        "0.0".to_string()
    } else {
        format!("{v:+.1}")
    }
}

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

/// The CSA name of a piece kind (`FU`, ..., `RY`).
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

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    fn stats(wins: u32, draws: u32, losses: u32) -> MatchStats {
        MatchStats { wins, draws, losses }
    }

    #[test]
    fn elo_matches_hand_computed_values() {
        // W6 D2 L2: s = 0.7, σ² = (6·0.09 + 2·0.04 + 2·0.49)/10 = 0.16, se = 0.4/√10.
        let e = stats(6, 2, 2).elo().unwrap();
        assert!(close(e.score, 0.7));
        assert!(close(e.score_stderr, 0.4 / 10f64.sqrt()));
        assert!(close(e.elo, 147.190_714_117_837_76), "{}", e.elo);
        assert!(close(e.lower, -33.399_350_001_688_85), "{}", e.lower);
        assert!(close(e.upper, 504.033_292_244_989_87), "{}", e.upper);
        // Even: symmetric interval, se = 0.5/√10.
        let e = stats(5, 0, 5).elo().unwrap();
        assert!(close(e.elo, 0.0));
        assert!(close(e.upper, 251.776_910_288_854_65) && close(e.lower, -e.upper));
        let e = stats(30, 40, 30).elo().unwrap();
        assert!(close(e.upper, 53.157_979_780_053_27), "{}", e.upper);
        // The upper bound passes 100%: infinite.
        let e = stats(9, 0, 1).elo().unwrap();
        assert!(close(e.elo, 381.697_003_775_729_85) && close(e.lower, 158.985_185_072_510_32));
        assert_eq!(e.upper, f64::INFINITY);
    }

    #[test]
    fn elo_extremes_are_infinite_not_nan() {
        assert_eq!(stats(0, 0, 0).elo(), None);
        let all = stats(4, 0, 0).elo().unwrap();
        assert_eq!((all.elo, all.lower, all.upper), (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY));
        let none = stats(0, 0, 7).elo().unwrap();
        assert_eq!(none.elo, f64::NEG_INFINITY);
        assert!(none.lower.is_infinite() && none.upper.is_infinite());
        let draws = stats(0, 3, 0).elo().unwrap();
        assert_eq!((draws.elo, draws.lower, draws.upper), (0.0, 0.0, 0.0));
        assert_eq!(format_elo(f64::INFINITY), "+inf");
        assert_eq!(format_elo(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_elo(147.19), "+147.2");
    }

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
}
