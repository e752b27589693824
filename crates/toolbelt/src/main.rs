//! The `toolbelt` command line: list and call tools, route requests, run agents.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
