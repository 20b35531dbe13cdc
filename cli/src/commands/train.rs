//! `keima train --config FILE` / `keima train --resume DIR`: the coordinator, with local
//! workers started as child processes. The logic is in the `keima-coordinator` crate.

use super::CommandResult;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use keima_coordinator::TrainConfig;
use keima_coordinator::core::Core;
use keima_coordinator::run::{RunOptions, run};
use std::path::PathBuf;
use std::process::ExitCode;

/// The quickstart configuration, embedded so the default run needs no file.
pub const QUICKSTART: &str = include_str!("../../../configs/quickstart.toml");

#[derive(Args)]
pub struct TrainArgs {
    /// TOML config (configs/full-scale.toml documents every key). Without --config and
    /// --resume: the embedded quickstart config (a small run of a few minutes).
    #[arg(long, conflicts_with = "resume")]
    config: Option<String>,
    /// Continue a run from its newest valid checkpoint (a run directory or a checkpoint).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Override the config's run_dir (new runs only).
    #[arg(long, conflicts_with = "resume")]
    run_dir: Option<PathBuf>,
    /// Override [coordinator] listen, e.g. 0.0.0.0:7470 to serve other machines.
    #[arg(long)]
    listen: Option<String>,
    /// Override [coordinator] metrics_listen ("" = off).
    #[arg(long)]
    metrics_listen: Option<String>,
    /// Override [local_workers] count (0 = remote workers only).
    #[arg(long)]
    local_workers: Option<u32>,
    /// Override [local_workers] threads.
    #[arg(long)]
    worker_threads: Option<u32>,
    /// Override the CPU budget `cpu_hours` (new runs and --resume; a larger budget lets a
    /// run that stopped at its budget train on).
    #[arg(long)]
    cpu_hours: Option<f64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn load_config(arg: &str) -> Result<TrainConfig, String> {
    if arg == "quickstart" {
        return TrainConfig::from_toml(QUICKSTART).map_err(|e| format!("embedded quickstart config: {e}"));
    }
    let text = std::fs::read_to_string(arg).map_err(|e| format!("{arg}: {e}"))?;
    TrainConfig::from_toml(&text).map_err(|e| format!("{arg}: {e}"))
}

pub fn run_cmd(a: TrainArgs) -> CommandResult {
    let core = if let Some(dir) = &a.resume {
        let (mut core, warnings) = Core::resume(dir, a.listen.clone())?;
        for w in warnings {
            eprintln!("{w}");
        }
        if let Some(m) = &a.metrics_listen {
            core.set_metrics_listen(m.clone());
        }
        if let Some(h) = a.cpu_hours {
            core.set_cpu_hours(Some(h)).map_err(|e| format!("--cpu-hours: {e}"))?;
        }
        core
    } else {
        let mut cfg = load_config(a.config.as_deref().unwrap_or("quickstart"))?;
        if let Some(d) = &a.run_dir {
            cfg.run_dir = d.clone();
        }
        if let Some(l) = &a.listen {
            cfg.coordinator.listen = l.clone();
        }
        if let Some(m) = &a.metrics_listen {
            cfg.coordinator.metrics_listen = m.clone();
        }
        if let Some(h) = a.cpu_hours {
            cfg.cpu_hours = Some(h);
        }
        Core::create(cfg)?
    };
    let local_workers = a.local_workers.unwrap_or(core.config().local_workers.count);
    let worker_threads = a.worker_threads.unwrap_or(core.config().local_workers.threads).max(1);
    let total = core.shard_counts().total;
    eprintln!(
        "run {}: {} shards{}, {} local workers x {} threads, run directory {}",
        core.run_id(),
        total,
        core.config()
            .cpu_hours
            .map_or_else(String::new, |h| format!(" or a CPU budget of {h} h, whichever ends first")),
        local_workers,
        worker_threads,
        core.run_dir().display()
    );
    let bar = if a.quiet { ProgressBar::hidden() } else { ProgressBar::new(total) };
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} shards  {msg}  ETA {eta}")
            .unwrap()
            .progress_chars("=> "),
    );
    let b = bar.clone();
    let worker_exe = std::env::current_exe().map_err(|e| format!("cannot find the keima binary: {e}"))?;
    let summary = run(
        core,
        RunOptions {
            worker_exe,
            local_workers,
            worker_threads,
            progress: Box::new(move |s| {
                b.set_position(s.shards_done + s.shards_failed);
                b.set_message(format!(
                    "v{}  {} pos  loss {:.4}  {} workers  {} leased",
                    s.weights_version, s.positions_merged, s.train_loss, s.workers_alive, s.shards_leased
                ));
            }),
        },
    )?;
    bar.finish_and_clear();
    let s = &summary.status;
    println!(
        "{} {}/{} shards merged ({} failed), {} positions, version {}, train loss {:.4}, {:.1}s \
         ({:.0} positions/s), {:.3} CPU-hours of training; {} duplicate, {} stale, {} rejected pushes; checkpoint {}{}",
        if summary.interrupted {
            "interrupted:"
        } else if summary.budget_reached {
            "done (CPU budget reached):"
        } else {
            "done:"
        },
        s.shards_done,
        s.shards_total,
        s.shards_failed,
        s.positions_merged,
        s.weights_version,
        s.train_loss,
        summary.seconds,
        s.positions_merged as f64 / summary.seconds.max(1e-9),
        s.cpu_seconds / 3600.0,
        s.duplicate_pushes,
        s.stale_pushes,
        s.rejected_pushes,
        summary.checkpoint.display(),
        match &summary.export_dir {
            Some(d) => format!("; eval {} ({} weights clamped)", d.display(), summary.clamped),
            None => String::new(),
        }
    );
    if summary.interrupted {
        eprintln!(
            "continue with: keima train --resume {}",
            summary
                .checkpoint
                .parent()
                .and_then(|p| p.parent())
                .map_or_else(|| ".".into(), |p| p.display().to_string())
        );
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
