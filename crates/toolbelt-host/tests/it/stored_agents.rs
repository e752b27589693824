//! Agents built from stored rows by the host's factory: pins, availability rules, router
//! settings, options and approval policy all reach the model request, and a stored agent
//! tool runs the stored agent.

use std::sync::Arc;
use toolbelt_store::Revision;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::RunOptions;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_core::{ApprovalPolicy, Decision, ToolContext, ToolPolicy, ToolSpec};
use toolbelt_host::{AgentFactory, HostError, agent_tool_parameters};
use toolbelt_store::{AgentSpec, Binding, RouterSettings, ToolDef, ToolSource};
use toolbelt_tools::declarative::Secrets;
use toolbelt_tools::{BuiltinConfig, Workspace};

use crate::support::{drop_schema, only_kinds, printer, stores};

/// A factory over `store` whose agents all talk to `script`.
async fn factory(
    store: &toolbelt_store::Store,
    script: &ScriptedProvider,
) -> (toolbelt_host::Database, AgentFactory) {
    let db = toolbelt_host::open_store(store.clone(), Vec::new(), "test", Secrets::default())
        .await
        .unwrap();
    let provider = script.provider();
    let agents = db
        .agent_factory()
        .providers(Arc::new(move |_record| Ok(provider.clone())))
        .build();
    (db, agents)
}

fn workspace_options(dir: &tempfile::TempDir) -> RunOptions {
    let workspace = Workspace::new(dir.path()).unwrap();
    RunOptions::new().with_extensions(BuiltinConfig::new(workspace).extensions())
}

