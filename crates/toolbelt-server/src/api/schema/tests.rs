//! Each twin reads back, unchanged, the JSON its real type writes: a field the real type gained
//! and the twin lacks is an unknown field here, a default that differs changes the JSON.

use pretty_assertions::assert_eq;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolbelt_core::ToolSpec;
use toolbelt_store::{AgentSpec, Availability};
use toolbelt_tools::declarative::Definition;

use super::*;

/// `real` as JSON, read as the twin `T` and written again: the same JSON.
fn round_trip<T: Serialize + DeserializeOwned>(real: &impl Serialize) -> Value {
    let written = serde_json::to_value(real).unwrap();
    let twin: T = serde_json::from_value(written.clone())
        .unwrap_or_else(|e| panic!("the twin cannot read {written}: {e}"));
    assert_eq!(serde_json::to_value(&twin).unwrap(), written);
    written
}

/// Reads `json` as the real type `R`, then checks the twin `T` against what `R` writes.
fn check<R: Serialize + DeserializeOwned, T: Serialize + DeserializeOwned>(json: Value) {
    let real: R = serde_json::from_value(json).unwrap();
    round_trip::<T>(&real);
}

#[test]
fn tool_specs_read_back_with_every_field_set_and_with_defaults() {
    check::<ToolSpec, ToolSpecSchema>(json!({"name": "echo", "description": "d",
        "parameters": {"type": "object"}}));
    check::<ToolSpec, ToolSpecSchema>(json!({"name": "echo", "description": "d",
        "parameters": {"type": "object"}, "tags": ["t"], "timeout_ms": 900, "version": "2.0.0",
        "retry": {"max_retries": 2, "initial_backoff": 5, "max_backoff": 50, "multiplier": 3},
        "metadata": {"owner": "me"}, "kind": "mcp",
        "policy": {"effect": "mutating", "parallel": false, "needs_approval": true,
            "max_output_bytes": 10, "on_overflow": "spill", "cacheable": true, "waits": true,
            "idempotent": true}}));
}

#[test]
fn definitions_and_availability_read_back() {
    check::<Definition, DefinitionSchema>(json!({"command": {"argv": ["echo", "{{text}}"]}}));
    check::<Definition, DefinitionSchema>(json!({"command": {"argv": ["ls"], "cwd": "src",
        "env": {"A": "b"}, "max_output_bytes": 9, "read_only": true, "allow_leading_dash": ["x"]}}));
    check::<Definition, DefinitionSchema>(json!({"http": {"url": "https://example.com/{{q}}"}}));
    check::<Definition, DefinitionSchema>(json!({"http": {"method": "POST",
        "url": "https://example.com", "query": {"q": "{{q}}"}, "headers": {"X": "y"},
        "body": {"q": "{{q}}"}, "extract": "$.a", "timeout_ms": 5, "read_only": true,
        "allow_hosts": ["billing.internal"], "allow_nets": ["10.0.4.0/24"]}}));
    check::<Availability, AvailabilitySchema>(json!({"agent_kinds": ["coder"],
        "agent_labels": ["l"], "capabilities": ["c"], "conditions": [{"secret": "S"},
        {"setting": "s"}, {"mcp_healthy": "m"}, {"time_window": {"from": "09:00", "to": "17:00"}}]}));
}

