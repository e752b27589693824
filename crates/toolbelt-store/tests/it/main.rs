//! Integration tests of toolbelt-store; every test runs on SQLite and, when
//! `TOOLBELT_TEST_PG_URL` is set, on Postgres in a schema of its own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    missing_docs
)]

mod agents;
mod child;
mod live;
mod memory;
mod memory_meaning;
mod records;
mod routines;
mod schema;
mod skills;
mod support;
mod sync;
mod tool_uses;
mod tools;
