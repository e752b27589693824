//! The registry keeps ended runs in memory or in the store, and reads them back from either.

use std::time::Duration;

use super::*;
use crate::runs::{RunEvent, RunEventData};
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_llm::ChatResponse;

fn agent() -> Agent {
    let provider = ScriptedProvider::from_fn(|_| ChatResponse::text("done").into());
    Agent::builder(provider.provider())
        .name("helper")
        .build()
        .unwrap()
}

async fn run_to_end(registry: &RunRegistry) -> String {
    let entry = registry
        .start(agent(), RunStart::default(), Extensions::new())
        .await
        .unwrap();
    let view = entry.settle(Duration::from_secs(10)).await;
    assert_eq!(view.status, RunStatus::Succeeded);
    entry.id().to_owned()
}

/// Waits until at most `n` runs are in memory (retiring follows the run's last write).
async fn until_in_memory(registry: &RunRegistry, n: usize) {
    for _ in 0..400 {
        if registry.in_memory() <= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "{} runs still in memory, expected {n}",
        registry.in_memory()
    );
}

#[tokio::test]
async fn with_a_store_an_ended_run_leaves_memory_and_is_read_back_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("runs.db").display());
    let store = toolbelt_store::Store::open(&url).await.unwrap();
    let registry = RunRegistry::new().with_store(store);
    let id = run_to_end(&registry).await;
    until_in_memory(&registry, 0).await;
    let detail = registry.detail(&id).await.unwrap();
    assert_eq!(
        (detail.run.status, detail.run.answer.as_deref()),
        (RunStatus::Succeeded, Some("done"))
    );
    let replayed = registry.get_or_stored(&id).await.unwrap();
    let (events, ended) = replayed.events_from(0);
    let kinds: Vec<&str> = events.iter().map(RunEvent::kind).collect();
    assert_eq!(
        (kinds.first().copied(), kinds.last().copied(), ended),
        (Some("started"), Some("finished"), true)
    );
    assert_eq!(
        registry.ended_in_store(&id).await,
        Some(RunStatus::Succeeded)
    );
    assert!(registry.get_or_stored("run_nope").await.is_err());
}

#[tokio::test]
async fn without_a_store_the_newest_ended_runs_stay_and_older_ones_leave() {
    let registry = RunRegistry::new();
    let first = run_to_end(&registry).await;
    for _ in 0..KEEP_FINISHED {
        run_to_end(&registry).await;
    }
    until_in_memory(&registry, KEEP_FINISHED).await;
    assert!(registry.get(&first).is_err(), "the oldest run stayed");
    assert_eq!(registry.list(None, None).len(), KEEP_FINISHED);
}

/// Writes down what the registry tells it.
#[derive(Default)]
struct Recording(Mutex<Vec<String>>);

impl RunObserver for Recording {
    fn tokens(&self, agent: &str, model: &str, usage: Usage) {
        lock(&self.0).push(format!(
            "tokens {agent} {model} {}/{}",
            usage.input_tokens, usage.output_tokens
        ));
    }

    fn run_ended(&self, agent: &str, status: RunStatus) {
        lock(&self.0).push(format!("ended {agent} {status}"));
    }
}

#[tokio::test]
async fn the_observer_hears_the_tokens_and_the_end_of_each_run() {
    let observer = Arc::new(Recording::default());
    let registry = RunRegistry::new().with_observer(observer.clone());
    registry
        .start(
            agent(),
            RunStart::new("hi").with_model("m"),
            Extensions::new(),
        )
        .await
        .unwrap();
    // The run's task has ended, so it has told the observer everything.
    tokio::time::timeout(Duration::from_secs(10), registry.wait_idle())
        .await
        .unwrap();
    assert_eq!(
        *lock(&observer.0),
        ["tokens helper m 0/0", "ended helper succeeded"]
    );
}

/// Waits until run `entry` has ended.
async fn until_ended(entry: &RunEntry) -> RunView {
    for _ in 0..400 {
        if entry.status().is_terminal() {
            return entry.view();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("run {} did not end: {:?}", entry.id(), entry.view());
}

#[tokio::test]
async fn a_question_of_a_run_waits_for_its_answer_and_the_run_goes_on() {
    let registry = RunRegistry::new();
    let script = ScriptedProvider::new()
        .then_call(
            "ask_human",
            json!({"question": "which?", "choices": ["a", "b"]}),
        )
        .then_text("done");
    let agent = Agent::builder(script.provider())
        .name("helper")
        .tool(toolbelt_tools::AskHumanTool)
        .build()
        .unwrap();
    let mut extensions = Extensions::new();
    extensions.insert(toolbelt_tools::Human::new(registry.human_channel()));
    let entry = registry
        .start(agent, RunStart::new("pick one"), extensions)
        .await
        .unwrap();
    let waiting = entry.settle(Duration::from_secs(10)).await;
    let questions = registry.questions();
    assert_eq!(
        (waiting.status, &waiting.pending_questions, questions.len()),
        (RunStatus::Waiting, &questions, 1)
    );
    let question = &questions[0];
    assert_eq!(
        (question.run_id.as_deref(), question.question.as_str()),
        (Some(entry.id()), "which?")
    );
    assert_eq!(question.choices, ["a", "b"]);
    let unknown = registry
        .answer_question("nope", "a".to_owned())
        .unwrap_err();
    assert_eq!(unknown.code(), "question_not_found");
    registry
        .answer_question(&question.id, "a".to_owned())
        .unwrap();
    let done = until_ended(&entry).await;
    assert_eq!(
        (
            done.status,
            done.answer.as_deref(),
            done.pending_questions.len()
        ),
        (RunStatus::Succeeded, Some("done"), 0)
    );
    assert!(registry.questions().is_empty());
    let (events, _) = entry.events_from(0);
    let kinds: Vec<&str> = events.iter().map(RunEvent::kind).collect();
    assert!(
        kinds.contains(&"question_asked") && kinds.contains(&"question_answered"),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn a_question_nobody_answers_in_time_leaves_the_waits_and_the_run_goes_on() {
    let registry = RunRegistry::new();
    let script = ScriptedProvider::new()
        .then_call("ask_human", json!({"question": "which?"}))
        .then_text("done");
    let agent = Agent::builder(script.provider())
        .name("helper")
        .tool(toolbelt_tools::AskHumanTool)
        .build()
        .unwrap();
    let mut extensions = Extensions::new();
    extensions.insert(
        toolbelt_tools::Human::new(registry.human_channel())
            .with_default_timeout(Duration::from_millis(50)),
    );
    let entry = registry
        .start(agent, RunStart::new("pick one"), extensions)
        .await
        .unwrap();
    let done = until_ended(&entry).await;
    assert_eq!(
        (
            done.status,
            done.pending_questions.len(),
            registry.questions().len()
        ),
        (RunStatus::Succeeded, 0, 0)
    );
    let (events, _) = entry.events_from(0);
    let asked = events
        .iter()
        .find_map(|e| match &e.data {
            RunEventData::QuestionAsked(view) => Some(view.id.clone()),
            _ => None,
        })
        .unwrap();
    assert!(asked.starts_with("ask_"), "{asked}");
}
