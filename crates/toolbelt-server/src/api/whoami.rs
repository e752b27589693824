//! `GET /api/v1/whoami`: the token a request was made with (the console's cheap login check).

use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::problem::ProblemDocument;
use crate::scope::Scope;
use crate::tokens::Principal;

/// Who the request's token belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WhoAmI {
    /// The token's name (`dev` in development mode).
    pub name: String,
    /// Its scopes.
    pub scopes: Vec<Scope>,
    /// The agents it is limited to; absent when it reaches every agent and the whole server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
}

/// The name, scopes and agents of the token this request carries.
#[utoipa::path(get, path = "/api/v1/whoami", tag = "tokens",
    responses((status = 200, body = WhoAmI), (status = 401, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn whoami(Extension(principal): Extension<Principal>) -> Json<WhoAmI> {
    Json(WhoAmI {
        name: principal.name,
        scopes: principal.scopes,
        agents: principal
            .access
            .agents()
            .map(|a| a.iter().cloned().collect()),
    })
}
