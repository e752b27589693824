//! The toolbelt HTTP server: the live registry, agents and runs behind a REST API.
//!
//! `/api/v1` serves tools (list, get, call), groups, routing previews, agents,
//! runs (JSON or SSE), approvals and questions; `/healthz`, `/readyz` and
//! `/metrics` serve operators; `/api/v1/openapi.json` describes it all and
//! `/api/v1/docs` renders it offline. Errors are RFC 9457 problem documents.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use toolbelt_server::{Server, ServerConfig};
//!
//! let registry = std::sync::Arc::new(toolbelt_core::Registry::discovered()?);
//! let mut config = ServerConfig::default();
//! config.dev = true;
//! // Without a database; `.database(db)` serves a database's tools, agents and runs.
//! let server = Server::builder(config).registry(registry).start().await?;
//! server.run_until(async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agents;
pub mod api;
mod app;
mod auth;
mod config;
pub mod database;
mod guard;
pub mod learning;
mod mcp;
pub mod metrics;
mod problem;
mod rate_limit;
pub mod routines;
mod scope;
mod server;
mod state;
mod tokens;

pub use app::{app, serve, serve_router};
pub use config::{ConfigError, ConfigToken, LogFormat, ServerConfig};
pub use problem::{ApiResult, FieldError, InstanceRef, Problem, ProblemDocument};
pub use scope::Scope;
pub use server::{RunningServer, Server, ServerBuilder, StartError};
pub use state::{AppState, StateError};
pub use tokens::{Principal, STORE_TOKEN_TTL, TokenBook, hash_token, new_token};

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<AppState>();
    assert_send_sync::<RunningServer>();
};
