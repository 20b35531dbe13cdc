//! Opening a run: a new one (`create`) or one continued from its newest valid checkpoint
//! plus the journal after it (`resume`), ending on the way every generation the live run
//! had ended after that checkpoint (`generation_end.rs`).

use super::{Core, SYNC_CACHE_BYTES, now_ms};
use crate::checkpoint::{self, CheckpointState, Totals};
use crate::config::TrainConfig;
use crate::elo::{self, EloState};
use crate::fault::Faults;
use crate::generations::GenerationState;
use crate::journal;
use crate::queue::Queue;
use crate::specs::{build_specs, load_openings};
use crate::weights_state::WeightState;
use crate::weights_sync::SyncCache;
use engine_core::eval::patterns::PatternSet;
use engine_core::learn::checkpoint as ckpt;
use engine_core::learn::files::WEIGHTS_FILE;
use engine_core::learn::init::{new_run_weights_path, pattern_hash, start_weights};
use engine_core::learn::validation;
use engine_core::learn::weights::{LAYOUT_KPPT_TRIANGLE, WeightFile};
use keima_proto::v1;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Instant;

fn pattern_bytes(cfg: &TrainConfig) -> Result<(Option<PatternSet>, Vec<u8>), String> {
    match &cfg.learn.init.patterns {
        None => Ok((None, Vec::new())),
        Some(p) => {
            let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
            let set = engine_core::eval::patterns::file::load(p).map_err(|e| e.to_string())?;
            Ok((Some(set), bytes))
        }
    }
}

fn new_run_id() -> String {
    format!("{:x}-{:x}", now_ms(), std::process::id())
}

impl Core {
    /// A new run in `cfg.run_dir` (refuses a directory that already holds weights).
    pub fn create(cfg: TrainConfig) -> Result<Core, String> {
        cfg.check().map_err(|e| e.to_string())?;
        let wpath = new_run_weights_path(&cfg.run_dir, "keima train --resume", "run_dir")?;
        let specs = build_specs(&cfg)?;
        let (patterns, pattern_file) = pattern_bytes(&cfg)?;
        let file = start_weights(&wpath, &cfg.learn.init, patterns.as_ref())?;
        let queue = Queue::new(specs, cfg.deterministic, cfg.coordinator.max_attempts);
        let start = (queue, Totals::default(), GenerationState::default(), EloState::default());
        let core =
            Self::assemble(cfg, file, patterns, pattern_file, start, new_run_id()).inspect_err(|_| {
                // Leave no half-made run behind: a retry must not be told to resume.
                let _ = std::fs::remove_file(&wpath);
            })?;
        std::fs::remove_dir_all(journal::dir(&core.run_dir)).ok();
        std::fs::remove_dir_all(elo::root(&core.run_dir)).ok();
        checkpoint::recover(&core.run_dir).map_err(|e| e.to_string())?;
        // A checkpoint at version 0, so a crash before the first regular checkpoint can
        // resume from it plus the journal (cheap: the weight file is still mostly holes).
        core.checkpoint().map_err(|e| e.to_string())?;
        Ok(core)
    }

    /// Continues a run from its newest valid checkpoint plus the journal after it.
    /// Returns the core and warnings (skipped checkpoints).
    pub fn resume(path: &Path, listen: Option<String>) -> Result<(Core, Vec<String>), String> {
        // A run directory is repaired first (a checkpoint a crash interrupted is finished
        // or undone), so the newest complete checkpoint is found.
        let found = checkpoint::find::<CheckpointState>(path).map_err(|e| match e {
            ckpt::CheckpointError::NotFound { .. } | ckpt::CheckpointError::NoneValid { .. } => {
                format!("{e}; start a new run with `keima train --config`")
            }
            e => e.to_string(),
        })?;
        let (dir, state, mut ckw) = (found.dir, found.state, found.weights);
        let mut warnings = found.repairs;
        warnings.extend(found.skipped.into_iter().map(|s| format!("skipping checkpoint: {s}")));
        let mut cfg = state.config.clone();
        if let Some(l) = listen {
            cfg.coordinator.listen = l;
        }
        let run_dir = cfg.run_dir.clone();
        let wpath = run_dir.join(WEIGHTS_FILE);
        ckw.copy_sparse(&wpath).map_err(|e| e.to_string())?;
        drop(ckw);
        let file = WeightFile::open(&wpath, false).map_err(|e| e.to_string())?;
        let (patterns, pattern_file) = pattern_bytes(&cfg)?;
        let mut queue = state.queue.clone();
        queue.release_all_leases();
        warnings.extend(checkpoint::recover(&run_dir).map_err(|e| e.to_string())?);
        let unfinished = journal::remove_unfinished(&run_dir).map_err(|e| e.to_string())?;
        if unfinished > 0 {
            warnings.push(format!("removed {unfinished} unfinished journal entries (never acknowledged)"));
        }
        let start = (queue, state.totals.clone(), state.generations.clone(), state.elo.clone());
        let core = Self::assemble(cfg, file, patterns, pattern_file, start, state.run_id)?;
        let replayed = core.replay_journal()?;
        let results = core.replay_match_results()?;
        warnings.push(format!(
            "resumed from {} (version {}), replayed {replayed} journal merges and {results} match results",
            dir.display(),
            state.weights_version
        ));
        // The generation the last merge completed, if the crash came before its end step
        // was recorded.
        let generation = core.generation();
        if core.end_generation_if_due()? {
            warnings.push(format!("ended generation {generation} (its end was not recorded)"));
        }
        Ok((core, warnings))
    }

