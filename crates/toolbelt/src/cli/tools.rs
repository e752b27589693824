//! `toolbelt tools`: list the tools this binary knows, or call one.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use serde_json::{Value, json};
use toolbelt_core::{
    ApprovalPolicy, ApprovalRequest, ApprovalResponse, Approver, BoxFuture, Effect, Executor,
    Registry, ToolCall, ToolError, ToolHandle, ToolSpec,
};
use toolbelt_tools::sandbox::{SandboxMode, SandboxPolicy};
use toolbelt_tools::{
    AgentInfo, BUILTIN_GROUPS, BuiltinConfig, EffectiveConfig, HttpConfig, Human, RESERVED_GROUPS,
    ShellConfig, StdinChannel, Workspace,
};

/// Exit code for arguments that are not valid JSON or break the tool's schema.
const EXIT_USAGE: u8 = 2;

/// Subcommands of `toolbelt tools`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ToolsCommand {
    /// List every tool, grouped by tag, with its effect and approval default.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Call one tool with JSON arguments and print its output.
    Call(CallArgs),
    /// Tools stored in the database (add, update, rm, enable, disable, show, versions, rollback, why).
    #[command(flatten)]
    Stored(super::stored_tools::StoredToolsCommand),
}

/// Arguments of `toolbelt tools list`.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// Print JSON (every spec with its parameter schema, and the groups).
    #[arg(long)]
    json: bool,
}

/// Arguments of `toolbelt tools call`.
#[derive(Debug, clap::Args)]
pub(crate) struct CallArgs {
    /// The tool's name.
    name: String,
    /// Its arguments as a JSON object.
    #[arg(default_value = "{}")]
    args: String,
    /// Workspace root the file, shell and git tools are confined to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Allow every call without asking (otherwise tools needing approval ask on the terminal).
    #[arg(long, short = 'y')]
    yes: bool,
    /// Print the whole output as JSON (text, structured result, truncation).
    #[arg(long)]
    json: bool,
    /// Let the HTTP tools reach this host name even if it resolves to an internal address (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Let the HTTP tools reach this address range, e.g. 127.0.0.1/32 (repeatable).
    #[arg(long = "allow-net", value_name = "CIDR")]
    allow_nets: Vec<String>,
    /// How `shell_exec` commands are confined: `read-only`, `workspace-write` (default) or `full-access`.
    #[arg(long, value_name = "MODE", default_value = "workspace-write")]
    sandbox: SandboxMode,
    /// Let `shell_exec` commands use the network (denied by default).
    #[arg(long)]
    sandbox_network: bool,
}

pub(crate) async fn run(cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    if let ToolsCommand::Stored(cmd) = cmd {
        return super::stored_tools::run(cmd).await;
    }
    let registry = Registry::discovered().context("could not collect the linked tools")?;
    match cmd {
        ToolsCommand::List(args) => list(&registry, &args),
        ToolsCommand::Call(args) => call(&registry, args).await,
        ToolsCommand::Stored(_) => Ok(ExitCode::SUCCESS),
    }
}

/// Groups in display order: the built-in groups in their design order, then the others by name.
fn groups(registry: &Registry) -> Vec<(String, Vec<ToolHandle>)> {
    let mut tags: Vec<String> = registry.tags().into_iter().map(|(t, _)| t).collect();
    tags.sort_by_key(|t| {
        (
            BUILTIN_GROUPS
                .iter()
                .position(|g| g == t)
                .unwrap_or(usize::MAX),
            t.clone(),
        )
    });
    let mut groups: Vec<(String, Vec<ToolHandle>)> = tags
        .into_iter()
        .map(|t| {
            let tools = registry.tools_by_tag(&t);
            (t, tools)
        })
        .collect();
    let untagged: Vec<ToolHandle> = registry
        .list()
        .into_iter()
        .filter(|t| t.spec().tags.is_empty())
        .collect();
    if !untagged.is_empty() {
        groups.push(("(untagged)".to_owned(), untagged));
    }
    groups
}

