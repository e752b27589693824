//! Output size limits: truncate, spill to a file, or fail.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::ToolError;
use crate::output::{ToolOutput, Truncation};
use crate::spec::{Overflow, ToolPolicy};

static SPILL_SEQ: AtomicU64 = AtomicU64::new(0);

/// Applies the policy's size limit to `out`.
pub(crate) async fn limit(
    mut out: ToolOutput,
    policy: &ToolPolicy,
    tool: &str,
    spill_dir: &Path,
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
            let seq = SPILL_SEQ.fetch_add(1, Ordering::Relaxed);
            let path = spill_dir.join(format!("{tool}-{}-{seq}.txt", std::process::id()));
            let written = async {
                tokio::fs::create_dir_all(spill_dir).await?;
                tokio::fs::write(&path, out.text.as_bytes()).await
            }
            .await;
            if let Err(e) = written {
                tracing::warn!(tool, error = %e, "could not spill output; truncating instead");
                return Ok(truncate(out, max));
            }
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
            Path::new("/tmp"),
        )
        .await
        .unwrap();
        assert!(out.text.len() <= 500 + 120, "{}", out.text.len());
        assert!(out.text.starts_with('é') && out.text.ends_with('é'));
        assert!(out.text.contains("bytes truncated of 2000"));
        assert_eq!(out.truncated.unwrap().original_bytes, 2000);
    }

    #[tokio::test]
    async fn spills_the_full_text_to_a_file() {
        let dir = std::env::temp_dir().join(format!("toolbelt-spill-test-{}", std::process::id()));
        let text = "line\n".repeat(1000);
        let out = limit(
            ToolOutput::text(text.clone()),
            &policy(1000, Overflow::Spill),
            "big",
            &dir,
        )
        .await
        .unwrap();
        let path = out.truncated.unwrap().spilled_to.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert!(out.text.contains(&path));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn fail_names_the_sizes() {
        let err = limit(
            ToolOutput::text("x".repeat(10)),
            &policy(5, Overflow::Fail),
            "t",
            Path::new("/tmp"),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("output of 10 bytes exceeds the limit of 5 bytes")
        );
    }
}