    fn assemble(
        cfg: TrainConfig,
        file: WeightFile,
        patterns: Option<PatternSet>,
        pattern_file: Vec<u8>,
        (queue, totals, generations, elo): (Queue, Totals, GenerationState, EloState),
        run_id: String,
    ) -> Result<Core, String> {
        if cfg.learn.check_disk_space {
            file.check_disk_space().map_err(|e| e.to_string())?;
        }
        let layout = v1::Layout {
            layout_id: LAYOUT_KPPT_TRIANGLE,
            fe_end: engine_core::eval::bona_piece::FE_END as u32,
            // Workers address the raw features; factor parameters stay here.
            features: file.header.param_layout().raw_features() as u64,
            patterns: file.header.patterns,
            pattern_hash: patterns.as_ref().map_or(0, pattern_hash),
        };
        let ws = WeightState::new(file, patterns.as_ref(), cfg.coordinator.delta_versions, cfg.fold_every())?;
        let validation = validation::load_records(&cfg.learn.validation)?;
        let elo_openings = match &cfg.elo {
            Some(e) => {
                let lines = load_openings(&e.openings)
                    .map_err(|err| format!("[elo] openings {}: {err}", e.openings.display()))?;
                if lines.is_empty() {
                    return Err(format!("[elo] openings {}: no opening lines", e.openings.display()));
                }
                lines
            }
            None => Vec::new(),
        };
        if cfg.newbob.is_some() && validation.is_empty() {
            return Err("[newbob]: the [validation] shard holds no records to compare".into());
        }
        Ok(Core {
            run_dir: cfg.run_dir.clone(),
            version: AtomicU64::new(ws.version()),
            cfg,
            run_id,
            layout,
            pattern_file,
            queue: Mutex::new(queue),
            weights: Mutex::new(ws),
            sync_cache: Mutex::new(SyncCache::new(SYNC_CACHE_BYTES)),
            cpu_base: totals.coordinator_cpu_seconds,
            cpu_at_open: engine_core::cpu_time::process_cpu_seconds(),
            totals: Mutex::new(totals),
            elo: Mutex::new(elo),
            elo_openings,
            end_of_training_checkpointed: AtomicBool::new(false),
            generations: Mutex::new(generations),
            generation_checkpoint_pending: AtomicBool::new(false),
            workers: Mutex::new(HashMap::new()),
            usi_engines_warned: Mutex::new(Default::default()),
            started: Instant::now(),
            stop_requested: AtomicBool::new(false),
            next_worker: AtomicU64::new(1),
            validation,
            validation_pool: rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .map_err(|e| e.to_string())?,
            last_checkpoint: Mutex::new(None),
            interval: Mutex::new((0.0, 0)),
            faults: Faults::from_env()?,
        })
    }

    /// Applies journal entries newer than the loaded weights, in order; before an entry of
    /// a later generation, ends the generations before it as the live run did.
    fn replay_journal(&self) -> Result<u64, String> {
        let mut w = self.weights.lock().unwrap();
        let mut n = 0;
        for (seq, path) in journal::list(&self.run_dir) {
            if seq <= w.version() {
                continue;
            }
            let (meta, grads) = journal::read(&path, self.layout.features)?;
            loop {
                let q = self.queue.lock().unwrap();
                let generation = q.get(meta.shard_id).map_or(0, |s| s.generation);
                if generation <= q.open_generation {
                    break;
                }
                if !q.generation_due() {
                    return Err(format!(
                        "{}: a merge of generation {generation}, but generation {} is not complete",
                        path.display(),
                        q.open_generation
                    ));
                }
                drop(q);
                self.end_generation_locked(&mut w)?;
            }
            if seq != w.version() + 1 {
                return Err(format!(
                    "{}: journal gap: the weights are at version {} but the next entry is {seq}",
                    path.display(),
                    w.version()
                ));
            }
            self.apply_merge(&mut w, &meta, &grads);
            n += 1;
        }
        Ok(n)
    }
}
