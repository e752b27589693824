//! Group `web`: `http_get` (read-only) and `http_request` (any method, needs approval).
//!
//! Both refuse loopback, private, link-local (cloud metadata), CGNAT,
//! multicast and other internal addresses after DNS resolution and at every
//! redirect hop, unless the host allow-lists them in [`HttpConfig`].

mod guard;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Method, Url};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;

use self::guard::{AllowList, GuardedResolver, Refused};
pub use self::guard::{IpNet, IpNetError};
use crate::shell::error_chain;

/// Limits and allow-list of the HTTP tools.
///
/// The reqwest client is built on first use and shared by every call made
/// with this configuration (and its clones).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    allow: AllowList,
    /// Largest response body kept, in bytes (default 1 MiB); the rest is not downloaded.
    pub max_response_bytes: usize,
    /// Most redirects followed (default 5); each hop is checked like the first URL.
    pub max_redirects: usize,
    /// Timeout of a request when the call gives none (default 30 s).
    pub default_timeout: Duration,
    /// Largest timeout a call may ask for (default 120 s).
    pub max_timeout: Duration,
    /// The `User-Agent` header sent by default.
    pub user_agent: String,
    client: Arc<OnceLock<Result<Client, String>>>,
    same_origin_client: Arc<OnceLock<Result<Client, String>>>,
}

/// Which redirects a request follows (each hop is checked by the SSRF guard either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redirects {
    /// Any origin, up to [`HttpConfig::max_redirects`].
    Follow,
    /// Only within the first URL's origin (scheme, host and port): for requests carrying a
    /// secret or credentials, which must not reach another origin.
    SameOrigin,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            allow: AllowList::default(),
            max_response_bytes: 1024 * 1024,
            max_redirects: 5,
            default_timeout: Duration::from_secs(30),
            max_timeout: Duration::from_secs(120),
            user_agent: concat!("toolbelt/", env!("CARGO_PKG_VERSION")).to_owned(),
            client: Arc::default(),
            same_origin_client: Arc::default(),
        }
    }
}

impl HttpConfig {
    /// The defaults: every internal address refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// As [`HttpConfig::allow_host`], refusing what is not a host name or an IP address (an
    /// entry from a configuration file or a tool definition).
    ///
    /// # Errors
    /// The reason, naming the entry.
    pub fn try_allow_host(self, host: &str) -> Result<Self, String> {
        let bare = host.trim_matches(['[', ']']);
        if bare.is_empty()
            || !bare
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b))
        {
            return Err(format!("`{host}` is not a host name or an IP address"));
        }
        Ok(self.allow_host(host))
    }

    /// Opens a host name (`localhost`, `intranet.example`): whatever it resolves to is allowed.
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allow.hosts.push(host.into());
        self.reset_clients();
        self
    }

    /// Opens an address range such as `127.0.0.1/32` or `10.0.0.0/8`.
    ///
    /// # Errors
    /// [`IpNetError`] when `cidr` does not parse.
    pub fn allow_net(mut self, cidr: &str) -> Result<Self, IpNetError> {
        self.allow.nets.push(cidr.parse()?);
        self.reset_clients();
        Ok(self)
    }

    /// Sets the response size cap.
    #[must_use]
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Sets the redirect limit.
    #[must_use]
    pub fn with_max_redirects(mut self, redirects: usize) -> Self {
        self.max_redirects = redirects;
        self.reset_clients();
        self
    }

    /// Sets the default timeout.
    #[must_use]
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// This configuration with `hosts` and `nets` opened too (a tool's own allow-list on top
    /// of the host's). The copy builds its own HTTP client on first use.
    #[must_use]
    pub fn with_allowed(&self, hosts: &[String], nets: &[IpNet]) -> Self {
        let mut out = self.clone();
        out.allow.hosts.extend(hosts.iter().cloned());
        out.allow.nets.extend(nets.iter().cloned());
        out.reset_clients();
        out
    }

    /// Whether both configurations open the same hosts and ranges.
    pub fn same_allow_list(&self, other: &Self) -> bool {
        self.allow == other.allow
    }

    /// The allow-listed host names and ranges, for display.
    pub fn allowed(&self) -> (Vec<String>, Vec<String>) {
        (
            self.allow.hosts.clone(),
            self.allow.nets.iter().map(ToString::to_string).collect(),
        )
    }

    /// A client that reaches only what the HTTP tools may reach: every address checked after
    /// DNS against the SSRF guard and this allow-list, every redirect hop too, no proxy. For
    /// other HTTP clients of a host (an MCP client of a stored server's URL). Cheap to clone.
    ///
    /// # Errors
    /// The client cannot be built (the TLS backend failed to load), as a message.
    pub fn guarded_client(&self) -> Result<Client, String> {
        self.client(Redirects::Follow)
            .cloned()
            .map_err(|e| e.to_string())
    }

    /// Checks `url` as the HTTP tools check a request's URL before sending it: the scheme, and
    /// an IP literal against the SSRF guard and this allow-list (a host name is checked after
    /// DNS by [`HttpConfig::guarded_client`]'s resolver). Use it with that client.
    ///
    /// # Errors
    /// Why the URL is refused.
    pub fn check_target(&self, url: &str) -> Result<(), String> {
        let parsed = Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
        check_url(&parsed, &self.allow)
    }

    fn reset_clients(&mut self) {
        self.client = Arc::default();
        self.same_origin_client = Arc::default();
    }

    fn client(&self, redirects: Redirects) -> Result<&Client, ToolError> {
        let cell = match redirects {
            Redirects::Follow => &self.client,
            Redirects::SameOrigin => &self.same_origin_client,
        };
        cell.get_or_init(|| self.build_client(redirects).map_err(|e| error_chain(&e)))
            .as_ref()
            .map_err(|e| ToolError::failed(format!("cannot build the HTTP client: {e}")))
    }

    fn build_client(&self, scope: Redirects) -> Result<Client, reqwest::Error> {
        let allow = Arc::new(self.allow.clone());
        let max = self.max_redirects;
        let hop_allow = Arc::clone(&allow);
        let redirects = reqwest::redirect::Policy::custom(move |attempt| {
            // `previous` starts with the first URL, which was not a redirect.
            if attempt.previous().len() > max {
                let msg = format!("stopped after {max} redirects");
                return attempt.error(Refused(msg));
            }
            if scope == Redirects::SameOrigin
                && let Some(first) = attempt.previous().first()
                && first.origin() != attempt.url().origin()
            {
                let msg = format!(
                    "redirect from {} to {} refused: the request carries a secret or \
                     credentials, which are sent only to the origin the tool names",
                    first.origin().ascii_serialization(),
                    attempt.url().origin().ascii_serialization()
                );
                return attempt.error(Refused(msg));
            }
            match check_url(attempt.url(), &hop_allow) {
                Ok(()) => attempt.follow(),
                Err(reason) => attempt.error(Refused(format!("redirect refused: {reason}"))),
            }
        });
        Client::builder()
            .dns_resolver(GuardedResolver { allow })
            // A proxy would resolve the target itself, past our resolver.
            .no_proxy()
            .redirect(redirects)
            .user_agent(self.user_agent.clone())
            .build()
    }

    fn timeout(&self, secs: Option<u64>) -> Duration {
        secs.map_or(self.default_timeout, Duration::from_secs)
            .min(self.max_timeout)
    }
}

