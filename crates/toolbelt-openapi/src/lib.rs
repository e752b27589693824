#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod apply;
mod convert;
mod document;
mod error;
mod schema;

pub use apply::{ImportReport, Updated, apply};
pub use convert::{ImportOptions, Imported, ImportedTool, MAX_DESCRIPTION, Skipped, convert};
pub use error::ImportError;
pub use schema::{MAX_NODES, MAX_REF_DEPTH};

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Imported>();
    assert_send_sync::<ImportReport>();
    assert_send_sync::<ImportError>();
};
