//! Load test: concurrent clients calling a no-op tool through a toolbelt MCP
//! server over streamable HTTP on loopback; prints calls/s and latency percentiles.
//!
//! `cargo bench -p toolbelt-mcp --bench mcp_load -- [CLIENTS] [SECONDS]`
//! (or `bench/mcp-load.sh`). Defaults: 8 clients, 5 seconds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

#[path = "shared/serve.rs"]
mod common;

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let clients: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(8);
    let seconds: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let url = common::serve(1).await;
        let mut tasks = tokio::task::JoinSet::new();
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let warm_until = Instant::now() + Duration::from_millis(500);
        for _ in 0..clients {
            let url = url.clone();
            tasks.spawn(async move {
                let client =
                    ().serve(StreamableHttpClientTransport::from_uri(url.as_str()))
                        .await
                        .unwrap();
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let mut params = CallToolRequestParams::new("noop0");
                    params.arguments = json!({"n": 1}).as_object().cloned();
                    let started = Instant::now();
                    let result = client.peer().call_tool(params).await.unwrap();
                    assert_eq!(result.is_error, Some(false));
                    if started > warm_until {
                        latencies.push(started.elapsed());
                    }
                }
                latencies
            });
        }
        let mut all: Vec<Duration> = Vec::new();
        while let Some(latencies) = tasks.join_next().await {
            all.extend(latencies.unwrap());
        }
        all.sort_unstable();
        let measured = Duration::from_secs(seconds) - Duration::from_millis(500);
        let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
        println!(
            "clients={clients} calls={} calls_per_s={:.0} p50={:?} p99={:?} max={:?}",
            all.len(),
            all.len() as f64 / measured.as_secs_f64(),
            pct(0.50),
            pct(0.99),
            all[all.len() - 1]
        );
    });
}
