use super::{CommandResult, parse_position};
use clap::Args;
use std::process::ExitCode;

#[derive(Args)]
pub struct MovesArgs {
    /// A position as the USI `position` command takes it: `startpos`, `sfen <SFEN>` or a
    /// bare SFEN, then optionally `moves 7g7f 3c3d ...`.
    #[arg(long, default_value = "startpos")]
    sfen: String,
    /// Print `{"moves":[...]}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: MovesArgs) -> CommandResult {
    let pos = parse_position(&args.sfen)?;
    let moves: Vec<String> = pos.legal_moves().iter().map(|m| m.to_usi()).collect();
    if args.json {
        println!("{}", serde_json::json!({ "moves": moves }));
    } else {
        println!("{}", moves.join(" "));
        eprintln!("{} legal moves", moves.len());
    }
    Ok(ExitCode::SUCCESS)
}
