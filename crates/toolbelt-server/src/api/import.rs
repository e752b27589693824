//! `POST /api/v1/tools/import/openapi`: an OpenAPI document's operations as stored HTTP tools.

use axum::Json;
use axum::extract::{Extension, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_openapi::{ImportError, ImportOptions, ImportReport, apply, convert};
use utoipa::ToSchema;

use crate::api::extract::ApiJson;
use crate::problem::{ApiResult, Problem, ProblemDocument};
use crate::state::AppState;
use crate::tokens::Principal;

/// Body of `POST /tools/import/openapi`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportBody {
    /// The OpenAPI 3.0 or 3.1 document: a JSON object, or its JSON or YAML text. The server
    /// fetches no URL; the body limit (`body_limit_bytes`) bounds its size.
    #[schema(value_type = Object)]
    pub document: Value,
    /// Put before every tool name and, upper-cased, before every secret name.
    #[serde(default)]
    pub prefix: String,
    /// Only operations with one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only these operations (`operationId`, `METHOD /path` or tool name).
    #[serde(default)]
    pub operations: Vec<String>,
    /// Where requests go, instead of the document's `servers`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Where the document was read from: relative server URLs are taken relative to it
    /// (nothing is fetched from it).
    #[serde(default)]
    pub source_url: Option<String>,
    /// Report what would change, writing nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// An operation not imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkippedOperation {
    /// `METHOD /path`.
    pub operation: String,
    /// JSON pointer into the document (empty when the cause is not the document).
    pub pointer: String,
    /// Why.
    pub reason: String,
}

/// A tool given a new version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpdatedTool {
    /// The tool.
    pub name: String,
    /// Its new version.
    pub version: i64,
    /// The fields that changed (`description`, `parameters`, `http.url`, ...).
    pub changed: Vec<String>,
}

/// What the import did (or would do, for a dry run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ImportResponse {
    /// Tools created.
    pub created: Vec<String>,
    /// Tools whose operation changed.
    pub updated: Vec<UpdatedTool>,
    /// Tools already as the document describes them.
    pub unchanged: Vec<String>,
    /// Operations not imported.
    pub skipped: Vec<SkippedOperation>,
    /// Secrets the tools send (declare each as `TOOLBELT_SECRET_<NAME>`).
    pub secrets: Vec<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

impl From<ImportReport> for ImportResponse {
    fn from(r: ImportReport) -> Self {
        Self {
            created: r.created,
            updated: r
                .updated
                .into_iter()
                .map(|u| UpdatedTool {
                    name: u.name,
                    version: u.version,
                    changed: u.changed,
                })
                .collect(),
            unchanged: r.unchanged,
            skipped: r
                .skipped
                .into_iter()
                .map(|s| SkippedOperation {
                    operation: s.operation,
                    pointer: s.pointer,
                    reason: s.reason,
                })
                .collect(),
            secrets: r.secrets,
            dry_run: r.dry_run,
        }
    }
}

/// A document error points into `/document`, an option error at the option.
fn import_problem(error: ImportError) -> Problem {
    let problem = match &error {
        ImportError::Document { pointer, reason } => {
            Problem::invalid_field(format!("/document{pointer}"), reason.clone())
        }
        ImportError::Option { option, reason } => {
            Problem::invalid_field(format!("/{option}"), reason.clone())
        }
        other => Problem::invalid_field("", other.to_string()),
    };
    problem.with_code("invalid_openapi")
}

/// Imports an OpenAPI document's operations as HTTP tools: new tools, new versions of the
/// changed ones, the rest untouched. A document that cannot be imported is 422 with the JSON
/// pointer (under `/document`); operations that cannot be tools are listed as skipped.
#[utoipa::path(post, path = "/api/v1/tools/import/openapi", tag = "tools", request_body = ImportBody,
    responses((status = 200, body = ImportResponse), (status = 422, body = ProblemDocument), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn import_openapi(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiJson(body): ApiJson<ImportBody>,
) -> ApiResult<Json<ImportResponse>> {
    let live = state
        .live()
        .ok_or_else(|| Problem::no_database("imported tools"))?;
    let text = match body.document {
        Value::String(text) => text,
        other => other.to_string(),
    };
    let mut options = ImportOptions::default()
        .with_prefix(body.prefix)
        .with_tags(body.tags)
        .with_operations(body.operations);
    if let Some(url) = body.base_url {
        options = options.with_base_url(url);
    }
    if let Some(url) = body.source_url {
        options = options.with_source_url(url);
    }
    // A large document takes a few hundred milliseconds to convert: off the async workers.
    let imported = tokio::task::spawn_blocking(move || convert(&text, &options))
        .await
        .map_err(Problem::internal)?
        .map_err(import_problem)?;
    let report = apply(live.store(), &imported, &who.name, body.dry_run)
        .await
        .map_err(Problem::from)?;
    if !report.dry_run
        && let Err(e) = live.reconcile().await
    {
        tracing::error!(error = %e, "could not refresh the live registry after an import");
    }
    Ok(Json(report.into()))
}
