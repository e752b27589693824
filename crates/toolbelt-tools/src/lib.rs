//! Built-in tools with safe defaults (work in progress).
