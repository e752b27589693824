//! What a real model's misbehaviour must not do to a run (seen with real small models): empty
//! answers, repeated calls, runaway tool use, the output budget, text calls
//! leaking into the answer stream.

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{AgentError, AgentEvent, AnswerKind, RunOptions, Step};
use toolbelt_llm::{ChatResponse, FinishReason, Message, ModelProfiles};

use crate::support::math_agent;

fn last_user_text(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_empty_answer_gets_one_corrective_turn() {
    let script = ScriptedProvider::new().then_text("").then_text("42");
    let out = math_agent(&script)
        .build()
        .unwrap()
        .run("6*7?")
        .await
        .unwrap();
    assert_eq!(out.answer, "42");
    let told = last_user_text(&script.requests()[1].messages);
    assert!(told.contains("your answer was empty"), "{told}");
    assert!(
        out.transcript
            .steps
            .iter()
            .any(|s| matches!(s, Step::Corrected { .. }))
    );
}

#[tokio::test]
async fn an_empty_answer_after_the_corrective_turn_fails_the_run() {
    let script = ScriptedProvider::new().then_text("").then_text("  \n");
    let err = math_agent(&script)
        .build()
        .unwrap()
        .run("6*7?")
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::BadAnswer { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("agent `agent`: the model gave no usable answer: your answer was empty"),
        "{err}"
    );
    assert_eq!(script.requests().len(), 2);
}

#[tokio::test]
async fn a_repeated_call_is_blocked_then_the_run_stops() {
    let call = ("multiply", json!({"a": 2, "b": 3}));
    // Same call, arguments in another key order: still the same call.
    let reordered = ("multiply", json!({"b": 3, "a": 2}));
    let script = ScriptedProvider::new()
        .then_calls([call.clone()])
        .then_calls([reordered])
        .then_calls([call.clone()])
        .then_calls([call.clone()])
        .then_calls([call])
        .then_text("never");
    let err = math_agent(&script)
        .build()
        .unwrap()
        .run("2*3?")
        .await
        .unwrap_err();
    let AgentError::Loop {
        tool,
        times,
        transcript,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((tool.as_str(), *times), ("multiply", 5));
    assert_eq!(
        transcript.tool_results().count(),
        2,
        "only the first two ran"
    );
    // The transcript: the refusal, with the earlier result, then the request restated for
    // an answer without tools.
    let [
        ..,
        Message::Tool {
            content,
            is_error: true,
            ..
        },
        Message::User { content: asked },
        Message::Assistant { .. },
        Message::User { .. },
    ] = transcript.messages.as_slice()
    else {
        panic!("{:?}", transcript.messages)
    };
    assert_eq!(
        asked,
        "(runtime) Answer my request now in plain text from the tool results, without calling \
         tools. My request: 2*3?"
    );
    assert!(
        content.contains(
            "this exact call (same tool, same arguments) was already made 2 times; its result \
             was:\n6.0\n"
        ),
        "{content}"
    );
    // After the refusal the model is asked for its answer with no tools and without the
    // calls it made: the results come as text, then what the runtime asks.
    assert_eq!(script.requests().len(), 5);
    assert!(!script.requests()[2].tools.is_empty());
    assert!(script.requests()[3].tools.is_empty() && script.requests()[4].tools.is_empty());
    let results = "(runtime) The tools called for my request gave these results:\n\n`multiply` \
         {\"a\":2,\"b\":3} gave:\n6.0\n\n";
    assert_eq!(
        script.requests()[3].messages,
        [
            Message::system("Use the tools for arithmetic."),
            Message::user("2*3?"),
            Message::user(format!(
                "{results}Answer my request now in plain text from the tool results, without \
                 calling tools. My request: 2*3?"
            )),
        ]
    );
    // The refused call once more gets its result quoted beside the request; then the run stops.
    assert_eq!(
        last_user_text(&script.requests()[4].messages),
        format!(
            "{results}no tools are offered for this answer, and `multiply` with these arguments \
             already ran. Its result was:\n6.0\nAnswer my request from that result, in plain \
             text. My request: 2*3?"
        )
    );
}

#[tokio::test]
async fn a_refused_call_asked_for_again_gets_its_result_quoted_and_the_answer_follows() {
    // The 1.5B model read `logs/app.log` twice, was refused the third time, and wrote the
    // call again when asked for its answer without tools: the run ended with exit code 1.
    let call = ("multiply", json!({"a": 2, "b": 3}));
    let script = ScriptedProvider::new()
        .then_calls([call.clone()])
        .then_calls([call.clone()])
        .then_calls([call.clone()])
        .then_calls([call])
        .then_text("2*3 is 6");
    let out = math_agent(&script)
        .build()
        .unwrap()
        .run("2*3?")
        .await
        .unwrap();
    assert_eq!(out.answer, "2*3 is 6");
    assert_eq!(out.transcript.tool_results().count(), 2);
    let asked = last_user_text(&script.requests()[4].messages);
    assert!(asked.contains("Its result was:\n6.0\n"), "{asked}");
}

#[tokio::test]
async fn after_a_refused_repeat_the_model_answers_without_tools() {
    let call = ("multiply", json!({"a": 2, "b": 3}));
    let script = ScriptedProvider::new()
        .then_calls([call.clone()])
        .then_calls([call.clone()])
        .then_calls([call])
        // No tools are offered now: another call is corrected, not run.
        .then_calls([("add", json!({"a": 1, "b": 1}))])
        .then_text("6");
    let out = math_agent(&script)
        .build()
        .unwrap()
        .run("2*3?")
        .await
        .unwrap();
    assert_eq!(out.answer, "6");
    assert_eq!(out.transcript.tool_results().count(), 2, "add never ran");
    let requests = script.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[3].tools.is_empty() && requests[4].tools.is_empty());
    let asked = last_user_text(&requests[3].messages);
    assert!(
        asked.starts_with("(runtime) The tools called for my request gave these results:")
            && asked.ends_with(
                "Answer my request now in plain text from the tool results, \
                 without calling tools. My request: 2*3?"
            ),
        "{asked}"
    );
    let told = last_user_text(&requests[4].messages);
    assert!(
        told.contains("no tools are offered for this answer"),
        "{told}"
    );
}

#[tokio::test]
async fn identical_limit_is_configurable_and_other_calls_still_run() {
    let script = ScriptedProvider::new()
        .then_calls([("add", json!({"a": 1, "b": 1}))])
        .then_calls([
            ("add", json!({"a": 1, "b": 1})),
            ("add", json!({"a": 2, "b": 2})),
        ])
        .then_text("done");
    let out = math_agent(&script)
        .max_identical_calls(1)
        .build()
        .unwrap()
        .run("add")
        .await
        .unwrap();
    assert_eq!(out.answer, "done");
    assert!(script.requests()[2].tools.is_empty());
    let ran: Vec<String> = out
        .transcript
        .tool_results()
        .map(|r| r.to_model_text())
        .collect();
    assert_eq!(ran, ["2.0", "4.0"]);
    assert!(
        out.transcript
            .steps
            .iter()
            .any(|s| matches!(s, Step::Blocked { .. }))
    );
}

#[tokio::test]
async fn tool_calls_per_run_are_bounded() {
    let turn = |n: i64| (0..3).map(move |i| ("add", json!({"a": n, "b": i})));
    let script = ScriptedProvider::new()
        .then_calls(turn(1))
        .then_calls(turn(2))
        .then_text("never");
    let err = math_agent(&script)
        .max_tool_calls(5)
        .build()
        .unwrap()
        .run("add a lot")
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::ToolCallLimit { limit: 5, .. }),
        "{err}"
    );
    assert_eq!(err.transcript().tool_results().count(), 3);
    // The unrun calls are answered, so the conversation stays valid.
    let last = err.transcript().messages.last().cloned();
    assert!(
        matches!(last, Some(Message::Tool { is_error: true, .. })),
        "{last:?}"
    );
}

