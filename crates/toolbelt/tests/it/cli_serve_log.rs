//! `toolbelt serve` logs one line as each run starts and as it ends.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::cli_run::{fake_openai, sse};
use crate::cli_serve::{free_port, http};

#[test]
fn the_server_logs_a_line_when_a_run_starts_and_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let (url, model) = fake_openai(vec![sse(&[json!({"content": "hello"})], "stop")]);
    let port = free_port();
    let log = dir.path().join("serve.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["serve", "--dev", "--addr", &format!("127.0.0.1:{port}")])
        .args(["--database-url", "sqlite://t.db", "--workspace"])
        .arg(&work)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .env("TOOLBELT_NO_EMBEDDER", "1")
        .env("OPENAI_BASE_URL", &url)
        .env("OPENAI_API_KEY", "test")
        .env("TOOLBELT_MODEL", "m")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, body) = http(
        port,
        "POST",
        "/api/v1/agents/default/runs",
        None,
        r#"{"input": "say hello"}"#,
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(status, 200, "{body}");
    model.join().unwrap();
    let log = std::fs::read_to_string(&log).unwrap();
    // Before anything runs, the server says which sandbox guards hold here.
    let ready = log.find("toolbelt serve ready").expect("no ready line");
    let sandbox = log.find("sandbox: ").expect("no sandbox line");
    assert!(sandbox < ready, "{log}");
    assert!(
        log[sandbox..].lines().next().unwrap().contains("Landlock"),
        "{log}"
    );
    let started: Vec<&str> = log.lines().filter(|l| l.contains("run started")).collect();
    let ended: Vec<&str> = log.lines().filter(|l| l.contains("run ended")).collect();
    assert_eq!((started.len(), ended.len()), (1, 1), "{log}");
    assert!(started[0].contains("agent=default"), "{log}");
    assert!(ended[0].contains("succeeded"), "{log}");
    // The input stays out of the log.
    assert!(!log.contains("say hello"), "{log}");
}
