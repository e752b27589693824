//! [`apply`]: imported tools written to the store, each as a new tool, a new version, or
//! nothing when it did not change.

use serde::Serialize;
use serde_json::Value;
use toolbelt_store::Revision;
use toolbelt_store::{Store, StoreError, ToolDef, ToolEntry, ToolSource};

use crate::convert::{Imported, Skipped};

/// A tool that got a new version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Updated {
    /// The tool.
    pub name: String,
    /// Its new version (the one it would get, for a dry run).
    pub version: i64,
    /// What changed: `description`, `parameters`, `tags`, `policy`, `metadata`, `http.url`,
    /// `http.method`, `http.query`, `http.headers`, `http.body`, ...
    pub changed: Vec<String>,
}

/// What an import did (or, for a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImportReport {
    /// Tools created at version 1.
    pub created: Vec<String>,
    /// Tools whose operation changed.
    pub updated: Vec<Updated>,
    /// Tools stored as the document describes them already.
    pub unchanged: Vec<String>,
    /// Operations not imported, and why.
    pub skipped: Vec<Skipped>,
    /// The secrets the tools' headers name (declare each as `TOOLBELT_SECRET_<NAME>`).
    pub secrets: Vec<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

/// Writes `imported` to `store`: a new tool for a name not stored, a new version for a stored
/// declarative tool whose spec or definition differ, nothing for an equal one. A name taken
/// by a tool of another source (compiled, MCP, agent), or a tool the store refuses, is
/// reported as skipped; the other tools are still written.
///
/// # Errors
/// [`StoreError`] when the store cannot be read or written (not for a refused tool).
pub async fn apply(
    store: &Store,
    imported: &Imported,
    changed_by: &str,
    dry_run: bool,
) -> Result<ImportReport, StoreError> {
    let mut report = ImportReport {
        skipped: imported.skipped.clone(),
        secrets: imported.secrets.clone(),
        dry_run,
        ..ImportReport::default()
    };
    let note = format!(
        "imported from OpenAPI: {} {}",
        imported.title, imported.version
    );
    for tool in &imported.tools {
        let name = tool.spec.name.as_str().to_owned();
        let def = ToolDef::new(tool.spec.clone(), ToolSource::Declarative)
            .with_definition(tool.definition.clone());
        let refused = |e: StoreError| Skipped {
            operation: tool.operation.clone(),
            pointer: tool.pointer.clone(),
            reason: format!("the store refused `{name}`: {e}"),
        };
        let stored = match store.tools().get(&name).await {
            Ok(record) => Some(record),
            Err(StoreError::NotFound { .. }) => None,
            Err(e) => return Err(e),
        };
        match stored {
            None => {
                if !dry_run
                    && let Err(e) = store.tools().create(&def, changed_by, Some(&note)).await
                {
                    report.skipped.push(refused_or(e, refused)?);
                    continue;
                }
                report.created.push(name);
            }
            Some(record) if record.source != ToolSource::Declarative => {
                report.skipped.push(Skipped {
                    operation: tool.operation.clone(),
                    pointer: tool.pointer.clone(),
                    reason: format!(
                        "a {} tool named `{name}` exists; choose another prefix",
                        record.source.as_str()
                    ),
                });
            }
            Some(record) if record.spec_hash == def.hash() => report.unchanged.push(name),
            Some(record) => {
                let changed = changes(&record, &def);
                let version = if dry_run {
                    record.latest_version + 1
                } else {
                    match store
                        .tools()
                        .update(
                            &def,
                            Revision::Exactly(record.revision),
                            changed_by,
                            Some(&note),
                        )
                        .await
                    {
                        Ok(updated) => updated.current_version,
                        Err(e) => {
                            report.skipped.push(refused_or(e, refused)?);
                            continue;
                        }
                    }
                };
                report.updated.push(Updated {
                    name,
                    version,
                    changed,
                });
            }
        }
    }
    Ok(report)
}

/// A refused tool (invalid, or changed meanwhile) as a skip; a store failure as the error.
fn refused_or(
    error: StoreError,
    refused: impl FnOnce(StoreError) -> Skipped,
) -> Result<Skipped, StoreError> {
    match error {
        e @ (StoreError::Invalid { .. }
        | StoreError::Conflict { .. }
        | StoreError::AlreadyExists { .. }) => Ok(refused(e)),
        other => Err(other),
    }
}

/// The top-level spec fields and the definition's `http.*` fields that differ.
fn changes(record: &ToolEntry, def: &ToolDef) -> Vec<String> {
    let mut changed = Vec::new();
    let old = serde_json::to_value(&record.spec).unwrap_or(Value::Null);
    let new = serde_json::to_value(&def.spec).unwrap_or(Value::Null);
    diff_keys(&old, &new, "", &mut changed);
    let old = record.definition.as_ref().and_then(|d| d.get("http"));
    let new = def.definition.as_ref().and_then(|d| d.get("http"));
    match (old, new) {
        (Some(old), Some(new)) => diff_keys(old, new, "http.", &mut changed),
        (old, new) if old != new => changed.push("definition".to_owned()),
        _ => {}
    }
    changed
}

fn diff_keys(old: &Value, new: &Value, prefix: &str, out: &mut Vec<String>) {
    let empty = serde_json::Map::new();
    let old = old.as_object().unwrap_or(&empty);
    let new = new.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        if old.get(key) != new.get(key) {
            out.push(format!("{prefix}{key}"));
        }
    }
}
