//! [`McpTool`]: one tool of an MCP server, as a toolbelt [`Tool`].

use std::sync::Weak;

use rmcp::Peer;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ServerResult, Tool as McpToolDef,
};
use rmcp::service::{PeerRequestOptions, RoleClient};
use serde_json::{Value, json};
use toolbelt_core::{SpecError, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolSpec};

use super::{Failure, FailureKind, Shared};
use crate::config::McpServerConfig;
use crate::convert::{
    MCP_METADATA_KEY, normalize_input_schema, output_from_result, policy_from_annotations, tag_safe,
};

/// A tool imported from an MCP server.
///
/// Its spec carries the tags `mcp` and `mcp:<server>`, the kind
/// [`ToolKind::Mcp`], a policy from the server's annotations and, under the
/// metadata key `mcp`, the server and the tool's own name (what `tools/call`
/// uses). Calls fail with a clear message while the server is down.
pub struct McpTool {
    spec: ToolSpec,
    remote: String,
    shared: Weak<Shared>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// The tool `def` of a server, registered as `name` (the server's prefix and the remote
    /// name made safe, see `convert::unique_local_name`); calls use the remote name.
    pub(crate) fn new(
        shared: Weak<Shared>,
        name: &str,
        config: &McpServerConfig,
        def: McpToolDef,
    ) -> Result<Self, SpecError> {
        let server = shared
            .upgrade()
            .map(|s| s.name().to_owned())
            .unwrap_or_default();
        let remote = def.name.to_string();
        let description = def
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(str::to_owned)
            .or_else(|| def.title.clone())
            .unwrap_or_else(|| format!("`{remote}` from the MCP server `{server}`"));
        let mut meta = json!({"server": server, "name": remote});
        if let Some(annotations) = &def.annotations {
            meta["annotations"] = serde_json::to_value(annotations).unwrap_or(Value::Null);
        }
        if let Some(title) = &def.title {
            meta["title"] = json!(title);
        }
        if let Some(output_schema) = &def.output_schema {
            meta["outputSchema"] = Value::Object((**output_schema).clone());
        }
        let mut policy = policy_from_annotations(def.annotations.as_ref());
        if config.auto_approve.contains(&remote) {
            policy.needs_approval = false;
        }
        let mut builder = ToolSpec::builder(name)
            .description(description)
            .parameters(normalize_input_schema(&def.input_schema))
            .tag("mcp")
            .tag(format!("mcp:{}", tag_safe(&server)))
            .kind(ToolKind::Mcp)
            .policy(policy)
            .metadata(MCP_METADATA_KEY, meta);
        if let Some(timeout) = config.timeout() {
            builder = builder.timeout(timeout);
        }
        Ok(Self {
            spec: builder.build()?,
            remote,
            shared,
        })
    }

    /// The tool's name on its server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }
}

/// Sends `notifications/cancelled` if the call's future is dropped (timeout,
/// cancelled run) before the server answered.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: rmcp::model::RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let param = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("cancelled by the caller".to_owned()),
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            // Drop cannot await: the notification is a single write, done on the side.
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let shared = self.shared.upgrade().ok_or_else(|| {
            ToolError::failed(format!(
                "the MCP client of `{}` was stopped",
                self.spec.name
            ))
        })?;
        let connection = shared.connection();
        let peer = shared.peer().ok_or_else(|| {
            ToolError::retryable(format!(
                "MCP server `{}` is {}",
                shared.name(),
                shared.status()
            ))
        })?;
        let mut params = CallToolRequestParams::new(self.remote.clone());
        params.arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::invalid_argument(
                    "",
                    format!("MCP tools take an object of arguments, got {other}"),
                ));
            }
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| broken(&shared, connection, &e))?;
        let token = handle.progress_token.clone();
        shared.track_progress(token.clone(), self.spec.name.as_str(), &ctx);
        let mut guard = CancelOnDrop {
            peer: Some(peer),
            id: handle.id.clone(),
        };
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            () = ctx.cancellation().cancelled() => {
                shared.untrack_progress(&token);
                return Err(ToolError::Cancelled);
            }
        };
        guard.peer = None;
        shared.untrack_progress(&token);
        match answer {
            Ok(ServerResult::CallToolResult(result)) => output_from_result(result),
            Ok(other) => Err(ToolError::failed(format!(
                "MCP server `{}` answered tools/call with an unexpected result: {}",
                shared.name(),
                serde_json::to_string(&other).unwrap_or_default()
            ))),
            Err(e) => Err(broken(&shared, connection, &e)),
        }
    }
}

/// The tool error for a request that failed on the way (not a tool's own error result).
///
/// A transport failure takes the server down (the supervisor reconnects): an HTTP server that
/// died closes nothing the client would notice otherwise, and its tools must not stay listed.
/// Refused credentials are not worth retrying; other failures are.
fn broken(shared: &Shared, connection: u64, error: &rmcp::service::ServiceError) -> ToolError {
    let failure = Failure::of(error, &shared.target());
    let transport = matches!(
        error,
        rmcp::service::ServiceError::TransportSend(_)
            | rmcp::service::ServiceError::TransportClosed
    );
    if transport {
        shared.connection_lost(connection, &failure.reason);
        let message = format!(
            "MCP server `{}` is down ({})",
            shared.name(),
            failure.reason
        );
        return if failure.kind == FailureKind::Permanent {
            ToolError::failed(message)
        } else {
            ToolError::retryable(message)
        };
    }
    let message = format!("MCP server `{}`: {}", shared.name(), failure.reason);
    if failure.kind == FailureKind::Permanent {
        ToolError::failed(message)
    } else {
        ToolError::retryable(message)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn def(name: &str) -> McpToolDef {
        let schema = serde_json::from_value(json!({"type": "object"})).unwrap();
        McpToolDef::new(
            name.to_owned(),
            "a remote tool",
            std::sync::Arc::new(schema),
        )
    }

    #[test]
    fn an_unannotated_remote_tool_asks_unless_the_host_lists_it_in_auto_approve() {
        let mut config = McpServerConfig::default();
        let asks = McpTool::new(Weak::new(), "srv.write", &config, def("write")).unwrap();
        assert!(asks.spec().policy.needs_approval);
        config.auto_approve = vec!["write".to_owned()];
        let trusted = McpTool::new(Weak::new(), "srv.write", &config, def("write")).unwrap();
        assert!(!trusted.spec().policy.needs_approval);
        let other = McpTool::new(Weak::new(), "srv.other", &config, def("other")).unwrap();
        assert!(other.spec().policy.needs_approval, "only the listed name");
    }
}
