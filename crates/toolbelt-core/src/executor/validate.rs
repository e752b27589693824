//! Argument validation stage.

use serde_json::Value;

use crate::error::ToolError;
use crate::tool::ToolHandle;

/// Checks `args` against the tool's cached compiled schema.
pub(super) fn check(tool: &ToolHandle, args: &Value) -> Result<(), ToolError> {
    match tool.compiled_schema() {
        Ok(schema) => schema.check(args),
        Err(e) => Err(ToolError::failed(format!(
            "the tool's own parameter schema is invalid ({e}); this is a bug in the tool, not in the call"
        ))),
    }
}
