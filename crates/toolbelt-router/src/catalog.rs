//! Tool catalogs as they come: JSON or JSON Lines, in the shapes that providers,
//! MCP servers and benchmarks write, normalised into [`ToolSpec`]s with a report.
//!
//! Accepted, anywhere in the file (a JSON document or one document per line):
//! - a bare tool `{"name", "description", "parameters", "tags"?}`;
//! - OpenAI's `{"type": "function", "function": {...}}` (and the flat Responses form);
//! - Anthropic's `{"name", "description", "input_schema"}`;
//! - MCP's `{"name", "description"?, "title"?, "inputSchema"}`, and a whole
//!   `tools/list` response (`{"result": {"tools": [...]}}`) or `{"tools": [...]}`;
//! - arrays of any of these, and `"function": [...]` / `"functionDeclarations": [...]` lists.
//!
//! Leniently (the default), Python-ish type names are mapped to JSON Schema
//! (`dict` → `object`, `float` → `number`, `tuple` → `array`, `any` → no type,
//! ...), a repeated name keeps its first definition, a missing description
//! becomes the tool's title or its name in words, an empty or missing schema
//! becomes an object with no properties, and invalid tags are dropped: each is
//! counted in the [`CatalogReport`]. Entries that cannot be a tool (no name, a
//! name longer than 128 bytes) are skipped with a warning. With
//! [`CatalogOptions::strict`] every one of these is an error instead.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::future::Future;
use std::io::BufRead;
use std::path::Path;

use serde_json::{Map, Value, json};
use toolbelt_core::{
    SpecError, Tool, ToolContext, ToolError, ToolHandle, ToolOutput, ToolSpec, Toolset,
};

/// Why a catalog could not be loaded; every variant says where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The catalog could not be read.
    #[error("cannot read the catalog")]
    Io(#[from] std::io::Error),
    /// The text is neither one JSON document nor JSON Lines.
    #[error("catalog {at}: {message}")]
    Json {
        /// Where (`line 3`).
        at: String,
        /// What serde reported.
        message: String,
    },
    /// An entry describes an invalid tool (strict mode, or nothing to recover).
    #[error("catalog {at}: {reason}")]
    Invalid {
        /// Where (`line 3`, `line 1, tools[4]`, `[7]`).
        at: String,
        /// What is wrong.
        reason: String,
    },
    /// Two entries define the same tool name (strict mode).
    #[error("catalog {at}: duplicate tool name `{name}` (first defined at {first})")]
    Duplicate {
        /// Where the repeated definition is.
        at: String,
        /// The name.
        name: String,
        /// Where the first definition is.
        first: String,
    },
    /// The catalog holds no tool at all.
    #[error("the catalog holds no tool")]
    Empty,
}

/// How a catalog is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CatalogOptions {
    /// Refuse anything that needs normalising (the loader's behaviour before lenient loading).
    pub strict: bool,
}

impl CatalogOptions {
    /// Lenient loading: normalise and warn (the default).
    pub fn lenient() -> Self {
        Self { strict: false }
    }

    /// Strict loading: the first entry that needs normalising is an error.
    pub fn strict() -> Self {
        Self { strict: true }
    }
}

/// A loaded catalog: the tools and what was done to them.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// The tools, in file order, one per name.
    pub specs: Vec<ToolSpec>,
    /// What was normalised, skipped or merged.
    pub report: CatalogReport,
}

/// One thing the loader changed or skipped, with where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogNote {
    /// Where (`line 3`, `[7]`).
    pub at: String,
    /// The tool's name, when it has one.
    pub name: Option<String>,
    /// What happened.
    pub message: String,
}

