//! Integration tests of the agent runtime, against an in-process scripted provider.
// Test helpers outside #[test] fns unwrap too; `allow-unwrap-in-tests` does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_tool;
mod approval;
mod dto;
mod guards;
mod limits;
mod narration;
mod nested_permits;
mod routing;
mod session;
mod skills;
mod streaming;
mod support;
mod tool_use;
