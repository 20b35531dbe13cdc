//! Running a match shard against an external USI engine: the engine is one this worker was
//! given by name (`--usi-engine`), the checkpoint under test is played by this program's
//! own `usi` command (`EvalDir` = the exported directory, `Threads` 1, its patterns if
//! any), both under the shard's clock. Every opening is played twice with colours swapped
//! (`usi::game`), on up to `threads` game threads each with its own two processes, and the
//! result is W/D/L, the game pairs and the time losses, as for an in-process match.

use crate::usi::client::{UsiClient, engine_argv};
use crate::usi::engines::UsiEngine;
use crate::usi::game::{Fault, GameSettings, UsiOpening, play_game};
use crate::usi::limit::Limit;
use engine_core::eval::kppt_file::load_kppt_dir;
use engine_core::play::{MatchStats, Pentanomial};
use engine_core::rules::UsiPosition;
use engine_core::teacher::Opening;
use keima_proto::spec::{ShardSpec, UsiBaseline};
use keima_proto::v1;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How long an engine may take to answer `usi` / `isready`.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Past the time a move may use, how long before it loses on time (as `keima match`).
const TIME_MARGIN: Duration = Duration::from_millis(1000);
/// The pattern file an export writes next to the KPPT files, if the run has patterns.
const PATTERN_FILE: &str = "patterns.kpat";

/// How to start one side: command line and options.
struct Side {
    argv: Vec<String>,
    options: Vec<(String, String)>,
}

/// The checkpoint under test, as `keima match --engine1 self --option1 EvalDir=...` plays it.
fn tested_side(eval_dir: &str) -> Result<Side, String> {
    // `keima usi` answers an EvalDir it cannot load with an info line and plays on with
    // material only, which would measure the wrong eval: check the export here (it maps
    // the three files and checks their sizes; nothing is read).
    load_kppt_dir(Path::new(eval_dir))
        .map_err(|e| format!("the checkpoint's export {eval_dir:?} cannot be loaded: {e}"))?;
    let mut options =
        vec![("Threads".to_string(), "1".to_string()), ("EvalDir".to_string(), eval_dir.to_string())];
    let patterns = Path::new(eval_dir).join(PATTERN_FILE);
    if patterns.is_file() {
        options.push(("Patterns".to_string(), patterns.to_string_lossy().into_owned()));
    }
    Ok(Side { argv: engine_argv("self")?, options })
}

fn start(side: &Side, label: &str) -> Result<UsiClient, String> {
    let mut c =
        UsiClient::start(&side.argv, &side.options, START_TIMEOUT).map_err(|e| format!("{label}: {e}"))?;
    c.isready(START_TIMEOUT).map_err(|e| format!("{label} ({}): {e}", c.label()))?;
    Ok(c)
}

/// The shard's games so far.
#[derive(Default)]
struct Tally {
    stats: MatchStats,
    pairs: Pentanomial,
    /// Time losses of the tested side and of the baseline.
    time_losses: [u32; 2],
}

