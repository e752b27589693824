//! Schema twins: the OpenAPI description of JSON whose Rust types live below the server.
//!
//! Tool specs (core), declarative definitions (tools), and agent drafts and records (store)
//! travel over the API as they are, but those crates do not depend on utoipa: OpenAPI types
//! live only in `toolbelt-server/src/api/` (ARCHITECTURE). Each type here mirrors one of
//! them field for field, with the same serde attributes, and is referred to from the handlers'
//! annotations, so a client generated from `/api/v1/openapi.json` gets typed models instead of
//! `object` (ADR 0058). The unit tests serialise the real types and read the JSON back as the
//! twins with `deny_unknown_fields`: a field added to a real type and not to its twin fails them.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

mod events;

pub use events::*;

/// A tool's definition: name, description, argument schema, groups and policy
/// (`toolbelt_core::ToolSpec`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ToolSpec)]
pub struct ToolSpecSchema {
    /// Unique name the model calls the tool by (letters, digits, `_`, `-`, `.`).
    pub name: String,
    /// What the tool does, worded for a model choosing among tools.
    pub description: String,
    /// JSON Schema of the arguments; its root is an object schema.
    #[schema(value_type = Object)]
    pub parameters: Value,
    /// Groups the tool belongs to.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Longest a call may run, in ms; null takes the executor's default.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// How failures are retried.
    #[serde(default)]
    pub retry: RetryPolicySchema,
    /// Version of this definition, shown to stores and people (default `1.0.0`).
    #[serde(default = "default_version")]
    pub version: String,
    /// Free-form metadata (owner, docs URL, ...).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub metadata: Map<String, Value>,
    /// Where the tool comes from.
    #[serde(default)]
    pub kind: ToolKindSchema,
    /// Safety and scheduling.
    #[serde(default)]
    pub policy: ToolPolicySchema,
}

fn default_version() -> String {
    "1.0.0".to_owned()
}

/// Where a tool comes from (`toolbelt_core::ToolKind`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ToolKind)]
pub enum ToolKindSchema {
    /// A function in this process or a declarative tool.
    #[default]
    Function,
    /// Another agent, called as a tool.
    Agent,
    /// A tool of an MCP server.
    Mcp,
    /// A tool about tools (search, load).
    Meta,
}

/// Whether a tool changes anything (`toolbelt_core::Effect`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = Effect)]
pub enum EffectSchema {
    /// Reads only.
    #[default]
    ReadOnly,
    /// Changes something.
    Mutating,
}

/// What happens to output over the limit (`toolbelt_core::Overflow`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = Overflow)]
pub enum OverflowSchema {
    /// Cut it, saying so.
    #[default]
    Truncate,
    /// Keep the whole output in a file and return its head.
    Spill,
    /// Fail the call.
    Fail,
}

/// Safety and scheduling of a tool (`toolbelt_core::ToolPolicy`); unset fields take the
/// read-only defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ToolPolicy)]
pub struct ToolPolicySchema {
    /// `read_only` or `mutating`.
    #[serde(default)]
    pub effect: EffectSchema,
    /// Whether calls may run alongside others of the same turn.
    #[serde(default = "yes")]
    pub parallel: bool,
    /// Whether a person approves each call.
    #[serde(default)]
    pub needs_approval: bool,
    /// Largest output kept, in bytes (default 65536).
    #[serde(default = "default_max_output")]
    pub max_output_bytes: u64,
    /// What happens to output over the limit.
    #[serde(default)]
    pub on_overflow: OverflowSchema,
    /// Whether equal calls may share a result.
    #[serde(default)]
    pub cacheable: bool,
    /// Whether the call waits on something outside (a person, a timer).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waits: bool,
    /// Whether running a call twice does what running it once does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent: bool,
}

impl Default for ToolPolicySchema {
    fn default() -> Self {
        Self {
            effect: EffectSchema::ReadOnly,
            parallel: true,
            needs_approval: false,
            max_output_bytes: default_max_output(),
            on_overflow: OverflowSchema::Truncate,
            cacheable: false,
            waits: false,
            idempotent: false,
        }
    }
}

