//! Final answers of small models that do not do what was asked, seen with
//! Qwen2.5-Coder-1.5B: a file's content shown instead of saved ("Write a short README.md
//! for this folder" answered with a printed README), and answers that use nothing the
//! tools returned ("Thank you for confirming the results." after listing a folder).

/// The file `input` asks to write, when `answer` shows content (a fenced block or a
/// Markdown heading) or names that file: the last path-like word with an extension
/// (`README.md`; `host.txt` in "Read config.txt and write the host into host.txt").
/// Said without a call that writes, either is content shown or a write claimed, not done.
pub(super) fn unsaved_file(input: &str, answer: &str) -> Option<String> {
    let file = file_to_write(input)?;
    let shows_content = answer.contains("```")
        || answer
            .lines()
            .any(|l| l.trim_start().starts_with("# ") || l.trim_start().starts_with("## "));
    let names_it = answer.to_lowercase().contains(&file.to_lowercase());
    (shows_content || names_it).then(|| file.to_owned())
}

/// The file a request to create or write one names last (`README.md`; `host.txt` in "Read
/// config.txt and write the host into host.txt").
pub(super) fn file_to_write(input: &str) -> Option<&str> {
    if !asks_to_write(input) {
        return None;
    }
    named_files(input).last().copied()
}

/// Whether `paths` (from [`path_values`]) name `file`: the same file name, in any case.
pub(super) fn names_path<'a>(file: &str, paths: impl IntoIterator<Item = &'a str>) -> bool {
    let name = file.rsplit('/').next().unwrap_or(file).to_lowercase();
    paths
        .into_iter()
        .any(|p| p.rsplit('/').next().unwrap_or(p).to_lowercase() == name)
}

/// The files `input` names, in order: path-like words with an extension (`notes.md`,
/// `data/users.csv`), Chinese punctuation and quotes around them left out.
fn named_files(input: &str) -> Vec<&str> {
    input
        .split(|c: char| c.is_whitespace() || "\"'`,;:()[]{}<>，。：；？！、“”‘’（）".contains(c))
        .map(|w| w.trim_end_matches(['.', '?', '!']))
        .filter(|w| names_file(w))
        .collect()
}

/// The first file `input` names that no call of the run was given as a path (`paths`,
/// from [`path_values`]; a search *for* the name reads nothing), leaving out the file a request to
/// write names last (it need not exist yet): an answer about it comes from nowhere
/// ("List the files, then read notes.md and tell me the secret word" answered with a
/// word made up after the listing).
pub(super) fn unread_file<'a>(
    input: &str,
    paths: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let mut files = named_files(input);
    if asks_to_write(input) {
        files.pop();
    }
    let arguments: Vec<String> = paths.into_iter().map(str::to_lowercase).collect();
    files
        .into_iter()
        .find(|file| {
            let name = file.rsplit('/').next().unwrap_or(file).to_lowercase();
            !arguments.iter().any(|a| a.contains(&name))
        })
        .map(str::to_owned)
}

/// Words of a request to create or write a file ("What does hello.txt say?" names a file
/// and asks for none; "make a summary of notes.md" or "add a line to notes.md" are not
/// requests to write a file whole, and a reminder to write one could replace notes.md).
const WRITE_WORDS: [&str; 5] = ["write", "create", "save", "store", "new file"];
const WRITE_WORDS_ZH: [&str; 5] = ["写入", "写一", "创建", "保存", "新建"];

/// Whether `input` asks for a file to be written: a write verb as a word (English) or
/// anywhere (Chinese).
fn asks_to_write(input: &str) -> bool {
    let lower = input.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
    WRITE_WORDS.iter().any(|w| {
        if w.contains(' ') {
            lower.contains(w)
        } else {
            words.contains(w)
        }
    }) || WRITE_WORDS_ZH.iter().any(|w| input.contains(w))
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

/// Most words of an answer checked for using the results: longer answers say something.
const SHORT_ANSWER_WORDS: usize = 25;

/// Whether a short `answer` holds no word or number of `results` that the request does
/// not hold too: it answers from neither the results nor the request's own words.
pub(super) fn ignores_results<'a>(
    input: &str,
    answer: &str,
    results: impl IntoIterator<Item = &'a str>,
) -> bool {
    if answer.split_whitespace().count() >= SHORT_ANSWER_WORDS {
        return false;
    }
    let asked = words(input);
    let said: Vec<String> = words(answer)
        .into_iter()
        .filter(|w| !asked.contains(w))
        .collect();
    let mut any = false;
    for result in results {
        any = true;
        let found = words(result);
        if said.iter().any(|w| found.contains(w)) {
            return false;
        }
    }
    any
}

