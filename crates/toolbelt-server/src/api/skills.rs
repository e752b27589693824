//! `/api/v1/skills`: the skills stored in the database (Agent Skills format). Agents get them
//! on every run: a run whose request matches a skill adds its instructions (ADR 0047).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use toolbelt_store::{SkillChange, SkillSpec, Stored};
use utoipa::ToSchema;

use crate::api::extract::ApiJson;
use crate::problem::{ApiResult, Problem, ProblemDocument};
use crate::state::AppState;
use crate::tokens::Principal;

/// A stored skill as listed: what routing sees, without the instructions.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SkillSummary {
    /// Unique name (`lowercase-with-hyphens`).
    pub name: String,
    /// When to use it; the only text routed on.
    pub description: String,
    /// SHA-256 (hex) of its content.
    pub content_hash: String,
    /// Unix ms.
    pub updated_at_ms: i64,
}

/// A stored skill with its instructions.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SkillView {
    /// Unique name (`lowercase-with-hyphens`).
    pub name: String,
    /// When to use it; the only text routed on.
    pub description: String,
    /// The Markdown a run adds when the skill is chosen for it.
    pub instructions: String,
    /// The other front-matter keys of its `SKILL.md` (`license`, ...).
    pub metadata: BTreeMap<String, String>,
    /// Files that were beside `SKILL.md` when it was stored, relative to its folder.
    pub files: Vec<String>,
    /// SHA-256 (hex) of its content.
    pub content_hash: String,
    /// Unix ms.
    pub created_at_ms: i64,
    /// Unix ms.
    pub updated_at_ms: i64,
}

impl From<Stored<SkillSpec>> for SkillView {
    fn from(r: Stored<SkillSpec>) -> Self {
        let content_hash = r.content_hash();
        let (created_at_ms, updated_at_ms) = (r.created_at, r.updated_at);
        let spec = r.into_value();
        Self {
            name: spec.name,
            description: spec.description,
            instructions: spec.instructions,
            metadata: spec.metadata,
            files: spec.files,
            content_hash,
            created_at_ms,
            updated_at_ms,
        }
    }
}

fn store(state: &AppState) -> Result<&toolbelt_store::Store, Problem> {
    state
        .store()
        .ok_or_else(|| Problem::no_database("stored skills"))
}

/// Lists the stored skills, by name.
#[utoipa::path(get, path = "/api/v1/skills", tag = "skills",
    responses((status = 200, body = Vec<SkillSummary>), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn list_skills(
    State(state): State<AppState>,
) -> ApiResult<Json<Vec<SkillSummary>>> {
    let records = store(&state)?
        .skills()
        .list()
        .await
        .map_err(Problem::from)?;
    Ok(Json(
        records
            .into_iter()
            .map(|r| SkillSummary {
                content_hash: r.content_hash(),
                updated_at_ms: r.updated_at,
                name: r.value.name,
                description: r.value.description,
            })
            .collect(),
    ))
}

/// One stored skill with its instructions.
#[utoipa::path(get, path = "/api/v1/skills/{name}", tag = "skills",
    params(("name" = String, Path, description = "Skill name")),
    responses((status = 200, body = SkillView), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn get_skill(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<Json<SkillView>> {
    let record = store(&state)?
        .skills()
        .get(&name)
        .await
        .map_err(Problem::from)?;
    Ok(Json(record.into()))
}

/// Body of `PUT /skills/{name}`: what a `SKILL.md` holds (the name is the path's).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillBody {
    /// When to use it (1 to 1,024 characters); the only text routed on.
    pub description: String,
    /// The Markdown a run adds when the skill is chosen for it.
    pub instructions: String,
    /// Other front-matter keys (`license`, ...).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// Stores a skill: 201 when it is new, 200 when it replaced one or was already the same.
/// Runs started from now on get it.
#[utoipa::path(put, path = "/api/v1/skills/{name}", tag = "skills", request_body = SkillBody,
    params(("name" = String, Path, description = "Skill name: lowercase letters, digits and `-`, at most 64")),
    responses((status = 201, body = SkillView), (status = 200, body = SkillView),
        (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn put_skill(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<SkillBody>,
) -> ApiResult<(StatusCode, Json<SkillView>)> {
    let spec =
        SkillSpec::new(name, body.description, body.instructions).with_metadata(body.metadata);
    let (record, change) = store(&state)?
        .skills()
        .put(&spec, &who.name)
        .await
        .map_err(Problem::from)?;
    let status = if change == SkillChange::Created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(record.into())))
}

/// Deletes a stored skill; runs started from now on no longer get it.
#[utoipa::path(delete, path = "/api/v1/skills/{name}", tag = "skills",
    params(("name" = String, Path, description = "Skill name")),
    responses((status = 204), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn delete_skill(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    store(&state)?
        .skills()
        .delete(&name)
        .await
        .map_err(Problem::from)?;
    Ok(StatusCode::NO_CONTENT)
}
