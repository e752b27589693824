//! The MCP client under test when the official conformance suite checks toolbelt's client.
//! Needs the URL of the suite's scenario server as its last argument (the suite appends it).
//! Run through `scripts/mcp-conformance.sh`; by hand: `cargo run -p toolbelt-mcp --example conformance_client -- URL`.
//!
//! It does what a host does with [`McpClient`]: connect, import the server's tools into a
//! registry, and call each of them once through the core executor, with arguments made from
//! each parameter's default or type.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolbelt_core::{ApprovalPolicy, Executor, Registry, ToolCall, ToolContext};
use toolbelt_mcp::{McpClient, McpServerConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<ExitCode> {
    let url = std::env::args()
        .next_back()
        .filter(|a| a.starts_with("http"))
        .ok_or_else(|| anyhow::anyhow!("usage: conformance_client URL"))?;
    let registry = Arc::new(Registry::new());
    let config = McpServerConfig::http(url).with_tool_prefix("");
    let client = McpClient::builder("conformance", config)
        .registry(registry.clone())
        .start()?;
    client.ready(Duration::from_secs(20)).await?;
    // The suite's tools are unannotated, so they ask for approval; this harness is the person
    // running the suite and approves them.
    let executor = Executor::builder()
        .policy(ApprovalPolicy::allow_all())
        .build();
    let mut failed = false;
    for tool in registry.list() {
        let spec = tool.spec();
        let call = ToolCall::new("c", spec.name.as_str(), arguments(&spec.parameters));
        let result = executor
            .execute(&registry.all(), call, &ToolContext::new())
            .await;
        match result.outcome {
            Ok(output) => println!("{}: {}", spec.name, output.text),
            Err(error) => {
                eprintln!("{}: {error}", spec.name);
                failed = true;
            }
        }
    }
    client.shutdown();
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Arguments for a call: each required parameter's default, or a plain value of its type.
fn arguments(schema: &Value) -> Value {
    let mut args = Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let property = &schema["properties"][name];
        let value =
            property
                .get("default")
                .cloned()
                .unwrap_or_else(|| match property["type"].as_str() {
                    Some("number" | "integer") => json!(2),
                    Some("boolean") => json!(true),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ => json!("conformance"),
                });
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}