/// What the loader normalised; [`CatalogReport::summary`] prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CatalogReport {
    /// `JSON` or `JSON Lines`.
    pub format: &'static str,
    /// Tools read per shape (`bare`, `openai`, `anthropic`, `mcp`).
    pub shapes: BTreeMap<&'static str, usize>,
    /// Tools loaded.
    pub loaded: usize,
    /// Type names mapped to JSON Schema, with counts (`dict → object`).
    pub types_mapped: BTreeMap<String, usize>,
    /// Type names with no JSON Schema meaning, dropped (the value may be of any type).
    pub types_dropped: BTreeMap<String, usize>,
    /// Repeated names (the first definition is kept).
    pub duplicates: Vec<CatalogNote>,
    /// Tools without a description (given their title or their name in words).
    pub missing_descriptions: Vec<CatalogNote>,
    /// Tools with an empty or missing parameter schema (given an empty object schema).
    pub empty_schemas: Vec<CatalogNote>,
    /// Other repairs to a schema (a missing root `"type": "object"`, a bad `required`).
    pub schema_repairs: Vec<CatalogNote>,
    /// Tags dropped because they are not valid tag names.
    pub tags_dropped: Vec<CatalogNote>,
    /// Entries that could not become a tool.
    pub skipped: Vec<CatalogNote>,
    /// Loaded names that providers do not accept as they are (mapped per request by the LLM layer).
    pub provider_unsafe_names: usize,
}

impl CatalogReport {
    /// Whether nothing was normalised or skipped.
    pub fn is_clean(&self) -> bool {
        self.types_mapped.is_empty()
            && self.types_dropped.is_empty()
            && self.duplicates.is_empty()
            && self.missing_descriptions.is_empty()
            && self.empty_schemas.is_empty()
            && self.schema_repairs.is_empty()
            && self.tags_dropped.is_empty()
            && self.skipped.is_empty()
    }

    /// A few lines for a terminal: what was loaded and every kind of change, with up to three examples each.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let shapes: Vec<String> = self
            .shapes
            .iter()
            .map(|(shape, n)| format!("{n} {shape}"))
            .collect();
        let _ = writeln!(
            s,
            "catalog: {} tools loaded from {} ({})",
            self.loaded,
            self.format,
            shapes.join(", ")
        );
        let counts = |m: &BTreeMap<String, usize>| {
            m.iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.types_mapped.is_empty() {
            let _ = writeln!(
                s,
                "  types mapped to JSON Schema: {}",
                counts(&self.types_mapped)
            );
        }
        if !self.types_dropped.is_empty() {
            let _ = writeln!(
                s,
                "  unknown types dropped (any value accepted): {}",
                counts(&self.types_dropped)
            );
        }
        let list = |s: &mut String, what: &str, notes: &[CatalogNote]| {
            if notes.is_empty() {
                return;
            }
            let examples: Vec<String> = notes
                .iter()
                .take(3)
                .map(|n| match &n.name {
                    Some(name) => format!("`{name}` ({}: {})", n.at, n.message),
                    None => format!("{}: {}", n.at, n.message),
                })
                .collect();
            let more = if notes.len() > 3 {
                format!(", and {} more", notes.len() - 3)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "  {what}: {} — {}{more}",
                notes.len(),
                examples.join("; ")
            );
        };
        list(&mut s, "duplicate names (first kept)", &self.duplicates);
        list(&mut s, "missing descriptions", &self.missing_descriptions);
        list(&mut s, "empty schemas", &self.empty_schemas);
        list(&mut s, "schema repairs", &self.schema_repairs);
        list(&mut s, "invalid tags dropped", &self.tags_dropped);
        list(&mut s, "entries skipped", &self.skipped);
        if self.provider_unsafe_names > 0 {
            let _ = writeln!(
                s,
                "  names kept as written that providers refuse as is (mapped per request): {}",
                self.provider_unsafe_names
            );
        }
        s
    }
}

/// Reads a JSONL catalog strictly (the original loader): see [`load_catalog`].
///
/// # Errors
/// [`CatalogError`] naming the first bad line.
pub fn read_catalog(mut reader: impl BufRead) -> Result<Vec<ToolSpec>, CatalogError> {
    let mut text = String::new();
    reader.read_to_string(&mut text)?;
    load_catalog(&text, CatalogOptions::strict()).map(|c| c.specs)
}