fn effect(spec: &ToolSpec) -> &'static str {
    match spec.policy.effect {
        Effect::ReadOnly => "read-only",
        Effect::Mutating => "mutating",
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

fn list(registry: &Registry, args: &ListArgs) -> anyhow::Result<ExitCode> {
    let groups = groups(registry);
    let mut out = std::io::stdout().lock();
    if args.json {
        let handles = registry.list();
        let tools: Vec<&ToolSpec> = handles.iter().map(ToolHandle::spec).collect();
        let doc = json!({
            "groups": groups
                .iter()
                .map(|(g, tools)| (g.clone(), tools.iter().map(|t| t.name().to_string()).collect::<Vec<_>>()))
                .collect::<BTreeMap<_, _>>(),
            "reserved_groups": RESERVED_GROUPS,
            "tools": tools,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = registry
        .list()
        .iter()
        .map(|t| t.name().as_str().len())
        .max()
        .unwrap_or(0);
    for (i, (group, tools)) in groups.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{group} ({})", tools.len())?;
        for tool in tools {
            let spec = tool.spec();
            let approval = if spec.policy.needs_approval {
                "asks"
            } else {
                "auto"
            };
            writeln!(
                out,
                "  {:width$}  {:9}  {approval}  {}",
                spec.name.as_str(),
                effect(spec),
                first_line(&spec.description),
            )?;
        }
    }
    if !RESERVED_GROUPS.is_empty() {
        writeln!(
            out,
            "\nreserved groups (their tools arrive with the store): {}",
            RESERVED_GROUPS.join(", ")
        )?;
    } else {
        writeln!(out)?;
    }
    writeln!(
        out,
        "`asks`: the call needs approval by default (`toolbelt tools call --yes` allows it)"
    )?;
    Ok(ExitCode::SUCCESS)
}

async fn call(registry: &Registry, args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments: Value = match serde_json::from_str(&args.args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!(
                "error: the arguments are not valid JSON ({e}); give one JSON object, e.g. '{{\"path\": \"README.md\"}}'"
            );
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let workspace = match &args.root {
        Some(root) => Workspace::new(root),
        None => Workspace::current_dir(),
    }
    .context("cannot use the workspace root")?;
    let mut http = HttpConfig::new();
    for host in &args.allow_hosts {
        http = http.allow_host(host);
    }
    for net in &args.allow_nets {
        http = http.allow_net(net)?;
    }
    let shell = ShellConfig::new().with_sandbox(
        SandboxPolicy::new()
            .with_mode(args.sandbox)
            .with_network(args.sandbox_network),
    );
    let handles = registry.list();
    let effective = effective_config(&workspace, &shell, &http);
    let cfg = BuiltinConfig::new(workspace)
        .with_shell(shell)
        .with_http(http)
        .with_human(Human::new(StdinChannel::new()))
        .with_agent_info(
            AgentInfo::new("toolbelt-cli")
                .with_description("the `toolbelt tools call` command")
                .with_tools(handles.iter().map(ToolHandle::spec)),
        )
        .with_effective_config(effective);
    let policy = if args.yes {
        ApprovalPolicy::allow_all()
    } else {
        ApprovalPolicy::new()
    };
    let executor = Executor::builder()
        .policy(policy)
        .approver_arc(Arc::new(TerminalApprover))
        .build();
    let result = executor
        .execute(
            &registry.all(),
            ToolCall::new("cli-1", args.name.as_str(), arguments),
            &cfg.context(),
        )
        .await;
    match result.outcome {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            if args.json {
                serde_json::to_writer_pretty(&mut stdout, &out)?;
                writeln!(stdout)?;
            } else {
                write!(stdout, "{}", out.text)?;
                if !out.text.ends_with('\n') {
                    writeln!(stdout)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ToolError::InvalidArguments { violations }) => {
            eprintln!("error: invalid arguments for `{}`:", args.name);
            for v in &violations {
                let at = if v.pointer.is_empty() {
                    "/"
                } else {
                    &v.pointer
                };
                eprintln!("  at {at}: {}", v.message);
            }
            if let Some(tool) = registry.get(&args.name) {
                eprintln!("{}", describe_parameters(tool.spec()));
            }
            Ok(ExitCode::from(EXIT_USAGE))
        }
        Err(err) => {
            eprintln!("error: {err}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `expected arguments:` and one line per property, required ones marked.
fn describe_parameters(spec: &ToolSpec) -> String {
    let required: Vec<&str> = spec.parameters["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut text = format!("expected arguments of `{}`:", spec.name);
    let Some(props) = spec.parameters["properties"].as_object() else {
        text.push_str(" none");
        return text;
    };
    if props.is_empty() {
        text.push_str(" none");
    }
    for (name, schema) in props {
        let kind = schema_kind(schema);
        let need = if required.contains(&name.as_str()) {
            ", required"
        } else {
            ""
        };
        let doc = schema["description"].as_str().map(first_line).unwrap_or("");
        text.push_str(&format!("\n  {name} ({kind}{need}) {doc}"));
    }
    text
}

fn schema_kind(schema: &Value) -> String {
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(ToString::to_string).collect();
        return format!("one of {}", values.join(", "));
    }
    if let Some(variants) = schema["oneOf"].as_array() {
        let values: Vec<String> = variants
            .iter()
            .filter_map(|v| v.get("const").or_else(|| v["enum"].get(0)))
            .map(ToString::to_string)
            .collect();
        if !values.is_empty() {
            return format!("one of {}", values.join(", "));
        }
    }
    match &schema["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_owned(),
    }
}

/// What `config` shows for the CLI: the tool settings and toolbelt/provider environment, redacted.
fn effective_config(
    workspace: &Workspace,
    shell: &ShellConfig,
    http: &HttpConfig,
) -> EffectiveConfig {
    let (hosts, nets) = http.allowed();
    let env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            ["TOOLBELT_", "OPENAI_", "ANTHROPIC_"]
                .iter()
                .any(|p| k.starts_with(p))
        })
        .collect();
    EffectiveConfig::new(json!({
        "workspace": {"root": workspace.root(), "max_read_bytes": workspace.max_read_bytes()},
        "shell": {
            "env_allow": shell.env_allow,
            "default_timeout_secs": shell.default_timeout.as_secs(),
            "sandbox": {
                "mode": shell.sandbox.mode.as_str(),
                "network": shell.sandbox.allow_network,
                "support": toolbelt_tools::sandbox::probe().summary(),
            },
            "max_timeout_secs": shell.max_timeout.as_secs(),
            "max_output_bytes": shell.max_output_bytes,
        },
        "http": {
            "allow_hosts": hosts,
            "allow_nets": nets,
            "max_response_bytes": http.max_response_bytes,
            "max_redirects": http.max_redirects,
            "default_timeout_secs": http.default_timeout.as_secs(),
        },
        "environment": env,
    }))
}

/// Asks on the terminal whether a call that needs approval may run.
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalResponse> {
        Box::pin(async move {
            let args = serde_json::to_string_pretty(&request.call.arguments)
                .unwrap_or_else(|_| request.call.arguments.to_string());
            eprint!(
                "`{}` ({}) needs approval. Arguments:\n{args}\nAllow this call? [y/N] ",
                request.spec.name,
                effect(&request.spec)
            );
            let _ = std::io::stderr().flush();
            let line = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await;
            match line {
                Ok(Ok(answer)) if matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") => {
                    ApprovalResponse::Approve
                }
                _ => ApprovalResponse::Reject(
                    "the user did not approve the call at the terminal".to_owned(),
                ),
            }
        })
    }
}