#[tokio::test]
async fn max_tokens_comes_from_the_profile_the_agent_and_the_run() {
    let script = ScriptedProvider::new()
        .then_text("a")
        .then_text("b")
        .then_text("c");
    let profile = ModelProfiles::builtin().find("qwen2.5-coder-1.5b-instruct");
    assert_eq!(profile.max_tokens, 1024);
    let agent = math_agent(&script).profile(profile).build().unwrap();
    agent.run("x").await.unwrap();
    agent
        .run_with("x", RunOptions::new().with_max_tokens(77))
        .await
        .unwrap();
    let plain = math_agent(&script).max_tokens(500).build().unwrap();
    plain.run("x").await.unwrap();
    let sent: Vec<Option<u32>> = script.requests().iter().map(|r| r.max_tokens).collect();
    assert_eq!(sent, [Some(1024), Some(77), Some(500)]);
}

#[tokio::test]
async fn an_answer_cut_at_the_budget_is_reported_as_truncated() {
    let mut cut = ChatResponse::text("The answer is the answer is the answer is");
    cut.finish_reason = FinishReason::Length;
    let script = ScriptedProvider::new().then(cut);
    let out = math_agent(&script).build().unwrap().run("x").await.unwrap();
    assert_eq!(out.kind, AnswerKind::Truncated);
    assert!(out.is_truncated());
}

