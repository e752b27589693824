//! Fixtures: a server on 127.0.0.1:0 with a few tools, and a scripted OpenAI-compatible model.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::Mutex;
use toolbelt_core::{FnTool, Registry, ToolHandle};
use toolbelt_server::{ConfigToken, Scope, Server, ServerConfig};

pub(crate) const ADMIN: &str = "tb_admin_token";
pub(crate) const RUNNER: &str = "tb_run_token";
pub(crate) const READER: &str = "tb_read_token";

pub(crate) fn echo() -> ToolHandle {
    FnTool::builder("echo")
        .description("Echo the text back")
        .tag("util")
        .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}))
        .handler(|args, ctx| async move {
            // Reports progress once, so that runs show `tool_progress` events.
            ctx.report_progress(1.0, Some(1.0), Some("echoing".to_owned()));
            args["text"].as_str().unwrap_or_default().to_owned()
        })
        .unwrap()
}

fn noop() -> ToolHandle {
    FnTool::builder("noop")
        .description("Do nothing")
        .tag("util")
        .parameters(json!({"type": "object", "properties": {}}))
        .handler(|_args, _ctx| async move { "ok".to_owned() })
        .unwrap()
}

fn delete_file() -> ToolHandle {
    FnTool::builder("delete_file")
        .description("Delete a file (needs approval)")
        .tag("danger")
        .spec(|s| s.needs_approval(true))
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .handler(|args, _ctx| async move { format!("deleted {}", args["path"].as_str().unwrap_or_default()) })
        .unwrap()
}

/// A running server and its base URL.
pub(crate) struct TestServer {
    pub(crate) url: String,
    pub(crate) http: reqwest::Client,
    server: toolbelt_server::RunningServer,
}

impl TestServer {
    pub(crate) async fn start(model_url: Option<&str>) -> Self {
        Self::start_with(model_url, |_| {}).await
    }

    /// A server over a database (tools, tokens and runs stored there).
    pub(crate) async fn start_stored(db: &TestDb, model_url: Option<&str>) -> Self {
        Self::start_on(db, model_url, false).await
    }

    /// A server over a database that also runs the routine scheduler, as `toolbelt serve` does.
    pub(crate) async fn start_scheduled(db: &TestDb, model_url: Option<&str>) -> Self {
        Self::start_on(db, model_url, true).await
    }

    /// A server over a database with `edit` applied to its configuration.
    pub(crate) async fn start_stored_with(
        db: &TestDb,
        edit: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        Self::start_on_with(db, None, false, edit).await
    }

    /// A server over a database, talking to the model at `model_url`, with `edit` applied to
    /// its configuration.
    pub(crate) async fn start_stored_model_with(
        db: &TestDb,
        model_url: &str,
        edit: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        Self::start_on_with(db, Some(model_url), false, edit).await
    }

    async fn start_on(db: &TestDb, model_url: Option<&str>, scheduled: bool) -> Self {
        Self::start_on_with(db, model_url, scheduled, |_| {}).await
    }

    async fn start_on_with(
        db: &TestDb,
        model_url: Option<&str>,
        scheduled: bool,
        edit: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        let store = db.open().await;
        let compiled = vec![echo(), noop(), delete_file()];
        let opened = toolbelt_server::database::open_store(store, compiled, "test")
            .await
            .unwrap();
        Self::start_inner(model_url, edit, Some(opened), scheduled).await
    }

    pub(crate) async fn start_with(
        model_url: Option<&str>,
        edit: impl FnOnce(&mut ServerConfig),
    ) -> Self {
        Self::start_inner(model_url, edit, None, false).await
    }

    async fn start_inner(
        model_url: Option<&str>,
        edit: impl FnOnce(&mut ServerConfig),
        opened: Option<toolbelt_server::database::Database>,
        scheduled: bool,
    ) -> Self {
        let registry = Registry::new();
        registry.add_tools([echo(), noop(), delete_file()]).unwrap();
        let mut config = ServerConfig::default();
        config.workspace = std::env::temp_dir();
        config.tokens = vec![
            token("admin", ADMIN, Scope::Admin),
            token("runner", RUNNER, Scope::Run),
            token("reader", READER, Scope::Read),
        ];
        let mut agent = ServerConfig::default_agent();
        agent.name = "helper".to_owned();
        agent.selection = "util,danger".to_owned();
        agent.provider = Some("openai".to_owned());
        agent.model = Some("scripted".to_owned());
        agent.options.base_url = Some(model_url.unwrap_or("http://127.0.0.1:9/v1").to_owned());
        agent.options.api_key_env = Some("TOOLBELT_TEST_NO_KEY".to_owned());
        config.agents = vec![agent];
        config.run_wait_secs = 5;
        edit(&mut config);
        config.addr = "127.0.0.1:0".parse().unwrap();
        // The server `toolbelt serve` starts: stored MCP servers connected and followed,
        // learning from use when the configuration turns it on, routines only when asked.
        let builder = match opened {
            Some(db) => Server::builder(config).database(db),
            None => Server::builder(config).registry(Arc::new(registry)),
        };
        let server = builder.routines(scheduled).start().await.unwrap();
        Self {
            url: format!("http://{}", server.addr()),
            http: reqwest::Client::new(),
            server,
        }
    }

    pub(crate) fn post(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.url))
            .bearer_auth(token)
    }

    pub(crate) fn get(&self, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.url))
            .bearer_auth(token)
    }

    /// Stops serving at once, as a crashed process would: its runs are neither ended nor
    /// recorded as interrupted.
    pub(crate) fn abort(self) {
        self.server.abort();
    }

    /// Stops the server gracefully and waits for it.
    pub(crate) async fn stop(self) {
        tokio::time::timeout(Duration::from_secs(10), self.server.shutdown())
            .await
            .unwrap()
            .unwrap();
    }
}

