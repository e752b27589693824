//! Import path vs a direct rmcp call, and importing a server with 500 tools.
//!
//! `cargo bench -p toolbelt-mcp --bench mcp -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "shared/serve.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;
use toolbelt_core::{Executor, Registry, ToolCall, ToolContext};
use toolbelt_mcp::{McpClient, McpServerConfig};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn call_paths(c: &mut Criterion) {
    let rt = runtime();
    let url = rt.block_on(common::serve(1));
    let direct = rt.block_on(async {
        ().serve(StreamableHttpClientTransport::from_uri(url.as_str()))
            .await
            .unwrap()
    });
    let registry = Arc::new(Registry::new());
    let client = rt.block_on(async {
        let client = McpClient::builder("bench", McpServerConfig::http(&url))
            .registry(registry.clone())
            .start()
            .unwrap();
        client.ready(Duration::from_secs(10)).await.unwrap();
        client
    });
    let tool = registry.get("bench.noop0").unwrap();
    let tools = registry.all();
    let executor = Executor::new();
    let mut group = c.benchmark_group("mcp_call");
    group.bench_function("direct_rmcp", |b| {
        b.to_async(&rt).iter(|| async {
            let mut params = CallToolRequestParams::new("noop0");
            params.arguments = json!({"n": 1}).as_object().cloned();
            direct.peer().call_tool(params).await.unwrap()
        });
    });
    group.bench_function("imported_tool", |b| {
        b.to_async(&rt).iter(|| async {
            tool.call(json!({"n": 1}), ToolContext::new())
                .await
                .unwrap()
        });
    });
    group.bench_function("imported_via_executor", |b| {
        b.to_async(&rt).iter(|| async {
            let call = ToolCall::new("c", "bench.noop0", json!({"n": 1}));
            executor.execute(&tools, call, &ToolContext::new()).await
        });
    });
    group.finish();
    drop(client);
}

fn import_500(c: &mut Criterion) {
    let rt = runtime();
    let url = rt.block_on(common::serve(500));
    let mut group = c.benchmark_group("mcp_import");
    group.sample_size(20);
    group.bench_function("raw_connect_and_list_500", |b| {
        b.to_async(&rt).iter(|| async {
            let client =
                ().serve(StreamableHttpClientTransport::from_uri(url.as_str()))
                    .await
                    .unwrap();
            let tools = client.peer().list_all_tools().await.unwrap();
            assert_eq!(tools.len(), 500);
            client.cancel().await.unwrap();
        });
    });
    group.bench_function("mcp_client_ready_500", |b| {
        b.to_async(&rt).iter(|| async {
            let registry = Arc::new(Registry::new());
            let client = McpClient::builder("bench", McpServerConfig::http(&url))
                .registry(registry.clone())
                .start()
                .unwrap();
            client.ready(Duration::from_secs(10)).await.unwrap();
            assert_eq!(registry.len(), 500);
            client.shutdown();
        });
    });
    group.finish();
}

criterion_group!(benches, call_paths, import_500);
criterion_main!(benches);
