//! [`SearchTools`]: the `search_tools` meta-tool, so a model can load tools routing missed.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use toolbelt_core::{
    SpecError, Tool, ToolContext, ToolError, ToolHandle, ToolKind, ToolOutput, ToolSpec, Toolset,
    parse_args,
};

use crate::hybrid::HybridRouter;
use crate::lexical::LexicalRouter;

/// Most tools one search returns.
const MAX_LIMIT: usize = 20;

/// Searches the agent's full toolset and returns the matching tools' definitions.
///
/// Routing that only narrows fails when it misses a tool the model needs;
/// exposing this tool lets the model ask for more mid-run. Its output is
/// `{"tools": [{"name", "description", "parameters"}]}`; the agent adds the
/// tools named there to its active set for the rest of the run
/// ([`SearchTools::found_tools`] reads them back).
#[derive(Debug, Clone)]
pub struct SearchTools {
    ranker: Ranker,
    toolset: Toolset,
    default_limit: usize,
}

/// What ranks the tools for a query.
#[derive(Debug, Clone)]
enum Ranker {
    Lexical(LexicalRouter),
    Hybrid(Arc<HybridRouter>),
}

#[derive(Deserialize)]
struct Args {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

impl SearchTools {
    /// The tool's name.
    pub const NAME: &'static str = "search_tools";

    /// A search over `toolset` with `lexical`'s index (shared with routing when cloned from it).
    pub fn new(lexical: LexicalRouter, toolset: Toolset) -> Self {
        Self {
            ranker: Ranker::Lexical(lexical),
            toolset,
            default_limit: 5,
        }
    }

    /// A search over `toolset` ranked by `router`'s fused ranking (words, keyword groups and,
    /// when it has them, embeddings), without its adaptive cut: the `limit` best are returned.
    pub fn hybrid(router: Arc<HybridRouter>, toolset: Toolset) -> Self {
        Self {
            ranker: Ranker::Hybrid(router),
            toolset,
            default_limit: 5,
        }
    }

    /// Tools returned when the model gives no `limit` (default 5).
    #[must_use]
    pub fn with_default_limit(mut self, limit: usize) -> Self {
        self.default_limit = limit.clamp(1, MAX_LIMIT);
        self
    }

    /// Wraps the tool in a handle for a registry or toolset.
    ///
    /// # Errors
    /// Never in practice; [`SpecError`] if the built-in spec were invalid.
    pub fn into_handle(self) -> Result<ToolHandle, SpecError> {
        ToolHandle::new(self)
    }

    /// The names of the tools an output of this tool returned.
    pub fn found_tools(output: &ToolOutput) -> Vec<String> {
        let parsed;
        let value = match &output.json {
            Some(v) => v,
            None => {
                parsed = serde_json::from_str::<Value>(&output.text).unwrap_or(Value::Null);
                &parsed
            }
        };
        value["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    async fn search(&self, args: Args) -> Result<ToolOutput, ToolError> {
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::invalid_argument(
                "/query",
                "must describe the tool you need, e.g. \"send an email\"",
            ));
        }
        let limit = args.limit.unwrap_or(self.default_limit).clamp(1, MAX_LIMIT);
        let names: Vec<String> = match &self.ranker {
            Ranker::Lexical(lexical) => lexical
                .search(&self.toolset, query, limit + 1)
                .into_iter()
                .map(|h| h.name)
                .collect(),
            Ranker::Hybrid(router) => router
                .rank(&self.toolset, query, limit + 1)
                .await
                .tools
                .into_iter()
                .map(|t| t.name)
                .collect(),
        };
        let tools: Vec<Value> = names
            .iter()
            .filter(|name| name.as_str() != Self::NAME)
            .take(limit)
            .filter_map(|name| self.toolset.get(name))
            .map(|t| {
                let spec = t.spec();
                json!({
                    "name": spec.name.as_str(),
                    "description": spec.description,
                    "parameters": spec.parameters,
                })
            })
            .collect();
        Ok(ToolOutput::json(json!({ "query": query, "tools": tools })))
    }
}

/// The fixed spec of `search_tools`.
#[expect(
    clippy::expect_used,
    reason = "a literal spec; `spec_is_valid` in the tests builds it"
)]
fn spec() -> ToolSpec {
    ToolSpec::builder(SearchTools::NAME)
        .description(
            "Find more tools. Call this when none of your current tools can do the task: \
             describe the capability you need and the matching tools (name, description, \
             parameters) are returned and become available for the rest of the run.",
        )
        .parameters(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do, in a few words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Most tools to return (default 5)"}
            },
            "required": ["query"]
        }))
        .kind(ToolKind::Meta)
        .tag("meta")
        .build()
        .expect("the search_tools spec is valid")
}

impl Tool for SearchTools {
    fn spec(&self) -> ToolSpec {
        spec()
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.search(parse_args::<Args>(args)?).await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn spec_is_valid() {
        assert_eq!(super::spec().name.as_str(), "search_tools");
    }
}
