//! toolbelt-server over real HTTP on 127.0.0.1: one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod access;
mod api;
mod attacks;
mod config;
mod import;
mod instances;
mod learning;
mod mcp;
mod mcp_servers;
mod routines;
mod runs;
mod server;
mod skills;
mod stored;
mod support;
