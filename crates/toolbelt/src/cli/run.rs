//! `toolbelt run` (being built).

use std::process::ExitCode;

/// Arguments of `toolbelt run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {}

pub(crate) async fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolbelt run` is not available in this build yet")
}
