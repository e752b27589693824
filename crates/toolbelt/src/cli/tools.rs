//! `toolbelt tools`: list the tools a process sees (compiled, stored, imported from MCP
//! servers) or a server sees, and call one.

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

use toolbelt_server::api::tools::{ToolSummary, source_matches};

use super::remote::{Api, ApiError, Backend, Call, Target};

/// Exit code for arguments that are not valid JSON or break the tool's schema.
const EXIT_USAGE: u8 = 2;

/// Subcommands of `toolbelt tools`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ToolsCommand {
    /// List every tool (compiled, stored, imported from MCP servers), grouped by tag, with its
    /// source, effect and approval default.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Call one tool (compiled, stored or imported) with JSON arguments and print its output.
    Call(CallArgs),
    /// Tools stored in the database (add, update, rm, enable, disable, show, versions, rollback, why).
    #[command(flatten)]
    Stored(super::stored_tools::StoredToolsCommand),
}

/// Where the tools come from: the database (the default one unless `--database-url`), a
/// running server (`--server`), MCP servers (`--mcp-config`), or only this binary.
#[derive(Debug, clap::Args)]
pub(crate) struct Sources {
    #[command(flatten)]
    target: Target,
    /// Also the tools of the MCP servers in this file (`{"mcpServers": {...}}`), started for
    /// the command and stopped after it.
    #[arg(long, value_name = "FILE", conflicts_with = "server")]
    mcp_config: Option<PathBuf>,
    /// Only the tools compiled into this binary: no database (a `--database-url` or
    /// `TOOLBELT_DATABASE_URL` is then ignored).
    #[arg(long, conflicts_with = "server")]
    no_store: bool,
}

/// Arguments of `toolbelt tools list`.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    sources: Sources,
    /// Only tools in this group.
    #[arg(long)]
    tag: Option<String>,
    /// Only tools of this kind: function, agent, mcp or meta.
    #[arg(long)]
    kind: Option<String>,
    /// Only tools from this source: compiled, http, command, agent, meta, mcp (every MCP
    /// server) or mcp:SERVER.
    #[arg(long)]
    source: Option<String>,
    /// Only tools whose name or description contains this text (case-insensitive).
    #[arg(long, short = 'q', value_name = "TEXT")]
    query: Option<String>,
    /// Print JSON: the groups, and every tool's spec (with its parameter schema) and `source`.
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
    #[command(flatten)]
    sources: Sources,
    /// Workspace root the file, shell and git tools are confined to (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "server")]
    root: Option<PathBuf>,
    /// Allow every call without asking (otherwise tools needing approval ask on the terminal).
    #[arg(long, short = 'y', conflicts_with = "server")]
    yes: bool,
    /// Print the whole output as JSON (text, structured result, truncation).
    #[arg(long)]
    json: bool,
    /// Let the HTTP tools reach this host name even if it resolves to an internal address (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", conflicts_with = "server")]
    allow_hosts: Vec<String>,
    /// Let the HTTP tools reach this address range, e.g. 127.0.0.1/32 (repeatable).
    #[arg(long = "allow-net", value_name = "CIDR", conflicts_with = "server")]
    allow_nets: Vec<String>,
    /// How `shell_exec` commands are confined: `read-only`, `workspace-write` (default) or `full-access`.
    #[arg(long, value_name = "MODE", default_value = "workspace-write")]
    sandbox: SandboxMode,
    /// Let `shell_exec` commands use the network (denied by default).
    #[arg(long, conflicts_with = "server")]
    sandbox_network: bool,
}

pub(crate) async fn run(cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ToolsCommand::Stored(cmd) => super::stored_tools::run(cmd).await,
        ToolsCommand::List(args) => list(args).await,
        ToolsCommand::Call(args) => call(args).await,
    }
}

/// The tools a command sees in this process: the compiled ones, the database's stored tools
/// and the tools of `--mcp-config`'s servers, in one registry.
struct Local {
    registry: Arc<Registry>,
    /// The live registry, when a database was opened: it knows where stored tools come from.
    db: Option<toolbelt_host::Database>,
    /// Builds the agents that agent tools run (held for the command).
    _agents: Option<toolbelt_host::AgentFactory>,
    /// Held for the command: dropping a client stops its MCP server.
    _mcp: Vec<toolbelt_mcp::McpClient>,
}

