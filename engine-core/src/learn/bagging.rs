//! Bagging (research.md §3): P players learned from one data set for consultation. The
//! research draws M games with replacement from N; all players learn K of the draws in
//! common, then each learns its own (M − K)/P.
//!
//! Drawing with replacement is done record by record as it streams: record r is drawn
//! Poisson(rate) times, the count fixed by hashing the record's bytes with the run seed and
//! the phase, so a phase sees the same sample in every epoch, on resume, and whatever the
//! shuffle order. For large N this is the bootstrap (a record's count under M draws of N is
//! Binomial(M, 1/N) → Poisson(M/N)). `draws` = M/N and `common` = K/N are given as
//! multiples of the data; the common phase's rate is `common`, each player's
//! `(draws − common) / players`. Records are drawn, not games (a teacher shard does not
//! mark game boundaries).
//!
//! MNCL (model-based negative correlation learning): with `ncl_lambda` > 0, player i ≥ 2
//! minimises its loss − (λ / 2(i−1)) Σ_{j<i} ‖v_i − v_j‖² + (C/2)‖v_i‖², so its gradient
//! gains −λ(v_i − v̄) + C·v_i per example, v̄ being the mean of the earlier players' final
//! weights (read from their memory-mapped files). The players run in order, so v̄ is fixed
//! while player i learns. The term is added only at the weights the batch's gradient
//! touches, times the batch's examples: a weight no example of player i activates is not
//! pulled (no lazy correction), which keeps an update sparse and as cheap as without it.
//! Not with dimension reduction (the term is on raw weights).
//!
//! A run is a sequence of ordinary `keima learn` phases in `out_dir`: `common/`, then
//! `player-01/` … each starting from the common weights (copied, AdaGrad state kept). A
//! phase that finished is marked by a `done` file; run the same config again to continue
//! an interrupted run (an unfinished phase resumes from its newest checkpoint, exactly).

use super::config::{BagPhase, LearnConfig};
use super::files::{CHECKPOINTS_DIR, WEIGHTS_FILE};
use super::trainer::{Progress, Trainer};
use super::validation::ValidationMetrics;
use std::path::{Path, PathBuf};

/// Where a finished phase leaves its mark.
const DONE_FILE: &str = "done";

/// The config of one phase: its directory, its sample, and (players) the common weights
/// as the start.
pub fn phase_config(cfg: &LearnConfig, phase: BagPhase) -> LearnConfig {
    let mut c = cfg.clone();
    c.out_dir = cfg.out_dir.join(phase.dir_name());
    c.bagging.phase = Some(phase);
    if let BagPhase::Player(_) = phase {
        c.learn.init.kppt = None;
        c.learn.init.weights = Some(cfg.out_dir.join(BagPhase::Common.dir_name()).join(WEIGHTS_FILE));
    }
    c
}

/// The phase's trainer: a new one, or resumed from the phase's newest checkpoint. A
/// weight file without any checkpoint holds nothing committed (the phase died while
/// starting) and is started again.
fn phase_trainer(cfg: LearnConfig, dir: &Path) -> Result<Trainer, String> {
    if dir.join(CHECKPOINTS_DIR).is_dir() {
        return Trainer::resume(dir, None, Some(cfg.max_updates)).map(|(t, _)| t);
    }
    let weights = dir.join(WEIGHTS_FILE);
    if weights.exists() {
        std::fs::remove_file(&weights).map_err(|e| format!("{}: {e}", weights.display()))?;
    }
    Trainer::new(cfg)
}

/// Runs (or continues) every phase; returns each finished phase's directory (common first)
/// and the last phase's validation metrics.
pub fn run(
    cfg: &LearnConfig,
    progress: &mut dyn FnMut(BagPhase, &Progress),
) -> Result<(Vec<PathBuf>, Option<ValidationMetrics>), String> {
    cfg.check().map_err(|e| e.to_string())?;
    let phases = std::iter::once(BagPhase::Common).chain((1..=cfg.bagging.players).map(BagPhase::Player));
    let (mut dirs, mut last) = (Vec::new(), None);
    for phase in phases {
        let pc = phase_config(cfg, phase);
        let dir = pc.out_dir.clone();
        if !dir.join(DONE_FILE).exists() {
            let mut t = phase_trainer(pc, &dir)?;
            last = Some(t.run(&mut |p| progress(phase, p))?);
            crate::fsutil::write_atomic(&dir.join(DONE_FILE), format!("{}\n", t.state.updates).as_bytes())
                .map_err(|e| e.to_string())?;
        }
        dirs.push(dir);
    }
    Ok((dirs, last))
}