fn token(name: &str, token: &str, scope: Scope) -> ConfigToken {
    ConfigToken {
        name: name.to_owned(),
        sha256: None,
        token: Some(token.to_owned()),
        scopes: vec![scope],
        agents: None,
    }
}

/// Reads a response as JSON, asserting its status.
pub(crate) async fn json_of(response: reqwest::Response, status: u16) -> Value {
    let got = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!(got, status, "body: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Reads a problem document, asserting status, content type and code.
pub(crate) async fn problem_of(response: reqwest::Response, status: u16, code: &str) -> Value {
    let ct = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = json_of(response, status).await;
    assert_eq!(ct, "application/problem+json", "body: {body}");
    assert_eq!(body["code"], code, "body: {body}");
    assert_eq!(body["status"], status);
    assert_eq!(body["type"], format!("urn:toolbelt:problem:{code}"));
    body
}

/// A scripted OpenAI-compatible model: serves one streamed reply per request, in order.
pub(crate) struct FakeModel {
    pub(crate) url: String,
    pub(crate) requests: Arc<Mutex<Vec<Value>>>,
}

impl FakeModel {
    pub(crate) async fn start(replies: Vec<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        tokio::spawn(async move {
            for reply in replies {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let mut reader = BufReader::new(socket);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                        break;
                    }
                    if let Some(v) = line.to_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).await.unwrap();
                seen.lock()
                    .await
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    reply.len()
                );
                let mut socket = reader.into_inner();
                socket.write_all(head.as_bytes()).await.unwrap();
                socket.write_all(reply.as_bytes()).await.unwrap();
                socket.shutdown().await.ok();
            }
        });
        Self { url, requests }
    }
}

fn sse(deltas: &[Value], finish: &str) -> String {
    let chunk = |delta: &Value, finish: Value| {
        let c = json!({"id": "s", "model": "scripted", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            "usage": null});
        format!("data: {c}\n\n")
    };
    let mut body: String = deltas.iter().map(|d| chunk(d, Value::Null)).collect();
    body.push_str(&chunk(&json!({}), json!(finish)));
    body + "data: [DONE]\n\n"
}

/// A reply that calls `name` with `args`.
pub(crate) fn tool_call(id: &str, name: &str, args: Value) -> String {
    let call = json!({"index": 0, "id": id, "type": "function",
        "function": {"name": name, "arguments": args.to_string()}});
    sse(
        &[json!({"role": "assistant", "tool_calls": [call]})],
        "tool_calls",
    )
}

/// A reply asking for several calls in one turn: (id, tool, arguments).
pub(crate) fn tool_calls(calls: &[(&str, &str, Value)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, args))| {
            json!({"index": i, "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    sse(
        &[json!({"role": "assistant", "tool_calls": calls})],
        "tool_calls",
    )
}

/// A reply with text.
pub(crate) fn text(words: &[&str]) -> String {
    let deltas: Vec<Value> = words.iter().map(|w| json!({"content": w})).collect();
    sse(&deltas, "stop")
}

/// A database for one test: a SQLite file, or a Postgres schema of its own.
pub(crate) struct TestDb {
    pub(crate) engine: &'static str,
    url: String,
    options: toolbelt_store::StoreOptions,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    pub(crate) fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self {
            engine: "sqlite",
            url: format!("sqlite://{}", dir.path().join("t.db").display()),
            options: toolbelt_store::StoreOptions::default(),
            _dir: Some(dir),
        }
    }

    /// `None` (after printing `skipped: ...`) when TOOLBELT_TEST_PG_URL is unset.
    pub(crate) fn postgres() -> Option<Self> {
        let Ok(url) = std::env::var("TOOLBELT_TEST_PG_URL") else {
            println!("skipped: postgres (TOOLBELT_TEST_PG_URL is unset)");
            return None;
        };
        Some(Self {
            engine: "postgres",
            url,
            // As `toolbelt serve` opens it: one connection until the server listens.
            options: toolbelt_store::StoreOptions::default()
                .with_pg_schema(format!("srv_{}", uuid::Uuid::new_v4().simple()))
                .with_single_connection_start(true),
            _dir: None,
        })
    }

    pub(crate) async fn open(&self) -> toolbelt_store::Store {
        toolbelt_store::Store::open_with(&self.url, self.options.clone())
            .await
            .unwrap()
    }

    pub(crate) async fn cleanup(&self) {
        if let Some(schema) = &self.options.pg_schema {
            let store = self.open().await;
            let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(store.pool())
                .await
                .unwrap();
        }
    }
}

/// Runs `test` on SQLite, then on Postgres when configured.
pub(crate) async fn on_both<F, Fut>(test: F)
where
    F: Fn(TestDb) -> Fut,
    Fut: std::future::Future<Output = TestDb>,
{
    let db = test(TestDb::sqlite()).await;
    db.cleanup().await;
    if let Some(pg) = TestDb::postgres() {
        let db = test(pg).await;
        db.cleanup().await;
    }
}

/// Polls run `run` (as the reader) until its status is `status`; its detail.
pub(crate) async fn wait_status(s: &TestServer, run: &str, status: &str) -> Value {
    for _ in 0..100 {
        let r = json_of(
            s.get(&format!("/api/v1/runs/{run}"), READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        if r["status"] == status {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run} never reached {status}");
}
