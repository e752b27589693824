//! [`Completer`] and [`LlmRouter`]: a model choosing tool groups.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;
use toolbelt_core::{BoxFuture, Toolset};

use crate::decision::{RouteDecision, RouteRequest, ScoredTool};
use crate::error::RouteError;
use crate::keyword::{KeywordGroup, KeywordRouter};
use crate::lexical::LexicalRouter;
use crate::router::{AnyRouter, Router};

/// A model that answers a prompt with text (the agent adapts its chat provider).
pub trait Completer: Send + Sync + 'static {
    /// Answers `user` under `system` with plain text (the LLM router asks for JSON).
    fn complete<'a>(
        &'a self,
        system: &'a str,
        user: &'a str,
    ) -> BoxFuture<'a, Result<String, RouteError>>;
}

/// The model's answer: `{"tools": [...groups], "direct": bool, "clarify": "question" | null}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LlmAnswer {
    /// Groups (or tool names) chosen.
    pub tools: Vec<String>,
    /// No tool is needed.
    pub direct: bool,
    /// A clarifying question, when the request is too ambiguous.
    pub clarify: Option<String>,
}

impl LlmAnswer {
    /// Parses a model's answer leniently: code fences, prose around the JSON
    /// object, `"groups"` for `"tools"`, a single string for a list, `"true"`
    /// for `true` and empty questions are accepted.
    ///
    /// # Errors
    /// A message saying what is missing or malformed.
    pub fn parse(text: &str) -> Result<Self, String> {
        let start = text.find('{').ok_or("no JSON object in the answer")?;
        let end = text.rfind('}').ok_or("no closing brace in the answer")?;
        if end < start {
            return Err("no JSON object in the answer".to_owned());
        }
        let value: Value = serde_json::from_str(&text[start..=end])
            .or_else(|_| first_object(&text[start..]))
            .map_err(|e| format!("answer is not valid JSON: {e}"))?;
        let obj = value.as_object().ok_or("answer is not a JSON object")?;
        let tools = match obj.get("tools").or_else(|| obj.get("groups")) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|v| v.as_str().map(|s| s.trim().to_owned()))
                .filter(|s| !s.is_empty())
                .collect(),
            Some(other) => return Err(format!("\"tools\" must be a list of names, found {other}")),
        };
        let direct = match obj.get("direct") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
            Some(other) => return Err(format!("\"direct\" must be a boolean, found {other}")),
        };
        let clarify = match obj.get("clarify") {
            Some(Value::String(q)) if !q.trim().is_empty() => Some(q.trim().to_owned()),
            _ => None,
        };
        if tools.is_empty() && !direct && clarify.is_none() {
            return Err("answer chooses no group, is not direct and asks nothing".to_owned());
        }
        Ok(Self {
            tools,
            direct,
            clarify,
        })
    }
}

/// Parses the first complete JSON value of `text`, ignoring what follows.
pub(crate) fn first_object(text: &str) -> Result<Value, serde_json::Error> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match stream.next() {
        Some(result) => result,
        None => serde_json::from_str(text),
    }
}

/// Routes by asking a model which tool groups a request needs.
///
/// Groups are the keyword groups given with [`LlmRouter::with_groups`], or
/// else the tags of the toolset. Any failure (the model errs, the answer is
/// not JSON, it names no known group) hands the request to the next router
/// (lexical by default): this router never fails a request.
#[derive(Clone)]
pub struct LlmRouter {
    completer: Arc<dyn Completer>,
    next: AnyRouter,
    groups: Option<Vec<KeywordGroup>>,
    max_listed: usize,
}

