//! `toolbelt tools import openapi FILE|URL`: an OpenAPI document's operations as stored HTTP
//! tools, in the database or through a server.

use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use toolbelt_openapi::{ImportOptions, apply, convert};

use super::remote::{Backend, Call, Target};

/// What `toolbelt tools import` reads.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ImportCommand {
    /// Store each operation of an OpenAPI 3.0/3.1 document (JSON or YAML) as an HTTP tool;
    /// a re-import makes new versions of the changed operations only.
    Openapi(OpenapiArgs),
}

/// `tools import openapi`.
#[derive(Debug, clap::Args)]
pub(crate) struct OpenapiArgs {
    /// The document: a file, or an http:// or https:// URL.
    #[arg(value_name = "FILE|URL")]
    source: String,
    /// Put before every tool name and, upper-cased, before every secret name.
    #[arg(long, default_value = "")]
    prefix: String,
    /// Only operations with one of these tags (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "TAG,...")]
    tags: Vec<String>,
    /// Only these operations: operationId, `METHOD /path` or tool name (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "OP,...")]
    operations: Vec<String>,
    /// Where requests go, instead of the document's `servers`.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Say what would change; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Who is making the change (default: $USER).
    #[arg(long = "by", value_name = "NAME")]
    by: Option<String>,
    #[command(flatten)]
    target: Target,
}

pub(crate) async fn run(cmd: ImportCommand) -> anyhow::Result<ExitCode> {
    let ImportCommand::Openapi(args) = cmd;
    let (text, source_url) = read(&args.source).await?;
    let by = args
        .by
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "cli".to_owned());
    let report = match args.target.connect().await? {
        Backend::Local(store) => {
            let mut options = ImportOptions::default()
                .with_prefix(args.prefix.clone())
                .with_tags(args.tags.clone())
                .with_operations(args.operations.clone());
            if let Some(url) = &args.base_url {
                options = options.with_base_url(url.clone());
            }
            if let Some(url) = &source_url {
                options = options.with_source_url(url.clone());
            }
            let imported = convert(&text, &options)?;
            serde_json::to_value(apply(&store, &imported, &by, args.dry_run).await?)?
        }
        Backend::Remote(api) => {
            let body = json!({"document": text, "prefix": args.prefix, "tags": args.tags,
                "operations": args.operations, "base_url": args.base_url,
                "source_url": source_url, "dry_run": args.dry_run});
            api.send(Call::post(&["tools", "import", "openapi"]).json(body))
                .await?
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", human(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// The document's text, and its URL when it was fetched.
async fn read(source: &str) -> anyhow::Result<(String, Option<String>)> {
    if source.starts_with("http://") || source.starts_with("https://") {
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .context("could not build the HTTP client")?;
        let response = http
            .get(source)
            .send()
            .await
            .with_context(|| format!("could not fetch {source}"))?;
        let status = response.status();
        if !status.is_success() {
            bail!("{source} answered HTTP {status}");
        }
        let text = response
            .text()
            .await
            .with_context(|| format!("{source}: the answer broke off"))?;
        return Ok((text, Some(source.to_owned())));
    }
    let text =
        std::fs::read_to_string(source).with_context(|| format!("cannot read `{source}`"))?;
    Ok((text, None))
}

/// The report in lines: counts, then each tool and skip, then the secrets to declare.
fn human(report: &Value) -> String {
    let list = |key: &str| report[key].as_array().cloned().unwrap_or_default();
    let (created, updated, unchanged, skipped) = (
        list("created"),
        list("updated"),
        list("unchanged"),
        list("skipped"),
    );
    let dry = report["dry_run"] == json!(true);
    let mut out = format!(
        "{}{} created, {} updated, {} unchanged, {} skipped\n",
        if dry {
            "dry run (nothing written): "
        } else {
            ""
        },
        created.len(),
        updated.len(),
        unchanged.len(),
        skipped.len()
    );
    for name in &created {
        out.push_str(&format!(
            "  created   {}\n",
            name.as_str().unwrap_or_default()
        ));
    }
    for u in &updated {
        let changed: Vec<&str> = u["changed"]
            .as_array()
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push_str(&format!(
            "  updated   {} (version {}: {})\n",
            u["name"].as_str().unwrap_or_default(),
            u["version"],
            changed.join(", ")
        ));
    }
    for s in &skipped {
        out.push_str(&format!(
            "  skipped   {} at `{}`: {}\n",
            s["operation"].as_str().unwrap_or_default(),
            s["pointer"].as_str().unwrap_or_default(),
            s["reason"].as_str().unwrap_or_default()
        ));
    }
    let secrets: Vec<String> = list("secrets")
        .iter()
        .filter_map(Value::as_str)
        .map(|s| format!("TOOLBELT_SECRET_{s}"))
        .collect();
    if !secrets.is_empty() {
        out.push_str(&format!(
            "the tools send secrets: declare {}\n",
            secrets.join(", ")
        ));
    }
    out
}
