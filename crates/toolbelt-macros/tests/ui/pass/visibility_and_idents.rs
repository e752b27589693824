mod tools {
    use toolbelt_macros::tool;

    /// Shouts the text; `mut` and raw identifiers are plain parameters.
    #[tool]
    pub async fn shout(mut text: String, r#type: Option<String>) -> String {
        text.make_ascii_uppercase();
        format!("{text} {}", r#type.unwrap_or_default())
    }
}

fn main() {
    // The struct has the function's visibility, so it is reachable from here.
    let _ = tools::ShoutTool;
    let _ = tools::shout(String::new(), None);
}
