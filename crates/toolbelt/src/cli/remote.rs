//! `--server URL --token T`: the `tools`, `agents` and `runs` commands against a running
//! `toolbelt serve` instead of the database, printing what they print locally.

use anyhow::{Context, bail};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::db::DbArgs;

/// Where a command acts: the database (`--database-url`) or a server (`--server`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Target {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Act through a running `toolbelt serve` at this address (e.g. http://127.0.0.1:7878)
    /// instead of opening the database.
    #[arg(long, env = "TOOLBELT_SERVER", value_name = "URL")]
    pub(crate) server: Option<String>,
    /// The API token for --server (`toolbelt tokens create`); a `--dev` server needs none.
    #[arg(
        long,
        env = "TOOLBELT_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub(crate) token: Option<String>,
}

/// An opened target.
pub(crate) enum Backend {
    /// The database.
    Local(toolbelt_store::Store),
    /// A server's REST API.
    Remote(Api),
}

impl Target {
    /// Opens the database, or checks the server address.
    pub(crate) async fn connect(&self) -> anyhow::Result<Backend> {
        match &self.server {
            Some(url) => Ok(Backend::Remote(Api::new(url, self.token.clone())?)),
            None => Ok(Backend::Local(self.db.open().await?)),
        }
    }
}

/// A client of `/api/v1`.
pub(crate) struct Api {
    base: Url,
    token: Option<String>,
    http: reqwest::Client,
}

/// A request to the API.
pub(crate) struct Call<'a> {
    method: Method,
    segments: Vec<&'a str>,
    query: Vec<(&'a str, String)>,
    body: Option<Value>,
    if_match: Option<i64>,
}

