//! The shard queue: which shards wait, which are leased to whom until when, which are
//! merged. Pure bookkeeping (no I/O, no clock: callers pass `now_ms`), saved in
//! checkpoints.
//!
//! Exactly-once: a shard is merged at most once, and only from the worker holding its live
//! lease (shard, attempt, worker id, deadline not passed); a later push for a merged shard
//! is a duplicate. A lease that expires (no heartbeat) puts the shard back; so does a
//! worker returning it or a stale gradient. Heartbeats and returns, too, count only from
//! the lease holder.
//!
//! Generations: each shard belongs to one, and only shards of the open generation (and
//! earlier) are leased. The coordinator opens the next one after the open one's end step
//! (`core/generation_end.rs`), which is due once all its shards are merged or given up:
//! the barrier that makes each generation play with the previous one's weights.
//!
//! Match shards (`ShardSpec::Match`, queued at checkpoints by `core/matches.rs`) belong to no
//! generation: they never hold a generation's end back, and the run is finished only when
//! they are played too. Leasing alternates: while both kinds wait, a match shard follows
//! each training shard leased (so a worker that just finished a training shard is offered
//! a match shard, and training goes on at least at half the lease rate); when only one kind
//! waits, it is leased. In sequential (deterministic) runs the shards go in id order, so a
//! checkpoint's match shards are played after the training shards queued before them.
//! A match shard against an external USI engine is leased only to a worker that registered
//! that engine; the others skip it (and, in sequential runs, wait).

