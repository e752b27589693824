//! [`LlmReranker`] and [`RerankRouter`]: a model reordering the top of a ranking, the LLM tier
//! of routing (off by default: it costs a model call per request).

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;

use crate::decision::{RouteDecision, RouteOutcome, RouteRequest, ScoredTool};
use crate::error::RouteError;
use crate::hybrid::HybridRouter;
use crate::llm::Completer;
use crate::router::Router;

/// Asks a model which of the best-ranked tools a request needs, and moves those to the top.
///
/// The model sees the request (with up to four earlier turns) and the top `top_n` tools of a
/// ranking as a numbered list of `name: description`, and answers
/// `{"tools": ["name", ...]}`, most needed first. Its picks come first in its order, then the
/// rest of the ranking in the order it had. Answers are read leniently: names in any case, list
/// numbers (`3` or `"3"`), a JSON object inside prose or a code fence, or, with no JSON at
/// all, the listed names in the order the text mentions them. A failure (the model errs, or
/// names no listed tool) keeps the ranking as it was and says why in [`Reranked::failure`]:
/// the reranker never loses a ranking.
///
/// ```
/// # use toolbelt_router::{Completer, LlmReranker, RouteError, RouteRequest, ScoredTool};
/// # use toolbelt_core::{BoxFuture, Toolset};
/// struct Picks;
/// impl Completer for Picks {
///     fn complete<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<String, RouteError>> {
///         Box::pin(async { Ok(r#"{"tools": ["b"]}"#.to_owned()) })
///     }
/// }
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let ranked = vec![ScoredTool { name: "a".into(), score: 0.9 }, ScoredTool { name: "b".into(), score: 0.5 }];
/// let request = RouteRequest::new("do b", Toolset::empty());
/// let reranked = LlmReranker::new(Picks).rerank(&request, ranked).await;
/// assert_eq!(reranked.names(), ["b", "a"]);
/// # });
/// ```
#[derive(Clone)]
pub struct LlmReranker {
    completer: Arc<dyn Completer>,
    top_n: usize,
    description_chars: usize,
}

impl std::fmt::Debug for LlmReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmReranker")
            .field("top_n", &self.top_n)
            .field("description_chars", &self.description_chars)
            .finish_non_exhaustive()
    }
}

/// A ranking after [`LlmReranker::rerank`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Reranked {
    /// The tools, best first. Scores are `1 / (1 + position)` when the model answered, else
    /// the ranking's own.
    pub tools: Vec<ScoredTool>,
    /// How many tools at the top the model picked (0 on a failure).
    pub picked: usize,
    /// Why the ranking was kept as it was, when it was.
    pub failure: Option<String>,
}

impl Reranked {
    /// The tools' names, best first.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

impl LlmReranker {
    /// Tools shown to the model by default.
    pub const DEFAULT_TOP_N: usize = 10;
    /// The most tools that can be shown.
    pub const MAX_TOP_N: usize = 50;
    /// Picks taken from one answer at most.
    const MAX_PICKS: usize = 5;

    /// A reranker asking `completer` about the top [`Self::DEFAULT_TOP_N`] tools.
    pub fn new(completer: impl Completer) -> Self {
        Self::shared(Arc::new(completer))
    }

    /// A reranker asking a shared completer.
    pub fn shared(completer: Arc<dyn Completer>) -> Self {
        Self {
            completer,
            top_n: Self::DEFAULT_TOP_N,
            description_chars: 160,
        }
    }

    /// Shows the model the top `n` tools (at least 2, at most [`Self::MAX_TOP_N`]).
    #[must_use]
    pub fn with_top_n(mut self, n: usize) -> Self {
        self.top_n = n.clamp(2, Self::MAX_TOP_N);
        self
    }

    /// Cuts each description shown to `chars` characters (default 160).
    #[must_use]
    pub fn with_description_chars(mut self, chars: usize) -> Self {
        self.description_chars = chars.max(20);
        self
    }

    /// How many tools the model sees.
    pub fn top_n(&self) -> usize {
        self.top_n
    }

    /// The system and user prompts for `request` over `candidates` (descriptions from the
    /// request's toolset).
    pub fn prompts(&self, request: &RouteRequest, candidates: &[ScoredTool]) -> (String, String) {
        let system = "You choose the tools a request needs from a numbered list.\n\
            Answer with one JSON object and nothing else: {\"tools\": [\"tool_name\", ...]}\n\
            - List the tools needed to do the request, the most important first (usually 1 to 3).\n\
            - Use only names from the list.";
        let mut user = String::new();
        let recent: Vec<&String> = request.recent.iter().rev().take(4).collect();
        if !recent.is_empty() {
            user.push_str("Earlier in the conversation:\n");
            for line in recent.into_iter().rev() {
                let _ = writeln!(user, "- {}", crate::index::truncate(line, 300));
            }
            user.push('\n');
        }
        user.push_str("Tools:\n");
        for (i, tool) in candidates.iter().enumerate() {
            let description = request
                .toolset
                .get(&tool.name)
                .map(|t| one_line(&t.spec().description, self.description_chars))
                .unwrap_or_default();
            let _ = writeln!(user, "{}. {}: {description}", i + 1, tool.name);
        }
        let _ = write!(
            user,
            "\nRequest: {}",
            crate::index::truncate(&request.input, crate::text::MAX_QUERY_BYTES)
        );
        (system.to_owned(), user)
    }