#[tokio::test]
async fn pins_availability_options_and_approval_reach_the_model_request() {
    for (store, _dir) in stores("rules").await {
        let v1 = store
            .tools()
            .create(
                &printer("greet", "Greet the user", "hello from v1"),
                "test",
                None,
            )
            .await
            .unwrap();
        store
            .tools()
            .update(
                &printer("greet", "Greet the user", "hello from v2"),
                Revision::Exactly(v1.revision),
                "test",
                None,
            )
            .await
            .unwrap();
        store
            .tools()
            .create(
                &printer("review", "Review a change", "looks fine")
                    .with_availability(only_kinds(&["reviewer"])),
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
        draft.options.approval = Some(ApprovalPolicy::new().with_tool("greet", Decision::Allow));
        store.agents().create(&draft, "unknown").await.unwrap();

        let script = ScriptedProvider::new()
            .then_call("greet", json!({}))
            .then_text("done");
        let (_db, agents) = factory(&store, &script).await;
        let record = agents.record("writer").await.unwrap();
        let built = agents.build(&record).await.unwrap();
        assert_eq!(built.agent.tools().names(), ["greet"]);
        let review = built.tools.iter().find(|t| t.name == "review").unwrap();
        assert_eq!(
            (review.available, review.selected, review.why.as_str()),
            (
                false,
                true,
                "agent kind `assistant` is not allowed; allowed kinds: reviewer"
            )
        );
        let dir = tempfile::tempdir().unwrap();
        let out = built
            .agent
            .run_with("greet me", workspace_options(&dir))
            .await
            .unwrap();
        assert_eq!(out.answer, "done");
        let requests = script.requests();
        let first = &requests[0];
        let offered: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(offered, ["greet"]);
        assert_eq!(
            (
                first.temperature,
                first.max_tokens,
                first.parallel_tool_calls
            ),
            (Some(0.25), Some(77), Some(false))
        );
        let result = requests[1].messages.last().unwrap().text().unwrap();
        assert_eq!(result.trim(), "hello from v1");
        drop_schema(&store).await;
    }
}

#[tokio::test]
async fn an_unknown_agent_names_the_agents_that_exist() {
    for (store, _dir) in stores("unknown").await {
        store
            .agents()
            .create(&AgentSpec::new("alpha"), "unknown")
            .await
            .unwrap();
        let script = ScriptedProvider::new();
        let (_db, agents) = factory(&store, &script).await;
        let err = agents.record("alpah").await.unwrap_err();
        assert!(
            matches!(&err, HostError::AgentNotFound { name, known } if name == "alpah" && known == &["alpha"]),
            "{err:?}"
        );
        drop_schema(&store).await;
    }
}

#[tokio::test]
async fn a_stored_agent_tool_runs_the_stored_agent_with_its_stored_tools() {
    for (store, _dir) in stores("agent_tool").await {
        store
            .tools()
            .create(&printer("shout", "Print HELLO", "HELLO"), "test", None)
            .await
            .unwrap();
        let worker = AgentSpec::new("worker").with_tool(Binding::new("shout"));
        store.agents().create(&worker, "unknown").await.unwrap();
        let spec = ToolSpec::builder("ask_worker")
            .description("Ask the worker agent")
            .parameters(agent_tool_parameters())
            .policy(ToolPolicy::read_only())
            .build()
            .unwrap();
        let ask = ToolDef::new(spec, ToolSource::Agent)
            .with_definition(json!({"agent": {"agent": "worker"}}));
        store.tools().create(&ask, "t", None).await.unwrap();

        let script = ScriptedProvider::new()
            .then_call("shout", json!({}))
            .then_text("done: HELLO");
        let (db, agents) = factory(&store, &script).await;
        let built = agents.build_named("worker").await.unwrap();
        assert_eq!(built.agent.tools().names(), ["shout"]);

        let ask = db.live.registry().get("ask_worker").unwrap();
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

/// Stores four command tools with distinct descriptions and returns their names.
async fn store_four_tools(store: &toolbelt_store::Store) -> [&'static str; 4] {
    let names = ["weather", "stocks", "news", "translate"];
    for (name, what) in names.iter().zip([
        "Get the weather forecast for a city",
        "Get a stock quote",
        "Read the latest news headlines",
        "Translate text between languages",
    ]) {
        store
            .tools()
            .create(&printer(name, what, ""), "test", None)
            .await
            .unwrap();
    }
    names
}

/// A stored agent's router settings are applied: `max_tools` caps what one request offers,
/// `always` tools are offered whatever the ranking, `none` offers everything.
#[tokio::test]
async fn stored_router_settings_choose_the_router() {
    for (store, _dir) in stores("routers").await {
        let names = store_four_tools(&store).await;
        let mut offered = Vec::new();
        for (strategy, max_tools, always) in [
            ("none", None, vec![]),
            ("hybrid", Some(1), vec!["translate".to_owned()]),
            ("lexical", Some(1), vec![]),
        ] {
            let mut draft = AgentSpec::new(format!("a_{strategy}"));
            for n in names {
                draft = draft.with_tool(Binding::new(n));
            }
            let mut router = RouterSettings::default();
            router.strategy = Some(strategy.to_owned());
            router.max_tools = max_tools;
            router.always = always;
            draft.router = router;
            store.agents().create(&draft, "unknown").await.unwrap();
            let script = ScriptedProvider::new().then_text("ok");
            let (_db, agents) = factory(&store, &script).await;
            let built = agents.build_named(&format!("a_{strategy}")).await.unwrap();
            built
                .agent
                .run("what is the weather forecast in Paris")
                .await
                .unwrap();
            let mut sent: Vec<String> = script.requests()[0]
                .tools
                .iter()
                .map(|t| t.name.clone())
                .collect();
            sent.sort();
            offered.push(sent);
        }
        assert_eq!(
            offered,
            [
                vec!["news", "stocks", "translate", "weather"],
                vec!["translate", "weather"],
                vec!["weather"],
            ]
        );
        drop_schema(&store).await;
    }
}

/// An agent with the LLM tier on asks its own model which of the top-ranked tools the request
/// needs, before the run's first request, and the model's pick is sent with the hybrid
/// router's best, within the agent's `max_tools`.
#[tokio::test]
async fn the_llm_tier_asks_the_agents_model_and_sends_its_pick_first() {
    for (store, _dir) in stores("llm_rerank").await {
        let names = store_four_tools(&store).await;
        const INPUT: &str = "the weather forecast for Paris, and the news, translated into French";
        // What the agent sends without the tier: two of the three tools the request names.
        let mut draft = AgentSpec::new("plain");
        for n in names {
            draft = draft.with_tool(Binding::new(n));
        }
        draft.router.max_tools = Some(2);
        store.agents().create(&draft, "unknown").await.unwrap();
        let script = ScriptedProvider::new().then_text("ok");
        let (_db, agents) = factory(&store, &script).await;
        agents
            .build_named("plain")
            .await
            .unwrap()
            .agent
            .run(INPUT)
            .await
            .unwrap();
        let plain: Vec<String> = script.requests()[0]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(plain.len(), 2, "{plain:?}");
        let left_out = ["weather", "news", "translate"]
            .into_iter()
            .find(|n| !plain.iter().any(|p| p == n))
            .unwrap();
        // With the tier, the model picks the one left out.
        draft.name = "reranked".to_owned();
        draft.router.llm_rerank = Some(4);
        store.agents().create(&draft, "unknown").await.unwrap();
        let script = ScriptedProvider::new()
            .then_text(format!(r#"{{"tools": ["{left_out}"]}}"#))
            .then_text("ok");
        let (_db, agents) = factory(&store, &script).await;
        let built = agents.build_named("reranked").await.unwrap();
        built.agent.run(INPUT).await.unwrap();
        let requests = script.requests();
        assert_eq!(requests.len(), 2);
        let ask = &requests[0];
        assert!(ask.tools.is_empty());
        assert_eq!(
            (ask.temperature, ask.max_tokens),
            (Some(0.0), Some(toolbelt_host::RERANK_MAX_TOKENS))
        );
        let prompt = serde_json::to_string(&ask.messages).unwrap();
        assert!(
            prompt.contains("You choose the tools a request needs"),
            "{prompt}"
        );
        assert!(
            prompt.contains("translate: Translate text between languages"),
            "{prompt}"
        );
        // Two tools at most, as without the tier: the pick and the hybrid router's best.
        let sent: Vec<&str> = requests[1].tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert!(sent.contains(&left_out), "{sent:?}");
        assert!(
            sent.contains(&plain[0].as_str()) || sent.contains(&plain[1].as_str()),
            "{sent:?}"
        );
        // Strategies without a ranking are refused on write, naming the field.
        let mut lexical = AgentSpec::new("lexical_reranked");
        lexical.router.strategy = Some("lexical".to_owned());
        lexical.router.llm_rerank = Some(4);
        let err = store
            .agents()
            .create(&lexical, "unknown")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("router.llm_rerank"), "{err}");
        for n in [1, 51] {
            let mut bad = AgentSpec::new("bad_rerank");
            bad.router.llm_rerank = Some(n);
            let err = store.agents().create(&bad, "unknown").await.unwrap_err();
            assert!(err.to_string().contains("give 2 to 50"), "{err}");
        }
        drop_schema(&store).await;
    }
}

/// A stored agent on a small local model gets what `toolbelt run` gives one: no tools when the
/// router is unsure (it answers from what it knows), where a large model gets the best few.
#[tokio::test]
async fn a_small_models_unsure_router_offers_no_tools_and_a_large_ones_does() {
    for (store, _dir) in stores("small_models").await {
        for (name, what) in [
            ("weather", "Get the weather forecast for a city"),
            ("stocks", "Get a stock quote"),
        ] {
            store
                .tools()
                .create(&printer(name, what, ""), "test", None)
                .await
                .unwrap();
        }
        let mut offered = Vec::new();
        for model in ["qwen2.5-coder-1.5b-instruct", "gpt-4o"] {
            let agent = model.replace(['.', '-'], "_");
            let mut draft = AgentSpec::new(&agent)
                .with_tool(Binding::new("weather"))
                .with_tool(Binding::new("stocks"));
            draft.model = Some(model.to_owned());
            store.agents().create(&draft, "unknown").await.unwrap();
            let script = ScriptedProvider::new().then_text("Paris");
            let (_db, agents) = factory(&store, &script).await;
            let built = agents.build_named(&agent).await.unwrap();
            built
                .agent
                .run("What is the capital of France?")
                .await
                .unwrap();
            offered.push(script.requests()[0].tools.len());
        }
        assert_eq!(offered[0], 0, "the small model was offered tools");
        assert!(offered[1] > 0, "the large model was offered none");
        drop_schema(&store).await;
    }
}

/// Runs of an unchanged agent share one provider (its HTTP client) and one executor; a new
/// revision of the agent gets new ones, built from what it now says. Stored skills are
/// indexed again only when they change.
#[tokio::test]
async fn a_definition_builds_its_provider_once_and_a_new_revision_again() {
    for (store, _dir) in stores("parts").await {
        let mut draft = AgentSpec::new("writer");
        draft.options.temperature = Some(0.25);
        let first = store.agents().create(&draft, "unknown").await.unwrap();
        let db = toolbelt_host::open_store(store.clone(), Vec::new(), "test", Secrets::default())
            .await
            .unwrap();
        let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let script = ScriptedProvider::new()
            .then_text("one")
            .then_text("two")
            .then_text("three");
        let provider = script.provider();
        let counter = Arc::clone(&made);
        let agents = db
            .agent_factory()
            .providers(Arc::new(move |_record| {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(provider.clone())
            }))
            .build();
        let count = || made.load(std::sync::atomic::Ordering::SeqCst);
        for answer in ["one", "two"] {
            let built = agents.build_named("writer").await.unwrap();
            assert_eq!(built.agent.run("hi").await.unwrap().answer, answer);
        }
        assert_eq!(count(), 1, "two runs of one revision");
        draft.options.temperature = Some(0.75);
        store
            .agents()
            .update(&draft, Revision::Exactly(first.revision), "unknown")
            .await
            .unwrap();
        let built = agents.build_named("writer").await.unwrap();
        assert_eq!(count(), 2, "a new revision");
        assert_eq!(built.agent.run("hi").await.unwrap().answer, "three");
        let temperatures: Vec<Option<f32>> =
            script.requests().iter().map(|r| r.temperature).collect();
        assert_eq!(temperatures, [Some(0.25), Some(0.25), Some(0.75)]);

        let skill = |name: &str, about: &str| {
            toolbelt_store::SkillSpec::new(name, about, "Do it step by step.")
        };
        store
            .skills()
            .put(&skill("release-notes", "Write release notes"), "test")
            .await
            .unwrap();
        let names = |built: &toolbelt_host::BuiltAgent| -> Vec<String> {
            let mut names: Vec<String> = built
                .agent
                .skills()
                .map(|s| s.iter().map(|k| k.name.clone()).collect())
                .unwrap_or_default();
            names.sort();
            names
        };
        assert_eq!(
            names(&agents.build_named("writer").await.unwrap()),
            ["release-notes"]
        );
        store
            .skills()
            .put(&skill("code-review", "Review a change"), "test")
            .await
            .unwrap();
        assert_eq!(
            names(&agents.build_named("writer").await.unwrap()),
            ["code-review", "release-notes"]
        );
        store
            .skills()
            .put(&skill("code-review", "Review a change carefully"), "test")
            .await
            .unwrap();
        let built = agents.build_named("writer").await.unwrap();
        let review = built.agent.skills().unwrap().get("code-review").unwrap();
        assert_eq!(review.description, "Review a change carefully");
        assert_eq!(count(), 2, "skills do not rebuild the provider");
        drop_schema(&store).await;
    }
}
