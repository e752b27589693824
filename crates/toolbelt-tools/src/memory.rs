//! Group `memory`: what an agent remembers across conversations (`memory_store`,
//! `memory_recall`, `memory_forget`, `memory_list`).
//!
//! Entries live behind the [`MemoryStore`] trait (crate `toolbelt-persist`), reached
//! through the [`Memory`] context extension, which also carries the [`MemoryScope`]
//! (the agent and, optionally, the user) the host runs the tools for. An agent reads
//! its own entries and the entries other agents stored with `shared: true`; it forgets
//! only its own. [`MemoryIndex`] keeps entries in memory with a BM25 ranking;
//! `toolbelt-store` keeps them in SQLite or Postgres.

use std::fmt;
use std::sync::Arc;

use chrono::DateTime;
use serde_json::json;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;
use toolbelt_persist::{
    MemoryEntry, MemoryIndex, MemoryScope, MemoryStore, NewMemory, RecallQuery, format_ms,
    memory_terms, owns,
};

/// The memory the tools use: a context extension holding a [`MemoryStore`] and the
/// [`MemoryScope`] of the agent (and user) the tools run for.
#[derive(Clone)]
pub struct Memory {
    store: Arc<dyn MemoryStore>,
    scope: MemoryScope,
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// `store`, for `scope`.
    pub fn new(store: Arc<dyn MemoryStore>, scope: MemoryScope) -> Self {
        Self { store, scope }
    }

    /// A fresh [`MemoryIndex`] for `scope`.
    pub fn in_memory(scope: MemoryScope) -> Self {
        Self::new(Arc::new(MemoryIndex::new()), scope)
    }

    /// The same store for another scope.
    #[must_use]
    pub fn with_scope(&self, scope: MemoryScope) -> Self {
        Self::new(Arc::clone(&self.store), scope)
    }

    /// The store.
    pub fn store(&self) -> &dyn MemoryStore {
        &*self.store
    }

    /// The scope.
    pub fn scope(&self) -> &MemoryScope {
        &self.scope
    }

    fn from_context(ctx: &ToolContext) -> Result<&Self, ToolError> {
        ctx.get::<Self>().ok_or_else(|| {
            ToolError::failed(
                "memory is not configured; the host must add a `Memory` extension \
                 (e.g. `Memory::in_memory(MemoryScope::agent(\"name\"))`) to the tool context",
            )
        })
    }
}

fn parse_time(pointer: &str, value: Option<&str>) -> Result<Option<i64>, ToolError> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(v.trim())
                .map(|t| t.timestamp_millis())
                .map_err(|e| {
                    ToolError::invalid_argument(
                        pointer,
                        format!("`{v}` is not an RFC 3339 time like 2026-11-22T09:00:00Z ({e})"),
                    )
                })
        })
        .transpose()
}

fn entry_json(entry: &MemoryEntry) -> serde_json::Value {
    json!({
        "id": entry.id,
        "text": entry.text,
        "tags": entry.tags,
        "importance": entry.importance,
        "shared": entry.shared,
        "agent": entry.agent,
        "when": format_ms(entry.created_at_ms),
    })
}

fn entry_line(entry: &MemoryEntry) -> String {
    let tags = if entry.tags.is_empty() {
        String::new()
    } else {
        format!(" [{}]", entry.tags.join(", "))
    };
    format!(
        "#{} ({}){tags}: {}",
        entry.id,
        format_ms(entry.created_at_ms),
        entry.text
    )
}

/// Remember a fact, preference or note for later conversations; returns its id.
#[tool(tags("memory"), mutating, needs_approval = false)]
pub async fn memory_store(
    ctx: &ToolContext,
    /// What to remember, one self-contained statement (e.g. "The user prefers short answers").
    text: String,
    /// Labels to filter by later (e.g. ["preference"]).
    tags: Option<Vec<String>>,
    /// 1 (trivia) to 5 (essential); default 3.
    importance: Option<u8>,
    /// Let other agents read it (default false).
    shared: Option<bool>,
) -> Result<ToolOutput, ToolError> {
    let memory = Memory::from_context(ctx)?;
    let mut new = NewMemory::new(text)
        .with_tags(tags.unwrap_or_default())
        .shared(shared.unwrap_or(false));
    if let Some(importance) = importance {
        new = new.with_importance(importance);
    }
    let entry = memory.store().store(memory.scope(), new).await?;
    let mut out = ToolOutput::text(format!("remembered as #{}", entry.id));
    out.json = Some(entry_json(&entry));
    Ok(out)
}

