//! The LLM router: robust JSON parsing, groups to tools, and fallbacks on failure.

use pretty_assertions::assert_eq;
use toolbelt_core::BoxFuture;
use toolbelt_router::{
    AnyRouter, Completer, KeywordRouter, LlmAnswer, LlmRouter, RouteError, RouteOutcome,
};

use crate::{block_on, builtins, request};

/// Answers every prompt with a fixed text, or fails.
struct Scripted(Result<&'static str, ()>);

impl Completer for Scripted {
    fn complete<'a>(
        &'a self,
        system: &'a str,
        user: &'a str,
    ) -> BoxFuture<'a, Result<String, RouteError>> {
        assert!(
            system.contains("- memory: memory_forget, memory_recall, memory_store"),
            "{system}"
        );
        assert!(user.ends_with("Request: 记住我的生日"), "{user}");
        let answer = self.0.map(str::to_owned).map_err(|()| RouteError::Backend {
            backend: "llm",
            message: "connection refused".into(),
        });
        Box::pin(async move { answer })
    }
}

fn route(answer: Result<&'static str, ()>) -> toolbelt_router::RouteDecision {
    let router = AnyRouter::new(LlmRouter::new(Scripted(answer)));
    block_on(router.route_or_fallback(&request("记住我的生日", &builtins())))
}

#[test]
fn parses_fenced_and_sloppy_answers() {
    let want =
        LlmAnswer::parse(r#"{"tools": ["memory"], "direct": false, "clarify": null}"#).unwrap();
    for text in [
        "```json\n{\"tools\": [\"memory\"], \"direct\": false, \"clarify\": null}\n```",
        "Sure! {\"groups\": \"memory\", \"direct\": \"false\", \"clarify\": \"\"} hope that helps {}",
    ] {
        assert_eq!(LlmAnswer::parse(text).unwrap(), want, "{text}");
    }
    assert!(LlmAnswer::parse("no json here").is_err());
    assert!(LlmAnswer::parse(r#"{"tools": [], "direct": false}"#).is_err());
}

#[test]
fn chosen_groups_become_their_tools() {
    let d = route(Ok(
        r#"{"tools": ["memory"], "direct": false, "clarify": null}"#,
    ));
    assert_eq!(
        (d.router.as_str(), d.groups.clone()),
        ("llm", vec!["memory".to_owned()])
    );
    assert_eq!(
        d.tool_names(),
        ["memory_forget", "memory_recall", "memory_store"]
    );
}

#[test]
fn direct_and_clarify_answers_are_kept() {
    assert_eq!(
        route(Ok(r#"{"tools": [], "direct": true}"#)).outcome,
        RouteOutcome::Direct
    );
    let d = route(Ok(
        r#"{"tools": [], "direct": false, "clarify": "Which file?"}"#,
    ));
    assert_eq!(
        d.outcome,
        RouteOutcome::Clarify {
            question: "Which file?".into()
        }
    );
}

#[test]
fn failures_fall_back_to_the_next_router() {
    for answer in [
        Err(()),
        Ok("I think memory"),
        Ok(r#"{"tools": ["nonexistent"]}"#),
    ] {
        let d = route(answer);
        assert_eq!(d.router, "bm25", "{answer:?}");
        assert!(d.reason.starts_with("llm failed ("), "{}", d.reason);
    }
    let keyword =
        LlmRouter::new(Scripted(Err(()))).with_next(AnyRouter::new(KeywordRouter::builtin()));
    let d =
        block_on(AnyRouter::new(keyword).route_or_fallback(&request("记住我的生日", &builtins())));
    assert_eq!(d.groups, ["memory"]);
}
