//! [`McpError`]: what can go wrong setting up MCP clients and servers.

use std::path::PathBuf;

/// An error of the MCP layer (connection set-up, configuration, serving).
///
/// A failing *tool call* is not an `McpError`: it reaches the model as a
/// [`ToolError`](toolbelt_core::ToolError).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration file could not be read.
    #[error("cannot read MCP config `{path}`")]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The configuration is not valid.
    #[error("invalid MCP config{}: {message}", at_server(.server))]
    Config {
        /// The server entry at fault, if one is.
        server: Option<String>,
        /// What is wrong, with the field and the allowed values.
        message: String,
    },
    /// Connecting to (or initialising) a server failed.
    #[error("cannot connect to MCP server `{server}`: {message}")]
    Connect {
        /// The server's name.
        server: String,
        /// What failed.
        message: String,
    },
    /// The server did not become ready in time.
    #[error("MCP server `{server}` not ready after {waited_ms} ms: {status}")]
    NotReady {
        /// The server's name.
        server: String,
        /// How long we waited.
        waited_ms: u128,
        /// Its status then.
        status: String,
    },
    /// Serving over a transport failed.
    #[error("MCP transport failed: {message}")]
    Transport {
        /// What failed.
        message: String,
    },
}

fn at_server(server: &Option<String>) -> String {
    server
        .as_ref()
        .map(|s| format!(" (server `{s}`)"))
        .unwrap_or_default()
}