/// Words that, beside the name of a tool the run called, describe the call rather than
/// answer: "I used the `list_dir` function … The result was the list of files".
const ABOUT_THE_CALL: [&str; 8] = [
    "function",
    "i used",
    "i called",
    "returned",
    "the result",
    "the output",
    "the tool",
    "the response",
];

/// Phrases that describe what a tool returned rather than say it, tool name or not: "The
/// tool response contains the list of files and folders in the current directory."
const ABOUT_THE_RESULT: [&str; 5] = [
    "tool response",
    "tool result",
    "tool's response",
    "tool's result",
    "the response contains",
];

/// Whether `answer` describes a call of one of `called` (its name and a word about calling
/// it), or what a tool returned, instead of answering.
pub(super) fn describes_call<'a>(answer: &str, called: impl IntoIterator<Item = &'a str>) -> bool {
    let lower = answer.to_lowercase();
    if ABOUT_THE_RESULT.iter().any(|p| lower.contains(p)) {
        return true;
    }
    ABOUT_THE_CALL.iter().any(|w| lower.contains(w))
        && called
            .into_iter()
            .any(|tool| lower.contains(&tool.to_lowercase()))
}

/// English words too common to show that an answer used a result ("I found the text
/// notes.md in the file" shares only "the" with a search result), and the words the file
/// tools' own summaries are made of ("There is no file named data/deploy.yaml" shares only
/// "file" with a search that found what was asked).
const COMMON_WORDS: [&str; 43] = [
    "the", "and", "for", "are", "was", "were", "this", "that", "with", "from", "you", "your",
    "has", "have", "had", "not", "but", "all", "any", "can", "there", "here", "which", "what",
    "these", "those", "they", "them", "its", "into", "than", "then", "file", "files", "folder",
    "folders", "line", "lines", "entry", "entries", "under", "matching", "holds",
];

/// Lower-case words of three or more letters, and numbers, but not the commonest words.
fn words(text: &str) -> std::collections::HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 || w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .filter(|w| !COMMON_WORDS.contains(&w.as_str()))
        .collect()
}

/// Whether `text` holds markup tags and nothing else (`<tools></tools>`, the 1.5B model's
/// whole answer to a request for a search): no answer at all.
pub(super) fn only_tags(text: &str) -> bool {
    let mut rest = String::new();
    let mut in_tag = false;
    let mut tags = 0;
    for c in text.chars() {
        match c {
            '<' if !in_tag => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                tags += 1;
            }
            c if !in_tag => rest.push(c),
            _ => {}
        }
    }
    tags > 0 && !in_tag && rest.trim().is_empty()
}

