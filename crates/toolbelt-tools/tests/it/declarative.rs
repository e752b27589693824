//! Declarative HTTP and command tools: templates, secrets, extraction, SSRF guard, validation.

use crate::Fx;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::{ToolContext, ToolError, ToolHandle, ToolPolicy, ToolSpec};
use toolbelt_tools::HttpConfig;
use toolbelt_tools::declarative::{Definition, Secrets};
use wiremock::matchers::{body_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn spec(name: &str) -> ToolSpec {
    ToolSpec::builder(name)
        .description("test")
        .parameters(json!({
            "type": "object",
            "properties": {"repo": {"type": "string"}, "n": {"type": "integer"}, "files": {"type": "array"}, "path": {"type": "string"}},
        }))
        .build()
        .unwrap()
}

fn build(name: &str, definition: Value, secrets: Secrets) -> Result<ToolHandle, String> {
    Definition::from_value(&definition)
        .and_then(|d| d.build(spec(name), secrets))
        .map_err(|e| e.to_string())
}

fn local() -> ToolContext {
    ToolContext::new().with(HttpConfig::new().allow_net("127.0.0.1/32").unwrap())
}

#[tokio::test]
async fn an_http_tool_fills_the_template_sends_the_secret_and_extracts() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/repos/a%20b/issues"))
        .and(query_param("n", "3"))
        .and(header("authorization", "Bearer s3cret"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"items": [{"title": "one"}, {"title": "two"}]})),
        )
        .mount(&server)
        .await;
    let tool = build(
        "issues",
        json!({"http": {
            "url": format!("{}/repos/{{{{repo}}}}/issues?n={{{{n}}}}", server.uri()),
            "headers": {"Authorization": "Bearer {{secret.GH}}"},
            "extract": "$.items[*].title"
        }}),
        Secrets::from_pairs([("GH", "s3cret")]),
    )
    .unwrap();
    let out = tool
        .call(json!({"repo": "a b", "n": 3}), local())
        .await
        .unwrap();
    assert_eq!(out.json, Some(json!(["one", "two"])));
}

#[tokio::test]
async fn query_parameters_left_out_are_not_sent_and_arrays_repeat() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
        .mount(&server)
        .await;
    let tool = build(
        "search",
        json!({"http": {
            "url": format!("{}/search?fixed=1", server.uri()),
            "query": {"repo": "{{repo}}", "n": "{{n}}", "file": "{{files}}"}
        }}),
        Secrets::default(),
    )
    .unwrap();
    tool.call(json!({"repo": "a&b", "files": ["x", "y z"]}), local())
        .await
        .unwrap();
    let sent = server.received_requests().await.unwrap();
    assert_eq!(
        sent[0].url.query(),
        Some("fixed=1&file=x&file=y%20z&repo=a%26b")
    );
    let err = build(
        "leak",
        json!({"http": {"url": "https://x", "query": {"k": "{{secret.K}}"}}}),
        Secrets::default(),
    )
    .unwrap_err();
    assert!(
        err.starts_with("invalid http.query.k: secrets may not go in the query"),
        "{err}"
    );
}

#[tokio::test]
async fn a_post_body_keeps_argument_types_and_errors_hide_secrets() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_json(
            json!({"count": 3, "label": "repo x", "files": ["a", "b"]}),
        ))
        .respond_with(ResponseTemplate::new(201).set_body_string("made"))
        .mount(&server)
        .await;
    Mock::given(method("PUT"))
        .respond_with(ResponseTemplate::new(403).set_body_string("bad token s3cret"))
        .mount(&server)
        .await;
    let definition = |m: &str| {
        json!({"http": {
            "method": m, "url": server.uri(),
            "headers": {"x-key": "{{secret.K}}"},
            "body": {"count": "{{n}}", "label": "repo {{repo}}", "files": "{{files}}"}
        }})
    };
    let secrets = Secrets::from_pairs([("K", "s3cret")]);
    let args = json!({"n": 3, "repo": "x", "files": ["a", "b"]});
    let post = build("post", definition("post"), secrets.clone()).unwrap();
    assert_eq!(post.call(args.clone(), local()).await.unwrap().text, "made");
    let put = build("put", definition("PUT"), secrets).unwrap();
    let err = put.call(args, local()).await.unwrap_err();
    assert_eq!(err.to_string(), "HTTP 403: bad token [redacted]");
}

