//! `#[tool]`, a hand-written `impl Tool` and `FnTool::typed` define the same spec.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::Value;
use toolbelt_core::{
    FnTool, RetryPolicy, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args, schema_for,
};
use toolbelt_macros::tool;

/// Reads a file from the workspace.
///
/// Lines are 1-based.
#[tool(name = "file_read", tags("file", "io"), timeout = "30s", retries = 2)]
async fn read_file(
    _ctx: &ToolContext,
    /// Path relative to the workspace root.
    path: String,
    /// First line to return.
    start_line: Option<u64>,
) -> Result<String, ToolError> {
    Ok(format!("{path}:{}", start_line.unwrap_or(1)))
}

// The struct the other two definitions use: same fields, same docs, and no doc
// comment of its own (it would become a root `description`).
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// Path relative to the workspace root.
    path: String,
    /// First line to return.
    start_line: Option<u64>,
}

const DESCRIPTION: &str = "Reads a file from the workspace.\n\nLines are 1-based.";

fn builder() -> toolbelt_core::ToolSpecBuilder {
    ToolSpec::builder("file_read")
        .description(DESCRIPTION)
        .tags(["file", "io"])
        .timeout(Duration::from_secs(30))
        .retry(RetryPolicy::retries(2))
}

struct HandWritten;

impl Tool for HandWritten {
    fn spec(&self) -> ToolSpec {
        builder()
            .parameters(schema_for::<ReadArgs>())
            .build()
            .unwrap()
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ReadArgs = parse_args(args)?;
        Ok(ToolOutput::text(format!(
            "{}:{}",
            args.path,
            args.start_line.unwrap_or(1)
        )))
    }
}

#[test]
fn macro_hand_written_and_closure_specs_are_equal() {
    let closure = FnTool::builder("file_read")
        .spec(|_| builder())
        .typed(|args: ReadArgs, _ctx| async move {
            format!("{}:{}", args.path, args.start_line.unwrap_or(1))
        })
        .unwrap();
    assert_eq!(ReadFileTool.spec(), HandWritten.spec());
    assert_eq!(&ReadFileTool.spec(), closure.spec());
}

#[tokio::test]
async fn the_three_definitions_answer_alike() {
    let args = serde_json::json!({"path": "a.txt", "start_line": 3});
    let by_macro = ReadFileTool
        .call(args.clone(), ToolContext::new())
        .await
        .unwrap();
    let by_hand = HandWritten.call(args, ToolContext::new()).await.unwrap();
    assert_eq!(by_macro, by_hand);
    assert_eq!(by_macro.text, "a.txt:3");
}

#[tokio::test]
async fn the_function_stays_callable() {
    let text = read_file(&ToolContext::new(), "b.txt".to_owned(), None)
        .await
        .unwrap();
    assert_eq!(text, "b.txt:1");
}
