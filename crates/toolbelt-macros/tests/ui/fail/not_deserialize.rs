use toolbelt_macros::tool;

struct Opaque;

/// Its parameter type is not `Deserialize`.
#[tool]
async fn take(value: Opaque) {
    let _ = value;
}

fn main() {}