impl std::fmt::Debug for LlmRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmRouter")
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl LlmRouter {
    /// A router asking `completer`, falling back to a [`LexicalRouter`].
    pub fn new(completer: impl Completer) -> Self {
        Self {
            completer: Arc::new(completer),
            next: AnyRouter::new(LexicalRouter::default()),
            groups: None,
            max_listed: 8,
        }
    }

    /// The router used when the model fails.
    #[must_use]
    pub fn with_next(mut self, next: AnyRouter) -> Self {
        self.next = next;
        self
    }

    /// Offers these groups instead of the toolset's tags.
    #[must_use]
    pub fn with_groups(mut self, groups: Vec<KeywordGroup>) -> Self {
        self.groups = Some(groups);
        self
    }

    /// The groups offered for `toolset`: `(name, tools)`.
    fn groups_for(&self, toolset: &Toolset) -> Vec<(String, Vec<String>)> {
        if let Some(groups) = &self.groups {
            return groups
                .iter()
                .map(|g| (g.name.clone(), KeywordRouter::group_tools(g, toolset)))
                .filter(|(_, tools)| !tools.is_empty())
                .collect();
        }
        let mut groups: Vec<(String, Vec<String>)> = toolset
            .tags()
            .into_iter()
            .map(|(tag, _)| {
                let tools = toolset.with_tag(&tag).names();
                (tag, tools)
            })
            .collect();
        let untagged: Vec<String> = toolset
            .iter()
            .filter(|t| t.spec().tags.is_empty())
            .map(|t| t.name().to_string())
            .collect();
        groups.extend(untagged.into_iter().map(|name| (name.clone(), vec![name])));
        groups
    }

    /// The system prompt listing `groups`.
    pub fn system_prompt(&self, toolset: &Toolset) -> String {
        let mut prompt = String::from(
            "You route a user's request to the tool groups it needs. \
             Choose the most relevant groups (usually 1 or 2).\n\nTool groups:\n",
        );
        for (name, tools) in self.groups_for(toolset) {
            let shown = tools.len().min(self.max_listed);
            let more = if tools.len() > shown { ", ..." } else { "" };
            let _ = writeln!(prompt, "- {name}: {}{more}", tools[..shown].join(", "));
        }
        prompt.push_str(
            "\nAnswer with one JSON object and nothing else:\n\
             {\"tools\": [\"group\", ...], \"direct\": false, \"clarify\": null}\n\
             - \"direct\": true when no tool is needed (a greeting, general knowledge); then \"tools\" is [].\n\
             - \"clarify\": a short question to ask the user when the request is too ambiguous to act on; otherwise null.\n",
        );
        prompt
    }

    fn user_prompt(request: &RouteRequest) -> String {
        let mut user = String::new();
        let recent = request.recent.iter().rev().take(4).collect::<Vec<_>>();
        if !recent.is_empty() {
            user.push_str("Recent conversation:\n");
            for line in recent.into_iter().rev() {
                let _ = writeln!(user, "- {}", crate::index::truncate(line, 500));
            }
            user.push('\n');
        }
        let _ = write!(
            user,
            "Request: {}",
            crate::index::truncate(&request.input, crate::text::MAX_QUERY_BYTES)
        );
        user
    }

    /// Turns a parsed answer into a decision.
    fn decision(&self, answer: LlmAnswer, toolset: &Toolset) -> Result<RouteDecision, String> {
        if let Some(question) = answer.clarify {
            return Ok(RouteDecision::clarify("llm", question));
        }
        let groups = self.groups_for(toolset);
        let mut chosen = Vec::new();
        let mut tools: Vec<ScoredTool> = Vec::new();
        for name in &answer.tools {
            let found: Vec<String> = match groups.iter().find(|(g, _)| g.eq_ignore_ascii_case(name))
            {
                Some((g, members)) => {
                    chosen.push(g.clone());
                    members.clone()
                }
                None if toolset.contains(name) => vec![name.clone()],
                None => {
                    tracing::debug!(group = %name, "llm router: model named an unknown group");
                    Vec::new()
                }
            };
            for tool in found {
                if !tools.iter().any(|t| t.name == tool) {
                    tools.push(ScoredTool {
                        name: tool,
                        score: 1.0,
                    });
                }
            }
        }
        if tools.is_empty() {
            if answer.direct {
                return Ok(RouteDecision::direct("llm", "llm: no tool needed"));
            }
            return Err(format!("model chose no known group: {:?}", answer.tools));
        }
        let reason = format!("llm: chose {}", chosen.join(", "));
        let mut d = RouteDecision::tools("llm", tools, reason);
        d.groups = chosen;
        Ok(d)
    }

    async fn decide(&self, request: &RouteRequest) -> RouteDecision {
        let system = self.system_prompt(&request.toolset);
        let user = Self::user_prompt(request);
        let failure = match self.completer.complete(&system, &user).await {
            Ok(text) => {
                match LlmAnswer::parse(&text).and_then(|a| self.decision(a, &request.toolset)) {
                    Ok(d) => return d,
                    Err(e) => e,
                }
            }
            Err(e) => e.to_string(),
        };
        tracing::warn!(error = %failure, next = self.next.name(), "llm router failed; using the next router");
        let mut d = self.next.route_or_fallback(request).await;
        d.reason = format!("llm failed ({failure}); {}", d.reason);
        d
    }
}

impl Router for LlmRouter {
    fn name(&self) -> &'static str {
        "llm"
    }

    async fn route(&self, request: &RouteRequest) -> Result<RouteDecision, RouteError> {
        Ok(self.decide(request).await)
    }
}
