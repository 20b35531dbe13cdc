//! Playing the games of a match: threads claim games in pairs, start their engines, play
//! each game under the limit (`keima_worker::usi::game`) and write it as CSA.

use super::Ctx;
use super::tally::Tally;
use engine_core::records::csa_write::CsaEnd;
use engine_core::rules::UsiPosition;
use indicatif::ProgressBar;
use keima_worker::usi;
use keima_worker::usi::client::UsiClient;
use keima_worker::usi::game::{Fault, ThinkTimes};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// One finished game, as the summary lists it.
pub(super) struct GameReport {
    pub(super) game: usize,
    pub(super) opening: usize,
    /// The opening as the USI `position` command gives it (`startpos moves ...`).
    pub(super) opening_position: String,
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
    pub(super) think: [ThinkTimes; 2],
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
            t.add_think_times(&report.think);
            if t.add(report.game, report.engine1_won, report.fault, ctx.args.sprt.as_ref()) {
                ctx.stop.store(true, Ordering::SeqCst);
            }
            // Under the tally's lock, so the file always holds the latest counts.
            let names = names.lock().unwrap_or_else(PoisonError::into_inner).clone();
            super::write_partial_summary(ctx, &t, &names)?;
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
    let opening = &ctx.openings[g / 2];
    let engine1_black = g.is_multiple_of(2);
    let played = usi::game::play_game(engines, opening, engine1_black, &ctx.settings)?;
    let file = ctx.args.out.join(format!("game_{:04}.csa", g + 1));
    write_file(&file, &played.record.to_csa())?;
    Ok(GameReport {
        game: g,
        opening: opening.index,
        opening_position: UsiPosition::format(&opening.root, opening.moves.iter().copied()),
        engine1_black,
        engine1_won: played.engine1_won,
        end: played.end,
        plies: played.plies,
        file,
        note: played.note,
        fault: played.fault,
        clock_ms: played.clock_ms,
        think: played.think,
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
