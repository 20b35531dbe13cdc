//! `keima train` configuration (TOML). Every key has a default; the file only needs the
//! work sources. Paths are relative to the working directory of `keima train`.
//!
//! The learner's tables (`[loss]`, `[adagrad]`, `[init]`, `[validation]` and
//! `check_disk_space`) are engine-core's `LearnSettings`, the same as `keima learn`'s; the
//! teacher settings of `[selfplay]` and `[records]` are engine-core's `TeacherSearch`,
//! `SelfPlayGames` and `UnknownResult`, the same as `keima gensfen`'s flags. Unknown keys
//! are refused, naming the key; keys of an older keima are refused with their new spelling
//! (`legacy.rs`). `configs/full-scale.toml` documents every key.

use engine_core::config::ConfigError;
use engine_core::learn::config::LearnSettings;
use engine_core::teacher::config::{SelfPlayGames, TeacherSearch, UnknownResult};
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
    /// `[loss]`, `[adagrad]`, `[init]`, `[validation]`, `check_disk_space`.
    #[serde(flatten)]
    pub learn: LearnSettings,
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
            learn: LearnSettings::default(),
            selfplay: None,
            teacher: None,
            records: None,
            coordinator: CoordinatorSection::default(),
            local_workers: LocalWorkersSection::default(),
        }
    }
}

/// Self-play shards: `shards` shards of `games_per_shard` games each, searched with the
/// current weights. The teacher settings (`limit`, `eval_limit`, `write_minply`,
/// `dedupe_bits`, `max_ply`, `random_moves`, `random_min_ply`, `random_max_ply`) are
/// `keima gensfen`'s; each shard's seed derives from the top-level `seed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SelfPlaySection {
    pub shards: u64,
    pub games_per_shard: u32,
    /// USI opening lines (`startpos moves ...`), one per line; each game draws one.
    pub openings: Option<PathBuf>,
    /// Openings sent per shard (drawn from the file with the shard's seed).
    pub openings_per_shard: usize,
    #[serde(flatten)]
    pub search: TeacherSearch,
    #[serde(flatten)]
    pub play: SelfPlayGames,
}

impl Default for SelfPlaySection {
    fn default() -> Self {
        SelfPlaySection {
            shards: 10,
            games_per_shard: 20,
            openings: None,
            openings_per_shard: 64,
            search: TeacherSearch::default(),
            play: SelfPlayGames::default(),
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

/// Game records (CSA/KIF/KI2/USI) replayed and searched by the workers. The teacher
/// settings (`limit`, `eval_limit`, `write_minply`, `dedupe_bits`, `unknown_result`) are
/// `keima gensfen --records`'s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecordsSection {
    /// Files or directories (searched recursively).
    pub paths: Vec<PathBuf>,
    pub files_per_shard: usize,
    #[serde(flatten)]
    pub search: TeacherSearch,
    /// Games without a result: "skip", "draw" or "last_mover_wins".
    pub unknown_result: UnknownResult,
}

impl Default for RecordsSection {
    fn default() -> Self {
        RecordsSection {
            paths: Vec::new(),
            files_per_shard: 8,
            search: TeacherSearch::default(),
            unknown_result: UnknownResult::Skip,
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
    /// A metrics line (train loss, and the `[validation]` metrics) every N merges, at the
    /// start and at the end (0 = start and end only).
    pub validate_every: u64,
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
            validate_every: 10,
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
    pub fn from_toml(text: &str) -> Result<TrainConfig, ConfigError> {
        let c: TrainConfig = engine_core::config::from_toml(text, crate::legacy::migrate_config)?;
        c.check()?;
        Ok(c)
    }

    /// Reads the config stored in a checkpoint (an older keima's layout too).
    pub fn from_stored(value: serde_json::Value) -> Result<TrainConfig, ConfigError> {
        engine_core::config::from_stored(value, crate::legacy::migrate_config)
    }

    pub fn check(&self) -> Result<(), ConfigError> {
        if self.selfplay.is_none() && self.teacher.is_none() && self.records.is_none() {
            return Err(ConfigError::invalid("work", "none: add a [selfplay], [teacher] or [records] table"));
        }
        if let Some(s) = &self.selfplay {
            if s.shards == 0 || s.games_per_shard == 0 {
                return Err(ConfigError::invalid("[selfplay] shards, games_per_shard", "must be at least 1"));
            }
            s.search.check("[selfplay] ")?;
            s.play.check("[selfplay] ")?;
        }
        if let Some(t) = &self.teacher
            && (t.paths.is_empty() || t.records_per_shard == 0)
        {
            return Err(ConfigError::invalid("[teacher]", "needs paths and records_per_shard >= 1"));
        }
        if let Some(r) = &self.records {
            if r.paths.is_empty() || r.files_per_shard == 0 {
                return Err(ConfigError::invalid("[records]", "needs paths and files_per_shard >= 1"));
            }
            r.search.check("[records] ")?;
        }
        self.learn.check()?;
        let c = &self.coordinator;
        if c.tls_cert.is_some() != c.tls_key.is_some() {
            return Err(ConfigError::invalid("[coordinator] tls_cert, tls_key", "give both or neither"));
        }
        if c.lease_seconds == 0 || c.max_attempts == 0 {
            return Err(ConfigError::invalid(
                "[coordinator] lease_seconds, max_attempts",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}
