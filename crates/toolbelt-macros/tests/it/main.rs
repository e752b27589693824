//! Integration tests of `#[tool]`: one binary, one module per topic.

// Helpers outside `#[test]` fns (hand-written `Tool`s, fixtures) unwrap too.
#![allow(clippy::unwrap_used)]

// Keep the fixture crate linked: its tools are only reached through `inventory`.
use toolbelt_testkit as _;

mod attributes;
mod discovery;
mod equivalence;
mod execute;
mod schema;
mod ui;