fn yes() -> bool {
    true
}

fn default_max_output() -> u64 {
    64 * 1024
}

/// How a tool's failures are retried (`toolbelt_core::RetryPolicy`); times in ms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RetryPolicy)]
pub struct RetryPolicySchema {
    /// Retries after the first attempt (default 0).
    #[serde(default)]
    pub max_retries: u32,
    /// Wait before the first retry, in ms (default 100).
    #[serde(default = "default_initial_backoff")]
    pub initial_backoff: u64,
    /// Longest wait between retries, in ms (default 5000).
    #[serde(default = "default_max_backoff")]
    pub max_backoff: u64,
    /// Factor between successive waits (default 2).
    #[serde(default = "default_multiplier")]
    pub multiplier: u32,
}

impl Default for RetryPolicySchema {
    fn default() -> Self {
        Self {
            max_retries: 0,
            initial_backoff: default_initial_backoff(),
            max_backoff: default_max_backoff(),
            multiplier: default_multiplier(),
        }
    }
}

fn default_initial_backoff() -> u64 {
    100
}

fn default_max_backoff() -> u64 {
    5000
}

fn default_multiplier() -> u32 {
    2
}

/// A declarative tool's definition: an HTTP request or a command
/// (`toolbelt_tools::declarative::Definition`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
#[schema(as = ToolDefinition)]
pub enum DefinitionSchema {
    /// `{"http": {...}}`.
    Http(HttpDefinitionSchema),
    /// `{"command": {...}}`.
    Command(CommandDefinitionSchema),
}

/// A stored tool's definition: an HTTP request, a command, or a stored agent run as a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
#[schema(as = StoredDefinition)]
pub enum StoredDefinitionSchema {
    /// `{"http": {...}}`.
    Http(HttpDefinitionSchema),
    /// `{"command": {...}}`.
    Command(CommandDefinitionSchema),
    /// `{"agent": {"agent": NAME}}`.
    Agent(AgentDefinitionSchema),
}

/// A tool that runs a stored agent (`toolbelt_host::tool_file::AgentToolDef`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgentDefinition)]
pub struct AgentDefinitionSchema {
    /// The agent to run.
    pub agent: AgentToolSchema,
}

/// The stored agent an agent tool runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgentTool)]
pub struct AgentToolSchema {
    /// The stored agent's name.
    pub agent: String,
}

/// A tool that sends an HTTP request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = HttpDefinition)]
pub struct HttpDefinitionSchema {
    /// The request template.
    pub http: HttpDefSchema,
}

/// A tool that runs a command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CommandDefinition)]
pub struct CommandDefinitionSchema {
    /// The command template.
    pub command: CommandDefSchema,
}

/// An HTTP request template (`toolbelt_tools::declarative::HttpDef`); `{{arg}}` inserts an
/// argument, `{{secret.NAME}}` a secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = HttpDef)]
pub struct HttpDefSchema {
    /// `GET` (default), `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE` or `OPTIONS`.
    #[serde(default = "default_method")]
    pub method: String,
    /// URL template; argument values are percent-encoded.
    pub url: String,
    /// Query parameter templates.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, String>,
    /// Header templates.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// JSON body template: a string that is exactly `{{arg}}` becomes the argument's value.
    #[serde(default)]
    #[schema(value_type = Option<Value>)]
    pub body: Option<Value>,
    /// JSONPath (RFC 9535) applied to a JSON response.
    #[serde(default)]
    pub extract: Option<String>,
    /// Request timeout in ms (default: the web group's).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Declares a non-`GET` request free of side effects (no approval needed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Internal host names this tool may reach past the SSRF guard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// Internal address ranges this tool may reach (`10.0.4.0/24`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_nets: Vec<String>,
}

fn default_method() -> String {
    "GET".to_owned()
}

