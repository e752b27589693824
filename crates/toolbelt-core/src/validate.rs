//! Argument validation against a tool's compiled parameter schema.

use serde_json::Value;

use crate::error::{SpecError, ToolError, Violation};
use crate::spec::ToolSpec;

/// Most violations reported for one call; more only add noise for the model.
const MAX_VIOLATIONS: usize = 8;

/// Most characters of unreadable arguments quoted back to the model.
const MAX_QUOTED: usize = 200;

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
        if let Value::String(raw) = args {
            return Err(ToolError::InvalidArguments {
                violations: vec![self.not_json(raw)],
            });
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

    /// Arguments a model wrote that did not parse (a provider keeps them as a JSON string):
    /// what was wrong, in serde's words, and the object the tool expects.
    fn not_json(&self, raw: &str) -> Violation {
        let reason = match serde_json::from_str::<Value>(raw) {
            Err(e) => format!("they are not valid JSON ({e})"),
            Ok(Value::Object(_)) => "they are an object written inside a JSON string".to_owned(),
            Ok(other) => format!(
                "they are a JSON {}, not an object",
                crate::spec::json_type(&other)
            ),
        };
        let shown: String = raw.chars().take(MAX_QUOTED).collect();
        let cut = if shown.len() < raw.len() { "…" } else { "" };
        let required: Vec<String> = self.schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|n| format!("\"{n}\": …"))
            .collect();
        Violation {
            pointer: String::new(),
            schema_path: "/type".to_owned(),
            message: format!(
                "the arguments `{shown}{cut}` could not be read: {reason}; send them as one JSON \
                 object, {{{}}}",
                required.join(", ")
            ),
        }
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
