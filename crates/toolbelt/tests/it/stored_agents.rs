//! Agents built from stored rows: their tools follow availability and pins, and a stored agent
//! tool runs the stored agent (SQLite; Postgres when `TOOLBELT_TEST_PG_URL` is set).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt::store::{AgentDraft, Binding, Environment, LiveRegistry, ToolSource};
use toolbelt::stored::{AgentToolFactory, ToolFile, build_agent, declarative_factory};
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_core::ToolContext;
use toolbelt_tools::Workspace;
use toolbelt_tools::declarative::Secrets;

use crate::cli_db::{drop_schema, stores};

const ECHO: &str = r#"
name: shout
description: Print the text in capitals
needs_approval: false
parameters:
  type: object
  properties: {text: {type: string}}
  required: [text]
command:
  argv: ["sh", "-c", "echo \"$1\" | tr a-z A-Z", "shout", "{{text}}"]
"#;

const ASK: &str = "name: ask_worker\ndescription: Ask the worker agent\nagent: {agent: worker}\n";

#[tokio::test]
async fn a_stored_agent_tool_runs_the_stored_agent_with_its_stored_tools() {
    for (store, _dir) in stores("agents").await {
        store
            .create_tool(&ToolFile::parse(ECHO).unwrap().to_draft("t").unwrap())
            .await
            .unwrap();
        let worker = AgentDraft::new("worker").with_tool(Binding::new("shout"));
        store.create_agent(&worker).await.unwrap();
        let ask = ToolFile::parse(ASK).unwrap().to_draft("t").unwrap();
        assert_eq!(ask.source, ToolSource::Agent);
        store.create_tool(&ask).await.unwrap();

        let script = ScriptedProvider::new()
            .then_call("shout", json!({"text": "hello"}))
            .then_text("done: HELLO");
        let provider = script.provider();
        let agents = AgentToolFactory::new(
            Arc::new(move |_record| Ok(provider.clone())),
            Secrets::default(),
        );
        let live = LiveRegistry::builder(store.clone())
            .factory(
                ToolSource::Declarative,
                declarative_factory(Secrets::default()),
            )
            .factory(ToolSource::Agent, agents.clone())
            .build()
            .await
            .unwrap();
        agents.attach(&live);

        let record = store.get_agent("worker").await.unwrap();
        let agent = build_agent(
            &live,
            &record,
            ScriptedProvider::new().provider(),
            &Environment::now(),
        )
        .await
        .unwrap();
        assert_eq!(agent.tools().names(), ["shout"]);

        let ask = live.registry().get("ask_worker").unwrap();
        // The inner agent's command tool runs in the caller's workspace (and its sandbox).
        let workspace = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new().with(Workspace::new(workspace.path()).unwrap());
        let out = ask
            .call(json!({"input": "shout hello"}), ctx)
            .await
            .unwrap();
        assert_eq!(out.text, "done: HELLO");
        let tool_result = script.requests()[1]
            .messages
            .last()
            .unwrap()
            .text()
            .map(str::to_owned);
        assert_eq!(tool_result.as_deref().map(str::trim), Some("HELLO"));
        drop_schema(&store).await;
    }
}

/// A stored agent's router settings are applied: `max_tools` caps what one request offers,
/// `always` tools are offered whatever the ranking, `none` offers everything.
#[tokio::test]
async fn stored_router_settings_choose_the_router() {
    use toolbelt::store::RouterSettings;
    for (store, _dir) in stores("agent_routers").await {
        let mut names = Vec::new();
        for (name, what) in [
            ("weather", "Get the weather forecast for a city"),
            ("stocks", "Get a stock quote"),
            ("news", "Read the latest news headlines"),
            ("translate", "Translate text between languages"),
        ] {
            let yaml = format!(
                "name: {name}\ndescription: {what}\nneeds_approval: false\nparameters: {{type: object}}\ncommand:\n  argv: [\"true\"]\n"
            );
            store
                .create_tool(&ToolFile::parse(&yaml).unwrap().to_draft("t").unwrap())
                .await
                .unwrap();
            names.push(name);
        }
        let offered = |strategy: &str, max_tools: Option<usize>, always: &[&str]| {
            let store = store.clone();
            let (strategy, always) = (
                strategy.to_owned(),
                always.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
            );
            let names = names.clone();
            async move {
                let mut draft = AgentDraft::new(format!("a_{strategy}"));
                for n in &names {
                    draft = draft.with_tool(Binding::new(*n));
                }
                let mut router = RouterSettings::default();
                router.strategy = Some(strategy.clone());
                router.max_tools = max_tools;
                router.always = always;
                draft.router = router;
                store.create_agent(&draft).await.unwrap();
                let live = LiveRegistry::builder(store.clone())
                    .factory(
                        ToolSource::Declarative,
                        declarative_factory(Secrets::default()),
                    )
                    .build()
                    .await
                    .unwrap();
                let record = store.get_agent(&format!("a_{strategy}")).await.unwrap();
                let script = ScriptedProvider::new().then_text("ok");
                let agent = build_agent(&live, &record, script.provider(), &Environment::now())
                    .await
                    .unwrap();
                agent
                    .run("what is the weather forecast in Paris")
                    .await
                    .unwrap();
                let mut sent: Vec<String> = script.requests()[0]
                    .tools
                    .iter()
                    .map(|t| t.name.clone())
                    .collect();
                sent.sort();
                sent
            }
        };
        assert_eq!(
            offered("none", None, &[]).await,
            ["news", "stocks", "translate", "weather"]
        );
        assert_eq!(
            offered("hybrid", Some(1), &["translate"]).await,
            ["translate", "weather"]
        );
        assert_eq!(offered("lexical", Some(1), &[]).await, ["weather"]);
        drop_schema(&store).await;
    }
}

#[test]
fn a_tool_files_read_only_effect_keeps_a_command_tool_read_only() {
    let policy_of = |effect: &str| {
        let yaml = format!("name: ls_tool\ndescription: List\n{effect}command:\n  argv: [ls]\n");
        let draft = ToolFile::parse(&yaml).unwrap().to_draft("t").unwrap();
        let definition = draft.definition.clone().unwrap();
        let tool = toolbelt_tools::declarative::Definition::from_value(&definition)
            .and_then(|d| d.build(draft.spec, Secrets::default()))
            .unwrap();
        (
            definition["command"]["read_only"].clone(),
            tool.spec().policy.is_read_only(),
        )
    };
    assert_eq!(policy_of("effect: read_only\n"), (json!(true), true));
    assert_eq!(policy_of(""), (serde_json::Value::Null, false));
}
