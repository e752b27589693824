//! [`NameMap`]: tool names as a provider accepts them, per request, and back (ADR 0007).
//!
//! The registry holds tool names as their sources write them (`github.create_issue`,
//! up to 128 bytes); OpenAI and Anthropic accept only `[A-Za-z0-9_-]{1,64}`. A
//! [`NameMap`] is built from every name a request mentions (tool definitions,
//! earlier assistant tool calls, tool results, a forced tool choice) and is a
//! pure function of that set of names:
//!
//! - a provider-safe name maps to itself;
//! - any other name is sanitised (each character outside `[A-Za-z0-9_-]` becomes `_`);
//! - when the sanitised form is longer than 64 bytes, or collides with another
//!   name of the set (safe or sanitised), it is cut and given a `_` plus a
//!   10-hex-digit hash of the original name.
//!
//! So the mapping is reversible, collision-free, and the same on every turn
//! that mentions the same names.

use std::collections::{BTreeSet, HashMap};

use futures::StreamExt;
use toolbelt_core::{MAX_PROVIDER_NAME_LEN, is_provider_safe};

use crate::message::Message;
use crate::provider::ChatStream;
use crate::request::{ChatRequest, ChatResponse, StreamEvent, ToolChoice};

/// Hex digits of the hash suffix.
const HASH_DIGITS: usize = 10;

/// A reversible mapping between tool names and what a provider accepts.
///
/// # Examples
///
/// ```
/// use toolbelt_llm::NameMap;
///
/// let map = NameMap::new(["github.create_issue", "file_read"]);
/// assert_eq!(map.to_provider("github.create_issue"), "github_create_issue");
/// assert_eq!(map.to_provider("file_read"), "file_read");
/// assert_eq!(map.from_provider("github_create_issue"), "github.create_issue");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    /// Real name → provider name, for names that change.
    forward: HashMap<String, String>,
    /// Provider name → real name, for names that change.
    backward: HashMap<String, String>,
}

impl NameMap {
    /// The mapping for this set of names (order and duplicates do not matter).
    pub fn new<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names: BTreeSet<String> = names.into_iter().map(|n| n.as_ref().to_owned()).collect();
        let mut taken: BTreeSet<String> = names
            .iter()
            .filter(|n| is_provider_safe(n))
            .cloned()
            .collect();
        let unsafe_names: Vec<&String> = names.iter().filter(|n| !is_provider_safe(n)).collect();
        let mut sanitized_count: HashMap<String, usize> = HashMap::new();
        for name in &unsafe_names {
            *sanitized_count.entry(sanitize(name)).or_default() += 1;
        }
        let mut map = Self::default();
        // Plain sanitised forms first, so that a hashed form never takes the
        // plain form another name would have had.
        let mut need_hash = Vec::new();
        for name in unsafe_names {
            let plain = sanitize(name);
            let unique = sanitized_count.get(&plain).copied() == Some(1);
            if plain.len() <= MAX_PROVIDER_NAME_LEN && unique && !taken.contains(&plain) {
                taken.insert(plain.clone());
                map.insert(name, plain);
            } else {
                need_hash.push((name, plain));
            }
        }
        for (name, plain) in need_hash {
            let mut salt = 0u32;
            let hashed = loop {
                let candidate = with_hash(&plain, name, salt);
                if !taken.contains(&candidate) {
                    break candidate;
                }
                salt += 1;
            };
            taken.insert(hashed.clone());
            map.insert(name, hashed);
        }
        map
    }

    /// The mapping for every name `request` mentions.
    pub fn for_request(request: &ChatRequest) -> Self {
        let mut names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        for message in &request.messages {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    names.extend(tool_calls.iter().map(|c| c.name.as_str()));
                }
                Message::Tool { name, .. } => names.push(name),
                Message::System { .. } | Message::User { .. } => {}
            }
        }
        if let ToolChoice::Tool(name) = &request.tool_choice {
            names.push(name);
        }
        Self::new(names)
    }

    fn insert(&mut self, real: &str, provider: String) {
        self.backward.insert(provider.clone(), real.to_owned());
        self.forward.insert(real.to_owned(), provider);
    }

    /// Whether every name maps to itself.
    pub fn is_identity(&self) -> bool {
        self.forward.is_empty()
    }

    /// The name to send to the provider for the real name `name`.
    pub fn to_provider<'a>(&'a self, name: &'a str) -> &'a str {
        self.forward.get(name).map_or(name, String::as_str)
    }

    /// The real name for a name the provider used (unknown names are returned unchanged).
    pub fn from_provider<'a>(&'a self, name: &'a str) -> &'a str {
        self.backward.get(name).map_or(name, String::as_str)
    }

    /// `request` with every tool name replaced by its provider name.
    pub fn map_request(&self, mut request: ChatRequest) -> ChatRequest {
        if self.is_identity() {
            return request;
        }
        let map = |name: &mut String| {
            if let Some(provider) = self.forward.get(name.as_str()) {
                provider.clone_into(name);
            }
        };
        for tool in &mut request.tools {
            map(&mut tool.name);
        }
        for message in &mut request.messages {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    tool_calls.iter_mut().for_each(|c| map(&mut c.name));
                }
                Message::Tool { name, .. } => map(name),
                Message::System { .. } | Message::User { .. } => {}
            }
        }
        if let ToolChoice::Tool(name) = &mut request.tool_choice {
            map(name);
        }
        request
    }

    fn unmap(&self, name: &mut String) {
        if let Some(real) = self.backward.get(name.as_str()) {
            real.clone_into(name);
        }
    }

    /// `response` with the model's tool calls renamed to the real names.
    pub fn unmap_response(&self, mut response: ChatResponse) -> ChatResponse {
        for call in &mut response.tool_calls {
            self.unmap(&mut call.name);
        }
        response
    }

    /// `event` with any tool name renamed to the real name.
    pub fn unmap_event(&self, event: StreamEvent) -> StreamEvent {
        match event {
            StreamEvent::ToolCallStarted {
                index,
                id,
                mut name,
            } => {
                self.unmap(&mut name);
                StreamEvent::ToolCallStarted { index, id, name }
            }
            StreamEvent::Completed(response) => {
                StreamEvent::Completed(self.unmap_response(response))
            }
            other => other,
        }
    }

    /// `stream` with every event passed through [`unmap_event`](Self::unmap_event).
    pub fn unmap_stream(self, stream: ChatStream) -> ChatStream {
        if self.is_identity() {
            return stream;
        }
        Box::pin(stream.map(move |event| event.map(|e| self.unmap_event(e))))
    }
}

/// Each character outside `[A-Za-z0-9_-]` replaced by `_`.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `plain` cut to leave room for `_` and the hash of `real` (plus `salt`, which
/// is 0 unless two hashed forms collide).
fn with_hash(plain: &str, real: &str, salt: u32) -> String {
    let hash = fnv1a(real.as_bytes(), salt);
    let keep = MAX_PROVIDER_NAME_LEN - 1 - HASH_DIGITS;
    // `plain` is ASCII, so any byte index is a char boundary.
    let prefix = &plain[..plain.len().min(keep)];
    let digits = format!("{hash:016x}");
    format!("{prefix}_{}", &digits[..HASH_DIGITS])
}

/// FNV-1a, 64 bits: stable across platforms and releases, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8], salt: u32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in salt.to_le_bytes().iter().filter(|_| salt > 0).chain(bytes) {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests;
