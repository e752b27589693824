//! The stored servers' checks, the sandboxed spawner and secret resolution.

use std::path::Path;

use super::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolbelt_mcp::{SpawnRefused, StdioCommand};
use toolbelt_tools::sandbox::SandboxMode;

#[test]
fn a_command_is_allowed_only_as_written_in_the_allow_list() {
    let stdio = |command: &str| check_config("x", &json!({"command": command})).unwrap();
    let allowed = vec!["node".to_owned(), "/opt/uv/bin/uvx".to_owned()];
    assert_eq!(command_problem(&allowed, &stdio("node")), None);
    assert_eq!(command_problem(&allowed, &stdio("/opt/uv/bin/uvx")), None);
    for refused in ["sh", "/tmp/x/node", "uvx", "./node"] {
        let problem = command_problem(&allowed, &stdio(refused)).unwrap();
        assert_eq!(problem.pointer, "/command");
        assert!(
            problem.message.contains(&format!("`{refused}`"))
                && problem.message.contains("`node`, `/opt/uv/bin/uvx`")
                && problem.message.contains("TOOLBELT_MCP_COMMANDS"),
            "{}",
            problem.message
        );
    }
    let empty = command_problem(&[], &stdio("node")).unwrap();
    assert!(empty.message.contains("HTTP only"), "{}", empty.message);
    let http = check_config("x", &json!({"url": "https://example.test/mcp"})).unwrap();
    assert_eq!(command_problem(&[], &http), None);
}

/// What a stdio process started by the server's spawner prints, run as `sh -c script`.
async fn run_spawned(root: &Path, script: &str) -> Result<String, SpawnRefused> {
    let spawner = sandboxed_spawner(root.to_path_buf(), SandboxMode::WorkspaceWrite, Vec::new());
    let mut process = spawner(StdioCommand::new(
        "probe",
        "sh",
        vec!["-c".to_owned(), script.to_owned()],
    ))
    .await?;
    process.stdin.shutdown().await.unwrap();
    let mut out = String::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        process.stdout.read_to_string(&mut out),
    )
    .await
    .unwrap()
    .unwrap();
    Ok(out)
}

#[tokio::test]
async fn a_stdio_server_runs_in_the_sandbox_and_cannot_read_outside_the_workspace() {
    let workspace = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(workspace.path()).unwrap();
    std::fs::write(root.join("inside.txt"), "inside-ok").unwrap();
    // A file the server's process can read, outside the workspace.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "top-secret-value").unwrap();
    assert!(std::fs::read_to_string(&secret).is_ok());
    let script = format!(
        "cat inside.txt; echo; cat {} 2>&1; echo; echo home=$HOME; touch \"$HOME/h\" && echo home-writable",
        secret.display()
    );
    if !toolbelt_tools::sandbox::probe().landlock() {
        let refused = run_spawned(&root, &script).await.unwrap_err();
        assert!(refused.permanent, "{refused:?}");
        assert!(
            refused.reason.contains("sandbox is unavailable"),
            "{refused:?}"
        );
        println!("skipped: the kernel has no Landlock; the spawn was refused as it must be");
        return;
    }
    let out = run_spawned(&root, &script).await.unwrap();
    assert!(out.contains("inside-ok"), "{out}");
    assert!(
        !out.contains("top-secret-value"),
        "the sandbox let it read {out}"
    );
    assert!(out.contains("Permission denied"), "{out}");
    assert!(out.contains("home-writable"), "{out}");
    // Not started at all when the program does not exist: a permanent refusal.
    let spawner = sandboxed_spawner(root.clone(), SandboxMode::WorkspaceWrite, Vec::new());
    let missing = spawner(StdioCommand::new(
        "probe",
        "/nonexistent/mcp-server",
        Vec::new(),
    ))
    .await
    .unwrap_err();
    assert!(
        missing.permanent && missing.reason.contains("could not start"),
        "{missing:?}"
    );
}

#[test]
fn secrets_are_referenced_by_name_and_filled_in_when_connecting() {
    let config = check_config(
        "gh",
        &json!({"url": "https://example.test/mcp", "bearerToken": "{{secret.GH_TOKEN}}",
                "headers": {"X-Team": "team-{{ secret.TEAM }}"}}),
    )
    .unwrap();
    let secrets = Secrets::from_pairs([("GH_TOKEN", "t0k"), ("TEAM", "core")]);
    let resolved = resolve_secrets(&config, &secrets).unwrap();
    assert_eq!(resolved.bearer_token.as_deref(), Some("t0k"));
    assert_eq!(resolved.headers["X-Team"], "team-core");
    let missing = resolve_secrets(&config, &Secrets::from_pairs([("TEAM", "core")]))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("`GH_TOKEN` is not declared"), "{missing}");
    // A plain environment variable is not a secret, even when it exists.
    let env = Secrets::from_vars([("GH_TOKEN", "plain"), ("TOOLBELT_SECRET_TEAM", "core")]);
    assert_eq!(
        resolve_secrets(&config, &env).unwrap_err().to_string(),
        "the secret `GH_TOKEN` is not declared; ask the operator to set the environment \
         variable TOOLBELT_SECRET_GH_TOKEN or add `GH_TOKEN=...` to the secrets file"
    );
    let literal = check_config(
        "gh",
        &json!({"url": "https://example.test/mcp", "bearerToken": "ghp_secret"}),
    )
    .unwrap_err();
    assert_eq!(literal.pointer, "/bearerToken");
    // The sandbox of a stored server is the host's to set, never the record's.
    let escape = check_config(
        "x",
        &json!({"command": "node", "sandbox": {"mode": "full-access"}}),
    )
    .unwrap_err();
    assert_eq!(escape.pointer, "/sandbox");
    assert!(
        escape.message.contains("server's own sandbox"),
        "{escape:?}"
    );
    for header in ["Authorization", "X-Api-Key", "Cookie", "private-token"] {
        let literal = check_config(
            "gh",
            &json!({"url": "https://example.test/mcp", "headers": {header: "Bearer ghp_secret"}}),
        )
        .unwrap_err();
        assert_eq!(literal.pointer, format!("/headers/{header}"));
        assert!(
            literal.message.contains("{{secret.API_TOKEN}}"),
            "{}",
            literal.message
        );
    }
    check_config(
        "gh",
        &json!({"url": "https://example.test/mcp",
                "headers": {"Authorization": "Bearer {{secret.GH_TOKEN}}", "X-Team": "core"}}),
    )
    .unwrap();
    let neither = check_config("x", &json!({"args": ["a"]})).unwrap_err();
    assert_eq!(neither.pointer, "/command");
    // Fields of other clients' configs are accepted as they come (the mcpServers shape).
    assert!(check_config("x", &json!({"command": "a", "autoApprove": []})).is_ok());
}
