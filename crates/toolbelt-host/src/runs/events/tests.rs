//! Typed events read what untyped runs stored and write the same bytes.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::CallResult;

use super::*;

/// A run's events as the registry stored them before events were typed: one of every kind,
/// keys in alphabetical order (they were `serde_json::Value`s).
const STORED: &str = concat!(
    r#"[{"seq":1,"type":"started","data":{"agent":"helper","conversation_id":"conv_1","input":"hi","run_id":"run_1"}},"#,
    r#"{"seq":2,"type":"routed","data":{"fallback":false,"groups":[],"outcome":{"type":"tools"},"reason":"matched","router":"keyword","tools":[{"name":"echo","score":0.10000000149011612}]}},"#,
    r#"{"seq":3,"type":"text_delta","data":{"text":"Hel"}},"#,
    r#"{"seq":4,"type":"model_turn","data":{"iteration":1,"tool_calls":[{"arguments":{"text":"hi"},"id":"c1","name":"echo"}]}},"#,
    r#"{"seq":5,"type":"tool_call_started","data":{"arguments":{"text":"hi"},"id":"c1","name":"echo"}},"#,
    r#"{"seq":6,"type":"approval_requested","data":{"arguments":{"text":"hi"},"call_id":"c1","description":"Echoes","id":"apr_1","run_id":"run_1","tool":"echo"}},"#,
    r#"{"seq":7,"type":"approval_resolved","data":{"approval_id":"apr_1","decision":"edit","detail":{"text":"ho"}}},"#,
    r#"{"seq":8,"type":"question_asked","data":{"choices":["a","b"],"id":"q1","question":"which?","run_id":"run_1"}},"#,
    r#"{"seq":9,"type":"question_answered","data":{"answered":true,"question_id":"q1"}},"#,
    r#"{"seq":10,"type":"tool_progress","data":{"call_id":"c1","message":null,"progress":1.0,"tool":"echo","total":2.0}},"#,
    r#"{"seq":11,"type":"tool_call_finished","data":{"attempts":1,"cached":false,"call":{"arguments":{"text":"ho"},"id":"c1","name":"echo"},"duration_ms":1.5,"ok":true,"output":{"json":null,"text":"ho","truncated":null}}},"#,
    r#"{"seq":12,"type":"tool_call_finished","data":{"attempts":2,"cached":false,"call":{"arguments":{},"id":"c2","name":"web_fetch"},"duration_ms":2000.0,"error":{"kind":"timeout","message":"timed out"},"ok":false}},"#,
    r#"{"seq":13,"type":"call_merged","data":{"call":{"arguments":{"text":"ho"},"id":"c3","name":"echo"},"same_as":"c1"}},"#,
    r#"{"seq":14,"type":"tools_added","data":{"by":"search_tools","tools":["web_fetch"]}},"#,
    r#"{"seq":15,"type":"skills_added","data":{"skills":["review"]}},"#,
    r#"{"seq":16,"type":"finished","data":{"answer":"ho","error":null,"status":"succeeded","usage":{"input_tokens":3,"output_tokens":4}}},"#,
    r#"{"seq":17,"type":"failed","data":{"answer":null,"error":"boom","status":"failed","usage":{"input_tokens":0,"output_tokens":0}}},"#,
    r#"{"seq":18,"type":"cancelled","data":{"answer":null,"error":"cancelled","status":"cancelled","usage":{"input_tokens":1,"output_tokens":0}}},"#,
    r#"{"seq":19,"type":"interrupted","data":{"answer":null,"error":"stopped","status":"interrupted","usage":{"input_tokens":1,"output_tokens":0}}}]"#,
);

#[test]
fn stored_events_of_every_kind_read_typed_and_write_the_same_bytes() {
    let events: Vec<RunEvent> = serde_json::from_str(STORED).unwrap();
    let unknown: Vec<&str> = events
        .iter()
        .filter(|e| matches!(e.data, RunEventData::Unknown { .. }))
        .map(RunEvent::kind)
        .collect();
    assert_eq!(unknown, Vec::<&str>::new());
    assert_eq!(events.len(), 19);
    assert_eq!(serde_json::to_string(&events).unwrap(), STORED);
}

