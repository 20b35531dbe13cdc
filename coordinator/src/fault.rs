//! Fault injection for crash tests. Built only with the `fault-injection` feature (which the
//! workspace's tests turn on through dev-dependencies; a release build has none of it):
//! `KEIMA_FAULT=<point>` or `<point>@<version>` makes the coordinator abort, as a kill -9
//! would, when it reaches that point (of the checkpoint or merge at that weights version).
//! In-process tests arm a plan that returns `Injected` instead, so the test can drop the
//! `Core` at that moment and resume from what is on disk. Without the feature `Faults` is
//! empty and every check is a no-op.

use std::fmt;

/// The moments a crash can be injected at, in the order a checkpoint passes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultPoint {
    /// `ckpt-N.tmp/weights.kw` written and fsynced, no `state.json` yet.
    CheckpointWeightsCopied,
    /// `ckpt-N.tmp` complete and fsynced, not yet renamed.
    CheckpointStateWritten,
    /// Rewrite of an existing version: the old `ckpt-N` moved to `ckpt-N.old`.
    CheckpointOldMovedAside,
    /// `ckpt-N.tmp` renamed to `ckpt-N`, directory fsynced; older ones not yet pruned.
    CheckpointRenamed,
    /// Older checkpoints pruned; the journal not yet.
    CheckpointPruned,
    /// The journal pruned: the checkpoint is finished.
    CheckpointJournalPruned,
    /// A merge is in the journal (fsynced) but not applied or acknowledged.
    MergeJournaled,
}

impl FaultPoint {
    pub const ALL: [FaultPoint; 7] = [
        FaultPoint::CheckpointWeightsCopied,
        FaultPoint::CheckpointStateWritten,
        FaultPoint::CheckpointOldMovedAside,
        FaultPoint::CheckpointRenamed,
        FaultPoint::CheckpointPruned,
        FaultPoint::CheckpointJournalPruned,
        FaultPoint::MergeJournaled,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultPoint::CheckpointWeightsCopied => "checkpoint:weights",
            FaultPoint::CheckpointStateWritten => "checkpoint:state",
            FaultPoint::CheckpointOldMovedAside => "checkpoint:aside",
            FaultPoint::CheckpointRenamed => "checkpoint:renamed",
            FaultPoint::CheckpointPruned => "checkpoint:pruned",
            FaultPoint::CheckpointJournalPruned => "checkpoint:journal-pruned",
            FaultPoint::MergeJournaled => "merge:journaled",
        }
    }

    pub fn parse(name: &str) -> Option<FaultPoint> {
        FaultPoint::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for FaultPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A simulated crash at a fault point (in-process tests only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("fault injected at {0} (test build)")]
pub struct Injected(pub FaultPoint);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAction {
    /// `std::process::abort()`: no destructor, no flush, like kill -9.
    Abort,
    /// Return `Injected` (the caller stops as a crash would; the test drops the `Core`).
    Fail,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultPlan {
    pub point: FaultPoint,
    /// Only at this weights version (any version if `None`).
    pub version: Option<u64>,
    pub action: FaultAction,
}

impl FaultPlan {
    /// `<point>` or `<point>@<version>` (the `KEIMA_FAULT` syntax), aborting.
    pub fn parse(spec: &str) -> Result<FaultPlan, String> {
        let (name, version) = match spec.split_once('@') {
            Some((n, v)) => {
                let v =
                    v.parse().map_err(|_| format!("KEIMA_FAULT={spec:?}: {v:?} is not a version number"))?;
                (n, Some(v))
            }
            None => (spec, None),
        };
        let point = FaultPoint::parse(name).ok_or_else(|| {
            let names: Vec<&str> = FaultPoint::ALL.iter().map(|p| p.name()).collect();
            format!("KEIMA_FAULT={spec:?}: unknown point {name:?}; known: {}", names.join(", "))
        })?;
        Ok(FaultPlan { point, version, action: FaultAction::Abort })
    }
}

/// The armed plan of one coordinator (none without the feature).
#[derive(Debug, Default)]
pub struct Faults {
    #[cfg(any(test, feature = "fault-injection"))]
    plan: std::sync::Mutex<Option<FaultPlan>>,
}

impl Faults {
    /// From `KEIMA_FAULT` when built with the feature; empty otherwise.
    pub fn from_env() -> Result<Faults, String> {
        let faults = Faults::default();
        #[cfg(any(test, feature = "fault-injection"))]
        if let Ok(spec) = std::env::var("KEIMA_FAULT")
            && !spec.is_empty()
        {
            let plan = FaultPlan::parse(&spec)?;
            tracing::warn!("fault injection armed: the coordinator aborts at {spec}");
            faults.arm(plan);
        }
        Ok(faults)
    }

    #[cfg(any(test, feature = "fault-injection"))]
    pub fn arm(&self, plan: FaultPlan) {
        *self.plan.lock().unwrap() = Some(plan);
    }

    /// Passes `point` at weights `version`: aborts or fails if the armed plan says so (a
    /// failing plan fires once).
    #[inline]
    pub fn hit(&self, point: FaultPoint, version: u64) -> Result<(), Injected> {
        #[cfg(any(test, feature = "fault-injection"))]
        {
            let mut plan = self.plan.lock().unwrap();
            if let Some(p) = *plan
                && p.point == point
                && p.version.is_none_or(|v| v == version)
            {
                match p.action {
                    FaultAction::Abort => {
                        eprintln!("KEIMA_FAULT: aborting at {point} (version {version})");
                        std::process::abort();
                    }
                    FaultAction::Fail => {
                        *plan = None;
                        return Err(Injected(point));
                    }
                }
            }
        }
        let _ = (point, version);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_fire_once_at_their_point_and_version() {
        for p in FaultPoint::ALL {
            assert_eq!(FaultPoint::parse(p.name()), Some(p));
        }
        let plan = FaultPlan::parse("checkpoint:renamed@4").unwrap();
        assert_eq!(
            plan,
            FaultPlan { point: FaultPoint::CheckpointRenamed, version: Some(4), action: FaultAction::Abort }
        );
        assert!(FaultPlan::parse("checkpoint:nowhere").unwrap_err().contains("known: checkpoint:weights"));
        assert!(FaultPlan::parse("checkpoint:state@x").unwrap_err().contains("not a version"));
        let f = Faults::default();
        f.arm(FaultPlan { action: FaultAction::Fail, ..plan });
        assert_eq!(f.hit(FaultPoint::CheckpointRenamed, 3), Ok(()), "other version");
        assert_eq!(f.hit(FaultPoint::CheckpointPruned, 4), Ok(()), "other point");
        assert_eq!(f.hit(FaultPoint::CheckpointRenamed, 4), Err(Injected(FaultPoint::CheckpointRenamed)));
        assert_eq!(f.hit(FaultPoint::CheckpointRenamed, 4), Ok(()), "fires once");
    }
}
