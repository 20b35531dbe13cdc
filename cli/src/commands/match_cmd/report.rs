//! The match summary: a table for people, or one JSON object (`--json`).

use super::MatchArgs;
use super::game::GameReport;
use super::tally::{Tally, sprt_result};
use engine_core::play::match_stats::format_elo;
use keima_worker::usi::game::ThinkTimes;
use keima_worker::usi::limit::Limit;
use serde_json::json;
use std::fmt::Write as _;

fn elo_json(v: f64) -> serde_json::Value {
    if v.is_finite() { json!((v * 10.0).round() / 10.0 + 0.0) } else { json!(format_elo(v)) }
}

fn per_engine_json(counts: [u32; 2]) -> serde_json::Value {
    json!({ "engine1": counts[0], "engine2": counts[1] })
}

fn think_json(t: &ThinkTimes) -> serde_json::Value {
    json!({
        "answers": t.answers,
        "mean_ms": t.mean_ms().map(|m| m.round()),
        "max_ms": t.max_ms,
        "over_limit": t.over_limit,
    })
}

/// "mean 874 ms, max 905 ms, 3 of 2314 answers past the limit" (the last part only
/// under a time limit).
fn think_line(t: &ThinkTimes, timed: bool) -> String {
    let Some(mean) = t.mean_ms() else { return "no answers".to_string() };
    let mut line = format!("mean {mean:.0} ms, max {} ms", t.max_ms);
    if timed {
        let _ = write!(line, ", {} of {} answers past the limit", t.over_limit, t.answers);
    }
    line
}

/// What a run needs to be played again from its directory alone: the command line as
/// given, and the settings that pick and order the openings, read back by people and tools.
fn run_json(args: &MatchArgs) -> serde_json::Value {
    json!({
        // `args_os`: `std::env::args` panics on an argument that is not UTF-8 (a path may be).
        "argv": std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        "engine1": args.engine1,
        "engine2": args.engine2,
        "option1": args.option1,
        "option2": args.option2,
        "openings": args.openings.as_ref().map(|p| p.display().to_string()),
        "opening_start": args.opening_start,
        "seed": args.seed,
        "max_plies": args.max_plies,
        "games_requested": args.games,
    })
}

/// The summary; `reports` (every game's line) once the match has ended, `None` for the
/// counts so far of a match still playing (`"finished": false`, no `results`).
pub(super) fn summary_json(
    args: &MatchArgs,
    limit: Limit,
    tally: &Tally,
    reports: Option<&[GameReport]>,
    names: [String; 2],
) -> serde_json::Value {
    let games: Option<Vec<serde_json::Value>> = reports.map(|reports| {
        reports
        .iter()
        .map(|r| {
            json!({
                "game": r.game + 1,
                "opening": r.opening,
                "opening_position": r.opening_position,
                "engine1_color": if r.engine1_black { "black" } else { "white" },
                "result": match r.engine1_won { Some(true) => "win", Some(false) => "loss", None => "draw" },
                "end": r.end.keyword(),
                "plies": r.plies,
                "file": r.file.display().to_string(),
                "note": r.note,
                "clock_ms": r.clock_ms.map(|c| json!({ "engine1": c[0], "engine2": c[1] })),
            })
        })
        .collect()
    });
    let stats = &tally.stats;
    let elo = stats.elo().expect("at least one game");
    let pair_elo = tally.penta.elo();
    let sprt = args.sprt.map(|t| {
        json!({
            "elo0": t.elo0,
            "elo1": t.elo1,
            "alpha": t.alpha,
            "beta": t.beta,
            "llr": t.llr(&tally.penta),
            "lower_bound": t.lower_bound(),
            "upper_bound": t.upper_bound(),
            "result": sprt_result(tally.decision),
            "decided_after_pairs": tally.decision.map(|d| d.pairs),
            "llr_at_decision": tally.decision.map(|d| d.llr),
        })
    });
    let mut summary = json!({
        "finished": games.is_some(),
        "engine1": names[0],
        "engine2": names[1],
        "limit": limit.describe(),
        "games": stats.games(),
        "wins": stats.wins,
        "draws": stats.draws,
        "losses": stats.losses,
        "score": elo.score,
        "elo": elo_json(elo.elo),
        "elo_lower": elo_json(elo.lower),
        "elo_upper": elo_json(elo.upper),
        "pairs": tally.penta.pairs(),
        "pentanomial": tally.penta.counts,
        "pair_elo": pair_elo.map(|e| elo_json(e.elo)),
        "pair_elo_lower": pair_elo.map(|e| elo_json(e.lower)),
        "pair_elo_upper": pair_elo.map(|e| elo_json(e.upper)),
        "sprt": sprt,
        "time_losses": per_engine_json(tally.time_losses),
        "illegal_moves": per_engine_json(tally.illegal_moves),
        "crashes": per_engine_json(tally.crashes),
        "think_time": { "engine1": think_json(&tally.think[0]), "engine2": think_json(&tally.think[1]) },
        "out": args.out.display().to_string(),
        "run": run_json(args),
    });
    if let Some(games) = games {
        summary["results"] = json!(games);
    }
    summary
}

