//! `file_search`: find lines by text or regex, list files by glob, count either;
//! honours `.gitignore`, skips binary files, and forgives the mistakes small
//! models make (a glob written from the workspace root, a regex that does not
//! parse, a glob that leaves out the files that hold the text).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{ErrorKind, RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::WalkBuilder;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;

use super::{blocking, is_binary, plural};
use crate::workspace::{Workspace, WorkspaceError};

/// Default and largest number of results.
const DEFAULT_RESULTS: u32 = 100;
const MAX_RESULTS: u32 = 1000;
/// Matching lines longer than this are cut, so one minified file cannot flood the output.
const MAX_LINE_CHARS: usize = 300;
/// File names shown when no file matches a glob, so the model sees what there is.
const SAMPLE_FILES: usize = 5;

/// Search the workspace: find the lines that contain a text, list files, or count.
///
/// With `pattern`, every text file is searched (binary files are skipped) and each
/// matching line comes back as `path:line: text`. Without `pattern`, the paths of the
/// files are listed. `glob` only narrows which files: leave it out unless the user
/// named a kind of file. With `count`, numbers come back instead: matching lines per
/// file with `pattern`, otherwise the files and how many lines each has (use this to
/// count the lines or rows of a file: set `path` to the file). Hidden files and files
/// ignored by `.gitignore` are skipped.
#[tool(tags("file_ops"), read_only, timeout = "60s")]
#[allow(clippy::too_many_arguments)]
pub async fn file_search(
    ctx: &ToolContext,
    /// Text to look for in the files' contents, line by line; a regular expression,
    /// plain words work too. Leave it out to list or count files.
    pattern: Option<String>,
    /// Only files whose path matches this glob (`*` is any characters, `**` any folders),
    /// written from the workspace root or from `path`. Leave it out to search every file.
    glob: Option<String>,
    /// Folder to search in, or one file, relative to the workspace root (default: all of it).
    path: Option<String>,
    /// Answer with numbers instead of lines: how many lines match per file (with
    /// `pattern`), or how many files there are and how many lines each has.
    count: Option<bool>,
    /// Match `pattern` regardless of upper and lower case. Default: any case when
    /// `pattern` has no capital letter, exact case when it has one.
    case_insensitive: Option<bool>,
    /// Also search hidden files and folders (names starting with `.`).
    include_hidden: Option<bool>,
    /// Most results to return (default 100, at most 1000).
    max_results: Option<u32>,
) -> Result<ToolOutput, ToolError> {
    let workspace = Workspace::from_context(ctx)?;
    let mut glob = glob.filter(|g| !g.trim().is_empty());
    let mut pattern = pattern.filter(|p| !p.is_empty());
    // `*.py` as the pattern (the 1.5B model counting Python files): a file name
    // pattern, not text in the files. Taken as the glob when there is none.
    let mut taken_as_glob = None;
    if glob.is_none()
        && let Some(p) = pattern.take_if(|p| is_file_glob(p))
    {
        taken_as_glob = Some(format!(
            "[`{p}` is a file name pattern, so it was used as `glob` (the files it matches); \
             give `pattern` words to search inside files]\n"
        ));
        glob = Some(p);
    }
    let mut split_note = None;
    if let Some(p) = pattern.take() {
        pattern = match split_lines(&p) {
            Some((joined, note)) => {
                split_note = Some(note);
                Some(joined).filter(|j| !j.is_empty())
            }
            None => Some(p),
        };
    }
    let glob = glob.map(|g| PathGlob::new(&g)).transpose()?;
    let pattern = pattern
        .map(|p| {
            let any_case = case_insensitive.unwrap_or_else(|| !has_capital(&p));
            Pattern::compile(p, any_case)
        })
        .transpose()?;
    let query = Query {
        workspace: workspace.clone(),
        root: workspace.root().to_path_buf(),
        glob,
        pattern,
        count: count.unwrap_or(false),
        hidden: include_hidden.unwrap_or(false),
        limit: max_results.unwrap_or(DEFAULT_RESULTS).clamp(1, MAX_RESULTS) as usize,
    };
    // Dropping this call (timeout, cancelled run) cancels the token the walk checks.
    let stop = ctx.cancellation().child_token();
    let guard = stop.clone().drop_guard();
    let answer = blocking(move || {
        // A `path` that names nothing (the 1.5B model searched an invented
        // `meeting_notes.txt`): the whole workspace, with a note saying so.
        let (dir, note) = match query.workspace.resolve(path.as_deref().unwrap_or(".")) {
            Ok(dir) => (dir, None),
            Err(WorkspaceError::NotFound { path }) => {
                let note = format!(
                    "[path {path:?} does not exist in the workspace, so all of it was searched]\n"
                );
                (query.workspace.resolve(".")?, Some(note))
            }
            Err(e) => return Err(e.into()),
        };
        let shown = query.workspace.display_path(&dir);
        // One file and nothing to look for (the 1.5B model asking how many rows a CSV
        // has, or which theme a JSON file sets): its name alone says nothing, so it is
        // read whole, as file_read reads it (line count, a table's header and rows).
        let mut out = if query.pattern.is_none() && !query.count && dir.is_file() {
            query.read_whole(
                &dir,
                &shown,
                format!("[{shown} is one file and no pattern was given, so here it is]\n"),
            )?
        } else {
            query.answer(&dir, &shown, &stop)?
        };
        for note in [note, taken_as_glob, split_note]
            .into_iter()
            .flatten()
            .rev()
        {
            out.text.insert_str(0, &note);
        }
        Ok(out)
    })
    .await;
    drop(guard);
    answer
}

