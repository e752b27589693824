//! The client side against the npm reference servers: list, call, errors,
//! structured content and images, progress, and a server killed mid-call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{
    Effect, ExecEvent, Executor, ToolCall, ToolContext, ToolError, ToolErrorKind, ToolKind,
};
use toolbelt_mcp::{McpClient, McpEvent, McpServerConfig, ProgressSink, ServerStatus};

use crate::support::{call, eventually, everything_config, npm_server, quick_backoff, start};

#[tokio::test]
async fn everything_tools_are_imported_with_tags_policy_and_real_names() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let (_client, registry) = start("everything", everything_config(&entry)).await;
    let names = registry.all().names();
    for expected in [
        "everything.echo",
        "everything.get-sum",
        "everything.get-tiny-image",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} missing from {names:?}"
        );
    }
    let echo = registry.get("everything.echo").unwrap();
    let spec = echo.spec();
    assert_eq!(spec.kind, ToolKind::Mcp);
    assert!(spec.has_tag("mcp") && spec.has_tag("mcp:everything"));
    assert_eq!(spec.metadata["mcp"]["name"], json!("echo"));
    let sum = registry.get("everything.get-sum").unwrap();
    assert_eq!(
        sum.spec().policy.effect,
        Effect::ReadOnly,
        "readOnlyHint maps to read-only"
    );
    assert_eq!(
        registry.select("mcp:everything").unwrap().len(),
        names.len()
    );
}

#[tokio::test]
async fn calls_return_text_structured_content_and_images() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let (_client, registry) = start("everything", everything_config(&entry)).await;
    let echo = call(&registry, "everything.echo", json!({"message": "hi"})).await;
    assert_eq!(echo.outcome.unwrap().text, "Echo: hi");
    let sum = call(&registry, "everything.get-sum", json!({"a": 2, "b": 3})).await;
    assert!(sum.outcome.unwrap().text.contains('5'));
    let weather = call(
        &registry,
        "everything.get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    let json = weather.outcome.unwrap().json.unwrap();
    assert!(json["temperature"].is_number(), "{json}");
    let image = call(&registry, "everything.get-tiny-image", json!({}))
        .await
        .outcome
        .unwrap();
    assert!(image.text.contains("[image image/png"), "{}", image.text);
    let blocks = image.json.unwrap()["content"].as_array().unwrap().clone();
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == json!("image") && b["data"].as_str().unwrap().len() > 100)
    );
}

#[tokio::test]
async fn bad_arguments_are_refused_with_the_json_pointer_before_the_server_sees_them() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let (_client, registry) = start("everything", everything_config(&entry)).await;
    let result = call(&registry, "everything.get-sum", json!({"a": "two", "b": 3})).await;
    let err = result.outcome.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidArguments);
    assert!(err.to_string().contains("/a"), "{err}");
}

#[tokio::test]
async fn progress_notifications_reach_the_sink_and_the_event_streams() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let (client, registry) = start("everything", everything_config(&entry)).await;
    let mut events = client.subscribe();
    let executor = Executor::new();
    let mut exec_events = executor.subscribe();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let ctx = ToolContext::new().with(ProgressSink::new(move |p| {
        sink_seen
            .lock()
            .unwrap()
            .push((p.call_id.clone(), p.progress, p.total))
    }));
    let tool = "everything.trigger-long-running-operation";
    let call_ = ToolCall::new("call-7", tool, json!({"duration": 0.3, "steps": 3}));
    let result = executor.execute(&registry.all(), call_, &ctx).await;
    assert!(result.outcome.unwrap().text.contains("completed"));
    let id = || "call-7".to_owned();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (id(), 1.0, Some(3.0)),
            (id(), 2.0, Some(3.0)),
            (id(), 3.0, Some(3.0))
        ]
    );
    // The executor's events carry the same reports, between the call's start and finish.
    let mut steps = Vec::new();
    while let Ok(event) = exec_events.try_recv() {
        match event {
            ExecEvent::CallStarted { .. } => steps.push("started".to_owned()),
            ExecEvent::Progress(p) => {
                assert_eq!((p.call_id.as_str(), p.tool.as_str()), ("call-7", tool));
                steps.push(format!("{}/{}", p.progress, p.total.unwrap()));
            }
            ExecEvent::CallFinished { .. } => steps.push("finished".to_owned()),
            _ => {}
        }
    }
    assert_eq!(steps, ["started", "1/3", "2/3", "3/3", "finished"]);
    let mut progress = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let McpEvent::Progress {
            call_id,
            progress: p,
            tool: name,
            ..
        } = event
        {
            assert_eq!((call_id.as_deref(), name.as_str()), (Some("call-7"), tool));
            progress.push(p);
        }
    }
    assert_eq!(progress, [1.0, 2.0, 3.0]);
}

