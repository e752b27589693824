//! Integration tests of the `toolbelt` CLI and facade.

mod cli_client;
mod cli_db;
mod cli_import;
mod cli_mcp;
mod cli_mcp_auth;
mod cli_mcp_stored;
mod cli_memory_routines;
mod cli_route;
mod cli_run;
mod cli_run_models;
mod cli_run_store;
mod cli_run_stored;
mod cli_sandbox;
mod cli_serve;
mod cli_serve_log;
#[cfg(all(feature = "otel", unix))]
mod cli_serve_otel;
mod cli_skills;
mod cli_store;
mod cli_tools;
mod entry_points;
mod memory_routines;
mod python_client;
mod tool_file;

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The standard output of a command that must succeed (its output shown if it did not).
pub(crate) fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The standard error of a command that must fail.
pub(crate) fn err(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `command` with `stdin` fed to it and its output captured.
fn run_with_stdin(command: &mut Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {command:?}: {e}"));
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(stdin.as_bytes())
            .unwrap_or_else(|e| panic!("could not write stdin: {e}"));
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("could not wait for {command:?}: {e}"))
}
