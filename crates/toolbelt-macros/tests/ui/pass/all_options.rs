use toolbelt_core::{Tool, ToolContext, ToolError};
use toolbelt_macros::tool;

/// Reads a file from the workspace.
///
/// Lines are 1-based.
#[tool(
    name = "file_read",
    tags("file", "io"),
    timeout = "30s",
    retries = 2,
    version = "1.2.0",
    mutating,
    needs_approval = false,
    parallel = true,
    cacheable,
    max_output = 65536,
    overflow = "truncate",
    kind = "function",
    discover = false,
    crate = "::toolbelt_core",
)]
async fn file_read(
    ctx: &ToolContext,
    /// Path relative to the workspace root.
    path: String,
    /// First line to return.
    start_line: Option<u64>,
    #[serde(default)] limit: Option<u32>,
) -> Result<String, ToolError> {
    let _ = ctx.call_id();
    Ok(format!("{path} {start_line:?} {limit:?}"))
}

fn main() {
    let spec = FileReadTool.spec();
    assert_eq!(spec.name, "file_read");
    assert!(spec.policy.parallel && !spec.policy.needs_approval && spec.policy.cacheable);
}
