//! Learner configuration. `keima learn` and `keima train` nest the same tables
//! ([`LearnSettings`]): `[loss]`, `[adagrad]`, `[init]`, `[validation]` and
//! `check_disk_space`; `keima learn` adds its loop keys at the top ([`LearnConfig`]). Every
//! table refuses unknown keys, and every key has a default.

use super::factors::Factorization;
use crate::config::{ConfigError, Migration, table_mut};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// `[loss]`: the target of a record and which records count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LossConfig {
    /// Weight of the teacher's score in the target (the rest is the game result).
    pub lambda: f64,
    /// Records with |score| above this are skipped.
    pub eval_limit: i32,
    /// Skip records whose game was drawn.
    pub skip_draws: bool,
}

impl Default for LossConfig {
    fn default() -> Self {
        LossConfig { lambda: 0.33, eval_limit: 3000, skip_draws: false }
    }
}

impl LossConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        if !(0.0..=1.0).contains(&self.lambda) {
            return Err(ConfigError::invalid("[loss] lambda", format!("{} is not in [0, 1]", self.lambda)));
        }
        Ok(())
    }
}

/// `[adagrad]`: the optimizer's step sizes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdaGradConfig {
    /// Step size of board parts (and patterns), in raw (FV_SCALE) weight units.
    pub eta: f64,
    /// Step size of turn (side-to-move) parts.
    pub eta_turn: f64,
    pub epsilon: f64,
    /// η is multiplied by `eta_decay^updates` (1.0 = constant).
    pub eta_decay: f64,
    /// The factor parameters' step (KP and PP, see `factors`) as a multiple of the raw
    /// features' (both parts). AdaGrad moves every parameter by about η per update whatever
    /// its gradient, and a factor sums the gradients of up to thousands of raw features, so
    /// it can be steadier than they are and bear a larger step.
    pub eta_factors: f64,
}

impl Default for AdaGradConfig {
    fn default() -> Self {
        AdaGradConfig { eta: 2.0, eta_turn: 0.5, epsilon: 1e-8, eta_decay: 1.0, eta_factors: 1.0 }
    }
}

impl AdaGradConfig {
    /// Above this `eta_decay` grows η so fast that a long run's weights blow up (1.01 is
    /// ×21,000 by update 1,000); a typo such as 1.1 for 0.99 is the likely cause.
    pub const MAX_ETA_DECAY: f64 = 1.01;

    pub fn check(&self) -> Result<(), ConfigError> {
        // Written so that NaN fails every test.
        if !(self.eta > 0.0 && self.eta.is_finite() && self.eta_turn >= 0.0 && self.eta_turn.is_finite()) {
            return Err(ConfigError::invalid("[adagrad] eta", "eta must be > 0 and eta_turn >= 0 (finite)"));
        }
        if !(self.epsilon >= 0.0 && self.epsilon.is_finite()) {
            return Err(ConfigError::invalid(
                "[adagrad] epsilon",
                format!("{} is not a finite number >= 0", self.epsilon),
            ));
        }
        if !(self.eta_factors > 0.0 && self.eta_factors.is_finite()) {
            return Err(ConfigError::invalid(
                "[adagrad] eta_factors",
                format!(
                    "{} is not a finite number > 0 (1.0 steps the factors as the raw features)",
                    self.eta_factors
                ),
            ));
        }
        if !(self.eta_decay > 0.0 && self.eta_decay <= Self::MAX_ETA_DECAY) {
            return Err(ConfigError::invalid(
                "[adagrad] eta_decay",
                format!(
                    "{} is not in (0, {}]: η is multiplied by eta_decay at every update, so 1.0 \
                     keeps it constant, 0.9999 lets it decay slowly, and values above 1 make it grow",
                    self.eta_decay,
                    Self::MAX_ETA_DECAY
                ),
            ));
        }
        Ok(())
    }

    /// A warning when `eta_factors` is set but the weights train no factor parameters (KP or
    /// PP): it then changes nothing. The weights decide (a resumed run or one started from
    /// `[init] weights` keeps its file's factors), so this is checked once they are open.
    pub fn eta_factors_unused(&self, factors: &Factorization) -> Option<String> {
        (self.eta_factors != 1.0 && !factors.kp && !factors.pp).then(|| {
            format!(
                "[adagrad] eta_factors = {} has no effect: these weights train no KP or PP factor \
                 (set [init] factors = {{ kp = true, pp = true }} for a new run, or remove the key)",
                self.eta_factors
            )
        })
    }
}

