//! Provider-aware normalisation of tool parameter schemas.
//!
//! Tool schemas come from schemars or are written by hand; providers accept
//! different subsets of JSON Schema. [`normalize_schema`] rewrites one schema
//! for one [`SchemaDialect`] before it is sent.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

/// Which subset of JSON Schema a provider accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaDialect {
    /// OpenAI and compatible servers, non-strict function calling.
    OpenAi,
    /// OpenAI structured outputs (`"strict": true`).
    OpenAiStrict,
    /// Anthropic Messages `input_schema`.
    Anthropic,
    /// The small OpenAPI-like subset of Gemini-style APIs: no type arrays, no
    /// `$ref`, no `additionalProperties`, few keywords.
    Conservative,
}

/// Formats OpenAI strict mode accepts.
const STRICT_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords OpenAI strict mode rejects.
const STRICT_UNSUPPORTED: [&str; 12] = [
    "default",
    "minLength",
    "maxLength",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "uniqueItems",
];

/// Keywords the conservative dialect keeps.
const CONSERVATIVE_KEYS: [&str; 15] = [
    "type",
    "description",
    "enum",
    "properties",
    "required",
    "items",
    "anyOf",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "format",
];

/// Rewrites `schema` for `dialect`:
///
/// | step | OpenAi | OpenAiStrict | Anthropic | Conservative |
/// | --- | --- | --- | --- | --- |
/// | inline `$ref` into `$defs`/`definitions` | yes | yes | yes | yes |
/// | recursive `$ref` | kept, `$defs` kept | kept | kept | cut to `{"type": "object"}` |
/// | root made a plain object (merge `allOf`/`anyOf`/`oneOf` variants, wrap scalars as `value`) | yes | yes | yes | yes |
/// | `oneOf` → `anyOf`, `allOf` of objects merged | no | yes | no | yes |
/// | `["T", "null"]` type arrays | kept | kept | kept | null dropped, several types → `anyOf` |
/// | every property required, optional ones nullable, `additionalProperties: false` | no | yes | no | no |
/// | unsupported keywords removed | `$schema` | + `default`, length/uniqueness limits, unknown `format`s | `$schema` | all but a small allow-list |
///
/// Never fails: what cannot be expressed is dropped or loosened. Use
/// [`is_strict_compatible`] to know whether strict mode keeps the meaning.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolbelt_llm::{SchemaDialect, normalize_schema};
///
/// let schema = json!({"type": "object",
///     "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
///     "required": ["path"]});
/// let strict = normalize_schema(&schema, SchemaDialect::OpenAiStrict);
/// assert_eq!(strict["required"], json!(["limit", "path"]));
/// assert_eq!(strict["properties"]["limit"]["type"], json!(["integer", "null"]));
/// assert_eq!(strict["additionalProperties"], json!(false));
/// ```
///
/// `$ref` inlining has a budget ([`MAX_INLINED_NODES`] nodes, [`MAX_SCHEMA_DEPTH`]
/// levels): past it, the offending subschemas are cut to `{"type": "object"}`
/// (a warning is logged). [`try_normalize_schema`] reports that as an error instead.
pub fn normalize_schema(schema: &Value, dialect: SchemaDialect) -> Value {
    let (root, exceeded) = normalize_within_budget(schema, dialect);
    if let Some(err) = exceeded {
        tracing::warn!(error = %err, "tool schema cut to fit the inlining budget");
    }
    root
}

/// Most schema nodes `$ref` inlining may produce: far above any real tool
/// (hundreds), far below what a `$ref` bomb (definitions referring to others
/// twice, level after level) would expand to.
pub const MAX_INLINED_NODES: usize = 20_000;

/// Deepest nesting the normalised schema may have (levels of subschemas).
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// A schema that cannot be normalised within the budget.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// Inlining `$ref`s would produce more than [`MAX_INLINED_NODES`] nodes.
    #[error(
        "the schema expands to more than {limit} nodes when its $refs are inlined \
         (last through `{via}`); a definition referring to others many times over \
         (a $ref bomb) cannot be sent to a model"
    )]
    TooLarge {
        /// The node budget.
        limit: usize,
        /// The `$ref` chain being expanded when the budget ran out (`A -> B -> C`).
        via: String,
    },
    /// The schema (after inlining) nests deeper than [`MAX_SCHEMA_DEPTH`] levels.
    #[error(
        "the schema nests deeper than {limit} levels{}",
        if .via.is_empty() { String::new() } else { format!(" (through $ref `{}`)", .via) }
    )]
    TooDeep {
        /// The depth limit.
        limit: usize,
        /// The `$ref` chain at that depth, empty when the nesting is literal.
        via: String,
    },
}

