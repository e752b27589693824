//! [`ModelProfile`]s: what a model can handle, as data.
//!
//! The profiles shipped with the crate live in `profiles.json` (embedded at
//! build time); users add their own in a file of the same shape, searched
//! before the shipped ones.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The profiles shipped with the crate.
const BUILTIN: &str = include_str!("../profiles.json");

/// What one model handles well: how many tools to offer, how it calls
/// tools, and its output and context budgets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelProfile {
    /// The `match` glob that selected this profile (`default` when none did).
    pub name: String,
    /// Most tools to offer in one request; a router's choice is cut to this
    /// many, best first (small models answer better with fewer tools).
    pub max_tools: usize,
    /// Whether the model (with its usual server template) returns native
    /// `tool_calls`.
    pub native_tool_calls: bool,
    /// Whether it writes tool calls as text (```` ```json ```` blocks,
    /// `<tool_call>` tags), so the agent must parse them. Off for models with
    /// reliable native calls: text parsing lets anything that ends up in the
    /// answer (a web page, a file) pose as a call.
    pub text_tool_calls: bool,
    /// The output budget sent as `max_tokens` when none is configured.
    pub max_tokens: u32,
    /// The context window in tokens, when known.
    pub context_tokens: Option<u32>,
    /// When the router is unsure which tools a request needs: `true` offers
    /// the best `max_tools` anyway, `false` offers none, so the model answers
    /// from what it knows (small models call whatever tool they are offered,
    /// e.g. `ask_human` for "What is the capital of France?").
    pub tools_when_unsure: bool,
    /// Whether requests ask for one call per answer (`parallel_tool_calls: false`), and an
    /// answer with more runs its reads but only its first call that changes something.
    /// Small models under a grammar that allows several calls wrote the same call, or
    /// seventeen made-up file writes, until their tokens ran out.
    pub one_call_per_turn: bool,
}

impl Default for ModelProfile {
    /// The profile of a model nothing is known about.
    fn default() -> Self {
        Self {
            name: "default".to_owned(),
            max_tools: 16,
            native_tool_calls: true,
            text_tool_calls: false,
            max_tokens: 4096,
            context_tokens: None,
            tools_when_unsure: true,
            one_call_per_turn: false,
        }
    }
}

/// Why a profiles file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// The file could not be read.
    #[error("could not read model profiles from {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not a profiles document.
    #[error("invalid model profiles{}: {message}", .path.as_deref().map(|p| format!(" in {p}")).unwrap_or_default())]
    Invalid {
        /// The file, if read from one.
        path: Option<String>,
        /// What is wrong, with a JSON pointer where one applies.
        message: String,
    },
}

/// One entry of a profiles document: a glob and the fields it sets.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    pattern: String,
    fields: Fields,
}

/// Profile fields as written: each may be left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    #[serde(default)]
    max_tools: Option<usize>,
    #[serde(default)]
    native_tool_calls: Option<bool>,
    #[serde(default)]
    text_tool_calls: Option<bool>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default, deserialize_with = "null_or")]
    context_tokens: Option<Option<u32>>,
    #[serde(default)]
    tools_when_unsure: Option<bool>,
    #[serde(default)]
    one_call_per_turn: Option<bool>,
}

fn null_or<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<u32>>, D::Error> {
    Option::<u32>::deserialize(d).map(Some)
}

impl Fields {
    fn apply(&self, profile: &mut ModelProfile) {
        if let Some(v) = self.max_tools {
            profile.max_tools = v;
        }
        if let Some(v) = self.native_tool_calls {
            profile.native_tool_calls = v;
        }
        if let Some(v) = self.text_tool_calls {
            profile.text_tool_calls = v;
        }
        if let Some(v) = self.max_tokens {
            profile.max_tokens = v;
        }
        if let Some(v) = self.context_tokens {
            profile.context_tokens = v;
        }
        if let Some(v) = self.tools_when_unsure {
            profile.tools_when_unsure = v;
        }
        if let Some(v) = self.one_call_per_turn {
            profile.one_call_per_turn = v;
        }
    }
}