pub(super) fn print_table(args: &MatchArgs, limit: Limit, tally: &Tally, names: [String; 2]) {
    let stats = &tally.stats;
    let elo = stats.elo().expect("at least one game");
    println!("engine1  {}  ({})", names[0], args.engine1);
    println!("engine2  {}  ({})", names[1], args.engine2);
    println!("limit    {}", limit.describe());
    println!(
        "{:>6} {:>5} {:>5} {:>6} {:>7} {:>8}  95% interval",
        "games", "wins", "draws", "losses", "score", "elo"
    );
    println!(
        "{:>6} {:>5} {:>5} {:>6} {:>6.1}% {:>8}  [{}, {}]",
        stats.games(),
        stats.wins,
        stats.draws,
        stats.losses,
        elo.score * 100.0,
        format_elo(elo.elo),
        format_elo(elo.lower),
        format_elo(elo.upper)
    );
    let [c0, c1, c2, c3, c4] = tally.penta.counts;
    let pairs = tally.penta.pairs();
    println!(
        "pentanomial  {c0} {c1} {c2} {c3} {c4}  (pairs scoring 0, 0.5, 1, 1.5, 2; {pairs} pair{})",
        if pairs == 1 { "" } else { "s" }
    );
    if let Some(e) = tally.penta.elo() {
        println!(
            "pair elo     {} [{}, {}]  (95%, from the pairs)",
            format_elo(e.elo),
            format_elo(e.lower),
            format_elo(e.upper)
        );
    }
    if let Some(t) = &args.sprt {
        let mut line = format!(
            "SPRT [{}, {}] α {} β {}: LLR {:.2} [{:.2}, {:.2}] → {}",
            t.elo0,
            t.elo1,
            t.alpha,
            t.beta,
            t.llr(&tally.penta),
            t.lower_bound(),
            t.upper_bound(),
            sprt_result(tally.decision)
        );
        if let Some(d) = tally.decision.filter(|d| d.pairs < tally.penta.pairs()) {
            let _ = write!(line, " (bound crossed after {} pairs at LLR {:.2})", d.pairs, d.llr);
        }
        println!("{line}");
    }
    println!("time losses: engine1 {}, engine2 {}", tally.time_losses[0], tally.time_losses[1]);
    let timed = !matches!(limit, Limit::Nodes { .. });
    println!("time to answer go: engine1 {}", think_line(&tally.think[0], timed));
    println!("                   engine2 {}", think_line(&tally.think[1], timed));
    println!("illegal moves: engine1 {}, engine2 {}", tally.illegal_moves[0], tally.illegal_moves[1]);
    if tally.crashes != [0, 0] {
        println!("crashes: engine1 {}, engine2 {}", tally.crashes[0], tally.crashes[1]);
    }
    println!("records and {} in {}", super::SUMMARY_FILE, args.out.display());
}
