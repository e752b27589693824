//! Answers that narrate a tool call instead of making it ("I will use
//! `file_read` to read hello.txt"), which small models give as their final
//! answer. Detection is deliberately narrow: an offered tool's name in a
//! first-person statement of intent, or written out as a call with arguments.

/// First-person intent, lowercase, as it opens a narration. A sentence that
/// holds one of these before an offered tool's name narrates a call.
pub(crate) const INTENT: [&str; 24] = [
    "i will",
    "i'll",
    "i’ll",
    "i am going to",
    "i'm going to",
    "i’m going to",
    "i am about to",
    "i'm about to",
    "i shall",
    "i need to",
    "let me",
    "let's",
    "let’s",
    "let us",
    "we will",
    "we'll",
    "我将",
    "我会",
    "我要",
    "让我",
    "我来",
    "我需要",
    "我们将",
    "我先",
];

/// Words of using a tool, one of which must come between the intent and the
/// tool's name ("let me call `file_read`", "I'll read it with `file_read`"),
/// so "let me sum up: `list_dir` shows three files" is no narration.
const USE_WORDS: [&str; 12] = [
    "use", "call", "run", "invoke", "execute", "using", "with", "via", "through", "try", "calling",
    "employ",
];

/// The same for Chinese, matched as substrings (no spaces between words).
const USE_WORDS_ZH: [&str; 6] = ["使用", "调用", "用", "运行", "执行", "通过"];

/// Sentences holding these offer or ask rather than narrate ("let me know if
/// I should use `file_write`", "if you want, I'll use …").
const NOT_NARRATION: [&str; 9] = [
    "let me know",
    "if you",
    "if needed",
    "would you like",
    "do you want",
    "shall i",
    "should i",
    "如果",
    "需要的话",
];

/// The offered tool an answer narrates calling instead of calling it, if any.
///
/// `offered` are the names of the tools sent with the request. A name counts
/// as a whole word only (`file_read`, not `my_file_reader`). The answer
/// narrates a call when a sentence holds an [`INTENT`] phrase, then a word of
/// using ("use", "call", "with", "使用", ...), then the name, and does not end
/// in a question nor offer or ask something
/// ("Let me know if I should use `file_write`."), or when the name is written
/// as a call with arguments (`file_read({"path": "a.txt"})`).
pub(crate) fn narrated_tool(text: &str, offered: &[String]) -> Option<String> {
    let lower = text.to_lowercase();
    offered.iter().find_map(|name| {
        let needle = name.to_lowercase();
        let found = word_occurrences(&lower, &needle)
            .any(|at| written_as_call(&lower[at + needle.len()..]) || intends(&lower, at));
        found.then(|| name.clone())
    })
}

/// Byte offsets where `name` occurs as a whole word (not inside a longer identifier).
fn word_occurrences<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(name).filter_map(move |(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        (!before.is_some_and(is_word) && !after.is_some_and(is_word)).then_some(at)
    })
}

/// Whether the text right after a tool's name is an argument list (`({"…`, `(path=…`).
fn written_as_call(rest: &str) -> bool {
    let rest = rest.trim_start_matches('`');
    let Some(args) = rest.strip_prefix('(') else {
        return false;
    };
    let args = args.trim_start();
    args.starts_with(['{', '"', '\''])
        || args.split_once('=').is_some_and(|(key, _)| {
            !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

/// Whether the sentence around byte `at` states an intent to use the tool there.
fn intends(text: &str, at: usize) -> bool {
    let start = text[..at]
        .char_indices()
        .rev()
        .find(|&(i, c)| ends_sentence(text, i, c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = text[at..]
        .char_indices()
        .find(|&(i, c)| ends_sentence(text, at + i, c))
        .map_or(text.len(), |(i, _)| at + i);
    let before = &text[start..at];
    let sentence = &text[start..end];
    let is_question = text[end..].starts_with(['?', '？']) || sentence.contains("吗");
    let Some(after_intent) = INTENT
        .iter()
        .filter_map(|p| before.find(p).map(|i| &before[i + p.len()..]))
        .max_by_key(|rest| rest.len())
    else {
        return false;
    };
    let uses = after_intent
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| USE_WORDS.contains(&word))
        || USE_WORDS_ZH.iter().any(|w| after_intent.contains(w));
    uses && !is_question && !NOT_NARRATION.iter().any(|p| sentence.contains(p))
}

/// Whether `c` at byte `i` ends a sentence: `!`, `?`, a line break, Chinese
/// full stops, or a `.` followed by a space or the end (not the one in `a.txt`).
fn ends_sentence(text: &str, i: usize, c: char) -> bool {
    match c {
        '!' | '?' | '\n' | '。' | '！' | '？' | '；' => true,
        '.' => text[i + 1..].chars().next().is_none_or(char::is_whitespace),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn narrated(text: &str) -> Option<String> {
        let offered = ["file_read".to_owned(), "list_dir".to_owned()];
        narrated_tool(text, &offered)
    }

    #[test]
    fn narrations_of_an_offered_tool_are_found() {
        let said = [
            "I will use `file_read` to read hello.txt.",
            "Let me call file_read on hello.txt",
            "Sure! I'll read the file with the file_read tool.",
            "To answer this, I am going to use list_dir first.",
            "我将使用 `file_read` 读取 hello.txt 文件。",
            "让我调用 list_dir 查看目录",
            "file_read({\"path\": \"hello.txt\"})",
            "`file_read`(path=\"hello.txt\")",
        ];
        let found: Vec<Option<String>> = said.iter().map(|t| narrated(t)).collect();
        let expected = [
            "file_read",
            "file_read",
            "file_read",
            "list_dir",
            "file_read",
            "list_dir",
            "file_read",
            "file_read",
        ];
        assert_eq!(found, expected.map(|n| Some(n.to_owned())));
    }

    #[test]
    fn answers_that_merely_mention_a_tool_are_not_narrations() {
        let said = [
            "hello.txt says hello. I used file_read to get it.",
            "You can use file_read to read files.",
            "Let me know if I should use file_read again.",
            "Shall I use list_dir to look at the folder?",
            "If you want, I'll use file_read on the other file too.",
            "I will answer now: the folder holds 3 files.",
            "I will check my_file_reader later.",
            "Let me sum up: list_dir shows three files.",
            "文件内容是 hello。我使用了 file_read。",
            "The function file_read() reads a file.",
        ];
        let found: Vec<Option<String>> = said.iter().map(|t| narrated(t)).collect();
        assert_eq!(found, vec![None; said.len()]);
    }
}
