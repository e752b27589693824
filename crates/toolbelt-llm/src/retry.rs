//! [`RetryConfig`]: when and how long to wait before retrying a failed request.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// How a client retries rate-limited (429), overloaded (5xx), timed-out and
/// unreachable requests.
///
/// Waits grow exponentially from [`initial_backoff`](Self::initial_backoff) up
/// to [`max_backoff`](Self::max_backoff), with jitter. When the provider sends
/// `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, that wait is
/// used instead; a requested wait longer than
/// [`max_retry_after`](Self::max_retry_after) is not waited out: the error is
/// returned at once so the caller can decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Wait before the first retry when the provider gives no `Retry-After`.
    pub initial_backoff: Duration,
    /// Longest computed wait between two attempts.
    pub max_backoff: Duration,
    /// Longest `Retry-After` the client is willing to wait out.
    pub max_retry_after: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryConfig {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// Sets the number of retries after the first attempt.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the first wait and the longest computed wait.
    #[must_use]
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Sets the longest `Retry-After` worth waiting for.
    #[must_use]
    pub fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// The wait before retry number `retry` (0-based) without a `Retry-After`:
    /// exponential, capped, with "equal jitter" (half fixed, half random).
    pub(crate) fn backoff(&self, retry: u32) -> Duration {
        toolbelt_core::Backoff::new(self.initial_backoff, self.max_backoff)
            .jittered(retry.saturating_add(1))
    }

    /// The wait before the next retry, or `None` when the provider asked for a
    /// wait longer than [`max_retry_after`](Self::max_retry_after).
    pub(crate) fn wait_for(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        match retry_after {
            Some(wait) if wait > self.max_retry_after => None,
            Some(wait) => Some(wait),
            None => Some(self.backoff(retry)),
        }
    }
}

/// The wait a response asks for: `retry-after-ms`, then `Retry-After` as
/// seconds or as an HTTP date (a date in the past means no wait).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return duration_from_secs(ms / 1000.0);
    }
    parse_retry_after(text("retry-after")?, SystemTime::now())
}

/// Parses a `Retry-After` value relative to `now`.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(secs) = value.parse::<f64>() {
        return duration_from_secs(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or_default())
}

fn duration_from_secs(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:40 GMT", now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_ms_header_wins() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "9".parse().unwrap());
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let cfg = RetryConfig::default()
            .with_backoff(Duration::from_millis(100), Duration::from_millis(800));
        for retry in 0..20 {
            let full = Duration::from_millis(100 * (1u64 << retry.min(3)));
            let wait = cfg.backoff(retry);
            assert!(wait >= full / 2 && wait <= full, "retry {retry}: {wait:?}");
        }
    }

    #[test]
    fn long_retry_after_is_not_waited_out() {
        let cfg = RetryConfig::default().with_max_retry_after(Duration::from_secs(5));
        assert_eq!(cfg.wait_for(0, Some(Duration::from_secs(6))), None);
        assert_eq!(
            cfg.wait_for(0, Some(Duration::from_secs(1))),
            Some(Duration::from_secs(1))
        );
    }
}
