#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod builtin;
mod config;
pub mod declarative;
mod file_ops;
mod git_ops;
mod human;
mod process;
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
pub use shell::{DEFAULT_ENV_ALLOW, ShellConfig, ShellExecTool, shell_exec};
pub use todo::{
    MemoryTodoStore, TodoAddTool, TodoError, TodoItem, TodoListTool, TodoStatus, TodoStore,
    TodoUpdateTool, Todos, todo_add, todo_list, todo_update,
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
};
