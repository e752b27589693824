//! The command sandbox: every escape attempt fails under the default policy, and
//! each has a positive control showing the same command works when allowed.

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::json;
use toolbelt_core::ToolError;
use toolbelt_tools::ShellConfig;
use toolbelt_tools::sandbox::{Sandbox, SandboxMode, SandboxPolicy, probe};

use crate::{Fx, exists, outside_dir};

/// Whether Landlock works here; prints the skip line the project asks for when not.
fn landlock_or_skip() -> bool {
    let ok = probe().landlock();
    if !ok {
        eprintln!("skipped: no Landlock ({})", probe().summary());
    }
    ok
}

fn with_policy(policy: SandboxPolicy) -> Fx {
    Fx::with(|cfg| cfg.with_shell(ShellConfig::new().with_sandbox(policy)))
}

fn exit_code(out: &toolbelt_core::ToolOutput) -> i64 {
    out.json.as_ref().unwrap()["exit_code"].as_i64().unwrap()
}

async fn run(fx: &Fx, command: &str) -> toolbelt_core::ToolOutput {
    fx.call("shell_exec", json!({ "command": command }))
        .await
        .unwrap()
}

#[tokio::test]
async fn reading_etc_shadow_is_refused() {
    if !landlock_or_skip() {
        return;
    }
    let out = run(&Fx::new(), "cat /etc/shadow").await;
    assert_ne!(exit_code(&out), 0, "{}", out.text);
    assert!(out.text.contains("Permission denied"), "{}", out.text);
    // Control: the file is readable to this process, so the refusal is the sandbox's.
    if std::fs::read("/etc/shadow").is_ok() {
        let open = with_policy(SandboxPolicy::new().with_mode(SandboxMode::FullAccess));
        assert_eq!(exit_code(&run(&open, "cat /etc/shadow").await), 0);
    }
}

#[tokio::test]
async fn writing_outside_the_workspace_is_refused_and_inside_allowed() {
    if !landlock_or_skip() {
        return;
    }
    let (_outside, dir) = outside_dir();
    let target = dir.join("x");
    let fx = Fx::new();
    let out = run(&fx, &format!("echo escaped > {}", target.display())).await;
    assert_ne!(exit_code(&out), 0, "{}", out.text);
    assert!(!exists(&target), "the write outside the workspace happened");
    let out = run(&fx, "echo x > /tmp/x-toolbelt-sandbox-test").await;
    assert_ne!(exit_code(&out), 0, "{}", out.text);
    assert!(out.text.contains("Permission denied"), "{}", out.text);
    // Inside the workspace, and in the private TMPDIR, writing works.
    let out = run(
        &fx,
        "echo in > inside.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    )
    .await;
    assert_eq!(exit_code(&out), 0, "{}", out.text);
    assert_eq!(fx.read("inside.txt"), "in\n");
}

#[tokio::test]
async fn read_only_mode_refuses_writes_in_the_workspace_but_reads() {
    if !landlock_or_skip() {
        return;
    }
    let fx = with_policy(SandboxPolicy::new().with_mode(SandboxMode::ReadOnly));
    fx.write("seen.txt", "hello");
    let out = run(&fx, "cat seen.txt").await;
    assert_eq!(out.text, "exit code: 0\n--- stdout ---\nhello\n");
    let out = run(&fx, "echo no > new.txt").await;
    assert_ne!(exit_code(&out), 0, "{}", out.text);
    assert!(!exists(&fx.root().join("new.txt")));
}

#[tokio::test]
async fn a_symlink_in_the_workspace_pointing_out_is_not_followed() {
    if !landlock_or_skip() {
        return;
    }
    let (_outside, dir) = outside_dir();
    let fx = Fx::new();
    std::os::unix::fs::symlink(dir.join("secret.txt"), fx.root().join("link")).unwrap();
    std::os::unix::fs::symlink(&dir, fx.root().join("dirlink")).unwrap();
    for cmd in [
        "cat link",
        "cat dirlink/secret.txt",
        "echo overwritten > link",
        "ls dirlink",
    ] {
        let out = run(&fx, cmd).await;
        assert_ne!(exit_code(&out), 0, "{cmd}: {}", out.text);
        assert!(!out.text.contains("s3cret"), "{cmd}: {}", out.text);
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("secret.txt")).unwrap(),
        "s3cret"
    );
}

/// A listener that records whether anything connected.
fn listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

fn accepted(listener: &TcpListener) -> bool {
    match listener.accept() {
        Ok((mut stream, _)) => {
            let mut buf = [0u8; 16];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
            let _ = stream.read(&mut buf);
            true
        }
        Err(_) => false,
    }
}

