use super::{CommandResult, parse_position};
use clap::Args;
use engine_core::rules::perft::{perft, perft_divide};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Args)]
pub struct PerftArgs {
    /// A position as the USI `position` command takes it: `startpos`, `sfen <SFEN>` or a
    /// bare SFEN, then optionally `moves 7g7f 3c3d ...`.
    #[arg(long, default_value = "startpos")]
    sfen: String,
    /// Plies to search.
    #[arg(long)]
    depth: u32,
    /// Print the count below each root move.
    #[arg(long)]
    divide: bool,
    /// Print one JSON object `{"depth":N,"nodes":X,"seconds":S}` (with `--divide`, also
    /// `"divide":{"7g7f":N,...}`).
    #[arg(long)]
    json: bool,
}

pub fn run(args: PerftArgs) -> CommandResult {
    let mut pos = parse_position(&args.sfen)?;
    if args.depth > 12 {
        return Err(format!("--depth {} is too deep to finish; use 1..=12", args.depth));
    }
    let start = Instant::now();
    let (nodes, divide) = if args.divide && args.depth > 0 {
        let parts = perft_divide(&mut pos, args.depth);
        (parts.iter().map(|(_, n)| n).sum(), Some(parts))
    } else {
        (perft(&mut pos, args.depth), None)
    };
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let mut obj = serde_json::json!({"depth": args.depth, "nodes": nodes, "seconds": seconds});
        if let Some(parts) = &divide {
            let map: serde_json::Map<String, serde_json::Value> =
                parts.iter().map(|(m, n)| (m.to_usi(), (*n).into())).collect();
            obj["divide"] = map.into();
        }
        println!("{obj}");
    } else {
        if let Some(parts) = &divide {
            for (m, n) in parts {
                println!("{m}: {n}");
            }
        }
        let nps = if seconds > 0.0 { nodes as f64 / seconds } else { 0.0 };
        println!("perft {} = {nodes} ({seconds:.3} s, {:.1} M leaves/s)", args.depth, nps / 1e6);
    }
    Ok(ExitCode::SUCCESS)
}
