//! One game between two USI engines: the opening's moves, then each engine asked for its
//! move under the limit, its time measured from `go` to `bestmove`, until the rules end
//! the game or an engine loses by a fault (time, illegal move, crash). The game comes back
//! as a CSA record with its result from engine1's view.

use super::client::{BestMove, ClientError, UsiClient};
use super::limit::Limit;
use engine_core::records::csa_write::{CsaEnd, CsaRecord, csa_time};
use engine_core::rules::game::{GameRules, can_declare_win};
use engine_core::rules::{Color, Game, GameEnd, Move, Position};
use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

/// Why a game was lost by an engine's fault rather than on the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Took longer than allowed (or gave no `bestmove` in time).
    TimeLoss,
    /// Played an illegal move or declared a win without the conditions.
    IllegalMove,
    /// The process exited or closed its pipes.
    Crash,
}

/// Where a game starts: its opening's number, the root and the moves played from it.
#[derive(Clone, Debug)]
pub struct UsiOpening {
    pub index: usize,
    /// `startpos` or `sfen <sfen>`.
    pub root_cmd: String,
    pub root: Position,
    pub moves: Vec<Move>,
}

/// How the games are played.
#[derive(Clone, Debug)]
pub struct GameSettings {
    pub limit: Limit,
    /// A game reaching this many plies (opening moves included) is a draw.
    pub max_plies: u32,
    /// Past the time a move may use, how long before it loses on time.
    pub time_margin: Duration,
    /// How long to wait for `readyok`, and for a move with no time bound (nodes).
    pub timeout: Duration,
    /// The CSA record's event line.
    pub event: String,
}

/// How long one engine took to answer `go` (move, resign or win) over some games.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThinkTimes {
    pub answers: u32,
    pub total_ms: u64,
    pub max_ms: u64,
    /// Answers that took longer than the limit allowed: within the time margin they cost
    /// nothing, so an engine that takes them plays with more time than its opponent.
    pub over_limit: u32,
}

impl ThinkTimes {
    /// Counts one answer that took `used`, where the limit allowed `allowed` (none under
    /// a node or depth limit).
    pub fn add(&mut self, used: Duration, allowed: Option<Duration>) {
        let ms = used.as_millis() as u64;
        self.answers += 1;
        self.total_ms += ms;
        self.max_ms = self.max_ms.max(ms);
        self.over_limit += allowed.is_some_and(|a| used > a) as u32;
    }

    pub fn merge(&mut self, other: &ThinkTimes) {
        self.answers += other.answers;
        self.total_ms += other.total_ms;
        self.max_ms = self.max_ms.max(other.max_ms);
        self.over_limit += other.over_limit;
    }

    pub fn mean_ms(&self) -> Option<f64> {
        (self.answers > 0).then(|| self.total_ms as f64 / self.answers as f64)
    }
}

/// A finished game.
pub struct PlayedGame {
    /// Engine1's result: Some(true) won, Some(false) lost, None drawn.
    pub engine1_won: Option<bool>,
    pub end: CsaEnd,
    pub plies: usize,
    pub note: Option<String>,
    /// The engine (0 or 1) whose fault ended the game.
    pub fault: Option<(usize, Fault)>,
    /// Each engine's remaining main time at the end, under a clock.
    pub clock_ms: Option<[u64; 2]>,
    /// Each engine's time to answer `go`.
    pub think: [ThinkTimes; 2],
    pub record: CsaRecord,
}