/// [`normalize_schema`], but a schema over the inlining budget is an error
/// naming the limit and the `$ref` chain, not a loosened schema.
///
/// # Errors
/// [`SchemaError::TooLarge`] or [`SchemaError::TooDeep`].
pub fn try_normalize_schema(schema: &Value, dialect: SchemaDialect) -> Result<Value, SchemaError> {
    match normalize_within_budget(schema, dialect) {
        (root, None) => Ok(root),
        (_, Some(err)) => Err(err),
    }
}

fn normalize_within_budget(schema: &Value, dialect: SchemaDialect) -> (Value, Option<SchemaError>) {
    let mut root = match schema {
        Value::Object(_) => schema.clone(),
        _ => json!({}),
    };
    if let Some(obj) = root.as_object_mut() {
        obj.remove("$schema");
        obj.remove("$id");
    }
    let (mut root, exceeded) = inline_refs(root, dialect);
    make_root_object(&mut root, dialect);
    rewrite(&mut root, dialect);
    if dialect != SchemaDialect::Conservative
        && let Some(obj) = root.as_object_mut()
    {
        obj.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    (root, exceeded)
}

/// Whether OpenAI strict mode can express `schema` without changing its
/// meaning: no free-form objects (maps, `serde_json::Value`), no `true`
/// schemas. A client falls back to non-strict for tools where this is false.
pub fn is_strict_compatible(schema: &Value) -> bool {
    let normalized = normalize_schema(schema, SchemaDialect::OpenAi);
    strict_ok(&normalized, true)
}

fn strict_ok(node: &Value, is_root: bool) -> bool {
    let Value::Object(obj) = node else {
        return false;
    };
    let is_object = type_names(obj).contains(&"object");
    if is_object && !is_root && !obj.contains_key("properties") {
        return false;
    }
    if matches!(obj.get("additionalProperties"), Some(v) if v != &Value::Bool(false)) {
        return false;
    }
    if obj.contains_key("patternProperties") {
        return false;
    }
    let untyped = !obj.contains_key("type")
        && ![
            "anyOf",
            "oneOf",
            "allOf",
            "enum",
            "const",
            "$ref",
            "properties",
            "items",
        ]
        .iter()
        .any(|k| obj.contains_key(*k));
    if untyped && !is_root {
        return false;
    }
    let mut ok = true;
    for_each_subschema(obj, &mut |child| ok &= strict_ok(child, false));
    ok
}

/// The names in `type`, whether a string or an array.
fn type_names(obj: &Map<String, Value>) -> Vec<&str> {
    match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Keywords whose value maps names to subschemas.
const SCHEMA_MAP_KEYS: [&str; 4] = ["properties", "patternProperties", "$defs", "definitions"];
/// Keywords whose value is one subschema (`items` may also be a list).
const SCHEMA_KEYS: [&str; 7] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
];
/// Keywords whose value is a list of subschemas.
const SCHEMA_LIST_KEYS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];

/// Calls `f` on every direct subschema of `obj`.
fn for_each_subschema(obj: &Map<String, Value>, f: &mut impl FnMut(&Value)) {
    for key in SCHEMA_MAP_KEYS {
        if let Some(Value::Object(children)) = obj.get(key) {
            children.values().for_each(&mut *f);
        }
    }
    for key in SCHEMA_KEYS {
        match obj.get(key) {
            Some(child @ Value::Object(_)) => f(child),
            Some(Value::Array(list)) if key == "items" => list.iter().for_each(&mut *f),
            _ => {}
        }
    }
    for key in SCHEMA_LIST_KEYS {
        if let Some(Value::Array(list)) = obj.get(key) {
            list.iter().for_each(&mut *f);
        }
    }
}