/// An ordered list of profiles: [`ModelProfiles::find`] returns the first
/// whose glob matches the model id.
///
/// A profiles document is JSON:
///
/// ```json
/// {
///   "default": {"max_tools": 16, "native_tool_calls": true, "text_tool_calls": false,
///               "max_tokens": 4096, "context_tokens": null, "tools_when_unsure": true,
///               "one_call_per_turn": false},
///   "profiles": [
///     {"match": "*qwen2.5*1.5b*", "max_tools": 3, "text_tool_calls": true, "max_tokens": 1024}
///   ]
/// }
/// ```
///
/// `match` is a case-insensitive glob (`*` any run of characters, `?` one)
/// over the whole model id; fields left out come from `default` (and from
/// the shipped default when the document has none). `notes` and a top-level
/// `about` are free text.
///
/// ```
/// use toolbelt_llm::ModelProfiles;
///
/// let mut profiles = ModelProfiles::builtin();
/// assert_eq!(profiles.find("qwen2.5-coder-1.5b-instruct").max_tools, 3);
/// assert!(!profiles.find("gpt-4o").text_tool_calls);
/// assert!(!profiles.find("qwen2.5-coder-1.5b-instruct").tools_when_unsure);
/// assert!(profiles.find("qwen2.5-coder-1.5b-instruct").one_call_per_turn);
/// assert!(!profiles.find("gpt-4o").one_call_per_turn);
/// profiles.prepend(ModelProfiles::from_json(
///     r#"{"profiles": [{"match": "my-model*", "max_tools": 3}]}"#,
/// )?);
/// assert_eq!(profiles.find("my-model-v2").max_tools, 3);
/// # Ok::<(), toolbelt_llm::ProfileError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelProfiles {
    default: ModelProfile,
    entries: Vec<Entry>,
}

impl Default for ModelProfiles {
    fn default() -> Self {
        Self::builtin()
    }
}

impl ModelProfiles {
    /// The profiles shipped with the crate (`profiles.json`): common local
    /// models (Qwen, Llama, Mistral, Phi, Gemma, DeepSeek) and frontier APIs.
    pub fn builtin() -> Self {
        // The shipped file is checked by a test; fall back to the bare default.
        Self::from_json(BUILTIN).unwrap_or_else(|e| {
            tracing::error!(error = %e, "the shipped model profiles are invalid");
            Self {
                default: ModelProfile::default(),
                entries: Vec::new(),
            }
        })
    }

    /// Reads a profiles document.
    ///
    /// # Errors
    /// [`ProfileError::Invalid`] naming the entry and field that is wrong.
    pub fn from_json(text: &str) -> Result<Self, ProfileError> {
        parse(text).map_err(|message| ProfileError::Invalid {
            path: None,
            message,
        })
    }

    /// Reads a profiles document from a file.
    ///
    /// # Errors
    /// [`ProfileError`] when the file cannot be read or is not a profiles document.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ProfileError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: shown.clone(),
            source,
        })?;
        parse(&text).map_err(|message| ProfileError::Invalid {
            path: Some(shown),
            message,
        })
    }

    /// Puts `user`'s entries before these, so they win; `user`'s default
    /// replaces this default only if it differs from the bare one.
    pub fn prepend(&mut self, user: ModelProfiles) {
        if user.default != ModelProfile::default() {
            self.default = user.default;
        }
        let mut entries = user.entries;
        entries.append(&mut self.entries);
        self.entries = entries;
    }

    /// The profile for `model`: the first entry whose glob matches it, on
    /// top of the default; the default alone when none matches.
    pub fn find(&self, model: &str) -> ModelProfile {
        let model = model.to_lowercase();
        let mut profile = self.default.clone();
        if let Some(entry) = self.entries.iter().find(|e| glob(&e.pattern, &model)) {
            entry.fields.apply(&mut profile);
            profile.name.clone_from(&entry.pattern);
        }
        profile
    }
}

