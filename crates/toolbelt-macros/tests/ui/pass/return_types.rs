use serde_json::{Value, json};
use toolbelt_core::{Json, ToolError, ToolOutput};
use toolbelt_macros::tool;

/// Returns nothing.
#[tool]
async fn unit() {}

/// Returns a string slice.
#[tool]
async fn text() -> &'static str {
    "text"
}

/// Returns JSON.
#[tool]
async fn value() -> Value {
    json!({"ok": true})
}

/// Returns an output.
#[tool]
async fn output() -> ToolOutput {
    ToolOutput::text("out")
}

/// Returns a number.
#[tool]
async fn number() -> f64 {
    1.5
}

/// Returns a serialisable value.
#[tool]
async fn wrapped() -> Json<Vec<u8>> {
    Json(vec![1, 2])
}

#[derive(Debug)]
struct MyError;

impl From<MyError> for ToolError {
    fn from(_: MyError) -> Self {
        ToolError::failed("mine")
    }
}

/// Returns a result with the tool's own error type.
#[tool]
async fn fallible() -> Result<u64, MyError> {
    Err(MyError)
}

fn main() {
    let _ = (UnitTool, TextTool, ValueTool, OutputTool, NumberTool, WrappedTool, FallibleTool);
}
