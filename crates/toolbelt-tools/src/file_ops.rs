//! Group `file_ops`: `file_read`, `file_write`, `file_edit`, `list_dir`, `file_search`.
//!
//! Every path goes through [`Workspace`]; writes are atomic (a temporary file
//! in the same directory, then a rename), so a reader never sees half a file.

mod search;

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use serde_json::json;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;

use crate::workspace::Workspace;

pub use self::search::{FileSearchTool, file_search};

/// Bytes inspected for a NUL to tell binary files from text.
const SNIFF_BYTES: usize = 8192;
/// Most entries `list_dir` returns.
const MAX_DIR_ENTRIES: usize = 1000;

/// Read a text file of the workspace, whole or by line range (1-based, inclusive).
///
/// Large files must be read by range. Binary files are refused.
#[tool(tags("file_ops"), read_only, timeout = "30s")]
pub async fn file_read(
    ctx: &ToolContext,
    /// Path relative to the workspace root.
    path: String,
    /// First line to return, 1-based (default 1).
    start_line: Option<u64>,
    /// Last line to return, inclusive (default: the end of the file).
    end_line: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    let workspace = Workspace::from_context(ctx)?;
    let file = workspace.resolve(&path)?;
    let shown = workspace.display_path(&file);
    let start = start_line.unwrap_or(1);
    if start == 0 {
        return Err(ToolError::invalid_argument(
            "/start_line",
            "lines are numbered from 1",
        ));
    }
    if let Some(end) = end_line
        && end < start
    {
        return Err(ToolError::invalid_argument(
            "/end_line",
            format!("end_line {end} is before start_line {start}"),
        ));
    }
    let cap = workspace.max_read_bytes();
    let ranged = start_line.is_some() || end_line.is_some();
    blocking(move || read_lines(&file, &shown, start, end_line, ranged, cap)).await
}

fn read_lines(
    file: &Path,
    shown: &str,
    start: u64,
    end: Option<u64>,
    ranged: bool,
    cap: u64,
) -> Result<ToolOutput, ToolError> {
    let meta = std::fs::metadata(file).map_err(|e| io_error("read", shown, &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "{shown} is a directory; use list_dir to see what it holds"
        )));
    }
    let size = meta.len();
    if !ranged && size > cap {
        return Err(ToolError::failed(format!(
            "{shown} is {size} bytes, more than the {cap}-byte limit for a whole read; \
             read it in parts with start_line and end_line"
        )));
    }
    let mut reader = std::io::BufReader::new(
        std::fs::File::open(file).map_err(|e| io_error("open", shown, &e))?,
    );
    if is_binary(reader.fill_buf().map_err(|e| io_error("read", shown, &e))?) {
        return Err(ToolError::failed(format!(
            "{shown} looks binary ({size} bytes); file_read returns text only"
        )));
    }
    let mut text = String::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut more = false;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error("read", shown, &e))?;
        if n == 0 {
            break;
        }
        number += 1;
        if number < start {
            continue;
        }
        if end.is_some_and(|end| number > end) || text.len() as u64 + n as u64 > cap {
            more = true;
            break;
        }
        text.push_str(&String::from_utf8_lossy(&line));
    }
    if more && text.is_empty() {
        return Err(ToolError::failed(format!(
            "line {number} of {shown} is longer than the {cap}-byte read limit"
        )));
    }
    let last = if more { number - 1 } else { number };
    if ranged && start > number {
        return Err(ToolError::invalid_argument(
            "/start_line",
            format!("{shown} has only {number} lines"),
        ));
    }
    let mut out = if ranged || more {
        let tail = if more {
            ", more follow"
        } else {
            " (end of file)"
        };
        ToolOutput::text(format!("[{shown}: lines {start}-{last}{tail}]\n{text}"))
    } else if text.is_empty() {
        ToolOutput::text(format!("[{shown} is empty]"))
    } else {
        ToolOutput::text(text)
    };
    out.json = Some(json!({
        "path": shown,
        "start_line": start,
        "end_line": last,
        "more": more,
        "bytes": size,
    }));
    Ok(out)
}

/// Write a text file in the workspace, replacing it if it exists (atomically: a temporary file, then a rename).
#[tool(tags("file_ops"), mutating, timeout = "30s")]
pub async fn file_write(
    ctx: &ToolContext,
    /// Path relative to the workspace root; missing parent directories are created.
    path: String,
    /// The full new content of the file.
    content: String,
) -> Result<String, ToolError> {
    let workspace = Workspace::from_context(ctx)?;
    let target = workspace.resolve_for_write(&path)?;
    let shown = workspace.display_path(&target);
    if target.is_dir() {
        return Err(ToolError::failed(format!(
            "{shown} is a directory; give a file path"
        )));
    }
    let existed = target.exists();
    let bytes = content.len();
    blocking(move || write_atomic(&target, &shown, content.as_bytes()).map(|()| shown))
        .await
        .map(|shown| {
            let verb = if existed { "replaced" } else { "created" };
            format!("{verb} {shown} ({bytes} bytes)")
        })
}

