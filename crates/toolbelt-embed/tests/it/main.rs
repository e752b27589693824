//! Integration tests of toolbelt-embed.

mod use_m3;
