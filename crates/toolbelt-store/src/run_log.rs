//! The run log (audit log of tool calls and agent runs) and its batched writer.
//!
//! Entries go through a bounded channel to one task that writes them with one multi-row INSERT
//! per batch: a batch is written when it holds `max_batch` entries or `flush_interval` after its
//! first entry, whichever comes first. **Loss bound on a crash:** entries accepted by
//! [`RunLogWriter::log`] but not yet committed, i.e. those logged within the last
//! `flush_interval` plus one write, never more than `capacity + max_batch` entries. Tool and
//! agent changes never go through this writer: they are written synchronously.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::Row;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::{Entity, Result, StoreError};
use crate::store::{Engine, Store, json_arrays, now_ms, statement_bytes, to_json};

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LogKind {
    /// One tool call.
    ToolCall,
    /// One agent run.
    AgentRun,
}

impl LogKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::ToolCall => "tool_call",
            Self::AgentRun => "agent_run",
        }
    }
}

/// One run-log entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LogEntry {
    /// Unix ms (set by [`LogEntry::tool_call`] / [`LogEntry::agent_run`]).
    pub at: i64,
    /// Tool call or agent run.
    pub kind: LogKind,
    /// The run it belongs to.
    pub run_id: Option<String>,
    /// Who (user or token name).
    pub actor: Option<String>,
    /// The agent.
    pub agent: Option<String>,
    /// The tool (tool calls).
    pub tool: Option<String>,
    /// The tool's version.
    pub tool_version: Option<i64>,
    /// Arguments, already passed through [`redact`].
    pub arguments: Option<Value>,
    /// `ok` or `error`.
    pub ok: bool,
    /// The error message.
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: i64,
    /// Prompt tokens (agent runs).
    pub tokens_in: Option<i64>,
    /// Completion tokens (agent runs).
    pub tokens_out: Option<i64>,
}

impl LogEntry {
    /// A successful call of `tool` taking `duration_ms`.
    pub fn tool_call(tool: impl Into<String>, duration_ms: i64) -> Self {
        Self {
            at: now_ms(),
            kind: LogKind::ToolCall,
            run_id: None,
            actor: None,
            agent: None,
            tool: Some(tool.into()),
            tool_version: None,
            arguments: None,
            ok: true,
            error: None,
            duration_ms,
            tokens_in: None,
            tokens_out: None,
        }
    }

    /// A successful run of `agent` taking `duration_ms`.
    pub fn agent_run(agent: impl Into<String>, duration_ms: i64) -> Self {
        Self {
            kind: LogKind::AgentRun,
            tool: None,
            agent: Some(agent.into()),
            ..Self::tool_call(String::new(), duration_ms)
        }
    }

