//! Extractors whose rejections are problem documents naming the wrong field.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::problem::{FieldError, Problem};

/// A JSON body; bad input becomes 400 `invalid_json`, 413 `body_too_large`,
/// 415 `unsupported_media_type` or 422 `invalid_field` with the JSON pointer.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                let ct = ct.split(';').next().unwrap_or_default().trim();
                ct.eq_ignore_ascii_case("application/json")
                    || (ct.starts_with("application/") && ct.ends_with("+json"))
            });
        if !is_json {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                "send the body as JSON with `Content-Type: application/json`",
            )
            .with_pointer("Content-Type"));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Problem::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body_too_large",
                    "the request body is larger than the server accepts (body_limit_bytes)",
                )
            } else {
                Problem::bad_request("unreadable_body", e.body_text())
            }
        })?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// Parses `bytes` as `T`, naming the JSON pointer of the first wrong value.
///
/// # Errors
/// 400 `invalid_json` for bad syntax; 422 `invalid_field` for a wrong value.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: Result<T, _> = serde_path_to_error::deserialize(&mut de);
    if value.is_ok()
        && let Err(e) = de.end()
    {
        return Err(Problem::bad_request(
            "invalid_json",
            format!("the body is not valid JSON: {e}"),
        )
        .with_pointer(""));
    }
    value.map_err(|err| {
        let inner = err.inner();
        let message = inner.to_string();
        if inner.is_syntax() || inner.is_eof() {
            return Problem::bad_request(
                "invalid_json",
                format!("the body is not valid JSON: {message}"),
            )
            .with_pointer("");
        }
        let mut pointer = path_to_pointer(err.path());
        let message = strip_position(&message);
        // serde names the field of these two in the message; the path may stop at its parent.
        for prefix in ["unknown field `", "missing field `"] {
            if let Some(rest) = message.strip_prefix(prefix)
                && let Some(end) = rest.find('`')
            {
                let segment = format!("/{}", escape(&rest[..end]));
                if !pointer.ends_with(&segment) {
                    pointer.push_str(&segment);
                }
            }
        }
        let at = if pointer.is_empty() { "/" } else { &pointer };
        Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            format!("{at}: {message}"),
        )
        .with_errors(vec![FieldError {
            pointer,
            message: message.to_owned(),
        }])
    })
}

fn strip_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .map_or(message, |i| &message[..i])
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn path_to_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } => out.push_str(&format!("/{}", escape(key))),
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

/// Query parameters; a wrong one becomes 400 `invalid_query` naming it.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(ApiQuery)
            .map_err(|err| {
                let name = err.path().to_string();
                Problem::bad_request(
                    "invalid_query",
                    format!("query parameter `{name}`: {}", err.inner()),
                )
                .with_pointer(name)
            })
    }
}
