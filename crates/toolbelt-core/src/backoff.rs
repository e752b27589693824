//! [`Backoff`]: how long to wait before the next try, growing exponentially up to a cap. The
//! executor's retries ([`RetryPolicy`](crate::RetryPolicy)), the LLM clients' retries and the
//! MCP client's reconnections all wait by it.

use std::time::{Duration, SystemTime};

/// Exponential waits: `initial`, then times `multiplier` after each failure, never over
/// `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backoff {
    /// First wait.
    pub initial: Duration,
    /// Longest wait.
    pub max: Duration,
    /// Factor applied to the wait after each failure (at least 1; default 2).
    pub multiplier: u32,
}

impl Backoff {
    /// Waits from `initial`, doubling, up to `max`.
    pub const fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            multiplier: 2,
        }
    }

    /// Sets the factor applied after each failure.
    #[must_use]
    pub const fn with_multiplier(mut self, multiplier: u32) -> Self {
        self.multiplier = multiplier;
        self
    }

    /// The wait after `failures` consecutive failures (1-based: the first failure waits
    /// `initial`), capped by `max`.
    pub fn delay(&self, failures: u32) -> Duration {
        let factor = self
            .multiplier
            .max(1)
            .saturating_pow(failures.saturating_sub(1));
        self.initial.saturating_mul(factor).min(self.max)
    }

    /// [`Backoff::delay`] with "equal jitter": half of it fixed, half random, so clients that
    /// failed together do not retry together.
    pub fn jittered(&self, failures: u32) -> Duration {
        let full = self.delay(failures);
        let half = full / 2;
        half + half.mul_f64(jitter_fraction())
    }
}

/// A number in `[0, 1)` that differs between calls; good enough for jitter.
fn jitter_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_by_the_multiplier_up_to_the_cap() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
        let delays: Vec<u128> = (1..=5).map(|n| b.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 500, 500]);
        let tripling = b.with_multiplier(3);
        assert_eq!(tripling.delay(2), Duration::from_millis(300));
        assert_eq!(b.delay(u32::MAX), Duration::from_millis(500));
    }

    #[test]
    fn jittered_waits_stay_within_half_and_all_of_the_wait() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_millis(800));
        for n in 1..20 {
            let full = b.delay(n);
            let wait = b.jittered(n);
            assert!(wait >= full / 2 && wait <= full, "failure {n}: {wait:?}");
        }
    }
}
