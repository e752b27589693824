//! Reading a document: JSON or YAML text to a JSON value, the version checked, 3.0 schema
//! keywords rewritten to their 3.1 (JSON Schema 2020-12) form, and pointer helpers.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::ImportError;

/// Longest chain of `$ref` to `$ref` followed for a parameter, body or security scheme.
const MAX_REF_CHAIN: usize = 8;

/// Operations carried by a path item, in the order they are imported.
pub(crate) const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch"];

/// Which OpenAPI line the document follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V30,
    V31,
}

/// Parses `text` (JSON, or YAML when it does not start with `{`) and checks `openapi`.
pub(crate) fn parse(text: &str) -> Result<(Value, Version), ImportError> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    let mut doc: Value = if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).map_err(|e| ImportError::at("", format!("not JSON: {e}")))?
    } else {
        serde_norway::from_str(trimmed)
            .map_err(|e| ImportError::at("", format!("neither JSON nor YAML: {e}")))?
    };
    if !doc.is_object() {
        return Err(ImportError::at("", "the document must be an object"));
    }
    if doc.get("swagger").is_some() {
        return Err(ImportError::at(
            "/swagger",
            "Swagger 2.0 is not supported; convert the document to OpenAPI 3 first",
        ));
    }
    let version = match doc.get("openapi").and_then(Value::as_str) {
        Some(v) if v.starts_with("3.0.") || v == "3.0" => Version::V30,
        Some(v) if v.starts_with("3.1.") || v == "3.1" => Version::V31,
        Some(v) => {
            return Err(ImportError::at(
                "/openapi",
                format!("version `{v}` is not supported; 3.0.x and 3.1.x are"),
            ));
        }
        None => {
            return Err(ImportError::at(
                "/openapi",
                "missing: an OpenAPI document names its version (`openapi: 3.1.0`)",
            ));
        }
    };
    // Responses and callbacks describe what comes back, which a tool does not declare; they
    // are most of a large document, so they are dropped before anything reads it.
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for method in METHODS {
                if let Some(op) = item.get_mut(*method).and_then(Value::as_object_mut) {
                    op.remove("responses");
                    op.remove("callbacks");
                }
            }
        }
    }
    if version == Version::V30 {
        upgrade_schemas(&mut doc);
    }
    Ok((doc, version))
}

/// Rewrites 3.0's schema dialect into JSON Schema 2020-12, in place: `nullable: true` adds
/// `"null"` to `type`, and boolean `exclusiveMinimum`/`exclusiveMaximum` become the numbers.
/// Walks every object: these keywords appear only in schemas.
fn upgrade_schemas(value: &mut Value) {
    match value {
        Value::Object(map) => {
            upgrade_object(map);
            for (key, item) in map.iter_mut() {
                if !matches!(key.as_str(), "example" | "examples" | "default" | "enum") {
                    upgrade_schemas(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(upgrade_schemas),
        _ => {}
    }
}

fn upgrade_object(map: &mut Map<String, Value>) {
    if let Some(Value::Bool(nullable)) = map.get("nullable").cloned() {
        map.remove("nullable");
        if nullable && let Some(Value::String(t)) = map.get("type").cloned() {
            map.insert("type".to_owned(), serde_json::json!([t, "null"]));
        }
    }
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(on)) = map.get(exclusive).cloned() {
            map.remove(exclusive);
            if on && let Some(limit) = map.remove(bound) {
                map.insert(exclusive.to_owned(), limit);
            }
        }
    }
}

/// `text` escaped as one JSON pointer token (`~` → `~0`, `/` → `~1`).
pub(crate) fn escape(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

/// The value a local `$ref` (`#/components/...`) points at, and its pointer.
pub(crate) fn follow<'a>(
    doc: &'a Value,
    reference: &str,
    at: &str,
) -> Result<(&'a Value, String), ImportError> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(ImportError::at(
            format!("{at}/$ref"),
            format!(
                "`{reference}` points outside the document; only local references (`#/...`) are followed"
            ),
        ));
    };
    let pointer = percent_decode(fragment);
    doc.pointer(&pointer)
        .map(|v| (v, pointer.clone()))
        .ok_or_else(|| {
            ImportError::at(
                format!("{at}/$ref"),
                format!("`{reference}` points at nothing"),
            )
        })
}

/// Follows `value` while it is a `$ref` object, at most [`MAX_REF_CHAIN`] times.
pub(crate) fn resolve<'a>(
    doc: &'a Value,
    mut value: &'a Value,
    mut at: String,
) -> Result<(&'a Value, String), ImportError> {
    for _ in 0..MAX_REF_CHAIN {
        let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
            return Ok((value, at));
        };
        (value, at) = follow(doc, reference, &at)?;
    }
    Err(ImportError::at(
        at,
        format!("more than {MAX_REF_CHAIN} references in a row (a loop?)"),
    ))
}

/// Deserializes `value` (found at `at`) as the typed OpenAPI object `T`, naming the JSON
/// pointer of the first value that does not fit.
pub(crate) fn typed<T: DeserializeOwned>(value: &Value, at: &str) -> Result<T, ImportError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut pointer = at.to_owned();
        for segment in e.path().iter() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => {
                    pointer.push('/');
                    pointer.push_str(&index.to_string());
                }
                serde_path_to_error::Segment::Map { key } => {
                    pointer.push('/');
                    pointer.push_str(&escape(key));
                }
                serde_path_to_error::Segment::Enum { .. }
                | serde_path_to_error::Segment::Unknown => {}
            }
        }
        ImportError::at(pointer, e.into_inner().to_string())
    })
}

/// Decodes `%XX` escapes (a `$ref` is a URI fragment).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'%'));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_3_0_schema_is_rewritten_to_json_schema_2020_12() {
        let (doc, version) = parse(
            r#"{"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
                "components": {"schemas": {"n": {"type": "integer", "nullable": true,
                 "minimum": 1, "exclusiveMinimum": true, "maximum": 9, "exclusiveMaximum": false}}}}"#,
        )
        .unwrap();
        assert_eq!(version, Version::V30);
        assert_eq!(
            doc.pointer("/components/schemas/n").unwrap(),
            &json!({"type": ["integer", "null"], "exclusiveMinimum": 1, "maximum": 9})
        );
    }

    #[test]
    fn bad_documents_name_the_pointer() {
        let err = |text: &str| parse(text).unwrap_err().to_string();
        assert_eq!(
            err(r#"{"swagger": "2.0"}"#),
            "invalid OpenAPI document at `/swagger`: Swagger 2.0 is not supported; convert the document to OpenAPI 3 first"
        );
        assert_eq!(
            err("openapi: 4.0.0\n"),
            "invalid OpenAPI document at `/openapi`: version `4.0.0` is not supported; 3.0.x and 3.1.x are"
        );
        let doc = json!({"a": {"$ref": "#/b%20c"}, "b c": {"$ref": "#/a"}});
        let e = resolve(&doc, &doc["a"], "/a".to_owned()).unwrap_err();
        assert_eq!(e.pointer(), Some("/a"));
        let e = follow(&doc, "other.json#/x", "/p").unwrap_err();
        assert_eq!(e.pointer(), Some("/p/$ref"));
    }
}
