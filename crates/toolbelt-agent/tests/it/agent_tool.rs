//! Agents used as tools: schema, nested runs, context, depth limit.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AgentTool};
use toolbelt_core::{Executor, Tool, ToolCall, ToolContext, ToolKind, Toolset};
use toolbelt_llm::Message;

use crate::support::math_agent;

fn calculator(script: &ScriptedProvider) -> Agent {
    math_agent(script)
        .name("calculator")
        .description("Does arithmetic")
        .build()
        .unwrap()
}

#[test]
fn the_tool_takes_input_and_optional_context() {
    let spec = calculator(&ScriptedProvider::new()).as_tool().spec();
    assert_eq!(
        (spec.name.as_str(), spec.kind),
        ("calculator", ToolKind::Agent)
    );
    assert_eq!(spec.description, "Does arithmetic");
    assert_eq!(spec.parameters["required"], json!(["input"]));
    assert_eq!(spec.parameters["properties"]["context"]["type"], "string");
}

#[tokio::test]
async fn an_outer_agent_delegates_to_an_inner_one() {
    let inner = ScriptedProvider::new()
        .then_call("multiply", json!({"a": 15, "b": 23}))
        .then_text("345");
    let outer = ScriptedProvider::new()
        .then_call(
            "calculator",
            json!({"input": "15 * 23", "context": "exact"}),
        )
        .then_text("The answer is 345.");
    let agent = Agent::builder(outer.provider())
        .tool(calculator(&inner).as_tool())
        .build()
        .unwrap();
    let out = agent.run("What is 15 * 23?").await.unwrap();
    assert_eq!(out.answer, "The answer is 345.");
    assert_eq!(
        out.transcript
            .tool_results()
            .next()
            .unwrap()
            .to_model_text(),
        "345"
    );
    assert_eq!(
        inner.requests()[0].messages[1],
        Message::user("15 * 23\n\nContext:\nexact")
    );
}

#[tokio::test]
async fn nesting_deeper_than_the_limit_is_a_tool_error() {
    let tool = AgentTool::new(calculator(&ScriptedProvider::new())).with_max_depth(2);
    let tools = Toolset::from_tools([toolbelt_core::ToolHandle::new(tool).unwrap()]);
    let call = ToolCall::new("1", "calculator", json!({"input": "1+1"}));
    let result = Executor::new()
        .execute(&tools, call, &ToolContext::new().with_depth(2))
        .await;
    let message = result.outcome.unwrap_err().to_string();
    assert!(
        message.contains("already nested 2 deep and the limit is 2"),
        "{message}"
    );
}

#[tokio::test]
async fn the_inner_run_is_one_level_deeper() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let depth_tool = toolbelt_core::FnTool::builder("depth")
        .description("Report the depth")
        .handler(move |_args, ctx: ToolContext| {
            log.lock().unwrap().push(ctx.depth());
            async { "ok" }
        })
        .unwrap();
    let inner = ScriptedProvider::new()
        .then_call("depth", json!({}))
        .then_text("done");
    let helper = Agent::builder(inner.provider())
        .name("helper")
        .tool(depth_tool)
        .build()
        .unwrap();
    let outer = ScriptedProvider::new()
        .then_call("helper", json!({"input": "go"}))
        .then_text("ok");
    let agent = Agent::builder(outer.provider())
        .tool(helper.as_tool())
        .build()
        .unwrap();
    agent.run("go").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [1]);
}