    /// Reorders the top [`Self::top_n`] of `ranked` by the model's answer for `request`.
    pub async fn rerank(&self, request: &RouteRequest, ranked: Vec<ScoredTool>) -> Reranked {
        if ranked.len() < 2 {
            return Reranked {
                tools: ranked,
                picked: 0,
                failure: Some("fewer than two tools to choose from".to_owned()),
            };
        }
        let shown = ranked.len().min(self.top_n);
        let (system, user) = self.prompts(request, &ranked[..shown]);
        let names: Vec<&str> = ranked[..shown].iter().map(|t| t.name.as_str()).collect();
        let picks = match self.completer.complete(&system, &user).await {
            Ok(text) => parse_picks(&text, &names),
            Err(e) => Err(e.to_string()),
        };
        match picks {
            Ok(picks) => {
                let mut order: Vec<usize> = picks;
                order.truncate(Self::MAX_PICKS);
                let picked = order.len();
                let rest: Vec<usize> = (0..ranked.len()).filter(|i| !order.contains(i)).collect();
                order.extend(rest);
                let tools = order
                    .into_iter()
                    .enumerate()
                    .map(|(position, i)| ScoredTool {
                        name: ranked[i].name.clone(),
                        score: 1.0 / (1.0 + position as f32),
                    })
                    .collect();
                Reranked {
                    tools,
                    picked,
                    failure: None,
                }
            }
            Err(failure) => {
                tracing::warn!(%failure, "llm reranker failed; the ranking is kept");
                Reranked {
                    tools: ranked,
                    picked: 0,
                    failure: Some(failure),
                }
            }
        }
    }
}

/// `text` on one line, cut to `chars` characters.
fn one_line(text: &str, chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// The positions in `names` that a model's answer picks, in its order, without repeats.
///
/// # Errors
/// A message when the answer picks no listed tool.
pub(crate) fn parse_picks(text: &str, names: &[&str]) -> Result<Vec<usize>, String> {
    let mut picks = Vec::new();
    let mut push = |i: usize| {
        if !picks.contains(&i) {
            picks.push(i);
        }
    };
    let find = |item: &str| -> Option<usize> {
        let item = item.trim().trim_matches('`');
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(item)) {
            return Some(i);
        }
        // "3" or "3. name": a list number.
        let digits: String = item.chars().take_while(char::is_ascii_digit).collect();
        let number: usize = digits.parse().ok()?;
        (1..=names.len()).contains(&number).then(|| number - 1)
    };
    if let Some(value) = json_object(text) {
        let items = ["tools", "tool", "names", "groups"]
            .iter()
            .find_map(|key| value.get(key));
        match items {
            Some(Value::Array(items)) => {
                for item in items {
                    let found = match item {
                        Value::String(s) => find(s),
                        Value::Number(n) => n
                            .as_u64()
                            .and_then(|n| usize::try_from(n).ok())
                            .filter(|n| (1..=names.len()).contains(n))
                            .map(|n| n - 1),
                        Value::Object(o) => o.get("name").and_then(Value::as_str).and_then(find),
                        _ => None,
                    };
                    if let Some(i) = found {
                        push(i);
                    }
                }
            }
            Some(Value::String(s)) => {
                if let Some(i) = find(s) {
                    push(i);
                }
            }
            _ => {}
        }
    } else {
        // No JSON: the listed names the text mentions, in the order it mentions them.
        let lower = text.to_lowercase();
        let mut mentioned: Vec<(usize, usize)> = names
            .iter()
            .enumerate()
            .filter_map(|(i, name)| mention(&lower, &name.to_lowercase()).map(|at| (at, i)))
            .collect();
        mentioned.sort_unstable();
        for (_, i) in mentioned {
            push(i);
        }
    }
    if picks.is_empty() {
        let shown: String = text.chars().take(200).collect();
        return Err(format!("the answer picks no listed tool: {shown:?}"));
    }
    Ok(picks)
}

/// Where `name` first occurs in `text` as a whole word (not inside a longer name).
fn mention(text: &str, name: &str) -> Option<usize> {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(name).map(|(at, _)| at).find(|&at| {
        let before = text[..at].chars().next_back();
        let mut after = text[at + name.len()..].chars();
        // A dot goes on a name (`fs.read`) only when more of the name follows it.
        let continues = match after.next() {
            Some('.') => after.next().is_some_and(char::is_alphanumeric),
            next => next.is_some_and(word),
        };
        !before.is_some_and(|c| word(c) || c == '.') && !continues
    })
}

/// The first JSON object in `text` (code fences and prose around it allowed).
fn json_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    crate::llm::first_object(&text[start..])
        .ok()
        .filter(Value::is_object)
}

