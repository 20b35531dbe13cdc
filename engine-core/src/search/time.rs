//! When to stop thinking. `Limits::time` is the hard limit: the search stops there,
//! whatever it is doing. `Limits::soft_time` is the time a move should take on average;
//! after each iteration the search stops once the time used passes the soft limit scaled
//! by how settled the search looks (the scale is larger while the best move keeps
//! changing or the score is falling). When the soft limit equals the hard one (byoyomi:
//! unused time is lost) the search simply uses all of it.

use super::limits::Limits;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub struct TimeManager {
    start: Instant,
    hard: Option<Duration>,
    soft: Option<Duration>,
    free: Duration,
}

impl TimeManager {
    pub fn new(start: Instant, limits: Limits) -> TimeManager {
        let soft = match (limits.soft_time, limits.time) {
            (Some(s), Some(h)) => Some(s.min(h)),
            (s, _) => s,
        };
        let free = limits.free_time.unwrap_or_default();
        let free = limits.time.map_or(free, |h| free.min(h));
        TimeManager { start, hard: limits.time, soft, free }
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    #[inline]
    pub fn hard_limit_reached(&self) -> bool {
        self.hard.is_some_and(|h| self.start.elapsed() >= h)
    }

    /// After an iteration: stop if the time used passed the soft limit times `scale`
    /// (never beyond the hard limit). With no room between the limits, only the hard
    /// limit counts.
    pub fn iteration_should_stop(&self, scale: f64) -> bool {
        self.should_stop_at(self.start.elapsed(), scale)
    }

    fn should_stop_at(&self, elapsed: Duration, scale: f64) -> bool {
        if elapsed < self.free {
            return false;
        }
        match (self.soft, self.hard) {
            (Some(s), Some(h)) if s >= h => elapsed >= h,
            (Some(s), hard) => {
                let target = s.mul_f64(scale.clamp(0.1, 10.0));
                let target = hard.map_or(target, |h| target.min(h));
                elapsed >= target
            }
            (None, Some(h)) => elapsed >= h,
            (None, None) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tm(soft: Option<u64>, hard: Option<u64>) -> TimeManager {
        let limits = Limits {
            soft_time: soft.map(Duration::from_millis),
            time: hard.map(Duration::from_millis),
            ..Limits::default()
        };
        TimeManager::new(Instant::now(), limits)
    }

    #[test]
    fn soft_limit_scales_and_hard_limit_caps() {
        let ms = Duration::from_millis;
        let t = tm(Some(1000), Some(4000));
        assert!(!t.should_stop_at(ms(900), 1.0));
        assert!(t.should_stop_at(ms(1000), 1.0));
        // An unstable search gets more time ...
        assert!(!t.should_stop_at(ms(2500), 3.0));
        assert!(t.should_stop_at(ms(3000), 3.0));
        // ... but never past the hard limit.
        assert!(t.should_stop_at(ms(4000), 9.0));
        // A settled one stops early.
        assert!(t.should_stop_at(ms(500), 0.5));
        // Byoyomi (soft = hard): all of it, whatever the scale.
        let b = tm(Some(2000), Some(2000));
        assert!(!b.should_stop_at(ms(1500), 0.5));
        assert!(b.should_stop_at(ms(2000), 0.5));
        // No clock: never.
        assert!(!tm(None, None).should_stop_at(ms(1_000_000), 1.0));
        // Main time left plus byoyomi: a settled search still uses the byoyomi.
        let mut with_free = tm(Some(3000), Some(9000));
        with_free.free = ms(1500);
        assert!(!with_free.should_stop_at(ms(1400), 0.2));
        assert!(with_free.should_stop_at(ms(1500), 0.2));
    }
}
