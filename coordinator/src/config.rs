//! `keima train` configuration (TOML). Every key has a default; the file only needs the
//! work sources. Paths are relative to the working directory of `keima train`.

use engine_core::learn::adagrad::AdaGradConfig;
use engine_core::learn::gradient::LossConfig;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// Run directory: weights.kw, checkpoints/, journal/, teacher/, metrics.jsonl, eval/.
    pub run_dir: PathBuf,
    /// Seeds the shard specs (self-play seeds, opening choice).
    pub seed: u64,
    /// Lease one shard at a time, in id order, each computed on the newest weights: the
    /// result equals `keima learn` over the same records (batch = shard, no shuffle).
    pub deterministic: bool,
    pub learn: LearnSection,
    pub selfplay: Option<SelfPlaySection>,
    pub teacher: Option<TeacherSection>,
    pub records: Option<RecordsSection>,
    pub coordinator: CoordinatorSection,
    pub local_workers: LocalWorkersSection,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            run_dir: PathBuf::from("runs/train"),
            seed: 1,
            deterministic: false,
            learn: LearnSection::default(),
            selfplay: None,
            teacher: None,
            records: None,
            coordinator: CoordinatorSection::default(),
            local_workers: LocalWorkersSection::default(),
        }
    }
}

/// Loss, optimizer and starting point (the learner's keys, see configs/learn-*.toml).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnSection {
    pub eta: f64,
    pub eta_turn: f64,
    pub epsilon: f64,
    pub eta_decay: f64,
    pub lambda: f64,
    pub eval_limit: i32,
    pub skip_draws: bool,
    /// Start from these KPPT files instead of material-only.
    pub init_kppt: Option<PathBuf>,
    /// Start from this weight file (copied).
    pub init_weights: Option<PathBuf>,
    /// Pattern file (definitions + initial weights) to train with.
    pub patterns: Option<PathBuf>,
    /// Held-out teacher shard: test loss and mean |eval − teacher| every `validate_every`
    /// merges and at the end (move agreement at `validation_depth`, 0 = off).
    pub validation: Option<PathBuf>,
    pub validation_max: usize,
    pub validation_depth: i32,
    pub validate_every: u64,
    /// Reserve the weight file's disk space at start (`WeightFile::check_disk_space`): a full
    /// disk is then a clear error instead of a crash mid-run.
    pub check_disk_space: bool,
    /// Dimension reduction, as in `keima learn`: `factors = { mirror = true, kp = true }`.
    pub factors: engine_core::learn::factors::Factorization,
}

impl Default for LearnSection {
    fn default() -> Self {
        let a = AdaGradConfig::default();
        let l = LossConfig::default();
        LearnSection {
            eta: a.eta,
            eta_turn: a.eta_turn,
            epsilon: a.epsilon,
            eta_decay: a.eta_decay,
            lambda: l.lambda,
            eval_limit: l.eval_limit,
            skip_draws: l.skip_draws,
            init_kppt: None,
            init_weights: None,
            patterns: None,
            validation: None,
            validation_max: 1000,
            validation_depth: 0,
            validate_every: 10,
            check_disk_space: true,
            factors: engine_core::learn::factors::Factorization::NONE,
        }
    }
}

impl LearnSection {
    pub fn loss(&self) -> LossConfig {
        LossConfig { lambda: self.lambda, eval_limit: self.eval_limit, skip_draws: self.skip_draws }
    }

    pub fn adagrad(&self) -> AdaGradConfig {
        AdaGradConfig {
            eta: self.eta,
            eta_turn: self.eta_turn,
            epsilon: self.epsilon,
            eta_decay: self.eta_decay,
        }
    }
}

/// Self-play shards: `shards` shards of `games_per_shard` games each, searched with the
/// current weights.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfPlaySection {
    pub shards: u64,
    pub games_per_shard: u32,
    /// USI opening lines (`startpos moves ...`), one per line; each game draws one.
    pub openings: Option<PathBuf>,
    /// Openings sent per shard (drawn from the file with the shard's seed).
    pub openings_per_shard: usize,
    /// Teacher search: depth (plies), or nodes when depth is 0.
    pub depth: i32,
    pub nodes: u64,
    pub random_moves: u32,
    pub max_plies: u32,
    pub eval_limit: i32,
    pub write_minply: u32,
}

impl Default for SelfPlaySection {
    fn default() -> Self {
        SelfPlaySection {
            shards: 10,
            games_per_shard: 20,
            openings: None,
            openings_per_shard: 64,
            depth: 0,
            nodes: 2000,
            random_moves: 8,
            max_plies: 256,
            eval_limit: 3000,
            write_minply: 16,
        }
    }
}

/// Existing teacher shards (PackedSfenValue, `.psv.zst` or `.bin`), cut into shards of
/// `records_per_shard` records: gradients only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TeacherSection {
    /// Files or patterns with `*`/`?` in the file name.
    pub paths: Vec<String>,
    pub records_per_shard: u64,
}

impl Default for TeacherSection {
    fn default() -> Self {
        TeacherSection { paths: Vec::new(), records_per_shard: 10_000 }
    }
}

/// Game records (CSA/KIF/KI2/USI) replayed and searched by the workers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecordsSection {
    /// Files or directories (searched recursively).
    pub paths: Vec<PathBuf>,
    pub files_per_shard: usize,
    pub depth: i32,
    pub nodes: u64,
    /// Games without a result: "skip", "draw" or "last_mover_wins".
    pub unknown_result: String,
}