/// A glob as the model wrote it, matched against paths relative to the
/// searched folder and relative to the workspace root.
#[derive(Clone)]
struct PathGlob {
    /// As written (shown back to the model).
    text: String,
    matcher: GlobMatcher,
    /// A glob without `/` also matches a file's name (`notes.txt` finds `docs/notes.txt`).
    by_name: bool,
}

impl PathGlob {
    fn new(raw: &str) -> Result<Self, ToolError> {
        let text = raw.trim().to_owned();
        // `./src/*.py`, `/src/*.py` and `src/` mean what they would in a shell.
        let mut normal = text
            .trim_start_matches("./")
            .trim_start_matches('/')
            .to_owned();
        if normal.ends_with('/') {
            normal.push_str("**");
        }
        let matcher = GlobBuilder::new(&normal)
            .build()
            .map_err(|e| ToolError::invalid_argument("/glob", e.to_string()))?
            .compile_matcher();
        let by_name = !normal.contains('/');
        Ok(Self {
            text,
            matcher,
            by_name,
        })
    }

    fn is_match(&self, relative: &Path) -> bool {
        self.matcher.is_match(relative)
            || (self.by_name
                && relative
                    .file_name()
                    .is_some_and(|n| self.matcher.is_match(n)))
    }
}

/// The compiled `pattern`, and why it is searched as plain text if it is.
struct Pattern {
    text: String,
    matcher: RegexMatcher,
    case_insensitive: bool,
    /// Set when the regex engine refused the pattern: its reason, in one line.
    literal_because: Option<String>,
}

impl Pattern {
    fn compile(text: String, case_insensitive: bool) -> Result<Self, ToolError> {
        let build = |literal: bool| {
            RegexMatcherBuilder::new()
                .case_insensitive(case_insensitive)
                .fixed_strings(literal)
                .line_terminator(Some(b'\n'))
                .build(&text)
        };
        let (matcher, literal_because) = match build(false) {
            Ok(matcher) => (matcher, None),
            Err(e) => {
                let reason = one_line(&e);
                let matcher = build(true).map_err(|_| {
                    ToolError::invalid_argument(
                        "/pattern",
                        format!("{reason}, not even as plain text"),
                    )
                })?;
                (matcher, Some(reason))
            }
        };
        Ok(Self {
            text,
            matcher,
            case_insensitive,
            literal_because,
        })
    }

    fn with_case_ignored(&self) -> Option<Self> {
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(true)
            .fixed_strings(self.literal_because.is_some())
            .line_terminator(Some(b'\n'))
            .build(&self.text)
            .ok()?;
        Some(Self {
            text: self.text.clone(),
            matcher,
            case_insensitive: true,
            literal_because: self.literal_because.clone(),
        })
    }

