//! Match shards (`[elo]`): queued when a due checkpoint is written (its weights exported
//! to `<run_dir>/elo/v<version>/` first, atomically), their results recorded exactly once
//! (a result file, fsynced, before the push is acknowledged; the queue marks the shard
//! played, so a re-sent or late result is a duplicate or has no lease), and once all of a
//! checkpoint's shards are in, its Elo line in `metrics.jsonl`. A resume applies the
//! result files its checkpoint does not hold, then writes the Elo lines that became due.

use super::{Core, ReceivedPush};
use crate::checkpoint::CheckpointError;
use crate::elo::{self, EloPoint, MatchTally, PendingMatch, ResultFile};
use crate::elo_config::Baseline;
use crate::error::PushError;
use crate::fsutil::{IoError, fsync_dir};
use crate::queue::{ShardSpec, ShardState};
use crate::weights_state::WeightState;
use engine_core::rng::Xoshiro256;
use engine_core::teacher::gensfen::game_seed;
use keima_proto::spec::UsiBaseline;
use keima_proto::v1;
use keima_proto::v1::push_reply::Outcome;
use std::path::Path;

impl Core {
    /// The Elo points measured so far, oldest first.
    pub fn elo_points(&self) -> Vec<EloPoint> {
        self.elo.lock().unwrap().points.clone()
    }

    /// Before checkpoint `w.version()` is written: if `[elo]` makes it due and its matches
    /// are not queued yet, exports its weights and queues its match shards (the checkpoint
    /// then holds them). The checkpoint at the end of training is always due: it is the
    /// run's result, on `every`'s grid or not (a run stopped by its CPU budget ends
    /// anywhere).
    pub(super) fn queue_matches_if_due(&self, w: &WeightState) -> Result<(), CheckpointError> {
        let Some(cfg) = &self.cfg.elo else { return Ok(()) };
        let version = w.version();
        let due = cfg.due(version) || (version > 0 && self.training_done());
        if !due || self.elo.lock().unwrap().knows(version) {
            return Ok(());
        }
        let dir = self.export_for_matches(w, version)?;
        let dir_text = dir.to_string_lossy().to_string();
        let previous = self.elo.lock().unwrap().previous.clone();
        let (baseline_dir, baseline) = match (&cfg.baseline, previous) {
            (Baseline::Previous, Some((d, v))) => (Some(d), format!("v{v}")),
            (Baseline::Usi(name), _) => (None, Baseline::usi_label(name)),
            _ => (None, "material".to_string()),
        };
        let usi = match &cfg.baseline {
            Baseline::Usi(name) => Some(UsiBaseline {
                engine: name.clone(),
                byoyomi_ms: cfg.byoyomi_ms,
                time_ms: cfg.time_ms,
                increment_ms: cfg.increment_ms,
            }),
            _ => None,
        };
        let mut rng = Xoshiro256::new(game_seed(cfg.seed, version));
        let specs: Vec<ShardSpec> = cfg
            .shard_games()
            .into_iter()
            .map(|games| ShardSpec::Match {
                version,
                eval_dir: dir_text.clone(),
                baseline_dir: baseline_dir.clone(),
                nodes: cfg.nodes,
                max_ply: cfg.max_ply,
                openings: (0..games / 2)
                    .map(|_| self.elo_openings[rng.below(self.elo_openings.len())].clone())
                    .collect(),
                usi: usi.clone(),
            })
            .collect();
        let shards = specs.len();
        self.queue.lock().unwrap().add_match_shards(specs);
        let cpu_hours = self.totals().training_cpu_seconds() / 3600.0;
        let mut e = self.elo.lock().unwrap();
        e.pending.insert(version, PendingMatch { baseline: baseline.clone(), cpu_hours });
        e.previous = Some((dir_text, version));
        tracing::info!(version, shards, baseline, "match shards queued");
        Ok(())
    }

    /// Exports the weights as KPPT files to `elo/v<version>/`: written in a temporary
    /// directory, renamed into place, the parent fsynced (each file is written atomically).
    fn export_for_matches(
        &self,
        w: &WeightState,
        version: u64,
    ) -> Result<std::path::PathBuf, CheckpointError> {
        let dir = elo::eval_dir(&self.run_dir, version);
        let tmp = dir.with_extension("tmp");
        let err = |e: String| CheckpointError::Elo(e);
        for d in [&tmp, &dir] {
            if d.exists() {
                std::fs::remove_dir_all(d).map_err(|e| err(format!("{}: {e}", d.display())))?;
            }
        }
        let set = self.pattern_set().map_err(err)?;
        let patterns = tmp.join("patterns.kpat");
        engine_core::learn::export::export_kppt(&w.file, &tmp, set.as_ref().map(|s| (s, patterns.as_path())))
            .map_err(err)?;
        fsync_dir(&tmp)?;
        std::fs::rename(&tmp, &dir).map_err(IoError::at("rename into place", &dir))?;
        fsync_dir(dir.parent().unwrap_or(Path::new(".")))?;
        Ok(dir)
    }

