//! toolbelt-openapi: real documents converted, called over HTTP and written to a store.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod convert;
mod large;
mod store;

/// A test document by file name.
pub(crate) fn data(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