    /// `` `alpha` (regular expression, exact case)``.
    fn describe(&self) -> String {
        format!(
            "`{}` ({}, {})",
            self.text,
            if self.literal_because.is_some() {
                "plain text"
            } else {
                "regular expression"
            },
            if self.case_insensitive {
                "any case"
            } else {
                "exact case"
            }
        )
    }
}

/// Whether `pattern` is a file name glob rather than text to find: wildcards and
/// an extension and nothing a line of text or a regex would hold (`*.py`,
/// `src/**/*.rs`, `test_*.py`; not `a*b`, `.*\.py$` or `TODO *.md later`).
fn is_file_glob(pattern: &str) -> bool {
    let name = pattern.rsplit('/').next().unwrap_or(pattern);
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    let plain = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '*' | '?' | '/');
    stem.contains('*')
        && !stem.starts_with('.')
        && !extension.is_empty()
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && pattern.chars().all(plain)
}

/// Words too common to tell files apart.
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "does", "file",
    "files", "for", "from", "has", "have", "in", "is", "it", "its", "of", "on", "or", "says",
    "that", "the", "their", "them", "there", "this", "to", "was", "what", "when", "where", "which",
    "who", "with",
];

/// The words of a phrase worth finding one by one: lower case, without stop words
/// and one-letter words, each once, in order.
fn content_words(phrase: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in phrase.split(|c: char| !c.is_alphanumeric() && c != '-') {
        let word = word.trim_matches('-').to_lowercase();
        if word.chars().count() > 1
            && !STOP_WORDS.contains(&word.as_str())
            && !words.contains(&word)
        {
            words.push(word);
        }
    }
    words
}

/// `pattern` without its regex escapes (`\\d`, `\\b`, `\\.`), so that their letters do not
/// join the words beside them.
fn without_escapes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// A pattern the model wrote over several lines (`replicas\nimage`), as one that finds
/// any of its lines (a pattern matches within one line), and a note saying so; `None`
/// when it has no line break.
fn split_lines(pattern: &str) -> Option<(String, String)> {
    if !pattern.contains('\n') {
        return None;
    }
    let parts: Vec<&str> = pattern
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let shown: Vec<String> = parts.iter().map(|p| format!("`{p}`")).collect();
    let note = format!(
        "[`pattern` held line breaks, and a pattern matches within one line: searched for \
         any of its lines ({})]\n",
        shown.join(", ")
    );
    let parses = parts
        .iter()
        .all(|p| RegexMatcherBuilder::new().build(p).is_ok());
    let joined: Vec<String> = parts
        .iter()
        .map(|p| {
            if parses {
                format!("(?:{p})")
            } else {
                regex_syntax::escape(p)
            }
        })
        .collect();
    Some((joined.join("|"), note))
}

/// Whether lower-cased `text` holds `word` as a whole word.
fn holds_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Whether `pattern` holds a capital letter, escapes (`\S`, `\W`) not counted: what
/// "smart case" reads as asking for an exact case (`invoice` finds `Invoice`, `Invoice`
/// does not find `invoice`).
fn has_capital(pattern: &str) -> bool {
    let mut escaped = false;
    pattern.chars().any(|c| {
        let capital = !escaped && c.is_uppercase();
        escaped = !escaped && c == '\\';
        capital
    })
}

