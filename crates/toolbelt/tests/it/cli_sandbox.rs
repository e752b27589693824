//! `toolbelt tools call shell_exec` runs commands in the sandbox; `--sandbox` picks the mode.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

fn call(root: &str, command: &str, extra: &[&str]) -> Output {
    let args = serde_json::json!({ "command": command }).to_string();
    crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args([
                "tools",
                "call",
                "shell_exec",
                &args,
                "--root",
                root,
                "--yes",
            ])
            .args(extra),
        "",
    )
}

#[test]
fn shell_exec_is_confined_and_the_mode_flag_applies() {
    if !toolbelt_tools::sandbox::probe().landlock() {
        eprintln!("skipped: no Landlock");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let out = call(root, "cat /etc/shadow", &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Permission denied"), "{stdout}");
    let out = call(root, "echo hi > made.txt", &[]);
    assert!(out.status.success());
    assert!(dir.path().join("made.txt").exists());
    let out = call(root, "echo hi > other.txt", &["--sandbox", "read-only"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.starts_with("exit code: 0"), "{stdout}");
    assert!(!dir.path().join("other.txt").exists());
    let bad = call(root, "true", &["--sandbox", "yolo"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("unknown sandbox mode \"yolo\""),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
