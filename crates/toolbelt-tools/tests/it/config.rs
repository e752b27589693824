//! config and self_info: redacted settings, sections by key, the agent and its groups.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::ToolContext;
use toolbelt_tools::{AgentInfo, EffectiveConfig, builtin_tools};

use crate::Fx;

fn configured() -> Fx {
    let cfg = EffectiveConfig::new(json!({
        "llm": {"provider": "openai", "model": "gpt-x", "api_key": "sk-live-123"},
        "store": {"url": "postgres://app:hunter2@db/toolbelt"},
    }));
    let tools = builtin_tools().unwrap();
    let info = AgentInfo::new("coder")
        .with_model("gpt-x")
        .with_tools(tools.iter().map(|t| t.spec()));
    Fx::with(|b| b.with_effective_config(cfg).with_agent_info(info))
}

#[tokio::test]
async fn config_shows_settings_with_secrets_redacted() {
    let fx = configured();
    let all = fx.call("config", json!({})).await.unwrap();
    assert!(
        !all.text.contains("sk-live") && !all.text.contains("hunter2"),
        "{}",
        all.text
    );
    assert_eq!(
        all.json.unwrap()["store"]["url"],
        "postgres://app:[redacted]@db/toolbelt"
    );
    assert_eq!(
        fx.ok("config", json!({"key": "llm.model"})).await,
        "\"gpt-x\""
    );
    assert_eq!(
        fx.ok("config", json!({"key": "/llm/api_key"})).await,
        "\"[redacted]\""
    );
    let err = fx.err("config", json!({"key": "nope"})).await;
    assert_eq!(
        err.to_string(),
        "invalid arguments: at /key: no setting \"nope\"; top-level sections: llm, store"
    );
}

#[tokio::test]
async fn self_info_lists_tools_and_groups() {
    let fx = configured();
    let out = fx.call("self_info", json!({})).await.unwrap();
    assert!(
        out.text
            .starts_with("agent: coder\nmodel: gpt-x\ntoolbelt: "),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("\n- shell_exec [mutating, needs approval]: Run a command line"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("\n- web: http_get, http_request"),
        "{}",
        out.text
    );
    let json = out.json.unwrap();
    assert_eq!(
        json["groups"]["todo"],
        json!(["todo_add", "todo_list", "todo_update"])
    );
    assert_eq!(json["tools"].as_array().unwrap().len(), 21);
}

#[tokio::test]
async fn missing_extensions_are_explained() {
    let fx = Fx::new();
    let bare = ToolContext::new();
    let err = fx.call_in(&bare, "config", json!({})).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("must add an `EffectiveConfig` extension"),
        "{err}"
    );
    let err = fx.call_in(&bare, "self_info", json!({})).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("must add an `AgentInfo` extension"),
        "{err}"
    );
}