/// The regex engine's complaint in one line (its parse errors span several,
/// with the pattern and a caret).
fn one_line(err: &grep_regex::Error) -> String {
    let text = err.to_string();
    let line = text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .or_else(|| text.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("it does not parse");
    let hint = match err.kind() {
        ErrorKind::NotAllowed(_) => {
            "; patterns match within one line: to count lines, set `count` and leave `pattern` out"
        }
        _ => "",
    };
    format!("`pattern` is not a regular expression this search accepts ({line}{hint})")
}

struct Query {
    workspace: Workspace,
    root: std::path::PathBuf,
    glob: Option<PathGlob>,
    pattern: Option<Pattern>,
    count: bool,
    hidden: bool,
    limit: usize,
}

/// What one walk found.
#[derive(Default)]
struct Walk {
    /// Files under the searched folder (hidden and ignored ones aside).
    files: usize,
    /// Of those, the files the glob selects (all without a glob).
    selected: usize,
    /// Selected files the glob matches only relative to the folder, or only from the root.
    by_folder_only: usize,
    by_root_only: usize,
    /// Text files whose contents were searched or counted.
    read: usize,
    /// Selected files skipped as binary.
    binary: usize,
    /// Text files with at least one matching line.
    matched_files: usize,
    /// Result lines (`path`, or `path:line: text`).
    hits: Vec<String>,
    /// Count mode: per file, matching lines (with a pattern) or lines.
    counts: Vec<(String, u64)>,
    /// Whether the walk stopped at the result limit.
    limited: bool,
    /// The first few files seen, for a "no files match" answer.
    samples: Vec<String>,
}

impl Walk {
    fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }
}

impl Query {
    fn answer(
        &self,
        dir: &Path,
        shown: &str,
        stop: &CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let glob = self.glob.as_ref();
        let pattern = self.pattern.as_ref();
        let walk = self.walk(dir, glob, pattern, stop)?;
        // A glob without wildcards that selects one file, and nothing to look for (the
        // 1.5B model asking `"glob": "data/deploy.yaml"` for the replicas it sets, three
        // times over): the listing would only repeat the name it gave, so the file is read
        // whole. A glob with wildcards is a listing, even of one file.
        if let (Some(glob), None, false, [only]) = (glob, pattern, self.count, walk.hits.as_slice())
            && !glob.text.contains(['*', '?', '[', '{'])
        {
            let file = self.root.join(only);
            if !walk.limited && !file.is_symlink() && file.is_file() {
                let note = format!(
                    "[`{}` selects one file, {only}, and no pattern was given, so here it is]\n",
                    glob.text
                );
                if let Ok(out) = self.read_whole(&file, only, note) {
                    return Ok(out);
                }
            }
        }
        let mut notes = Vec::new();
        if let Some(reason) = pattern.and_then(|p| p.literal_because.as_ref()) {
            notes.push(format!("[{reason}; searched for it as plain text]"));
        }
        if let Some(p) = pattern
            && walk.hits.is_empty()
            && !self.count
            && let Some((walk, note)) = self.relaxed(dir, shown, &walk, p, stop)?
        {
            notes.push(note);
            return Ok(self.render(dir, shown, &walk, notes, None));
        }
        if let Some(p) = pattern
            && walk.hits.is_empty()
            && !self.count
            && dir != self.root
            && dir.is_dir()
            && let Some((walk, note)) = self.widened(shown, p, stop)?
        {
            notes.push(note);
            return Ok(self.render(&self.root, ".", &walk, notes, None));
        }
        if let Some(p) = pattern
            && walk.hits.is_empty()
            && let Some(listed) = self.by_name(dir, shown, p, &notes, stop)?
        {
            return Ok(listed);
        }
        if let Some(p) = pattern
            && walk.hits.is_empty()
            && !self.count
            && let Some((walk, note)) = self.by_words(p, stop)?
        {
            notes.push(note);
            return Ok(self.render(&self.root, ".", &walk, notes, None));
        }
        Ok(self.render(dir, shown, &walk, notes, glob))
    }

    /// `file` read as `file_read` reads it (line count, a table's header and rows), after
    /// `note`.
    fn read_whole(&self, file: &Path, shown: &str, note: String) -> Result<ToolOutput, ToolError> {
        let handle = self
            .workspace
            .open_read(file)
            .map_err(|e| super::io_error("open", shown, &e))?;
        let cap = self.workspace.max_read_bytes();
        let mut out = super::read_lines(handle, shown, 1, None, false, cap)?;
        out.text.insert_str(0, &note);
        Ok(out)
    }