#[test]
fn an_event_this_build_does_not_know_is_kept_as_it_was() {
    let stored = r#"[{"seq":1,"type":"from_the_future","data":{"b":1,"a":[2]}},{"seq":2,"type":"text_delta","data":{"words":"not text"}}]"#;
    let events: Vec<RunEvent> = serde_json::from_str(stored).unwrap();
    assert_eq!(
        events.iter().map(RunEvent::kind).collect::<Vec<_>>(),
        ["from_the_future", "text_delta"]
    );
    assert!(
        events
            .iter()
            .all(|e| matches!(e.data, RunEventData::Unknown { .. }))
    );
    let written = serde_json::to_string(&events).unwrap();
    assert_eq!(
        written,
        r#"[{"seq":1,"type":"from_the_future","data":{"a":[2],"b":1}},{"seq":2,"type":"text_delta","data":{"words":"not text"}}]"#
    );
}

/// A call of `echo` that took 1.234 ms and ended with `outcome` (`{"ok": …}` or `{"error": …}`).
fn call_result(outcome: serde_json::Value) -> CallResult {
    let mut result: CallResult = serde_json::from_value(json!({
        "call": {"id": "c1", "name": "echo", "arguments": {"text": "hi"}},
        "outcome": outcome, "duration_ms": 1, "attempts": 1, "cached": false,
    }))
    .unwrap();
    result.duration = Duration::from_micros(1_234);
    result
}

/// What the registry wrote for a finished call before events were typed.
fn untyped(result: &CallResult) -> serde_json::Value {
    match &result.outcome {
        Ok(output) => json!({
            "call": result.call, "ok": true,
            "output": {"text": output.text, "json": output.json, "truncated": output.truncated},
            "duration_ms": result.duration.as_secs_f64() * 1000.0,
            "attempts": result.attempts, "cached": result.cached,
        }),
        Err(error) => json!({
            "call": result.call, "ok": false,
            "error": {"kind": error.kind(), "message": error.to_string()},
            "duration_ms": result.duration.as_secs_f64() * 1000.0,
            "attempts": result.attempts, "cached": result.cached,
        }),
    }
}

#[test]
fn a_finished_call_is_written_as_the_untyped_json_was() {
    let ok = call_result(json!({"ok": {"text": "{\"n\":1}", "json": {"n": 1}}}));
    let failed = call_result(json!({"error": {"kind": "timeout", "after_ms": 2000}}));
    for result in [ok, failed] {
        let event = RunEvent {
            seq: 3,
            data: RunEventData::ToolCallFinished(CallReport::from(&result)),
        };
        let expected = format!(
            r#"{{"seq":3,"type":"tool_call_finished","data":{}}}"#,
            untyped(&result)
        );
        assert_eq!(serde_json::to_string(&event).unwrap(), expected);
    }
}

#[test]
fn a_transcript_reads_whatever_members_it_can() {
    let stored = json!({
        "messages": "not a list",
        "events": serde_json::from_str::<serde_json::Value>(STORED).unwrap(),
        "usage": {"input_tokens": 5, "output_tokens": 6},
        "pending": {"approvals": [{"id": "apr_1", "run_id": "run_1", "tool": "echo",
            "call_id": "c1", "arguments": {}, "description": "d"}]},
    });
    let transcript = RunTranscript::read(&stored);
    assert_eq!(
        (
            transcript.messages.len(),
            transcript.events.len(),
            transcript.usage.input_tokens,
            transcript.pending.approvals[0].id.as_str(),
            transcript.pending.questions.len(),
        ),
        (0, 19, 5, "apr_1", 0)
    );
}

/// A failed call's error `kind` is the core type's serde name, spelled as the server's
/// `kind_name` spelled it before.
#[test]
fn error_kinds_are_spelled_as_before() {
    use toolbelt_core::ToolErrorKind as K;
    let kinds = [
        (K::UnknownTool, "unknown_tool"),
        (K::InvalidArguments, "invalid_arguments"),
        (K::Timeout, "timeout"),
        (K::Denied, "denied"),
        (K::Cancelled, "cancelled"),
        (K::Failed, "failed"),
    ];
    for (kind, name) in kinds {
        assert_eq!(serde_json::to_value(kind).unwrap(), name);
    }
}
