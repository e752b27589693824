//! `/healthz`, `/readyz` and `/metrics`.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::metrics;
use crate::problem::{Problem, ProblemDocument};
use crate::state::AppState;

/// Liveness and readiness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// Tools in the live registry.
    pub tools: usize,
    /// This instance's id (fresh at each start-up; runs it holds are stored with it).
    pub instance: String,
}

/// The process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = Health)))]
pub(crate) async fn healthz(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
        tools: state.registry().len(),
        instance: state.runs().instance_id().to_owned(),
    })
}

/// The server can serve requests: registry loaded, database answering, not shutting down.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, body = Health), (status = 503, body = ProblemDocument)))]
pub(crate) async fn readyz(State(state): State<AppState>) -> Response {
    if state.shutdown().is_cancelled() {
        return Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down",
        )
        .into_response();
    }
    Json(Health {
        status: "ok".to_owned(),
        tools: state.registry().len(),
        instance: state.runs().instance_id().to_owned(),
    })
    .into_response()
}

/// Prometheus metrics in the text exposition format.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub(crate) async fn metrics_text() -> Response {
    match metrics::handle() {
        Some(handle) => (
            [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
            handle.render(),
        )
            .into_response(),
        None => Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "metrics_unavailable",
            "another metrics recorder was installed in this process",
        )
        .into_response(),
    }
}
