//! `toolbelt run --agent NAME` runs the agent stored in the database as the server does: its
//! pinned tool version, its availability rules, its options (asserted on the request body).
//! SQLite; Postgres when `TOOLBELT_TEST_PG_URL` is set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt::store::{AgentSpec, Availability, Binding, Store, ToolDef, ToolSource};
use toolbelt_core::{ToolPolicy, ToolSpec};
use toolbelt_store::Revision;

use crate::cli_db::{databases, schema};
use crate::cli_run::{fake_openai, sse, toolbelt_run};

fn printer(name: &str, words: &str) -> ToolDef {
    let spec = ToolSpec::builder(name)
        .description(format!("Run {name}"))
        .parameters(json!({"type": "object", "properties": {}}))
        .policy(ToolPolicy::read_only())
        .build()
        .unwrap();
    ToolDef::new(spec, ToolSource::Declarative)
        .with_definition(json!({"command": {"argv": ["printf", "%s", words], "read_only": true}}))
}

#[tokio::test]
async fn a_stored_agent_runs_with_its_pins_rules_and_options() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path(), "cli_run_stored") {
        schema(&db, true).await;
        let store = Store::open(&db.url).await.unwrap();
        let v1 = store
            .tools()
            .create(&printer("greet", "hello from v1"), "test", None)
            .await
            .unwrap();
        store
            .tools()
            .update(
                &printer("greet", "hello from v2"),
                Revision::Exactly(v1.revision),
                "test",
                None,
            )
            .await
            .unwrap();
        let mut reviewers = Availability::default();
        reviewers.agent_kinds = vec!["reviewer".to_owned()];
        store
            .tools()
            .create(
                &printer("review", "ok").with_availability(reviewers),
                "test",
                None,
            )
            .await
            .unwrap();
        let mut draft = AgentSpec::new("writer")
            .with_selection("review")
            .with_tool(Binding::new("greet").pinned(1));
        draft.options.temperature = Some(0.25);
        draft.options.max_tokens = Some(77);
        draft.options.parallel_tool_calls = Some(false);
        store.agents().create(&draft, "unknown").await.unwrap();
        store.close().await;

        let call = json!({"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "greet", "arguments": "{}"}});
        let (url, model) = fake_openai(vec![
            sse(
                &[json!({"role": "assistant", "tool_calls": [call]})],
                "tool_calls",
            ),
            sse(&[json!({"content": "done"})], "stop"),
        ]);
        let env = [
            ("OPENAI_BASE_URL", url.as_str()),
            ("TOOLBELT_MODEL", "m"),
            ("TOOLBELT_DATABASE_URL", db.url.as_str()),
            ("TOOLBELT_NO_EMBEDDER", "1"),
        ];
        let out = toolbelt_run(dir.path(), &env, &["--agent", "writer", "greet me"], "");
        assert!(
            out.status.success(),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");
        let bodies = model.join().unwrap();
        let offered: Vec<&str> = bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert_eq!(
            (
                offered,
                bodies[0]["temperature"].clone(),
                bodies[0]["max_tokens"]
                    .as_u64()
                    .or(bodies[0]["max_completion_tokens"].as_u64()),
                bodies[0]["parallel_tool_calls"].clone()
            ),
            (vec!["greet"], json!(0.25), Some(77), json!(false))
        );
        let last: &Value = bodies[1]["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(last["content"].as_str().unwrap().trim(), "hello from v1");
        schema(&db, false).await;
    }
}