    /// After a regular expression matched no line: the files under `dir` whose path it
    /// matches, listed (or counted). The 1.5B model, asked how many `.py` files a folder
    /// holds, searched contents for `\.py$`, found no line, and answered with its glob's count.
    fn by_name(
        &self,
        dir: &Path,
        shown: &str,
        pattern: &Pattern,
        notes: &[String],
        stop: &CancellationToken,
    ) -> Result<Option<ToolOutput>, ToolError> {
        use grep_matcher::Matcher;
        if pattern.literal_because.is_some() {
            return Ok(None);
        }
        let listing = Query {
            workspace: self.workspace.clone(),
            root: self.root.clone(),
            glob: self.glob.clone(),
            pattern: None,
            count: self.count,
            hidden: self.hidden,
            limit: self.limit,
        };
        let mut walk = listing.walk(dir, self.glob.as_ref(), None, stop)?;
        let named = |path: &str| pattern.matcher.is_match(path.as_bytes()).unwrap_or(false);
        walk.hits.retain(|path| named(path));
        walk.counts.retain(|(path, _)| named(path));
        if walk.hits.is_empty() && walk.counts.is_empty() {
            return Ok(None);
        }
        let n = if self.count {
            walk.counts.len()
        } else {
            walk.hits.len()
        };
        walk.selected = n;
        let mut notes = notes.to_vec();
        notes.push(format!(
            "[no line under {shown} matches {}; the names of these {} match it (to list files \
             by name, leave `pattern` out and give `glob`, e.g. `*.py`)]",
            pattern.describe(),
            files(n)
        ));
        Ok(Some(listing.render(
            dir,
            shown,
            &walk,
            notes,
            listing.glob.as_ref(),
        )))
    }

    /// After a pattern found no line anywhere: the lines that hold its words, in the
    /// files that hold the most of them (at least two). Qwen2.5-Coder-1.5B looked for
    /// `meeting with Dana` in a folder whose note says "Meeting on Tuesday with Dana", and
    /// for `replicas:.*?image:.*?` (two lines of a YAML file), and answered that no file
    /// holds them.
    fn by_words(
        &self,
        pattern: &Pattern,
        stop: &CancellationToken,
    ) -> Result<Option<(Walk, String)>, ToolError> {
        let words = content_words(&without_escapes(&pattern.text));
        if words.len() < 2 {
            return Ok(None);
        }
        let alternation: Vec<String> = words.iter().map(|w| regex_syntax::escape(w)).collect();
        let Ok(any) = Pattern::compile(format!("\\b(?:{})\\b", alternation.join("|")), true) else {
            return Ok(None);
        };
        let mut walk = self.walk(&self.root, None, Some(&any), stop)?;
        // Per file, which of the words its matching lines hold.
        let mut held: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
        for hit in &walk.hits {
            let Some((file, text)) = hit.split_once(':') else {
                continue;
            };
            let text = text.to_lowercase();
            let set = held.entry(file.to_owned()).or_default();
            set.extend(
                words
                    .iter()
                    .map(String::as_str)
                    .filter(|w| holds_word(&text, w)),
            );
        }
        let most = held.values().map(BTreeSet::len).max().unwrap_or(0);
        if most < 2 {
            return Ok(None);
        }
        let best: BTreeSet<&str> = held
            .iter()
            .filter(|(_, set)| set.len() == most)
            .map(|(file, _)| file.as_str())
            .collect();
        walk.hits.retain(|hit| {
            hit.split_once(':')
                .is_some_and(|(file, _)| best.contains(file))
        });
        walk.matched_files = best.len();
        let note = format!(
            "[no line anywhere holds {}; these lines hold its words ({}), from the {} that \
             hold{} the most of them ({most} of {})]",
            pattern.describe(),
            words.join(", "),
            files(best.len()),
            if best.len() == 1 { "s" } else { "" },
            words.len()
        );
        Ok(Some((walk, note)))
    }

