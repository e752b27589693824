//! An answer that shows a file's content instead of saving it: Qwen2.5-Coder-1.5B, asked
//! to "Write a short README.md for this folder", printed a README and called no tool.

/// The file `input` asks for, when `answer` shows content (a fenced block or a Markdown
/// heading) rather than saying it was saved: the first path-like word with an extension
/// (`README.md`, `docs/todo.txt`).
pub(super) fn unsaved_file(input: &str, answer: &str) -> Option<String> {
    let shows_content = answer.contains("```")
        || answer
            .lines()
            .any(|l| l.trim_start().starts_with("# ") || l.trim_start().starts_with("## "));
    if !shows_content {
        return None;
    }
    input
        .split(|c: char| c.is_whitespace() || "\"'`,;:()[]{}<>，。：；“”‘’（）".contains(c))
        .map(|w| w.trim_end_matches(['.', '?', '!']))
        .find(|w| names_file(w))
        .map(str::to_owned)
}

/// Whether `word` looks like a file name: a stem and an extension of 1–5 letters or digits
/// (`notes.md`, `app.py`), not a number (`1.5`) or a sentence end.
fn names_file(word: &str) -> bool {
    let Some((stem, extension)) = word.rsplit_once('.') else {
        return false;
    };
    let stem_name = stem.rsplit('/').next().unwrap_or(stem);
    !stem_name.is_empty()
        && stem_name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && (1..=5).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::unsaved_file;

    #[test]
    fn content_shown_for_a_named_file_is_unsaved() {
        let readme = "Sure! Here is a short README.md:\n\n# My Project\n\nUses toolbelt.";
        assert_eq!(
            unsaved_file(
                "Write a short README.md for this folder that mentions the word toolbelt.",
                readme
            )
            .as_deref(),
            Some("README.md")
        );
        assert_eq!(
            unsaved_file("创建 docs/todo.txt，写上三项。", "```\n- a\n- b\n- c\n```").as_deref(),
            Some("docs/todo.txt")
        );
    }

    #[test]
    fn answers_without_content_or_requests_without_a_file_are_not() {
        assert_eq!(
            unsaved_file("Write README.md", "I wrote README.md with a heading."),
            None
        );
        assert_eq!(unsaved_file("Write a haiku", "```\nold pond\n```"), None);
        assert_eq!(unsaved_file("Is version 1.5 out?", "# Yes\nIt is."), None);
    }
}
