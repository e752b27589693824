//! Fixture tools defined with `#[tool]` in a crate of their own, so tests can
//! check that link-time discovery crosses crate boundaries.

use serde_json::{Value, json};
use toolbelt_core::{Json, ToolContext, ToolError};
use toolbelt_macros::tool;

/// Echoes the text back.
#[tool(tags("testkit"))]
pub async fn testkit_echo(
    /// The text to echo.
    text: String,
) -> String {
    text
}

/// Adds two integers.
///
/// Fails on overflow.
#[tool(tags("testkit", "math"), timeout = "5s", retries = 1)]
pub async fn testkit_add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Result<Json<Value>, ToolError> {
    a.checked_add(b)
        .map(|sum| Json(json!({ "sum": sum })))
        .ok_or_else(|| ToolError::failed(format!("{a} + {b} overflows a 64-bit integer")))
}

/// Greets someone, naming the conversation when the context has one.
#[tool(name = "testkit_greet", tags("testkit"))]
pub async fn testkit_greet(ctx: &ToolContext, name: Option<String>) -> String {
    let who = name.as_deref().unwrap_or("world");
    match ctx.conversation_id() {
        Some(conversation) => format!("hello, {who} (conversation {conversation})"),
        None => format!("hello, {who}"),
    }
}
