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
    /// The list holds as many tasks as the store allows.
    #[error(
        "this conversation's list already holds {limit} tasks, the most allowed; finish or reuse existing tasks (todo_update) instead of adding more"
    )]
    Full {
        /// The most tasks per list.
        limit: usize,
    },
    /// A task title longer than the store allows.
    #[error(
        "a task title of {chars} characters is longer than the {limit} allowed; keep titles short"
    )]
    TitleTooLong {
        /// The title's length.
        chars: usize,
        /// The most characters allowed.
        limit: usize,
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

/// Task lists in memory, lost when the process ends; bounded.
///
/// At most [`MemoryTodoStore::with_limits`]' `max_lists` conversations are kept
/// (the least recently used list is dropped to make room), each with at most
/// `max_tasks` tasks of at most `max_title_chars` characters. Defaults: 1,000
/// lists, 200 tasks, 500 characters.
#[derive(Debug)]
pub struct MemoryTodoStore {
    lists: Mutex<Lists>,
    max_lists: usize,
    max_tasks: usize,
    max_title_chars: usize,
}

#[derive(Debug, Default)]
struct Lists {
    by_conversation: HashMap<String, (u64, Vec<TodoItem>)>,
    clock: u64,
}

impl Default for MemoryTodoStore {
    fn default() -> Self {
        Self::with_limits(1000, 200, 500)
    }
}

impl MemoryTodoStore {
    /// An empty store with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store keeping at most `max_lists` conversations' lists of at most
    /// `max_tasks` tasks, each title at most `max_title_chars` characters (each at least 1).
    pub fn with_limits(max_lists: usize, max_tasks: usize, max_title_chars: usize) -> Self {
        Self {
            lists: Mutex::new(Lists::default()),
            max_lists: max_lists.max(1),
            max_tasks: max_tasks.max(1),
            max_title_chars: max_title_chars.max(1),
        }
    }

    /// Runs `f` on the conversation's list, creating it (and evicting the least
    /// recently used list when full) only when `create` is set.
    fn with_list<T>(
        &self,
        conversation: &str,
        create: bool,
        f: impl FnOnce(&mut Vec<TodoItem>) -> T,
    ) -> Option<T> {
        let mut lists = self.lists.lock().unwrap_or_else(PoisonError::into_inner);
        lists.clock += 1;
        let now = lists.clock;
        if !lists.by_conversation.contains_key(conversation) {
            if !create {
                return None;
            }
            if lists.by_conversation.len() >= self.max_lists
                && let Some(oldest) = lists
                    .by_conversation
                    .iter()
                    .min_by_key(|(_, (used, _))| *used)
                    .map(|(k, _)| k.clone())
            {
                lists.by_conversation.remove(&oldest);
            }
            lists
                .by_conversation
                .insert(conversation.to_owned(), (now, Vec::new()));
        }
        let (used, list) = lists.by_conversation.get_mut(conversation)?;
        *used = now;
        Some(f(list))
    }
}

impl TodoStore for MemoryTodoStore {
    fn add<'a>(
        &'a self,
        conversation: &'a str,
        titles: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>> {
        if let Some(long) = titles
            .iter()
            .map(|t| t.chars().count())
            .find(|&n| n > self.max_title_chars)
        {
            return Box::pin(std::future::ready(Err(TodoError::TitleTooLong {
                chars: long,
                limit: self.max_title_chars,
            })));
        }
        let max_tasks = self.max_tasks;
        let result = self
            .with_list(conversation, true, |list| {
                if list.len() + titles.len() > max_tasks {
                    return Err(TodoError::Full { limit: max_tasks });
                }
                let first = list.iter().map(|t| t.id).max().unwrap_or(0) + 1;
                for (id, title) in (first..).zip(titles) {
                    list.push(TodoItem {
                        id,
                        title,
                        status: TodoStatus::Pending,
                    });
                }
                Ok(list.clone())
            })
            .unwrap_or_else(|| Ok(Vec::new()));
        Box::pin(std::future::ready(result))
    }

    fn set_status<'a>(
        &'a self,
        conversation: &'a str,
        id: u64,
        status: TodoStatus,
    ) -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>> {
        let result = self
            .with_list(conversation, false, |list| {
                let item = list
                    .iter_mut()
                    .find(|t| t.id == id)
                    .ok_or(TodoError::NotFound { id })?;
                item.status = status;
                Ok(list.clone())
            })
            .unwrap_or(Err(TodoError::NotFound { id }));
        Box::pin(std::future::ready(result))
    }

    fn list<'a>(
        &'a self,
        conversation: &'a str,
    ) -> BoxFuture<'a, Result<Vec<TodoItem>, TodoError>> {
        // Listing an unknown conversation creates nothing.
        let list = self
            .with_list(conversation, false, |list| list.clone())
            .unwrap_or_default();
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
