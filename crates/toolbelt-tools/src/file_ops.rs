//! Group `file_ops`: `file_read`, `file_write`, `file_edit`, `list_dir`, `file_search`.
//!
//! Every path goes through [`Workspace`]; writes are atomic (a temporary file
//! in the same directory, then a rename), so a reader never sees half a file.

mod search;

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use serde_json::json;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;

use crate::workspace::{Workspace, WorkspaceError};

pub use self::search::{FileSearchTool, file_search};

/// Bytes inspected for a NUL to tell binary files from text.
const SNIFF_BYTES: usize = 8192;
/// `1 file`, `3 files`.
pub(crate) fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Whether `path` names a table whose first line is a header (`.csv`, `.tsv`).
pub(crate) fn is_table(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".csv") || lower.ends_with(".tsv")
}

/// A settings or data file whose lines are not its facts (`.json`, `.yaml`, `.yml`, `.toml`).
fn is_settings(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".json", ".yaml", ".yml", ".toml"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// `2 .py files, 1 .txt file and 1 folder (4 entries in all)`: what a folder holds, by
/// kind, the counts first, so a count by type needs no arithmetic (asked how many `.py`
/// files a folder holds, the 1.5B model answered with its number of entries, which the
/// listing gave first).
fn kinds(folders: usize, files: &[&str], links: usize) -> String {
    let mut by_extension: std::collections::BTreeMap<String, usize> = Default::default();
    for name in files {
        let extension = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => format!(".{ext}"),
            _ => String::new(),
        };
        *by_extension.entry(extension).or_default() += 1;
    }
    let mut counted: Vec<(String, usize)> = by_extension.into_iter().collect();
    counted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let plural = |n: usize, what: &str| plural(n as u64, what);
    let mut parts: Vec<String> = counted
        .into_iter()
        .map(|(ext, n)| {
            if ext.is_empty() {
                format!("{} without an extension", plural(n, "file"))
            } else {
                plural(n, &format!("{ext} file"))
            }
        })
        .collect();
    if folders > 0 {
        parts.push(plural(folders, "folder"));
    }
    if links > 0 {
        parts.push(plural(links, "link"));
    }
    let total = folders + files.len() + links;
    let listed = match parts.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => parts.concat(),
    };
    if parts.len() > 1 {
        format!("{listed} ({total} entries in all)")
    } else {
        listed
    }
}

/// Most entries `list_dir` returns.
const MAX_DIR_ENTRIES: usize = 1000;

/// Read a text file of the workspace, whole or by line range (1-based, inclusive).
///
/// Large files must be read by range. Binary files are refused.
// A whole file of more than one line starts with `[path: N lines]`, its line count. This is
// said in the output rather than the description: the description is what the router ranks,
// and this sentence made `file_write` outrank `file_read` for a Chinese request to read a file.
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
    let workspace = workspace.clone();
    // Resolving (canonicalize) and opening are blocking file system work.
    blocking(move || {
        let file = workspace.resolve(&path)?;
        let shown = workspace.display_path(&file);
        let handle = workspace
            .open_read(&file)
            .map_err(|e| io_error("open", &shown, &e))?;
        read_lines(handle, &shown, start, end_line, ranged, cap)
    })
    .await
}

