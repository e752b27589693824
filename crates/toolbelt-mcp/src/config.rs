//! [`McpConfig`] and [`McpServerConfig`]: MCP servers as Claude Desktop and Cursor declare them.
//!
//! The file shape is the one those clients use, accepted as is:
//!
//! ```json
//! { "mcpServers": {
//!     "fs":     { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
//!     "remote": { "url": "http://127.0.0.1:8080/mcp", "headers": { "X-Team": "a" } } } }
//! ```
//!
//! Fields toolbelt does not know are ignored, so a file written for another
//! client loads unchanged. The structs are plain serde data: the store can
//! persist a [`McpServerConfig`] as JSON and hand it back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// A whole `mcpServers` file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct McpConfig {
    /// The servers by name, in name order.
    #[serde(rename = "mcpServers", default)]
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// How to reach one MCP server: a command (stdio) or a URL (streamable HTTP).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct McpServerConfig {
    /// `stdio`, `http`/`streamable-http`/`streamableHttp`, or absent (inferred
    /// from `command` / `url`). `sse` (the old HTTP+SSE transport) is refused.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Program to start (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Endpoint (streamable HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Extra HTTP headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Bearer token sent as `Authorization: Bearer …`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token: Option<String>,
    /// Skipped when true (Cursor's `disabled`).
    #[serde(default)]
    pub disabled: bool,
    /// Prefix of imported tool names; default `"<server>."`; `""` keeps the server's names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_prefix: Option<String>,
    /// Per-call timeout in milliseconds (the executor's default applies when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Remote tool names that run without approval although their annotations do not say
    /// they are read-only and not destructive (the `autoApprove` key other MCP hosts read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_approve: Vec<String>,
    /// How the host confines this stdio server, when the host reads it (`toolbelt`'s CLI does
    /// for its `--mcp-config` files; a server's stored records may not set it, the server's
    /// own configuration decides for them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<McpSandbox>,
}

/// The `sandbox` key of a host's own `mcpServers` entry: the command sandbox's mode for this
/// server and the paths it may read or write besides the workspace and the system paths.
/// This crate only carries the settings; the host that spawns the process applies them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct McpSandbox {
    /// `read-only`, `workspace-write` or `full-access` (the host's default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Directories or files the server may read (relative paths: from the configuration
    /// file's directory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_paths: Vec<PathBuf>,
    /// Directories the server may write (and read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_paths: Vec<PathBuf>,
}

/// The transport a [`McpServerConfig`] resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking JSON-RPC over stdin/stdout.
    Stdio {
        /// Program.
        command: String,
        /// Arguments.
        args: Vec<String>,
        /// Extra environment.
        env: BTreeMap<String, String>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// Endpoint.
        url: String,
        /// Extra headers.
        headers: BTreeMap<String, String>,
        /// Bearer token.
        bearer_token: Option<String>,
    },
}

impl McpConfig {
    /// Parses an `mcpServers` JSON document and checks every entry.
    ///
    /// # Errors
    /// [`McpError::Config`] naming the JSON error or the entry at fault.
    pub fn from_json(text: &str) -> Result<Self, McpError> {
        let config: Self = serde_json::from_str(text).map_err(|e| McpError::Config {
            server: None,
            message: e.to_string(),
        })?;
        for (name, server) in &config.servers {
            server.transport_of(name)?;
        }
        Ok(config)
    }

    /// Reads and parses a file; relative `sandbox` paths are taken from the file's directory.
    ///
    /// # Errors
    /// [`McpError::ReadConfig`] or [`McpError::Config`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, McpError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| McpError::ReadConfig {
            path: path.to_owned(),
            source,
        })?;
        let mut config = Self::from_json(&text)?;
        // A `sandbox` path written relative is relative to the file, not to where the host runs.
        if let Some(dir) = path.parent() {
            for sandbox in config
                .servers
                .values_mut()
                .filter_map(|s| s.sandbox.as_mut())
            {
                for p in sandbox
                    .read_paths
                    .iter_mut()
                    .chain(&mut sandbox.write_paths)
                {
                    if p.is_relative() {
                        *p = dir.join(&*p);
                    }
                }
            }
        }
        Ok(config)
    }

    /// The servers that are not `disabled`.
    pub fn enabled(&self) -> impl Iterator<Item = (&String, &McpServerConfig)> {
        self.servers.iter().filter(|(_, s)| !s.disabled)
    }
}