/// Plays a match shard against the declared engine the shard names. `progress` counts
/// finished games.
pub fn run(
    spec: &ShardSpec,
    engines: &[UsiEngine],
    threads: usize,
    progress: &AtomicU64,
) -> Result<(v1::MatchResult, v1::ShardStats), String> {
    let ShardSpec::Match { eval_dir, max_ply, openings, usi: Some(usi), .. } = spec else {
        return Err("not a match shard against a USI engine".into());
    };
    let UsiBaseline { engine, byoyomi_ms, time_ms, increment_ms } = usi;
    let baseline = engines.iter().find(|e| &e.name == engine).ok_or_else(|| {
        format!("this worker has no USI engine {engine:?} (declare it: --usi-engine {engine}=COMMAND)")
    })?;
    let sides =
        [tested_side(eval_dir)?, Side { argv: baseline.argv.clone(), options: baseline.options.clone() }];
    let openings = openings
        .iter()
        .enumerate()
        .map(|(index, l)| {
            let o = Opening::parse_usi(l).map_err(|e| format!("opening {l:?}: {e}"))?;
            Ok(UsiOpening {
                index,
                root_cmd: UsiPosition::format(&o.start, []),
                root: o.start,
                moves: o.moves,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let settings = GameSettings {
        limit: Limit::Clock { main_ms: *time_ms, inc_ms: *increment_ms, byoyomi_ms: *byoyomi_ms },
        max_plies: *max_ply,
        time_margin: TIME_MARGIN,
        timeout: START_TIMEOUT,
        event: format!("keima match shard: checkpoint against usi:{engine}"),
    };
    let next = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    let errors = Mutex::new(Vec::<String>::new());
    let labels = ["the tested checkpoint (keima usi)".to_string(), format!("USI engine {engine}")];
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, openings.len().max(1)) {
            scope.spawn(|| {
                let mut clients: [Option<UsiClient>; 2] = [None, None];
                let mut play_pair = |opening: &UsiOpening| -> Result<(), String> {
                    let mut pair = [None; 2];
                    for (k, tested_black) in [true, false].into_iter().enumerate() {
                        // The external engine first: the likelier one to be missing.
                        for (i, slot) in clients.iter_mut().enumerate().rev() {
                            if slot.is_none() {
                                *slot = Some(start(&sides[i], &labels[i])?);
                            }
                        }
                        let game = play_game(&mut clients, opening, tested_black, &settings)?;
                        let mut t = tally.lock().unwrap_or_else(PoisonError::into_inner);
                        t.stats.add(game.engine1_won);
                        if let Some((who, Fault::TimeLoss)) = game.fault {
                            t.time_losses[who] += 1;
                        }
                        pair[k] = game.engine1_won;
                        progress.fetch_add(1, Ordering::Relaxed);
                    }
                    tally.lock().unwrap_or_else(PoisonError::into_inner).pairs.add_pair(pair[0], pair[1]);
                    Ok(())
                };
                while errors.lock().unwrap_or_else(PoisonError::into_inner).is_empty() {
                    let Some(opening) = openings.get(next.fetch_add(1, Ordering::SeqCst)) else { break };
                    if let Err(e) = play_pair(opening) {
                        errors.lock().unwrap_or_else(PoisonError::into_inner).push(e);
                    }
                }
                for c in clients.into_iter().flatten() {
                    c.quit();
                }
            });
        }
    });
    if let Some(e) = errors.into_inner().unwrap_or_else(PoisonError::into_inner).into_iter().next() {
        return Err(e);
    }
    let t = tally.into_inner().unwrap_or_else(PoisonError::into_inner);
    let result = v1::MatchResult {
        wins: t.stats.wins,
        draws: t.stats.draws,
        losses: t.stats.losses,
        pentanomial: t.pairs.counts.to_vec(),
        time_losses: t.time_losses[0],
        baseline_time_losses: t.time_losses[1],
    };
    Ok((result, v1::ShardStats { games: u64::from(t.stats.games()), ..Default::default() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(engine: &str) -> ShardSpec {
        ShardSpec::Match {
            version: 2,
            eval_dir: "no/such/dir".into(),
            baseline_dir: None,
            nodes: 0,
            max_ply: 40,
            openings: vec!["startpos".into()],
            usi: Some(UsiBaseline { engine: engine.into(), byoyomi_ms: 100, time_ms: 0, increment_ms: 0 }),
        }
    }

    /// A KPPT directory of zeros (sparse files of the standard sizes: nothing is written).
    fn zero_eval_dir() -> std::path::PathBuf {
        use engine_core::eval::kppt::{KK_LEN, KKP_LEN, KPP_LEN};
        use engine_core::eval::kppt_file::{KK_FILE, KKP_FILE, KPP_FILE};
        let dir = std::env::temp_dir().join(format!("keima-usi-match-eval-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // KK and KKP hold [i32; 2] per entry, KPP [i16; 2].
        for (name, bytes) in [(KK_FILE, KK_LEN * 8), (KKP_FILE, KKP_LEN * 8), (KPP_FILE, KPP_LEN * 4)] {
            std::fs::File::create(dir.join(name)).unwrap().set_len(bytes as u64).unwrap();
        }
        dir
    }

    #[test]
    fn only_a_declared_engine_is_played() {
        let declared =
            [UsiEngine { name: "gps".into(), argv: vec!["/nonexistent/gpsusi".into()], options: Vec::new() }];
        let e = run(&spec("fairy"), &declared, 1, &AtomicU64::new(0)).unwrap_err();
        assert!(e.contains("no USI engine \"fairy\""), "{e}");
        // An export that cannot be loaded is refused before any engine starts: `keima usi`
        // would otherwise play it as material only.
        let e = run(&spec("gps"), &declared, 1, &AtomicU64::new(0)).unwrap_err();
        assert!(e.contains("export \"no/such/dir\" cannot be loaded"), "{e}");
        // With a loadable export, the declared command is what would be started (here it
        // does not exist).
        let eval = zero_eval_dir();
        let mut with_eval = spec("gps");
        if let ShardSpec::Match { eval_dir, .. } = &mut with_eval {
            *eval_dir = eval.to_string_lossy().into_owned();
        }
        let e = run(&with_eval, &declared, 1, &AtomicU64::new(0)).unwrap_err();
        std::fs::remove_dir_all(&eval).unwrap();
        assert!(e.contains("/nonexistent/gpsusi"), "{e}");
        let mut in_process = spec("gps");
        if let ShardSpec::Match { usi, .. } = &mut in_process {
            *usi = None;
        }
        assert!(
            run(&in_process, &declared, 1, &AtomicU64::new(0))
                .unwrap_err()
                .contains("not a match shard against")
        );
    }

    #[test]
    fn a_lease_naming_a_bad_engine_is_refused_before_anything_runs() {
        use engine_core::eval::Evaluator;
        let declared =
            [UsiEngine { name: "gps".into(), argv: vec!["/nonexistent/gpsusi".into()], options: Vec::new() }];
        let mut lease = v1::Lease {
            kind: Some(spec("gps").into()),
            loss: Some(engine_core::learn::config::LossConfig::default().into()),
            ..Default::default()
        };
        let Some(v1::lease::Kind::Match(m)) = &mut lease.kind else { unreachable!() };
        m.usi.as_mut().unwrap().engine = "/usr/games/gpsusi".into();
        let ev = std::sync::Arc::new(Evaluator::material_only());
        let e = crate::shard_job::run(&lease, &ev, &declared, 1, &AtomicU64::new(0), &Default::default())
            .err()
            .unwrap();
        assert!(e.contains("only ASCII letters"), "{e}");
    }
}
