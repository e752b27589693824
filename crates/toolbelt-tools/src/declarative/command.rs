//! [`CommandTool`]: an argument-vector template run without a shell.
//!
//! The command runs like `shell_exec`: inside the host's workspace (the [`Workspace`] of the
//! tool context), under the workspace sandbox of [`ShellConfig`] (ADR 0018: Landlock, no
//! network, a kill no descendant escapes), with the process group killed on timeout or
//! cancellation and its output capped. Its environment is cleared except the variables
//! [`ShellConfig`] allows and those the definition sets, so no secret of the server reaches it
//! unless the definition passes one.
//!
//! A templated argument whose value starts with `-` is refused (the program would read it as an
//! option), unless it comes after a literal `--` in `argv` or the definition lists it in
//! `allow_leading_dash`. Command tools are mutating unless the definition says `read_only: true`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolbelt_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::scrub::Scrubber;
use super::template::{Template, arg_text, verbatim};
use super::{DefinitionError, Secrets, declared_args, mutating_unless};
use crate::process::{self, Captured, Limits, RunError};
use crate::sandbox::{Sandbox, SandboxError};
use crate::{ShellConfig, Workspace};

/// A command tool definition.
///
/// ```yaml
/// command:
///   argv: ["git", "log", "-n", "{{count}}", "--oneline", "--", "{{path}}"]
///   cwd: /srv/repo
///   env: {GIT_PAGER: cat}
///   read_only: true
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
    /// Declares the command free of side effects, so the tool keeps a read-only policy.
    /// Without it the tool is mutating and needs approval whatever its spec says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Arguments whose values may start with `-` anywhere in `argv` (e.g. a pattern after
    /// `-e`). Values after a literal `--` element may always start with `-`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_leading_dash: Vec<String>,
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
        if let Some(name) = self.allow_leading_dash.iter().find(|n| !args.contains(n)) {
            return Err(DefinitionError::new(
                "command.allow_leading_dash",
                format!(
                    "`{name}` names no argument; the parameters declare: {}",
                    if args.is_empty() {
                        "none".to_owned()
                    } else {
                        args.join(", ")
                    }
                ),
            ));
        }
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
    /// A tool named by `spec` running `def`. A read-only `spec` becomes mutating (needing
    /// approval) unless `def` says `read_only: true`.
    pub fn new(spec: ToolSpec, def: CommandDef, secrets: Secrets) -> Self {
        let spec = mutating_unless(spec, def.read_only);
        Self { spec, def, secrets }
    }

    /// Refuses `value` of argument `name` when it starts with `-` where an option may stand.
    fn check_dash(&self, name: &str, value: &str, after_end: bool) -> Result<(), ToolError> {
        if !value.starts_with('-')
            || after_end
            || self.def.allow_leading_dash.iter().any(|a| a == name)
        {
            return Ok(());
        }
        Err(ToolError::invalid_argument(
            format!("/{name}"),
            format!(
                "`{value}` starts with `-`, so `{}` would read it as an option; give a value \
                 that does not start with `-` (for a file, `./{value}`)",
                self.def.argv[0]
            ),
        ))
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
        // Whether a literal `--` came before: the program reads what follows as operands.
        let mut after_end = false;
        for (i, template) in argv_templates.iter().enumerate() {
            match template.sole_arg().map(|a| (a, args.get(a))) {
                Some((name, Some(Value::Array(items)))) => {
                    for item in items {
                        let text = arg_text(Some(item));
                        self.check_dash(name, &text, after_end)?;
                        argv.push(text);
                    }
                }
                _ => {
                    let text = template.render(&args, &self.secrets, verbatim, &mut used)?;
                    if let Some(name) = template
                        .leading_args()
                        .find(|a| !arg_text(args.get(*a)).is_empty())
                    {
                        self.check_dash(name, &text, after_end)?;
                    }
                    argv.push(text);
                }
            }
            after_end |= i > 0 && template.is_literal("--");
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
        let scrubber = Scrubber::new(&used);
        let done = process::run(command, Some(&sandbox), limits, ctx.cancellation())
            .await
            .map_err(|e| scrubber.error(run_error(&argv[0], e)))?;
        let stdout = scrub_captured(&scrubber, &done.stdout, limits.max_output_bytes);
        let stderr = scrub_captured(&scrubber, &done.stderr, limits.max_output_bytes);
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

/// The tool error for a run that did not finish normally.
fn run_error(program: &str, err: RunError) -> ToolError {
    match err {
        RunError::Cancelled => ToolError::Cancelled,
        RunError::Sandbox(err @ SandboxError::Unavailable { .. }) => ToolError::Denied {
            reason: err.to_string(),
        },
        err @ RunError::TimedOut { .. } => ToolError::failed(format!("`{program}` {err}")),
        err => {
            let mut message = format!("`{program}`: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            ToolError::failed(message)
        }
    }
}

/// A stream's text scrubbed; when its middle was dropped while reading (see
/// `process::CappedBuffer`, which keeps `cap` bytes around the marker it inserts), pieces of a
/// secret on either side of the marker are redacted as well.
fn scrub_captured(scrubber: &Scrubber, captured: &Captured, cap: usize) -> String {
    if !captured.truncated {
        return scrubber.text(&captured.text);
    }
    let dropped = captured.total_bytes.saturating_sub(cap as u64);
    let marker = format!(
        "\n[... {dropped} bytes truncated of {} ...]\n",
        captured.total_bytes
    );
    scrubber.text_cut_at(&captured.text, &marker)
}
