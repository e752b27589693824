//! The one mapping from the store's errors to problem documents: each condition answers with
//! the store's stable code ([`StoreError::code`]) and one status.

use axum::http::StatusCode;
use toolbelt_store::StoreError;

use crate::problem::{FieldError, Problem};

impl From<StoreError> for Problem {
    fn from(error: StoreError) -> Self {
        let code = error.code();
        match error {
            StoreError::NotFound { entity, name } => {
                Problem::not_found(code, format!("{entity} `{name}` not found"))
                    .with_pointer("name")
            }
            e @ StoreError::AlreadyExists { .. } => {
                Problem::conflict(code, e.to_string()).with_pointer("/spec/name")
            }
            e @ StoreError::Conflict { .. } => {
                Problem::new(StatusCode::PRECONDITION_FAILED, code, e.to_string())
                    .with_pointer("If-Match")
            }
            StoreError::Invalid { field, reason } => {
                let pointer = field_pointer(&field);
                Problem::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    code,
                    format!("{pointer}: {reason}"),
                )
                .with_errors(vec![FieldError {
                    pointer,
                    message: reason,
                }])
            }
            e @ StoreError::InUse { .. } => Problem::conflict(code, e.to_string()),
            other => Problem::internal(other),
        }
    }
}

/// `http.url` / `tools[1]` / `parameters` → a JSON pointer into the request body.
pub(crate) fn field_pointer(field: &str) -> String {
    let (root, rest) = match field.split_once(['.', '[']) {
        Some((root, _)) => (root, &field[root.len()..]),
        None => (field, ""),
    };
    let base = match root {
        "definition" | "http" | "command" => "/definition".to_owned(),
        "spec" => "/spec".to_owned(),
        other => format!("/spec/{other}"),
    };
    let base = if matches!(root, "http" | "command") {
        format!("{base}/{root}")
    } else {
        base
    };
    let tail: String = rest
        .replace('[', ".")
        .replace(']', "")
        .split('.')
        .filter(|s| !s.is_empty())
        .map(|s| format!("/{s}"))
        .collect();
    format!("{base}{tail}")
}