#[tokio::test]
async fn the_ssrf_guard_applies_and_a_missing_secret_is_named() {
    let tool = build(
        "internal",
        json!({"http": {"url": "http://127.0.0.1:9/x", "headers": {"k": "{{secret.NOPE_NOT_SET_X}}"}}}),
        Secrets::from_pairs([("NOPE_NOT_SET_X", "v")]),
    )
    .unwrap();
    let err = tool.call(json!({}), ToolContext::new()).await.unwrap_err();
    assert!(matches!(err, ToolError::Denied { .. }), "{err:?}");
    let tool = build(
        "internal",
        json!({"http": {"url": "http://127.0.0.1:9/x", "headers": {"k": "{{secret.NOPE_NOT_SET_X}}"}}}),
        Secrets::from_pairs(Vec::<(String, String)>::new()),
    )
    .unwrap();
    let err = tool.call(json!({}), local()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "the secret `NOPE_NOT_SET_X` is not declared; ask the operator to set the environment \
         variable TOOLBELT_SECRET_NOPE_NOT_SET_X or add `NOPE_NOT_SET_X=...` to the secrets file"
    );
}

#[test]
fn commands_and_writing_requests_are_mutating_unless_declared_read_only() {
    let policy = |definition: Value| {
        build("t", definition, Secrets::default())
            .unwrap()
            .spec()
            .policy
            .clone()
    };
    let (read_only, mutating) = (ToolPolicy::read_only(), ToolPolicy::mutating());
    let cases = [
        (
            json!({"command": {"argv": ["touch", "{{path}}"]}}),
            &mutating,
        ),
        (
            json!({"command": {"argv": ["ls"], "read_only": true}}),
            &read_only,
        ),
        (
            json!({"http": {"url": "https://x", "method": "DELETE"}}),
            &mutating,
        ),
        (
            json!({"http": {"url": "https://x", "method": "post", "read_only": true}}),
            &read_only,
        ),
        (json!({"http": {"url": "https://x"}}), &read_only),
        (
            json!({"http": {"url": "https://x", "method": "HEAD"}}),
            &read_only,
        ),
    ];
    let got: Vec<_> = cases.iter().map(|(d, _)| policy(d.clone())).collect();
    let want: Vec<_> = cases.iter().map(|(_, p)| (*p).clone()).collect();
    assert_eq!(got, want);
    // A spec that already says mutating keeps its own approval setting.
    let spec = ToolSpec::builder("d")
        .description("d")
        .mutating()
        .needs_approval(false)
        .build()
        .unwrap();
    let handle = Definition::from_value(&json!({"http": {"url": "https://x", "method": "DELETE"}}))
        .and_then(|d| d.build(spec.clone(), Secrets::default()))
        .unwrap();
    assert_eq!(handle.spec().policy, spec.policy);
}

