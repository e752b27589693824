//! The host crate's integration tests, one binary (SQLite; Postgres too when
//! `TOOLBELT_TEST_PG_URL` is set).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod host;
mod learning;
mod routines;
mod small_models;
mod stored_agents;
mod support;
mod tool_file;