    /// A wider search after one that found no line: without the glob, then
    /// ignoring case; the first that finds something, with a note saying so.
    fn relaxed(
        &self,
        dir: &Path,
        shown: &str,
        first: &Walk,
        pattern: &Pattern,
        stop: &CancellationToken,
    ) -> Result<Option<(Walk, String)>, ToolError> {
        if let Some(glob) = &self.glob {
            let walk = self.walk(dir, None, Some(pattern), stop)?;
            if !walk.hits.is_empty() {
                let missed = if first.selected == 0 {
                    format!("no file under {shown} matches glob `{}`", glob.text)
                } else {
                    format!(
                        "no line in the {} under {shown} matching glob `{}` matches {}",
                        files(first.selected),
                        glob.text,
                        pattern.describe()
                    )
                };
                let note = format!(
                    "[{missed}, so every file was searched ({}); these match]",
                    files(walk.read)
                );
                return Ok(Some((walk, note)));
            }
        }
        if !pattern.case_insensitive
            && let Some(any_case) = pattern.with_case_ignored()
        {
            let walk = self.walk(dir, None, Some(&any_case), stop)?;
            if !walk.hits.is_empty() {
                let glob = match &self.glob {
                    Some(glob) => format!(" in any file (not only glob `{}`)", glob.text),
                    None => String::new(),
                };
                let note = format!(
                    "[no line matches `{}` with its exact case; these match it in any case{glob}]",
                    pattern.text
                );
                return Ok(Some((walk, note)));
            }
        }
        Ok(None)
    }

    /// After a search under a folder found no line however relaxed: the whole workspace,
    /// in any case (Qwen2.5-Coder-1.5B looked for a company's name under `src` while the
    /// invoice naming it sits in `docs`, and answered that nothing mentions it).
    fn widened(
        &self,
        shown: &str,
        pattern: &Pattern,
        stop: &CancellationToken,
    ) -> Result<Option<(Walk, String)>, ToolError> {
        let any_case = if pattern.case_insensitive {
            None
        } else {
            pattern.with_case_ignored()
        };
        let wide = any_case.as_ref().unwrap_or(pattern);
        let walk = self.walk(&self.root, None, Some(wide), stop)?;
        if walk.hits.is_empty() {
            return Ok(None);
        }
        let note = format!(
            "[no line under {shown} matches {}, so the whole workspace was searched{} ({}); \
             these match]",
            pattern.describe(),
            if any_case.is_some() {
                " in any case"
            } else {
                ""
            },
            files(walk.read)
        );
        Ok(Some((walk, note)))
    }

    fn render(
        &self,
        dir: &Path,
        shown: &str,
        walk: &Walk,
        notes: Vec<String>,
        glob: Option<&PathGlob>,
    ) -> ToolOutput {
        let mut lines = notes;
        let found = if self.count {
            walk.counts.len()
        } else {
            walk.hits.len()
        };
        if found == 0 {
            lines.push(self.nothing(dir, shown, walk, glob));
        } else if self.count {
            lines.push(self.count_summary(shown, walk, glob));
            let unit = if self.pattern.is_some() {
                "matching"
            } else {
                "lines"
            };
            lines.extend(walk.counts.iter().take(self.limit).map(|(path, n)| {
                if unit == "matching" {
                    format!("{path}: {n} matching")
                } else if super::is_table(path) && *n > 1 {
                    format!(
                        "{path}: {} (a header and {})",
                        plural(*n, "line"),
                        plural(n - 1, "row")
                    )
                } else {
                    format!("{path}: {}", plural(*n, "line"))
                }
            }));
            if walk.counts.len() > self.limit {
                lines.push(format!(
                    "[{} more files not listed; raise max_results to see them]",
                    walk.counts.len() - self.limit
                ));
            }
        } else {
            lines.extend(walk.hits.iter().cloned());
            lines.push(self.list_summary(dir, shown, walk, glob));
        }
        let mut out = ToolOutput::text(lines.join("\n"));
        out.json = Some(json!({
            "results": walk.hits,
            "counts": walk.counts.iter().map(|(path, n)| json!({"path": path, "count": n})).collect::<Vec<_>>(),
            "total": walk.total(),
            "files_under_path": walk.files,
            "files_selected": walk.selected,
            "files_read": walk.read,
            "binary_skipped": walk.binary,
            "limited": walk.limited,
        }));
        out
    }