#[tokio::test]
async fn an_argument_starting_with_a_dash_is_refused_where_it_could_be_an_option() {
    let fx = Fx::new();
    fx.write("in.txt", "b\na\n");
    let sort = |argv: Value, extra: Value| {
        let mut command = json!({"argv": argv});
        command
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        build("sort", json!({"command": command}), Secrets::default()).unwrap()
    };
    let plain = sort(json!(["sort", "{{path}}"]), json!({}));
    let err = plain
        .call(json!({"path": "-ovictim.txt"}), fx.ctx.clone())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ToolError::invalid_argument(
            "/path",
            "`-ovictim.txt` starts with `-`, so `sort` would read it as an option; give a value \
             that does not start with `-` (for a file, `./-ovictim.txt`)"
        )
    );
    let list = sort(json!(["sort", "{{files}}"]), json!({}));
    let err = list
        .call(json!({"files": ["in.txt", "-ovictim.txt"]}), fx.ctx.clone())
        .await;
    assert!(
        matches!(err, Err(ToolError::InvalidArguments { .. })),
        "{err:?}"
    );
    assert!(!fx.dir.path().join("victim.txt").exists());
    // After `--` the value is an operand, and an allowed argument may start with `-`.
    let ended = sort(json!(["sort", "--", "{{path}}"]), json!({}));
    let err = ended
        .call(json!({"path": "-ovictim.txt"}), fx.ctx.clone())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("exited with status 2"), "{err}");
    assert!(!fx.dir.path().join("victim.txt").exists());
    let allowed = sort(
        json!(["sort", "{{path}}", "in.txt"]),
        json!({"allow_leading_dash": ["path"]}),
    );
    let out = allowed
        .call(json!({"path": "-r"}), fx.ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text, "b\na\n");
}

#[test]
fn invalid_definitions_name_the_field() {
    let cases = [
        (
            json!({"http": {"url": "ftp://x"}}),
            "invalid http.url: `ftp://x` must start with http:// or https://",
        ),
        (
            json!({"http": {"url": "http://x", "method": "FETCH"}}),
            "invalid http.method: `FETCH` is not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
        ),
        (
            json!({"http": {"url": "http://x/{{owner}}"}}),
            "invalid http.url: `{{owner}}` names no argument; the parameters declare: files, n, path, repo",
        ),
        (
            json!({"http": {"url": "http://x?k={{secret.K}}"}}),
            "invalid http.url: secrets may not go in the URL (it is logged by servers and proxies); send them in a header",
        ),
        (
            json!({"http": {"url": "http://x", "extract": "$.["}}),
            "invalid http.extract: `$.[` is not a JSONPath",
        ),
        (
            json!({"command": {"argv": []}}),
            "invalid command.argv: must name a program",
        ),
        (
            json!({"command": {"argv": ["{{repo}}"]}}),
            "invalid command.argv[0]: the program must be fixed, not a template",
        ),
        (
            json!({"command": {"argv": ["sort"], "allow_leading_dash": ["nope"]}}),
            "invalid command.allow_leading_dash: `nope` names no argument; the parameters declare: files, n, path, repo",
        ),
        (
            json!({"http": {"url": "http://x", "retries": 3}}),
            "invalid definition: unknown field `retries`",
        ),
    ];
    for (definition, expected) in cases {
        let err = build("t", definition, Secrets::default()).unwrap_err();
        assert!(err.starts_with(expected), "{err}\n  expected: {expected}");
    }
}

#[tokio::test]
async fn a_command_tool_runs_an_argv_without_a_shell() {
    let fx = Fx::new();
    let tool = build(
        "echo",
        json!({"command": {"argv": ["echo", "repo={{repo}}", "{{files}}"], "env": {"X": "{{secret.S}}"}}}),
        Secrets::from_pairs([("S", "hidden")]),
    )
    .unwrap();
    let out = tool
        .call(
            json!({"repo": "$(id); x", "files": ["a b", "c"]}),
            fx.ctx.clone(),
        )
        .await
        .unwrap();
    assert_eq!(out.text, "repo=$(id); x a b c\n");
    let env = build(
        "env",
        json!({"command": {"argv": ["sh", "-c", "echo $X; exit 3"], "env": {"X": "{{secret.S}}"}}}),
        Secrets::from_pairs([("S", "hidden")]),
    )
    .unwrap();
    let err = env.call(json!({}), fx.ctx.clone()).await.unwrap_err();
    assert_eq!(err.to_string(), "`sh` exited with status 3: [redacted]");
}