#[tokio::test]
async fn cancelling_a_call_ends_it_at_once() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let (_client, registry) = start("everything", everything_config(&entry)).await;
    let ctx = ToolContext::new();
    let cancel = ctx.cancellation().clone();
    let call_ = ToolCall::new(
        "c",
        "everything.trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    );
    let started = std::time::Instant::now();
    let (executor, tools) = (Executor::new(), registry.all());
    let (result, ()) = tokio::join!(executor.execute(&tools, call_, &ctx), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    assert_eq!(result.outcome.unwrap_err(), ToolError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    // The connection is still usable afterwards.
    let echo = call(&registry, "everything.echo", json!({"message": "after"})).await;
    assert_eq!(echo.outcome.unwrap().text, "Echo: after");
}

#[tokio::test]
async fn a_server_killed_mid_call_is_down_then_restarted_with_its_tools() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo $$ > '{}'; exec node '{}' stdio",
        pid_file.display(),
        entry.display()
    );
    let config = McpServerConfig::stdio("sh", ["-c".to_owned(), script]);
    let (client, registry) = start("everything", config).await;
    let mut status = client.watch_status();
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    let call_ = ToolCall::new(
        "c",
        "everything.trigger-long-running-operation",
        json!({"duration": 20, "steps": 20}),
    );
    let (executor, tools, ctx) = (Executor::new(), registry.all(), ToolContext::new());
    let (result, ()) = tokio::join!(executor.execute(&tools, call_, &ctx), async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        std::process::Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap();
    });
    let err = result.outcome.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Failed, "{err}");
    assert!(err.to_string().contains("everything"), "{err}");
    status
        .wait_for(|s| matches!(s, ServerStatus::Down { .. }))
        .await
        .unwrap();
    assert!(client.why_unavailable().is_some_and(|w| w.contains("down")));
    eventually(30, "the restart", || client.status().is_up()).await;
    eventually(5, "tools back in the registry", || {
        registry.contains("everything.echo")
    })
    .await;
    let new_pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_ne!(new_pid, pid, "a new process was started");
    let echo = call(&registry, "everything.echo", json!({"message": "back"})).await;
    assert_eq!(echo.outcome.unwrap().text, "Echo: back");
}

#[tokio::test]
async fn while_a_server_is_down_its_tools_leave_the_registry_and_calls_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(toolbelt_core::Registry::new());
    let client = McpClient::builder(
        "ghost",
        McpServerConfig::stdio(
            dir.path().join("missing").display().to_string(),
            Vec::<String>::new(),
        ),
    )
    .registry(registry.clone())
    .backoff(quick_backoff())
    .start()
    .unwrap();
    let err = client.ready(Duration::from_millis(500)).await.unwrap_err();
    assert!(err.to_string().contains("cannot start"), "{err}");
    assert!(registry.is_empty());
    assert!(client.tools().is_empty());
}

#[tokio::test]
async fn filesystem_server_reads_lists_and_refuses_paths_outside_its_roots() {
    let Some(entry) = npm_server("server-filesystem") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello from disk").unwrap();
    let root = dir.path().canonicalize().unwrap();
    let config = McpServerConfig::stdio(
        "node",
        [entry.display().to_string(), root.display().to_string()],
    );
    let (_client, registry) = start("fs", config).await;
    let path = root.join("hello.txt").display().to_string();
    let read = call(&registry, "fs.read_text_file", json!({"path": path})).await;
    assert_eq!(read.outcome.unwrap().text, "hello from disk");
    let list = call(
        &registry,
        "fs.list_directory",
        json!({"path": root.display().to_string()}),
    )
    .await;
    assert!(list.outcome.unwrap().text.contains("hello.txt"));
    let outside = call(
        &registry,
        "fs.read_text_file",
        json!({"path": "/etc/hostname"}),
    )
    .await;
    let err = outside.outcome.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Failed);
    assert!(
        err.to_string().to_lowercase().contains("denied") || err.to_string().contains("outside"),
        "{err}"
    );
    let write = registry.get("fs.write_file").unwrap();
    assert_eq!(write.spec().policy.effect, Effect::Mutating);
}

#[tokio::test]
async fn everything_over_streamable_http_with_headers_and_a_bearer_token() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = tokio::process::Command::new("node")
        .arg(&entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    eventually(20, "the HTTP server to listen", || {
        std::net::TcpStream::connect(&addr).is_ok()
    })
    .await;
    let mut config = McpServerConfig::http(format!("http://{addr}/mcp"))
        .with_bearer_token("not-checked-by-this-server");
    config
        .headers
        .insert("X-Team".to_owned(), "toolbelt".to_owned());
    let (client, registry) = start("remote", config).await;
    assert!(client.status().is_up());
    let echo = call(&registry, "remote.echo", json!({"message": "over http"})).await;
    assert_eq!(echo.outcome.unwrap().text, "Echo: over http");
    server.kill().await.unwrap();
}
