//! A call the policy marks "ask" pauses a streamed run until it is approved, edited or rejected.

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AgentEvent, ApprovalPrompt, RunOptions, RunOutput};
use toolbelt_core::{ApprovalRequest, ApprovalResponse};
use toolbelt_llm::Message;

use crate::support::delete_file;

/// Streams a run that calls `delete_file` once, answering the prompt with `answer`.
async fn run_with_answer(answer: impl FnOnce(ApprovalPrompt)) -> (RunOutput, Vec<String>) {
    let script = ScriptedProvider::new()
        .then_call("delete_file", json!({"path": "a.txt"}))
        .then_text("ok");
    let agent = Agent::builder(script.provider())
        .tool(delete_file())
        .build()
        .unwrap();
    let mut stream = agent.run_stream("delete a.txt");
    let mut answer = Some(answer);
    let mut output = None;
    while let Some(event) = stream.next().await {
        match event {
            AgentEvent::ApprovalRequested(prompt) => {
                assert_eq!(prompt.request().call.arguments, json!({"path": "a.txt"}));
                (answer.take().unwrap())(prompt);
            }
            AgentEvent::Finished(out) => output = Some(*out),
            _ => {}
        }
    }
    let sent = script.requests()[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    (output.unwrap(), sent)
}

#[tokio::test]
async fn an_approved_call_runs() {
    let (out, sent) = run_with_answer(ApprovalPrompt::approve).await;
    assert_eq!(
        (out.answer.as_str(), sent),
        ("ok", vec!["deleted a.txt".to_owned()])
    );
}

#[tokio::test]
async fn an_edited_call_runs_with_the_new_arguments() {
    let (out, sent) = run_with_answer(|p| p.edit(json!({"path": "b.txt"}))).await;
    assert_eq!(sent, ["deleted b.txt"]);
    let result = out.transcript.tool_results().next().unwrap();
    assert_eq!(result.call.arguments, json!({"path": "b.txt"}));
}

#[tokio::test]
async fn a_rejected_call_is_a_tool_error_for_the_model() {
    let (out, sent) = run_with_answer(|p| p.reject("not that file")).await;
    assert_eq!(sent, ["error: denied: not that file"]);
    assert_eq!(out.answer, "ok");
}

#[tokio::test]
async fn a_dropped_prompt_rejects_the_call() {
    let (_, sent) = run_with_answer(drop).await;
    assert_eq!(
        sent,
        ["error: denied: the approval request was dropped unanswered"]
    );
}

#[tokio::test]
async fn a_plain_run_without_approver_denies_and_tells_the_model() {
    let script = ScriptedProvider::new()
        .then_call("delete_file", json!({"path": "a.txt"}))
        .then_text("ok");
    let agent = Agent::builder(script.provider())
        .tool(delete_file())
        .build()
        .unwrap();
    let out = agent.run("delete a.txt").await.unwrap();
    let text = out
        .transcript
        .tool_results()
        .next()
        .unwrap()
        .to_model_text();
    assert_eq!(
        text,
        "error: denied: `delete_file` needs approval and no approver is configured"
    );
}

#[tokio::test]
async fn a_plain_run_asks_the_approver_it_is_given() {
    let script = ScriptedProvider::new()
        .then_call("delete_file", json!({"path": "a.txt"}))
        .then_text("ok");
    let agent = Agent::builder(script.provider())
        .tool(delete_file())
        .build()
        .unwrap();
    let approver = |_req: ApprovalRequest| async { ApprovalResponse::Approve };
    let out = agent
        .run_with("delete a.txt", RunOptions::new().with_approver(approver))
        .await
        .unwrap();
    assert_eq!(
        out.transcript
            .tool_results()
            .next()
            .unwrap()
            .to_model_text(),
        "deleted a.txt"
    );
}

#[tokio::test]
async fn edited_arguments_are_validated_again() {
    let (out, sent) = run_with_answer(|p| p.edit(json!({"file": "b.txt"}))).await;
    assert!(sent[0].starts_with("error: invalid arguments"), "{sent:?}");
    assert!(!out.transcript.tool_results().next().unwrap().is_ok());
}

#[tokio::test]
async fn an_inner_agents_approvals_reach_the_outer_stream() {
    let inner = ScriptedProvider::new()
        .then_call("delete_file", json!({"path": "a.txt"}))
        .then_text("gone");
    let cleaner = Agent::builder(inner.provider())
        .name("cleaner")
        .tool(delete_file())
        .build()
        .unwrap();
    let outer = ScriptedProvider::new()
        .then_call("cleaner", json!({"input": "delete a.txt"}))
        .then_text("done");
    let agent = Agent::builder(outer.provider())
        .tool(cleaner.as_tool())
        .build()
        .unwrap();
    let mut stream = agent.run_stream("clean up");
    let mut asked = Vec::new();
    while let Some(event) = stream.next().await {
        if let AgentEvent::ApprovalRequested(prompt) = event {
            asked.push(prompt.request().call.name.clone());
            prompt.approve();
        }
    }
    assert_eq!(asked, ["delete_file"]);
    assert_eq!(
        inner.requests()[1].messages.last(),
        Some(&Message::tool_result(
            "call_1",
            "delete_file",
            "deleted a.txt",
            false
        ))
    );
}