    /// The last line of a listing: how many, where, and how the glob was read.
    fn list_summary(
        &self,
        dir: &Path,
        shown: &str,
        walk: &Walk,
        glob: Option<&PathGlob>,
    ) -> String {
        let what = match &self.pattern {
            Some(_) => format!(
                "{} in {}",
                plural(walk.hits.len() as u64, "matching line"),
                files(walk.matched_files)
            ),
            None => files(walk.hits.len()),
        };
        let mut text = format!(
            "[{what} under {shown}{}",
            self.glob_words(dir, shown, walk, glob)
        );
        if walk.limited {
            text.push_str("; stopped at max_results, narrow the search or raise max_results");
        }
        text.push(']');
        text
    }

    fn count_summary(&self, shown: &str, walk: &Walk, glob: Option<&PathGlob>) -> String {
        let glob = glob
            .map(|g| format!(" matching glob `{}`", g.text))
            .unwrap_or_default();
        match &self.pattern {
            Some(p) => format!(
                "{} match {} in {} of the {} searched under {shown}{glob}:",
                plural(walk.total(), "line"),
                p.describe(),
                files(walk.counts.len()),
                files(walk.read),
            ),
            None => format!(
                "{} under {shown}{glob}, {} in all:",
                files(walk.counts.len()),
                plural(walk.total(), "line")
            ),
        }
    }

    /// ` matching glob `x` (read relative to `src`)`, or nothing without a glob.
    fn glob_words(&self, dir: &Path, shown: &str, walk: &Walk, glob: Option<&PathGlob>) -> String {
        let Some(glob) = glob else {
            return String::new();
        };
        let how = if dir == self.root {
            String::new()
        } else if walk.by_root_only > 0 && walk.by_folder_only == 0 {
            " (read from the workspace root)".to_owned()
        } else if walk.by_root_only > 0 {
            format!(" (read both relative to {shown} and from the workspace root)")
        } else {
            format!(" (read relative to {shown})")
        };
        format!(" matching glob `{}`{how}", glob.text)
    }

    /// A "nothing found" answer that says what was searched, so the model can correct itself.
    fn nothing(&self, dir: &Path, shown: &str, walk: &Walk, glob: Option<&PathGlob>) -> String {
        let skipped = "hidden files and files ignored by .gitignore are skipped";
        let Some(glob) = glob else {
            return match &self.pattern {
                Some(p) => format!(
                    "no matches for {}: searched {} under {shown}{}; {skipped}",
                    p.describe(),
                    files(walk.read),
                    binary_words(walk.binary)
                ),
                None if walk.binary > 0 => format!(
                    "no text files under {shown}{}; {skipped}",
                    binary_words(walk.binary)
                ),
                None => format!("no files under {shown}; {skipped}"),
            };
        };
        let tried = if dir == self.root {
            String::new()
        } else {
            format!(", tried relative to {shown} and from the workspace root")
        };
        let there = if walk.samples.is_empty() {
            String::new()
        } else {
            format!(
                ". The {} there include {}",
                files(walk.files),
                walk.samples.join(", ")
            )
        };
        if walk.selected == 0 {
            return format!(
                "no matches: no file under {shown} matches glob `{}`{tried}{there}. Leave out \
                 glob to search every file; {skipped}",
                glob.text
            );
        }
        match &self.pattern {
            Some(p) => format!(
                "no matches for {}: searched the {} under {shown} matching glob `{}` (of {}){}; \
                 {skipped}",
                p.describe(),
                files(walk.read),
                glob.text,
                files(walk.files),
                binary_words(walk.binary)
            ),
            // Every selected file was binary (count mode reads them).
            None => format!(
                "no text files under {shown} match glob `{}`{}; {skipped}",
                glob.text,
                binary_words(walk.binary)
            ),
        }
    }

