//! [`Problem`]: RFC 9457 problem documents, the body of every error answer.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One wrong field of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FieldError {
    /// JSON pointer into the request body (`""` is the whole body), or the parameter name.
    pub pointer: String,
    /// What is wrong with it.
    pub message: String,
}

/// An RFC 9457 problem document with a stable machine-readable `code`.
///
/// `type` is `urn:toolbelt:problem:{code}`; clients branch on `code`, people read `detail`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = Problem)]
pub struct ProblemDocument {
    /// `urn:toolbelt:problem:{code}`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of problem.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong this time, and what to do about it.
    pub detail: String,
    /// Stable error code, e.g. `invalid_json`, `tool_not_found`, `missing_scope`.
    pub code: String,
    /// JSON pointer (or parameter name) of the first wrong field, when one is to blame.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pointer: Option<String>,
    /// Every wrong field, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub errors: Vec<FieldError>,
    /// Names that exist, when a name was not found (closest first).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub nearest: Vec<String>,
    /// The instance holding the run, when the request reached another one (`421`, ADR 0045).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub instance: Option<InstanceRef>,
}

/// Where a run lives: the `toolbelt serve` instance holding it and where to send its requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InstanceRef {
    /// The instance's id (generated at its start-up; `/healthz` shows it).
    pub id: String,
    /// The URL the instance advertises (`--public-url`, or its bound address).
    pub url: String,
    /// The same request on that instance (also in the `Location` header).
    pub location: String,
}

/// An error answer: a boxed [`ProblemDocument`] (boxed so that `Result<T, Problem>` stays small).
#[derive(Debug, Clone, PartialEq)]
pub struct Problem(pub Box<ProblemDocument>);

impl std::ops::Deref for Problem {
    type Target = ProblemDocument;

    fn deref(&self) -> &ProblemDocument {
        &self.0
    }
}

impl std::ops::DerefMut for Problem {
    fn deref_mut(&mut self) -> &mut ProblemDocument {
        &mut self.0
    }
}

impl Problem {
    /// A problem with `status`, stable `code` and `detail`.
    pub fn new(status: StatusCode, code: &str, detail: impl Into<String>) -> Self {
        Self(Box::new(ProblemDocument {
            kind: format!("urn:toolbelt:problem:{code}"),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            code: code.to_owned(),
            pointer: None,
            errors: Vec::new(),
            nearest: Vec::new(),
            instance: None,
        }))
    }

    /// 400 `bad_request`.
    pub fn bad_request(code: &str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, detail)
    }

    /// 404 with `code`.
    pub fn not_found(code: &str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, detail)
    }

    /// 409 with `code`.
    pub fn conflict(code: &str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, detail)
    }

    /// 503 `no_database`: this server runs without a database, and `what` needs one (one code
    /// for the condition on every route).
    pub fn no_database(what: &str) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "no_database",
            format!(
                "this server runs without a database; {what} need one (start it with --database-url)"
            ),
        )
    }

    /// 422 `invalid_field` naming `pointer`.
    pub fn invalid_field(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        let pointer = pointer.into();
        let message = message.into();
        let at = if pointer.is_empty() { "/" } else { &pointer };
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            format!("{at}: {message}"),
        )
        .with_errors(vec![FieldError { pointer, message }])
    }

    /// 500 `internal`: a bug or a failed dependency; the detail is logged, not sent.
    pub fn internal(what: impl std::fmt::Display) -> Self {
        tracing::error!(error = %what, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the server failed; see its log",
        )
    }

    /// Sets the field errors; the first becomes `pointer`.
    #[must_use]
    pub fn with_errors(mut self, errors: Vec<FieldError>) -> Self {
        self.pointer = errors.first().map(|e| e.pointer.clone());
        self.errors = errors;
        self
    }

    /// Sets the pointer alone.
    #[must_use]
    pub fn with_pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    /// Sets the nearest existing names.
    #[must_use]
    pub fn with_nearest(mut self, nearest: Vec<String>) -> Self {
        self.nearest = nearest;
        self
    }

    /// Names the instance holding the run (sent as the `Location` header too).
    #[must_use]
    pub fn with_instance(mut self, instance: InstanceRef) -> Self {
        self.instance = Some(instance);
        self
    }

    /// The status as a [`StatusCode`].
    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status_code();
        let body = serde_json::to_vec(&*self.0).unwrap_or_default();
        let mut response = (status, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(location) = self
            .instance
            .as_ref()
            .and_then(|i| HeaderValue::from_str(&i.location).ok())
        {
            response.headers_mut().insert(header::LOCATION, location);
        }
        response
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.detail)
    }
}

impl std::error::Error for Problem {}

/// Result of a handler: the value or a problem document.
pub type ApiResult<T> = Result<T, Problem>;

impl Problem {
    /// Replaces the stable code (and the type URI with it).
    #[must_use]
    pub fn with_code(mut self, code: &str) -> Self {
        self.kind = format!("urn:toolbelt:problem:{code}");
        self.code = code.to_owned();
        self
    }
}

impl Problem {
    /// Replaces the code when it is `from`.
    #[must_use]
    pub fn with_code_if(self, from: &str, to: &str) -> Self {
        if self.code == from {
            self.with_code(to)
        } else {
            self
        }
    }
}