#[tokio::test]
async fn a_command_tool_runs_in_the_workspace_sandbox() {
    let fx = Fx::new();
    fx.write("notes.txt", "inside\n");
    let cat = build(
        "cat",
        json!({"command": {"argv": ["cat", "{{path}}"]}}),
        Secrets::default(),
    )
    .unwrap();
    // Inside the workspace: allowed (the working directory is the root).
    let out = cat
        .call(json!({"path": "notes.txt"}), fx.ctx.clone())
        .await
        .unwrap();
    assert_eq!(out.text, "inside\n");
    // Without a workspace in the context the tool refuses to run at all.
    let err = cat
        .call(json!({"path": "notes.txt"}), ToolContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("workspace is not configured"),
        "{err}"
    );
    // A working directory outside the workspace is refused before anything runs.
    let outside = build(
        "pwd",
        json!({"command": {"argv": ["pwd"], "cwd": "/etc"}}),
        Secrets::default(),
    )
    .unwrap();
    let err = outside.call(json!({}), fx.ctx.clone()).await.unwrap_err();
    assert!(
        err.to_string().contains("/cwd") || err.to_string().contains("outside"),
        "{err}"
    );
    if !toolbelt_tools::sandbox::probe().landlock() {
        println!("skipped: no Landlock, the confinement half of this test cannot run");
        return;
    }
    // Under Landlock the command cannot read what the workspace does not hold.
    let err = cat
        .call(json!({"path": "/etc/shadow"}), fx.ctx.clone())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("exited with status"), "{err}");
}

#[tokio::test]
async fn a_tool_reaches_an_internal_address_only_through_its_own_or_the_hosts_allow_list() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("internal"))
        .mount(&server)
        .await;
    let plain = build(
        "plain",
        json!({"http": {"url": server.uri()}}),
        Secrets::default(),
    )
    .unwrap();
    let opened = build(
        "opened",
        json!({"http": {"url": server.uri(), "allow_nets": ["127.0.0.1"]}}),
        Secrets::default(),
    )
    .unwrap();
    // No allow-list anywhere: the guard refuses loopback.
    let refused = plain.call(json!({}), ToolContext::new()).await.unwrap_err();
    assert!(matches!(refused, ToolError::Denied { .. }), "{refused:?}");
    // The tool's own allow-list opens it, twice (the second call reuses its client).
    for _ in 0..2 {
        let out = opened.call(json!({}), ToolContext::new()).await.unwrap();
        assert_eq!(out.text, "internal");
    }
    // The host's allow-list opens it for every tool.
    let out = plain.call(json!({}), local()).await.unwrap();
    assert_eq!(out.text, "internal");
}

#[test]
fn a_bad_allow_list_entry_is_named() {
    let err = build(
        "bad",
        json!({"http": {"url": "https://example.com", "allow_nets": ["10.0.0.0/8", "10.0.0.0/99"]}}),
        Secrets::default(),
    )
    .unwrap_err();
    assert!(err.contains("http.allow_nets[1]"), "{err}");
    let err = build(
        "bad",
        json!({"http": {"url": "https://example.com", "allow_hosts": ["a b"]}}),
        Secrets::default(),
    )
    .unwrap_err();
    assert!(err.contains("http.allow_hosts[0]"), "{err}");
}

#[tokio::test]
async fn a_metadata_address_opens_only_when_named_itself() {
    let tool = |nets: Value, hosts: Value| {
        build(
            "meta",
            json!({"http": {"url": "http://169.254.169.254/latest/meta-data/",
                "allow_nets": nets, "allow_hosts": hosts, "timeout_ms": 200}}),
            Secrets::default(),
        )
        .unwrap()
    };
    for (nets, hosts) in [
        (json!(["169.254.0.0/16"]), json!([])),
        (json!(["0.0.0.0/0"]), json!(["metadata.internal"])),
    ] {
        let err = tool(nets, hosts)
            .call(json!({}), ToolContext::new())
            .await
            .unwrap_err();
        let ToolError::Denied { reason } = &err else {
            panic!("{err:?}")
        };
        assert!(reason.contains("cloud metadata address"), "{reason}");
    }
    // Named exactly, the guard lets it through (nothing listens here: a connection error or a
    // timeout, not a refusal by the guard).
    let err = tool(json!(["169.254.169.254/32"]), json!([]))
        .call(json!({}), ToolContext::new())
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("cloud metadata address"), "{err}");
}
