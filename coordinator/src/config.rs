//! `keima train` configuration (TOML). Every key has a default; the file only needs the
//! work sources. Paths are relative to the working directory of `keima train`.
//!
//! The learner's tables (`[loss]`, `[adagrad]`, `[init]`, `[validation]` and
//! `check_disk_space`) are engine-core's `LearnSettings`, the same as `keima learn`'s; the
//! teacher settings of `[selfplay]` and `[records]` are engine-core's `TeacherSearch`,
//! `SelfPlayGames` and `UnknownResult`, the same as `keima gensfen`'s flags. Unknown keys
//! are refused, naming the key; keys of an older keima are refused with their new spelling
//! (`legacy.rs`). `[[generation]]` tables make the run a schedule of generations
//! (`generations.rs`), and `[newbob]` decays η with a rollback at their ends. `[elo]`
//! (`elo_config.rs`) plays match shards at checkpoints.
//! `configs/full-scale.toml` documents every key.

use crate::elo_config::EloSection;
use crate::usi_engines_config::UsiEngineConfig;
use engine_core::config::ConfigError;
use engine_core::learn::batch_pool::BatchPool;
use engine_core::learn::config::{LearnSettings, NewbobConfig};
use engine_core::teacher::config::{SearchLimit, SelfPlayGames, TeacherSearch, UnknownResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
    /// Stop training when the run's CPU time reaches this many hours: the CPU of its
    /// training shards (the workers' weight syncs included), of the coordinator and of its
    /// match shards. No new training shard is leased after that; those in flight are merged,
    /// then the run ends as when its shards are done. None: when its shards are done. (A
    /// deterministic run stopped so is still `keima learn` over the shards it merged, but
    /// where it stops depends on the machine's speed.)
    pub cpu_hours: Option<f64>,
    /// `[loss]`, `[adagrad]`, `[init]`, `[validation]`, `check_disk_space`.
    #[serde(flatten)]
    pub learn: LearnSettings,
    pub selfplay: Option<SelfPlaySection>,
    pub teacher: Option<TeacherSection>,
    pub records: Option<RecordsSection>,
    /// `[[generation]]`: the schedule (empty: one generation of the tables above).
    pub generation: Vec<Generation>,
    /// `[newbob]`: η decay with rollback on a held-out plateau, at each generation's end.
    pub newbob: Option<NewbobConfig>,
    /// `[elo]`: match shards at checkpoints (`elo_config.rs`).
    pub elo: Option<EloSection>,
    pub coordinator: CoordinatorSection,
    pub local_workers: LocalWorkersSection,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            run_dir: PathBuf::from("runs/train"),
            seed: 1,
            deterministic: false,
            cpu_hours: None,
            learn: LearnSettings::default(),
            selfplay: None,
            teacher: None,
            records: None,
            generation: Vec::new(),
            newbob: None,
            elo: None,
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

impl SelfPlaySection {
    /// Without random moves a game is fixed by its opening and the shard's weights, so a
    /// shard with more games than starts replays games it has played, and keeps none of
    /// their positions (they are all duplicates).
    fn check_games_differ(&self) -> Result<(), ConfigError> {
        if self.play.random_moves > 0 {
            return Ok(());
        }
        let games = self.games_per_shard as usize;
        match &self.openings {
            None if games > 1 => Err(ConfigError::invalid(
                "[selfplay] random_moves",
                format!(
                    "0 without openings: the {games} games of a shard would all be the same game; \
                     give openings = FILE or random moves"
                ),
            )),
            Some(_) if games > self.openings_per_shard => Err(ConfigError::invalid(
                "[selfplay] openings_per_shard",
                format!(
                    "{} for {games} games a shard with random_moves = 0: the games past the {} openings \
                     would replay games already played and keep none of their positions; set \
                     openings_per_shard >= games_per_shard, or random moves after the openings",
                    self.openings_per_shard, self.openings_per_shard
                ),
            )),
            _ => Ok(()),
        }
    }
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

/// One `[[generation]]` table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generation {
    /// Self-play shards (default: `[selfplay] shards`).
    pub shards: Option<u64>,
    /// The teacher search of its self-play and record shards (default: the `limit` of
    /// `[selfplay]` and of `[records]`).
    pub limit: Option<SearchLimit>,
    /// AdaGrad η of its merges (default: `[adagrad] eta`; `eta_turn` keeps its ratio to η).
    pub eta: Option<f64>,
    /// The loss λ its gradients are computed with (default: `[loss] lambda`).
    pub lambda: Option<f64>,
    /// Shards of `[records]` mixed in, taken in order and starting over at the end.
    #[serde(default)]
    pub record_shards: u64,
}

impl Generation {
    /// Its self-play shards: its own `shards`, or `[selfplay]`'s.
    pub fn selfplay_shards(&self, selfplay: Option<&SelfPlaySection>) -> u64 {
        self.shards.or(selfplay.map(|s| s.shards)).unwrap_or(0)
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
    /// Workers compute each shard's gradient over a batch drawn at random from their newest
    /// N teacher records (the shard's own included), as many as the shard made: one shard's
    /// few games are too alike to be a batch on their own (+71 Elo in the one-CPU-hour
    /// recipe, BENCHMARKS.md "Shuffled batches online"). 0: each shard's own records. Ignored when
    /// `deterministic` (the batch is then the shard, as in `keima learn` without shuffle).
    pub batch_pool_records: u64,
    /// With a pool: each shard's batch holds this many records per record the shard made, so
    /// that each record is learnt from about this many times. Offline, a second pass over a
    /// run's records gained +36 Elo (BENCHMARKS.md, "Offline on the η-growing run's records");
    /// a batch twice as large takes about √2 times η to move the weights as two passes do.
    /// 1 to 8. Online, 2 (η 4.0) gained +48 Elo head to head over 1 in the one-CPU-hour recipe
    /// (BENCHMARKS.md, "Each record learnt from twice or four times, online").
    pub batch_pool_draws: u32,
    /// Versions of changed-weight lists kept for delta syncs (older workers get a full copy).
    pub delta_versions: usize,
    /// With `[init] factors`: the tables workers search with are refreshed from the
    /// factored weights every N merges instead of after each (the weights themselves are
    /// stepped at every merge). One refresh rewrites the millions of KPP entries that the
    /// changed PP weights feed, most of them again one merge later, and in the one-CPU-hour
    /// recipe it was most of the coordinator's CPU. Workers then see the weights up to N − 1
    /// merges late. 1 = every merge, as `keima learn`. Ignored when `deterministic` (1).
    pub fold_every: u64,
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
            batch_pool_records: 250_000,
            batch_pool_draws: 1,
            delta_versions: 64,
            fold_every: 1,
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
    /// External USI engines the local workers declare (`[elo] baseline = { usi = NAME }`).
    pub usi_engines: BTreeMap<String, UsiEngineConfig>,
}

impl Default for LocalWorkersSection {
    fn default() -> Self {
        LocalWorkersSection { count: 2, threads: 1, usi_engines: BTreeMap::new() }
    }
}

impl TrainConfig {
    /// `[coordinator] fold_every` as the run uses it: 1 in a deterministic run, which must
    /// equal `keima learn`.
    pub fn fold_every(&self) -> u64 {
        if self.deterministic { 1 } else { self.coordinator.fold_every }
    }

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
        if let Some(h) = self.cpu_hours
            && !(h.is_finite() && h > 0.0)
        {
            return Err(ConfigError::invalid("cpu_hours", format!("{h}: give a positive number of hours")));
        }
        if self.selfplay.is_none() && self.teacher.is_none() && self.records.is_none() {
            return Err(ConfigError::invalid("work", "none: add a [selfplay], [teacher] or [records] table"));
        }
        if let Some(s) = &self.selfplay {
            if s.shards == 0 || s.games_per_shard == 0 {
                return Err(ConfigError::invalid("[selfplay] shards, games_per_shard", "must be at least 1"));
            }
            s.search.check("[selfplay] ")?;
            s.play.check("[selfplay] ")?;
            s.check_games_differ()?;
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
        self.check_generations()?;
        if let Some(e) = &self.elo {
            e.check()?;
        }
        crate::usi_engines_config::check(&self.local_workers.usi_engines)?;
        let c = &self.coordinator;
        if c.tls_cert.is_some() != c.tls_key.is_some() {
            return Err(ConfigError::invalid("[coordinator] tls_cert, tls_key", "give both or neither"));
        }
        if c.batch_pool_records > BatchPool::MAX_RECORDS as u64 {
            return Err(ConfigError::invalid(
                "[coordinator] batch_pool_records",
                format!("at most {} (each record is 40 bytes in every worker)", BatchPool::MAX_RECORDS),
            ));
        }
        if !(1..=BatchPool::MAX_DRAWS).contains(&c.batch_pool_draws) {
            return Err(ConfigError::invalid(
                "[coordinator] batch_pool_draws",
                format!("{} is not in 1..={}", c.batch_pool_draws, BatchPool::MAX_DRAWS),
            ));
        }
        if c.fold_every == 0 {
            return Err(ConfigError::invalid("[coordinator] fold_every", "must be at least 1"));
        }
        if c.lease_seconds == 0 || c.max_attempts == 0 {
            return Err(ConfigError::invalid(
                "[coordinator] lease_seconds, max_attempts",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// The `[[generation]]` schedule's checks, and `[newbob]`'s (which needs a schedule).
    fn check_generations(&self) -> Result<(), ConfigError> {
        for (i, x) in self.generation.iter().enumerate() {
            let key = |k: &str| format!("[[generation]] #{} {k}", i + 1);
            if x.shards.is_some_and(|n| n > 0) && self.selfplay.is_none() {
                return Err(ConfigError::invalid(key("shards"), "self-play shards need a [selfplay] table"));
            }
            if x.record_shards > 0 && self.records.is_none() {
                return Err(ConfigError::invalid(
                    key("record_shards"),
                    "record shards need a [records] table",
                ));
            }
            if x.selfplay_shards(self.selfplay.as_ref()) + x.record_shards == 0 {
                return Err(ConfigError::invalid(
                    key("shards, record_shards"),
                    "the generation has no work: give shards or record_shards",
                ));
            }
            if let Some(limit) = x.limit {
                limit.check(&key("limit"))?;
            }
            if let Some(eta) = x.eta
                && !(eta.is_finite() && eta > 0.0)
            {
                return Err(ConfigError::invalid(key("eta"), format!("{eta}: must be > 0")));
            }
            if let Some(lambda) = x.lambda
                && !(0.0..=1.0).contains(&lambda)
            {
                return Err(ConfigError::invalid(key("lambda"), format!("{lambda} is not in [0, 1]")));
            }
        }
        if !self.generation.is_empty()
            && self.records.is_some()
            && self.generation.iter().all(|x| x.record_shards == 0)
        {
            return Err(ConfigError::invalid(
                "[records]",
                "no [[generation]] mixes its shards in: give record_shards in the generations that should",
            ));
        }
        if let Some(n) = &self.newbob {
            n.check()?;
            if self.generation.is_empty() {
                return Err(ConfigError::invalid(
                    "[newbob]",
                    "needs a [[generation]] schedule (it is evaluated at the end of each generation)",
                ));
            }
            if self.learn.validation.shard.is_none() {
                return Err(ConfigError::invalid(
                    "[newbob]",
                    "needs [validation] shard (the held-out loss it compares)",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[selfplay]\nshards = 4\n[records]\npaths = [\"r\"]\n";

    fn parse(text: &str) -> Result<TrainConfig, ConfigError> {
        TrainConfig::from_toml(&format!("{BASE}{text}"))
    }

    /// Each config is refused, naming its key.
    fn assert_refused_by_key(
        cases: &[(&str, &str)],
        parse: impl Fn(&str) -> Result<TrainConfig, ConfigError>,
    ) {
        for &(text, key) in cases {
            match parse(text) {
                Err(ConfigError::Invalid { key: k, .. }) => assert_eq!(k, key, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_schedules_and_newbob_without_its_needs_are_refused_by_name() {
        let cases = [
            ("[[generation]]\nshards = 0\n", "[[generation]] #1 shards, record_shards"),
            ("[[generation]]\nrecord_shards = 1\nlimit = { nodes = 0 }\n", "[[generation]] #1 limit"),
            ("[[generation]]\nrecord_shards = 1\n[[generation]]\neta = 0.0\n", "[[generation]] #2 eta"),
            ("[[generation]]\nrecord_shards = 1\nlambda = 1.5\n", "[[generation]] #1 lambda"),
            ("[[generation]]\nshards = 2\n", "[records]"),
            ("[newbob]\ndecay = 0.5\n", "[newbob]"),
            ("[[generation]]\nrecord_shards = 1\n[newbob]\n", "[newbob]"),
            (
                "[[generation]]\nrecord_shards = 1\n[validation]\nshard = \"v\"\n[newbob]\ndecay = 1.0\n",
                "[newbob] decay",
            ),
            (
                "[[generation]]\nrecord_shards = 1\n[validation]\nshard = \"v\"\n[newbob]\nmax_decays = 0\n",
                "[newbob] max_decays",
            ),
        ];
        assert_refused_by_key(&cases, parse);
        let no_selfplay = TrainConfig::from_toml("[records]\npaths = [\"r\"]\n[[generation]]\nshards = 3\n");
        assert!(
            matches!(no_selfplay, Err(ConfigError::Invalid { ref key, .. }) if key == "[[generation]] #1 shards"),
            "{no_selfplay:?}"
        );
        for (text, unknown) in [
            ("[[generation]]\nshard = 1\n", "shard"),
            ("[[generation]]\nrecord_shards = 1\n[newbob]\ndecy = 0.5\n", "decy"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(matches!(e, ConfigError::Toml(_)) && e.to_string().contains(unknown), "{e}");
        }
    }

    /// Without random moves a game is fixed by its opening and the weights: a shard with
    /// more games than openings (or several from the start position) is refused.
    /// Folding the factors less often than every merge is a throughput setting: 0 is
    /// refused, and a deterministic run (equal to `keima learn`) folds at every merge.
    #[test]
    fn fold_every_is_at_least_one_and_one_when_deterministic() {
        let deterministic =
            |text: &str| TrainConfig::from_toml(&format!("deterministic = true\n{BASE}{text}"));
        assert_eq!(parse("").unwrap().fold_every(), 1);
        assert_eq!(parse("[coordinator]\nfold_every = 4\n").unwrap().fold_every(), 4);
        let c = deterministic("[coordinator]\nfold_every = 4\n").unwrap();
        assert_eq!((c.coordinator.fold_every, c.fold_every()), (4, 1));
        assert_refused_by_key(&[("[coordinator]\nfold_every = 0\n", "[coordinator] fold_every")], parse);
    }

    #[test]
    fn a_batch_pool_beyond_the_cap_is_refused_by_name() {
        let at_cap = format!("[coordinator]\nbatch_pool_records = {}\n", BatchPool::MAX_RECORDS);
        assert_eq!(parse(&at_cap).unwrap().coordinator.batch_pool_records, BatchPool::MAX_RECORDS as u64);
        let over = format!("[coordinator]\nbatch_pool_records = {}\n", BatchPool::MAX_RECORDS + 1);
        assert_refused_by_key(&[(&over, "[coordinator] batch_pool_records")], parse);
        let draws = |d: u32| format!("[coordinator]\nbatch_pool_draws = {d}\n");
        assert_eq!(
            parse(&draws(BatchPool::MAX_DRAWS)).unwrap().coordinator.batch_pool_draws,
            BatchPool::MAX_DRAWS
        );
        assert_refused_by_key(
            &[
                (&draws(0), "[coordinator] batch_pool_draws"),
                (&draws(BatchPool::MAX_DRAWS + 1), "[coordinator] batch_pool_draws"),
            ],
            parse,
        );
    }

    #[test]
    fn selfplay_that_would_replay_its_games_is_refused() {
        let sp = |body: &str| TrainConfig::from_toml(&format!("[selfplay]\nshards = 1\n{body}"));
        let refused = [
            ("games_per_shard = 2\nrandom_moves = 0\n", "[selfplay] random_moves"),
            (
                "games_per_shard = 40\nopenings = \"o.sfen\"\nopenings_per_shard = 39\nrandom_moves = 0\n",
                "[selfplay] openings_per_shard",
            ),
        ];
        assert_refused_by_key(&refused, sp);
        for body in [
            "games_per_shard = 1\nrandom_moves = 0\n",
            "games_per_shard = 40\nopenings = \"o.sfen\"\nopenings_per_shard = 40\nrandom_moves = 0\n",
            "games_per_shard = 40\nopenings = \"o.sfen\"\nopenings_per_shard = 8\nrandom_moves = 2\n",
            "games_per_shard = 40\nrandom_moves = 2\n",
        ] {
            sp(body).unwrap_or_else(|e| panic!("{body}: {e}"));
        }
    }

    #[test]
    fn newbob_with_a_schedule_and_a_validation_shard_parses() {
        let c = parse(
            "[[generation]]\nrecord_shards = 1\n[validation]\nshard = \"v\"\n\
             [newbob]\ndecay = 0.25\nmin_improvement = 0.01\nmax_decays = 3\n",
        )
        .unwrap();
        let n = c.newbob.unwrap();
        assert_eq!((n.decay, n.min_improvement, n.max_decays), (0.25, 0.01, 3));
        let stored = TrainConfig::from_stored(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(stored, c, "the stored config reads back");
    }
}
