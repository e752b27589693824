//! Integration tests of toolbelt-llm: real HTTP clients against local
//! scripted servers, configuration, schema normalisation and text parsing.

// Test helpers outside `#[test]` functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod config;
mod failures;
mod names;
mod normalize;
mod openai;
mod parse;
mod properties;
mod support;
