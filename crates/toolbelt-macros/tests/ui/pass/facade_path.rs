//! The generated code works through a re-export of the core API, as the
//! `toolbelt` facade provides, named with `crate = "..."`.

mod facade {
    pub use toolbelt_core::*;
}

use toolbelt_macros::tool;

/// Doubles a number.
#[tool(crate = "crate::facade", tags("math"))]
async fn double(n: i64) -> i64 {
    n * 2
}

fn main() {
    use facade::Tool as _;
    assert_eq!(DoubleTool.spec().tags, ["math"]);
}