pub(super) fn read_lines(
    handle: std::fs::File,
    shown: &str,
    start: u64,
    end: Option<u64>,
    ranged: bool,
    cap: u64,
) -> Result<ToolOutput, ToolError> {
    let meta = handle.metadata().map_err(|e| io_error("read", shown, &e))?;
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "{shown} is a directory; use list_dir to see what it holds"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::failed(format!(
            "{shown} is not a regular file ({}); file_read reads regular files only",
            kind_of(&meta)
        )));
    }
    let size = meta.len();
    if !ranged && size > cap {
        return Err(ToolError::failed(format!(
            "{shown} is {size} bytes, more than the {cap}-byte limit for a whole read; \
             read it in parts with start_line and end_line"
        )));
    }
    let mut reader = std::io::BufReader::new(handle);
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
        if number + 1 < start {
            // Lines before the range are skipped without being held in memory.
            if !skip_line(&mut reader).map_err(|e| io_error("read", shown, &e))? {
                break;
            }
            number += 1;
            continue;
        }
        line.clear();
        // Never buffer more of one line than could still be returned.
        let room = cap.saturating_sub(text.len() as u64) + 1;
        let n = (&mut reader)
            .take(room)
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error("read", shown, &e))?;
        if n == 0 {
            break;
        }
        number += 1;
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
            format!(
                "{shown} has only {number} line{}",
                if number == 1 { "" } else { "s" }
            ),
        ));
    }
    let mut out = if ranged || more {
        // How many lines the range holds: asked for a CSV's rows without its header, the
        // 1.5B model read lines 2-8 and answered 8.
        let count = last + 1 - start.min(last + 1);
        let count = plural(count, "line");
        let tail = if more {
            format!(" ({count}), more follow")
        } else {
            format!(" ({count}, end of file)")
        };
        ToolOutput::text(format!("[{shown}: lines {start}-{last}{tail}]\n{text}"))
    } else if text.is_empty() {
        ToolOutput::text(format!("[{shown} is empty]"))
    } else if number > 1 && !is_settings(shown) {
        // The count up front (not for a settings file: asked which theme a JSON file sets,
        // the 1.5B model answered with its line count, "5 lines"): small models asked for lines or rows miscount them (asked for
        // a CSV's rows without its header, the 1.5B model answered with its line count).
        let rows = if is_table(shown) {
            format!(": a header and {}", plural(number - 1, "row"))
        } else {
            String::new()
        };
        ToolOutput::text(format!("[{shown}: {number} lines{rows}]\n{text}"))
    } else {
        ToolOutput::text(text)
    };
    out.json = Some(json!({
        "path": shown,
        "start_line": start,
        "end_line": last,
        "more": more,
        "bytes": size,
        "total_lines": (!more).then_some(number),
    }));
    Ok(out)
}

/// Consumes one line (through its `\n`) without keeping it; `false` at end of file.
fn skip_line<R: BufRead>(reader: &mut R) -> std::io::Result<bool> {
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            reader.consume(i + 1);
            return Ok(true);
        }
        let n = buf.len();
        reader.consume(n);
    }
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// Refuses writes under `.git` unless the workspace allows them.
fn check_git_write(workspace: &Workspace, resolved: &Path, shown: &str) -> Result<(), ToolError> {
    if workspace.is_in_git_dir(resolved) && !workspace.allows_git_writes() {
        return Err(ToolError::Denied {
            reason: format!(
                "{shown} is inside a .git directory; file tools do not write there \
                 (hooks and config in it run code). Use git_write, or the host allows \
                 it with Workspace::with_git_writes"
            ),
        });
    }
    Ok(())
}

/// `file_edit` with an empty `old_text`: creates `path` holding `new_text` when no file is
/// there; otherwise changes nothing and says what to give instead.
fn create_with_edit(
    workspace: &Workspace,
    path: &str,
    new_text: &str,
) -> Result<String, ToolError> {
    let (target, shown) = write_target(workspace, path)?;
    if target.exists() {
        return Err(ToolError::invalid_argument(
            "/old_text",
            format!(
                "must not be empty: {shown} exists. Give the exact text to replace (read the \
                 file first), or use file_write to replace the whole file"
            ),
        ));
    }
    keeps_json_valid(&shown, None, new_text)?;
    write_text(workspace, &target, &shown, new_text)?;
    Ok(format!(
        "created {shown} ({} bytes): it did not exist and old_text was empty",
        new_text.len()
    ))
}

/// Where a write of `path` goes, and its shown name: refused under `.git` (see
/// [`check_git_write`]) and when a directory is there.
fn write_target(workspace: &Workspace, path: &str) -> Result<(PathBuf, String), ToolError> {
    let target = workspace.resolve_for_write(path)?;
    let shown = workspace.display_path(&target);
    check_git_write(workspace, &target, &shown)?;
    if target.is_dir() {
        return Err(ToolError::failed(format!(
            "{shown} is a directory; give a file path"
        )));
    }
    Ok((target, shown))
}

