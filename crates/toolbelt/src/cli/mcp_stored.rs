//! `toolbelt mcp add|import|ls|rm|enable|disable`: MCP servers stored in the database, which
//! `toolbelt serve` connects (and follows as they change).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use toolbelt_store::Revision;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use toolbelt_host::mcp_servers::check_config;
use toolbelt_mcp::{McpClient, McpConfig};
use toolbelt_store::StoreError;

use super::db::DbArgs;

/// Arguments of `toolbelt mcp add`.
#[derive(Debug, clap::Args)]
pub(crate) struct AddArgs {
    /// The server's name: its tools are named `<name>.<tool>` and tagged `mcp:<name>`.
    name: String,
    /// Streamable HTTP endpoint (instead of a command).
    #[arg(long = "url", value_name = "URL", conflicts_with = "config")]
    server_url: Option<String>,
    /// An HTTP header, `NAME=VALUE` (repeatable); secrets as `{{secret.NAME}}`.
    #[arg(long = "header", value_name = "NAME=VALUE", requires = "server_url")]
    headers: Vec<String>,
    /// Send `Authorization: Bearer` with the value of this secret (environment or secrets file).
    #[arg(long, value_name = "SECRET", requires = "server_url")]
    bearer_token_secret: Option<String>,
    /// An environment variable of the command, `NAME=VALUE` (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Working directory of the command.
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Prefix of the imported tool names (default `<name>.`; "" keeps the server's names).
    #[arg(long, value_name = "PREFIX")]
    prefix: Option<String>,
    /// The whole entry as JSON, in the `mcpServers` shape (instead of the options above).
    #[arg(long, value_name = "JSON")]
    config: Option<String>,
    /// Store it disabled (not connected until `toolbelt mcp enable`).
    #[arg(long)]
    disabled: bool,
    /// Replace the stored server of that name.
    #[arg(long)]
    replace: bool,
    #[command(flatten)]
    db: DbArgs,
    /// The command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Arguments of `toolbelt mcp import`.
#[derive(Debug, clap::Args)]
pub(crate) struct ImportArgs {
    /// An `mcpServers` JSON file (Claude Desktop / Cursor shape).
    file: PathBuf,
    /// Replace stored servers of the same names (otherwise they are left alone).
    #[arg(long)]
    replace: bool,
    #[command(flatten)]
    db: DbArgs,
}

/// Arguments of `toolbelt mcp ls`.
#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    /// Connect to each enabled server and report whether it answers and how many tools it has.
    #[arg(long)]
    check: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArgs,
}

/// Arguments naming one stored server.
#[derive(Debug, clap::Args)]
pub(crate) struct NameArgs {
    /// The server's name.
    name: String,
    #[command(flatten)]
    db: DbArgs,
}

/// `NAME=VALUE` pairs as a map, naming the option of a malformed one.
fn pairs(option: &str, items: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
            _ => bail!("{option} {item:?}: expected NAME=VALUE"),
        })
        .collect()
}

/// The `mcpServers` entry `add` describes.
fn entry(args: &AddArgs) -> anyhow::Result<Value> {
    let mut config = match (&args.config, &args.server_url, args.command.split_first()) {
        (Some(json), None, None) => {
            serde_json::from_str::<Value>(json).context("--config is not valid JSON")?
        }
        (None, Some(url), None) => json!({"url": url}),
        (None, None, Some((command, rest))) => json!({"command": command, "args": rest}),
        (None, None, None) => {
            bail!("say how to reach the server: a command after `--`, --url URL, or --config JSON")
        }
        _ => bail!("give only one of: a command after `--`, --url, --config"),
    };
    let Some(object) = config.as_object_mut() else {
        bail!("--config must be a JSON object (one entry of an mcpServers file)");
    };
    let env = pairs("--env", &args.env)?;
    if !env.is_empty() {
        object.insert("env".to_owned(), json!(env));
    }
    let headers = pairs("--header", &args.headers)?;
    if !headers.is_empty() {
        object.insert("headers".to_owned(), json!(headers));
    }
    if let Some(secret) = &args.bearer_token_secret {
        object.insert(
            "bearerToken".to_owned(),
            json!(format!("{{{{secret.{secret}}}}}")),
        );
    }
    if let Some(cwd) = &args.cwd {
        object.insert("cwd".to_owned(), json!(cwd));
    }
    if let Some(prefix) = &args.prefix {
        object.insert("toolPrefix".to_owned(), json!(prefix));
    }
    Ok(config)
}

/// Stores `config` as `name`: created, or replaced when `replace` (else an error saying so).
async fn put(
    store: &toolbelt_store::Store,
    name: &str,
    config: &Value,
    replace: bool,
) -> anyhow::Result<&'static str> {
    if let Err(problem) = check_config(name, config) {
        bail!(
            "MCP server `{name}`: {}{}",
            if problem.pointer.is_empty() {
                String::new()
            } else {
                format!("{}: ", problem.pointer)
            },
            problem.message
        );
    }
    match store.mcp_servers().get(name).await {
        Ok(existing) if replace => {
            store
                .mcp_servers()
                .update(name, config, Revision::Exactly(existing.revision))
                .await?;
            Ok("replaced")
        }
        Ok(_) => bail!("MCP server `{name}` is already stored; pass --replace to replace it"),
        Err(StoreError::NotFound { .. }) => {
            store.mcp_servers().create(name, config).await?;
            Ok("added")
        }
        Err(e) => Err(e.into()),
    }
}