/// Reads the catalog file at `path`; see [`load_catalog`].
///
/// # Errors
/// [`CatalogError::Io`] when the file cannot be read, otherwise as [`load_catalog`].
pub fn load_catalog_file(
    path: impl AsRef<Path>,
    options: CatalogOptions,
) -> Result<Catalog, CatalogError> {
    let text = std::fs::read_to_string(path)?;
    load_catalog(&text, options)
}

/// Loads a catalog from `text`: one JSON document, or JSON Lines.
///
/// # Errors
/// [`CatalogError::Json`] for text that is not JSON (naming the line),
/// [`CatalogError::Empty`] when no tool was found; in strict mode also
/// [`CatalogError::Invalid`] / [`CatalogError::Duplicate`] for the first entry
/// that would need normalising.
pub fn load_catalog(text: &str, options: CatalogOptions) -> Result<Catalog, CatalogError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut loader = Loader {
        options,
        specs: Vec::new(),
        first: HashMap::new(),
        report: CatalogReport::default(),
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value) => {
            loader.report.format = "JSON";
            loader.collect(&value, String::new())?;
        }
        Err(whole) => {
            loader.report.format = "JSON Lines";
            let mut lines = 0usize;
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                lines += 1;
                let at = format!("line {}", i + 1);
                let value: Value = match serde_json::from_str(line) {
                    Ok(v) => v,
                    // Not even the first line is JSON: a (pretty-printed) document with an
                    // error inside; serde's message for the whole text says where.
                    Err(_) if lines == 1 => {
                        return Err(CatalogError::Json {
                            at: "document".to_owned(),
                            message: whole.to_string(),
                        });
                    }
                    Err(e) => {
                        return Err(CatalogError::Json {
                            at: at.clone(),
                            message: e.to_string(),
                        });
                    }
                };
                loader.collect(&value, at)?;
            }
            if lines <= 1 {
                return Err(CatalogError::Json {
                    at: "line 1".to_owned(),
                    message: whole.to_string(),
                });
            }
        }
    }
    if loader.specs.is_empty() {
        return Err(CatalogError::Empty);
    }
    loader.report.loaded = loader.specs.len();
    loader.report.provider_unsafe_names = loader
        .specs
        .iter()
        .filter(|s| !s.name.is_provider_safe())
        .count();
    Ok(Catalog {
        specs: loader.specs,
        report: loader.report,
    })
}

struct Loader {
    options: CatalogOptions,
    specs: Vec<ToolSpec>,
    first: HashMap<String, String>,
    report: CatalogReport,
}

fn join(at: &str, part: &str) -> String {
    if at.is_empty() {
        part.to_owned()
    } else if part.starts_with('[')
        && !at
            .rsplit(", ")
            .next()
            .is_some_and(|last| last.starts_with("line "))
    {
        format!("{at}{part}")
    } else {
        format!("{at}, {part}")
    }
}

fn location(at: &str) -> String {
    if at.is_empty() {
        "document".to_owned()
    } else {
        at.to_owned()
    }
}

