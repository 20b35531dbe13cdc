//! Playing the games of a match: threads claim games in pairs, start their engines, play
//! each game under the limit and write it as CSA.

use super::Ctx;
use super::limit::Limit;
use super::tally::{Fault, Tally};
use crate::usi_client::{BestMove, ClientError, UsiClient};
use engine_core::records::csa_write::{CsaEnd, CsaRecord, csa_time};
use engine_core::rules::game::{GameRules, can_declare_win};
use engine_core::rules::{Color, Game, GameEnd};
use indicatif::ProgressBar;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

/// One finished game, as the summary lists it.
pub(super) struct GameReport {
    pub(super) game: usize,
    pub(super) opening: usize,
    pub(super) engine1_black: bool,
    /// Engine1's result: Some(true) won, Some(false) lost, None drawn.
    pub(super) engine1_won: Option<bool>,
    pub(super) end: CsaEnd,
    pub(super) plies: usize,
    pub(super) file: PathBuf,
    pub(super) note: Option<String>,
    /// The engine (0 or 1) whose fault ended the game.
    pub(super) fault: Option<(usize, Fault)>,
    /// Each engine's remaining main time at the end, under a clock.
    pub(super) clock_ms: Option<[u64; 2]>,
}

/// Hands out the next game number, or `None` when there is none left. Once `stop` is set
/// only the partner of a game already handed out is given, so every started pair completes.
fn claim(next: &AtomicUsize, games: usize, stop: &AtomicBool) -> Option<usize> {
    let mut g = next.load(Ordering::SeqCst);
    loop {
        if g >= games || (g.is_multiple_of(2) && stop.load(Ordering::SeqCst)) {
            return None;
        }
        match next.compare_exchange(g, g + 1, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return Some(g),
            Err(current) => g = current,
        }
    }
}

fn start_engine(ctx: &Ctx, i: usize) -> Result<UsiClient, String> {
    let spec = &ctx.engines[i];
    let timeout = Duration::from_secs(ctx.args.timeout);
    let mut c =
        UsiClient::start(&spec.argv, &spec.options, timeout).map_err(|e| format!("engine{}: {e}", i + 1))?;
    c.isready(timeout).map_err(|e| format!("engine{} ({}): {e}", i + 1, c.label()))?;
    Ok(c)
}

pub(super) fn worker(
    ctx: &Ctx,
    next: &AtomicUsize,
    tally: &Mutex<Tally>,
    reports: &Mutex<Vec<GameReport>>,
    names: &Mutex<[Option<String>; 2]>,
    pb: &ProgressBar,
) -> Result<(), String> {
    let mut engines: [Option<UsiClient>; 2] = [None, None];
    loop {
        if ctx.abort.load(Ordering::SeqCst) {
            break;
        }
        let Some(g) = claim(next, ctx.args.games, &ctx.stop) else { break };
        for (i, slot) in engines.iter_mut().enumerate() {
            if slot.is_none() {
                let c = start_engine(ctx, i)?;
                names.lock().unwrap_or_else(PoisonError::into_inner)[i].get_or_insert_with(|| c.name.clone());
                *slot = Some(c);
            }
        }
        let report = play_game(ctx, g, &mut engines)?;
        let message = {
            let mut t = tally.lock().unwrap_or_else(PoisonError::into_inner);
            if t.add(report.game, report.engine1_won, report.fault, ctx.args.sprt.as_ref()) {
                ctx.stop.store(true, Ordering::SeqCst);
            }
            t.progress(ctx.args.sprt.as_ref())
        };
        reports.lock().unwrap_or_else(PoisonError::into_inner).push(report);
        pb.set_message(message);
        pb.inc(1);
    }
    for c in engines.into_iter().flatten() {
        c.quit();
    }
    Ok(())
}

fn play_game(ctx: &Ctx, g: usize, engines: &mut [Option<UsiClient>; 2]) -> Result<GameReport, String> {
    let args = ctx.args;
    let opening = &ctx.openings[g / 2];
    let engine1_black = g.is_multiple_of(2);
    let engine_of = |c: Color| if (c == Color::Black) == engine1_black { 0 } else { 1 };
    let timeout = Duration::from_secs(args.timeout);
    for (i, slot) in engines.iter_mut().enumerate() {
        let c = slot.as_mut().expect("started");
        c.send("usinewgame")
            .and_then(|_| c.isready(timeout))
            .map_err(|e| format!("engine{} ({}): {e}", i + 1, c.label()))?;
    }
    let name = |i: usize| engines[i].as_ref().map(|c| c.name.clone()).unwrap_or_default();
    let (black, white) = if engine1_black { (name(0), name(1)) } else { (name(1), name(0)) };
    let mut record = CsaRecord::new(&black, &white, opening.root);
    record.event = Some("keima match".to_string());
    record.start_time = Some(csa_time(SystemTime::now()));

    let mut game = Game::new(opening.root);
    let mut usi: Vec<String> = Vec::new();
    for &m in &opening.moves {
        game.play(m);
        usi.push(m.to_usi());
        record.times_ms.push(None);
    }
    let rules = GameRules { declaration: false, max_plies: Some(args.max_plies) };
    let ms = Duration::from_millis;
    let margin = ms(args.time_margin);
    // Each engine's remaining main time; clocks restart every game.
    let mut clock = match ctx.limit {
        Limit::Clock { main_ms, .. } => [ms(main_ms); 2],
        _ => [Duration::ZERO; 2],
    };
    let mut note = None;
    let mut fault = None;
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
        // The go command and the time this move may use (None: only --timeout bounds it).
        let (go_cmd, allowed) = match ctx.limit {
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
        let client = engines[who].as_mut().expect("started");
        let answer = client.go(&position, &go_cmd, move_timeout);
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
            if let Limit::Clock { inc_ms, .. } = ctx.limit {
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
    let clock_ms = matches!(ctx.limit, Limit::Clock { .. }).then(|| clock.map(|c| c.as_millis() as u64));
    if let Some([c0, c1]) = clock_ms {
        record.comments.push(format!(
            "time control {}; main time left: engine1 {c0} ms, engine2 {c1} ms",
            ctx.limit.describe()
        ));
    }
    if let Some(n) = &note {
        record.comments.push(n.clone());
    }
    let file = args.out.join(format!("game_{:04}.csa", g + 1));
    write_file(&file, &record.to_csa())?;
    Ok(GameReport {
        game: g,
        opening: opening.index,
        engine1_black,
        engine1_won,
        end,
        plies: game.moves().len(),
        file,
        note,
        fault,
        clock_ms,
    })
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_completes_started_pairs_after_stop() {
        let (next, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
        assert_eq!(claim(&next, 6, &stop), Some(0));
        assert_eq!(claim(&next, 6, &stop), Some(1));
        assert_eq!(claim(&next, 6, &stop), Some(2));
        stop.store(true, Ordering::SeqCst);
        // Game 3 is game 2's partner: still played. Game 4 would open a new pair.
        assert_eq!(claim(&next, 6, &stop), Some(3));
        assert_eq!(claim(&next, 6, &stop), None);
        assert_eq!(next.load(Ordering::SeqCst), 4);
        let (next, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
        assert_eq!(
            (0..4).map(|_| claim(&next, 3, &stop)).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(2), None]
        );
    }
}
