//! Multi-step tool use, tool errors fed back to the model, concurrency, text-written calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AnswerKind, Step};
use toolbelt_llm::{ChatResponse, Message, ToolChoice, Usage};

use crate::support::{gauged_sleeper, math_agent};

#[tokio::test]
async fn two_steps_of_tool_use_reach_the_answer() {
    let script = ScriptedProvider::new()
        .then_call("multiply", json!({"a": 15, "b": 23}))
        .then_call("add", json!({"a": 345, "b": 5}))
        .then_text("350");
    let agent = math_agent(&script).build().unwrap();
    let out = agent.run("What is 15 * 23 + 5?").await.unwrap();
    assert_eq!((out.answer.as_str(), out.kind), ("350", AnswerKind::Final));
    let texts: Vec<String> = out
        .transcript
        .tool_results()
        .map(|r| r.to_model_text())
        .collect();
    assert_eq!(texts, ["345.0", "350.0"]);
    let last = script.requests()[2].messages.clone();
    assert_eq!(last[0], Message::system("Use the tools for arithmetic."));
    assert_eq!(
        last.last(),
        Some(&Message::tool_result("call_2", "add", "350.0", false))
    );
    assert_eq!(out.transcript.model_calls(), 3);
}

#[tokio::test]
async fn the_request_offers_the_tools_and_options() {
    let script = ScriptedProvider::new().then_text("hi");
    let agent = math_agent(&script)
        .tool_choice(ToolChoice::Required)
        .parallel_tool_calls(false);
    agent
        .model("m-1")
        .build()
        .unwrap()
        .run("hello")
        .await
        .unwrap();
    let request = &script.requests()[0];
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["multiply", "add"]);
    assert_eq!(request.tool_choice, ToolChoice::Required);
    assert_eq!(request.parallel_tool_calls, Some(false));
    assert_eq!(request.model.as_deref(), Some("m-1"));
}

#[tokio::test]
async fn a_forced_tool_choice_applies_to_the_first_call_only() {
    let script = ScriptedProvider::new()
        .then_call("add", json!({"a": 1, "b": 1}))
        .then_text("2");
    let agent = math_agent(&script)
        .tool_choice(ToolChoice::Tool("add".into()))
        .build()
        .unwrap();
    agent.run("1+1").await.unwrap();
    let choices: Vec<ToolChoice> = script
        .requests()
        .iter()
        .map(|r| r.tool_choice.clone())
        .collect();
    assert_eq!(choices, [ToolChoice::Tool("add".into()), ToolChoice::Auto]);
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_go_back_to_the_model() {
    let script = ScriptedProvider::new()
        .then_calls([
            ("multiplyy", json!({"a": 1, "b": 2})),
            ("add", json!({"a": "one"})),
        ])
        .then_text("sorry");
    let out = math_agent(&script)
        .build()
        .unwrap()
        .run("go")
        .await
        .unwrap();
    let results: Vec<_> = out.transcript.tool_results().collect();
    assert!(results.iter().all(|r| !r.is_ok()));
    let sent = script.requests()[1].messages.clone();
    let Message::Tool {
        content,
        is_error: true,
        ..
    } = &sent[sent.len() - 2]
    else {
        panic!("{sent:?}")
    };
    assert!(
        content.contains("unknown tool `multiplyy`; did you mean `multiply`?"),
        "{content}"
    );
    let Message::Tool {
        content,
        is_error: true,
        ..
    } = &sent[sent.len() - 1]
    else {
        panic!("{sent:?}")
    };
    assert!(content.contains("Fix the arguments"), "{content}");
    assert_eq!(out.answer, "sorry");
}

// Concurrency is checked by counting calls in flight (under paused time), not
// by timing: time is for benches.
#[tokio::test(start_paused = true)]
async fn one_turns_calls_run_concurrently() {
    let peak = Arc::new(AtomicUsize::new(0));
    // Different arguments: identical calls of one turn would run once.
    let calls = (0..5).map(|i| ("sleep", json!({"ms": 100 + i})));
    let script = ScriptedProvider::new().then_calls(calls).then_text("done");
    let agent = Agent::builder(script.provider())
        .tool(gauged_sleeper(peak.clone()))
        .build()
        .unwrap();
    let out = agent.run("sleep five times").await.unwrap();
    assert_eq!(peak.load(Ordering::SeqCst), 5);
    assert_eq!(out.transcript.tool_results().count(), 5);
}

#[tokio::test(start_paused = true)]
async fn without_parallel_calls_they_run_one_by_one() {
    let peak = Arc::new(AtomicUsize::new(0));
    let script = ScriptedProvider::new()
        .then_calls([("sleep", json!({"ms": 60})), ("sleep", json!({"ms": 61}))])
        .then_text("done");
    let agent = Agent::builder(script.provider())
        .tool(gauged_sleeper(peak.clone()))
        .parallel_tool_calls(false);
    let out = agent.build().unwrap().run("sleep twice").await.unwrap();
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    assert_eq!(out.transcript.tool_results().count(), 2);
}

#[tokio::test]
async fn usage_adds_up_over_model_calls() {
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 3,
    };
    let mut first = ChatResponse::tool_calls(vec![toolbelt_core::ToolCall::new(
        "c1",
        "add",
        json!({"a": 1, "b": 2}),
    )]);
    first.usage = usage;
    let mut second = ChatResponse::text("3");
    second.usage = usage;
    let script = ScriptedProvider::new().then(first).then(second);
    let out = math_agent(&script)
        .build()
        .unwrap()
        .run("1+2")
        .await
        .unwrap();
    assert_eq!(
        out.usage(),
        Usage {
            input_tokens: 20,
            output_tokens: 6
        }
    );
}

