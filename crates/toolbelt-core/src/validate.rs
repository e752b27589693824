//! Argument validation against a tool's compiled parameter schema.

use serde_json::Value;

use crate::error::{SpecError, ToolError, Violation};
use crate::spec::ToolSpec;

/// Most violations reported for one call; more only add noise for the model.
const MAX_VIOLATIONS: usize = 8;

/// A parameter schema compiled once per tool.
pub(crate) struct CompiledSchema {
    validator: jsonschema::Validator,
    /// The schema, to name the arguments an object allows when one is unknown.
    schema: Value,
}

impl CompiledSchema {
    pub(crate) fn compile(spec: &ToolSpec) -> Result<Self, SpecError> {
        jsonschema::validator_for(&spec.parameters)
            .map(|validator| Self {
                validator,
                schema: spec.parameters.clone(),
            })
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
            .map(|e| {
                let message = match e.kind() {
                    jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                        self.unknown_arguments(&e.schema_path().to_string(), unexpected)
                    }
                    _ => e.to_string(),
                };
                Violation {
                    pointer: e.instance_path().to_string(),
                    schema_path: e.schema_path().to_string(),
                    message,
                }
            })
            .collect();
        Err(ToolError::InvalidArguments { violations })
    }

    /// "unknown argument `limit`; the arguments are `path`, `start_line`, `end_line`", the
    /// allowed names read from the object schema that refused them.
    fn unknown_arguments(&self, schema_path: &str, unexpected: &[String]) -> String {
        let names = |list: &[String]| {
            list.iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let noun = if unexpected.len() == 1 {
            "argument"
        } else {
            "arguments"
        };
        // `/properties/x/additionalProperties` -> the object schema at `/properties/x`.
        let object = schema_path
            .strip_suffix("/additionalProperties")
            .and_then(|p| self.schema.pointer(p));
        let allowed: Vec<String> = object
            .and_then(|o| o.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        if allowed.is_empty() {
            format!("unknown {noun} {}; this takes none", names(unexpected))
        } else {
            format!(
                "unknown {noun} {}; the arguments are {}",
                names(unexpected),
                names(&allowed)
            )
        }
    }
}
