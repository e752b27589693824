//! [`KeywordRouter`]: the keyword groups (Chinese and English words that pick tool groups), loaded from a config file.

use std::future::{Future, ready};
use std::path::Path;

use serde::{Deserialize, Serialize};
use toolbelt_core::Toolset;

use crate::decision::{RouteDecision, RouteRequest, ScoredTool};
use crate::error::RouteError;
use crate::router::Router;

/// The built-in groups for toolbelt's own tools (`groups/builtin.json`).
const BUILTIN: &str = include_str!("../groups/builtin.json");

/// One keyword group: if any keyword occurs in the input, its tools are sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KeywordGroup {
    /// Group name (for logs and decisions).
    pub name: String,
    /// Keywords in any language; matched case-insensitively.
    pub keywords: Vec<String>,
    /// Tools of the group, by exact name.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Tags whose tools also belong to the group (`mcp` takes every MCP tool).
    #[serde(default)]
    pub tags: Vec<String>,
}

impl KeywordGroup {
    /// A group named `name` with `keywords` and `tools`.
    pub fn new<S: Into<String>>(
        name: impl Into<String>,
        keywords: impl IntoIterator<Item = S>,
        tools: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            name: name.into(),
            keywords: keywords.into_iter().map(Into::into).collect(),
            tools: tools.into_iter().map(Into::into).collect(),
            tags: Vec::new(),
        }
    }

    /// Adds tags whose tools belong to the group.
    #[must_use]
    pub fn with_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupsFile {
    groups: Vec<KeywordGroup>,
}

/// Routes by keyword groups: words of the request pick the tool groups it needs.
///
/// Every group whose keywords occur in the input is chosen and the tools of
/// the chosen groups are sent (in group order, without repeats); when no
/// keyword occurs, every tool is sent. A keyword in Chinese (or any script
/// without spaces) matches anywhere; a keyword in ASCII must be a whole word (give or
/// take an inflection): `read` matches "reading" but not "already".
#[derive(Debug, Clone)]
pub struct KeywordRouter {
    groups: Vec<Group>,
    /// Every group's keywords in one automaton: a request is read once, not once per keyword.
    matcher: Option<aho_corasick::AhoCorasick>,
    /// For each pattern of `matcher`, its group's index.
    owners: Vec<usize>,
}

#[derive(Debug, Clone)]
struct Group {
    spec: KeywordGroup,
    lowered: Vec<String>,
}

impl KeywordRouter {
    /// A router over `groups`.
    ///
    /// # Errors
    /// [`RouteError::Config`] when a group has no name, no keywords, an empty
    /// keyword, or a name used twice.
    pub fn new(groups: Vec<KeywordGroup>) -> Result<Self, RouteError> {
        let mut seen = std::collections::HashSet::new();
        for (i, g) in groups.iter().enumerate() {
            if g.name.trim().is_empty() {
                return Err(RouteError::Config(format!("group {i} has an empty name")));
            }
            if !seen.insert(g.name.as_str()) {
                return Err(RouteError::Config(format!(
                    "group {:?} is defined twice",
                    g.name
                )));
            }
            if g.keywords.is_empty() || g.keywords.iter().any(|k| k.trim().is_empty()) {
                return Err(RouteError::Config(format!(
                    "group {:?} needs at least one keyword and no empty keyword",
                    g.name
                )));
            }
        }
        let groups: Vec<Group> = groups
            .into_iter()
            .map(|spec| Group {
                lowered: spec
                    .keywords
                    .iter()
                    .map(|k| k.trim().to_lowercase())
                    .collect(),
                spec,
            })
            .collect();
        let (owners, patterns): (Vec<usize>, Vec<&str>) = groups
            .iter()
            .enumerate()
            .flat_map(|(at, g)| g.lowered.iter().map(move |k| (at, k.as_str())))
            .unzip();
        let matcher = aho_corasick::AhoCorasick::new(&patterns)
            .map_err(|e| RouteError::Config(format!("keyword groups: {e}")))?;
        Ok(Self {
            groups,
            matcher: Some(matcher),
            owners,
        })
    }

    /// The built-in keyword groups (file, shell, git, web, memory, routine, …), adapted to toolbelt's built-in tools.
    pub fn builtin() -> Self {
        // Checked by a unit test.
        Self::from_json(BUILTIN).unwrap_or_else(|_| Self {
            groups: Vec::new(),
            matcher: None,
            owners: Vec::new(),
        })
    }