/// A [`HybridRouter`] whose decisions an [`LlmReranker`] revises: the model's picks among the
/// top of the hybrid ranking come first, then the tools the hybrid router chose, in its order,
/// as many as it chose in all (a pick it left out takes the place of its last choice; pinned
/// tools always stay). Requests the hybrid router answers without tools, asks to clarify, or
/// falls back on are left as they are. The decision's reason says what the model picked, or
/// why the ranking was kept.
#[derive(Debug, Clone)]
pub struct RerankRouter {
    base: HybridRouter,
    reranker: LlmReranker,
}

impl RerankRouter {
    /// `base` revised by `reranker`.
    pub fn new(base: HybridRouter, reranker: LlmReranker) -> Self {
        Self { base, reranker }
    }

    /// The hybrid router underneath.
    pub fn base(&self) -> &HybridRouter {
        &self.base
    }

    /// The reranker.
    pub fn reranker(&self) -> &LlmReranker {
        &self.reranker
    }

    /// The hybrid decision for `request`, revised by the model.
    pub async fn decide(&self, request: &RouteRequest) -> RouteDecision {
        let mut decision = self.base.decide(request).await;
        if decision.outcome != RouteOutcome::Tools || decision.fallback {
            return decision;
        }
        let ranking = self.base.rank_request(request, self.reranker.top_n()).await;
        let reranked = self.reranker.rerank(request, ranking.tools).await;
        if let Some(failure) = reranked.failure {
            decision.reason = format!("{}; llm rerank kept it ({failure})", decision.reason);
            return decision;
        }
        let keep = decision.tools.len();
        let picks: Vec<ScoredTool> = reranked
            .tools
            .into_iter()
            .take(reranked.picked.min(keep))
            .collect();
        let names: Vec<&str> = picks.iter().map(|t| t.name.as_str()).collect();
        decision.reason = format!(
            "{}; llm rerank picked {}",
            decision.reason,
            names.join(", ")
        );
        let pinned = &self.base.config().pinned;
        let mut rest: Vec<ScoredTool> = decision
            .tools
            .into_iter()
            .filter(|t| !names.contains(&t.name.as_str()))
            .collect();
        // As many tools as the hybrid router chose: its last choices give way to the picks,
        // pinned tools never do.
        while picks.len() + rest.len() > keep {
            match rest.iter().rposition(|t| !pinned.contains(&t.name)) {
                Some(last) => {
                    rest.remove(last);
                }
                None => break,
            }
        }
        let count = picks.len() + rest.len();
        decision.tools = picks
            .into_iter()
            .chain(rest)
            .enumerate()
            .map(|(position, t)| ScoredTool {
                name: t.name,
                score: (count - position) as f32 / count as f32,
            })
            .collect();
        decision
    }
}

impl Router for RerankRouter {
    fn name(&self) -> &'static str {
        "hybrid+llm"
    }

    async fn route(&self, request: &RouteRequest) -> Result<RouteDecision, RouteError> {
        Ok(self.decide(request).await)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_picks;

    const NAMES: [&str; 4] = ["file_read", "file_write", "web_fetch", "read"];

    #[test]
    fn answers_are_read_leniently() {
        let cases: [(&str, &[usize]); 8] = [
            (r#"{"tools": ["web_fetch", "file_read"]}"#, &[2, 0]),
            ("```json\n{\"tools\": [\"FILE_WRITE\"]}\n```", &[1]),
            (r#"Sure. {"tools": [3, "1"]} hope that helps"#, &[2, 0]),
            (
                r#"{"tools": ["2. file_write", "file_write", "nope"]}"#,
                &[1],
            ),
            (r#"{"tool": "read"}"#, &[3]),
            (r#"{"tools": [{"name": "web_fetch"}]}"#, &[2]),
            ("I would use web_fetch, then file_read.", &[2, 0]),
            // `read` inside `file_read` is not a mention of `read`.
            ("file_read only", &[0]),
        ];
        for (text, want) in cases {
            assert_eq!(parse_picks(text, &NAMES).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn an_answer_picking_nothing_listed_is_an_error_quoting_it() {
        for text in [
            r#"{"tools": []}"#,
            r#"{"tools": ["nope", 9]}"#,
            "no idea",
            "",
        ] {
            let err = parse_picks(text, &NAMES).unwrap_err();
            assert!(err.contains("picks no listed tool"), "{text}: {err}");
        }
    }
}
