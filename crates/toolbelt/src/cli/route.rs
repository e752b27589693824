//! `toolbelt route` (being built).

use std::process::ExitCode;

/// Arguments of `toolbelt route`.
#[derive(Debug, clap::Args)]
pub(crate) struct RouteArgs {}

pub(crate) async fn run(_args: RouteArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`toolbelt route` is not available in this build yet")
}