/// Mutable twin of [`for_each_subschema`].
fn for_each_subschema_mut(obj: &mut Map<String, Value>, f: &mut impl FnMut(&mut Value)) {
    for key in SCHEMA_MAP_KEYS {
        if let Some(Value::Object(children)) = obj.get_mut(key) {
            children.values_mut().for_each(&mut *f);
        }
    }
    for key in SCHEMA_KEYS {
        match obj.get_mut(key) {
            Some(child @ Value::Object(_)) => f(child),
            Some(Value::Array(list)) if key == "items" => list.iter_mut().for_each(&mut *f),
            _ => {}
        }
    }
    for key in SCHEMA_LIST_KEYS {
        if let Some(Value::Array(list)) = obj.get_mut(key) {
            list.iter_mut().for_each(&mut *f);
        }
    }
}

// ---------------------------------------------------------------------------
// $ref inlining

struct Inliner {
    defs: BTreeMap<String, Value>,
    /// Definitions referenced recursively, which stay under `$defs`.
    kept: BTreeSet<String>,
    keep_recursive: bool,
    /// Nodes still allowed in the output.
    nodes_left: usize,
    /// Current nesting depth of the output.
    depth: usize,
    /// The first budget overrun, if any.
    exceeded: Option<SchemaError>,
}

/// Replaces local `$ref`s with the definitions they name. Recursive
/// references stay (pointing at `#/$defs/..`) unless the dialect has no `$ref`.
fn inline_refs(mut root: Value, dialect: SchemaDialect) -> (Value, Option<SchemaError>) {
    let Some(obj) = root.as_object_mut() else {
        return (root, None);
    };
    let mut defs = BTreeMap::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(found)) = obj.remove(key) {
            defs.extend(found);
        }
    }
    let mut inliner = Inliner {
        defs,
        kept: BTreeSet::new(),
        keep_recursive: dialect != SchemaDialect::Conservative,
        nodes_left: MAX_INLINED_NODES,
        depth: 0,
        exceeded: None,
    };
    let mut root = inliner.resolve(root, &mut Vec::new());
    // Kept definitions are resolved with themselves on the stack, which may keep more.
    let mut kept_defs = Map::new();
    let mut done = BTreeSet::new();
    while let Some(name) = inliner.kept.difference(&done).next().cloned() {
        done.insert(name.clone());
        if let Some(def) = inliner.defs.get(&name).cloned() {
            let resolved = inliner.resolve(def, &mut vec![name.clone()]);
            kept_defs.insert(name, resolved);
        }
    }
    if !kept_defs.is_empty()
        && let Some(obj) = root.as_object_mut()
    {
        obj.insert("$defs".to_owned(), Value::Object(kept_defs));
    }
    (root, inliner.exceeded)
}

impl Inliner {
    /// Resolves one node one level deeper, within the node and depth budget;
    /// past it the node is cut to `{"type": "object"}` and the overrun recorded.
    fn resolve(&mut self, node: Value, stack: &mut Vec<String>) -> Value {
        if self.nodes_left == 0 || self.depth >= MAX_SCHEMA_DEPTH {
            if self.exceeded.is_none() {
                let via = stack.join(" -> ");
                self.exceeded = Some(if self.nodes_left == 0 {
                    SchemaError::TooLarge {
                        limit: MAX_INLINED_NODES,
                        via,
                    }
                } else {
                    SchemaError::TooDeep {
                        limit: MAX_SCHEMA_DEPTH,
                        via,
                    }
                });
            }
            return json!({"type": "object"});
        }
        self.nodes_left -= 1;
        self.depth += 1;
        let out = self.resolve_node(node, stack);
        self.depth -= 1;
        out
    }

    fn resolve_node(&mut self, node: Value, stack: &mut Vec<String>) -> Value {
        let mut obj = match node {
            Value::Object(obj) => obj,
            Value::Array(items) => {
                return Value::Array(items.into_iter().map(|v| self.resolve(v, stack)).collect());
            }
            other => return other,
        };
        if let Some(name) = obj.get("$ref").and_then(Value::as_str).and_then(def_name) {
            let name = name.to_owned();
            if stack.contains(&name) || !self.defs.contains_key(&name) {
                return self.unresolved(obj, name);
            }
            obj.remove("$ref");
            stack.push(name.clone());
            let def = self.defs.get(&name).cloned().unwrap_or(Value::Null);
            let resolved = self.resolve(def, stack);
            stack.pop();
            let mut merged = match resolved {
                Value::Object(m) => m,
                Value::Bool(true) => Map::new(),
                other => return other,
            };
            // Keywords beside the `$ref` (usually a description) win.
            for (key, value) in obj {
                let value = self.resolve(value, stack);
                merged.insert(key, value);
            }
            return Value::Object(merged);
        }
        let mut out = Map::new();
        for (key, value) in obj {
            let value = match key.as_str() {
                "properties" | "patternProperties" => self.resolve_each(value, stack),
                "enum" | "const" | "default" | "examples" | "required" => value,
                _ => self.resolve(value, stack),
            };
            out.insert(key, value);
        }
        Value::Object(out)
    }

