//! `toolbelt run` from the command line, against a fake OpenAI-compatible server on 127.0.0.1.
// Fixture helpers outside #[test] fns unwrap too; `allow-unwrap-in-tests` does not reach them.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Serves one chat completion per connection, in order (an event stream, or
/// plain JSON when the reply starts with `{`); returns the request bodies.
pub(crate) fn fake_openai(replies: Vec<String>) -> (String, JoinHandle<Vec<Value>>) {
    let (url, bodies, server) = recording_openai(replies);
    let joined = std::thread::spawn(move || {
        server.join().unwrap();
        std::mem::take(&mut *bodies.lock().unwrap())
    });
    (url, joined)
}

/// Longest the fake server waits for a request it has a reply for: a run that makes fewer
/// requests than scripted fails its test (the bodies are missing) instead of hanging it.
const NEXT_REQUEST: std::time::Duration = std::time::Duration::from_secs(120);

/// [`fake_openai`] whose request bodies can be read while it serves (the callers of several
/// processes share it); the thread ends after the last reply, or when no request came for
/// [`NEXT_REQUEST`].
pub(crate) fn recording_openai(
    replies: Vec<String>,
) -> (String, Arc<Mutex<Vec<Value>>>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    listener.set_nonblocking(true).unwrap();
    let server = std::thread::spawn(move || {
        for reply in replies {
            let waited = std::time::Instant::now();
            let socket = loop {
                match listener.accept() {
                    Ok((socket, _)) => break socket,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if waited.elapsed() > NEXT_REQUEST {
                            return;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    Err(e) => panic!("accept: {e}"),
                }
            };
            socket.set_nonblocking(false).unwrap();
            let mut reader = BufReader::new(socket);
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            seen.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap());
            let kind = if reply.starts_with('{') {
                "application/json"
            } else {
                "text/event-stream"
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                reply.len()
            );
            let mut socket = reader.into_inner();
            socket.write_all(head.as_bytes()).unwrap();
            socket.write_all(reply.as_bytes()).unwrap();
        }
    });
    (url, bodies, server)
}

/// An event stream of `deltas`, then `finish`.
pub(crate) fn sse(deltas: &[Value], finish: &str) -> String {
    let chunk = |delta: &Value, finish: Value| {
        let c = json!({"id": "s", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut body: String = deltas.iter().map(|d| chunk(d, Value::Null)).collect();
    body.push_str(&chunk(&json!({}), json!(finish)));
    body + "data: [DONE]\n\n"
}

pub(crate) fn tool_call(name: &str, args: Value) -> String {
    let call = json!({"index": 0, "id": "call_1", "type": "function",
        "function": {"name": name, "arguments": args.to_string()}});
    sse(
        &[json!({"role": "assistant", "tool_calls": [call]})],
        "tool_calls",
    )
}

pub(crate) fn text(words: &[&str]) -> String {
    let deltas: Vec<Value> = words.iter().map(|w| json!({"content": w})).collect();
    sse(&deltas, "stop")
}

/// Runs `toolbelt run` in `dir` with only `env` set, feeding `stdin`.
pub(crate) fn toolbelt_run(dir: &Path, env: &[(&str, &str)], args: &[&str], stdin: &str) -> Output {
    crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .arg("run")
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            // The run's own data directory (memory, routines), never the user's.
            .env("TOOLBELT_DATA", dir.join(".toolbelt-data"))
            .envs(env.iter().copied())
            .current_dir(dir),
        stdin,
    )
}

fn fake_env(url: &str) -> [(&str, &str); 2] {
    [("OPENAI_BASE_URL", url), ("TOOLBELT_MODEL", "m")]
}

#[test]
fn without_a_provider_it_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolbelt_run(dir.path(), &[], &["hello"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    for name in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TOOLBELT_MODEL",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(stderr.contains(name), "{name} missing from: {stderr}");
    }
}

#[test]
fn a_bad_provider_flag_names_the_allowed_values() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolbelt_run(dir.path(), &[], &["--provider", "gemini", "hi"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`gemini`; expected `openai` or `anthropic`"),
        "{stderr}"
    );
    assert!(!out.status.success());
}

#[test]
fn it_streams_the_answer_and_shows_each_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let replies = vec![
        tool_call("list_dir", json!({})),
        text(&["One file: ", "notes.txt"]),
    ];
    let (url, server) = fake_openai(replies);
    let out = toolbelt_run(dir.path(), &fake_env(&url), &["list the files here"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "One file: notes.txt\n"
    );
    assert!(
        stderr.contains("→ list_dir {}") && stderr.contains("✓ list_dir"),
        "{stderr}"
    );
    let bodies = server.join().unwrap();
    let sent = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        sent["content"].as_str().unwrap().contains("notes.txt"),
        "{sent}"
    );
}

#[test]
fn a_call_needing_approval_is_asked_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let write = tool_call("file_write", json!({"path": "x.txt", "content": "hi"}));
    let (url, server) = fake_openai(vec![write, text(&["ok"])]);
    let out = toolbelt_run(
        dir.path(),
        &fake_env(&url),
        &["write x.txt"],
        "n\nnot now\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("? run `file_write` with"), "{stderr}");
    assert!(
        stderr.contains("✗ file_write") && stderr.contains("denied: not now"),
        "{stderr}"
    );
    assert!(!dir.path().join("x.txt").exists());
    let bodies = server.join().unwrap();
    assert_eq!(
        bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"],
        "error: denied: not now"
    );
}

#[test]
fn yes_approves_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let write = tool_call("file_write", json!({"path": "x.txt", "content": "hi"}));
    let (url, server) = fake_openai(vec![write, text(&["done"])]);
    let out = toolbelt_run(dir.path(), &fake_env(&url), &["--yes", "write x.txt"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("? run"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("x.txt")).unwrap(),
        "hi"
    );
    server.join().unwrap();
}
