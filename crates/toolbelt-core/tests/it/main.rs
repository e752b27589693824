//! Integration tests of toolbelt-core's public API.

mod definitions;
mod executor;
mod validation;