#[tokio::test]
async fn streamed_text_calls_never_reach_the_text_events() {
    let call = "Sure.\n```json\n{\"name\": \"multiply\", \"arguments\": {\"a\": 6, \"b\": 7}}\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n```";
    let script = ScriptedProvider::new()
        .then_text(call)
        .then_text("6*7 is 42 and 1+2 is 3");
    let agent = math_agent(&script).text_tool_calls(true).build().unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("6*7 and 1+2?").collect().await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Sure.\n6*7 is 42 and 1+2 is 3");
    let Some(AgentEvent::Finished(out)) = events.last() else {
        panic!("{:?}", events.last())
    };
    let ran: Vec<String> = out
        .transcript
        .tool_results()
        .map(|r| r.to_model_text())
        .collect();
    assert_eq!(ran, ["42.0", "3.0"]);
}

#[tokio::test]
async fn approval_prompts_carry_run_scoped_ids() {
    let script = ScriptedProvider::new()
        .then_call("delete_file", json!({"path": "a"}))
        .then_text("ok")
        .then_call("delete_file", json!({"path": "a"}))
        .then_text("ok");
    let agent = toolbelt_agent::Agent::builder(script.provider())
        .tool(crate::support::delete_file())
        .build()
        .unwrap();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut stream = agent.run_stream("delete a");
        let mut run_id = String::new();
        while let Some(event) = stream.next().await {
            match event {
                AgentEvent::ApprovalRequested(prompt) => {
                    ids.push(prompt.id().to_owned());
                    prompt.approve();
                }
                AgentEvent::Finished(out) => run_id = out.transcript.run_id.clone(),
                _ => {}
            }
        }
        assert!(
            ids.last()
                .is_some_and(|id| id.starts_with(&format!("{run_id}/")))
        );
    }
    assert_eq!(ids.len(), 2);
    assert_ne!(
        ids[0], ids[1],
        "the same call id in two runs gets two prompt ids"
    );
}

#[tokio::test]
async fn a_stream_the_server_broke_is_asked_again_whole() {
    let broke = toolbelt_llm::ProviderError::StreamEnded {
        provider: "scripted",
        message: "closed".to_owned(),
    };
    let script = ScriptedProvider::new()
        .then_error(broke)
        .then_text("whole answer")
        .then_text("second answer");
    let agent = math_agent(&script).build().unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("hi").collect().await;
    let text: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    // Asked again without streaming: the answer comes as one text event.
    assert_eq!(text, ["whole answer"]);
    assert_eq!(script.requests().len(), 2);
}

#[tokio::test]
async fn a_refused_connection_is_not_retried_without_streaming() {
    let refused = toolbelt_llm::ProviderError::Transport {
        provider: "scripted",
        message: "connection refused".to_owned(),
    };
    let script = ScriptedProvider::new()
        .then_error(refused)
        .then_text("never");
    let agent = math_agent(&script).build().unwrap();
    let err = agent.run_stream("hi").finish().await.unwrap_err();
    assert!(matches!(err, AgentError::Provider { .. }), "{err}");
    assert_eq!(script.requests().len(), 1);
}