#[test]
fn agent_drafts_and_records_read_back() {
    let full = json!({"name": "helper", "kind": "coder", "labels": ["l"], "capabilities": ["c"],
        "description": "d", "system_prompt": "be brief", "provider": "openai", "model": "m",
        "options": {"max_iterations": 3, "tool_choice": "auto", "parallel_tool_calls": true,
            "run_timeout_ms": 1, "tool_timeout_ms": 2, "temperature": 0.5, "max_tokens": 9,
            "approval": {"default": "ask", "tools": {"echo": "allow"}, "tags": {"web": "deny"}},
            "base_url": "http://127.0.0.1:1/v1", "api_key_env": "KEY"},
        "router": {"strategy": "hybrid", "max_tools": 4, "always": ["echo"], "llm_rerank": 8},
        "selection": "file_ops", "pins": {"file_read": 2},
        "tools": ["echo", "pinned@2", {"tool": "other", "version": 1}, {"tool": "third"}]});
    // A draft's bindings come back in their object form: the twin reads both.
    let draft: AgentSpec = serde_json::from_value(full).unwrap();
    let written = round_trip::<AgentDraftSchema>(&draft);
    assert_eq!(written["tools"][1], json!({"tool": "pinned", "version": 2}));
    round_trip::<AgentDraftSchema>(&AgentSpec::new("bare"));
    round_trip::<AgentRecordSchema>(&draft.unstored().unwrap());
    let twin: AgentDraftSchema =
        serde_json::from_value(json!({"name": "n", "tools": ["a@1"]})).unwrap();
    assert_eq!(twin.tools, [BindingInputSchema::Text("a@1".to_owned())]);
}

#[test]
fn messages_of_every_role_read_back() {
    use toolbelt_llm::Message;
    let call = toolbelt_core::ToolCall::new("c1", "echo", json!({"text": "hi"}));
    for message in [
        Message::system("s"),
        Message::user("u"),
        Message::assistant("a"),
        Message::assistant_tool_calls(None, vec![call]),
        Message::tool_result("c1", "echo", "hi", true),
    ] {
        round_trip::<MessageSchema>(&message);
    }
}

#[test]
fn stored_definitions_include_agent_tools() {
    use toolbelt_host::tool_file::ToolFile;
    let file: ToolFile = serde_json::from_value(
        json!({"name": "ask_helper", "description": "d", "agent": {"agent": "helper"}}),
    )
    .unwrap();
    let definition = file.to_def().unwrap().definition.unwrap();
    round_trip::<StoredDefinitionSchema>(&definition);
    let twin: StoredDefinitionSchema = serde_json::from_value(definition).unwrap();
    assert!(matches!(twin, StoredDefinitionSchema::Agent(_)), "{twin:?}");
}

#[test]
fn run_views_read_back_with_every_field_set() {
    use toolbelt_host::runs::{
        ApprovalView, QuestionView, RunDetail, RunEvent, RunEventData, RunStatus, RunView,
        UsageView,
    };
    let approval = ApprovalView {
        id: "apr_1".to_owned(),
        run_id: "run_1".to_owned(),
        tool: "echo".to_owned(),
        call_id: "c1".to_owned(),
        arguments: json!({"text": "hi"}),
        description: "d".to_owned(),
    };
    let question = QuestionView {
        id: "q1".to_owned(),
        run_id: Some("run_1".to_owned()),
        question: "which?".to_owned(),
        choices: vec!["a".to_owned()],
    };
    let run = RunView {
        id: "run_1".to_owned(),
        agent: "helper".to_owned(),
        status: RunStatus::Waiting,
        input: "hi".to_owned(),
        conversation_id: "conv_1".to_owned(),
        parent_run: Some("run_0".to_owned()),
        created_at_ms: 1,
        finished_at_ms: Some(2),
        answer: Some("a".to_owned()),
        error: Some("e".to_owned()),
        usage: UsageView {
            input_tokens: 3,
            output_tokens: 4,
        },
        pending_approvals: vec![approval],
        pending_questions: vec![question],
    };
    let detail = RunDetail {
        run,
        messages: vec![toolbelt_llm::Message::user("hi")],
        events: vec![RunEvent {
            seq: 1,
            data: RunEventData::TextDelta {
                text: "a".to_owned(),
            },
        }],
    };
    round_trip::<RunDetailSchema>(&detail);
    round_trip::<RunViewSchema>(&detail.run);
    for status in [
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Interrupted,
    ] {
        round_trip::<RunStatusSchema>(&status);
    }
}