#[tokio::test]
async fn network_is_denied_by_default_and_allowed_by_policy() {
    if !landlock_or_skip() {
        return;
    }
    let has_curl = std::process::Command::new("sh")
        .args(["-c", "command -v curl"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_curl {
        eprintln!("skipped: curl is not installed");
        return;
    }
    if !probe().namespaces && !probe().landlock_network() {
        eprintln!(
            "skipped: neither a network namespace nor Landlock TCP rules here ({})",
            probe().summary()
        );
        return;
    }
    let (l, port) = listener();
    let cmd = format!("curl -sS --max-time 3 http://127.0.0.1:{port}/ ; echo rc=$?");
    let out = run(&Fx::new(), &cmd).await;
    assert!(!out.text.contains("rc=0"), "{}", out.text);
    assert!(!accepted(&l), "the sandboxed curl reached the listener");
    // Control: with the network allowed the same connection arrives.
    let open = with_policy(SandboxPolicy::new().with_network(true));
    let (l, port) = listener();
    let cmd = format!("curl -sS --max-time 1 http://127.0.0.1:{port}/ ; echo rc=$?");
    let _ = run(&open, &cmd).await;
    assert!(
        accepted(&l),
        "with the network allowed, curl should connect"
    );
}

/// The host PID of a process the command started, written to `pidfile` by the
/// process itself (procfs shows host PIDs even inside a PID namespace).
const SETSID_SLEEPER: &str = "setsid sh -c 'read -r pid rest < /proc/self/stat; echo $pid > pidfile; exec sleep 1000' & \
     while [ ! -s pidfile ]; do sleep 0.05; done";

async fn gone(pid: &str) -> bool {
    for _ in 0..50 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            // A zombie is dead; only its parent's wait is missing.
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|s| s.trim_start().starts_with('Z')) =>
            {
                return true;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    false
}

#[tokio::test]
async fn a_setsid_process_does_not_survive_the_command() {
    if !landlock_or_skip() {
        return;
    }
    if !probe().namespaces {
        eprintln!("skipped: no PID namespaces ({})", probe().summary());
        return;
    }
    let fx = Fx::new();
    let out = run(&fx, SETSID_SLEEPER).await;
    assert_eq!(exit_code(&out), 0, "{}", out.text);
    let pid = fx.read("pidfile").trim().to_owned();
    assert!(!pid.is_empty());
    assert!(
        gone(&pid).await,
        "setsid'd process {pid} survived the command"
    );
}

#[tokio::test]
async fn a_setsid_process_does_not_survive_a_timeout() {
    if !landlock_or_skip() {
        return;
    }
    if !probe().namespaces {
        eprintln!("skipped: no PID namespaces ({})", probe().summary());
        return;
    }
    let fx = Fx::new();
    let cmd = format!("{SETSID_SLEEPER}; sleep 1000");
    let err = fx
        .err("shell_exec", json!({"command": cmd, "timeout_secs": 1}))
        .await;
    assert!(matches!(err, ToolError::Failed { .. }), "{err}");
    let pid = fx.read("pidfile").trim().to_owned();
    assert!(gone(&pid).await, "setsid'd process {pid} survived the kill");
}

#[tokio::test]
async fn the_public_api_runs_an_argv_confined() {
    if !landlock_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let sandbox = Sandbox::new(&root, SandboxPolicy::new());
    let mut cmd = sandbox.command(&["cat", "/etc/shadow"]).unwrap();
    cmd.stderr(std::process::Stdio::null());
    let mut child = sandbox.spawn(cmd).await.unwrap();
    assert!(child.confinement.landlock);
    let status = child.child.wait().await.unwrap();
    assert!(!status.success());
    let cmd = sandbox.command(&["touch", "made"]).unwrap();
    let mut child = sandbox.spawn(cmd).await.unwrap();
    assert!(child.child.wait().await.unwrap().success());
    assert!(root.join("made").exists());
    assert!(sandbox.command::<&str>(&[]).is_err());
}

#[test]
fn modes_parse_from_their_names_and_reject_others() {
    for mode in [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::FullAccess,
    ] {
        assert_eq!(mode.as_str().parse::<SandboxMode>().unwrap(), mode);
    }
    let err = "yolo".parse::<SandboxMode>().unwrap_err().to_string();
    assert!(
        err.contains("\"yolo\"") && err.contains("workspace-write"),
        "{err}"
    );
}

#[test]
fn denied_unavailable_error_names_the_mode() {
    // The message a host sees when the kernel lacks Landlock.
    let err = toolbelt_tools::sandbox::SandboxError::Unavailable {
        mode: SandboxMode::WorkspaceWrite,
        reason: "the kernel has no Landlock".to_owned(),
    };
    let msg = err.to_string();
    assert!(
        msg.contains("`workspace-write`") && msg.contains("full-access"),
        "{msg}"
    );
}
