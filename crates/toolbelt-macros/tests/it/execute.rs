//! Calling `#[tool]`s through the `Executor`: arguments, errors and the context.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{Executor, ToolCall, ToolContext, ToolError, ToolHandle, Toolset, Violation};
use toolbelt_macros::tool;

/// The workspace root a host puts into the context.
struct Workspace(&'static str);

/// Joins a path onto the workspace root.
#[tool(discover = false)]
async fn resolve(ctx: &ToolContext, path: String, depth: Option<u8>) -> Result<String, ToolError> {
    let root = ctx
        .get::<Workspace>()
        .ok_or_else(|| ToolError::failed("no workspace"))?;
    Ok(format!("{}/{path} (depth {})", root.0, depth.unwrap_or(0)))
}

/// Divides, failing with a domain error on zero.
#[tool(discover = false)]
async fn divide(ctx: ToolContext, a: i64, b: i64) -> Result<i64, DivError> {
    let _ = ctx.depth();
    a.checked_div(b).ok_or(DivError)
}

/// A tool's own error type, turned into a `ToolError` by `Into`.
struct DivError;

impl From<DivError> for ToolError {
    fn from(_: DivError) -> Self {
        ToolError::invalid_argument("/b", "must not be zero")
    }
}

fn tools() -> Toolset {
    Toolset::from_tools([
        ToolHandle::new(ResolveTool).unwrap(),
        ToolHandle::new(DivideTool).unwrap(),
    ])
}

async fn run(name: &str, args: serde_json::Value, ctx: &ToolContext) -> Result<String, ToolError> {
    let call = ToolCall::new("1", name, args);
    Executor::new()
        .execute(&tools(), call, ctx)
        .await
        .outcome
        .map(|out| out.text)
}

#[tokio::test]
async fn the_context_argument_reaches_the_function() {
    let ctx = ToolContext::new().with(Workspace("/ws"));
    let out = run("resolve", json!({"path": "src/lib.rs", "depth": 2}), &ctx).await;
    assert_eq!(out.unwrap(), "/ws/src/lib.rs (depth 2)");
    let out = run("resolve", json!({"path": "a"}), &ToolContext::new()).await;
    assert_eq!(out.unwrap_err(), ToolError::failed("no workspace"));
}

#[tokio::test]
async fn invalid_arguments_name_the_json_pointer() {
    let err = run(
        "resolve",
        json!({"path": 7, "depth": 300}),
        &ToolContext::new(),
    )
    .await
    .unwrap_err();
    let ToolError::InvalidArguments { violations } = err else {
        panic!("{err:?}")
    };
    let pointers: Vec<&str> = violations.iter().map(|v| v.pointer.as_str()).collect();
    assert_eq!(pointers, ["/depth", "/path"]);
}

#[tokio::test]
async fn returned_errors_convert_with_into() {
    assert_eq!(
        run("divide", json!({"a": 7, "b": 2}), &ToolContext::new())
            .await
            .unwrap(),
        "3"
    );
    let err = run("divide", json!({"a": 7, "b": 0}), &ToolContext::new())
        .await
        .unwrap_err();
    let expected = Violation {
        pointer: "/b".to_owned(),
        schema_path: String::new(),
        message: "must not be zero".to_owned(),
    };
    assert_eq!(
        err,
        ToolError::InvalidArguments {
            violations: vec![expected]
        }
    );
}

#[tokio::test]
async fn direct_calls_map_serde_errors_to_invalid_arguments() {
    // `ToolHandle::call` skips schema validation, so serde reports the problem.
    let handle = ToolHandle::new(DivideTool).unwrap();
    let err = handle
        .call(json!({"a": "x", "b": 1}), ToolContext::new())
        .await
        .unwrap_err();
    let ToolError::InvalidArguments { violations } = err else {
        panic!("{err:?}")
    };
    assert_eq!(violations.len(), 1);
    assert!(
        violations[0]
            .message
            .contains("invalid type: string \"x\", expected i64"),
        "{}",
        violations[0].message
    );
}