    /// Walks `dir` once with `glob` and `pattern` (the query's mode otherwise).
    fn walk(
        &self,
        dir: &Path,
        glob: Option<&PathGlob>,
        pattern: Option<&Pattern>,
        stop: &CancellationToken,
    ) -> Result<Walk, ToolError> {
        let workspace = self.workspace.clone();
        let walker = WalkBuilder::new(dir)
            .hidden(!self.hidden)
            .follow_links(false)
            // Honour .gitignore even when the workspace is not a git checkout.
            .require_git(false)
            .sort_by_file_name(std::cmp::Ord::cmp)
            // The host's own data (a misplaced database folder) is never listed or read.
            .filter_entry(move |e| !workspace.is_reserved(e.path()))
            .build();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let mut walk = Walk::default();
        for entry in walker {
            if stop.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            let Ok(entry) = entry else { continue };
            // Symlinks are listed by glob but never read: their target may be outside.
            let Some(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                continue;
            }
            let path = entry.path();
            let shown = path
                .strip_prefix(&self.root)
                .unwrap_or(path)
                .display()
                .to_string();
            walk.files += 1;
            if walk.samples.len() < SAMPLE_FILES {
                walk.samples.push(shown.clone());
            }
            if let Some(glob) = glob {
                let by_folder = glob.is_match(path.strip_prefix(dir).unwrap_or(path));
                let by_root = glob.is_match(Path::new(&shown));
                match (by_folder, by_root) {
                    (false, false) => continue,
                    (true, false) => walk.by_folder_only += 1,
                    (false, true) => walk.by_root_only += 1,
                    (true, true) => {}
                }
            }
            walk.selected += 1;
            if pattern.is_none() && !self.count {
                walk.hits.push(shown);
                if walk.hits.len() >= self.limit {
                    walk.limited = true;
                    break;
                }
                continue;
            }
            if kind.is_symlink() {
                continue;
            }
            // Opened beneath the root without following symlinks (a file swapped
            // for a link after the walk saw it is not read); only regular files
            // are read, so a FIFO cannot hang the walk.
            let file = match self.workspace.open_read(path) {
                Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => file,
                Ok(_) => continue,
                Err(e) => {
                    tracing::debug!(path = %shown, error = %e, "skipping unreadable file");
                    continue;
                }
            };
            let Some(pattern) = pattern else {
                match count_lines(file) {
                    Ok(Some(n)) => {
                        walk.read += 1;
                        walk.counts.push((shown, n));
                    }
                    Ok(None) => walk.binary += 1,
                    Err(e) => {
                        tracing::debug!(path = %shown, error = %e, "skipping unreadable file")
                    }
                }
                continue;
            };
            let before = walk.hits.len();
            let mut sink = Lines {
                shown: &shown,
                hits: &mut walk.hits,
                keep: !self.count,
                limit: self.limit,
                matched: 0,
                binary: false,
            };
            if let Err(e) = searcher.search_file(&pattern.matcher, &file, &mut sink) {
                tracing::debug!(path = %shown, error = %e, "skipping unreadable file");
                continue;
            }
            let (matched, binary) = (sink.matched, sink.binary);
            if binary {
                walk.hits.truncate(before);
                walk.binary += 1;
                continue;
            }
            walk.read += 1;
            if matched > 0 {
                walk.matched_files += 1;
                if self.count {
                    walk.counts.push((shown, matched));
                }
            }
            if walk.hits.len() >= self.limit {
                walk.limited = true;
                break;
            }
        }
        Ok(walk)
    }
}

/// Collects matching lines (or only counts them) for one file.
struct Lines<'a> {
    shown: &'a str,
    hits: &'a mut Vec<String>,
    keep: bool,
    limit: usize,
    matched: u64,
    binary: bool,
}

impl Sink for Lines<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matched += 1;
        if !self.keep {
            return Ok(true);
        }
        let line = String::from_utf8_lossy(found.bytes());
        self.hits.push(format!(
            "{}:{}: {}",
            self.shown,
            found.line_number().unwrap_or(0),
            clip(line.trim_end())
        ));
        Ok(self.hits.len() < self.limit)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Lines in a text file (a last line without `\n` counts); `None` for a binary file.
fn count_lines(mut file: std::fs::File) -> std::io::Result<Option<u64>> {
    let mut buf = vec![0u8; 64 * 1024];
    let (mut lines, mut last, mut first) = (0u64, b'\n', true);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if first && is_binary(&buf[..n]) {
            return Ok(None);
        }
        first = false;
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[n - 1];
    }
    Ok(Some(lines + u64::from(last != b'\n')))
}

fn binary_words(binary: usize) -> String {
    match binary {
        0 => String::new(),
        n => format!(" ({} skipped as binary)", files(n)),
    }
}

fn files(n: usize) -> String {
    plural(n as u64, "file")
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
