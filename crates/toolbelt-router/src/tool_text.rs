//! [`ToolText`]: the searchable text of a tool, field by field.

use serde_json::Value;
use toolbelt_core::ToolSpec;

/// The text of one tool that routers search: name, description, parameters and tags.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolText {
    /// The tool's name (split into words by the analyzer).
    pub name: String,
    /// The description.
    pub description: String,
    /// Parameter names, nested ones included.
    pub parameter_names: Vec<String>,
    /// Parameter descriptions and enum values.
    pub parameter_descriptions: Vec<String>,
    /// Tags (groups).
    pub tags: Vec<String>,
    /// Requests this tool served successfully before ([`crate::LearnedUsage`]); empty unless learned.
    pub examples: Vec<String>,
}

impl ToolText {
    /// Collects the text of `spec`.
    pub fn from_spec(spec: &ToolSpec) -> Self {
        let mut text = Self {
            name: spec.name.as_str().to_owned(),
            description: spec.description.clone(),
            tags: spec.tags.clone(),
            ..Self::default()
        };
        text.walk_schema(&spec.parameters, 0);
        text
    }

    fn walk_schema(&mut self, schema: &Value, depth: usize) {
        // Deep schemas add noise and cost; three levels hold what a model reads.
        if depth > 3 {
            return;
        }
        let Some(obj) = schema.as_object() else {
            return;
        };
        if let Some(Value::String(d)) = obj.get("description")
            && depth > 0
        {
            self.parameter_descriptions.push(d.clone());
        }
        if let Some(Value::Array(values)) = obj.get("enum") {
            for v in values.iter().filter_map(Value::as_str) {
                self.parameter_descriptions.push(v.to_owned());
            }
        }
        if let Some(Value::Object(props)) = obj.get("properties") {
            for (name, prop) in props {
                self.parameter_names.push(name.clone());
                self.walk_schema(prop, depth + 1);
            }
        }
        if let Some(items) = obj.get("items") {
            self.walk_schema(items, depth + 1);
        }
    }

    /// One string with every field, for embedders.
    pub fn joined(&self) -> String {
        let mut s = format!("{}: {}", self.name.replace('_', " "), self.description);
        if !self.parameter_names.is_empty() {
            s.push_str("\nparameters: ");
            s.push_str(&self.parameter_names.join(", "));
        }
        if !self.tags.is_empty() {
            s.push_str("\ntags: ");
            s.push_str(&self.tags.join(", "));
        }
        s
    }

    /// `name: description`, the name in words: what a tool is for, without its parameters
    /// (a second embedding view beside [`ToolText::joined`]).
    pub fn name_description(&self) -> String {
        format!("{}: {}", self.name.replace('_', " "), self.description)
    }

    /// [`ToolText::joined`] followed by the parameter descriptions and enum values.
    pub fn full(&self) -> String {
        let mut s = self.joined();
        if !self.parameter_descriptions.is_empty() {
            s.push('\n');
            s.push_str(&self.parameter_descriptions.join("; "));
        }
        s
    }

    /// A stable 64-bit fingerprint (FNV-1a) of every field, for change detection and caches.
    pub fn fingerprint(&self) -> u64 {
        let mut h = Fnv::default();
        h.write(&self.name);
        h.write(&self.description);
        for part in [
            &self.parameter_names,
            &self.parameter_descriptions,
            &self.tags,
            &self.examples,
        ] {
            h.write("\u{1}");
            for s in part {
                h.write(s);
            }
        }
        h.0
    }
}

/// FNV-1a: stable across runs and platforms, unlike the std hasher.
pub(crate) struct Fnv(pub(crate) u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub(crate) fn write(&mut self, s: &str) {
        for b in s.bytes().chain([0xff]) {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}