/// A command template run without a shell (`toolbelt_tools::declarative::CommandDef`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CommandDef)]
pub struct CommandDefSchema {
    /// Program and arguments; each element is a template rendered to one argument.
    pub argv: Vec<String>,
    /// Working directory inside the workspace (default: its root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment variables (templates).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Largest output kept, in bytes (default 64 KiB).
    #[serde(default)]
    pub max_output_bytes: Option<u64>,
    /// Declares the command free of side effects; without it each call needs approval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Arguments whose values may start with `-`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_leading_dash: Vec<String>,
}

/// Who may use a tool, and when (`toolbelt_store::Availability`); empty lists restrict nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
#[schema(as = Availability)]
pub struct AvailabilitySchema {
    /// Only agents of these kinds.
    pub agent_kinds: Vec<String>,
    /// Only agents carrying every one of these labels.
    pub agent_labels: Vec<String>,
    /// Capabilities the agent must declare.
    pub capabilities: Vec<String>,
    /// Conditions on the environment.
    pub conditions: Vec<ConditionSchema>,
}

/// A condition on the environment a tool needs (`toolbelt_store::Condition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schema(as = Condition)]
pub enum ConditionSchema {
    /// A secret with this name is present.
    Secret(String),
    /// A setting with this name is set.
    Setting(String),
    /// The MCP server with this name is healthy.
    McpHealthy(String),
    /// The UTC time of day is within `from..to` (`HH:MM`).
    TimeWindow(TimeWindowSchema),
}

/// A span of the UTC day, `HH:MM`; it wraps past midnight when `from` is after `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TimeWindow)]
pub struct TimeWindowSchema {
    /// Start, inclusive.
    pub from: String,
    /// End, exclusive.
    pub to: String,
}

/// What an approval policy says about a call (`toolbelt_core::Decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = Decision)]
pub enum DecisionSchema {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask a person.
    Ask,
}

/// Which calls need a person's approval (`toolbelt_core::ApprovalPolicy`): a rule for the
/// tool's name, else the strictest rule among its tags, else `default`, else the tool's own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
#[schema(as = ApprovalPolicy)]
pub struct ApprovalPolicySchema {
    /// Applies when no tool or tag rule matches; null defers to each tool.
    pub default: Option<DecisionSchema>,
    /// Rules by tool name.
    pub tools: HashMap<String, DecisionSchema>,
    /// Rules by tag.
    pub tags: HashMap<String, DecisionSchema>,
}

/// Run options of a stored agent (`toolbelt_store::AgentSettings`); unset fields take the
/// runtime's defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
#[schema(as = AgentSettings)]
pub struct AgentSettingsSchema {
    /// Most model turns per run.
    pub max_iterations: Option<u32>,
    /// `auto`, `required`, `none`, or `tool:NAME`.
    pub tool_choice: Option<String>,
    /// Whether calls of one turn may run concurrently.
    pub parallel_tool_calls: Option<bool>,
    /// Longest a whole run may take, in ms.
    pub run_timeout_ms: Option<u64>,
    /// Default longest a tool call may take, in ms.
    pub tool_timeout_ms: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Most tokens per answer.
    pub max_tokens: Option<u32>,
    /// Which calls need a person's approval; null defers to each tool's policy.
    pub approval: Option<ApprovalPolicySchema>,
    /// The provider's API root; null takes `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`.
    pub base_url: Option<String>,
    /// The environment variable holding the API key (the key is never stored).
    pub api_key_env: Option<String>,
}

/// How a stored agent narrows its tools per request (`toolbelt_store::RouterSettings`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
#[schema(as = RouterSettings)]
pub struct RouterSettingsSchema {
    /// `none` (every selected tool), `keyword`, `lexical`, `embedding` or `hybrid`.
    pub strategy: Option<String>,
    /// Most tools sent per request.
    pub max_tools: Option<u64>,
    /// Tools always sent, whatever the router says.
    pub always: Vec<String>,
    /// The LLM tier, off when absent: the agent's own model reranks the top N (2 to 50) tools
    /// of the hybrid ranking, one model call per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm_rerank: Option<u64>,
}