/// The values a call's `arguments` give under path-like keys (`path`, `paths`, `file`, …):
/// the files it read, searched or wrote.
pub(super) fn path_values(arguments: &serde_json::Value) -> Vec<String> {
    const KEYS: [&str; 6] = ["path", "paths", "file", "files", "file_path", "filename"];
    let Some(object) = arguments.as_object() else {
        return Vec::new();
    };
    KEYS.iter()
        .filter_map(|k| object.get(*k))
        .flat_map(|v| match v {
            serde_json::Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        })
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{
        describes_call, ignores_results, only_tags, path_values, unread_file, unsaved_file,
    };

    #[test]
    fn an_answer_of_tags_alone_is_only_tags() {
        assert!(only_tags("<tools></tools>"));
        assert!(only_tags(" <tool_call>\n</tool_call> "));
        assert!(!only_tags("The file is <b>notes.md</b>"));
        assert!(!only_tags("3 < 4"));
        assert!(!only_tags("plain text"));
    }

    #[test]
    fn an_answer_about_the_call_describes_it() {
        let answer = "To get the directories in the current directory, I used the `list_dir` \
            function with the argument \".\". The result was the list of files and directories.";
        assert!(describes_call(answer, ["list_dir"]));
        assert!(!describes_call(
            "The folders are data/, docs/ and src/.",
            ["list_dir"]
        ));
        assert!(!describes_call(answer, ["file_read"]));
        // list-folders: what the tool returned, described, names no tool.
        assert!(describes_call(
            "The tool response contains the list of files and folders in the current \
             directory. The number of each type of file and folder is also provided.",
            ["list_dir"]
        ));
    }

    #[test]
    fn an_answer_that_uses_no_result_ignores_them() {
        let listing = "src: 4 entries\napp.py  (46 bytes)\nutil.py  (44 bytes)";
        for answer in [
            "Thank you for confirming the results.",
            "The Python files under src are listed above.",
        ] {
            assert!(
                ignores_results("List the Python files under src.", answer, [listing]),
                "{answer}"
            );
        }
        // count-zh: the listing, then a remark.
        assert!(ignores_results(
            "src 目录下有几个 .py 文件？",
            "To list the `.py` files in the `src` directory, you can use the following \
             command:\n\nThank you for using the tool.",
            [listing]
        ));
        for answer in ["app.py and util.py", "There are 2: app.py, util.py."] {
            assert!(
                !ignores_results("List the Python files under src.", answer, [listing]),
                "{answer}"
            );
        }
        // No results, or a long answer: nothing to tell.
        assert!(!ignores_results("Hi", "Hello!", []));
        let long = "word ".repeat(30);
        assert!(!ignores_results("List them", &long, [listing]));
    }

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
    fn a_write_claimed_for_the_last_named_file_is_unsaved() {
        // copy-host: the 1.5B model read config.txt and said it wrote host.txt.
        assert_eq!(
            unsaved_file(
                "Read config.txt and write the host name it uses into a new file host.txt.",
                "The file_read function returned the contents, which were then written to a \
                 new file named \"host.txt\"."
            )
            .as_deref(),
            Some("host.txt")
        );
    }

    #[test]
    fn a_named_file_no_call_mentions_is_unread() {
        // list-read: the 1.5B model listed the folder, then made up a secret word.
        let input = "List the files in this directory, then read notes.md and tell me the \
            secret word it contains.";
        assert_eq!(unread_file(input, ["."]).as_deref(), Some("notes.md"));
        assert_eq!(unread_file(input, ["./notes.md"]), None);
        // A path the call wrote from a folder, in another case: the file name is enough.
        assert_eq!(
            unread_file("How many rows are in data/users.csv?", ["data/Users.csv"]),
            None
        );
        // Searched for by name (`"pattern": "notes.md"`), it was not read.
        let searched = path_values(&serde_json::json!({"path": ".", "pattern": "notes.md"}));
        assert_eq!(
            unread_file(input, searched.iter().map(String::as_str)).as_deref(),
            Some("notes.md")
        );
        let read = path_values(&serde_json::json!({"paths": ["notes.md"], "file": 3}));
        assert_eq!(read, ["notes.md"]);
        assert_eq!(
            unread_file("data/settings.json 里 owner 的名字是什么？", []).as_deref(),
            Some("data/settings.json")
        );
        // The file to write need not exist; the one to read must be read.
        let copy = "Read config.txt and write the host name it uses into a new file host.txt.";
        assert_eq!(unread_file(copy, ["config.txt"]), None);
        assert_eq!(unread_file(copy, []).as_deref(), Some("config.txt"));
        assert_eq!(
            unread_file("Write a short README.md for this folder.", []),
            None
        );
        // No file named: nothing to read.
        assert_eq!(
            unread_file("Which file mentions the word invoice?", []),
            None
        );
        assert_eq!(unread_file("Is version 1.5 out?", []), None);
    }

    #[test]
    fn answers_without_content_or_requests_without_a_file_are_not() {
        assert_eq!(
            unsaved_file("Write README.md", "Done: a heading and two lines."),
            None
        );
        assert_eq!(unsaved_file("Write a haiku", "```\nold pond\n```"), None);
        // A question about a file names it and asks for no write; nor does a summary.
        assert_eq!(
            unsaved_file("What does hello.txt say?", "hello.txt says hello"),
            None
        );
        assert_eq!(
            unsaved_file("Make a summary of notes.md", "# Summary\nnotes.md says hi"),
            None
        );
        assert_eq!(
            unsaved_file("notes.md 里写了什么？", "# Notes\nnotes.md"),
            None
        );
        assert_eq!(unsaved_file("Is version 1.5 out?", "# Yes\nIt is."), None);
    }
}
