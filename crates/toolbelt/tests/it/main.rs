//! Integration tests of the `toolbelt` CLI and facade.

mod cli_route;
mod cli_run;
mod cli_tools;
