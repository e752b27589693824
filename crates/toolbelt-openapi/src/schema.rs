//! [`Inliner`]: a schema of the document with its `$ref`s replaced by what they point at,
//! within bounds, and the keywords only OpenAPI knows left out.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::document::{escape, follow};
use crate::error::ImportError;

/// Deepest nesting of references expanded; deeper ones become `{}` (any value).
pub const MAX_REF_DEPTH: usize = 12;
/// Most schema nodes one operation's arguments may hold; past it, references become `{}`.
pub const MAX_NODES: usize = 20_000;

/// Keywords whose values are data, not schemas: never searched for `$ref`.
const DATA_KEYWORDS: &[&str] = &["default", "const", "enum", "examples"];
/// Keywords whose values map names to schemas: their keys are names, never keywords.
const NAME_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// OpenAPI's own keywords, meaningless to a JSON Schema validator or a model.
const OPENAPI_KEYWORDS: &[&str] = &["discriminator", "xml", "externalDocs", "example"];

/// Expands `$ref`s of one document; expansions that were not cut short are remembered.
pub(crate) struct Inliner<'a> {
    doc: &'a Value,
    cache: HashMap<String, Value>,
}

/// The state of one expansion.
struct Walk {
    stack: Vec<String>,
    nodes: usize,
    cut: bool,
}

impl<'a> Inliner<'a> {
    pub(crate) fn new(doc: &'a Value) -> Self {
        Self {
            doc,
            cache: HashMap::new(),
        }
    }

    /// `schema` (found at `at`) with every reference expanded, and whether some reference was
    /// left unexpanded (a recursive type, or past the bounds).
    ///
    /// # Errors
    /// A reference that points outside the document or at nothing.
    pub(crate) fn inline(
        &mut self,
        schema: &Value,
        at: &str,
    ) -> Result<(Value, bool), ImportError> {
        let mut walk = Walk {
            stack: Vec::new(),
            nodes: 0,
            cut: false,
        };
        let out = self.expand(schema, at, &mut walk)?;
        Ok((out, walk.cut))
    }

    fn expand(&mut self, value: &Value, at: &str, walk: &mut Walk) -> Result<Value, ImportError> {
        walk.nodes += 1;
        match value {
            Value::Object(map) => {
                if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                    return self.expand_ref(reference, map, at, walk);
                }
                let mut out = Map::new();
                for (key, item) in map {
                    if OPENAPI_KEYWORDS.contains(&key.as_str()) || key.starts_with("x-") {
                        continue;
                    }
                    let here = format!("{at}/{}", escape(key));
                    let item = if DATA_KEYWORDS.contains(&key.as_str()) {
                        item.clone()
                    } else if let (true, Value::Object(names)) =
                        (NAME_MAPS.contains(&key.as_str()), item)
                    {
                        let mut expanded = Map::new();
                        for (name, schema) in names {
                            let at = format!("{here}/{}", escape(name));
                            expanded.insert(name.clone(), self.expand(schema, &at, walk)?);
                        }
                        Value::Object(expanded)
                    } else {
                        self.expand(item, &here, walk)?
                    };
                    out.insert(key.clone(), item);
                }
                Ok(Value::Object(out))
            }
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| self.expand(item, &format!("{at}/{i}"), walk))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }

    fn expand_ref(
        &mut self,
        reference: &str,
        map: &Map<String, Value>,
        at: &str,
        walk: &mut Walk,
    ) -> Result<Value, ImportError> {
        let recursive = walk.stack.iter().any(|r| r == reference);
        let expanded = if recursive || walk.stack.len() >= MAX_REF_DEPTH || walk.nodes >= MAX_NODES
        {
            walk.cut = true;
            let why = if recursive {
                "recursive"
            } else {
                "nested too deeply"
            };
            json!({"description": format!("{} (not expanded: {why})", ref_name(reference))})
        } else if let Some(done) = self.cache.get(reference) {
            walk.nodes += count(done);
            done.clone()
        } else {
            let (target, pointer) = follow(self.doc, reference, at)?;
            let was_cut = std::mem::replace(&mut walk.cut, false);
            walk.stack.push(reference.to_owned());
            let out = self.expand(target, &pointer, walk);
            walk.stack.pop();
            let out = out?;
            if !walk.cut {
                self.cache.insert(reference.to_owned(), out.clone());
            }
            walk.cut |= was_cut;
            out
        };
        // 3.1 allows keywords beside `$ref` (a description, a default): they win.
        let mut merged = match expanded {
            Value::Object(m) => m,
            other => return Ok(other),
        };
        for (key, item) in map {
            if key != "$ref" && !OPENAPI_KEYWORDS.contains(&key.as_str()) && !key.starts_with("x-")
            {
                merged.insert(key.clone(), item.clone());
            }
        }
        Ok(Value::Object(merged))
    }
}

/// The last segment of a reference (`#/components/schemas/Pet` → `Pet`).
fn ref_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

fn count(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(count).sum::<usize>(),
        Value::Array(items) => 1 + items.iter().map(count).sum::<usize>(),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn references_are_expanded_and_recursion_is_cut() {
        let doc = json!({"components": {"schemas": {
            "Node": {"type": "object", "xml": {"name": "n"}, "properties": {
                "name": {"$ref": "#/components/schemas/Name", "description": "its name"},
                "example": {"type": "integer", "x-internal": true},
                "child": {"$ref": "#/components/schemas/Node"}}},
            "Name": {"type": "string", "example": "x"}}}});
        let mut inliner = Inliner::new(&doc);
        let (out, cut) = inliner
            .inline(&json!({"$ref": "#/components/schemas/Node"}), "/p")
            .unwrap();
        assert!(cut);
        assert_eq!(
            out,
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "its name"},
                "example": {"type": "integer"},
                "child": {"description": "Node (not expanded: recursive)"}}})
        );
        let err = inliner
            .inline(&json!({"$ref": "#/components/schemas/Nope"}), "/q")
            .unwrap_err();
        assert_eq!(err.pointer(), Some("/q/$ref"));
    }
}
