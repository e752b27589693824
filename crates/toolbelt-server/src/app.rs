//! [`app`] and [`serve`]: the layered router and the server loop with graceful shutdown.

use std::future::Future;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{ConnectInfo, DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder as ConnectionBuilder;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tower::{ServiceBuilder, ServiceExt as _};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::trace::TraceLayer;
use utoipa_swagger_ui::SwaggerUi;

use crate::guard::{self, Guard};
use crate::problem::Problem;
use crate::state::AppState;
use crate::{api, metrics, rate_limit};

/// The whole application: API, OpenAPI document, docs page, and every layer.
pub fn app(state: AppState) -> Router {
    let (api, doc) = api::routes(&state);
    let config = state.config().clone();
    let mut router = api
        .route("/api/v1/openapi.json", api::openapi_json(&doc))
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
    router = rate_limit::layer(router, &state);
    let state_for_mcp = state.clone();
    let mut router = router
        .layer(from_fn_with_state(state.clone(), record_http))
        .with_state(state)
        // The docs page reads the one served document; it keeps no copy of its own.
        .merge(
            SwaggerUi::new("/api/v1/docs")
                .config(utoipa_swagger_ui::Config::from("/api/v1/openapi.json")),
        );
    if config.console {
        router = router.merge(toolbelt_console::router());
    }
    if config.mcp {
        router = router.merge(crate::mcp::router(&state_for_mcp));
    }
    if !config.cors_origins.is_empty() {
        router = router.layer(cors(&config.cors_origins));
    }
    // Outside CORS, so that a preflight is answered only for an allowed host and every
    // request is checked before any route sees it.
    let router = router.layer(from_fn_with_state(
        Guard::from_config(&config),
        guard::check,
    ));
    router.layer(
        TraceLayer::new_for_http()
            .make_span_with(http_span)
            .on_response(|response: &Response, _: Duration, span: &tracing::Span| {
                span.record("http.response.status_code", response.status().as_u16());
            }),
    )
}

/// The CORS layer for `origins`; `*` allows any origin (without credentials: the API takes
/// tokens in a header, never cookies).
fn cors(origins: &[String]) -> CorsLayer {
    let allow = if origins.iter().any(|o| o.trim() == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| {
            let value = HeaderValue::from_str(o.trim().trim_end_matches('/')).ok();
            if value.is_none() {
                tracing::warn!(origin = %o, "cors_origins: not a valid origin; ignored");
            }
            value
        }))
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods(tower_http::cors::Any)
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ACCEPT,
            header::IF_MATCH,
            HeaderName::from_static(guard::REQUESTED_WITH),
        ])
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
/// and given 5 s to end. Connections that have not sent their request headers within
/// `header_read_timeout_secs` are closed.
///
/// # Errors
/// None so far: accept failures are logged and retried; the `Result` leaves room for
/// listener set-up errors.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    metrics::handle();
    let public_url = state.config().public_url.clone().or_else(|| {
        listener
            .local_addr()
            .ok()
            .map(|addr| format!("http://{addr}"))
    });
    if let Some(url) = public_url {
        state.runs().set_public_url(url);
    }
    let token = state.shutdown().clone();
    let runs = state.runs().clone();
    let run_log = state.run_log().cloned();
    let header_timeout = state.config().header_read_timeout_secs;
    let app = app(state);
    let signal = async move {
        shutdown.await;
        tracing::info!("shutting down: finishing requests in flight");
        token.cancel();
    };
    let header_timeout = (header_timeout > 0).then(|| Duration::from_secs(header_timeout));
    serve_router(listener, app, header_timeout, signal).await?;
    runs.cancel_all();
    let _ = tokio::time::timeout(Duration::from_secs(5), runs.wait_idle()).await;
    if let Some(log) = run_log {
        let _ = log.flush().await;
    }
    Ok(())
}

/// Serves `router` on `listener` (HTTP/1 and HTTP/2, each request carrying the peer's
/// [`ConnectInfo`]) until `shutdown` resolves, then waits for open connections to finish.
/// An HTTP/1 connection that has not sent a request's headers within `header_read_timeout`
/// is closed (`None`: no limit), which `axum::serve` cannot do.
///
/// # Errors
/// None so far: accept failures are logged and retried.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    header_read_timeout: Option<Duration>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut builder = ConnectionBuilder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let app = router.clone();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let mut req = req.map(Body::new);
            req.extensions_mut().insert(ConnectInfo(peer));
            app.clone().oneshot(req)
        });
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::trace!(%error, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