impl Loader {
    /// Finds the tools in `value` (a tool, a list, a wrapper).
    fn collect(&mut self, value: &Value, at: String) -> Result<(), CatalogError> {
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.collect(item, join(&at, &format!("[{i}]")))?;
                }
                Ok(())
            }
            Value::Object(obj) => {
                // A JSON-RPC `tools/list` response.
                if let Some(result) = obj.get("result").filter(|r| r.get("tools").is_some()) {
                    return self.collect(result, join(&at, "result"));
                }
                if !obj.contains_key("name") {
                    for key in [
                        "tools",
                        "functions",
                        "functionDeclarations",
                        "function_declarations",
                    ] {
                        if let Some(list @ Value::Array(_)) = obj.get(key) {
                            return self.collect(list, join(&at, key));
                        }
                    }
                    match obj.get("function") {
                        Some(list @ Value::Array(_)) => {
                            return self.collect(list, join(&at, "function"));
                        }
                        Some(Value::Object(inner)) => {
                            return self.tool(inner, "openai", &at, obj.get("tags"));
                        }
                        _ => {}
                    }
                }
                let shape = if obj.contains_key("input_schema") {
                    "anthropic"
                } else if obj.contains_key("inputSchema") {
                    "mcp"
                } else if obj.get("type").and_then(Value::as_str) == Some("function") {
                    "openai"
                } else {
                    "bare"
                };
                self.tool(obj, shape, &at, None)
            }
            other => self.skip(
                &at,
                None,
                format!(
                    "expected a tool object or a list of tools, found {}",
                    kind(other)
                ),
            ),
        }
    }

    fn skip(&mut self, at: &str, name: Option<&str>, message: String) -> Result<(), CatalogError> {
        if self.options.strict {
            return Err(CatalogError::Invalid {
                at: location(at),
                reason: message,
            });
        }
        self.report.skipped.push(CatalogNote {
            at: location(at),
            name: name.map(str::to_owned),
            message,
        });
        Ok(())
    }

    /// A note, or in strict mode the error it becomes.
    fn note(
        &self,
        at: &str,
        name: &str,
        message: impl Into<String>,
    ) -> Result<CatalogNote, CatalogError> {
        let message = message.into();
        if self.options.strict {
            return Err(CatalogError::Invalid {
                at: location(at),
                reason: format!("`{name}`: {message}"),
            });
        }
        Ok(CatalogNote {
            at: location(at),
            name: Some(name.to_owned()),
            message,
        })
    }

    fn tool(
        &mut self,
        obj: &Map<String, Value>,
        shape: &'static str,
        at: &str,
        outer_tags: Option<&Value>,
    ) -> Result<(), CatalogError> {
        let name = match obj.get("name") {
            Some(Value::String(n)) => n.clone(),
            Some(other) => {
                return self.skip(
                    at,
                    None,
                    format!("`name` must be a string, found {}", kind(other)),
                );
            }
            None => return self.skip(at, None, "missing field `name`".to_owned()),
        };
        if let Err(e) = toolbelt_core::ToolName::new(&name) {
            return self.skip(at, Some(&name), e.to_string());
        }
        if let Some(first) = self.first.get(&name) {
            if self.options.strict {
                return Err(CatalogError::Duplicate {
                    at: location(at),
                    name,
                    first: first.clone(),
                });
            }
            let same = self
                .specs
                .iter()
                .find(|s| s.name.as_str() == name)
                .is_some_and(|s| Some(s.description.as_str()) == description_of(obj));
            let message = if same {
                format!("repeats the definition at {first}")
            } else {
                format!("differs from the definition at {first}, which is kept")
            };
            self.report.duplicates.push(CatalogNote {
                at: location(at),
                name: Some(name),
                message,
            });
            return Ok(());
        }
        let description = match description_of(obj) {
            Some(d) => d.to_owned(),
            None => {
                let fallback = obj
                    .get("title")
                    .and_then(Value::as_str)
                    .filter(|t| !t.trim().is_empty())
                    .map(str::to_owned)
                    .unwrap_or_else(|| name_in_words(&name));
                let note = self.note(at, &name, format!("no description; using {fallback:?}"))?;
                self.report.missing_descriptions.push(note);
                fallback
            }
        };
        let raw = obj
            .get("parameters")
            .or_else(|| obj.get("input_schema"))
            .or_else(|| obj.get("inputSchema"))
            .or_else(|| obj.get("parameters_json_schema"));
        let parameters = self.schema(raw, at, &name)?;
        let mut tags: Vec<String> = obj
            .get("tags")
            .or(outer_tags)
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let spec = loop {
            let built = ToolSpec::builder(name.clone())
                .description(description.clone())
                .parameters(parameters.clone())
                .tags(tags.clone())
                .build();
            match built {
                Ok(spec) => break spec,
                Err(SpecError::InvalidName {
                    name: bad,
                    what: "tag",
                    reason,
                }) if tags.contains(&bad) => {
                    let note = self.note(at, &name, format!("tag {bad:?} dropped: {reason}"))?;
                    self.report.tags_dropped.push(note);
                    tags.retain(|t| t != &bad);
                }
                Err(e) => return self.skip(at, Some(&name), e.to_string()),
            }
        };
        *self.report.shapes.entry(shape).or_default() += 1;
        self.first.insert(name, location(at));
        self.specs.push(spec);
        Ok(())
    }

    /// The parameter schema, normalised.
    fn schema(&mut self, raw: Option<&Value>, at: &str, name: &str) -> Result<Value, CatalogError> {
        let empty = || json!({"type": "object", "properties": {}});
        let mut schema = match raw {
            None | Some(Value::Null) => {
                let note = self.note(at, name, "no parameter schema; using an empty object")?;
                self.report.empty_schemas.push(note);
                return Ok(empty());
            }
            Some(Value::Object(o)) if o.is_empty() => {
                let note = self.note(at, name, "empty parameter schema; using an empty object")?;
                self.report.empty_schemas.push(note);
                return Ok(empty());
            }
            Some(Value::Object(o)) => o.clone(),
            Some(other) => {
                let note = self.note(
                    at,
                    name,
                    format!(
                        "parameter schema is {}, not an object; using an empty object",
                        kind(other)
                    ),
                )?;
                self.report.schema_repairs.push(note);
                return Ok(empty());
            }
        };
        if self.options.strict {
            // The strict loader passes the schema through; the spec builder checks its root.
            return Ok(Value::Object(schema));
        }
        if !schema.contains_key("type") {
            let note = self.note(at, name, "root schema has no type; set to \"object\"")?;
            self.report.schema_repairs.push(note);
            schema.insert("type".to_owned(), json!("object"));
        }
        let mut value = Value::Object(schema);
        let mut repairs = Vec::new();
        normalise(&mut value, 0, &mut self.report, &mut repairs);
        if let Some(obj) = value.as_object_mut()
            && obj.get("type").and_then(Value::as_str) != Some("object")
        {
            // A root that is not an object (a bare `"type": "string"`): wrap it as one argument.
            let inner = Value::Object(std::mem::take(obj));
            repairs.push("root schema is not an object; wrapped as property `input`".to_owned());
            value =
                json!({"type": "object", "properties": {"input": inner}, "required": ["input"]});
        }
        for message in repairs {
            let note = self.note(at, name, message)?;
            self.report.schema_repairs.push(note);
        }
        Ok(value)
    }
}