/// Refuses a write that would leave a `.json` file unreadable as JSON, when it was valid
/// before (`before`: its content; `None` for a new file), naming where the JSON breaks.
/// Seen with the 1.5B model: "set retries to 10" in `{"retries": 5}` edited into text
/// that was no longer JSON; a refusal that says where lets it try again.
fn keeps_json_valid(shown: &str, before: Option<&str>, after: &str) -> Result<(), ToolError> {
    if !shown.to_ascii_lowercase().ends_with(".json")
        || before.is_some_and(|b| serde_json::from_str::<serde::de::IgnoredAny>(b).is_err())
    {
        return Ok(());
    }
    match serde_json::from_str::<serde::de::IgnoredAny>(after) {
        Ok(_) => Ok(()),
        Err(e) => {
            let line = after.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
            Err(ToolError::failed(format!(
                "nothing was changed: {shown} would not be valid JSON ({e}; that line \
                 would read `{}`). Keep the quotes around keys and strings, e.g. \
                 `\"key\": 10`",
                line.trim()
            )))
        }
    }
}

/// Writes `content` to `target` atomically (a temporary file, then a rename).
fn write_text(
    workspace: &Workspace,
    target: &Path,
    shown: &str,
    content: &str,
) -> Result<(), ToolError> {
    workspace
        .write_atomic(target, content.as_bytes())
        .map_err(|e| io_error("write", shown, &e))
}

/// Create a text file in the workspace, or replace it if it exists (atomically: a temporary file, then a rename).
#[tool(tags("file_ops"), mutating, timeout = "30s")]
pub async fn file_write(
    ctx: &ToolContext,
    /// Path relative to the workspace root; missing parent directories are created.
    path: String,
    /// The full new content of the file.
    content: String,
) -> Result<String, ToolError> {
    let workspace = Workspace::from_context(ctx)?.clone();
    let bytes = content.len();
    blocking(move || {
        let (target, shown) = write_target(&workspace, &path)?;
        let existed = target.exists();
        if shown.to_ascii_lowercase().ends_with(".json") {
            let cap = workspace.max_read_bytes();
            let before = if existed {
                read_text(&workspace, &target, &shown, cap).ok()
            } else {
                None
            };
            // A file that cannot be read is not guarded: its content is unknown.
            if !existed || before.is_some() {
                keeps_json_valid(&shown, before.as_deref(), &content)?;
            }
        }
        write_text(&workspace, &target, &shown, &content).map(|()| (shown, existed))
    })
    .await
    .map(|(shown, existed)| {
        let verb = if existed { "replaced" } else { "created" };
        format!("{verb} {shown} ({bytes} bytes)")
    })
}

