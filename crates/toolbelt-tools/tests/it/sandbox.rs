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

/// Prints the skip line the project asks for, or fails when `TOOLBELT_REQUIRE_SANDBOX` is
/// set (`.ci/run` sets it for a root CI machine, where every guard must hold: a guard that
/// silently stopped holding would otherwise pass as a skip).
fn skip(why: &str) {
    assert!(
        std::env::var_os("TOOLBELT_REQUIRE_SANDBOX").is_none(),
        "TOOLBELT_REQUIRE_SANDBOX is set, but {why}"
    );
    eprintln!("skipped: {why}");
}

/// Whether Landlock works here; prints the skip line the project asks for when not.
fn landlock_or_skip() -> bool {
    let ok = probe().landlock();
    if !ok {
        skip(&format!("no Landlock ({})", probe().summary()));
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

/// A command that starts a `setsid` sleeper whose command line carries `tag`,
/// waits until the sleeper runs, and leaves a `started` file as evidence.
/// (The pattern `1000[.]tag` does not match grep's own command line.)
fn setsid_sleeper(tag: &str) -> String {
    format!(
        "setsid sh -c 'exec sleep 1000.{tag}' & \
         while ! grep -qs '1000[.]{tag}' /proc/[0-9]*/cmdline; do sleep 0.05; done; touch started"
    )
}

/// A tag no other test uses.
fn unique_tag() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether a live (non-zombie) process on the host runs `sleep 1000.<tag>`.
fn sleeper_alive(tag: &str) -> bool {
    let wanted = format!("sleep\01000.{tag}\0");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let dir = entry.path();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        // A zombie is dead; only its parent's wait is missing.
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        cmdline == wanted.as_bytes() && !zombie
    })
}

