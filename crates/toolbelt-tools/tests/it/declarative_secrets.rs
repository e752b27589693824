//! Declarative HTTP and command tools keep secrets: every output path is scrubbed of every
//! encoding, secret-bearing requests stay within their origin, commands get no server secrets.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::{ToolContext, ToolError, ToolHandle, ToolSpec};
use toolbelt_tools::HttpConfig;
use toolbelt_tools::declarative::{Definition, Secrets};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::Fx;

/// A secret with the characters that JSON-escaping and percent-encoding change.
const SECRET: &str = "s3\"cr/et\\+ k";

fn tool(definition: Value) -> ToolHandle {
    let spec = ToolSpec::builder("t")
        .description("test")
        .parameters(json!({"type": "object", "properties": {}}))
        .build()
        .unwrap();
    Definition::from_value(&definition)
        .and_then(|d| d.build(spec, Secrets::from_pairs([("K", SECRET)])))
        .unwrap()
}

fn local(max_body: usize) -> ToolContext {
    let http = HttpConfig::new().allow_net("127.0.0.1/32").unwrap();
    ToolContext::new().with(http.with_max_response_bytes(max_body))
}

fn percent(text: &str, space: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b' ' => space.to_owned(),
            b if b.is_ascii_alphanumeric() => char::from(b).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// An upstream that echoes the `x-key` header back in many encodings.
fn echo(req: &Request) -> ResponseTemplate {
    let key = req
        .headers
        .get("x-key")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    ResponseTemplate::new(200).set_body_json(json!({
        "echo": {"x-key": key},
        key.clone(): 1,
        "nested": [{"url": percent(&key, "%20"), "form": percent(&key, "+")}],
        "b64": STANDARD.encode(&key),
        "b64url": URL_SAFE_NO_PAD.encode(&key),
        "basic": STANDARD.encode(format!("user:{key}")),
    }))
}

#[tokio::test]
async fn text_and_json_are_scrubbed_of_every_echoed_form() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(echo)
        .mount(&server)
        .await;
    let t = tool(json!({"http": {"url": server.uri(), "headers": {"x-key": "{{secret.K}}"}}}));
    let out = t.call(json!({}), local(1 << 20)).await.unwrap();
    assert_eq!(
        out.json,
        Some(json!({
            "echo": {"x-key": "[redacted]"},
            "[redacted]": 1,
            "nested": [{"url": "[redacted]", "form": "[redacted]"}],
            "b64": "[redacted]",
            "b64url": "[redacted]",
            "basic": "dXNlcjp[redacted]s=",
        }))
    );
    assert_eq!(
        out.text,
        concat!(
            r#"{"b64":"[redacted]","b64url":"[redacted]","basic":"dXNlcjp[redacted]s=","#,
            r#""echo":{"x-key":"[redacted]"},"nested":[{"form":"[redacted]","url":"[redacted]"}],"#,
            r#""[redacted]":1}"#
        )
    );
}

#[tokio::test]
async fn an_error_snippet_and_a_capped_body_are_scrubbed_before_they_are_cut() {
    let server = MockServer::start().await;
    let padding = "x".repeat(495);
    Mock::given(path("/denied"))
        .respond_with(ResponseTemplate::new(403).set_body_string(format!("{padding}{SECRET} tail")))
        .mount(&server)
        .await;
    Mock::given(path("/long"))
        .respond_with(ResponseTemplate::new(200).set_body_string(format!("0123456789{SECRET}")))
        .mount(&server)
        .await;
    let call = |p: &str, cap: usize| {
        let url = format!("{}/{p}", server.uri());
        async move {
            tool(json!({"http": {"url": url, "headers": {"x-key": "{{secret.K}}"}}}))
                .call(json!({}), local(cap))
                .await
        }
    };
    let err = call("denied", 1 << 20).await.unwrap_err();
    assert_eq!(err.to_string(), format!("HTTP 403: {padding}[reda"));
    // The download stops 20 bytes in, inside the echoed secret.
    let out = call("long", 20).await.unwrap();
    assert_eq!(out.text, "0123456789[redacted]");
}