impl Local {
    /// Where `spec` comes from (`compiled`, `http`, `command`, `agent`, `mcp:SERVER`, `meta`).
    fn source(&self, spec: &ToolSpec) -> String {
        toolbelt_host::tool_origin(self.db.as_ref().map(|d| d.live.as_ref()), spec)
    }
}

/// Opens what `sources` names in this process. The default database is read only when it
/// exists (a listing does not create it); a `--database-url` is opened as every command opens it.
async fn open_local(sources: &Sources, by: &str) -> anyhow::Result<Local> {
    let use_db = !sources.no_store
        && match &sources.target.db.url {
            Some(_) => true,
            None => {
                let url = sources.target.db.url()?;
                toolbelt_host::paths::sqlite_file(&url).is_none_or(|f| f.exists())
            }
        };
    let (registry, db, agents) = if use_db {
        let compiled =
            toolbelt_core::discovered_tools().context("could not collect the linked tools")?;
        let store = sources.target.db.open().await?;
        let db = toolbelt_host::load(
            store,
            compiled,
            by,
            toolbelt_tools::declarative::Secrets::from_env(),
        )
        .await
        .context("loading the stored tools")?;
        // Agent tools build their agent through this factory (its provider from the environment).
        let agents = db.agent_factory().build();
        (db.live.shared_registry(), Some(db), Some(agents))
    } else {
        let registry = Registry::discovered().context("could not collect the linked tools")?;
        (Arc::new(registry), None, None)
    };
    let mcp = match &sources.mcp_config {
        Some(path) => super::mcp::import(&registry, path, std::path::Path::new(".")).await?,
        None => Vec::new(),
    };
    Ok(Local {
        registry,
        db,
        _agents: agents,
        _mcp: mcp,
    })
}

/// Whether `tool` passes the filters, as `GET /api/v1/tools` applies them.
fn wanted(tool: &ToolSummary, args: &ListArgs) -> bool {
    let needle = args.query.as_deref().map(str::to_lowercase);
    args.tag
        .as_deref()
        .is_none_or(|t| tool.tags.iter().any(|g| g == t))
        && args.kind.as_deref().is_none_or(|k| tool.kind == k)
        && args
            .source
            .as_deref()
            .is_none_or(|wanted| source_matches(&tool.source, wanted))
        && needle.as_deref().is_none_or(|n| {
            tool.name.to_lowercase().contains(n) || tool.description.to_lowercase().contains(n)
        })
}

async fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let (rows, tools_json) = match &args.sources.target.server {
        Some(_) => {
            let Backend::Remote(api) = args.sources.target.connect().await? else {
                unreachable!("--server connects to the server")
            };
            remote_rows(&api, &args).await?
        }
        None => {
            let local = open_local(&args.sources, "toolbelt tools ls").await?;
            let mut rows = Vec::new();
            let mut specs = Vec::new();
            let mut handles = local.registry.list();
            handles.sort_by(|a, b| a.name().as_str().cmp(b.name().as_str()));
            for handle in handles {
                let row = ToolSummary::of(handle.spec(), local.source(handle.spec()));
                if wanted(&row, &args) {
                    let mut spec = serde_json::to_value(handle.spec())?;
                    spec["source"] = json!(row.source);
                    specs.push(spec);
                    rows.push(row);
                }
            }
            (rows, specs)
        }
    };
    let groups = groups(&rows);
    let mut out = std::io::stdout().lock();
    if args.json {
        let doc = json!({
            "groups": groups
                .iter()
                .map(|(g, tools)| (g.clone(), tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>()))
                .collect::<BTreeMap<_, _>>(),
            "reserved_groups": RESERVED_GROUPS,
            "tools": tools_json,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        writeln!(out, "no tools match")?;
        return Ok(ExitCode::SUCCESS);
    }
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let source_width = rows.iter().map(|r| r.source.len()).max().unwrap_or(0);
    for (i, (group, tools)) in groups.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{group} ({})", tools.len())?;
        for row in tools {
            let approval = if row.needs_approval { "asks" } else { "auto" };
            let effect = if row.read_only {
                "read-only"
            } else {
                "mutating"
            };
            writeln!(
                out,
                "  {:width$}  {:source_width$}  {effect:9}  {approval}  {}",
                row.name,
                row.source,
                first_line(&row.description),
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

/// The server's tools through `GET /api/v1/tools`, every page, with the filters sent along.
async fn remote_rows(api: &Api, args: &ListArgs) -> anyhow::Result<(Vec<ToolSummary>, Vec<Value>)> {
    let mut rows = Vec::new();
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = api
            .send(
                Call::get(&["tools"])
                    .query("limit", Some("5000".to_owned()))
                    .query("tag", args.tag.clone())
                    .query("kind", args.kind.clone())
                    .query("source", args.source.clone())
                    .query("q", args.query.clone())
                    .query("cursor", cursor.take()),
            )
            .await?;
        let page_items = page["items"].as_array().cloned().unwrap_or_default();
        for item in page_items {
            let row: ToolSummary = serde_json::from_value(item)
                .context("the server's answer is not a list of tools")?;
            if args.json {
                // The full spec, as a local listing prints it.
                let mut spec = api.send(Call::get(&["tools", &row.name])).await?;
                spec["source"] = json!(row.source);
                items.push(spec);
            }
            rows.push(row);
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    Ok((rows, items))
}

/// Groups in display order: the built-in groups in their design order, then the others by
/// name, then the untagged tools.
fn groups(rows: &[ToolSummary]) -> Vec<(String, Vec<&ToolSummary>)> {
    let mut by_tag: BTreeMap<&str, Vec<&ToolSummary>> = BTreeMap::new();
    let mut untagged = Vec::new();
    for row in rows {
        if row.tags.is_empty() {
            untagged.push(row);
        }
        for tag in &row.tags {
            by_tag.entry(tag).or_default().push(row);
        }
    }
    let mut groups: Vec<(String, Vec<&ToolSummary>)> = by_tag
        .into_iter()
        .map(|(t, rows)| (t.to_owned(), rows))
        .collect();
    groups.sort_by_key(|(t, _)| {
        (
            BUILTIN_GROUPS
                .iter()
                .position(|g| g == t)
                .unwrap_or(usize::MAX),
            t.clone(),
        )
    });
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

async fn call(args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments: Value = match serde_json::from_str(&args.args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!(
                "error: the arguments are not valid JSON ({e}); give one JSON object, e.g. '{{\"path\": \"README.md\"}}'"
            );
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if args.sources.target.server.is_some() {
        return call_remote(&args, arguments).await;
    }
    let local = open_local(&args.sources, "toolbelt tools call").await?;
    let registry = &local.registry;
    let workspace = match &args.root {
        Some(root) => Workspace::new(root),
        None => Workspace::current_dir(),
    }
    .context("cannot use the workspace root")?;
    // The file tools never touch the database or the secrets file, should they lie here.
    let mut kept = toolbelt_host::paths::KeptData::new().secrets_file_from_env();
    if local.db.is_some() {
        kept = kept.database(args.sources.target.db.url()?);
    }
    let workspace = workspace.with_reserved(kept.reserved_paths());
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

/// `tools call --server`: `POST /api/v1/tools/{name}/call`; the server's policy, workspace
/// and allow-lists apply.
async fn call_remote(args: &CallArgs, arguments: Value) -> anyhow::Result<ExitCode> {
    let Backend::Remote(api) = args.sources.target.connect().await? else {
        unreachable!("--server connects to the server")
    };
    let answer = match api
        .send(Call::post(&["tools", &args.name, "call"]).json(json!({"arguments": arguments})))
        .await
    {
        Ok(answer) => answer,
        Err(e) => {
            if let Some(refused) = e.downcast_ref::<ApiError>()
                && refused.status == reqwest::StatusCode::UNPROCESSABLE_ENTITY
            {
                eprintln!("error: invalid arguments for `{}`: {refused}", args.name);
                return Ok(ExitCode::from(EXIT_USAGE));
            }
            return Err(e);
        }
    };
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut stdout, &answer)?;
        writeln!(stdout)?;
    }
    if answer["ok"] == json!(true) {
        if !args.json {
            let text = answer["text"].as_str().unwrap_or_default();
            write!(stdout, "{text}")?;
            if !text.ends_with('\n') {
                writeln!(stdout)?;
            }
        }
        Ok(ExitCode::SUCCESS)
    } else {
        let message = answer["error"]["message"]
            .as_str()
            .unwrap_or("the tool failed");
        eprintln!("error: {message}");
        Ok(ExitCode::FAILURE)
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
