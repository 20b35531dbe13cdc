//! Evaluation noise for random consultation (research.md §3): player i adds Gaussian
//! noise N(0, σ²) to every evaluated position, fixed per position by hashing the
//! position's key with the player's seed, so the same position always gets the same noise
//! for that player and its search stays consistent (transpositions, re-searches).

use crate::rng::mix64;

/// Noise of standard deviation `sigma` (eval units) drawn from `seed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvalNoise {
    pub sigma: i32,
    pub seed: u64,
}

impl EvalNoise {
    /// The noise of the position with hash key `key`: a Box–Muller normal deviate from two
    /// uniforms of the hashed (key, seed), rounded to eval units.
    #[inline]
    pub fn at(&self, key: u64) -> i32 {
        if self.sigma == 0 {
            return 0;
        }
        let h1 = mix64(key ^ self.seed.rotate_left(17));
        let h2 = mix64(h1 ^ 0x6a09_e667_f3bc_c909);
        // u1 in (0, 1] so that ln(u1) is finite; u2 in [0, 1).
        let u1 = ((h1 >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let u2 = (h2 >> 11) as f64 / (1u64 << 53) as f64;
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (z * self.sigma as f64).round() as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixed per (position, player), different across players, and normal with the
    /// requested spread.
    #[test]
    fn noise_is_deterministic_and_has_the_requested_spread() {
        let a = EvalNoise { sigma: 175, seed: 1 };
        let b = EvalNoise { sigma: 175, seed: 2 };
        let n = 200_000u64;
        let (mut sum, mut sq, mut same, mut within) = (0f64, 0f64, 0u64, 0u64);
        for i in 0..n {
            let key = mix64(i);
            let x = a.at(key);
            assert_eq!(x, a.at(key));
            same += (x == b.at(key)) as u64;
            within += (x.abs() <= 175) as u64;
            sum += x as f64;
            sq += (x as f64) * (x as f64);
        }
        let mean = sum / n as f64;
        let sd = (sq / n as f64 - mean * mean).sqrt();
        assert!(mean.abs() < 2.0, "mean {mean}");
        assert!((sd - 175.0).abs() < 2.0, "sd {sd}");
        // About 68.3% of a normal lies within one standard deviation.
        let frac = within as f64 / n as f64;
        assert!((frac - 0.683).abs() < 0.01, "{frac}");
        assert!(same < n / 100, "players share noise: {same}");
        assert_eq!(EvalNoise { sigma: 0, seed: 5 }.at(12345), 0);
    }
}
