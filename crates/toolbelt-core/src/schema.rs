//! JSON Schema derivation for tool parameters.

use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The parameter schema of `T`, shaped for LLM tool APIs.
///
/// Uses schemars (draft 2020-12) with subschemas inlined, so most schemas carry
/// no `$defs`/`$ref` (recursive types keep them); the root `$schema` and
/// `title` keys are dropped because providers ignore or reject them. Doc
/// comments on fields become `description`s.
pub fn schema_for<T: schemars::JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        // A unit or empty struct derives `{"type": "null"}` or no properties; tools take
        // objects, and some providers reject an object schema without `properties`.
        if obj.get("type").and_then(Value::as_str) != Some("object") {
            obj.insert("type".to_owned(), Value::from("object"));
        }
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Default::default()));
    }
    value
}
