#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod builtin;
mod config;
pub mod declarative;
mod file_ops;
mod git_ops;
mod human;
mod memory;
mod process;
mod routine;
pub mod sandbox;
mod shell;
mod todo;
mod web;
mod workspace;

pub use builtin::{BUILTIN_GROUPS, BuiltinConfig, Builtins, RESERVED_GROUPS, builtin_tools};
pub use config::{
    AgentInfo, ConfigTool, EffectiveConfig, REDACTED, SelfInfoTool, ToolSummary, config, self_info,
};
pub use file_ops::{
    FileEditTool, FileReadTool, FileSearchTool, FileWriteTool, ListDirTool, file_edit, file_read,
    file_search, file_write, list_dir,
};
pub use git_ops::{GitChange, GitQuery, GitTool, GitWriteTool, git, git_write};
pub use human::{
    AskHumanTool, Human, HumanChannel, HumanError, HumanQuestion, PendingQuestions, StdinChannel,
    ask_human,
};
pub use memory::{
    Memory, MemoryForgetTool, MemoryListTool, MemoryRecallTool, MemoryStoreTool, memory_forget,
    memory_list, memory_recall, memory_store,
};
pub use routine::{RoutineAction, RoutineTool, Routines, routine};
pub use shell::{DEFAULT_ENV_ALLOW, ShellConfig, ShellExecTool, shell_exec};
pub use todo::{
    MemoryTodoStore, TodoAddTool, TodoError, TodoItem, TodoListTool, TodoStatus, TodoStore,
    TodoUpdateTool, Todos, todo_add, todo_list, todo_update,
};
/// Memory and routine types, re-exported from `toolbelt-persist`.
pub use toolbelt_persist::{
    DEFAULT_MAX_ENTRIES_PER_AGENT, DEFAULT_MAX_ENTRY_BYTES, MAX_INTERVAL_SECS, MAX_TAG_BYTES,
    MAX_TAGS, MemoryEntry, MemoryError, MemoryIndex, MemoryLimits, MemoryScope, MemoryStore,
    MissedPolicy, NewMemory, RecallHit, RecallQuery, RoutineDraft, RoutineError, RoutineInfo,
    RoutineStore, SCHEDULE_FORMS, Schedule, bm25, describe_routine, format_ms, memory_terms, owns,
    sort_hits, utc_ms,
};
pub use web::{
    HttpConfig, HttpGetTool, HttpMethod, HttpRequestTool, IpNet, IpNetError, http_get, http_request,
};
pub use workspace::{DEFAULT_MAX_READ_BYTES, Workspace, WorkspaceError};

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<BuiltinConfig>();
    assert_send_sync::<Workspace>();
    assert_send_sync::<HttpConfig>();
    assert_send_sync::<Human>();
    assert_send_sync::<Todos>();
    assert_send_sync::<Memory>();
    assert_send_sync::<Routines>();
};