/// `[init]`: where a new run's weights start, and the pattern features trained with them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InitConfig {
    /// Start from these KPPT files (KK/KKP/KPP_synthesized.bin) instead of material only.
    pub kppt: Option<PathBuf>,
    /// Start from this weight file (copied, counters reset; keeps the AdaGrad state).
    pub weights: Option<PathBuf>,
    /// Pattern file (definitions and initial weights) to train with.
    pub patterns: Option<PathBuf>,
    /// Dimension reduction of a new weight file: `factors = { mirror = true, kp = true,
    /// pp = true }` (each defaults to false).
    /// A resumed run, or one started from `weights`, keeps that file's.
    pub factors: Factorization,
}

impl InitConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.kppt.is_some() && self.weights.is_some() {
            return Err(ConfigError::invalid("[init] kppt, weights", "give one of them, not both"));
        }
        Ok(())
    }
}

/// `[validation]`: held-out metrics (test loss, mean |eval − teacher|, move agreement).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ValidationConfig {
    /// Held-out teacher shard (none: no held-out metrics).
    pub shard: Option<PathBuf>,
    /// At most this many of its records are used.
    pub max_records: usize,
    /// Depth of the search whose best move is compared with the recorded move (0 = off).
    pub depth: i32,
}

impl Default for ValidationConfig {
    fn default() -> Self {
        ValidationConfig { shard: None, max_records: 2000, depth: 1 }
    }
}

/// The tables `keima learn` and `keima train` share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnSettings {
    pub loss: LossConfig,
    pub adagrad: AdaGradConfig,
    pub init: InitConfig,
    pub validation: ValidationConfig,
    /// Reserve the weight file's disk space before training (see `WeightFile::check_disk_space`):
    /// a full disk is then a clear error at the start instead of a crash mid-run. Off only
    /// for tests that touch a few pages of many files.
    pub check_disk_space: bool,
}

impl Default for LearnSettings {
    fn default() -> Self {
        LearnSettings {
            loss: LossConfig::default(),
            adagrad: AdaGradConfig::default(),
            init: InitConfig::default(),
            validation: ValidationConfig::default(),
            check_disk_space: true,
        }
    }
}

impl LearnSettings {
    pub fn check(&self) -> Result<(), ConfigError> {
        self.loss.check()?;
        self.adagrad.check()?;
        self.init.check()
    }
}

/// Where each learner key of an older keima went: (old key, new table, new key).
const MOVED_LEARN_KEYS: [(&str, &str, &str); 12] = [
    ("eta", "adagrad", "eta"),
    ("eta_turn", "adagrad", "eta_turn"),
    ("epsilon", "adagrad", "epsilon"),
    ("eta_decay", "adagrad", "eta_decay"),
    ("lambda", "loss", "lambda"),
    ("eval_limit", "loss", "eval_limit"),
    ("skip_draws", "loss", "skip_draws"),
    ("init_kppt", "init", "kppt"),
    ("init_weights", "init", "weights"),
    ("patterns", "init", "patterns"),
    ("validation_max", "validation", "max_records"),
    ("validation_depth", "validation", "depth"),
];

impl LearnSettings {
    /// Moves the learner keys an older keima read from `from` (the table `from_name`, or
    /// the top with `None`) to their tables in `root`.
    pub fn migrate(
        from: &mut Map<String, Value>,
        from_name: Option<&str>,
        root: &mut Map<String, Value>,
        m: &mut Migration,
    ) {
        // `validation` was the shard's path; now it is the table.
        if from.get("validation").is_some_and(|v| !v.is_object()) {
            m.move_key(from, from_name, "validation", root, Some("validation"), "shard");
        }
        for (old, table, new) in MOVED_LEARN_KEYS {
            m.move_key(from, from_name, old, root, Some(table), new);
        }
    }
}

/// `[bagging]` of `keima learn`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BaggingConfig {
    /// Players P (0 = no bagging: one ordinary run).
    pub players: usize,
    /// Draws M as a multiple of the records N (research: 40,000 of 20,000 games = 2.0).
    pub draws: f64,
    /// Draws K learned by every player, as a multiple of N (research: 25,000 / 20,000).
    pub common: f64,
    /// MNCL's λ (0 = plain bagging). The research: 1e-6 helped, 1e-4 diverged (its scale).
    pub ncl_lambda: f64,
    /// MNCL's C: a pull of every touched weight toward 0 against divergence.
    pub ncl_c: f64,
    /// Set by the bagging run for each phase's trainer (stored in its checkpoints); not
    /// for config files.
    pub phase: Option<BagPhase>,
}

