//! The middleware that checks a request's bearer token (known to the
//! [`TokenBook`](crate::tokens::TokenBook)) against the [`Scope`] its route needs, and keeps a
//! token limited to agents off other agents' routes.

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::problem::Problem;
use crate::scope::Scope;
use crate::state::AppState;
use crate::tokens::Principal;

async fn require(state: &AppState, needed: Scope, mut req: Request, next: Next) -> Response {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let principal = match state.tokens().authenticate(header).await {
        Ok(p) => p,
        Err(problem) => {
            let mut response = problem.into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
    };
    if !principal.grants(needed) {
        let held: Vec<&str> = principal.scopes.iter().map(|s| s.as_str()).collect();
        return Problem::new(
            StatusCode::FORBIDDEN,
            "missing_scope",
            format!(
                "this needs the `{}` scope; the token `{}` has: {}",
                needed.as_str(),
                principal.name,
                held.join(", ")
            ),
        )
        .into_response();
    }
    // A token limited to agents reaches an agent's routes (`/api/v1/agents/{id}/…`,
    // `/mcp/{agent}`) only for its agents, checked before anything reads the request.
    if !principal.access.is_all() {
        let path = req
            .extensions()
            .get::<axum::extract::OriginalUri>()
            .map_or_else(|| req.uri().path().to_owned(), |u| u.path().to_owned());
        if let Some(agent) = agent_in_path(&path)
            && let Err(e) = principal.access.check(&agent)
        {
            return crate::agents::host_problem(e).into_response();
        }
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// The agent a path acts on: `{id}` of `/api/v1/agents/{id}[/…]` (not `/api/v1/agents/validate`)
/// and `{agent}` of `/mcp/{agent}[/…]`, percent-decoded (an undecodable one is returned as
/// written, which no access list names).
fn agent_in_path(path: &str) -> Option<String> {
    let rest = path
        .strip_prefix("/api/v1/agents/")
        .or_else(|| path.strip_prefix("/mcp/"))?;
    let segment = rest.split('/').next().unwrap_or_default();
    if segment.is_empty() || (path.starts_with("/api/") && rest == "validate") {
        return None;
    }
    Some(
        percent_encoding::percent_decode_str(segment)
            .decode_utf8()
            .map_or_else(|_| segment.to_owned(), |s| s.into_owned()),
    )
}

/// Middleware: the request acts on the whole server (tools, MCP servers, skills, settings,
/// statistics), which a token limited to agents may not do. Layered after a scope check.
pub(crate) async fn require_whole_server(req: Request, next: Next) -> Response {
    if let Some(who) = req.extensions().get::<Principal>()
        && let Err(e) = who.access.check_server()
    {
        return crate::agents::host_problem(e).into_response();
    }
    next.run(req).await
}

/// Middleware: the request needs `read`.
pub(crate) async fn require_read(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    require(&state, Scope::Read, req, next).await
}

/// Middleware: the request needs `run`.
pub(crate) async fn require_run(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    require(&state, Scope::Run, req, next).await
}

/// Middleware: the request needs `admin`.
pub(crate) async fn require_admin(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    require(&state, Scope::Admin, req, next).await
}

#[cfg(test)]
mod tests {
    use super::agent_in_path;

    #[test]
    fn the_agent_of_a_path_is_found_decoded_and_validate_is_no_agent() {
        let of = |p: &str| agent_in_path(p);
        assert_eq!(of("/api/v1/agents/writer").as_deref(), Some("writer"));
        assert_eq!(of("/api/v1/agents/writer/runs").as_deref(), Some("writer"));
        assert_eq!(
            of("/api/v1/agents/wr%69ter/tools/x").as_deref(),
            Some("writer")
        );
        assert_eq!(of("/mcp/writer/routed").as_deref(), Some("writer"));
        assert_eq!(of("/api/v1/agents/validate"), None);
        assert_eq!(
            of("/api/v1/agents/validate/runs").as_deref(),
            Some("validate")
        );
        assert_eq!(of("/api/v1/agents"), None);
        assert_eq!(of("/api/v1/runs/x"), None);
    }
}
