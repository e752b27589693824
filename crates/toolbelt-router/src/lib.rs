//! Per-request tool routing: send the LLM only the tools a request needs.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod decision;
mod error;
mod router;

pub use decision::{RouteDecision, RouteOutcome, RouteRequest, ScoredTool};
pub use error::RouteError;
pub use router::{AnyRouter, Router};