    /// Sets the run id.
    pub fn with_run(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Sets the agent.
    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Sets the actor.
    pub fn with_actor(mut self, actor: impl Into<String>) -> Self {
        self.actor = Some(actor.into());
        self
    }

    /// Sets the tool version.
    pub fn with_tool_version(mut self, version: i64) -> Self {
        self.tool_version = Some(version);
        self
    }

    /// Sets the arguments (pass them through [`redact`] first).
    pub fn with_arguments(mut self, arguments: Value) -> Self {
        self.arguments = Some(arguments);
        self
    }

    /// Marks the entry failed with `error`.
    pub fn failed(mut self, error: impl Into<String>) -> Self {
        self.ok = false;
        self.error = Some(error.into());
        self
    }

    /// Sets token counts.
    pub fn with_tokens(mut self, input: i64, output: i64) -> Self {
        self.tokens_in = Some(input);
        self.tokens_out = Some(output);
        self
    }
}

/// Replaces secret values and secret-looking keys in `arguments` with `"[redacted]"`.
///
/// A string equal to or containing any of `secret_values` (non-empty) is redacted, and so is the
/// value of any key whose lower-cased name contains `password`, `secret`, `token`,
/// `authorization` or `api_key`.
pub fn redact(arguments: &Value, secret_values: &[&str]) -> Value {
    const KEYS: &[&str] = &["password", "secret", "token", "authorization", "api_key"];
    match arguments {
        Value::String(text)
            if secret_values
                .iter()
                .any(|s| !s.is_empty() && text.contains(s)) =>
        {
            Value::String("[redacted]".to_owned())
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact(v, secret_values)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let lower = k.to_lowercase();
                    let value = if KEYS.iter().any(|key| lower.contains(key)) {
                        Value::String("[redacted]".to_owned())
                    } else {
                        redact(v, secret_values)
                    };
                    (k.clone(), value)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Batching settings of the run-log writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunLogConfig {
    /// Most entries per INSERT (default 500).
    pub max_batch: usize,
    /// Longest an entry waits before its batch is written (default 100 ms).
    pub flush_interval: Duration,
    /// Entries the channel holds before [`RunLogWriter::log`] waits (default 10,000).
    pub capacity: usize,
}

impl Default for RunLogConfig {
    fn default() -> Self {
        Self {
            max_batch: 500,
            flush_interval: Duration::from_millis(100),
            capacity: 10_000,
        }
    }
}

impl RunLogConfig {
    /// Sets the batch size.
    pub fn with_max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch.clamp(1, 2_000);
        self
    }

    /// Sets the flush interval.
    pub fn with_flush_interval(mut self, interval: Duration) -> Self {
        self.flush_interval = interval;
        self
    }
}

enum Message {
    Entry(Box<LogEntry>),
    Flush(oneshot::Sender<()>),
}

/// The sending side of the batched run-log writer; clone it freely.
#[derive(Debug, Clone)]
pub struct RunLogWriter {
    sender: mpsc::Sender<Message>,
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Message")
    }
}

/// The writer task; [`RunLogTask::shutdown`] drains it.
#[derive(Debug)]
pub struct RunLogTask {
    handle: JoinHandle<()>,
}

impl RunLogTask {
    /// Waits until every writer is dropped and everything sent is written.
    pub async fn shutdown(self) {
        let _ = self.handle.await;
    }
}

/// The channel closed: the writer task is gone.
#[derive(Debug, thiserror::Error)]
#[error("the run-log writer has stopped")]
pub struct RunLogClosed;

impl RunLogWriter {
    /// Queues `entry`; waits only when `capacity` entries are already queued.
    ///
    /// # Errors
    /// [`RunLogClosed`] when the writer task has stopped.
    pub async fn log(&self, entry: LogEntry) -> Result<(), RunLogClosed> {
        self.sender
            .send(Message::Entry(Box::new(entry)))
            .await
            .map_err(|_| RunLogClosed)
    }

    /// Writes everything queued before this call and waits until it is committed.
    ///
    /// # Errors
    /// [`RunLogClosed`] when the writer task has stopped.
    pub async fn flush(&self) -> Result<(), RunLogClosed> {
        let (tx, rx) = oneshot::channel();
        self.sender
            .send(Message::Flush(tx))
            .await
            .map_err(|_| RunLogClosed)?;
        rx.await.map_err(|_| RunLogClosed)
    }
}

/// A stored run-log entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LogRecord {
    /// Row id, increasing.
    pub id: i64,
    /// The entry.
    #[serde(flatten)]
    pub entry: LogEntry,
}

/// Which run-log entries to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogFilter {
    /// Only this run.
    pub run_id: Option<String>,
    /// Only this agent.
    pub agent: Option<String>,
    /// Only this tool.
    pub tool: Option<String>,
    /// Only entries with an id above this (for paging).
    pub after_id: Option<i64>,
}

impl LogFilter {
    /// Only entries of run `run_id`.
    pub fn with_run(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Only entries of `agent`.
    pub fn with_agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Only entries of `tool`.
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// Only entries with an id above `id`.
    pub fn after(mut self, id: i64) -> Self {
        self.after_id = Some(id);
        self
    }
}

/// The run log: the operations of that aggregate, from [`Store::run_log`].
#[derive(Debug, Clone, Copy)]
pub struct RunLog<'a> {
    pub(crate) store: &'a Store,
}

impl Store {
    /// The run log.
    pub fn run_log(&self) -> RunLog<'_> {
        RunLog { store: self }
    }
}

