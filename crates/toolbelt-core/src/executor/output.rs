//! Output size limits: truncate, spill to a file, or fail.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::ToolError;
use crate::output::{ToolOutput, Truncation};
use crate::spec::{Overflow, ToolPolicy};

/// The executor's private spill directory, made on first use inside `parent`
/// (mode 0700, unpredictable name) and deleted with its files on drop.
pub(crate) struct SpillDir {
    parent: PathBuf,
    dir: OnceLock<Result<tempfile::TempDir, String>>,
}

impl SpillDir {
    pub(crate) fn new(parent: PathBuf) -> Self {
        Self {
            parent,
            dir: OnceLock::new(),
        }
    }

    fn dir(&self) -> Result<&Path, String> {
        self.dir
            .get_or_init(|| {
                std::fs::create_dir_all(&self.parent).map_err(|e| e.to_string())?;
                use std::os::unix::fs::PermissionsExt as _;
                tempfile::Builder::new()
                    .prefix("toolbelt-spill-")
                    .permissions(std::fs::Permissions::from_mode(0o700))
                    .tempdir_in(&self.parent)
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map(tempfile::TempDir::path)
            .map_err(Clone::clone)
    }

    /// Writes `text` to a new file with a random name (mode 0600) and keeps it.
    async fn write(&self, tool: &str, text: &str) -> Result<PathBuf, String> {
        let dir = self.dir()?;
        // Tool names may hold `/` and spaces (ADR 0007); keep a safe slug of it.
        let slug: String = tool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        // Created (O_EXCL, 0600) under a random name, then filled off the async threads.
        let file = tempfile::Builder::new()
            .prefix(&format!("{slug}-"))
            .suffix(".txt")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .tempfile_in(dir)
            .map_err(|e| e.to_string())?;
        let (file, path) = file.keep().map_err(|e| e.to_string())?;
        let mut file = tokio::fs::File::from_std(file);
        tokio::io::AsyncWriteExt::write_all(&mut file, text.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        // tokio's File completes writes in the background; wait for them.
        tokio::io::AsyncWriteExt::flush(&mut file)
            .await
            .map_err(|e| e.to_string())?;
        Ok(path)
    }
}

/// Caps the text of an error the way outputs are capped (head and tail kept).
pub(crate) fn limit_error(err: ToolError, max: usize) -> ToolError {
    let cap = |text: String| {
        if text.len() <= max {
            text
        } else {
            truncate(ToolOutput::text(text), max).text
        }
    };
    match err {
        ToolError::Failed { message, retryable } => ToolError::Failed {
            message: cap(message),
            retryable,
        },
        ToolError::Denied { reason } => ToolError::Denied {
            reason: cap(reason),
        },
        other => other,
    }
}

/// Applies the policy's size limit to `out`.
pub(crate) async fn limit(
    mut out: ToolOutput,
    policy: &ToolPolicy,
    tool: &str,
    spill: &SpillDir,
) -> Result<ToolOutput, ToolError> {
    let max = policy.max_output_bytes;
    let total = out.text.len();
    if total <= max {
        return Ok(out);
    }
    match policy.on_overflow {
        Overflow::Fail => Err(ToolError::failed(format!(
            "output of {total} bytes exceeds the limit of {max} bytes; narrow the request \
             (a smaller range, a filter, fewer items) and call again"
        ))),
        Overflow::Spill => {
            let path = match spill.write(tool, &out.text).await {
                Ok(path) => path,
                Err(e) => {
                    tracing::warn!(tool, error = %e, "could not spill output; truncating instead");
                    return Ok(truncate(out, max));
                }
            };
            let preview_len = floor_char_boundary(&out.text, max.saturating_sub(200).max(max / 2));
            let shown = path.display().to_string();
            let mut text = out.text[..preview_len].to_owned();
            text.push_str(&format!(
                "\n[output truncated: {total} bytes in all, first {preview_len} shown; \
                 the full output is in {shown}; read it in parts]"
            ));
            out.text = text;
            out.json = None;
            out.truncated = Some(Truncation {
                original_bytes: total,
                kept_bytes: preview_len,
                spilled_to: Some(shown),
            });
            Ok(out)
        }
        _ => Ok(truncate(out, max)),
    }
}

/// Keeps about 80% of the budget from the head and 20% from the tail.
fn truncate(mut out: ToolOutput, max: usize) -> ToolOutput {
    let total = out.text.len();
    let budget = max.saturating_sub(160);
    let head_end = floor_char_boundary(&out.text, budget * 4 / 5);
    let tail_start = ceil_char_boundary(&out.text, total - (budget - budget * 4 / 5));
    let cut = tail_start - head_end;
    let text = format!(
        "{}\n[... {cut} bytes truncated of {total}; ask for a narrower range or filter to see them ...]\n{}",
        &out.text[..head_end],
        &out.text[tail_start..]
    );
    out.truncated = Some(Truncation {
        original_bytes: total,
        kept_bytes: total - cut,
        spilled_to: None,
    });
    out.text = text;
    out.json = None;
    out
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(max: usize, on_overflow: Overflow) -> ToolPolicy {
        ToolPolicy {
            max_output_bytes: max,
            on_overflow,
            ..ToolPolicy::read_only()
        }
    }

    #[tokio::test]
    async fn truncates_keeping_head_and_tail_on_char_boundaries() {
        let text = "é".repeat(1000); // 2000 bytes
        let out = limit(
            ToolOutput::text(text),
            &policy(500, Overflow::Truncate),
            "t",
            &SpillDir::new(std::env::temp_dir()),
        )
        .await
        .unwrap();
        assert!(out.text.len() <= 500 + 120, "{}", out.text.len());
        assert!(out.text.starts_with('é') && out.text.ends_with('é'));
        assert!(out.text.contains("bytes truncated of 2000"));
        assert_eq!(out.truncated.unwrap().original_bytes, 2000);
    }

    #[tokio::test]
    async fn spills_the_full_text_to_a_private_file_removed_with_the_dir() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(parent.path().to_path_buf());
        let text = "line\n".repeat(1000);
        let mut paths = Vec::new();
        for _ in 0..2 {
            let out = limit(
                ToolOutput::text(text.clone()),
                &policy(1000, Overflow::Spill),
                "big/tool name",
                &spill,
            )
            .await
            .unwrap();
            let path = PathBuf::from(out.truncated.unwrap().spilled_to.unwrap());
            assert!(
                std::fs::read_to_string(&path).unwrap() == text,
                "spilled text differs"
            );
            assert!(out.text.contains(&path.display().to_string()));
            paths.push(path);
        }
        assert_ne!(paths[0], paths[1]);
        let dir = paths[0].parent().unwrap().to_path_buf();
        assert_eq!(dir.parent().unwrap(), parent.path());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&paths[0]), 0o600);
        let name = paths[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("big_tool_name-") && name.len() > "big_tool_name-.txt".len());
        drop(spill);
        assert!(!dir.exists(), "the spill directory outlived its executor");
    }

    #[test]
    fn error_messages_are_capped_like_outputs() {
        let err = limit_error(ToolError::failed("x".repeat(100_000)), 1000);
        let ToolError::Failed { message, .. } = err else {
            panic!("kind changed")
        };
        assert!(message.len() < 1200, "{}", message.len());
        assert!(message.contains("bytes truncated of 100000"));
        let small = limit_error(ToolError::failed("short"), 1000);
        assert_eq!(small, ToolError::failed("short"));
    }

    #[tokio::test]
    async fn fail_names_the_sizes() {
        let err = limit(
            ToolOutput::text("x".repeat(10)),
            &policy(5, Overflow::Fail),
            "t",
            &SpillDir::new(std::env::temp_dir()),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("output of 10 bytes exceeds the limit of 5 bytes")
        );
    }
}
