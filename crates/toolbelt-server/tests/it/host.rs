//! One stored agent, every entry point: a REST run (JSON and SSE), a routine, the route
//! preview, the agent's tool list and `/mcp/{agent}` all offer the same tools at the same
//! versions and send the same options to the model (asserted on the request bodies).

use std::time::{Duration, Instant};
use toolbelt_store::Revision;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::{ApprovalPolicy, Decision, ToolPolicy, ToolSpec};
use toolbelt_store::{AgentSpec, Availability, Binding, RouterSettings, ToolDraft, ToolSource};

use crate::support::{
    ADMIN, FakeModel, READER, RUNNER, TestServer, json_of, on_both, text, tool_call,
};

fn printer(name: &str, description: &str, words: &str) -> ToolDraft {
    let spec = ToolSpec::builder(name)
        .description(description)
        .parameters(json!({"type": "object", "properties": {}}))
        .policy(ToolPolicy::read_only())
        .build()
        .unwrap();
    ToolDraft::new(spec, ToolSource::Declarative, "test")
        .with_definition(json!({"command": {"argv": ["printf", "%s", words], "read_only": true}}))
}

/// `writer`: bound to `greet` pinned at version 1 (version 2 is current), selects `review`
/// (kept from it: reviewers only), routes with `max_tools` 2, and has options and an
/// approval policy of its own.
async fn store_writer(store: &toolbelt_store::Store, model_url: &str) {
    let v1 = store
        .tools()
        .create(&printer("greet", "Greet the user warmly", "hello from v1"))
        .await
        .unwrap();
    store
        .tools()
        .update(
            &printer("greet", "Greet the user warmly", "hello from v2"),
            Revision::Exactly(v1.revision),
        )
        .await
        .unwrap();
    let mut reviewers = Availability::default();
    reviewers.agent_kinds = vec!["reviewer".to_owned()];
    store
        .tools()
        .create(&printer("review", "Review a change", "ok").with_availability(reviewers))
        .await
        .unwrap();
    let mut draft = AgentSpec::new("writer")
        .with_selection("review")
        .with_tool(Binding::new("greet").pinned(1));
    let mut router = RouterSettings::default();
    router.max_tools = Some(2);
    draft.router = router;
    draft.provider = Some("openai".to_owned());
    draft.model = Some("scripted".to_owned());
    draft.options.base_url = Some(model_url.to_owned());
    draft.options.api_key_env = Some("TOOLBELT_TEST_NO_KEY".to_owned());
    draft.options.temperature = Some(0.25);
    draft.options.max_tokens = Some(77);
    draft.options.parallel_tool_calls = Some(false);
    draft.options.approval = Some(ApprovalPolicy::new().with_tool("greet", Decision::Allow));
    store.agents().create(&draft, "unknown").await.unwrap();
}

/// What a model request carries that the agent's definition decides.
fn decided(body: &Value) -> Value {
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    json!({
        "tools": tools,
        "temperature": body["temperature"],
        "max_tokens": body["max_tokens"].as_u64().or(body["max_completion_tokens"].as_u64()),
        "parallel_tool_calls": body["parallel_tool_calls"],
    })
}

fn expected() -> Value {
    json!({"tools": ["greet"], "temperature": 0.25, "max_tokens": 77, "parallel_tool_calls": false})
}

/// The last message of a request: the tool's result in the second request of a run.
fn last_message(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[tokio::test]
async fn every_entry_point_builds_the_stored_agent_the_same_way() {
    on_both(|db| async move {
        let run = || vec![tool_call("c1", "greet", json!({})), text(&["done"])];
        let model = FakeModel::start([run(), run(), run()].concat()).await;
        store_writer(&db.open().await, &model.url).await;
        let s = TestServer::start_scheduled(&db, Some(&model.url)).await;

        // REST run, JSON.
        let view = json_of(
            s.post("/api/v1/agents/writer/runs", RUNNER)
                .json(&json!({"input": "greet me"}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(view["answer"], "done", "{}: {view}", db.engine);
        // REST run, SSE.
        let events = s
            .post("/api/v1/agents/writer/runs", RUNNER)
            .header("accept", "text/event-stream")
            .json(&json!({"input": "greet me"}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(events.contains("event: finished"), "{events}");
        // A routine of the agent, run now.
        json_of(
            s.post("/api/v1/routines", ADMIN)
                .json(&json!({"name": "hello", "agent": "writer", "prompt": "greet me", "every_seconds": 3600}))
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        json_of(
            s.post("/api/v1/routines/hello/run", RUNNER)
                .send()
                .await
                .unwrap(),
            202,
        )
        .await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while model.requests.lock().await.len() < 6 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let requests = model.requests.lock().await.clone();
        let seen: Vec<(Value, String)> = requests
            .chunks(2)
            .map(|run| (decided(&run[0]), last_message(&run[1])))
            .collect();
        let want = (expected(), "hello from v1".to_owned());
        assert_eq!(seen, vec![want.clone(), want.clone(), want], "{}", db.engine);

        // The route preview and the tool list say the same.
        let route = json_of(
            s.post("/api/v1/route", RUNNER)
                .json(&json!({"input": "greet me", "agent": "writer"}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(route["toolset_size"], 1, "{route}");
        let tools = json_of(
            s.get("/api/v1/agents/writer/tools", READER).send().await.unwrap(),
            200,
        )
        .await;
        let listed: Vec<Value> = tools
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["name"] == "greet" || t["name"] == "review")
            .map(|t| json!([t["name"], t["available"], t["version"], t["why"]]))
            .collect();
        assert_eq!(
            listed,
            [
                json!(["greet", true, 1, "bound to the agent"]),
                json!(["review", false, 1, "agent kind `assistant` is not allowed; allowed kinds: reviewer"]),
            ]
        );
        // `/mcp/writer` serves the same tool at the same version.
        let mcp = crate::mcp::connect(&format!("{}/mcp/writer", s.url), RUNNER).await;
        assert_eq!(mcp.1.all().names(), ["greet"]);
        let out = mcp
            .1
            .get("greet")
            .unwrap()
            .call(json!({}), toolbelt_core::ToolContext::new())
            .await
            .unwrap();
        assert_eq!(out.text.trim(), "hello from v1");
        mcp.0.shutdown();
        s.stop().await;
        db
    })
    .await;
}