impl RunLog<'_> {
    /// Starts the batched run-log writer on this store.
    pub fn writer(&self, config: RunLogConfig) -> (RunLogWriter, RunLogTask) {
        let (sender, receiver) = mpsc::channel(config.capacity.max(1));
        let store = self.store.clone();
        let handle = tokio::spawn(write_loop(store, receiver, config));
        (RunLogWriter { sender }, RunLogTask { handle })
    }

    /// Writes `entries` now, in one transaction: one INSERT per 2,000 entries, and on
    /// Postgres per 12 KiB of rows.
    ///
    /// # Errors
    /// The database's error.
    pub async fn append(&self, entries: &[LogEntry]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let rows = entries.iter().map(entry_row).collect::<Result<Vec<_>>>()?;
        let mut tx = self.store.begin().await?;
        for array in json_arrays(&rows, statement_bytes(self.store.engine()), 2_000) {
            insert_rows(&mut tx, self.store.engine(), &array).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Run-log entries matching `filter`, oldest first, at most `limit`.
    ///
    /// # Errors
    /// The database's error.
    pub async fn read(&self, filter: &LogFilter, limit: i64) -> Result<Vec<LogRecord>> {
        let rows = sqlx::query(
            "SELECT id, at, kind, run_id, actor, agent, tool, tool_version, arguments, outcome, error, duration_ms, tokens_in, tokens_out FROM run_log WHERE ($1 IS NULL OR run_id = $1) AND ($2 IS NULL OR agent = $2) AND ($3 IS NULL OR tool = $3) AND id > $4 ORDER BY id LIMIT $5",
        )
        .bind(filter.run_id.as_deref())
        .bind(filter.agent.as_deref())
        .bind(filter.tool.as_deref())
        .bind(filter.after_id.unwrap_or(0))
        .bind(limit)
        .fetch_all(self.store.pool())
        .await?;
        rows.iter()
            .map(|row| {
                let id: i64 = row.try_get("id")?;
                let arguments: Option<String> = row.try_get("arguments")?;
                let arguments = arguments
                    .map(|a| serde_json::from_str(&a))
                    .transpose()
                    .map_err(|e| StoreError::Corrupt {
                        entity: Entity::RunLogEntry,
                        name: id.to_string(),
                        field: "arguments",
                        reason: e.to_string(),
                    })?;
                let kind: String = row.try_get("kind")?;
                Ok(LogRecord {
                    id,
                    entry: LogEntry {
                        at: row.try_get("at")?,
                        kind: if kind == "agent_run" {
                            LogKind::AgentRun
                        } else {
                            LogKind::ToolCall
                        },
                        run_id: row.try_get("run_id")?,
                        actor: row.try_get("actor")?,
                        agent: row.try_get("agent")?,
                        tool: row.try_get("tool")?,
                        tool_version: row.try_get("tool_version")?,
                        arguments,
                        ok: row.try_get::<String, _>("outcome")? == "ok",
                        error: row.try_get("error")?,
                        duration_ms: row.try_get("duration_ms")?,
                        tokens_in: row.try_get("tokens_in")?,
                        tokens_out: row.try_get("tokens_out")?,
                    },
                })
            })
            .collect()
    }
}

async fn write_loop(store: Store, mut receiver: mpsc::Receiver<Message>, config: RunLogConfig) {
    let mut batch: Vec<LogEntry> = Vec::with_capacity(config.max_batch);
    let mut waiting: Vec<oneshot::Sender<()>> = Vec::new();
    while let Some(first) = receiver.recv().await {
        let deadline = tokio::time::Instant::now() + config.flush_interval;
        let mut next = Some(first);
        loop {
            match next.take() {
                Some(Message::Entry(entry)) => batch.push(*entry),
                Some(Message::Flush(done)) => {
                    waiting.push(done);
                    break;
                }
                None => {}
            }
            if batch.len() >= config.max_batch {
                break;
            }
            match receiver.try_recv() {
                Ok(message) => next = Some(message),
                Err(mpsc::error::TryRecvError::Empty) => {
                    match tokio::time::timeout_at(deadline, receiver.recv()).await {
                        Ok(Some(message)) => next = Some(message),
                        Ok(None) | Err(_) => break,
                    }
                }
                Err(mpsc::error::TryRecvError::Disconnected) => break,
            }
        }
        if let Err(error) = store.run_log().append(&batch).await {
            tracing::error!(%error, lost = batch.len(), "run log: a batch could not be written");
        }
        batch.clear();
        for done in waiting.drain(..) {
            let _ = done.send(());
        }
    }
}

/// One entry as a JSON array, in the column order of [`insert_rows`].
fn entry_row(entry: &LogEntry) -> Result<String> {
    let row = serde_json::json!([
        entry.at,
        entry.kind.as_str(),
        entry.run_id,
        entry.actor,
        entry.agent,
        entry.tool,
        entry.tool_version,
        entry
            .arguments
            .as_ref()
            .map(|a| to_json(a, "arguments"))
            .transpose()?,
        if entry.ok { "ok" } else { "error" },
        entry.error,
        entry.duration_ms,
        entry.tokens_in,
        entry.tokens_out,
    ]);
    serde_json::to_string(&row).map_err(|e| StoreError::invalid("run log", e.to_string()))
}

/// Writes `rows` (a JSON array of [`entry_row`] arrays) with one statement and one bound
/// parameter, unpacked by the database (`json_each` on SQLite, `jsonb_array_elements` on
/// Postgres). Binding 13 parameters per row through sqlx `Any` cost more than the insert
/// itself; one text parameter does not.
async fn insert_rows(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    engine: Engine,
    rows: &str,
) -> Result<()> {
    let sql = match engine {
        Engine::Sqlite => {
            "INSERT INTO run_log (at, kind, run_id, actor, agent, tool, tool_version, arguments, outcome, error, duration_ms, tokens_in, tokens_out) \
             SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, \
             value ->> 7, value ->> 8, value ->> 9, value ->> 10, value ->> 11, value ->> 12 \
             FROM json_each($1) ORDER BY key"
        }
        Engine::Postgres => {
            "INSERT INTO run_log (at, kind, run_id, actor, agent, tool, tool_version, arguments, outcome, error, duration_ms, tokens_in, tokens_out) \
             SELECT (e ->> 0)::bigint, e ->> 1, e ->> 2, e ->> 3, e ->> 4, e ->> 5, (e ->> 6)::bigint, \
             e ->> 7, e ->> 8, e ->> 9, (e ->> 10)::bigint, (e ->> 11)::bigint, (e ->> 12)::bigint \
             FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, n) ORDER BY n"
        }
    };
    sqlx::query(sql).bind(rows).execute(&mut **tx).await?;
    Ok(())
}

/// One tool call of an agent run with the request of its run (from [`RunLog::tool_uses`]): what
/// learning from use reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolUse {
    /// Unix ms.
    pub at: i64,
    /// The run the call belongs to, as the log names it.
    pub run_id: String,
    /// The tool.
    pub tool: String,
    /// The user's request: the run's `input.input` text.
    pub request: String,
    /// Whether the call succeeded.
    pub ok: bool,
    /// The error message of a failed call.
    pub error: Option<String>,
}

