//! "Did you mean" suggestions for misspelt tool and group names.

/// Up to three candidates closest to `name`, best first.
///
/// A candidate qualifies when it contains `name` (or the reverse), when their
/// Jaro-Winkler similarity is at least 0.8, or when few edits (a quarter of the
/// length, at least one; a swap counts as one) turn one into the other. Case is ignored.
pub(crate) fn nearest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let wanted = name.to_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let lower = c.to_lowercase();
            let mut score = strsim::jaro_winkler(&wanted, &lower);
            let edits = strsim::osa_distance(&wanted, &lower);
            if edits <= (wanted.chars().count() / 4).max(1) {
                score = score.max(0.9 - 0.01 * edits as f64);
            }
            if !wanted.is_empty() && (lower.contains(&wanted) || wanted.contains(&lower)) {
                score = score.max(0.85);
            }
            (score >= 0.8).then_some((score, c))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::nearest;

    #[test]
    fn ranks_close_names_first() {
        let names = ["file_read", "file_write", "shell_exec", "http_request"];
        assert_eq!(nearest("file_reed", names), vec!["file_read", "file_write"]);
        assert_eq!(nearest("shell", names), vec!["shell_exec"]);
        assert!(nearest("weather", names).is_empty());
        assert_eq!(nearest("gti", ["git", "gh"]), vec!["git"]);
    }
}
