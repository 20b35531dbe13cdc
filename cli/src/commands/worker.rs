//! `keima worker --coordinator URL --threads N`: a training worker (`keima-worker` crate).

use super::CommandResult;
use clap::Args;
use keima_worker::usi::engines::declare;
use keima_worker::{Connection, WorkerOptions, run};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct WorkerArgs {
    /// The coordinator, e.g. http://10.0.0.5:7470 (https:// with TLS).
    #[arg(long)]
    coordinator: String,
    /// Search and gradient threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// A name for logs and status (default: host-pid).
    #[arg(long)]
    name: Option<String>,
    /// File holding the run's token (default: the KEIMA_TOKEN environment variable).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// CA certificate (PEM) to verify an https:// coordinator.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// Stop after this many shards (0 = until the run finishes).
    #[arg(long, default_value_t = 0)]
    max_shards: u64,
    /// Give up after the coordinator has been unreachable this many seconds.
    #[arg(long, default_value_t = 600)]
    give_up_after: u64,
    /// Print only the summary line.
    #[arg(long)]
    quiet: bool,
    /// An external USI engine this worker may play match shards against, `NAME=COMMAND`
    /// (repeatable; the command split on whitespace). The coordinator asks for it by NAME
    /// (`[elo] baseline = { usi = "NAME" }`) and never sends a command.
    #[arg(long = "usi-engine", value_name = "NAME=COMMAND")]
    usi_engine: Vec<String>,
    /// A USI option of a declared engine, `NAME:OPTION=VALUE` (repeatable), e.g. `gps:Thread=1`.
    #[arg(long = "usi-option", value_name = "NAME:OPTION=VALUE")]
    usi_option: Vec<String>,
}

/// The token from a file or KEIMA_TOKEN.
pub fn token(file: &Option<PathBuf>) -> Result<String, String> {
    let t = match file {
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("--token-file {}: {e}", p.display()))?,
        None => std::env::var("KEIMA_TOKEN").map_err(|_| {
            "no token: pass --token-file FILE (the coordinator writes <run_dir>/token) or set KEIMA_TOKEN"
                .to_string()
        })?,
    };
    let t = t.trim().to_string();
    if t.is_empty() {
        return Err("the token is empty".into());
    }
    Ok(t)
}

pub fn run_cmd(a: WorkerArgs) -> CommandResult {
    let name = a.name.clone().unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_else(|_| "host".into());
        format!("{}-{}", host.trim(), std::process::id())
    });
    let s = run(WorkerOptions {
        connection: Connection {
            coordinator: a.coordinator.clone(),
            token: token(&a.token_file)?,
            tls_ca: a.tls_ca,
        },
        threads: a.threads.max(1),
        name: name.clone(),
        max_shards: a.max_shards,
        give_up_after: Duration::from_secs(a.give_up_after),
        usi_engines: declare(&a.usi_engine, &a.usi_option).map_err(|e| e.to_string())?,
    })
    .map_err(|e| e.to_string())?;
    if !a.quiet || s.interrupted {
        println!(
            "worker {name}: {} shards ({} merged, {} duplicate, {} stale), {} dropped (lease gone), {} \
             positions, {:.1}s; pushed {} KiB, pulled {} KiB{}",
            s.shards,
            s.merged,
            s.duplicates,
            s.stale,
            s.dropped,
            s.positions,
            s.seconds,
            s.bytes_pushed / 1024,
            s.bytes_pulled / 1024,
            if s.interrupted { " (stopped by signal; lease returned)" } else { "" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
