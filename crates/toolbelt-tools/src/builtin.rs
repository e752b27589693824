//! [`BuiltinConfig`]: everything the built-in tools need from their host, and the list of tools.

use toolbelt_core::{Extensions, SpecError, ToolContext, ToolHandle, ToolModule};

use crate::config::{AgentInfo, ConfigTool, EffectiveConfig, SelfInfoTool};
use crate::file_ops::{FileEditTool, FileReadTool, FileSearchTool, FileWriteTool, ListDirTool};
use crate::git_ops::{GitTool, GitWriteTool};
use crate::human::{AskHumanTool, Human};
use crate::memory::{Memory, MemoryForgetTool, MemoryListTool, MemoryRecallTool, MemoryStoreTool};
use crate::routine::{RoutineTool, Routines};
use crate::shell::{ShellConfig, ShellExecTool};
use crate::todo::{TodoAddTool, TodoListTool, TodoUpdateTool, Todos};
use crate::web::{HttpConfig, HttpGetTool, HttpRequestTool};
use crate::workspace::Workspace;

/// The groups (tags) of the built-in tools, in the order of the routing design's groups (file, shell, git, web, …).
pub const BUILTIN_GROUPS: &[&str] = &[
    "file_ops", "shell", "git_ops", "web", "todo", "human", "config", "memory", "routine",
];

/// Groups of the routing design whose tools are not built in yet: none since `memory` and
/// `routine` landed (their stores live in `toolbelt-store`).
pub const RESERVED_GROUPS: &[&str] = &[];

/// Per-host settings of the built-in tools, installed as [`ToolContext`] extensions.
///
/// ```
/// use toolbelt_tools::{BuiltinConfig, Workspace};
///
/// let cfg = BuiltinConfig::new(Workspace::new(std::env::temp_dir()).unwrap());
/// let ctx = toolbelt_core::ToolContext::new().with_extensions(cfg.extensions());
/// assert!(ctx.get::<Workspace>().is_some());
/// ```
///
/// Without [`with_human`](Self::with_human), `ask_human` fails with a message
/// saying no channel is configured; likewise `self_info` and `config` without
/// their extensions. Shell and HTTP settings default to [`ShellConfig::default`]
/// and [`HttpConfig::default`]; the task lists default to one in-memory store
/// shared by every context made from this configuration.
#[derive(Debug, Clone)]
#[must_use]
pub struct BuiltinConfig {
    workspace: Workspace,
    shell: ShellConfig,
    http: HttpConfig,
    todos: Todos,
    human: Option<Human>,
    agent: Option<AgentInfo>,
    config: Option<EffectiveConfig>,
    memory: Option<Memory>,
    routines: Option<Routines>,
}

impl BuiltinConfig {
    /// Confines file, shell and git tools to `workspace`; everything else takes its default.
    ///
    /// Probes the command sandbox once per process ([`crate::sandbox::probe`]),
    /// which logs what it found: a warning when the kernel has no Landlock (then
    /// `shell_exec` refuses commands unless the sandbox mode is `full-access`).
    pub fn new(workspace: Workspace) -> Self {
        let _ = crate::sandbox::probe();
        Self {
            workspace,
            shell: ShellConfig::default(),
            http: HttpConfig::default(),
            todos: Todos::in_memory(),
            human: None,
            agent: None,
            config: None,
            memory: None,
            routines: None,
        }
    }

    /// Sets how commands run.
    pub fn with_shell(mut self, shell: ShellConfig) -> Self {
        self.shell = shell;
        self
    }

    /// Sets the HTTP limits and allow-list.
    pub fn with_http(mut self, http: HttpConfig) -> Self {
        self.http = http;
        self
    }

    /// Sets where task lists are kept.
    pub fn with_todos(mut self, todos: Todos) -> Self {
        self.todos = todos;
        self
    }

    /// Sets the channel `ask_human` uses.
    pub fn with_human(mut self, human: Human) -> Self {
        self.human = Some(human);
        self
    }

    /// Sets what `self_info` reports.
    pub fn with_agent_info(mut self, info: AgentInfo) -> Self {
        self.agent = Some(info);
        self
    }

    /// Sets what `config` shows (already redacted by [`EffectiveConfig::new`]).
    pub fn with_effective_config(mut self, config: EffectiveConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Sets the memory (store and scope) the `memory_*` tools use; without it they fail
    /// with a message saying memory is not configured.
    pub fn with_memory(mut self, memory: Memory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Sets the routines the `routine` tool manages; without it the tool fails with a
    /// message saying routines are not configured.
    pub fn with_routines(mut self, routines: Routines) -> Self {
        self.routines = Some(routines);
        self
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The extensions to install: `ToolContext::new().with_extensions(cfg.extensions())`.
    pub fn extensions(&self) -> Extensions {
        let mut ext = Extensions::new();
        ext.insert(self.workspace.clone());
        ext.insert(self.shell.clone());
        ext.insert(self.http.clone());
        ext.insert(self.todos.clone());
        if let Some(human) = &self.human {
            ext.insert(human.clone());
        }
        if let Some(agent) = &self.agent {
            ext.insert(agent.clone());
        }
        if let Some(config) = &self.config {
            ext.insert(config.clone());
        }
        if let Some(memory) = &self.memory {
            ext.insert(memory.clone());
        }
        if let Some(routines) = &self.routines {
            ext.insert(routines.clone());
        }
        ext
    }

    /// A fresh context carrying [`BuiltinConfig::extensions`].
    pub fn context(&self) -> ToolContext {
        ToolContext::new().with_extensions(self.extensions())
    }
}

/// Every built-in tool, for hosts that do not use `Registry::discovered()`.
///
/// # Errors
/// [`SpecError`] if a built-in spec is invalid (a bug, caught by this crate's tests).
pub fn builtin_tools() -> Result<Vec<ToolHandle>, SpecError> {
    Ok(vec![
        ToolHandle::new(FileReadTool)?,
        ToolHandle::new(FileWriteTool)?,
        ToolHandle::new(FileEditTool)?,
        ToolHandle::new(ListDirTool)?,
        ToolHandle::new(FileSearchTool)?,
        ToolHandle::new(ShellExecTool)?,
        ToolHandle::new(GitTool)?,
        ToolHandle::new(GitWriteTool)?,
        ToolHandle::new(HttpGetTool)?,
        ToolHandle::new(HttpRequestTool)?,
        ToolHandle::new(TodoAddTool)?,
        ToolHandle::new(TodoUpdateTool)?,
        ToolHandle::new(TodoListTool)?,
        ToolHandle::new(AskHumanTool)?,
        ToolHandle::new(ConfigTool)?,
        ToolHandle::new(SelfInfoTool)?,
        ToolHandle::new(MemoryStoreTool)?,
        ToolHandle::new(MemoryRecallTool)?,
        ToolHandle::new(MemoryForgetTool)?,
        ToolHandle::new(MemoryListTool)?,
        ToolHandle::new(RoutineTool)?,
    ])
}

/// The built-in tools as a [`ToolModule`]: `registry.add_module(&Builtins)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Builtins;

impl ToolModule for Builtins {
    fn tools(&self) -> Result<Vec<ToolHandle>, SpecError> {
        builtin_tools()
    }
}