impl RunLog<'_> {
    /// The tool calls logged at or after `since_ms` that belong to a stored run, each with
    /// the request text of its run, oldest first; at most `limit`, the newest kept. Calls
    /// outside a run (direct calls, MCP clients) and runs whose input holds no request text
    /// are left out. The log names a run `run_<id>` (the server's API id) or `<id>`; both
    /// join. One query, the same on both engines.
    ///
    /// # Errors
    /// The database's error; [`StoreError::Corrupt`] for a run whose input is not JSON.
    pub async fn tool_uses(&self, since_ms: i64, limit: i64) -> Result<Vec<ToolUse>> {
        let rows = sqlx::query(
            "SELECT l.id, l.at, l.run_id, l.tool, l.outcome, l.error, r.id AS run, r.input \
             FROM run_log l JOIN runs r ON r.id = CASE WHEN SUBSTR(l.run_id, 1, 4) = 'run_' \
             THEN SUBSTR(l.run_id, 5) ELSE l.run_id END \
             WHERE l.kind = 'tool_call' AND l.tool IS NOT NULL AND l.at >= $1 \
             ORDER BY l.at DESC, l.id DESC LIMIT $2",
        )
        .bind(since_ms)
        .bind(limit.max(0))
        .fetch_all(self.store.pool())
        .await?;
        let mut uses = Vec::with_capacity(rows.len());
        for row in rows.iter().rev() {
            let input: String = row.try_get("input")?;
            let input: Value = serde_json::from_str(&input).map_err(|e| StoreError::Corrupt {
                entity: Entity::Run,
                name: row.try_get::<String, _>("run").unwrap_or_default(),
                field: "input",
                reason: e.to_string(),
            })?;
            // The server stores `{"input": TEXT, "conversation_id", ...}`; a bare string is
            // the request too.
            let Some(request) = input.get("input").unwrap_or(&input).as_str() else {
                continue;
            };
            uses.push(ToolUse {
                at: row.try_get("at")?,
                run_id: row.try_get("run_id")?,
                tool: row.try_get("tool")?,
                request: request.to_owned(),
                ok: row.try_get::<String, _>("outcome")? == "ok",
                error: row.try_get("error")?,
            });
        }
        Ok(uses)
    }
}

/// Tool calls of one tool in one time bucket (from [`RunLog::tool_call_stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolCallBucket {
    /// The tool.
    pub tool: String,
    /// Start of the bucket, Unix ms (a multiple of the bucket width).
    pub bucket_start: i64,
    /// Calls.
    pub calls: i64,
    /// Calls that failed.
    pub errors: i64,
    /// Sum of the calls' durations, ms (divide by `calls` for the mean).
    pub total_ms: i64,
    /// Longest call, ms.
    pub max_ms: i64,
}

