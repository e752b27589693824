//! Group `shell`: `shell_exec`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;
use tokio::process::Command;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;

use crate::process::{self, Finished, Limits, RunError};
use crate::sandbox::{Sandbox, SandboxPolicy};
use crate::workspace::Workspace;

/// Environment variables a child process inherits by default; everything else
/// (API keys, tokens, cloud credentials) is withheld.
pub const DEFAULT_ENV_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TERM",
    "TZ",
    "TMPDIR",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
];

/// How `shell_exec` (and `git`, which shares the process runner) start processes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShellConfig {
    /// Names of host environment variables passed to children; see [`DEFAULT_ENV_ALLOW`].
    pub env_allow: Vec<String>,
    /// Timeout when the call gives none (default 120 s).
    pub default_timeout: Duration,
    /// Largest timeout a call may ask for (default 600 s).
    pub max_timeout: Duration,
    /// Bytes kept of each of stdout and stderr (default 30,000); the middle of
    /// longer output is dropped while reading, with a marker.
    pub max_output_bytes: usize,
    /// The shell that runs the command line with `-c` (default `sh`).
    pub shell: String,
    /// How `shell_exec` commands are confined (default: workspace-write, no network).
    pub sandbox: SandboxPolicy,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            env_allow: DEFAULT_ENV_ALLOW.iter().map(|s| (*s).to_owned()).collect(),
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 30_000,
            shell: "sh".to_owned(),
            sandbox: SandboxPolicy::default(),
        }
    }
}

impl ShellConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one variable name to the allow-list.
    #[must_use]
    pub fn allow_env(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        if !self.env_allow.contains(&name) {
            self.env_allow.push(name);
        }
        self
    }

    /// Sets the default timeout.
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Sets the largest timeout a call may ask for.
    #[must_use]
    pub fn with_max_timeout(mut self, timeout: Duration) -> Self {
        self.max_timeout = timeout;
        self
    }

    /// Sets the bytes kept per output stream.
    #[must_use]
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Sets the sandbox policy of `shell_exec`.
    #[must_use]
    pub fn with_sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = policy;
        self
    }

    /// A command with a cleared environment plus the allowed host variables.
    pub(crate) fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear();
        for name in &self.env_allow {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd
    }

    /// The timeout for a call asking for `secs`, clamped to the maximum.
    pub(crate) fn timeout(&self, secs: Option<u64>) -> Duration {
        secs.map_or(self.default_timeout, Duration::from_secs)
            .min(self.max_timeout)
    }

    pub(crate) fn from_context(ctx: &ToolContext) -> ShellConfig {
        ctx.get::<ShellConfig>().cloned().unwrap_or_default()
    }
}

/// Run a command line with `sh -c` inside the workspace and return its exit code, stdout and stderr.
///
/// The command runs in a sandbox: by default it reads system directories and the
/// workspace, writes only inside the workspace (and a private TMPDIR), and has no
/// network. The process gets a minimal environment (PATH, HOME, locale, ...) plus the
/// variables given in `env`. Output is capped per stream (the middle of long
/// output is dropped with a marker). On timeout the whole process group is
/// killed. A non-zero exit code is reported, not treated as a tool failure.
// Only `shell`: a tag policy such as `file_ops=allow` must never approve a
// command line, which can do far more than the file tools (ADR 0019).
#[tool(tags("shell"), mutating, timeout = "15m")]
pub async fn shell_exec(
    ctx: &ToolContext,
    /// The command line, run by `sh -c` (pipes, redirections and `&&` work).
    command: String,
    /// Working directory relative to the workspace root; defaults to the root.
    cwd: Option<String>,
    /// Extra environment variables for the command.
    env: Option<BTreeMap<String, String>>,
    /// Seconds before the command's process group is killed (default 120, capped by the host, 600 by default).
    timeout_secs: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    let workspace = Workspace::from_context(ctx)?;
    let config = ShellConfig::from_context(ctx);
    let dir = workspace.resolve(cwd.as_deref().unwrap_or("."))?;
    if !dir.is_dir() {
        return Err(ToolError::invalid_argument(
            "/cwd",
            format!("{} is not a directory", workspace.display_path(&dir)),
        ));
    }
    let mut cmd = config.command(&config.shell);
    cmd.arg("-c").arg(&command).current_dir(&dir);
    for (name, value) in env.unwrap_or_default() {
        cmd.env(name, value);
    }
    let limits = Limits {
        timeout: config.timeout(timeout_secs),
        max_output_bytes: config.max_output_bytes,
    };
    let sandbox = Sandbox::new(workspace.root(), config.sandbox.clone());
    match process::run(cmd, Some(&sandbox), limits, ctx.cancellation()).await {
        Ok(done) => Ok(render(&done)),
        Err(RunError::Cancelled) => Err(ToolError::Cancelled),
        Err(RunError::TimedOut { after, partial }) => Err(ToolError::failed(format!(
            "command timed out after {}s and its process group was killed; \
             run it in the background with its own limit or raise timeout_secs. \
             Output so far:\n{}",
            after.as_secs(),
            render(&partial).text
        ))),
        Err(RunError::Sandbox(err @ crate::sandbox::SandboxError::Unavailable { .. })) => {
            Err(ToolError::Denied {
                reason: err.to_string(),
            })
        }
        Err(err) => Err(ToolError::failed(error_chain(&err))),
    }
}

/// The text shown to the model, with the exit status first.
pub(crate) fn render(done: &Finished) -> ToolOutput {
    let status = match (done.exit_code, done.signal) {
        (Some(code), _) => format!("exit code: {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "no exit status (killed)".to_owned(),
    };
    let mut text = status;
    for (name, stream) in [("stdout", &done.stdout), ("stderr", &done.stderr)] {
        if stream.total_bytes > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("--- {name} ---\n{}", stream.text));
            if !stream.text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    let mut out = ToolOutput::text(text);
    out.json = Some(json!({
        "exit_code": done.exit_code,
        "signal": done.signal,
        "stdout": done.stdout.text,
        "stderr": done.stderr.text,
        "stdout_bytes": done.stdout.total_bytes,
        "stderr_bytes": done.stderr.total_bytes,
        "truncated": done.stdout.truncated || done.stderr.truncated,
    }));
    out
}

/// `err: cause: cause`, for errors whose sources carry the detail.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