fn parse(text: &str) -> Result<ModelProfiles, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(obj) = doc.as_object() else {
        return Err(
            "the document must be an object with `profiles` (and optionally `default`)".to_owned(),
        );
    };
    if let Some(key) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "about" | "default" | "profiles"))
    {
        return Err(format!(
            "unknown key `{key}` at the top level; allowed: about, default, profiles"
        ));
    }
    let mut default = ModelProfile::default();
    if let Some(value) = obj.get("default") {
        let fields: Fields =
            serde_json::from_value(value.clone()).map_err(|e| format!("at /default: {e}"))?;
        fields.apply(&mut default);
    }
    let mut entries = Vec::new();
    let list = match obj.get("profiles") {
        None => &Vec::new(),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("at /profiles: expected an array".to_owned()),
    };
    for (i, item) in list.iter().enumerate() {
        let mut item = item.clone();
        let Some(map) = item.as_object_mut() else {
            return Err(format!("at /profiles/{i}: expected an object"));
        };
        let pattern = match map.remove("match") {
            Some(Value::String(p)) if !p.trim().is_empty() => p.trim().to_lowercase(),
            _ => {
                return Err(format!(
                    "at /profiles/{i}/match: expected a non-empty glob string"
                ));
            }
        };
        map.remove("notes");
        let fields: Fields =
            serde_json::from_value(item).map_err(|e| format!("at /profiles/{i}: {e}"))?;
        if fields.max_tools == Some(0) {
            return Err(format!("at /profiles/{i}/max_tools: must be at least 1"));
        }
        entries.push(Entry { pattern, fields });
    }
    if default.max_tools == 0 {
        return Err("at /default/max_tools: must be at least 1".to_owned());
    }
    Ok(ModelProfiles { default, entries })
}

/// Whether `text` matches `pattern` whole (`*`: any run, `?`: one character).
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_whole_ids() {
        assert!(glob("*qwen2.5*1.5b*", "qwen2.5-coder-1.5b-instruct"));
        assert!(glob("gpt-4o-mini*", "gpt-4o-mini"));
        assert!(glob("o?-mini", "o3-mini"));
        assert!(!glob("o1*", "gpt-4o1"));
        assert!(!glob("*qwen2.5*1.5b*", "qwen2.5-7b"));
        assert!(glob("*", ""));
    }

    #[test]
    fn tools_when_unsure_is_read_and_defaults_on() {
        let profiles = ModelProfiles::from_json(
            r#"{"profiles": [{"match": "tiny*", "tools_when_unsure": false}, {"match": "big*"}]}"#,
        );
        let Ok(profiles) = profiles else {
            panic!("{profiles:?}");
        };
        assert!(!profiles.find("tiny-1b").tools_when_unsure);
        assert!(profiles.find("big-70b").tools_when_unsure);
        let bad =
            ModelProfiles::from_json(r#"{"profiles": [{"match": "x", "tools_when_unsure": 1}]}"#);
        assert!(
            matches!(&bad, Err(ProfileError::Invalid { message, .. }) if message.starts_with("at /profiles/0")),
            "{bad:?}"
        );
    }

    #[test]
    fn one_call_per_turn_is_read_and_defaults_off() {
        let profiles = ModelProfiles::from_json(
            r#"{"profiles": [{"match": "tiny*", "one_call_per_turn": true}, {"match": "big*"}]}"#,
        )
        .unwrap();
        assert!(profiles.find("tiny-1b").one_call_per_turn);
        assert!(!profiles.find("big-70b").one_call_per_turn);
        assert!(!ModelProfile::default().one_call_per_turn);
    }

    #[test]
    fn the_shipped_profiles_parse() {
        let parsed = parse(BUILTIN);
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}