fn description_of(obj: &Map<String, Value>) -> Option<&str> {
    obj.get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
}

/// `math.factorial` → `math factorial`.
fn name_in_words(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON Schema type for a type name as catalogs write it; `Ok(None)` means any type.
fn map_type(t: &str) -> Result<Option<&'static str>, ()> {
    let lower = t.trim().to_ascii_lowercase();
    let base = lower
        .split(['[', '<', '('])
        .next()
        .unwrap_or_default()
        .trim();
    let base = base.strip_prefix("typing.").unwrap_or(base);
    Ok(Some(match base {
        "object" | "dict" | "dictionary" | "map" | "mapping" | "hashmap" | "struct" | "record"
        | "json" => "object",
        "number" | "float" | "double" | "decimal" | "real" | "float32" | "float64" | "numeric" => {
            "number"
        }
        "integer" | "int" | "long" | "short" | "int32" | "int64" | "uint" | "bigint" => "integer",
        "string" | "str" | "text" | "char" | "date" | "datetime" | "uuid" | "url" => "string",
        "boolean" | "bool" => "boolean",
        "array" | "list" | "tuple" | "set" | "sequence" | "iterable" | "vec" => "array",
        "null" | "none" | "nonetype" => "null",
        "any" | "optional" | "union" => return Ok(None),
        _ => return Err(()),
    }))
}

