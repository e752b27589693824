//! The toolbelt web console: a page of HTML, vanilla ES modules and CSS, embedded in the
//! binary with `include_bytes!` and served by [`router`] at `/` and `/console/*`.
//!
//! The console is a client of the public API only: the browser calls `/api/v1` with the
//! bearer token the user logged in with. Serving these files reveals no data.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// One embedded file: its path under `/console/`, media type and bytes.
struct Asset {
    path: &'static str,
    media_type: &'static str,
    bytes: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $media:expr) => {
        Asset {
            path: $path,
            media_type: $media,
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("access.js", JS),
    asset!("schema-form.js", JS),
    asset!("pages/tools.js", JS),
    asset!("pages/agents.js", JS),
    asset!("pages/runs.js", JS),
    asset!("pages/overview.js", JS),
    asset!("pages/import.js", JS),
    asset!("vendor/uPlot.esm.js", JS),
    asset!("vendor/uPlot.min.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
];

/// The policy every console response carries: nothing loads from elsewhere.
const CSP: &str = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// The embedded file at `path` (relative to `/console/`), if any.
pub fn asset(path: &str) -> Option<(&'static str, &'static [u8])> {
    ASSETS
        .iter()
        .find(|a| a.path == path)
        .map(|a| (a.media_type, a.bytes))
}

/// Paths of every embedded file.
pub fn asset_paths() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|a| a.path)
}

fn respond(path: &str) -> Response {
    match asset(path) {
        Some((media_type, bytes)) => {
            let mut response = bytes.into_response();
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            );
            headers.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            response
        }
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("no console file `{path}`"),
        )
            .into_response(),
    }
}

/// Routes `/` (the page) and `/console/{*path}` (its scripts and styles), for any state.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { respond("index.html") }))
        .route(
            "/console/{*path}",
            get(|Path(path): Path<String>| async move { respond(&path) }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_a_script_imports_is_embedded() {
        for path in asset_paths().filter(|p| p.ends_with(".js") && !p.starts_with("vendor/")) {
            let Some((_, bytes)) = asset(path) else {
                panic!("{path} listed but not found");
            };
            let text = std::str::from_utf8(bytes).unwrap();
            let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let Some(spec) = line.split(['\'', '"']).nth(1) else {
                    continue;
                };
                let mut parts: Vec<&str> = if dir.is_empty() {
                    vec![]
                } else {
                    dir.split('/').collect()
                };
                for seg in spec.split('/') {
                    match seg {
                        "." => {}
                        ".." => {
                            parts.pop();
                        }
                        s => parts.push(s),
                    }
                }
                let target = parts.join("/");
                assert!(
                    asset(&target).is_some(),
                    "{path} imports {spec} ({target}), not embedded"
                );
            }
        }
    }
}