#[tokio::test]
async fn a_request_carrying_a_secret_is_not_redirected_to_another_origin() {
    let (home, other) = (MockServer::start().await, MockServer::start().await);
    Mock::given(path("/away"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", format!("{}/landing", other.uri())),
        )
        .mount(&home)
        .await;
    Mock::given(path("/near"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "/landing"))
        .mount(&home)
        .await;
    for server in [&home, &other] {
        Mock::given(path("/landing"))
            .respond_with(ResponseTemplate::new(200).set_body_string("landed"))
            .mount(server)
            .await;
    }
    let call = |p: &str, headers: Value| {
        let t = tool(json!({"http": {"url": format!("{}/{p}", home.uri()), "headers": headers}}));
        async move { t.call(json!({}), local(1 << 20)).await }
    };
    let secret = json!({"x-key": "{{secret.K}}"});
    let err = call("away", secret.clone()).await.unwrap_err();
    assert_eq!(
        err,
        ToolError::Denied {
            reason: format!(
                "redirect from {} to {} refused: the request carries a secret or credentials, \
                 which are sent only to the origin the tool names",
                home.uri(),
                other.uri()
            )
        }
    );
    let err = call("away", json!({"Authorization": "Basic dTpw"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Denied { .. }), "{err:?}");
    assert_eq!(other.received_requests().await.unwrap().len(), 0);
    // Positive controls: within the origin, and without a secret, redirects are followed.
    assert_eq!(call("near", secret).await.unwrap().text, "landed");
    assert_eq!(
        call("away", json!({"x-plain": "v"})).await.unwrap().text,
        "landed"
    );
}

#[tokio::test]
async fn a_command_gets_only_the_allowed_environment() {
    let fx = Fx::new();
    let t = tool(json!({"command": {"argv": ["env"], "env": {"TOKEN": "{{secret.K}}"}}}));
    let out = t.call(json!({}), fx.ctx.clone()).await;
    let text = match out {
        Ok(out) => out.text,
        Err(ToolError::Denied { reason }) => {
            println!("skipped: {reason}");
            return;
        }
        Err(other) => panic!("{other}"),
    };
    let mut names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, _)| n)
        .collect();
    names.sort_unstable();
    let mut expected: Vec<&str> = toolbelt_tools::DEFAULT_ENV_ALLOW
        .iter()
        .copied()
        .filter(|n| std::env::var_os(n).is_some())
        .chain(["TMPDIR", "TOKEN"])
        .collect();
    expected.sort_unstable();
    expected.dedup();
    assert_eq!(names, expected);
    assert!(text.contains("TOKEN=[redacted]\n"), "{text}");
}

#[tokio::test]
async fn a_secret_cut_by_the_output_cap_of_a_command_is_redacted_on_both_sides() {
    let fx = Fx::new();
    let printf = |format: &str| {
        let script = format!("printf '{format}' \"$K\"");
        tool(json!({"command": {
            "argv": ["sh", "-c", script], "env": {"K": "{{secret.K}}"}, "max_output_bytes": 20
        }}))
    };
    // The cap keeps the first 15 bytes and the last 5: the secret straddles each edge.
    let head = printf("0123456789%syyyyyyyyyyyyyyyyyyyy");
    let tail = printf("xxxxxxxxxxxxxxxzzz%s");
    let (head, tail) = (
        head.call(json!({}), fx.ctx.clone()).await.unwrap().text,
        tail.call(json!({}), fx.ctx.clone()).await.unwrap().text,
    );
    assert_eq!(
        (head.as_str(), tail.as_str()),
        (
            "0123456789[redacted]\n[... 22 bytes truncated of 42 ...]\nyyyyy",
            "xxxxxxxxxxxxxxx\n[... 10 bytes truncated of 30 ...]\n[redacted]"
        )
    );
}
