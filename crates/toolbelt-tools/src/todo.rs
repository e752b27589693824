//! Group `todo`: a task list per conversation (`todo_add`, `todo_update`, `todo_list`).
//!
//! The list lives behind the [`TodoStore`] trait; [`MemoryTodoStore`] keeps it
//! in memory, and a database-backed store can replace it without touching the
//! tools. Calls without a conversation id share the list named `default`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::{BoxFuture, ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;

/// The state of one task.
// Variant doc comments would make schemars emit `oneOf` with descriptions, which
// validates with a vaguer error than a plain `enum`; the tool docs describe them.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,    // Not started.
    InProgress, // Being worked on.
    Done,       // Finished.
    Cancelled,  // Dropped.
}

impl TodoStatus {
    fn mark(self) -> &'static str {
        match self {
            Self::Pending => "[ ]",
            Self::InProgress => "[~]",
            Self::Done => "[x]",
            Self::Cancelled => "[-]",
        }
    }
}

/// One task of a conversation's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TodoItem {
    /// Number of the task within its list, from 1.
    pub id: u64,
    /// What to do.
    pub title: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// A failure of a [`TodoStore`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TodoError {
    /// No task with this id in the conversation's list.
    #[error("no task {id} in this conversation's list; call todo_list to see the ids")]
    NotFound {
        /// The id asked for.
        id: u64,
    },
    /// The storage behind the list failed.
    #[error("the task list could not be read or written")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<TodoError> for ToolError {
    fn from(err: TodoError) -> Self {
        match &err {
            TodoError::Backend(source) => ToolError::retryable(format!("{err}: {source}")),
            _ => ToolError::failed(err.to_string()),
        }
    }
}

/// Where task lists are kept, keyed by conversation id.
pub trait TodoStore: Send + Sync + 'static {
    /// Appends tasks (status `pending`) and returns the whole list.
    fn add<'a>(
        &'a self,
        conversation: &'a str,
        titles: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>>;

    /// Sets the status of task `id` and returns the whole list.
    fn set_status<'a>(
        &'a self,
        conversation: &'a str,
        id: u64,
        status: TodoStatus,
    ) -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>>;

    /// The list, in the order tasks were added.
    fn list<'a>(&'a self, conversation: &'a str)
    -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>>;
}

/// Task lists in memory, lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryTodoStore {
    lists: Mutex<HashMap<String, Vec<TodoItem>>>,
}

impl MemoryTodoStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with_list<T>(&self, conversation: &str, f: impl FnOnce(&mut Vec<TodoItem>) -> T) -> T {
        let mut lists = self.lists.lock().unwrap_or_else(PoisonError::into_inner);
        f(lists.entry(conversation.to_owned()).or_default())
    }
}

impl TodoStore for MemoryTodoStore {
    fn add<'a>(
        &'a self,
        conversation: &'a str,
        titles: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>> {
        let list = self.with_list(conversation, |list| {
            let first = list.iter().map(|t| t.id).max().unwrap_or(0) + 1;
            for (id, title) in (first..).zip(titles) {
                list.push(TodoItem {
                    id,
                    title,
                    status: TodoStatus::Pending,
                });
            }
            list.clone()
        });
        Box::pin(std::future::ready(Ok(list)))
    }

    fn set_status<'a>(
        &'a self,
        conversation: &'a str,
        id: u64,
        status: TodoStatus,
    ) -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>> {
        let result = self.with_list(conversation, |list| {
            let item = list
                .iter_mut()
                .find(|t| t.id == id)
                .ok_or(TodoError::NotFound { id })?;
            item.status = status;
            Ok(list.clone())
        });
        Box::pin(std::future::ready(result))
    }

    fn list<'a>(
        &'a self,
        conversation: &'a str,
    ) -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>> {
        let list = self.with_list(conversation, |list| list.clone());
        Box::pin(std::future::ready(Ok(list)))
    }
}

/// The task store the todo tools use: a context extension around a [`TodoStore`].
#[derive(Clone)]
pub struct Todos(Arc<dyn TodoStore>);

impl fmt::Debug for Todos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Todos").finish_non_exhaustive()
    }
}

impl Todos {
    /// Uses `store`.
    pub fn new(store: impl TodoStore) -> Self {
        Self(Arc::new(store))
    }

    /// Shares a store already behind an `Arc`.
    pub fn from_arc(store: Arc<dyn TodoStore>) -> Self {
        Self(store)
    }

    /// A fresh [`MemoryTodoStore`].
    pub fn in_memory() -> Self {
        Self::new(MemoryTodoStore::new())
    }

    /// The store.
    pub fn store(&self) -> &dyn TodoStore {
        &*self.0
    }

    fn from_context(ctx: &ToolContext) -> Result<(&dyn TodoStore, &str), ToolError> {
        let todos = ctx.get::<Self>().ok_or_else(|| {
            ToolError::failed(
                "the task list is not configured; the host must add a `Todos` extension \
                 (e.g. `Todos::in_memory()`) to the tool context",
            )
        })?;
        Ok((todos.store(), ctx.conversation_id().unwrap_or("default")))
    }
}

/// Add tasks to this conversation's task list; returns the whole list with task ids.
#[tool(tags("todo"), mutating, needs_approval = false)]
pub async fn todo_add(
    ctx: &ToolContext,
    /// The tasks to add, in order, one short sentence each.
    items: Vec<String>,
) -> Result<ToolOutput, ToolError> {
    if items.is_empty() {
        return Err(ToolError::invalid_argument(
            "/items",
            "give at least one task",
        ));
    }
    if let Some(i) = items.iter().position(|t| t.trim().is_empty()) {
        return Err(ToolError::invalid_argument(
            format!("/items/{i}"),
            "the task is empty",
        ));
    }
    let (store, conversation) = Todos::from_context(ctx)?;
    let items = items.into_iter().map(|t| t.trim().to_owned()).collect();
    render(&store.add(conversation, items).await?)
}

/// Set the status of one task of this conversation's list (pending, in_progress, done, cancelled).
#[tool(tags("todo"), mutating, needs_approval = false)]
pub async fn todo_update(
    ctx: &ToolContext,
    /// The task's id, as shown by todo_list.
    id: u64,
    /// The new status.
    status: TodoStatus,
) -> Result<ToolOutput, ToolError> {
    let (store, conversation) = Todos::from_context(ctx)?;
    render(&store.set_status(conversation, id, status).await?)
}

/// Show this conversation's task list with each task's id and status.
#[tool(tags("todo"), read_only)]
pub async fn todo_list(ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let (store, conversation) = Todos::from_context(ctx)?;
    render(&store.list(conversation).await?)
}

fn render(items: &[TodoItem]) -> Result<ToolOutput, ToolError> {
    let text = if items.is_empty() {
        "the task list is empty".to_owned()
    } else {
        let done = items
            .iter()
            .filter(|t| t.status == TodoStatus::Done)
            .count();
        let mut text = format!("{done}/{} done", items.len());
        for item in items {
            text.push_str(&format!(
                "\n{} {}. {}",
                item.status.mark(),
                item.id,
                item.title
            ));
        }
        text
    };
    let mut out = ToolOutput::text(text);
    out.json = Some(
        json!({ "items": serde_json::to_value(items).map_err(|e| ToolError::failed(e.to_string()))? }),
    );
    Ok(out)
}