#[tokio::test]
async fn conversation_and_run_ids_are_uuid_v7() {
    let script = ScriptedProvider::new().then_text("a");
    let agent = math_agent(&script).build().unwrap();
    let (one, two) = (agent.session(), agent.session());
    let id = uuid::Uuid::parse_str(&one.conversation().id).unwrap();
    assert_eq!(id.get_version_num(), 7);
    assert_ne!(one.conversation().id, two.conversation().id);
    let out = agent.run("x").await.unwrap();
    let run = uuid::Uuid::parse_str(&out.transcript.run_id).unwrap();
    assert_eq!(run.get_version_num(), 7);
}

#[tokio::test]
async fn identical_calls_in_one_turn_run_once_and_the_conversation_holds_one() {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sleep = ("sleep", json!({"ms": 5}));
    // The same call twice in one answer (the 1.5B model did this), and another call.
    let script = ScriptedProvider::new()
        .then_calls([
            sleep.clone(),
            ("sleep", json!({"ms": 5})),
            ("add", json!({"a": 1, "b": 2})),
        ])
        .then_text("done");
    let agent = math_agent(&script)
        .tool(crate::support::sleeper(count.clone()))
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("sleep").collect().await;
    assert_eq!(
        count.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "sleep ran once"
    );
    let answered: Vec<(String, String)> = script.requests()[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id, content, ..
            } => Some((call_id.clone(), content.clone())),
            _ => None,
        })
        .collect();
    // The model sees its call once, with its result: shown its own call forty times
    // over, the 1.5B model wrote the next turn's call forty times.
    let expected = [("call_1", "slept 5"), ("call_3", "3.0")];
    assert_eq!(
        answered,
        expected.map(|(id, text)| (id.to_owned(), text.to_owned()))
    );
    let requests = script.requests();
    let called: Vec<&str> = requests[1]
        .messages
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            _ => &[],
        })
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(called, ["call_1", "call_3"]);
    let merged: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::CallMerged { call, same_as } => Some((call.id.clone(), same_as.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(merged, [("call_2".to_owned(), "call_1".to_owned())]);
    let Some(AgentEvent::Finished(out)) = events.last() else {
        panic!("{events:?}")
    };
    assert!(out.transcript.steps.contains(&Step::Merged {
        call: toolbelt_core::ToolCall::new("call_2", "sleep", json!({"ms": 5})),
        same_as: "call_1".to_owned(),
    }));
}

#[tokio::test]
async fn asked_for_its_answer_the_model_gets_no_tools_after_a_correction_either() {
    // The 1.5B model read notes.md twice, was refused the third time, answered with
    // nothing, was offered the tools again and called once more: the loop guard ended the run.
    let call = ("multiply", json!({"a": 2, "b": 3}));
    let script = ScriptedProvider::new()
        .then_calls([call.clone()])
        .then_calls([call.clone()])
        .then_calls([call])
        .then_text("")
        .then_text("6");
    let out = math_agent(&script)
        .build()
        .unwrap()
        .run("2*3?")
        .await
        .unwrap();
    assert_eq!(out.answer, "6");
    let requests = script.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[3].tools.is_empty() && requests[4].tools.is_empty());
}

#[tokio::test]
async fn the_last_call_of_a_turn_cut_off_by_the_token_limit_is_not_run() {
    // A grammar-forced turn of the 1.5B model: the same call until the tokens ran out, the
    // last one cut off mid-way (`{"path": null`), which came back as unreadable text.
    let calls = vec![
        toolbelt_core::ToolCall::new("c1", "add", json!({"a": 1, "b": 2})),
        toolbelt_core::ToolCall::new("c2", "add", json!({"a": 1, "b": 2})),
        toolbelt_core::ToolCall::new("c3", "add", json!("{\"a\": 1, \"b")),
    ];
    let mut cut = ChatResponse::tool_calls(calls);
    cut.finish_reason = FinishReason::Length;
    let script = ScriptedProvider::new().then(cut).then_text("3");
    let out = math_agent(&script)
        .build()
        .unwrap()
        .run("add")
        .await
        .unwrap();
    assert_eq!(out.answer, "3");
    let ran: Vec<String> = out
        .transcript
        .tool_results()
        .map(|r| r.to_model_text())
        .collect();
    assert_eq!(ran, ["3.0"]);
    let requests = script.requests();
    let answered: Vec<&str> = requests[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(answered, ["c1"]);
}
