//! Where the peers are, and small helpers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolbelt_core::{CallResult, Executor, Registry, ToolCall, ToolContext};
use toolbelt_mcp::{Backoff, McpClient, McpServerConfig};

/// The folder `scripts/setup-mcp-peers.sh` installs into.
pub(crate) fn peers_dir() -> PathBuf {
    std::env::var_os("TOOLBELT_MCP_PEERS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-peers"),
        PathBuf::from,
    )
}

/// The entry script of an npm reference server, if installed.
pub(crate) fn npm_server(package: &str) -> Option<PathBuf> {
    let path = peers_dir().join(format!(
        "node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    let node = which("node");
    if path.exists() && node {
        Some(path)
    } else {
        println!("skipped: {package} is not installed (run scripts/setup-mcp-peers.sh)");
        None
    }
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

pub(crate) fn everything_config(entry: &std::path::Path) -> McpServerConfig {
    McpServerConfig::stdio("node", [entry.display().to_string(), "stdio".to_owned()])
}

pub(crate) fn quick_backoff() -> Backoff {
    Backoff::new(Duration::from_millis(100), Duration::from_millis(400))
}

/// Starts a client into a fresh registry and waits for it.
pub(crate) async fn start(name: &str, config: McpServerConfig) -> (McpClient, Arc<Registry>) {
    let registry = Arc::new(Registry::new());
    let client = McpClient::builder(name, config)
        .registry(registry.clone())
        .backoff(quick_backoff())
        .start()
        .unwrap();
    client.ready(Duration::from_secs(30)).await.unwrap();
    (client, registry)
}

/// Runs one call through a default executor.
pub(crate) async fn call(registry: &Registry, name: &str, args: Value) -> CallResult {
    Executor::new()
        .execute(
            &registry.all(),
            ToolCall::new("c1", name, args),
            &ToolContext::new(),
        )
        .await
}

/// Waits until `check` holds (polling), or fails after `secs`.
pub(crate) async fn eventually(secs: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
