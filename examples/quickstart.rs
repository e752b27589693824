//! Quick start: three tools defined three ways, in two groups, selected into a
//! view and run through the executor. Needs nothing but this repository.
//! Run: `cargo run --example quickstart`

use serde_json::{Value, json};
use toolbelt::{
    Executor, FnTool, Registry, Tool, ToolCall, ToolContext, ToolError, ToolOutput, ToolSpec, tool,
};

/// Add two integers.
#[tool(tags("math"))]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Result<i64, ToolError> {
    Ok(a + b)
}

/// A hand-written tool: full control over the spec and the call.
struct Upper;

impl Tool for Upper {
    fn spec(&self) -> ToolSpec {
        ToolSpec::builder("upper")
            .description("Turn text into upper case")
            .tag("text")
            .parameters(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to convert."}},
                "required": ["text"]
            }))
            .build()
            .unwrap_or_else(|e| panic!("static spec is valid: {e}"))
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(
            args["text"].as_str().unwrap_or_default().to_uppercase(),
        ))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Every #[tool] linked into this binary (here: `add`, plus the built-in tools).
    let registry = Registry::discovered()?;
    registry.add_tool(Upper)?;
    // A closure tool, with typed arguments and a derived schema.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Count {
        /// The text whose words to count.
        text: String,
    }
    registry.add_tool(
        FnTool::builder("word_count")
            .description("Count the words of a text")
            .tag("text")
            .typed(|args: Count, _ctx| async move {
                Ok::<_, ToolError>(args.text.split_whitespace().count())
            })?,
    )?;

    // An agent bound to "math,text" sees exactly these tools, whatever else is registered.
    let view = registry.select("math,text")?;
    println!(
        "selected {} of {} tools: {:?}",
        view.len(),
        registry.len(),
        view.names()
    );

    let calls = vec![
        ToolCall::new("1", "add", json!({"a": 15, "b": 23})),
        ToolCall::new("2", "upper", json!({"text": "hello"})),
        ToolCall::new("3", "word_count", json!({"text": "one two three"})),
        ToolCall::new("4", "add", json!({"a": "fifteen"})),
        ToolCall::new("5", "shell_exec", json!({"command": "ls"})),
    ];
    for result in Executor::new()
        .execute_batch(&view, calls, &ToolContext::new())
        .await
    {
        println!(
            "{} {} -> {}",
            result.call.id,
            result.call.name,
            result.to_model_text()
        );
    }
    Ok(())
}
