//! Integration tests of the built-in tools, each run through an `Executor`.

// Fixture helpers below are not `#[test]` fns, which clippy's test allowance covers.
#![allow(clippy::unwrap_used, clippy::panic)]

mod config;
mod declarative;
mod declarative_secrets;
mod discovery;
mod file_ops;
mod file_search;
mod git_ops;
mod hardening;
mod human;
mod sandbox;
mod shell;
mod todo;
mod web;

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolbelt_core::{
    ApprovalPolicy, Executor, ToolCall, ToolContext, ToolError, ToolOutput, Toolset,
};
use toolbelt_tools::{BuiltinConfig, Workspace, builtin_tools};

/// A temporary workspace, the built-in tools, and an executor that allows every call.
pub(crate) struct Fx {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) ctx: ToolContext,
    pub(crate) tools: Toolset,
    pub(crate) exec: Executor,
}

impl Fx {
    pub(crate) fn new() -> Self {
        Self::with(|cfg| cfg)
    }

    pub(crate) fn with(edit: impl FnOnce(BuiltinConfig) -> BuiltinConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cfg = edit(BuiltinConfig::new(Workspace::new(dir.path()).unwrap()));
        Self {
            dir,
            ctx: cfg.context(),
            tools: Toolset::from_tools(builtin_tools().unwrap()),
            exec: Executor::builder()
                .policy(ApprovalPolicy::allow_all())
                .build(),
        }
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    pub(crate) fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel)).unwrap()
    }

    pub(crate) async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        self.call_in(&self.ctx, tool, args).await
    }

    pub(crate) async fn call_in(
        &self,
        ctx: &ToolContext,
        tool: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        self.exec
            .execute(&self.tools, ToolCall::new("c1", tool, args), ctx)
            .await
            .outcome
    }

    /// The text of a successful call; panics with the error otherwise.
    pub(crate) async fn ok(&self, tool: &str, args: Value) -> String {
        match self.call(tool, args).await {
            Ok(out) => out.text,
            Err(e) => panic!("{tool} failed: {e}"),
        }
    }

    /// The message of a failed call; panics with the output otherwise.
    pub(crate) async fn err(&self, tool: &str, args: Value) -> ToolError {
        match self.call(tool, args).await {
            Ok(out) => panic!("{tool} should have failed but returned: {}", out.text),
            Err(e) => e,
        }
    }
}

/// A directory outside any fixture workspace, holding `secret.txt`.
pub(crate) fn outside_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("secret.txt"), "s3cret").unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

pub(crate) fn is_denied(err: &ToolError) -> bool {
    matches!(err, ToolError::Denied { .. })
}

pub(crate) fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}