#[tokio::test]
async fn tool_calls_written_as_text_are_run() {
    let text = "Let me compute.\n<tool_call>{\"name\": \"multiply\", \"arguments\": {\"a\": 6, \"b\": 7}}</tool_call>";
    let script = ScriptedProvider::new().then_text(text).then_text("42");
    let out = math_agent(&script)
        .text_tool_calls(true)
        .build()
        .unwrap()
        .run("6*7?")
        .await
        .unwrap();
    let results: Vec<String> = out
        .transcript
        .tool_results()
        .map(|r| r.to_model_text())
        .collect();
    assert_eq!(
        (results, out.answer.as_str()),
        (vec!["42.0".to_owned()], "42")
    );
    let Step::Model { content, .. } = &out.transcript.steps[0] else {
        panic!()
    };
    assert_eq!(content.as_deref(), Some("Let me compute."));
}

#[tokio::test]
async fn text_calls_are_not_parsed_unless_the_profile_or_option_says_so() {
    // The scripted provider names no model: the default profile (native calls, no text calls).
    let text =
        "<tool_call>{\"name\": \"multiply\", \"arguments\": {\"a\": 6, \"b\": 7}}</tool_call>";
    let script = ScriptedProvider::new().then_text(text);
    let agent = math_agent(&script).build().unwrap();
    assert!(!agent.profile().text_tool_calls);
    let out = agent.run("6*7?").await.unwrap();
    assert_eq!(
        (out.answer.as_str(), out.transcript.model_calls()),
        (text, 1)
    );
    assert_eq!(out.transcript.tool_results().count(), 0);
}

#[tokio::test]
async fn a_text_call_of_a_tool_not_offered_gets_a_corrective_turn() {
    let text =
        "<tool_call>{\"name\": \"shell_exec\", \"arguments\": {\"command\": \"id\"}}</tool_call>";
    let script = ScriptedProvider::new()
        .then_text(text)
        .then_text("6*7 is 42");
    let out = math_agent(&script)
        .text_tool_calls(true)
        .build()
        .unwrap()
        .run("6*7?")
        .await
        .unwrap();
    assert_eq!(out.answer, "6*7 is 42");
    assert_eq!(out.transcript.tool_results().count(), 0);
    let sent = script.requests()[1].messages.clone();
    let Some(Message::User { content }) = sent.last() else {
        panic!("{sent:?}")
    };
    assert!(
        content.contains(
            "`shell_exec` is not among the tools you may call now; call one of: add, multiply"
        ),
        "{content}"
    );
}

#[tokio::test]
async fn a_panicking_tool_fails_its_call_not_the_run() {
    let boom = toolbelt_core::FnTool::builder("boom")
        .description("Panic")
        .handler(|_args, _ctx| async {
            if true {
                panic!("boom")
            }
            "never"
        })
        .unwrap();
    let script = ScriptedProvider::new()
        .then_call("boom", json!({}))
        .then_calls([("boom", json!({})), ("add", json!({"a": 1, "b": 1}))])
        .then_text("recovered");
    let out = math_agent(&script)
        .tool(boom)
        .build()
        .unwrap()
        .run("go")
        .await
        .unwrap();
    // The executor contains the panic: the model reads a tool error and the run goes on.
    let crashed = "error: the tool crashed (boom); this is a bug in the tool, not in the call";
    let first = script.requests()[1].messages.clone();
    assert_eq!(
        first[first.len() - 1],
        Message::tool_result("call_1", "boom", crashed, true)
    );
    assert_eq!(out.answer, "recovered");
    let sent = script.requests()[2].messages.clone();
    assert_eq!(
        sent[sent.len() - 1],
        Message::tool_result("call_3", "add", "2.0", false)
    );
}
