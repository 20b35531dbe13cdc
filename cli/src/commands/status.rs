//! `keima status URL`: a running coordinator's counters, for a person (or `--json`).

use super::CommandResult;
use clap::Args;
use keima_worker::{Connection, fetch_status};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct StatusArgs {
    /// The coordinator, e.g. http://127.0.0.1:7470 (see <run_dir>/coordinator.url).
    url: String,
    /// File holding the run's token (default: KEIMA_TOKEN).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// CA certificate (PEM) for https://.
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

pub fn run(a: StatusArgs) -> CommandResult {
    let connection =
        Connection { coordinator: a.url, token: super::worker::token(&a.token_file)?, tls_ca: a.tls_ca };
    let s = fetch_status(&connection).map_err(|e| e.to_string())?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "run_id": s.run_id, "shards_total": s.shards_total, "shards_pending": s.shards_pending,
                "shards_leased": s.shards_leased, "shards_done": s.shards_done, "shards_failed": s.shards_failed,
                "weights_version": s.weights_version, "positions_merged": s.positions_merged,
                "gradient_entries_merged": s.gradient_entries_merged, "workers_alive": s.workers_alive,
                "train_loss": s.train_loss, "merges_per_s": s.merges_per_s, "bytes_in": s.bytes_in,
                "bytes_out": s.bytes_out, "rejected_pushes": s.rejected_pushes,
                "duplicate_pushes": s.duplicate_pushes, "stale_pushes": s.stale_pushes,
                "mean_staleness": s.mean_staleness, "finished": s.finished, "elapsed_s": s.elapsed_s,
                "server_faults": s.server_faults, "teacher_records_kept": s.teacher_records_kept,
                "cpu_hours": s.cpu_seconds / 3600.0, "usi_engines_missing": s.usi_engines_missing,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "run {}  ({}; up {:.0}s)",
        s.run_id,
        if s.finished { "finished" } else { "running" },
        s.elapsed_s
    );
    println!(
        "shards    {} total: {} pending, {} leased, {} done, {} failed",
        s.shards_total, s.shards_pending, s.shards_leased, s.shards_done, s.shards_failed
    );
    println!(
        "weights   version {}, {} positions merged, {} gradient entries, {:.2} merges/s",
        s.weights_version, s.positions_merged, s.gradient_entries_merged, s.merges_per_s
    );
    println!("loss      {:.4} (mean over merged positions)", s.train_loss);
    println!("workers   {} alive; mean staleness {:.2} versions", s.workers_alive, s.mean_staleness);
    println!(
        "pushes    {} duplicate, {} stale, {} rejected; {:.1} MiB in, {:.1} MiB out; {} server faults",
        s.duplicate_pushes,
        s.stale_pushes,
        s.rejected_pushes,
        mib(s.bytes_in),
        mib(s.bytes_out),
        s.server_faults
    );
    println!("records   {} teacher records kept", s.teacher_records_kept);
    println!("cpu       {:.3} CPU-hours of training", s.cpu_seconds / 3600.0);
    for engine in &s.usi_engines_missing {
        println!(
            "waiting   match shards need the USI engine {engine:?}, which no live worker declared: start one \
             with `keima worker --usi-engine {engine}=COMMAND`"
        );
    }
    Ok(ExitCode::SUCCESS)
}