/// Plays one game from `opening` between two started engines (engine1 black when
/// `engine1_black`). An engine that hangs or dies is dropped from its slot, to be started
/// again before the next game. Errs only when an engine cannot be readied for the game.
pub fn play_game(
    engines: &mut [Option<UsiClient>; 2],
    opening: &UsiOpening,
    engine1_black: bool,
    settings: &GameSettings,
) -> Result<PlayedGame, String> {
    let engine_of = |c: Color| if (c == Color::Black) == engine1_black { 0 } else { 1 };
    let timeout = settings.timeout;
    for (i, slot) in engines.iter_mut().enumerate() {
        let c = slot.as_mut().ok_or_else(|| format!("engine{} is not started", i + 1))?;
        c.send("usinewgame")
            .and_then(|_| c.isready(timeout))
            .map_err(|e| format!("engine{} ({}): {e}", i + 1, c.label()))?;
    }
    let name = |i: usize| engines[i].as_ref().map(|c| c.name.clone()).unwrap_or_default();
    let (black, white) = if engine1_black { (name(0), name(1)) } else { (name(1), name(0)) };
    let mut record = CsaRecord::new(&black, &white, opening.root);
    record.event = Some(settings.event.clone());
    record.start_time = Some(csa_time(SystemTime::now()));

    let mut game = Game::new(opening.root);
    let mut usi: Vec<String> = Vec::new();
    for &m in &opening.moves {
        game.play(m);
        usi.push(m.to_usi());
        record.times_ms.push(None);
    }
    let rules = GameRules { declaration: false, max_plies: Some(settings.max_plies) };
    let ms = Duration::from_millis;
    let margin = settings.time_margin;
    let limit = settings.limit;
    // Each engine's remaining main time; clocks restart every game.
    let mut clock = match limit {
        Limit::Clock { main_ms, .. } => [ms(main_ms); 2],
        _ => [Duration::ZERO; 2],
    };
    let mut note = None;
    let mut fault = None;
    let mut think = [ThinkTimes::default(); 2];
    let end = loop {
        if let Some(outcome) = game.outcome(&rules) {
            break match outcome.reason {
                GameEnd::NoLegalMove => CsaEnd::Tsumi,
                GameEnd::Repetition => CsaEnd::Sennichite,
                GameEnd::PerpetualCheck => {
                    CsaEnd::IllegalAction(outcome.winner.expect("perpetual check has a winner").opponent())
                }
                GameEnd::Declaration => CsaEnd::Kachi,
                GameEnd::MaxPlies => CsaEnd::MaxMoves,
            };
        }
        let side = game.position().side_to_move();
        let who = engine_of(side);
        let position = if usi.is_empty() {
            format!("position {}", opening.root_cmd)
        } else {
            format!("position {} moves {}", opening.root_cmd, usi.join(" "))
        };
        // The go command and the time this move may use (None: only the timeout bounds it).
        let (go_cmd, allowed) = match limit {
            Limit::Nodes(nodes) => (format!("go nodes {}", nodes[who]), None),
            Limit::MoveTime(t) => (format!("go movetime {t}"), Some(ms(t))),
            Limit::Clock { inc_ms, byoyomi_ms, .. } => {
                let [b, w] = [Color::Black, Color::White].map(|c| clock[engine_of(c)].as_millis());
                let mut cmd = format!("go btime {b} wtime {w}");
                if inc_ms > 0 {
                    let _ = write!(cmd, " binc {inc_ms} winc {inc_ms}");
                }
                if byoyomi_ms > 0 {
                    let _ = write!(cmd, " byoyomi {byoyomi_ms}");
                }
                (cmd, Some(clock[who].saturating_add(ms(inc_ms)).saturating_add(ms(byoyomi_ms))))
            }
        };
        let move_timeout = allowed.map_or(timeout, |a| a.saturating_add(margin));
        let Some(client) = engines[who].as_mut() else {
            return Err(format!("engine{} is not started", who + 1));
        };
        let answer = client.go(&position, &go_cmd, move_timeout);
        if let Ok((_, used)) = &answer {
            think[who].add(*used, allowed);
        }
        if let (Ok((_, used)), Some(allowed)) = (&answer, allowed) {
            if *used > allowed.saturating_add(margin) {
                note = Some(format!(
                    "engine{} lost on time: {} ms used, {} ms allowed + {} ms margin",
                    who + 1,
                    used.as_millis(),
                    allowed.as_millis(),
                    margin.as_millis()
                ));
                fault = Some((who, Fault::TimeLoss));
                break CsaEnd::TimeUp;
            }
            if let Limit::Clock { inc_ms, .. } = limit {
                clock[who] = clock[who].saturating_add(ms(inc_ms)).saturating_sub(*used);
            }
        }
        match answer {
            Ok((BestMove::Resign, _)) => break CsaEnd::Toryo,
            Ok((BestMove::Win, _)) => {
                if can_declare_win(game.position()) {
                    break CsaEnd::Kachi;
                }
                note = Some(format!("engine{} declared a win without the conditions", who + 1));
                fault = Some((who, Fault::IllegalMove));
                break CsaEnd::IllegalMove;
            }
            Ok((BestMove::Move(text), used)) => match game.position().parse_usi_move(&text) {
                Ok(m) => {
                    game.play(m);
                    usi.push(text);
                    record.times_ms.push(Some(used.as_millis() as u64));
                }
                Err(e) => {
                    note = Some(format!("engine{} played {text:?}: {e}", who + 1));
                    fault = Some((who, Fault::IllegalMove));
                    break CsaEnd::IllegalMove;
                }
            },
            Err(e) => {
                let kind = if matches!(e, ClientError::Timeout(_)) { Fault::TimeLoss } else { Fault::Crash };
                note = Some(format!("engine{}: {e}", who + 1));
                fault = Some((who, kind));
                // A hung or dead engine is replaced before the next game.
                engines[who] = None;
                break CsaEnd::TimeUp;
            }
        }
    };
    let side = game.position().side_to_move();
    let winner = end.winner(side);
    let engine1_color = if engine1_black { Color::Black } else { Color::White };
    let engine1_won = winner.map(|w| w == engine1_color);
    for (i, slot) in engines.iter_mut().enumerate() {
        if let Some(c) = slot {
            let result = match winner {
                None => "draw",
                Some(w) if engine_of(w) == i => "win",
                Some(_) => "lose",
            };
            let _ = c.send(&format!("gameover {result}"));
        }
    }
    record.moves = game.moves().to_vec();
    record.end = Some(end);
    record.comments.push(format!("opening {} ({} plies)", opening.index, opening.moves.len()));
    let clock_ms = matches!(limit, Limit::Clock { .. }).then(|| clock.map(|c| c.as_millis() as u64));
    if let Some([c0, c1]) = clock_ms {
        record.comments.push(format!(
            "time control {}; main time left: engine1 {c0} ms, engine2 {c1} ms",
            limit.describe()
        ));
    }
    if let Some(n) = &note {
        record.comments.push(n.clone());
    }
    Ok(PlayedGame { engine1_won, end, plies: game.moves().len(), note, fault, clock_ms, think, record })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_count_answers_past_the_limit() {
        let ms = Duration::from_millis;
        let mut a = ThinkTimes::default();
        assert_eq!(a.mean_ms(), None);
        a.add(ms(900), Some(ms(1000)));
        a.add(ms(1000), Some(ms(1000)));
        a.add(ms(1500), Some(ms(1000)));
        let mut b = ThinkTimes::default();
        b.add(ms(40), None);
        a.merge(&b);
        assert_eq!(a, ThinkTimes { answers: 4, total_ms: 3440, max_ms: 1500, over_limit: 1 });
        assert_eq!(a.mean_ms(), Some(860.0));
    }
}
