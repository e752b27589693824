use toolbelt_macros::tool;

/// Generic over its argument.
#[tool]
async fn echo<T: serde::de::DeserializeOwned>(value: T) -> String {
    let _ = value;
    String::new()
}

fn main() {}
