//! Test fixtures shared by toolbelt crates (dev-only).