    /// Parses `{"groups": [{"name", "keywords", "tools", "tags"}]}`.
    ///
    /// # Errors
    /// [`RouteError::Config`] for invalid JSON (with line and column) or invalid groups.
    pub fn from_json(text: &str) -> Result<Self, RouteError> {
        let file: GroupsFile = serde_json::from_str(text)
            .map_err(|e| RouteError::Config(format!("keyword groups: {e}")))?;
        Self::new(file.groups)
    }

    /// Reads a groups file (see [`KeywordRouter::from_json`]).
    ///
    /// # Errors
    /// [`RouteError::Config`] naming the file when it cannot be read or parsed.
    pub fn from_file(path: &Path) -> Result<Self, RouteError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            RouteError::Config(format!(
                "cannot read keyword groups {}: {e}",
                path.display()
            ))
        })?;
        Self::from_json(&text).map_err(|e| match e {
            RouteError::Config(m) => RouteError::Config(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// The groups.
    pub fn groups(&self) -> impl Iterator<Item = &KeywordGroup> {
        self.groups.iter().map(|g| &g.spec)
    }

    /// The groups matching `input`, each with how many of its keywords occur.
    ///
    /// A file name (`config.txt`, `src/main.rs`) counts as the word "file":
    /// its stem names the file, not the tool (`config.txt` is not about the
    /// `config` group).
    pub fn matching_groups(&self, input: &str) -> Vec<(&KeywordGroup, usize)> {
        let lowered = mask_file_names(&input.to_lowercase());
        let Some(matcher) = &self.matcher else {
            return Vec::new();
        };
        // A keyword counts once however often it occurs, as `contains_keyword` would say.
        let mut found = vec![false; self.owners.len()];
        for m in matcher.find_overlapping_iter(&lowered) {
            let pattern = m.pattern().as_usize();
            if !found[pattern] && keyword_at(&lowered, m.start(), m.end()) {
                found[pattern] = true;
            }
        }
        let mut hits = vec![0usize; self.groups.len()];
        for (pattern, _) in found.iter().enumerate().filter(|(_, f)| **f) {
            hits[self.owners[pattern]] += 1;
        }
        self.groups
            .iter()
            .zip(hits)
            .filter(|(_, hits)| *hits > 0)
            .map(|(g, hits)| (&g.spec, hits))
            .collect()
    }

    /// The tools of `group` present in `toolset`, in group order.
    pub fn group_tools(group: &KeywordGroup, toolset: &Toolset) -> Vec<String> {
        let mut tools: Vec<String> = group
            .tools
            .iter()
            .filter(|t| toolset.contains(t))
            .cloned()
            .collect();
        for tag in &group.tags {
            for tool in toolset.with_tag(tag).iter() {
                let name = tool.name().as_str();
                if !tools.iter().any(|t| t == name) {
                    tools.push(name.to_owned());
                }
            }
        }
        tools
    }

    /// The decision for `request`, computed synchronously.
    pub fn decide(&self, request: &RouteRequest) -> RouteDecision {
        let matched = self.matching_groups(&request.input);
        let mut tools: Vec<ScoredTool> = Vec::new();
        let mut groups = Vec::new();
        for (group, hits) in &matched {
            groups.push(group.name.clone());
            for name in Self::group_tools(group, &request.toolset) {
                match tools.iter_mut().find(|t| t.name == name) {
                    Some(t) => t.score += *hits as f32,
                    None => tools.push(ScoredTool {
                        name,
                        score: *hits as f32,
                    }),
                }
            }
        }
        if tools.is_empty() {
            let reason = if groups.is_empty() {
                "keyword: no group matched".to_owned()
            } else {
                format!("keyword: groups {groups:?} have no tool in the toolset")
            };
            let mut d = RouteDecision::fallback("keyword", &request.toolset, reason);
            d.groups = groups;
            return d;
        }
        // Stable: group order breaks ties, as in the seed.
        tools.sort_by(|a, b| b.score.total_cmp(&a.score));
        let reason = format!("keyword: matched {}", groups.join(", "));
        let mut d = RouteDecision::tools("keyword", tools, reason);
        d.groups = groups;
        d
    }
}

/// Extensions that make `stem.ext` a file name rather than a word, a
/// version or a host name.
const FILE_EXTENSIONS: &[&str] = &[
    "c", "cfg", "conf", "cpp", "cs", "css", "csv", "doc", "docx", "env", "gif", "go", "h", "html",
    "ini", "ipynb", "java", "jpeg", "jpg", "js", "json", "jsonl", "kt", "log", "lock", "md", "pdf",
    "php", "png", "ppt", "pptx", "py", "rb", "rs", "sh", "sql", "svg", "swift", "toml", "ts",
    "tsx", "tsv", "txt", "xls", "xlsx", "xml", "yaml", "yml", "zip",
];

/// Words that name the workspace (lower case): its files, folders and project, in English
/// and Chinese. A file name (`data.csv`) counts too.
const WORKSPACE_WORDS: &[&str] = &[
    "file",
    "folder",
    "directory",
    "directories",
    "dir",
    "project",
    "repo",
    "repository",
    "codebase",
    "workspace",
    "git",
    "文件",
    "目录",
    "项目",
    "仓库",
    "代码库",
    "工作区",
];

/// Whether `input` names the workspace: a word of [`WORKSPACE_WORDS`] or a file name.
pub(crate) fn mentions_workspace(input: &str) -> bool {
    let lowered = mask_file_names(&input.to_lowercase());
    WORKSPACE_WORDS
        .iter()
        .any(|w| contains_keyword(&lowered, w))
}

/// Whether `input` holds a file name (a path-like run ending in a known extension).
pub(crate) fn names_a_file(input: &str) -> bool {
    let lowered = input.to_lowercase();
    mask_file_names(&lowered) != lowered
}

/// Verbs that ask for a change in the workspace (lower case), in English and Chinese: a
/// request without one only reads. English ones count in their base form only (the
/// imperative: "change the port", not "uncommitted changes" or "which files changed"), and
/// `set` only as "set … to".
const CHANGE_WORDS: &[&str] = &[
    "write",
    "rewrite",
    "overwrite",
    "create",
    "add",
    "append",
    "insert",
    "change",
    "edit",
    "modify",
    "update",
    "replace",
    "rename",
    "delete",
    "remove",
    "save",
    "fix",
    "copy",
    "move",
    "make",
    "put",
    "写入",
    "写进",
    "写上",
    "写下",
    "写一",
    "写个",
    "写成",
    "新建",
    "创建",
    "添加",
    "追加",
    "插入",
    "改",
    "编辑",
    "更新",
    "替换",
    "重命名",
    "删除",
    "删掉",
    "保存",
    "修复",
    "复制",
    "移动",
    "设置为",
    "设为",
    "设成",
];

/// Whether `input` asks for a change (a verb of [`CHANGE_WORDS`], or "set … to"), not only
/// for facts: "What theme is set in settings.json?" reads, "set retries to 10" changes.
pub(crate) fn asks_to_change(input: &str) -> bool {
    let lowered = mask_file_names(&input.to_lowercase());
    let words: Vec<&str> = lowered
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    CHANGE_WORDS.iter().any(|w| {
        if w.is_ascii() {
            words.contains(w)
        } else {
            lowered.contains(w)
        }
    }) || words
        .iter()
        .enumerate()
        .any(|(i, w)| *w == "set" && words[i + 1..].iter().take(5).any(|w| *w == "to"))
}

/// `text` (lower-case) with every file name (a path-like run ending in
/// `.ext` with a known extension) replaced by the word `file`.
pub(crate) fn mask_file_names(text: &str) -> String {
    let path_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | '~');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(path_char) {
        out.push_str(&rest[..start]);
        let run = &rest[start..];
        let len = run.find(|c: char| !path_char(c)).unwrap_or(run.len());
        // A sentence's full stop is not part of the name.
        let name = run[..len].trim_end_matches('.');
        let is_file = name.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty() && !stem.ends_with('/') && FILE_EXTENSIONS.contains(&ext)
        });
        if is_file {
            out.push_str("file");
            out.push_str(&run[name.len()..len]);
        } else {
            out.push_str(&run[..len]);
        }
        rest = &run[len..];
    }
    out.push_str(rest);
    out
}

