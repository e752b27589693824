//! `{{arg}}` / `{{arg|path}}` / `{{secret.NAME}}` templates: parsed once, rendered per call.
//!
//! `{{arg|path}}` inserts a value as a path of several segments: each `/`-separated segment is
//! encoded as `{{arg}}` would be and the slashes are kept (`rust-lang/rust` stays two
//! segments); an empty, `.` or `..` segment is refused, so a value cannot climb the URL's path.

use serde_json::Value;
use toolbelt_core::ToolError;

use super::secrets::is_name;
use super::{DefinitionError, Secrets};

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(String),
    Arg(String),
    /// `{{arg|path}}`.
    PathArg(String),
    Secret(String),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parses `text`; `field` names it in errors; every `{{arg}}` must be in `args`.
    pub(crate) fn parse(text: &str, field: &str, args: &[String]) -> Result<Self, DefinitionError> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                pieces.push(Piece::Text(rest[..start].to_owned()));
            }
            let after = &rest[start + 2..];
            let end = after.find("}}").ok_or_else(|| {
                DefinitionError::new(
                    field,
                    format!("`{{{{` at byte {start} is never closed with `}}}}`"),
                )
            })?;
            let name = after[..end].trim();
            let (name, path) = match name.split_once('|') {
                Some((name, "path")) => (name.trim(), true),
                Some((name, filter)) => {
                    return Err(DefinitionError::new(
                        field,
                        format!(
                            "`{{{{{name}|{filter}}}}}`: `{filter}` is not a filter; the one filter is `path` (a value of several `/`-separated segments)"
                        ),
                    ));
                }
                None => (name, false),
            };
            if let Some(secret) = name.strip_prefix("secret.") {
                if path {
                    return Err(DefinitionError::new(
                        field,
                        format!("`{{{{{name}|path}}}}`: a secret takes no filter"),
                    ));
                }
                if !is_name(secret) {
                    return Err(DefinitionError::new(
                        field,
                        format!("`{{{{{name}}}}}`: a secret name is ASCII letters, digits and `_`"),
                    ));
                }
                pieces.push(Piece::Secret(secret.to_owned()));
            } else {
                let arg = name.strip_prefix("args.").unwrap_or(name);
                if !args.iter().any(|a| a == arg) {
                    return Err(DefinitionError::new(
                        field,
                        format!(
                            "`{{{{{name}}}}}` names no argument; the parameters declare: {}",
                            if args.is_empty() {
                                "none".to_owned()
                            } else {
                                args.join(", ")
                            }
                        ),
                    ));
                }
                pieces.push(if path {
                    Piece::PathArg(arg.to_owned())
                } else {
                    Piece::Arg(arg.to_owned())
                });
            }
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Self { pieces })
    }

    /// The argument name when the template is exactly one `{{arg}}`.
    pub(crate) fn sole_arg(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [Piece::Arg(name)] => Some(name),
            _ => None,
        }
    }

    /// The arguments at the very start of the template (before any text or secret): a
    /// rendered value starting with `-` comes from the first of them that is not empty.
    pub(crate) fn leading_args(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().map_while(|p| match p {
            Piece::Arg(name) | Piece::PathArg(name) => Some(name.as_str()),
            _ => None,
        })
    }

    /// Whether the template is exactly `text` (no placeholder).
    pub(crate) fn is_literal(&self, text: &str) -> bool {
        match self.pieces.as_slice() {
            [Piece::Text(t)] => t == text,
            _ => false,
        }
    }

    /// The secret names used.
    pub(crate) fn secrets(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Secret(name) => Some(name.as_str()),
            _ => None,
        })
    }

    /// Renders with `args`; argument values go through `encode` (e.g. URL encoding), secrets
    /// are inserted as they are. A missing argument renders as empty text.
    pub(crate) fn render(
        &self,
        args: &Value,
        secrets: &Secrets,
        encode: fn(&str) -> String,
        used: &mut Vec<String>,
    ) -> Result<String, ToolError> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Arg(name) => {
                    out.push_str(&encode(&arg_text(args.get(name))));
                }
                Piece::PathArg(name) => {
                    let text = arg_text(args.get(name));
                    let mut segments = Vec::new();
                    for segment in text.split('/') {
                        if matches!(segment, "" | "." | "..") {
                            return Err(ToolError::invalid_argument(
                                format!("/{name}"),
                                format!(
                                    "`{text}` is not a path of names: each `/`-separated part must be a name, not empty, `.` or `..`"
                                ),
                            ));
                        }
                        segments.push(encode(segment));
                    }
                    out.push_str(&segments.join("/"));
                }
                Piece::Secret(name) => {
                    let value = secrets
                        .resolve(name)
                        .map_err(|e| ToolError::failed(e.to_string()))?;
                    used.push(value.clone());
                    out.push_str(&value);
                }
            }
        }
        Ok(out)
    }
}

/// An argument as text: strings as they are, other JSON compactly, absent as empty.
pub(crate) fn arg_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// No encoding.
pub(crate) fn verbatim(text: &str) -> String {
    text.to_owned()
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(crate) fn url_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn a_path_argument_keeps_its_slashes_and_cannot_climb() {
        let args = ["repo".to_owned()];
        let t = Template::parse("https://x/repos/{{repo|path}}/issues", "http.url", &args).unwrap();
        let secrets = Secrets::default();
        let mut used = Vec::new();
        let url = t
            .render(
                &json!({"repo": "rust-lang/rust"}),
                &secrets,
                url_component,
                &mut used,
            )
            .unwrap();
        assert_eq!(url, "https://x/repos/rust-lang/rust/issues");
        let url = t
            .render(
                &json!({"repo": "a b/c?d"}),
                &secrets,
                url_component,
                &mut used,
            )
            .unwrap();
        assert_eq!(url, "https://x/repos/a%20b/c%3Fd/issues");
        for bad in ["../admin", "a//b", "/etc", "a/./b"] {
            let err = t
                .render(&json!({"repo": bad}), &secrets, url_component, &mut used)
                .unwrap_err();
            assert!(err.to_string().contains("/repo"), "{bad}: {err}");
        }
        let err = Template::parse("https://x/{{repo|raw}}", "http.url", &args).unwrap_err();
        assert!(
            err.to_string().contains("the one filter is `path`"),
            "{err}"
        );
    }

    #[test]
    fn renders_args_and_secrets_and_names_unknown_args() {
        let args = vec!["q".to_owned(), "n".to_owned()];
        let t = Template::parse(
            "https://x/{{q}}?n={{ n }}&k={{secret.KEY}}",
            "http.url",
            &args,
        )
        .unwrap();
        let secrets = Secrets::from_pairs([("KEY", "s3")]);
        let mut used = Vec::new();
        let out = t
            .render(
                &json!({"q": "a b/c", "n": 3}),
                &secrets,
                url_component,
                &mut used,
            )
            .unwrap();
        assert_eq!(out, "https://x/a%20b%2Fc?n=3&k=s3");
        assert_eq!(used, ["s3"]);
        let err = Template::parse("{{nope}}", "http.url", &args).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid http.url: `{{nope}}` names no argument; the parameters declare: q, n"
        );
        assert!(Template::parse("{{q", "http.url", &args).is_err());
    }
}