impl Default for BaggingConfig {
    fn default() -> Self {
        BaggingConfig { players: 0, draws: 2.0, common: 1.25, ncl_lambda: 0.0, ncl_c: 0.0, phase: None }
    }
}

/// Which sample a trainer learns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BagPhase {
    Common,
    /// Player 1 … P.
    Player(usize),
}

impl BagPhase {
    /// The phase's directory under the run's `out_dir`.
    pub fn dir_name(self) -> String {
        match self {
            BagPhase::Common => "common".into(),
            BagPhase::Player(p) => format!("player-{p:02}"),
        }
    }

    pub(crate) fn salt(self) -> u64 {
        match self {
            BagPhase::Common => 0,
            BagPhase::Player(p) => p as u64,
        }
    }
}

impl BaggingConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        let finite = self.draws.is_finite() && self.common.is_finite();
        if self.players > 0
            && !(finite && self.common >= 0.0 && self.draws > self.common && self.draws <= 100.0)
        {
            return Err(ConfigError::invalid(
                "[bagging] draws, common",
                format!(
                    "need 0 <= common < draws <= 100, got common {} and draws {}",
                    self.common, self.draws
                ),
            ));
        }
        let ncl = [self.ncl_lambda, self.ncl_c];
        if ncl.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(ConfigError::invalid("[bagging] ncl_lambda, ncl_c", "must be finite and >= 0"));
        }
        Ok(())
    }

    /// Whether MNCL's term is on.
    pub fn ncl(&self) -> bool {
        self.players > 0 && (self.ncl_lambda > 0.0 || self.ncl_c > 0.0)
    }

    /// The mean number of times a record is drawn in `phase`.
    pub fn rate(&self, phase: BagPhase) -> f64 {
        match phase {
            BagPhase::Common => self.common,
            BagPhase::Player(_) => (self.draws - self.common) / self.players.max(1) as f64,
        }
    }
}

/// `[newbob]` of `keima train`: the learning-rate decay on a held-out plateau, with
/// rollback (the decision itself is `learn::newbob`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NewbobConfig {
    /// η is multiplied by this when the held-out loss does not improve.
    pub decay: f64,
    /// Relative improvement of the held-out loss over the best that counts as better.
    pub min_improvement: f64,
    /// After this many decays the run stops (converged).
    pub max_decays: u32,
}

impl Default for NewbobConfig {
    fn default() -> Self {
        NewbobConfig { decay: 0.5, min_improvement: 0.0, max_decays: 4 }
    }
}

impl NewbobConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        if !(self.decay > 0.0 && self.decay < 1.0) {
            return Err(ConfigError::invalid("[newbob] decay", format!("{} is not in (0, 1)", self.decay)));
        }
        if !(0.0..1.0).contains(&self.min_improvement) {
            return Err(ConfigError::invalid(
                "[newbob] min_improvement",
                format!("{} is not in [0, 1)", self.min_improvement),
            ));
        }
        if self.max_decays == 0 {
            return Err(ConfigError::invalid("[newbob] max_decays", "must be at least 1"));
        }
        Ok(())
    }
}

/// `keima learn` configuration (TOML). Paths are relative to the working directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnConfig {
    /// Teacher shards: files or patterns with `*`/`?` in the file name.
    pub shards: Vec<String>,
    /// Run directory: weights.kw, metrics.jsonl, checkpoints/.
    pub out_dir: PathBuf,
    pub batch_size: usize,
    pub epochs: u64,
    /// Stop after this many updates in total (0 = no limit).
    pub max_updates: u64,
    /// Records held in the shuffle buffer.
    pub shuffle_buffer: usize,
    /// Validation (a metrics line) every N updates (0 = only at the end).
    pub eval_every: u64,
    /// Checkpoint every N updates (0 = only at the end).
    pub checkpoint_every: u64,
    /// Checkpoints kept (0 = all).
    pub keep_checkpoints: usize,
    pub seed: u64,
    /// Train the KPP weights (false: only KK and KKP — ~10^7 weights that each see far more
    /// positions, for small data sets; patterns are trained either way).
    pub train_kpp: bool,
    /// Worker threads (0 = all cores).
    pub threads: usize,
    /// One thread, sequential code paths (results are identical anyway; for tests).
    pub deterministic: bool,
    /// `[bagging]`: P players for consultation from one data set (`learn::bagging`).
    pub bagging: BaggingConfig,
    /// The shared tables and `check_disk_space`.
    #[serde(flatten)]
    pub learn: LearnSettings,
}