async fn gone(tag: &str) -> bool {
    for _ in 0..50 {
        if !sleeper_alive(tag) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn a_setsid_process_does_not_survive_the_command() {
    if !landlock_or_skip() {
        return;
    }
    if !probe().namespaces {
        skip(&format!("no PID namespaces ({})", probe().summary()));
        return;
    }
    let fx = Fx::new();
    let tag = unique_tag();
    let out = run(&fx, &setsid_sleeper(&tag)).await;
    assert_eq!(exit_code(&out), 0, "{}", out.text);
    assert!(exists(&fx.root().join("started")));
    assert!(
        gone(&tag).await,
        "the setsid'd sleeper survived the command"
    );
}

#[tokio::test]
async fn a_setsid_process_does_not_survive_a_timeout() {
    if !landlock_or_skip() {
        return;
    }
    if !probe().namespaces {
        skip(&format!("no PID namespaces ({})", probe().summary()));
        return;
    }
    let fx = Fx::new();
    let tag = unique_tag();
    let cmd = format!("{}; sleep 1000", setsid_sleeper(&tag));
    let err = fx
        .err("shell_exec", json!({"command": cmd, "timeout_secs": 1}))
        .await;
    assert!(matches!(err, ToolError::Failed { .. }), "{err}");
    assert!(exists(&fx.root().join("started")));
    assert!(gone(&tag).await, "the setsid'd sleeper survived the kill");
}

/// Whether the namespaces and a private `/proc` work here; prints the skip line when not.
fn namespaces_or_skip() -> bool {
    let ok = landlock_or_skip() && probe().namespaces;
    if !ok {
        skip(&format!("no namespaces ({})", probe().summary()));
    }
    ok
}

fn stdout(out: &toolbelt_core::ToolOutput) -> String {
    out.json.as_ref().unwrap()["stdout"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_server_environment_is_unreadable() {
    if !landlock_or_skip() {
        return;
    }
    let own = std::fs::read(format!("/proc/{}/environ", std::process::id())).unwrap();
    assert!(
        !own.is_empty(),
        "the test process has an environment to steal"
    );
    let cmd = format!("cat /proc/{}/environ", std::process::id());
    let out = run(&Fx::new(), &cmd).await;
    assert_ne!(exit_code(&out), 0, "{}", out.text);
    assert_eq!(stdout(&out), "");
}

#[tokio::test]
async fn proc_lists_only_the_command_s_own_processes() {
    if !namespaces_or_skip() {
        return;
    }
    // The glob is expanded by the shell itself, so the only process then is the shell.
    let cmd = "for p in /proc/[0-9]*; do cat $p/comm; done";
    let out = run(&Fx::new(), cmd).await;
    assert_eq!(stdout(&out), "sh\n", "{}", out.text);
}

#[tokio::test]
async fn every_capability_is_dropped_and_no_new_privs_set() {
    if !landlock_or_skip() {
        return;
    }
    if !probe().bounding_set_cleared {
        skip(&format!(
            "the bounding set cannot be emptied here ({})",
            probe().summary()
        ));
        return;
    }
    let out = run(&Fx::new(), "grep -E '^(Cap|NoNewPrivs)' /proc/self/status").await;
    let zero = "0000000000000000";
    assert_eq!(
        stdout(&out),
        format!(
            "CapInh:\t{zero}\nCapPrm:\t{zero}\nCapEff:\t{zero}\nCapBnd:\t{zero}\n\
             CapAmb:\t{zero}\nNoNewPrivs:\t1\n"
        )
    );
}

#[tokio::test]
async fn the_hostname_is_private_and_cannot_be_changed() {
    if !namespaces_or_skip() {
        return;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let out = run(&Fx::new(), "hostname; hostname evil-host; echo rc=$?").await;
    assert_eq!(stdout(&out), "toolbelt-sandbox\nrc=1\n", "{}", out.text);
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(),
        host
    );
}

/// Runs a host command, returning its stdout when it succeeds.
fn host(argv: &[&str]) -> Option<String> {
    let out = std::process::Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn system_v_ipc_of_the_host_is_out_of_sight() {
    if !namespaces_or_skip() {
        return;
    }
    let Some(made) = host(&["ipcmk", "-Q"]) else {
        eprintln!("skipped: ipcmk cannot create a message queue here");
        return;
    };
    let id = made.trim().rsplit(' ').next().unwrap().to_owned();
    // The queues each side lists, one id per line.
    let list = "ipcs -q | awk '/^0x/ {print $2}'";
    let out = run(&Fx::new(), list).await;
    let seen = host(&["sh", "-c", list]).unwrap();
    host(&["ipcrm", "-q", &id]);
    // Control: the host lists the queue.
    assert!(seen.lines().any(|l| l == id), "{seen}");
    assert_eq!(stdout(&out), "", "{}", out.text);
}

#[tokio::test]
async fn unix_sockets_outside_the_workspace_are_unreachable_without_network() {
    if !landlock_or_skip() {
        return;
    }
    if host(&["sh", "-c", "command -v socat"]).is_none() {
        eprintln!("skipped: socat is not installed");
        return;
    }
    if !probe().unix_sockets_refused {
        skip(&format!("no seccomp here ({})", probe().summary()));
        return;
    }
    let (_outside, dir) = outside_dir();
    let path = dir.join("sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let cmd = format!(
        "echo hi | socat - UNIX-CONNECT:{}; echo rc=$?",
        path.display()
    );
    let out = run(&Fx::new(), &cmd).await;
    assert!(!out.text.contains("rc=0"), "{}", out.text);
    assert!(
        listener.accept().is_err(),
        "the sandboxed socat reached the listener"
    );
    // Control: with the network allowed the same connection arrives.
    let open = with_policy(SandboxPolicy::new().with_network(true));
    let out = run(&open, &cmd).await;
    assert!(out.text.contains("rc=0"), "{}", out.text);
    assert!(
        listener.accept().is_ok(),
        "with the network allowed, socat should connect"
    );
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

/// Runs `script` with `sh -c` in `sandbox`; its exit status, stdout and stderr.
async fn sh_in(sandbox: &Sandbox, script: &str) -> (bool, String, String, Option<u32>) {
    let mut cmd = sandbox.command(&["sh", "-c", script]).unwrap();
    cmd.env("PATH", "/usr/bin:/bin")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = sandbox.spawn(cmd).await.unwrap();
    let uid = child.confinement.uid;
    let out = child.child.wait_with_output().await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        uid,
    )
}

/// A root server runs a confined command as the workspace's owner when that is another
/// user: the command writes its workspace as that user, holds no capability, and a
/// root-only file it may read by the Landlock rules stays closed to it. Beside it, the
/// reason: in a root-owned workspace the command is uid 0 (without capabilities) and reads
/// that file by owner permission.
#[tokio::test]
async fn a_root_server_runs_commands_as_the_workspace_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !landlock_or_skip() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: the server is not root, commands already run as its own user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let private = base.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::write(private.join("key"), "root only\n").unwrap();
    std::fs::set_permissions(private.join("key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let owned = base.join("owned");
    std::fs::create_dir(&owned).unwrap();
    std::os::unix::fs::chown(&owned, Some(65534), Some(65534)).unwrap();
    let script = "id -u; touch made && echo made; grep -E '^Cap(Prm|Eff)' /proc/self/status; \
                  cat ../private/key";
    let policy = SandboxPolicy::new().with_read_path(&private);

    let sandbox = Sandbox::new(&owned, policy.clone());
    assert_eq!(sandbox.run_as(), Some((65534, 65534)));
    let (ok, out, err, uid) = sh_in(&sandbox, script).await;
    assert_eq!(uid, Some(65534));
    let zero = "0000000000000000";
    assert_eq!(
        out,
        format!("65534\nmade\nCapPrm:\t{zero}\nCapEff:\t{zero}\n"),
        "{err}"
    );
    assert!(!ok && err.contains("Permission denied"), "{err}");
    assert_eq!(std::fs::metadata(owned.join("made")).unwrap().uid(), 65534);

    let root_owned = base.join("root-owned");
    std::fs::create_dir(&root_owned).unwrap();
    let sandbox = Sandbox::new(&root_owned, policy);
    assert_eq!(sandbox.run_as(), None);
    let (ok, out, err, uid) = sh_in(&sandbox, script).await;
    assert_eq!(uid, None);
    assert!(
        ok && out.starts_with("0\nmade\n") && out.ends_with("root only\n"),
        "{out}{err}"
    );
    // full-access keeps the server's user: it is the mode that opts out of confinement.
    let open = Sandbox::new(
        &owned,
        SandboxPolicy::new().with_mode(SandboxMode::FullAccess),
    );
    assert_eq!(open.run_as(), None);
}
