//! [`CommandTool`]: an argument-vector template run without a shell.
//!
//! TODO(sandbox): the command runs as a plain child process in `cwd`; the lead wires it to the
//! workspace sandbox that the `hardening` work adds (ADR 0018). Until then only operators who may
//! run commands on the host should be allowed to create command tools.

use std::collections::BTreeMap;
use std::process::Stdio;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolbelt_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::template::{Template, arg_text, scrub, verbatim};
use super::{DefinitionError, Secrets, declared_args};

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
    /// Working directory (default: the process's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment variables (templates); the rest of the environment is cleared except
    /// `PATH`, `HOME`, `LANG`.
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
        let mut command = tokio::process::Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in ["PATH", "HOME", "LANG"] {
            if let Ok(value) = std::env::var(name) {
                command.env(name, value);
            }
        }
        for (name, template) in &env_templates {
            command.env(
                name,
                template.render(&args, &self.secrets, verbatim, &mut used)?,
            );
        }
        if let Some(cwd) = &self.def.cwd {
            command.current_dir(cwd);
        }
        let child = command
            .spawn()
            .map_err(|e| ToolError::failed(format!("cannot start `{}`: {e}", argv[0])))?;
        let output = tokio::select! {
            out = child.wait_with_output() => out.map_err(|e| ToolError::failed(format!("`{}` failed: {e}", argv[0])))?,
            () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
        };
        let cap = self.def.max_output_bytes.unwrap_or(64 * 1024);
        let stdout = scrub(&capped(&output.stdout, cap), &used);
        let stderr = scrub(&capped(&output.stderr, cap), &used);
        let code = output.status.code();
        if !output.status.success() {
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

fn capped(bytes: &[u8], cap: usize) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(cap)]).into_owned();
    if bytes.len() > cap {
        format!("{text}\n[output cut at {cap} bytes]")
    } else {
        text
    }
}
