//! A Python client generated from the live `/api/v1/openapi.json` by openapi-python-client
//! (PyPI) creates a tool, an agent, binds them, runs the agent against a scripted model and
//! approves the tool call, using only the generated typed models.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::cli_run::{fake_openai, sse};
use crate::cli_serve::{http, serve_env};
use crate::ok;

/// The virtualenv scripts/setup-python-client.sh fills, if it did.
fn venv() -> Option<PathBuf> {
    let dir = std::env::var_os("TOOLBELT_PYTHON_CLIENT").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/python-client"),
        PathBuf::from,
    );
    let venv = dir.join("venv");
    if venv.join("bin/openapi-python-client").exists() {
        Some(venv)
    } else {
        println!(
            "skipped: openapi-python-client is not installed (run scripts/setup-python-client.sh)"
        );
        None
    }
}

/// `PATH` with the venv's tools first (the generator runs `ruff` on what it wrote).
fn path_with(venv: &Path) -> std::ffi::OsString {
    let mut paths = vec![venv.join("bin")];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

/// Generates the package `toolbelt_client` into `out` from the document `doc`; fails on any
/// warning of the generator.
fn generate(venv: &Path, doc: &Path, out: &Path) {
    let generated = Command::new(venv.join("bin/openapi-python-client"))
        .args(["generate", "--meta", "none", "--fail-on-warning", "--path"])
        .arg(doc)
        .arg("--output-path")
        .arg(out.join("toolbelt_client"))
        .env("PATH", path_with(venv))
        .output()
        .unwrap();
    let said = ok(&generated);
    assert!(!said.to_lowercase().contains("warning"), "{said}");
}

/// An admin token made on the command line for the database in `dir`.
fn admin_token(dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args([
            "tokens",
            "create",
            "py",
            "--scope",
            "admin",
            "--database-url",
            "sqlite://t.db",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    ok(&out).trim().to_owned()
}

fn stamp_call() -> String {
    let call = json!({"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "stamp", "arguments": "{\"text\": \"hello\"}"}});
    sse(
        &[json!({"role": "assistant", "tool_calls": [call]})],
        "tool_calls",
    )
}

#[test]
fn a_generated_python_client_creates_binds_runs_and_approves() {
    let Some(venv) = venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let token = admin_token(dir.path());
    let (model_url, model) = fake_openai(vec![
        stamp_call(),
        sse(&[json!({"content": "Stamped."})], "stop"),
    ]);
    let data = dir.path().join(".data").display().to_string();
    let env = [
        ("TOOLBELT_NO_EMBEDDER", "1"),
        ("TOOLBELT_MEMORY_EMBEDDER", "off"),
        ("TOOLBELT_DATA", data.as_str()),
        ("TOOLBELT_PROVIDER", "openai"),
        ("TOOLBELT_MODEL", "scripted"),
        ("OPENAI_API_KEY", "test-key"),
        ("OPENAI_BASE_URL", model_url.as_str()),
    ];
    let (mut server, port) = serve_env(dir.path(), "sqlite://t.db", &[], &env);
    let (status, doc) = http(port, "GET", "/api/v1/openapi.json", None, "");
    assert_eq!(status, 200, "{doc}");
    std::fs::write(dir.path().join("openapi.json"), doc).unwrap();
    let generated = dir.path().join("generated");
    generate(&venv, &dir.path().join("openapi.json"), &generated);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_flow.py");
    let out = Command::new(venv.join("bin/python"))
        .arg(script)
        .args([format!("http://127.0.0.1:{port}"), token])
        .env("PYTHONPATH", &generated)
        .output()
        .unwrap();
    server.kill().unwrap();
    let _ = server.wait();
    let mut report: Value = serde_json::from_str(&ok(&out)).unwrap();
    check_events(report["run"]["events"].take());
    assert_eq!(report, expected());
    // The model saw the tool's output as the result of its call.
    let bodies = model.join().unwrap();
    let last = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (last["role"].clone(), last["content"].clone()),
        (json!("tool"), json!("stamped hello\n"))
    );
}

/// The run asked, was approved, ran the tool and finished.
fn check_events(events: Value) {
    let events: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    let at = |kind: &str| {
        events
            .iter()
            .position(|e| *e == kind)
            .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
    };
    assert!(
        at("approval_requested") < at("approval_resolved"),
        "{events:?}"
    );
    assert!(
        at("approval_resolved") < at("tool_call_finished"),
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&"finished"), "{events:?}");
}

/// What the script reads through the generated models.
fn expected() -> Value {
    json!({
        "tool": {"name": "stamp", "source": "declarative", "version": 1,
            "argv": ["echo", "stamped {{text}}"], "effect": "mutating", "needs_approval": true},
        "agent": {"name": "clerk", "kind": "assistant", "revisions": [1, 2], "tools": ["stamp"]},
        "waiting": {"status": "waiting", "pending": [["stamp", {"text": "hello"}]], "listed": true},
        "approved": true,
        "run": {"status": "succeeded", "answer": "Stamped.",
            "tool_results": [["stamp", "stamped hello\n", false]], "events": null},
        "reads": ["StoredAgent", "StoredAgent", "ToolAvailability", "ToolSpec", "StoredTool",
            "VersionView", "RunPage"],
        "agent_view": {"tools": ["stamp"], "same_as_stored": true},
        "runs_listed": [true]
    })
}