/// Replace exact text in a file of the workspace.
///
/// `old_text` must occur exactly once (or set `replace_all`); the call fails,
/// changing nothing, when the text is absent or ambiguous. Include enough
/// surrounding lines to make it unique.
#[tool(tags("file_ops"), mutating, timeout = "30s")]
pub async fn file_edit(
    ctx: &ToolContext,
    /// Path relative to the workspace root.
    path: String,
    /// The exact text to replace, whitespace and indentation included.
    old_text: String,
    /// The replacement text.
    new_text: String,
    /// Replace every occurrence instead of requiring exactly one.
    replace_all: Option<bool>,
) -> Result<String, ToolError> {
    let workspace = Workspace::from_context(ctx)?;
    if old_text.is_empty() {
        return Err(ToolError::invalid_argument(
            "/old_text",
            "must not be empty",
        ));
    }
    if old_text == new_text {
        return Err(ToolError::invalid_argument(
            "/new_text",
            "is the same as old_text; nothing would change",
        ));
    }
    let file = workspace.resolve(&path)?;
    let shown = workspace.display_path(&file);
    let cap = workspace.max_read_bytes();
    let replace_all = replace_all.unwrap_or(false);
    blocking(move || {
        let original = read_text(&file, &shown, cap)?;
        let starts: Vec<usize> = original.match_indices(&old_text).map(|(i, _)| i).collect();
        let line_of = |offset: usize| original[..offset].matches('\n').count() + 1;
        match starts.len() {
            0 => Err(ToolError::failed(format!(
                "old_text was not found in {shown}; nothing was changed. Read the file again \
                 and copy the text exactly, whitespace and indentation included"
            ))),
            n if n > 1 && !replace_all => {
                let lines: Vec<String> = starts
                    .iter()
                    .take(10)
                    .map(|&i| line_of(i).to_string())
                    .collect();
                Err(ToolError::failed(format!(
                    "old_text occurs {n} times in {shown} (at lines {}); nothing was changed. \
                     Include more surrounding lines to make it unique, or set replace_all",
                    lines.join(", ")
                )))
            }
            n => {
                let first = line_of(starts[0]);
                let updated = original.replace(&old_text, &new_text);
                write_atomic(&file, &shown, updated.as_bytes())?;
                let what = if n == 1 {
                    "1 occurrence".to_owned()
                } else {
                    format!("{n} occurrences")
                };
                Ok(format!(
                    "replaced {what} in {shown} (first at line {first})"
                ))
            }
        }
    })
    .await
}

/// List a directory of the workspace: subdirectories end with `/`, files show their size.
#[tool(tags("file_ops"), read_only, timeout = "30s")]
pub async fn list_dir(
    ctx: &ToolContext,
    /// Directory relative to the workspace root (default: the root).
    path: Option<String>,
) -> Result<String, ToolError> {
    let workspace = Workspace::from_context(ctx)?;
    let dir = workspace.resolve(path.as_deref().unwrap_or("."))?;
    let shown = workspace.display_path(&dir);
    blocking(move || {
        let entries = std::fs::read_dir(&dir).map_err(|e| io_error("list", &shown, &e))?;
        let mut lines = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list", &shown, &e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry
                .file_type()
                .map_err(|e| io_error("list", &shown, &e))?;
            lines.push(if kind.is_symlink() {
                let target = std::fs::read_link(entry.path())
                    .map(|t| t.display().to_string())
                    .unwrap_or_else(|_| "?".to_owned());
                format!("{name} -> {target}")
            } else if kind.is_dir() {
                format!("{name}/")
            } else {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                format!("{name}  ({size} bytes)")
            });
        }
        lines.sort();
        let total = lines.len();
        if total == 0 {
            return Ok(format!("{shown} is empty"));
        }
        lines.truncate(MAX_DIR_ENTRIES);
        let mut text = format!("{shown}: {total} entries\n{}", lines.join("\n"));
        if total > MAX_DIR_ENTRIES {
            text.push_str(&format!(
                "\n[... {} more entries; use file_search with a glob to narrow]",
                total - MAX_DIR_ENTRIES
            ));
        }
        Ok(text)
    })
    .await
}

/// Reads a whole UTF-8 file under the size cap.
fn read_text(file: &Path, shown: &str, cap: u64) -> Result<String, ToolError> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .map_err(|e| io_error("open", shown, &e))?
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("read", shown, &e))?;
    if bytes.len() as u64 > cap {
        return Err(ToolError::failed(format!(
            "{shown} is larger than the {cap}-byte limit for editing"
        )));
    }
    if is_binary(&bytes) {
        return Err(ToolError::failed(format!(
            "{shown} looks binary; only text files can be edited"
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        ToolError::failed(format!(
            "{shown} is not valid UTF-8; it cannot be edited as text"
        ))
    })
}

/// Writes `bytes` to `target` through a temporary file in the same directory and a rename.
fn write_atomic(target: &Path, shown: &str, bytes: &[u8]) -> Result<(), ToolError> {
    let parent = target
        .parent()
        .ok_or_else(|| ToolError::failed(format!("{shown} has no parent directory")))?;
    std::fs::create_dir_all(parent).map_err(|e| io_error("create the directory of", shown, &e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".toolbelt-write-")
        .tempfile_in(parent)
        .map_err(|e| io_error("write", shown, &e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io_error("write", shown, &e))?;
    // Keep the mode of the file being replaced (an executable script stays executable).
    if let Ok(meta) = std::fs::metadata(target) {
        let _ = tmp.as_file().set_permissions(meta.permissions());
    }
    tmp.persist(target)
        .map_err(|e| io_error("replace", shown, &e.error))?;
    Ok(())
}

fn is_binary(head: &[u8]) -> bool {
    head[..head.len().min(SNIFF_BYTES)].contains(&0)
}

fn io_error(action: &str, shown: &str, err: &std::io::Error) -> ToolError {
    ToolError::failed(format!("cannot {action} {shown}: {err}"))
}

/// Runs blocking file system work off the async threads.
async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::failed(format!("file task failed: {e}")))?
}

/// The resolved directory a search starts in, with its shown name.
pub(crate) fn search_root(
    workspace: &Workspace,
    path: Option<&str>,
) -> Result<(PathBuf, String), ToolError> {
    let dir = workspace.resolve(path.unwrap_or("."))?;
    let shown = workspace.display_path(&dir);
    Ok((dir, shown))
}
