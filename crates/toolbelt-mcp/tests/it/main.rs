//! Integration tests of toolbelt-mcp against real MCP peers (the npm reference
//! servers, the Python SDK client, and toolbelt itself). Peers are installed by
//! `scripts/setup-mcp-peers.sh`; a test whose peer is missing prints `skipped: …`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod client;
mod failures;
mod protocol;
mod roundtrip;
mod support;