impl Default for LearnConfig {
    fn default() -> Self {
        LearnConfig {
            shards: Vec::new(),
            out_dir: PathBuf::from("runs/learn"),
            batch_size: 10_000,
            epochs: 1,
            max_updates: 0,
            shuffle_buffer: 200_000,
            eval_every: 100,
            checkpoint_every: 1000,
            keep_checkpoints: 3,
            seed: 1,
            train_kpp: true,
            threads: 0,
            deterministic: false,
            bagging: BaggingConfig::default(),
            learn: LearnSettings::default(),
        }
    }
}

impl LearnConfig {
    pub fn from_toml(text: &str) -> Result<LearnConfig, ConfigError> {
        let c: LearnConfig = crate::config::from_toml(text, Self::migrate)?;
        c.check()?;
        Ok(c)
    }

    /// Reads the config stored in a checkpoint (an older keima's layout too).
    pub fn from_stored(value: Value) -> Result<LearnConfig, ConfigError> {
        crate::config::from_stored(value, Self::migrate)
    }

    /// An older keima's flat learner keys to their tables.
    fn migrate(root: &mut Map<String, Value>, m: &mut Migration) {
        let mut from = std::mem::take(root);
        LearnSettings::migrate(&mut from, None, root, m);
        for (k, v) in from {
            match (table_mut(root, &k), v) {
                // A table given in the new form as well: its keys win.
                (Some(dst), Value::Object(src)) => dst.extend(src),
                (_, v) => {
                    root.insert(k, v);
                }
            }
        }
    }

