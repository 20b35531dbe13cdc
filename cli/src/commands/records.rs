use super::CommandResult;
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum RecordsCommand {
    /// Parse and replay record files; print a per-file summary; exit 1 if any fails.
    Check { paths: Vec<PathBuf> },
}

pub fn run(cmd: RecordsCommand) -> CommandResult {
    match cmd {
        RecordsCommand::Check { paths } => {
            Err(format!("records check of {} files: not built yet", paths.len()))
        }
    }
}
