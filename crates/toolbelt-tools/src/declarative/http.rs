//! [`HttpTool`]: an HTTP request template sent through the web group's SSRF guard.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serde_json_path::JsonPath;
use toolbelt_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::scrub::Scrubber;
use super::template::{Template, arg_text, url_component, verbatim};
use super::{DefinitionError, Secrets, declared_args, mutating_unless};
use crate::web::{self, HttpConfig, HttpMethod, IpNet, Redirects};

const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// An HTTP tool definition.
///
/// ```yaml
/// http:
///   method: GET
///   url: "https://api.github.com/repos/{{owner}}/{{repo}}/issues/{{number}}"
///   query: {per_page: "{{per_page}}"}
///   headers: {Authorization: "Bearer {{secret.GITHUB_TOKEN}}"}
///   extract: "$.title"
///   timeout_ms: 10000
/// ```
///
/// A request that carries a secret (in a header or the body) or an `Authorization`, `Cookie`
/// or `Proxy-Authorization` header follows redirects only within the URL's origin; every
/// output and error is scrubbed of the secrets used (ADR 0051).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HttpDef {
    /// `GET` (default), `HEAD`, `POST`, `PUT`, `PATCH`, `DELETE` or `OPTIONS`.
    #[serde(default = "default_method")]
    pub method: String,
    /// URL template; argument values are percent-encoded.
    pub url: String,
    /// Query parameter templates, appended to the URL after those it has. A parameter whose
    /// value renders empty (an optional argument left out) is not sent; a template that is
    /// exactly `{{arg}}` given an array sends the parameter once per item.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, String>,
    /// Header templates.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// JSON body template: a string that is exactly `{{arg}}` becomes the argument's JSON value;
    /// other strings are rendered as text. Sent as `application/json`.
    #[serde(default)]
    pub body: Option<Value>,
    /// JSONPath (RFC 9535) applied to a JSON response: one match is returned as is, several as
    /// an array.
    #[serde(default)]
    pub extract: Option<String>,
    /// Request timeout in milliseconds (default: the web group's).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Declares a request with a method other than `GET`/`HEAD` free of side effects (a search
    /// sent as `POST`), so the tool keeps a read-only policy. Without it such a tool is
    /// mutating and needs approval whatever its spec says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// Internal host names this tool may reach although the SSRF guard refuses private and
    /// loopback addresses (`billing.internal`), on top of the host's allow-list. A cloud
    /// metadata address opens only when named itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// Internal address ranges this tool may reach (`10.0.4.0/24`, `10.0.4.7`), as
    /// `allow_hosts`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_nets: Vec<String>,
}

fn default_method() -> String {
    "GET".to_owned()
}

struct Compiled {
    method: HttpMethod,
    url: Template,
    query: Vec<(String, Template)>,
    headers: Vec<(String, Template)>,
    body: Option<Value>,
    body_templates: BTreeMap<String, Template>,
    allow_nets: Vec<IpNet>,
    extract: Option<JsonPath>,
}