/// Checks the scheme, and IP literals (which never reach the resolver).
fn check_url(url: &Url, allow: &AllowList) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "scheme {:?} is not allowed; use http or https",
            url.scheme()
        ));
    }
    let Some(host) = url.host_str() else {
        return Err(format!("{url} has no host"));
    };
    // The URL parser already normalised odd IPv4 spellings (`0x7f.1`, `2130706433`).
    match host.trim_start_matches('[').trim_end_matches(']').parse() {
        Ok(ip) => allow.check(host, ip),
        Err(_) => Ok(()),
    }
}

/// The HTTP methods `http_request` accepts.
// Variant doc comments would make schemars emit `oneOf` with descriptions, which
// validates with a vaguer error than a plain `enum`; the tool docs describe them.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,     // Read a resource.
    Head,    // Read only the headers.
    Post,    // Create or submit.
    Put,     // Replace.
    Patch,   // Modify part of a resource.
    Delete,  // Remove.
    Options, // Ask what is allowed.
}

impl From<HttpMethod> for Method {
    fn from(m: HttpMethod) -> Self {
        match m {
            HttpMethod::Get => Method::GET,
            HttpMethod::Head => Method::HEAD,
            HttpMethod::Post => Method::POST,
            HttpMethod::Put => Method::PUT,
            HttpMethod::Patch => Method::PATCH,
            HttpMethod::Delete => Method::DELETE,
            HttpMethod::Options => Method::OPTIONS,
        }
    }
}

/// Fetch a public URL with GET and return the status, main headers and body (text, capped).
///
/// Requests to loopback, private, link-local and cloud-metadata addresses are refused.
#[tool(tags("web"), read_only, timeout = "3m")]
pub async fn http_get(
    ctx: &ToolContext,
    /// The `http` or `https` URL.
    url: String,
    /// Extra request headers.
    headers: Option<BTreeMap<String, String>>,
    /// Seconds before the request is abandoned (default 30, capped by the host).
    timeout_secs: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    send(
        ctx,
        Method::GET,
        &url,
        headers,
        None,
        timeout_secs,
        Redirects::Follow,
    )
    .await
}

