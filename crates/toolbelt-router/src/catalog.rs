//! Tool catalogs in JSON Lines: one `{"name", "description", "parameters", "tags"?}` per line.

use std::collections::HashMap;
use std::future::Future;
use std::io::BufRead;

use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{Tool, ToolContext, ToolError, ToolHandle, ToolOutput, ToolSpec, Toolset};

/// Why a catalog could not be loaded; every variant names the line (1-based).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The catalog could not be read.
    #[error("cannot read the catalog")]
    Io(#[from] std::io::Error),
    /// A line is not a JSON object of the expected shape.
    #[error("catalog line {line}: {message}")]
    Json {
        /// The line number.
        line: usize,
        /// What serde reported.
        message: String,
    },
    /// A line describes an invalid tool.
    #[error("catalog line {line}: {reason}")]
    Invalid {
        /// The line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Two lines define the same tool name.
    #[error("catalog line {line}: duplicate tool name `{name}` (first defined on line {first})")]
    Duplicate {
        /// The line of the repeated definition.
        line: usize,
        /// The name.
        name: String,
        /// The line of the first definition.
        first: usize,
    },
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    description: String,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    tags: Vec<String>,
}

/// Reads a catalog; blank lines are skipped.
///
/// # Errors
/// [`CatalogError`] naming the first bad line: invalid JSON, a missing field,
/// an invalid name, tag or parameter schema, or a name already used.
pub fn read_catalog(reader: impl BufRead) -> Result<Vec<ToolSpec>, CatalogError> {
    let mut specs = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (i, line) in reader.lines().enumerate() {
        let line_no = i + 1;
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(&line).map_err(|e| CatalogError::Json {
            line: line_no,
            message: e.to_string(),
        })?;
        if let Some(&first) = first_line.get(&entry.name) {
            return Err(CatalogError::Duplicate {
                line: line_no,
                name: entry.name,
                first,
            });
        }
        let spec = ToolSpec::builder(entry.name.clone())
            .description(entry.description)
            .parameters(
                entry
                    .parameters
                    .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
            )
            .tags(entry.tags)
            .build()
            .map_err(|e| CatalogError::Invalid {
                line: line_no,
                reason: e.to_string(),
            })?;
        first_line.insert(entry.name, line_no);
        specs.push(spec);
    }
    Ok(specs)
}

/// A toolset of catalog tools; calling one fails, as a catalog has no handlers.
pub fn catalog_toolset(specs: impl IntoIterator<Item = ToolSpec>) -> Toolset {
    Toolset::from_tools(
        specs
            .into_iter()
            .filter_map(|spec| ToolHandle::new(CatalogTool { spec }).ok()),
    )
}

/// A tool known only by its spec (for routing and evaluation).
#[derive(Debug, Clone)]
pub struct CatalogTool {
    spec: ToolSpec,
}

impl CatalogTool {
    /// A tool with `spec` and no handler.
    pub fn new(spec: ToolSpec) -> Self {
        Self { spec }
    }
}

impl Tool for CatalogTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        std::future::ready(Err(ToolError::failed(format!(
            "`{}` comes from a catalog and has no handler",
            self.spec.name.as_str()
        ))))
    }
}
