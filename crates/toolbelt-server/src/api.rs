//! The HTTP API: routes, the OpenAPI document and the docs page.

pub mod agents;
pub mod config;
mod error;
pub mod extract;
pub mod health;
pub mod import;
pub mod manage;
pub mod mcp_servers;
pub mod route;
pub mod routines;
pub mod runs;
pub mod schema;
pub mod skills;
pub mod stats;
pub mod tools;
pub mod whoami;

use axum::http::StatusCode;
use axum::middleware::{from_fn, from_fn_with_state};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{require_admin, require_read, require_run, require_whole_server};
use crate::problem::{Problem, ProblemDocument};
use crate::state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(title = "toolbelt", description = "Tools, routing, agents and runs over HTTP. Errors are RFC 9457 problem documents with a stable `code`."),
    modifiers(&BearerAuth),
    components(schemas(ProblemDocument, crate::problem::FieldError, crate::problem::InstanceRef, schema::RunEventSchema)),
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(components) = openapi.components.as_mut() {
            components.add_security_scheme(
                "bearer",
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
            );
        }
    }
}

/// The API routes with their auth layers, and the OpenAPI document describing them.
pub(crate) fn routes(state: &AppState) -> (axum::Router<AppState>, utoipa::openapi::OpenApi) {
    let read = OpenApiRouter::new()
        .routes(routes!(tools::list_tools))
        .routes(routes!(tools::get_tool))
        .routes(routes!(manage::get_stored))
        .routes(routes!(manage::versions))
        .routes(routes!(tools::list_groups))
        .routes(routes!(agents::list_agents))
        .routes(routes!(agents::get_agent))
        .routes(routes!(agents::agent_tools))
        .routes(routes!(agents::get_stored_agent))
        .routes(routes!(runs::list_runs))
        .routes(routes!(runs::get_run))
        .routes(routes!(runs::run_events))
        .routes(routes!(runs::list_approvals))
        .routes(routes!(runs::list_questions))
        .routes(routes!(routines::list_routines))
        .routes(routes!(routines::get_routine))
        .routes(routes!(whoami::whoami));
    // What belongs to the whole server rather than to agents: a token limited to agents gets
    // 403 `server_not_allowed` there (the layer added last runs first: the scope, then this).
    let read_server = OpenApiRouter::new()
        .routes(routes!(stats::stats))
        .routes(routes!(stats::list_stored_tools))
        .routes(routes!(mcp_servers::list_mcp_servers))
        .routes(routes!(mcp_servers::get_mcp_server))
        .routes(routes!(skills::list_skills))
        .routes(routes!(skills::get_skill));
    // `/metrics` names tools, agents and models: it needs a token unless configured open.
    let (read_server, open) = if state.config().metrics_public {
        (
            read_server,
            OpenApiRouter::new().routes(routes!(health::metrics_text)),
        )
    } else {
        (
            read_server.routes(routes!(health::metrics_text)),
            OpenApiRouter::new(),
        )
    };
    let read = read
        .merge(read_server.route_layer(from_fn(require_whole_server)))
        .route_layer(from_fn_with_state(state.clone(), require_read));
    let run = OpenApiRouter::new()
        .routes(routes!(tools::call_tool))
        .routes(routes!(route::route))
        .routes(routes!(runs::start_run))
        .routes(routes!(runs::continue_run))
        .routes(routes!(runs::cancel_run))
        .routes(routes!(runs::resolve_approval))
        .routes(routes!(runs::answer_question))
        .routes(routes!(routines::run_routine))
        .route_layer(from_fn_with_state(state.clone(), require_run));
    let admin_server = OpenApiRouter::new()
        .routes(routes!(config::get_config))
        .routes(routes!(agents::validate_agent))
        .routes(routes!(manage::create_tool))
        .routes(routes!(import::import_openapi))
        .routes(routes!(manage::update_tool, manage::delete))
        .routes(routes!(manage::rollback))
        .routes(routes!(manage::enable))
        .routes(routes!(manage::disable))
        .routes(routes!(skills::put_skill, skills::delete_skill))
        .routes(routes!(
            mcp_servers::put_mcp_server,
            mcp_servers::patch_mcp_server,
            mcp_servers::delete_mcp_server
        ))
        .route_layer(from_fn(require_whole_server));
    let admin = OpenApiRouter::new()
        .routes(routes!(agents::create_agent))
        .routes(routes!(agents::update_agent, agents::delete_agent))
        .routes(routes!(agents::bind_tool, agents::unbind_tool))
        .routes(routes!(routines::create_routine))
        .routes(routes!(routines::delete_routine))
        .routes(routes!(routines::pause_routine))
        .routes(routes!(routines::resume_routine))
        .merge(admin_server)
        .route_layer(from_fn_with_state(state.clone(), require_admin));
    let open = open
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz));
    let (router, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(read)
        .merge(run)
        .merge(admin)
        .merge(open)
        .split_for_parts();
    describe_responses(&mut doc);
    (router, doc)
}

/// Gives every response without a description its status's reason phrase (`Not Found`).
///
/// OpenAPI 3.1 requires a description on each response and utoipa leaves it out when the
/// annotation has none; generators refuse such documents (openapi-python-client drops them).
fn describe_responses(doc: &mut utoipa::openapi::OpenApi) {
    for item in doc.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.options,
            &mut item.head,
            &mut item.patch,
            &mut item.trace,
        ];
        for operation in operations.into_iter().flatten() {
            for (status, response) in &mut operation.responses.responses {
                if let utoipa::openapi::RefOr::T(response) = response
                    && response.description.is_empty()
                {
                    response.description = StatusCode::from_bytes(status.as_bytes())
                        .ok()
                        .and_then(|s| s.canonical_reason())
                        .unwrap_or("Response")
                        .to_owned();
                }
            }
        }
    }
}

/// Answer for paths that do not exist.
pub(crate) async fn not_found(uri: axum::http::Uri) -> Problem {
    Problem::not_found(
        "no_such_route",
        format!("no route `{}`; see /api/v1/openapi.json", uri.path()),
    )
}

/// Answer for a method a path does not take.
pub(crate) async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "`{}` does not take {method}; see /api/v1/openapi.json",
            uri.path()
        ),
    )
}

/// Serves the OpenAPI document, serialized once at start-up: the route holds its bytes (shared
/// by the copies axum makes of each route), not the document, which is megabytes of maps.
pub(crate) fn openapi_json(
    doc: &utoipa::openapi::OpenApi,
) -> axum::routing::MethodRouter<AppState> {
    match serde_json::to_vec(doc) {
        Ok(json) => {
            let body = axum::body::Bytes::from(json);
            axum::routing::get(move || {
                let body = body.clone();
                async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        body,
                    )
                }
            })
        }
        Err(e) => {
            let error = e.to_string();
            axum::routing::get(move || {
                let error = error.clone();
                async move { Problem::internal(format!("the OpenAPI document: {error}")) }
            })
        }
    }
}
