//! `keima learn --config FILE` / `keima learn --resume DIR`: single-process training.

use super::CommandResult;
use clap::Args;
use engine_core::learn::{LearnConfig, Trainer, bagging};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct LearnArgs {
    /// TOML config (configs/learn-full.toml documents every key; configs/learn-demo.toml is a
    /// small run).
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    config: Option<PathBuf>,
    /// Continue from a checkpoint directory, or from the newest valid checkpoint of a run.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// With --resume: write to this run directory instead of the checkpoint's.
    #[arg(long, requires = "resume")]
    out: Option<PathBuf>,
    /// Override the config's max_updates (0 = no limit).
    #[arg(long)]
    max_updates: Option<u64>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(a: LearnArgs) -> CommandResult {
    let mut trainer = if let Some(dir) = &a.resume {
        let (t, warnings) = Trainer::resume(dir, a.out.clone(), a.max_updates)?;
        for w in warnings {
            eprintln!("warning: {w}");
        }
        eprintln!(
            "resuming at update {} (epoch {}, record {})",
            t.state.updates, t.state.epoch, t.state.emitted
        );
        t
    } else {
        let path = a.config.as_ref().expect("clap requires --config");
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut cfg = LearnConfig::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(m) = a.max_updates {
            cfg.max_updates = m;
        }
        if cfg.bagging.players > 0 {
            return run_bagging(&cfg, a.quiet);
        }
        Trainer::new(cfg)?
    };
    if let Some(w) = trainer.cfg.learn.adagrad.eta_factors_unused(&trainer.factorization()) {
        eprintln!("warning: {w}");
    }
    let bar = progress_bar(a.quiet);
    let start = std::time::Instant::now();
    let metrics = trainer.run(&mut |p| {
        if let Some(t) = p.records_total {
            bar.set_length(t);
        }
        bar.set_position(p.records_before + p.records_done);
        bar.set_message(format!(
            "update {} epoch {}  {:.0} pos/s  loss {:.4}",
            p.updates, p.epoch, p.positions_per_s, p.batch_loss
        ));
    })?;
    bar.finish_and_clear();
    let s = &trainer.state;
    println!(
        "{} updates, {} examples ({} skipped) in {:.1}s; test loss {:.4}, move agreement {:.3}, \
         mean |eval - teacher| {:.1}; weights {}, metrics {}",
        s.updates,
        s.examples,
        s.skipped,
        start.elapsed().as_secs_f64(),
        metrics.test_loss,
        metrics.move_agreement,
        metrics.mean_abs_eval_diff,
        trainer.out_dir().join(engine_core::learn::files::WEIGHTS_FILE).display(),
        trainer.out_dir().join(engine_core::learn::files::METRICS_FILE).display(),
    );
    Ok(ExitCode::SUCCESS)
}

fn progress_bar(quiet: bool) -> ProgressBar {
    let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} positions  {msg}  ETA {eta}")
            .unwrap()
            .progress_chars("=> "),
    );
    bar
}

/// `[bagging]`: the common phase, then one phase per player (see `learn::bagging`); run
/// the same config again to continue an interrupted run.
fn run_bagging(cfg: &LearnConfig, quiet: bool) -> CommandResult {
    // A new run's factors are the config's; one from `[init] weights` keeps that file's,
    // which every phase opens itself (and reports on if it cannot).
    if cfg.learn.init.weights.is_none()
        && let Some(w) = cfg.learn.adagrad.eta_factors_unused(&cfg.learn.init.factors)
    {
        eprintln!("warning: {w}");
    }
    let bar = progress_bar(quiet);
    let start = std::time::Instant::now();
    let (dirs, last) = bagging::run(cfg, &mut |phase, p| {
        if let Some(t) = p.records_total {
            bar.set_length(t);
        }
        bar.set_position(p.records_before + p.records_done);
        bar.set_message(format!("{}: update {}  loss {:.4}", phase.dir_name(), p.updates, p.batch_loss));
    })?;
    bar.finish_and_clear();
    let loss =
        last.map_or_else(|| "(all phases were already done)".to_string(), |m| format!("{:.4}", m.test_loss));
    println!(
        "bagging: {} players in {} ({} phases, {:.1}s); last phase's test loss {loss}; export each \
         player with `keima export --weights DIR/weights.kw --out DIR/eval` for ConsultEvalDirs",
        cfg.bagging.players,
        cfg.out_dir.display(),
        dirs.len(),
        start.elapsed().as_secs_f64(),
    );
    Ok(ExitCode::SUCCESS)
}
