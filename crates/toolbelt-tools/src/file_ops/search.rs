//! `file_search`: find files by glob and lines by regex, honouring `.gitignore`.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;

use super::{blocking, search_root};
use crate::workspace::Workspace;

/// Default and largest number of results.
const DEFAULT_RESULTS: u32 = 100;
const MAX_RESULTS: u32 = 1000;
/// Matching lines longer than this are cut, so one minified file cannot flood the output.
const MAX_LINE_CHARS: usize = 300;

/// Search the workspace for files whose path matches a glob and/or lines matching a regex.
///
/// Files ignored by `.gitignore`/`.ignore` and hidden files are skipped
/// unless `include_hidden` is set; symlinks are not followed. With only
/// `glob`, returns matching paths; with `pattern`, returns `path:line: text`.
#[tool(tags("file_ops"), read_only, timeout = "60s")]
pub async fn file_search(
    ctx: &ToolContext,
    /// Glob over paths relative to `path`, e.g. `**/*.rs` or `*.toml` (`*` also crosses `/`).
    glob: Option<String>,
    /// Regular expression (Rust syntax) searched line by line in file contents.
    pattern: Option<String>,
    /// Directory to search, relative to the workspace root (default: the root).
    path: Option<String>,
    /// Match `pattern` regardless of case.
    case_insensitive: Option<bool>,
    /// Also search hidden files and directories (names starting with `.`).
    include_hidden: Option<bool>,
    /// Most results to return (default 100, at most 1000).
    max_results: Option<u32>,
) -> Result<ToolOutput, ToolError> {
    let workspace = Workspace::from_context(ctx)?;
    if glob.is_none() && pattern.is_none() {
        return Err(ToolError::invalid_argument(
            "",
            "give `glob`, `pattern` or both",
        ));
    }
    let glob = glob
        .map(|g| {
            GlobBuilder::new(&g)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| ToolError::invalid_argument("/glob", e.to_string()))
        })
        .transpose()?;
    let matcher = pattern
        .map(|p| {
            RegexMatcherBuilder::new()
                .case_insensitive(case_insensitive.unwrap_or(false))
                .build(&p)
                .map_err(|e| ToolError::invalid_argument("/pattern", e.to_string()))
        })
        .transpose()?;
    let query = Query {
        workspace: workspace.clone(),
        root: workspace.root().to_path_buf(),
        glob,
        matcher,
        hidden: include_hidden.unwrap_or(false),
        limit: max_results.unwrap_or(DEFAULT_RESULTS).clamp(1, MAX_RESULTS) as usize,
    };
    // Dropping this call (timeout, cancelled run) cancels the token the walk checks.
    let stop = ctx.cancellation().child_token();
    let guard = stop.clone().drop_guard();
    let found = blocking(move || {
        let (dir, _) = search_root(&query.workspace, path.as_deref())?;
        query.run(&dir, &stop)
    })
    .await;
    drop(guard);
    let found = found?;
    let mut text = if found.hits.is_empty() {
        "no matches".to_owned()
    } else {
        found.hits.join("\n")
    };
    if found.limited {
        text.push_str(&format!(
            "\n[stopped at {} results; narrow the glob or pattern, or raise max_results]",
            found.hits.len()
        ));
    }
    let mut out = ToolOutput::text(text);
    out.json = Some(json!({ "results": found.hits, "limited": found.limited }));
    Ok(out)
}

struct Query {
    workspace: Workspace,
    root: std::path::PathBuf,
    glob: Option<GlobMatcher>,
    matcher: Option<RegexMatcher>,
    hidden: bool,
    limit: usize,
}

struct Found {
    hits: Vec<String>,
    limited: bool,
}

impl Query {
    fn run(&self, dir: &Path, stop: &CancellationToken) -> Result<Found, ToolError> {
        let walker = WalkBuilder::new(dir)
            .hidden(!self.hidden)
            .follow_links(false)
            // Honour .gitignore even when the workspace is not a git checkout.
            .require_git(false)
            .build();
        let mut hits = Vec::new();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
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
            let relative_to_dir = path.strip_prefix(dir).unwrap_or(path);
            if let Some(glob) = &self.glob
                && !glob.is_match(relative_to_dir)
            {
                continue;
            }
            let shown = path
                .strip_prefix(&self.root)
                .unwrap_or(path)
                .display()
                .to_string();
            let Some(matcher) = &self.matcher else {
                hits.push(shown);
                if hits.len() >= self.limit {
                    return Ok(Found {
                        hits,
                        limited: true,
                    });
                }
                continue;
            };
            if kind.is_symlink() {
                continue;
            }
            let mut limited = false;
            let sink = Lossy(|line_number, line: &str| {
                hits.push(format!("{shown}:{line_number}: {}", clip(line.trim_end())));
                limited = hits.len() >= self.limit;
                Ok(!limited)
            });
            // Opened beneath the root without following symlinks (a file swapped
            // for a link after the walk saw it is not read); only regular files
            // are searched, so a FIFO cannot hang the walk.
            let file = match self.workspace.open_read(path) {
                Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => file,
                Ok(_) => continue,
                Err(e) => {
                    tracing::debug!(path = %shown, error = %e, "skipping unreadable file");
                    continue;
                }
            };
            if let Err(e) = searcher.search_file(matcher, &file, sink) {
                tracing::debug!(path = %shown, error = %e, "skipping unreadable file");
            }
            if limited {
                return Ok(Found {
                    hits,
                    limited: true,
                });
            }
        }
        Ok(Found {
            hits,
            limited: false,
        })
    }
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
