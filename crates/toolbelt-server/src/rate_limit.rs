//! The rate limiter's key ([`RateKey`]) and the layer that applies `rate_limit_per_second`.
//!
//! A request with a known token spends that token's budget; any other request (no token, a
//! malformed one, an unknown or revoked one) spends the budget of the address it came from.
//! So made-up tokens do not buy fresh budgets, one token written several ways is one token,
//! and the limiter holds at most one entry per known token and per client address, pruned
//! of the idle ones every minute.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::KeyExtractor;

use crate::problem::Problem;
use crate::state::AppState;
use crate::tokens::TokenBook;

/// How often idle entries leave the limiter.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Whose budget a request spends.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RateKey {
    /// A known token, by its hash.
    Token(String),
    /// A client address (IPv6 by its /64: one host usually holds the whole prefix).
    Peer(IpAddr),
    /// No client address known (the router served without connection info).
    Unknown,
}

#[derive(Debug, Clone)]
struct Extractor {
    tokens: TokenBook,
}

impl KeyExtractor for Extractor {
    type Key = RateKey;

    fn extract<T>(
        &self,
        req: &axum::http::Request<T>,
    ) -> Result<Self::Key, tower_governor::GovernorError> {
        Ok(key_of(&self.tokens, req))
    }
}

/// The key of `req`: its known token, else its peer address.
pub(crate) fn key_of<T>(tokens: &TokenBook, req: &axum::http::Request<T>) -> RateKey {
    if let Some(hash) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| tokens.known_hash(v))
    {
        return RateKey::Token(hash);
    }
    match req.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(addr)) => RateKey::Peer(match addr.ip() {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let bits = u128::from(v6) & !((1_u128 << 64) - 1);
                    IpAddr::V6(bits.into())
                }
            },
            v4 @ IpAddr::V4(_) => v4,
        }),
        None => RateKey::Unknown,
    }
}

/// Wraps `router` in the limiter when `rate_limit_per_second` is above zero.
pub(crate) fn layer(router: Router<AppState>, state: &AppState) -> Router<AppState> {
    let config = state.config();
    let Some(period_ns) = 1_000_000_000_u64.checked_div(config.rate_limit_per_second) else {
        return router;
    };
    let Some(governor) = GovernorConfigBuilder::default()
        .per_nanosecond(period_ns.max(1))
        .burst_size(config.rate_limit_burst.max(1))
        .key_extractor(Extractor {
            tokens: state.tokens().clone(),
        })
        .finish()
    else {
        return router;
    };
    prune(Arc::downgrade(governor.limiter()), |limiter| {
        limiter.retain_recent();
        limiter.shrink_to_fit();
    });
    router.layer(GovernorLayer::new(governor).error_handler(|e| {
        let wait = match &e {
            tower_governor::GovernorError::TooManyRequests { wait_time, .. } => *wait_time,
            _ => 1,
        };
        let mut response = Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many requests for this token or client address; retry in {wait} s"),
        )
        .into_response();
        if let Ok(v) = HeaderValue::from_str(&wait.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }))
}

/// Drops the entries of clients idle long enough to have their whole budget back, every
/// minute, until the router holding the limiter is dropped.
fn prune<L: Send + Sync + 'static>(
    limiter: std::sync::Weak<L>,
    shrink: impl Fn(&L) + Send + 'static,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("the rate limiter is not pruned: no Tokio runtime");
        return;
    };
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(PRUNE_EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(limiter) = limiter.upgrade() else {
                break;
            };
            shrink(&limiter);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::config::ConfigToken;
    use crate::scope::Scope;

    fn request(auth: Option<&str>, peer: &str) -> axum::http::Request<()> {
        let mut req = axum::http::Request::new(());
        if let Some(auth) = auth {
            req.headers_mut()
                .insert(header::AUTHORIZATION, auth.parse().unwrap());
        }
        let peer: SocketAddr = peer.parse().unwrap();
        req.extensions_mut().insert(ConnectInfo(peer));
        req
    }

    #[test]
    fn keys_stay_one_per_known_token_and_per_address() {
        let book = TokenBook::from_config(&[ConfigToken {
            name: "ci".to_owned(),
            sha256: None,
            token: Some("tb_known".to_owned()),
            scopes: vec![Scope::Read],
            agents: None,
        }])
        .unwrap();
        let mut keys = HashSet::new();
        for i in 0..10_000 {
            let bad = format!("Bearer tb_guess_{i}");
            keys.insert(key_of(&book, &request(Some(&bad), "10.0.0.7:40000")));
            keys.insert(key_of(&book, &request(None, "10.0.0.7:40001")));
        }
        for spelling in ["Bearer tb_known", "bearer  tb_known ", "BEARER\ttb_known"] {
            keys.insert(key_of(&book, &request(Some(spelling), "10.0.0.8:1")));
        }
        // Addresses of one IPv6 /64 are one client.
        keys.insert(key_of(&book, &request(None, "[2001:db8::1]:1")));
        keys.insert(key_of(&book, &request(None, "[2001:db8::ffff:2]:1")));
        assert_eq!(keys.len(), 3, "{keys:?}");
    }

    /// The limiter's idle entries are dropped every [`PRUNE_EVERY`] while the limiter lives,
    /// and the pruning task ends with it.
    #[tokio::test(start_paused = true)]
    async fn the_limiter_is_pruned_every_minute_until_it_is_dropped() {
        let limiter = Arc::new(AtomicUsize::new(0));
        prune(Arc::downgrade(&limiter), |count: &AtomicUsize| {
            count.fetch_add(1, Ordering::SeqCst);
        });
        tokio::time::sleep(PRUNE_EVERY * 3 + Duration::from_millis(10)).await;
        assert_eq!(limiter.load(Ordering::SeqCst), 3);
        let weak = Arc::downgrade(&limiter);
        drop(limiter);
        tokio::time::sleep(PRUNE_EVERY * 2).await;
        assert!(
            weak.upgrade().is_none(),
            "the pruning task keeps no strong reference"
        );
    }
}