impl HttpDef {
    fn compile(&self, spec: &ToolSpec) -> Result<Compiled, DefinitionError> {
        let args = declared_args(spec);
        let upper = self.method.to_uppercase();
        if !METHODS.contains(&upper.as_str()) {
            return Err(DefinitionError::new(
                "http.method",
                format!("`{}` is not one of {}", self.method, METHODS.join(", ")),
            ));
        }
        let method: HttpMethod = serde_json::from_value(json!(upper))
            .map_err(|e| DefinitionError::new("http.method", e.to_string()))?;
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(DefinitionError::new(
                "http.url",
                format!("`{}` must start with http:// or https://", self.url),
            ));
        }
        let url = Template::parse(&self.url, "http.url", &args)?;
        if url.secrets().next().is_some() {
            return Err(DefinitionError::new(
                "http.url",
                "secrets may not go in the URL (it is logged by servers and proxies); send them in a header",
            ));
        }
        let mut query = Vec::new();
        for (name, value) in &self.query {
            let field = format!("http.query.{name}");
            if name.is_empty() {
                return Err(DefinitionError::new(
                    field,
                    "a query parameter needs a name",
                ));
            }
            let template = Template::parse(value, &field, &args)?;
            if template.secrets().next().is_some() {
                return Err(DefinitionError::new(
                    field,
                    "secrets may not go in the query (it is part of the URL, logged by servers and proxies); send them in a header",
                ));
            }
            query.push((name.clone(), template));
        }
        let mut headers = Vec::new();
        for (name, value) in &self.headers {
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                return Err(DefinitionError::new(
                    format!("http.headers.{name}"),
                    "a header name is visible ASCII without `:`",
                ));
            }
            headers.push((
                name.clone(),
                Template::parse(value, &format!("http.headers.{name}"), &args)?,
            ));
        }
        let mut body_templates = BTreeMap::new();
        if let Some(body) = &self.body {
            collect_templates(body, "http.body", &args, &mut body_templates)?;
        }
        let extract = self
            .extract
            .as_deref()
            .map(|path| {
                JsonPath::parse(path).map_err(|e| {
                    DefinitionError::new("http.extract", format!("`{path}` is not a JSONPath: {e}"))
                })
            })
            .transpose()?;
        if self.timeout_ms == Some(0) {
            return Err(DefinitionError::new("http.timeout_ms", "must be 1 or more"));
        }
        for (i, host) in self.allow_hosts.iter().enumerate() {
            HttpConfig::new()
                .try_allow_host(host)
                .map_err(|reason| DefinitionError::new(format!("http.allow_hosts[{i}]"), reason))?;
        }
        let allow_nets = self
            .allow_nets
            .iter()
            .enumerate()
            .map(|(i, net)| {
                net.parse::<IpNet>().map_err(|e| {
                    DefinitionError::new(format!("http.allow_nets[{i}]"), e.to_string())
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Compiled {
            method,
            url,
            query,
            headers,
            body: self.body.clone(),
            body_templates,
            extract,
            allow_nets,
        })
    }

    pub(crate) fn validate(&self, spec: &ToolSpec) -> Result<(), DefinitionError> {
        self.compile(spec).map(|_| ())
    }

    /// Whether the tool is mutating unless declared otherwise: every method but `GET`/`HEAD`.
    pub(crate) fn mutating_by_default(&self) -> bool {
        !matches!(self.method.to_uppercase().as_str(), "GET" | "HEAD")
    }
}

fn collect_templates(
    value: &Value,
    field: &str,
    args: &[String],
    out: &mut BTreeMap<String, Template>,
) -> Result<(), DefinitionError> {
    match value {
        Value::String(text) => {
            out.insert(field.to_owned(), Template::parse(text, field, args)?);
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_templates(item, &format!("{field}[{i}]"), args, out)?;
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                collect_templates(item, &format!("{field}.{key}"), args, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// An HTTP tool built from an [`HttpDef`].
pub struct HttpTool {
    spec: ToolSpec,
    def: HttpDef,
    secrets: Secrets,
    /// The host's HTTP configuration with this tool's allow-list added, kept with the host
    /// allow-list it was made from (its client is reused while that stays the same).
    own_config: std::sync::Mutex<Option<(HttpConfig, HttpConfig)>>,
}

impl std::fmt::Debug for HttpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTool")
            .field("name", &self.spec.name)
            .field("method", &self.def.method)
            .field("url", &self.def.url)
            .finish_non_exhaustive()
    }
}

impl HttpTool {
    /// A tool named by `spec` sending `def`'s request. Call [`HttpDef`] validation first
    /// ([`super::Definition::build`] does). A read-only `spec` becomes mutating (needing
    /// approval) when the method is not `GET`/`HEAD` and `def` does not say `read_only: true`.
    pub fn new(spec: ToolSpec, def: HttpDef, secrets: Secrets) -> Self {
        let spec = mutating_unless(spec, !def.mutating_by_default() || def.read_only);
        Self {
            spec,
            def,
            secrets,
            own_config: std::sync::Mutex::new(None),
        }
    }

    /// The configuration to send with: the host's, plus this tool's allow-list when it has one.
    fn config<'c>(&self, ctx: &'c ToolContext, nets: &[IpNet]) -> Cow<'c, HttpConfig> {
        let base = match ctx.get::<HttpConfig>() {
            Some(base) => Cow::Borrowed(base),
            None => Cow::Owned(HttpConfig::default()),
        };
        if self.def.allow_hosts.is_empty() && nets.is_empty() {
            return base;
        }
        let mut cached = self
            .own_config
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((from, own)) = cached.as_ref()
            && from.same_allow_list(&base)
        {
            return Cow::Owned(own.clone());
        }
        let own = base.with_allowed(&self.def.allow_hosts, nets);
        *cached = Some((base.into_owned(), own.clone()));
        Cow::Owned(own)
    }

    async fn send(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let compiled = self
            .def
            .compile(&self.spec)
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let mut used = Vec::new();
        let mut url = compiled
            .url
            .render(&args, &self.secrets, url_component, &mut used)?;
        append_query(&mut url, &compiled.query, &args, &self.secrets, &mut used)?;
        let mut headers = BTreeMap::new();
        for (name, template) in &compiled.headers {
            headers.insert(
                name.clone(),
                template.render(&args, &self.secrets, verbatim, &mut used)?,
            );
        }
        let body = match &compiled.body {
            Some(body) => {
                let rendered = render_body(
                    body,
                    "http.body",
                    &compiled.body_templates,
                    &args,
                    &self.secrets,
                    &mut used,
                )?;
                headers
                    .entry("content-type".to_owned())
                    .or_insert_with(|| "application/json".to_owned());
                Some(rendered.to_string())
            }
            None => None,
        };
        let timeout_secs = self
            .def
            .timeout_ms
            .map(|ms| Duration::from_millis(ms).as_secs().max(1));
        let redirects = if used.is_empty() && !headers.keys().any(|h| is_credential_header(h)) {
            Redirects::Follow
        } else {
            Redirects::SameOrigin
        };
        let scrubber = Scrubber::new(&used);
        let config = self.config(&ctx, &compiled.allow_nets);
        let response = web::send_with(
            &config,
            &ctx,
            compiled.method.into(),
            &url,
            Some(headers),
            body,
            timeout_secs,
            redirects,
        )
        .await
        .map_err(|e| scrubber.error(e))?;
        let data = response.json.unwrap_or(Value::Null);
        let status = data.get("status").and_then(Value::as_u64).unwrap_or(0);
        let raw = data.get("body").and_then(Value::as_str).unwrap_or_default();
        let cut = data.get("truncated").and_then(Value::as_bool) == Some(true);
        // Scrubbed whole before anything below cuts it.
        let text = if cut {
            scrubber.text_cut_at_end(raw)
        } else {
            scrubber.text(raw)
        };
        if status >= 400 {
            let message = format!("HTTP {status}: {}", snippet(&text));
            return Err(if status == 429 || status >= 500 {
                ToolError::retryable(message)
            } else {
                ToolError::failed(message)
            });
        }
        let parsed = serde_json::from_str::<Value>(raw).map(|v| scrubber.json(v));
        let Some(path) = &compiled.extract else {
            let mut out = ToolOutput::text(text);
            out.json = parsed.ok();
            return Ok(out);
        };
        let parsed = parsed.map_err(|e| {
            scrubber.error(ToolError::failed(format!(
                "the response is not JSON, so `{}` cannot be applied: {e}",
                self.def.extract.as_deref().unwrap_or_default()
            )))
        })?;
        let found = path.query(&parsed).all();
        let value = match found.as_slice() {
            [one] => (*one).clone(),
            many => Value::Array(many.iter().map(|v| (*v).clone()).collect()),
        };
        Ok(ToolOutput::json(value))
    }
}

/// Appends `name=value` pairs to `url` (after a `?` or `&` as it needs), leaving out those
/// that render empty and repeating a parameter for each item of an array argument.
fn append_query(
    url: &mut String,
    query: &[(String, Template)],
    args: &Value,
    secrets: &Secrets,
    used: &mut Vec<String>,
) -> Result<(), ToolError> {
    let mut pairs = Vec::new();
    for (name, template) in query {
        let items = template
            .sole_arg()
            .and_then(|arg| args.get(arg))
            .and_then(Value::as_array);
        if let Some(items) = items {
            for item in items {
                pairs.push((name, arg_text(Some(item))));
            }
            continue;
        }
        pairs.push((name, template.render(args, secrets, verbatim, used)?));
    }
    for (name, value) in pairs.into_iter().filter(|(_, v)| !v.is_empty()) {
        let sep = if url.contains('?') { '&' } else { '?' };
        url.push(sep);
        url.push_str(&url_component(name));
        url.push('=');
        url.push_str(&url_component(&value));
    }
    Ok(())
}

/// Headers reqwest treats as credentials; a request with one stays within its origin too.
fn is_credential_header(name: &str) -> bool {
    ["authorization", "cookie", "proxy-authorization"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

/// The first 500 bytes of an error body (already scrubbed), cut at a character boundary.
fn snippet(text: &str) -> String {
    let mut end = text.len().min(500);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

fn render_body(
    value: &Value,
    field: &str,
    templates: &BTreeMap<String, Template>,
    args: &Value,
    secrets: &Secrets,
    used: &mut Vec<String>,
) -> Result<Value, ToolError> {
    Ok(match value {
        Value::String(_) => match templates.get(field) {
            Some(template) => match template.sole_arg() {
                Some(arg) => args.get(arg).cloned().unwrap_or(Value::Null),
                None => Value::String(template.render(args, secrets, verbatim, used)?),
            },
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    render_body(
                        item,
                        &format!("{field}[{i}]"),
                        templates,
                        args,
                        secrets,
                        used,
                    )
                })
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| {
                    Ok((
                        key.clone(),
                        render_body(
                            item,
                            &format!("{field}.{key}"),
                            templates,
                            args,
                            secrets,
                            used,
                        )?,
                    ))
                })
                .collect::<Result<_, ToolError>>()?,
        ),
        other => other.clone(),
    })
}

impl Tool for HttpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.send(args, ctx).await
    }
}