impl<'a> Call<'a> {
    /// `GET /api/v1/<segments>` (each segment percent-encoded).
    pub(crate) fn get(segments: &[&'a str]) -> Self {
        Self::new(Method::GET, segments)
    }

    /// `POST /api/v1/<segments>`.
    pub(crate) fn post(segments: &[&'a str]) -> Self {
        Self::new(Method::POST, segments)
    }

    /// `DELETE /api/v1/<segments>`.
    pub(crate) fn delete(segments: &[&'a str]) -> Self {
        Self::new(Method::DELETE, segments)
    }

    /// `PUT /api/v1/<segments>`.
    pub(crate) fn put(segments: &[&'a str]) -> Self {
        Self::new(Method::PUT, segments)
    }

    fn new(method: Method, segments: &[&'a str]) -> Self {
        Self {
            method,
            segments: segments.to_vec(),
            query: Vec::new(),
            body: None,
            if_match: None,
        }
    }

    /// A JSON body.
    pub(crate) fn json(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    /// A query parameter, when set.
    pub(crate) fn query(mut self, name: &'a str, value: Option<String>) -> Self {
        if let Some(value) = value {
            self.query.push((name, value));
        }
        self
    }

    /// `If-Match: "<revision>"`, when given.
    pub(crate) fn if_match(mut self, revision: Option<i64>) -> Self {
        self.if_match = revision;
        self
    }
}

impl Api {
    fn new(url: &str, token: Option<String>) -> anyhow::Result<Self> {
        let mut base = Url::parse(url).with_context(|| {
            format!("--server `{url}` is not a URL (e.g. http://127.0.0.1:7878)")
        })?;
        if !matches!(base.scheme(), "http" | "https") {
            bail!(
                "--server `{url}`: the scheme must be http or https, not `{}`",
                base.scheme()
            );
        }
        base.path_segments_mut()
            .map_err(|()| anyhow::anyhow!("--server `{url}` cannot have a path appended"))?
            .pop_if_empty()
            .extend(["api", "v1"]);
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .timeout(std::time::Duration::from_secs(120))
            .build()
            .context("could not build the HTTP client")?;
        Ok(Self { base, token, http })
    }

    /// Sends `call`; the JSON answer (`null` for 204), or the server's problem document as
    /// an error naming its code and the field it points at.
    pub(crate) async fn send(&self, call: Call<'_>) -> anyhow::Result<Value> {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.extend(&call.segments);
        }
        if !call.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&call.query);
        }
        // The server refuses a body-less POST without a token, JSON or this header (what a
        // cross-site form cannot send), e.g. against `toolbelt serve --dev`.
        let mut request = self
            .http
            .request(call.method.clone(), url.clone())
            .header("x-requested-with", "toolbelt-cli");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(revision) = call.if_match {
            request = request.header(reqwest::header::IF_MATCH, format!("\"{revision}\""));
        }
        if let Some(body) = &call.body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("could not reach the server at {}", self.origin()))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .with_context(|| format!("{} {url}: the answer broke off", call.method))?;
        if status.is_success() {
            if status == StatusCode::NO_CONTENT || bytes.is_empty() {
                return Ok(Value::Null);
            }
            return serde_json::from_slice(&bytes)
                .with_context(|| format!("{} {url}: the answer is not JSON", call.method));
        }
        Err(ApiError {
            status,
            message: problem_text(status, &bytes),
        }
        .into())
    }

    /// The server's address, for messages.
    fn origin(&self) -> String {
        self.base.origin().ascii_serialization()
    }
}

/// The server refused a request: its status and problem document as text.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    message: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// A problem document (RFC 9457) as one line: what was wrong, its code, where.
fn problem_text(status: StatusCode, body: &[u8]) -> String {
    let Ok(doc) = serde_json::from_slice::<Value>(body) else {
        let text = String::from_utf8_lossy(body);
        return format!("the server answered {status}: {}", text.trim());
    };
    let text = |key: &str| doc.get(key).and_then(Value::as_str);
    let mut line = text("detail")
        .or_else(|| text("title"))
        .unwrap_or("no detail given")
        .to_owned();
    let mut notes = Vec::new();
    if let Some(code) = text("code") {
        notes.push(format!("code `{code}`"));
    }
    if let Some(pointer) = text("pointer") {
        notes.push(format!("at `{pointer}`"));
    }
    notes.push(format!("HTTP {}", status.as_u16()));
    line.push_str(&format!(" ({})", notes.join(", ")));
    if let Some(errors) = doc.get("errors").and_then(Value::as_array) {
        for e in errors {
            if let (Some(p), Some(m)) = (
                e.get("pointer").and_then(Value::as_str),
                e.get("message").and_then(Value::as_str),
            ) && !line.contains(m)
            {
                line.push_str(&format!("\n  {p}: {m}"));
            }
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_document_becomes_one_line_with_its_code_and_pointer() {
        let body = br#"{"type":"about:blank","title":"Precondition Failed","status":412,
            "detail":"tool `x` changed since revision 3","code":"revision_mismatch","pointer":"If-Match"}"#;
        assert_eq!(
            problem_text(StatusCode::PRECONDITION_FAILED, body),
            "tool `x` changed since revision 3 (code `revision_mismatch`, at `If-Match`, HTTP 412)"
        );
        assert_eq!(
            problem_text(StatusCode::BAD_GATEWAY, b"upstream down"),
            "the server answered 502 Bad Gateway: upstream down"
        );
    }

    #[test]
    fn segments_are_encoded_and_the_api_prefix_is_kept() {
        let api = Api::new("http://127.0.0.1:7878/", None).unwrap();
        let mut url = api.base.clone();
        url.path_segments_mut()
            .unwrap()
            .extend(["tools", "math.factorial/v2"]);
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:7878/api/v1/tools/math.factorial%2Fv2"
        );
        let err = Api::new("ftp://host", None).err().unwrap().to_string();
        assert!(err.contains("http or https"), "{err}");
        let err = Api::new("not a url", None).err().unwrap().to_string();
        assert!(err.contains("is not a URL"), "{err}");
    }
}