pub(crate) async fn add(args: AddArgs) -> anyhow::Result<ExitCode> {
    let config = entry(&args)?;
    let store = args.db.open().await?;
    let done = put(&store, &args.name, &config, args.replace).await?;
    if args.disabled {
        store
            .mcp_servers()
            .set_enabled(&args.name, false, Revision::Any)
            .await?;
    }
    println!(
        "{done} MCP server `{}`{}; `toolbelt serve` on this database connects it",
        args.name,
        if args.disabled { " (disabled)" } else { "" }
    );
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let file = McpConfig::from_file(&args.file)?;
    let store = args.db.open().await?;
    let mut failed = false;
    for (name, server) in &file.servers {
        let mut server = server.clone();
        // A stored server runs in the server's own sandbox: the file's is the file's host's.
        if server.sandbox.take().is_some() {
            eprintln!(
                "note: `{name}`: its `sandbox` key is not stored (a stored server runs in the \
                 serving host's sandbox; see `mcp_read_paths`)"
            );
        }
        let config = serde_json::to_value(&server)?;
        match put(&store, name, &config, args.replace).await {
            Ok(done) => {
                if server.disabled {
                    store
                        .mcp_servers()
                        .set_enabled(name, false, Revision::Any)
                        .await?;
                }
                println!("{done} `{name}`");
            }
            Err(e) => {
                eprintln!("skipped `{name}`: {e}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub(crate) async fn ls(args: LsArgs) -> anyhow::Result<ExitCode> {
    let store = args.db.open().await?;
    let servers = store.mcp_servers().list().await?;
    // Every enabled server is checked at once, all within one timeout: N servers that are
    // down cost one wait, not N.
    let deadline = tokio::time::Instant::now() + CHECK_TIMEOUT;
    let mut checks = tokio::task::JoinSet::new();
    if args.check {
        for (at, server) in servers.iter().enumerate().filter(|(_, s)| s.enabled) {
            let (name, config) = (server.name.clone(), server.config.clone());
            checks.spawn(async move { (at, check(&name, &config, deadline).await) });
        }
    }
    let mut health: Vec<Value> = servers
        .iter()
        .map(|s| {
            if s.enabled {
                json!({"state": "not_checked"})
            } else {
                json!({"state": "disabled"})
            }
        })
        .collect();
    while let Some(done) = checks.join_next().await {
        let (at, checked) = done.context("checking an MCP server")?;
        health[at] = checked;
    }
    let all_up = !args.check
        || health
            .iter()
            .zip(&servers)
            .all(|(h, s)| !s.enabled || h["state"] == "up");
    let rows: Vec<Value> = servers
        .into_iter()
        .zip(health)
        .map(|(server, health)| {
            json!({
                "name": server.name, "enabled": server.enabled, "revision": server.revision,
                "config": server.config, "health": health,
            })
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
    } else if rows.is_empty() {
        writeln!(
            out,
            "no MCP servers stored (add one with `toolbelt mcp add NAME -- COMMAND ...`)"
        )?;
    } else {
        for row in &rows {
            let config = &row["config"];
            let target = config["url"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| {
                    let command = config["command"].as_str()?;
                    let args: Vec<&str> = config["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    Some(format!("{command} {}", args.join(" ")).trim().to_owned())
                })
                .unwrap_or_default();
            let health = &row["health"];
            let state = match (health["state"].as_str(), health["tools"].as_u64()) {
                (Some("up"), Some(n)) => format!("up, {n} tools"),
                (Some("down"), _) => format!("down: {}", health["error"].as_str().unwrap_or("")),
                (Some(state), _) => state.replace('_', " "),
                (None, _) => String::new(),
            };
            writeln!(
                out,
                "{}  [{state}]  {target}",
                row["name"].as_str().unwrap_or("")
            )?;
        }
    }
    Ok(if all_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// How long `mcp ls --check` waits for all the servers together.
const CHECK_TIMEOUT: Duration = Duration::from_secs(15);

/// Connects to one stored server (secrets from the environment) and reports what it answered
/// by `deadline` (at once when it cannot be started or refuses the credentials).
async fn check(name: &str, config: &Value, deadline: tokio::time::Instant) -> Value {
    let config = match check_config(name, config) {
        Ok(config) => config,
        Err(p) => {
            return json!({"state": "invalid", "error": format!("{}: {}", p.pointer, p.message)});
        }
    };
    let config = match toolbelt_host::mcp_servers::resolve_secrets(
        &config,
        &toolbelt_tools::declarative::Secrets::from_env(),
    ) {
        Ok(config) => config,
        Err(e) => return json!({"state": "invalid", "error": e.to_string()}),
    };
    // A stored record may come from an admin token: its process runs in the command sandbox.
    let client = match McpClient::builder(name, config)
        .spawner(toolbelt_host::mcp_servers::cli_spawner())
        .start()
    {
        Ok(client) => client,
        Err(e) => return json!({"state": "down", "error": e.to_string()}),
    };
    let wait = deadline.saturating_duration_since(tokio::time::Instant::now());
    let health = match client.ready(wait).await {
        Ok(()) => json!({"state": "up", "tools": client.tools().len()}),
        Err(e) => json!({"state": "down", "error": e.to_string()}),
    };
    client.shutdown();
    health
}

pub(crate) async fn rm(args: NameArgs) -> anyhow::Result<ExitCode> {
    let store = args.db.open().await?;
    store
        .mcp_servers()
        .delete(&args.name, Revision::Any)
        .await?;
    println!("removed MCP server `{}`", args.name);
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn set_enabled(args: NameArgs, enabled: bool) -> anyhow::Result<ExitCode> {
    let store = args.db.open().await?;
    store
        .mcp_servers()
        .set_enabled(&args.name, enabled, Revision::Any)
        .await?;
    println!(
        "MCP server `{}` {}",
        args.name,
        if enabled { "enabled" } else { "disabled" }
    );
    Ok(ExitCode::SUCCESS)
}
