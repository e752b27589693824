//! Where a tool in a process's registry comes from, named the same way by `toolbelt tools ls`
//! and `GET /api/v1/tools`.

use toolbelt_core::{ToolKind, ToolSpec};
use toolbelt_store::LiveRegistry;

/// The spec metadata key under which an MCP client keeps what the remote server said of a
/// tool (`toolbelt_mcp::MCP_METADATA_KEY`; the host does not link the MCP crate).
const MCP_METADATA_KEY: &str = "mcp";

/// Where the tool `spec` comes from: `compiled`, `http`, `command`, `agent`, `mcp:SERVER` (a
/// tool imported from the MCP server named `SERVER`) or `meta` (a tool about tools, such as
/// `search_tools`). `live` is the registry that installed stored tools; without one (a
/// process with no database) a function tool is `compiled`.
pub fn tool_origin(live: Option<&LiveRegistry>, spec: &ToolSpec) -> String {
    match spec.kind {
        ToolKind::Mcp => {
            let server = spec
                .metadata
                .get(MCP_METADATA_KEY)
                .and_then(|m| m.get("server"))
                .and_then(|s| s.as_str());
            match server {
                Some(server) => format!("mcp:{server}"),
                None => "mcp".to_owned(),
            }
        }
        ToolKind::Meta => "meta".to_owned(),
        ToolKind::Agent => "agent".to_owned(),
        _ => live
            .and_then(|l| l.origin(spec.name.as_str()))
            .unwrap_or("compiled")
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn mcp_tools_name_their_server_and_function_tools_default_to_compiled() {
        let mcp = ToolSpec::builder("py.add")
            .description("Adds")
            .kind(ToolKind::Mcp)
            .metadata(MCP_METADATA_KEY, json!({"server": "py", "name": "add"}))
            .build()
            .unwrap();
        let plain = ToolSpec::builder("echo")
            .description("Echoes")
            .build()
            .unwrap();
        let agent = ToolSpec::builder("helper")
            .description("An agent")
            .kind(ToolKind::Agent)
            .build()
            .unwrap();
        assert_eq!(
            (
                tool_origin(None, &mcp),
                tool_origin(None, &plain),
                tool_origin(None, &agent)
            ),
            (
                "mcp:py".to_owned(),
                "compiled".to_owned(),
                "agent".to_owned()
            )
        );
    }
}
