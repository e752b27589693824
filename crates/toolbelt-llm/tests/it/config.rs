//! Provider configuration from variables (without touching the process environment).

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_llm::{
    ChatRequest, DEFAULT_OPENAI_MODEL, Message, ProviderConfig, ProviderError, ProviderKind,
};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn from(vars: &[(&str, &str)]) -> Result<ProviderConfig, ProviderError> {
    ProviderConfig::from_vars(|name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    })
}

fn config_message(vars: &[(&str, &str)]) -> String {
    match from(vars) {
        Err(ProviderError::Config(message)) => message,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn nothing_configured_names_every_variable_to_set() {
    let message = config_message(&[("OPENAI_API_KEY", "  ")]);
    for variable in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TOOLBELT_MODEL",
        "TOOLBELT_PROVIDER",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(
            message.contains(variable),
            "{variable} missing from: {message}"
        );
    }
}

#[test]
fn openai_key_alone_uses_openai_and_the_default_model() {
    let config = from(&[("OPENAI_API_KEY", "sk-1")]).unwrap();
    let want = ProviderConfig::openai().with_api_key("sk-1");
    assert_eq!(config, want);
    assert_eq!(config.model_or_default(), DEFAULT_OPENAI_MODEL);
}

#[test]
fn compatible_server_needs_a_model() {
    let message = config_message(&[("OPENAI_BASE_URL", "http://localhost:11434/v1")]);
    assert!(message.contains("TOOLBELT_MODEL"), "{message}");
    let config = from(&[
        ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
        ("TOOLBELT_MODEL", "qwen2.5"),
    ])
    .unwrap();
    assert_eq!(
        config,
        ProviderConfig::openai()
            .with_base_url("http://localhost:11434/v1")
            .with_model("qwen2.5")
    );
}

#[test]
fn anthropic_reads_its_own_variables() {
    let vars = [
        ("TOOLBELT_PROVIDER", "Anthropic"),
        ("ANTHROPIC_API_KEY", "ak"),
        ("ANTHROPIC_BASE_URL", "http://proxy:8080"),
        ("TOOLBELT_MODEL", "claude-x"),
        ("OPENAI_API_KEY", "ignored"),
    ];
    let want = ProviderConfig::anthropic()
        .with_api_key("ak")
        .with_base_url("http://proxy:8080")
        .with_model("claude-x");
    assert_eq!(from(&vars).unwrap(), want);
    let message = config_message(&[("TOOLBELT_PROVIDER", "anthropic")]);
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
}

#[test]
fn unknown_provider_lists_the_allowed_ones() {
    let message = config_message(&[("TOOLBELT_PROVIDER", "gemini")]);
    assert_eq!(
        message,
        "TOOLBELT_PROVIDER is `gemini`; expected `openai` or `anthropic`"
    );
}

#[test]
fn bad_base_url_is_reported_when_building() {
    let config = from(&[
        ("OPENAI_BASE_URL", "localhost:11434"),
        ("TOOLBELT_MODEL", "m"),
    ])
    .unwrap();
    let err = config.into_provider().unwrap_err();
    assert!(
        err.to_string()
            .contains("OPENAI_BASE_URL `localhost:11434`"),
        "{err}"
    );
}

#[test]
fn debug_output_hides_the_key() {
    let config = ProviderConfig::anthropic().with_api_key("secret-key");
    let debug = format!("{config:?}");
    assert!(
        !debug.contains("secret-key") && debug.contains("<redacted>"),
        "{debug}"
    );
    assert_eq!(config.kind, ProviderKind::Anthropic);
}

#[tokio::test]
async fn provider_built_from_variables_talks_to_the_configured_server() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-2"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"choices": [{"message": {"content": "pong"}}]})),
        )
        .mount(&server)
        .await;
    let base = format!("{}/v1/", server.uri());
    let vars = [
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-2"),
        ("TOOLBELT_MODEL", "llama3.2"),
    ];
    let provider = from(&vars).unwrap().into_provider().unwrap();
    let answer = provider
        .chat(ChatRequest::new(vec![Message::user("ping")]))
        .await
        .unwrap();
    assert_eq!(answer.content.as_deref(), Some("pong"));
    let sent: serde_json::Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent["model"], json!("llama3.2"));
}

#[tokio::test]
async fn stream_off_sends_plain_requests_and_replays_them_as_a_stream() {
    use futures::StreamExt;
    let server = MockServer::start().await;
    let answer = json!({"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "whole"}}]});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    let url = format!("{}/v1", server.uri());
    let config = from(&[
        ("OPENAI_BASE_URL", url.as_str()),
        ("TOOLBELT_MODEL", "m"),
        ("TOOLBELT_STREAM", "off"),
    ])
    .unwrap();
    assert!(!config.stream);
    let provider = config.into_provider().unwrap();
    assert_eq!(provider.model(), Some("m"));
    let events: Vec<_> = provider
        .chat_stream(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap()
        .collect()
        .await;
    assert!(
        matches!(events.last(), Some(Ok(toolbelt_llm::StreamEvent::Completed(r))) if r.content.as_deref() == Some("whole"))
    );
    let sent: serde_json::Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent.get("stream"), None, "{sent}");
    assert_eq!(
        config_message(&[("OPENAI_API_KEY", "k"), ("TOOLBELT_STREAM", "sometimes")]),
        "TOOLBELT_STREAM is `sometimes`; expected `on` or `off`"
    );
}

#[test]
fn model_profiles_are_data_users_can_extend() {
    use toolbelt_llm::ModelProfiles;
    let builtin = ModelProfiles::builtin();
    let small = builtin.find("Qwen2.5-Coder-1.5B-Instruct");
    assert_eq!(
        (small.max_tools, small.text_tool_calls, small.max_tokens),
        (3, true, 1024)
    );
    let frontier = builtin.find("gpt-4o");
    assert_eq!(
        (frontier.native_tool_calls, frontier.text_tool_calls),
        (true, false)
    );
    assert_eq!(builtin.find("something-unknown").name, "default");
    let mut mine = builtin.clone();
    mine.prepend(
        ModelProfiles::from_json(
            r#"{"profiles": [{"match": "qwen2.5-coder-1.5b*", "max_tools": 1}]}"#,
        )
        .unwrap(),
    );
    let small = mine.find("qwen2.5-coder-1.5b-instruct");
    assert_eq!(
        (small.max_tools, small.max_tokens),
        (1, 4096),
        "fields left out come from the default"
    );
    let bad = ModelProfiles::from_json(r#"{"profiles": [{"match": "x", "max_tool": 3}]}"#)
        .unwrap_err()
        .to_string();
    assert!(
        bad.starts_with("invalid model profiles: at /profiles/0: unknown field `max_tool`"),
        "{bad}"
    );
    let zero = ModelProfiles::from_json(r#"{"profiles": [{"match": "x", "max_tools": 0}]}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(
        zero,
        "invalid model profiles: at /profiles/0/max_tools: must be at least 1"
    );
}
