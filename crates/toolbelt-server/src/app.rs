//! [`app`] and [`serve`]: the layered router and the server loop with graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Router;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{ConnectInfo, DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::KeyExtractor;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::TraceLayer;
use utoipa_swagger_ui::SwaggerUi;

use crate::api;
use crate::auth::hash_token;
use crate::metrics;
use crate::problem::Problem;
use crate::state::AppState;

/// Rate-limit key: the token's hash, or the client address without a token.
#[derive(Debug, Clone, Copy)]
struct TokenKey;

impl KeyExtractor for TokenKey {
    type Key = String;

    fn extract<T>(
        &self,
        req: &axum::http::Request<T>,
    ) -> Result<Self::Key, tower_governor::GovernorError> {
        if let Some(auth) = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        {
            return Ok(format!("t:{}", hash_token(auth)));
        }
        let peer = req
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip().to_string())
            .unwrap_or_default();
        Ok(format!("ip:{peer}"))
    }
}

/// The whole application: API, OpenAPI document, docs page, and every layer.
pub fn app(state: AppState) -> Router {
    let (api, doc) = api::routes(&state);
    let config = state.config.clone();
    let mut router = api
        .route("/api/v1/openapi.json", api::openapi_json(doc.clone()))
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(DefaultBodyLimit::max(config.body_limit_bytes))
        .layer(
            ServiceBuilder::new()
                .layer(HandleErrorLayer::new(|_: tower::BoxError| async {
                    Problem::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "request_timeout",
                        "the request took longer than the server allows (request_timeout_secs)",
                    )
                }))
                .timeout(Duration::from_secs(config.request_timeout_secs.max(1))),
        );
    if let Some(period_ns) = 1_000_000_000_u64.checked_div(config.rate_limit_per_second) {
        let period_ns = period_ns.max(1);
        if let Some(governor) = GovernorConfigBuilder::default()
            .per_nanosecond(period_ns)
            .burst_size(config.rate_limit_burst.max(1))
            .key_extractor(TokenKey)
            .finish()
        {
            router = router.layer(GovernorLayer::new(governor).error_handler(|e| {
                let wait = match &e {
                    tower_governor::GovernorError::TooManyRequests { wait_time, .. } => *wait_time,
                    _ => 1,
                };
                let mut response = Problem::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!("too many requests for this token; retry in {wait} s"),
                )
                .into_response();
                if let Ok(v) = HeaderValue::from_str(&wait.to_string()) {
                    response.headers_mut().insert(header::RETRY_AFTER, v);
                }
                response
            }));
        }
    }
    let state_for_mcp = state.clone();
    let mut router = router
        .layer(from_fn_with_state(state.clone(), record_http))
        .with_state(state)
        .merge(SwaggerUi::new("/api/v1/docs").url("/api/v1/docs/openapi.json", doc));
    if config.console {
        router = router.merge(toolbelt_console::router());
    }
    if config.mcp {
        router = router.merge(crate::mcp::router(&state_for_mcp));
    }
    if !config.cors_origins.is_empty() {
        let origins: Vec<HeaderValue> = config
            .cors_origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        router = router.layer(
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(origins))
                .allow_methods(tower_http::cors::Any)
                .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE, header::ACCEPT]),
        );
    }
    router.layer(
        TraceLayer::new_for_http()
            .make_span_with(http_span)
            .on_response(|response: &Response, _: Duration, span: &tracing::Span| {
                span.record("http.response.status_code", response.status().as_u16());
            }),
    )
}

/// One span per request, named like OpenTelemetry's HTTP server spans (`POST /api/v1/tools/{name}/call`).
///
/// At DEBUG under the target `toolbelt_server::http`, so the default `info` log filter does
/// not pay for it; the OpenTelemetry export (feature `otel` of the `toolbelt` crate) enables it.
fn http_span(req: &Request) -> tracing::Span {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str);
    let method = req.method().as_str();
    tracing::debug_span!(
        target: "toolbelt_server::http",
        "http_request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        url.path = req.uri().path(),
        http.response.status_code = tracing::field::Empty,
    )
}

async fn record_http(State(_): State<AppState>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = req.method().as_str().to_owned();
    let started = Instant::now();
    let response = next.run(req).await;
    metrics::record_http(
        &method,
        &route,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// Serves `state` on `listener` until `shutdown` resolves, then stops gracefully:
/// SSE streams get a `shutdown` event, requests in flight finish, runs are cancelled
/// and given 5 s to end.
///
/// # Errors
/// The listener's I/O error.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    metrics::handle();
    let public_url = state.config.public_url.clone().or_else(|| {
        listener
            .local_addr()
            .ok()
            .map(|addr| format!("http://{addr}"))
    });
    if let Some(url) = public_url {
        state.runs.set_public_url(url);
    }
    let token = state.shutdown.clone();
    let runs = state.runs.clone();
    let run_log = state.run_log.clone();
    let app = app(state);
    let signal = async move {
        shutdown.await;
        tracing::info!("shutting down: finishing requests in flight");
        token.cancel();
    };
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(signal)
    .await?;
    runs.cancel_all();
    let _ = tokio::time::timeout(Duration::from_secs(5), runs.wait_idle()).await;
    if let Some(log) = run_log {
        let _ = log.flush().await;
    }
    Ok(())
}