impl Default for RecordsSection {
    fn default() -> Self {
        RecordsSection {
            paths: Vec::new(),
            files_per_shard: 8,
            depth: 0,
            nodes: 2000,
            unknown_result: "skip".into(),
        }
    }
}

/// How stale gradients are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StalePolicy {
    /// Rejected; the shard goes back to the queue.
    Reject,
    /// Merged with the gradient scaled by 1 / (1 + staleness − max_staleness).
    Downweight,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoordinatorSection {
    /// gRPC address. 127.0.0.1 unless you mean to serve other machines; port 0 = any free.
    pub listen: String,
    /// Prometheus metrics over HTTP (`/metrics`); "" = off.
    pub metrics_listen: String,
    /// Shared token; if empty, `token_file` is read, or a random token is written to
    /// `<run_dir>/token` (mode 0600) for local workers.
    pub token: String,
    pub token_file: Option<PathBuf>,
    /// TLS (rustls) certificate chain and key, PEM. Both or neither.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// CA certificate (PEM) that local workers verify the coordinator with (default:
    /// `tls_cert` itself, which works for a self-signed certificate).
    pub tls_ca: Option<PathBuf>,
    /// A lease lasts this long without a heartbeat.
    pub lease_seconds: u64,
    pub heartbeat_ms: u32,
    /// Attempts before a shard is given up (counted as failed, the run goes on).
    pub max_attempts: u32,
    /// Gradients computed on weights more than this many versions old are stale.
    pub max_staleness: u64,
    pub stale_policy: StalePolicy,
    /// Checkpoint every N merges (and at the end, and on SIGINT/SIGTERM).
    pub checkpoint_every: u64,
    /// Checkpoints kept (0 = all). The journal is kept back to the oldest of them, so any
    /// of them can resume (with 0 it is never pruned).
    pub keep_checkpoints: usize,
    /// Largest accepted push (all chunk payloads, compressed), MiB.
    pub max_push_mib: u64,
    /// Ask workers to return their teacher records (kept under `<run_dir>/teacher/`).
    pub keep_teacher_records: bool,
    /// Versions of changed-weight lists kept for delta syncs (older workers get a full copy).
    pub delta_versions: usize,
    /// Export KPPT files to `<run_dir>/eval` at the end.
    pub export: bool,
}

impl Default for CoordinatorSection {
    fn default() -> Self {
        CoordinatorSection {
            listen: "127.0.0.1:7470".into(),
            metrics_listen: "127.0.0.1:7471".into(),
            token: String::new(),
            token_file: None,
            tls_cert: None,
            tls_key: None,
            tls_ca: None,
            lease_seconds: 120,
            heartbeat_ms: 2000,
            max_attempts: 5,
            max_staleness: 8,
            stale_policy: StalePolicy::Downweight,
            checkpoint_every: 20,
            keep_checkpoints: 2,
            max_push_mib: 512,
            keep_teacher_records: true,
            delta_versions: 64,
            export: true,
        }
    }
}

/// Workers that `keima train` starts itself as child processes on this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocalWorkersSection {
    pub count: u32,
    pub threads: u32,
}

impl Default for LocalWorkersSection {
    fn default() -> Self {
        LocalWorkersSection { count: 2, threads: 1 }
    }
}

impl TrainConfig {
    pub fn from_toml(text: &str) -> Result<TrainConfig, String> {
        let c: TrainConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check()?;
        Ok(c)
    }

    pub fn check(&self) -> Result<(), String> {
        if self.selfplay.is_none() && self.teacher.is_none() && self.records.is_none() {
            return Err("config: no work: add a [selfplay], [teacher] or [records] section".into());
        }
        if let Some(s) = &self.selfplay {
            if s.shards == 0 || s.games_per_shard == 0 {
                return Err("config: [selfplay] shards and games_per_shard must be at least 1".into());
            }
            if s.depth <= 0 && s.nodes == 0 {
                return Err("config: [selfplay] give depth > 0 or nodes > 0".into());
            }
        }
        if let Some(t) = &self.teacher
            && (t.paths.is_empty() || t.records_per_shard == 0)
        {
            return Err("config: [teacher] needs paths and records_per_shard >= 1".into());
        }
        if let Some(r) = &self.records {
            if r.paths.is_empty() || r.files_per_shard == 0 {
                return Err("config: [records] needs paths and files_per_shard >= 1".into());
            }
            if !["skip", "draw", "last_mover_wins"].contains(&r.unknown_result.as_str()) {
                return Err(format!(
                    "config: [records] unknown_result = {:?}: use \"skip\", \"draw\" or \"last_mover_wins\"",
                    r.unknown_result
                ));
            }
        }
        let l = &self.learn;
        if !(0.0..=1.0).contains(&l.lambda) {
            return Err("config: [learn] lambda must be in [0, 1]".into());
        }
        if l.eta <= 0.0 || l.eta_turn < 0.0 {
            return Err("config: [learn] eta must be > 0 and eta_turn >= 0".into());
        }
        if l.init_kppt.is_some() && l.init_weights.is_some() {
            return Err("config: [learn] give init_kppt or init_weights, not both".into());
        }
        let c = &self.coordinator;
        if c.tls_cert.is_some() != c.tls_key.is_some() {
            return Err("config: [coordinator] tls_cert and tls_key go together".into());
        }
        if c.lease_seconds == 0 || c.max_attempts == 0 {
            return Err("config: [coordinator] lease_seconds and max_attempts must be at least 1".into());
        }
        Ok(())
    }
}