    /// Records a match shard's pushed result: checked against the shard, written to its
    /// result file (durable), then applied. Called with the weights lock held (merges and
    /// checkpoints wait), for a push from the shard's live lease.
    pub(super) fn record_match(
        &self,
        w: &WeightState,
        p: &ReceivedPush,
        spec: &ShardSpec,
    ) -> Result<v1::PushReply, PushError> {
        let ShardSpec::Match { version, openings, .. } = spec else {
            return Err(PushError::Internal("record_match of a training shard".into()));
        };
        if !p.gradient.is_empty() || !p.records.is_empty() {
            return Err(PushError::Invalid(format!(
                "shard {}: a match shard's push carries a gradient or teacher records",
                p.shard_id
            )));
        }
        let result = p.result.as_ref().ok_or_else(|| {
            PushError::Invalid(format!("shard {}: a match shard's push without its result", p.shard_id))
        })?;
        let tally = MatchTally::from_wire(result, openings.len(), p.stats.cpu_seconds)
            .map_err(|e| PushError::Invalid(format!("shard {}: {e}", p.shard_id)))?;
        elo::write_result(&self.run_dir, &ResultFile { shard_id: p.shard_id, version: *version, tally })?;
        self.apply_match(p.shard_id, tally);
        if let Err(e) = self.finish_elo_if_complete(*version) {
            self.server_fault_after_merge(w.version(), &format!("Elo line of version {version}: {e}"));
        }
        Ok(v1::PushReply {
            outcome: Outcome::Merged as i32,
            weights_version: w.version(),
            merge_seq: 0,
            weight_factor: 0.0,
        })
    }

    /// Marks the shard played and counts its CPU (the live record and a resume's replay).
    fn apply_match(&self, shard: u64, tally: MatchTally) {
        self.queue.lock().unwrap().mark_played(shard, tally);
        self.totals.lock().unwrap().match_cpu_seconds += tally.cpu_seconds;
    }

    /// Once every match shard of checkpoint `version` is played (or given up): its Elo line
    /// and point. Nothing if it is not pending (done before) or shards are still open.
    fn finish_elo_if_complete(&self, version: u64) -> Result<(), String> {
        let Some(pending) = self.elo.lock().unwrap().pending.get(&version).cloned() else { return Ok(()) };
        let mut sum = MatchTally::default();
        {
            let q = self.queue.lock().unwrap();
            for s in q
                .shards
                .iter()
                .filter(|s| matches!(s.spec, ShardSpec::Match { version: v, .. } if v == version))
            {
                match &s.state {
                    ShardState::Played { result } => sum.add(result),
                    ShardState::Failed { .. } => {}
                    _ => return Ok(()),
                }
            }
        }
        let point = EloPoint::new(version, &pending, &sum);
        {
            let mut e = self.elo.lock().unwrap();
            e.pending.remove(&version);
            e.points.push(point.clone());
        }
        tracing::info!(version, games = point.games, elo = ?point.elo, "checkpoint matched");
        let mut line = serde_json::to_value(&point).expect("an Elo point serializes");
        let fields = line.as_object_mut().expect("a JSON object");
        fields.insert("updates".into(), self.weights_version().into());
        fields.insert("elapsed_s".into(), self.started.elapsed().as_secs_f64().into());
        self.append_metrics_line(&line)
    }

    /// After a resume's journal replay: applies the result files of match shards the
    /// checkpoint does not hold as played, then writes the Elo lines that became due.
    pub(super) fn replay_match_results(&self) -> Result<u64, String> {
        let mut n = 0;
        for r in elo::read_results(&self.run_dir)? {
            let applies = {
                let q = self.queue.lock().unwrap();
                q.get(r.shard_id).is_some_and(|s| {
                    matches!(s.spec, ShardSpec::Match { version, .. } if version == r.version)
                        && !matches!(s.state, ShardState::Played { .. })
                })
            };
            if applies {
                self.apply_match(r.shard_id, r.tally);
                n += 1;
            }
        }
        self.write_due_elo_lines()?;
        Ok(n)
    }

    /// Writes the Elo line of every checkpoint whose match shards are all in (e.g. the
    /// last one given up after failures, which no result completes).
    pub fn write_due_elo_lines(&self) -> Result<(), String> {
        let pending: Vec<u64> = self.elo.lock().unwrap().pending.keys().copied().collect();
        for version in pending {
            self.finish_elo_if_complete(version)?;
        }
        Ok(())
    }
}
