//! Shared fixtures: a raw scripted HTTP server that sends bodies in chosen
//! chunk sizes (wiremock sends bodies whole), and client constructors.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use toolbelt_llm::{
    AnthropicClient, ChatStream, OpenAiClient, ProviderError, RetryConfig, StreamEvent,
};

/// How the scripted server answers one connection.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// Sizes of the pieces the body is written in, cycled.
    pub(crate) chunk_sizes: Vec<usize>,
    /// Pause after each piece (hyper yields each chunk of the chunked
    /// encoding separately, so pieces reach the parser split even without).
    pub(crate) delay: Duration,
    /// Drop the connection after this many body bytes, mid-chunk.
    pub(crate) cut_after: Option<usize>,
    /// Stop sending (but keep the connection open) after this many bytes.
    pub(crate) stall_after: Option<usize>,
}

impl Reply {
    /// A 200 event stream sent in pieces of `chunk_sizes`.
    pub(crate) fn sse(body: impl Into<String>, chunk_sizes: &[usize]) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into().into_bytes(),
            chunk_sizes: chunk_sizes.to_vec(),
            delay: Duration::ZERO,
            cut_after: None,
            stall_after: None,
        }
    }
}

/// What the server received.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) body: Value,
}

/// A server on 127.0.0.1 that answers connection `n` with reply `n` (the
/// last reply repeats) using chunked transfer encoding.
pub(crate) struct ScriptedServer {
    pub(crate) url: String,
    pub(crate) requests: Arc<Mutex<Vec<Recorded>>>,
    _tasks: JoinSet<()>,
}

impl ScriptedServer {
    pub(crate) async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = JoinSet::new();
        let recorded = requests.clone();
        tasks.spawn(async move {
            let mut served = 0;
            let mut connections = JoinSet::new();
            while let Ok((socket, _)) = listener.accept().await {
                let reply = replies[served.min(replies.len() - 1)].clone();
                served += 1;
                connections.spawn(serve(socket, reply, recorded.clone()));
            }
        });
        Self {
            url,
            requests,
            _tasks: tasks,
        }
    }

    pub(crate) fn bodies(&self) -> Vec<Value> {
        let requests = self.requests.lock().unwrap();
        requests.iter().map(|r| r.body.clone()).collect()
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<Recorded>>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    let mut head = format!("HTTP/1.1 {} Scripted\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut sent = 0;
    let mut sizes = reply.chunk_sizes.iter().copied().cycle();
    while sent < reply.body.len() {
        let size = sizes.next().unwrap_or(usize::MAX).max(1);
        let end = (sent + size).min(reply.body.len());
        let piece = &reply.body[sent..end];
        if let Some(cut) = reply.cut_after.filter(|&c| end > c) {
            // Announce the whole chunk, send part of it, and vanish.
            let partial = &reply.body[sent..cut.max(sent)];
            let _ = socket
                .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                .await;
            let _ = socket.write_all(partial).await;
            let _ = socket.flush().await;
            return;
        }
        if reply.stall_after.is_some_and(|s| end > s) {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        let chunk = [format!("{:x}\r\n", piece.len()).as_bytes(), piece, b"\r\n"].concat();
        if socket.write_all(&chunk).await.is_err() || socket.flush().await.is_err() {
            return;
        }
        sent = end;
        if reply.delay.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(reply.delay).await;
        }
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut byte).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&byte[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut byte).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&byte[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    Some(Recorded { body })
}

/// Fast retries so tests do not wait on backoff.
pub(crate) fn quick_retry(retries: u32) -> RetryConfig {
    RetryConfig::default()
        .with_max_retries(retries)
        .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
}

pub(crate) fn openai(url: &str) -> OpenAiClient {
    OpenAiClient::builder()
        .base_url(url)
        .api_key("sk-test")
        .model("gpt-test")
        .retry(quick_retry(2))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

pub(crate) fn anthropic(url: &str) -> AnthropicClient {
    AnthropicClient::builder()
        .base_url(url)
        .api_key("ak-test")
        .model("claude-test")
        .retry(quick_retry(2))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// Every item of `stream`, bounded in time so a hang fails the test.
pub(crate) async fn collect(stream: ChatStream) -> Vec<Result<StreamEvent, ProviderError>> {
    tokio::time::timeout(Duration::from_secs(20), stream.collect::<Vec<_>>())
        .await
        .expect("stream hung")
}

/// SSE `data:` lines for each JSON value, ending with `[DONE]`.
pub(crate) fn openai_sse(chunks: &[Value]) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// SSE events with `event:` names taken from each value's `type`.
pub(crate) fn anthropic_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}
