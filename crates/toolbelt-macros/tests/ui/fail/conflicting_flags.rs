use toolbelt_macros::tool;

/// Both read-only and mutating.
#[tool(read_only, mutating)]
async fn touch() {}

fn main() {}
