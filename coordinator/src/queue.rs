//! The shard queue: which shards wait, which are leased to whom until when, which are
//! merged. Pure bookkeeping (no I/O, no clock: callers pass `now_ms`), saved in
//! checkpoints.
//!
//! Exactly-once: a shard is merged at most once, whatever attempt delivers it first; a
//! later push for a merged shard is a duplicate. A lease that expires (no heartbeat) puts
//! the shard back; so does a worker returning it or a stale gradient.

use serde::{Deserialize, Serialize};

/// What a shard asks a worker to do (mirrors the wire's lease kinds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardSpec {
    SelfPlay {
        seed: u64,
        games: u32,
        openings: Vec<String>,
        depth: i32,
        nodes: u64,
        random_moves: u32,
        max_plies: u32,
        eval_limit: i32,
        write_minply: u32,
    },
    Teacher {
        path: String,
        start: u64,
        count: u64,
    },
    Records {
        paths: Vec<String>,
        depth: i32,
        nodes: u64,
        unknown_result: i32,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardState {
    Pending,
    Leased { attempt: u32, worker: String, deadline_ms: u64 },
    Done { merge_seq: u64, positions: u64 },
    Failed { error: String },
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
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseDecision {
    Leased { shard: u64, attempt: u32, deadline_ms: u64 },
    Wait,
    Finished,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushDecision {
    /// Merge it (the shard is not merged yet).
    Merge,
    /// Merged before: acknowledge and ignore.
    Duplicate,
    /// No such shard.
    Unknown,
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
}

impl Queue {
    pub fn new(specs: Vec<ShardSpec>, sequential: bool, max_failures: u32) -> Queue {
        let shards = specs
            .into_iter()
            .enumerate()
            .map(|(i, spec)| Shard { id: i as u64, spec, state: ShardState::Pending, leases: 0, failures: 0 })
            .collect();
        Queue { shards, sequential, max_failures: max_failures.max(1) }
    }

    pub fn get(&self, id: u64) -> Option<&Shard> {
        self.shards.get(id as usize)
    }

    fn open(s: &Shard) -> bool {
        matches!(s.state, ShardState::Pending | ShardState::Leased { .. })
    }

    pub fn finished(&self) -> bool {
        !self.shards.iter().any(Self::open)
    }

    /// Leases the next shard to `worker`.
    pub fn lease(&mut self, worker: &str, now_ms: u64, lease_ms: u64) -> LeaseDecision {
        self.expire(now_ms);
        let candidate = if self.sequential {
            // Only the first open shard, and only when nobody holds it.
            self.shards.iter().position(Self::open).filter(|&i| self.shards[i].state == ShardState::Pending)
        } else {
            self.shards.iter().position(|s| s.state == ShardState::Pending)
        };
        match candidate {
            Some(i) => {
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

    fn leased_to(&self, id: u64, attempt: u32) -> Option<usize> {
        let i = id as usize;
        match self.shards.get(i)?.state {
            ShardState::Leased { attempt: a, .. } if a == attempt => Some(i),
            _ => None,
        }
    }

    /// Extends a live lease; `None` if the lease is no longer valid.
    pub fn heartbeat(&mut self, id: u64, attempt: u32, now_ms: u64, lease_ms: u64) -> Option<u64> {
        let i = self.leased_to(id, attempt)?;
        if let ShardState::Leased { deadline_ms, .. } = &mut self.shards[i].state {
            if *deadline_ms <= now_ms {
                return None;
            }
            *deadline_ms = now_ms + lease_ms;
            return Some(*deadline_ms);
        }
        None
    }

    /// A worker gives a lease back (`failed`: it could not run it). False if not its lease.
    pub fn give_back(&mut self, id: u64, attempt: u32, failed: bool, error: &str) -> bool {
        let Some(i) = self.leased_to(id, attempt) else { return false };
        if failed {
            self.fail(i, error.to_string());
        } else {
            self.shards[i].state = ShardState::Pending;
        }
        true
    }

    /// What to do with a pushed result for `id`.
    pub fn push_decision(&self, id: u64) -> PushDecision {
        match self.shards.get(id as usize).map(|s| &s.state) {
            None => PushDecision::Unknown,
            Some(ShardState::Done { .. }) => PushDecision::Duplicate,
            Some(_) => PushDecision::Merge,
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
                ShardState::Done { .. } => c.done += 1,
                ShardState::Failed { .. } => c.failed += 1,
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(n: u64) -> Vec<ShardSpec> {
        (0..n).map(|i| ShardSpec::Teacher { path: "t".into(), start: i * 10, count: 10 }).collect()
    }

    #[test]
    fn lease_expire_relase_and_exactly_once() {
        let mut q = Queue::new(specs(2), false, 3);
        assert_eq!(q.lease("a", 0, 100), LeaseDecision::Leased { shard: 0, attempt: 1, deadline_ms: 100 });
        assert_eq!(q.lease("b", 10, 100), LeaseDecision::Leased { shard: 1, attempt: 1, deadline_ms: 110 });
        assert_eq!(q.lease("c", 20, 100), LeaseDecision::Wait);
        // a keeps its lease alive, b does not.
        assert_eq!(q.heartbeat(0, 1, 90, 100), Some(190));
        assert_eq!(q.lease("c", 150, 100), LeaseDecision::Leased { shard: 1, attempt: 2, deadline_ms: 250 });
        assert_eq!(q.heartbeat(1, 1, 151, 100), None, "b's lease was taken over");
        // b's late result still counts (first result wins), c's is then a duplicate.
        assert_eq!(q.push_decision(1), PushDecision::Merge);
        q.mark_done(1, 1, 500);
        assert_eq!(q.push_decision(1), PushDecision::Duplicate);
        assert_eq!(q.heartbeat(1, 2, 160, 100), None, "a merged shard's lease is void");
        assert_eq!(q.push_decision(7), PushDecision::Unknown);
        q.mark_done(0, 2, 400);
        assert_eq!(q.lease("a", 300, 100), LeaseDecision::Finished);
        assert_eq!(q.counts(), QueueCounts { total: 2, pending: 0, leased: 0, done: 2, failed: 0 });
    }

    #[test]
    fn sequential_mode_leases_one_at_a_time_in_order() {
        let mut q = Queue::new(specs(3), true, 3);
        assert!(matches!(q.lease("a", 0, 100), LeaseDecision::Leased { shard: 0, .. }));
        assert_eq!(q.lease("b", 0, 100), LeaseDecision::Wait);
        assert!(q.give_back(0, 1, false, ""));
        assert!(matches!(q.lease("b", 1, 100), LeaseDecision::Leased { shard: 0, attempt: 2, .. }));
        q.mark_done(0, 1, 1);
        assert!(matches!(q.lease("a", 2, 100), LeaseDecision::Leased { shard: 1, .. }));
    }

    #[test]
    fn failures_give_up_after_max_attempts_and_returns_do_not_count() {
        let mut q = Queue::new(specs(1), false, 2);
        q.lease("a", 0, 10);
        assert!(q.give_back(0, 1, false, "stopping"));
        q.lease("a", 0, 10);
        assert!(q.give_back(0, 2, true, "boom"));
        assert!(!q.give_back(0, 2, true, "again"), "not leased any more");
        q.lease("a", 0, 10);
        assert_eq!(q.expire(10), vec![0]);
        assert!(matches!(&q.shards[0].state, ShardState::Failed { error } if error.contains("2 failed")));
        assert_eq!(q.lease("a", 20, 10), LeaseDecision::Finished);
        assert_eq!(q.counts().failed, 1);
    }

    #[test]
    fn restart_releases_leases_and_survives_json() {
        let mut q = Queue::new(specs(2), false, 3);
        q.lease("a", 0, 10);
        q.mark_done(1, 1, 3);
        let mut back: Queue = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back, q);
        back.release_all_leases();
        assert_eq!(back.counts(), QueueCounts { total: 2, pending: 1, leased: 0, done: 1, failed: 0 });
    }
}