impl McpServerConfig {
    /// A stdio server started with `command` and `args`.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// Sets an environment variable of a stdio server.
    #[must_use]
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the prefix of imported tool names.
    #[must_use]
    pub fn with_tool_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.tool_prefix = Some(prefix.into());
        self
    }

    /// Sets the bearer token of an HTTP server.
    #[must_use]
    pub fn with_bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// The per-call timeout, if set.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }

    /// The prefix of imported tool names for the server called `server`.
    pub fn prefix_for(&self, server: &str) -> String {
        self.tool_prefix
            .clone()
            .unwrap_or_else(|| format!("{server}."))
    }

    /// Which transport this entry describes.
    ///
    /// # Errors
    /// [`McpError::Config`] when neither or both of `command` and `url` are
    /// set, `type` disagrees with them, or `type` is unknown.
    pub fn transport_of(&self, server: &str) -> Result<Transport, McpError> {
        let bad = |message: String| McpError::Config {
            server: Some(server.to_owned()),
            message,
        };
        let kind = self.transport.as_deref().map(str::to_ascii_lowercase);
        match (kind.as_deref(), &self.command, &self.url) {
            (Some("sse"), _, _) => Err(bad(
                "`type: sse` (the HTTP+SSE transport of 2024-11-05) is not supported; use a streamable HTTP endpoint (`type: http`)"
                    .to_owned(),
            )),
            (Some(other), _, _)
                if !matches!(other, "stdio" | "http" | "streamable-http" | "streamablehttp") =>
            {
                Err(bad(format!(
                    "unknown `type` `{other}`; expected one of: stdio, http, streamable-http"
                )))
            }
            (_, Some(_), Some(_)) => Err(bad("set `command` or `url`, not both".to_owned())),
            (Some("stdio") | None, Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(bad("`command` is empty".to_owned()));
                }
                Ok(Transport::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: self.env.clone(),
                    cwd: self.cwd.clone(),
                })
            }
            (Some("stdio"), None, _) => Err(bad("`type: stdio` needs a `command`".to_owned())),
            (_, None, Some(url)) if kind.as_deref() != Some("stdio") => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(bad(format!("`url` must start with http:// or https://, got `{url}`")));
                }
                Ok(Transport::Http {
                    url: url.clone(),
                    headers: self.headers.clone(),
                    bearer_token: self.bearer_token.clone(),
                })
            }
            (_, Some(_), None) => Err(bad("an HTTP `type` needs a `url`, not a `command`".to_owned())),
            _ => Err(bad("needs a `command` (stdio) or a `url` (streamable HTTP)".to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn claude_desktop_and_cursor_files_load_as_they_are() {
        let config = McpConfig::from_json(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "pkg", "/tmp"], "env": {"A": "1"}},
                "remote": {"url": "https://x.example/mcp", "headers": {"X-Team": "a"}, "disabled": true},
                "typed": {"type": "stdio", "command": "srv", "autoApprove": ["x"]}
            }, "globalShortcut": "Ctrl+Space"}"#,
        )
        .unwrap();
        assert_eq!(config.servers.len(), 3);
        let enabled: Vec<&String> = config.enabled().map(|(n, _)| n).collect();
        assert_eq!(enabled, ["fs", "typed"]);
        let fs = config.servers["fs"].transport_of("fs").unwrap();
        assert_eq!(
            fs,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "pkg".into(), "/tmp".into()],
                env: BTreeMap::from([("A".into(), "1".into())]),
                cwd: None,
            }
        );
        assert_eq!(config.servers["fs"].prefix_for("fs"), "fs.");
    }

    #[test]
    fn bad_entries_name_the_server_and_the_field() {
        let err = |json: &str| McpConfig::from_json(json).unwrap_err().to_string();
        assert_eq!(
            err(r#"{"mcpServers": {"a": {}}}"#),
            "invalid MCP config (server `a`): needs a `command` (stdio) or a `url` (streamable HTTP)"
        );
        assert_eq!(
            err(r#"{"mcpServers": {"b": {"type": "websocket", "url": "ws://x"}}}"#),
            "invalid MCP config (server `b`): unknown `type` `websocket`; expected one of: stdio, http, streamable-http"
        );
        assert!(
            err(r#"{"mcpServers": {"c": {"type": "sse", "url": "http://x"}}}"#)
                .contains("not supported")
        );
        assert!(err(r#"{"mcpServers": {"d": {"url": "ftp://x"}}}"#).contains("http://"));
        assert!(err(r#"{"mcpServers": []}"#).starts_with("invalid MCP config: invalid type"));
    }

    #[test]
    fn sandbox_paths_written_relative_are_taken_from_the_files_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {"fs": {"command": "node", "args": ["s.js"],
                "sandbox": {"mode": "read-only", "readPaths": ["lib", "/opt/x"],
                            "writePaths": ["out"]}}}}"#,
        )
        .unwrap();
        let config = McpConfig::from_file(&path).unwrap();
        let sandbox = config.servers["fs"].sandbox.clone().unwrap();
        assert_eq!(sandbox.mode.as_deref(), Some("read-only"));
        assert_eq!(
            sandbox.read_paths,
            [dir.path().join("lib"), PathBuf::from("/opt/x")]
        );
        assert_eq!(sandbox.write_paths, [dir.path().join("out")]);
        let unknown = McpConfig::from_json(
            r#"{"mcpServers": {"fs": {"command": "node", "sandbox": {"network": false}}}}"#,
        )
        .unwrap_err();
        assert!(
            unknown.to_string().contains("unknown field `network`"),
            "{unknown}"
        );
    }
}
