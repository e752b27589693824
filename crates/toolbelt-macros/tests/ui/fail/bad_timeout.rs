use toolbelt_macros::tool;

/// The unit is spelt out.
#[tool(timeout = "30 seconds")]
async fn slow() {}

fn main() {}
