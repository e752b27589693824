//! Conversions between toolbelt's types and MCP's: specs and tool
//! definitions, policies and annotations, outputs and call results.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, Tool as McpToolDef, ToolAnnotations};
use serde_json::{Map, Value, json};
use toolbelt_core::{Effect, ToolError, ToolKind, ToolOutput, ToolPolicy, ToolSpec};

/// The metadata key under which an imported tool keeps its MCP origin.
pub const MCP_METADATA_KEY: &str = "mcp";

/// A tag made of `text`: characters outside `[A-Za-z0-9_.:-]` become `_`.
#[cfg(feature = "client")]
pub(crate) fn tag_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Longest remote tool name kept as is in a local name (providers accept 64 characters for a
/// whole function name; the server's prefix comes on top).
#[cfg(feature = "client")]
const MAX_REMOTE_NAME: usize = 56;

/// The local name of the remote tool `remote`: ASCII letters, digits, `_`, `-` and `.` kept,
/// every other character (a `/`, a space, a control or non-ASCII character) replaced by `_`,
/// cut to [`MAX_REMOTE_NAME`] characters; `tool` when nothing is left. A name already in
/// `taken` (two remote names made the same) gets `_2`, `_3`, ... The remote name is kept for
/// calls and shown in the tool's metadata. A server's `../../etc/passwd` thus never becomes
/// a path or a display string with separators.
#[cfg(feature = "client")]
pub(crate) fn unique_local_name(
    remote: &str,
    taken: &mut std::collections::HashSet<String>,
) -> String {
    let mut base: String = remote
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_REMOTE_NAME)
        .collect();
    if base.trim_matches(|c| c == '_' || c == '.').is_empty() {
        base = "tool".to_owned();
    }
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// An input schema as toolbelt wants it: an object schema with `properties`.
#[cfg(feature = "client")]
pub(crate) fn normalize_input_schema(schema: &rmcp::model::JsonObject) -> Value {
    let mut schema = schema.clone();
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    if schema.get("type") == Some(&json!("object")) {
        schema
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    // Draft-07 `$schema` and `additionalProperties: false` are kept: the
    // provider normaliser in toolbelt-llm rewrites what a provider refuses.
    Value::Object(schema)
}

/// The policy MCP annotations describe.
///
/// A remote server's annotations are its own claims, so they only ever lift approval
/// when they say the tool is harmless: a tool annotated `readOnlyHint: true` and not
/// `destructiveHint: true` is read-only, parallel and approval-free; every other tool
/// (unannotated ones included, and one claiming both read-only and destructive) is
/// mutating, needs approval, and runs alone unless `idempotentHint` is set. A host lists
/// the tools it trusts anyway in the server's `autoApprove`.
pub fn policy_from_annotations(annotations: Option<&ToolAnnotations>) -> ToolPolicy {
    let hint = |f: fn(&ToolAnnotations) -> Option<bool>| annotations.and_then(f);
    let destructive = hint(|a| a.destructive_hint) == Some(true);
    if hint(|a| a.read_only_hint) == Some(true) && !destructive {
        return ToolPolicy::read_only();
    }
    let mut policy = ToolPolicy::mutating();
    policy.parallel = hint(|a| a.idempotent_hint) == Some(true);
    policy.needs_approval = true;
    policy
}

/// The annotations a policy describes (for exported tools).
pub fn annotations_from_policy(spec: &ToolSpec) -> ToolAnnotations {
    let policy = &spec.policy;
    let read_only = policy.effect == Effect::ReadOnly;
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(read_only);
    if !read_only {
        annotations.destructive_hint = Some(policy.needs_approval);
        annotations.idempotent_hint = Some(policy.parallel);
    }
    annotations.open_world_hint = Some(spec.has_tag("web") || spec.kind == ToolKind::Mcp);
    annotations
}

/// The MCP definition of a toolbelt tool.
///
/// A tool imported from an MCP server is served as that server described it: its `title`,
/// `outputSchema` and annotations (kept under the metadata key [`MCP_METADATA_KEY`]) are
/// passed on unchanged; other tools get annotations from their policy.
pub fn tool_definition(spec: &ToolSpec) -> McpToolDef {
    let schema = match &spec.parameters {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let mut tool = McpToolDef::new(
        spec.name.as_str().to_owned(),
        spec.description.clone(),
        Arc::new(schema),
    );
    let remote = (spec.kind == ToolKind::Mcp)
        .then(|| spec.metadata.get(MCP_METADATA_KEY))
        .flatten();
    let remote_annotations = remote
        .and_then(|m| m.get("annotations"))
        .and_then(|a| serde_json::from_value::<ToolAnnotations>(a.clone()).ok());
    tool.annotations = Some(remote_annotations.unwrap_or_else(|| annotations_from_policy(spec)));
    if let Some(remote) = remote {
        tool.title = remote
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(Value::Object(output)) = remote.get("outputSchema") {
            tool.output_schema = Some(Arc::new(output.clone()));
        }
    }
    tool
}

/// What a `tools/call` answer becomes for the model.
///
/// Text blocks are joined with blank lines; other blocks (images, audio,
/// resources) appear in the text as a one-line placeholder and are kept
/// whole in [`ToolOutput::json`] as `{"content": [...], "structuredContent": ...}`.
/// With only text and structured content, `json` is the structured content.
/// `isError: true` becomes [`ToolError::Failed`] with the text.
pub fn output_from_result(result: CallToolResult) -> Result<ToolOutput, ToolError> {
    let mut texts = Vec::with_capacity(result.content.len());
    let mut only_text = true;
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text.clone()),
            ContentBlock::Image(i) => {
                only_text = false;
                texts.push(format!(
                    "[image {}, {} base64 bytes]",
                    i.mime_type,
                    i.data.len()
                ));
            }
            ContentBlock::Audio(a) => {
                only_text = false;
                texts.push(format!(
                    "[audio {}, {} base64 bytes]",
                    a.mime_type,
                    a.data.len()
                ));
            }
            other => {
                only_text = false;
                let kind = serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| "content".to_owned());
                texts.push(format!("[{kind}]"));
            }
        }
    }
    let mut text = texts.join("\n\n");
    if text.is_empty()
        && let Some(structured) = &result.structured_content
    {
        text = structured.to_string();
    }
    if result.is_error == Some(true) {
        return Err(ToolError::failed(if text.is_empty() {
            "the MCP tool reported an error without a message".to_owned()
        } else {
            text
        }));
    }
    let json = if only_text {
        result.structured_content
    } else {
        let mut all =
            json!({"content": serde_json::to_value(&result.content).unwrap_or(Value::Null)});
        if let Some(structured) = result.structured_content {
            all["structuredContent"] = structured;
        }
        Some(all)
    };
    let mut output = ToolOutput::text(text);
    output.json = json;
    Ok(output)
}