/// Whether `keyword` (lower-case) occurs in `text` (lower-case).
///
/// An ASCII keyword must be a whole word, give or take an inflection
/// (`read` matches "reads" and "reading", not "already" or "ready").
fn contains_keyword(text: &str, keyword: &str) -> bool {
    text.match_indices(keyword)
        .any(|(i, _)| keyword_at(text, i, i + keyword.len()))
}

/// Whether the keyword found at `text[start..end]` counts: anywhere for a keyword with a
/// non-ASCII character, else at the start of a word and followed by nothing but an
/// inflection to the word's end.
fn keyword_at(text: &str, start: usize, end: usize) -> bool {
    if !text[start..end].is_ascii() {
        return true;
    }
    let is_word = |c: char| c.is_ascii_alphanumeric();
    let starts = text[..start]
        .chars()
        .next_back()
        .is_none_or(|c| !is_word(c));
    let rest = &text[end..];
    let tail = &rest[..rest.find(|c: char| !is_word(c)).unwrap_or(rest.len())];
    starts && matches!(tail, "" | "s" | "es" | "ed" | "d" | "ing" | "er" | "ers")
}

impl Router for KeywordRouter {
    fn name(&self) -> &'static str {
        "keyword"
    }

    fn route(
        &self,
        request: &RouteRequest,
    ) -> impl Future<Output = Result<RouteDecision, RouteError>> + Send {
        ready(Ok(self.decide(request)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_for_facts_does_not_ask_to_change() {
        for reads in [
            "What theme is set in data/settings.json?",
            "How many lines in logs/app.log contain ERROR?",
            "List the files in this directory, then read notes.md and tell me the secret word.",
            "Which files have uncommitted changes in this git repository?",
            "data/settings.json 里 owner 的名字是什么？",
            "src 目录下有几个 .py 文件？",
            "Read settings.json; what is it set for?",
            "这个文件里写的是什么？",
        ] {
            assert!(!asks_to_change(reads), "{reads}");
        }
        for changes in [
            "In data/settings.json, set retries to 10.",
            "In config.txt, change the port from 8080 to 9090.",
            "Create a file named todo.txt containing the line: buy milk",
            "Read config.txt and write the host name it uses into a new file host.txt.",
            "把 notes.md 里的秘密单词从 marmalade 改成 honey。",
            "新建一个文件 greeting.txt，内容写：你好。",
            "Set the theme of settings.json to light",
        ] {
            assert!(asks_to_change(changes), "{changes}");
        }
    }

    #[test]
    fn builtin_groups_parse() {
        assert!(KeywordRouter::from_json(BUILTIN).is_ok());
        assert!(KeywordRouter::builtin().groups().count() >= 7);
    }

    #[test]
    fn the_automaton_counts_what_a_search_per_keyword_counts() {
        let router = KeywordRouter::builtin();
        let shared = KeywordRouter::new(vec![
            KeywordGroup::new("a", ["file", "read"], []),
            KeywordGroup::new("b", ["file", "文件"], []),
        ])
        .unwrap();
        for input in [
            "read the config file and list the open todos",
            "already reading files; reader reads, then read",
            "Which file in this folder mentions the word invoice?",
            "把这个文件的内容读出来，然后搜索 README.md",
            "git commit and push, then run the tests in the shell",
            "remember that I prefer short answers; schedule a daily report",
            "fetch https://example.com and summarise it",
            "",
        ] {
            for router in [&router, &shared] {
                let lowered = mask_file_names(&input.to_lowercase());
                let expected: Vec<(String, usize)> = router
                    .groups
                    .iter()
                    .map(|g| {
                        let hits = g
                            .lowered
                            .iter()
                            .filter(|k| contains_keyword(&lowered, k))
                            .count();
                        (g.spec.name.clone(), hits)
                    })
                    .filter(|(_, hits)| *hits > 0)
                    .collect();
                let got: Vec<(String, usize)> = router
                    .matching_groups(input)
                    .into_iter()
                    .map(|(g, hits)| (g.name.clone(), hits))
                    .collect();
                assert_eq!(got, expected, "{input}");
            }
        }
        // A keyword two groups share counts in both.
        let both = shared.matching_groups("read a file");
        assert_eq!(both.len(), 2);
        assert_eq!((both[0].1, both[1].1), (2, 1));
    }

    #[test]
    fn ascii_keywords_start_a_word() {
        assert!(contains_keyword("reading a file", "read"));
        assert!(!contains_keyword("already done", "read"));
        assert!(!contains_keyword("the project", "pr"));
        assert!(contains_keyword("帮我read一下", "read"));
        assert!(contains_keyword("帮我改一下", "改"));
    }

    #[test]
    fn file_names_count_as_files_not_as_their_stems() {
        assert_eq!(
            mask_file_names("in config.txt, change the port. see src/main.rs."),
            "in file, change the port. see file."
        );
        assert_eq!(mask_file_names("读取 hello.txt 文件"), "读取 file 文件");
        assert_eq!(
            mask_file_names("what it says. ... ok."),
            "what it says. ... ok."
        );
        assert_eq!(
            mask_file_names("version 1.2 at example.com, e.g. this"),
            "version 1.2 at example.com, e.g. this"
        );
        let router = KeywordRouter::builtin();
        let names = |input: &str| -> Vec<String> {
            router
                .matching_groups(input)
                .iter()
                .map(|(g, _)| g.name.clone())
                .collect()
        };
        assert_eq!(names("In config.txt, change the port"), ["file_ops"]);
        assert_eq!(names("show the toolbelt config"), ["config"]);
    }

    #[test]
    fn invalid_groups_are_named() {
        let err = KeywordRouter::from_json(r#"{"groups":[{"name":"a","keywords":[]}]}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "invalid router configuration: group \"a\" needs at least one keyword and no empty keyword"
        );
    }
}
