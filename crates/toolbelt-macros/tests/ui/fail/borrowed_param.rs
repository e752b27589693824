use toolbelt_macros::tool;

/// Borrows its argument.
#[tool]
async fn echo(text: &str) -> String {
    text.to_owned()
}

fn main() {}