/// What a toolbelt result becomes on the wire.
///
/// A JSON object output is sent as `structuredContent` too. An output that
/// came from an imported MCP tool with non-text content is sent with its
/// original content blocks, so images survive a round trip.
pub fn result_from_outcome(outcome: &Result<ToolOutput, ToolError>) -> CallToolResult {
    match outcome {
        Ok(output) => {
            if let Some(Value::Object(obj)) = &output.json
                && let Some(content) = obj.get("content")
                && let Ok(blocks) = serde_json::from_value::<Vec<ContentBlock>>(content.clone())
            {
                let mut result = CallToolResult::success(blocks);
                result.structured_content = obj.get("structuredContent").cloned();
                return result;
            }
            let mut result = CallToolResult::success(vec![ContentBlock::text(output.text.clone())]);
            if let Some(json @ Value::Object(_)) = &output.json {
                result.structured_content = Some(json.clone());
            }
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_model_message())]),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn annotations_map_to_policy() {
        let mut a = ToolAnnotations::default();
        // Unannotated: the server claims nothing, so the tool asks.
        assert_eq!(policy_from_annotations(None).effect, Effect::Mutating);
        assert!(policy_from_annotations(None).needs_approval);
        assert!(policy_from_annotations(Some(&a)).needs_approval);
        a.read_only_hint = Some(true);
        assert_eq!(policy_from_annotations(Some(&a)), ToolPolicy::read_only());
        // Read-only and destructive at once: the harmful claim wins.
        a.destructive_hint = Some(true);
        let p = policy_from_annotations(Some(&a));
        assert_eq!((p.effect, p.needs_approval), (Effect::Mutating, true));
        a.destructive_hint = Some(false);
        assert_eq!(policy_from_annotations(Some(&a)), ToolPolicy::read_only());
        // Not read-only, even if not destructive: asks.
        a.read_only_hint = Some(false);
        assert!(policy_from_annotations(Some(&a)).needs_approval);
        a.destructive_hint = Some(true);
        a.idempotent_hint = Some(true);
        let p = policy_from_annotations(Some(&a));
        assert_eq!(
            (p.effect, p.needs_approval, p.parallel),
            (Effect::Mutating, true, true)
        );
    }

    #[test]
    fn images_are_kept_and_errors_become_tool_errors() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("a picture"),
            ContentBlock::image("aGVsbG8=", "image/png"),
        ]);
        let out = output_from_result(result.clone()).unwrap();
        assert_eq!(out.text, "a picture\n\n[image image/png, 8 base64 bytes]");
        let json = out.json.clone().unwrap();
        assert_eq!(json["content"][1]["data"], json!("aGVsbG8="));
        // And back: the blocks are sent as they came.
        let again = result_from_outcome(&Ok(out));
        assert_eq!(again.content, result.content);
        let err = output_from_result(CallToolResult::error(vec![ContentBlock::text("boom")]));
        assert_eq!(err.unwrap_err(), ToolError::failed("boom"));
    }

    #[test]
    fn structured_content_becomes_json_and_goes_back_as_structured_content() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("{\"n\":1}")]);
        result.structured_content = Some(json!({"n": 1}));
        let out = output_from_result(result).unwrap();
        assert_eq!(out.json, Some(json!({"n": 1})));
        let wire = result_from_outcome(&Ok(out));
        assert_eq!(wire.structured_content, Some(json!({"n": 1})));
        assert_eq!(wire.is_error, Some(false));
    }

    #[test]
    fn an_unknown_tool_with_a_suggestion_reads_as_one_sentence() {
        let error = ToolError::UnknownTool {
            name: "py.ech".to_owned(),
            nearest: vec!["py.echo".to_owned()],
        };
        let wire = result_from_outcome(&Err(error));
        assert_eq!(
            wire.content,
            vec![ContentBlock::text(
                "error: unknown tool `py.ech`; did you mean `py.echo`? Use one of the tools you were given."
            )]
        );
    }

    #[test]
    fn remote_tool_names_become_safe_unique_local_names() {
        let mut taken = std::collections::HashSet::new();
        let names: Vec<String> = [
            "echo",
            "../../../etc/passwd",
            "a b/c",
            "a_b_c",
            "读文件",
            "",
            "get-item.v2",
        ]
        .iter()
        .map(|r| unique_local_name(r, &mut taken))
        .collect();
        assert_eq!(
            names,
            [
                "echo",
                ".._.._.._etc_passwd",
                "a_b_c",
                "a_b_c_2",
                "tool",
                "tool_2",
                "get-item.v2"
            ]
        );
        assert_eq!(
            unique_local_name(&"x".repeat(100), &mut taken).len(),
            MAX_REMOTE_NAME
        );
    }

    #[test]
    fn an_imported_tool_is_served_with_the_remote_title_output_schema_and_annotations() {
        let remote = json!({
            "server": "py", "name": "weather", "title": "Weather",
            "annotations": {"readOnlyHint": true, "openWorldHint": false},
            "outputSchema": {"type": "object", "properties": {"t": {"type": "number"}}}
        });
        let spec = ToolSpec::builder("py.weather")
            .description("Weather")
            .kind(ToolKind::Mcp)
            .metadata(MCP_METADATA_KEY, remote)
            .build()
            .unwrap();
        let served = serde_json::to_value(tool_definition(&spec)).unwrap();
        assert_eq!(
            (
                &served["title"],
                &served["annotations"],
                &served["outputSchema"]
            ),
            (
                &json!("Weather"),
                &json!({"readOnlyHint": true, "openWorldHint": false}),
                &json!({"type": "object", "properties": {"t": {"type": "number"}}})
            )
        );
    }
}