/// Replace exact text in a file of the workspace.
///
/// `old_text` must occur exactly once (or set `replace_all`); the call fails,
/// changing nothing, when the text is absent or ambiguous. Include enough
/// surrounding lines to make it unique. An empty `old_text` creates a file that
/// does not exist yet, holding `new_text`.
#[tool(tags("file_ops"), mutating, timeout = "30s")]
pub async fn file_edit(
    ctx: &ToolContext,
    /// Path relative to the workspace root.
    path: String,
    /// The exact text to replace, whitespace and indentation included (empty: create the file).
    old_text: String,
    /// The replacement text.
    new_text: String,
    /// Replace every occurrence instead of requiring exactly one.
    replace_all: Option<bool>,
) -> Result<String, ToolError> {
    let workspace = Workspace::from_context(ctx)?;
    if old_text.is_empty() {
        // Small models create files with `file_edit` and an empty `old_text`; a file that
        // does not exist yet is created, an existing one is never overwritten this way.
        let workspace = workspace.clone();
        return blocking(move || create_with_edit(&workspace, &path, &new_text)).await;
    }
    if old_text == new_text {
        return Err(ToolError::invalid_argument(
            "/new_text",
            "is the same as old_text; nothing would change",
        ));
    }
    let cap = workspace.max_read_bytes();
    let replace_all = replace_all.unwrap_or(false);
    let workspace = workspace.clone();
    blocking(move || {
        let file = match workspace.resolve(&path) {
            Err(WorkspaceError::NotFound { path }) => {
                return Err(ToolError::failed(format!(
                    "{path:?} does not exist in the workspace, so there is no text to replace; \
                     to create it, call file_write (or file_edit with an empty old_text)"
                )));
            }
            other => other?,
        };
        let shown = workspace.display_path(&file);
        check_git_write(&workspace, &file, &shown)?;
        let original = read_text(&workspace, &file, &shown, cap)?;
        if let Some(span) = json_key_given_a_value(&shown, &original, &old_text, &new_text) {
            // The key's value is set: renaming a key to a number is never what is meant.
            let (start, end) = span?;
            let value = new_text.trim();
            let updated = format!("{}{value}{}", &original[..start], &original[end..]);
            keeps_json_valid(&shown, Some(&original), &updated)?;
            workspace
                .write_atomic(&file, updated.as_bytes())
                .map_err(|e| io_error("write", &shown, &e))?;
            let line = original[..start].matches('\n').count() + 1;
            let now = updated.lines().nth(line - 1).unwrap_or("").trim();
            return Ok(format!(
                "`{}` is a key of {shown}, so its value was set (at line {line}): the line now \
                 reads `{now}`. To rename a key instead, give old_text and new_text as quoted \
                 names",
                old_text.trim().trim_matches('"')
            ));
        }
        let starts: Vec<usize> = original.match_indices(&old_text).map(|(i, _)| i).collect();
        let line_of = |offset: usize| original[..offset].matches('\n').count() + 1;
        match starts.len() {
            0 if !replace_all
                && let Some((start, end)) =
                    unique_match_ignoring_whitespace(&original, &old_text) =>
            {
                // The model's text differs only in whitespace (`port=8080` for
                // `port = 8080`) and names one place: edit it, and say so.
                let mut updated = String::with_capacity(original.len() + new_text.len());
                updated.push_str(&original[..start]);
                updated.push_str(new_text.trim());
                updated.push_str(&original[end..]);
                keeps_json_valid(&shown, Some(&original), &updated)?;
                workspace
                    .write_atomic(&file, updated.as_bytes())
                    .map_err(|e| io_error("write", &shown, &e))?;
                Ok(format!(
                    "replaced 1 occurrence in {shown} (at line {}); old_text matched only when \
                     whitespace is ignored: `{}` was replaced",
                    line_of(start),
                    &original[start..end]
                ))
            }
            0 if !replace_all
                && let Some((start, end, value)) =
                    unique_key_value_match(&original, &old_text, &new_text) =>
            {
                // `port:8080` for `port = 8080`: the same key and value with another
                // separator or quoting, on one line only. The value is replaced, the
                // line keeps its own form.
                let mut updated = String::with_capacity(original.len() + value.len());
                updated.push_str(&original[..start]);
                updated.push_str(&value);
                updated.push_str(&original[end..]);
                keeps_json_valid(&shown, Some(&original), &updated)?;
                workspace
                    .write_atomic(&file, updated.as_bytes())
                    .map_err(|e| io_error("write", &shown, &e))?;
                let line = line_of(start);
                let now = updated.lines().nth(line - 1).unwrap_or("").trim();
                Ok(format!(
                    "replaced 1 occurrence in {shown} (at line {line}); old_text matched as a \
                     key and its value written another way: the line now reads `{now}`"
                ))
            }
            0 => {
                let near = lines_differing_in_whitespace(&original, &old_text);
                Err(ToolError::failed(if near.is_empty() {
                    format!(
                        "old_text was not found in {shown}; nothing was changed. Read the file \
                         again and copy the text exactly, whitespace and indentation included"
                    )
                } else {
                    format!(
                        "old_text was not found in {shown}; nothing was changed. These lines \
                         differ from it only in whitespace:\n{}\nCopy the text exactly, \
                         whitespace and indentation included",
                        near.join("\n")
                    )
                }))
            }
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
                keeps_json_valid(&shown, Some(&original), &updated)?;
                workspace
                    .write_atomic(&file, updated.as_bytes())
                    .map_err(|e| io_error("write", &shown, &e))?;
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

/// `key` and `value` of a one-line `key: value` or `key = value` (quotes around either
/// and a trailing comma left out): `port:8080`, `"retries": 5,`, `host = "localhost"`.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    if line.contains('\n') {
        return None;
    }
    let at = line.find([':', '='])?;
    let key = line[..at].trim().trim_matches(['"', '\'']);
    let value = line[at + 1..]
        .trim()
        .trim_end_matches(',')
        .trim()
        .trim_matches(['"', '\'']);
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    (plain(key) && !value.is_empty()).then_some((key, value))
}

/// Where `old_text`, a `key: value` line, stands in `text` written another way
/// (`port:8080` for `port = 8080`, `retries: 5` for `"retries": 5,`), when exactly one
/// line has that key and value: the byte span of the value there and the value of
/// `new_text` to put in its place (its key must be the same, or it is a value alone).
fn unique_key_value_match(
    text: &str,
    old_text: &str,
    new_text: &str,
) -> Option<(usize, usize, String)> {
    let (key, value) = key_value(old_text)?;
    let new_value = match key_value(new_text) {
        Some((new_key, new_value)) if new_key == key => new_value,
        Some(_) => return None,
        None => new_text.trim().trim_matches(['"', '\'']),
    };
    if new_value.is_empty() || new_value.contains('\n') {
        return None;
    }
    let mut found = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if key_value(line) == Some((key, value)) {
            if found.is_some() {
                return None;
            }
            // The value's span in this line: after the separator, past quotes.
            let at = line.find([':', '='])?;
            let start = at + 1 + line[at + 1..].find(value)?;
            found = Some((offset + start, offset + start + value.len()));
        }
        offset += line.len();
    }
    let (start, end) = found?;
    Some((start, end, new_value.to_owned()))
}

/// An edit of a `.json` file whose `old_text` is a key alone and whose `new_text` is a
/// number, `true`, `false` or `null` ("set retries to 10" as the 1.5B model wrote it:
/// `"old_text": "retries", "new_text": "10"`, which would rename the key, `"10": 5`, still
/// valid JSON): the byte span of that key's value, when the key stands on one line only
/// with a plain value; a refusal saying what to give when it stands on several.
/// `None` when the edit is not of that kind.
fn json_key_given_a_value(
    shown: &str,
    original: &str,
    old_text: &str,
    new_text: &str,
) -> Option<Result<(usize, usize), ToolError>> {
    if !shown.to_ascii_lowercase().ends_with(".json") {
        return None;
    }
    let key = old_text.trim().trim_matches('"');
    let scalar = serde_json::from_str::<serde_json::Value>(new_text.trim())
        .is_ok_and(|v| v.is_number() || v.is_boolean() || v.is_null());
    if key.is_empty() || !scalar {
        return None;
    }
    let quoted = format!("\"{key}\"");
    // Each line holding the key as a key: the byte offset of the line and of its colon.
    let mut found = Vec::new();
    let mut offset = 0;
    for line in original.split_inclusive('\n') {
        if let Some(at) = line.find(&quoted)
            && line[at + quoted.len()..].trim_start().starts_with(':')
        {
            let colon = at + quoted.len() + line[at + quoted.len()..].find(':')?;
            found.push((offset, line, colon));
        }
        offset += line.len();
    }
    match found.as_slice() {
        [] => None,
        [(offset, line, colon)] => {
            let after = &line[colon + 1..];
            let value = after.trim_start();
            let start = colon + 1 + (after.len() - value.len());
            let value = value.trim_end().trim_end_matches(',').trim_end();
            if value.is_empty() || value.starts_with(['{', '[']) {
                return Some(Err(ToolError::failed(format!(
                    "nothing was changed: `{key}` is a key of {shown} whose value is not a \
                     plain value on its line; give the exact old_text to replace"
                ))));
            }
            Some(Ok((offset + start, offset + start + value.len())))
        }
        several => Some(Err(ToolError::failed(format!(
            "nothing was changed: `{key}` is a key on {} lines of {shown}; give old_text with \
             the key and its value as the line to change reads, e.g. `{}`",
            several.len(),
            several[0].1.trim().trim_end_matches(',')
        )))),
    }
}

/// The byte span of `text` that equals `wanted` when whitespace is ignored
/// (from its first to its last non-whitespace character), if there is
/// exactly one; `None` when there is none or more than one.
fn unique_match_ignoring_whitespace(text: &str, wanted: &str) -> Option<(usize, usize)> {
    let needle: Vec<char> = wanted.chars().filter(|c| !c.is_whitespace()).collect();
    if needle.is_empty() {
        return None;
    }
    // The text's non-whitespace characters, each with its byte span.
    let hay: Vec<(usize, char)> = text
        .char_indices()
        .filter(|(_, c)| !c.is_whitespace())
        .collect();
    let mut found = None;
    for start in 0..hay.len().saturating_sub(needle.len() - 1) {
        if hay[start..start + needle.len()]
            .iter()
            .zip(&needle)
            .all(|((_, a), b)| a == b)
        {
            if found.is_some() {
                return None;
            }
            let (last, c) = hay[start + needle.len() - 1];
            found = Some((hay[start].0, last + c.len_utf8()));
        }
    }
    found
}

/// Lines of `text` (at most three, as `N: line`) that equal a line of
/// `wanted` once whitespace is ignored: what a model that wrote `port=8080`
/// for `port = 8080` needs to see to copy the text exactly.
fn lines_differing_in_whitespace(text: &str, wanted: &str) -> Vec<String> {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let wanted: Vec<String> = wanted
        .lines()
        .map(squash)
        .filter(|l| !l.is_empty())
        .collect();
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let line = squash(line);
            !line.is_empty() && wanted.contains(&line)
        })
        .take(3)
        .map(|(i, line)| format!("{}: {line}", i + 1))
        .collect()
}