/// Maps type names throughout a schema, in place.
fn normalise(
    value: &mut Value,
    depth: usize,
    report: &mut CatalogReport,
    repairs: &mut Vec<String>,
) {
    // Deeper than any real schema: leave the rest as written.
    if depth > 32 {
        return;
    }
    let Some(obj) = value.as_object_mut() else {
        return;
    };
    if let Some(t) = obj.get("type").cloned() {
        match t {
            Value::String(name) => match map_type(&name) {
                Ok(Some(mapped)) => {
                    if mapped != name {
                        *report
                            .types_mapped
                            .entry(format!("{name} → {mapped}"))
                            .or_default() += 1;
                        obj.insert("type".to_owned(), json!(mapped));
                    }
                }
                Ok(None) => {
                    *report
                        .types_mapped
                        .entry(format!("{name} → any"))
                        .or_default() += 1;
                    obj.remove("type");
                }
                Err(()) => {
                    *report.types_dropped.entry(name).or_default() += 1;
                    obj.remove("type");
                }
            },
            Value::Array(names) => {
                let mut mapped: Vec<Value> = Vec::new();
                let mut any = false;
                for n in &names {
                    let Some(s) = n.as_str() else { continue };
                    match map_type(s) {
                        Ok(Some(m)) => {
                            if m != s {
                                *report.types_mapped.entry(format!("{s} → {m}")).or_default() += 1;
                            }
                            if !mapped.iter().any(|v| v == m) {
                                mapped.push(json!(m));
                            }
                        }
                        Ok(None) => any = true,
                        Err(()) => {
                            *report.types_dropped.entry(s.to_owned()).or_default() += 1;
                            any = true;
                        }
                    }
                }
                if any || mapped.is_empty() {
                    obj.remove("type");
                } else {
                    obj.insert("type".to_owned(), Value::Array(mapped));
                }
            }
            _ => {
                repairs.push(format!("`type` {t} is not a type name; dropped"));
                obj.remove("type");
            }
        }
    }
    if let Some(props) = obj.get("properties")
        && !props.is_object()
    {
        repairs.push("`properties` is not an object; dropped".to_owned());
        obj.remove("properties");
    }
    if let Some(required) = obj.get("required")
        && !required
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string))
    {
        let kept: Vec<Value> = required
            .as_array()
            .map(|a| a.iter().filter(|v| v.is_string()).cloned().collect())
            .unwrap_or_default();
        repairs.push(format!(
            "`required` is not a list of names ({required}); kept {} names",
            kept.len()
        ));
        if kept.is_empty() {
            obj.remove("required");
        } else {
            obj.insert("required".to_owned(), Value::Array(kept));
        }
    }
    // Python tuples are arrays of fixed items: `items` may be a list of schemas.
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = obj.get_mut(key) {
            for child in children.values_mut() {
                normalise(child, depth + 1, report, repairs);
            }
        }
    }
    for key in ["items", "additionalProperties", "not", "contains"] {
        match obj.get_mut(key) {
            Some(child @ Value::Object(_)) => normalise(child, depth + 1, report, repairs),
            Some(Value::Array(children)) => {
                for child in children {
                    normalise(child, depth + 1, report, repairs);
                }
            }
            _ => {}
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = obj.get_mut(key) {
            for child in children {
                normalise(child, depth + 1, report, repairs);
            }
        }
    }
}

/// A toolset of catalog tools; calling one fails, as a catalog has no handlers.
pub fn catalog_toolset(specs: impl IntoIterator<Item = ToolSpec>) -> Toolset {
    Toolset::from_tools(
        specs
            .into_iter()
            .filter_map(|spec| ToolHandle::new(CatalogTool { spec }).ok()),
    )
}

/// A tool known only by its spec (for routing and evaluation).
#[derive(Debug, Clone)]
pub struct CatalogTool {
    spec: ToolSpec,
}

impl CatalogTool {
    /// A tool with `spec` and no handler.
    pub fn new(spec: ToolSpec) -> Self {
        Self { spec }
    }
}

impl Tool for CatalogTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call(
        &self,
        _args: Value,
        _ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        std::future::ready(Err(ToolError::failed(format!(
            "`{}` comes from a catalog and has no handler",
            self.spec.name.as_str()
        ))))
    }
}