    pub fn check(&self) -> Result<(), ConfigError> {
        if self.shards.is_empty() {
            return Err(ConfigError::invalid("shards", "empty: list teacher shard files or patterns"));
        }
        if self.batch_size == 0 {
            return Err(ConfigError::invalid("batch_size", "must be at least 1"));
        }
        self.bagging.check()?;
        if self.bagging.ncl() && !self.learn.init.factors.is_none() {
            return Err(ConfigError::invalid(
                "[bagging] ncl_lambda",
                "MNCL works on raw weights: not with [init] factors",
            ));
        }
        self.learn.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_checks() {
        let c = BaggingConfig { players: 10, draws: 2.0, common: 1.25, ..BaggingConfig::default() };
        assert_eq!(c.rate(BagPhase::Common), 1.25);
        assert!((c.rate(BagPhase::Player(3)) - 0.075).abs() < 1e-12);
        assert!(c.check().is_ok());
        assert!(BaggingConfig { common: 2.0, ..c }.check().is_err());
        assert!(BaggingConfig { draws: f64::NAN, ..c }.check().is_err());
        // Off: nothing is checked.
        assert!(BaggingConfig { players: 0, draws: -1.0, ..c }.check().is_ok());
        assert_eq!(BagPhase::Player(7).dir_name(), "player-07");
        assert!(BaggingConfig { ncl_lambda: -1.0, ..c }.check().is_err());
        assert!(!c.ncl() && BaggingConfig { ncl_c: 0.1, ..c }.ncl());
    }

    #[test]
    fn adagrad_settings_out_of_range_are_refused() {
        let ok = AdaGradConfig::default();
        assert!(ok.check().is_ok());
        assert!(AdaGradConfig { eta_decay: 1.001, ..ok }.check().is_ok());
        assert!(AdaGradConfig { eta_decay: AdaGradConfig::MAX_ETA_DECAY, ..ok }.check().is_ok());
        for bad in [
            AdaGradConfig { eta_decay: 1.1, ..ok },
            AdaGradConfig { eta_decay: 0.0, ..ok },
            AdaGradConfig { eta_decay: f64::NAN, ..ok },
            AdaGradConfig { eta: f64::NAN, ..ok },
            AdaGradConfig { eta: f64::INFINITY, ..ok },
            AdaGradConfig { eta: 0.0, ..ok },
            AdaGradConfig { eta_turn: -0.5, ..ok },
            AdaGradConfig { eta_factors: 0.0, ..ok },
            AdaGradConfig { eta_factors: f64::NAN, ..ok },
            AdaGradConfig { eta_factors: f64::INFINITY, ..ok },
            AdaGradConfig { epsilon: -1.0, ..ok },
            AdaGradConfig { epsilon: f64::NAN, ..ok },
        ] {
            let e = bad.check().expect_err(&format!("{bad:?} accepted"));
            assert!(matches!(e, ConfigError::Invalid { .. }), "{e:?}");
        }
        let e = AdaGradConfig { eta_decay: 1.1, ..ok }.check().unwrap_err();
        assert!(e.to_string().contains("eta_decay"), "{e}");
    }

    #[test]
    fn eta_factors_without_factor_parameters_is_warned_about() {
        let scaled = AdaGradConfig { eta_factors: 3.0, ..AdaGradConfig::default() };
        let mirror_only = Factorization { mirror: true, kp: false, pp: false };
        assert!(scaled.eta_factors_unused(&mirror_only).is_some_and(|w| w.contains("eta_factors = 3")));
        assert!(scaled.eta_factors_unused(&Factorization::default()).is_some());
        for with_factor in [
            Factorization { mirror: false, kp: true, pp: false },
            Factorization { mirror: false, kp: false, pp: true },
        ] {
            assert_eq!(scaled.eta_factors_unused(&with_factor), None);
        }
        assert_eq!(AdaGradConfig::default().eta_factors_unused(&mirror_only), None);
    }

    #[test]
    fn tables_parse_and_unknown_keys_are_named() {
        let c = LearnConfig::from_toml(
            "shards = [\"a\"]\nbatch_size = 5\n[loss]\nlambda = 0.5\n[adagrad]\neta = 3.0\n\
             [init]\npatterns = \"p.kpat\"\n[validation]\nshard = \"v\"\ndepth = 0\n",
        )
        .unwrap();
        assert_eq!(c.batch_size, 5);
        assert_eq!(c.learn.loss, LossConfig { lambda: 0.5, ..LossConfig::default() });
        assert_eq!(c.learn.adagrad.eta, 3.0);
        assert_eq!(c.learn.init.patterns, Some(PathBuf::from("p.kpat")));
        assert_eq!(
            c.learn.validation,
            ValidationConfig { shard: Some("v".into()), max_records: 2000, depth: 0 }
        );
        for (text, key) in [
            ("shards = [\"a\"]\nbatch_sise = 5\n", "batch_sise"),
            ("shards = [\"a\"]\n[loss]\nlamda = 0.5\n", "lamda"),
            ("shards = [\"a\"]\n[validation]\nshards = \"v\"\n", "shards"),
        ] {
            let e = LearnConfig::from_toml(text).unwrap_err();
            assert!(matches!(e, ConfigError::Toml(_)), "{e:?}");
            assert!(e.to_string().contains(&format!("`{key}`")), "{e}");
        }
    }

    #[test]
    fn keys_of_an_older_keima_are_refused_with_their_new_spelling() {
        let e =
            LearnConfig::from_toml("shards = [\"a\"]\neta = 1.0\nvalidation = \"v\"\nvalidation_max = 9\n")
                .unwrap_err();
        let ConfigError::Moved(moved) = &e else { panic!("{e:?}") };
        let pairs: Vec<(&str, &str)> = moved.iter().map(|m| (m.old.as_str(), m.new.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("validation", "[validation] shard"),
                ("eta", "[adagrad] eta"),
                ("validation_max", "[validation] max_records")
            ]
        );
    }

    #[test]
    fn a_stored_config_of_an_older_keima_is_migrated() {
        let old = serde_json::json!({
            "shards": ["a"], "validation": "v", "validation_max": 7, "validation_depth": 2,
            "out_dir": "o", "init_weights": null, "init_kppt": "k", "patterns": null,
            "batch_size": 10, "eta": 1.0, "eta_turn": 0.25, "epsilon": 64.0, "eta_decay": 1.0,
            "lambda": 0.5, "eval_limit": 2000, "skip_draws": true, "epochs": 4, "max_updates": 0,
            "shuffle_buffer": 9, "eval_every": 25, "checkpoint_every": 100, "keep_checkpoints": 1,
            "seed": 1, "train_kpp": true, "threads": 0, "deterministic": false, "check_disk_space": false
        });
        let c = LearnConfig::from_stored(old).unwrap();
        assert_eq!(
            c.learn.validation,
            ValidationConfig { shard: Some("v".into()), max_records: 7, depth: 2 }
        );
        assert_eq!(
            c.learn.adagrad,
            AdaGradConfig { eta: 1.0, eta_turn: 0.25, epsilon: 64.0, eta_decay: 1.0, eta_factors: 1.0 }
        );
        assert_eq!(c.learn.loss, LossConfig { lambda: 0.5, eval_limit: 2000, skip_draws: true });
        assert_eq!(c.learn.init, InitConfig { kppt: Some("k".into()), ..InitConfig::default() });
        assert!(!c.learn.check_disk_space);
        assert_eq!((c.batch_size, c.shuffle_buffer, c.eval_every), (10, 9, 25));
        // The current layout reads back as it was written.
        let again = LearnConfig::from_stored(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(again, c);
    }
}