/// Send an HTTP request with any method (POST, PUT, DELETE, ...) and return the status, main headers and body.
///
/// Use `http_get` to read. Requests to loopback, private, link-local and
/// cloud-metadata addresses are refused.
#[tool(tags("web"), mutating, timeout = "3m")]
pub async fn http_request(
    ctx: &ToolContext,
    /// The HTTP method.
    method: HttpMethod,
    /// The `http` or `https` URL.
    url: String,
    /// Request headers, e.g. `{"content-type": "application/json"}`.
    headers: Option<BTreeMap<String, String>>,
    /// The request body, sent as is.
    body: Option<String>,
    /// Seconds before the request is abandoned (default 30, capped by the host).
    timeout_secs: Option<u64>,
) -> Result<ToolOutput, ToolError> {
    send(
        ctx,
        method.into(),
        &url,
        headers,
        body,
        timeout_secs,
        Redirects::Follow,
    )
    .await
}

/// Sends one request through the guard; the JSON output holds `status`, `url`, `headers`,
/// `body` and `truncated`.
pub(crate) async fn send(
    ctx: &ToolContext,
    method: Method,
    url: &str,
    headers: Option<BTreeMap<String, String>>,
    body: Option<String>,
    timeout_secs: Option<u64>,
    redirects: Redirects,
) -> Result<ToolOutput, ToolError> {
    let fallback;
    let config = match ctx.get::<HttpConfig>() {
        Some(c) => c,
        None => {
            fallback = HttpConfig::default();
            &fallback
        }
    };
    send_with(
        config,
        ctx,
        method,
        url,
        headers,
        body,
        timeout_secs,
        redirects,
    )
    .await
}

/// As [`send`], through `config` instead of the context's.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn send_with(
    config: &HttpConfig,
    ctx: &ToolContext,
    method: Method,
    url: &str,
    headers: Option<BTreeMap<String, String>>,
    body: Option<String>,
    timeout_secs: Option<u64>,
    redirects: Redirects,
) -> Result<ToolOutput, ToolError> {
    let url = Url::parse(url).map_err(|e| {
        ToolError::invalid_argument("/url", format!("{url:?} is not a valid URL: {e}"))
    })?;
    check_url(&url, &config.allow).map_err(|reason| ToolError::Denied { reason })?;
    let mut request = config
        .client(redirects)?
        .request(method.clone(), url.clone())
        .headers(header_map(headers.unwrap_or_default())?)
        .timeout(config.timeout(timeout_secs));
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = tokio::select! {
        r = request.send() => r.map_err(|e| request_error(&e))?,
        () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
    };
    let status = response.status();
    let final_url = response.url().to_string();
    let headers: BTreeMap<String, String> = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let (bytes, truncated) = tokio::select! {
        r = read_capped(response, config.max_response_bytes) => r?,
        () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
    };
    let content_type = headers.get("content-type").cloned().unwrap_or_default();
    let body = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => format!(
            "[binary body: {} bytes of {}]",
            e.as_bytes().len(),
            if content_type.is_empty() {
                "unknown type"
            } else {
                &content_type
            }
        ),
    };
    let mut text = format!("HTTP {status}");
    if final_url != url.as_str() {
        text.push_str(&format!(" (after redirects, from {final_url})"));
    }
    for name in ["content-type", "content-length", "location"] {
        if let Some(value) = headers.get(name) {
            text.push_str(&format!("\n{name}: {value}"));
        }
    }
    if method != Method::HEAD {
        text.push_str("\n\n");
        text.push_str(&body);
    }
    if truncated {
        text.push_str(&format!(
            "\n[body cut at {} bytes; the rest was not downloaded]",
            config.max_response_bytes
        ));
    }
    let mut out = ToolOutput::text(text);
    out.json = Some(json!({
        "status": status.as_u16(),
        "url": final_url,
        "headers": headers,
        "body": body,
        "truncated": truncated,
    }));
    Ok(out)
}

fn header_map(headers: BTreeMap<String, String>) -> Result<HeaderMap, ToolError> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let pointer = format!("/headers/{}", name.replace('~', "~0").replace('/', "~1"));
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            ToolError::invalid_argument(&pointer, format!("{name:?} is not a valid header name"))
        })?;
        let value = HeaderValue::from_str(&value).map_err(|_| {
            ToolError::invalid_argument(
                &pointer,
                "the value has characters not allowed in a header",
            )
        })?;
        map.insert(header, value);
    }
    Ok(map)
}

/// Streams the body, stopping at `cap` bytes so a huge response is never held.
async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), ToolError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| request_error(&e))? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// A refusal by the guard becomes `Denied`; anything else is a (retryable) failure.
fn request_error(err: &reqwest::Error) -> ToolError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return ToolError::Denied {
                reason: refused.0.clone(),
            };
        }
        source = e.source();
    }
    let message = format!("request failed: {}", error_chain(err));
    if err.is_timeout() || err.is_connect() {
        ToolError::retryable(message)
    } else {
        ToolError::failed(message)
    }
}
