//! How a stdio MCP server's process is started: by default a plain child process; a host
//! passes a [`StdioSpawner`] that starts it confined (the server's command sandbox, ADR 0060).

use std::any::Any;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A stdio MCP server to start, as its configuration says (secrets already filled in).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdioCommand {
    /// The server's name (for messages).
    pub server: String,
    /// The program, as written in the configuration.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: BTreeMap<String, String>,
    /// Working directory, when the configuration names one.
    pub cwd: Option<PathBuf>,
}

impl StdioCommand {
    /// `command` with `args` for the server `server`, no extra environment, no working directory.
    pub fn new(server: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            server: server.into(),
            command: command.into(),
            args,
            env: BTreeMap::new(),
            cwd: None,
        }
    }
}

/// A started stdio server: the pipes the client speaks JSON-RPC over, and what must live as
/// long as the connection (the child process, killed when dropped; a scratch directory).
#[non_exhaustive]
pub struct StdioProcess {
    /// The server's stdin.
    pub stdin: Box<dyn AsyncWrite + Send + Unpin>,
    /// The server's stdout.
    pub stdout: Box<dyn AsyncRead + Send + Unpin>,
    /// Dropped when the connection ends (after the pipes).
    pub keep: Box<dyn Any + Send>,
}

impl StdioProcess {
    /// A process from its pipes and what to keep alive with it.
    pub fn new(
        stdin: impl AsyncWrite + Send + Unpin + 'static,
        stdout: impl AsyncRead + Send + Unpin + 'static,
        keep: impl Any + Send,
    ) -> Self {
        Self {
            stdin: Box::new(stdin),
            stdout: Box::new(stdout),
            keep: Box::new(keep),
        }
    }
}

impl std::fmt::Debug for StdioProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioProcess").finish_non_exhaustive()
    }
}

/// Why a stdio server was not started.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpawnRefused {
    /// What happened, for the server's status.
    pub reason: String,
    /// Retrying cannot help (a refused command, a sandbox the kernel cannot enforce): the
    /// server stays down instead of being retried with backoff.
    pub permanent: bool,
}

impl SpawnRefused {
    /// A refusal retrying cannot fix.
    pub fn permanent(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            permanent: true,
        }
    }

    /// A failure that may go away.
    pub fn transient(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            permanent: false,
        }
    }
}

/// Starts stdio MCP servers: see [`crate::McpClientBuilder::spawner`].
pub type StdioSpawner = Arc<
    dyn Fn(StdioCommand) -> BoxFuture<'static, Result<StdioProcess, SpawnRefused>> + Send + Sync,
>;

/// The server's stdout, holding what must live as long as the connection.
pub(crate) struct Held {
    pub(crate) stdout: Box<dyn AsyncRead + Send + Unpin>,
    pub(crate) _keep: Box<dyn Any + Send>,
}

impl AsyncRead for Held {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stdout).poll_read(cx, buf)
    }
}
