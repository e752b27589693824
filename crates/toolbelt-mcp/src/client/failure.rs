//! Why a connection to an MCP server failed, said in words, and whether trying again helps.
//!
//! rmcp's errors nest a transport error inside a worker error inside an initialisation error,
//! and their messages name Rust types (`Transport [rmcp::transport::worker::WorkerTransport<…>]
//! error: …`) while the cause a person can act on ("Connection refused", a `WWW-Authenticate`
//! challenge) sits at the bottom. [`Failure::of`] walks down to that cause.

use std::error::Error;

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
};

/// What kind of failure it was: it decides what the supervisor does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// It may go away by itself (the server restarts, the network comes back): retry with backoff.
    Transient,
    /// Retrying cannot help until the configuration changes (credentials refused, a program
    /// that cannot be started).
    Permanent,
    /// The server speaks only the stateless protocol (2026-07-28): connect again with
    /// `server/discover` instead of `initialize`.
    StatelessOnly,
}

/// A failed connection attempt or request, described for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) reason: String,
    pub(crate) kind: FailureKind,
}

impl Failure {
    pub(crate) fn transient(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            kind: FailureKind::Transient,
        }
    }

    /// Describes `error`, met while talking to `target` (a URL or a command).
    pub(crate) fn of(error: &(dyn Error + 'static), target: &str) -> Self {
        let mut deepest = error.to_string();
        let mut next: Option<&(dyn Error + 'static)> = Some(error);
        while let Some(current) = next {
            if let Some(failure) = recognise(current, target) {
                return failure;
            }
            let text = current.to_string();
            if !text.is_empty() && !text.contains("::") {
                deepest = text;
            }
            next = inner(current);
        }
        let kind = if is_stateless_only(&deepest) {
            FailureKind::StatelessOnly
        } else {
            FailureKind::Transient
        };
        Self {
            reason: strip_type_paths(&deepest),
            kind,
        }
    }
}

/// A failure this error alone explains, if it is one we know.
fn recognise(error: &(dyn Error + 'static), target: &str) -> Option<Failure> {
    let permanent = |reason: String| {
        Some(Failure {
            reason,
            kind: FailureKind::Permanent,
        })
    };
    if let Some(ServiceError::TransportClosed) = error.downcast_ref::<ServiceError>() {
        return Some(Failure::transient("the connection closed"));
    }
    if let Some(auth) = error.downcast_ref::<AuthRequiredError>() {
        return permanent(format!(
            "401 Unauthorized: {}",
            auth.www_authenticate_header
        ));
    }
    if let Some(scope) = error.downcast_ref::<InsufficientScopeError>() {
        return permanent(format!(
            "403 Forbidden (insufficient scope): {}",
            scope.www_authenticate_header
        ));
    }
    if let Some(status) = error.downcast_ref::<HttpStatusError>() {
        return Some(Failure::transient(format!(
            "HTTP {} from {target}",
            status.status
        )));
    }
    if let Some(http) = error.downcast_ref::<reqwest::Error>() {
        if let Some(status) = http.status() {
            let failure = Failure::transient(format!("HTTP {status} from {target}"));
            return if matches!(status.as_u16(), 401 | 403) {
                permanent(failure.reason)
            } else {
                Some(failure)
            };
        }
        if http.is_timeout() {
            return Some(Failure::transient(format!("timed out talking to {target}")));
        }
    }
    let io = error.downcast_ref::<std::io::Error>()?;
    let host = host_of(target);
    match io.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            Some(Failure::transient(format!("connection refused to {host}")))
        }
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => Some(
            Failure::transient(format!("connection to {host} was closed")),
        ),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
            permanent(format!("cannot start `{target}`: {}", plain_io(io)))
        }
        _ => None,
    }
}

/// The error under `error`, including the ones rmcp keeps in fields that are not `source`.
fn inner<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a (dyn Error + 'static)> {
    if let Some(init) = error.downcast_ref::<ClientInitializeError>() {
        match init {
            ClientInitializeError::TransportError { error, .. } => return Some(error),
            ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
                return Some(fallback.as_ref());
            }
            _ => {}
        }
    }
    if let Some(ServiceError::TransportSend(error)) = error.downcast_ref::<ServiceError>() {
        return Some(error);
    }
    if let Some(dynamic) = error.downcast_ref::<DynamicTransportError>() {
        return Some(dynamic.error.as_ref());
    }
    if let Some(StreamableHttpError::Client(client)) =
        error.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        return Some(client);
    }
    error.source()
}

/// Whether a server's answer says it wants per-request protocol metadata (2026-07-28 only).
fn is_stateless_only(text: &str) -> bool {
    text.contains("MCP-Protocol-Version header")
        || text.contains("requires protocolVersion in request _meta")
        || text.contains("request _meta is missing")
}

/// `host:port` of a URL, or the text itself.
fn host_of(target: &str) -> &str {
    let rest = target.split_once("://").map_or(target, |(_, rest)| rest);
    rest.split(['/', '?', '#']).next().unwrap_or(rest)
}

/// An I/O error's message without its `(os error N)` tail.
fn plain_io(io: &std::io::Error) -> String {
    let text = io.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// Drops `Transport [a::b::C<…>] error: ` prefixes a message may still carry.
fn strip_type_paths(text: &str) -> String {
    let mut out = text.to_owned();
    while let Some(start) = out.find("Transport [") {
        let Some(end) = out[start..].find("] error: ") else {
            break;
        };
        out.replace_range(start..start + end + "] error: ".len(), "");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn type_paths_are_dropped_and_hosts_are_found() {
        assert_eq!(
            strip_type_paths(
                "Transport [rmcp::transport::worker::WorkerTransport<X<Y>>] error: HTTP 500"
            ),
            "HTTP 500"
        );
        assert_eq!(host_of("http://127.0.0.1:9/mcp"), "127.0.0.1:9");
        assert_eq!(host_of("node"), "node");
    }

    #[test]
    fn a_missing_program_is_permanent_and_said_plainly() {
        let io = std::io::Error::from_raw_os_error(2);
        assert_eq!(
            Failure::of(&io, "/no/such/server"),
            Failure {
                reason: "cannot start `/no/such/server`: No such file or directory".to_owned(),
                kind: FailureKind::Permanent,
            }
        );
    }
}
