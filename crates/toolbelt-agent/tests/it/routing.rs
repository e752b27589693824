//! Routers choose the offered tools; `search_tools` results join them.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AgentBuilder};
use toolbelt_core::{FnTool, ToolHandle, ToolKind};
use toolbelt_router::{AnyRouter, RouteDecision, RouteError, RouteRequest, Router, ScoredTool};

use crate::support::{add, multiply};

/// A router that always answers with the same decision (or fails when it has none).
pub(crate) struct Fixed(pub(crate) Option<RouteDecision>);

impl Router for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    async fn route(&self, _request: &RouteRequest) -> Result<RouteDecision, RouteError> {
        self.0
            .clone()
            .ok_or(RouteError::Config("no decision".into()))
    }
}

fn search_tools() -> ToolHandle {
    FnTool::builder("search_tools")
        .description("Find tools for a task")
        .spec(|s| s.kind(ToolKind::Meta))
        .handler(|_args, _ctx| async { json!({"tools": [{"name": "add"}, {"name": "nope"}]}) })
        .unwrap()
}

fn routed(script: &ScriptedProvider, decision: Option<RouteDecision>) -> AgentBuilder {
    Agent::builder(script.provider())
        .tool(multiply())
        .tool(add())
        .tool(search_tools())
        .router(AnyRouter::new(Fixed(decision)))
}

fn offered(script: &ScriptedProvider, request: usize) -> Vec<String> {
    script.requests()[request]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

#[tokio::test]
async fn only_the_chosen_tools_and_the_pinned_ones_are_offered() {
    let script = ScriptedProvider::new().then_text("ok");
    let chosen = vec![ScoredTool {
        name: "multiply".into(),
        score: 1.0,
    }];
    let decision = RouteDecision::tools("fixed", chosen, "math");
    let out = routed(&script, Some(decision.clone()))
        .build()
        .unwrap()
        .run("6*7")
        .await
        .unwrap();
    assert_eq!(offered(&script, 0), ["multiply", "search_tools"]);
    assert_eq!(out.transcript.route(), Some(&decision));
}

#[tokio::test]
async fn tools_found_by_search_tools_join_the_offered_set() {
    let script = ScriptedProvider::new()
        .then_call("search_tools", json!({"query": "sum"}))
        .then_text("ok");
    let chosen = vec![ScoredTool {
        name: "multiply".into(),
        score: 1.0,
    }];
    let agent = routed(&script, Some(RouteDecision::tools("fixed", chosen, "math")))
        .build()
        .unwrap();
    agent.run("1+2").await.unwrap();
    assert_eq!(offered(&script, 1), ["multiply", "add", "search_tools"]);
}

#[tokio::test]
async fn a_direct_decision_sends_no_tools() {
    let script = ScriptedProvider::new().then_text("hello");
    let agent = routed(&script, Some(RouteDecision::direct("fixed", "chit-chat")))
        .build()
        .unwrap();
    agent.run("hi").await.unwrap();
    assert_eq!(offered(&script, 0), Vec::<String>::new());
}

#[tokio::test]
async fn a_clarify_decision_ends_the_run_with_the_question() {
    let script = ScriptedProvider::new();
    let agent = routed(
        &script,
        Some(RouteDecision::clarify("fixed", "Which file?")),
    )
    .build()
    .unwrap();
    let out = agent.run("delete it").await.unwrap();
    assert_eq!(
        (out.answer.as_str(), out.is_clarification()),
        ("Which file?", true)
    );
    assert_eq!(script.requests().len(), 0);
}

#[tokio::test]
async fn a_failing_router_falls_back_to_every_tool() {
    let script = ScriptedProvider::new().then_text("ok");
    let out = routed(&script, None)
        .build()
        .unwrap()
        .run("hi")
        .await
        .unwrap();
    assert_eq!(offered(&script, 0), ["multiply", "add", "search_tools"]);
    assert!(out.transcript.route().unwrap().fallback);
}

#[tokio::test]
async fn the_provider_completer_asks_without_tools() {
    use toolbelt_router::Completer;
    let script = ScriptedProvider::new().then_text("{\"tools\": [\"math\"]}");
    let completer = toolbelt_agent::ProviderCompleter::new(script.provider()).with_model("small");
    let answer = completer.complete("route this", "6*7").await.unwrap();
    assert_eq!(answer, "{\"tools\": [\"math\"]}");
    let request = &script.requests()[0];
    assert_eq!(
        (
            request.model.as_deref(),
            request.tools.len(),
            request.temperature
        ),
        (Some("small"), 0, Some(0.0))
    );
}

#[tokio::test]
async fn the_model_profile_caps_the_routed_tools_best_first() {
    let script = ScriptedProvider::new().then_text("ok");
    let ranked = ["add", "multiply"]
        .iter()
        .map(|n| ScoredTool {
            name: (*n).into(),
            score: 1.0,
        })
        .collect();
    let decision = RouteDecision::tools("fixed", ranked, "math");
    let profile = toolbelt_llm::ModelProfiles::from_json(
        r#"{"profiles": [{"match": "tiny*", "max_tools": 1}]}"#,
    )
    .unwrap()
    .find("tiny-model");
    assert_eq!(profile.max_tools, 1);
    routed(&script, Some(decision))
        .profile(profile)
        .build()
        .unwrap()
        .run("add")
        .await
        .unwrap();
    // The best ranked tool, plus the pinned meta tool.
    assert_eq!(offered(&script, 0), ["add", "search_tools"]);
}
