//! shell_exec: exit codes, working directory, environment allow-list, timeouts and output caps.

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{CancellationToken, ToolError};
use toolbelt_tools::ShellConfig;

use crate::{Fx, is_denied};

#[tokio::test]
async fn returns_exit_code_stdout_and_stderr() {
    let fx = Fx::new();
    let out = fx
        .call(
            "shell_exec",
            json!({"command": "echo out; echo err >&2; exit 3"}),
        )
        .await
        .unwrap();
    assert_eq!(
        out.text,
        "exit code: 3\n--- stdout ---\nout\n--- stderr ---\nerr\n"
    );
    assert_eq!(out.json.unwrap()["exit_code"], 3);
}

#[tokio::test]
async fn runs_in_the_workspace_or_a_subdirectory_and_not_outside() {
    let fx = Fx::new();
    fx.write("sub/f.txt", "");
    let root = fx.root().display().to_string();
    assert_eq!(
        fx.ok("shell_exec", json!({"command": "pwd"})).await,
        format!("exit code: 0\n--- stdout ---\n{root}\n")
    );
    let sub = fx
        .ok("shell_exec", json!({"command": "ls", "cwd": "sub"}))
        .await;
    assert_eq!(sub, "exit code: 0\n--- stdout ---\nf.txt\n");
    assert!(is_denied(
        &fx.err("shell_exec", json!({"command": "ls", "cwd": "../.."}))
            .await
    ));
}

#[tokio::test]
async fn passes_only_allowed_environment_variables() {
    // cargo sets CARGO_MANIFEST_DIR for the test process; it is not on the allow-list.
    let inherited = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let fx = Fx::new();
    let cmd =
        json!({"command": "echo \"[$CARGO_MANIFEST_DIR][$EXTRA]\"", "env": {"EXTRA": "given"}});
    assert_eq!(
        fx.ok("shell_exec", cmd.clone()).await,
        "exit code: 0\n--- stdout ---\n[][given]\n"
    );
    let open = Fx::with(|cfg| cfg.with_shell(ShellConfig::new().allow_env("CARGO_MANIFEST_DIR")));
    let out = open.ok("shell_exec", cmd).await;
    assert_eq!(
        out,
        format!("exit code: 0\n--- stdout ---\n[{inherited}][given]\n")
    );
}

#[tokio::test]
async fn a_command_that_never_ends_is_killed_with_its_process_group() {
    let fx = Fx::new();
    let marker = fx.root().join("survivor");
    let cmd = format!(
        "(sleep 2; touch {}) & echo started; sleep 1000",
        marker.display()
    );
    let started = Instant::now();
    let err = fx
        .err("shell_exec", json!({"command": cmd, "timeout_secs": 1}))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("command timed out after 1s and its process group was killed"),
        "{msg}"
    );
    assert!(msg.contains("started"), "partial output is kept: {msg}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        !marker.exists(),
        "a background job of the command survived the timeout"
    );
}

#[tokio::test]
async fn background_jobs_do_not_hold_the_call_open_after_exit() {
    let fx = Fx::new();
    let started = Instant::now();
    let out = fx
        .ok("shell_exec", json!({"command": "sleep 1000 & echo done"}))
        .await;
    assert_eq!(out, "exit code: 0\n--- stdout ---\ndone\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn huge_output_is_capped_while_reading_with_a_marker() {
    let fx = Fx::with(|cfg| cfg.with_shell(ShellConfig::new().with_max_output_bytes(1000)));
    let out = fx
        .call(
            "shell_exec",
            json!({"command": "yes abcdefgh | head -c 50000000; echo END"}),
        )
        .await
        .unwrap();
    let json = out.json.unwrap();
    assert_eq!(json["stdout_bytes"], 50_000_004);
    assert_eq!(json["truncated"], true);
    assert!(
        out.text
            .contains("\n[... 49999004 bytes truncated of 50000004 ...]\n"),
        "{}",
        out.text
    );
    assert!(out.text.len() < 1300, "{} bytes", out.text.len());
    assert!(out.text.ends_with("END\n"), "the tail is kept");
}

#[tokio::test]
async fn cancellation_stops_the_command() {
    let fx = Fx::new();
    let cancel = CancellationToken::new();
    let ctx = fx.ctx.clone().with_cancellation(cancel.clone());
    let stop = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let err = fx
        .call_in(&ctx, "shell_exec", json!({"command": "sleep 1000"}))
        .await
        .unwrap_err();
    assert_eq!(err, ToolError::Cancelled);
    stop.await.unwrap();
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let fx = Fx::new();
    let marker = fx.root().join("survivor");
    // The subshell is a separate process: killing only `sh` would leave it running.
    let cmd = format!("(sleep 1; touch {}) & wait", marker.display());
    let call = fx.call("shell_exec", json!({"command": cmd}));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), call)
            .await
            .is_err()
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!marker.exists(), "the command outlived the dropped call");
}
