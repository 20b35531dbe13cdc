//! `keima match-stats`: adds up the batches of a match played as several `keima match`
//! runs (other seeds, other days) from the `summary.json` each wrote into its `--out`
//! directory: W/D/L and the game pairs (pentanomial) summed, then the Elo difference and
//! engine1's score with their 95% intervals from the pairs, as `keima match` computes them.

use super::CommandResult;
use super::match_cmd::SUMMARY_FILE;
use clap::Args;
use engine_core::play::match_stats::{EloEstimate, MatchStats, Z95, format_elo};
use engine_core::play::sprt::{Pentanomial, Sprt};
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub struct MatchStatsArgs {
    /// `--out` directories of `keima match` runs (each holds a summary.json).
    #[arg(required = true, num_args = 1..)]
    dirs: Vec<PathBuf>,
    /// Add up batches whose engines or limits differ (refused by default: their sum
    /// measures no one pairing).
    #[arg(long)]
    allow_mixed: bool,
    /// Also the log-likelihood ratio of an SPRT with these bounds over the summed pairs, as
    /// `keima match --sprt` computes it (e.g. for batches of one test stopped and resumed).
    #[arg(long, value_name = "ELO0,ELO1[,ALPHA,BETA]", value_parser = Sprt::parse, allow_hyphen_values = true)]
    sprt: Option<Sprt>,
    /// One JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

/// What this command reads of a summary.
#[derive(Deserialize)]
struct Batch {
    engine1: String,
    engine2: String,
    limit: String,
    wins: u32,
    draws: u32,
    losses: u32,
    pentanomial: [u32; 5],
    /// False while the match was still playing (or was stopped before its end): the counts
    /// of the games finished by then. Summaries written before the field were final.
    #[serde(default = "finished_by_default")]
    finished: bool,
}

fn finished_by_default() -> bool {
    true
}

fn read_batch(dir: &Path) -> Result<Batch, String> {
    let path = dir.join(SUMMARY_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!("{}: {e} (give the --out directory of a finished `keima match`)", path.display())
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e} (not a `keima match` summary)", path.display()))
}

/// Engine1's mean per-pair score with its 95% interval, clamped to [0, 1].
fn score_interval(e: &EloEstimate) -> (f64, f64) {
    ((e.score - Z95 * e.score_stderr).max(0.0), (e.score + Z95 * e.score_stderr).min(1.0))
}

pub fn run(args: MatchStatsArgs) -> CommandResult {
    let batches: Vec<Batch> = args.dirs.iter().map(|d| read_batch(d)).collect::<Result<_, _>>()?;
    let first = &batches[0];
    if !args.allow_mixed {
        for (b, dir) in batches.iter().zip(&args.dirs).skip(1) {
            for (field, here, there) in [
                ("engine1", &b.engine1, &first.engine1),
                ("engine2", &b.engine2, &first.engine2),
                ("limit", &b.limit, &first.limit),
            ] {
                if here != there {
                    return Err(format!(
                        "{}: {field} is {here:?}, but {:?} in {} (another pairing; add --allow-mixed to sum anyway)",
                        dir.join(SUMMARY_FILE).display(),
                        there,
                        args.dirs[0].join(SUMMARY_FILE).display()
                    ));
                }
            }
        }
    }
    let mut stats = MatchStats::default();
    let mut penta = Pentanomial::default();
    for (b, dir) in batches.iter().zip(&args.dirs) {
        // Counts come from files: a sum that does not fit is refused, not wrapped.
        let too_large = || format!("{}: game counts too large to add up", dir.join(SUMMARY_FILE).display());
        let add = |sum: &mut u32, c: u32| sum.checked_add(c).map(|v| *sum = v).ok_or_else(too_large);
        add(&mut stats.wins, b.wins)?;
        add(&mut stats.draws, b.draws)?;
        add(&mut stats.losses, b.losses)?;
        stats
            .wins
            .checked_add(stats.draws)
            .and_then(|n| n.checked_add(stats.losses))
            .ok_or_else(too_large)?;
        for (sum, c) in penta.counts.iter_mut().zip(b.pentanomial) {
            add(sum, c)?;
        }
    }
    let pair = penta.elo();
    let games = stats.elo();
    let unfinished: Vec<&PathBuf> =
        batches.iter().zip(&args.dirs).filter(|(b, _)| !b.finished).map(|(_, d)| d).collect();
    if args.json {
        let num = |v: f64| if v.is_finite() { json!(v) } else { json!(format_elo(v)) };
        let v = json!({
            "batches": args.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
            "engine1": first.engine1,
            "engine2": first.engine2,
            "limit": first.limit,
            "games": stats.games(),
            "wins": stats.wins,
            "draws": stats.draws,
            "losses": stats.losses,
            "score": games.map(|e| e.score),
            "pairs": penta.pairs(),
            "pentanomial": penta.counts,
            "pair_score": pair.map(|e| e.score),
            "pair_score_lower": pair.map(|e| score_interval(&e).0),
            "pair_score_upper": pair.map(|e| score_interval(&e).1),
            "pair_elo": pair.map(|e| num(e.elo)),
            "pair_elo_lower": pair.map(|e| num(e.lower)),
            "pair_elo_upper": pair.map(|e| num(e.upper)),
            "unfinished_batches": unfinished.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
            "sprt": args.sprt.map(|t| json!({
                "elo0": t.elo0,
                "elo1": t.elo1,
                "llr": t.llr(&penta),
                "lower_bound": t.lower_bound(),
                "upper_bound": t.upper_bound(),
            })),
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("json"));
        return Ok(ExitCode::SUCCESS);
    }
    println!("engine1  {}", first.engine1);
    println!("engine2  {}", first.engine2);
    println!("limit    {}", first.limit);
    println!(
        "{:>6} {:>5} {:>5} {:>6} {:>7}  pentanomial  batch",
        "games", "wins", "draws", "losses", "score"
    );
    let row = |w: u32, d: u32, l: u32, p: [u32; 5], what: &str| {
        let s = MatchStats { wins: w, draws: d, losses: l };
        let score = s.score().map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0));
        println!(
            "{:>6} {w:>5} {d:>5} {l:>6} {score:>7}  {} {} {} {} {}  {what}",
            s.games(),
            p[0],
            p[1],
            p[2],
            p[3],
            p[4]
        );
    };
    for (b, dir) in batches.iter().zip(&args.dirs) {
        let what = if b.finished {
            dir.display().to_string()
        } else {
            format!("{} (unfinished: its games so far)", dir.display())
        };
        row(b.wins, b.draws, b.losses, b.pentanomial, &what);
    }
    row(stats.wins, stats.draws, stats.losses, penta.counts, "all");
    match pair {
        Some(e) => {
            let (lo, hi) = score_interval(&e);
            println!(
                "from the {} pairs: score {:.1}% [{:.2}%, {:.2}%], elo {} [{}, {}] (95%)",
                penta.pairs(),
                e.score * 100.0,
                lo * 100.0,
                hi * 100.0,
                format_elo(e.elo),
                format_elo(e.lower),
                format_elo(e.upper)
            );
        }
        None => println!("no complete game pair: no interval"),
    }
    if let Some(t) = &args.sprt {
        println!(
            "SPRT [{}, {}] α {} β {}: LLR {:.2} [{:.2}, {:.2}] over the summed pairs",
            t.elo0,
            t.elo1,
            t.alpha,
            t.beta,
            t.llr(&penta),
            t.lower_bound(),
            t.upper_bound()
        );
    }
    Ok(ExitCode::SUCCESS)
}