use crate::elo::MatchTally;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What a shard asks a worker to do (converted to and from the wire by `keima_proto::spec`).
pub use keima_proto::spec::ShardSpec;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardState {
    Pending,
    Leased {
        attempt: u32,
        worker: String,
        deadline_ms: u64,
    },
    Done {
        merge_seq: u64,
        positions: u64,
    },
    /// A match shard's games, recorded once.
    Played {
        result: MatchTally,
    },
    Failed {
        error: String,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Shard {
    pub id: u64,
    pub spec: ShardSpec,
    pub state: ShardState,
    /// Leases handed out so far (the attempt number of the newest lease).
    pub leases: u32,
    /// Leases that ended without a result (expired or failed; returns do not count).
    pub failures: u32,
    /// The generation it belongs to (`generations.rs`).
    #[serde(default)]
    pub generation: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseDecision {
    Leased { shard: u64, attempt: u32, deadline_ms: u64 },
    Wait,
    Finished,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushDecision {
    /// Merge it: the pusher holds the shard's live lease.
    Merge,
    /// Merged before: acknowledge and ignore.
    Duplicate,
    /// Not the pusher's to merge.
    Refused(LeaseProblem),
}

/// Why a worker's request does not belong to a live lease it holds.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LeaseProblem {
    #[error("no such shard in this run")]
    UnknownShard,
    #[error("the shard is not leased (waiting, or given up after failures)")]
    NotLeased,
    #[error("the shard's lease is attempt {current}")]
    OtherAttempt { current: u32 },
    #[error("the lease is held by another worker")]
    OtherWorker,
    #[error("the lease expired (no heartbeat in time)")]
    Expired,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueueCounts {
    pub total: u64,
    pub pending: u64,
    pub leased: u64,
    pub done: u64,
    pub failed: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub shards: Vec<Shard>,
    /// One shard at a time, in id order (deterministic runs).
    pub sequential: bool,
    pub max_failures: u32,
    /// Shards of later generations wait (the generation barrier).
    #[serde(default)]
    pub open_generation: u32,
    /// Stopped early (newbob converged): nothing more is leased, the run is finished.
    #[serde(default)]
    pub closed: bool,
    /// The last lease was a match shard's (the alternation above).
    #[serde(default)]
    pub last_lease_was_match: bool,
    /// The run's CPU budget is spent: training shards not yet leased stay pending and are
    /// leased no more; leased ones may still be merged, match shards are still played. Not
    /// saved: the coordinator sets it from its totals and the budget (`cpu_hours`), which a
    /// resume may raise.
    #[serde(skip)]
    pub training_stopped: bool,
}

impl Queue {
    /// A queue of `specs` with their generations (in order: a generation's shards after the
    /// earlier generations').
    pub fn new(specs: Vec<(u32, ShardSpec)>, sequential: bool, max_failures: u32) -> Queue {
        let shards = specs
            .into_iter()
            .enumerate()
            .map(|(i, (generation, spec))| Shard {
                id: i as u64,
                spec,
                state: ShardState::Pending,
                leases: 0,
                failures: 0,
                generation,
            })
            .collect();
        Queue {
            shards,
            sequential,
            max_failures: max_failures.max(1),
            open_generation: 0,
            closed: false,
            last_lease_was_match: false,
            training_stopped: false,
        }
    }

    /// Appends match shards (generation 0: they wait for no generation).
    pub fn add_match_shards(&mut self, specs: Vec<ShardSpec>) {
        for spec in specs {
            let id = self.shards.len() as u64;
            self.shards.push(Shard {
                id,
                spec,
                state: ShardState::Pending,
                leases: 0,
                failures: 0,
                generation: 0,
            });
        }
    }

    pub fn get(&self, id: u64) -> Option<&Shard> {
        self.shards.get(id as usize)
    }

    fn open(s: &Shard) -> bool {
        matches!(s.state, ShardState::Pending | ShardState::Leased { .. })
    }

    fn unstarted_training(s: &Shard) -> bool {
        !s.spec.is_match() && s.state == ShardState::Pending
    }

    /// Training shards not leased yet (after a stop at the CPU budget: never to be).
    pub fn unstarted_training_shards(&self) -> usize {
        self.shards.iter().filter(|s| Self::unstarted_training(s)).count()
    }

    /// Open and still to be run: a pending training shard is not, once training stopped.
    pub fn outstanding(&self, s: &Shard) -> bool {
        Self::open(s) && !(self.training_stopped && Self::unstarted_training(s))
    }

    pub fn finished(&self) -> bool {
        self.closed || !self.shards.iter().any(|s| self.outstanding(s))
    }

    /// No more training shards are leased (the CPU budget is spent).
    pub fn stop_training(&mut self) {
        self.training_stopped = true;
    }

    /// Generations in the queue (the last training shard's plus one).
    pub fn generations(&self) -> u32 {
        self.shards.iter().rev().find(|s| !s.spec.is_match()).map_or(0, |s| s.generation + 1)
    }

    /// Whether the open generation's end step is due: every one of its shards is merged or
    /// given up, and its end step has not opened the next one.
    pub fn generation_due(&self) -> bool {
        let g = self.open_generation;
        !self.closed
            && !self.training_stopped
            && g < self.generations()
            && self.shards.iter().filter(|s| s.generation == g && !s.spec.is_match()).all(|s| !Self::open(s))
    }

    /// After the open generation's end step: its successor's shards may be leased.
    pub fn open_next_generation(&mut self) {
        self.open_generation += 1;
    }

    /// Stops leasing for good (the run converged); the run is finished.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Leases the next shard to `worker`, which has the external USI engines `engines`
    /// (a match shard against an engine goes only to a worker that has it).
    pub fn lease(&mut self, worker: &str, engines: &[String], now_ms: u64, lease_ms: u64) -> LeaseDecision {
        self.expire(now_ms);
        if self.closed {
            return LeaseDecision::Finished;
        }
        let runnable = |s: &Shard| s.spec.usi_engine().is_none_or(|e| engines.iter().any(|n| n == e));
        let candidate = if self.sequential {
            // Only the first open shard, and only when nobody holds it and this worker can run it.
            self.shards
                .iter()
                .position(|s| self.outstanding(s))
                .filter(|&i| self.shards[i].state == ShardState::Pending && runnable(&self.shards[i]))
        } else {
            let pending = |is_match: bool| {
                self.shards.iter().position(|s| {
                    s.state == ShardState::Pending && s.spec.is_match() == is_match && runnable(s)
                })
            };
            let training = pending(false)
                .filter(|&i| !self.training_stopped && self.shards[i].generation <= self.open_generation);
            match (training, pending(true)) {
                (Some(t), Some(m)) => Some(if self.last_lease_was_match { t } else { m }),
                (t, m) => t.or(m),
            }
        }
        .filter(|&i| self.shards[i].generation <= self.open_generation);
        match candidate {
            Some(i) => {
                self.last_lease_was_match = self.shards[i].spec.is_match();
                let s = &mut self.shards[i];
                s.leases += 1;
                let deadline_ms = now_ms + lease_ms;
                s.state = ShardState::Leased { attempt: s.leases, worker: worker.to_string(), deadline_ms };
                LeaseDecision::Leased { shard: s.id, attempt: s.leases, deadline_ms }
            }
            None if self.finished() => LeaseDecision::Finished,
            None => LeaseDecision::Wait,
        }
    }

    /// The external USI engines that pending match shards wait for.
    pub fn usi_engines_waited_for(&self) -> BTreeSet<&str> {
        self.shards
            .iter()
            .filter(|s| s.state == ShardState::Pending)
            .filter_map(|s| s.spec.usi_engine())
            .collect()
    }

    fn fail(&mut self, i: usize, error: String) {
        let s = &mut self.shards[i];
        s.failures += 1;
        s.state = if s.failures >= self.max_failures {
            ShardState::Failed { error: format!("{} failed attempts; last: {error}", s.failures) }
        } else {
            ShardState::Pending
        };
    }

    /// Puts shards whose lease deadline passed back in the queue. Returns their ids.
    pub fn expire(&mut self, now_ms: u64) -> Vec<u64> {
        let mut expired = Vec::new();
        for i in 0..self.shards.len() {
            if let ShardState::Leased { deadline_ms, .. } = self.shards[i].state
                && deadline_ms <= now_ms
            {
                expired.push(self.shards[i].id);
                self.fail(i, "lease expired (no heartbeat)".into());
            }
        }
        expired
    }

    /// The index of shard `id` if `worker` holds its lease `attempt` and the deadline is
    /// after `now_ms`.
    pub fn live_lease(
        &self,
        id: u64,
        attempt: u32,
        worker: &str,
        now_ms: u64,
    ) -> Result<usize, LeaseProblem> {
        let i = id as usize;
        match &self.shards.get(i).ok_or(LeaseProblem::UnknownShard)?.state {
            ShardState::Leased { attempt: a, .. } if *a != attempt => {
                Err(LeaseProblem::OtherAttempt { current: *a })
            }
            ShardState::Leased { worker: w, .. } if w != worker => Err(LeaseProblem::OtherWorker),
            ShardState::Leased { deadline_ms, .. } if *deadline_ms <= now_ms => Err(LeaseProblem::Expired),
            ShardState::Leased { .. } => Ok(i),
            _ => Err(LeaseProblem::NotLeased),
        }
    }

    fn leased_to(&self, id: u64, attempt: u32) -> Option<usize> {
        let i = id as usize;
        match self.shards.get(i)?.state {
            ShardState::Leased { attempt: a, .. } if a == attempt => Some(i),
            _ => None,
        }
    }

    /// Extends a live lease of `worker`; `None` if it holds no such live lease.
    pub fn heartbeat(
        &mut self,
        id: u64,
        attempt: u32,
        worker: &str,
        now_ms: u64,
        lease_ms: u64,
    ) -> Option<u64> {
        let i = self.live_lease(id, attempt, worker, now_ms).ok()?;
        match &mut self.shards[i].state {
            ShardState::Leased { deadline_ms, .. } => {
                *deadline_ms = now_ms + lease_ms;
                Some(*deadline_ms)
            }
            _ => None,
        }
    }

    /// `worker` gives its lease back (`failed`: it could not run it). Refused unless it
    /// holds that lease (an expired one it still holds may be returned).
    pub fn give_back(
        &mut self,
        id: u64,
        attempt: u32,
        worker: &str,
        failed: bool,
        error: &str,
    ) -> Result<(), LeaseProblem> {
        let i = self.live_lease(id, attempt, worker, 0)?;
        if failed {
            self.fail(i, error.to_string());
        } else {
            self.shards[i].state = ShardState::Pending;
        }
        Ok(())
    }

    /// What to do with a result for shard `id`, lease `attempt`, pushed by `worker` (the
    /// push arrived at `now_ms`).
    pub fn push_decision(&self, id: u64, attempt: u32, worker: &str, now_ms: u64) -> PushDecision {
        if let Some(ShardState::Done { .. } | ShardState::Played { .. }) =
            self.shards.get(id as usize).map(|s| &s.state)
        {
            return PushDecision::Duplicate;
        }
        match self.live_lease(id, attempt, worker, now_ms) {
            Ok(_) => PushDecision::Merge,
            Err(problem) => PushDecision::Refused(problem),
        }
    }

    /// A stale result was rejected: the shard goes back in the queue if that attempt held it.
    pub fn requeue(&mut self, id: u64, attempt: u32) {
        if let Some(i) = self.leased_to(id, attempt) {
            self.shards[i].state = ShardState::Pending;
        }
    }

    pub fn mark_done(&mut self, id: u64, merge_seq: u64, positions: u64) {
        if let Some(s) = self.shards.get_mut(id as usize) {
            s.state = ShardState::Done { merge_seq, positions };
        }
    }

    /// Records a match shard's result.
    pub fn mark_played(&mut self, id: u64, result: MatchTally) {
        if let Some(s) = self.shards.get_mut(id as usize) {
            s.state = ShardState::Played { result };
        }
    }

    /// After a restart nobody holds a lease any more.
    pub fn release_all_leases(&mut self) {
        for s in &mut self.shards {
            if let ShardState::Leased { .. } = s.state {
                s.state = ShardState::Pending;
            }
        }
    }

    pub fn counts(&self) -> QueueCounts {
        let mut c = QueueCounts { total: self.shards.len() as u64, ..QueueCounts::default() };
        for s in &self.shards {
            match s.state {
                ShardState::Pending => c.pending += 1,
                ShardState::Leased { .. } => c.leased += 1,
                ShardState::Done { .. } | ShardState::Played { .. } => c.done += 1,
                ShardState::Failed { .. } => c.failed += 1,
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(n: u64) -> Vec<(u32, ShardSpec)> {
        (0..n).map(|i| (0, ShardSpec::Teacher { path: "t".into(), start: i * 10, count: 10 })).collect()
    }

    #[test]
    fn lease_expire_relase_and_exactly_once() {
        let mut q = Queue::new(specs(2), false, 3);
        assert_eq!(
            q.lease("a", &[], 0, 100),
            LeaseDecision::Leased { shard: 0, attempt: 1, deadline_ms: 100 }
        );
        assert_eq!(
            q.lease("b", &[], 10, 100),
            LeaseDecision::Leased { shard: 1, attempt: 1, deadline_ms: 110 }
        );
        assert_eq!(q.lease("c", &[], 20, 100), LeaseDecision::Wait);
        // a keeps its lease alive, b does not; nobody else can heartbeat a's lease.
        assert_eq!(q.heartbeat(0, 1, "c", 90, 100), None, "not c's lease");
        assert_eq!(q.heartbeat(0, 1, "a", 90, 100), Some(190));
        assert_eq!(
            q.lease("c", &[], 150, 100),
            LeaseDecision::Leased { shard: 1, attempt: 2, deadline_ms: 250 }
        );
        assert_eq!(q.heartbeat(1, 1, "b", 151, 100), None, "b's lease was taken over");
        // b's late result is refused: c holds the lease now.
        assert_eq!(
            q.push_decision(1, 1, "b", 160),
            PushDecision::Refused(LeaseProblem::OtherAttempt { current: 2 })
        );
        assert_eq!(q.push_decision(1, 2, "b", 160), PushDecision::Refused(LeaseProblem::OtherWorker));
        assert_eq!(q.push_decision(1, 2, "c", 250), PushDecision::Refused(LeaseProblem::Expired));
        assert_eq!(q.push_decision(1, 2, "c", 160), PushDecision::Merge);
        q.mark_done(1, 1, 500);
        assert_eq!(q.push_decision(1, 2, "c", 170), PushDecision::Duplicate);
        assert_eq!(q.heartbeat(1, 2, "c", 170, 100), None, "a merged shard's lease is void");
        assert_eq!(q.push_decision(7, 1, "a", 170), PushDecision::Refused(LeaseProblem::UnknownShard));
        q.mark_done(0, 2, 400);
        assert_eq!(q.lease("a", &[], 300, 100), LeaseDecision::Finished);
        assert_eq!(q.counts(), QueueCounts { total: 2, pending: 0, leased: 0, done: 2, failed: 0 });
    }

    #[test]
    fn only_the_holder_pushes_or_returns_a_lease() {
        let mut q = Queue::new(specs(2), false, 3);
        assert_eq!(
            q.push_decision(0, 1, "a", 0),
            PushDecision::Refused(LeaseProblem::NotLeased),
            "never leased"
        );
        q.lease("a", &[], 0, 100);
        assert_eq!(q.give_back(0, 1, "b", true, "not mine"), Err(LeaseProblem::OtherWorker));
        assert_eq!(
            q.give_back(0, 2, "a", true, "wrong attempt"),
            Err(LeaseProblem::OtherAttempt { current: 1 })
        );
        assert_eq!(q.shards[0].failures, 0, "refused returns change nothing");
        assert!(matches!(q.shards[0].state, ShardState::Leased { .. }));
        assert_eq!(q.give_back(0, 1, "a", true, "boom"), Ok(()));
        assert_eq!(q.shards[0].failures, 1);
        assert_eq!(q.push_decision(0, 1, "a", 1), PushDecision::Refused(LeaseProblem::NotLeased), "returned");
    }

    #[test]
    fn sequential_mode_leases_one_at_a_time_in_order() {
        let mut q = Queue::new(specs(3), true, 3);
        assert!(matches!(q.lease("a", &[], 0, 100), LeaseDecision::Leased { shard: 0, .. }));
        assert_eq!(q.lease("b", &[], 0, 100), LeaseDecision::Wait);
        assert_eq!(q.give_back(0, 1, "a", false, ""), Ok(()));
        assert!(matches!(q.lease("b", &[], 1, 100), LeaseDecision::Leased { shard: 0, attempt: 2, .. }));
        q.mark_done(0, 1, 1);
        assert!(matches!(q.lease("a", &[], 2, 100), LeaseDecision::Leased { shard: 1, .. }));
    }

    #[test]
    fn failures_give_up_after_max_attempts_and_returns_do_not_count() {
        let mut q = Queue::new(specs(1), false, 2);
        q.lease("a", &[], 0, 10);
        assert_eq!(q.give_back(0, 1, "a", false, "stopping"), Ok(()));
        q.lease("a", &[], 0, 10);
        assert_eq!(q.give_back(0, 2, "a", true, "boom"), Ok(()));
        assert_eq!(
            q.give_back(0, 2, "a", true, "again"),
            Err(LeaseProblem::NotLeased),
            "not leased any more"
        );
        q.lease("a", &[], 0, 10);
        assert_eq!(q.expire(10), vec![0]);
        assert!(matches!(&q.shards[0].state, ShardState::Failed { error } if error.contains("2 failed")));
        assert_eq!(q.lease("a", &[], 20, 10), LeaseDecision::Finished);
        assert_eq!(q.counts().failed, 1);
    }

    #[test]
    fn restart_releases_leases_and_survives_json() {
        let mut q = Queue::new(specs(2), false, 3);
        q.lease("a", &[], 0, 10);
        q.mark_done(1, 1, 3);
        let mut back: Queue = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back, q);
        back.release_all_leases();
        assert_eq!(back.counts(), QueueCounts { total: 2, pending: 1, leased: 0, done: 1, failed: 0 });
    }

    #[test]
    fn no_shard_of_a_generation_is_leased_before_the_previous_one_ended() {
        let spec = |i: u64| ShardSpec::Teacher { path: "t".into(), start: i, count: 1 };
        for sequential in [false, true] {
            let mut q =
                Queue::new(vec![(0, spec(0)), (0, spec(1)), (1, spec(2)), (2, spec(3))], sequential, 3);
            assert_eq!(q.generations(), 3);
            assert!(matches!(q.lease("a", &[], 0, 100), LeaseDecision::Leased { shard: 0, .. }));
            if !sequential {
                assert!(matches!(q.lease("b", &[], 0, 100), LeaseDecision::Leased { shard: 1, .. }));
            }
            assert_eq!(q.lease("c", &[], 0, 100), LeaseDecision::Wait, "generation 1 waits");
            q.mark_done(0, 1, 5);
            assert!(!q.generation_due(), "shard 1 is not merged yet");
            if sequential {
                assert!(matches!(q.lease("b", &[], 0, 100), LeaseDecision::Leased { shard: 1, .. }));
            }
            q.mark_done(1, 2, 5);
            assert!(q.generation_due());
            assert_eq!(
                q.lease("c", &[], 0, 100),
                LeaseDecision::Wait,
                "merged, but its end step has not run"
            );
            assert!(!q.finished());
            q.open_next_generation();
            assert!(!q.generation_due());
            assert!(matches!(q.lease("c", &[], 0, 100), LeaseDecision::Leased { shard: 2, .. }));
            assert_eq!(q.lease("d", &[], 0, 100), LeaseDecision::Wait, "generation 2 waits for 1");
            q.mark_done(2, 3, 5);
            assert!(q.generation_due());
            // Converged: the last generation is never leased, and the run is finished.
            q.close();
            assert!(!q.generation_due() && q.finished());
            assert_eq!(q.lease("d", &[], 0, 100), LeaseDecision::Finished);
            assert_eq!(q.counts().pending, 1);
        }
    }

    #[test]
    fn the_last_generations_end_step_is_due_once_everything_is_merged() {
        let mut q = Queue::new(specs(1), false, 3);
        q.lease("a", &[], 0, 100);
        q.mark_done(0, 1, 5);
        assert!(q.finished() && q.generation_due());
        q.open_next_generation();
        assert!(!q.generation_due());
        // A checkpoint of an older keima (no generations) reads as generation 0, open.
        let mut v = serde_json::to_value(&q).unwrap();
        v.as_object_mut().unwrap().remove("open_generation");
        v["shards"][0].as_object_mut().unwrap().remove("generation");
        let old: Queue = serde_json::from_value(v).unwrap();
        assert_eq!((old.open_generation, old.shards[0].generation, old.closed), (0, 0, false));
    }

    #[test]
    fn a_usi_match_shard_goes_only_to_a_worker_with_its_engine() {
        let usi_match = |engine: &str| ShardSpec::Match {
            version: 2,
            eval_dir: "e".into(),
            baseline_dir: None,
            nodes: 0,
            max_ply: 100,
            openings: vec!["startpos".into()],
            usi: Some(keima_proto::spec::UsiBaseline {
                engine: engine.into(),
                byoyomi_ms: 1000,
                time_ms: 0,
                increment_ms: 0,
            }),
        };
        for sequential in [false, true] {
            let mut q = Queue::new(Vec::new(), sequential, 3);
            q.add_match_shards(vec![usi_match("gps")]);
            assert_eq!(q.usi_engines_waited_for(), BTreeSet::from(["gps"]));
            let (none, other, gps) =
                (Vec::new(), vec!["fairy".to_string()], vec!["fairy".into(), "gps".into()]);
            assert_eq!(q.lease("a", &none, 0, 100), LeaseDecision::Wait, "sequential {sequential}");
            assert_eq!(q.lease("b", &other, 0, 100), LeaseDecision::Wait, "sequential {sequential}");
            assert!(matches!(q.lease("c", &gps, 0, 100), LeaseDecision::Leased { shard: 0, .. }));
            assert!(q.usi_engines_waited_for().is_empty());
        }
        // Without the engine a worker still gets training shards, before and after it.
        let mut q = Queue::new(specs(2), false, 3);
        q.add_match_shards(vec![usi_match("gps")]);
        assert!(matches!(q.lease("a", &[], 0, 100), LeaseDecision::Leased { shard: 0, .. }));
        assert!(matches!(q.lease("a", &[], 0, 100), LeaseDecision::Leased { shard: 1, .. }));
        assert_eq!(q.lease("a", &[], 0, 100), LeaseDecision::Wait);
        assert!(matches!(q.lease("g", &["gps".to_string()], 0, 100), LeaseDecision::Leased { shard: 2, .. }));
    }
}