fn bucket_of(row: &sqlx::any::AnyRow) -> Result<ToolCallBucket> {
    Ok(ToolCallBucket {
        tool: row.try_get("tool")?,
        bucket_start: row.try_get("bucket")?,
        calls: row.try_get("calls")?,
        errors: row.try_get("errors")?,
        total_ms: row.try_get("total_ms")?,
        max_ms: row.try_get("max_ms")?,
    })
}

/// Tokens and runs of one agent (from [`RunLog::agent_token_stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AgentTokens {
    /// The agent.
    pub agent: String,
    /// Runs logged.
    pub runs: i64,
    /// Prompt tokens.
    pub tokens_in: i64,
    /// Completion tokens.
    pub tokens_out: i64,
}

impl RunLog<'_> {
    /// Tool calls logged since `since_ms` of the `top` most called tools, grouped by tool and
    /// by buckets `bucket_ms` wide, oldest bucket first. One aggregate query (uses the
    /// `run_log_at` index).
    ///
    /// # Errors
    /// The database's error.
    pub async fn tool_call_stats(
        &self,
        since_ms: i64,
        bucket_ms: i64,
        top: i64,
    ) -> Result<Vec<ToolCallBucket>> {
        let bucket_ms = bucket_ms.max(1);
        let rows = sqlx::query(
            "SELECT tool, (at / $1) * $1 AS bucket, COUNT(*) AS calls, \
             CAST(SUM(CASE WHEN outcome = 'ok' THEN 0 ELSE 1 END) AS BIGINT) AS errors, \
             CAST(SUM(duration_ms) AS BIGINT) AS total_ms, MAX(duration_ms) AS max_ms \
             FROM run_log WHERE kind = 'tool_call' AND at >= $2 AND tool IN ( \
               SELECT tool FROM run_log WHERE kind = 'tool_call' AND at >= $2 AND tool IS NOT NULL \
               GROUP BY tool ORDER BY COUNT(*) DESC, tool LIMIT $3) \
             GROUP BY tool, bucket ORDER BY bucket, tool",
        )
        .bind(bucket_ms)
        .bind(since_ms)
        .bind(top.max(0))
        .fetch_all(self.store.pool())
        .await?;
        rows.iter().map(bucket_of).collect()
    }

    /// Tool calls logged since `since_ms` per tool (the `limit` most called, most first), each
    /// as one bucket starting at `since_ms`.
    ///
    /// # Errors
    /// The database's error.
    pub async fn tool_call_totals(&self, since_ms: i64, limit: i64) -> Result<Vec<ToolCallBucket>> {
        let rows = sqlx::query(
            "SELECT tool, CAST($1 AS BIGINT) AS bucket, COUNT(*) AS calls, \
             CAST(SUM(CASE WHEN outcome = 'ok' THEN 0 ELSE 1 END) AS BIGINT) AS errors, \
             CAST(SUM(duration_ms) AS BIGINT) AS total_ms, MAX(duration_ms) AS max_ms \
             FROM run_log WHERE kind = 'tool_call' AND at >= $1 AND tool IS NOT NULL \
             GROUP BY tool ORDER BY calls DESC, tool LIMIT $2",
        )
        .bind(since_ms)
        .bind(limit.max(0))
        .fetch_all(self.store.pool())
        .await?;
        rows.iter().map(bucket_of).collect()
    }

    /// Runs and tokens per agent logged since `since_ms`, by agent.
    ///
    /// # Errors
    /// The database's error.
    pub async fn agent_token_stats(&self, since_ms: i64) -> Result<Vec<AgentTokens>> {
        let rows = sqlx::query(
            "SELECT agent, COUNT(*) AS runs, CAST(SUM(COALESCE(tokens_in, 0)) AS BIGINT) AS tokens_in, \
             CAST(SUM(COALESCE(tokens_out, 0)) AS BIGINT) AS tokens_out \
             FROM run_log WHERE kind = 'agent_run' AND at >= $1 AND agent IS NOT NULL \
             GROUP BY agent ORDER BY agent",
        )
        .bind(since_ms)
        .fetch_all(self.store.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AgentTokens {
                    agent: row.try_get("agent")?,
                    runs: row.try_get("runs")?,
                    tokens_in: row.try_get("tokens_in")?,
                    tokens_out: row.try_get("tokens_out")?,
                })
            })
            .collect()
    }
}
