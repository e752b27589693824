//! `toolbelt tools` (being built).

use std::process::ExitCode;

/// Subcommands of `toolbelt tools`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ToolsCommand {
    /// List every tool, grouped by tag.
    List,
}

pub(crate) async fn run(_cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolbelt tools` is not available in this build yet")
}
