//! `keima usi`: the engine on stdin/stdout for shogi GUIs and `keima match`.

use super::CommandResult;
use engine_core::play::UsiEngine;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct UsiArgs {}

pub fn run(_args: UsiArgs) -> CommandResult {
    let mut engine = UsiEngine::new(std::io::stdout());
    engine.run(std::io::stdin().lock()).map_err(|e| format!("reading stdin: {e}"))?;
    Ok(ExitCode::SUCCESS)
}
