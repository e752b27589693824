//! A light English suffix stemmer: plurals, `-ing`, `-ed` and a final `e`.
//!
//! It only has to map a word and its common inflections to the same term
//! ("schedules", "scheduled", "scheduling" → `schedul`); the stems need not be words.

/// Stems `w` (lower-case ASCII; other words are left alone) in place.
pub(crate) fn stem(w: &mut String) {
    if !w.is_ascii() || w.len() <= 3 || w.bytes().any(|b| b.is_ascii_digit()) {
        return;
    }
    plural(w);
    if w.len() > 5 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
        undouble(w);
    } else if w.len() > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        w.truncate(w.len() - 2);
        undouble(w);
    }
    if w.len() > 3 && w.ends_with('e') {
        w.truncate(w.len() - 1);
    }
}

fn plural(w: &mut String) {
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        w.truncate(n - 3);
        w.push('y');
    } else if w.ends_with("sses")
        || w.ends_with("shes")
        || w.ends_with("ches")
        || w.ends_with("xes")
        || w.ends_with("zes")
    {
        w.truncate(n - 2);
    } else if w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
        && !w.ends_with("ys")
    {
        w.truncate(n - 1);
    }
}

/// `runn` → `run`, `committ` → `commit`, but `install` and `access` keep theirs.
fn undouble(w: &mut String) {
    let b = w.as_bytes();
    let n = b.len();
    if n >= 3 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z' | b'e' | b'o') {
        w.truncate(n - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    fn s(w: &str) -> String {
        let mut w = w.to_owned();
        stem(&mut w);
        w
    }

    #[test]
    fn inflections_share_a_stem() {
        for group in [
            ["schedule", "schedules", "scheduled", "scheduling"],
            ["commit", "commits", "committed", "committing"],
            ["message", "messages", "messaging", "message"],
            ["create", "creates", "created", "creating"],
        ] {
            let stems: Vec<String> = group.iter().map(|w| s(w)).collect();
            assert!(
                stems.iter().all(|x| x == &stems[0]),
                "{group:?} → {stems:?}"
            );
        }
    }

    #[test]
    fn short_words_and_identifiers_are_kept() {
        assert_eq!(s("git"), "git");
        assert_eq!(s("ec2s"), "ec2s");
        assert_eq!(s("status"), "status");
        assert_eq!(s("address"), "address");
        assert_eq!(s("install"), "install");
    }
}
