//! CPU time used by this process (user + system, every thread) and by its ended child
//! processes, for counting what work costs: `getrusage`, microsecond resolution, monotone
//! within a process.

/// CPU seconds used by the process so far; NaN if the kernel does not say.
pub fn process_cpu_seconds() -> f64 {
    cpu_seconds(libc::RUSAGE_SELF)
}

/// CPU seconds used by the child processes that have ended and been waited for (e.g. USI
/// engines a match started and quit); NaN if the kernel does not say.
pub fn reaped_children_cpu_seconds() -> f64 {
    cpu_seconds(libc::RUSAGE_CHILDREN)
}

fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: `rusage` is plain integers, for which all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct behind the valid, exclusive pointer given.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return f64::NAN;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_shows_up_as_cpu_time() {
        let before = process_cpu_seconds();
        let started = std::time::Instant::now();
        let mut x = 0u64;
        // Spin until 0.3 CPU seconds are seen (a loaded machine gives this thread less than
        // its wall time), for at most 20 s: a counter that does not move fails.
        while process_cpu_seconds() - before < 0.3 && started.elapsed().as_secs() < 20 {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let used = process_cpu_seconds() - before;
        let wall = started.elapsed().as_secs_f64();
        assert!(used >= 0.3, "{used} CPU seconds in {wall} s");
        // Not more than every core for the whole time (the other test threads included).
        let cores = std::thread::available_parallelism().map_or(64, |n| n.get()) as f64;
        assert!(used <= (wall + 0.1) * cores, "{used} CPU seconds in {wall} s");
    }

    #[test]
    fn an_ended_childs_cpu_time_is_counted_once_reaped() {
        let before = reaped_children_cpu_seconds();
        // A child that spins for about 0.2 s of wall time, then is waited for.
        let status = std::process::Command::new("sh")
            .args(["-c", "end=$(($(date +%s%N) + 200000000)); while [ $(date +%s%N) -lt $end ]; do :; done"])
            .status()
            .unwrap();
        assert!(status.success());
        let used = reaped_children_cpu_seconds() - before;
        assert!(used > 0.0, "{used}");
    }
}
