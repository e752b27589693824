//! The LLM reranker tier: a model's picks among the top of the hybrid ranking come first, as
//! many tools are sent as the hybrid router chose, and a failing model leaves the decision as
//! it was.

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use toolbelt_core::BoxFuture;
use toolbelt_router::{
    AnyRouter, Completer, HybridRouter, LlmReranker, RerankRouter, RouteError, RouteOutcome,
};

use crate::{block_on, builtins, request};

/// Answers with a fixed text (or fails) and keeps the prompts it was sent.
#[derive(Clone)]
struct Scripted {
    answer: Result<&'static str, ()>,
    prompts: Arc<Mutex<Vec<(String, String)>>>,
}

impl Scripted {
    fn new(answer: Result<&'static str, ()>) -> Self {
        Self {
            answer,
            prompts: Arc::default(),
        }
    }
}

impl Completer for Scripted {
    fn complete<'a>(
        &'a self,
        system: &'a str,
        user: &'a str,
    ) -> BoxFuture<'a, Result<String, RouteError>> {
        self.prompts
            .lock()
            .unwrap()
            .push((system.to_owned(), user.to_owned()));
        let answer = self
            .answer
            .map(str::to_owned)
            .map_err(|()| RouteError::Backend {
                backend: "llm",
                message: "connection refused".into(),
            });
        Box::pin(async move { answer })
    }
}

const INPUT: &str = "save the todo list to a file";

#[test]
fn the_model_sees_the_top_n_with_descriptions_and_its_pick_comes_first() {
    let toolset = builtins();
    let base = HybridRouter::default();
    let before = block_on(base.decide(&request(INPUT, &toolset)));
    let ranking = block_on(base.rank(&toolset, INPUT, 4));
    assert_eq!(before.outcome, RouteOutcome::Tools);
    // The model picks the fourth-ranked tool and a name it was not shown.
    let scripted = Scripted::new(Ok(r#"{"tools": ["4", "shell_exec"]}"#));
    let router = RerankRouter::new(base, LlmReranker::new(scripted.clone()).with_top_n(4));
    let after = block_on(AnyRouter::new(router).route_or_fallback(&request(INPUT, &toolset)));
    let prompts = scripted.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 1);
    let (system, user) = &prompts[0];
    assert!(
        system.contains(r#"{"tools": ["tool_name", ...]}"#),
        "{system}"
    );
    let fourth = &ranking.tools[3].name;
    let listed: Vec<String> = ranking
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let description = toolset.get(&t.name).unwrap().spec().description.clone();
            format!("{}. {}: {description}", i + 1, t.name)
        })
        .collect();
    assert_eq!(
        user,
        &format!("Tools:\n{}\n\nRequest: {INPUT}", listed.join("\n"))
    );
    // The pick first, then the tools the hybrid router chose, in its order, as many in all.
    let mut want = vec![fourth.clone()];
    want.extend(before.tool_names().into_iter().filter(|n| n != fourth));
    want.truncate(before.tools.len());
    assert!(before.tools.len() > 1, "{before:?}");
    assert_eq!(after.tool_names(), want);
    assert!(
        after
            .reason
            .ends_with(&format!("llm rerank picked {fourth}")),
        "{}",
        after.reason
    );
    let scores: Vec<f32> = after.tools.iter().map(|t| t.score).collect();
    assert!(scores.windows(2).all(|w| w[0] > w[1]), "{scores:?}");
}

#[test]
fn a_failing_or_empty_answer_keeps_the_hybrid_decision() {
    let toolset = builtins();
    let before = block_on(HybridRouter::default().decide(&request(INPUT, &toolset)));
    for (answer, why) in [
        (Err(()), "connection refused"),
        (Ok(r#"{"tools": ["no_such_tool"]}"#), "picks no listed tool"),
    ] {
        let router = RerankRouter::new(
            HybridRouter::default(),
            LlmReranker::new(Scripted::new(answer)),
        );
        let after = block_on(router.decide(&request(INPUT, &toolset)));
        assert_eq!(after.tool_names(), before.tool_names());
        assert!(
            after.reason.contains("llm rerank kept it"),
            "{}",
            after.reason
        );
        assert!(after.reason.contains(why), "{}", after.reason);
    }
}

#[test]
fn requests_answered_without_tools_are_not_sent_to_the_model() {
    let toolset = builtins();
    let scripted = Scripted::new(Ok(r#"{"tools": ["file_read"]}"#));
    let router = RerankRouter::new(HybridRouter::default(), LlmReranker::new(scripted.clone()));
    let base = block_on(HybridRouter::default().decide(&request("hello there!", &toolset)));
    let after = block_on(router.decide(&request("hello there!", &toolset)));
    assert!(
        base.outcome != RouteOutcome::Tools || base.fallback,
        "a greeting should not be routed to tools: {base:?}"
    );
    assert_eq!(after, base);
    assert!(scripted.prompts.lock().unwrap().is_empty());
}

#[test]
fn earlier_turns_are_shown_and_descriptions_cut() {
    let toolset = builtins();
    let scripted = Scripted::new(Ok("file_read"));
    let reranker = LlmReranker::new(scripted.clone()).with_description_chars(20);
    let req =
        request("and the second one?", &toolset).with_recent(vec!["read notes.txt".to_owned()]);
    let ranked = block_on(HybridRouter::default().rank(&toolset, "read notes.txt", 3)).tools;
    let reranked = block_on(reranker.rerank(&req, ranked.clone()));
    assert_eq!(reranked.picked, 1);
    assert_eq!(reranked.names()[0], "file_read");
    assert_eq!(reranked.tools.len(), ranked.len());
    let (_, user) = scripted.prompts.lock().unwrap()[0].clone();
    assert!(
        user.starts_with("Earlier in the conversation:\n- read notes.txt\n\nTools:\n"),
        "{user}"
    );
    assert!(user.contains("file_read: Read a text file fro…"), "{user}");
}
