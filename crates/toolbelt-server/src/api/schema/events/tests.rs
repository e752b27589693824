//! Every kind of run event: the data the host writes reads back whole as the kind's twin.

use pretty_assertions::assert_eq;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolbelt_host::runs::{RunEvent, RunEventData};

use super::*;

/// The `data` the host writes for an event of `kind` read from `data` (which must read as
/// that kind, not as an unknown event).
fn written(kind: &str, data: Value) -> Value {
    let real: RunEvent =
        serde_json::from_value(json!({"seq": 1, "type": kind, "data": data})).unwrap();
    assert!(
        !matches!(real.data, RunEventData::Unknown { .. }),
        "`{kind}` did not read as its kind"
    );
    serde_json::to_value(&real).unwrap()["data"].take()
}

/// `data` read as the twin of `kind`.
fn twin(kind: &str, data: Value) -> RunEventDataSchema {
    fn read<T: DeserializeOwned>(data: Value) -> T {
        serde_json::from_value(data.clone())
            .unwrap_or_else(|e| panic!("the twin cannot read {data}: {e}"))
    }
    match kind {
        "started" => RunEventDataSchema::Started(read(data)),
        "routed" => RunEventDataSchema::Routed(read(data)),
        "text_delta" => RunEventDataSchema::TextDelta(read(data)),
        "model_turn" => RunEventDataSchema::ModelTurn(read(data)),
        "tool_call_started" => RunEventDataSchema::ToolCallStarted(read(data)),
        "approval_requested" => RunEventDataSchema::ApprovalRequested(read(data)),
        "approval_resolved" => RunEventDataSchema::ApprovalResolved(read(data)),
        "question_asked" => RunEventDataSchema::QuestionAsked(read(data)),
        "question_answered" => RunEventDataSchema::QuestionAnswered(read(data)),
        "tool_progress" => RunEventDataSchema::ToolProgress(read(data)),
        "tool_call_finished" => RunEventDataSchema::ToolCallFinished(read(data)),
        "call_merged" => RunEventDataSchema::CallMerged(read(data)),
        "tools_added" => RunEventDataSchema::ToolsAdded(read(data)),
        "skills_added" => RunEventDataSchema::SkillsAdded(read(data)),
        "finished" | "failed" | "cancelled" | "interrupted" => {
            RunEventDataSchema::Ended(read(data))
        }
        other => panic!("no twin for the event kind `{other}`"),
    }
}

#[test]
fn every_event_kind_reads_back_whole_as_its_twin() {
    let call = json!({"id": "c1", "name": "echo", "arguments": {"text": "hi"}});
    let end = |status: &str| {
        json!({"status": status, "answer": "a", "error": "e",
               "usage": {"input_tokens": 1, "output_tokens": 2}})
    };
    let events = [
        (
            "started",
            json!({"run_id": "run_1", "agent": "a", "input": "hi", "conversation_id": "c"}),
        ),
        (
            "routed",
            json!({"outcome": {"type": "tools"}, "tools": [{"name": "echo", "score": 0.5}],
            "groups": ["util"], "skills": [{"name": "s", "score": 1.0}], "fallback": true,
            "bounded_fallback": {"toolset_size": 90, "limit": 20, "sent": 20, "search_tools": true},
            "router": "hybrid", "reason": "r"}),
        ),
        (
            "routed",
            json!({"outcome": {"type": "clarify", "question": "which?"}, "tools": [],
            "groups": [], "fallback": false, "router": "llm", "reason": "r"}),
        ),
        ("text_delta", json!({"text": "a"})),
        ("model_turn", json!({"iteration": 1, "tool_calls": [call]})),
        ("tool_call_started", call.clone()),
        (
            "approval_requested",
            json!({"id": "apr_1", "run_id": "run_1", "tool": "echo",
            "call_id": "c1", "arguments": {}, "description": "d"}),
        ),
        (
            "approval_resolved",
            json!({"approval_id": "apr_1", "decision": "edit", "detail": {"x": 1}}),
        ),
        (
            "question_asked",
            json!({"id": "ask_1", "run_id": "run_1", "question": "q", "choices": ["a"]}),
        ),
        (
            "question_answered",
            json!({"question_id": "ask_1", "answered": true}),
        ),
        (
            "tool_progress",
            json!({"call_id": "c1", "tool": "echo", "progress": 1.0, "total": 2.0,
            "message": "m"}),
        ),
        (
            "tool_call_finished",
            json!({"call": call, "ok": true, "output": {"text": "t",
            "json": {"k": 1}, "truncated": {"original_bytes": 9, "kept_bytes": 4, "spilled_to": "/f"}},
            "duration_ms": 1.5, "attempts": 1, "cached": false}),
        ),
        (
            "tool_call_finished",
            json!({"call": call, "ok": false,
            "error": {"kind": "timeout", "message": "m"}, "duration_ms": 1.5, "attempts": 2,
            "cached": false}),
        ),
        ("call_merged", json!({"call": call, "same_as": "c0"})),
        (
            "tools_added",
            json!({"by": "search_tools", "tools": ["echo"]}),
        ),
        ("skills_added", json!({"skills": ["s"]})),
        ("finished", end("succeeded")),
        ("failed", end("failed")),
        ("cancelled", end("cancelled")),
        ("interrupted", end("interrupted")),
    ];
    for (kind, data) in events {
        let data = written(kind, data);
        let twin = twin(kind, data.clone());
        assert_eq!(serde_json::to_value(&twin).unwrap(), data, "{kind}");
    }
}
