//! The `#[tool]` attribute (work in progress).
