//! Integration tests of toolbelt-embed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bert;
mod use_m3;