/// A tool bound to an agent, optionally at a pinned version (`toolbelt_store::Binding`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Binding)]
pub struct BindingSchema {
    /// The tool's name.
    pub tool: String,
    /// A pinned version; absent follows the current version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub version: Option<i64>,
}

/// A binding as written in a draft: `"name"`, `"name@3"` or `{"tool": "name", "version": 3}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
#[schema(as = BindingInput)]
pub enum BindingInputSchema {
    /// `name` or `name@3`.
    Text(String),
    /// The object form.
    Full(BindingSchema),
}

/// An agent to create or replace (`toolbelt_store::AgentSpec`, also the file of
/// `toolbelt agents create -f`); only `name` is required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgentDraft)]
pub struct AgentDraftSchema {
    /// Unique name (letters, digits, `_`, `-`), used in URLs.
    pub name: String,
    /// Kind, e.g. `assistant` (default), `coder`; tools may be restricted to kinds.
    #[serde(default = "default_kind")]
    pub kind: String,
    /// Labels; tools may require some.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Capabilities the agent declares; tools may require some.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// What the agent is for (shown when it is used as a tool).
    #[serde(default)]
    pub description: String,
    /// System prompt.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Provider name (`openai`, `anthropic`, or a configured endpoint); null takes the server's.
    #[serde(default)]
    pub provider: Option<String>,
    /// Model name; null takes the server's.
    #[serde(default)]
    pub model: Option<String>,
    /// Run options.
    #[serde(default)]
    pub options: AgentSettingsSchema,
    /// Router settings.
    #[serde(default)]
    pub router: RouterSettingsSchema,
    /// Selection expression over groups and tools (`file_ops,web,-shell_exec`; `*` = every
    /// tool); items may pin a version (`file_read@3`).
    #[serde(default)]
    pub selection: String,
    /// Versions pinned for tools the selection picks, by tool name.
    #[serde(default)]
    pub pins: BTreeMap<String, i64>,
    /// Tools bound explicitly.
    #[serde(default)]
    pub tools: Vec<BindingInputSchema>,
}

fn default_kind() -> String {
    "assistant".to_owned()
}

/// A stored agent with its bindings and revision (`toolbelt_store::Stored<toolbelt_store::AgentSpec>`); its
/// `revision` is also the `ETag` to send back as `If-Match`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = StoredAgent)]
pub struct AgentRecordSchema {
    /// Unique name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Labels.
    pub labels: Vec<String>,
    /// Capabilities.
    pub capabilities: Vec<String>,
    /// What it is for.
    pub description: String,
    /// System prompt.
    pub system_prompt: Option<String>,
    /// Provider.
    pub provider: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Run options.
    pub options: AgentSettingsSchema,
    /// Router settings.
    pub router: RouterSettingsSchema,
    /// Selection expression without pins.
    pub selection: String,
    /// Pinned versions by tool name.
    pub pins: BTreeMap<String, i64>,
    /// Explicit bindings.
    pub tools: Vec<BindingSchema>,
    /// Bumped by every change; send it back as `If-Match` to update.
    pub revision: i64,
    /// Creation, Unix ms.
    pub created_at: i64,
    /// Last change, Unix ms.
    pub updated_at: i64,
    /// Who made the last change.
    pub changed_by: String,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = MessageRole)]
