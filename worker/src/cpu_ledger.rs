//! Which shard pays for the worker's CPU time outside its shard jobs.
//!
//! A shard job measures the process's CPU time while it runs. Between jobs the worker also
//! pulls weights (decoding and applying every changed entry, which grows with how many
//! entries each merge touches), asks for leases and serialises pushes. That time belongs to
//! training: the next training shard reports it with its own, so the run's `cpu_hours`
//! counts everything the worker spent. A match shard reports only its own time, and the
//! overhead waits for the next training shard.

#[derive(Clone, Debug)]
pub struct CpuLedger {
    /// Process CPU seconds when the last job ended (or the worker started).
    mark: f64,
    /// CPU seconds spent outside jobs and not yet charged to a training shard.
    pending: f64,
}

impl CpuLedger {
    pub fn new(now: f64) -> CpuLedger {
        CpuLedger { mark: now, pending: 0.0 }
    }

    /// A job starts: the time since the last one ended is overhead.
    pub fn job_starts(&mut self, now: f64) {
        self.pending += (now - self.mark).max(0.0);
    }

    /// A job ended; `training` says whether it was a training shard. Returns the overhead
    /// that shard adds to its own CPU time (0 for a match shard, whose overhead waits).
    pub fn job_ends(&mut self, now: f64, training: bool) -> f64 {
        self.mark = now;
        if training { std::mem::take(&mut self.pending) } else { 0.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_goes_to_the_next_training_shard_and_skips_matches() {
        let mut l = CpuLedger::new(10.0);
        // 2 s of weight sync, a 30 s training job: it reports the 2 s.
        l.job_starts(12.0);
        assert_eq!(l.job_ends(42.0, true), 2.0);
        // 1 s of push and sync, then a match job (its own 20 s are measured by the job).
        l.job_starts(43.0);
        assert_eq!(l.job_ends(63.0, false), 0.0);
        // 0.5 s more, then a training job: it carries both gaps, never the match's 20 s.
        l.job_starts(63.5);
        assert_eq!(l.job_ends(90.0, true), 1.5);
        // Nothing is counted twice.
        l.job_starts(90.0);
        assert_eq!(l.job_ends(95.0, true), 0.0);
    }

    #[test]
    fn a_clock_that_goes_back_adds_nothing() {
        let mut l = CpuLedger::new(10.0);
        l.job_starts(9.0);
        assert_eq!(l.job_ends(20.0, true), 0.0);
    }
}