/// Search what was remembered, in any language; returns the best entries with id, text, time and score.
#[tool(tags("memory"), read_only)]
pub async fn memory_recall(
    ctx: &ToolContext,
    /// What to look for (words or a sentence).
    query: String,
    /// Only entries with every one of these tags.
    tags: Option<Vec<String>>,
    /// Only entries stored at or after this RFC 3339 time.
    since: Option<String>,
    /// Only entries stored before this RFC 3339 time.
    until: Option<String>,
    /// Most entries to return (default 5, at most 50).
    limit: Option<u32>,
) -> Result<ToolOutput, ToolError> {
    let memory = Memory::from_context(ctx)?;
    if memory_terms(&query).is_empty() {
        return Err(ToolError::invalid_argument(
            "/query",
            "the query has no words to search for; use memory_list to browse",
        ));
    }
    let limit = limit.unwrap_or(5);
    if !(1..=50).contains(&limit) {
        return Err(ToolError::invalid_argument(
            "/limit",
            format!("{limit} is out of range; use 1 to 50"),
        ));
    }
    let q = RecallQuery::new(query)
        .with_tags(tags.unwrap_or_default())
        .between(
            parse_time("/since", since.as_deref())?,
            parse_time("/until", until.as_deref())?,
        )
        .with_limit(limit as usize);
    let hits = memory.store().recall(memory.scope(), &q).await?;
    let text = if hits.is_empty() {
        "nothing remembered matches".to_owned()
    } else {
        hits.iter()
            .map(|h| format!("{} (score {:.2})", entry_line(&h.entry), h.score))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut out = ToolOutput::text(text);
    out.json = Some(json!({
        "hits": hits.iter().map(|h| {
            let mut v = entry_json(&h.entry);
            v["score"] = json!(h.score);
            v
        }).collect::<Vec<_>>()
    }));
    Ok(out)
}

/// Forget entries by id or by query. Without confirm: true it only previews what would be forgotten.
#[tool(tags("memory"), mutating, needs_approval = false)]
pub async fn memory_forget(
    ctx: &ToolContext,
    /// Ids of the entries to forget (from memory_recall or memory_list).
    ids: Option<Vec<i64>>,
    /// Or: forget the best matches of this query (at most 10).
    query: Option<String>,
    /// true to delete; false or absent to preview only.
    confirm: Option<bool>,
) -> Result<ToolOutput, ToolError> {
    let memory = Memory::from_context(ctx)?;
    let (store, scope) = (memory.store(), memory.scope());
    let targets: Vec<MemoryEntry> = match (ids, query) {
        (Some(ids), None) if !ids.is_empty() => store.owned(scope, &ids).await?,
        (None, Some(query)) if !memory_terms(&query).is_empty() => {
            let q = RecallQuery::new(query).with_limit(10);
            store
                .recall(scope, &q)
                .await?
                .into_iter()
                .map(|h| h.entry)
                .filter(|e| owns(scope, e))
                .collect()
        }
        _ => {
            return Err(ToolError::invalid_argument(
                "/ids",
                "give either `ids` (a non-empty list) or `query` (with words), not both",
            ));
        }
    };
    let ids: Vec<i64> = targets.iter().map(|e| e.id).collect();
    let confirm = confirm.unwrap_or(false);
    let (text, forgotten) = if targets.is_empty() {
        (
            "nothing of this agent's memory matches; nothing to forget".to_owned(),
            0,
        )
    } else if confirm {
        let gone = store.forget(scope, &ids).await?;
        (format!("forgot {gone} entries"), gone)
    } else {
        let lines: Vec<String> = targets.iter().map(entry_line).collect();
        (
            format!(
                "would forget {} entries (call again with confirm: true and these ids):\n{}",
                targets.len(),
                lines.join("\n")
            ),
            0,
        )
    };
    let mut out = ToolOutput::text(text);
    out.json = Some(json!({
        "preview": !confirm,
        "forgotten": forgotten,
        "entries": targets.iter().map(entry_json).collect::<Vec<_>>(),
    }));
    Ok(out)
}

/// List remembered entries, newest first, optionally only those with given tags.
#[tool(tags("memory"), read_only)]
pub async fn memory_list(
    ctx: &ToolContext,
    /// Only entries with every one of these tags.
    tags: Option<Vec<String>>,
    /// Most entries (default 20, at most 200).
    limit: Option<u32>,
    /// Entries to skip, for paging (default 0).
    offset: Option<u32>,
) -> Result<ToolOutput, ToolError> {
    let memory = Memory::from_context(ctx)?;
    let limit = limit.unwrap_or(20);
    if !(1..=200).contains(&limit) {
        return Err(ToolError::invalid_argument(
            "/limit",
            format!("{limit} is out of range; use 1 to 200"),
        ));
    }
    let tags: Vec<String> = tags
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.trim().to_lowercase())
        .collect();
    let entries = memory
        .store()
        .list(
            memory.scope(),
            &tags,
            limit as usize,
            offset.unwrap_or(0) as usize,
        )
        .await?;
    let text = if entries.is_empty() {
        "no entries".to_owned()
    } else {
        entries
            .iter()
            .map(entry_line)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut out = ToolOutput::text(text);
    out.json = Some(json!({ "entries": entries.iter().map(entry_json).collect::<Vec<_>>() }));
    Ok(out)
}
