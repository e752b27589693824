use toolbelt_macros::tool;

/// Destructures a tuple.
#[tool]
async fn add((a, b): (i64, i64)) -> i64 {
    a + b
}

fn main() {}
