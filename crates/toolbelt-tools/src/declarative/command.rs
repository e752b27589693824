//! [`CommandTool`]: an argument-vector template run without a shell.
//!
//! The command runs like `shell_exec`: inside the host's workspace (the [`Workspace`] of the
//! tool context), under the workspace sandbox of [`ShellConfig`] (ADR 0018: Landlock, no
//! network, a kill no descendant escapes), with the process group killed on timeout or
//! cancellation and its output capped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolbelt_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::template::{Template, arg_text, scrub, verbatim};
use super::{DefinitionError, Secrets, declared_args};
use crate::process::{self, Limits, RunError};
use crate::sandbox::{Sandbox, SandboxError};
use crate::{ShellConfig, Workspace};

/// A command tool definition.
///
/// ```yaml
/// command:
///   argv: ["git", "log", "-n", "{{count}}", "--oneline"]
///   cwd: /srv/repo
///   env: {GIT_PAGER: cat}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CommandDef {
    /// Program and arguments. Each element is a template rendered to exactly one argument,
    /// except an element that is exactly `{{arg}}` naming an array argument, which expands to
    /// one argument per item. No shell ever sees them.
    pub argv: Vec<String>,
    /// Working directory inside the workspace (default: the workspace root); a path that
    /// leads outside it is refused when the tool is called.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment variables (templates); the rest of the environment is cleared except
    /// the variables [`ShellConfig`] allows (`PATH`, `HOME`, locale, ...).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Largest output kept, in bytes (default 64 KiB).
    #[serde(default)]
    pub max_output_bytes: Option<usize>,
}

/// Parsed argv and environment templates.
type Compiled = (Vec<Template>, Vec<(String, Template)>);

impl CommandDef {
    fn compile(&self, spec: &ToolSpec) -> Result<Compiled, DefinitionError> {
        let args = declared_args(spec);
        let Some(program) = self.argv.first() else {
            return Err(DefinitionError::new("command.argv", "must name a program"));
        };
        if program.contains("{{") {
            return Err(DefinitionError::new(
                "command.argv[0]",
                "the program must be fixed, not a template",
            ));
        }
        let argv = self
            .argv
            .iter()
            .enumerate()
            .map(|(i, a)| Template::parse(a, &format!("command.argv[{i}]"), &args))
            .collect::<Result<Vec<_>, _>>()?;
        let env = self
            .env
            .iter()
            .map(|(k, v)| {
                Ok((
                    k.clone(),
                    Template::parse(v, &format!("command.env.{k}"), &args)?,
                ))
            })
            .collect::<Result<Vec<_>, DefinitionError>>()?;
        Ok((argv, env))
    }

    pub(crate) fn validate(&self, spec: &ToolSpec) -> Result<(), DefinitionError> {
        self.compile(spec).map(|_| ())
    }
}

/// A command tool built from a [`CommandDef`].
pub struct CommandTool {
    spec: ToolSpec,
    def: CommandDef,
    secrets: Secrets,
}

impl std::fmt::Debug for CommandTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandTool")
            .field("name", &self.spec.name)
            .field("argv", &self.def.argv)
            .finish_non_exhaustive()
    }
}

impl CommandTool {
    /// A tool named by `spec` running `def`.
    pub fn new(spec: ToolSpec, def: CommandDef, secrets: Secrets) -> Self {
        Self { spec, def, secrets }
    }
}

impl Tool for CommandTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let (argv_templates, env_templates) = self
            .def
            .compile(&self.spec)
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let mut used = Vec::new();
        let mut argv = Vec::new();
        for template in &argv_templates {
            match template.sole_arg().and_then(|a| args.get(a)) {
                Some(Value::Array(items)) => argv.extend(items.iter().map(|v| arg_text(Some(v)))),
                _ => argv.push(template.render(&args, &self.secrets, verbatim, &mut used)?),
            }
        }
        let workspace = Workspace::from_context(&ctx)?;
        let config = ShellConfig::from_context(&ctx);
        let dir = workspace.resolve(self.def.cwd.as_deref().unwrap_or("."))?;
        let mut command = config.command(&argv[0]);
        command.args(&argv[1..]).current_dir(&dir);
        for (name, template) in &env_templates {
            command.env(
                name,
                template.render(&args, &self.secrets, verbatim, &mut used)?,
            );
        }
        let limits = Limits {
            timeout: config.timeout(None),
            max_output_bytes: self.def.max_output_bytes.unwrap_or(64 * 1024),
        };
        let sandbox = Sandbox::new(workspace.root(), config.sandbox.clone());
        let done = match process::run(command, Some(&sandbox), limits, ctx.cancellation()).await {
            Ok(done) => done,
            Err(RunError::Cancelled) => return Err(ToolError::Cancelled),
            Err(RunError::Sandbox(err @ SandboxError::Unavailable { .. })) => {
                return Err(ToolError::Denied {
                    reason: err.to_string(),
                });
            }
            Err(err @ RunError::TimedOut { .. }) => {
                return Err(ToolError::failed(format!("`{}` {err}", argv[0])));
            }
            Err(err) => {
                let mut message = format!("`{}`: {err}", argv[0]);
                let mut source = std::error::Error::source(&err);
                while let Some(cause) = source {
                    message.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                return Err(ToolError::failed(message));
            }
        };
        let stdout = scrub(&done.stdout.text, &used);
        let stderr = scrub(&done.stderr.text, &used);
        let code = done.exit_code;
        if code != Some(0) {
            return Err(ToolError::failed(format!(
                "`{}` exited with {}: {}",
                argv[0],
                code.map_or_else(|| "a signal".to_owned(), |c| format!("status {c}")),
                if stderr.trim().is_empty() {
                    &stdout
                } else {
                    &stderr
                }
                .trim()
            )));
        }
        let mut out = ToolOutput::text(stdout.clone());
        out.json = Some(json!({"exit_code": code, "stdout": stdout, "stderr": stderr}));
        Ok(out)
    }
}