pub enum MessageRoleSchema {
    /// Instructions for the model.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message of a conversation (`toolbelt_llm::Message`). `system` and `user` carry
/// `content`; `assistant` carries `content`, `tool_calls` or both; `tool` carries `call_id`,
/// `name`, `content` and `is_error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Message)]
pub struct MessageSchema {
    /// Who wrote it.
    pub role: MessageRoleSchema,
    /// The text (absent for an assistant turn of tool calls only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub content: Option<String>,
    /// The tool calls of an assistant turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallSchema>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub call_id: Option<String>,
    /// The tool a tool message comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub name: Option<String>,
    /// Whether the tool call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub is_error: Option<bool>,
}

/// A model's request to run one tool (`toolbelt_core::ToolCall`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ToolCall)]
pub struct ToolCallSchema {
    /// The provider's call id.
    pub id: String,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments.
    #[schema(value_type = Object)]
    pub arguments: Value,
}

/// Where a run is (`toolbelt_host::runs::RunStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = RunStatus)]
pub enum RunStatusSchema {
    /// The model or a tool is working.
    Running,
    /// Paused on an approval or a question.
    Waiting,
    /// Ended with an answer.
    Succeeded,
    /// Ended without an answer.
    Failed,
    /// Stopped by a cancel request.
    Cancelled,
    /// The server stopped while the run was going on; continue it to go on.
    Interrupted,
}

// The run views below are answers, not requests: they carry no `deny_unknown_fields` (it
// would add `additionalProperties: false` and forbid clients new fields). Their tests compare
// the JSON written back whole, so a field the real type gained and the twin lacks still fails.

/// One event of a run, as sent over SSE (`id` = `seq`, `event` = `type`, `data` = this JSON)
/// (`toolbelt_host::runs::RunEvent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = RunEvent)]
pub struct RunEventSchema {
    /// 1-based position in the run's history.
    pub seq: u64,
    /// `started`, `routed`, `text_delta`, `model_turn`, `tool_call_started`,
    /// `approval_requested`, `approval_resolved`, `question_asked`, `question_answered`,
    /// `tool_progress`, `tool_call_finished`, `call_merged` (a call repeated in one turn, not
    /// run again), `tools_added`, `skills_added`, `finished`, `failed`, `cancelled`,
    /// `interrupted`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's fields: one schema per `type`.
    #[schema(value_type = RunEventDataSchema)]
    pub data: Value,
}

/// A tool call waiting for a decision (`toolbelt_host::runs::ApprovalView`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = ApprovalView)]
pub struct ApprovalViewSchema {
    /// Id to answer with (`POST /api/v1/approvals/{id}`).
    pub id: String,
    /// The run it belongs to.
    pub run_id: String,
    /// The tool.
    pub tool: String,
    /// The call id.
    pub call_id: String,
    /// The arguments the model gave.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// The tool's description.
    pub description: String,
}

/// A question the `ask_human` tool is waiting on (`toolbelt_host::runs::QuestionView`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = QuestionView)]
pub struct QuestionViewSchema {
    /// Id to answer with (`POST /api/v1/questions/{id}/answer`).
    pub id: String,
    /// The run asking, when known.
    pub run_id: Option<String>,
    /// The question.
    pub question: String,
    /// Suggested answers; empty for a free answer.
    pub choices: Vec<String>,
}

/// Tokens used (`toolbelt_host::runs::UsageView`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = UsageView)]
pub struct UsageViewSchema {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

/// A run as the API shows it (`toolbelt_host::runs::RunView`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = RunView)]
pub struct RunViewSchema {
    /// Run id.
    pub id: String,
    /// The agent's id.
    pub agent: String,
    /// Where the run is.
    pub status: RunStatusSchema,
    /// The user's input.
    pub input: String,
    /// The conversation (shared by runs that continue each other).
    pub conversation_id: String,
    /// The run this one continues, if any.
    pub parent_run: Option<String>,
    /// Start, Unix milliseconds.
    pub created_at_ms: u64,
    /// End, Unix milliseconds.
    pub finished_at_ms: Option<u64>,
    /// The answer, once succeeded.
    pub answer: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// Tokens used.
    pub usage: UsageViewSchema,
    /// Calls waiting for a decision.
    pub pending_approvals: Vec<ApprovalViewSchema>,
    /// Questions waiting for an answer.
    pub pending_questions: Vec<QuestionViewSchema>,
}

/// A run with its transcript (`toolbelt_host::runs::RunDetail`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = RunDetail)]
pub struct RunDetailSchema {
    /// The run.
    #[serde(flatten)]
    pub run: RunViewSchema,
    /// The conversation as the model saw it last (no system prompt).
    pub messages: Vec<MessageSchema>,
    /// Every event so far.
    pub events: Vec<RunEventSchema>,
}

#[cfg(test)]
mod tests;
