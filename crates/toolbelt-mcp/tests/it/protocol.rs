//! Protocol revisions: a 2026-07-28 client hears list changes on `subscriptions/listen`, our
//! client's `initialize` announces 2025-11-25, and a server that speaks only 2026-07-28 is
//! reached with `server/discover` at once.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use rmcp::model::{
    InitializeRequestParams, InitializeResult, ProtocolVersion, ServerCapabilities, ServerConfig,
    ServerNotification, SubscriptionFilter,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData, ServerHandler};
use serde_json::json;
use toolbelt_core::{Executor, Registry};
use toolbelt_mcp::{McpServer, McpServerConfig};

use crate::roundtrip::{add_tool, serve_http};
use crate::support::{call, eventually, start};

/// Serves `app` on a loopback port; returns its base URL.
async fn listen(app: axum::Router) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, task)
}

#[tokio::test]
async fn a_2026_07_28_client_hears_that_tools_changed_on_its_listen_stream() {
    let served = Arc::new(Registry::new());
    served.add_tool(add_tool("math.add")).unwrap();
    let (url, task) = serve_http(served.clone()).await;
    let discover = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let transport = StreamableHttpClientTransport::from_uri(url.as_str());
    let client = ().serve_with_lifecycle(transport, discover).await.unwrap();
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = client.peer().listen(filter.clone()).await.unwrap();
    assert_eq!(subscription.acknowledged(), &filter);
    served.add_tool(add_tool("math.add_again")).unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(
            heard,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{heard:?}"
    );
    task.abort();
}

/// A server that records the protocol version each `initialize` asks for.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl ServerHandler for Recorder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.0
            .lock()
            .unwrap()
            .push(request.protocol_version.to_string());
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }
}

#[tokio::test]
async fn initialize_announces_the_revision_the_handshake_belongs_to() {
    let recorder = Recorder::default();
    let seen = recorder.0.clone();
    let service = StreamableHttpService::new(
        move || Ok(recorder.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let (base, task) = listen(axum::Router::new().nest_service("/mcp", service)).await;
    let (_client, _registry) = start("rec", McpServerConfig::http(format!("{base}/mcp"))).await;
    assert_eq!(*seen.lock().unwrap(), ["2025-11-25"]);
    task.abort();
}

#[tokio::test]
async fn a_server_that_speaks_only_2026_07_28_is_reached_with_discover_and_followed() {
    let served = Arc::new(Registry::new());
    served.add_tool(add_tool("math.add")).unwrap();
    let server = McpServer::from_registry(served.clone(), None, Executor::new());
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.stateless_protocol_metadata_required = true;
    let service = StreamableHttpService::new(
        move || Ok(server.handler()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let (base, task) = listen(axum::Router::new().nest_service("/mcp", service)).await;
    let started = std::time::Instant::now();
    let (_client, registry) = start(
        "modern",
        McpServerConfig::http(format!("{base}/mcp")).with_tool_prefix(""),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "connected after {:?}",
        started.elapsed()
    );
    let sum = call(&registry, "math.add", json!({"a": 1, "b": 2})).await;
    assert_eq!(sum.outcome.unwrap().json, Some(json!({"sum": 3})));
    served.add_tool(add_tool("math.add_again")).unwrap();
    eventually(10, "the listen stream to announce the new tool", || {
        registry.contains("math.add_again")
    })
    .await;
    task.abort();
}
