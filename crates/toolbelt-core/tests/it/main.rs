//! Integration tests of toolbelt-core's public API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod definitions;
mod executor;
mod executor_hardening;
mod properties;
mod validation;