/// List a directory of the workspace: subdirectories end with `/`, files show their size.
#[tool(tags("file_ops"), read_only, timeout = "30s")]
pub async fn list_dir(
    ctx: &ToolContext,
    /// Directory relative to the workspace root (default: the root).
    path: Option<String>,
) -> Result<String, ToolError> {
    let workspace = Workspace::from_context(ctx)?.clone();
    blocking(move || {
        use rustix::fs::{AtFlags, FileType};
        let dir = workspace.resolve(path.as_deref().unwrap_or("."))?;
        let shown = workspace.display_path(&dir);
        let fd = workspace
            .open_dir(&dir)
            .map_err(|e| io_error("list", &shown, &e))?;
        let entries =
            rustix::fs::Dir::read_from(&fd).map_err(|e| io_error("list", &shown, &e.into()))?;
        let mut lines = Vec::new();
        let mut files: Vec<String> = Vec::new();
        let (mut folders, mut links) = (0, 0);
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list", &shown, &e.into()))?;
            let raw = entry.file_name();
            if raw.to_bytes() == b"." || raw.to_bytes() == b".." {
                continue;
            }
            let name = raw.to_string_lossy().into_owned();
            // Everything about an entry is read relative to the opened directory.
            let stat = rustix::fs::statat(&fd, raw, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| io_error("list", &shown, &e.into()))?;
            let kind = FileType::from_raw_mode(stat.st_mode);
            lines.push(if kind == FileType::Symlink {
                let target = rustix::fs::readlinkat(&fd, raw, Vec::new())
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| "?".to_owned());
                links += 1;
                format!("{name} -> {target}")
            } else if kind == FileType::Directory {
                folders += 1;
                format!("{name}/")
            } else {
                files.push(name.clone());
                format!("{name}  ({} bytes)", stat.st_size)
            });
        }
        // Folders first, then files: listed together, the 1.5B model named files as folders.
        lines.sort_by(|a, b| (!a.ends_with('/'), a).cmp(&(!b.ends_with('/'), b)));
        let total = lines.len();
        if total == 0 {
            return Ok(format!("{shown} is empty"));
        }
        lines.truncate(MAX_DIR_ENTRIES);
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let mut text = format!(
            "{shown} holds {}:\n{}",
            kinds(folders, &files, links),
            lines.join("\n")
        );
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

/// Reads a whole UTF-8 regular file under the size cap.
fn read_text(
    workspace: &Workspace,
    file: &Path,
    shown: &str,
    cap: u64,
) -> Result<String, ToolError> {
    let mut bytes = Vec::new();
    let handle = workspace
        .open_read(file)
        .map_err(|e| io_error("open", shown, &e))?;
    let meta = handle.metadata().map_err(|e| io_error("read", shown, &e))?;
    if !meta.is_file() {
        return Err(ToolError::failed(format!(
            "{shown} is not a regular file ({}); only regular files can be edited",
            kind_of(&meta)
        )));
    }
    handle
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

fn is_binary(head: &[u8]) -> bool {
    head[..head.len().min(SNIFF_BYTES)].contains(&0)
}

pub(super) fn io_error(action: &str, shown: &str, err: &std::io::Error) -> ToolError {
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
