//! A bounded, time-limited cache of results of tools marked cacheable.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::context::ToolContext;
use crate::output::ToolOutput;
use crate::spec::ToolSpec;

pub(crate) struct ResultCache {
    capacity: usize,
    ttl: Duration,
    entries: Mutex<HashMap<String, (Instant, ToolOutput)>>,
}

impl ResultCache {
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Self {
        Self {
            capacity,
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The key: name, version, what the tool can read from the context (the
    /// conversation id, the depth, the identity of the extension values) and the
    /// arguments with object keys sorted.
    pub(crate) fn key(spec: &ToolSpec, args: &Value, ctx: &ToolContext) -> String {
        let mut key = format!(
            "{}@{}|{}|{}|{}:",
            spec.name,
            spec.version,
            ctx.conversation_id().map_or(0, str::len),
            ctx.conversation_id().unwrap_or_default(),
            ctx.depth(),
        );
        key.push_str(&format!("ext{}:", ctx.extensions().identity()));
        canonical(args, &mut key);
        key
    }

    pub(crate) fn get(&self, key: &str) -> Option<ToolOutput> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        match entries.get(key) {
            Some((at, out)) if at.elapsed() < self.ttl => Some(out.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    pub(crate) fn put(&self, key: String, out: ToolOutput) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            // Evict the oldest entry; the cache is small, so a scan is cheap.
            if let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(key, (Instant::now(), out));
    }
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(k.as_str()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}
