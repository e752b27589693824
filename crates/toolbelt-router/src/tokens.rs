//! Prompt-token estimates for tool schemas.

use toolbelt_core::{ToolHandle, ToolSpec, Toolset};

/// Estimated prompt tokens of a tool: bytes of its compact function JSON / 4, rounded up.
///
/// Four bytes per token is the usual figure for English JSON with GPT/Claude
/// tokenizers; it needs no tokenizer and is the same for every router, which
/// is what a comparison needs. Chinese text costs more tokens per byte, so
/// the estimate is low for Chinese descriptions.
pub fn schema_tokens(spec: &ToolSpec) -> usize {
    tokens_of(spec.to_function_json().to_string().len())
}

/// Tokens of `bytes` of function JSON (four bytes a token, rounded up).
fn tokens_of(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// Schema tokens of chosen tools against all tools of a toolset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenSavings {
    /// Tokens of the chosen tools.
    pub chosen: usize,
    /// Tokens of every tool.
    pub total: usize,
}

impl TokenSavings {
    /// Measures `chosen` (names absent from `toolset` count zero) against `toolset`.
    /// Each tool's size is measured once per handle ([`ToolHandle::function_json_len`]).
    pub fn measure<S: AsRef<str>>(toolset: &Toolset, chosen: &[S]) -> Self {
        let tokens = |t: &ToolHandle| tokens_of(t.function_json_len());
        let total = toolset.iter().map(tokens).sum();
        let chosen = chosen
            .iter()
            .filter_map(|n| toolset.get(n.as_ref()))
            .map(tokens)
            .sum();
        Self { chosen, total }
    }

    /// Tokens not sent.
    pub fn saved(&self) -> usize {
        self.total.saturating_sub(self.chosen)
    }

    /// Share of the total that is sent, from 0 to 1.
    pub fn sent_share(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.chosen as f64 / self.total as f64
        }
    }
}