    fn resolve_each(&mut self, node: Value, stack: &mut Vec<String>) -> Value {
        match node {
            Value::Object(children) => Value::Object(
                children
                    .into_iter()
                    .map(|(k, v)| (k, self.resolve(v, stack)))
                    .collect(),
            ),
            other => other,
        }
    }

    fn unresolved(&mut self, mut obj: Map<String, Value>, name: String) -> Value {
        let known = self.defs.contains_key(&name);
        if self.keep_recursive && known {
            obj.insert("$ref".to_owned(), Value::from(format!("#/$defs/{name}")));
            self.kept.insert(name);
        } else {
            obj.remove("$ref");
            obj.entry("type").or_insert_with(|| Value::from("object"));
        }
        Value::Object(obj)
    }
}

/// `Name` from `#/$defs/Name` or `#/definitions/Name`.
fn def_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
}

// ---------------------------------------------------------------------------
// root

/// Makes the root `{"type": "object", ...}` without root-level combinators.
fn make_root_object(root: &mut Value, dialect: SchemaDialect) {
    let Value::Object(obj) = root else {
        return;
    };
    let defs = obj.remove("$defs");
    if let Some(Value::Array(parts)) = obj.remove("allOf") {
        for part in parts {
            merge_all_of(obj, part);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if obj.contains_key("properties") {
            break;
        }
        if let Some(Value::Array(variants)) = obj.remove(key) {
            merge_variants(obj, variants, dialect);
        }
    }
    let types = type_names(obj);
    let is_object = types.contains(&"object");
    let scalar = !types.is_empty() && !is_object && types != ["null"];
    if scalar || (types.is_empty() && (obj.contains_key("items") || obj.contains_key("enum"))) {
        let description = obj.remove("description");
        let inner = Value::Object(std::mem::take(obj));
        obj.insert("type".to_owned(), Value::from("object"));
        if let Some(d) = description {
            obj.insert("description".to_owned(), d);
        }
        obj.insert("properties".to_owned(), json!({ "value": inner }));
        obj.insert("required".to_owned(), json!(["value"]));
    } else {
        obj.insert("type".to_owned(), Value::from("object"));
    }
    obj.remove("title");
    if let Some(defs) = defs {
        obj.insert("$defs".to_owned(), defs);
    }
}

/// `allOf` part into `obj`: properties and required lists unite; other
/// keywords already in `obj` win.
fn merge_all_of(obj: &mut Map<String, Value>, part: Value) {
    let Value::Object(part) = part else {
        return;
    };
    for (key, value) in part {
        match (key.as_str(), obj.get_mut(&key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (k, v) in theirs {
                    mine.entry(k).or_insert(v);
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(&name) {
                        mine.push(name);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, value) => {
                obj.insert(key, value);
            }
        }
    }
}

/// Root `anyOf`/`oneOf` variants folded into one object: properties unite
/// (same-named ones differing become `anyOf`, `const`s become one `enum`),
/// and only properties every variant requires stay required.
fn merge_variants(obj: &mut Map<String, Value>, variants: Vec<Value>, dialect: SchemaDialect) {
    let mut properties: Map<String, Value> = Map::new();
    let mut required: Option<Vec<Value>> = None;
    let mut names = Vec::new();
    for variant in variants {
        let Value::Object(variant) = variant else {
            continue;
        };
        if let Some(Value::Object(props)) = variant.get("properties") {
            for (name, schema) in props {
                match properties.get_mut(name) {
                    None => {
                        properties.insert(name.clone(), schema.clone());
                    }
                    Some(existing) => combine_property(existing, schema, dialect),
                }
            }
        }
        let req: Vec<Value> = match variant.get("required") {
            Some(Value::Array(r)) => r.clone(),
            _ => Vec::new(),
        };
        required = Some(match required {
            None => req,
            Some(prev) => prev.into_iter().filter(|n| req.contains(n)).collect(),
        });
        if let Some(d) = variant.get("description").and_then(Value::as_str) {
            names.push(d.to_owned());
        }
    }
    obj.insert("properties".to_owned(), Value::Object(properties));
    obj.insert(
        "required".to_owned(),
        Value::Array(required.unwrap_or_default()),
    );
    if !obj.contains_key("description") && !names.is_empty() {
        obj.insert(
            "description".to_owned(),
            Value::from(format!("One of: {}", names.join("; "))),
        );
    }
}

fn combine_property(existing: &mut Value, other: &Value, dialect: SchemaDialect) {
    if existing == other {
        return;
    }
    let consts = |v: &Value| -> Option<Vec<Value>> {
        let obj = v.as_object()?;
        match (obj.get("const"), obj.get("enum")) {
            (Some(c), _) => Some(vec![c.clone()]),
            (None, Some(Value::Array(e))) => Some(e.clone()),
            _ => None,
        }
    };
    if let (Some(mut mine), Some(theirs)) = (consts(existing), consts(other)) {
        for value in theirs {
            if !mine.contains(&value) {
                mine.push(value);
            }
        }
        if let Some(obj) = existing.as_object_mut() {
            obj.remove("const");
            obj.insert("enum".to_owned(), Value::Array(mine));
        }
        return;
    }
    if dialect == SchemaDialect::Conservative {
        return;
    }
    let only_any_of = existing
        .as_object()
        .is_some_and(|o| o.len() == 1 && o.contains_key("anyOf"));
    match existing.get_mut("anyOf") {
        Some(Value::Array(list)) if only_any_of => {
            if !list.contains(other) {
                list.push(other.clone());
            }
        }
        _ => *existing = json!({ "anyOf": [existing.take(), other.clone()] }),
    }
}

// ---------------------------------------------------------------------------
// per-node rewriting

fn rewrite(node: &mut Value, dialect: SchemaDialect) {
    if let Value::Bool(b) = node {
        // Boolean schemas are valid JSON Schema but rejected by some APIs;
        // `{}` and `{"not": {}}` say the same.
        *node = if *b { json!({}) } else { json!({"not": {}}) };
        return;
    }
    let Value::Object(obj) = node else {
        return;
    };
    match dialect {
        SchemaDialect::OpenAi | SchemaDialect::Anthropic => {}
        SchemaDialect::OpenAiStrict => rewrite_strict(obj),
        SchemaDialect::Conservative => rewrite_conservative(obj),
    }
    for_each_subschema_mut(obj, &mut |child| rewrite(child, dialect));
    if dialect == SchemaDialect::OpenAiStrict {
        enforce_strict_object(obj);
    }
    if dialect == SchemaDialect::Conservative
        && obj
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        obj.remove("properties");
    }
}

/// Merges `allOf` into the node and renames `oneOf` to `anyOf`.
fn fold_combinators(obj: &mut Map<String, Value>) {
    if let Some(Value::Array(parts)) = obj.remove("allOf") {
        for part in parts {
            merge_all_of(obj, part);
        }
    }
    if let Some(one_of) = obj.remove("oneOf") {
        match obj.get_mut("anyOf") {
            Some(Value::Array(list)) => {
                if let Value::Array(more) = one_of {
                    list.extend(more);
                }
            }
            _ => {
                obj.insert("anyOf".to_owned(), one_of);
            }
        }
    }
}

fn rewrite_strict(obj: &mut Map<String, Value>) {
    fold_combinators(obj);
    if !obj.contains_key("type") && obj.contains_key("properties") {
        obj.insert("type".to_owned(), Value::from("object"));
    }
    for key in STRICT_UNSUPPORTED {
        obj.remove(key);
    }
    obj.remove("maxContains");
    if let Some(format) = obj.get("format").and_then(Value::as_str)
        && !STRICT_FORMATS.contains(&format)
    {
        obj.remove("format");
    }
}

/// Object nodes get `additionalProperties: false` and every property
/// required; the ones that were optional become nullable.
fn enforce_strict_object(obj: &mut Map<String, Value>) {
    if !type_names(obj).contains(&"object") {
        return;
    }
    obj.insert("additionalProperties".to_owned(), Value::Bool(false));
    let required: Vec<Value> = match obj.get("required") {
        Some(Value::Array(r)) => r.clone(),
        _ => Vec::new(),
    };
    let mut props = match obj.remove("properties") {
        Some(Value::Object(props)) => props,
        _ => Map::new(),
    };
    let mut all = Vec::with_capacity(props.len());
    for (name, schema) in props.iter_mut() {
        let key = Value::from(name.clone());
        if !required.contains(&key) {
            make_nullable(schema);
        }
        all.push(key);
    }
    // Sorted, so the output does not depend on serde_json's map ordering feature.
    all.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    obj.insert("properties".to_owned(), Value::Object(props));
    obj.insert("required".to_owned(), Value::Array(all));
}

/// Lets `schema` also accept `null`.
fn make_nullable(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    let add_null_to_enum = |obj: &mut Map<String, Value>| {
        if let Some(Value::Array(values)) = obj.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
    };
    match obj.get_mut("type") {
        Some(Value::String(t)) if t == "null" => {}
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            obj.insert("type".to_owned(), json!([t, "null"]));
            add_null_to_enum(obj);
        }
        Some(Value::Array(types)) => {
            if !types.contains(&Value::from("null")) {
                types.push(Value::from("null"));
            }
            add_null_to_enum(obj);
        }
        _ => match obj.get_mut("anyOf") {
            Some(Value::Array(list)) => {
                let null = json!({"type": "null"});
                if !list.contains(&null) {
                    list.push(null);
                }
            }
            _ => {
                let description = obj.remove("description");
                let inner = Value::Object(std::mem::take(obj));
                obj.insert("anyOf".to_owned(), json!([inner, {"type": "null"}]));
                if let Some(d) = description {
                    obj.insert("description".to_owned(), d);
                }
            }
        },
    }
}

fn rewrite_conservative(obj: &mut Map<String, Value>) {
    fold_combinators(obj);
    if let Some(c) = obj.remove("const") {
        obj.entry("enum").or_insert_with(|| Value::Array(vec![c]));
    }
    // Type arrays: drop `null`; several types left become `anyOf`.
    if let Some(Value::Array(types)) = obj.get("type") {
        let kept: Vec<Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        match kept.as_slice() {
            [] => {
                obj.remove("type");
            }
            [one] => {
                obj.insert("type".to_owned(), one.clone());
            }
            many => {
                obj.remove("type");
                let variants = many.iter().map(|t| json!({ "type": t })).collect();
                obj.insert("anyOf".to_owned(), Value::Array(variants));
            }
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if !obj.contains_key("type")
        && let Some(Value::Array(values)) = obj.get("enum")
        && let Some(t) = common_type(values)
    {
        // These APIs want a type beside every enum.
        obj.insert("type".to_owned(), Value::from(t));
    }
    // `anyOf` with a null member: drop it; one member left is merged in.
    if let Some(Value::Array(list)) = obj.get_mut("anyOf") {
        list.retain(|v| v.get("type").and_then(Value::as_str) != Some("null"));
        if list.len() == 1
            && let Some(Value::Object(only)) = list.pop()
        {
            obj.remove("anyOf");
            for (key, value) in only {
                obj.entry(key).or_insert(value);
            }
            // The merged member may bring its own combinators or type arrays.
            rewrite_conservative(obj);
            return;
        }
    }
    let format_ok = match (obj.get("type").and_then(Value::as_str), obj.get("format")) {
        (_, None) => true,
        (Some("string"), Some(f)) => matches!(f.as_str(), Some("date-time" | "enum")),
        (Some("integer"), Some(f)) => matches!(f.as_str(), Some("int32" | "int64")),
        (Some("number"), Some(f)) => matches!(f.as_str(), Some("float" | "double")),
        _ => false,
    };
    if !format_ok {
        obj.remove("format");
    }
    obj.retain(|key, _| CONSERVATIVE_KEYS.contains(&key.as_str()));
    // `required` may only name properties that exist.
    let names: Vec<Value> = match obj.get("properties") {
        Some(Value::Object(props)) => props.keys().cloned().map(Value::from).collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Array(required)) = obj.get_mut("required") {
        required.retain(|r| names.contains(r));
        if required.is_empty() {
            obj.remove("required");
        }
    }
}

/// The JSON type all `values` share, if any.
fn common_type(values: &[Value]) -> Option<&'static str> {
    let type_of = |v: &Value| match v {
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        _ => None,
    };
    let first = type_of(values.first()?)?;
    values
        .iter()
        .all(|v| type_of(v) == Some(first))
        .then_some(first)
}

#[cfg(test)]
mod tests;
