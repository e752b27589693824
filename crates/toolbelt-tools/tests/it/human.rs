//! ask_human through the in-memory channel: answered, timed out, unconfigured.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::ToolContext;
use toolbelt_tools::{Human, HumanError, HumanQuestion, PendingQuestions};

use crate::Fx;

fn with_channel() -> (Fx, PendingQuestions) {
    let pending = PendingQuestions::new();
    let human = Human::from_arc(Arc::new(pending.clone()));
    (Fx::with(|cfg| cfg.with_human(human)), pending)
}

#[tokio::test]
async fn the_answer_posted_to_a_pending_question_is_returned() {
    let (fx, pending) = with_channel();
    let answerer = pending.clone();
    let mut changes = pending.subscribe();
    let answering = tokio::spawn(async move {
        changes.wait_for(|open| *open == 1).await.unwrap();
        let asked = answerer.pending();
        answerer.answer(&asked[0].id, "blue").unwrap();
        asked
    });
    let ctx = fx.ctx.clone().with_conversation_id("conv");
    let out = fx
        .call_in(
            &ctx,
            "ask_human",
            json!({"question": "Which colour?", "choices": ["red", "blue"]}),
        )
        .await;
    assert_eq!(out.unwrap().text, "blue");
    let asked: Vec<HumanQuestion> = answering.await.unwrap();
    assert_eq!(
        (asked[0].question.as_str(), asked[0].choices.len()),
        ("Which colour?", 2)
    );
    assert_eq!(asked[0].conversation_id.as_deref(), Some("conv"));
    assert!(pending.pending().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_question_times_out_and_is_withdrawn() {
    let (fx, pending) = with_channel();
    let err = fx
        .err(
            "ask_human",
            json!({"question": "Still there?", "timeout_secs": 2}),
        )
        .await;
    assert_eq!(
        err.to_string(),
        "the user did not answer within 2s; go on without the answer or ask again later"
    );
    assert!(pending.pending().is_empty());
    assert!(matches!(
        pending.answer("c1", "late"),
        Err(HumanError::UnknownQuestion { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn waits_are_capped_by_the_host() {
    let pending = PendingQuestions::new();
    let human = Human::from_arc(Arc::new(pending)).with_max_timeout(Duration::from_secs(1));
    let fx = Fx::with(|cfg| cfg.with_human(human));
    let err = fx
        .err("ask_human", json!({"question": "?", "timeout_secs": 3600}))
        .await;
    assert!(
        err.to_string()
            .starts_with("the user did not answer within 1s"),
        "{err}"
    );
}

#[tokio::test]
async fn without_a_channel_the_host_is_told_what_to_add() {
    let fx = Fx::new();
    let err = fx
        .call_in(&ToolContext::new(), "ask_human", json!({"question": "?"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("no channel to the user is configured"),
        "{err}"
    );
}

#[tokio::test]
async fn questions_of_two_runs_with_the_same_call_id_do_not_collide() {
    let (fx, pending) = with_channel();
    let answerer = pending.clone();
    let mut changes = pending.subscribe();
    let answering = tokio::spawn(async move {
        changes.wait_for(|open| *open == 2).await.unwrap();
        let asked = answerer.pending();
        for question in &asked {
            let answer = question.conversation_id.clone().unwrap_or_default();
            answerer.answer(&question.id, answer).unwrap();
        }
        asked
    });
    // Both calls carry the provider's call id "c1"; only their conversations differ.
    let (a, b) = (
        fx.ctx.clone().with_conversation_id("run-a"),
        fx.ctx.clone().with_conversation_id("run-b"),
    );
    let args = json!({"question": "Which run are you?"});
    // With colliding ids one question would replace the other and both calls would wait forever.
    let (ra, rb) = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        tokio::join!(
            fx.call_in(&a, "ask_human", args.clone()),
            fx.call_in(&b, "ask_human", args)
        )
    })
    .await
    .expect("both questions were asked and answered");
    assert_eq!(
        (ra.unwrap().text, rb.unwrap().text),
        ("run-a".to_owned(), "run-b".to_owned())
    );
    let asked = answering.await.unwrap();
    assert_ne!(asked[0].id, asked[1].id);
}
