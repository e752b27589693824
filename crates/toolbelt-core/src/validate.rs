//! Argument validation against a tool's compiled parameter schema.

use serde_json::Value;

use crate::error::{SpecError, ToolError, Violation};
use crate::spec::ToolSpec;

/// Most violations reported for one call; more only add noise for the model.
const MAX_VIOLATIONS: usize = 8;

/// A parameter schema compiled once per tool.
pub(crate) struct CompiledSchema {
    validator: jsonschema::Validator,
}

impl CompiledSchema {
    pub(crate) fn compile(spec: &ToolSpec) -> Result<Self, SpecError> {
        jsonschema::validator_for(&spec.parameters)
            .map(|validator| Self { validator })
            .map_err(|e| SpecError::InvalidSchema {
                tool: spec.name.to_string(),
                pointer: e.schema_path().to_string(),
                reason: e.to_string(),
            })
    }

    /// Checks `args`; on failure lists each broken rule with its JSON pointer.
    pub(crate) fn check(&self, args: &Value) -> Result<(), ToolError> {
        if self.validator.is_valid(args) {
            return Ok(());
        }
        let violations: Vec<Violation> = self
            .validator
            .iter_errors(args)
            .take(MAX_VIOLATIONS)
            .map(|e| Violation {
                pointer: e.instance_path().to_string(),
                schema_path: e.schema_path().to_string(),
                message: e.to_string(),
            })
            .collect();
        Err(ToolError::InvalidArguments { violations })
    }
}
